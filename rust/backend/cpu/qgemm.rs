//! Quantized CPU kernels: the int8 GEMM of dynamically quantized Linear
//! layers and the Q8 block-format matrix product.
//!
//! int8 GEMM: activations are asymmetric uint8 restricted to [0, 127] (the
//! "reduce_range" of PyTorch's x86 backend), weights symmetric int8. With 7-bit
//! activations, AVX2's `vpmaddubsw` (u8 × s8 pairs summed into a saturating
//! int16) cannot saturate (2 · 127 · 128 < 32767), so every path — AVX512-VNNI
//! `vpdpbusd`, AVX2 `vpmaddubsw` + `vpmaddwd`, scalar — gives the same exact
//! int32 sums, and the same bytes also read as int8 for the GPU's signed
//! `dot4I8Packed`. Rows are zero-padded to a multiple of 64 bytes, so the SIMD
//! loops have no tails; padding contributes 0 to every sum.

use super::team;
use crate::bail;
use crate::error::Result;
use half::f16;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

/// Row padding of packed int8 operands, in bytes (one 512-bit register).
pub const K_ALIGN: usize = 64;

/// Largest activation code: 7 bits (see the module comment).
pub const A_MAX: i32 = 127;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Path {
    Vnni,
    Avx2,
    Scalar,
}

