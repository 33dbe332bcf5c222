//! Tensor methods for elementwise ops and reductions, bound
//! straight to the Rust ops (shape_methods.rs has shapes and indexing). Unary ops
//! and their in-place forms come from one table.

use super::convert::{dims_arg, int_list, operand, operand_req, tensor_req};
use super::dtype::{dtype_arg, generator_arg};
use super::gil::run;
use super::tensor::{number, wrap, PyTensor};
use crate::ops::elementwise::{
    binary, binary_, clamp, masked_fill, unary, unary_, where_, Binary, Unary,
};
use crate::ops::{creation, reduce, scan, Operand};
use crate::tensor::Scalar;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};

/// The methods of the unary table (ops/elementwise/unary.rs) and their
/// in-place forms.
#[macro_export]
macro_rules! unary_methods {
    ($($v:ident $(($($arg:ty),*))? $name:literal : $($m:ident $($m_:ident)?),* ;)*) => {
        #[pymethods]
        impl PyTensor {
            $($(
                fn $m(&self, py: Python<'_>) -> PyResult<PyTensor> {
                    self.unary(py, Unary::$v)
                }
                $(
                    fn $m_<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
                        let t = &slf.get().t;
                        run(slf.py(), t.numel(), || unary_(Unary::$v, t))?;
                        Ok(slf)
                    }
                )?
            )*)*
        }
    };
}

crate::unary_ops!(unary_methods);

macro_rules! binary_methods {
    ($($name:ident, $name_:ident => $op:expr;)*) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $name(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
                    let (a, b) = (Operand::T(self.t.clone()), operand_req(other, stringify!($name))?);
                    Ok(wrap(run(py, self.t.numel(), || binary($op, &a, &b, None))?))
                }
                fn $name_<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
                    let b = operand_req(other, stringify!($name_))?;
                    let t = &slf.get().t;
                    run(slf.py(), t.numel(), || binary_($op, t, &b, None))?;
                    Ok(slf)
                }
            )*
        }
    };
}

binary_methods! {
    mul, mul_ => Binary::Mul;
    multiply, multiply_ => Binary::Mul;
    true_divide, true_divide_ => Binary::Div;
    floor_divide, floor_divide_ => Binary::FloorDiv;
    remainder, remainder_ => Binary::Rem;
    fmod, fmod_ => Binary::Fmod;
    pow, pow_ => Binary::Pow;
    atan2, atan2_ => Binary::Atan2;
    eq, eq_ => Binary::Eq;
    ne, ne_ => Binary::Ne;
    lt, lt_ => Binary::Lt;
    le, le_ => Binary::Le;
    gt, gt_ => Binary::Gt;
    ge, ge_ => Binary::Ge;
    logical_and, logical_and_ => Binary::LogicalAnd;
    logical_or, logical_or_ => Binary::LogicalOr;
    logical_xor, logical_xor_ => Binary::LogicalXor;
    bitwise_and, bitwise_and_ => Binary::BitAnd;
    bitwise_or, bitwise_or_ => Binary::BitOr;
    bitwise_xor, bitwise_xor_ => Binary::BitXor;
}

fn alpha_of(alpha: Option<&Bound<'_, PyAny>>) -> PyResult<Option<f64>> {
    match alpha {
        None => Ok(None),
        Some(a) => {
            let v = number(a)?.to_f64();
            Ok(if v == 1.0 { None } else { Some(v) })
        }
    }
}

fn div_op(rounding_mode: Option<&str>) -> PyResult<Binary> {
    match rounding_mode {
        None => Ok(Binary::Div),
        Some("trunc") => Ok(Binary::DivTrunc),
        Some("floor") => Ok(Binary::FloorDiv),
        Some(m) => Err(PyValueError::new_err(format!(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{}'",
            m
        ))),
    }
}

/// div(rounding_mode='trunc') on floats truncates the true quotient.
fn div(a: &Operand, b: &Operand, mode: Binary) -> crate::error::Result<crate::tensor::Tensor> {
    if mode == Binary::DivTrunc && crate::ops::result_type(&[a, b]).is_float() {
        return unary(Unary::Trunc, &binary(Binary::Div, a, b, None)?);
    }
    binary(mode, a, b, None)
}

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

