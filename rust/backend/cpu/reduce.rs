//! Reduction kernels. A `Reducer` folds the elements of each output's reduced
//! sub-block; the driver parallelises over outputs, or over the reduced range
//! when there are few outputs (a full sum), combining partial results in order.

use super::strided::walk_range;
use super::{parallel, P, PAR_THRESHOLD};
use crate::error::Result;
use crate::tensor::layout::{numel, try_vec, Layout, Shape, Strides};
use crate::tensor::{Element, Tensor};

pub trait Reducer<T: Copy>: Sync {
    type Acc: Copy + Send + Sync;
    fn init(&self) -> Self::Acc;
    /// Folds element `x`, the `idx`-th of the reduced block (row-major).
    fn step(&self, acc: Self::Acc, x: T, idx: usize) -> Self::Acc;
    /// Combines two partial results; `b` covers elements after `a`'s.
    fn combine(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    /// Whether `reduce_columns` compiles its fold for the CPU's vectors (sums
    /// and extremes gain 2-4x there; the index-carrying argmax does not).
    const VECTOR_COLUMNS: bool = true;
    /// Folds `len` elements at `p` with stride `stride`; reducers override it to vectorize.
    ///
    /// # Safety
    /// `p` must be valid for `len` elements with `stride`.
    #[inline(always)]
    unsafe fn row(
        &self,
        mut acc: Self::Acc,
        p: *const T,
        len: usize,
        stride: isize,
        idx0: usize,
    ) -> Self::Acc {
        for i in 0..len {
            acc = self.step(acc, *p.offset(i as isize * stride), idx0 + i);
        }
        acc
    }
}

/// Reduces the dims of `layout` flagged in `reduced`; returns one accumulator per
/// kept position, in row-major order of the kept dims.
///
/// # Safety
/// `base` + `layout` must describe valid memory.
pub unsafe fn reduce<T: Copy + Send + Sync, R: Reducer<T>>(
    base: P<T>,
    layout: &Layout,
    reduced: &[bool],
    r: &R,
) -> Result<Vec<R::Acc>> {
    let (mut ks, mut kst, mut rs, mut rst) =
        (Shape::new(), Strides::new(), Shape::new(), Strides::new());
    for d in 0..layout.ndim() {
        if reduced[d] {
            rs.push(layout.shape[d]);
            rst.push(layout.strides[d]);
        } else {
            ks.push(layout.shape[d]);
            kst.push(layout.strides[d]);
        }
    }
    let (n_out, n_red) = (numel(&ks), numel(&rs));
    if n_red == 0 || n_out == 0 {
        return try_vec(n_out, r.init());
    }
    let (rs, [rst]) = Layout::coalesce(&rs, [&rst]);
    let base = P(base.at(layout.offset as isize));
    let (ks_c, [kst_c]) = Layout::coalesce(&ks, [&kst]);
    // Reducing outer dims of data whose kept inner dim is contiguous (sum(0) of a
    // matrix): walk the reduced positions outermost and fold whole kept rows.
    if kst_c.last() == Some(&1)
        && rst.iter().all(|s| s.abs() > 1)
        && n_out.saturating_mul(n_red) >= 1024
    {
        return reduce_columns(base, &ks_c, &kst_c, &rs, &rst, n_out, n_red, r);
    }
    // Folds reduced positions [start, end) of the block at `off`.
    let fold = |off: isize, start: usize, end: usize| -> R::Acc {
        let mut acc = r.init();
        if rs.is_empty() {
            if start < end {
                acc = r.step(acc, *base.at(off), 0);
            }
            return acc;
        }
        let mut idx = start;
        walk_range(&rs, std::array::from_ref(&rst), start, end, |[o], len, [s]| {
            acc = r.row(acc, base.at(off + o), len, s, idx);
            idx += len;
        });
        acc
    };
    let out_offset = |i: usize| -> isize {
        let mut rem = i;
        let mut off = 0isize;
        for d in (0..ks.len()).rev() {
            off += (rem % ks[d]) as isize * kst[d];
            rem /= ks[d];
        }
        off
    };
    Ok(if !parallel(n_out.saturating_mul(n_red)) {
        (0..n_out).map(|i| fold(out_offset(i), 0, n_red)).collect()
    } else if n_out >= super::threads() * 4 || n_red < PAR_THRESHOLD {
        let mut out = try_vec(n_out, r.init())?;
        let po = P(out.as_mut_ptr());
        let per = (PAR_THRESHOLD / n_red.max(1)).max(1);
        super::team::for_each(n_out.div_ceil(per), |c| {
            for i in c * per..((c + 1) * per).min(n_out) {
                *po.at(i as isize) = fold(out_offset(i), 0, n_red);
            }
        });
        out
    } else {
        // Few outputs, long reductions: split each reduction into ordered chunks.
        let chunks = super::threads() * 4;
        let per = n_red.div_ceil(chunks);
        (0..n_out)
            .map(|i| {
                let off = out_offset(i);
                let parts =
                    super::team::map(chunks, |c| fold(off, c * per, ((c + 1) * per).min(n_red)));
                parts.into_iter().reduce(|a, b| r.combine(a, b)).unwrap_or_else(|| r.init())
            })
            .collect()
    })
}

/// Column strategy of `reduce`: outputs are kept rows of `inner` contiguous
/// elements; each block of a row folds reduced position after reduced position
/// (so every output still sees its elements in order), with the block's
/// accumulators hot in L1 and the inner loop over contiguous memory.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_columns<T: Copy + Send + Sync, R: Reducer<T>>(
    base: P<T>,
    ks: &[usize],
    kst: &[isize],
    rs: &Shape,
    rst: &Strides,
    n_out: usize,
    n_red: usize,
    r: &R,
) -> Result<Vec<R::Acc>> {
    let inner = ks[ks.len() - 1];
    // Long contiguous reads per reduced position (streaming, few TLB misses), but
    // at least one block per thread and accumulators that stay in L1/L2.
    let block = inner.div_ceil(super::threads()).clamp(256, 4096);
    let rows = n_out / inner;
    let row_offset = |q: usize| -> isize {
        let (mut rem, mut off) = (q, 0isize);
        for d in (0..ks.len() - 1).rev() {
            off += (rem % ks[d]) as isize * kst[d];
            rem /= ks[d];
        }
        off
    };
    let mut out = try_vec(n_out, r.init())?;
    let po = P(out.as_mut_ptr());
    let blocks_per_row = inner.div_ceil(block);
    let work = |b: usize| {
        let (q, c0) = (b / blocks_per_row, (b % blocks_per_row) * block);
        let len = block.min(inner - c0);
        let acc = std::slice::from_raw_parts_mut(po.at((q * inner + c0) as isize), len);
        let src = base.at(row_offset(q) + c0 as isize);
        // Rows fold four at a time: each accumulator is loaded and stored once
        // per four rows, and the stored value is never the loaded one (a fold of
        // one row stored select(x, acc), which LLVM made a masked store).
        let (mut idx, mut queued, mut n_q) = (0, [0isize; 4], 0);
        let mut flush = |queued: &[isize]| {
            let rows: [&[T]; 4] = std::array::from_fn(|k| match queued.get(k) {
                Some(&o) => std::slice::from_raw_parts(src.offset(o), len),
                None => &[],
            });
            let rows = &rows[..queued.len()];
            if R::VECTOR_COLUMNS {
                super::simd(
                    #[inline(always)]
                    || fold_rows(r, acc, rows, idx),
                );
            } else {
                fold_rows(r, acc, rows, idx);
            }
            idx += queued.len();
        };
        let mut fold_at = |ro: isize| {
            queued[n_q] = ro;
            n_q += 1;
            if n_q == 4 {
                flush(&queued);
                n_q = 0;
            }
        };
        if rs.is_empty() {
            fold_at(0);
        } else {
            walk_range(rs, std::array::from_ref(rst), 0, n_red, |[o], n, [st]| {
                (0..n as isize).for_each(|t| fold_at(o + t * st))
            });
        }
        flush(&queued[..n_q]);
    };
    let nb = rows * blocks_per_row;
    super::team::for_each_if(n_out.saturating_mul(n_red), nb, work);
    Ok(out)
}

