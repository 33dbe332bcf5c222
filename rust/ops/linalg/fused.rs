//! Linear with a fused epilogue: act(x @ wᵀ + b) + residual. On the GPU the
//! bias, activation and residual run in the GEMM's epilogue (one dispatch);
//! elsewhere, and for shapes the kernel does not take, it is composed of the
//! ordinary (differentiable) ops.

use super::super::elementwise::{binary, unary, Binary, Unary};
use super::super::shape::{reshape, t2};
use super::super::Operand;
use super::gpu::{gpu_batched, GpuEpilogue};
use super::{check_dtypes, matmul};
use crate::autograd::{self, math, Backward, Node, SavedTensor};
use crate::backend::gpu::matmul::Act;
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::fmt_shape;
use crate::tensor::{DType, Scalar, Tensor};

/// The activation named `name` (F.linear's fused activations).
pub fn parse_act(name: &str) -> Result<Act> {
    Ok(match name {
        "none" => Act::None,
        "relu" => Act::Relu,
        "gelu" => Act::Gelu,
        "gelu_tanh" => Act::GeluTanh,
        "silu" => Act::Silu,
        _ => bail!(
            Value,
            "linear: unknown activation '{}' (expected none, relu, gelu, gelu_tanh or silu)",
            name
        ),
    })
}

fn out_shape(x: &Tensor, w: &Tensor) -> Vec<usize> {
    let mut s = x.shape()[..x.ndim() - 1].to_vec();
    s.push(w.shape()[0]);
    s
}

/// The elementwise op of an epilogue activation (None: identity).
pub fn act_op(act: Act) -> Option<Unary> {
    match act {
        Act::None => None,
        Act::Relu => Some(Unary::Relu),
        Act::Gelu => Some(Unary::Gelu),
        Act::GeluTanh => Some(Unary::GeluTanh),
        Act::Silu => Some(Unary::Silu),
    }
}

/// Whether the GPU kernel takes this call as it is: float32/16 GPU tensors,
/// a 2-D weight matching x's last dim, a bias of one value per output and a
/// residual shaped like the output, all of x's dtype.
pub fn fuses(x: &Tensor, w: &Tensor, b: Option<&Tensor>, r: Option<&Tensor>) -> bool {
    let dt = x.dtype();
    let all: Vec<&Tensor> = [Some(x), Some(w), b, r].into_iter().flatten().collect();
    matches!(dt, DType::F32 | DType::F16)
        && all.iter().all(|t| t.is_gpu() && t.dtype() == dt)
        && x.ndim() >= 1
        && w.ndim() == 2
        && x.shape()[x.ndim() - 1] == w.shape()[1]
        && b.is_none_or(|b| b.shape().as_slice() == [w.shape()[0]])
        && r.is_none_or(|r| r.shape().as_slice() == out_shape(x, w).as_slice())
}

/// act(x @ wᵀ + b) + residual, differentiable in every tensor.
pub fn linear_act(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    act: Act,
    r: Option<&Tensor>,
) -> Result<Tensor> {
    if fuses(x, w, b, r) {
        let mut inputs = vec![x, w];
        inputs.extend(b);
        inputs.extend(r);
        return autograd::record(
            &inputs,
            || fused_raw(x, w, b, act, r),
            |_| {
                Ok(FusedLinearBackward {
                    x: SavedTensor::input(x),
                    w: SavedTensor::input(w),
                    b: b.map(SavedTensor::input),
                    act,
                    has_r: r.is_some(),
                }
                .into())
            },
        );
    }
    let mut y = super::linear(x, w, b)?;
    if let Some(op) = act_op(act) {
        y = unary(op, &y)?;
    }
    match r {
        Some(r) => {
            check_dtypes("linear", &y, r)?;
            if r.shape() != y.shape() {
                bail!(
                    Runtime,
                    "linear: residual of shape {} does not match the output's shape {}",
                    fmt_shape(r.shape()),
                    fmt_shape(y.shape())
                );
            }
            binary(Binary::Add, &Operand::T(y), &Operand::T(r.clone()), None)
        }
        None => Ok(y),
    }
}

