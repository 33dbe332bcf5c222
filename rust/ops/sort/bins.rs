//! Binning: searchsorted and bucketize (binary search, on either device),
//! bincount (a scatter_add on the GPU), histc and histogram (on the GPU the
//! values' binary search among the edges, then a scatter_add). None of them
//! is differentiable, as in PyTorch.

use crate::autograd::GradMode;
use crate::backend::cpu::sort as kernels;
use crate::bail;
use crate::dispatch_compute;
use crate::error::Result;
use crate::ops::copy::{contiguous, item, to_device, to_dtype};
use crate::ops::elementwise::{binary, where_, Binary};
use crate::ops::shape::reshape;
use crate::ops::{reduce, Operand};
use crate::tensor::dtype::promote;
use crate::tensor::layout::fmt_shape;
use crate::tensor::{DType, Device, Scalar, Tensor};

/// searchsorted(sorted_sequence, values, out_int32, right, side, sorter).
pub fn searchsorted(
    seq: &Tensor,
    values: &Operand,
    out_int32: bool,
    right: bool,
    side: Option<&str>,
    sorter: Option<&Tensor>,
) -> Result<Tensor> {
    let right = match side {
        None => right,
        Some("left") if right => bail!(
            Runtime,
            "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True"
        ),
        Some("left") => false,
        Some("right") => true,
        Some(s) => bail!(
            Runtime,
            "torch.searchsorted(): side can only be 'left' or 'right' but got {}",
            s
        ),
    };
    if seq.ndim() == 0 {
        bail!(
            Runtime,
            "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension"
        );
    }
    let vals = match values {
        Operand::T(v) => v.clone(),
        Operand::S(s) => crate::ops::creation::full_on(&[], *s, s.default_dtype(), seq.device())?,
    };
    crate::ops::same_device("searchsorted", &[seq, &vals])?;
    if seq.ndim() > 1
        && (vals.ndim() != seq.ndim()
            || seq.shape()[..seq.ndim() - 1] != vals.shape()[..vals.ndim() - 1])
    {
        bail!(
            Runtime,
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor {} and input value tensor {}",
            fmt_shape(seq.shape()),
            fmt_shape(vals.shape())
        );
    }
    let _off = GradMode::set(false);
    let seq = match sorter {
        None => seq.clone(),
        Some(s) => {
            if s.shape() != seq.shape() || s.dtype() != DType::I64 {
                bail!(
                    Runtime,
                    "torch.searchsorted(): sorter must be an int64 tensor of the boundaries' shape {}, got {} of shape {}",
                    fmt_shape(seq.shape()),
                    s.dtype().name(),
                    fmt_shape(s.shape())
                );
            }
            crate::ops::index::gather(seq, -1, s)?
        }
    };
    if seq.dtype() == DType::Bool || vals.dtype() == DType::Bool {
        bail!(Runtime, "torch.searchsorted(): \"searchsorted\" not implemented for 'Bool'");
    }
    let common = promote(seq.dtype(), vals.dtype()).compute();
    let out_dtype = if out_int32 { DType::I32 } else { DType::I64 };
    if seq.is_gpu() {
        let gd = if common.is_float() { DType::F32 } else { common };
        let s = contiguous(&to_dtype(&seq, gd)?)?;
        let v = contiguous(&to_dtype(&vals, gd)?)?;
        let n = *seq.shape().last().expect("at least 1-d");
        let rows = seq.numel() / n.max(1);
        let pos = if n == 0 {
            crate::ops::creation::full_on(v.shape(), Scalar::Int(0), DType::I64, v.device())?
        } else {
            crate::backend::gpu::sort::search(&s, &v, rows, n, right)?
        };
        return to_dtype(&pos, out_dtype);
    }
    let s = contiguous(&to_dtype(&seq, common)?)?;
    let v = contiguous(&to_dtype(&vals, common)?)?;
    let n = *seq.shape().last().expect("at least 1-d");
    let per_row = if seq.ndim() > 1 { *v.shape().last().unwrap_or(&1) } else { 1024 };
    let mut out = vec![0i64; v.numel()];
    dispatch_compute!(common, T => {
        let ss = s.to_vec::<T>()?;
        let vv = v.to_vec::<T>()?;
        kernels::searchsorted::<T>(&ss, n, &vv, per_row, right, &mut out);
    });
    to_dtype(&Tensor::from_vec(out, v.shape())?, out_dtype)
}

