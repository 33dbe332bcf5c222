//! interpolate's linear and cubic modes on the CPU, one dim at a time: each
//! output position along the dim is a weighted sum of K input positions (the
//! taps F.interpolate computes). The backward is the adjoint sum, and its own
//! backward the resample again, so gradients of any order stay exact.

use crate::autograd::{self, Backward, Node};
use crate::backend::cpu::resample as kernel;
use crate::backend::cpu::P;
use crate::bail;
use crate::error::Result;
use crate::ops::copy::{contiguous, to_dtype};
use crate::tensor::layout::fmt_shape;
use crate::tensor::{DType, Element, Tensor};
use std::sync::Arc;

/// K taps per output position: sources `idx` (negative: none) with weights `w`
/// (None: 1) into a dim of size `n`.
pub struct Taps {
    pub idx: Vec<i64>,
    pub w: Option<Vec<f64>>,
    pub k: usize,
    pub n: usize,
}

impl Taps {
    fn outputs(&self) -> usize {
        self.idx.len() / self.k
    }
}

/// `x` resampled along `dim` through `taps` (every idx in [0, n)).
pub fn resample(x: &Tensor, dim: usize, taps: Arc<Taps>) -> Result<Tensor> {
    let ok = |d: DType| d.is_float();
    let valid = taps.k > 0
        && taps.idx.len().is_multiple_of(taps.k)
        && taps.w.as_ref().is_none_or(|w| w.len() == taps.idx.len())
        && taps.idx.iter().all(|&i| i >= 0 && (i as usize) < taps.n);
    if x.is_gpu() || !ok(x.dtype()) || dim >= x.ndim() || x.shape()[dim] != taps.n || !valid {
        bail!(
            Runtime,
            "internal: resample takes a float CPU tensor and taps into its dim {}, got a {} {} \
             tensor of shape {}",
            dim,
            x.device().name(),
            x.dtype().name(),
            fmt_shape(x.shape())
        );
    }
    autograd::record(
        &[x],
        || along(x, dim, &taps, false),
        |_| Ok(ResampleBackward { dim, taps: taps.clone() }.into()),
    )
}

/// The adjoint of `resample`: `g` (with `taps.outputs()` at `dim`) summed back into size n.
fn resample_adjoint(g: &Tensor, dim: usize, taps: &Arc<Taps>) -> Result<Tensor> {
    autograd::record(
        &[g],
        || along(g, dim, taps, true),
        |_| Ok(ResampleAdjointBackward { dim, taps: taps.clone() }.into()),
    )
}

/// The taps (or their adjoint) along `dim`, computed in float32 or float64
/// (half precision rounds once, at the end).
pub(crate) fn along(x: &Tensor, dim: usize, taps: &Taps, adjoint: bool) -> Result<Tensor> {
    let dtype = x.dtype();
    let work = if dtype.is_half() { DType::F32 } else { dtype };
    if !matches!(work, DType::F32 | DType::F64) {
        bail!(Runtime, "internal: resample got a {} tensor", dtype.name());
    }
    let x = contiguous(&to_dtype(x, work)?)?;
    let mut shape = x.shape().clone();
    let (from, to) = if adjoint { (taps.outputs(), taps.n) } else { (taps.n, taps.outputs()) };
    if shape[dim] != from {
        bail!(
            Runtime,
            "internal: resample expected {} at dim {} of {}",
            from,
            dim,
            fmt_shape(&shape)
        );
    }
    shape[dim] = to;
    let out = Tensor::for_output(&shape, work)?;
    let dims = (shape[..dim].iter().product(), shape[dim], shape[dim + 1..].iter().product());
    if out.numel() > 0 {
        crate::dispatch_float!(work, T => {
            let w: Option<Vec<T>> = taps.w.as_ref().map(|w| w.iter().map(|&v| T::from_f64(v)).collect());
            let (po, px) = (P(out.ptr::<T>()?), P(x.ptr::<T>()?));
            // SAFETY: x and out are contiguous with `from` and `to` at dim; resample
            // checked the indices against n.
            unsafe {
                if adjoint {
                    kernel::taps_adjoint(po, px, dims, &taps.idx, w.as_deref(), taps.k)
                } else {
                    let ones = vec![T::one(); taps.idx.len()];
                    let w = w.unwrap_or(ones);
                    kernel::taps(po, px, (dims.0, from, dims.2), &taps.idx, &w, taps.k)
                }
            }
        });
    }
    to_dtype(&out, dtype)
}

#[derive(Clone)]
pub struct ResampleBackward {
    dim: usize,
    taps: Arc<Taps>,
}

impl Backward for ResampleBackward {
    fn name(&self) -> String {
        "ResampleBackward0".to_string()
    }
    fn apply(&self, _: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(resample_adjoint(&grads[0], self.dim, &self.taps)?)])
    }
}

#[derive(Clone)]
pub struct ResampleAdjointBackward {
    dim: usize,
    taps: Arc<Taps>,
}

impl Backward for ResampleAdjointBackward {
    fn name(&self) -> String {
        "ResampleBackwardBackward0".to_string()
    }
    fn apply(&self, _: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(resample(&grads[0], self.dim, self.taps.clone())?)])
    }
}
