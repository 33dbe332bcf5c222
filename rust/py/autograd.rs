//! Autograd bindings: graph nodes as Python objects (`grad_fn`,
//! `next_functions`), backward/grad, grad mode, anomaly mode, and the hooks
//! the Python layer builds custom functions and checkpointing on.

use super::error::foreign;
use super::gil::{run, ALWAYS};
use super::tensor::{wrap, PyTensor};
use crate::autograd::engine::{self, Sink};
use crate::autograd::graph::{attach_edges, current_seq};
use crate::autograd::{mode, BackwardOp, CustomBackward, Edge, Node, SavedTensor};
use crate::bail;
use crate::tensor::layout::fmt_shape;
use crate::tensor::{DType, Scalar, Shape, Tensor};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::collections::HashSet;
use std::sync::Arc;

/// A graph node seen from Python: an op's backward, or a leaf's AccumulateGrad.
#[pyclass(name = "Node", module = "rumus.autograd", frozen)]
pub struct PyNode {
    edge: Edge,
}

impl PyNode {
    pub(super) fn edge(&self) -> &Edge {
        &self.edge
    }
    pub fn of(t: &Tensor) -> Option<PyNode> {
        t.grad_fn().map(|(n, nr)| PyNode { edge: Edge::Node(n, nr) })
    }
}

#[pymethods]
impl PyNode {
    /// The name of the backward function, for example ``"MulBackward0"``.
    ///
    /// Returns:
    ///   str: the name.
    fn name(&self) -> String {
        match &self.edge {
            Edge::Node(n, _) => n.name.clone(),
            Edge::Leaf(_) => "AccumulateGrad".to_string(),
        }
    }
    /// ((node or None, input_nr), ...) for each input of the op.
    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items: Vec<Bound<'py, PyTuple>> = match &self.edge {
            Edge::Leaf(_) => vec![],
            Edge::Node(n, _) => n
                .edges
                .iter()
                .map(|e| match e {
                    None => (py.None(), 0u32).into_pyobject(py),
                    Some(e) => {
                        let nr = if let Edge::Node(_, nr) = e { *nr } else { 0 };
                        (Bound::new(py, PyNode { edge: e.clone() })?.into_any().unbind(), nr)
                            .into_pyobject(py)
                    }
                })
                .collect::<PyResult<_>>()?,
        };
        PyTuple::new(py, items)
    }
    /// The leaf tensor of an AccumulateGrad node.
    #[getter]
    fn variable(&self) -> PyResult<PyTensor> {
        match &self.edge {
            Edge::Leaf(t) => Ok(wrap(Tensor(t.clone()))),
            Edge::Node(..) => {
                Err(PyRuntimeError::new_err("only AccumulateGrad nodes have a variable"))
            }
        }
    }
    fn __repr__(&self) -> String {
        format!("<{} object at {:#x}>", self.name(), self.edge.key().0)
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyNode>().is_ok_and(|o| o.get().edge.key().0 == self.edge.key().0)
    }
    fn __hash__(&self) -> isize {
        self.edge.key().0 as isize
    }
}

/// An edge handed to Python as an opaque token (checkpoint boundaries).
#[pyclass(name = "_Edge", module = "rumus.autograd", frozen)]
pub struct PyEdge {
    edge: Edge,
}

fn tensors_of(seq: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<Tensor>> {
    if let Ok(t) = seq.cast::<PyTensor>() {
        return Ok(vec![t.get().t.clone()]);
    }
    seq.try_iter()?
        .map(|o| {
            let o = o?;
            o.cast::<PyTensor>().map(|t| t.get().t.clone()).map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "{}: expected a sequence of Tensors, got {}",
                    what,
                    o.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                ))
            })
        })
        .collect()
}

