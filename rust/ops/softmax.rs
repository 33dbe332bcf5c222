//! softmax and log_softmax along a dim: one fused pass forward, one fused
//! pass backward from the saved output. Under create_graph the backward is
//! written with recorded ops instead, so it can be differentiated again.

use super::copy::{contiguous, to_dtype};
use super::reduce::sum;
use crate::autograd::{self, math, mode, Backward, Node, SavedTensor};
use crate::backend::cpu::{halfsoftmax, softmax as kernel, P};
use crate::bail;
use crate::dispatch_half;
use crate::error::Result;
use crate::ops::elementwise::Unary;
use crate::tensor::layout::{numel, wrap_dim};
use crate::tensor::{DType, Tensor};
use std::sync::Arc;

/// (outer, n, inner) sizes around `dim`.
fn split(t: &Tensor, dim: usize) -> (usize, usize, usize) {
    let s = t.shape();
    if s.is_empty() {
        return (1, 1, 1);
    }
    (numel(&s[..dim]), s[dim], numel(&s[dim + 1..]))
}

/// softmax (log = false) or log_softmax (log = true) of `x` along `dim`,
/// computed in `dtype` when given.
pub fn softmax(x: &Tensor, dim: i64, dtype: Option<DType>, log: bool) -> Result<Tensor> {
    let op = if log { "log_softmax" } else { "softmax" };
    let x = match dtype {
        Some(d) => to_dtype(x, d)?,
        None => x.clone(),
    };
    if !x.dtype().is_float() {
        bail!(Runtime, "\"{}\" not implemented for '{}'", op, x.dtype().name());
    }
    let d = wrap_dim(dim, x.ndim().max(1))?;
    autograd::record(
        &[&x],
        || {
            let (outer, n, inner) = split(&x, d);
            if x.dtype().is_half() && !x.is_gpu() {
                let (c, out) = (contiguous(&x)?, Tensor::for_output(x.shape(), x.dtype())?);
                dispatch_half!(c.dtype(), H => {
                    // SAFETY: c and out are contiguous with outer × n × inner elements.
                    unsafe { halfsoftmax::forward::<H>(P(c.ptr::<H>()?), P(out.ptr::<H>()?), outer, n, inner, log) };
                });
                return Ok(out);
            }
            let c = contiguous(&to_dtype(&x, x.dtype().float_kernel(x.is_gpu()))?)?;
            if c.is_gpu() {
                let out = Tensor::empty_on(x.shape(), c.dtype(), c.device())?;
                crate::backend::gpu::softmax::run(&c, None, &out, outer, n, inner, log)?;
                return to_dtype(&out, x.dtype());
            }
            let out = Tensor::for_output(x.shape(), c.dtype())?;
            crate::dispatch_float!(c.dtype(), T => {
                // SAFETY: c and out are contiguous with outer × n × inner elements.
                unsafe { kernel::forward::<T>(P(c.ptr::<T>()?), P(out.ptr::<T>()?), outer, n, inner, log) };
            });
            to_dtype(&out, x.dtype())
        },
        |out| Ok(SoftmaxBackward { out: SavedTensor::output(out, 0), dim: d, log }.into()),
    )
}

#[derive(Clone)]
pub struct SoftmaxBackward {
    out: SavedTensor,
    dim: usize,
    log: bool,
}

impl Backward for SoftmaxBackward {
    fn name(&self) -> String {
        if self.log { "LogSoftmaxBackward0" } else { "SoftmaxBackward0" }.into()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let y = self.out.unpack(node)?;
        let g = &grads[0];
        let dim = [self.dim as i64];
        let dims = if y.ndim() == 0 { None } else { Some(&dim[..]) };
        if mode::is_grad_enabled() {
            let gx = if self.log {
                math::sub(g, &math::mul(&math::un(Unary::Exp, &y)?, &sum(g, dims, true, None)?)?)?
            } else {
                math::mul(&y, &math::sub(g, &sum(&math::mul(g, &y)?, dims, true, None)?)?)?
            };
            return Ok(vec![Some(gx)]);
        }
        let (outer, n, inner) = split(&y, self.dim);
        if y.dtype().is_half() && !y.is_gpu() {
            let (yc, gc) = (contiguous(&y)?, contiguous(&to_dtype(g, y.dtype())?)?);
            let gx = Tensor::for_output(y.shape(), y.dtype())?;
            dispatch_half!(y.dtype(), H => {
                // SAFETY: all three are contiguous with outer × n × inner elements.
                unsafe { halfsoftmax::backward::<H>(P(yc.ptr::<H>()?), P(gc.ptr::<H>()?), P(gx.ptr::<H>()?), outer, n, inner, self.log) };
            });
            return Ok(vec![Some(gx)]);
        }
        let ct = y.dtype().float_kernel(y.is_gpu());
        let (yc, gc) = (contiguous(&to_dtype(&y, ct)?)?, contiguous(&to_dtype(g, ct)?)?);
        if y.is_gpu() {
            let gx = Tensor::empty_on(y.shape(), ct, y.device())?;
            crate::backend::gpu::softmax::run(&yc, Some(&gc), &gx, outer, n, inner, self.log)?;
            return Ok(vec![Some(to_dtype(&gx, y.dtype())?)]);
        }
        let gx = Tensor::for_output(y.shape(), ct)?;
        crate::dispatch_float!(ct, T => {
            // SAFETY: all three are contiguous with outer × n × inner elements.
            unsafe { kernel::backward::<T>(P(yc.ptr::<T>()?), P(gc.ptr::<T>()?), P(gx.ptr::<T>()?), outer, n, inner, self.log) };
        });
        Ok(vec![Some(to_dtype(&gx, y.dtype())?)])
    }
}
