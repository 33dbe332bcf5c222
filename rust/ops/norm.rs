//! layer_norm as one fused kernel forward and backward (mean and 1/std kept
//! per row). Under create_graph the backward is written with recorded ops so
//! it can be differentiated again. The other norms (batch, group, instance,
//! RMS) are compositions in rumus.nn.functional.

use super::copy::{contiguous, to_dtype};
use super::reduce::{mean, sum};
use super::shape::reshape;
use crate::autograd::{self, math, mode, Backward, Node, SavedTensor};
use crate::backend::cpu::{norm as kernel, P};
use crate::bail;
use crate::error::Result;
use crate::ops::elementwise::Unary;
use crate::tensor::layout::{fmt_shape, numel, Shape};
use crate::tensor::{DType, Tensor};
use std::sync::Arc;

fn compute(d: DType) -> DType {
    if d == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

pub fn layer_norm(
    x: &Tensor,
    shape: &[usize],
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    let nd = shape.len();
    if nd == 0 || x.ndim() < nd || x.shape()[x.ndim() - nd..] != *shape {
        bail!(
            Runtime,
            "layer_norm: Given normalized_shape={}, expected input with shape [*, {}], but got input of size{}",
            fmt_shape(shape),
            shape.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "),
            fmt_shape(x.shape())
        );
    }
    if !x.dtype().is_float() {
        bail!(Runtime, "layer_norm: expected a floating point input, got {}", x.dtype().name());
    }
    for (name, t) in [("weight", w), ("bias", b)] {
        if let Some(t) = t {
            if t.shape()[..] != *shape {
                bail!(Runtime, "layer_norm: Expected {} to be of same shape as normalized_shape, but got {} of shape {} and normalized_shape = {}", name, name, fmt_shape(t.shape()), fmt_shape(shape));
            }
            if t.dtype() != x.dtype() {
                bail!(
                    Runtime,
                    "layer_norm: expected {} to have dtype {}, got {}",
                    name,
                    x.dtype().name(),
                    t.dtype().name()
                );
            }
        }
    }
    let m = numel(shape);
    let rows = x.numel().checked_div(m).unwrap_or(0);
    let ct = compute(x.dtype());
    let stats = std::sync::Mutex::new(None);
    let mut inputs = vec![x];
    inputs.extend(w);
    inputs.extend(b);
    autograd::record(
        &inputs,
        || {
            let xc = contiguous(&to_dtype(x, ct)?)?;
            let wc = w.map(|t| contiguous(&to_dtype(t, ct)?)).transpose()?;
            let bc = b.map(|t| contiguous(&to_dtype(t, ct)?)).transpose()?;
            if x.is_gpu() {
                let all: Vec<&Tensor> = [Some(x), w, b].into_iter().flatten().collect();
                crate::ops::same_device("layer_norm", &all)?;
                let dev = x.device();
                let y = Tensor::empty_on(x.shape(), ct, dev)?;
                let (mu, rs) =
                    (Tensor::empty_on(&[rows], ct, dev)?, Tensor::empty_on(&[rows], ct, dev)?);
                crate::backend::gpu::norm::forward(
                    &xc,
                    wc.as_ref(),
                    bc.as_ref(),
                    &y,
                    &mu,
                    &rs,
                    rows,
                    m,
                    eps,
                )?;
                *crate::tensor::lock(&stats) = Some((mu, rs));
                return to_dtype(&y, x.dtype());
            }
            let y = Tensor::for_output(x.shape(), ct)?;
            let (mu, rs) = (Tensor::for_output(&[rows], ct)?, Tensor::for_output(&[rows], ct)?);
            crate::dispatch_float!(ct, T => {
                let pw = wc.as_ref().map(|t| t.ptr::<T>().map(P)).transpose()?;
                let pb = bc.as_ref().map(|t| t.ptr::<T>().map(P)).transpose()?;
                // SAFETY: contiguous buffers sized rows × m, m and rows.
                unsafe { kernel::forward::<T>(P(xc.ptr::<T>()?), P(y.ptr::<T>()?), pw, pb, P(mu.ptr::<T>()?), P(rs.ptr::<T>()?), rows, m, eps) };
            });
            *crate::tensor::lock(&stats) = Some((mu, rs));
            to_dtype(&y, x.dtype())
        },
        |_| {
            let (mean, rstd) = crate::tensor::lock(&stats).take().expect("forward ran");
            Ok(LayerNormBackward {
                x: SavedTensor::input(x),
                w: w.map(SavedTensor::input),
                has_b: b.is_some(),
                shape: shape.into(),
                eps,
                mean,
                rstd,
            }
            .into())
        },
    )
}

#[derive(Clone)]
pub struct LayerNormBackward {
    x: SavedTensor,
    w: Option<SavedTensor>,
    has_b: bool,
    shape: Shape,
    eps: f64,
    mean: Tensor,
    rstd: Tensor,
}

impl LayerNormBackward {
    /// The gradients written with recorded ops (differentiable again).
    fn composite(
        &self,
        x: &Tensor,
        w: Option<&Tensor>,
        g: &Tensor,
    ) -> Result<(Tensor, Option<Tensor>, Option<Tensor>)> {
        let nd = self.shape.len() as i64;
        let dims: Vec<i64> = (-nd..0).collect();
        let mu = mean(x, Some(&dims), true, None)?;
        let xc = math::sub(x, &mu)?;
        let var = mean(&math::mul(&xc, &xc)?, Some(&dims), true, None)?;
        let rstd = math::un(Unary::Rsqrt, &math::add_scalar(&var, self.eps)?)?;
        let xh = math::mul(&xc, &rstd)?;
        let gh = match w {
            Some(w) => math::mul(g, w)?,
            None => g.clone(),
        };
        let a = mean(&gh, Some(&dims), true, None)?;
        let b = mean(&math::mul(&gh, &xh)?, Some(&dims), true, None)?;
        let gx = math::mul(&rstd, &math::sub(&math::sub(&gh, &a)?, &math::mul(&xh, &b)?)?)?;
        let gw = w.map(|_| math::sum_to(&math::mul(g, &xh)?, &self.shape)).transpose()?;
        let gb = self.has_b.then(|| math::sum_to(g, &self.shape)).transpose()?;
        Ok((gx, gw, gb))
    }
}

impl Backward for LayerNormBackward {
    fn name(&self) -> String {
        "NativeLayerNormBackward0".into()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let x = self.x.unpack(node)?;
        let w = self.w.as_ref().map(|w| w.unpack(node)).transpose()?;
        let g = &grads[0];
        let (gx, gw, gb) = if mode::is_grad_enabled() {
            self.composite(&x, w.as_ref(), g)?
        } else {
            let ct = compute(x.dtype());
            let m = numel(&self.shape);
            let rows = self.mean.numel();
            let (xc, gc) = (contiguous(&to_dtype(&x, ct)?)?, contiguous(&to_dtype(g, ct)?)?);
            let wc = w.as_ref().map(|t| contiguous(&to_dtype(t, ct)?)).transpose()?;
            if x.is_gpu() {
                let dev = x.device();
                let gx = Tensor::empty_on(x.shape(), ct, dev)?;
                crate::backend::gpu::norm::backward(
                    &xc,
                    &gc,
                    wc.as_ref(),
                    &self.mean,
                    &self.rstd,
                    &gx,
                    rows,
                    m,
                )?;
                let dt = x.dtype();
                let mut out = vec![Some(to_dtype(&gx, dt)?)];
                // Weight and bias gradients: column sums over the rows, by the
                // GPU's parallel (chunked) reductions rather than a serial walk.
                let (g2, shape) = (
                    reshape(&gc, &[rows as i64, m as i64])?,
                    self.shape.iter().map(|&d| d as i64).collect::<Vec<_>>(),
                );
                if self.w.is_some() {
                    let col = |t: &Tensor| reshape(t, &[rows as i64, 1]);
                    let xh = math::mul(
                        &math::sub(&reshape(&xc, &[rows as i64, m as i64])?, &col(&self.mean)?)?,
                        &col(&self.rstd)?,
                    )?;
                    out.push(Some(to_dtype(
                        &reshape(&sum(&math::mul(&g2, &xh)?, Some(&[0]), false, None)?, &shape)?,
                        dt,
                    )?));
                }
                if self.has_b {
                    out.push(Some(to_dtype(
                        &reshape(&sum(&g2, Some(&[0]), false, None)?, &shape)?,
                        dt,
                    )?));
                }
                return Ok(out);
            }
            let gx = Tensor::for_output(x.shape(), ct)?;
            let (gw, gb) = crate::dispatch_float!(ct, T => {
                let pw = wc.as_ref().map(|t| t.ptr::<T>().map(P)).transpose()?;
                // SAFETY: contiguous buffers sized rows × m, m and rows.
                let (gw, gb) = unsafe { kernel::backward::<T>(P(xc.ptr::<T>()?), P(gc.ptr::<T>()?), pw, P(self.mean.ptr::<T>()?), P(self.rstd.ptr::<T>()?), P(gx.ptr::<T>()?), rows, m) };
                (Tensor::from_vec(gw, &self.shape)?, Tensor::from_vec(gb, &self.shape)?)
            });
            let dt = x.dtype();
            (
                to_dtype(&gx, dt)?,
                w.as_ref().map(|_| to_dtype(&gw, dt)).transpose()?,
                self.has_b.then(|| to_dtype(&gb, dt)).transpose()?,
            )
        };
        let mut out = vec![Some(gx)];
        if self.w.is_some() {
            out.push(gw);
        }
        if self.has_b {
            out.push(gb);
        }
        Ok(out)
    }
}
