//! Zero-copy exchange with NumPy: from_numpy borrows an array's memory (and
//! keeps the array alive); tensors expose `__array_interface__` so NumPy views
//! theirs (numpy keeps the tensor, hence its storage, alive).

use crate::tensor::storage::{CpuBuffer, Storage};
use crate::tensor::{DType, Layout, Tensor};
use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;

/// Keeps a NumPy array alive while a storage borrows its memory.
struct ArrayOwner(#[allow(dead_code)] Py<PyAny>);

pub fn is_ndarray(obj: &Bound<'_, PyAny>) -> bool {
    obj.cast::<PyUntypedArray>().is_ok()
}

fn dtype_of(arr: &Bound<'_, PyUntypedArray>) -> PyResult<DType> {
    let d = arr.dtype();
    let native = d.is_native_byteorder().unwrap_or(true);
    let found = match (d.kind(), d.itemsize()) {
        (b'f', 4) => Some(DType::F32),
        (b'f', 8) => Some(DType::F64),
        (b'f', 2) => Some(DType::F16),
        (b'i', 8) => Some(DType::I64),
        (b'i', 4) => Some(DType::I32),
        (b'u', 1) => Some(DType::U8),
        (b'b', 1) => Some(DType::Bool),
        (b'c', 8) => Some(DType::C64),
        (b'c', 16) => Some(DType::C128),
        _ => None,
    };
    match found {
        Some(t) if native => Ok(t),
        Some(_) => Err(PyValueError::new_err(format!("given numpy array has byte order different from the native byte order ({}); convert it with .astype(its dtype.newbyteorder('='))", d.str()?))),
        None => Err(PyTypeError::new_err(format!(
            "can't convert np.ndarray of type {}. The only supported types are: complex128, complex64, float64, float32, float16, int64, int32, uint8, and bool.",
            d.str()?
        ))),
    }
}

/// rumus.from_numpy: a tensor over the array's memory (writes visible both ways).
pub fn from_numpy(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let arr = obj.cast::<PyUntypedArray>().map_err(|_| {
        PyTypeError::new_err(format!(
            "expected np.ndarray (got {})",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    let dtype = dtype_of(arr)?;
    // Rust bools must be 0 or 1; NumPy treats any non-zero byte as True.
    if dtype == DType::Bool
        && obj
            .call_method1("view", ("u1",))?
            .call_method1("__gt__", (1,))?
            .call_method0("any")?
            .is_truthy()?
    {
        return from_numpy(&obj.call_method1("__ne__", (false,))?);
    }
    let item = dtype.size() as isize;
    let shape: Vec<usize> = arr.shape().to_vec();
    let mut strides = Vec::with_capacity(shape.len());
    for &s in arr.strides() {
        if s < 0 {
            return Err(PyValueError::new_err(
                "At least one stride in the given numpy array is negative, and tensors with negative strides are not currently supported. (You can probably work around this by making a copy of your array  with array.copy().) ",
            ));
        }
        if s % item != 0 {
            return Err(PyValueError::new_err("given numpy array strides not a multiple of the element byte size. Copy the numpy array to reallocate the memory."));
        }
        strides.push(s / item);
    }
    // Read-only memory can't back a tensor that may be written in place, and
    // misaligned data can't be read as typed slices: those arrays are copied.
    let flags = unsafe { (*arr.as_array_ptr()).fields.flags };
    if flags & numpy::npyffi::NPY_ARRAY_WRITEABLE == 0
        || flags & numpy::npyffi::NPY_ARRAY_ALIGNED == 0
    {
        return from_numpy(&obj.call_method0("copy")?);
    }
    let layout = Layout {
        shape: shape.iter().copied().collect(),
        strides: strides.iter().copied().collect(),
        offset: 0,
    };
    // Elements spanned from the data pointer (strides are non-negative).
    let span = if layout.numel() == 0 { 0 } else { layout.span().1 as usize };
    // SAFETY: PyArrayObject's data pointer is valid for the span its shape/strides
    // describe, as long as the array (held by the owner) lives.
    let data = unsafe { (*arr.as_array_ptr()).fields.data as *mut u8 };
    let buf = unsafe {
        CpuBuffer::borrowed(data, span * dtype.size(), Box::new(ArrayOwner(obj.clone().unbind())))
    };
    Ok(Tensor::new(Arc::new(Storage::from_cpu(dtype, span, buf)), layout))
}

pub fn typestr(d: DType) -> PyResult<&'static str> {
    Ok(match d {
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::F16 => "<f2",
        DType::I64 => "<i8",
        DType::I32 => "<i4",
        DType::U8 => "|u1",
        DType::Bool => "|b1",
        DType::C64 => "<c8",
        DType::C128 => "<c16",
        DType::BF16 => return Err(PyTypeError::new_err("Got unsupported ScalarType BFloat16: NumPy has no bfloat16 dtype; convert with .float() first")),
    })
}

/// The `__array_interface__` dict of a CPU tensor (any strides).
pub fn array_interface<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyDict>> {
    if t.is_gpu() {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!("can't convert {} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.", "gpu")));
    }
    let d = PyDict::new(py);
    let item = t.dtype().size() as isize;
    d.set_item("shape", pyo3::types::PyTuple::new(py, t.shape().iter())?)?;
    d.set_item("typestr", typestr(t.dtype())?)?;
    d.set_item("data", (t.data_ptr()?, false))?;
    let strides: Vec<isize> = t.strides().iter().map(|&s| s * item).collect();
    d.set_item("strides", pyo3::types::PyTuple::new(py, strides)?)?;
    d.set_item("version", 3)?;
    Ok(d)
}
