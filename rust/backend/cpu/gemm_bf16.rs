//! bfloat16 matrix products on AVX512-BF16: `vdpbf16ps` multiplies pairs of
//! bfloat16 along k and accumulates them into float32 lanes, twice the
//! multiplies per instruction of a float32 FMA. Products accumulate in
//! float32 over all of k and are rounded to bfloat16 once, on store.
//!
//! Layout (GotoBLAS-style): both operands are packed once into micro-panels,
//! zero-padded to whole tiles and to an even k. A's panel holds, per pair of
//! k, the MR row pairs as 32-bit words (one broadcast each); B's holds, per
//! pair of k, NR columns of interleaved (k, k+1) bfloat16 pairs, the operand
//! order `vdpbf16ps` wants. Output blocks of MC x NC are the parallel tasks;
//! each walks k in KC chunks so that a B micro-panel stays in L1 while the
//! MR micro-panels of A stream past it, with float32 partial sums in a
//! per-task buffer between chunks.

use super::gemm::Mat;
use super::P;
use half::bf16;

/// Rows per micro-tile: 12 x 2 accumulators + 2 B registers + 1 broadcast
/// of the 32 zmm registers.
const MR: usize = 12;
/// Columns per micro-tile: two zmm of float32.
const NR: usize = 32;
/// Pairs of k per chunk: a B micro-panel is then 16 KB (L1), an A block 48 KB (L2).
const KC2: usize = 128;
/// Rows and columns of one parallel task's output block.
const MC: usize = MR * 8;
const NC: usize = NR * 4;

/// Whether this CPU runs the bfloat16 kernel (checked once, cached by std).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512bf16")
            && std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// dst (m x n) = lhs (m x k) @ rhs (k x n) in bfloat16 (float32 sums),
