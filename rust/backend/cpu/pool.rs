//! Pooling kernels over (planes, H, W) data. Windows are given per axis, so
//! one description serves max/avg pooling (stride, padding, dilation,
//! ceil_mode) and the adaptive variants (variable window bounds).

use super::P;
use num_traits::Float;
use std::hint::select_unpredictable;

/// The input positions first + i·step (i < count) of one output index along
/// one axis; positions outside [0, size) are padding and skipped.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub first: isize,
    pub count: usize,
    pub step: usize,
}

/// Windows of a 2-D pooling: spans per output row / column, and the average's
/// divisor factor per row / column (the divisor of output (y, x) is dh[y]·dw[x]).
#[derive(Clone, Debug, PartialEq)]
pub struct Windows {
    pub h: usize,
    pub w: usize,
    pub rows: Vec<Span>,
    pub cols: Vec<Span>,
    pub div_rows: Vec<f64>,
    pub div_cols: Vec<f64>,
}

impl Windows {
    fn out_len(&self) -> usize {
        self.rows.len() * self.cols.len()
    }
}

/// The in-range input positions of each span, listed once per call so the
/// per-output loops are plain slice walks.
fn positions(spans: &[Span], size: usize) -> Vec<Vec<usize>> {
    spans
        .iter()
        .map(|s| {
            (0..s.count)
                .filter_map(|i| {
                    let p = s.first + (i * s.step) as isize;
                    (p >= 0 && (p as usize) < size).then_some(p as usize)
                })
                .collect()
        })
        .collect()
}

fn for_planes(planes: usize, work: usize, f: impl Fn(usize) + Sync + Send) {
    super::team::for_each_if(work, planes, f)
}

/// Per output, its window's maximum and that element's flat index (y·W + x)
/// within the plane (NaN wins, as in PyTorch). Any windows (adaptive pooling);
/// sliding windows use `max_sliding`.
///
/// # Safety
/// `x` holds planes × H × W contiguous elements, `val` and `idx` planes × out elements.
pub unsafe fn max<T: Float + Send + Sync>(
    planes: usize,
    win: &Windows,
    x: P<T>,
    val: P<T>,
    idx: P<i64>,
) {
    let (hw, out) = (win.h * win.w, win.out_len());
    let (rows, cols) = (positions(&win.rows, win.h), positions(&win.cols, win.w));
    for_planes(planes, planes * out * 4, |p| {
        // SAFETY: each plane's input is read and its outputs written by one task.
        let src = unsafe { std::slice::from_raw_parts(x.at((p * hw) as isize), hw) };
        let (dst, vdst) = unsafe {
            (
                std::slice::from_raw_parts_mut(idx.at((p * out) as isize), out),
                std::slice::from_raw_parts_mut(val.at((p * out) as isize), out),
            )
        };
        let mut o = 0;
        for ry in &rows {
            for rx in &cols {
                // Starts at the window's first element (windows are never empty).
                let first = ry.first().zip(rx.first()).map_or(0, |(&y, &x)| y * win.w + x);
                let (mut best, mut at) =
                    (src.get(first).copied().unwrap_or(T::neg_infinity()), first as i64);
                for &iy in ry {
                    let row = &src[iy * win.w..(iy + 1) * win.w];
                    for &ix in rx {
                        let v = row[ix];
                        let take = (v > best) | v.is_nan();
                        best = select_unpredictable(take, v, best);
                        at = select_unpredictable(take, (iy * win.w + ix) as i64, at);
                    }
                }
                dst[o] = at;
                vdst[o] = best;
                o += 1;
            }
        }
    });
}

