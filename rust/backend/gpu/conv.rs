//! Launcher for shaders/conv.wgsl: im2col and its adjoint col2im.

use super::exec::{self, Variant};
use super::shaders::CONV;
use crate::backend::cpu::conv::Geom;
use crate::error::Result;
use crate::tensor::Tensor;

fn params(g: &Geom, x_off: usize, col_off: usize) -> [u32; 16] {
    let v = [g.n, g.c, g.h, g.w, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.oh, g.ow, x_off, col_off];
    v.map(|x| x as u32)
}

/// col (rows × cols) from x (N, C, H, W), both contiguous.
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
    let p = params(g, x.layout().offset, col.layout().offset);
    exec::dispatch(&CONV, entry, Variant::of(x.dtype()), &[x.storage().gpu_buffer()?, col.storage().gpu_buffer()?], &p, groups)
}

/// x (N, C, H, W) = the adjoint of im2col applied to col (float32 or float16).
pub fn col2im(g: &Geom, col: &Tensor, x: &Tensor) -> Result<()> {
    if x.numel() == 0 {
        return Ok(());
    }
    let p = params(g, x.layout().offset, col.layout().offset);
    exec::dispatch(&CONV, "col2im", Variant::of(x.dtype()), &[col.storage().gpu_buffer()?, x.storage().gpu_buffer()?], &p, exec::grid_1d(x.numel()))
}