fn optional_tensors(
    seq: Option<&Bound<'_, PyAny>>,
    n: usize,
    what: &str,
) -> PyResult<Vec<Option<Tensor>>> {
    let Some(seq) = seq.filter(|s| !s.is_none()) else { return Ok(vec![None; n]) };
    let items: Vec<Option<Tensor>> = if let Ok(t) = seq.cast::<PyTensor>() {
        vec![Some(t.get().t.clone())]
    } else {
        seq.try_iter()?
            .map(|o| {
                let o = o?;
                if o.is_none() {
                    Ok(None)
                } else {
                    Ok(Some(
                        o.cast::<PyTensor>()
                            .map_err(|_| {
                                pyo3::exceptions::PyTypeError::new_err(format!(
                                    "{}: expected Tensors or None",
                                    what
                                ))
                            })?
                            .get()
                            .t
                            .clone(),
                    ))
                }
            })
            .collect::<PyResult<_>>()?
    };
    if items.len() != n {
        bail_py(format!("{}: got {} tensors but {} outputs", what, items.len(), n))?;
    }
    Ok(items)
}

fn bail_py(m: String) -> PyResult<()> {
    Err(PyRuntimeError::new_err(m))
}

/// (edge, gradient) for each output, with PyTorch's checks and the implicit
/// gradient of 1 for one-element outputs.
fn roots(
    outputs: &[Tensor],
    grads: Vec<Option<Tensor>>,
) -> crate::error::Result<Vec<(Edge, Tensor)>> {
    let mut r = Vec::with_capacity(outputs.len());
    for (i, (t, g)) in outputs.iter().zip(grads).enumerate() {
        let Some(edge) = Edge::of(t) else {
            bail!(
                Runtime,
                "element {} of tensors does not require grad and does not have a grad_fn",
                i
            );
        };
        let g = match g {
            None => {
                if t.numel() != 1 {
                    bail!(Runtime, "grad can be implicitly created only for scalar outputs (output {} has shape {})", i, fmt_shape(t.shape()));
                }
                crate::ops::creation::full_on(t.shape(), Scalar::Int(1), t.dtype(), t.device())?
            }
            Some(g) => {
                if g.shape() != t.shape() {
                    bail!(
                        Runtime,
                        "Mismatch in shape: grad_output[{}] has a shape of {} and output[{}] has a shape of {}.",
                        i,
                        fmt_shape(g.shape()),
                        i,
                        fmt_shape(t.shape())
                    );
                }
                if g.dtype() != t.dtype() {
                    crate::ops::copy::to_dtype(&g, t.dtype())?
                } else {
                    g
                }
            }
        };
        r.push((edge, g));
    }
    Ok(r)
}

fn input_edges(inputs: &[Tensor]) -> crate::error::Result<Vec<Edge>> {
    inputs
        .iter()
        .map(|t| match Edge::of(t) {
            Some(e) => Ok(e),
            None => bail!(Runtime, "One of the differentiated Tensors does not require grad"),
        })
        .collect()
}

/// Tensor.backward / autograd.backward.
#[pyfunction]
#[pyo3(signature = (tensors, grad_tensors=None, retain_graph=None, create_graph=false, inputs=None))]
pub fn backward(
    py: Python<'_>,
    tensors: &Bound<'_, PyAny>,
    grad_tensors: Option<&Bound<'_, PyAny>>,
    retain_graph: Option<bool>,
    create_graph: bool,
    inputs: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let outs = tensors_of(tensors, "backward")?;
    let grads = optional_tensors(grad_tensors, outs.len(), "backward")?;
    let inputs = match inputs.filter(|i| !i.is_none()) {
        Some(i) => {
            let v = tensors_of(i, "backward(inputs=...)")?;
            if v.is_empty() {
                bail_py("backward: 'inputs' argument to backward() cannot be empty.".into())?;
            }
            Some(v)
        }
        None => None,
    };
    let keep = retain_graph.unwrap_or(create_graph);
    run(py, ALWAYS, || -> crate::error::Result<()> {
        let roots = roots(&outs, grads)?;
        let targets = inputs.as_deref().map(input_edges).transpose()?;
        // Non-leaf inputs receive their .grad like retained tensors, for this call only.
        let mut added = Vec::new();
        for t in inputs.iter().flatten() {
            if let (Some((n, nr)), false) =
                (t.grad_fn(), t.0.autograd.retains_grad.load(std::sync::atomic::Ordering::Relaxed))
            {
                n.retain(nr, t);
                added.push((n, Arc::as_ptr(&t.0)));
            }
        }
        let r = engine::backward(roots, Sink::Accumulate(targets.as_deref()), keep, create_graph);
        for (n, p) in added {
            crate::tensor::lock(&n.retained).retain(|(_, w)| w.as_ptr() != p);
        }
        r.map(drop)
    })?;
    Ok(())
}

