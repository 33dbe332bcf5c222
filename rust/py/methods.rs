//! Tensor methods for elementwise ops and reductions, bound
//! straight to the Rust ops (shape_methods.rs has shapes and indexing). Unary ops
//! and their in-place forms come from one table.

use super::convert::{dims_arg, operand_req, tensor_req};
use super::dtype::generator_arg;
use super::gil::run;
use super::tensor::{number, wrap, PyTensor};
use crate::ops::elementwise::{
    binary, binary_, clamp, masked_fill, unary, unary_, where_, Binary, Unary,
};
use crate::ops::{creation, Operand};
use crate::tensor::Scalar;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// The docstring of each method of the unary table (rust/ops/elementwise/unary.rs). A
/// method missing here gets none, which tests/test_docstrings.py reports.
macro_rules! unary_doc {
    (neg) => {
        "Negates each element: ``-x``.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (negative) => {
        "Alias of :meth:`neg`: ``-x``.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (abs) => {
        "The absolute value of each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (absolute) => {
        "Alias of :meth:`abs`.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (sign) => {
        "The sign of each element: -1, 0 or 1.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (square) => {
        "Squares each element: ``x * x``.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (relu) => {
        "Applies ``max(0, x)``.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (floor) => {
        "Rounds each element down.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (ceil) => {
        "Rounds each element up.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (trunc) => {
        "Rounds each element toward zero.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (exp) => {
        "``e ** x`` for each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (exp2) => {
        "``2 ** x`` for each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (log) => {
        "The natural logarithm of each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (log2) => {
        "The base-2 logarithm of each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (log10) => {
        "The base-10 logarithm of each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (log1p) => {
        "``log(1 + x)``, accurate for small x.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (expm1) => {
        "``exp(x) - 1``, accurate for small x.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (sqrt) => {
        "The square root of each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (rsqrt) => {
        "``1 / sqrt(x)`` for each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (reciprocal) => {
        "``1 / x`` for each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (sin) => {
        "The sine of each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (cos) => {
        "The cosine of each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (tan) => {
        "The tangent of each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (asin) => {
        "The arcsine of each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (acos) => {
        "The arccosine of each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (atan) => {
        "The arctangent of each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (sinh) => {
        "The hyperbolic sine of each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (cosh) => {
        "The hyperbolic cosine of each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (tanh) => {
        "The hyperbolic tangent of each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (asinh) => {
        "The inverse hyperbolic sine of each element.\n\nReturns:\n  Tensor: a new floating-point tensor of self's shape."
    };
    (arcsinh) => {
        "Alias of :meth:`asinh`: the inverse hyperbolic sine of each element.\n\nReturns:\n  Tensor: a new floating-point tensor of self's shape."
    };
    (acosh) => {
        "The inverse hyperbolic cosine of each element (nan below 1).\n\nReturns:\n  Tensor: a new floating-point tensor of self's shape."
    };
    (arccosh) => {
        "Alias of :meth:`acosh`: the inverse hyperbolic cosine of each element (nan below 1).\n\nReturns:\n  Tensor: a new floating-point tensor of self's shape."
    };
    (atanh) => {
        "The inverse hyperbolic tangent of each element (±inf at ±1, nan beyond).\n\nReturns:\n  Tensor: a new floating-point tensor of self's shape."
    };
    (arctanh) => {
        "Alias of :meth:`atanh`: the inverse hyperbolic tangent of each element (±inf at ±1, nan beyond).\n\nReturns:\n  Tensor: a new floating-point tensor of self's shape."
    };
    (sigmoid) => {
        "The logistic sigmoid ``1 / (1 + exp(-x))``.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (erfc) => {
        "The complementary error function ``1 - erf(x)``, accurate in the tails.\n\nReturns:\n  Tensor: a new floating-point tensor of self's shape."
    };
    (erfinv) => {
        "The inverse error function on [-1, 1] (±inf at ±1, nan outside).\n\nReturns:\n  Tensor: a new floating-point tensor of self's shape."
    };
    (lgamma) => {
        "``ln|Γ(x)|`` of each element.\n\nReturns:\n  Tensor: a new floating-point tensor of self's shape."
    };
    (digamma) => {
        "The digamma function ψ(x), the derivative of lgamma (ψ(0) = -inf).\n\nReturns:\n  Tensor: a new floating-point tensor of self's shape."
    };
    (i0) => {
        "The modified Bessel function of the first kind of order 0.\n\nReturns:\n  Tensor: a new floating-point tensor of self's shape."
    };
    (erf) => {
        "The error function of each element.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (silu) => {
        "Applies SiLU: ``x * sigmoid(x)``.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (mish) => {
        "Applies Mish: ``x * tanh(softplus(x))``.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (logical_not) => {
        "Logical NOT: True where the element is zero.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    (bitwise_not) => {
        "Bitwise NOT of integer or bool elements.\n\nReturns:\n  Tensor: a new tensor of self's shape."
    };
    ($other:ident) => {
        ""
    };
}

