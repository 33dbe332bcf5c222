//! Tensor methods (and the few module functions PyTorch spells differently)
//! of the composite math ops: ops/pointwise.rs, ops/blas.rs, shape::diff, and
//! the binary ops hypot, logaddexp, logaddexp2, xlogy. Each `X` is also
//! `rumus.X` (python/rumus/__init__.py).

use super::convert::{int_list, operand_req, tensor_req};
use super::gil::run;
use super::tensor::{number, wrap, PyTensor};
use crate::ops::elementwise::{binary, binary_, clamp_, unary, Binary, Unary};
use crate::ops::{blas, pointwise, shape, Operand};
use crate::tensor::{Scalar, Tensor};
use pyo3::exceptions::{PyTypeError, PyUserWarning, PyValueError};
use pyo3::prelude::*;

fn scalar_or(v: Option<&Bound<'_, PyAny>>, default: Scalar) -> PyResult<Scalar> {
    match v {
        Some(v) if !v.is_none() => number(v),
        _ => Ok(default),
    }
}

const ONE: Scalar = Scalar::Int(1);

fn other_tensor(op: &str, other: &Bound<'_, PyAny>) -> PyResult<Operand> {
    Ok(Operand::T(tensor_req(other, &format!("{}(): argument 'other' (position 1)", op))?))
}

/// Methods of binary ops whose `other` must be a tensor (PyTorch's hypot, logaddexp).
macro_rules! tensor_binary_methods {
    ($($name:ident => $op:expr, $doc:literal;)*) => {
        #[pymethods]
        impl PyTensor {
            $(
                #[doc = concat!($doc, "\n\nArgs:\n  other (Tensor): the second operand, broadcast with self.\n\nReturns:\n  Tensor: a new tensor.")]
                fn $name(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
                    let (a, b) = (Operand::T(self.t.clone()), other_tensor(stringify!($name), other)?);
                    Ok(wrap(run(py, self.t.numel(), || binary($op, &a, &b, None))?))
                }
            )*
        }
    };
}

tensor_binary_methods! {
    hypot => Binary::Hypot, "``sqrt(self ** 2 + other ** 2)``, without overflow.";
    logaddexp => Binary::LogAddExp, "``log(exp(self) + exp(other))``, computed stably.";
    logaddexp2 => Binary::LogAddExp2, "``log2(2 ** self + 2 ** other)``, computed stably.";
}

/// A composite op of self and tensors, with its in-place form.
macro_rules! inplace_of {
    ($slf:ident, $others:expr, $name:expr, |$x:ident| $body:expr) => {{
        let t = &$slf.get().t;
        let others: Vec<Tensor> = $others;
        let refs: Vec<&Tensor> = others.iter().collect();
        run($slf.py(), t.numel(), || pointwise::composite_(t, &refs, $name, |$x| $body))?;
        Ok($slf)
    }};
}

