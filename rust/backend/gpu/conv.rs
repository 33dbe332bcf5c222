//! Launcher for shaders/conv.wgsl: im2col and its adjoint col2im.

use super::dtype::elem_bytes;
use super::exec::{self, Bind, Variant};
use super::shaders::CONV;
use crate::backend::cpu::conv::Geom;
use crate::error::Result;
use crate::tensor::Tensor;

/// A window over all of `t` (a view of a larger buffer, such as one batch
/// chunk of a big input, binds only its own elements) and t's offset in it.
fn bind(t: &Tensor) -> Result<(Bind<'_>, usize)> {
    let lo = t.layout().offset;
    let (b, base) = Bind::window(
        t.storage().gpu_buffer()?,
        lo,
        lo + t.numel().max(1) - 1,
        elem_bytes(t.dtype())?,
    )?;
    Ok((b, lo - base))
}

crate::wgsl_params! {
    /// The CPU's `Geom`, then where the image and the columns start.
    pub struct Params in CONV {
        n: u32, c: u32, d: u32, h: u32,
        w: u32, kd: u32, kh: u32, kw: u32,
        sd: u32, sh: u32, sw: u32, pd: u32,
        ph: u32, pw: u32, dd: u32, dh: u32,
        dw: u32, od: u32, oh: u32, ow: u32,
        x_off: u32, col_off: u32,
    }
}

fn params(g: &Geom, x_off: usize, col_off: usize) -> Params {
    let u = |v: usize| v as u32;
    Params {
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
        x_off: u(x_off),
        col_off: u(col_off),
    }
}

/// col (rows × cols) from x (N, C, D, H, W), both contiguous.
pub fn im2col(g: &Geom, x: &Tensor, col: &Tensor) -> Result<()> {
    if col.numel() == 0 {
        return Ok(());
    }
    // Floats move as T (float16 in its own variant), other dtypes as 4-byte words.
    let entry = if x.dtype().is_float() { "im2col" } else { "im2col_u32" };
    // x counts tiles of 256 columns (spilling into z), y steps 8 column rows.
    let tiles = g.cols().div_ceil(256);
    let x_groups = tiles.min(65_535);
    let groups = [x_groups as u32, g.rows().div_ceil(8) as u32, tiles.div_ceil(x_groups) as u32];
    let ((xb, x_off), (cb, col_off)) = (bind(x)?, bind(col)?);
    exec::dispatch_binds(
        entry,
        Variant::of(x.dtype()),
        &[xb, cb],
        &params(g, x_off, col_off),
        groups,
    )
}

/// x (N, C, D, H, W) = the adjoint of im2col applied to col (float32 or float16).
pub fn col2im(g: &Geom, col: &Tensor, x: &Tensor) -> Result<()> {
    if x.numel() == 0 {
        return Ok(());
    }
    let ((cb, col_off), (xb, x_off)) = (bind(col)?, bind(x)?);
    exec::dispatch_binds(
        "col2im",
        Variant::of(x.dtype()),
        &[cb, xb],
        &params(g, x_off, col_off),
        exec::grid_1d(x.numel()),
    )
}
