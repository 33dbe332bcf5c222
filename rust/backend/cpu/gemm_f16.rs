//! float16 matrix products on AVX-512: both operands are widened to float32
//! with F16C conversions while they are packed into micro-panels, a float32
//! FMA micro-kernel accumulates over all of k, and each result is rounded to
//! float16 once, on store. The alternative costs two whole-tensor float32
//! copies of the operands and one of the output (the gemm crate's own
//! float16 kernel rounds its partial sums to float16 and is slower still).
//!
//! Layout as in `gemm_bf16`: operands packed once into zero-padded
//! micro-panels (A: per k, MR rows; B: per k, NR columns), output blocks of
//! MC x NC as the parallel tasks, each walking k in KC chunks with float32
//! partial sums in a per-task buffer between chunks.

use super::gemm::Mat;
use super::P;
use half::f16;

/// Rows per micro-tile: 12 x 2 accumulators + 2 B registers + 1 broadcast
/// of the 32 zmm registers.
const MR: usize = 12;
/// Columns per micro-tile: two zmm of float32.
const NR: usize = 32;
/// k per chunk: a B micro-panel is then 24 KB (L1), an A block 72 KB (L2).
const KC: usize = 192;
/// Rows and columns of one parallel task's output block.
const MC: usize = MR * 8;
const NC: usize = NR * 4;
/// Elements widened at a time when packing a strided row.
const ROW: usize = 256;

/// Whether this CPU runs the float16 kernel (AVX-512F has the 16-wide
/// conversions). RUMUS_NO_F16_GEMM set turns it off, so tests reach the
/// widening fallback on any CPU.
pub fn available() -> bool {
    cpu() && std::env::var_os("RUMUS_NO_F16_GEMM").is_none()
}

fn cpu() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// dst (m x n) = lhs (m x k) @ rhs (k x n) in float16 (float32 sums),
/// overwriting dst, or added to it (before the one rounding) with `acc`.
///
/// # Safety
/// The three matrices must be valid for their shapes and strides, dst must
/// not overlap the inputs, and the CPU must have AVX-512F (`available()`).
#[allow(clippy::too_many_arguments)]
pub unsafe fn matmul(
    m: usize,
    n: usize,
    k: usize,
    dst: Mat<f16>,
    lhs: Mat<f16>,
    rhs: Mat<f16>,
    threads: usize,
    acc: bool,
) {
    if m == 0 || n == 0 {
        return;
    }
    let (mp, np) = (m.div_ceil(MR), n.div_ceil(NR));
    let mut buf = super::scratch::Scratch::new((mp * MR + np * NR) * k);
    let ppa = P(buf.ptr::<f32>());
    let ppb = P(ppa.at((mp * MR * k) as isize));
    let par = threads > 1;
    let split = |count: usize, f: &(dyn Fn(usize) + Sync)| {
        if par {
            super::team::for_each(count, f)
        } else {
            (0..count).for_each(f)
        }
    };
    // SAFETY (both packs): panel i writes only its own k * MR (or NR)
    // floats; reads stay inside the caller's valid operand.
    let (xa, xb) = (P(lhs.ptr), P(rhs.ptr));
    split(mp, &|i| unsafe {
        pack(ppa.get().add(i * MR * k), xa.get(), lhs.rs, lhs.cs, i * MR, m, k, MR)
    });
    split(np, &|j| unsafe {
        pack(ppb.get().add(j * NR * k), xb.get(), rhs.cs, rhs.rs, j * NR, n, k, NR)
    });
    let (mb, nb) = (m.div_ceil(MC), n.div_ceil(NC));
    let task = |t: usize| {
        let (i0, j0) = ((t / nb) * MC, (t % nb) * NC);
        let mut sums = vec![0f32; MC * NC];
        let mut kp = 0;
        while kp < k {
            let len = KC.min(k - kp);
            for jr in (j0..(j0 + NC).min(n)).step_by(NR) {
                for ir in (i0..(i0 + MC).min(m)).step_by(MR) {
                    // SAFETY: panels ir/MR and jr/NR exist and hold k steps;
                    // the micro-tile of `sums` is inside the MC x NC buffer.
                    unsafe {
                        micro(
                            len,
                            ppa.get().add(ir * k + kp * MR),
                            ppb.get().add(jr * k + kp * NR),
                            sums.as_mut_ptr().add((ir - i0) * NC + (jr - j0)),
                            kp == 0,
                        )
                    };
                }
            }
            kp += len;
        }
        let (rows, cols) = (MC.min(m - i0), NC.min(n - j0));
        // SAFETY: the block [i0.., j0..] of dst is this task's alone.
        unsafe { store(&sums, dst, i0, j0, rows, cols, acc) };
    };
    split(mb * nb, &task);
}