#[pymethods]
impl PyTensor {
    /// In-place :meth:`hypot`.
    ///
    /// Args:
    ///   other (Tensor): broadcast with self.
    ///
    /// Returns:
    ///   Tensor: self.
    fn hypot_<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let b = other_tensor("hypot_", other)?;
        let t = &slf.get().t;
        run(slf.py(), t.numel(), || binary_(Binary::Hypot, t, &b, None))?;
        Ok(slf)
    }
    /// ``self * log(other)``, 0 where self is 0.
    ///
    /// Args:
    ///   other (Tensor or Number): the second operand, broadcast with self.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    fn xlogy(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (Operand::T(self.t.clone()), operand_req(other, "xlogy")?);
        Ok(wrap(run(py, self.t.numel(), || binary(Binary::Xlogy, &a, &b, None))?))
    }
    /// In-place :meth:`xlogy`.
    ///
    /// Args:
    ///   other (Tensor or Number): the second operand, broadcast with self.
    ///
    /// Returns:
    ///   Tensor: self.
    fn xlogy_<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let b = operand_req(other, "xlogy_")?;
        let t = &slf.get().t;
        run(slf.py(), t.numel(), || binary_(Binary::Xlogy, t, &b, None))?;
        Ok(slf)
    }

    // ---- addcmul / addcdiv / lerp ----
    /// ``self + value * tensor1 * tensor2``.
    ///
    /// Args:
    ///   tensor1 (Tensor): the first factor.
    ///   tensor2 (Tensor): the second factor.
    ///   value (Number, optional): the scale (1 by default).
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(signature = (tensor1, tensor2, *, value=None))]
    fn addcmul(
        &self,
        py: Python<'_>,
        tensor1: PyRef<'_, PyTensor>,
        tensor2: PyRef<'_, PyTensor>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (a, b, v) = (&tensor1.t, &tensor2.t, scalar_or(value, ONE)?);
        Ok(wrap(run(py, self.t.numel(), || pointwise::addcmul(&self.t, a, b, v))?))
    }
    /// In-place :meth:`addcmul`.
    ///
    /// Args:
    ///   tensor1 (Tensor): the first factor.
    ///   tensor2 (Tensor): the second factor.
    ///   value (Number, optional): the scale (1 by default).
    ///
    /// Returns:
    ///   Tensor: self.
    #[pyo3(signature = (tensor1, tensor2, *, value=None))]
    fn addcmul_<'py>(
        slf: Bound<'py, Self>,
        tensor1: PyRef<'py, PyTensor>,
        tensor2: PyRef<'py, PyTensor>,
        value: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let (a, b, v) = (tensor1.t.clone(), tensor2.t.clone(), scalar_or(value, ONE)?);
        let op = pointwise::Fused::Addcmul(v.to_f64());
        let t = slf.get().t.clone();
        if run(slf.py(), t.numel(), || pointwise::fused(op, &t, &a, Some(&b), true))?.is_some() {
            return Ok(slf);
        }
        inplace_of!(slf, vec![a.clone(), b.clone()], "addcmul_", |x| pointwise::addcmul(
            x, &a, &b, v
        ))
    }
    /// ``self + value * tensor1 / tensor2``.
    ///
    /// Args:
    ///   tensor1 (Tensor): the numerator.
    ///   tensor2 (Tensor): the denominator.
    ///   value (Number, optional): the scale (1 by default).
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(signature = (tensor1, tensor2, *, value=None))]
    fn addcdiv(
        &self,
        py: Python<'_>,
        tensor1: PyRef<'_, PyTensor>,
        tensor2: PyRef<'_, PyTensor>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (a, b, v) = (&tensor1.t, &tensor2.t, scalar_or(value, ONE)?);
        Ok(wrap(run(py, self.t.numel(), || pointwise::addcdiv(&self.t, a, b, v))?))
    }
    /// In-place :meth:`addcdiv`.
    ///
    /// Args:
    ///   tensor1 (Tensor): the numerator.
    ///   tensor2 (Tensor): the denominator.
    ///   value (Number, optional): the scale (1 by default).
    ///
    /// Returns:
    ///   Tensor: self.
    #[pyo3(signature = (tensor1, tensor2, *, value=None))]
    fn addcdiv_<'py>(
        slf: Bound<'py, Self>,
        tensor1: PyRef<'py, PyTensor>,
        tensor2: PyRef<'py, PyTensor>,
        value: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let (a, b, v) = (tensor1.t.clone(), tensor2.t.clone(), scalar_or(value, ONE)?);
        let op = pointwise::Fused::Addcdiv(v.to_f64());
        let t = slf.get().t.clone();
        if run(slf.py(), t.numel(), || pointwise::fused(op, &t, &a, Some(&b), true))?.is_some() {
            return Ok(slf);
        }
        inplace_of!(slf, vec![a.clone(), b.clone()], "addcdiv_", |x| pointwise::addcdiv(
            x, &a, &b, v
        ))
    }
    /// Linear interpolation: ``self + weight * (end - self)``.
    ///
    /// Args:
    ///   end (Tensor): the end points.
    ///   weight (float or Tensor): the interpolation weight.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    fn lerp(
        &self,
        py: Python<'_>,
        end: PyRef<'_, PyTensor>,
        weight: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let (e, w) = (&end.t, weight_arg(weight)?);
        Ok(wrap(run(py, self.t.numel(), || pointwise::lerp(&self.t, e, &w))?))
    }
    /// In-place :meth:`lerp`.
    ///
    /// Args:
    ///   end (Tensor): the end points.
    ///   weight (float or Tensor): the interpolation weight.
    ///
    /// Returns:
    ///   Tensor: self.
    fn lerp_<'py>(
        slf: Bound<'py, Self>,
        end: PyRef<'py, PyTensor>,
        weight: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let (e, w) = (end.t.clone(), weight_arg(weight)?);
        let t = slf.get().t.clone();
        if run(slf.py(), t.numel(), || pointwise::lerp_fused(&t, &e, &w, true))?.is_some() {
            return Ok(slf);
        }
        let mut others = vec![e.clone()];
        if let Operand::T(wt) = &w {
            others.push(wt.clone());
        }
        inplace_of!(slf, others, "lerp_", |x| pointwise::lerp(x, &e, &w))
    }

    // ---- logit / nan_to_num / clamp_min_ / clamp_max_ ----
    /// ``log(p / (1 - p))``, with p clamped to ``[eps, 1 - eps]`` when eps is given.
    ///
    /// Args:
    ///   eps (float, optional): the clamp.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(signature = (eps=None))]
    fn logit(&self, py: Python<'_>, eps: Option<f64>) -> PyResult<PyTensor> {
        Ok(wrap(run(py, self.t.numel(), || pointwise::logit(&self.t, eps))?))
    }
    /// In-place :meth:`logit`.
    ///
    /// Args:
    ///   eps (float, optional): the clamp.
    ///
    /// Returns:
    ///   Tensor: self.
    #[pyo3(signature = (eps=None))]
    fn logit_(slf: Bound<'_, Self>, eps: Option<f64>) -> PyResult<Bound<'_, Self>> {
        inplace_of!(slf, vec![], "logit_", |x| pointwise::logit(x, eps))
    }
    /// Replaces NaN, +inf and -inf by finite numbers.
    ///
    /// Args:
    ///   nan (float): the value of NaNs.
    ///   posinf (float, optional): the value of +inf (the dtype's max by default).
    ///   neginf (float, optional): the value of -inf (the dtype's min by default).
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(signature = (nan=0.0, posinf=None, neginf=None))]
    fn nan_to_num(
        &self,
        py: Python<'_>,
        nan: Option<f64>,
        posinf: Option<f64>,
        neginf: Option<f64>,
    ) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || pointwise::nan_to_num(t, nan, posinf, neginf))?))
    }
    /// In-place :meth:`nan_to_num`.
    ///
    /// Args:
    ///   nan (float): the value of NaNs.
    ///   posinf (float, optional): the value of +inf.
    ///   neginf (float, optional): the value of -inf.
    ///
    /// Returns:
    ///   Tensor: self.
    #[pyo3(signature = (nan=0.0, posinf=None, neginf=None))]
    fn nan_to_num_(
        slf: Bound<'_, Self>,
        nan: Option<f64>,
        posinf: Option<f64>,
        neginf: Option<f64>,
    ) -> PyResult<Bound<'_, Self>> {
        inplace_of!(slf, vec![], "nan_to_num_", |x| pointwise::nan_to_num(x, nan, posinf, neginf))
    }
    /// In-place :meth:`clamp_min`.
    ///
    /// Args:
    ///   min (Number or Tensor): the lower bound.
    ///
    /// Returns:
    ///   Tensor: self.
    fn clamp_min_<'py>(
        slf: Bound<'py, Self>,
        min: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let lo = operand_req(min, "clamp_min_")?;
        let t = &slf.get().t;
        run(slf.py(), t.numel(), || clamp_(t, Some(&lo), None))?;
        Ok(slf)
    }
    /// In-place :meth:`clamp_max`.
    ///
    /// Args:
    ///   max (Number or Tensor): the upper bound.
    ///
    /// Returns:
    ///   Tensor: self.
    fn clamp_max_<'py>(
        slf: Bound<'py, Self>,
        max: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let hi = operand_req(max, "clamp_max_")?;
        let t = &slf.get().t;
        run(slf.py(), t.numel(), || clamp_(t, None, Some(&hi)))?;
        Ok(slf)
    }

    // ---- comparisons of whole tensors ----
    /// Elementwise closeness: ``|self - other| <= atol + rtol * |other|``.
    ///
    /// Args:
    ///   other (Tensor or Number): the values to compare with.
    ///   rtol (float): the relative tolerance.
    ///   atol (float): the absolute tolerance.
    ///   equal_nan (bool): count two NaNs as equal.
    ///
    /// Returns:
    ///   Tensor: bool.
    #[pyo3(signature = (other, rtol=1e-05, atol=1e-08, equal_nan=false))]
    fn isclose(
        &self,
        py: Python<'_>,
        other: PyRef<'_, PyTensor>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> PyResult<PyTensor> {
        let o = &other.t;
        Ok(wrap(run(py, self.t.numel(), || pointwise::isclose(&self.t, o, rtol, atol, equal_nan))?))
    }
    /// Whether every element is close to other's: ``|self - other| <= atol + rtol * |other|``.
    ///
    /// Args:
    ///   other (Tensor): the tensor to compare with.
    ///   rtol (float): the relative tolerance.
    ///   atol (float): the absolute tolerance.
    ///   equal_nan (bool): count two NaNs as equal.
    ///
    /// Returns:
    ///   bool: the answer.
    #[pyo3(signature = (other, rtol=1e-05, atol=1e-08, equal_nan=false))]
    fn allclose(
        &self,
        py: Python<'_>,
        other: PyRef<'_, PyTensor>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> PyResult<bool> {
        let o = &other.t;
        Ok(run(py, self.t.numel(), || pointwise::allclose(&self.t, o, rtol, atol, equal_nan))?)
    }
    /// Whether self and ``other`` have the same shape and elements.
    ///
    /// Args:
    ///   other (Tensor): the tensor to compare with.
    ///
    /// Returns:
    ///   bool: the answer.
    fn equal(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<bool> {
        let o = &other.t;
        Ok(run(py, self.t.numel(), || pointwise::equal(&self.t, o))?)
    }

    // ---- shape-ish ----
    /// The ``n``-th forward difference along ``dim``.
    ///
    /// Args:
    ///   n (int): how many times to difference.
    ///   dim (int): the dimension (the last by default).
    ///   prepend (Tensor, optional): values put before self along dim.
    ///   append (Tensor, optional): values put after.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(signature = (n=1, dim=-1, prepend=None, append=None))]
    fn diff(
        &self,
        py: Python<'_>,
        n: i64,
        dim: i64,
        prepend: Option<PyRef<'_, PyTensor>>,
        append: Option<PyRef<'_, PyTensor>>,
    ) -> PyResult<PyTensor> {
        let (p, a) = (prepend.as_ref().map(|p| &p.t), append.as_ref().map(|a| &a.t));
        Ok(wrap(run(py, self.t.numel(), || shape::diff(&self.t, n, dim, p, a))?))
    }

    // ---- products ----
    /// The cross product of 3-vectors along ``dim``.
    ///
    /// Args:
    ///   other (Tensor): broadcast with self.
    ///   dim (int, optional): a dimension of size 3 (the first such when None).
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(signature = (other, dim=None))]
    fn cross(
        &self,
        py: Python<'_>,
        other: PyRef<'_, PyTensor>,
        dim: Option<i64>,
    ) -> PyResult<PyTensor> {
        let d = match dim {
            Some(d) => d,
            None => {
                PyErr::warn(
                    py,
                    py.get_type::<PyUserWarning>().as_any(),
                    c"Using rumus.cross without specifying the dim arg is deprecated.\nPlease either pass the dim explicitly or simply use rumus.linalg.cross.\nThe default value of dim will change to agree with that of linalg.cross in a future release.",
                    1,
                )?;
                blas::default_cross_dim(&self.t)?
            }
        };
        let o = &other.t;
        Ok(wrap(run(py, self.t.numel(), || blas::cross(&self.t, o, d))?))
    }
    /// The Kronecker product.
    ///
    /// Args:
    ///   other (Tensor): the right operand.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    fn kron(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let o = &other.t;
        Ok(wrap(run(py, self.t.numel() * o.numel(), || blas::kron(&self.t, o))?))
    }
}

