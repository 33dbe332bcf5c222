//! Convolutions as GEMM: conv1d/2d, conv_transpose1d/2d, unfold, fold.
//!
//! Two recorded linear ops, `im2col` and its adjoint `col2im`, move the data;
//! the products are the recorded batched matmul. Every backward (and every
//! higher derivative) is therefore these same ops again: the input gradient
//! of a convolution is a GEMM + col2im, the weight gradient one GEMM with the
//! columns. Columns are (C·kh·kw, N·OH·OW) so a batch is one GEMM per group.

use super::copy::{contiguous, to_dtype};
use super::elementwise::{binary, Binary};
use super::linalg::matmul;
use super::shape::{cat, narrow, permute, reshape, squeeze_dim, unsqueeze};
use super::Operand;
use crate::autograd::{self, Backward, Node};
pub use crate::backend::cpu::conv::Geom;
use crate::backend::cpu::{conv as kernel, P};
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::fmt_shape;
use crate::tensor::Tensor;
use std::sync::Arc;

/// (C·kh·kw, N·OH·OW) columns of a (N, C, H, W) tensor.
pub fn im2col(x: &Tensor, g: &Geom) -> Result<Tensor> {
    autograd::record(
        &[x],
        || {
            let x = contiguous(x)?;
            if x.is_gpu() {
                let out = Tensor::empty_on(&[g.rows(), g.cols()], x.dtype(), x.device())?;
                crate::backend::gpu::conv::im2col(g, &x, &out)?;
                return Ok(out);
            }
            let out = Tensor::for_output(&[g.rows(), g.cols()], x.dtype())?;
            crate::dispatch_all!(x.dtype(), T => {
                // SAFETY: x is contiguous (N, C, H, W) per `g`; out has rows × cols elements.
                unsafe { kernel::im2col::<T>(g, P(x.ptr::<T>()?), P(out.ptr::<T>()?)) };
            });
            Ok(out)
        },
        |_| Ok(ColsBackward { geom: g.clone(), adjoint: false }.into()),
    )
}

/// The (N, C, H, W) tensor whose im2col adjoint gives `col`: overlapping
/// window entries add up.
pub fn col2im(col: &Tensor, g: &Geom) -> Result<Tensor> {
    autograd::record(
        &[col],
        || {
            let dtype = col.dtype();
            // Half types accumulate in float32 (in the float16 kernel on the GPU).
            let compute = dtype.float_kernel(col.is_gpu());
            let c = contiguous(&to_dtype(col, compute)?)?;
            if c.is_gpu() {
                let out = Tensor::empty_on(&[g.n, g.c, g.h, g.w], compute, c.device())?;
                crate::backend::gpu::conv::col2im(g, &c, &out)?;
                return to_dtype(&out, dtype);
            }
            let out = Tensor::zeros(&[g.n, g.c, g.h, g.w], compute)?;
            crate::dispatch_float!(compute, T => {
                // SAFETY: c has rows × cols elements; out is a zeroed (N, C, H, W) tensor.
                unsafe { kernel::col2im::<T>(g, P(c.ptr::<T>()?), P(out.ptr::<T>()?)) };
            });
            to_dtype(&out, dtype)
        },
        |_| Ok(ColsBackward { geom: g.clone(), adjoint: true }.into()),
    )
}

/// The backward of im2col (col2im) and of col2im (im2col): each is the other's adjoint.
#[derive(Clone)]
pub struct ColsBackward {
    geom: Geom,
    /// The forward was col2im.
    adjoint: bool,
}

impl Backward for ColsBackward {
    fn name(&self) -> String {
        if self.adjoint { "Col2ImBackward0" } else { "Im2ColBackward0" }.into()
    }
    fn saves_tensors(&self) -> bool {
        false
    }
    fn apply(&self, _: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let g = &grads[0];
        Ok(vec![Some(if self.adjoint { im2col(g, &self.geom)? } else { col2im(g, &self.geom)? })])
    }
}

/// Padding of a convolution: explicit amounts per spatial dim, or 'same' / 'valid'.
#[derive(Clone, Debug)]
pub enum Padding {
    Explicit(Vec<usize>),
    Same,
    Valid,
}

/// Options shared by the convolution family; `dims` spatial dims (1 or 2).
#[derive(Clone, Debug)]
pub struct ConvOpts {
    pub stride: Vec<usize>,
    pub padding: Padding,
    pub dilation: Vec<usize>,
    pub groups: usize,
    pub output_padding: Vec<usize>,
}