/// bucketize(input, boundaries, out_int32, right): searchsorted with 1-D boundaries.
pub fn bucketize(
    input: &Operand,
    boundaries: &Tensor,
    out_int32: bool,
    right: bool,
) -> Result<Tensor> {
    if boundaries.ndim() != 1 {
        bail!(
            Runtime,
            "bucketize(): boundaries tensor must be 1 dimension, but got dim({}) of shape {}",
            boundaries.ndim(),
            fmt_shape(boundaries.shape())
        );
    }
    searchsorted(boundaries, input, out_int32, right, None, None)
}

/// bincount(weights, minlength): int64 counts, or float32 / float64 weight
/// sums (float32 weights give float32, other weights float64, as PyTorch).
pub fn bincount(x: &Tensor, weights: Option<&Tensor>, minlength: i64) -> Result<Tensor> {
    if x.ndim() != 1 || !x.dtype().is_int() {
        bail!(
            Runtime,
            "bincount only supports 1-d non-negative integral inputs (got {} of shape {})",
            x.dtype().name(),
            fmt_shape(x.shape())
        );
    }
    if minlength < 0 {
        bail!(Runtime, "bincount(): minlength should be >= 0, got {}", minlength);
    }
    if let Some(w) = weights {
        if w.ndim() != 1 || w.shape()[0] != x.shape()[0] {
            bail!(
                Runtime,
                "bincount(): weights should be 1-d and have the same length as input (input {}, weights {})",
                fmt_shape(x.shape()),
                fmt_shape(w.shape())
            );
        }
        crate::ops::same_device("bincount", &[x, w])?;
    }
    let out_dtype = match weights {
        None => DType::I64,
        Some(w) if w.dtype() == DType::F32 => DType::F32,
        Some(_) => DType::F64,
    };
    let _off = GradMode::set(false);
    let (lo, hi) = if x.numel() == 0 {
        (0, -1)
    } else {
        let xf = to_dtype(x, DType::I64)?;
        (
            item(&reduce::amin(&xf, None, false)?)?.to_i64(),
            item(&reduce::amax(&xf, None, false)?)?.to_i64(),
        )
    };
    if lo < 0 {
        bail!(
            Runtime,
            "bincount only supports 1-d non-negative integral inputs (input of shape {} holds {})",
            fmt_shape(x.shape()),
            lo
        );
    }
    let len = ((hi + 1).max(minlength)) as usize;
    if x.is_gpu() {
        let zeros = crate::ops::creation::full_on(&[len], Scalar::Int(0), out_dtype, x.device())?;
        let idx = to_dtype(x, DType::I64)?;
        let src = match weights {
            Some(w) => to_dtype(w, out_dtype)?,
            None => {
                crate::ops::creation::full_on(x.shape(), Scalar::Int(1), out_dtype, x.device())?
            }
        };
        return crate::ops::index::scatter(&zeros, 0, &idx, &Operand::T(src), true);
    }
    let xs = to_dtype(x, DType::I64)?.to_vec::<i64>()?;
    let w = weights.map(|w| to_dtype(w, DType::F64)?.to_vec::<f64>()).transpose()?;
    let counts = kernels::bincount(&xs, w.as_deref(), len);
    to_dtype(&Tensor::from_vec(counts, &[len])?, out_dtype)
}

fn float_only(op: &str, t: &Tensor) -> Result<()> {
    if !t.dtype().is_float() {
        bail!(
            Runtime,
            "{}(): input must be a floating point tensor, got {} of shape {}",
            op,
            t.dtype().name(),
            fmt_shape(t.shape())
        );
    }
    Ok(())
}

