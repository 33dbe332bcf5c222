//! Convolutions as GEMM: conv1d/2d/3d, conv_transpose1d/2d/3d, unfold, fold.
//!
//! Two recorded linear ops, `im2col` and its adjoint `col2im`, move the data;
//! the products are the recorded batched matmul. Every backward (and every
//! higher derivative) is therefore these same ops again: the input gradient
//! of a convolution is a GEMM + col2im, the weight gradient one GEMM with the
//! columns. Columns are (C·kd·kh·kw, N·OD·OH·OW) so a batch is one GEMM per
//! group. Every convolution runs in 3 spatial dims: 1-D and 2-D inputs gain
//! size-1 leading spatial dims (views, no copies).

use super::copy::{contiguous, to_dtype};
use super::elementwise::{binary, Binary};
use super::linalg::matmul;
use super::shape::{cat, narrow, permute, reshape, squeeze_dim, unsqueeze};
use super::{conv_igemm, Operand};
use crate::autograd::{self, Backward, Node};
pub use crate::backend::cpu::conv::Geom;
use crate::backend::cpu::{conv as kernel, P};
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::fmt_shape;
use crate::tensor::Tensor;
use std::sync::Arc;

/// (C·kd·kh·kw, N·OD·OH·OW) columns of a (N, C, D, H, W) tensor.
pub fn im2col(x: &Tensor, g: &Geom) -> Result<Tensor> {
    autograd::record(
        &[x],
        || {
            let dtype = x.dtype();
            let x = contiguous(x)?;
            if x.is_gpu() {
                // bfloat16 (packed, no im2col kernel) is gathered as float32: exact.
                let kd = x.dtype().float_kernel(true);
                let x = if x.dtype().is_float() { to_dtype(&x, kd)? } else { x };
                let out = Tensor::empty_on(&[g.rows(), g.cols()], x.dtype(), x.device())?;
                crate::backend::gpu::conv::im2col(g, &x, &out)?;
                return to_dtype(&out, dtype);
            }
            let out = Tensor::for_output(&[g.rows(), g.cols()], x.dtype())?;
            crate::dispatch_all!(x.dtype(), T => {
                // SAFETY: x is contiguous (N, C, D, H, W) per `g`; out has rows × cols elements.
                unsafe { kernel::im2col::<T>(g, P(x.ptr::<T>()?), P(out.ptr::<T>()?)) };
            });
            Ok(out)
        },
        |_| Ok(ColsBackward { geom: g.clone(), adjoint: false }.into()),
    )
}

