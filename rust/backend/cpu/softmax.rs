//! Softmax and log-softmax along one dim of a contiguous (outer, n, inner)
//! tensor, forward and backward, one pass over each block. Rows (inner = 1)
//! run along the row; otherwise the loops run across `inner` so they vectorize.

use super::lanes::{self, tree, LANES};
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
    if xs.len() < LANES {
        // Of constant length, as in `exp_sum_to`.
        for (i, a) in acc.iter_mut().enumerate() {
            if i < xs.len() {
                *a = pick(*a, xs[i]);
            }
        }
    } else if !chunks.remainder().is_empty() {
        // The last 16 as one block: elements seen twice do not change a max.
        for (a, &v) in acc.iter_mut().zip(&xs[xs.len() - LANES..]) {
            *a = pick(*a, v);
        }
    }
    tree(acc, pick)
}

/// xs[i] = e^(xs[i] - m) in place, returning their sum, added in lanes (so
/// in another order than a serial loop).
#[inline(always)]
pub fn exp_sum<T: SoftElem>(xs: &mut [T], m: T) -> T {
    // SAFETY: source and destination are the same valid slice.
    unsafe { exp_sum_to(xs.as_ptr(), xs.as_mut_ptr(), xs.len(), m) }
}

/// dst[i] = e^(src[i] - m) (src may equal dst), returning their sum added
/// as `lanes::sum` adds. Reading src directly, rather than copying it to dst
/// first, spares each vector load a stall on the copy's narrower stores.
///
/// # Safety
/// Both pointers are valid for n elements; they are equal or do not overlap.
#[inline(always)]
unsafe fn exp_sum_to<T: SoftElem>(src: *const T, dst: *mut T, n: usize, m: T) -> T {
    let mut acc = [T::zero(); LANES];
    let full = n - n % LANES;
    // The last block's inputs, read before the loop may overwrite them in place.
    let last: [T; LANES] = if n >= LANES {
        std::ptr::read_unaligned(src.add(n - LANES) as *const [T; LANES])
    } else {
        [T::zero(); LANES]
    };
    for c in (0..full).step_by(LANES) {
        for (l, a) in acc.iter_mut().enumerate() {
            let e = (*src.add(c + l) - m).fexp();
            *dst.add(c + l) = e;
            *a = *a + e;
        }
    }
    if n < LANES {
        // A loop of constant length (a variable one would index acc at run
        // time and keep it in memory, not registers).
        for (i, a) in acc.iter_mut().enumerate() {
            if i < n {
                let e = (*src.add(i) - m).fexp();
                *dst.add(i) = e;
                *a = *a + e;
            }
        }
    } else if full < n {
        // The overlapped elements get the same values again; only the new ones add.
        let first_new = LANES - (n - full);
        let mut e = [T::zero(); LANES];
        for (l, (a, ev)) in acc.iter_mut().zip(e.iter_mut()).enumerate() {
            *ev = (last[l] - m).fexp();
            *a = *a + if l >= first_new { *ev } else { T::zero() };
        }
        std::ptr::write_unaligned(dst.add(n - LANES) as *mut [T; LANES], e);
    }
    tree(acc, |a, b| a + b)
}

/// Columns per block of the column paths: their sums stay in L1.
const COLS: usize = 64;

/// Sums down columns of a block (row after row of up to COLS values) in the
/// order `exp_sum` adds a row: row k of n into partial `lanes::lane(k, n)`,
/// the partials folded by `lanes::tree`. A column then sums exactly as the same values
/// laid out as a row would, so the float16/bfloat16 blocks (which may cut a
/// column block down to one column, a row) match float32 bit for bit.
struct ColumnSums<T> {
    lanes: Vec<T>,
}

impl<T: SoftElem> ColumnSums<T> {
    fn new(inner: usize) -> Self {
        ColumnSums { lanes: vec![T::zero(); LANES * COLS.min(inner)] }
    }

