//! Launcher for shaders/norm.wgsl: layer norm over rows of m elements.

use super::exec::{self, Variant};
use super::shaders::NORM;
use crate::error::Result;
use crate::tensor::Tensor;

fn params(rows: usize, m: usize, eps: f64, ts: [Option<&Tensor>; 8], w: bool, b: bool) -> Vec<u32> {
    let off = |t: Option<&Tensor>| t.map_or(0, |t| t.layout().offset as u32);
    let mut p = vec![rows as u32, m as u32, w as u32 | (b as u32) << 1, (eps as f32).to_bits()];
    p.extend(ts.iter().map(|t| off(*t)));
    p
}

fn buf(t: Option<&Tensor>) -> Result<&wgpu::Buffer> {
    match t {
        Some(t) => t.storage().gpu_buffer(),
        None => exec::dummy(),
    }
}

/// y = (x - mean) · rstd · w + b per row, writing the row statistics.
#[allow(clippy::too_many_arguments)]
pub fn forward(x: &Tensor, w: Option<&Tensor>, b: Option<&Tensor>, y: &Tensor, mean: &Tensor, rstd: &Tensor, rows: usize, m: usize, eps: f64) -> Result<()> {
    let p = params(rows, m, eps, [Some(x), None, w, b, Some(mean), Some(rstd), Some(y), None], w.is_some(), b.is_some());
    let bufs = [buf(Some(x))?, buf(w)?, buf(b)?, buf(Some(y))?, buf(Some(mean))?, buf(Some(rstd))?];
    exec::dispatch(&NORM, "layer_norm", Variant::F32, &bufs, &p, exec::grid_rows(rows))
}

/// The input gradient, and (when `gw` is given) the weight and bias gradients.
#[allow(clippy::too_many_arguments)]
pub fn backward(x: &Tensor, g: &Tensor, w: Option<&Tensor>, mean: &Tensor, rstd: &Tensor, gx: &Tensor, gwb: Option<(&Tensor, &Tensor)>, rows: usize, m: usize) -> Result<()> {
    let p = params(rows, m, 0.0, [Some(x), Some(g), w, None, Some(mean), Some(rstd), Some(gx), None], w.is_some(), false);
    let bufs = [buf(Some(x))?, buf(Some(g))?, buf(w)?, buf(Some(mean))?, buf(Some(rstd))?, buf(Some(gx))?];
    exec::dispatch(&NORM, "layer_norm_backward", Variant::F32, &bufs, &p, exec::grid_rows(rows))?;
    if let Some((gw, gb)) = gwb {
        let p = params(rows, m, 0.0, [Some(x), Some(g), None, None, Some(mean), Some(rstd), Some(gw), Some(gb)], true, true);
        let bufs = [buf(Some(x))?, buf(Some(g))?, buf(Some(mean))?, buf(Some(rstd))?, buf(Some(gw))?, buf(Some(gb))?];
        exec::dispatch(&NORM, "layer_norm_backward_params", Variant::F32, &bufs, &p, exec::grid_rows(m.div_ceil(32)))?;
    }
    Ok(())
}
