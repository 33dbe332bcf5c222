//! Pooling: max_pool1d/2d, avg_pool1d/2d and the adaptive variants.
//!
//! Average pooling is a linear op recorded with its adjoint (each is the
//! other's backward). Max pooling records the backward of reading its argmax
//! elements (`take`'s: a scatter-add, itself differentiable), so higher
//! derivatives come for free.

use super::copy::{contiguous, to_dtype};
use super::index::{Region, Runs, TakeBackward};
use super::shape::{reshape, squeeze_dim, unsqueeze};
use crate::autograd::{self, Backward, Node};
pub use crate::backend::cpu::pool::{Span, Windows};
use crate::backend::cpu::{pool as kernel, P};
use crate::backend::gpu::codes::flag;
use crate::backend::gpu::pool::{self as gpu_pool, Entry, PoolFlags};
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::{fmt_shape, numel, Shape};
use crate::tensor::{DType, Tensor};
use std::sync::Arc;

/// Sliding windows along one axis: PyTorch's output size (ceil_mode: a last
/// window that starts inside the input or left padding is kept).
fn sliding(
    op: &str,
    size: usize,
    k: usize,
    s: usize,
    p: usize,
    d: usize,
    ceil: bool,
) -> Result<usize> {
    let span = (d * (k - 1) + 1) as i64;
    let num = size as i64 + 2 * p as i64 - span;
    let s_ = s as i64;
    let mut out = if ceil {
        num.div_euclid(s_) + (num.rem_euclid(s_) != 0) as i64 + 1
    } else {
        num.div_euclid(s_) + 1
    };
    if ceil && (out - 1) * s_ >= size as i64 + p as i64 {
        out -= 1;
    }
    if num < 0 || out <= 0 {
        bail!(
            Runtime,
            "{}: Given input size: ({}). Calculated output size: ({}). Output size is too small",
            op,
            size,
            out.max(0)
        );
    }
    Ok(out as usize)
}

/// Spans and average divisors of a sliding window along one axis.
fn regular_axis(
    size: usize,
    out: usize,
    k: usize,
    s: usize,
    p: usize,
    d: usize,
    include_pad: bool,
) -> Result<(Vec<Span>, Vec<f64>)> {
    axis(out, |o| {
        let first = (o * s) as isize - p as isize;
        let end_pad = (first + k as isize).min((size + p) as isize);
        let div =
            if include_pad { end_pad - first } else { end_pad.min(size as isize) - first.max(0) };
        (Span { first, count: k, step: d }, div.max(1) as f64)
    })
}

/// Adaptive windows: [floor(o·size/out), ceil((o+1)·size/out)).
fn adaptive_axis(size: usize, out: usize) -> Result<(Vec<Span>, Vec<f64>)> {
    axis(out, |o| {
        let start = o * size / out;
        let end = ((o + 1) * size).div_ceil(out);
        (Span { first: start as isize, count: end - start, step: 1 }, (end - start) as f64)
    })
}

/// The spans and divisors of `out` windows, allocated fallibly (out comes from the user).
fn axis(out: usize, f: impl Fn(usize) -> (Span, f64)) -> Result<(Vec<Span>, Vec<f64>)> {
    let (mut spans, mut divs) = (Vec::new(), Vec::new());
    let bytes = out.saturating_mul(std::mem::size_of::<(Span, f64)>());
    if bytes > crate::tensor::storage::memory_limit()
        || spans.try_reserve_exact(out).is_err()
        || divs.try_reserve_exact(out).is_err()
    {
        bail!(
            Runtime,
            "pooling: CPU out of memory: cannot allocate the windows of an output size of {}",
            out
        );
    }
    for o in 0..out {
        let (s, d) = f(o);
        spans.push(s);
        divs.push(d);
    }
    Ok((spans, divs))
}

/// Pooling options as (H, W) pairs; 1-D ops use H = 1.
#[derive(Clone, Debug)]
pub struct PoolOpts {
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub dilation: [usize; 2],
    pub ceil_mode: bool,
}

/// The kind of windows: sliding (with options) or adaptive (output size).
pub enum Kind<'a> {
    Sliding(&'a PoolOpts),
    Adaptive([usize; 2]),
}

/// Input as (..., H, W) with 1-D inputs gaining H = 1; checks rank and sizes.
fn prepare(op: &str, x: &Tensor, dims: usize) -> Result<Tensor> {
    let nd = x.ndim();
    if nd != dims + 1 && nd != dims + 2 {
        bail!(Runtime, "{}: Expected {}D or {}D (batch mode) tensor with optional 0 dim batch size for input, but got: {}", op, dims + 1, dims + 2, fmt_shape(x.shape()));
    }
    if x.shape()[nd - dims..]
        .iter()
        .chain(x.shape()[nd - dims - 1..nd - dims].iter())
        .any(|&s| s == 0)
    {
        bail!(Runtime, "{}: Expected input's non-batch dimensions to have positive length, but input has a shape of {}", op, fmt_shape(x.shape()));
    }
    if !x.dtype().is_float() {
        bail!(Runtime, "\"{}\" not implemented for '{}'", op, x.dtype().name());
    }
    if dims == 1 {
        unsqueeze(x, -2)
    } else {
        Ok(x.clone())
    }
}

