//! Module-level functions that make tensors (from data, filled, ranges,
//! random) and the default generator's seed and state.

use super::convert::{as_tensor, shape_of, tensor_from_data, varargs_ints};
use super::dtype::{
    default_device, default_gen, device_arg, dtype_arg, generator_arg, get_state, set_state,
};
use super::gil::run;
use super::tensor::{wrap, PyTensor};
use crate::ops::creation;
use crate::tensor::layout::numel;
use crate::tensor::Device;
use crate::tensor::{DType, Scalar, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// Moves a new tensor to `device` (None: leave it) and applies `requires_grad=`.
fn finish(
    py: Python<'_>,
    t: Tensor,
    device: Option<Device>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let t = match device {
        Some(d) if d != t.device() => run(py, t.numel(), || crate::ops::copy::transfer(&t, d))?,
        _ => t,
    };
    if requires_grad {
        t.set_requires_grad(true)?;
    }
    Ok(wrap(t))
}

fn float_dtype(dtype: Option<&Bound<'_, PyAny>>) -> PyResult<DType> {
    Ok(dtype_arg(dtype)?.unwrap_or_else(crate::tensor::dtype::default_float))
}

/// Creates a tensor from data, copying it.
///
/// Args:
///   data (array-like): a number, a (nested) sequence, a NumPy array or a tensor.
///   dtype (dtype, optional): the dtype (inferred from the data when None).
///   device (str or device, optional): where to create the tensor (the default device when None).
///   requires_grad (bool): record operations on the result for autograd.
///
/// Returns:
///   Tensor: a new tensor.
#[pyfunction]
#[pyo3(signature = (data, *, dtype=None, device=None, requires_grad=false))]
pub fn tensor(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let device = device_arg(device)?;
    finish(
        py,
        tensor_from_data(py, data, dtype_arg(dtype)?)?,
        Some(device.unwrap_or_else(default_device)),
        requires_grad,
    )
}

/// Converts data to a tensor, sharing memory when no copy is needed.
///
/// Args:
///   data (array-like): a tensor, a NumPy array (shared when dtype and device match), a number or a
///     sequence.
///   dtype (dtype, optional): the dtype (the data's when None).
///   device (str or device, optional): the device (the data's when None).
///
/// Returns:
///   Tensor: the data as a tensor.
#[pyfunction(name = "as_tensor")]
#[pyo3(signature = (data, dtype=None, device=None))]
pub fn as_tensor_fn(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let device = device_arg(device)?;
    let t = as_tensor(py, data, dtype_arg(dtype)?)?;
    // A tensor stays where it is unless a device is named; new data follows the default.
    let keep = data.cast::<PyTensor>().is_ok();
    Ok(wrap(match device.or((!keep).then(default_device)) {
        Some(d) => run(py, t.numel(), || crate::ops::copy::to_device(&t, d))?,
        None => t,
    }))
}

/// A tensor sharing the memory of a NumPy array (writes are visible both ways).
///
/// Args:
///   array (numpy.ndarray): float64/32/16, int64/32, uint8 or bool, any strides.
///
/// Returns:
///   Tensor: a CPU tensor over the array's memory.
#[pyfunction]
pub fn from_numpy(array: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    Ok(wrap(super::numpy::from_numpy(array)?))
}

macro_rules! constant_fn {
    ($(#[$doc:meta])* $name:ident, $value:expr) => {
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false))]
        pub fn $name(
            py: Python<'_>,
            size: &Bound<'_, PyTuple>,
            dtype: Option<&Bound<'_, PyAny>>,
            device: Option<&Bound<'_, PyAny>>,
            requires_grad: bool,
        ) -> PyResult<PyTensor> {
            let device = device_arg(device)?.unwrap_or_else(default_device);
            let (shape, dt) = (shape_of(&varargs_ints(size, "size")?)?, float_dtype(dtype)?);
            let t = run(py, numel(&shape), || creation::full_on(&shape, $value, dt, device))?;
            finish(py, t, None, requires_grad)
        }
    };
}
constant_fn!(
    /// A tensor filled with zeros.
    ///
    /// Args:
    ///   *size (int or Sequence[int]): the shape.
    ///   dtype (dtype, optional): the dtype (the default float dtype when None).
    ///   device (str or device, optional): where to create the tensor (the default device when
    ///     None).
    ///   requires_grad (bool): record operations on the result for autograd.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    zeros,
    Scalar::Int(0)
);
constant_fn!(
    /// A tensor filled with ones.
    ///
    /// Args:
    ///   *size (int or Sequence[int]): the shape.
    ///   dtype (dtype, optional): the dtype (the default float dtype when None).
    ///   device (str or device, optional): where to create the tensor (the default device when
    ///     None).
    ///   requires_grad (bool): record operations on the result for autograd.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    ones,
    Scalar::Int(1)
);
constant_fn!(
    /// An uninitialized tensor (rumus fills it with zeros).
    ///
    /// Args:
    ///   *size (int or Sequence[int]): the shape.
    ///   dtype (dtype, optional): the dtype (the default float dtype when None).
    ///   device (str or device, optional): where to create the tensor (the default device when
    ///     None).
    ///   requires_grad (bool): record operations on the result for autograd.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    empty,
    Scalar::Int(0)
);

