//! Python values -> core arguments: operands, dims, sizes, data for rumus.tensor.

use super::gil::run;
use super::numpy::{from_numpy, is_ndarray};
use super::tensor::PyTensor;
use crate::ops::copy::{clone_as, to_dtype};
use crate::ops::Operand;
use crate::tensor::{DType, Scalar, Shape, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyComplex, PyComplexMethods, PyFloat, PyInt, PyList, PySequence, PyTuple,
};

/// A Python number as a Scalar (bool before int: bool is an int subclass).
pub fn scalar(obj: &Bound<'_, PyAny>) -> Option<Scalar> {
    if obj.is_instance_of::<PyBool>() {
        return obj.extract::<bool>().ok().map(Scalar::Bool);
    }
    if obj.is_instance_of::<PyInt>() {
        return obj.extract::<i64>().ok().map(Scalar::Int);
    }
    if obj.is_instance_of::<PyFloat>() {
        return obj.extract::<f64>().ok().map(Scalar::Float);
    }
    None
}

/// A tensor or number operand; NumPy arrays and numbers become tensors/scalars.
pub fn operand(obj: &Bound<'_, PyAny>) -> PyResult<Option<Operand>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(Some(Operand::T(t.get().t.clone())));
    }
    if let Some(s) = scalar(obj) {
        return Ok(Some(Operand::S(s)));
    }
    if let Some(z) = complex_scalar(obj)? {
        return Ok(Some(Operand::T(z)));
    }
    if is_ndarray(obj) {
        let t = from_numpy(obj)?;
        return Ok(Some(Operand::T(clone_as(&t, t.dtype())?)));
    }
    // NumPy scalars (np.float32(1.5), np.int64(3)).
    if obj.hasattr("dtype")? && obj.hasattr("item")? {
        let item = obj.call_method0("item")?;
        if let Some(z) = complex_scalar(&item)? {
            return Ok(Some(Operand::T(z)));
        }
        return Ok(scalar(&item).map(Operand::S));
    }
    Ok(None)
}

/// A Python complex number as a 0-d complex128 tensor: as an operand it
/// promotes float32 tensors to complex64 and float64 ones to complex128.
fn complex_scalar(obj: &Bound<'_, PyAny>) -> PyResult<Option<Tensor>> {
    match obj.cast::<PyComplex>() {
        Ok(z) => Ok(Some(crate::ops::complex::scalar(z.real(), z.imag(), DType::C128)?)),
        Err(_) => Ok(None),
    }
}

pub fn operand_req(obj: &Bound<'_, PyAny>, op: &str) -> PyResult<Operand> {
    operand(obj)?.ok_or_else(|| {
        let ty = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        PyTypeError::new_err(format!(
            "{}(): argument 'other' must be Tensor or Number, not {}",
            op, ty
        ))
    })
}

pub fn tensor_req(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Tensor> {
    match obj.cast::<PyTensor>() {
        Ok(t) => Ok(t.get().t.clone()),
        Err(_) => {
            let ty = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
            Err(PyTypeError::new_err(format!("{} must be a Tensor, not {}", what, ty)))
        }
    }
}

fn int_of(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    if obj.is_instance_of::<PyBool>() || obj.is_instance_of::<PyFloat>() {
        let ty = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        return Err(PyTypeError::new_err(format!("{} must be int, not {}", what, ty)));
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.get().t;
        if t.numel() == 1 && !t.dtype().is_float() && t.dtype() != DType::Bool {
            return Ok(crate::ops::copy::item(t)?.to_i64());
        }
    }
    obj.extract::<i64>().map_err(|_| {
        let ty = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        PyTypeError::new_err(format!("{} must be int, not {}", what, ty))
    })
}

/// A list of ints from a tuple/list (or a single int).
pub fn int_list(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<i64>> {
    if let Ok(seq) = obj.cast::<PySequence>() {
        if obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyList>() {
            return (0..seq.len()?).map(|i| int_of(&seq.get_item(i)?, what)).collect();
        }
    }
    Ok(vec![int_of(obj, what)?])
}

/// `dim=None | int | sequence of ints`.
pub fn dims_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<i64>>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => int_list(o, "dim").map(Some),
    }
}

/// Varargs sizes: `f(2, 3)` or `f((2, 3))` or `f([2, 3])`.
pub fn varargs_ints(args: &Bound<'_, PyTuple>, what: &str) -> PyResult<Vec<i64>> {
    if args.len() == 1 {
        let a = args.get_item(0)?;
        if a.is_instance_of::<PyTuple>() || a.is_instance_of::<PyList>() {
            return int_list(&a, what);
        }
    }
    args.iter().map(|a| int_of(&a, what)).collect()
}