fn check_positive(op: &str, what: &str, v: &[usize]) -> Result<()> {
    if v.contains(&0) {
        bail!(Runtime, "{}: non-positive {} is not supported (got {:?})", op, what, v);
    }
    Ok(())
}

/// Input as (N, C, 1|H, W) plus whether a batch dim was added; `dims` is 1 or 2.
fn batched_2d(op: &str, x: &Tensor, dims: usize) -> Result<(Tensor, bool)> {
    let nd = x.ndim();
    if nd != dims + 1 && nd != dims + 2 {
        bail!(
            Runtime,
            "{}: Expected {}D (unbatched) or {}D (batched) input to {}, but got input of size: {}",
            op,
            dims + 1,
            dims + 2,
            op,
            fmt_shape(x.shape())
        );
    }
    let unbatched = nd == dims + 1;
    let mut t = if unbatched { unsqueeze(x, 0)? } else { x.clone() };
    if dims == 1 {
        t = unsqueeze(&t, 2)?;
    }
    Ok((t, unbatched))
}

/// Back from (N, C, 1|H, W) to the caller's rank.
fn unbatch(y: Tensor, unbatched: bool, dims: usize) -> Result<Tensor> {
    let y = if dims == 1 { squeeze_dim(&y, 2)? } else { y };
    if unbatched {
        squeeze_dim(&y, 0)
    } else {
        Ok(y)
    }
}

