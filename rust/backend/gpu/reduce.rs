//! Launcher for shaders/reduce.wgsl: reductions over the middle axis of a
//! contiguous [outer, n, inner] view, and scans along it.

use super::exec::{self, Variant};
use super::shaders::REDUCE;
use crate::bail;
use crate::error::Result;
use crate::tensor::Tensor;

/// Entry points (rows form for inner == 1, columns form otherwise).
fn entries(op: &str) -> Result<(&'static str, &'static str)> {
    Ok(match op {
        "sum" => ("sum_rows", "sum_cols"),
        "prod" => ("prod_rows", "prod_cols"),
        "amax" => ("amax_rows", "amax_cols"),
        "amin" => ("amin_rows", "amin_cols"),
        "argmax" => ("argmax_rows", "argmax_cols"),
        "argmin" => ("argmin_rows", "argmin_cols"),
        "max_idx" => ("max_idx_rows", "max_idx_cols"),
        "min_idx" => ("min_idx_rows", "min_idx_cols"),
        "any" => ("any_rows", "any_cols"),
        "all" => ("all_rows", "all_cols"),
        "sum_i32" => ("sum_i32_rows", "sum_i32_cols"),
        "cumsum" => ("cumsum", "cumsum"),
        "cumprod" => ("cumprod", "cumprod"),
        "cumsum_i32" => ("cumsum_i32", "cumsum_i32"),
        _ => bail!(Runtime, "internal error: no GPU reduction {}", op),
    })
}

/// Reduces `x` (contiguous from its offset) viewed as [outer, n, inner] into
/// `outs` ([outer, inner], contiguous; max_idx/min_idx write values and indices).
/// Sums are multiplied by `scale`.
pub fn reduce(op: &str, x: &Tensor, outer: usize, n: usize, inner: usize, outs: &[&Tensor], scale: f32) -> Result<()> {
    if outer * inner == 0 {
        return Ok(());
    }
    let (rows, cols) = entries(op)?;
    let scan = op.starts_with("cum");
    // A workgroup per row pays off for long rows; short ones go a thread each.
    let (entry, groups) = if inner == 1 && n >= 64 && !scan { (rows, exec::grid_rows(outer)) } else { (cols, exec::grid_1d(outer * inner)) };
    let p = [outer as u32, n as u32, inner as u32, x.layout().offset as u32, outs[0].layout().offset as u32, scale.to_bits()];
    let mut bufs = vec![x.storage().gpu_buffer()?];
    for o in outs {
        bufs.push(o.storage().gpu_buffer()?);
    }
    exec::dispatch(&REDUCE, entry, Variant::of(x.dtype()), &bufs, &p, groups)
}
