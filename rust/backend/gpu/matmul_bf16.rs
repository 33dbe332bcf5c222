//! Launcher for shaders/matmul_bf16.wgsl: batched float32 C = A·B over
//! bfloat16 A and B read in place (packed, any non-negative strides), so the
//! matmul family on bfloat16 GPU tensors makes no float32 copies of its
//! operands. The caller rounds C to bfloat16.

use super::exec::{self, Bind, Variant};
use super::matmul::Mat;
use super::shaders::MATMUL_BF16;
use crate::error::Result;

/// Output tile side of one workgroup (the shader's TILE).
const TILE: usize = 64;

crate::wgsl_params! {
    /// Sizes, then element offset and batch / row / column strides of A and
    /// B; C's offset and batch stride (its row stride is n).
    pub struct Params in MATMUL_BF16 {
        m: u32, n: u32, k: u32, batch: u32,
        a_off: u32, a_bs: u32, a_rs: u32, a_cs: u32,
        b_off: u32, b_bs: u32, b_rs: u32, b_cs: u32,
        c_off: u32, c_bs: u32, pad0: u32, pad1: u32,
    }
}

/// Whether `gemm` can bind A, B and C whole (else the caller converts to
/// float32 and takes the float32 GEMM, which binds windows). Views with
/// non-negative strides in a bound buffer have offsets and strides below 2^32.
pub fn fits_whole(a: &wgpu::Buffer, b: &wgpu::Buffer, c: &wgpu::Buffer) -> Result<bool> {
    let whole = |buf: &wgpu::Buffer, eb: usize| exec::fits(buf, buf.size() as usize / eb, eb);
    Ok(whole(a, 2)? && whole(b, 2)? && whole(c, 4)?)
}

/// C[i] (m x n float32, contiguous, batch stride m·n from `c_off`) = A[i] ·
/// B[i] for i < batch, A and B bfloat16 (see `fits_whole`).
#[allow(clippy::too_many_arguments)]
pub fn gemm(
    m: usize,
    n: usize,
    k: usize,
    batch: usize,
    a: Mat,
    b: Mat,
    c: &wgpu::Buffer,
    c_off: usize,
) -> Result<()> {
    if m == 0 || n == 0 || batch == 0 {
        return Ok(());
    }
    // At most 65,535 workgroups in z: the batch in chunks.
    let chunk = batch.min(65_535);
    for start in (0..batch).step_by(chunk) {
        let nb = chunk.min(batch - start);
        let p = Params {
            m: m as u32,
            n: n as u32,
            k: k as u32,
            batch: nb as u32,
            a_off: (a.off as isize + start as isize * a.bs) as u32,
            a_bs: a.bs as u32,
            a_rs: a.rs as u32,
            a_cs: a.cs as u32,
            b_off: (b.off as isize + start as isize * b.bs) as u32,
            b_bs: b.bs as u32,
            b_rs: b.rs as u32,
            b_cs: b.cs as u32,
            c_off: (c_off + start * m * n) as u32,
            c_bs: (m * n) as u32,
            pad0: 0,
            pad1: 0,
        };
        let groups = [n.div_ceil(TILE) as u32, m.div_ceil(TILE) as u32, nb as u32];
        let binds = [Bind::whole(a.buf), Bind::whole(b.buf), Bind::whole(c)];
        exec::dispatch_binds("matmul_bf16", Variant::F32, &binds, &p, groups)?;
    }
    Ok(())
}
