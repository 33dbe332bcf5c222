//! Tensor conversions: to NumPy and Python values, `.to()`/`.cpu()`/`.gpu()`
//! and the dtype shorthands (`float()`, `long()`...).

use super::dtype::{device_arg, dtype_arg, PyDType};
use super::gil::{run, ALWAYS};
use super::tensor::{wrap, PyTensor};
use crate::ops::copy::{contiguous, item, to_dtype};
use crate::tensor::layout::numel;
use crate::tensor::Device;
use crate::tensor::{DType, Scalar, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple, PyType};
use pyo3::BoundObject;

/// Nested lists of Python numbers.
fn to_list<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    fn build<'py, T: Copy + IntoPyObject<'py, Error: Into<PyErr>>>(
        py: Python<'py>,
        data: &[T],
        shape: &[usize],
    ) -> PyResult<Bound<'py, PyAny>> {
        if shape.is_empty() {
            return Ok(data[0].into_pyobject(py).map_err(Into::into)?.into_any().into_bound());
        }
        let step = numel(&shape[1..]);
        let items: PyResult<Vec<_>> =
            (0..shape[0]).map(|i| build(py, &data[i * step..], &shape[1..])).collect();
        Ok(PyList::new(py, items?)?.into_any())
    }
    let shape = t.shape();
    if t.dtype().is_complex() {
        let v: Vec<Py<PyAny>> = super::complex::complex_values(t)?
            .into_iter()
            .map(|(re, im)| pyo3::types::PyComplex::from_doubles(py, re, im).into_any().unbind())
            .collect();
        let refs: Vec<&Py<PyAny>> = v.iter().collect();
        return build(py, &refs, shape);
    }
    match t.dtype() {
        DType::Bool => build(py, &t.to_vec::<bool>()?, shape),
        d if d.is_float() => build(py, &to_dtype(t, DType::F64)?.to_vec::<f64>()?, shape),
        _ => build(py, &to_dtype(t, DType::I64)?.to_vec::<i64>()?, shape),
    }
}

fn scalar_obj(py: Python<'_>, s: Scalar) -> PyResult<Py<PyAny>> {
    Ok(match s {
        Scalar::Bool(b) => pyo3::types::PyBool::new(py, b).to_owned().into_any().unbind(),
        Scalar::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Scalar::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
    })
}

/// Parses `.to(...)` arguments: a dtype, a device, a tensor (its dtype), or keywords.
fn to_target(
    args: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Option<DType>, Option<Device>)> {
    let mut target = dtype_arg(dtype)?;
    let mut dev = device_arg(device)?;
    for a in args.iter() {
        if let Ok(t) = a.cast::<PyTensor>() {
            target = Some(t.get().t.dtype());
            dev = Some(t.get().t.device());
        } else if a.cast::<PyDType>().is_ok() || a.cast::<PyType>().is_ok() {
            target = dtype_arg(Some(&a))?;
        } else if a.is_instance_of::<pyo3::types::PyBool>() {
            // non_blocking / copy flags: transfers are ordered anyway.
        } else {
            dev = device_arg(Some(&a))?;
        }
    }
    Ok((target, dev))
}

