//! Launcher for shaders/matmul.wgsl: batched C = alpha·A·B + beta·C with
//! arbitrary strides for A and B (transposed and broadcast operands need no copy).

use super::exec::{self, Variant};
use super::shaders::MATMUL;
use crate::bail;
use crate::error::Result;

/// Output tile side of one workgroup: the grid is (⌈n/TILE⌉, ⌈m/TILE⌉, batch).
pub const TILE: usize = 128;

/// A strided matrix operand: element offset, batch, row and column strides.
#[derive(Copy, Clone)]
pub struct Mat<'a> {
    pub buf: &'a wgpu::Buffer,
    pub off: usize,
    pub bs: isize,
    pub rs: isize,
    pub cs: isize,
}

fn word(v: isize, what: &str) -> Result<u32> {
    match u32::try_from(v) {
        Ok(w) => Ok(w),
        Err(_) => bail!(NotImplemented, "GPU matmul: {} {} out of range (negative strides or over 2^32 elements)", what, v),
    }
}

/// C[i] (m x n, contiguous, batch stride m·n from `c_off`) = A[i] · B[i] for
/// i < batch; A, B and C all hold the `variant`'s element type.
#[allow(clippy::too_many_arguments)]
pub fn gemm(m: usize, n: usize, k: usize, batch: usize, a: Mat, b: Mat, c: &wgpu::Buffer, c_off: usize, variant: Variant) -> Result<()> {
    if m == 0 || n == 0 || batch == 0 {
        return Ok(());
    }
    // The vectorized entry reads each operand in vec4s along its unit-stride
    // dimension (k-fast when its column stride is 1), which must be a multiple
    // of 4 with 4-aligned offset and strides (shaders/matmul.wgsl).
    let aligned = |extent: usize, off: usize, strides: [isize; 2]| extent.is_multiple_of(4) && off.is_multiple_of(4) && strides.iter().all(|s| s % 4 == 0);
    let a_ok = if a.cs == 1 { aligned(k, a.off, [a.rs, a.bs]) } else { a.rs == 1 && aligned(m, a.off, [a.cs, a.bs]) };
    let b_ok = if b.cs == 1 { aligned(n, b.off, [b.rs, b.bs]) } else { b.rs == 1 && aligned(k, b.off, [b.cs, b.bs]) };
    let vec4 = a_ok && b_ok && n.is_multiple_of(4) && c_off.is_multiple_of(4);
    let entry = if vec4 { "matmul_vec4" } else { "matmul" };
    // At most 65,535 workgroups in z: long batches go in chunks.
    let mut start = 0;
    while start < batch {
        let count = (batch - start).min(65_535);
        let s = start as isize;
        let p = [
            m as u32, n as u32, k as u32, count as u32,
            word(a.off as isize + s * a.bs, "offset")?, word(a.bs, "stride")?, word(a.rs, "stride")?, word(a.cs, "stride")?,
            word(b.off as isize + s * b.bs, "offset")?, word(b.bs, "stride")?, word(b.rs, "stride")?, word(b.cs, "stride")?,
            word((c_off + start * m * n) as isize, "offset")?, (m * n) as u32,
            1f32.to_bits(), 0f32.to_bits(),
        ];
        let groups = [n.div_ceil(TILE) as u32, m.div_ceil(TILE) as u32, count as u32];
        exec::dispatch(&MATMUL, entry, variant, &[a.buf, b.buf, c], &p, groups)?;
        start += count;
    }
    Ok(())
}
