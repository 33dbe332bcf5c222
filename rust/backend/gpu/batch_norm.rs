//! Launcher for shaders/batch_norm.wgsl: training-mode batch_norm in two
//! sweeps forward (statistics, normalize) and two backward (gradient sums, dx).

use super::dtype::elem_bytes;
use super::exec::{self, Bind, Variant};
use super::shaders::BATCH_NORM;
use crate::error::Result;
use crate::tensor::Tensor;

crate::wgsl_params! {
    /// N, C, S; flags (1 weight, 2 bias); eps; element offsets in the windows.
    pub struct Params in BATCH_NORM {
        n: u32, c: u32, s: u32, flags: u32,
        eps: f32, x_off: u32, g_off: u32, w_off: u32,
        b_off: u32, out_off: u32, _pad0: u32, _pad1: u32,
    }
}

/// A window over all of `t` and t's element offset in it; a dummy for None.
fn bind(t: Option<&Tensor>) -> Result<(Bind<'_>, u32)> {
    let Some(t) = t else {
        return Ok((Bind::whole(exec::dummy()?), 0));
    };
    let lo = t.layout().offset;
    let (b, base) = Bind::window(
        t.storage().gpu_buffer()?,
        lo,
        lo + t.numel().max(1) - 1,
        elem_bytes(t.dtype())?,
    )?;
    Ok((b, (lo - base) as u32))
}

/// The tensors of one dispatch, in binding order: x, g, w, b, stats, gstats, out.
type Slots<'a> = [Option<&'a Tensor>; 7];

fn launch(
    entry: &'static str,
    nsc: [usize; 3],
    eps: f64,
    t: Slots,
    per_channel: bool,
) -> Result<()> {
    let [n, c, s] = nsc;
    if n * c * s == 0 {
        return Ok(());
    }
    let mut binds = Vec::with_capacity(7);
    let mut offs = [0u32; 7];
    for (i, tensor) in t.iter().enumerate() {
        let (b, off) = bind(*tensor)?;
        binds.push(b);
        offs[i] = off;
    }
    let flags = u32::from(t[2].is_some()) | (u32::from(t[3].is_some()) << 1);
    let p = Params {
        n: n as u32,
        c: c as u32,
        s: s as u32,
        flags,
        eps: eps as f32,
        x_off: offs[0],
        g_off: offs[1],
        w_off: offs[2],
        b_off: offs[3],
        out_off: offs[6],
        _pad0: 0,
        _pad1: 0,
    };
    let grid = if per_channel { exec::grid_rows(c) } else { exec::grid_1d(n * c * s) };
    let variant = Variant::of(t[0].expect("x").dtype());
    exec::dispatch_binds(entry, variant, &binds, &p, grid)
}

/// y = batch_norm(x) with the batch statistics, written to `stats` (f32
/// (2, C): mean, biased variance). x, w, b contiguous; x (N, C, S). A
/// float32 normalize pass is left to the fusion layer, so an elementwise op
/// that follows (a ReLU) runs in the same kernel.
pub fn forward(
    x: &Tensor,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    nsc: [usize; 3],
    eps: f64,
    stats: &Tensor,
) -> Result<Tensor> {
    launch("bn_stats", nsc, eps, [Some(x), None, None, None, Some(stats), None, None], true)?;
    if let Some(y) = super::fusion::batch_norm_apply(x, w, b, stats, nsc, eps as f32)? {
        return Ok(y);
    }
    let y = Tensor::empty_on(x.shape(), x.dtype(), x.device())?;
    launch("bn_apply", nsc, eps, [Some(x), None, w, b, Some(stats), None, Some(&y)], false)?;
    Ok(y)
}

/// dx from dy `g`, writing `gstats` (f32 (2, C): Σg and Σg·(x - mean)), from
/// which the weight and bias gradients follow.
#[allow(clippy::too_many_arguments)]
pub fn backward(
    x: &Tensor,
    g: &Tensor,
    w: Option<&Tensor>,
    nsc: [usize; 3],
    eps: f64,
    stats: &Tensor,
    gstats: &Tensor,
    dx: &Tensor,
) -> Result<()> {
    let t = [Some(x), Some(g), None, None, Some(stats), Some(gstats), None];
    launch("bn_grad_stats", nsc, eps, t, true)?;
    let t = [Some(x), Some(g), w, None, Some(stats), Some(gstats), Some(dx)];
    launch("bn_grad_apply", nsc, eps, t, false)
}