pub fn shape_of(sizes: &[i64]) -> PyResult<Shape> {
    if let Some(&bad) = sizes.iter().find(|&&s| s < 0) {
        return Err(PyRuntimeError::new_err(format!(
            "Trying to create tensor with negative dimension {}: {:?}",
            bad, sizes
        )));
    }
    Ok(sizes.iter().map(|&s| s as usize).collect())
}

/// rumus.tensor(data): always a copy. Python floats give float32 (the default dtype).
pub fn tensor_from_data(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dtype: Option<DType>,
) -> PyResult<Tensor> {
    if let Ok(t) = data.cast::<PyTensor>() {
        let t = &t.get().t;
        return Ok(run(py, t.numel(), || clone_as(t, dtype.unwrap_or(t.dtype())))?);
    }
    // NumPy scalars (np.float64 is a float subclass) keep their dtype via NumPy below.
    if let Some(s) = scalar(data).filter(|_| !data.hasattr("dtype").unwrap_or(false)) {
        return Ok(crate::ops::creation::scalar_tensor(s, dtype.unwrap_or(s.default_dtype()))?);
    }
    let from_array = is_ndarray(data);
    let arr = if from_array {
        data.clone()
    } else {
        if data.is_instance_of::<pyo3::types::PyString>()
            || data.is_instance_of::<pyo3::types::PyBytes>()
        {
            return Err(PyTypeError::new_err("new(): invalid data type 'str'"));
        }
        py.import("numpy")?.call_method1("asarray", (data,))?
    };
    if !from_array && int_overflow(&arr)? {
        return Err(PyRuntimeError::new_err(
            "Overflow when unpacking long: an integer in the data does not fit in int64",
        ));
    }
    let src = from_numpy(&arr).map_err(|e| {
        if from_array {
            e
        } else {
            PyTypeError::new_err(format!(
                "could not convert data of type {} to a tensor: {}",
                data.get_type().name().map(|n| n.to_string()).unwrap_or_default(),
                e
            ))
        }
    })?;
    let target = match dtype {
        Some(d) => d,
        // Python floats arrive as float64 from NumPy; they take the default
        // float dtype (float32 unless set_default_dtype changed it). NumPy
        // values (np.float64, arrays) keep their own dtype.
        None if !from_array && src.dtype() == DType::F64 && !first_leaf_is_numpy(data)? => {
            crate::tensor::dtype::default_float()
        }
        // Python complex numbers likewise take the default complex dtype.
        None if !from_array && src.dtype() == DType::C128 && !first_leaf_is_numpy(data)? => {
            crate::tensor::dtype::default_complex()
        }
        None => src.dtype(),
    };
    Ok(run(py, src.numel(), || clone_as(&src, target))?)
}

/// Whether the first scalar of nested lists is a NumPy value (or tensor) rather than a Python
/// number.
fn first_leaf_is_numpy(data: &Bound<'_, PyAny>) -> PyResult<bool> {
    let mut leaf = data.clone();
    while (leaf.is_instance_of::<PyList>() || leaf.is_instance_of::<PyTuple>()) && leaf.len()? > 0 {
        leaf = leaf.get_item(0)?;
    }
    leaf.hasattr("dtype")
}

/// NumPy turns Python ints beyond int64 into uint64 or object arrays; PyTorch
/// reports them as an overflow.
fn int_overflow(arr: &Bound<'_, PyAny>) -> PyResult<bool> {
    let kind: String = arr.getattr("dtype")?.getattr("kind")?.extract()?;
    match kind.as_str() {
        "u" => Ok(arr.getattr("dtype")?.getattr("itemsize")?.extract::<usize>()? == 8),
        "O" => {
            for x in arr.getattr("flat")?.try_iter()? {
                let x = x?;
                if x.is_instance_of::<PyInt>()
                    && !x.is_instance_of::<PyBool>()
                    && x.extract::<i64>().is_err()
                {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        _ => Ok(false),
    }
}

/// rumus.as_tensor: shares memory with a NumPy array or tensor when no cast is needed.
pub fn as_tensor(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dtype: Option<DType>,
) -> PyResult<Tensor> {
    if let Ok(t) = data.cast::<PyTensor>() {
        let t = &t.get().t;
        return Ok(run(py, t.numel(), || to_dtype(t, dtype.unwrap_or(t.dtype())))?);
    }
    if is_ndarray(data) {
        if let Ok(t) = from_numpy(data) {
            return Ok(run(py, t.numel(), || to_dtype(&t, dtype.unwrap_or(t.dtype())))?);
        }
    }
    tensor_from_data(py, data, dtype)
}
