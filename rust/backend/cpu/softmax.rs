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
    /// Sums for a block of w columns.
    fn new(w: usize) -> Self {
        ColumnSums { lanes: vec![T::zero(); LANES * w] }
    }

    /// Adds row k (of n) of the block.
    #[inline(always)]
    fn add(&mut self, k: usize, n: usize, vals: &[T]) {
        let w = vals.len();
        let l = lanes::lane(k, n) * w;
        self.lanes[l..l + w].iter_mut().zip(vals).for_each(|(d, &v)| *d = *d + v);
    }

    /// The column sums of the block.
    #[inline(always)]
    fn finish(&mut self, w: usize) -> &[T] {
        for half in [8, 4, 2, 1] {
            let (lo, hi) = self.lanes.split_at_mut(half * w);
            lo.iter_mut().zip(&hi[..half * w]).for_each(|(a, &b)| *a = *a + b);
        }
        &self.lanes[..w]
    }
}

/// Runs `f(base, c0)` over the tasks of an (outer, n, inner) softmax, base
/// the offset of an outer index's (n, inner) block and c0 the first of the
/// task's columns: one task per row for inner = 1, else one per block of COLS
/// columns (a softmax over dim 0 of a matrix has outer = 1: with tasks per
/// outer index only, it ran on one thread).
fn for_blocks(outer: usize, n: usize, inner: usize, f: impl Fn(usize, usize) + Sync + Send) {
    let cb = if inner == 1 { 1 } else { inner.div_ceil(COLS) };
    super::team::for_each_if(outer * n * inner, outer * cb, |t| {
        f((t / cb) * n * inner, (t % cb) * COLS)
    })
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
    for_blocks(outer, n, inner, |base, c0| {
        super::simd(
            #[inline(always)]
            || {
                if inner == 1 {
                    // SAFETY: this row is read and written by this task only.
                    let (xs, ys) = unsafe {
                        (
                            std::slice::from_raw_parts(x.at(base as isize) as *const T, n),
                            std::slice::from_raw_parts_mut(y.at(base as isize), n),
                        )
                    };
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
                let w = COLS.min(inner - c0);
                let at = |k: usize| (base + k * inner + c0) as isize;
                // SAFETY: the task's w columns of row k, read and written by it only.
                let xr =
                    |k: usize| unsafe { std::slice::from_raw_parts(x.at(at(k)) as *const T, w) };
                let yr = |k: usize| unsafe { std::slice::from_raw_parts_mut(y.at(at(k)), w) };
                let mut m = [T::neg_infinity(); COLS];
                for k in 0..n {
                    for (mj, &v) in m.iter_mut().zip(xr(k)) {
                        if v > *mj || v.is_nan() {
                            *mj = v;
                        }
                    }
                }
                let mut sums = ColumnSums::new(w);
                for k in 0..n {
                    let ys = yr(k);
                    for ((yv, &xv), &mj) in ys.iter_mut().zip(xr(k)).zip(&m) {
                        *yv = (xv - mj).fexp();
                    }
                    sums.add(k, n, ys);
                }
                // ln s (or 1/s) once per column: a libm call per element kept
                // the row loop below scalar.
                let mut f = [T::zero(); COLS];
                for (fj, &sj) in f.iter_mut().zip(sums.finish(w)) {
                    *fj = if log { sj.ln() } else { T::one() / sj };
                }
                for k in 0..n {
                    if log {
                        for ((yv, &xv), (&lj, &mj)) in
                            yr(k).iter_mut().zip(xr(k)).zip(f.iter().zip(&m))
                        {
                            *yv = (xv - mj) - lj;
                        }
                    } else {
                        for (yv, &rj) in yr(k).iter_mut().zip(&f) {
                            *yv = *yv * rj;
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
    for_blocks(outer, n, inner, |base, c0| {
        super::simd(
            #[inline(always)]
            || {
                if inner == 1 {
                    let b = base as isize;
                    // SAFETY: this row is touched by this task only.
                    let (ys, gs, out) = unsafe {
                        (
                            std::slice::from_raw_parts(y.at(b) as *const T, n),
                            std::slice::from_raw_parts(g.at(b) as *const T, n),
                            std::slice::from_raw_parts_mut(gx.at(b), n),
                        )
                    };
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
                let w = COLS.min(inner - c0);
                let at = |k: usize| (base + k * inner + c0) as isize;
                // SAFETY: the task's w columns of row k; only this task writes them.
                let yr =
                    |k: usize| unsafe { std::slice::from_raw_parts(y.at(at(k)) as *const T, w) };
                let gr =
                    |k: usize| unsafe { std::slice::from_raw_parts(g.at(at(k)) as *const T, w) };
                let or = |k: usize| unsafe { std::slice::from_raw_parts_mut(gx.at(at(k)), w) };
                let mut sums = ColumnSums::new(w);
                let mut terms = [T::zero(); COLS];
                for k in 0..n {
                    for ((tv, &yv), &gv) in terms.iter_mut().zip(yr(k)).zip(gr(k)) {
                        *tv = if log { gv } else { gv * yv };
                    }
                    sums.add(k, n, &terms[..w]);
                }
                let s = sums.finish(w);
                for k in 0..n {
                    for (((ov, &yv), &gv), &sj) in or(k).iter_mut().zip(yr(k)).zip(gr(k)).zip(s) {
                        *ov = if log { gv - yv.fexp() * sj } else { yv * (gv - sj) };
                    }
                }
            },
        )
    });
}