/// Packs `width` rows (of A, or columns of B) starting at `r0` as float32:
/// element (p, r) = x[r, p], zero outside the matrix (every element is
/// written). `sr` and `sk` are the
/// strides along r and k. Rows contiguous along r (B row-major) widen a
/// whole k step at a time; others widen along k through a small buffer.
///
/// # Safety
/// `out` holds width * k floats; `x` is valid for `len` rows of k.
#[allow(clippy::too_many_arguments)]
unsafe fn pack(
    out: *mut f32,
    x: *const f16,
    sr: isize,
    sk: isize,
    r0: usize,
    len: usize,
    k: usize,
    width: usize,
) {
    let rows = width.min(len - r0);
    let x = x.offset(r0 as isize * sr);
    for p in 0..k {
        for r in rows..width {
            *out.add(p * width + r) = 0.0;
        }
    }
    if sr == 1 {
        for p in 0..k {
            widen(x.offset(p as isize * sk), out.add(p * width), rows);
        }
        return;
    }
    let (mut src, mut wide) = ([f16::ZERO; ROW], [0f32; ROW]);
    for r in 0..rows {
        let row = x.offset(r as isize * sr);
        for c0 in (0..k).step_by(ROW) {
            let len = ROW.min(k - c0);
            let s = if sk == 1 {
                row.add(c0)
            } else {
                for (i, v) in src[..len].iter_mut().enumerate() {
                    *v = *row.offset((c0 + i) as isize * sk);
                }
                src.as_ptr()
            };
            widen(s, wide.as_mut_ptr(), len);
            for (i, &v) in wide[..len].iter().enumerate() {
                *out.add((c0 + i) * width + r) = v;
            }
        }
    }
}

/// dst[..n] = src[..n] as float32 (16 at a time with `vcvtph2ps`).
///
/// # Safety
/// Both pointers are valid for n contiguous elements.
unsafe fn widen(src: *const f16, dst: *mut f32, n: usize) {
    // SAFETY: callers reach this only after `available()`.
    #[cfg(target_arch = "x86_64")]
    let i = unsafe { widen16(src, dst, n) };
    #[cfg(not(target_arch = "x86_64"))]
    let i = 0;
    for j in i..n {
        *dst.add(j) = (*src.add(j)).to_f32();
    }
}

/// Widens the whole 16-element groups of n; returns how many it did.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn widen16(src: *const f16, dst: *mut f32, n: usize) -> usize {
    use std::arch::x86_64::*;
    let mut i = 0;
    while i + 16 <= n {
        let h = _mm256_loadu_si256(src.add(i).cast());
        _mm512_storeu_ps(dst.add(i), _mm512_cvtph_ps(h));
        i += 16;
    }
    i
}

/// One MR x NR micro-tile over `kc` steps: sums (row stride NC) = (or +=,
/// unless `first`) a-panel x b-panel.
#[inline]
unsafe fn micro(kc: usize, a: *const f32, b: *const f32, sums: *mut f32, first: bool) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `matmul`'s caller checked `available()`; pointers as in `micro_f32`.
    unsafe {
        micro_f32(kc, a, b, sums, first)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (kc, a, b, sums, first);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn micro_f32(kc: usize, a: *const f32, b: *const f32, sums: *mut f32, first: bool) {
    use std::arch::x86_64::*;
    let mut c = [[_mm512_setzero_ps(); 2]; MR];
    if !first {
        for (i, row) in c.iter_mut().enumerate() {
            row[0] = _mm512_loadu_ps(sums.add(i * NC));
            row[1] = _mm512_loadu_ps(sums.add(i * NC + 16));
        }
    }
    for p in 0..kc {
        let b0 = _mm512_loadu_ps(b.add(p * NR));
        let b1 = _mm512_loadu_ps(b.add(p * NR + 16));
        let ap = a.add(p * MR);
        for (i, row) in c.iter_mut().enumerate() {
            let av = _mm512_set1_ps(*ap.add(i));
            row[0] = _mm512_fmadd_ps(av, b0, row[0]);
            row[1] = _mm512_fmadd_ps(av, b1, row[1]);
        }
    }
    for (i, row) in c.iter().enumerate() {
        _mm512_storeu_ps(sums.add(i * NC), row[0]);
        _mm512_storeu_ps(sums.add(i * NC + 16), row[1]);
    }
}

/// Rounds the block's float32 sums to float16 into dst (adding dst's old
/// values first with `acc`).
///
/// # Safety
/// dst is valid for rows x cols at [i0, j0]; the CPU has AVX-512F.
unsafe fn store(
    sums: &[f32],
    dst: Mat<f16>,
    i0: usize,
    j0: usize,
    rows: usize,
    cols: usize,
    acc: bool,
) {
    for i in 0..rows {
        let base = dst.ptr.offset((i0 + i) as isize * dst.rs + j0 as isize * dst.cs);
        let row = &sums[i * NC..i * NC + cols];
        let mut j = 0;
        #[cfg(target_arch = "x86_64")]
        if dst.cs == 1 {
            // SAFETY: 16 sums and 16 dst elements from j on are in the row.
            while j + 16 <= cols {
                unsafe { round16(row.as_ptr().add(j), base.add(j), acc) };
                j += 16;
            }
        }
        for (j, &s) in row.iter().enumerate().skip(j) {
            let d = base.offset(j as isize * dst.cs);
            *d = f16::from_f32(if acc { s + (*d).to_f32() } else { s });
        }
    }
}

/// 16 float32 (plus dst's old values with `acc`) to float16, rounded to
/// nearest even (`vcvtps2ph`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn round16(src: *const f32, dst: *mut f16, acc: bool) {
    use std::arch::x86_64::*;
    let mut v = _mm512_loadu_ps(src);
    if acc {
        v = _mm512_add_ps(v, _mm512_cvtph_ps(_mm256_loadu_si256(dst.cast())));
    }
    let h = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
    _mm256_storeu_si256(dst.cast(), h);
}