fn weight_arg(w: &Bound<'_, PyAny>) -> PyResult<Operand> {
    match operand_req(w, "lerp")? {
        Operand::S(s) => Ok(Operand::S(Scalar::Float(s.to_f64()))),
        o => Ok(o),
    }
}

/// addmm-style methods: `name(x, y, *, beta=1, alpha=1)` and `name_`, with
/// PyTorch's names for the two factors.
macro_rules! scaled_product_methods {
    ($($name:ident, $name_:ident ($a:ident, $b:ident) => $f:path, $doc:literal;)*) => {
        #[pymethods]
        impl PyTensor {
            $(
                #[doc = concat!($doc, "\n\nArgs:\n  ", stringify!($a), " (Tensor): the first factor.\n  ", stringify!($b), " (Tensor): the second factor.\n  beta (Number, optional): the scale of self (1 by default).\n  alpha (Number, optional): the scale of the product (1 by default).\n\nReturns:\n  Tensor: a new tensor.")]
                #[pyo3(signature = ($a, $b, *, beta=None, alpha=None))]
                fn $name(
                    &self,
                    py: Python<'_>,
                    $a: PyRef<'_, PyTensor>,
                    $b: PyRef<'_, PyTensor>,
                    beta: Option<&Bound<'_, PyAny>>,
                    alpha: Option<&Bound<'_, PyAny>>,
                ) -> PyResult<PyTensor> {
                    let (be, al) = (scalar_or(beta, ONE)?, scalar_or(alpha, ONE)?);
                    let (x, y) = (&$a.t, &$b.t);
                    Ok(wrap(run(py, x.numel() + y.numel(), || $f(&self.t, x, y, be, al))?))
                }
                #[doc = concat!("In-place :meth:`", stringify!($name), "`.\n\nArgs:\n  ", stringify!($a), " (Tensor): the first factor.\n  ", stringify!($b), " (Tensor): the second factor.\n  beta (Number, optional): the scale of self (1 by default).\n  alpha (Number, optional): the scale of the product (1 by default).\n\nReturns:\n  Tensor: self.")]
                #[pyo3(signature = ($a, $b, *, beta=None, alpha=None))]
                fn $name_<'py>(
                    slf: Bound<'py, Self>,
                    $a: PyRef<'py, PyTensor>,
                    $b: PyRef<'py, PyTensor>,
                    beta: Option<&Bound<'py, PyAny>>,
                    alpha: Option<&Bound<'py, PyAny>>,
                ) -> PyResult<Bound<'py, Self>> {
                    let (be, al) = (scalar_or(beta, ONE)?, scalar_or(alpha, ONE)?);
                    let (x, y) = ($a.t.clone(), $b.t.clone());
                    inplace_of!(slf, vec![x.clone(), y.clone()], stringify!($name_), |t| $f(t, &x, &y, be, al))
                }
            )*
        }
    };
}

