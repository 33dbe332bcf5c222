//! Launcher for shaders/reduce.wgsl: reductions over the middle axis of a
//! contiguous [outer, n, inner] view, and scans along it.

use super::dtype::elem_bytes;
use super::exec::{self, Bind, Variant};
use super::shaders::REDUCE;
use crate::bail;
use crate::error::Result;
use crate::ops::copy::to_dtype;
use crate::tensor::{DType, Device, Scalar, Tensor};

crate::wgsl_params! {
    /// The [outer, n, inner] view, where input and output start, and the
    /// factor applied to sums (mean = sum with scale 1/n).
    pub struct Params in REDUCE {
        outer: u32, n: u32, inner: u32, in_off: u32, out_off: u32,
        scale: f32,
    }
}

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
        "prod_i32" => ("prod_i32_rows", "prod_i32_cols"),
        "amax_i32" => ("amax_i32_rows", "amax_i32_cols"),
        "amin_i32" => ("amin_i32_rows", "amin_i32_cols"),
        "argmax_i32" => ("argmax_i32_rows", "argmax_i32_cols"),
        "argmin_i32" => ("argmin_i32_rows", "argmin_i32_cols"),
        "max_idx_i32" => ("max_idx_i32_rows", "max_idx_i32_cols"),
        "min_idx_i32" => ("min_idx_i32_rows", "min_idx_i32_cols"),
        "cumsum" => ("cumsum", "cumsum"),
        "cumprod" => ("cumprod", "cumprod"),
        "cumsum_i32" => ("cumsum_i32", "cumsum_i32"),
        "cumprod_i32" => ("cumprod_i32", "cumprod_i32"),
        _ => bail!(Runtime, "internal error: no GPU reduction {}", op),
    })
}

/// Longest row one dispatch reduces (inner == 1, then inner > 1) in the
/// associative ops: longer rows go in pieces whose results are reduced again,
/// which spreads a long row over many workgroups and keeps each thread's loop
/// under llvmpipe's 65,535 iterations per shader.
const MAX_ROW: usize = 1 << 22;
const MAX_COL: usize = 1 << 14;

/// Parallel lanes (threads of the rows form, columns of the columns form) below
/// which a few long rows are split anyway: a whole-tensor sum of 2M elements in
/// one workgroup left a large GPU idle for 1.7 ms. Pieces keep at least
/// MIN_PIECE elements (rows form) or MIN_PIECE / 64 (columns form).
const WANT_LANES: usize = 1 << 17;
const MIN_PIECE: usize = 4096;
/// The most rows split this way (each goes in its own dispatches).
const MAX_SPLIT_ROWS: usize = 8;

/// Folds whose partial results fold again into the same result, so that a
/// long row can go in pieces.
fn associative(op: &str) -> bool {
    matches!(
        op,
        "sum"
            | "prod"
            | "amax"
            | "amin"
            | "any"
            | "all"
            | "sum_i32"
            | "prod_i32"
            | "amax_i32"
            | "amin_i32"
    )
}