fn check_dtypes(op: &str, x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<()> {
    if !x.dtype().is_float() {
        bail!(Runtime, "{}: expected a floating point input, got {}", op, x.dtype().name());
    }
    if w.dtype() != x.dtype() {
        bail!(
            Runtime,
            "{}: Input type ({}) and weight type ({}) should be the same",
            op,
            x.dtype().name(),
            w.dtype().name()
        );
    }
    if let Some(b) = b {
        if b.dtype() != x.dtype() {
            bail!(
                Runtime,
                "{}: Input type ({}) and bias type ({}) should be the same",
                op,
                x.dtype().name(),
                b.dtype().name()
            );
        }
    }
    Ok(())
}

fn check_bias(op: &str, b: Option<&Tensor>, channels: usize) -> Result<()> {
    if let Some(b) = b {
        if b.ndim() != 1 || b.shape()[0] != channels {
            bail!(Runtime, "{}: expected bias to be 1-dimensional with {} elements, but got bias of size {} instead", op, channels, fmt_shape(b.shape()));
        }
    }
    Ok(())
}

/// y (N, O, OH, OW) viewed from a permuted product, plus bias, made contiguous.
fn finish(y: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    match bias {
        // The add writes a contiguous result: the permute is materialized in the same pass.
        Some(b) => {
            let b = reshape(b, &[1, -1, 1, 1])?;
            binary(Binary::Add, &Operand::T(y.clone()), &Operand::T(b), None)
        }
        None => contiguous(y),
    }
}

/// The checks shared by convolutions and transposed convolutions.
fn check_args(
    op: &str,
    dims: usize,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    o: &ConvOpts,
) -> Result<()> {
    check_dtypes(op, x, w, bias)?;
    check_positive(op, "stride", &o.stride)?;
    check_positive(op, "dilation", &o.dilation)?;
    if o.groups == 0 {
        bail!(Runtime, "{}: non-positive groups is not supported", op);
    }
    if w.ndim() != dims + 2 {
        bail!(Runtime, "{}: Expected {}-dimensional weight for {}-dimensional input, but got {}-dimensional weight of size {}", op, dims + 2, dims + 2, w.ndim(), fmt_shape(w.shape()));
    }
    Ok(())
}

/// Output size along one axis of a convolution.
fn conv_out(size: usize, k: usize, s: usize, pad_total: usize, d: usize) -> Option<usize> {
    let span = d * (k - 1) + 1;
    (size + pad_total).checked_sub(span).map(|v| v / s + 1)
}

/// conv1d / conv2d (`dims` = 1 or 2) with PyTorch's arguments and checks.
pub fn conv(
    dims: usize,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    o: &ConvOpts,
) -> Result<Tensor> {
    let op = if dims == 1 { "conv1d" } else { "conv2d" };
    check_args(op, dims, x, w, bias, o)?;
    let (xb, unbatched) = batched_2d(op, x, dims)?;
    let wb = if dims == 1 { unsqueeze(w, 2)? } else { w.clone() };
    let (n, c, h, wd) = (xb.shape()[0], xb.shape()[1], xb.shape()[2], xb.shape()[3]);
    let (oc, cg, kh, kw) = (wb.shape()[0], wb.shape()[1], wb.shape()[2], wb.shape()[3]);
    let g = o.groups;
    if oc % g != 0 {
        bail!(Runtime, "{}: Given groups={}, expected weight to be divisible by {} at dimension 0, but got weight of size {} instead", op, g, g, fmt_shape(w.shape()));
    }
    if cg * g != c {
        bail!(
            Runtime,
            "{}: Given groups={}, weight of size {}, expected input{} to have {} channels, but got {} channels instead",
            op,
            g,
            fmt_shape(w.shape()),
            fmt_shape(x.shape()),
            cg * g,
            c
        );
    }
    check_bias(op, bias, oc)?;
    let (s, d) = (expand2(dims, &o.stride, 1), expand2(dims, &o.dilation, 1));
    // Padding before the first element and in total, per axis.
    let (before, total) = match &o.padding {
        Padding::Explicit(p) => {
            let p = expand2(dims, p, 0);
            ([p[0], p[1]], [2 * p[0], 2 * p[1]])
        }
        Padding::Valid => ([0, 0], [0, 0]),
        Padding::Same => {
            if s != [1, 1] {
                bail!(Runtime, "{}: padding='same' is not supported for strided convolutions", op);
            }
            let t = [d[0] * (kh - 1), d[1] * (kw - 1)];
            ([t[0] / 2, t[1] / 2], t)
        }
    };
    let (oh, ow) = match (conv_out(h, kh, s[0], total[0], d[0]), conv_out(wd, kw, s[1], total[1], d[1])) {
        (Some(a), Some(b)) => (a, b),
        _ => bail!(
            Runtime,
            "{}: Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than actual input size",
            op,
            spatial(dims, h + total[0], wd + total[1]),
            spatial(dims, d[0] * (kh - 1) + 1, d[1] * (kw - 1) + 1)
        ),
    };
    let geom = Geom {
        n,
        c,
        h,
        w: wd,
        kh,
        kw,
        sh: s[0],
        sw: s[1],
        ph: before[0],
        pw: before[1],
        dh: d[0],
        dw: d[1],
        oh,
        ow,
    };
    // The columns of a large GPU batch may exceed one binding: convolve
    // chunks of images, each within the limit, and concatenate.
    let per = gpu_images_per_chunk(&xb, &geom, c * h * wd)?;
    let y = if per < n {
        let parts = (0..n)
            .step_by(per)
            .map(|i| {
                let len = per.min(n - i);
                conv_gemm(
                    &narrow(&xb, 0, i as i64, len as i64)?,
                    &wb,
                    &Geom { n: len, ..geom },
                    g,
                    oc,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        cat(&parts, 0)?
    } else {
        conv_gemm(&xb, &wb, &geom, g, oc)?
    };
    unbatch(finish(&y, bias)?, unbatched, dims)
}

/// (N, OC, OH, OW) = the convolution of a (N, C, H, W) batch as im2col + GEMM.
fn conv_gemm(xb: &Tensor, wb: &Tensor, geom: &Geom, g: usize, oc: usize) -> Result<Tensor> {
    let kg = geom.rows() / g;
    let col = reshape(&im2col(xb, geom)?, &[g as i64, kg as i64, geom.cols() as i64])?;
    let wm = reshape(wb, &[g as i64, (oc / g) as i64, kg as i64])?;
    let y = matmul(&wm, &col)?; // (G, O/G, N·OH·OW)
    permute(
        &reshape(&y, &[oc as i64, geom.n as i64, geom.oh as i64, geom.ow as i64])?,
        &[1, 0, 2, 3],
    )
}

/// Images per im2col on the GPU so that a chunk's input and columns each fit
/// one binding (all of them on the CPU, or when they fit anyway).
fn gpu_images_per_chunk(xb: &Tensor, geom: &Geom, image: usize) -> Result<usize> {
    if !xb.is_gpu() {
        return Ok(geom.n);
    }
    // Bytes per image of the input or of its columns, whichever is larger.
    let per_image = crate::backend::gpu::dtype::elem_bytes(xb.dtype())?
        * image.max(geom.rows() * geom.oh * geom.ow);
    crate::backend::gpu::exec::items_per_binding(geom.n, per_image)
}

/// conv_transpose1d / conv_transpose2d: the input gradient of a convolution as an op.
pub fn conv_transpose(
    dims: usize,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    o: &ConvOpts,
) -> Result<Tensor> {
    let op = if dims == 1 { "conv_transpose1d" } else { "conv_transpose2d" };
    check_args(op, dims, x, w, bias, o)?;
    let Padding::Explicit(p) = &o.padding else {
        bail!(Value, "{}: padding must be an int or a tuple of ints, not a string", op);
    };
    let (xb, unbatched) = batched_2d(op, x, dims)?;
    let wb = if dims == 1 { unsqueeze(w, 2)? } else { w.clone() };
    let (n, c, h, wd) = (xb.shape()[0], xb.shape()[1], xb.shape()[2], xb.shape()[3]);
    let (ic, og, kh, kw) = (wb.shape()[0], wb.shape()[1], wb.shape()[2], wb.shape()[3]);
    let g = o.groups;
    if ic % g != 0 {
        bail!(Runtime, "{}: Given groups={}, expected weight to be divisible by {} at dimension 0, but got weight of size {} instead", op, g, g, fmt_shape(w.shape()));
    }
    if ic != c {
        bail!(
            Runtime,
            "{}: Given transposed=1, weight of size {}, expected input{} to have {} channels, but got {} channels instead",
            op,
            fmt_shape(w.shape()),
            fmt_shape(x.shape()),
            ic,
            c
        );
    }
    let oc = og * g;
    check_bias(op, bias, oc)?;
    let (s, d, p, op_) = (
        expand2(dims, &o.stride, 1),
        expand2(dims, &o.dilation, 1),
        expand2(dims, p, 0),
        expand2(dims, &o.output_padding, 0),
    );
    for a in 0..2 {
        if op_[a] >= s[a] && op_[a] >= d[a] {
            bail!(Runtime, "{}: output padding must be smaller than either stride or dilation, but got output_padding={:?}, stride={:?}, dilation={:?}", op, o.output_padding, o.stride, o.dilation);
        }
    }
    let out_size = |i: usize, k: usize, a: usize| {
        ((i - 1) * s[a] + d[a] * (k - 1) + op_[a] + 1).checked_sub(2 * p[a]).filter(|&v| v > 0)
    };
    let (Some(oh), Some(ow)) = (out_size(h, kh, 0), out_size(wd, kw, 1)) else {
        bail!(
            Runtime,
            "{}: the output size would be non-positive for input {} and weight {}",
            op,
            fmt_shape(x.shape()),
            fmt_shape(w.shape())
        );
    };
    // The forward convolution that maps (oh, ow) back to (h, w).
    let geom = Geom {
        n,
        c: oc,
        h: oh,
        w: ow,
        kh,
        kw,
        sh: s[0],
        sw: s[1],
        ph: p[0],
        pw: p[1],
        dh: d[0],
        dw: d[1],
        oh: h,
        ow: wd,
    };
    let cg = c / g;
    let xg = reshape(
        &permute(&reshape(&xb, &[n as i64, g as i64, cg as i64, (h * wd) as i64])?, &[1, 2, 0, 3])?,
        &[g as i64, cg as i64, (n * h * wd) as i64],
    )?;
    let wt = permute(&reshape(&wb, &[g as i64, cg as i64, (og * kh * kw) as i64])?, &[0, 2, 1])?;
    let col = reshape(&matmul(&wt, &xg)?, &[(oc * kh * kw) as i64, (n * h * wd) as i64])?;
    let y = col2im(&col, &geom)?;
    let y = match bias {
        Some(b) => {
            binary(Binary::Add, &Operand::T(y), &Operand::T(reshape(b, &[1, -1, 1, 1])?), None)?
        }
        None => y,
    };
    unbatch(y, unbatched, dims)
}

/// Sliding-window geometry of unfold/fold for a 4-D input of `c` channels.
fn window(
    op: &str,
    n: usize,
    c: usize,
    hw: [usize; 2],
    k: &[usize],
    d: &[usize],
    p: &[usize],
    s: &[usize],
) -> Result<Geom> {
    check_positive(op, "kernel_size", k)?;
    check_positive(op, "stride", s)?;
    check_positive(op, "dilation", d)?;
    let (k, d, p, s) = (expand2(2, k, 1), expand2(2, d, 1), expand2(2, p, 0), expand2(2, s, 1));
    let oh = conv_out(hw[0], k[0], s[0], 2 * p[0], d[0]);
    let ow = conv_out(hw[1], k[1], s[1], 2 * p[1], d[1]);
    let (Some(oh), Some(ow)) = (oh, ow) else {
        bail!(
            Runtime,
            "{}: Given input with spatial size ({}, {}), kernel_size={:?}, dilation={:?}, padding={:?}, calculated shape of the array of sliding blocks is non-positive",
            op,
            hw[0],
            hw[1],
            k,
            d,
            p
        );
    };
    Ok(Geom {
        n,
        c,
        h: hw[0],
        w: hw[1],
        kh: k[0],
        kw: k[1],
        sh: s[0],
        sw: s[1],
        ph: p[0],
        pw: p[1],
        dh: d[0],
        dw: d[1],
        oh,
        ow,
    })
}

/// F.unfold: (N, C, H, W) -> (N, C·kh·kw, L).
pub fn unfold(x: &Tensor, k: &[usize], d: &[usize], p: &[usize], s: &[usize]) -> Result<Tensor> {
    if x.ndim() != 3 && x.ndim() != 4 {
        bail!(
            Runtime,
            "unfold: Input Error: Only 3D or 4D input Tensors are supported (got {}D)",
            x.ndim()
        );
    }
    let unbatched = x.ndim() == 3;
    let xb = if unbatched { unsqueeze(x, 0)? } else { x.clone() };
    let sh = xb.shape();
    let g = window("unfold", sh[0], sh[1], [sh[2], sh[3]], k, d, p, s)?;
    let col = reshape(&im2col(&xb, &g)?, &[g.rows() as i64, g.n as i64, (g.oh * g.ow) as i64])?;
    let y = contiguous(&permute(&col, &[1, 0, 2])?)?;
    if unbatched {
        squeeze_dim(&y, 0)
    } else {
        Ok(y)
    }
}

/// F.fold: (N, C·kh·kw, L) -> (N, C, H, W), overlapping blocks summed.
pub fn fold(
    x: &Tensor,
    out: &[usize],
    k: &[usize],
    d: &[usize],
    p: &[usize],
    s: &[usize],
) -> Result<Tensor> {
    if x.ndim() != 2 && x.ndim() != 3 {
        bail!(Runtime, "fold: Expected 2D or 3D (batch mode) input tensor with possibly 0 batch size and non-zero dimensions for input, but got: {}", fmt_shape(x.shape()));
    }
    let unbatched = x.ndim() == 2;
    let xb = if unbatched { unsqueeze(x, 0)? } else { x.clone() };
    let (n, ck, l) = (xb.shape()[0], xb.shape()[1], xb.shape()[2]);
    let ks = expand2(2, k, 1);
    let kk = ks[0] * ks[1];
    if kk == 0 || ck % kk != 0 {
        bail!(Runtime, "fold: Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)={} and kernel_size={:?}", ck, k);
    }
    let os = expand2(2, out, 1);
    let g = window("fold", n, ck / kk, [os[0], os[1]], k, d, p, s)?;
    if g.oh * g.ow != l {
        bail!(
            Runtime,
            "fold: Given output_size={:?}, kernel_size={:?}, dilation={:?}, padding={:?}, stride={:?}, expected size of input's dimension 2 to match the calculated number of sliding blocks {} * {} = {}, but got input.size(2)={}.",
            out,
            k,
            d,
            p,
            s,
            g.oh,
            g.ow,
            g.oh * g.ow,
            l
        );
    }
    let col = reshape(&permute(&xb, &[1, 0, 2])?, &[ck as i64, (n * l) as i64])?;
    let y = col2im(&col, &g)?;
    if unbatched {
        squeeze_dim(&y, 0)
    } else {
        Ok(y)
    }
}

/// An int-or-tuple argument for `dims` spatial dims as (H, W); a 1-D op's H is `fill`.
fn expand2(dims: usize, v: &[usize], fill: usize) -> [usize; 2] {
    match (dims, v.len()) {
        (1, _) => [fill, v[0]],
        (_, 1) => [v[0], v[0]],
        _ => [v[0], v[1]],
    }
}

fn spatial(dims: usize, h: usize, w: usize) -> String {
    if dims == 1 {
        format!("{}", w)
    } else {
        format!("{} x {}", h, w)
    }
}