scaled_product_methods! {
    addmm, addmm_ (mat1, mat2) => blas::addmm, "``beta * self + alpha * (mat1 @ mat2)`` for matrices.";
    addmv, addmv_ (mat, vec) => blas::addmv, "``beta * self + alpha * (mat @ vec)`` for a matrix and a vector.";
    addbmm, addbmm_ (batch1, batch2) => blas::addbmm, "``beta * self + alpha * sum_i(batch1[i] @ batch2[i])`` over batches of matrices.";
    baddbmm, baddbmm_ (batch1, batch2) => blas::baddbmm, "``beta * self + alpha * (batch1 @ batch2)`` for batches of matrices.";
    addr, addr_ (vec1, vec2) => blas::addr, "``beta * self + alpha * outer(vec1, vec2)``.";
}

/// rumus.xlogy(input, other): either may be a Python number.
#[pyfunction]
pub fn xlogy(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let (a, b) = (operand_req(input, "xlogy")?, operand_req(other, "xlogy")?);
    if matches!((&a, &b), (Operand::S(_), Operand::S(_))) {
        return Err(PyTypeError::new_err(
            "xlogy(): expected at least one of input and other to be a Tensor",
        ));
    }
    Ok(wrap(run(py, 0, || binary(Binary::Xlogy, &a, &b, None))?))
}