fn windows(
    op: &str,
    h: usize,
    w: usize,
    kind: &Kind,
    include_pad: bool,
    max: bool,
) -> Result<Windows> {
    let (rows, cols) = match kind {
        Kind::Sliding(o) => {
            for a in 0..2 {
                let (k, p, d) = (o.kernel[a], o.padding[a], o.dilation[a]);
                let limit = if max { (d * (k - 1)).div_ceil(2) } else { k / 2 };
                if p > limit {
                    if max {
                        bail!(Runtime, "{}: pad should be at most half of effective kernel size, but got pad={}, kernel_size={} and dilation={}", op, p, k, d);
                    }
                    bail!(Runtime, "{}: pad should be at most half of kernel size, but got pad={} and kernel_size={}", op, p, k);
                }
            }
            let axis = |a: usize, size: usize| -> Result<(Vec<Span>, Vec<f64>)> {
                let out = sliding(
                    op,
                    size,
                    o.kernel[a],
                    o.stride[a],
                    o.padding[a],
                    o.dilation[a],
                    o.ceil_mode,
                )?;
                regular_axis(
                    size,
                    out,
                    o.kernel[a],
                    o.stride[a],
                    o.padding[a],
                    o.dilation[a],
                    include_pad,
                )
            };
            (axis(0, h)?, axis(1, w)?)
        }
        Kind::Adaptive(out) => (adaptive_axis(h, out[0])?, adaptive_axis(w, out[1])?),
    };
    Ok(Windows { h, w, rows: rows.0, div_rows: rows.1, cols: cols.0, div_cols: cols.1 })
}

/// The windows as the CPU kernels walk them, and the parameters the GPU
/// shader derives the same windows from.
pub struct Pooling {
    win: Windows,
    /// shaders/pool.wgsl's params, but for the plane count and the offsets
    /// (set per dispatch).
    gpu: gpu_pool::Params,
}

impl Pooling {
    fn new(win: Windows, kind: &Kind, include_pad: bool, divisor: Option<f64>) -> Pooling {
        let (adaptive, o) = match kind {
            Kind::Sliding(o) => (
                false,
                [
                    o.kernel[0],
                    o.kernel[1],
                    o.stride[0],
                    o.stride[1],
                    o.padding[0],
                    o.padding[1],
                    o.dilation[0],
                    o.dilation[1],
                ],
            ),
            Kind::Adaptive(_) => (true, [1, 1, 1, 1, 0, 0, 1, 1]),
        };
        let [kh, kw, sh, sw, ph, pw, dh, dw] = o.map(|v| v as u32);
        let gpu = gpu_pool::Params {
            h: win.h as u32,
            w: win.w as u32,
            oh: win.rows.len() as u32,
            ow: win.cols.len() as u32,
            flags: flag(adaptive, PoolFlags::ADAPTIVE)
                | flag(include_pad, PoolFlags::INCLUDE_PAD)
                | flag(divisor.is_some(), PoolFlags::DIVISOR),
            kh,
            kw,
            sh,
            sw,
            ph,
            pw,
            dh,
            dw,
            divisor: divisor.unwrap_or(1.0) as f32,
            ..Default::default()
        };
        Pooling { win, gpu }
    }

    /// Runs a pool.wgsl entry over (planes, H, W) `x` into `out` (and `idx`),
    /// `threads` per dispatch over all planes.
    fn gpu(
        &self,
        entry: Entry,
        planes: usize,
        x: &Tensor,
        out: &Tensor,
        idx: Option<&Tensor>,
        threads: usize,
    ) -> Result<()> {
        gpu_pool::launch(entry, planes, &self.gpu, x, out, idx, threads)
    }
}

fn out_shape(x: &Tensor, win: &Windows) -> Shape {
    let mut s: Shape = x.shape()[..x.ndim() - 2].into();
    s.extend_from_slice(&[win.rows.len(), win.cols.len()]);
    s
}

fn finish(y: Tensor, dims: usize) -> Result<Tensor> {
    if dims == 1 {
        squeeze_dim(&y, -2)
    } else {
        Ok(y)
    }
}