    fn start(&mut self) {
        self.lanes.iter_mut().for_each(|v| *v = T::zero());
    }

    /// Adds row k (of n) of the block.
    #[inline(always)]
    fn add(&mut self, k: usize, n: usize, vals: &[T]) {
        let w = vals.len();
        let l = lanes::lane(k, n) * w;
        self.lanes[l..l + w].iter_mut().zip(vals).for_each(|(d, &v)| *d = *d + v);
    }

    /// The column sums of the block.
    fn finish(&mut self, w: usize) -> &[T] {
        for half in [8, 4, 2, 1] {
            let (lo, hi) = self.lanes.split_at_mut(half * w);
            lo.iter_mut().zip(&hi[..half * w]).for_each(|(a, &b)| *a = *a + b);
        }
        &self.lanes[..w]
    }
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
                    // A row of all -inf gives NaN, as in PyTorch. The float16/bfloat16
                    // blocks run this kernel too, so they equal float32's result rounded once.
                    // SAFETY: xs and ys are separate rows of n elements.
                    let s = unsafe { exp_sum_to(xs.as_ptr(), ys.as_mut_ptr(), n, m) };
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
                let mut sums = ColumnSums::new(inner);
                for c0 in (0..inner).step_by(COLS) {
                    let w = COLS.min(inner - c0);
                    let row = |k: usize| k * inner + c0..k * inner + c0 + w;
                    let mut m = [T::neg_infinity(); COLS];
                    for k in 0..n {
                        for (mj, &v) in m.iter_mut().zip(&xs[row(k)]) {
                            if v > *mj || v.is_nan() {
                                *mj = v;
                            }
                        }
                    }
                    sums.start();
                    for k in 0..n {
                        let (ys, xs) = (&mut ys[row(k)], &xs[row(k)]);
                        for ((yv, &xv), &mj) in ys.iter_mut().zip(xs).zip(&m) {
                            *yv = (xv - mj).fexp();
                        }
                        sums.add(k, n, ys);
                    }
                    let s = sums.finish(w);
                    for k in 0..n {
                        let r = row(k);
                        if log {
                            for ((yv, &xv), (&sj, &mj)) in
                                ys[r.clone()].iter_mut().zip(&xs[r]).zip(s.iter().zip(&m))
                            {
                                *yv = (xv - mj) - sj.ln();
                            }
                        } else {
                            for (yv, &sj) in ys[r].iter_mut().zip(s) {
                                *yv = *yv * (T::one() / sj);
                            }
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
                if inner == 1 {
                    let s = if log {
                        lanes::sum([gs], |[g]| g)
                    } else {
                        lanes::sum([ys, gs], |[y, g]| y * g)
                    };
                    for ((ov, &yv), &gv) in out.iter_mut().zip(ys).zip(gs) {
                        *ov = if log { gv - yv.fexp() * s } else { yv * (gv - s) };
                    }
                    return;
                }
                let mut sums = ColumnSums::new(inner);
                let mut terms = [T::zero(); COLS];
                for c0 in (0..inner).step_by(COLS) {
                    let w = COLS.min(inner - c0);
                    let row = |k: usize| k * inner + c0..k * inner + c0 + w;
                    sums.start();
                    for k in 0..n {
                        let (ys, gs) = (&ys[row(k)], &gs[row(k)]);
                        for ((tv, &yv), &gv) in terms.iter_mut().zip(ys).zip(gs) {
                            *tv = if log { gv } else { gv * yv };
                        }
                        sums.add(k, n, &terms[..w]);
                    }
                    let s = sums.finish(w);
                    for k in 0..n {
                        let r = row(k);
                        for (((ov, &yv), &gv), &sj) in
                            out[r.clone()].iter_mut().zip(&ys[r.clone()]).zip(&gs[r]).zip(s)
                        {
                            *ov = if log { gv - yv.fexp() * sj } else { yv * (gv - sj) };
                        }
                    }
                }
            },
        )
    });
}
