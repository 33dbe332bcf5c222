//! Launcher for shaders/softmax.wgsl over contiguous [outer, n, inner] views.

use super::exec::{self, Variant};
use super::shaders::SOFTMAX;
use crate::error::Result;
use crate::tensor::Tensor;

/// Forward (`g` None: out = softmax(a)) or backward (a = the saved output y,
/// g its gradient, out = the input gradient).
pub fn run(a: &Tensor, g: Option<&Tensor>, out: &Tensor, outer: usize, n: usize, inner: usize, log: bool) -> Result<()> {
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
    let gb = match g {
        Some(g) => g.storage().gpu_buffer()?,
        None => exec::dummy()?,
    };
    let p = [outer as u32, n as u32, inner as u32, a.layout().offset as u32, g.map_or(0, |g| g.layout().offset as u32), out.layout().offset as u32];
    let grid = if per_row { exec::grid_rows(rows) } else { exec::grid_1d(rows) };
    exec::dispatch(&SOFTMAX, entry, Variant::of(out.dtype()), &[a.storage().gpu_buffer()?, gb, out.storage().gpu_buffer()?], &p, grid)
}