/// avg_pool / adaptive_avg_pool (`dims` 1 or 2); `divisor` overrides the window size.
pub fn avg_pool(
    op: &'static str,
    dims: usize,
    x: &Tensor,
    kind: &Kind,
    count_include_pad: bool,
    divisor: Option<f64>,
) -> Result<Tensor> {
    let xb = prepare(op, x, dims)?;
    let (h, w) = (xb.shape()[xb.ndim() - 2], xb.shape()[xb.ndim() - 1]);
    let mut win = windows(op, h, w, kind, count_include_pad, false)?;
    if let Some(d) = divisor {
        win.div_rows = vec![d; win.rows.len()];
        win.div_cols = vec![1.0; win.cols.len()];
    }
    finish(
        avg(&xb, &Arc::new(Pooling::new(win, kind, count_include_pad, divisor)), name(op))?,
        dims,
    )
}

fn name(op: &str) -> &'static str {
    match op {
        "avg_pool1d" | "avg_pool2d" => "AvgPool2DBackward0",
        "adaptive_avg_pool1d" | "adaptive_avg_pool2d" => "AdaptiveAvgPool2DBackward0",
        "adaptive_max_pool1d" | "adaptive_max_pool2d" => "AdaptiveMaxPool2DBackward0",
        _ => "MaxPool2DWithIndicesBackward0",
    }
}

/// The float compute type of a pooling input.
fn compute(t: &Tensor) -> DType {
    t.dtype().float_kernel(t.is_gpu())
}

/// Window averages of a (..., H, W) tensor (recorded).
fn avg(x: &Tensor, win: &Arc<Pooling>, name: &'static str) -> Result<Tensor> {
    autograd::record(
        &[x],
        || {
            let c = contiguous(&to_dtype(x, compute(x))?)?;
            let planes = numel(&x.shape()[..x.ndim() - 2]);
            if c.is_gpu() {
                let out = Tensor::empty_on(&out_shape(x, &win.win), c.dtype(), c.device())?;
                win.gpu(Entry::AvgPool, planes, &c, &out, None, out.numel())?;
                return to_dtype(&out, x.dtype());
            }
            let out = Tensor::for_output(&out_shape(x, &win.win), c.dtype())?;
            crate::dispatch_float!(c.dtype(), T => {
                // SAFETY: c is contiguous (planes, H, W); out holds planes × OH × OW.
                unsafe { kernel::avg::<T>(planes, &win.win, P(c.ptr::<T>()?), P(out.ptr::<T>()?)) };
            });
            to_dtype(&out, x.dtype())
        },
        |_| {
            Ok(AvgPoolBackward {
                name,
                win: win.clone(),
                in_shape: x.shape().clone(),
                adjoint: false,
            }
            .into())
        },
    )
}

/// The adjoint of `avg`: (..., OH, OW) gradients spread back to (..., H, W) (recorded).
fn avg_adjoint(
    g: &Tensor,
    win: &Arc<Pooling>,
    in_shape: &Shape,
    name: &'static str,
) -> Result<Tensor> {
    autograd::record(
        &[g],
        || {
            let c = contiguous(&to_dtype(g, compute(g))?)?;
            let planes = numel(&in_shape[..in_shape.len() - 2]);
            if c.is_gpu() {
                let out = Tensor::empty_on(in_shape, c.dtype(), c.device())?;
                win.gpu(Entry::AvgPoolAdjoint, planes, &c, &out, None, out.numel())?;
                return to_dtype(&out, g.dtype());
            }
            let out = Tensor::zeros(in_shape, c.dtype())?;
            crate::dispatch_float!(c.dtype(), T => {
                // SAFETY: c holds planes × OH × OW; out is a zeroed (planes, H, W) tensor.
                unsafe { kernel::avg_adjoint::<T>(planes, &win.win, P(c.ptr::<T>()?), P(out.ptr::<T>()?)) };
            });
            to_dtype(&out, g.dtype())
        },
        |_| {
            Ok(AvgPoolBackward {
                name,
                win: win.clone(),
                in_shape: in_shape.clone(),
                adjoint: true,
            }
            .into())
        },
    )
}

/// The backward of window averaging (its adjoint) and of the adjoint (averaging again).
#[derive(Clone)]
pub struct AvgPoolBackward {
    name: &'static str,
    win: Arc<Pooling>,
    in_shape: Shape,
    /// The forward was the adjoint.
    adjoint: bool,
}

impl Backward for AvgPoolBackward {
    fn name(&self) -> String {
        if self.adjoint { "AvgPool2DBackwardBackward0" } else { self.name }.into()
    }
    fn apply(&self, _: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let g = &grads[0];
        Ok(vec![Some(if self.adjoint {
            avg(g, &self.win, self.name)?
        } else {
            avg_adjoint(g, &self.win, &self.in_shape, self.name)?
        })])
    }
}

