//! Softmax and log-softmax along one dim of a contiguous (outer, n, inner)
//! tensor, forward and backward, one pass over each block. Rows (inner = 1)
//! run along the row; otherwise the loops run across `inner` so they vectorize.

use super::{vmath, P};
use num_traits::Float;

/// exp through the SIMD-friendly polynomial for f32, libm for f64.
pub trait SoftElem: Float + Send + Sync {
    fn fexp(self) -> Self;
}
impl SoftElem for f32 {
    #[inline(always)]
    fn fexp(self) -> f32 {
        vmath::exp(self)
    }
}
impl SoftElem for f64 {
    #[inline(always)]
    fn fexp(self) -> f64 {
        self.exp()
    }
}

/// Partial results per row reduction: a serial float sum or max is an order
/// the compiler must keep (no SIMD); this many lanes of partials vectorize.
const LANES: usize = 16;

/// The largest of `xs` (-inf when empty); with `nan_wins` a NaN anywhere
/// gives NaN, else NaNs are skipped.
#[inline(always)]
pub fn row_max<T: SoftElem>(xs: &[T], nan_wins: bool) -> T {
    let pick = |m: T, v: T| if v > m || (nan_wins && v.is_nan()) { v } else { m };
    let mut acc = [T::neg_infinity(); LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a = pick(*a, v);
        }
    }
    let m = chunks.remainder().iter().fold(T::neg_infinity(), |m, &v| pick(m, v));
    acc.iter().fold(m, |m, &v| pick(m, v))
}

/// xs[i] = e^(xs[i] - m) in place, returning their sum, added in lanes (so
/// in another order than a serial loop: softmax keeps its serial sum).
#[inline(always)]
pub fn exp_sum<T: SoftElem>(xs: &mut [T], m: T) -> T {
    let mut acc = [T::zero(); LANES];
    let mut chunks = xs.chunks_exact_mut(LANES);
    for c in &mut chunks {
        for (a, x) in acc.iter_mut().zip(c.iter_mut()) {
            *x = (*x - m).fexp();
            *a = *a + *x;
        }
    }
    let mut t = T::zero();
    for x in chunks.into_remainder() {
        *x = (*x - m).fexp();
        t = t + *x;
    }
    acc.iter().fold(t, |s, &a| s + a)
}

fn for_blocks(outer: usize, work: usize, f: impl Fn(usize) + Sync + Send) {
    super::team::for_each_if(work, outer, f)
}

/// y = softmax(x) or log_softmax(x) along the middle dim.
///
/// # Safety
/// `x` and `y` hold outer × n × inner contiguous elements.
pub unsafe fn forward<T: SoftElem>(
    x: P<T>,
    y: P<T>,
    outer: usize,
    n: usize,
    inner: usize,
    log: bool,
) {
    for_blocks(outer, outer * n * inner, |o| {
        super::simd(
            #[inline(always)]
            || {
                let base = (o * n * inner) as isize;
                // SAFETY: each block is read and written by one task only.
                let (xs, ys) = unsafe {
                    (
                        std::slice::from_raw_parts(x.at(base), n * inner),
                        std::slice::from_raw_parts_mut(y.at(base), n * inner),
                    )
                };
                if inner == 1 {
                    let m = row_max(xs, true);
                    // A row of all -inf gives NaN, as in PyTorch. The sum stays serial: the
                    // columns path (and the half-precision blocks) add in this order too,
                    // and float16/bfloat16 results must equal float32's rounded once.
                    let mut s = T::zero();
                    for (yv, &xv) in ys.iter_mut().zip(xs) {
                        let e = (xv - m).fexp();
                        *yv = e;
                        s = s + e;
                    }
                    if log {
                        // (x - m) first: m + ln s would lose x's low bits when |m| is large.
                        let l = s.ln();
                        ys.iter_mut().zip(xs).for_each(|(yv, &xv)| *yv = (xv - m) - l);
                    } else {
                        let r = T::one() / s;
                        ys.iter_mut().for_each(|yv| *yv = *yv * r);
                    }
                    return;
                }
                let mut m = vec![T::neg_infinity(); inner];
                for k in 0..n {
                    for (mj, &v) in m.iter_mut().zip(&xs[k * inner..(k + 1) * inner]) {
                        if v > *mj || v.is_nan() {
                            *mj = v;
                        }
                    }
                }
                let mut s = vec![T::zero(); inner];
                for k in 0..n {
                    let r = k * inner..(k + 1) * inner;
                    for ((yv, &xv), (sj, &mj)) in
                        ys[r.clone()].iter_mut().zip(&xs[r]).zip(s.iter_mut().zip(&m))
                    {
                        let e = (xv - mj).fexp();
                        *yv = e;
                        *sj = *sj + e;
                    }
                }
                for k in 0..n {
                    let r = k * inner..(k + 1) * inner;
                    if log {
                        for ((yv, &xv), (&sj, &mj)) in
                            ys[r.clone()].iter_mut().zip(&xs[r]).zip(s.iter().zip(&m))
                        {
                            *yv = xv - mj - sj.ln();
                        }
                    } else {
                        for (yv, &sj) in ys[r].iter_mut().zip(&s) {
                            *yv = *yv / sj;
                        }
                    }
                }
            },
        )
    });
}

/// gx from the output y and its gradient g: softmax y·(g - Σ g·y), log_softmax g - e^y·Σ g.
///
/// # Safety
/// `y`, `g` and `gx` hold outer × n × inner contiguous elements.
pub unsafe fn backward<T: SoftElem>(
    y: P<T>,
    g: P<T>,
    gx: P<T>,
    outer: usize,
    n: usize,
    inner: usize,
    log: bool,
) {
    for_blocks(outer, outer * n * inner, |o| {
        super::simd(
            #[inline(always)]
            || {
                let base = (o * n * inner) as isize;
                let len = n * inner;
                // SAFETY: each block is touched by one task only.
                let (ys, gs, out) = unsafe {
                    (
                        std::slice::from_raw_parts(y.at(base), len),
                        std::slice::from_raw_parts(g.at(base), len),
                        std::slice::from_raw_parts_mut(gx.at(base), len),
                    )
                };
                let mut s = vec![T::zero(); inner];
                for k in 0..n {
                    let r = k * inner..(k + 1) * inner;
                    for ((sj, &yv), &gv) in s.iter_mut().zip(&ys[r.clone()]).zip(&gs[r]) {
                        *sj = *sj + if log { gv } else { gv * yv };
                    }
                }
                for k in 0..n {
                    let r = k * inner..(k + 1) * inner;
                    for (((ov, &yv), &gv), &sj) in
                        out[r.clone()].iter_mut().zip(&ys[r.clone()]).zip(&gs[r]).zip(&s)
                    {
                        *ov = if log { gv - yv.fexp() * sj } else { yv * (gv - sj) };
                    }
                }
            },
        )
    });
}