/// autograd.grad.
#[pyfunction]
#[pyo3(signature = (outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=false, allow_unused=None, is_grads_batched=false, materialize_grads=false))]
#[allow(clippy::too_many_arguments)]
pub fn grad<'py>(
    py: Python<'py>,
    outputs: &Bound<'py, PyAny>,
    inputs: &Bound<'py, PyAny>,
    grad_outputs: Option<&Bound<'py, PyAny>>,
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: Option<bool>,
    is_grads_batched: bool,
    materialize_grads: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    if is_grads_batched {
        return Err(pyo3::exceptions::PyNotImplementedError::new_err(
            "grad(is_grads_batched=True) is not supported by rumus",
        ));
    }
    let outs = tensors_of(outputs, "grad")?;
    let ins = tensors_of(inputs, "grad")?;
    let grads = optional_tensors(grad_outputs, outs.len(), "grad")?;
    let keep = retain_graph.unwrap_or(create_graph);
    let allow_unused = allow_unused.unwrap_or(materialize_grads);
    let r = run(py, ALWAYS, || -> crate::error::Result<Vec<Option<Tensor>>> {
        let roots = roots(&outs, grads)?;
        let targets = input_edges(&ins)?;
        engine::backward(roots, Sink::Capture(&targets), keep, create_graph)
    })?;
    let mut items = Vec::with_capacity(r.len());
    for (g, t) in r.into_iter().zip(&ins) {
        items.push(match g {
            Some(g) => Bound::new(py, wrap(g))?.into_any(),
            None if materialize_grads => {
                let zeros = run(py, t.numel(), || {
                    crate::ops::creation::full_on(t.shape(), Scalar::Int(0), t.dtype(), t.device())
                })?;
                Bound::new(py, wrap(zeros))?.into_any()
            }
            None if allow_unused => py.None().into_bound(py),
            None => {
                return Err(PyRuntimeError::new_err(
                    "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior.",
                ))
            }
        });
    }
    PyTuple::new(py, items)
}

/// Gradients of `outputs` with respect to `targets`: tensors, opaque edges
/// or None (a None result), aligned with `targets` (checkpoint recompute).
#[pyfunction]
pub fn _grad_edges<'py>(
    py: Python<'py>,
    outputs: &Bound<'py, PyAny>,
    grad_outputs: &Bound<'py, PyAny>,
    targets: &Bound<'py, PyList>,
    create_graph: bool,
) -> PyResult<Bound<'py, PyList>> {
    let outs = tensors_of(outputs, "grad")?;
    let grads = optional_tensors(Some(grad_outputs), outs.len(), "grad")?;
    let edges: Vec<Option<Edge>> = targets
        .iter()
        .map(|o| {
            if o.is_none() {
                Ok(None)
            } else if let Ok(t) = o.cast::<PyTensor>() {
                Ok(Edge::of(&t.get().t))
            } else {
                Ok(Some(o.cast::<PyEdge>()?.get().edge.clone()))
            }
        })
        .collect::<PyResult<_>>()?;
    let wanted: Vec<Edge> = edges.iter().flatten().cloned().collect();
    // Outputs that do not require grad (nothing inside depended on an input) add nothing.
    let (outs, grads): (Vec<Tensor>, Vec<Option<Tensor>>) =
        outs.into_iter().zip(grads).filter(|(t, _)| t.requires_grad()).unzip();
    let r = run(py, ALWAYS, || -> crate::error::Result<Vec<Option<Tensor>>> {
        if outs.is_empty() {
            return Ok(vec![None; wanted.len()]);
        }
        engine::backward(roots(&outs, grads)?, Sink::Capture(&wanted), create_graph, create_graph)
    })?;
    let mut r = r.into_iter();
    PyList::new(py, edges.iter().map(|e| e.as_ref().and_then(|_| r.next().flatten()).map(wrap)))
}