/// The methods of the unary table (ops/elementwise/unary.rs) and their
/// in-place forms.
#[macro_export]
macro_rules! unary_methods {
    ($($v:ident $(($($arg:ty),*))? $name:literal : $($m:ident $($m_:ident)?),* ;)*) => {
        #[pymethods]
        impl PyTensor {
            $($(
                #[doc = unary_doc!($m)]
                fn $m(&self, py: Python<'_>) -> PyResult<PyTensor> {
                    self.unary(py, Unary::$v)
                }
                $(
                    #[doc = concat!("In-place :meth:`", stringify!($m), "`.\n\nReturns:\n  Tensor: self.")]
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
    ($($name:ident, $name_:ident => $op:expr, $doc:literal;)*) => {
        #[pymethods]
        impl PyTensor {
            $(
                #[doc = concat!($doc, "\n\nArgs:\n  other (Tensor or Number): the second operand, broadcast with self.\n\nReturns:\n  Tensor: a new tensor.")]
                fn $name(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
                    let (a, b) = (Operand::T(self.t.clone()), operand_req(other, stringify!($name))?);
                    Ok(wrap(run(py, self.t.numel(), || binary($op, &a, &b, None))?))
                }
                #[doc = concat!("In-place :meth:`", stringify!($name), "`.\n\nArgs:\n  other (Tensor or Number): the second operand, broadcast with self.\n\nReturns:\n  Tensor: self.")]
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
    mul, mul_ => Binary::Mul, "Multiplies by ``other``.";
    multiply, multiply_ => Binary::Mul, "Alias of :meth:`mul`.";
    true_divide, true_divide_ => Binary::Div, "True division by ``other`` (alias of :meth:`div`).";
    floor_divide, floor_divide_ => Binary::FloorDiv, "Division by ``other`` rounded down.";
    remainder, remainder_ => Binary::Rem, "The remainder of the division by ``other``, with other's sign (Python's %).";
    fmod, fmod_ => Binary::Fmod, "The remainder of the division by ``other``, with self's sign (C's fmod).";
    pow, pow_ => Binary::Pow, "Raises each element to the power ``other``.";
    atan2, atan2_ => Binary::Atan2, "The arctangent of ``self / other``, in the quadrant of (other, self).";
    eq, eq_ => Binary::Eq, "Elementwise ``self == other`` (bool result).";
    ne, ne_ => Binary::Ne, "Elementwise ``self != other`` (bool result).";
    lt, lt_ => Binary::Lt, "Elementwise ``self < other`` (bool result).";
    le, le_ => Binary::Le, "Elementwise ``self <= other`` (bool result).";
    gt, gt_ => Binary::Gt, "Elementwise ``self > other`` (bool result).";
    ge, ge_ => Binary::Ge, "Elementwise ``self >= other`` (bool result).";
    logical_and, logical_and_ => Binary::LogicalAnd, "Logical AND of the elements' truth values (bool result).";
    logical_or, logical_or_ => Binary::LogicalOr, "Logical OR of the elements' truth values (bool result).";
    logical_xor, logical_xor_ => Binary::LogicalXor, "Logical XOR of the elements' truth values (bool result).";
    bitwise_and, bitwise_and_ => Binary::BitAnd, "Bitwise AND of integer or bool elements.";
    bitwise_or, bitwise_or_ => Binary::BitOr, "Bitwise OR of integer or bool elements.";
    bitwise_xor, bitwise_xor_ => Binary::BitXor, "Bitwise XOR of integer or bool elements.";
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

/// A tuple of tensors, as split/chunk/unbind return in PyTorch.
pub(super) fn tensors(py: Python<'_>, list: Vec<crate::tensor::Tensor>) -> PyResult<Py<PyTuple>> {
    Ok(PyTuple::new(py, list.into_iter().map(wrap))?.unbind())
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
    /// Adds ``alpha * other`` to self.
    ///
    /// Args:
    ///   other (Tensor or Number): the second operand, broadcast with self.
    ///   alpha (Number, optional): the multiplier of ``other``.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
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
    /// In-place :meth:`add`.
    ///
    /// Args:
    ///   other (Tensor or Number): the second operand, broadcast with self.
    ///   alpha (Number, optional): the multiplier of ``other``.
    ///
    /// Returns:
    ///   Tensor: self.
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
    /// Subtracts ``alpha * other`` from self.
    ///
    /// Args:
    ///   other (Tensor or Number): the second operand, broadcast with self.
    ///   alpha (Number, optional): the multiplier of ``other``.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
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
    /// In-place :meth:`sub`.
    ///
    /// Args:
    ///   other (Tensor or Number): the second operand, broadcast with self.
    ///   alpha (Number, optional): the multiplier of ``other``.
    ///
    /// Returns:
    ///   Tensor: self.
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
    /// Divides self by ``other``.
    ///
    /// Args:
    ///   other (Tensor or Number): the second operand, broadcast with self.
    ///   rounding_mode (str, optional): None (true division), ``'trunc'`` or ``'floor'``.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
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
    /// Alias of :meth:`div`.
    ///
    /// Args:
    ///   other (Tensor or Number): the second operand, broadcast with self.
    ///   rounding_mode (str, optional): None, ``'trunc'`` or ``'floor'``.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn divide(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        rounding_mode: Option<&str>,
    ) -> PyResult<PyTensor> {
        self.div(py, other, rounding_mode)
    }
    /// In-place :meth:`div`.
    ///
    /// Args:
    ///   other (Tensor or Number): the second operand, broadcast with self.
    ///   rounding_mode (str, optional): None, ``'trunc'`` or ``'floor'``.
    ///
    /// Returns:
    ///   Tensor: self.
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
    /// The elementwise maximum (NaN propagates).
    ///
    /// Args:
    ///   other (Tensor): broadcast with self.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    fn maximum(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (
            Operand::T(self.t.clone()),
            Operand::T(tensor_req(other, "maximum(): argument 'other'")?),
        );
        Ok(wrap(run(py, self.t.numel(), || binary(Binary::Maximum, &a, &b, None))?))
    }
    /// The elementwise minimum (NaN propagates).
    ///
    /// Args:
    ///   other (Tensor): broadcast with self.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    fn minimum(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (
            Operand::T(self.t.clone()),
            Operand::T(tensor_req(other, "minimum(): argument 'other'")?),
        );
        Ok(wrap(run(py, self.t.numel(), || binary(Binary::Minimum, &a, &b, None))?))
    }
    /// Rounds half to even.
    ///
    /// Args:
    ///   decimals (int): the number of decimals.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
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
    /// In-place :meth:`round`.
    ///
    /// Returns:
    ///   Tensor: self.
    fn round_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let t = &slf.get().t;
        run(slf.py(), t.numel(), || unary_(Unary::Round, t))?;
        Ok(slf)
    }
    /// Applies GELU: ``x * Phi(x)``.
    ///
    /// Args:
    ///   approximate (str): ``'none'`` (exact, with erf) or ``'tanh'``.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
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
    /// Applies ``x`` if ``x >= 0`` else ``negative_slope * x``.
    ///
    /// Args:
    ///   negative_slope (float): the slope for negative inputs.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(signature = (negative_slope=0.01))]
    fn leaky_relu(&self, py: Python<'_>, negative_slope: f64) -> PyResult<PyTensor> {
        self.unary(py, Unary::LeakyRelu(negative_slope))
    }
    /// F.hardsigmoid's kernel: ``relu6(x + 3) / 6``.
    fn _hardsigmoid(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.unary(py, Unary::Hardsigmoid)
    }
    /// F.hardswish's kernel: ``x * relu6(x + 3) / 6``.
    fn _hardswish(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.unary(py, Unary::Hardswish)
    }
    /// F.smooth_l1_loss's elementwise loss of a difference (``beta > 0``).
    fn _smooth_l1(&self, py: Python<'_>, beta: f64) -> PyResult<PyTensor> {
        self.unary(py, Unary::SmoothL1(beta))
    }
    /// F.huber_loss's elementwise loss of a difference (``delta > 0``).
    fn _huber(&self, py: Python<'_>, delta: f64) -> PyResult<PyTensor> {
        self.unary(py, Unary::Huber(delta))
    }
    /// Applies ELU: ``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)``.
    ///
    /// Args:
    ///   alpha (float): the negative saturation value.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(signature = (alpha=1.0))]
    fn elu(&self, py: Python<'_>, alpha: f64) -> PyResult<PyTensor> {
        self.unary(py, Unary::Elu(alpha))
    }
    /// Applies ``log(1 + exp(beta * x)) / beta`` (linear above ``threshold``).
    ///
    /// Args:
    ///   beta (float): the sharpness.
    ///   threshold (float): above ``beta * x > threshold`` the result is x.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(signature = (beta=1.0, threshold=20.0))]
    fn softplus(&self, py: Python<'_>, beta: f64, threshold: f64) -> PyResult<PyTensor> {
        self.unary(py, Unary::Softplus(beta, threshold))
    }
    /// The n-th derivative of the digamma function, ψ⁽ⁿ⁾(self), for n >= 0.
    ///
    /// Args:
    ///   n (int): the order of the derivative.
    ///
    /// Returns:
    ///   Tensor: floating point.
    fn polygamma(&self, py: Python<'_>, n: i64) -> PyResult<PyTensor> {
        self.unary(py, polygamma_op(n)?)
    }
    /// In-place ``polygamma(n)``.
    ///
    /// Args:
    ///   n (int): the order of the derivative.
    ///
    /// Returns:
    ///   Tensor: self.
    fn polygamma_<'py>(slf: Bound<'py, Self>, n: i64) -> PyResult<Bound<'py, Self>> {
        let (op, t) = (polygamma_op(n)?, &slf.get().t);
        run(slf.py(), t.numel(), || unary_(op, t))?;
        Ok(slf)
    }
    /// Whether each element is NaN.
    ///
    /// Returns:
    ///   Tensor: bool.
    fn isnan(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.unary(py, Unary::IsNan)
    }
    /// Whether each element is +inf or -inf.
    ///
    /// Returns:
    ///   Tensor: bool.
    fn isinf(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.unary(py, Unary::IsInf)
    }
    /// Whether each element is finite.
    ///
    /// Returns:
    ///   Tensor: bool.
    fn isfinite(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.unary(py, Unary::IsFinite)
    }
    /// Clamps to ``[min, max]``.
    ///
    /// Args:
    ///   min (Number or Tensor, optional): the lower bound.
    ///   max (Number or Tensor, optional): the upper bound.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
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
    /// Alias of :meth:`clamp`.
    ///
    /// Args:
    ///   min (Number or Tensor, optional): the lower bound.
    ///   max (Number or Tensor, optional): the upper bound.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(signature = (min=None, max=None))]
    fn clip(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        self.clamp(py, min, max)
    }
    /// In-place :meth:`clamp`.
    ///
    /// Args:
    ///   min (Number or Tensor, optional): the lower bound.
    ///   max (Number or Tensor, optional): the upper bound.
    ///
    /// Returns:
    ///   Tensor: self.
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
    /// Clamps from below: ``max(self, min)``.
    ///
    /// Args:
    ///   min (Number or Tensor): the lower bound.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    fn clamp_min(&self, py: Python<'_>, min: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.clamp(py, Some(min), None)
    }
    /// Clamps from above: ``min(self, max)``.
    ///
    /// Args:
    ///   max (Number or Tensor): the upper bound.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
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
    /// Fills the positions where ``mask`` is true with ``value``.
    ///
    /// Args:
    ///   mask (Tensor): bool, broadcastable to self.
    ///   value (Number or 0-d Tensor): the value.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    fn masked_fill(
        &self,
        py: Python<'_>,
        mask: PyRef<'_, PyTensor>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let (t, m, v) = (&self.t, &mask.t, operand_req(value, "masked_fill")?);
        Ok(wrap(run(py, t.numel(), || masked_fill(t, m, &v, false))?))
    }
    /// In-place :meth:`masked_fill`.
    ///
    /// Args:
    ///   mask (Tensor): bool, broadcastable to self.
    ///   value (Number or 0-d Tensor): the value.
    ///
    /// Returns:
    ///   Tensor: self.
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
    /// Fills self with samples of U(a, b).
    ///
    /// Args:
    ///   a (float): the lower bound.
    ///   b (float): the upper bound.
    ///   generator (Generator, optional): the random generator (the default one when None).
    ///
    /// Returns:
    ///   Tensor: self.
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
    /// Fills self with samples of N(mean, std^2).
    ///
    /// Args:
    ///   mean (float): the mean.
    ///   std (float): the standard deviation.
    ///   generator (Generator, optional): the random generator (the default one when None).
    ///
    /// Returns:
    ///   Tensor: self.
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
    /// Fills self with Bernoulli samples: 1 with probability ``p``, else 0.
    ///
    /// Args:
    ///   p (float or Tensor): the probability.
    ///   generator (Generator, optional): the random generator (the default one when None).
    ///
    /// Returns:
    ///   Tensor: self.
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
}