/// max_pool / adaptive_max_pool (`dims` 1 or 2): values and int64 indices
/// (flat positions within each H·W plane, as PyTorch returns them).
pub fn max_pool(
    op: &'static str,
    dims: usize,
    x: &Tensor,
    kind: &Kind,
) -> Result<(Tensor, Tensor)> {
    let xb = prepare(op, x, dims)?;
    let (h, w) = (xb.shape()[xb.ndim() - 2], xb.shape()[xb.ndim() - 1]);
    let win = windows(op, h, w, kind, true, true)?;
    let shape = out_shape(&xb, &win);
    let planes = numel(&xb.shape()[..xb.ndim() - 2]);
    let idx = Tensor::empty_on(&shape, DType::I64, xb.device())?;
    // The values come from the kernel; the recorded backward is `take`'s at the argmax offsets.
    let vals = autograd::record(
        &[&xb],
        || {
            let c = contiguous(&to_dtype(&xb, compute(&xb))?)?;
            if c.is_gpu() {
                let vals = Tensor::empty_on(&shape, c.dtype(), c.device())?;
                Pooling::new(win.clone(), kind, true, None).gpu(
                    Entry::MaxPool,
                    planes,
                    &c,
                    &vals,
                    Some(&idx),
                    vals.numel(),
                )?;
                return to_dtype(&vals, xb.dtype());
            }
            let vals = Tensor::for_output(&shape, c.dtype())?;
            crate::dispatch_float!(c.dtype(), T => {
                let (px, pv, pi) = (P(c.ptr::<T>()?), P(vals.ptr::<T>()?), P(idx.ptr::<i64>()?));
                // SAFETY: c is contiguous (planes, H, W); vals and idx hold planes × OH × OW.
                match kind {
                    Kind::Sliding(o) => unsafe { kernel::max_sliding::<T>(planes, &win, o.kernel, o.stride, o.padding, o.dilation, px, pv, pi) },
                    Kind::Adaptive(_) => unsafe { kernel::max::<T>(planes, &win, px, pv, pi) },
                }
            });
            to_dtype(&vals, xb.dtype())
        },
        |_| {
            let per = win.rows.len() * win.cols.len();
            if idx.is_gpu() {
                // Offsets = plane start + argmax, added on the GPU: one start per
                // plane goes up (broadcast over the plane's outputs), nothing comes down.
                use super::elementwise::{binary, Binary};
                let starts: Vec<i64> = (0..planes).map(|p| (p * h * w) as i64).collect();
                let starts =
                    super::copy::transfer(&Tensor::from_vec(starts, &[planes, 1])?, idx.device())?;
                let flat = reshape(&idx, &[planes as i64, per as i64])?;
                let offs = binary(
                    Binary::Add,
                    &super::Operand::T(starts),
                    &super::Operand::T(flat),
                    None,
                )?;
                let offs = reshape(&offs, &shape.iter().map(|&d| d as i64).collect::<Vec<_>>())?;
                return Ok(TakeBackward::new(
                    name(op),
                    &xb,
                    Region::Gpu { shape: shape.clone(), offs },
                )
                .into());
            }
            let mut offs: Vec<isize> = Vec::with_capacity(planes * per);
            for (p, plane) in idx.to_vec::<i64>()?.chunks(per.max(1)).enumerate() {
                let base = (p * h * w) as isize;
                offs.extend(plane.iter().map(|&k| base + k as isize));
            }
            Ok(TakeBackward::new(
                name(op),
                &xb,
                Region::Offsets { shape: shape.clone(), offs: Arc::new(Runs::elements(offs)) },
            )
            .into())
        },
    )?;
    Ok((finish(vals, dims)?, finish(idx, dims)?))
}

/// `output_size` of an adaptive pool: None entries keep the input's size.
pub fn adaptive_size(
    op: &str,
    x: &Tensor,
    dims: usize,
    size: &[Option<i64>],
) -> Result<[usize; 2]> {
    if size.len() != dims && size.len() != 1 {
        bail!(Runtime, "{}: output_size must be {} (got {:?})", op, dims, size);
    }
    let nd = x.ndim();
    let get = |i: usize| -> Result<usize> {
        let v = if size.len() == 1 { size[0] } else { size[i] };
        match v {
            None => Ok(x.shape()[nd - dims + i]),
            Some(s) if s < 0 => bail!(
                Runtime,
                "{}: elements of output_size must be greater than or equal to 0 but received {:?}",
                op,
                size
            ),
            Some(s) => Ok(s as usize),
        }
    };
    if nd < dims {
        bail!(
            Runtime,
            "{}: expected {}D or {}D input, got {}",
            op,
            dims + 1,
            dims + 2,
            fmt_shape(x.shape())
        );
    }
    Ok(if dims == 1 { [1, get(0)?] } else { [get(0)?, get(1)?] })
}