/// max_pool2d(2) on planes of 2·oh rows of `w` (even) columns: a pass over
/// neighbouring pairs of the flat input (which vectorizes), then one over
/// pairs of half rows. Ties and NaNs resolve as in row-major order (the first
/// maximum, the last NaN), as the general loops do.
///
/// # Safety
/// As `max_sliding`.
unsafe fn max_2x2<T: Float + Send + Sync>(
    planes: usize,
    w: usize,
    oh: usize,
    x: P<T>,
    val: P<T>,
    idx: P<i64>,
) {
    let (ow, rows) = (w / 2, planes * oh);
    if rows * ow == 0 {
        return;
    }
    let per = (8192 / ow).clamp(1, rows); // output rows per task
    super::team::for_each_if(rows * 4 * ow, rows.div_ceil(per), |b| {
        let (r0, nr) = (b * per, per.min(rows - b * per));
        // SAFETY: this task's output rows and the input rows they read.
        let (src, dv, di) = unsafe {
            (
                std::slice::from_raw_parts(x.at((r0 * 2 * w) as isize), nr * 2 * w),
                std::slice::from_raw_parts_mut(val.at((r0 * ow) as isize), nr * ow),
                std::slice::from_raw_parts_mut(idx.at((r0 * ow) as isize), nr * ow),
            )
        };
        let mut half = vec![T::zero(); nr * w];
        let mut right = vec![0u8; nr * w];
        super::simd(
            #[inline(always)]
            || {
                for ((pair, v), j) in src.chunks_exact(2).zip(half.iter_mut()).zip(&mut right) {
                    let take = (pair[1] > pair[0]) | pair[1].is_nan();
                    *v = select_unpredictable(take, pair[1], pair[0]);
                    *j = take as u8;
                }
                for r in 0..nr {
                    let y = 2 * ((r0 + r) % oh); // the window's top row in its plane
                    let (top, bot) = (r * w, r * w + ow);
                    for ox in 0..ow {
                        let (a, c) = (half[top + ox], half[bot + ox]);
                        let take = (c > a) | c.is_nan();
                        // The column by masks: a select of two loaded bytes became a branch.
                        let (t, jt, jb) =
                            (take as usize, right[top + ox] as usize, right[bot + ox] as usize);
                        let j = jt ^ ((jt ^ jb) & t.wrapping_neg());
                        dv[r * ow + ox] = select_unpredictable(take, c, a);
                        di[r * ow + ox] = ((y + t) * w + 2 * ox + j) as i64;
                    }
                }
            },
        );
    });
}

/// Max pooling whose windows tile the flat input (one row tall, kernel =
/// stride = `kw` along rows made of whole windows: max_pool1d's usual case):
/// window i covers x[i·kw .. (i + 1)·kw], and its index within its plane is
/// (i mod `out`)·kw + j.
///
/// # Safety
/// `x` holds n·kw elements; `val` and `idx` hold n; kw ≤ 256.
unsafe fn max_flat<T: Float + Send + Sync>(
    n: usize,
    kw: usize,
    out: usize,
    x: P<T>,
    val: P<T>,
    idx: P<i64>,
) {
    if n == 0 {
        return;
    }
    let per = 8192.min(n); // windows per task
    super::team::for_each_if(n * kw * 4, n.div_ceil(per), |b| {
        let (w0, m) = (b * per, per.min(n - b * per));
        // SAFETY: this task's windows and their inputs.
        let (src, dv, di) = unsafe {
            (
                x.at((w0 * kw) as isize) as *const T,
                std::slice::from_raw_parts_mut(val.at(w0 as isize), m),
                std::slice::from_raw_parts_mut(idx.at(w0 as isize), m),
            )
        };
        // SAFETY: src holds m·kw elements.
        match kw {
            2 => unsafe { window_max::<T, 2>(src, 2, dv, di) },
            _ => unsafe { window_max::<T, 0>(src, kw, dv, di) },
        }
        // Plane-relative indices: whole runs of a plane's windows at a time.
        let (mut o, mut done) = (w0 % out, 0);
        while done < m {
            let run = (out - o).min(m - done);
            for (k, i) in di[done..done + run].iter_mut().enumerate() {
                *i += ((o + k) * kw) as i64;
            }
            (o, done) = (0, done + run);
        }
    });
}