/// rumus.tensordot(a, b, dims=2): dims an int (the last dims of a with the
/// first of b) or a pair of dim lists.
#[pyfunction]
#[pyo3(signature = (a, b, dims=None))]
pub fn tensordot(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    b: PyRef<'_, PyTensor>,
    dims: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let (x, y) = (&a.t, &b.t);
    let (da, db) = match dims {
        None => contract_last(x, 2)?,
        Some(d) if d.is_instance_of::<pyo3::types::PyInt>() => contract_last(x, d.extract()?)?,
        Some(d) => {
            let pair: Vec<Bound<'_, PyAny>> = d.extract().map_err(|_| {
                PyTypeError::new_err(
                    "tensordot expects dims to be an int or a pair of lists of ints",
                )
            })?;
            if pair.len() != 2 {
                return Err(PyTypeError::new_err(
                    "tensordot expects dims to be an int or a pair of lists of ints",
                ));
            }
            (int_list(&pair[0], "dims")?, int_list(&pair[1], "dims")?)
        }
    };
    Ok(wrap(run(py, x.numel() + y.numel(), || blas::tensordot(x, y, &da, &db))?))
}

fn contract_last(a: &Tensor, n: i64) -> PyResult<(Vec<i64>, Vec<i64>)> {
    if n < 0 {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "tensordot expects dims >= 0, but got dims={}",
            n
        )));
    }
    let r = a.ndim() as i64;
    if n > r {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "tensordot: dims={} is larger than the number of dims of the first tensor ({})",
            n, r
        )));
    }
    Ok(((r - n..r).collect(), (0..n).collect()))
}

