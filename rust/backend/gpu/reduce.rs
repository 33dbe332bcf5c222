//! Launcher for shaders/reduce.wgsl: reductions over the middle axis of a
//! contiguous [outer, n, inner] view, and scans along it.

use super::dtype::elem_bytes;
use super::exec::{self, Bind, Variant};
use super::shaders::REDUCE;
use crate::bail;
use crate::error::Result;
use crate::tensor::{Device, Tensor};

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

/// Longest row one dispatch reduces (inner == 1, then inner > 1) in the
/// associative ops: longer rows go in pieces whose results are reduced again,
/// which spreads a long row over many workgroups and keeps each thread's loop
/// under llvmpipe's 65,535 iterations per shader.
const MAX_ROW: usize = 1 << 22;
const MAX_COL: usize = 1 << 14;

/// Reduces `x` (contiguous from its offset) viewed as [outer, n, inner] into
/// `outs` ([outer, inner], contiguous; max_idx/min_idx write values and indices).
/// Sums are multiplied by `scale`. An `x` beyond the binding limit goes in
/// chunks of whole rows.
pub fn reduce(
    op: &str,
    x: &Tensor,
    outer: usize,
    n: usize,
    inner: usize,
    outs: &[&Tensor],
    scale: f32,
) -> Result<()> {
    run(op, x, x.layout().offset, outer, n, inner, outs, outs[0].layout().offset, scale)
}

#[allow(clippy::too_many_arguments)]
fn run(
    op: &str,
    x: &Tensor,
    x_off: usize,
    outer: usize,
    n: usize,
    inner: usize,
    outs: &[&Tensor],
    out_off: usize,
    scale: f32,
) -> Result<()> {
    if outer * inner == 0 {
        return Ok(());
    }
    let scan = op.starts_with("cum");
    // Elements per row of x and of the outputs (scans write as many as they read).
    let (row, out_row) = (n * inner, if scan { n * inner } else { inner });
    let cap = if inner == 1 { MAX_ROW } else { MAX_COL };
    if n > cap && matches!(op, "sum" | "prod" | "amax" | "amin" | "any" | "all" | "sum_i32") {
        for o in 0..outer {
            // Rows of m elements reduced into `part`, a shorter last row after them.
            let pieces = n.div_ceil(cap);
            let m = n / pieces;
            let (full, rest) = (n / m, n % m);
            let k = full + (rest > 0) as usize;
            let part = Tensor::empty_on(&[k, inner], outs[0].dtype(), Device::Gpu)?;
            let x0 = x_off + o * row;
            run(op, x, x0, full, m, inner, &[&part], 0, 1.0)?;
            if rest > 0 {
                run(op, x, x0 + full * m * inner, 1, rest, inner, &[&part], full * inner, 1.0)?;
            }
            run(op, &part, 0, 1, k, inner, outs, out_off + o * inner, scale)?;
        }
        return Ok(());
    }
    let (xbuf, xe) = (x.storage().gpu_buffer()?, elem_bytes(x.dtype())?);
    let fit = |rows: usize| -> Result<bool> {
        let mut ok = exec::fits(xbuf, rows * row, xe)?;
        for o in outs {
            ok &= exec::fits(o.storage().gpu_buffer()?, rows * out_row, elem_bytes(o.dtype())?)?;
        }
        Ok(ok)
    };
    let mut rows = outer;
    while rows > 1 && !fit(rows)? {
        rows = rows.div_ceil(2);
    }
    if !fit(rows)? {
        bail!(
            NotImplemented,
            "{} on the GPU: a reduced row of {} bytes exceeds the adapter's binding limit",
            op,
            row * xe
        );
    }
    for o in (0..outer).step_by(rows) {
        launch(
            op,
            x,
            x_off + o * row,
            rows.min(outer - o),
            n,
            inner,
            outs,
            out_off + o * out_row,
            scale,
        )?;
    }
    Ok(())
}

/// One dispatch over `outer` rows from element `x_off` of x into the outputs
/// from element `out_off`, binding the windows those rows touch.
#[allow(clippy::too_many_arguments)]
fn launch(
    op: &str,
    x: &Tensor,
    x_off: usize,
    outer: usize,
    n: usize,
    inner: usize,
    outs: &[&Tensor],
    out_off: usize,
    scale: f32,
) -> Result<()> {
    let (rows, cols) = entries(op)?;
    let scan = op.starts_with("cum");
    // A workgroup per row pays off for long rows; short ones go a thread each.
    let (entry, groups) = if inner == 1 && n >= 64 && !scan {
        (rows, exec::grid_rows(outer))
    } else {
        (cols, exec::grid_1d(outer * inner))
    };
    let span = outer * n.max(1) * inner;
    let (xb, x_base) =
        Bind::window(x.storage().gpu_buffer()?, x_off, x_off + span - 1, elem_bytes(x.dtype())?)?;
    let mut binds = vec![xb];
    let mut out_base = None;
    for o in outs {
        let last = out_off + if scan { span } else { outer * inner } - 1;
        let (b, base) =
            Bind::window(o.storage().gpu_buffer()?, out_off, last, elem_bytes(o.dtype())?)?;
        // Both outputs of max_idx/min_idx share one offset parameter.
        if out_base.is_some_and(|ob| ob != base) {
            bail!(NotImplemented, "{} on the GPU: outputs beyond the adapter's binding limit", op);
        }
        out_base = Some(base);
        binds.push(b);
    }
    let p = [
        outer as u32,
        n as u32,
        inner as u32,
        (x_off - x_base) as u32,
        (out_off - out_base.unwrap_or(0)) as u32,
        scale.to_bits(),
    ];
    exec::dispatch_binds(&REDUCE, entry, Variant::of(x.dtype()), &binds, &p, groups)
}