/// dv[t], di[t] = the maximum of src[t·kw .. (t + 1)·kw] and its tap (NaN
/// wins, ties keep the first). `K` is 2 for kernel 2 (a pair loop that
/// vectorizes), else 0 (a loop over the taps, scalar).
///
/// # Safety
/// `src` holds dv.len()·kw elements.
#[inline(always)]
unsafe fn window_max<T: Float, const K: usize>(
    src: *const T,
    kw: usize,
    dv: &mut [T],
    di: &mut [i64],
) {
    let kw = if K > 0 { K } else { kw };
    #[cfg(target_arch = "x86_64")]
    if K == 2
        && std::mem::size_of::<T>() == 4
        && std::arch::is_x86_feature_detected!("avx2")
        && !std::arch::is_x86_feature_detected!("avx512f")
    {
        // SAFETY: T is float32 (the only 4-byte Float); the CPU has AVX2.
        let done = unsafe { pairs_f32_avx2(src as *const f32, dv.as_mut_ptr() as *mut f32, di) };
        // SAFETY: the remaining windows, as the caller guarantees.
        return unsafe {
            window_max::<T, 0>(src.add(2 * done), 2, &mut dv[done..], &mut di[done..])
        };
    }
    // SAFETY: the caller's guarantee.
    let src = unsafe { std::slice::from_raw_parts(src, dv.len() * kw) };
    super::simd(
        #[inline(always)]
        move || {
            // Taps as bytes, widened to i64 after each block: selects of 8-byte
            // lanes beside 4-byte values kept LLVM from vectorizing the loop.
            const B: usize = 256;
            let mut taps = [0u8; B];
            for ((w, v), i) in src.chunks(B * kw).zip(dv.chunks_mut(B)).zip(di.chunks_mut(B)) {
                for ((w, v), t) in w.chunks_exact(kw).zip(v.iter_mut()).zip(&mut taps) {
                    if K == 2 {
                        // As a pair (the general loop below stayed scalar for it).
                        let take = (w[1] > w[0]) | w[1].is_nan();
                        (*v, *t) = (select_unpredictable(take, w[1], w[0]), take as u8);
                        continue;
                    }
                    let (mut best, mut at) = (w[0], 0u8);
                    for (j, &x) in w.iter().enumerate().skip(1) {
                        let take = (x > best) | x.is_nan();
                        best = select_unpredictable(take, x, best);
                        at = select_unpredictable(take, j as u8, at);
                    }
                    (*v, *t) = (best, at);
                }
                for (i, &t) in i.iter_mut().zip(&taps) {
                    *i = t as i64;
                }
            }
        },
    )
}

/// `window_max` with kernel 2 on float32, 8 windows a step: the pairs split
/// into two vectors by shuffles. On AVX2 LLVM left the pair loop scalar, with
/// a branch per select (5x PyTorch's time); AVX-512 builds vectorize it.
/// Returns how many windows it did (a multiple of 8).
///
/// # Safety
/// `src` holds 2·di.len() elements, `dv` di.len(); the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn pairs_f32_avx2(src: *const f32, dv: *mut f32, di: &mut [i64]) -> usize {
    use std::arch::x86_64::*;
    let n = di.len() / 8 * 8;
    // Puts the 64-bit lanes 0 2 1 3 in order: the shuffles work per 128-bit half.
    let order = |v: __m256| _mm256_castpd_ps(_mm256_permute4x64_pd::<0xD8>(_mm256_castps_pd(v)));
    for i in (0..n).step_by(8) {
        // SAFETY: windows i..i + 8 are in bounds.
        unsafe {
            let (lo, hi) = (_mm256_loadu_ps(src.add(2 * i)), _mm256_loadu_ps(src.add(2 * i + 8)));
            let a = order(_mm256_shuffle_ps::<0x88>(lo, hi));
            let b = order(_mm256_shuffle_ps::<0xDD>(lo, hi));
            let take = _mm256_or_ps(
                _mm256_cmp_ps::<_CMP_LT_OQ>(a, b),
                _mm256_cmp_ps::<_CMP_UNORD_Q>(b, b),
            );
            _mm256_storeu_ps(dv.add(i), _mm256_blendv_ps(a, b, take));
            // The all-ones lanes of `take`, widened and negated, are the taps.
            let t = _mm256_castps_si256(take);
            let z = _mm256_setzero_si256();
            let at = di.as_mut_ptr().add(i) as *mut __m256i;
            _mm256_storeu_si256(
                at,
                _mm256_sub_epi64(z, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(t))),
            );
            _mm256_storeu_si256(
                at.add(1),
                _mm256_sub_epi64(z, _mm256_cvtepi32_epi64(_mm256_extracti128_si256::<1>(t))),
            );
        }
    }
    n
}