#[pymethods]
impl PyTensor {
    /// A NumPy array sharing this tensor's memory (any strides).
    #[pyo3(signature = (force=false))]
    fn numpy<'py>(slf: &Bound<'py, Self>, force: bool) -> PyResult<Bound<'py, PyAny>> {
        if slf.get().t.is_gpu() {
            if !force {
                return Err(PyTypeError::new_err(format!("can't convert {} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.", slf.get().t.device().name())));
            }
            let host = Self::cpu(Bound::new(slf.py(), wrap(slf.get().t.detach()))?)?;
            return Self::numpy(&host, true);
        }
        if !force && slf.get().t.requires_grad() {
            return Err(PyRuntimeError::new_err("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."));
        }
        let np = slf.py().import("numpy")?;
        let arr = np.call_method1("asarray", (slf,))?;
        if force {
            return arr.call_method0("copy");
        }
        Ok(arr)
    }
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        slf: &Bound<'py, Self>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let arr = Self::numpy(slf, copy == Some(true))?;
        match dtype {
            Some(d) if !d.is_none() => arr.call_method1("astype", (d,)),
            _ => Ok(arr),
        }
    }
    /// The values as (nested) Python lists.
    ///
    /// Returns:
    ///   list or Number: the values.
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.t.is_gpu() {
            let t = &self.t;
            return to_list(py, &run(py, ALWAYS, || crate::ops::copy::transfer(t, Device::Cpu))?);
        }
        to_list(py, &self.t)
    }
    /// The value of a one-element tensor as a Python number (waits for the GPU).
    ///
    /// Returns:
    ///   int, float or bool: the value.
    fn item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.t.dtype().is_complex() {
            return Ok(self.__complex__(py)?.into_any().unbind());
        }
        scalar_obj(py, item_of(py, &self.t)?)
    }
    fn __float__(&self, py: Python<'_>) -> PyResult<f64> {
        Ok(item_of(py, &self.t)?.to_f64())
    }
    /// Python's int(): floats go through Python (ValueError for NaN, exact big ints).
    fn __int__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match item_of(py, &self.t)? {
            Scalar::Float(f) => Ok(f.into_pyobject(py)?.call_method0("__int__")?.unbind()),
            s => Ok(s.to_i64().into_pyobject(py)?.into_any().unbind()),
        }
    }
    /// NumPy defers binary operators to the tensor (np.float32(2) * t is a Tensor).
    #[classattr]
    fn __array_priority__() -> f64 {
        1000.0
    }
    fn __index__(&self, py: Python<'_>) -> PyResult<i64> {
        if self.t.dtype().is_float() || self.t.dtype() == DType::Bool || self.t.numel() != 1 {
            return Err(PyTypeError::new_err(
                "only integer tensors of a single element can be converted to an index",
            ));
        }
        Ok(item_of(py, &self.t)?.to_i64())
    }
    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        if self.t.numel() != 1 {
            return Err(PyRuntimeError::new_err(format!(
                "Boolean value of Tensor with {} values is ambiguous",
                if self.t.numel() == 0 { "no" } else { "more than one" }
            )));
        }
        Ok(item_of(py, &self.t)?.to_f64() != 0.0)
    }
    fn __len__(&self) -> PyResult<usize> {
        self.t.shape().first().copied().ok_or_else(|| PyTypeError::new_err("len() of a 0-d tensor"))
    }
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }
    /// A copy with its own memory (differentiable).
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    fn clone(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || crate::ops::copy::clone(t))?))
    }
    /// Self if contiguous, else a contiguous copy.
    ///
    /// Returns:
    ///   Tensor: a contiguous tensor.
    fn contiguous(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || contiguous(t))?))
    }
    /// Converts dtype and/or moves to a device: ``to(dtype)``, ``to(device)``, ``to(device,
    /// dtype)``, ``to(other)``.
    ///
    /// Args:
    ///   *args: a dtype, a device, both, or a tensor whose dtype and device to take.
    ///   dtype (dtype, optional): the target dtype.
    ///   device (str or device, optional): the target device.
    ///   non_blocking (bool): accepted for compatibility (copies are ordered anyway).
    ///   copy (bool): copy even when nothing changes.
    ///
    /// Returns:
    ///   Tensor: self when nothing changes (and ``copy`` is False), else a new tensor.
    #[pyo3(signature = (*args, dtype=None, device=None, non_blocking=false, copy=false))]
    fn to(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        non_blocking: bool,
        copy: bool,
    ) -> PyResult<Py<PyAny>> {
        let _ = non_blocking;
        let t = &slf.get().t;
        let (dtype, device) = to_target(args, dtype, device)?;
        let py = slf.py();
        let mut out = t.clone();
        let cast = dtype.filter(|&d| d != t.dtype());
        let moving = device.filter(|&d| d != t.device());
        // Cast on the host side of a transfer: the GPU has no float64 to send or receive.
        if let (Some(d), Some(Device::Gpu(_))) = (cast, moving) {
            out = run(py, out.numel(), || to_dtype(&out, d))?;
        }
        if let Some(d) = moving {
            out = run(py, ALWAYS, || crate::ops::copy::to_device(&out, d))?;
        }
        if let Some(d) = cast.filter(|&d| d != out.dtype()) {
            out = run(py, out.numel(), || to_dtype(&out, d))?;
        }
        if out.same_tensor(t) {
            if !copy {
                return Ok(slf.clone().into_any().unbind());
            }
            out = run(py, t.numel(), || crate::ops::copy::clone(t))?;
        }
        Ok(Bound::new(py, wrap(out))?.into_any().unbind())
    }
    /// A copy on the CPU (the tensor itself when already there).
    fn cpu(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        if !slf.get().t.is_gpu() {
            return Ok(slf);
        }
        let t = &slf.get().t;
        Bound::new(
            slf.py(),
            wrap(run(slf.py(), ALWAYS, || crate::ops::copy::to_device(t, Device::Cpu))?),
        )
    }
    /// A copy on a GPU (the tensor itself when already there), like ``Tensor.cuda``.
    ///
    /// Args:
    ///   device (int, str or device, optional): the GPU (default: the current one).
    #[pyo3(signature = (device=None))]
    fn gpu<'py>(
        slf: Bound<'py, Self>,
        device: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let target = match device_arg(device)? {
            None => crate::py::dtype::current_gpu()?,
            Some(d @ Device::Gpu(_)) => d,
            Some(Device::Cpu) => {
                return Err(PyRuntimeError::new_err("Tensor.gpu(): expected a GPU device, got cpu"))
            }
        };
        if slf.get().t.device() == target {
            return Ok(slf);
        }
        let t = &slf.get().t;
        Bound::new(
            slf.py(),
            wrap(run(slf.py(), ALWAYS, || crate::ops::copy::to_device(t, target))?),
        )
    }
    /// The type name (``'rumus.FloatTensor'``...) or, given a dtype, a conversion to it.
    ///
    /// Args:
    ///   dtype (dtype or str, optional): the target type.
    ///
    /// Returns:
    ///   str or Tensor: the name, or the converted tensor.
    #[pyo3(signature = (dtype=None))]
    fn r#type(&self, py: Python<'_>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        match dtype_arg(dtype)? {
            None => Ok(format!("rumus.{}", self.t.dtype().name())
                .into_pyobject(py)?
                .into_any()
                .unbind()),
            Some(d) => Ok(Bound::new(py, self.cast(py, d)?)?.into_any().unbind()),
        }
    }
    /// Converts to other's dtype.
    ///
    /// Args:
    ///   other (Tensor): the tensor whose dtype to take.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    fn type_as(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        self.cast(py, other.t.dtype())
    }
    /// Converts to float32.
    ///
    /// Returns:
    ///   Tensor: self if already float32, else a copy.
    fn float(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.cast(py, DType::F32)
    }
    /// Converts to float64.
    ///
    /// Returns:
    ///   Tensor: self if already float64, else a copy.
    fn double(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.cast(py, DType::F64)
    }
    /// Converts to float16.
    ///
    /// Returns:
    ///   Tensor: self if already float16, else a copy.
    fn half(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.cast(py, DType::F16)
    }
    /// Converts to bfloat16.
    ///
    /// Returns:
    ///   Tensor: self if already bfloat16, else a copy.
    fn bfloat16(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.cast(py, DType::BF16)
    }
    /// Converts to int64.
    ///
    /// Returns:
    ///   Tensor: self if already int64, else a copy.
    fn long(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.cast(py, DType::I64)
    }
    /// Converts to int32.
    ///
    /// Returns:
    ///   Tensor: self if already int32, else a copy.
    fn int(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.cast(py, DType::I32)
    }
    /// Converts to uint8.
    ///
    /// Returns:
    ///   Tensor: self if already uint8, else a copy.
    fn byte(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.cast(py, DType::U8)
    }
    /// Converts to bool.
    ///
    /// Returns:
    ///   Tensor: self if already bool, else a copy.
    fn bool(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.cast(py, DType::Bool)
    }
}

impl PyTensor {
    fn cast(&self, py: Python<'_>, d: DType) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || to_dtype(t, d))?))
    }
}

/// The value of a one-element tensor; on the GPU, reading it waits for the queued kernels.
pub(super) fn item_of(py: Python<'_>, t: &Tensor) -> PyResult<Scalar> {
    Ok(run(py, if t.is_gpu() { ALWAYS } else { 0 }, || item(t))?)
}