/// A tuple of tensors, as split/chunk/unbind return in PyTorch.
pub(super) fn tensors(py: Python<'_>, list: Vec<crate::tensor::Tensor>) -> PyResult<Py<PyTuple>> {
    Ok(PyTuple::new(py, list.into_iter().map(wrap))?.unbind())
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

/// A dim argument for ops taking one int (reductions with indices, cumsum, ...).
pub(super) fn one_dim(dim: &Bound<'_, PyAny>) -> PyResult<i64> {
    match dims_arg(Some(dim))? {
        Some(d) if d.len() == 1 => Ok(d[0]),
        _ => Err(PyTypeError::new_err(format!("dim must be an int, got {}", dim.repr()?))),
    }
}

#[pymethods]
impl PyTensor {
    // ---- elementwise with options ----
    #[pyo3(signature = (other, *, alpha=None))]
    fn add(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (a, b, al) = (Operand::T(self.t.clone()), operand_req(other, "add")?, alpha_of(alpha)?);
        Ok(wrap(run(py, self.t.numel(), || binary(Binary::Add, &a, &b, al))?))
    }
    #[pyo3(signature = (other, *, alpha=None))]
    fn add_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        alpha: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let (b, al) = (operand_req(other, "add_")?, alpha_of(alpha)?);
        let t = &slf.get().t;
        run(slf.py(), t.numel(), || binary_(Binary::Add, t, &b, al))?;
        Ok(slf)
    }
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (a, b, al) = (Operand::T(self.t.clone()), operand_req(other, "sub")?, alpha_of(alpha)?);
        Ok(wrap(run(py, self.t.numel(), || binary(Binary::Sub, &a, &b, al))?))
    }
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        alpha: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let (b, al) = (operand_req(other, "sub_")?, alpha_of(alpha)?);
        let t = &slf.get().t;
        run(slf.py(), t.numel(), || binary_(Binary::Sub, t, &b, al))?;
        Ok(slf)
    }
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn div(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        rounding_mode: Option<&str>,
    ) -> PyResult<PyTensor> {
        let (a, b, op) =
            (Operand::T(self.t.clone()), operand_req(other, "div")?, div_op(rounding_mode)?);
        Ok(wrap(run(py, self.t.numel(), || div(&a, &b, op))?))
    }
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn divide(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        rounding_mode: Option<&str>,
    ) -> PyResult<PyTensor> {
        self.div(py, other, rounding_mode)
    }
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn div_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        rounding_mode: Option<&str>,
    ) -> PyResult<Bound<'py, Self>> {
        let (b, op) = (operand_req(other, "div_")?, div_op(rounding_mode)?);
        let t = &slf.get().t;
        run(slf.py(), t.numel(), || {
            if op == Binary::DivTrunc && t.dtype().is_float() {
                crate::ops::copy::copy_(t, &div(&Operand::T(t.clone()), &b, op)?)
            } else {
                binary_(op, t, &b, None)
            }
        })?;
        Ok(slf)
    }
    fn maximum(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (
            Operand::T(self.t.clone()),
            Operand::T(tensor_req(other, "maximum(): argument 'other'")?),
        );
        Ok(wrap(run(py, self.t.numel(), || binary(Binary::Maximum, &a, &b, None))?))
    }
    fn minimum(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (
            Operand::T(self.t.clone()),
            Operand::T(tensor_req(other, "minimum(): argument 'other'")?),
        );
        Ok(wrap(run(py, self.t.numel(), || binary(Binary::Minimum, &a, &b, None))?))
    }
    #[pyo3(signature = (decimals=0))]
    fn round(&self, py: Python<'_>, decimals: i64) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || {
            if decimals == 0 {
                return unary(Unary::Round, t);
            }
            let scale = Operand::S(Scalar::Float(10f64.powi(decimals as i32)));
            let up = binary(Binary::Mul, &Operand::T(t.clone()), &scale, None)?;
            binary(Binary::Div, &Operand::T(unary(Unary::Round, &up)?), &scale, None)
        })?))
    }
    fn round_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let t = &slf.get().t;
        run(slf.py(), t.numel(), || unary_(Unary::Round, t))?;
        Ok(slf)
    }
    #[pyo3(signature = (approximate="none"))]
    fn gelu(&self, py: Python<'_>, approximate: &str) -> PyResult<PyTensor> {
        let op = match approximate {
            "none" => Unary::Gelu,
            "tanh" => Unary::GeluTanh,
            a => {
                return Err(PyRuntimeError::new_err(format!(
                    "approximate argument must be either none or tanh, got '{}'",
                    a
                )))
            }
        };
        self.unary(py, op)
    }
    #[pyo3(signature = (negative_slope=0.01))]
    fn leaky_relu(&self, py: Python<'_>, negative_slope: f64) -> PyResult<PyTensor> {
        self.unary(py, Unary::LeakyRelu(negative_slope))
    }
    #[pyo3(signature = (alpha=1.0))]
    fn elu(&self, py: Python<'_>, alpha: f64) -> PyResult<PyTensor> {
        self.unary(py, Unary::Elu(alpha))
    }
    #[pyo3(signature = (beta=1.0, threshold=20.0))]
    fn softplus(&self, py: Python<'_>, beta: f64, threshold: f64) -> PyResult<PyTensor> {
        self.unary(py, Unary::Softplus(beta, threshold))
    }
    fn polygamma(&self, py: Python<'_>, n: i64) -> PyResult<PyTensor> {
        self.unary(py, polygamma_op(n)?)
    }
    fn polygamma_<'py>(slf: Bound<'py, Self>, n: i64) -> PyResult<Bound<'py, Self>> {
        let (op, t) = (polygamma_op(n)?, &slf.get().t);
        run(slf.py(), t.numel(), || unary_(op, t))?;
        Ok(slf)
    }
    fn isnan(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.unary(py, Unary::IsNan)
    }
    fn isinf(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.unary(py, Unary::IsInf)
    }
    fn isfinite(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.unary(py, Unary::IsFinite)
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clamp(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let lo = min.filter(|m| !m.is_none()).map(|m| operand_req(m, "clamp")).transpose()?;
        let hi = max.filter(|m| !m.is_none()).map(|m| operand_req(m, "clamp")).transpose()?;
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || clamp(t, lo.as_ref(), hi.as_ref()))?))
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clip(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        self.clamp(py, min, max)
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clamp_<'py>(
        slf: Bound<'py, Self>,
        min: Option<&Bound<'py, PyAny>>,
        max: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let lo = min.filter(|m| !m.is_none()).map(|m| operand_req(m, "clamp_")).transpose()?;
        let hi = max.filter(|m| !m.is_none()).map(|m| operand_req(m, "clamp_")).transpose()?;
        let t = &slf.get().t;
        run(slf.py(), t.numel(), || crate::ops::elementwise::clamp_(t, lo.as_ref(), hi.as_ref()))?;
        Ok(slf)
    }
    fn clamp_min(&self, py: Python<'_>, min: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.clamp(py, Some(min), None)
    }
    fn clamp_max(&self, py: Python<'_>, max: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.clamp(py, None, Some(max))
    }
    /// t.where(condition, other) == rumus.where(condition, t, other).
    #[pyo3(name = "where")]
    fn where_(
        &self,
        py: Python<'_>,
        condition: PyRef<'_, PyTensor>,
        other: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let (c, x, y) = (&condition.t, Operand::T(self.t.clone()), operand_req(other, "where")?);
        Ok(wrap(run(py, self.t.numel(), || where_(c, &x, &y))?))
    }
    fn masked_fill(
        &self,
        py: Python<'_>,
        mask: PyRef<'_, PyTensor>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let (t, m, v) = (&self.t, &mask.t, operand_req(value, "masked_fill")?);
        Ok(wrap(run(py, t.numel(), || masked_fill(t, m, &v, false))?))
    }
    fn masked_fill_<'py>(
        slf: Bound<'py, Self>,
        mask: PyRef<'py, PyTensor>,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let (t, m, v) = (&slf.get().t, &mask.t, operand_req(value, "masked_fill_")?);
        run(slf.py(), t.numel(), || masked_fill(t, m, &v, true))?;
        Ok(slf)
    }

    // ---- random fills ----
    #[pyo3(signature = (a=0.0, b=1.0, *, generator=None))]
    fn uniform_<'py>(
        slf: Bound<'py, Self>,
        a: f64,
        b: f64,
        generator: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let (t, g) = (&slf.get().t, generator_arg(generator)?);
        run(slf.py(), t.numel(), || creation::uniform_(t, a, b, g.as_ref()))?;
        Ok(slf)
    }
    #[pyo3(signature = (mean=0.0, std=1.0, *, generator=None))]
    fn normal_<'py>(
        slf: Bound<'py, Self>,
        mean: f64,
        std: f64,
        generator: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let (t, g) = (&slf.get().t, generator_arg(generator)?);
        run(slf.py(), t.numel(), || creation::normal_(t, mean, std, g.as_ref()))?;
        Ok(slf)
    }
    #[pyo3(signature = (p=0.5, *, generator=None))]
    fn bernoulli_<'py>(
        slf: Bound<'py, Self>,
        p: f64,
        generator: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let (t, g) = (&slf.get().t, generator_arg(generator)?);
        run(slf.py(), t.numel(), || creation::bernoulli_(t, p, g.as_ref()))?;
        Ok(slf)
    }

    // ---- reductions ----
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
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn min(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        self.extreme(py, dim, keepdim, false)
    }
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
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn var(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: bool,
        correction: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (dims, c, t) = (dims_arg(dim)?, correction_of(unbiased, correction)?, &self.t);
        Ok(wrap(run(py, t.numel(), || reduce::var(t, dims.as_deref(), c, keepdim))?))
    }
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn std(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: bool,
        correction: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (dims, c, t) = (dims_arg(dim)?, correction_of(unbiased, correction)?, &self.t);
        Ok(wrap(run(py, t.numel(), || reduce::std(t, dims.as_deref(), c, keepdim))?))
    }
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

fn polygamma_op(n: i64) -> PyResult<Unary> {
    if n < 0 {
        return Err(PyRuntimeError::new_err("polygamma(n, x) does not support negative n."));
    }
    Ok(Unary::Polygamma(n))
}

impl PyTensor {
    fn unary(&self, py: Python<'_>, op: Unary) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || unary(op, t))?))
    }
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