/// A tensor filled with ``fill_value``.
///
/// Args:
///   size (Sequence[int]): the shape.
///   fill_value (Number): the value.
///   dtype (dtype, optional): the dtype (inferred from ``fill_value`` when None).
///   device (str or device, optional): where to create the tensor (the default device when None).
///   requires_grad (bool): record operations on the result for autograd.
///
/// Returns:
///   Tensor: a new tensor.
#[pyfunction]
#[pyo3(signature = (size, fill_value, *, dtype=None, device=None, requires_grad=false))]
pub fn full(
    py: Python<'_>,
    size: &Bound<'_, PyAny>,
    fill_value: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let device = device_arg(device)?.unwrap_or_else(default_device);
    let shape = shape_of(&super::convert::int_list(size, "size")?)?;
    let v = super::tensor::number(fill_value)?;
    let dt = dtype_arg(dtype)?.unwrap_or(v.default_dtype());
    let t = run(py, numel(&shape), || creation::full_on(&shape, v, dt, device))?;
    finish(py, t, None, requires_grad)
}

/// A dropout mask (`scale` with probability `keep`, else 0) for
/// F.dropout: the same elements on CPU and GPU for one seed.
#[pyfunction]
#[pyo3(signature = (shape, keep, scale, dtype, device))]
pub fn _dropout_mask(
    py: Python<'_>,
    shape: Vec<usize>,
    keep: f64,
    scale: f64,
    dtype: &Bound<'_, PyAny>,
    device: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let device = device_arg(Some(device))?.unwrap_or_else(default_device);
    let dt = dtype_arg(Some(dtype))?.unwrap_or(DType::F32);
    Ok(run(py, numel(&shape), || creation::dropout_mask(&shape, keep, scale, dt, device))?.into())
}

macro_rules! like_fn {
    ($(#[$doc:meta])* $name:ident, $value:expr) => {
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (input, *, dtype=None, device=None, requires_grad=false))]
        pub fn $name(
            py: Python<'_>,
            input: PyRef<'_, PyTensor>,
            dtype: Option<&Bound<'_, PyAny>>,
            device: Option<&Bound<'_, PyAny>>,
            requires_grad: bool,
        ) -> PyResult<PyTensor> {
            let x = &input.t;
            let device = device_arg(device)?.unwrap_or(x.device());
            let dt = dtype_arg(dtype)?.unwrap_or(x.dtype());
            let t = run(py, x.numel(), || creation::full_on(x.shape(), $value, dt, device))?;
            finish(py, t, None, requires_grad)
        }
    };
}
like_fn!(
    /// A tensor of zeros with the shape (and by default dtype and device) of ``input``.
    ///
    /// Args:
    ///   input (Tensor): the input.
    ///   dtype (dtype, optional): defaults to input's.
    ///   device (str or device, optional): defaults to input's.
    ///   requires_grad (bool): record operations on the result for autograd.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    zeros_like,
    Scalar::Int(0)
);
like_fn!(
    /// A tensor of ones with the shape (and by default dtype and device) of ``input``.
    ///
    /// Args:
    ///   input (Tensor): the input.
    ///   dtype (dtype, optional): defaults to input's.
    ///   device (str or device, optional): defaults to input's.
    ///   requires_grad (bool): record operations on the result for autograd.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    ones_like,
    Scalar::Int(1)
);
like_fn!(
    /// An uninitialized tensor with the shape (and by default dtype and device) of ``input``.
    ///
    /// Args:
    ///   input (Tensor): the input.
    ///   dtype (dtype, optional): defaults to input's.
    ///   device (str or device, optional): defaults to input's.
    ///   requires_grad (bool): record operations on the result for autograd.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    empty_like,
    Scalar::Int(0)
);

