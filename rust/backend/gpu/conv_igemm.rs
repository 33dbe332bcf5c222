//! Launcher for shaders/conv_igemm.wgsl: the forward, input-gradient and
//! weight-gradient passes of a convolution as implicit GEMMs (no im2col
//! columns in memory). A pass with too few output tiles to fill the GPU (the
//! weight gradient: a small dW, a reduction over every output pixel) splits
//! its K across workgroups into f32 partials that a second dispatch sums.

use super::dtype::elem_bytes;
use super::exec::{self, Bind, Variant};
use super::shaders::CONV_IGEMM;
use crate::backend::cpu::conv::Geom;
use crate::bail;
use crate::error::Result;
use crate::tensor::{DType, Tensor};

/// The output tile side of a workgroup (shaders/conv_igemm.wgsl).
const TILE: usize = 64;

/// The K step of the shader's loop.
const TK: usize = 16;

/// The longest reduction one weight-gradient workgroup runs (output pixels):
/// long serial loops (K near 50k) came back unfinished on lavapipe.
const MAX_K: usize = 16_384;

/// Workgroups a dispatch aims for when its tiles alone are too few: about a
/// full wave of a large GPU (132 multiprocessors on an H100 / H200, a few of
/// these 256-thread workgroups each); more would only add partials to sum.
const TARGET_GROUPS: usize = 768;

/// The shortest K slice worth a workgroup of its own.
const MIN_SLICE: usize = 256;

/// Which product a dispatch computes (the shader's `mode`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Pass {
    /// y (N, OC, OD, OH, OW) from x and the weight (+ bias).
    Forward = 0,
    /// dx (N, C, D, H, W) from dy and the weight.
    InputGrad = 1,
    /// dW (OC, C/G, kd, kh, kw) from x and dy.
    WeightGrad = 2,
}

crate::wgsl_params! {
    /// The CPU's `Geom`, groups, output channels, pass, flags (1: bias, 2:
    /// accumulate into out), the bindings' element offsets, the K slices and
    /// their length, and the output's elements.
    pub struct Params in CONV_IGEMM {
        n: u32, c: u32, d: u32, h: u32,
        w: u32, kd: u32, kh: u32, kw: u32,
        sd: u32, sh: u32, sw: u32, pd: u32,
        ph: u32, pw: u32, dd: u32, dh: u32,
        dw: u32, od: u32, oh: u32, ow: u32,
        groups: u32, oc: u32, mode: u32, flags: u32,
        s0_off: u32, s1_off: u32, out_off: u32, bias_off: u32,
        splits: u32, kslice: u32, part_len: u32, pad0: u32,
    }
}

/// A window over all of `t` (a chunk of a larger batch binds only its own
/// elements) and t's element offset in it.
fn bind(t: &Tensor) -> Result<(Bind<'_>, u32)> {
    let lo = t.layout().offset;
    let (b, base) = Bind::window(
        t.storage().gpu_buffer()?,
        lo,
        lo + t.numel().max(1) - 1,
        elem_bytes(t.dtype())?,
    )?;
    Ok((b, (lo - base) as u32))
}

/// Columns of the group GEMM per image, for the grid's x limit.
fn cols_per_image(pass: Pass, g: &Geom) -> usize {
    match pass {
        Pass::Forward => g.od * g.oh * g.ow,
        Pass::InputGrad => g.d * g.h * g.w,
        Pass::WeightGrad => 0,
    }
}

/// The elements of the pass's output (one split-K partial).
fn out_len(pass: Pass, g: &Geom, groups: usize, oc: usize) -> usize {
    match pass {
        Pass::Forward => g.n * oc * g.od * g.oh * g.ow,
        Pass::InputGrad => g.n * g.c * g.d * g.h * g.w,
        Pass::WeightGrad => oc * (g.c / groups) * g.kd * g.kh * g.kw,
    }
}

/// The f32 scratch split-K may use for g.n images: at most the input's bytes,
/// so a convolution's memory stays a small multiple of its input.
fn scratch_cap(g: &Geom, elem: usize) -> usize {
    g.n * g.c * g.d * g.h * g.w * elem / 4
}

/// Images per dispatch so that every operand's window fits one binding and
/// the grid's x stays within 65,535 workgroups.
pub fn images_per_dispatch(
    pass: Pass,
    g: &Geom,
    groups: usize,
    oc: usize,
    elem: usize,
) -> Result<usize> {
    let per_image = elem * (g.c * g.d * g.h * g.w).max(oc * g.od * g.oh * g.ow);
    let by_grid = match pass {
        // The weight gradient's K runs over every output pixel of the chunk
        // and split-K bounds each slice by MAX_K; when the scratch cap would
        // allow too few slices (or the grid's z too few), chunks keep K
        // short and accumulate.
        Pass::WeightGrad => {
            let (l, one) = ((g.od * g.oh * g.ow).max(1), Geom { n: 1, ..g.clone() });
            let dw = out_len(pass, g, groups, oc).max(1);
            let by_z = ((65_535 / groups.max(1)) * MAX_K / l).max(1);
            if l * dw <= MAX_K * scratch_cap(&one, elem) {
                by_z
            } else {
                (MAX_K / l).max(1)
            }
        }
        _ => (65_535 * TILE / cols_per_image(pass, g).max(1)).max(1),
    };
    Ok(exec::items_per_binding(g.n, per_image)?.min(by_grid))
}

