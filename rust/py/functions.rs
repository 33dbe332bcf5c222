//! Module-level functions: cat/stack, einsum, meshgrid, where, one_hot, type
//! promotion, broadcasting, threads and the memory cache.

use super::convert::{operand_req, shape_of, tensor_req};
use super::dtype::PyDType;
use super::gil::run;
use super::tensor::{wrap, PyTensor};
use crate::ops::shape;
use crate::tensor::Tensor;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PySequence, PyTuple};

fn tensor_list(tensors: &Bound<'_, PyAny>, op: &str) -> PyResult<Vec<Tensor>> {
    if tensors.cast::<PyTensor>().is_ok() {
        return Err(PyTypeError::new_err(format!(
            "{}(): argument 'tensors' must be a tuple or list of Tensors, not Tensor",
            op
        )));
    }
    let seq = tensors.cast::<PySequence>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{}(): argument 'tensors' must be a tuple or list of Tensors",
            op
        ))
    })?;
    (0..seq.len()?)
        .map(|i| {
            tensor_req(
                &seq.get_item(i)?,
                &format!("{}(): expected Tensor as element {} in argument 0,", op, i),
            )
        })
        .collect()
}

/// Concatenates tensors along an existing dimension.
///
/// Args:
///   tensors (Sequence[Tensor]): same shape except in ``dim`` (1-d empty tensors are skipped).
///   dim (int): the dimension.
///
/// Returns:
///   Tensor: a new tensor.
#[pyfunction]
#[pyo3(signature = (tensors, dim=0))]
pub fn cat(py: Python<'_>, tensors: &Bound<'_, PyAny>, dim: i64) -> PyResult<PyTensor> {
    let list = tensor_list(tensors, "cat")?;
    let work = list.iter().map(|t| t.numel()).sum();
    Ok(wrap(run(py, work, || shape::cat(&list, dim))?))
}

/// Stacks tensors of one shape along a new dimension.
///
/// Args:
///   tensors (Sequence[Tensor]): tensors of the same shape.
///   dim (int): the position of the new dimension.
///
/// Returns:
///   Tensor: a new tensor.
#[pyfunction]
#[pyo3(signature = (tensors, dim=0))]
pub fn stack(py: Python<'_>, tensors: &Bound<'_, PyAny>, dim: i64) -> PyResult<PyTensor> {
    let list = tensor_list(tensors, "stack")?;
    let work = list.iter().map(|t| t.numel()).sum();
    Ok(wrap(run(py, work, || shape::stack(&list, dim))?))
}

/// einsum(equation, *operands), einsum(equation, [operands]), or the sublist
/// form einsum(op0, sublist0, op1, sublist1, ..., [sublist_out]).
#[pyfunction]
#[pyo3(signature = (*args))]
pub fn einsum(py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
    if args.len() < 2 {
        return Err(PyTypeError::new_err(
            "einsum(): must specify the equation string and at least one operand, \
             or at least one operand and its subscripts list",
        ));
    }
    let first = args.get_item(0)?;
    let (equation, list) = if let Ok(eq) = first.extract::<String>() {
        let rest = args.get_slice(1, args.len());
        let one = rest.get_item(0)?;
        let list = if rest.len() == 1 && one.cast::<PyTensor>().is_err() {
            tensor_list(&one, "einsum")?
        } else {
            tensor_list(rest.as_any(), "einsum")?
        };
        (eq, list)
    } else {
        let mut terms = Vec::new();
        let mut list = Vec::new();
        for i in (0..args.len() - 1).step_by(2) {
            list.push(tensor_req(&args.get_item(i)?, "einsum(): expected a Tensor as operand")?);
            terms.push(sublist(&args.get_item(i + 1)?)?);
        }
        let mut eq = terms.join(",");
        if args.len() % 2 == 1 {
            eq = format!("{}->{}", eq, sublist(&args.get_item(args.len() - 1)?)?);
        }
        (eq, list)
    };
    let work = list.iter().map(|t| t.numel()).sum();
    Ok(wrap(run(py, work, || crate::ops::einsum::einsum(&equation, &list))?))
}

