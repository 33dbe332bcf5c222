//! Launcher for shaders/matmul.wgsl: batched C = alpha·A·B + beta·C with
//! arbitrary strides for A and B (transposed and broadcast operands need no copy).

use super::exec::{self, Bind, Variant};
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

crate::wgsl_params! {
    /// Sizes, then element offset and batch / row / column strides of A, B
    /// and C (C's row stride is n); beta == 0 never reads C.
    pub struct Params in MATMUL {
        m: u32, n: u32, k: u32, batch: u32,
        a_off: u32, a_bs: u32, a_rs: u32, a_cs: u32,
        b_off: u32, b_bs: u32, b_rs: u32, b_cs: u32,
        c_off: u32, c_bs: u32,
        alpha: f32, beta: f32,
    }
}

fn word(v: isize, what: &str) -> Result<u32> {
    match u32::try_from(v) {
        Ok(w) => Ok(w),
        Err(_) => bail!(
            NotImplemented,
            "GPU matmul: {} {} out of range (negative strides or over 2^32 elements)",
            what,
            v
        ),
    }
}

/// C[i] (m x n, contiguous, batch stride m·n from `c_off`) = A[i] · B[i] for
/// i < batch; A, B and C all hold the `variant`'s element type.
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
    variant: Variant,
) -> Result<()> {
    if m == 0 || n == 0 || batch == 0 {
        return Ok(());
    }
    if variant == Variant::F16 && super::matmul_coop::try_gemm(m, n, k, batch, a, b, c, c_off)? {
        return Ok(());
    }
    // The vectorized entry reads each operand in vec4s along its unit-stride
    // dimension (k-fast when its column stride is 1), which must be a multiple
    // of 4 with 4-aligned offset and strides (shaders/matmul.wgsl).
    let aligned = |extent: usize, off: usize, strides: [isize; 2]| {
        extent.is_multiple_of(4) && off.is_multiple_of(4) && strides.iter().all(|s| s % 4 == 0)
    };
    let a_ok = if a.cs == 1 {
        aligned(k, a.off, [a.rs, a.bs])
    } else {
        a.rs == 1 && aligned(m, a.off, [a.cs, a.bs])
    };
    let b_ok = if b.cs == 1 {
        aligned(n, b.off, [b.rs, b.bs])
    } else {
        b.rs == 1 && aligned(k, b.off, [b.cs, b.bs])
    };
    let vec4 = a_ok && b_ok && n.is_multiple_of(4) && c_off.is_multiple_of(4);
    // Chunks of the batch (at most 65,535 workgroups in z) and, where an
    // operand is beyond the binding limit, of whole row tiles of A and C, so
    // that each operand's window fits one binding.
    let eb = if variant == Variant::F16 { 2 } else { 4 };
    let ext = |stride: isize, len: usize| stride.max(0) as usize * (len.max(1) - 1);
    let spans = |count: usize, rows: usize| {
        [
            ext(a.bs, count) + ext(a.rs, rows) + ext(a.cs, k) + 1,
            ext(b.bs, count) + ext(b.rs, k) + ext(b.cs, n) + 1,
            (count - 1) * m * n + rows * n,
        ]
    };
    let fits = |count: usize, rows: usize| -> Result<bool> {
        let [sa, sb, sc] = spans(count, rows);
        Ok(exec::fits(a.buf, sa, eb)? && exec::fits(b.buf, sb, eb)? && exec::fits(c, sc, eb)?)
    };
    let mut count = batch.min(65_535);
    while count > 1 && !fits(count, m)? {
        count = count.div_ceil(2);
    }
    let mut rows = m;
    while !fits(count, rows)? {
        if rows <= TILE {
            bail!(NotImplemented, "matmul on the GPU: an operand exceeds the adapter's binding limit even {} rows at a time", rows);
        }
        rows = rows.div_ceil(2).next_multiple_of(TILE);
    }
    for start in (0..batch).step_by(count) {
        let nb = count.min(batch - start);
        for r0 in (0..m).step_by(rows) {
            let mr = rows.min(m - r0);
            let [sa, sb, sc] = spans(nb, mr);
            let a_lo = word(a.off as isize + start as isize * a.bs + r0 as isize * a.rs, "offset")?
                as usize;
            let b_lo = word(b.off as isize + start as isize * b.bs, "offset")? as usize;
            let c_lo = c_off + start * m * n + r0 * n;
            let (wa, ba) = Bind::window(a.buf, a_lo, a_lo + sa - 1, eb)?;
            let (wb, bb) = Bind::window(b.buf, b_lo, b_lo + sb - 1, eb)?;
            let (wc, bc) = Bind::window(c, c_lo, c_lo + sc - 1, eb)?;
            let p = Params {
                m: mr as u32,
                n: n as u32,
                k: k as u32,
                batch: nb as u32,
                a_off: (a_lo - ba) as u32,
                a_bs: word(a.bs, "stride")?,
                a_rs: word(a.rs, "stride")?,
                a_cs: word(a.cs, "stride")?,
                b_off: (b_lo - bb) as u32,
                b_bs: word(b.bs, "stride")?,
                b_rs: word(b.rs, "stride")?,
                b_cs: word(b.cs, "stride")?,
                c_off: (c_lo - bc) as u32,
                c_bs: (m * n) as u32,
                alpha: 1.0,
                beta: 0.0,
            };
            // Window starts keep the vec4 alignment of the offsets.
            let entry = if vec4 && [ba, bb, bc].iter().all(|w| w % 4 == 0) {
                "matmul_vec4"
            } else {
                "matmul"
            };
            let groups = [n.div_ceil(TILE) as u32, mr.div_ceil(TILE) as u32, nb as u32];
            exec::dispatch_binds(entry, variant, &[wa, wb, wc], &p, groups)?;
        }
    }
    Ok(())
}
