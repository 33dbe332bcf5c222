//! Draws whose parameters are tensors: `_standard_gamma` (with its
//! reparameterized gradient), `poisson` and `binomial`, as PyTorch's. The
//! draws run on the CPU through rand_distr's samplers; GPU parameters are
//! read back, sampled on the host, and the draws move to the GPU.

use crate::autograd::{self, math, Backward, Node, SavedTensor};
use crate::backend::cpu::random::{default_generator, Generator, GeneratorRef};
use crate::backend::cpu::special;
use crate::bail;
use crate::error::Result;
use crate::ops::copy::{to_device, to_dtype};
use crate::tensor::{lock, DType, Device, Tensor};
use std::sync::Arc;

fn float_values(op: &str, t: &Tensor) -> Result<Vec<f64>> {
    if !t.dtype().is_float() {
        bail!(Runtime, "\"{}\" not implemented for '{}'", op, t.dtype().name());
    }
    // On the host: float64 does not exist on the GPU.
    to_dtype(&to_device(t, Device::Cpu)?, DType::F64)?.to_vec::<f64>()
}

/// A tensor of `like`'s shape, dtype and device holding `values`.
fn shaped_like(values: Vec<f64>, like: &Tensor) -> Result<Tensor> {
    let t = to_dtype(&Tensor::from_vec(values, like.shape())?, like.dtype())?;
    to_device(&t, like.device())
}

fn draw<R>(g: Option<&GeneratorRef>, f: impl FnOnce(&mut Generator) -> R) -> R {
    let g = g.cloned().unwrap_or_else(default_generator);
    let mut guard = lock(&g);
    f(&mut guard)
}

/// Γ(α, 1) draws with the implicit reparameterization gradient d x / d α.
pub fn standard_gamma(alpha: &Tensor, g: Option<&GeneratorRef>) -> Result<Tensor> {
    let a = float_values("_standard_gamma", alpha)?;
    autograd::record(
        &[alpha],
        || shaped_like(draw(g, |g| g.standard_gamma(&a)), alpha),
        |out| {
            Ok(StandardGammaBackward {
                alpha: SavedTensor::input(alpha),
                out: SavedTensor::output(out, 0),
            }
            .into())
        },
    )
}

/// d x / d α of Γ(α, 1) draws x (torch._standard_gamma_grad); not differentiable.
pub fn standard_gamma_grad(alpha: &Tensor, x: &Tensor) -> Result<Tensor> {
    if alpha.shape() != x.shape() {
        bail!(
            Runtime,
            "_standard_gamma_grad: alpha {:?} and sample {:?} must have the same shape",
            alpha.shape(),
            x.shape()
        );
    }
    let (a, v) =
        (float_values("_standard_gamma_grad", alpha)?, float_values("_standard_gamma_grad", x)?);
    let d = a.iter().zip(&v).map(|(&a, &x)| special::standard_gamma_grad(a, x)).collect();
    shaped_like(d, alpha)
}

/// Poisson counts (as floats of the rates' dtype), one per rate ≥ 0.
pub fn poisson(rate: &Tensor, g: Option<&GeneratorRef>) -> Result<Tensor> {
    let r = float_values("poisson", rate)?;
    if r.iter().any(|&r| r.is_nan() || r < 0.0) {
        bail!(Runtime, "invalid Poisson rate, expected rate to be non-negative");
    }
    shaped_like(draw(g, |g| g.poisson(&r)), rate)
}

/// Binomial counts of `count` trials with probability `prob`, elementwise.
pub fn binomial(count: &Tensor, prob: &Tensor, g: Option<&GeneratorRef>) -> Result<Tensor> {
    if count.shape() != prob.shape() {
        bail!(
            Runtime,
            "binomial: count {:?} and prob {:?} must have the same shape",
            count.shape(),
            prob.shape()
        );
    }
    if count.dtype() != prob.dtype() {
        bail!(
            Runtime,
            "binomial: count ({}) and prob ({}) must have the same dtype",
            count.dtype().name(),
            prob.dtype().name()
        );
    }
    let (n, p) = (float_values("binomial", count)?, float_values("binomial", prob)?);
    if n.iter().any(|&n| n.is_nan() || n < 0.0 || n.fract() != 0.0) {
        bail!(Runtime, "binomial: count must hold non-negative whole numbers");
    }
    if p.iter().any(|&p| !(0.0..=1.0).contains(&p)) {
        bail!(Runtime, "binomial: prob must be in [0, 1]");
    }
    shaped_like(draw(g, |g| g.binomial(&n, &p)), count)
}

#[derive(Clone)]
pub struct StandardGammaBackward {
    alpha: SavedTensor,
    out: SavedTensor,
}

impl Backward for StandardGammaBackward {
    fn name(&self) -> String {
        "StandardGammaBackward0".into()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let d = standard_gamma_grad(&self.alpha.unpack(node)?, &self.out.unpack(node)?)?;
        Ok(vec![Some(math::mul(&grads[0], &d)?)])
    }
}