/// An einsum sublist ([0, 1, Ellipsis]) as equation text: 0-25 are A-Z, 26-51 a-z.
fn sublist(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    let seq = obj.cast::<PySequence>().map_err(|_| {
        PyTypeError::new_err("einsum(): subscripts must be a list of ints in [0, 52) or Ellipsis")
    })?;
    let mut out = String::new();
    for i in 0..seq.len()? {
        let item = seq.get_item(i)?;
        if item.is(obj.py().Ellipsis().bind(obj.py())) {
            out.push_str("...");
            continue;
        }
        match item.extract::<i64>() {
            Ok(k @ 0..=25) => out.push((b'A' + k as u8) as char),
            Ok(k @ 26..=51) => out.push((b'a' + (k - 26) as u8) as char),
            _ => {
                return Err(PyValueError::new_err(format!(
                    "einsum(): subscript in subscript list is not within the valid range [0, 52), got {}",
                    item
                )))
            }
        }
    }
    Ok(out)
}

/// meshgrid(*tensors, indexing=None): "ij" unless told "xy".
#[pyfunction]
#[pyo3(signature = (*tensors, indexing=None))]
pub fn meshgrid(
    py: Python<'_>,
    tensors: &Bound<'_, PyTuple>,
    indexing: Option<String>,
) -> PyResult<Py<PyTuple>> {
    let list = match tensors.len() {
        1 if tensors.get_item(0)?.cast::<PyTensor>().is_err() => {
            tensor_list(&tensors.get_item(0)?, "meshgrid")?
        }
        _ => tensor_list(tensors.as_any(), "meshgrid")?,
    };
    let grids = crate::ops::repeat::meshgrid(&list, indexing.as_deref().unwrap_or("ij"))?;
    super::methods::tensors(py, grids)
}

/// where(cond, x, y); where(cond) is nonzero(cond, as_tuple=True).
#[pyfunction(name = "where")]
#[pyo3(signature = (condition, input=None, other=None))]
pub fn where_fn(
    py: Python<'_>,
    condition: PyRef<'_, PyTensor>,
    input: Option<&Bound<'_, PyAny>>,
    other: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    match (input, other) {
        (Some(x), Some(y)) => {
            let (c, x, y) = (&condition.t, operand_req(x, "where")?, operand_req(y, "where")?);
            let work = [&x, &y].iter().fold(c.numel(), |w, o| match o {
                crate::ops::Operand::T(t) => w.max(t.numel()),
                crate::ops::Operand::S(_) => w,
            });
            let r = run(py, work, || crate::ops::elementwise::where_(c, &x, &y))?;
            Ok(Bound::new(py, wrap(r))?.into_any().unbind())
        }
        (None, None) => {
            let c = &condition.t;
            let cols = run(py, c.numel(), || {
                let nz = crate::ops::index::nonzero(c)?;
                (0..c.ndim() as i64)
                    .map(|k| crate::ops::copy::contiguous(&shape::select(&nz, 1, k)?))
                    .collect::<crate::error::Result<Vec<_>>>()
            })?;
            Ok(PyTuple::new(py, cols.into_iter().map(wrap))?.into_any().unbind())
        }
        _ => Err(PyTypeError::new_err("where() expects both input and other, or neither")),
    }
}

/// One-hot encodes integer class indices.
///
/// Args:
///   tensor (Tensor): int64 class indices.
///   num_classes (int): the number of classes (max + 1 when -1).
///
/// Returns:
///   Tensor: int64, of shape ``tensor.shape + (num_classes,)``.
#[pyfunction]
#[pyo3(signature = (tensor, num_classes=-1))]
pub fn one_hot(
    py: Python<'_>,
    tensor: PyRef<'_, PyTensor>,
    num_classes: i64,
) -> PyResult<PyTensor> {
    let t = &tensor.t;
    let work = t.numel().saturating_mul(num_classes.max(1) as usize);
    Ok(wrap(run(py, work, || crate::ops::index::one_hot(t, num_classes))?))
}