/// The one GEMM dispatch over x's rows (see `fuses` for what it takes).
fn fused_raw(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    act: Act,
    r: Option<&Tensor>,
) -> Result<Tensor> {
    let (out_f, in_f) = (w.shape()[0], w.shape()[1]);
    let rows: usize = x.shape()[..x.ndim() - 1].iter().product();
    let x2 = reshape(x, &[rows as i64, in_f as i64])?;
    let dense = |t: &Tensor| super::super::copy::contiguous(t);
    let epi =
        GpuEpilogue { bias: b.map(dense).transpose()?, act, residual: r.map(dense).transpose()? };
    let y = gpu_batched(&x2, &t2(w)?, &[], rows, in_f, out_f, &[rows, out_f], Some(&epi))?;
    let shape: Vec<i64> = out_shape(x, w).iter().map(|&d| d as i64).collect();
    reshape(&y, &shape)
}

/// d(act(x@wᵀ + b) + r): with z = x@wᵀ + b recomputed (one dispatch) and
/// dz = g·act'(z): dz@w for x, dzᵀ@x over all rows for w, dz summed over
/// rows for b, g for r.
#[derive(Clone)]
pub struct FusedLinearBackward {
    x: SavedTensor,
    w: SavedTensor,
    b: Option<SavedTensor>,
    act: Act,
    has_r: bool,
}

/// act'(z) as a tensor of z's dtype.
fn act_grad(act: Act, z: &Tensor) -> Result<Tensor> {
    use math::*;
    Ok(match act {
        Act::None => unreachable!("no activation has no derivative to take"),
        Act::Relu => mask_as(
            &binary(Binary::Gt, &Operand::T(z.clone()), &Operand::S(Scalar::Int(0)), None)?,
            z.dtype(),
        )?,
        Act::Gelu => {
            // Φ(z) + z·φ(z)
            let cdf = scale(
                &add_scalar(&un(Unary::Erf, &scale(z, std::f64::consts::FRAC_1_SQRT_2)?)?, 1.0)?,
                0.5,
            )?;
            let pdf = scale(
                &un(Unary::Exp, &scale(&un(Unary::Square, z)?, -0.5)?)?,
                1.0 / (2.0 * std::f64::consts::PI).sqrt(),
            )?;
            add(&cdf, &mul(z, &pdf)?)?
        }
        Act::GeluTanh => {
            // 0.5(1 + t) + 0.5·z·(1 - t²)·u' with t = tanh(u), u = k(z + c z³)
            let (k, c) = ((2.0 / std::f64::consts::PI).sqrt(), 0.044_715);
            let z2 = un(Unary::Square, z)?;
            let t = un(Unary::Tanh, &scale(&add(z, &scale(&mul(&z2, z)?, c)?)?, k)?)?;
            let du = scale(&add_scalar(&scale(&z2, 3.0 * c)?, 1.0)?, k)?;
            add(
                &scale(&add_scalar(&t, 1.0)?, 0.5)?,
                &mul(&scale(z, 0.5)?, &mul(&rsub_scalar(1.0, &un(Unary::Square, &t)?)?, &du)?)?,
            )?
        }
        Act::Silu => {
            // s(1 + z(1 - s)) with s = sigmoid(z)
            let s = un(Unary::Sigmoid, z)?;
            mul(&s, &add_scalar(&mul(z, &rsub_scalar(1.0, &s)?)?, 1.0)?)?
        }
    })
}

impl Backward for FusedLinearBackward {
    fn name(&self) -> String {
        "FusedLinearBackward0".into()
    }
    fn apply(&self, node: &std::sync::Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let g = &grads[0];
        let (x, w) = (self.x.unpack(node)?, self.w.unpack(node)?);
        let b = self.b.as_ref().map(|b| b.unpack(node)).transpose()?;
        let dz = match self.act {
            Act::None => g.clone(),
            act => math::mul(g, &act_grad(act, &fused_raw(&x, &w, b.as_ref(), Act::None, None)?)?)?,
        };
        let (out_f, in_f) = (w.shape()[0], w.shape()[1]);
        let mut out = vec![None, None];
        if node.needs_input_grad(0) {
            out[0] = Some(matmul(&dz, &w)?);
        }
        if node.needs_input_grad(1) {
            let dz2 = math::reshape(&dz, &[dz.numel() / out_f.max(1), out_f])?;
            let x2 = math::reshape(&x, &[dz2.shape()[0], in_f])?;
            out[1] = Some(matmul(&t2(&dz2)?, &x2)?);
        }
        if self.b.is_some() {
            let i = out.len();
            out.push(node.needs_input_grad(i).then(|| math::sum_to(&dz, &[out_f])).transpose()?);
        }
        if self.has_r {
            let i = out.len();
            out.push(node.needs_input_grad(i).then(|| g.clone()));
        }
        Ok(out)
    }
}
