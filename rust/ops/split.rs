//! split, chunk and unbind: views of consecutive pieces of one dim, made by
//! one autograd node for all pieces (as PyTorch's SplitBackward0 and
//! UnbindBackward0). Its backward writes every piece's gradient into one
//! tensor laid out like the input, so a packed projection split into q, k, v
//! gets one gradient, written once, instead of a zero-filled tensor per piece
//! summed together.

use super::copy::copy_into;
use super::shape::{cat, unsqueeze};
use crate::autograd::{self, Backward, Node};
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::{wrap_dim, Layout, Shape};
use crate::tensor::{DType, Tensor};
use std::sync::Arc;

/// Pieces `(start, len)` of dim `d` of `t` as views; `squeeze` drops the dim
/// (each piece then has length 1: unbind).
fn pieces(
    t: &Tensor,
    name: &'static str,
    d: usize,
    parts: Vec<(usize, usize)>,
    squeeze: bool,
) -> Result<Vec<Tensor>> {
    let view = |l: &Layout, (start, len): (usize, usize)| {
        if squeeze {
            l.select(d, start as i64)
        } else {
            l.narrow(d as i64, start as i64, len as i64)
        }
    };
    autograd::record_many(
        &[t],
        || parts.iter().map(|&p| Ok(t.with_layout(view(t.layout(), p)?))).collect(),
        |_| {
            Ok(SplitBackward {
                name,
                dim: d,
                squeeze,
                parts: parts.clone(),
                in_layout: t.layout().clone(),
                in_dtype: t.dtype(),
            }
            .into())
        },
    )
}

/// split by a chunk size (the last chunk may be smaller).
pub fn split_size(t: &Tensor, size: i64, dim: i64) -> Result<Vec<Tensor>> {
    if t.ndim() == 0 {
        bail!(Runtime, "split expects at least a 1-dimensional tensor");
    }
    let d = wrap_dim(dim, t.ndim())?;
    let n = t.shape()[d];
    if size < 0 || (size == 0 && n != 0) {
        bail!(Runtime, "split expects split_size be non-negative, but got split_size={}", size);
    }
    if n == 0 {
        return Ok(vec![t.clone()]);
    }
    let size = size as usize;
    let parts = (0..n).step_by(size).map(|s| (s, size.min(n - s))).collect();
    pieces(t, "SplitBackward0", d, parts, false)
}

/// split by explicit section sizes that must add up to the dim's size.
pub fn split_sections(t: &Tensor, sections: &[i64], dim: i64) -> Result<Vec<Tensor>> {
    if t.ndim() == 0 {
        bail!(Runtime, "split expects at least a 1-dimensional tensor");
    }
    let d = wrap_dim(dim, t.ndim())?;
    let n = t.shape()[d] as i64;
    if sections.iter().any(|&s| s < 0) || sections.iter().sum::<i64>() != n {
        bail!(
            Runtime,
            "split_with_sizes expects split_sizes to sum exactly to {} (input tensor's size at dimension {}), but got split_sizes={:?}",
            n,
            d,
            sections
        );
    }
    let mut at = 0;
    let parts = sections
        .iter()
        .map(|&s| {
            at += s as usize;
            (at - s as usize, s as usize)
        })
        .collect();
    pieces(t, "SplitWithSizesBackward0", d, parts, false)
}

pub fn chunk(t: &Tensor, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
    if chunks <= 0 {
        bail!(Runtime, "chunk expects `chunks` to be greater than 0, got: {}", chunks);
    }
    if t.ndim() == 0 {
        bail!(Runtime, "chunk expects at least a 1-dimensional tensor");
    }
    let d = wrap_dim(dim, t.ndim())?;
    let n = t.shape()[d] as i64;
    let size = ((n + chunks - 1) / chunks).max(1);
    if n == 0 {
        return split_size(t, 0, dim);
    }
    split_size(t, size, dim)
}

pub fn unbind(t: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    if t.ndim() == 0 {
        bail!(Index, "Dimension specified as 0 but tensor has no dimensions");
    }
    let d = wrap_dim(dim, t.ndim())?;
    pieces(t, "UnbindBackward0", d, (0..t.shape()[d]).map(|i| (i, 1)).collect(), true)
}

#[derive(Clone)]
pub struct SplitBackward {
    name: &'static str,
    dim: usize,
    squeeze: bool,
    parts: Vec<(usize, usize)>,
    /// The input's layout: the gradient gets its memory order.
    in_layout: Layout,
    in_dtype: DType,
}

impl Backward for SplitBackward {
    fn name(&self) -> String {
        self.name.to_string()
    }
    fn apply(&self, _: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let d = self.dim as i64;
        if autograd::is_grad_enabled() {
            // Differentiated again: the recorded concatenation.
            let parts: Vec<Tensor> = if self.squeeze {
                grads.iter().map(|g| unsqueeze(g, d)).collect::<Result<_>>()?
            } else {
                grads.to_vec()
            };
            return Ok(vec![Some(cat(&parts, d)?)]);
        }
        let shape: Shape = self.in_layout.shape.clone();
        let order = self.in_layout.memory_order();
        let out = Tensor::empty_in_order(&shape, &order, self.in_dtype, grads[0].device())?;
        for (g, &(start, len)) in grads.iter().zip(&self.parts) {
            let l = out.layout();
            let region = if self.squeeze {
                l.select(self.dim, start as i64)?
            } else {
                l.narrow(d, start as i64, len as i64)?
            };
            copy_into(&out.with_layout(region), g)?;
        }
        Ok(vec![Some(out)])
    }
}