/// The data's (min, max) of a GPU tensor (NaN when it holds a NaN; None when empty).
fn gpu_range(x: &Tensor) -> Result<Option<(f64, f64)>> {
    if x.numel() == 0 {
        return Ok(None);
    }
    let lo = item(&reduce::amin(x, None, false)?)?.to_f64();
    let hi = item(&reduce::amax(x, None, false)?)?.to_f64();
    Ok(Some((lo, hi)))
}

/// Counts (or weight sums) of a GPU tensor's values in the bins between
/// `edges` (float32, on x's device): the binary search of each value among the
/// edges, the last bin closed, values outside (and NaN) dropped into an extra
/// bin that is cut off.
fn gpu_histogram(x: &Tensor, w: Option<&Tensor>, edges: &[f64]) -> Result<Tensor> {
    let nb = edges.len() - 1;
    let dev = x.device();
    let e32: Vec<f32> = edges.iter().map(|&e| e as f32).collect();
    let e = to_device(&Tensor::from_vec(e32, &[nb + 1])?, dev)?;
    let xf = reshape(&contiguous(&to_dtype(x, DType::F32)?)?, &[-1])?;
    let b = crate::backend::gpu::sort::search(&e, &xf, 1, nb + 1, true)?;
    let int = |v: usize| Operand::S(Scalar::Int(v as i64));
    let b = binary(Binary::Sub, &Operand::T(b), &int(1), None)?;
    let top =
        binary(Binary::Eq, &Operand::T(xf.clone()), &Operand::S(Scalar::Float(edges[nb])), None)?;
    let b = where_(&top, &int(nb - 1), &Operand::T(b))?;
    let below = binary(Binary::Lt, &Operand::T(b.clone()), &int(0), None)?;
    let b = where_(&below, &int(nb), &Operand::T(b))?;
    let src = match w {
        Some(w) => reshape(&to_dtype(w, DType::F32)?, &[-1])?,
        None => crate::ops::creation::full_on(xf.shape(), Scalar::Int(1), DType::F32, dev)?,
    };
    let zeros = crate::ops::creation::full_on(&[nb + 1], Scalar::Int(0), DType::F32, dev)?;
    let h = crate::ops::index::scatter(&zeros, 0, &b, &Operand::T(src), true)?;
    crate::ops::shape::narrow(&h, 0, 0, nb as i64)
}

/// The finite range [lo, hi] (lo <= hi) of a histogram, else an error naming `op`.
fn check_range(op: &str, lo: f64, hi: f64) -> Result<()> {
    if !(lo.is_finite() && hi.is_finite()) {
        bail!(Runtime, "{}(): range of [{}, {}] is not finite", op, lo, hi);
    }
    if lo > hi {
        bail!(Runtime, "{}(): max must be larger than min, got min {} and max {}", op, lo, hi);
    }
    Ok(())
}

/// The data's (min, max), NaN when it holds a NaN; None when empty.
fn data_range(x: &[f64]) -> Option<(f64, f64)> {
    if x.is_empty() {
        return None;
    }
    if x.iter().any(|v| v.is_nan()) {
        return Some((f64::NAN, f64::NAN));
    }
    Some(x.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v))))
}

/// Evenly spaced edges from lo to hi, rounded to `dtype` as PyTorch's are.
fn linear_edges(lo: f64, hi: f64, bins: usize, dtype: DType) -> Result<Vec<f64>> {
    let e = crate::ops::creation::linspace(lo, hi, bins as i64 + 1, dtype)?;
    to_dtype(&e, DType::F64)?.to_vec::<f64>()
}

