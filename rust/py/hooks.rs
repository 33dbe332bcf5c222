//! Python hooks for the engine (rust/autograd/hooks.rs): the hooks of a node
//! or leaf live in Python OrderedDicts (so `RemovableHandle` removes them),
//! called in order with the GIL taken back when backward released it. A
//! hook's exception reaches the backward() caller unchanged.

use super::autograd::PyNode;
use super::error::foreign;
use super::tensor::{wrap, PyTensor};
use crate::autograd::hooks::{self as core, Hooks, Packed, SavedHookEntry, SavedHooks};
use crate::autograd::Edge;
use crate::tensor::Tensor;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::any::Any;
use std::sync::Arc;

pub struct PyHooks {
    /// output nr -> OrderedDict of tensor hooks.
    tensor: Py<PyDict>,
    pre: Py<PyAny>,
    post: Py<PyAny>,
    post_accumulate: Py<PyAny>,
    metadata: Py<PyDict>,
}

fn ordered_dict(py: Python<'_>) -> PyResult<Py<PyAny>> {
    Ok(py.import("collections")?.getattr("OrderedDict")?.call0()?.unbind())
}

impl PyHooks {
    fn new(py: Python<'_>) -> PyResult<PyHooks> {
        Ok(PyHooks {
            tensor: PyDict::new(py).unbind(),
            pre: ordered_dict(py)?,
            post: ordered_dict(py)?,
            post_accumulate: ordered_dict(py)?,
            metadata: PyDict::new(py).unbind(),
        })
    }
    /// The hooks of a node, or of a leaf (AccumulateGrad), made on first use.
    fn of<'a>(py: Python<'_>, edge: &'a Edge) -> PyResult<&'a PyHooks> {
        let cell = match edge {
            Edge::Node(n, _) => &n.hooks,
            Edge::Leaf(t) => &t.autograd.hooks,
        };
        if cell.get().is_none() {
            let made: Arc<dyn Hooks> = Arc::new(PyHooks::new(py)?);
            let _ = cell.set(made);
        }
        cell.get()
            .and_then(|h| h.as_any().downcast_ref::<PyHooks>())
            .ok_or_else(|| PyRuntimeError::new_err("autograd node hooks of an unknown kind"))
    }
    fn hooks<'py>(py: Python<'py>, dict: &Py<PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        dict.bind(py).call_method0("values")?.try_iter()?.collect()
    }
}

fn tensor_or_none(o: &Bound<'_, PyAny>, what: &str) -> PyResult<Option<Tensor>> {
    if o.is_none() {
        return Ok(None);
    }
    o.cast::<PyTensor>().map(|t| Some(t.get().t.clone())).map_err(|_| {
        PyTypeError::new_err(format!(
            "{} must return a Tensor or None, got {}",
            what,
            o.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })
}

fn grads_tuple<'py>(py: Python<'py>, g: &[Option<Tensor>]) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, g.iter().map(|g| g.clone().map(wrap)))
}

/// A hook's replacement for a tuple of gradients (None: keep them).
fn replaced(r: &Bound<'_, PyAny>, n: usize, what: &str) -> PyResult<Option<Vec<Option<Tensor>>>> {
    if r.is_none() {
        return Ok(None);
    }
    let items: Vec<Bound<'_, PyAny>> =
        if r.is_instance_of::<PyTuple>() || r.is_instance_of::<PyList>() {
            r.try_iter()?.collect::<PyResult<_>>()?
        } else {
            vec![r.clone()]
        };
    if items.len() != n {
        return Err(PyRuntimeError::new_err(format!(
            "{} returned an incorrect number of values (got {}, but expected {})",
            what,
            items.len(),
            n
        )));
    }
    items.iter().map(|o| tensor_or_none(o, what)).collect::<PyResult<_>>().map(Some)
}

