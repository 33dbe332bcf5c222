//! Launcher for shaders/conv_igemm.wgsl: the forward, input-gradient and
//! weight-gradient passes of a convolution as implicit GEMMs (no im2col
//! columns in memory).

use super::dtype::elem_bytes;
use super::exec::{self, Bind, Variant};
use super::shaders::CONV_IGEMM;
use crate::backend::cpu::conv::Geom;
use crate::bail;
use crate::error::Result;
use crate::tensor::Tensor;

/// The output tile side of a workgroup (shaders/conv_igemm.wgsl).
const TILE: usize = 64;

/// The longest reduction one weight-gradient dispatch runs (output pixels).
const MAX_K: usize = 16_384;

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
    /// accumulate into out) and the bindings' element offsets.
    pub struct Params in CONV_IGEMM {
        n: u32, c: u32, d: u32, h: u32,
        w: u32, kd: u32, kh: u32, kw: u32,
        sd: u32, sh: u32, sw: u32, pd: u32,
        ph: u32, pw: u32, dd: u32, dh: u32,
        dw: u32, od: u32, oh: u32, ow: u32,
        groups: u32, oc: u32, mode: u32, flags: u32,
        s0_off: u32, s1_off: u32, out_off: u32, bias_off: u32,
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

/// Images per dispatch so that every operand's window fits one binding and
/// the grid's x stays within 65,535 workgroups.
pub fn images_per_dispatch(pass: Pass, g: &Geom, oc: usize, elem: usize) -> Result<usize> {
    let per_image = elem * (g.c * g.d * g.h * g.w).max(oc * g.od * g.oh * g.ow);
    let by_grid = match pass {
        // The weight gradient's K runs over every output pixel of the chunk,
        // serially in each workgroup: long loops (K near 50k) came back unfinished
        // on lavapipe, so chunks keep K short and accumulate. A parallel split-K
        // would serve large GPUs better.
        Pass::WeightGrad => (MAX_K / (g.od * g.oh * g.ow).max(1)).max(1),
        _ => (65_535 * TILE / cols_per_image(pass, g).max(1)).max(1),
    };
    Ok(exec::items_per_binding(g.n, per_image)?.min(by_grid))
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
    let (m, cols) = match pass {
        Pass::Forward => (og, g.n * g.od * g.oh * g.ow),
        Pass::InputGrad => (cg, g.n * g.d * g.h * g.w),
        Pass::WeightGrad => (og, cg * kk),
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
    };
    let grid = [cols.div_ceil(TILE) as u32, m.div_ceil(TILE) as u32, groups as u32];
    exec::dispatch_binds("conv_igemm", Variant::of(out.dtype()), &[b0, b1, bo, bb], &p, grid)
}
