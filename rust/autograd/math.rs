//! Small differentiable helpers that backward formulas are written with. They
//! call the ops (which record under create_graph), so every backward can
//! itself be differentiated.

use crate::error::Result;
use crate::ops::elementwise::{binary, unary, Binary, Unary};
use crate::ops::Operand;
use crate::tensor::{DType, Scalar, Tensor};

fn t(x: &Tensor) -> Operand {
    Operand::T(x.clone())
}
pub fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(Binary::Add, &t(a), &t(b), None)
}
pub fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(Binary::Sub, &t(a), &t(b), None)
}
pub fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(Binary::Mul, &t(a), &t(b), None)
}
pub fn div(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(Binary::Div, &t(a), &t(b), None)
}
pub fn scale(a: &Tensor, s: f64) -> Result<Tensor> {
    binary(Binary::Mul, &t(a), &Operand::S(Scalar::Float(s)), None)
}
pub fn add_scalar(a: &Tensor, s: f64) -> Result<Tensor> {
    binary(Binary::Add, &t(a), &Operand::S(Scalar::Float(s)), None)
}
/// s - a
pub fn rsub_scalar(s: f64, a: &Tensor) -> Result<Tensor> {
    binary(Binary::Sub, &Operand::S(Scalar::Float(s)), &t(a), None)
}
pub fn pow_scalar(a: &Tensor, s: f64) -> Result<Tensor> {
    binary(Binary::Pow, &t(a), &Operand::S(Scalar::Float(s)), None)
}
pub fn neg(a: &Tensor) -> Result<Tensor> {
    unary(Unary::Neg, a)
}
pub fn un(op: Unary, a: &Tensor) -> Result<Tensor> {
    unary(op, a)
}
/// A float 0/1 tensor from a boolean mask (constant: no gradient flows through it).
pub fn mask_as(mask: &Tensor, dtype: DType) -> Result<Tensor> {
    crate::ops::copy::to_dtype(mask, dtype)
}
/// Zeros on the device of `like` (the gradient being computed).
pub fn zeros(shape: &[usize], dtype: DType, like: &Tensor) -> Result<Tensor> {
    crate::ops::creation::full_on(shape, Scalar::Int(0), dtype, like.device())
}
pub fn reshape(a: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if a.shape().as_slice() == shape {
        return Ok(a.clone());
    }
    let s: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    crate::ops::shape::reshape(a, &s)
}
pub fn expand(a: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if a.shape().as_slice() == shape {
        return Ok(a.clone());
    }
    let s: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    crate::ops::shape::expand(a, &s)
}
pub fn cast(a: &Tensor, dtype: DType) -> Result<Tensor> {
    crate::ops::copy::to_dtype(a, dtype)
}

/// Sums a gradient of a broadcast result back to an input's `shape`.
pub fn sum_to(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if g.shape().as_slice() == shape {
        return Ok(g.clone());
    }
    let lead = g.ndim() - shape.len();
    let mut dims: Vec<i64> = (0..lead as i64).collect();
    for (i, &s) in shape.iter().enumerate() {
        if s == 1 && g.shape()[lead + i] != 1 {
            dims.push((lead + i) as i64);
        }
    }
    let summed = if dims.is_empty() {
        g.clone()
    } else {
        crate::ops::reduce::sum(g, Some(&dims), false, None)?
    };
    reshape(&summed, shape)
}

/// The gradient of an input that broadcast into a result of dtype g.dtype():
/// summed to the input's shape and cast to its dtype.
pub fn reduce_grad(g: &Tensor, shape: &[usize], dtype: DType) -> Result<Tensor> {
    cast(&sum_to(g, shape)?, dtype)
}

/// The shape `g` had before dims in `reduced` were removed (keepdim=False).
pub fn unsqueeze_reduced(
    g: &Tensor,
    in_shape: &[usize],
    reduced: &[bool],
    keepdim: bool,
) -> Result<Tensor> {
    if keepdim {
        return Ok(g.clone());
    }
    let kept: Vec<usize> =
        in_shape.iter().zip(reduced).map(|(&s, &r)| if r { 1 } else { s }).collect();
    reshape(g, &kept)
}
