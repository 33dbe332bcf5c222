//! Tensor reduction methods: sum/mean/prod, extremes with indices, var/std,
//! logsumexp, all/any and the cumulative scans.

use super::convert::{dims_arg, int_list, operand};
use super::dtype::dtype_arg;
use super::gil::run;
use super::methods::one_dim;
use super::tensor::{number, wrap, PyTensor};
use crate::ops::elementwise::{binary, Binary};
use crate::ops::{reduce, scan, Operand};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyType};

static RETURN_TYPES: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// torch.return_types-style (values, indices) named tuple.
fn values_indices(
    py: Python<'_>,
    v: crate::tensor::Tensor,
    i: crate::tensor::Tensor,
) -> PyResult<Py<PyAny>> {
    let ty = RETURN_TYPES.import(py, "rumus._size", "ValuesIndices")?;
    Ok(ty.call1((wrap(v), wrap(i)))?.unbind())
}

fn correction_of(unbiased: Option<bool>, correction: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
    match (unbiased, correction) {
        (Some(_), Some(c)) if !c.is_none() => {
            Err(PyValueError::new_err("var/std: cannot specify both unbiased and correction"))
        }
        (_, Some(c)) if !c.is_none() => Ok(number(c)?.to_f64()),
        (Some(false), _) => Ok(0.0),
        _ => Ok(1.0),
    }
}

/// PyTorch's `x.std(False)` overload: a bool in the first position is `unbiased`.
fn bool_as_unbiased<'a, 'py>(
    dim: Option<&'a Bound<'py, PyAny>>,
    unbiased: Option<bool>,
) -> PyResult<(Option<&'a Bound<'py, PyAny>>, Option<bool>)> {
    match dim {
        Some(d) if d.is_instance_of::<PyBool>() => {
            if unbiased.is_some() {
                return Err(PyTypeError::new_err("var/std: unbiased given twice"));
            }
            Ok((None, Some(d.extract()?)))
        }
        _ => Ok((dim, unbiased)),
    }
}