impl Hooks for PyHooks {
    fn tensor(&self, nr: u32, grad: Tensor) -> crate::error::Result<Tensor> {
        Python::attach(|py| -> PyResult<Tensor> {
            let Some(d) = self.tensor.bind(py).get_item(nr)? else { return Ok(grad) };
            let mut g = grad;
            for h in PyHooks::hooks(py, &d.unbind())? {
                let r = h.call1((wrap(g.clone()),))?;
                if let Some(new) = tensor_or_none(&r, "a tensor hook")? {
                    g = new;
                }
            }
            Ok(g)
        })
        .map_err(foreign)
    }
    fn pre(&self, grads: Vec<Option<Tensor>>) -> crate::error::Result<Vec<Option<Tensor>>> {
        Python::attach(|py| -> PyResult<Vec<Option<Tensor>>> {
            let mut g = grads;
            for h in PyHooks::hooks(py, &self.pre)? {
                let r = h.call1((grads_tuple(py, &g)?,))?;
                if let Some(new) = replaced(&r, g.len(), "a backward pre-hook")? {
                    g = new;
                }
            }
            Ok(g)
        })
        .map_err(foreign)
    }
    fn post(
        &self,
        grad_inputs: Vec<Option<Tensor>>,
        grad_outputs: &[Option<Tensor>],
    ) -> crate::error::Result<Vec<Option<Tensor>>> {
        Python::attach(|py| -> PyResult<Vec<Option<Tensor>>> {
            let mut gi = grad_inputs;
            let go = grads_tuple(py, grad_outputs)?;
            for h in PyHooks::hooks(py, &self.post)? {
                let r = h.call1((grads_tuple(py, &gi)?, go.clone()))?;
                if let Some(new) = replaced(&r, gi.len(), "a backward hook")? {
                    gi = new;
                }
            }
            Ok(gi)
        })
        .map_err(foreign)
    }
    fn post_accumulate(&self, leaf: &Tensor) -> crate::error::Result<()> {
        Python::attach(|py| -> PyResult<()> {
            for h in PyHooks::hooks(py, &self.post_accumulate)? {
                h.call1((wrap(leaf.clone()),))?;
            }
            Ok(())
        })
        .map_err(foreign)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The OrderedDict holding a tensor's gradient hooks (Tensor.register_hook).
#[pyfunction]
fn _tensor_hooks<'py>(py: Python<'py>, t: PyRef<'py, PyTensor>) -> PyResult<Bound<'py, PyAny>> {
    let Some(edge) = Edge::of(&t.t) else {
        return Err(PyRuntimeError::new_err(
            "cannot register a hook on a tensor that doesn't require gradient",
        ));
    };
    let nr = match &edge {
        Edge::Node(_, nr) => *nr,
        Edge::Leaf(_) => 0,
    };
    let d = PyHooks::of(py, &edge)?.tensor.bind(py);
    if let Some(od) = d.get_item(nr)? {
        return Ok(od);
    }
    let od = ordered_dict(py)?.into_bound(py);
    d.set_item(nr, &od)?;
    Ok(od)
}

/// The OrderedDict of a leaf's post-accumulate-grad hooks.
#[pyfunction]
fn _post_accumulate_grad_hooks<'py>(
    py: Python<'py>,
    t: PyRef<'py, PyTensor>,
) -> PyResult<Bound<'py, PyAny>> {
    match Edge::of(&t.t) {
        Some(edge @ Edge::Leaf(_)) => Ok(PyHooks::of(py, &edge)?.post_accumulate.bind(py).clone()),
        Some(Edge::Node(..)) => Err(PyRuntimeError::new_err(
            "post accumulate grad hooks cannot be registered on non-leaf tensors",
        )),
        None => Err(PyRuntimeError::new_err(
            "cannot register a hook on a tensor that doesn't require gradient",
        )),
    }
}

/// (pre-hooks, hooks, metadata) of a graph node.
#[pyfunction]
fn _node_hooks<'py>(
    py: Python<'py>,
    node: PyRef<'py, PyNode>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyDict>)> {
    let h = PyHooks::of(py, node.edge())?;
    Ok((h.pre.bind(py).clone(), h.post.bind(py).clone(), h.metadata.bind(py).clone()))
}

struct PySavedHooks {
    pack: Py<PyAny>,
    unpack: Py<PyAny>,
}

struct PyPacked {
    value: Py<PyAny>,
    unpack: Py<PyAny>,
}

impl SavedHooks for PySavedHooks {
    fn pack(&self, t: &Tensor) -> crate::error::Result<Arc<dyn Packed>> {
        Python::attach(|py| -> PyResult<Arc<dyn Packed>> {
            let value = self.pack.call1(py, (wrap(t.clone()),))?;
            Ok(Arc::new(PyPacked { value, unpack: self.unpack.clone_ref(py) }))
        })
        .map_err(foreign)
    }
}

impl Packed for PyPacked {
    fn unpack(&self) -> crate::error::Result<Tensor> {
        Python::attach(|py| -> PyResult<Tensor> {
            let r = self.unpack.call1(py, (self.value.clone_ref(py),))?;
            r.bind(py).cast::<PyTensor>().map(|t| t.get().t.clone()).map_err(|_| {
                PyTypeError::new_err(format!(
                    "Output of saved tensor unpack_hook expected to be a Tensor but got result of type {}",
                    r.bind(py).get_type().name().map(|n| n.to_string()).unwrap_or_default()
                ))
            })
        })
        .map_err(foreign)
    }
}

#[pyfunction]
fn _push_saved_tensors_hooks(pack_hook: Py<PyAny>, unpack_hook: Py<PyAny>) -> PyResult<()> {
    let h: Arc<dyn SavedHooks> = Arc::new(PySavedHooks { pack: pack_hook, unpack: unpack_hook });
    Ok(core::push_saved_hooks(SavedHookEntry::Hooks(h))?)
}

#[pyfunction]
fn _push_disabled_saved_tensors_hooks(message: String) -> PyResult<()> {
    Ok(core::push_saved_hooks(SavedHookEntry::Disabled(message))?)
}

#[pyfunction]
fn _pop_saved_tensors_hooks() {
    core::pop_saved_hooks()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_tensor_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(_post_accumulate_grad_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(_node_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(_push_saved_tensors_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(_push_disabled_saved_tensors_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(_pop_saved_tensors_hooks, m)?)?;
    Ok(())
}