/// out = window sums / divisors.
///
/// # Safety
/// `x` holds planes × H × W elements, `out` planes × out elements.
pub unsafe fn avg<T: Float + Send + Sync>(planes: usize, win: &Windows, x: P<T>, out: P<T>) {
    let (hw, n_out) = (win.h * win.w, win.out_len());
    let (rows, cols) = (positions(&win.rows, win.h), positions(&win.cols, win.w));
    for_planes(planes, planes * hw, |p| {
        let src = x.at((p * hw) as isize);
        let dst = out.at((p * n_out) as isize);
        for (oy, ry) in rows.iter().enumerate() {
            for (ox, rx) in cols.iter().enumerate() {
                let mut s = T::zero();
                for &iy in ry {
                    for &ix in rx {
                        // SAFETY: in-range position of the plane.
                        s = s + unsafe { *src.add(iy * win.w + ix) };
                    }
                }
                let d = T::from(win.div_rows[oy] * win.div_cols[ox]).unwrap_or(T::one());
                // SAFETY: one write per output.
                unsafe { *dst.add(oy * win.cols.len() + ox) = s / d };
            }
        }
    });
}

/// The adjoint of `avg`: each output's gradient / divisor spread over its window.
///
/// # Safety
/// `g` holds planes × out elements, `out` planes × H × W zeroed elements.
pub unsafe fn avg_adjoint<T: Float + Send + Sync>(
    planes: usize,
    win: &Windows,
    g: P<T>,
    out: P<T>,
) {
    let (hw, n_out) = (win.h * win.w, win.out_len());
    let (rows, cols) = (positions(&win.rows, win.h), positions(&win.cols, win.w));
    for_planes(planes, planes * hw, |p| {
        let src = g.at((p * n_out) as isize);
        let dst = out.at((p * hw) as isize);
        for (oy, ry) in rows.iter().enumerate() {
            for (ox, rx) in cols.iter().enumerate() {
                let d = T::from(win.div_rows[oy] * win.div_cols[ox]).unwrap_or(T::one());
                // SAFETY: one read per output.
                let v = unsafe { *src.add(oy * win.cols.len() + ox) } / d;
                for &iy in ry {
                    for &ix in rx {
                        // SAFETY: in-range position of this task's plane.
                        unsafe {
                            let q = dst.add(iy * win.w + ix);
                            *q = *q + v;
                        }
                    }
                }
            }
        }
    });
}

