//! repeat, tile, repeat_interleave and meshgrid: built from expand (a view
//! with zero strides) and reshape or index_select, so their backward (a sum
//! over the copies) comes from those ops.

use super::index::index_select;
use super::shape::{expand, flatten, reshape, unsqueeze};
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::{fmt_shape, wrap_dim};
use crate::tensor::{DType, Device, Tensor};

/// Tensor.repeat(*sizes): the tensor tiled sizes[d] times along dim d, with
/// leading dims added when sizes is longer than the shape.
pub fn repeat(t: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    if sizes.len() < t.ndim() {
        bail!(
            Runtime,
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor (repeat dims {:?}, tensor of shape {})",
            sizes,
            fmt_shape(t.shape())
        );
    }
    if let Some(&r) = sizes.iter().find(|&&r| r < 0) {
        bail!(Runtime, "repeat: repeats can not be negative, got {} in {:?}", r, sizes);
    }
    let lead = sizes.len() - t.ndim();
    let shape: Vec<i64> =
        std::iter::repeat_n(1, lead).chain(t.shape().iter().map(|&n| n as i64)).collect();
    // (1, s0, 1, s1, ...) expanded to (r0, s0, r1, s1, ...), then merged pairwise.
    let pairs: Vec<i64> = shape.iter().flat_map(|&n| [1, n]).collect();
    let wide: Vec<i64> = sizes.iter().zip(&shape).flat_map(|(&r, &n)| [r, n]).collect();
    let out: Vec<i64> = sizes.iter().zip(&shape).map(|(&r, &n)| r * n).collect();
    reshape(&expand(&reshape(t, &pairs)?, &wide)?, &out)
}

/// torch.tile(input, dims): repeat, with dims padded by leading ones.
pub fn tile(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let pad = t.ndim().saturating_sub(dims.len());
    let sizes: Vec<i64> = std::iter::repeat_n(1, pad).chain(dims.iter().copied()).collect();
    repeat(t, &sizes)
}

/// The repeat count of each of `n` elements: an int for all, or a 1-element
/// or n-element int64 tensor (on any device).
pub enum Repeats<'a> {
    Int(i64),
    Tensor(&'a Tensor),
}

/// torch.repeat_interleave(input, repeats, dim=None, output_size=None).
pub fn repeat_interleave(
    t: &Tensor,
    repeats: Repeats,
    dim: Option<i64>,
    output_size: Option<i64>,
) -> Result<Tensor> {
    let (t, d) = match dim {
        Some(d) => (t.clone(), wrap_dim(d, t.ndim())?),
        None => (flatten(t, 0, -1)?, 0),
    };
    let n = if t.ndim() == 0 { 1 } else { t.shape()[d] };
    let counts = match repeats {
        Repeats::Int(r) if r < 0 => {
            bail!(Runtime, "repeat_interleave: repeats can not be negative, got {}", r)
        }
        Repeats::Int(r) => {
            if t.ndim() == 0 {
                return expand(&reshape(&t, &[1])?, &[r]);
            }
            // (.., n, 1, ..) expanded to (.., n, r, ..), then the pair merged.
            let mut wide: Vec<i64> = t.shape().iter().map(|&s| s as i64).collect();
            wide.insert(d + 1, r);
            let out =
                flatten(&expand(&unsqueeze(&t, d as i64 + 1)?, &wide)?, d as i64, d as i64 + 1)?;
            return check_output_size(out, d, output_size);
        }
        Repeats::Tensor(r) => counts_of(r, n)?,
    };
    let idx: Vec<i64> = counts
        .iter()
        .enumerate()
        .flat_map(|(i, &c)| std::iter::repeat_n(i as i64, c as usize))
        .collect();
    let idx =
        on_device(Tensor::from_vec(idx, &[counts.iter().sum::<i64>() as usize])?, t.device())?;
    let t = if t.ndim() == 0 { reshape(&t, &[1])? } else { t };
    check_output_size(index_select(&t, d as i64, &idx)?, d, output_size)
}

