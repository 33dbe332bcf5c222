//! The recorded region ops: `take` reads a region, `put` writes one into a
//! copy; each is the other's adjoint in the backward pass.

use super::offsets::*;
use crate::autograd::{self, math, Backward, Node};
use crate::error::Result;
use crate::ops::copy::{clone_as, copy_into};
use crate::tensor::layout::{Layout, Shape};
use crate::tensor::{DType, Tensor};
use std::sync::Arc;

// ---- take / put: the recorded region ops ----

/// Part of a tensor, relative to a contiguous layout of its shape: a strided
/// view (basic indexing, narrow, select) or element offsets (advanced indexing,
/// gather, index_select, scatter).
#[derive(Clone)]
pub enum Region {
    View(Layout),
    Offsets {
        shape: Shape,
        offs: Arc<Runs>,
    },
    /// Offsets held in an int64 GPU tensor (computed there from index tensors).
    Gpu {
        shape: Shape,
        offs: Tensor,
    },
}

impl Region {
    /// Whether several region positions can name the same element.
    fn may_repeat(&self) -> bool {
        match self {
            Region::View(l) => l.has_internal_overlap(),
            Region::Offsets { .. } | Region::Gpu { .. } => true,
        }
    }
}

/// `t` itself when contiguous from offset 0 (what regions are relative to), else a copy.
pub(super) fn dense(t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() && t.layout().offset == 0 {
        Ok(t.clone())
    } else {
        clone_as(t, t.dtype())
    }
}

/// The region of `t` (a view when it is strided and `t` is dense).
pub fn take(t: &Tensor, region: &Region, name: &'static str) -> Result<Tensor> {
    autograd::record(
        &[t],
        || {
            let d = dense(t)?;
            match region {
                Region::View(l) => Ok(d.with_layout(l.clone())),
                Region::Offsets { shape, offs } => take_offsets(&d, shape, offs),
                Region::Gpu { shape, offs } => take_gpu(&d, shape, offs),
            }
        },
        |_| Ok(TakeBackward::new(name, t, region.clone()).into()),
    )
}

/// A copy of `base` with `value` (broadcast to the region) written into the
/// region, or added to it when `accumulate` (repeated positions add up).
pub fn put(base: &Tensor, region: &Region, value: &Tensor, accumulate: bool) -> Result<Tensor> {
    autograd::record(
        &[base, value],
        || {
            let out = clone_as(base, base.dtype())?;
            match region {
                Region::View(l) if !accumulate => {
                    copy_into(&out.with_layout(l.clone()), value).map(|_| out)
                }
                Region::View(l) => {
                    let offs = Runs::of_layout(l.offset as isize, &l.shape, &l.strides)?;
                    put_offsets(&out, &l.shape, &offs, value, true).map(|_| out)
                }
                Region::Offsets { shape, offs } => {
                    put_offsets(&out, shape, offs, value, accumulate).map(|_| out)
                }
                Region::Gpu { shape, offs } => {
                    put_gpu(&out, shape, offs, value, accumulate).map(|_| out)
                }
            }
        },
        |_| {
            Ok(PutBackward {
                region: region.clone(),
                accumulate,
                value_shape: value.shape().clone(),
                value_dtype: value.dtype(),
            }
            .into())
        },
    )
}

/// The backward of reading a region: the gradient written into that region of zeros.
#[derive(Clone)]
pub struct TakeBackward {
    name: &'static str,
    in_shape: Shape,
    in_dtype: DType,
    region: Region,
}

impl TakeBackward {
    pub fn new(name: &'static str, t: &Tensor, region: Region) -> TakeBackward {
        TakeBackward { name, in_shape: t.shape().clone(), in_dtype: t.dtype(), region }
    }
}

impl Backward for TakeBackward {
    fn name(&self) -> String {
        self.name.to_string()
    }
    fn apply(&self, _: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        // Repeated positions add up: half types accumulate in float32.
        let acc = self.in_dtype.compute();
        let g = math::cast(&grads[0], acc)?;
        let zeros = math::zeros(&self.in_shape, acc, &g)?;
        if !crate::autograd::is_grad_enabled() {
            // Not differentiated again: scatter into the fresh zeros directly.
            match &self.region {
                Region::Offsets { shape, offs } => {
                    put_offsets(&zeros, shape, offs, &g, true)?;
                    return Ok(vec![Some(math::cast(&zeros, self.in_dtype)?)]);
                }
                Region::Gpu { shape, offs } => {
                    put_gpu(&zeros, shape, offs, &g, true)?;
                    return Ok(vec![Some(math::cast(&zeros, self.in_dtype)?)]);
                }
                Region::View(_) => {}
            }
        }
        Ok(vec![Some(math::cast(
            &put(&zeros, &self.region, &g, self.region.may_repeat())?,
            self.in_dtype,
        )?)])
    }
}

/// The backward of writing a region: the base gets the gradient outside the
/// region (all of it when accumulating), the value gets the region's gradient.
#[derive(Clone)]
pub struct PutBackward {
    region: Region,
    accumulate: bool,
    value_shape: Shape,
    value_dtype: DType,
}

impl Backward for PutBackward {
    fn name(&self) -> String {
        if self.accumulate { "IndexPutAddBackward0" } else { "IndexPutBackward0" }.to_string()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let g = &grads[0];
        let mut out = vec![None, None];
        if node.needs_input_grad(0) {
            out[0] = Some(if self.accumulate {
                g.clone()
            } else {
                put(g, &self.region, &math::zeros(&[], g.dtype(), g)?, false)?
            });
        }
        if node.needs_input_grad(1) {
            let part = take(g, &self.region, "IndexBackward0")?;
            out[1] = Some(math::reduce_grad(&part, &self.value_shape, self.value_dtype)?);
        }
        Ok(out)
    }
}
