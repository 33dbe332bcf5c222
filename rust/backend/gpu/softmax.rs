//! Launcher for shaders/softmax.wgsl over contiguous [outer, n, inner] views.

use super::dtype::elem_bytes;
use super::exec::{self, Bind, Variant};
use super::shaders::SOFTMAX;
use crate::error::Result;
use crate::tensor::Tensor;

crate::wgsl_params! {
    /// Sizes around the dim, and where a, b (the gradient, backward only)
    /// and o start.
    pub struct Params in SOFTMAX {
        outer: u32, n: u32, inner: u32,
        a_off: u32, b_off: u32, o_off: u32,
    }
}

/// Forward (`g` None: out = softmax(a)) or backward (a = the saved output y,
/// g its gradient, out = the input gradient). Tensors beyond the binding limit
/// go in chunks of whole [n, inner] blocks, each bound as a window.
pub fn run(
    a: &Tensor,
    g: Option<&Tensor>,
    out: &Tensor,
    outer: usize,
    n: usize,
    inner: usize,
    log: bool,
) -> Result<()> {
    let block = n * inner;
    if outer * block == 0 {
        return Ok(());
    }
    let eb = elem_bytes(out.dtype())?;
    let parts = [Some(a), g, Some(out)]
        .into_iter()
        .flatten()
        .map(|t| Ok((t.storage().gpu_buffer()?, block, eb)))
        .collect::<Result<Vec<_>>>()?;
    let rows = exec::rows_per_chunk("softmax", outer, &parts)?;
    for o in (0..outer).step_by(rows) {
        launch(a, g, out, o * block, rows.min(outer - o), n, inner, log)?;
    }
    Ok(())
}

/// One dispatch over `outer` blocks starting `start` elements into each tensor.
#[allow(clippy::too_many_arguments)]
fn launch(
    a: &Tensor,
    g: Option<&Tensor>,
    out: &Tensor,
    start: usize,
    outer: usize,
    n: usize,
    inner: usize,
    log: bool,
) -> Result<()> {
    let rows = outer * inner;
    // A workgroup per row for long contiguous rows; a thread per row otherwise.
    let per_row = inner == 1 && n >= 64;
    let entry = match (g.is_some(), log, per_row) {
        (false, false, true) => "softmax",
        (false, true, true) => "log_softmax",
        (true, false, true) => "softmax_backward",
        (true, true, true) => "log_softmax_backward",
        (false, false, false) => "softmax_cols",
        (false, true, false) => "log_softmax_cols",
        (true, false, false) => "softmax_cols_backward",
        (true, true, false) => "log_softmax_cols_backward",
    };
    let eb = elem_bytes(out.dtype())?;
    let span = outer * n * inner;
    // The window of `span` elements from `start` into t, and t's offset within it.
    fn bind(t: &Tensor, start: usize, span: usize, eb: usize) -> Result<(Bind<'_>, usize)> {
        let lo = t.layout().offset + start;
        let (b, base) = Bind::window(t.storage().gpu_buffer()?, lo, lo + span - 1, eb)?;
        Ok((b, lo - base))
    }
    let (ab, a_off) = bind(a, start, span, eb)?;
    let (gb, g_off) = match g {
        Some(g) => bind(g, start, span, eb)?,
        None => (Bind::whole(exec::dummy()?), 0),
    };
    let (ob, o_off) = bind(out, start, span, eb)?;
    let p = Params {
        outer: outer as u32,
        n: n as u32,
        inner: inner as u32,
        a_off: a_off as u32,
        b_off: g_off as u32,
        o_off: o_off as u32,
    };
    let grid = if per_row { exec::grid_rows(rows) } else { exec::grid_1d(rows) };
    exec::dispatch_binds(entry, Variant::of(out.dtype()), &[ab, gb, ob], &p, grid)
}