/// torch.repeat_interleave(repeats): each index i repeated repeats[i] times.
pub fn repeat_indices(repeats: &Tensor, output_size: Option<i64>) -> Result<Tensor> {
    if repeats.ndim() > 1 {
        bail!(
            Runtime,
            "repeat_interleave: repeats must be 0-dim or 1-dim tensor, got shape {}",
            fmt_shape(repeats.shape())
        );
    }
    let n = repeats.numel();
    let range = on_device(Tensor::from_vec((0..n as i64).collect(), &[n])?, repeats.device())?;
    repeat_interleave(&range, Repeats::Tensor(repeats), Some(0), output_size)
}

fn check_output_size(out: Tensor, d: usize, output_size: Option<i64>) -> Result<Tensor> {
    match output_size {
        Some(s) if out.ndim() > 0 && s != out.shape()[d] as i64 => bail!(
            Runtime,
            "repeat_interleave: output_size {} does not match the total of repeats {}",
            s,
            out.shape()[d]
        ),
        _ => Ok(out),
    }
}

/// The counts of a repeats tensor for `n` elements, read on the host.
fn counts_of(r: &Tensor, n: usize) -> Result<Vec<i64>> {
    if !matches!(r.dtype(), DType::I64 | DType::I32) {
        bail!(
            Type,
            "repeat_interleave: repeats must have an integer dtype (int64 or int32), got {}",
            r.dtype().name()
        );
    }
    if r.ndim() > 1 {
        bail!(
            Runtime,
            "repeat_interleave: repeats must be 0-dim or 1-dim tensor, got shape {}",
            fmt_shape(r.shape())
        );
    }
    let host = super::copy::to_dtype(&super::copy::transfer(r, Device::Cpu)?, DType::I64)?;
    let host = super::copy::contiguous(&host)?;
    // SAFETY: a contiguous int64 CPU tensor of numel elements.
    let vals = unsafe { std::slice::from_raw_parts(host.ptr::<i64>()?, host.numel()) }.to_vec();
    let counts = match vals.len() {
        1 => vec![vals[0]; n],
        m if m == n => vals,
        m => bail!(Runtime, "repeat_interleave: repeats must have the same size as input along dim, but got repeats.size(0) = {} and input.size(dim) = {}", m, n),
    };
    if let Some(c) = counts.iter().find(|&&c| c < 0) {
        bail!(Runtime, "repeat_interleave: repeats can not be negative, got {}", c);
    }
    Ok(counts)
}

fn on_device(t: Tensor, d: Device) -> Result<Tensor> {
    if d == Device::Cpu {
        Ok(t)
    } else {
        super::copy::transfer(&t, d)
    }
}

/// torch.meshgrid(*tensors, indexing): each 0-d or 1-d tensor as a view
/// expanded over the grid ("xy" swaps the first two dims).
pub fn meshgrid(ts: &[Tensor], indexing: &str) -> Result<Vec<Tensor>> {
    if !matches!(indexing, "ij" | "xy") {
        bail!(
            Value,
            "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {}",
            indexing
        );
    }
    if ts.is_empty() {
        bail!(Runtime, "torch.meshgrid: expects a non-empty TensorList");
    }
    if let Some(t) = ts.iter().find(|t| t.ndim() > 1) {
        bail!(Runtime, "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got a tensor of shape {}", fmt_shape(t.shape()));
    }
    let refs: Vec<&Tensor> = ts.iter().collect();
    super::same_device("meshgrid", &refs)?;
    if let Some(t) = ts.iter().find(|t| t.dtype() != ts[0].dtype()) {
        bail!(Runtime, "torch.meshgrid: Expected all tensors in the list to have the same dtype, got {} and {}", ts[0].dtype().name(), t.dtype().name());
    }
    let swap = indexing == "xy" && ts.len() >= 2;
    let mut order: Vec<usize> = (0..ts.len()).collect();
    if swap {
        order.swap(0, 1);
    }
    let sizes: Vec<i64> = order.iter().map(|&i| ts[i].numel() as i64).collect();
    let mut out = Vec::with_capacity(ts.len());
    for (i, t) in ts.iter().enumerate() {
        let at = order.iter().position(|&j| j == i).expect("a permutation");
        let mut shape = vec![1i64; ts.len()];
        shape[at] = t.numel() as i64;
        out.push(expand(&reshape(t, &shape)?, &sizes)?);
    }
    Ok(out)
}