/// The K slices (split-K) of a dispatch of `tiles` workgroups per slice over a
/// reduction of `k`: enough workgroups to fill a large GPU while each slice
/// keeps MIN_SLICE k, the partials (`len` f32 each) stay within the scratch
/// cap and the binding limit, and (weight gradient) no slice exceeds MAX_K.
fn splits(
    pass: Pass,
    tiles: usize,
    groups: usize,
    k: usize,
    len: usize,
    cap: usize,
) -> Result<usize> {
    let most = (k.div_ceil(MIN_SLICE)).min(cap / len.max(1)).min(65_535 / groups.max(1)).max(1);
    let most = exec::items_per_binding(most, len * 4)?;
    let least = if pass == Pass::WeightGrad { k.div_ceil(MAX_K) } else { 1 };
    Ok((TARGET_GROUPS / tiles.max(1)).clamp(1, most).max(least))
}

/// `out` = the pass over g.n images: s0 is the weight (Forward, InputGrad) or
/// dy (WeightGrad), s1 is x (Forward, WeightGrad) or dy (InputGrad); all
/// contiguous with the layouts of shaders/conv_igemm.wgsl. `accumulate` adds
/// into `out` (WeightGrad over batch chunks).
#[allow(clippy::too_many_arguments)]
pub fn run(
    pass: Pass,
    g: &Geom,
    groups: usize,
    oc: usize,
    s0: &Tensor,
    s1: &Tensor,
    bias: Option<&Tensor>,
    out: &Tensor,
    accumulate: bool,
) -> Result<()> {
    let (cg, og, kk) = (g.c / groups, oc / groups, g.kd * g.kh * g.kw);
    let (m, cols, k) = match pass {
        Pass::Forward => (og, g.n * g.od * g.oh * g.ow, cg * kk),
        Pass::InputGrad => (cg, g.n * g.d * g.h * g.w, og * kk),
        Pass::WeightGrad => (og, cg * kk, g.n * g.od * g.oh * g.ow),
    };
    if groups > 65_535 {
        bail!(NotImplemented, "conv on the GPU: {} groups exceed 65535", groups);
    }
    if m == 0 || cols == 0 {
        return Ok(());
    }
    let ((b0, s0_off), (b1, s1_off), (bo, out_off)) = (bind(s0)?, bind(s1)?, bind(out)?);
    let (bb, bias_off) = match bias {
        Some(b) => bind(b)?,
        None => (Bind::whole(exec::dummy()?), 0),
    };
    let tiles = cols.div_ceil(TILE) * m.div_ceil(TILE) * groups;
    let cap = scratch_cap(g, elem_bytes(s1.dtype())?);
    let len = out_len(pass, g, groups, oc);
    let want = splits(pass, tiles, groups, k, len, cap)?;
    let kslice = k.div_ceil(want).next_multiple_of(TK).max(TK);
    let split = k.div_ceil(kslice);
    let u = |v: usize| v as u32;
    let p = Params {
        n: u(g.n),
        c: u(g.c),
        d: u(g.d),
        h: u(g.h),
        w: u(g.w),
        kd: u(g.kd),
        kh: u(g.kh),
        kw: u(g.kw),
        sd: u(g.sd),
        sh: u(g.sh),
        sw: u(g.sw),
        pd: u(g.pd),
        ph: u(g.ph),
        pw: u(g.pw),
        dd: u(g.dd),
        dh: u(g.dh),
        dw: u(g.dw),
        od: u(g.od),
        oh: u(g.oh),
        ow: u(g.ow),
        groups: u(groups),
        oc: u(oc),
        mode: pass as u32,
        flags: u32::from(bias.is_some()) | (u32::from(accumulate) << 1),
        s0_off,
        s1_off,
        out_off,
        bias_off,
        splits: u(split),
        kslice: u(if split > 1 { kslice } else { k }),
        part_len: u(len),
        pad0: 0,
    };
    let variant = Variant::of(out.dtype());
    let grid = [cols.div_ceil(TILE) as u32, m.div_ceil(TILE) as u32, u(groups * split)];
    if split == 1 {
        // Unread without splits: out stands in (the dummy may be bias).
        let binds = [b0, b1, bo, bb, bo];
        return exec::dispatch_binds("conv_igemm", variant, &binds, &p, grid);
    }
    // Each slice's partial product, then their sum into out.
    let part = Tensor::empty_on(&[split * len], DType::F32, out.device())?;
    let binds = [b0, b1, bo, bb, Bind::whole(part.storage().gpu_buffer()?)];
    exec::dispatch_binds("conv_igemm", variant, &binds, &p, grid)?;
    let wgs = len.div_ceil(256);
    let x = wgs.min(65_535);
    exec::dispatch_binds("conv_igemm_reduce", variant, &binds, &p, [u(x), u(wgs.div_ceil(x)), 1])
}