/// The (N, C, D, H, W) tensor whose im2col adjoint gives `col`: overlapping
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
                let out = Tensor::empty_on(&g.image_shape(), compute, c.device())?;
                crate::backend::gpu::conv::col2im(g, &c, &out)?;
                return to_dtype(&out, dtype);
            }
            let out = Tensor::zeros(&g.image_shape(), compute)?;
            crate::dispatch_float!(compute, T => {
                // SAFETY: c has rows × cols elements; out is a zeroed (N, C, D, H, W) tensor.
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

/// Options shared by the convolution family; `dims` spatial dims (1, 2 or 3).
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

/// Input as (N, C, D, H, W) plus whether a batch dim was added; `dims` is 1, 2 or 3.
fn batched(op: &str, x: &Tensor, dims: usize) -> Result<(Tensor, bool)> {
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
    let t = if unbatched { unsqueeze(x, 0)? } else { x.clone() };
    Ok((lift(t, dims)?, unbatched))
}

/// A (N, C, *spatial) tensor with `dims` spatial dims as (N, C, D, H, W).
fn lift(mut t: Tensor, dims: usize) -> Result<Tensor> {
    for _ in dims..3 {
        t = unsqueeze(&t, 2)?;
    }
    Ok(t)
}

/// Back from (N, C, D, H, W) to the caller's rank.
fn unbatch(mut y: Tensor, unbatched: bool, dims: usize) -> Result<Tensor> {
    for _ in dims..3 {
        y = squeeze_dim(&y, 2)?;
    }
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

/// y (N, O, OD, OH, OW) viewed from a permuted product, plus bias, made contiguous.
fn finish(y: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    match bias {
        // The add writes a contiguous result: the permute is materialized in the same pass.
        Some(b) => {
            let b = reshape(b, &[1, -1, 1, 1, 1])?;
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

/// conv1d / conv2d / conv3d (`dims` = 1, 2 or 3) with PyTorch's arguments and checks.
pub fn conv(
    dims: usize,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    o: &ConvOpts,
) -> Result<Tensor> {
    let op = ["conv1d", "conv2d", "conv3d"][dims - 1];
    check_args(op, dims, x, w, bias, o)?;
    let (xb, unbatched) = batched(op, x, dims)?;
    let wb = lift(w.clone(), dims)?;
    let (n, c, size) = (xb.shape()[0], xb.shape()[1], spatial3(xb.shape()));
    let (oc, cg, k) = (wb.shape()[0], wb.shape()[1], spatial3(wb.shape()));
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
    let (s, d) = (expand3(dims, &o.stride, 1), expand3(dims, &o.dilation, 1));
    // Padding before the first element and in total, per axis.
    let (before, total) = match &o.padding {
        Padding::Explicit(p) => {
            let p = expand3(dims, p, 0);
            (p, p.map(|v| 2 * v))
        }
        Padding::Valid => ([0; 3], [0; 3]),
        Padding::Same => {
            if s != [1; 3] {
                bail!(Runtime, "{}: padding='same' is not supported for strided convolutions", op);
            }
            let t = [0, 1, 2].map(|a| d[a] * (k[a] - 1));
            (t.map(|v| v / 2), t)
        }
    };
    let out = [0, 1, 2].map(|a| conv_out(size[a], k[a], s[a], total[a], d[a]));
    let [Some(od), Some(oh), Some(ow)] = out else {
        bail!(
            Runtime,
            "{}: Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than actual input size",
            op,
            spatial(dims, [0, 1, 2].map(|a| size[a] + total[a])),
            spatial(dims, [0, 1, 2].map(|a| d[a] * (k[a] - 1) + 1))
        );
    };
    let geom = geometry(n, c, size, k, s, before, d, [od, oh, ow]);
    let cv = conv_igemm::Conv { geom: geom.clone(), groups: g, oc };
    if conv_igemm::applies(&xb) || conv_igemm::applies_cpu(&xb, &cv) {
        conv_igemm::check_devices(op, &xb, &[Some(&wb), bias])?;
        return unbatch(conv_igemm::forward(&xb, &wb, bias, &cv)?, unbatched, dims);
    }
    // The columns of a large GPU batch may exceed one binding: convolve
    // chunks of images, each within the limit, and concatenate.
    let per = gpu_images_per_chunk(&xb, &geom, c * size.iter().product::<usize>())?;
    let y = if per < n {
        let parts = (0..n)
            .step_by(per)
            .map(|i| {
                let len = per.min(n - i);
                conv_gemm(
                    &narrow(&xb, 0, i as i64, len as i64)?,
                    &wb,
                    &Geom { n: len, ..geom.clone() },
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

/// The last three dims of a 5-D shape.
fn spatial3(shape: &[usize]) -> [usize; 3] {
    [shape[2], shape[3], shape[4]]
}

/// The window geometry from per-axis (D, H, W) triples.
#[allow(clippy::too_many_arguments)]
fn geometry(
    n: usize,
    c: usize,
    size: [usize; 3],
    k: [usize; 3],
    s: [usize; 3],
    p: [usize; 3],
    d: [usize; 3],
    out: [usize; 3],
) -> Geom {
    Geom {
        n,
        c,
        d: size[0],
        h: size[1],
        w: size[2],
        kd: k[0],
        kh: k[1],
        kw: k[2],
        sd: s[0],
        sh: s[1],
        sw: s[2],
        pd: p[0],
        ph: p[1],
        pw: p[2],
        dd: d[0],
        dh: d[1],
        dw: d[2],
        od: out[0],
        oh: out[1],
        ow: out[2],
    }
}

/// (N, OC, OD, OH, OW) = the convolution of a (N, C, D, H, W) batch as im2col + GEMM.
fn conv_gemm(xb: &Tensor, wb: &Tensor, geom: &Geom, g: usize, oc: usize) -> Result<Tensor> {
    let kg = geom.rows() / g;
    let col = reshape(&im2col(xb, geom)?, &[g as i64, kg as i64, geom.cols() as i64])?;
    let wm = reshape(wb, &[g as i64, (oc / g) as i64, kg as i64])?;
    let y = matmul(&wm, &col)?; // (G, O/G, N·OD·OH·OW)
    let (n, od, oh, ow) = (geom.n as i64, geom.od as i64, geom.oh as i64, geom.ow as i64);
    permute(&reshape(&y, &[oc as i64, n, od, oh, ow])?, &[1, 0, 2, 3, 4])
}

/// Images per im2col on the GPU so that a chunk's input and columns each fit
/// one binding (all of them on the CPU, or when they fit anyway).
fn gpu_images_per_chunk(xb: &Tensor, geom: &Geom, image: usize) -> Result<usize> {
    if !xb.is_gpu() {
        return Ok(geom.n);
    }
    // Bytes per image of the input or of its columns, whichever is larger.
    let per_image = crate::backend::gpu::dtype::elem_bytes(xb.dtype())?
        * image.max(geom.rows() * geom.od * geom.oh * geom.ow);
    crate::backend::gpu::exec::items_per_binding(geom.n, per_image)
}

/// conv_transpose1d/2d/3d: the input gradient of a convolution as an op.
pub fn conv_transpose(
    dims: usize,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    o: &ConvOpts,
) -> Result<Tensor> {
    let op = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d"][dims - 1];
    check_args(op, dims, x, w, bias, o)?;
    let Padding::Explicit(p) = &o.padding else {
        bail!(Value, "{}: padding must be an int or a tuple of ints, not a string", op);
    };
    let (xb, unbatched) = batched(op, x, dims)?;
    let wb = lift(w.clone(), dims)?;
    let (n, c, size) = (xb.shape()[0], xb.shape()[1], spatial3(xb.shape()));
    let (ic, og, k) = (wb.shape()[0], wb.shape()[1], spatial3(wb.shape()));
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
        expand3(dims, &o.stride, 1),
        expand3(dims, &o.dilation, 1),
        expand3(dims, p, 0),
        expand3(dims, &o.output_padding, 0),
    );
    for a in 0..3 {
        if op_[a] >= s[a] && op_[a] >= d[a] {
            bail!(Runtime, "{}: output padding must be smaller than either stride or dilation, but got output_padding={:?}, stride={:?}, dilation={:?}", op, o.output_padding, o.stride, o.dilation);
        }
    }
    let out = [0, 1, 2].map(|a| {
        ((size[a] - 1) * s[a] + d[a] * (k[a] - 1) + op_[a] + 1)
            .checked_sub(2 * p[a])
            .filter(|&v| v > 0)
    });
    let [Some(od), Some(oh), Some(ow)] = out else {
        bail!(
            Runtime,
            "{}: the output size would be non-positive for input {} and weight {}",
            op,
            fmt_shape(x.shape()),
            fmt_shape(w.shape())
        );
    };
    // The forward convolution that maps (od, oh, ow) back to the input's size.
    let geom = geometry(n, oc, [od, oh, ow], k, s, p, d, size);
    let y = if conv_igemm::applies(&xb) {
        // The input gradient of the convolution this one transposes.
        conv_igemm::check_devices(op, &xb, &[Some(&wb), bias])?;
        conv_igemm::input_grad(&xb, &wb, &conv_igemm::Conv { geom, groups: g, oc: ic })?
    } else {
        transposed_gemm(&xb, &wb, &geom, g)?
    };
    let y = match bias {
        Some(b) => {
            binary(Binary::Add, &Operand::T(y), &Operand::T(reshape(b, &[1, -1, 1, 1, 1])?), None)?
        }
        None => y,
    };
    unbatch(y, unbatched, dims)
}

/// A transposed convolution as GEMM + col2im; `geom` is the forward convolution
/// it transposes.
fn transposed_gemm(xb: &Tensor, wb: &Tensor, geom: &Geom, g: usize) -> Result<Tensor> {
    let (n, c, size) = (xb.shape()[0], xb.shape()[1], spatial3(xb.shape()));
    let (og, k) = (wb.shape()[1], spatial3(wb.shape()));
    let oc = og * g;
    let (cg, l) = (c / g, size.iter().product::<usize>());
    let kk = k.iter().product::<usize>();
    let xg = reshape(
        &permute(&reshape(xb, &[n as i64, g as i64, cg as i64, l as i64])?, &[1, 2, 0, 3])?,
        &[g as i64, cg as i64, (n * l) as i64],
    )?;
    let wt = permute(&reshape(wb, &[g as i64, cg as i64, (og * kk) as i64])?, &[0, 2, 1])?;
    let col = reshape(&matmul(&wt, &xg)?, &[(oc * kk) as i64, (n * l) as i64])?;
    col2im(&col, geom)
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
    let (k, d, p, s) = (expand3(2, k, 1), expand3(2, d, 1), expand3(2, p, 0), expand3(2, s, 1));
    let oh = conv_out(hw[0], k[1], s[1], 2 * p[1], d[1]);
    let ow = conv_out(hw[1], k[2], s[2], 2 * p[2], d[2]);
    let (Some(oh), Some(ow)) = (oh, ow) else {
        bail!(
            Runtime,
            "{}: Given input with spatial size ({}, {}), kernel_size={:?}, dilation={:?}, padding={:?}, calculated shape of the array of sliding blocks is non-positive",
            op,
            hw[0],
            hw[1],
            &k[1..],
            &d[1..],
            &p[1..]
        );
    };
    Ok(geometry(n, c, [1, hw[0], hw[1]], k, s, p, d, [1, oh, ow]))
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
    let col = reshape(
        &im2col(&unsqueeze(&xb, 2)?, &g)?,
        &[g.rows() as i64, g.n as i64, (g.oh * g.ow) as i64],
    )?;
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
    let ks = expand3(2, k, 1);
    let kk = ks[1] * ks[2];
    if kk == 0 || ck % kk != 0 {
        bail!(Runtime, "fold: Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)={} and kernel_size={:?}", ck, k);
    }
    let os = expand3(2, out, 1);
    let g = window("fold", n, ck / kk, [os[1], os[2]], k, d, p, s)?;
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
    let y = squeeze_dim(&col2im(&col, &g)?, 2)?;
    if unbatched {
        squeeze_dim(&y, 0)
    } else {
        Ok(y)
    }
}

/// An int-or-tuple argument for `dims` spatial dims as (D, H, W); the
/// leading axes a lower-dimensional op lacks are `fill`.
fn expand3(dims: usize, v: &[usize], fill: usize) -> [usize; 3] {
    let mut out = [fill; 3];
    for a in 0..dims {
        out[3 - dims + a] = if v.len() == 1 { v[0] } else { v[a] };
    }
    out
}

/// A size as PyTorch prints it: the op's spatial dims joined by " x ".
fn spatial(dims: usize, v: [usize; 3]) -> String {
    v[3 - dims..].iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" x ")
}