/// Folds `rows` (the reduced positions idx, idx + 1, ... of a block) into
/// `acc`, four rows in one pass.
#[inline(always)]
fn fold_rows<T: Copy, R: Reducer<T>>(r: &R, acc: &mut [R::Acc], rows: &[&[T]], idx: usize) {
    if let [r0, r1, r2, r3] = rows {
        for ((((a, &x0), &x1), &x2), &x3) in acc.iter_mut().zip(*r0).zip(*r1).zip(*r2).zip(*r3) {
            let v = r.step(r.step(*a, x0, idx), x1, idx + 1);
            *a = r.step(r.step(v, x2, idx + 2), x3, idx + 3);
        }
    } else {
        for (row, i) in rows.iter().zip(idx..) {
            for (a, &x) in acc.iter_mut().zip(*row) {
                *a = r.step(*a, x, i);
            }
        }
    }
}

/// Sum in f64. Contiguous rows add into 32 independent lanes (four vectors of
/// eight: one chain of eight was bound by the add latency), then eight, then one
/// at a time; long rows compiled for the CPU's widest SIMD.
pub struct SumF64;
impl<T: crate::tensor::Element> Reducer<T> for SumF64 {
    type Acc = f64;
    fn init(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn step(&self, acc: f64, x: T, _: usize) -> f64 {
        acc + x.to_f64()
    }
    fn combine(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    unsafe fn row(&self, acc: f64, p: *const T, len: usize, stride: isize, _: usize) -> f64 {
        if stride != 1 {
            return (0..len).fold(acc, |a, i| a + (*p.offset(i as isize * stride)).to_f64());
        }
        let s = std::slice::from_raw_parts(p, len);
        if len < 64 {
            return acc + sum_f64(s, T::to_f64);
        }
        super::simd(
            #[inline(always)]
            || acc + sum_f64(s, T::to_f64),
        )
    }
}

/// The lanes of `SumF64::row` (and of the half types' sums, which widen each
/// element with `wide` and so add in the same order).
#[inline(always)]
pub(super) fn sum_f64<T: Copy>(s: &[T], wide: impl Fn(T) -> f64) -> f64 {
    let mut acc = [0.0f64; 32];
    let mut chunks = s.chunks_exact(32);
    for c in &mut chunks {
        for k in 0..32 {
            acc[k] += wide(c[k]);
        }
    }
    sum_f64_end(&acc, chunks.remainder(), wide)
}

/// The end of `sum_f64` from its 32 lane sums: the lanes folded to 8, then the
/// last (fewer than 32) elements added.
#[inline(always)]
pub(super) fn sum_f64_end<T: Copy>(acc: &[f64; 32], rest: &[T], wide: impl Fn(T) -> f64) -> f64 {
    let mut lanes = [0.0f64; 8];
    for k in 0..32 {
        lanes[k % 8] += acc[k];
    }
    let mut chunks = rest.chunks_exact(8);
    for c in &mut chunks {
        for k in 0..8 {
            lanes[k] += wide(c[k]);
        }
    }
    let tail: f64 = chunks.remainder().iter().map(|&x| wide(x)).sum();
    lanes.iter().sum::<f64>() + tail
}

/// Max (or min) of the values, NaN winning as in PyTorch. Contiguous rows fold
/// in 16 independent lanes so they vectorize (long rows as wide as the CPU has).
pub struct Extreme {
    pub max: bool,
}
impl<T: crate::tensor::Element> Reducer<T> for Extreme {
    type Acc = T;
    fn init(&self) -> T {
        if self.max {
            T::lowest()
        } else {
            T::highest()
        }
    }
    #[inline(always)]
    #[allow(clippy::eq_op)]
    fn step(&self, acc: T, x: T, _: usize) -> T {
        let better = if self.max { x > acc } else { x < acc };
        if better || x != x {
            x
        } else {
            acc
        }
    }
    fn combine(&self, a: T, b: T) -> T {
        self.step(a, b, 0)
    }
    #[inline(always)]
    unsafe fn row(&self, acc: T, p: *const T, len: usize, stride: isize, _: usize) -> T {
        if stride != 1 {
            return (0..len).fold(acc, |a, i| self.step(a, *p.offset(i as isize * stride), 0));
        }
        let s = std::slice::from_raw_parts(p, len);
        if len < 64 {
            return self.lanes(acc, s);
        }
        super::simd(
            #[inline(always)]
            || self.lanes(acc, s),
        )
    }
}

impl Extreme {
    /// The 16 lanes of `row`.
    #[inline(always)]
    fn lanes<T: crate::tensor::Element>(&self, acc: T, s: &[T]) -> T {
        let mut lanes = [acc; 16];
        let mut chunks = s.chunks_exact(16);
        for c in &mut chunks {
            for k in 0..16 {
                lanes[k] = Reducer::<T>::step(self, lanes[k], c[k], 0);
            }
        }
        let acc = chunks.remainder().iter().fold(acc, |a, &x| Reducer::<T>::step(self, a, x, 0));
        lanes.iter().fold(acc, |a, &x| Reducer::<T>::step(self, a, x, 0))
    }
}

/// Product in float64 of any element type (read in place, no float64 copy
/// first); contiguous rows multiply in 16 independent lanes (vectorized)
/// rather than one chain of dependent multiplies.
pub struct Prod;
impl<T: crate::tensor::Element> Reducer<T> for Prod {
    type Acc = f64;
    fn init(&self) -> f64 {
        1.0
    }
    #[inline(always)]
    fn step(&self, acc: f64, x: T, _: usize) -> f64 {
        acc * x.to_f64()
    }
    fn combine(&self, a: f64, b: f64) -> f64 {
        a * b
    }
    #[inline(always)]
    unsafe fn row(&self, acc: f64, p: *const T, len: usize, stride: isize, _: usize) -> f64 {
        if stride != 1 || len < 64 {
            return (0..len).fold(acc, |a, i| a * (*p.offset(i as isize * stride)).to_f64());
        }
        let s = std::slice::from_raw_parts(p, len);
        super::simd(
            #[inline(always)]
            || {
                let mut lanes = [1.0f64; 16];
                let mut chunks = s.chunks_exact(16);
                for c in &mut chunks {
                    lanes.iter_mut().zip(c).for_each(|(l, &x)| *l *= x.to_f64());
                }
                let a = chunks.remainder().iter().fold(acc, |a, &x| a * x.to_f64());
                lanes.iter().fold(a, |a, &l| a * l)
            },
        )
    }
}

/// A reducer from three closures (fold, combine, identity) for the simple cases.
pub struct Fold<A, F, C> {
    pub init: A,
    pub step: F,
    pub combine: C,
}
impl<T: Copy, A: Copy + Send + Sync, F: Fn(A, T, usize) -> A + Sync, C: Fn(A, A) -> A + Sync>
    Reducer<T> for Fold<A, F, C>
{
    type Acc = A;
    fn init(&self) -> A {
        self.init
    }
    #[inline(always)]
    fn step(&self, acc: A, x: T, idx: usize) -> A {
        (self.step)(acc, x, idx)
    }
    fn combine(&self, a: A, b: A) -> A {
        (self.combine)(a, b)
    }
}

/// Runs `R` over `t` and maps each accumulator to an output element.
pub fn run<T, R, O>(
    t: &Tensor,
    reduced: &[bool],
    shape: &[usize],
    r: &R,
    finish: impl Fn(R::Acc) -> O,
) -> Result<Tensor>
where
    T: Element,
    R: Reducer<T>,
    O: Element,
{
    // SAFETY: t's layout lies within its storage.
    let accs = unsafe { reduce(P(t.ptr::<T>()?.sub(t.layout().offset)), t.layout(), reduced, r)? };
    Tensor::from_vec(accs.into_iter().map(finish).collect(), shape)
}

/// Running extreme: (value, index, seen). NaN wins, the first of equal values wins.
type Best<T> = (T, usize, bool);

#[inline(always)]
fn beats<T: Element>(x: T, cur: T, max: bool) -> bool {
    // Only NaN is unordered with itself.
    let (x_nan, cur_nan) = (x.partial_cmp(&x).is_none(), cur.partial_cmp(&cur).is_none());
    if cur_nan {
        return false;
    }
    x_nan || if max { x > cur } else { x < cur }
}

/// Max or min with its index (the first of equal values; a NaN wins, the
/// first NaN). A contiguous row takes two vectorized passes: its extreme (as
/// `Extreme`), then the first position holding it.
struct ExtremeIdx {
    max: bool,
}
impl<T: Element> Reducer<T> for ExtremeIdx {
    type Acc = Best<T>;
    fn init(&self) -> Best<T> {
        (T::zero(), 0, false)
    }
    #[inline(always)]
    fn step(&self, a: Best<T>, x: T, i: usize) -> Best<T> {
        if !a.2 || beats(x, a.0, self.max) {
            (x, i, true)
        } else {
            a
        }
    }
    fn combine(&self, a: Best<T>, b: Best<T>) -> Best<T> {
        if b.2 && (!a.2 || beats(b.0, a.0, self.max)) {
            b
        } else {
            a
        }
    }
    const VECTOR_COLUMNS: bool = false;
    #[inline(always)]
    unsafe fn row(
        &self,
        acc: Best<T>,
        p: *const T,
        len: usize,
        stride: isize,
        idx0: usize,
    ) -> Best<T> {
        if stride != 1 || len < 64 {
            return (0..len)
                .fold(acc, |a, i| self.step(a, *p.offset(i as isize * stride), idx0 + i));
        }
        let s = std::slice::from_raw_parts(p, len);
        let e = Extreme { max: self.max };
        let v = Reducer::<T>::row(&e, *p, p, len, 1, 0);
        #[allow(clippy::eq_op)]
        let i =
            if v != v { s.iter().position(|&x| x != x) } else { s.iter().position(|&x| x == v) };
        self.combine(acc, (v, idx0 + i.unwrap_or(0), true))
    }
}

pub fn extreme<T: Element>(
    t: &Tensor,
    reduced: &[bool],
    shape: &[usize],
    max: bool,
) -> Result<(Tensor, Tensor)> {
    let f = ExtremeIdx { max };
    // SAFETY: t's layout lies within its storage.
    let accs = unsafe { reduce(P(t.ptr::<T>()?.sub(t.layout().offset)), t.layout(), reduced, &f)? };
    let vals = Tensor::from_vec(accs.iter().map(|a| a.0).collect(), shape)?;
    let idx = Tensor::from_vec(accs.iter().map(|a| a.1 as i64).collect(), shape)?;
    Ok((vals, idx))
}

/// `scan` along the middle dim of contiguous (outer, len, inner) data: each
/// task runs a block of columns down the dim, so row i is row i-1 combined
/// with x's row i in vector loops (the same order of operations per column as
/// a serial scan).
///
/// # Safety
/// Both pointers must hold outer·len·inner elements.
unsafe fn scan_blocks<T: super::elementwise::Arith>(
    x: P<T>,
    out: P<T>,
    outer: usize,
    len: usize,
    inner: usize,
    product: bool,
) {
    // Columns per task: up to 512, fewer when that leaves threads idle.
    let tasks = 4 * super::threads();
    let block = inner.div_ceil(tasks.div_ceil(outer)).next_multiple_of(16).clamp(64, 512);
    let blocks = inner.div_ceil(block);
    super::team::for_each_if(outer * len * inner, outer * blocks, |task| {
        let (o, b) = (task / blocks, task % blocks);
        let (c0, w) = (b * block, block.min(inner - b * block));
        let row = |i: usize| (o * len + i) * inner + c0;
        std::ptr::copy_nonoverlapping(x.at(row(0) as isize), out.at(row(0) as isize), w);
        for i in 1..len {
            let prev = std::slice::from_raw_parts(out.at(row(i - 1) as isize), w);
            let xi = std::slice::from_raw_parts(x.at(row(i) as isize), w);
            let oi = std::slice::from_raw_parts_mut(out.at(row(i) as isize), w);
            if product {
                oi.iter_mut().zip(prev.iter().zip(xi)).for_each(|(r, (&a, &v))| *r = a.mul(v));
            } else {
                oi.iter_mut().zip(prev.iter().zip(xi)).for_each(|(r, (&a, &v))| *r = a.add(v));
            }
        }
    });
}

/// Rows `scan_rows` runs side by side.
const ROW_GROUP: usize = 8;

/// `scan` along the last dim of contiguous (rows, len) data: ROW_GROUP rows
/// advance together, so their additions (or products) form independent chains
/// instead of one chain waiting on each result. Each row's order of
/// operations is a serial scan's.
///
/// # Safety
/// Both pointers must hold rows·len elements.
unsafe fn scan_rows<T: super::elementwise::Arith>(
    x: P<T>,
    out: P<T>,
    rows: usize,
    len: usize,
    product: bool,
) {
    let op = move |a: T, v: T| if product { a.mul(v) } else { a.add(v) };
    let init = if product { T::one() } else { T::zero() };
    super::team::for_each_if(rows * len, rows.div_ceil(ROW_GROUP), |g| {
        let r0 = g * ROW_GROUP;
        let (xr, or) = (x.at((r0 * len) as isize), out.at((r0 * len) as isize));
        if rows - r0 < ROW_GROUP {
            // The last, partial group: row by row.
            for k in 0..rows - r0 {
                let mut a = init;
                for i in k * len..(k + 1) * len {
                    a = op(a, *xr.add(i));
                    *or.add(i) = a;
                }
            }
            return;
        }
        let mut acc = [init; ROW_GROUP];
        for i in 0..len {
            for (k, a) in acc.iter_mut().enumerate() {
                *a = op(*a, *xr.add(k * len + i));
                *or.add(k * len + i) = *a;
            }
        }
    });
}

/// Inclusive scan (cumsum, cumprod) of `x` along `d` into `out`.
pub fn scan<T: super::elementwise::Arith>(
    x: &Tensor,
    out: &Tensor,
    d: usize,
    product: bool,
) -> Result<()> {
    let (shape, xs, os) = if x.ndim() == 0 {
        (Shape::from_slice(&[1]), vec![1isize], vec![1isize])
    } else {
        (x.shape().clone(), x.strides().to_vec(), out.strides().to_vec())
    };
    let len = shape[d];
    let inner: usize = shape[d + 1..].iter().product();
    let rows = numel(&shape[..d]);
    if inner == 1 && rows >= ROW_GROUP && x.is_contiguous() && out.is_contiguous() {
        // SAFETY: both are contiguous tensors of `shape`.
        unsafe { scan_rows(P(x.ptr::<T>()?), P(out.ptr::<T>()?), rows, len, product) };
        return Ok(());
    }
    if inner > 1 && x.is_contiguous() && out.is_contiguous() {
        // SAFETY: both are contiguous tensors of `shape`.
        unsafe { scan_blocks(P(x.ptr::<T>()?), P(out.ptr::<T>()?), rows, len, inner, product) };
        return Ok(());
    }
    let (step_x, step_o) = (xs[d], os[d]);
    // Iterate over every row along `d`: the other dims, with `d` collapsed to size 1.
    let mut rows = shape.clone();
    rows[d] = 1;
    let (px, po) = (P(x.ptr::<T>()?), P(out.ptr::<T>()?));
    super::strided::for_each_row(&rows, [&xs[..], &os[..]], |[ox, oo], n, [sx, so]| {
        for r in 0..n as isize {
            let (bx, bo) = (ox + r * sx, oo + r * so);
            let mut acc = if product { T::one() } else { T::zero() };
            for i in 0..len as isize {
                // SAFETY: row positions lie within both layouts.
                unsafe {
                    let v = *px.at(bx + i * step_x);
                    acc = if product { acc.mul(v) } else { acc.add(v) };
                    *po.at(bo + i * step_o) = acc;
                }
            }
        }
    });
    Ok(())
}