/// A tensor filled with ``fill_value``, with the shape (and by default dtype and device) of
/// ``input``.
///
/// Args:
///   input (Tensor): the input.
///   fill_value (Number): the value.
///   dtype (dtype, optional): defaults to input's.
///   device (str or device, optional): defaults to input's.
///   requires_grad (bool): record operations on the result for autograd.
///
/// Returns:
///   Tensor: a new tensor.
#[pyfunction]
#[pyo3(signature = (input, fill_value, *, dtype=None, device=None, requires_grad=false))]
pub fn full_like(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    fill_value: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let x = &input.t;
    let device = device_arg(device)?.unwrap_or(x.device());
    let (v, dt) = (super::tensor::number(fill_value)?, dtype_arg(dtype)?.unwrap_or(x.dtype()));
    let t = run(py, x.numel(), || creation::full_on(x.shape(), v, dt, device))?;
    finish(py, t, None, requires_grad)
}

/// Uniform random numbers in [0, 1) with the shape of ``input``.
///
/// Args:
///   input (Tensor): the input.
///   dtype (dtype, optional): defaults to input's.
///   device (str or device, optional): defaults to input's.
///   requires_grad (bool): record operations on the result for autograd.
///   generator (Generator, optional): the random generator (the default one when None).
///
/// Returns:
///   Tensor: a new tensor.
#[pyfunction]
#[pyo3(signature = (input, *, dtype=None, device=None, requires_grad=false, generator=None))]
pub fn rand_like(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let x = &input.t;
    let (dt, g) = (dtype_arg(dtype)?.unwrap_or(x.dtype()), generator_arg(generator)?);
    let device = device_arg(device)?.unwrap_or(x.device());
    let t = run(py, x.numel(), || creation::rand(x.shape(), dt, device, g.as_ref()))?;
    finish(py, t, None, requires_grad)
}

/// Standard normal random numbers with the shape of ``input``.
///
/// Args:
///   input (Tensor): the input.
///   dtype (dtype, optional): defaults to input's.
///   device (str or device, optional): defaults to input's.
///   requires_grad (bool): record operations on the result for autograd.
///   generator (Generator, optional): the random generator (the default one when None).
///
/// Returns:
///   Tensor: a new tensor.
#[pyfunction]
#[pyo3(signature = (input, *, dtype=None, device=None, requires_grad=false, generator=None))]
pub fn randn_like(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let x = &input.t;
    let (dt, g) = (dtype_arg(dtype)?.unwrap_or(x.dtype()), generator_arg(generator)?);
    let device = device_arg(device)?.unwrap_or(x.device());
    let t = run(py, x.numel(), || creation::randn(x.shape(), dt, device, g.as_ref()))?;
    finish(py, t, None, requires_grad)
}

/// arange(end) or arange(start, end, step=1).
#[pyfunction]
#[pyo3(signature = (start, end=None, step=None, *, dtype=None, device=None, requires_grad=false))]
pub fn arange(
    py: Python<'_>,
    start: &Bound<'_, PyAny>,
    end: Option<&Bound<'_, PyAny>>,
    step: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let device = device_arg(device)?;
    let num = super::tensor::number;
    let (s, e) = match end.filter(|e| !e.is_none()) {
        Some(e) => (num(start)?, num(e)?),
        None => (Scalar::Int(0), num(start)?),
    };
    let st = match step.filter(|s| !s.is_none()) {
        Some(s) => num(s)?,
        None => Scalar::Int(1),
    };
    let inferred = if [s, e, st].iter().any(|v| matches!(v, Scalar::Float(_))) {
        crate::tensor::dtype::default_float()
    } else {
        DType::I64
    };
    let dt = dtype_arg(dtype)?.unwrap_or(inferred);
    // The length, roughly (the op checks the arguments): `as` saturates and maps NaN to 0.
    let work = ((e.to_f64() - s.to_f64()) / st.to_f64()).abs() as usize;
    let t = run(py, work, || creation::arange(s, e, st, dt))?;
    finish(py, t, Some(device.unwrap_or_else(default_device)), requires_grad)
}

