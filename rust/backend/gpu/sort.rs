//! Launcher for shaders/sort.wgsl: a stable bitonic sort of the rows of a
//! contiguous (rows, n) tensor, giving values and int64 indices; the mode of
//! sorted rows; searchsorted's binary search.

use super::dtype::kind;
use super::exec::{self, Variant};
use super::shaders::SORT;
use crate::bail;
use crate::error::Result;
use crate::tensor::{DType, Device, Tensor};

/// Elements a workgroup sorts in its memory (`BLOCK` in the shader).
const BLOCK: usize = 1024;

crate::wgsl_params! {
    /// Rows of n elements padded to npad, the direction (desc: 1), the
    /// element kind, where x starts, and the bitonic stage (k, j) of a
    /// global pass.
    pub struct Params in SORT {
        rows: u32, n: u32, npad: u32, desc: u32,
        kind: u32, x_off: u32, k: u32, j: u32,
    }
}

crate::wgsl_params! {
    /// searchsorted: boundary rows of n (1: shared by all values), values per
    /// row, all values, the side, the element kind, where both start.
    pub struct Search in SORT {
        rows: u32, n: u32, m: u32, total: u32,
        right: u32, kind: u32, seq_off: u32, val_off: u32,
    }
}

/// The rows of `x` (contiguous, (rows, n), float32 / int / bool; float16
/// callers convert to float32) sorted ascending or descending: (values,
/// indices), ties in index order.
pub fn sort(x: &Tensor, rows: usize, n: usize, desc: bool) -> Result<(Tensor, Tensor)> {
    let vals = Tensor::empty_on(&[rows, n], x.dtype(), Device::active_gpu())?;
    let inds = Tensor::empty_on(&[rows, n], DType::I64, Device::active_gpu())?;
    if rows * n == 0 {
        return Ok((vals, inds));
    }
    let npad = n.next_power_of_two().max(2);
    if rows.checked_mul(npad).is_none_or(|t| t > u32::MAX as usize / 2) {
        bail!(
            NotImplemented,
            "sort on the GPU: {} rows of {} elements exceed the kernel's 32-bit indexing",
            rows,
            n
        );
    }
    let mut p = Params {
        rows: rows as u32,
        n: n as u32,
        npad: npad as u32,
        desc: desc as u32,
        kind: kind(x.dtype())? as u32,
        x_off: x.layout().offset as u32,
        k: 0,
        j: 0,
    };
    let (xb, vb, ib) =
        (x.storage().gpu_buffer()?, vals.storage().gpu_buffer()?, inds.storage().gpu_buffer()?);
    let launch = |entry, bufs: [&wgpu::Buffer; 5], p: &Params, grid| {
        exec::dispatch(entry, Variant::F32, &bufs, p, grid)
    };
    let dummy = exec::dummy()?;
    if npad <= BLOCK {
        return launch("sort_rows", [xb, dummy, dummy, vb, ib], &p, exec::grid_rows(rows))
            .map(|_| (vals, inds));
    }
    let keys = Tensor::empty_on(&[rows * npad], DType::I32, Device::active_gpu())?;
    let idx = Tensor::empty_on(&[rows * npad], DType::I32, Device::active_gpu())?;
    let (kb, jb) = (keys.storage().gpu_buffer()?, idx.storage().gpu_buffer()?);
    let blocks = exec::grid_rows(rows * npad / BLOCK);
    launch("sort_blocks", [xb, kb, jb, dummy, dummy], &p, blocks)?;
    let mut k = 2 * BLOCK;
    while k <= npad {
        p.k = k as u32;
        let mut j = k / 2;
        while j >= BLOCK {
            p.j = j as u32;
            launch("sort_step", [dummy, kb, jb, dummy, dummy], &p, exec::grid_1d(rows * npad / 2))?;
            j /= 2;
        }
        launch("sort_merge", [dummy, kb, jb, dummy, dummy], &p, blocks)?;
        k *= 2;
    }
    launch("sort_write", [xb, dummy, jb, vb, ib], &p, exec::grid_1d(rows * n))?;
    Ok((vals, inds))
}

/// The mode of every row of the sorted `vals` (contiguous, (rows, n), n >= 1)
/// with the stable sort's indices `inds`: the value of the longest run (the
/// smallest of equally long ones) and the last index holding it, as (rows, 1).
pub fn mode_sorted(
    vals: &Tensor,
    inds: &Tensor,
    rows: usize,
    n: usize,
) -> Result<(Tensor, Tensor)> {
    let v = Tensor::empty_on(&[rows, 1], vals.dtype(), Device::active_gpu())?;
    let i = Tensor::empty_on(&[rows, 1], DType::I64, Device::active_gpu())?;
    if rows == 0 {
        return Ok((v, i));
    }
    let p = Params {
        rows: rows as u32,
        n: n as u32,
        kind: kind(vals.dtype())? as u32,
        x_off: vals.layout().offset as u32,
        ..Default::default()
    };
    let dummy = exec::dummy()?;
    let bufs = [
        vals.storage().gpu_buffer()?,
        dummy,
        inds.storage().gpu_buffer()?,
        v.storage().gpu_buffer()?,
        i.storage().gpu_buffer()?,
    ];
    exec::dispatch("mode_rows", Variant::F32, &bufs, &p, exec::grid_1d(rows))?;
    Ok((v, i))
}

/// searchsorted on contiguous `seq` ((rows, n) boundaries, each row sorted)
/// and `vals` (`rows == 1`: any number; else rows · m) of one dtype: int64
/// positions shaped like `vals`.
pub fn search(seq: &Tensor, vals: &Tensor, rows: usize, n: usize, right: bool) -> Result<Tensor> {
    let out = Tensor::empty_on(vals.shape(), DType::I64, Device::active_gpu())?;
    let total = vals.numel();
    if total == 0 {
        return Ok(out);
    }
    let p = Search {
        rows: rows as u32,
        n: n as u32,
        m: (total / rows.max(1)) as u32,
        total: total as u32,
        right: right as u32,
        kind: kind(seq.dtype())? as u32,
        seq_off: seq.layout().offset as u32,
        val_off: vals.layout().offset as u32,
    };
    let dummy = exec::dummy()?;
    let bufs = [
        seq.storage().gpu_buffer()?,
        vals.storage().gpu_buffer()?,
        dummy,
        dummy,
        out.storage().gpu_buffer()?,
    ];
    exec::dispatch("search", Variant::F32, &bufs, &p, exec::grid_1d(total))?;
    Ok(out)
}