impl Path {
    pub fn name(self) -> &'static str {
        match self {
            Path::Vnni => "avx512_vnni",
            Path::Avx2 => "avx2",
            Path::Scalar => "scalar",
        }
    }
    fn from_name(s: &str) -> Option<Path> {
        [Path::Vnni, Path::Avx2, Path::Scalar].into_iter().find(|p| p.name() == s)
    }
    fn supported(self) -> bool {
        match self {
            Path::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Path::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            Path::Vnni => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vnni")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }
}

/// 0: automatic; else 1 + the index of a forced path (tests force each one).
static FORCED: AtomicU8 = AtomicU8::new(0);

fn detect() -> Path {
    [Path::Vnni, Path::Avx2].into_iter().find(|p| p.supported()).unwrap_or(Path::Scalar)
}

fn parse(name: &str) -> Result<Option<Path>> {
    if name == "auto" {
        return Ok(None);
    }
    let Some(p) = Path::from_name(name) else {
        bail!(
            Value,
            "unknown int8 GEMM path '{}': expected auto, avx512_vnni, avx2 or scalar",
            name
        );
    };
    if !p.supported() {
        bail!(Runtime, "the int8 GEMM path '{}' needs CPU features this machine lacks", name);
    }
    Ok(Some(p))
}

/// Forces a kernel path ("auto" restores run-time detection), for tests and
/// benchmarks comparing paths on one machine.
pub fn set_path(name: &str) -> Result<()> {
    let code = match parse(name)? {
        None => 0,
        Some(p) => 1 + p as u8,
    };
    FORCED.store(code, Ordering::Relaxed);
    Ok(())
}

/// The path int8 GEMMs take: the forced one, else RUMUS_QGEMM_PATH (read once),
/// else the widest the CPU has.
pub fn path() -> Result<Path> {
    static ENV: OnceLock<std::result::Result<Option<Path>, String>> = OnceLock::new();
    match FORCED.load(Ordering::Relaxed) {
        1 => return Ok(Path::Vnni),
        2 => return Ok(Path::Avx2),
        3 => return Ok(Path::Scalar),
        _ => {}
    }
    let env = ENV.get_or_init(|| match std::env::var("RUMUS_QGEMM_PATH") {
        Ok(v) => parse(&v).map_err(|e| format!("RUMUS_QGEMM_PATH: {}", e)),
        Err(_) => Ok(None),
    });
    match env {
        Ok(p) => Ok(p.unwrap_or_else(detect)),
        Err(e) => bail!(Value, "{}", e),
    }
}

/// Quantizes each of the `m` rows of `x` (row length `k`) to codes in
/// [0, A_MAX] with its own scale and zero point (the row's range widened to
/// hold 0), into `a` (rows of `kp` bytes, padding left 0). Returns (scale,
/// zero point) per row. The GPU's `quantize_rows` computes the same.
pub fn quantize_rows(x: &[f32], m: usize, k: usize, kp: usize, a: &mut [u8]) -> Vec<(f32, i32)> {
    let row = |i: usize, dst: &mut [u8]| -> (f32, i32) {
        let xs = &x[i * k..(i + 1) * k];
        let (lo, hi) = xs.iter().fold((0f32, 0f32), |(l, h), &v| (l.min(v), h.max(v)));
        let mut scale = (hi - lo) / A_MAX as f32;
        if !(scale > 0.0 && scale.is_finite()) {
            scale = 1.0;
        }
        let zp = ((-lo / scale).round_ties_even() as i32).clamp(0, A_MAX);
        for (d, &v) in dst.iter_mut().zip(xs) {
            *d = ((v / scale).round_ties_even() as i32 + zp).clamp(0, A_MAX) as u8;
        }
        (scale, zp)
    };
    let a_ptr = super::P(a.as_mut_ptr());
    team::map(m, |i| {
        // SAFETY: each task writes its own row of `a`.
        let dst = unsafe { std::slice::from_raw_parts_mut(a_ptr.at((i * kp) as isize), k) };
        row(i, dst)
    })
}

/// One tile of the product: NR × MR int32 dot products of length `kp` (a
/// multiple of K_ALIGN) between rows of `a` (stride `lda`) and rows of `w`.
type Tile<const MR: usize, const NR: usize> =
    unsafe fn(*const u8, usize, *const i8, usize, usize) -> [[i32; NR]; MR];

unsafe fn tile_scalar<const MR: usize, const NR: usize>(
    a: *const u8,
    lda: usize,
    w: *const i8,
    ldw: usize,
    kp: usize,
) -> [[i32; NR]; MR] {
    let mut out = [[0i32; NR]; MR];
    for (i, row) in out.iter_mut().enumerate() {
        let ar = std::slice::from_raw_parts(a.add(i * lda), kp);
        for (j, o) in row.iter_mut().enumerate() {
            let wr = std::slice::from_raw_parts(w.add(j * ldw), kp);
            *o = ar.iter().zip(wr).map(|(&x, &y)| x as i32 * y as i32).sum();
        }
    }
    out
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn tile_avx2<const MR: usize, const NR: usize>(
    a: *const u8,
    lda: usize,
    w: *const i8,
    ldw: usize,
    kp: usize,
) -> [[i32; NR]; MR] {
    use std::arch::x86_64::*;
    let ones = _mm256_set1_epi16(1);
    let mut acc = [[_mm256_setzero_si256(); NR]; MR];
    let mut k = 0;
    while k < kp {
        let mut wv = [_mm256_setzero_si256(); NR];
        for (j, v) in wv.iter_mut().enumerate() {
            *v = _mm256_loadu_si256(w.add(j * ldw + k) as *const __m256i);
        }
        for (i, acc_row) in acc.iter_mut().enumerate() {
            let av = _mm256_loadu_si256(a.add(i * lda + k) as *const __m256i);
            for (c, v) in acc_row.iter_mut().zip(&wv) {
                // u8 × s8 pairs into int16 (no saturation with 7-bit a), then pairs into int32.
                let p = _mm256_maddubs_epi16(av, *v);
                *c = _mm256_add_epi32(*c, _mm256_madd_epi16(p, ones));
            }
        }
        k += 32;
    }
    let mut out = [[0i32; NR]; MR];
    for (o_row, acc_row) in out.iter_mut().zip(&acc) {
        for (o, c) in o_row.iter_mut().zip(acc_row) {
            let s = _mm_add_epi32(_mm256_castsi256_si128(*c), _mm256_extracti128_si256(*c, 1));
            let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b01_00_11_10));
            let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b10_11_00_01));
            *o = _mm_cvtsi128_si32(s);
        }
    }
    out
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn tile_vnni<const MR: usize, const NR: usize>(
    a: *const u8,
    lda: usize,
    w: *const i8,
    ldw: usize,
    kp: usize,
) -> [[i32; NR]; MR] {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_setzero_si512(); NR]; MR];
    let mut k = 0;
    while k < kp {
        let mut wv = [_mm512_setzero_si512(); NR];
        for (j, v) in wv.iter_mut().enumerate() {
            *v = _mm512_loadu_si512(w.add(j * ldw + k) as *const __m512i);
        }
        for (i, acc_row) in acc.iter_mut().enumerate() {
            let av = _mm512_loadu_si512(a.add(i * lda + k) as *const __m512i);
            for (c, v) in acc_row.iter_mut().zip(&wv) {
                *c = _mm512_dpbusd_epi32(*c, av, *v);
            }
        }
        k += 64;
    }
    let mut out = [[0i32; NR]; MR];
    for (o_row, acc_row) in out.iter_mut().zip(&acc) {
        for (o, c) in o_row.iter_mut().zip(acc_row) {
            *o = _mm512_reduce_add_epi32(*c);
        }
    }
    out
}

