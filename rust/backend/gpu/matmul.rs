//! Launcher for shaders/matmul.wgsl: batched C = epilogue(alpha·A·B + beta·C)
//! with arbitrary strides for A and B (transposed and broadcast operands need
//! no copy), in one of several tile shapes (backend/gpu/autotune.rs picks).

use super::autotune::Choice;
use super::exec::{self, Bind, Variant};
use super::shaders::MATMUL;
use crate::bail;
use crate::error::Result;

/// The output tile of one workgroup (rows x columns of C).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Tile {
    T128x128,
    T128x64,
    T64x128,
    T64x64,
}

impl Tile {
    pub const ALL: [Tile; 4] = [Tile::T128x128, Tile::T128x64, Tile::T64x128, Tile::T64x64];

    /// (rows, columns).
    pub fn dims(self) -> (usize, usize) {
        match self {
            Tile::T128x128 => (128, 128),
            Tile::T128x64 => (128, 64),
            Tile::T64x128 => (64, 128),
            Tile::T64x64 => (64, 64),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Tile::T128x128 => "128x128",
            Tile::T128x64 => "128x64",
            Tile::T64x128 => "64x128",
            Tile::T64x64 => "64x64",
        }
    }

    pub fn parse(s: &str) -> Option<Tile> {
        Tile::ALL.into_iter().find(|t| t.name() == s)
    }

    /// Workgroups of this tile covering an m x n output.
    pub fn groups(self, m: usize, n: usize) -> usize {
        let (tm, tn) = self.dims();
        m.div_ceil(tm) * n.div_ceil(tn)
    }

    fn entry(self, vec4: bool) -> &'static str {
        match (self, vec4) {
            (Tile::T128x128, false) => "matmul",
            (Tile::T128x128, true) => "matmul_vec4",
            (Tile::T128x64, false) => "matmul_128x64",
            (Tile::T128x64, true) => "matmul_128x64_vec4",
            (Tile::T64x128, false) => "matmul_64x128",
            (Tile::T64x128, true) => "matmul_64x128_vec4",
            (Tile::T64x64, false) => "matmul_64x64",
            (Tile::T64x64, true) => "matmul_64x64_vec4",
        }
    }
}

/// The epilogue's activation (the shader's `act` codes).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Act {
    #[default]
    None = 0,
    Relu = 1,
    Gelu = 2,
    GeluTanh = 3,
    Silu = 4,
}

/// What the kernel does to each output before storing it: add `bias[col]`
/// (one value per column, from an element offset), apply `act`, then add the
/// residual (laid out like C, from an element offset).
#[derive(Copy, Clone, Default)]
pub struct Epilogue<'a> {
    pub bias: Option<(&'a wgpu::Buffer, usize)>,
    pub act: Act,
    pub residual: Option<(&'a wgpu::Buffer, usize)>,
}

/// A strided matrix operand: element offset, batch, row and column strides.
#[derive(Copy, Clone)]
pub struct Mat<'a> {
    pub buf: &'a wgpu::Buffer,
    pub off: usize,
    pub bs: isize,
    pub rs: isize,
    pub cs: isize,
}

impl Mat<'_> {
    /// Read along k (A) or along n (B): the coalesced direction the kernel picks.
    pub fn row_fast(&self) -> bool {
        self.cs == 1 || self.rs != 1
    }
}

crate::wgsl_params! {
    /// Sizes, then element offset and batch / row / column strides of A, B
    /// and C (C's row stride is n); beta == 0 never reads C; then the
    /// epilogue's bias and residual offsets and its flags.
    pub struct Params in MATMUL {
        m: u32, n: u32, k: u32, batch: u32,
        a_off: u32, a_bs: u32, a_rs: u32, a_cs: u32,
        b_off: u32, b_bs: u32, b_rs: u32, b_cs: u32,
        c_off: u32, c_bs: u32,
        alpha: f32, beta: f32,
        bias_off: u32, res_off: u32, res_bs: u32, epi: u32,
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

/// Whether the vectorized entry can run: it reads each operand in vec4s along
/// its unit-stride dimension (k-fast when its column stride is 1), which must
/// be a multiple of 4 with 4-aligned offset and strides (shaders/matmul.wgsl).
pub fn vec4_ok(m: usize, n: usize, k: usize, a: &Mat, b: &Mat, c_off: usize) -> bool {
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
    a_ok && b_ok && n.is_multiple_of(4) && c_off.is_multiple_of(4)
}

/// C[i] (m x n, contiguous, batch stride m·n from `c_off`) = epi(A[i] · B[i])
/// for i < batch in `tile`s; A, B, C, bias and residual all hold the
/// `variant`'s element type.
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
    choice: Choice,
    epi: Epilogue,
) -> Result<()> {
    if m == 0 || n == 0 || batch == 0 {
        return Ok(());
    }
    // Tensor cores take plain float16 products (no epilogue) where the adapter
    // has them and the tuner chose them (autotune::Problem::coop).
    let plain = epi.bias.is_none() && epi.act == Act::None && epi.residual.is_none();
    if let Some(kernel) = choice.coop.filter(|_| variant == Variant::F16 && plain) {
        if super::matmul_coop::try_gemm(kernel, m, n, k, batch, a, b, c, c_off)? {
            return Ok(());
        }
    }
    let tile = choice.tile;
    let vec4 = vec4_ok(m, n, k, &a, &b, c_off);
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
        let res = match epi.residual {
            Some((r, _)) => exec::fits(r, sc, eb)?,
            None => true,
        };
        Ok(exec::fits(a.buf, sa, eb)?
            && exec::fits(b.buf, sb, eb)?
            && exec::fits(c, sc, eb)?
            && res)
    };
    let (tm, tn) = tile.dims();
    let mut count = batch.min(65_535);
    while count > 1 && !fits(count, m)? {
        count = count.div_ceil(2);
    }
    let mut rows = m;
    while !fits(count, rows)? {
        if rows <= tm {
            bail!(NotImplemented, "matmul on the GPU: an operand exceeds the adapter's binding limit even {} rows at a time", rows);
        }
        rows = rows.div_ceil(2).next_multiple_of(tm);
    }
    let dummy = exec::dummy()?;
    let (wbias, bias_off) = match epi.bias {
        Some((buf, off)) => {
            let (w, base) = Bind::window(buf, off, off + n - 1, eb)?;
            (w, off - base)
        }
        None => (Bind::whole(dummy), 0),
    };
    let flags =
        epi.bias.is_some() as u32 | (epi.residual.is_some() as u32) << 1 | (epi.act as u32) << 2;
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
            let (wr, res_off) = match epi.residual {
                Some((buf, off)) => {
                    let lo = off + start * m * n + r0 * n;
                    let (w, base) = Bind::window(buf, lo, lo + sc - 1, eb)?;
                    (w, lo - base)
                }
                None => (Bind::whole(dummy), 0),
            };
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
                bias_off: bias_off as u32,
                res_off: res_off as u32,
                res_bs: (m * n) as u32,
                epi: flags,
            };
            // Window starts keep the vec4 alignment of the offsets.
            let v4 = vec4 && [ba, bb, bc].iter().all(|w| w % 4 == 0);
            let groups = [n.div_ceil(tn) as u32, mr.div_ceil(tm) as u32, nb as u32];
            exec::dispatch_binds(tile.entry(v4), variant, &[wa, wb, wc, wbias, wr], &p, groups)?;
        }
    }
    Ok(())
}