/// The dtype an arithmetic op on ``a`` and ``b`` would return.
///
/// Args:
///   a (Tensor or Number): the first operand.
///   b (Tensor or Number): the second operand.
///
/// Returns:
///   dtype: the result dtype.
#[pyfunction]
pub fn result_type(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<PyDType> {
    let (x, y) = (operand_req(a, "result_type")?, operand_req(b, "result_type")?);
    Ok(PyDType { d: crate::ops::result_type(&[&x, &y]) })
}

/// The dtype that combining ``a`` and ``b`` gives, by PyTorch's promotion rules.
///
/// Args:
///   a (dtype): the first dtype.
///   b (dtype): the second dtype.
///
/// Returns:
///   dtype: the promoted dtype.
#[pyfunction]
pub fn promote_types(a: PyDType, b: PyDType) -> PyDType {
    PyDType { d: crate::tensor::dtype::promote(a.d, b.d) }
}

/// Whether ``obj`` is a rumus Tensor.
///
/// Args:
///   obj (object): any object.
///
/// Returns:
///   bool: the answer.
#[pyfunction]
pub fn is_tensor(obj: &Bound<'_, PyAny>) -> bool {
    obj.cast::<PyTensor>().is_ok()
}

/// The shape that the given shapes broadcast to.
///
/// Args:
///   *shapes (int or Sequence[int]): the shapes.
///
/// Returns:
///   Size: the broadcast shape.
#[pyfunction]
#[pyo3(signature = (*shapes))]
pub fn broadcast_shapes(py: Python<'_>, shapes: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
    let mut out = crate::tensor::Shape::new();
    for s in shapes.iter() {
        let dims = shape_of(&super::convert::int_list(&s, "shape")?)?;
        out = crate::tensor::layout::broadcast_shapes(&out, &dims)?;
    }
    Ok(super::tensor::size_obj(py, &out)?.unbind())
}

/// The number of threads the CPU kernels use: the count given to
/// :func:`set_num_threads`, else ``RAYON_NUM_THREADS`` or the cores.
///
/// Returns:
///   int: the thread count.
#[pyfunction]
pub fn get_num_threads() -> usize {
    crate::backend::cpu::threads()
}

/// Sets the number of threads the CPU kernels use from now on (the calling
/// thread included), as ``torch.set_num_threads``. Batched linear algebra
/// and FFTs run on rayon's pool, sized once at start-up by
/// ``RAYON_NUM_THREADS`` (or the cores); with 1 they run as one task.
///
/// Args:
///   num (int): a positive thread count.
#[pyfunction]
pub fn set_num_threads(num: &Bound<'_, PyAny>) -> PyResult<()> {
    let n = match num.extract::<i64>() {
        Ok(n) if !num.is_instance_of::<pyo3::types::PyBool>() => n,
        _ => {
            let name = num.get_type().name()?;
            return Err(PyRuntimeError::new_err(format!(
                "set_num_threads expects an int, but got {name}"
            )));
        }
    };
    if n <= 0 {
        return Err(PyRuntimeError::new_err("set_num_threads expects a positive integer"));
    }
    crate::backend::cpu::set_threads(n.min(1024) as usize);
    Ok(())
}

/// The default floating-point dtype: that of Python floats turned into
/// tensors, of float factories (``zeros``, ``rand``, ``arange(0.5)``...), of
/// new modules' parameters and of float results of integer inputs.
///
/// Returns:
///   dtype: ``rumus.float32`` unless :func:`set_default_dtype` changed it.
#[pyfunction]
pub fn get_default_dtype() -> PyDType {
    PyDType { d: crate::tensor::dtype::default_float() }
}

/// Sets the default floating-point dtype (see :func:`get_default_dtype`),
/// as ``torch.set_default_dtype``: float32, float64 or float16. Python
/// complex numbers then give complex128 under float64, else complex64
/// (rumus has no complex32).
///
/// Args:
///   d (dtype): the new default, a floating-point dtype.
#[pyfunction]
pub fn set_default_dtype(d: &Bound<'_, PyAny>) -> PyResult<()> {
    let Some(dt) = super::dtype::dtype_arg(Some(d))? else {
        return Err(PyTypeError::new_err("set_default_dtype expects a dtype, got None"));
    };
    if !dt.is_float() {
        return Err(PyTypeError::new_err(
            "only floating-point types are supported as the default type",
        ));
    }
    if !crate::tensor::dtype::set_default_float(dt) {
        return Err(PyRuntimeError::new_err(format!(
            "{} cannot be the default dtype (no complex dtype matches it); use float32, \
             float64 or float16",
            dt.name()
        )));
    }
    Ok(())
}

/// Returns CPU buffers kept for reuse to the system.
#[pyfunction]
pub fn empty_cache() {
    crate::tensor::storage::empty_cache();
}