/// The tiles of one path: full (MR × NR), and the remainders of rows and columns.
struct Tiles<const MR: usize, const NR: usize> {
    full: Tile<MR, NR>,
    rows: Tile<1, NR>,
    cols: Tile<MR, 1>,
    one: Tile<1, 1>,
}

/// Columns of the output per task.
const NC: usize = 16;

/// Calls `store(i, j, Σ_k a[i, k] · w[j, k])` for every i < m, j < n.
///
/// # Safety
/// `a` holds m rows of `kp` bytes, `w` n rows of `kp` bytes; `kp` is a multiple of K_ALIGN;
/// `store` may be called from several threads for distinct (i, j).
unsafe fn drive<const MR: usize, const NR: usize>(
    t: Tiles<MR, NR>,
    m: usize,
    n: usize,
    kp: usize,
    a: *const u8,
    w: *const i8,
    store: &(dyn Fn(usize, usize, i32) + Sync),
) {
    let (a, w) = (super::P(a as *mut u8), super::P(w as *mut i8));
    team::for_each_if(m * n * kp / 16, n.div_ceil(NC), |c| {
        let (j0, j1) = (c * NC, (c * NC + NC).min(n));
        let (a, w) = (a.get() as *const u8, w.get() as *const i8);
        let mut j = j0;
        while j < j1 {
            let wide = j + NR <= j1;
            let mut i = 0;
            while i < m {
                let tall = i + MR <= m;
                let (ap, wp) = (a.add(i * kp), w.add(j * kp));
                match (tall, wide) {
                    (true, true) => emit(&(t.full)(ap, kp, wp, kp, kp), i, j, store),
                    (false, true) => emit(&(t.rows)(ap, kp, wp, kp, kp), i, j, store),
                    (true, false) => emit(&(t.cols)(ap, kp, wp, kp, kp), i, j, store),
                    (false, false) => emit(&(t.one)(ap, kp, wp, kp, kp), i, j, store),
                }
                i += if tall { MR } else { 1 };
            }
            j += if wide { NR } else { 1 };
        }
    });
}

fn emit<const R: usize, const C: usize>(
    v: &[[i32; C]; R],
    i: usize,
    j: usize,
    store: &(dyn Fn(usize, usize, i32) + Sync),
) {
    for (di, row) in v.iter().enumerate() {
        for (dj, &x) in row.iter().enumerate() {
            store(i + di, j + dj, x);
        }
    }
}

/// The int32 products a (m × kp, uint8 codes ≤ A_MAX) · wᵀ (n × kp, int8),
/// each passed to `store(i, j, sum)`, on the selected path.
///
/// # Safety
/// As for `drive`.
pub unsafe fn gemm_s32(
    m: usize,
    n: usize,
    kp: usize,
    a: *const u8,
    w: *const i8,
    store: &(dyn Fn(usize, usize, i32) + Sync),
) -> Result<()> {
    debug_assert!(kp.is_multiple_of(K_ALIGN));
    match path()? {
        #[cfg(target_arch = "x86_64")]
        Path::Vnni => drive::<4, 4>(
            Tiles {
                full: tile_vnni::<4, 4>,
                rows: tile_vnni::<1, 4>,
                cols: tile_vnni::<4, 1>,
                one: tile_vnni::<1, 1>,
            },
            m,
            n,
            kp,
            a,
            w,
            store,
        ),
        // AVX2 has 16 registers: 2 × 4 accumulators plus the operands fit.
        #[cfg(target_arch = "x86_64")]
        Path::Avx2 => drive::<2, 4>(
            Tiles {
                full: tile_avx2::<2, 4>,
                rows: tile_avx2::<1, 4>,
                cols: tile_avx2::<2, 1>,
                one: tile_avx2::<1, 1>,
            },
            m,
            n,
            kp,
            a,
            w,
            store,
        ),
        _ => drive::<2, 4>(
            Tiles {
                full: tile_scalar::<2, 4>,
                rows: tile_scalar::<1, 4>,
                cols: tile_scalar::<2, 1>,
                one: tile_scalar::<1, 1>,
            },
            m,
            n,
            kp,
            a,
            w,
            store,
        ),
    }
    Ok(())
}

/// Lanes of the float32 dot product: four 512-bit accumulator chains hide the FMA latency.
const LANES: usize = 64;