/// Pieces a row of `n` is reduced in (1: no split).
fn pieces(outer: usize, n: usize, inner: usize) -> usize {
    let cap = if inner == 1 { MAX_ROW } else { MAX_COL };
    if n > cap {
        return n.div_ceil(cap);
    }
    let (lanes, min_piece) =
        if inner == 1 { (outer * 256, MIN_PIECE) } else { (outer * inner, MIN_PIECE / 64) };
    if outer > MAX_SPLIT_ROWS || lanes >= WANT_LANES || n < 2 * min_piece {
        return 1;
    }
    (WANT_LANES / lanes).clamp(2, n / min_piece)
}

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
    let pieces = pieces(outer, n, inner);
    if pieces > 1 && associative(op) {
        for o in 0..outer {
            // Rows of m elements reduced into `part`, a shorter last row after them.
            let m = n / pieces;
            let (full, rest) = (n / m, n % m);
            let k = full + (rest > 0) as usize;
            let part = Tensor::empty_on(&[k, inner], outs[0].dtype(), Device::active_gpu())?;
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
    let p = Params {
        outer: outer as u32,
        n: n as u32,
        inner: inner as u32,
        in_off: (x_off - x_base) as u32,
        out_off: (out_off - out_base.unwrap_or(0)) as u32,
        scale,
    };
    exec::dispatch_binds(entry, Variant::of(x.dtype()), &binds, &p, groups)
}

/// The input of a GPU reduction in the dtype its kernels read, and the
/// entry name for it: floats in their compute dtype under `op`, integers and
/// bools as int32 words under `op_i32` (float32 would lose exactness beyond 2^24).
pub fn gpu_input(op: &str, t: &Tensor) -> Result<(Tensor, String)> {
    if t.dtype().is_float() {
        return Ok((to_dtype(t, t.dtype().gpu_compute())?, op.to_string()));
    }
    if t.dtype().is_complex() {
        bail!(NotImplemented, "{} of {} tensors has no GPU kernel", op, t.dtype().name());
    }
    let words = if t.dtype() == DType::I32 { DType::I32 } else { DType::I64 };
    Ok((to_dtype(t, words)?, format!("{}_i32", op)))
}

/// `t` as a contiguous [outer, n, inner] block whose middle axis holds the
/// reduced elements: as is when the reduced dims are adjacent, else with the
/// kept dims permuted first and copied.
pub fn blocks(t: &Tensor, reduced: &[bool]) -> Result<(Tensor, usize, usize, usize)> {
    let shape = t.shape();
    let big: Vec<usize> = (0..t.ndim()).filter(|&d| shape[d] > 1).collect();
    let red: Vec<usize> = big.iter().copied().filter(|&d| reduced[d]).collect();
    let dense = |t: &Tensor| {
        if t.is_contiguous() {
            Ok(t.clone())
        } else {
            crate::ops::copy::contiguous_clone(t)
        }
    };
    let (Some(&first), Some(&last)) = (red.first(), red.last()) else {
        // Only size-1 dims reduced: every element is its own output.
        return Ok((dense(t)?, t.numel(), 1, 1));
    };
    let adjacent = big.iter().filter(|&&d| d > first && d < last).all(|&d| reduced[d]);
    if adjacent {
        let x = dense(t)?;
        let outer = shape[..first].iter().product();
        let n = shape[first..=last].iter().product();
        return Ok((x, outer, n, shape[last + 1..].iter().product()));
    }
    let mut order: Vec<i64> = (0..t.ndim()).filter(|&d| !reduced[d]).map(|d| d as i64).collect();
    order.extend((0..t.ndim()).filter(|&d| reduced[d]).map(|d| d as i64));
    let x = crate::ops::copy::contiguous_clone(&t.with_layout(t.layout().permute(&order)?))?;
    let n: usize = (0..t.ndim()).filter(|&d| reduced[d]).map(|d| shape[d]).product();
    Ok((x, t.numel() / n.max(1), n, 1))
}

/// `op` over the `reduced` dims of `t` into a new tensor of `shape`; `scale`
/// multiplies sums (mean), and an infinite scale marks a mean of nothing.
pub fn reduce_dims(
    op: &str,
    t: &Tensor,
    reduced: &[bool],
    shape: &[usize],
    scale: f32,
) -> Result<Tensor> {
    let kind = if matches!(op, "any" | "all") { DType::Bool } else { t.dtype() };
    let out = Tensor::empty_on(shape, kind, Device::active_gpu())?;
    if t.numel() == 0 {
        // Empty reductions: the identity of the op.
        let v = match op {
            "prod" | "prod_i32" | "all" => Scalar::Int(1),
            _ if scale.is_infinite() => Scalar::Float(f64::NAN),
            _ => Scalar::Int(0),
        };
        crate::ops::copy::fill_(&out, v)?;
        return Ok(out);
    }
    let (x, outer, n, inner) = blocks(t, reduced)?;
    let chunked = associative(op) && x.dtype() != DType::F16;
    if outer == 1 && inner > 1 && n >= 2 * COLUMN_CHUNK && chunked {
        // Columns over many rows (a bias gradient: [rows, features] -> [features]):
        // a thread per column would walk all rows serially, bound by memory
        // latency. Reduce chunks of rows first, then the chunks' results
        // (not for float16, whose partial results would round to float16).
        let (k, rem) = (n / COLUMN_CHUNK, n % COLUMN_CHUNK);
        let rows = crate::ops::shape::reshape(&x, &[n as i64, inner as i64])?;
        let parts =
            Tensor::empty_on(&[k + (rem > 0) as usize, inner], out.dtype(), Device::active_gpu())?;
        reduce(op, &rows, k, COLUMN_CHUNK, inner, &[&parts], 1.0)?;
        if rem > 0 {
            let tail = crate::ops::shape::narrow(&rows, 0, (n - rem) as i64, rem as i64)?;
            reduce(
                op,
                &tail,
                1,
                rem,
                inner,
                &[&crate::ops::shape::select(&parts, 0, k as i64)?],
                1.0,
            )?;
        }
        reduce(op, &parts, 1, parts.shape()[0], inner, &[&out], scale)?;
        return Ok(out);
    }
    reduce(op, &x, outer, n, inner, &[&out], scale)?;
    Ok(out)
}

/// Rows per chunk of a two-stage column reduction on the GPU.
const COLUMN_CHUNK: usize = 64;