/// overwriting dst, or added to it (before the one rounding) with `acc`.
///
/// # Safety
/// The three matrices must be valid for their shapes and strides, dst must
/// not overlap the inputs, and `available()` must be true.
pub unsafe fn matmul(
    m: usize,
    n: usize,
    k: usize,
    dst: Mat<bf16>,
    lhs: Mat<bf16>,
    rhs: Mat<bf16>,
    threads: usize,
    acc: bool,
) {
    if m == 0 || n == 0 {
        return;
    }
    let k2 = k.div_ceil(2);
    let (mp, np) = (m.div_ceil(MR), n.div_ceil(NR));
    let mut buf = super::scratch::Scratch::new((mp * MR + np * NR) * k2);
    let ppa = P(buf.ptr::<u32>());
    let ppb = P(ppa.at((mp * MR * k2) as isize));
    let par = threads > 1;
    let split = |count: usize, f: &(dyn Fn(usize) + Sync)| {
        if par {
            super::team::for_each(count, f)
        } else {
            (0..count).for_each(f)
        }
    };
    // SAFETY (both packs): panel i writes only its own k2 * MR (or NR) words;
    // reads stay inside the caller's valid operand.
    let (xa, xb) = (P(lhs.ptr), P(rhs.ptr));
    split(mp, &|i| unsafe {
        pack(ppa.get().add(i * MR * k2), xa.get(), lhs.rs, lhs.cs, i * MR, m, k, MR)
    });
    split(np, &|j| unsafe {
        pack(ppb.get().add(j * NR * k2), xb.get(), rhs.cs, rhs.rs, j * NR, n, k, NR)
    });
    let (mb, nb) = (m.div_ceil(MC), n.div_ceil(NC));
    let task = |t: usize| {
        let (i0, j0) = ((t / nb) * MC, (t % nb) * NC);
        let mut sums = vec![0f32; MC * NC];
        let mut kp = 0;
        while kp < k2 {
            let len = KC2.min(k2 - kp);
            for jr in (j0..(j0 + NC).min(n)).step_by(NR) {
                for ir in (i0..(i0 + MC).min(m)).step_by(MR) {
                    // SAFETY: panels ir/MR and jr/NR exist and hold k2 pairs;
                    // the micro-tile of `sums` is inside the MC x NC buffer.
                    unsafe {
                        micro(
                            len,
                            ppa.get().add(ir * k2 + kp * MR),
                            ppb.get().add(jr * k2 + kp * NR),
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

/// Packs `width` rows (of A, or columns of B) starting at `r0` into
/// pair-interleaved words: word (p, r) = x[r, 2p] | x[r, 2p + 1] << 16,
/// zero outside the matrix (every word is written). `sr` and `sk` are the
/// strides along r and k; the inner loop runs along the smaller one, and
/// unit strides take loops that vectorize (r) or read whole pairs (k).
///
/// # Safety
/// `out` holds width * ceil(k/2) words; `x` is valid for `len` rows of k.
unsafe fn pack(
    out: *mut u32,
    x: *const bf16,
    sr: isize,
    sk: isize,
    r0: usize,
    len: usize,
    k: usize,
    width: usize,
) {
    let rows = width.min(len - r0);
    let x = x.offset(r0 as isize * sr);
    // SAFETY: the caller's matrix holds every (r < rows, c < k).
    let get = |r: usize, c: usize| unsafe {
        (*x.offset(r as isize * sr + c as isize * sk)).to_bits() as u32
    };
    let word = |r: usize, p: usize| {
        let hi = if 2 * p + 1 < k { get(r, 2 * p + 1) } else { 0 };
        get(r, 2 * p) | hi << 16
    };
    let k2 = k.div_ceil(2);
    for p in 0..k2 {
        for r in rows..width {
            *out.add(p * width + r) = 0;
        }
    }
    if sr == 1 {
        for p in 0..k2 {
            let lo = std::slice::from_raw_parts(x.offset(2 * p as isize * sk).cast::<u16>(), rows);
            let o = std::slice::from_raw_parts_mut(out.add(p * width), rows);
            if 2 * p + 1 < k {
                let hi = std::slice::from_raw_parts(
                    x.offset((2 * p + 1) as isize * sk).cast::<u16>(),
                    rows,
                );
                super::simd(
                    #[inline(always)]
                    || {
                        for ((o, &l), &h) in o.iter_mut().zip(lo).zip(hi) {
                            *o = l as u32 | (h as u32) << 16;
                        }
                    },
                );
            } else {
                o.iter_mut().zip(lo).for_each(|(o, &l)| *o = l as u32);
            }
        }
        return;
    }
    if sk == 1 {
        for r in 0..rows {
            let row = x.offset(r as isize * sr);
            for p in 0..k / 2 {
                *out.add(p * width + r) = row.add(2 * p).cast::<u32>().read_unaligned();
            }
            if k % 2 == 1 {
                *out.add((k2 - 1) * width + r) = (*row.add(k - 1)).to_bits() as u32;
            }
        }
        return;
    }
    if sr.unsigned_abs() <= sk.unsigned_abs() {
        for p in 0..k2 {
            for r in 0..rows {
                *out.add(p * width + r) = word(r, p);
            }
        }
    } else {
        for r in 0..rows {
            for p in 0..k2 {
                *out.add(p * width + r) = word(r, p);
            }
        }
    }
}

/// One MR x NR micro-tile over `kp` pairs: sums (row stride NC) = (or +=,
/// unless `first`) a-panel x b-panel.
#[inline]
unsafe fn micro(kp: usize, a: *const u32, b: *const u32, sums: *mut f32, first: bool) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `matmul`'s caller checked `available()`; pointers as in `micro_bf16`.
    unsafe {
        micro_bf16(kp, a, b, sums, first)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (kp, a, b, sums, first);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn micro_bf16(kp: usize, a: *const u32, b: *const u32, sums: *mut f32, first: bool) {
    use std::arch::x86_64::*;
    use std::mem::transmute;
    let mut c = [[_mm512_setzero_ps(); 2]; MR];
    if !first {
        for (i, row) in c.iter_mut().enumerate() {
            row[0] = _mm512_loadu_ps(sums.add(i * NC));
            row[1] = _mm512_loadu_ps(sums.add(i * NC + 16));
        }
    }
    for p in 0..kp {
        // SAFETY (transmutes): __m512i and __m512bh are both 64 plain bytes.
        let b0: __m512bh = transmute::<__m512i, __m512bh>(_mm512_loadu_si512(b.add(p * NR).cast()));
        let b1: __m512bh =
            transmute::<__m512i, __m512bh>(_mm512_loadu_si512(b.add(p * NR + 16).cast()));
        let ap = a.add(p * MR);
        for (i, row) in c.iter_mut().enumerate() {
            let av = transmute::<__m512i, __m512bh>(_mm512_set1_epi32(*ap.add(i) as i32));
            row[0] = _mm512_dpbf16_ps(row[0], av, b0);
            row[1] = _mm512_dpbf16_ps(row[1], av, b1);
        }
    }
    for (i, row) in c.iter().enumerate() {
        _mm512_storeu_ps(sums.add(i * NC), row[0]);
        _mm512_storeu_ps(sums.add(i * NC + 16), row[1]);
    }
}

/// Rounds the block's float32 sums to bfloat16 into dst (adding dst's old
/// values first with `acc`).
///
/// # Safety
/// dst is valid for rows x cols at [i0, j0]; the CPU has AVX512-BF16.
unsafe fn store(
    sums: &[f32],
    dst: Mat<bf16>,
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
            *d = bf16::from_f32(if acc { s + (*d).to_f32() } else { s });
        }
    }
}

/// 16 float32 (plus dst's old values with `acc`: a fused bias) to
/// bfloat16, rounded to nearest even (`vcvtneps2bf16`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn round16(src: *const f32, dst: *mut bf16, acc: bool) {
    use std::arch::x86_64::*;
    let mut v = _mm512_loadu_ps(src);
    if acc {
        // bfloat16 bits are the high half of the float32 ones.
        let old = _mm512_cvtepu16_epi32(_mm256_loadu_si256(dst.cast()));
        v = _mm512_add_ps(v, _mm512_castsi512_ps(_mm512_slli_epi32::<16>(old)));
    }
    let h = _mm512_cvtneps_pbh(v);
    // SAFETY: __m256bh and __m256i are both 32 plain bytes.
    _mm256_storeu_si256(dst.cast(), std::mem::transmute::<__m256bh, __m256i>(h));
}