/// histc(bins, min, max): counts in `bins` equal bins over [min, max] (the
/// data's range when min == max; widened by 1 each way when still empty).
pub fn histc(x: &Tensor, bins: i64, min: f64, max: f64) -> Result<Tensor> {
    float_only("histc", x)?;
    if bins <= 0 {
        bail!(Runtime, "histc(): bins must be > 0, but got {}", bins);
    }
    let _off = GradMode::set(false);
    let xs = if x.is_gpu() { Vec::new() } else { to_dtype(x, DType::F64)?.to_vec::<f64>()? };
    let (mut lo, mut hi) = (min, max);
    if lo == hi {
        if let Some(r) = if x.is_gpu() { gpu_range(x)? } else { data_range(&xs) } {
            (lo, hi) = r;
        }
    }
    check_range("histc", lo, hi)?;
    if lo == hi {
        (lo, hi) = (lo - 1.0, hi + 1.0);
    }
    let edges = linear_edges(lo, hi, bins as usize, x.dtype())?;
    if x.is_gpu() {
        return to_dtype(&gpu_histogram(x, None, &edges)?, x.dtype());
    }
    let h = kernels::histogram(&xs, None, &edges, true);
    to_dtype(&Tensor::from_vec(h, &[bins as usize])?, x.dtype())
}

/// How histogram's bins are given.
pub enum Bins {
    Count(i64),
    Edges(Tensor),
}

/// histogram(bins, range, weight, density) -> (hist, bin_edges).
pub fn histogram(
    x: &Tensor,
    bins: &Bins,
    range: Option<(f64, f64)>,
    weight: Option<&Tensor>,
    density: bool,
) -> Result<(Tensor, Tensor)> {
    float_only("histogram", x)?;
    if let Some(w) = weight {
        if w.shape() != x.shape() || w.dtype() != x.dtype() {
            bail!(
                Runtime,
                "histogram(): weight should have the same shape and dtype as input ({} {}), got {} {}",
                x.dtype().name(),
                fmt_shape(x.shape()),
                w.dtype().name(),
                fmt_shape(w.shape())
            );
        }
        crate::ops::same_device("histogram", &[x, w])?;
    }
    let _off = GradMode::set(false);
    let gpu = x.is_gpu();
    let xs = if gpu { Vec::new() } else { to_dtype(x, DType::F64)?.to_vec::<f64>()? };
    let (edges, uniform) = match bins {
        Bins::Count(b) => {
            if *b <= 0 {
                bail!(Runtime, "histogram(): bins must be > 0, but got {}", b);
            }
            let data = if gpu { gpu_range(x)? } else { data_range(&xs) };
            let (mut lo, mut hi) = range.or(data).unwrap_or((0.0, 1.0));
            check_range("histogram", lo, hi)?;
            if lo == hi {
                (lo, hi) = (lo - 0.5, hi + 0.5);
            }
            (linear_edges(lo, hi, *b as usize, x.dtype())?, true)
        }
        Bins::Edges(e) => {
            if e.ndim() != 1 || e.numel() == 0 || e.dtype() != x.dtype() {
                bail!(
                    Runtime,
                    "histogram(): bins tensor should be 1-d, non-empty and of the input's dtype {}, got {} of shape {}",
                    x.dtype().name(),
                    e.dtype().name(),
                    fmt_shape(e.shape())
                );
            }
            crate::ops::same_device("histogram", &[x, e])?;
            (to_dtype(&to_device(e, Device::Cpu)?, DType::F64)?.to_vec::<f64>()?, false)
        }
    };
    let mut h = if gpu {
        // the bins' sums are few: finished on the host, as the CPU's
        let h = gpu_histogram(x, weight, &edges)?;
        to_dtype(&to_device(&h, Device::Cpu)?, DType::F64)?.to_vec::<f64>()?
    } else {
        let w = weight.map(|w| to_dtype(w, DType::F64)?.to_vec::<f64>()).transpose()?;
        kernels::histogram(&xs, w.as_deref(), &edges, uniform)
    };
    if density {
        let total: f64 = h.iter().sum();
        for (i, v) in h.iter_mut().enumerate() {
            *v /= total * (edges[i + 1] - edges[i]);
        }
    }
    let nb = h.len();
    let ne = edges.len();
    let out = |v: Vec<f64>, n: usize| {
        to_device(&to_dtype(&Tensor::from_vec(v, &[n])?, x.dtype())?, x.device())
    };
    Ok((out(h, nb)?, out(edges, ne)?))
}