/// The edges a graph built since `since` (a sequence number) reads from
/// outside: older nodes and leaves, except `exclude` (the segment's own inputs).
#[pyfunction]
pub fn _graph_boundary(
    outputs: &Bound<'_, PyAny>,
    since: u64,
    exclude: &Bound<'_, PyAny>,
) -> PyResult<Vec<PyEdge>> {
    let outs = tensors_of(outputs, "checkpoint")?;
    let skip: HashSet<(usize, u32)> =
        tensors_of(exclude, "checkpoint")?.iter().filter_map(Edge::of).map(|e| e.key()).collect();
    let mut seen = HashSet::new();
    let mut visited = HashSet::new();
    let mut found = Vec::new();
    let mut stack: Vec<Edge> = outs.iter().filter_map(Edge::of).collect();
    while let Some(e) = stack.pop() {
        match &e {
            Edge::Node(n, _) if n.seq >= since => {
                if visited.insert(Arc::as_ptr(n) as usize) {
                    stack.extend(n.edges.iter().flatten().cloned());
                }
            }
            _ => {
                if !skip.contains(&e.key()) && seen.insert(e.key()) {
                    found.push(PyEdge { edge: e });
                }
            }
        }
    }
    Ok(found)
}

#[pyfunction]
pub fn _current_seq() -> u64 {
    current_seq()
}

/// A backward written in Python (autograd.Function, checkpoint): called with
/// the unpacked saved tensors and the output gradients; returns one gradient
/// (or None) per edge.
struct PyCustom {
    name: String,
    backward: Py<PyAny>,
    saved: Vec<SavedTensor>,
    inputs: Vec<(Shape, DType)>,
}

impl CustomBackward for PyCustom {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn apply(
        &self,
        node: &Arc<Node>,
        grads: &[Tensor],
    ) -> crate::error::Result<Vec<Option<Tensor>>> {
        let saved: Vec<Tensor> =
            self.saved.iter().map(|s| s.unpack(node)).collect::<crate::error::Result<_>>()?;
        let result: Vec<Option<Tensor>> = Python::attach(|py| -> PyResult<Vec<Option<Tensor>>> {
            let saved = PyTuple::new(py, saved.into_iter().map(wrap))?;
            let gs = PyTuple::new(py, grads.iter().map(|g| wrap(g.clone())))?;
            let r = self.backward.call1(py, (saved, gs))?;
            let r = r.bind(py);
            let items: Vec<Bound<'_, PyAny>> =
                if r.is_instance_of::<PyTuple>() || r.is_instance_of::<PyList>() {
                    r.try_iter()?.collect::<PyResult<_>>()?
                } else {
                    vec![r.clone()]
                };
            items
                .iter()
                .map(|o| {
                    if o.is_none() {
                        Ok(None)
                    } else {
                        o.cast::<PyTensor>().map(|t| Some(t.get().t.clone())).map_err(|_| {
                            PyRuntimeError::new_err(format!(
                                "{} returned a gradient that is not a Tensor or None",
                                self.name
                            ))
                        })
                    }
                })
                .collect()
        })
        .map_err(foreign)?;
        if result.len() != self.inputs.len() {
            bail!(
                Runtime,
                "function {} returned an incorrect number of gradients (expected {}, got {})",
                self.name,
                self.inputs.len(),
                result.len()
            );
        }
        result
            .into_iter()
            .zip(&self.inputs)
            .enumerate()
            .map(|(i, (g, (shape, dtype)))| match g {
                Some(g) if node.needs_input_grad(i) => {
                    if g.shape() != shape {
                        bail!(
                            Runtime,
                            "Function {} returned an invalid gradient at index {} - got {} but expected shape compatible with {}",
                            self.name,
                            i,
                            fmt_shape(g.shape()),
                            fmt_shape(shape)
                        );
                    }
                    Ok(Some(if g.dtype() != *dtype { crate::ops::copy::to_dtype(&g, *dtype)? } else { g }))
                }
                _ => Ok(None),
            })
            .collect()
    }
}