/// ``steps`` evenly spaced values from ``start`` to ``end`` inclusive.
///
/// Args:
///   start (Number): the first value.
///   end (Number): the last value.
///   steps (int): the number of values.
///   dtype (dtype, optional): the default float dtype when None.
///   device (str or device, optional): where to create the tensor (the default device when None).
///   requires_grad (bool): record operations on the result for autograd.
///
/// Returns:
///   Tensor: of shape ``(steps,)``.
#[pyfunction]
#[pyo3(signature = (start, end, steps, *, dtype=None, device=None, requires_grad=false))]
pub fn linspace(
    py: Python<'_>,
    start: f64,
    end: f64,
    steps: i64,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let device = device_arg(device)?;
    let dt = float_dtype(dtype)?;
    let t = run(py, steps.max(0) as usize, || creation::linspace(start, end, steps, dt))?;
    finish(py, t, Some(device.unwrap_or_else(default_device)), requires_grad)
}

/// A 2-D tensor with ones on the diagonal and zeros elsewhere.
///
/// Args:
///   n (int): the number of rows.
///   m (int, optional): the number of columns (n when None).
///   dtype (dtype, optional): the default float dtype when None.
///   device (str or device, optional): where to create the tensor (the default device when None).
///   requires_grad (bool): record operations on the result for autograd.
///
/// Returns:
///   Tensor: of shape ``(n, m)``.
#[pyfunction]
#[pyo3(signature = (n, m=None, *, dtype=None, device=None, requires_grad=false))]
pub fn eye(
    py: Python<'_>,
    n: i64,
    m: Option<i64>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let device = device_arg(device)?;
    let (m, dt) = (m.unwrap_or(n), float_dtype(dtype)?);
    let work = (n.max(0) as usize).saturating_mul(m.max(0) as usize);
    let t = run(py, work, || creation::eye(n, m, dt))?;
    finish(py, t, Some(device.unwrap_or_else(default_device)), requires_grad)
}

/// Uniform random numbers in [0, 1).
///
/// Args:
///   *size (int or Sequence[int]): the shape.
///   generator (Generator, optional): the random generator (the default one when None).
///   dtype (dtype, optional): a floating dtype (the default when None).
///   device (str or device, optional): where to create the tensor (the default device when None).
///   requires_grad (bool): record operations on the result for autograd.
///
/// Returns:
///   Tensor: a new tensor.
#[pyfunction]
#[pyo3(signature = (*size, generator=None, dtype=None, device=None, requires_grad=false))]
pub fn rand(
    py: Python<'_>,
    size: &Bound<'_, PyTuple>,
    generator: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let device = device_arg(device)?.unwrap_or_else(default_device);
    let shape = shape_of(&varargs_ints(size, "size")?)?;
    let (dt, g) = (float_dtype(dtype)?, generator_arg(generator)?);
    let t = run(py, numel(&shape), || creation::rand(&shape, dt, device, g.as_ref()))?;
    finish(py, t, None, requires_grad)
}

/// Standard normal random numbers.
///
/// Args:
///   *size (int or Sequence[int]): the shape.
///   generator (Generator, optional): the random generator (the default one when None).
///   dtype (dtype, optional): a floating dtype (the default when None).
///   device (str or device, optional): where to create the tensor (the default device when None).
///   requires_grad (bool): record operations on the result for autograd.
///
/// Returns:
///   Tensor: a new tensor.
#[pyfunction]
#[pyo3(signature = (*size, generator=None, dtype=None, device=None, requires_grad=false))]
pub fn randn(
    py: Python<'_>,
    size: &Bound<'_, PyTuple>,
    generator: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let device = device_arg(device)?.unwrap_or_else(default_device);
    let shape = shape_of(&varargs_ints(size, "size")?)?;
    let (dt, g) = (float_dtype(dtype)?, generator_arg(generator)?);
    let t = run(py, numel(&shape), || creation::randn(&shape, dt, device, g.as_ref()))?;
    finish(py, t, None, requires_grad)
}

