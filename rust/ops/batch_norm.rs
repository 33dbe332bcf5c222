//! Training-mode batch_norm on the GPU (shaders/batch_norm.wgsl) and for
//! float32 on the CPU (backend/cpu/batch_norm.rs) as one recorded op: a
//! statistics sweep and a normalize sweep forward, a gradient-sums sweep and
//! a dx sweep backward, instead of the composite's chain of
//! reductions and elementwise ops in rumus.nn.functional. Under create_graph
//! the backward is written with recorded ops so it can be differentiated again.

use super::copy::{contiguous, to_dtype};
use super::reduce::{mean, sum};
use super::shape::{narrow, reshape};
use crate::autograd::{self, math, mode, Backward, Node, SavedTensor};
use crate::backend::cpu::batch_norm as cpu;
use crate::backend::cpu::P;
use crate::backend::gpu::batch_norm as kernel;
use crate::bail;
use crate::error::Result;
use crate::ops::elementwise::Unary;
use crate::tensor::layout::fmt_shape;
use crate::tensor::{DType, Tensor};
use std::sync::{Arc, Mutex};

/// Whether the fused kernels run a training-mode batch_norm of `x`.
pub fn applies(x: &Tensor) -> bool {
    x.ndim() >= 2
        && if x.is_gpu() {
            matches!(x.dtype(), DType::F32 | DType::F16)
        } else {
            x.dtype() == DType::F32
        }
}

/// The CPU kernel's view of x: (N, C, S) with strides (sn, sc) when the
/// spatial dims are one contiguous run, else None (the caller copies).
fn cpu_shape(x: &Tensor) -> Option<cpu::Shape> {
    let [n, c, s] = nsc(x);
    let mut run = 1isize;
    for (&d, &st) in x.shape()[2..].iter().zip(&x.strides()[2..]).rev() {
        if d > 1 && st != run {
            return None;
        }
        run *= d as isize;
    }
    let (sn, sc) = (x.strides()[0], x.strides()[1]);
    (sn >= 0 && sc >= 0).then_some(cpu::Shape { n, c, s, sn, sc })
}

/// x itself when the CPU kernel reads it in place, else a contiguous copy.
fn cpu_input(x: &Tensor) -> Result<(Tensor, cpu::Shape)> {
    if let Some(sh) = cpu_shape(x) {
        return Ok((x.clone(), sh));
    }
    let xc = contiguous(x)?;
    let sh = cpu_shape(&xc).expect("contiguous");
    Ok((xc, sh))
}

/// The f32 pointer of an optional CPU tensor.
fn opt_ptr(t: Option<&Tensor>) -> Result<Option<P<f32>>> {
    t.map(|t| Ok(P(t.ptr::<f32>()?))).transpose()
}

/// (N, C, S) of an (N, C, *) input.
fn nsc(x: &Tensor) -> [usize; 3] {
    let (n, c) = (x.shape()[0], x.shape()[1]);
    [n, c, x.shape()[2..].iter().product()]
}

/// Row `r` of a (2, C) statistics tensor as a (C,) tensor.
fn row(stats: &Tensor, r: i64) -> Result<Tensor> {
    reshape(&narrow(stats, 0, r, 1)?, &[-1])
}

/// (y, batch mean, biased batch variance) of training-mode batch_norm over
/// every dim but 1; the statistics are not differentiable (the caller
/// updates running statistics with them).
pub fn batch_norm_train(
    x: &Tensor,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    if !applies(x) {
        bail!(Runtime, "_batch_norm_train: expected a float32 (CPU or GPU) or float16 (GPU) tensor of at least 2 dims, got {} {} on {}", x.dtype().name(), fmt_shape(x.shape()), x.device().name());
    }
    let [n, c, s] = nsc(x);
    for (name, t) in [("weight", w), ("bias", b)] {
        let Some(t) = t else { continue };
        if t.shape().as_slice() != [c] || t.dtype() != x.dtype() || t.device() != x.device() {
            bail!(
                Runtime,
                "_batch_norm_train: {} must be a ({},) {} tensor on {}, got {} {} on {}",
                name,
                c,
                x.dtype().name(),
                x.device().name(),
                t.dtype().name(),
                fmt_shape(t.shape()),
                t.device().name()
            );
        }
    }
    let stats: Mutex<Option<Tensor>> = Mutex::new(None);
    let mut inputs = vec![x];
    inputs.extend(w);
    inputs.extend(b);
    let y = autograd::record(
        &inputs,
        || {
            let (wc, bc) = (w.map(contiguous).transpose()?, b.map(contiguous).transpose()?);
            let st = Tensor::empty_on(&[2, c], DType::F32, x.device())?;
            let y = if x.is_gpu() {
                let xc = contiguous(x)?;
                kernel::forward(&xc, wc.as_ref(), bc.as_ref(), [n, c, s], eps, &st)?
            } else {
                let y = Tensor::empty_on(x.shape(), x.dtype(), x.device())?;
                let (xc, sh) = cpu_input(x)?;
                let (xp, yp, sp) = (P(xc.ptr::<f32>()?), P(y.ptr::<f32>()?), P(st.ptr::<f32>()?));
                let (wp, bp) = (opt_ptr(wc.as_ref())?, opt_ptr(bc.as_ref())?);
                // SAFETY: x is valid for sh, w and b hold C values (checked above),
                // st and y are fresh buffers of (2, C) and x's shape.
                unsafe { cpu::forward(sh, xp, wp, bp, eps, sp, yp) };
                y
            };
            *crate::tensor::lock(&stats) = Some(st);
            Ok(y)
        },
        |_| {
            let st = crate::tensor::lock(&stats).clone().expect("forward ran");
            Ok(BatchNormBackward {
                x: SavedTensor::input(x),
                w: w.map(SavedTensor::input),
                has_b: b.is_some(),
                eps,
                stats: st,
            }
            .into())
        },
    )?;
    let st = crate::tensor::lock(&stats).take().expect("forward ran");
    Ok((y, to_dtype(&row(&st, 0)?, x.dtype())?, to_dtype(&row(&st, 1)?, x.dtype())?))
}