/// Connects the outputs of a Python-defined function to a new node. Edges are
/// the inputs' edges, then `extra_edges`. Returns the outputs as new handles
/// (the ones the caller must hand out).
#[pyfunction]
#[pyo3(signature = (name, backward, inputs, outputs, saved, extra_edges=Vec::new()))]
pub fn _attach_custom<'py>(
    py: Python<'py>,
    name: String,
    backward: Py<PyAny>,
    inputs: &Bound<'py, PyAny>,
    outputs: &Bound<'py, PyAny>,
    saved: &Bound<'py, PyAny>,
    extra_edges: Vec<PyRef<'py, PyEdge>>,
) -> PyResult<Bound<'py, PyList>> {
    let ins = tensors_of(inputs, name.as_str())?;
    let outs = tensors_of(outputs, name.as_str())?;
    let saved = tensors_of(saved, name.as_str())?
        .iter()
        .map(|t| match outs.iter().position(|o| o.same_tensor(t)) {
            Some(i) => SavedTensor::output(t, i as u32),
            None => SavedTensor::input(t),
        })
        .collect();
    crate::autograd::hooks::take_pack_error()?;
    let mut edges: Vec<Option<Edge>> = ins.iter().map(Edge::of).collect();
    let mut metas: Vec<(Shape, DType)> =
        ins.iter().map(|t| (t.shape().clone(), t.dtype())).collect();
    for e in &extra_edges {
        edges.push(Some(e.edge.clone()));
        let meta = match &e.edge {
            Edge::Leaf(t) => (t.layout.shape.clone(), t.storage.dtype()),
            Edge::Node(n, nr) => {
                (n.outputs[*nr as usize].shape.clone(), n.outputs[*nr as usize].dtype)
            }
        };
        metas.push(meta);
    }
    let op = BackwardOp::Custom(Arc::new(PyCustom { name, backward, saved, inputs: metas }));
    let refs: Vec<&Tensor> = ins.iter().collect();
    let outs = attach_edges(op, edges, outs, &refs);
    PyList::new(py, outs.into_iter().map(wrap))
}

/// Whether autograd records operations in this thread.
///
/// Returns:
///   bool: the grad mode.
#[pyfunction]
pub fn is_grad_enabled() -> bool {
    mode::is_grad_enabled()
}
#[pyfunction]
pub fn _set_grad_enabled(on: bool) {
    mode::set_grad_enabled(on)
}
/// Whether anomaly detection (``detect_anomaly``) is on.
///
/// Returns:
///   bool: the setting.
#[pyfunction]
pub fn is_anomaly_enabled() -> bool {
    mode::anomaly_enabled()
}
#[pyfunction]
pub fn _set_anomaly_enabled(on: bool) {
    mode::set_anomaly_enabled(on)
}
/// Bytes held by tensors saved for backward, process-wide.
#[pyfunction]
pub fn saved_tensor_bytes() -> i64 {
    crate::autograd::version::saved_tensor_bytes()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyNode>()?;
    m.add_class::<PyEdge>()?;
    m.add_function(wrap_pyfunction!(backward, m)?)?;
    m.add_function(wrap_pyfunction!(grad, m)?)?;
    m.add_function(wrap_pyfunction!(_grad_edges, m)?)?;
    m.add_function(wrap_pyfunction!(_graph_boundary, m)?)?;
    m.add_function(wrap_pyfunction!(_current_seq, m)?)?;
    m.add_function(wrap_pyfunction!(_attach_custom, m)?)?;
    m.add_function(wrap_pyfunction!(is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(saved_tensor_bytes, m)?)?;
    Ok(())
}