/// randint(high, size) or randint(low, high, size), positional or by keyword.
#[pyfunction]
#[pyo3(signature = (*args, low=None, high=None, size=None, generator=None, dtype=None, device=None))]
#[allow(clippy::too_many_arguments)]
pub fn randint(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    low: Option<i64>,
    high: Option<i64>,
    size: Option<&Bound<'_, PyAny>>,
    generator: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let device = device_arg(device)?;
    let mut ints = Vec::new();
    let mut shape_obj = size.cloned();
    for a in args.iter() {
        if a.is_instance_of::<pyo3::types::PyTuple>() || a.is_instance_of::<pyo3::types::PyList>() {
            shape_obj = Some(a);
        } else {
            ints.push(a.extract::<i64>().map_err(|_| {
                PyRuntimeError::new_err(format!("randint(): bound {} does not fit in int64", a))
            })?);
        }
    }
    ints.extend(low.iter().chain(high.iter()));
    let (low, high) = match ints.as_slice() {
        [h] if low.is_none() => (0, *h),
        [l, h] => (*l, *h),
        _ => {
            return Err(PyTypeError::new_err("randint() expects (high, size) or (low, high, size)"))
        }
    };
    let shape_obj = shape_obj
        .ok_or_else(|| PyTypeError::new_err("randint() missing required argument 'size'"))?;
    let shape = shape_of(&super::convert::int_list(&shape_obj, "size")?)?;
    let (dt, g) = (dtype_arg(dtype)?.unwrap_or(DType::I64), generator_arg(generator)?);
    let t = run(py, numel(&shape), || creation::randint(low, high, &shape, dt, g.as_ref()))?;
    finish(py, t, Some(device.unwrap_or_else(default_device)), false)
}

/// A random permutation of ``0 .. n-1``.
///
/// Args:
///   n (int): the number of elements.
///   generator (Generator, optional): the random generator (the default one when None).
///   dtype (dtype, optional): int64 by default.
///   device (str or device, optional): where to create the tensor (the default device when None).
///
/// Returns:
///   Tensor: of shape ``(n,)``.
#[pyfunction]
#[pyo3(signature = (n, *, generator=None, dtype=None, device=None))]
pub fn randperm(
    py: Python<'_>,
    n: i64,
    generator: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let device = device_arg(device)?;
    let (dt, g) = (dtype_arg(dtype)?.unwrap_or(DType::I64), generator_arg(generator)?);
    let t = run(py, n.max(0) as usize, || creation::randperm(n, dt, g.as_ref()))?;
    finish(py, t, Some(device.unwrap_or_else(default_device)), false)
}

/// Seeds the default random generator (CPU, and the GPU's random streams).
///
/// Args:
///   seed (int): the seed.
#[pyfunction]
pub fn manual_seed(seed: &Bound<'_, PyAny>) -> PyResult<()> {
    default_gen()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .manual_seed(super::dtype::seed_value(seed)?);
    Ok(())
}

/// The seed the default generator was last seeded with.
///
/// Returns:
///   int: the seed.
#[pyfunction]
pub fn initial_seed() -> u64 {
    default_gen().lock().unwrap_or_else(|e| e.into_inner()).initial_seed()
}

/// The default generator's state.
///
/// Returns:
///   Tensor: a uint8 tensor, for :func:`set_rng_state`.
#[pyfunction]
pub fn get_rng_state() -> PyResult<PyTensor> {
    get_state(&default_gen())
}

/// Restores the default generator's state.
///
/// Args:
///   state (Tensor): a state :func:`get_rng_state` returned.
#[pyfunction]
pub fn set_rng_state(state: PyRef<'_, PyTensor>) -> PyResult<()> {
    set_state(&default_gen(), &state)
}