#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; LANES];
    let (ac, bc) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = ac.remainder().iter().zip(bc.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ac.zip(bc) {
        for l in 0..LANES {
            lanes[l] += x[l] * y[l];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// One Q8 row (blocks of `bs` codes, each led by a word holding its float16
/// scale) dequantized into `out` (whole blocks, padding included).
#[inline(always)]
fn dequantize_row(row: &[u32], bs: usize, out: &mut [f32]) {
    for (blk, o) in row.chunks_exact(1 + bs / 4).zip(out.chunks_exact_mut(bs)) {
        let s = f16::from_bits(blk[0] as u16).to_f32();
        let q: &[i8] = bytemuck::cast_slice(&blk[1..]);
        for (o, &c) in o.iter_mut().zip(q) {
            *o = c as f32 * s;
        }
    }
}

/// Dot product of `x` with one Q8 row of whole blocks of BS codes (k a
/// multiple of BS), dequantizing on read; `scales` are the blocks' scales.
#[inline(always)]
fn q8_dot<const BS: usize>(x: &[f32], row: &[u32], scales: &[f32]) -> f32 {
    let mut lanes = [0f32; 16];
    for ((blk, xs), &s) in row.chunks_exact(1 + BS / 4).zip(x.chunks_exact(BS)).zip(scales) {
        let q: &[i8] = bytemuck::cast_slice(&blk[1..]);
        let mut part = [0f32; 16];
        for c in 0..BS / 16 {
            for l in 0..16 {
                part[l] += xs[c * 16 + l] * q[c * 16 + l] as f32;
            }
        }
        for l in 0..16 {
            lanes[l] += part[l] * s;
        }
    }
    lanes.iter().sum::<f32>()
}

/// Input rows up to which each weight row is read straight from its Q8 bytes
/// (batch-1 inference is memory-bound); above, rows are dequantized once and
/// reused for every input row.
const DIRECT_ROWS: usize = 4;

/// out (m × n) = x (m × k) · Wᵀ (+ bias) where W's n rows are Q8 blocks of
/// `bs` codes, ⌈k / bs⌉ blocks per row. Memory traffic is the Q8 bytes (about
/// a quarter of float32's).
pub fn q8_linear(
    x: &[f32],
    m: usize,
    k: usize,
    words: &[u32],
    n: usize,
    bs: usize,
    bias: Option<&[f32]>,
    out: &mut [f32],
) {
    let kb = k.div_ceil(bs);
    let bw = 1 + bs / 4;
    let row_words = kb * bw;
    let direct = m <= DIRECT_ROWS && bs == 32 && k.is_multiple_of(32);
    let o = super::P(out.as_mut_ptr());
    team::for_each_if(m * n * k / 8, n.div_ceil(NC), |c| {
        super::simd(
            #[inline(always)]
            || {
                let mut w = vec![0f32; if direct { 0 } else { kb * bs }];
                let mut scales = vec![0f32; kb];
                for j in c * NC..(c * NC + NC).min(n) {
                    let row = &words[j * row_words..(j + 1) * row_words];
                    let b = bias.map_or(0.0, |b| b[j]);
                    if direct {
                        for (s, blk) in scales.iter_mut().zip(row.chunks_exact(bw)) {
                            *s = f16::from_bits(blk[0] as u16).to_f32();
                        }
                    } else {
                        dequantize_row(row, bs, &mut w);
                    }
                    for i in 0..m {
                        let xi = &x[i * k..(i + 1) * k];
                        let v =
                            if direct { q8_dot::<32>(xi, row, &scales) } else { dot(xi, &w[..k]) };
                        // SAFETY: each task writes its own columns.
                        unsafe { *o.at((i * n + j) as isize) = v + b };
                    }
                }
            },
        )
    });
}

/// The values of a Q8 tensor: rows of `k` values, each ⌈k / bs⌉ blocks.
pub fn q8_dequantize(words: &[u32], k: usize, bs: usize, out: &mut [f32]) {
    let bw = 1 + bs / 4;
    let row_words = k.div_ceil(bs) * bw;
    for (row, ws) in out.chunks_mut(k).zip(words.chunks_exact(row_words)) {
        for (chunk, blk) in row.chunks_mut(bs).zip(ws.chunks_exact(bw)) {
            let s = f16::from_bits(blk[0] as u16).to_f32();
            let q: &[i8] = bytemuck::cast_slice(&blk[1..]);
            for (o, &c) in chunk.iter_mut().zip(q) {
                *o = c as f32 * s;
            }
        }
    }
}
