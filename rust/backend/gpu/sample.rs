//! Launcher for shaders/sample.wgsl: grid_sample forward and backward in
//! float32 (the input gradient adds float32 bits atomically), in chunks of
//! whole batches when a tensor exceeds the binding limit.

use super::exec::{self, Variant};
use super::shaders::SAMPLE;
use crate::backend::cpu::sample::Geom;
use crate::error::Result;
use crate::tensor::{Scalar, Tensor};

crate::wgsl_params! {
    /// Batches of this dispatch, channels, input sizes (d = 1 in 2-D), output
    /// points per batch, nd, `GridMode`, `GridPad`, align_corners, which
    /// gradients to write (bit 0 input, bit 1 grid), then the element
    /// offsets of x, grid, go, gx and out (or gg).
    pub struct Params in SAMPLE {
        n: u32, c: u32, d: u32, h: u32,
        w: u32, pts: u32, nd: u32, mode: u32,
        pad: u32, align: u32, need: u32, x_off: u32,
        g_off: u32, go_off: u32, gx_off: u32, o_off: u32,
    }
}

fn launch(entry: &'static str, geo: &Geom, need: u32, ts: &[Option<&Tensor>; 5]) -> Result<()> {
    exec::dispatch_row_chunks(entry, Variant::F32, geo.n, ts, |_, count, offs| {
        let p = Params {
            n: count as u32,
            c: geo.c as u32,
            d: geo.size[0] as u32,
            h: geo.size[1] as u32,
            w: geo.size[2] as u32,
            pts: geo.pts as u32,
            nd: geo.nd as u32,
            mode: geo.mode as u32,
            pad: geo.pad as u32,
            align: u32::from(geo.align),
            need,
            x_off: offs[0],
            g_off: offs[1],
            go_off: offs[2],
            gx_off: offs[3],
            o_off: offs[4],
        };
        (p, exec::grid_1d(count * geo.pts))
    })
}

/// out = samples of x at grid (contiguous float32 GPU tensors).
pub fn forward(geo: &Geom, x: &Tensor, grid: &Tensor, out: &Tensor) -> Result<()> {
    launch("grid_sample", geo, 0, &[Some(x), Some(grid), None, None, Some(out)])
}

/// The input gradient `gx` and/or the grid gradient `gg` from `go`.
pub fn backward(
    geo: &Geom,
    x: &Tensor,
    grid: &Tensor,
    go: &Tensor,
    gx: Option<&Tensor>,
    gg: Option<&Tensor>,
) -> Result<()> {
    if let Some(gx) = gx {
        crate::ops::copy::fill_(gx, Scalar::Int(0))?;
    }
    let need = u32::from(gx.is_some()) | (u32::from(gg.is_some()) << 1);
    launch("grid_sample_backward", geo, need, &[Some(x), Some(grid), Some(go), gx, gg])
}