/// Max pooling over regular sliding windows, one kernel tap at a time: each
/// tap is a strided pass over the output grid, so the inner loops have no
/// per-window setup. Same results as `max` (ties keep the first element in
/// window order, NaN wins).
///
/// # Safety
/// As for `max`; `win` must come from sliding windows with kernel `k`, stride
/// `s`, padding `p` and dilation `d` per axis.
pub unsafe fn max_sliding<T: Float + Send + Sync>(
    planes: usize,
    win: &Windows,
    k: [usize; 2],
    s: [usize; 2],
    p: [usize; 2],
    d: [usize; 2],
    x: P<T>,
    val: P<T>,
    idx: P<i64>,
) {
    let (h, w, oh, ow) = (win.h, win.w, win.rows.len(), win.cols.len());
    let (hw, out) = (h * w, oh * ow);
    // Output range [lo, hi) whose tap t reads inside [0, size) along axis a.
    let valid = |t: usize, a: usize, o: usize, size: usize| {
        super::conv::Geom::valid(o, size, t * d[a], s[a], p[a])
    };
    // Windows that tile the input (kernel = stride, no padding or dilation, all
    // inside): each output reads its own kh × kw block, no bounds to work out.
    let tiles = k == s && p == [0, 0] && d == [1, 1] && oh * k[0] <= h && ow * k[1] <= w;
    if tiles && k == [2, 2] && h == 2 * oh && w == 2 * ow {
        // SAFETY: the caller's guarantees, forwarded.
        return unsafe { max_2x2(planes, w, oh, x, val, idx) };
    }
    if tiles && k[0] == 1 && oh == h && w == k[1] * ow && k[1] <= 256 {
        // SAFETY: as above; the windows tile the flat input.
        return unsafe { max_flat(planes * out, k[1], out, x, val, idx) };
    }
    if tiles {
        // Small planes give short rows of outputs that do not vectorize; instead
        // the inner loop runs over the outputs of a block of planes, each reading
        // its window's tap at a precomputed offset (a gather).
        if planes * out == 0 {
            return;
        }
        let per = (4096 / out).clamp(1, planes);
        // Window corner of every output of a block: within its plane, and from the block's start.
        let within: Vec<i64> = (0..per * out)
            .map(|q| ((q % out / ow) * k[0] * w + (q % out % ow) * k[1]) as i64)
            .collect();
        let corner: Vec<usize> =
            (0..per * out).map(|q| (q / out) * hw + within[q] as usize).collect();
        super::team::for_each_if(planes * out * k[0] * k[1], planes.div_ceil(per), |b| {
            let (p0, n) = (b * per, per.min(planes - b * per) * out);
            let (src, corner, within) = (x.at((p0 * hw) as isize), &corner[..n], &within[..n]);
            // SAFETY: the block's outputs are written by this task only.
            let (bi, bv) = unsafe {
                (
                    std::slice::from_raw_parts_mut(idx.at((p0 * out) as isize), n),
                    std::slice::from_raw_parts_mut(val.at((p0 * out) as isize), n),
                )
            };
            super::simd(
                #[inline(always)]
                || {
                    for (((&c, &o), v), i) in
                        corner.iter().zip(within).zip(bv.iter_mut()).zip(bi.iter_mut())
                    {
                        // SAFETY: windows tile inside their plane, so every tap is in the block's input.
                        *v = unsafe { *src.add(c) };
                        *i = o;
                    }
                    for i in 0..k[0] {
                        for j in 0..k[1] {
                            let off = i * w + j;
                            for (((&c, &o), best), at) in
                                corner.iter().zip(within).zip(bv.iter_mut()).zip(bi.iter_mut())
                            {
                                // SAFETY: as above.
                                let v = unsafe { *src.add(c + off) };
                                // Conditional moves, not jumps: on random data the
                                // comparison is a coin flip (LLVM turned plain selects
                                // into mispredicted branches: 3 ns per output).
                                let take = (v > *best) | v.is_nan();
                                *best = select_unpredictable(take, v, *best);
                                *at = select_unpredictable(take, o + off as i64, *at);
                            }
                        }
                    }
                },
            );
        });
        return;
    }
    for_planes(planes, planes * out * k[0] * k[1], |pl| {
        // SAFETY: each plane's input is read and its outputs written by one task.
        let src = unsafe { std::slice::from_raw_parts(x.at((pl * hw) as isize), hw) };
        let (di, dv) = unsafe {
            (
                std::slice::from_raw_parts_mut(idx.at((pl * out) as isize), out),
                std::slice::from_raw_parts_mut(val.at((pl * out) as isize), out),
            )
        };
        di.fill(-1);
        dv.fill(T::neg_infinity());
        for i in 0..k[0] {
            let (ylo, yhi) = valid(i, 0, oh, h);
            for j in 0..k[1] {
                let (xlo, xhi) = valid(j, 1, ow, w);
                for oy in ylo..yhi {
                    let iy = oy * s[0] + i * d[0] - p[0];
                    for ox in xlo..xhi {
                        let pos = iy * w + ox * s[1] + j * d[1] - p[1];
                        let (v, o) = (src[pos], oy * ow + ox);
                        // Conditional moves: on random data the comparison is a coin flip.
                        let take = (v > dv[o]) | v.is_nan() | (di[o] < 0);
                        dv[o] = select_unpredictable(take, v, dv[o]);
                        di[o] = select_unpredictable(take, pos as i64, di[o]);
                    }
                }
            }
        }
    });
}