#[derive(Clone)]
pub struct BatchNormBackward {
    x: SavedTensor,
    w: Option<SavedTensor>,
    has_b: bool,
    eps: f64,
    /// f32 (2, C): the batch mean and biased variance.
    stats: Tensor,
}

impl BatchNormBackward {
    /// The gradients written with recorded ops (differentiable again).
    fn composite(
        &self,
        x: &Tensor,
        w: Option<&Tensor>,
        g: &Tensor,
    ) -> Result<(Tensor, Option<Tensor>, Option<Tensor>)> {
        let dims: Vec<i64> = std::iter::once(0).chain(2..x.ndim() as i64).collect();
        let mu = mean(x, Some(&dims), true, None)?;
        let xc = math::sub(x, &mu)?;
        let var = mean(&math::mul(&xc, &xc)?, Some(&dims), true, None)?;
        let rstd = math::un(Unary::Rsqrt, &math::add_scalar(&var, self.eps)?)?;
        let xh = math::mul(&xc, &rstd)?;
        let gh = match w {
            Some(w) => {
                let mut shape = vec![w.numel()];
                shape.resize(x.ndim() - 1, 1);
                math::mul(g, &math::reshape(w, &shape)?)?
            }
            None => g.clone(),
        };
        let a = mean(&gh, Some(&dims), true, None)?;
        let bm = mean(&math::mul(&gh, &xh)?, Some(&dims), true, None)?;
        let gx = math::mul(&rstd, &math::sub(&math::sub(&gh, &a)?, &math::mul(&xh, &bm)?)?)?;
        let gw = w.map(|_| sum(&math::mul(g, &xh)?, Some(&dims), false, None)).transpose()?;
        let gb = self.has_b.then(|| sum(g, Some(&dims), false, None)).transpose()?;
        Ok((gx, gw, gb))
    }
}

impl Backward for BatchNormBackward {
    fn name(&self) -> String {
        "NativeBatchNormBackward0".into()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let x = self.x.unpack(node)?;
        let w = self.w.as_ref().map(|w| w.unpack(node)).transpose()?;
        let g = &grads[0];
        let (gx, gw, gb) = if mode::is_grad_enabled() {
            self.composite(&x, w.as_ref(), g)?
        } else {
            let gc = contiguous(&to_dtype(g, x.dtype())?)?;
            let wc = w.as_ref().map(contiguous).transpose()?;
            let dev = x.device();
            let gstats = Tensor::empty_on(&[2, nsc(&x)[1]], DType::F32, dev)?;
            let gx = Tensor::empty_on(x.shape(), x.dtype(), dev)?;
            if x.is_gpu() {
                let xc = contiguous(&x)?;
                let (st, eps) = (&self.stats, self.eps);
                kernel::backward(&xc, &gc, wc.as_ref(), nsc(&x), eps, st, &gstats, &gx)?;
            } else {
                let (xc, sh) = cpu_input(&x)?;
                let (xp, gp, dp) = (P(xc.ptr::<f32>()?), P(gc.ptr::<f32>()?), P(gx.ptr::<f32>()?));
                let (sp, gsp) = (P(self.stats.ptr::<f32>()?), P(gstats.ptr::<f32>()?));
                let wp = opt_ptr(wc.as_ref())?;
                // SAFETY: x is valid for sh; g and gx are contiguous of x's shape,
                // stats and gstats (2, C), w C values.
                unsafe { cpu::backward(sh, xp, gp, wp, self.eps, sp, gsp, dp) };
            }
            // dw = Σg·(x - mean) · rstd, db = Σg: (C,) sized, ordinary ops.
            let rstd = math::un(Unary::Rsqrt, &math::add_scalar(&row(&self.stats, 1)?, self.eps)?)?;
            let gw = w
                .as_ref()
                .map(|_| to_dtype(&math::mul(&row(&gstats, 1)?, &rstd)?, x.dtype()))
                .transpose()?;
            let gb = self.has_b.then(|| to_dtype(&row(&gstats, 0)?, x.dtype())).transpose()?;
            (gx, gw, gb)
        };
        // Edges follow the recorded inputs: x, then w and b where present.
        let mut out = vec![Some(gx)];
        if self.w.is_some() {
            out.push(gw);
        }
        if self.has_b {
            out.push(gb);
        }
        for (i, o) in out.iter_mut().enumerate() {
            if !node.needs_input_grad(i) {
                *o = None;
            }
        }
        Ok(out)
    }
}