#[pymethods]
impl PyTensor {
    /// The sum over ``dim``.
    ///
    /// Args:
    ///   dim (int or tuple[int], optional): the dimension(s) to reduce; all when None.
    ///   keepdim (bool): keep the reduced dimensions with size 1.
    ///   dtype (dtype, optional): the result's dtype.
    ///
    /// Returns:
    ///   Tensor: the reduced values.
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn sum(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (dims, dt, t) = (dims_arg(dim)?, dtype_arg(dtype)?, &self.t);
        Ok(wrap(run(py, t.numel(), || reduce::sum(t, dims.as_deref(), keepdim, dt))?))
    }
    /// The mean over ``dim``.
    ///
    /// Args:
    ///   dim (int or tuple[int], optional): the dimension(s) to reduce; all when None.
    ///   keepdim (bool): keep the reduced dimensions with size 1.
    ///   dtype (dtype, optional): the result's dtype.
    ///
    /// Returns:
    ///   Tensor: the reduced values.
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn mean(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (dims, dt, t) = (dims_arg(dim)?, dtype_arg(dtype)?, &self.t);
        Ok(wrap(run(py, t.numel(), || reduce::mean(t, dims.as_deref(), keepdim, dt))?))
    }
    /// The product over ``dim``.
    ///
    /// Args:
    ///   dim (int, optional): the dimension; all elements when None.
    ///   keepdim (bool): keep the reduced dimensions with size 1.
    ///   dtype (dtype, optional): the result's dtype.
    ///
    /// Returns:
    ///   Tensor: the reduced values.
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn prod(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (dims, dt, t) = (dims_arg(dim)?, dtype_arg(dtype)?, &self.t);
        Ok(wrap(run(py, t.numel(), || reduce::prod(t, dims.as_deref(), keepdim, dt))?))
    }
    /// The maximum over ``dim`` (gradient split evenly between ties).
    ///
    /// Args:
    ///   dim (int or tuple[int], optional): the dimension(s) to reduce; all when None.
    ///   keepdim (bool): keep the reduced dimensions with size 1.
    ///
    /// Returns:
    ///   Tensor: the reduced values.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amax(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (dims, t) = (dims_arg(dim)?, &self.t);
        Ok(wrap(run(py, t.numel(), || reduce::amax(t, dims.as_deref().or(Some(&[])), keepdim))?))
    }
    /// The minimum over ``dim`` (gradient split evenly between ties).
    ///
    /// Args:
    ///   dim (int or tuple[int], optional): the dimension(s) to reduce; all when None.
    ///   keepdim (bool): keep the reduced dimensions with size 1.
    ///
    /// Returns:
    ///   Tensor: the reduced values.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amin(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (dims, t) = (dims_arg(dim)?, &self.t);
        Ok(wrap(run(py, t.numel(), || reduce::amin(t, dims.as_deref().or(Some(&[])), keepdim))?))
    }
    /// max() -> value; max(dim, keepdim) -> (values, indices); max(other) -> maximum.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn max(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        self.extreme(py, dim, keepdim, true)
    }
    /// The minimum of all elements, or ``(values, indices)`` along ``dim``; ``min(other)`` is
    /// :meth:`minimum`.
    ///
    /// Args:
    ///   dim (int or Tensor, optional): the dimension, or a tensor to compare with elementwise.
    ///   keepdim (bool): keep the reduced dimensions with size 1.
    ///
    /// Returns:
    ///   Tensor or tuple[Tensor, Tensor]: the minimum, or ``(values, indices)``.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn min(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        self.extreme(py, dim, keepdim, false)
    }
    /// The index of the maximum (over the flattened tensor when ``dim`` is None).
    ///
    /// Args:
    ///   dim (int, optional): the dimension.
    ///   keepdim (bool): keep the reduced dimensions with size 1.
    ///
    /// Returns:
    ///   Tensor: int64 indices.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmax(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (d, t) = (dim.filter(|d| !d.is_none()).map(one_dim).transpose()?, &self.t);
        Ok(wrap(run(py, t.numel(), || reduce::argmax(t, d, keepdim, true))?))
    }
    /// The index of the minimum (over the flattened tensor when ``dim`` is None).
    ///
    /// Args:
    ///   dim (int, optional): the dimension.
    ///   keepdim (bool): keep the reduced dimensions with size 1.
    ///
    /// Returns:
    ///   Tensor: int64 indices.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmin(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (d, t) = (dim.filter(|d| !d.is_none()).map(one_dim).transpose()?, &self.t);
        Ok(wrap(run(py, t.numel(), || reduce::argmax(t, d, keepdim, false))?))
    }
    /// The variance over ``dim``.
    ///
    /// Args:
    ///   dim (int or tuple[int], optional): the dimension(s) to reduce; all when None.
    ///   unbiased (bool, optional): Bessel's correction (deprecated; use ``correction``).
    ///   keepdim (bool): keep the reduced dimensions with size 1.
    ///   correction (int, optional): the difference between the count and the divisor (1 by
    ///     default).
    ///
    /// Returns:
    ///   Tensor: the reduced values.
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn var(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: bool,
        correction: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (dim, unbiased) = bool_as_unbiased(dim, unbiased)?;
        let (dims, c, t) = (dims_arg(dim)?, correction_of(unbiased, correction)?, &self.t);
        Ok(wrap(run(py, t.numel(), || reduce::var(t, dims.as_deref(), c, keepdim))?))
    }
    /// The standard deviation over ``dim``.
    ///
    /// Args:
    ///   dim (int or tuple[int], optional): the dimension(s) to reduce; all when None.
    ///   unbiased (bool, optional): Bessel's correction (deprecated; use ``correction``).
    ///   keepdim (bool): keep the reduced dimensions with size 1.
    ///   correction (int, optional): the difference between the count and the divisor (1 by
    ///     default).
    ///
    /// Returns:
    ///   Tensor: the reduced values.
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn std(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: bool,
        correction: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (dim, unbiased) = bool_as_unbiased(dim, unbiased)?;
        let (dims, c, t) = (dims_arg(dim)?, correction_of(unbiased, correction)?, &self.t);
        Ok(wrap(run(py, t.numel(), || reduce::std(t, dims.as_deref(), c, keepdim))?))
    }
    /// ``log(sum(exp(x)))`` over ``dim``, computed stably.
    ///
    /// Args:
    ///   dim (int or tuple[int]): the dimension(s).
    ///   keepdim (bool): keep the reduced dimensions with size 1.
    ///
    /// Returns:
    ///   Tensor: the reduced values.
    #[pyo3(signature = (dim, keepdim=false))]
    fn logsumexp(
        &self,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (dims, t) = (int_list(dim, "dim")?, &self.t);
        Ok(wrap(run(py, t.numel(), || reduce::logsumexp(t, &dims, keepdim))?))
    }
    /// Whether every element is true (non-zero).
    ///
    /// Args:
    ///   dim (int or tuple[int], optional): the dimension(s) to reduce; all when None.
    ///   keepdim (bool): keep the reduced dimensions with size 1.
    ///
    /// Returns:
    ///   Tensor: bool.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn all(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (dims, t) = (dims_arg(dim)?, &self.t);
        Ok(wrap(run(py, t.numel(), || reduce::all_any(t, dims.as_deref(), keepdim, true))?))
    }
    /// Whether any element is true (non-zero).
    ///
    /// Args:
    ///   dim (int or tuple[int], optional): the dimension(s) to reduce; all when None.
    ///   keepdim (bool): keep the reduced dimensions with size 1.
    ///
    /// Returns:
    ///   Tensor: bool.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn any(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (dims, t) = (dims_arg(dim)?, &self.t);
        Ok(wrap(run(py, t.numel(), || reduce::all_any(t, dims.as_deref(), keepdim, false))?))
    }
    /// The cumulative sum along ``dim``.
    ///
    /// Args:
    ///   dim (int): the dimension.
    ///   dtype (dtype, optional): the result's dtype.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(signature = (dim, *, dtype=None))]
    fn cumsum(
        &self,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (d, dt, t) = (one_dim(dim)?, dtype_arg(dtype)?, &self.t);
        Ok(wrap(run(py, t.numel(), || scan::cumulative(t, d, dt, false))?))
    }
    /// The cumulative product along ``dim``.
    ///
    /// Args:
    ///   dim (int): the dimension.
    ///   dtype (dtype, optional): the result's dtype.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(signature = (dim, *, dtype=None))]
    fn cumprod(
        &self,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (d, dt, t) = (one_dim(dim)?, dtype_arg(dtype)?, &self.t);
        Ok(wrap(run(py, t.numel(), || scan::cumulative(t, d, dt, true))?))
    }
}

impl PyTensor {
    fn extreme(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        max: bool,
    ) -> PyResult<Py<PyAny>> {
        let (op, t) = (if max { Binary::Maximum } else { Binary::Minimum }, &self.t);
        match dim {
            Some(d) if d.cast::<PyTensor>().is_ok() => {
                let (a, o) = (
                    Operand::T(t.clone()),
                    operand(d)?.ok_or_else(|| PyTypeError::new_err("expected a tensor"))?,
                );
                let r = run(py, t.numel(), || binary(op, &a, &o, None))?;
                Ok(Bound::new(py, wrap(r))?.into_any().unbind())
            }
            Some(d) if !d.is_none() => {
                let d = one_dim(d)?;
                let (v, i) = run(py, t.numel(), || reduce::max_dim(t, d, keepdim, max))?;
                values_indices(py, v, i)
            }
            _ => {
                let r = run(py, t.numel(), || {
                    if max {
                        reduce::amax(t, None, false)
                    } else {
                        reduce::amin(t, None, false)
                    }
                })?;
                Ok(Bound::new(py, wrap(r))?.into_any().unbind())
            }
        }
    }
}
