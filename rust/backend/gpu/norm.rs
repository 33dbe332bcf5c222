//! Launcher for shaders/norm.wgsl: layer norm over rows of m elements. Tensors
//! beyond the binding limit go in chunks of rows, each bound as windows.

use super::codes::flag;
use super::dtype::elem_bytes;
use super::exec::{self, Bind, Variant};
use super::shaders::NORM;
use crate::error::Result;
use crate::tensor::Tensor;

crate::wgsl_flags! {
    /// Bits of `Params::flags`: which optional tensors are given.
    pub struct NormFlags = "NORM" { WEIGHT = 1, BIAS = 2 }
}

crate::wgsl_params! {
    /// Row count and length, `NormFlags`, eps, then the element offset where
    /// each tensor starts (out: y or gx).
    pub struct Params in NORM {
        rows: u32, m: u32, flags: u32, eps: f32,
        x_off: u32, g_off: u32, w_off: u32, b_off: u32,
        mean_off: u32, rstd_off: u32, out_off: u32,
    }
}

/// A tensor argument: per row `m` elements (x, g, y, gx), one (mean, rstd),
/// or the same m elements for every row (w, b: bound whole).
#[derive(Copy, Clone)]
enum Arg<'a> {
    Rows(&'a Tensor),
    Stat(&'a Tensor),
    Shared(Option<&'a Tensor>),
}

impl Arg<'_> {
    fn tensor(&self) -> Option<&Tensor> {
        match *self {
            Arg::Rows(t) | Arg::Stat(t) => Some(t),
            Arg::Shared(t) => t,
        }
    }
    /// Elements per row this argument's window holds.
    fn per_row(&self, m: usize) -> usize {
        match self {
            Arg::Rows(_) => m,
            Arg::Stat(_) => 1,
            Arg::Shared(_) => 0,
        }
    }
}

/// Dispatches `entry` over all rows in as few chunks as the binding limit
/// allows. `args` are the bindings in ABI order, `slots` the params offset
/// field (0 x_off .. 6 out_off) of each; `grid` maps a chunk's row count to
/// its workgroups.
#[allow(clippy::too_many_arguments)]
fn run(
    entry: &'static str,
    args: &[Arg],
    slots: &[usize],
    rows: usize,
    m: usize,
    eps: f64,
    flags: u32,
    grid: impl Fn(usize) -> [u32; 3],
) -> Result<()> {
    let mut parts = Vec::new();
    for a in args {
        if let (Some(t), per @ 1..) = (a.tensor(), a.per_row(m)) {
            parts.push((t.storage().gpu_buffer()?, per, elem_bytes(t.dtype())?));
        }
    }
    let chunk = exec::rows_per_chunk(entry, rows, &parts)?;
    for r0 in (0..rows).step_by(chunk) {
        let count = chunk.min(rows - r0);
        let mut offs = [0u32; 7];
        let mut binds = Vec::with_capacity(args.len());
        for (a, &slot) in args.iter().zip(slots) {
            let Some(t) = a.tensor() else {
                binds.push(Bind::whole(exec::dummy()?));
                continue;
            };
            let per = a.per_row(m);
            let (lo, span) = if per == 0 {
                (t.layout().offset, t.numel())
            } else {
                (t.layout().offset + r0 * per, count * per)
            };
            let (b, base) = Bind::window(
                t.storage().gpu_buffer()?,
                lo,
                lo + span.max(1) - 1,
                elem_bytes(t.dtype())?,
            )?;
            offs[slot] = (lo - base) as u32;
            binds.push(b);
        }
        let [x_off, g_off, w_off, b_off, mean_off, rstd_off, out_off] = offs;
        let p = Params {
            rows: count as u32,
            m: m as u32,
            flags,
            eps: eps as f32,
            x_off,
            g_off,
            w_off,
            b_off,
            mean_off,
            rstd_off,
            out_off,
        };
        exec::dispatch_binds(entry, Variant::F32, &binds, &p, grid(count))?;
    }
    Ok(())
}

/// y = (x - mean) · rstd · w + b per row, writing the row statistics.
#[allow(clippy::too_many_arguments)]
pub fn forward(
    x: &Tensor,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    y: &Tensor,
    mean: &Tensor,
    rstd: &Tensor,
    rows: usize,
    m: usize,
    eps: f64,
) -> Result<()> {
    let args = [
        Arg::Rows(x),
        Arg::Shared(w),
        Arg::Shared(b),
        Arg::Rows(y),
        Arg::Stat(mean),
        Arg::Stat(rstd),
    ];
    let flags = flag(w.is_some(), NormFlags::WEIGHT) | flag(b.is_some(), NormFlags::BIAS);
    run("layer_norm", &args, &[0, 2, 3, 6, 4, 5], rows, m, eps, flags, exec::grid_rows)
}

/// The input gradient (the weight and bias gradients are column sums, left to
/// the reductions).
#[allow(clippy::too_many_arguments)]
pub fn backward(
    x: &Tensor,
    g: &Tensor,
    w: Option<&Tensor>,
    mean: &Tensor,
    rstd: &Tensor,
    gx: &Tensor,
    rows: usize,
    m: usize,
) -> Result<()> {
    let args = [
        Arg::Rows(x),
        Arg::Rows(g),
        Arg::Shared(w),
        Arg::Stat(mean),
        Arg::Stat(rstd),
        Arg::Rows(gx),
    ];
    run(
        "layer_norm_backward",
        &args,
        &[0, 1, 2, 4, 5, 6],
        rows,
        m,
        0.0,
        flag(w.is_some(), NormFlags::WEIGHT),
        exec::grid_rows,
    )
}