/// rumus.special's Bessel functions that are not Tensor methods in PyTorch.
#[pyfunction]
fn _special_unary(py: Python<'_>, name: &str, input: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let op = match name {
        "i0e" => Unary::I0e,
        "i1" => Unary::I1,
        "i1e" => Unary::I1e,
        _ => return Err(PyValueError::new_err(format!("no special function {name}"))),
    };
    let t = tensor_req(input, &format!("special.{name}(): argument 'input' (position 1)"))?;
    Ok(wrap(run(py, t.numel(), || unary(op, &t))?))
}

/// rumus.special's Bessel, Airy, zeta, incomplete-gamma, erfcx and
/// polynomial functions (rust/ops/special_fns.rs): `input` must be a tensor
/// for the one-argument ones; of two arguments either may be a number.
#[pyfunction]
#[pyo3(signature = (name, input, other=None))]
fn _special_fn(
    py: Python<'_>,
    name: &str,
    input: &Bound<'_, PyAny>,
    other: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    use crate::ops::special_fns::{special_fn, SpecialFn};
    let op = SpecialFn::from_name(name)
        .ok_or_else(|| PyValueError::new_err(format!("no special function {name}")))?;
    let what = format!("special.{name}");
    let a = if op.binary() {
        operand_req(input, &what)?
    } else {
        Operand::T(tensor_req(input, &format!("{what}(): argument 'input' (position 1)"))?)
    };
    let b = match (op.binary(), other) {
        (true, Some(o)) => Some(operand_req(o, &what)?),
        (true, None) => {
            return Err(PyTypeError::new_err(format!("{what}() missing required argument 'n'")))
        }
        (false, Some(_)) => {
            return Err(PyTypeError::new_err(format!(
                "{what}() takes 1 positional argument but 2 were given"
            )))
        }
        (false, None) => None,
    };
    let n = match &a {
        Operand::T(t) => t.numel(),
        Operand::S(_) => 1,
    };
    Ok(wrap(run(py, n, || special_fn(op, &a, b.as_ref()))?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_special_unary, m)?)?;
    m.add_function(wrap_pyfunction!(_special_fn, m)?)?;
    m.add_function(wrap_pyfunction!(xlogy, m)?)?;
    m.add_function(wrap_pyfunction!(tensordot, m)?)?;
    Ok(())
}
