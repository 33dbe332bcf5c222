//! Launcher for shaders/sort.wgsl: a stable bitonic sort of the rows of a
//! contiguous (rows, n) tensor, giving values and int64 indices.

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
