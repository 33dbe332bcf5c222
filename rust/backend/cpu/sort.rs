//! CPU loops of the sorting family (rust/ops/sort/): every op works on the
//! rows of a contiguous (rows, n) matrix in a compute dtype (no half types).
//!
//! Elements are compared through an order-preserving integer key: floats map
//! their bits so that integer order is float order with -0.0 == 0.0 and NaN
//! above +inf (PyTorch's order); descending flips the key. A key is packed
//! with the element's index into one integer (key high, index low), so
//! sorting packed integers is a stable sort by value with ties in index order,
//! whatever algorithm does it: LSD radix on the key bytes for long rows of
//! 32-bit keys, pattern-defeating quicksort (`sort_unstable`) otherwise,
//! `select_nth_unstable` for the selections (topk, kthvalue, median).

use super::team::for_each_if;
use super::P;
use crate::tensor::Element;
use std::cmp::Ordering::{Equal, Greater};

/// An integer holding (key, index): its order is the key order, then the index order.
pub trait Packed: Copy + Ord + Send + Sync + Default {
    fn make(key: u64, idx: u32) -> Self;
    fn index(self) -> u32;
    fn key(self) -> u64;
    /// Sorts a row: radix on the key bytes where it is faster.
    fn sort_row(v: &mut Vec<Self>);
}

impl Packed for u64 {
    #[inline(always)]
    fn make(key: u64, idx: u32) -> u64 {
        (key << 32) | idx as u64
    }
    #[inline(always)]
    fn index(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn key(self) -> u64 {
        self >> 32
    }
    fn sort_row(v: &mut Vec<u64>) {
        if v.len() >= RADIX_MIN {
            radix_sort(v);
        } else {
            v.sort_unstable();
        }
    }
}

impl Packed for u128 {
    #[inline(always)]
    fn make(key: u64, idx: u32) -> u128 {
        ((key as u128) << 64) | idx as u128
    }
    #[inline(always)]
    fn index(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn key(self) -> u64 {
        (self >> 64) as u64
    }
    fn sort_row(v: &mut Vec<u128>) {
        v.sort_unstable();
    }
}

/// Rows at least this long are radix sorted (4 passes over the data beat
/// n log n comparisons from here on).
const RADIX_MIN: usize = 1 << 10;

/// LSD radix sort of packed (32-bit key, index) words on the four key bytes.
/// Rows arrive in index order and every pass is stable, so the result is the
/// packed order. Bytes that are the same in every element are skipped.
fn radix_sort(v: &mut Vec<u64>) {
    let n = v.len();
    let mut counts = [[0usize; 256]; 4];
    for &x in v.iter() {
        let k = (x >> 32) as u32;
        for (b, c) in counts.iter_mut().enumerate() {
            c[((k >> (8 * b)) & 0xff) as usize] += 1;
        }
    }
    let mut tmp = vec![0u64; n];
    for (b, c) in counts.iter().enumerate() {
        if c.contains(&n) {
            continue; // every element has the same byte here
        }
        let mut start = [0usize; 256];
        let mut acc = 0;
        for (s, &m) in start.iter_mut().zip(c) {
            *s = acc;
            acc += m;
        }
        let shift = 32 + 8 * b;
        for &x in v.iter() {
            let d = ((x >> shift) & 0xff) as usize;
            // SAFETY: start[d] < n: the counts of each digit add up to n.
            unsafe { *tmp.get_unchecked_mut(start[d]) = x };
            start[d] += 1;
        }
        std::mem::swap(v, &mut tmp);
    }
}

/// Element types with an order-preserving key.
pub trait SortKey: Element {
    type Pk: Packed;
    /// The ascending key: integer order is PyTorch's order of the values.
    fn key(self) -> u64;
    /// The key flipped within its width (descending order).
    fn flip(key: u64) -> u64;
    fn is_nan(self) -> bool {
        false
    }
    #[inline(always)]
    fn pack(self, idx: u32, desc: bool) -> Self::Pk {
        let k = self.key();
        Self::Pk::make(if desc { Self::flip(k) } else { k }, idx)
    }
}

macro_rules! float_key {
    ($t:ty, $u:ty, $pk:ty) => {
        impl SortKey for $t {
            type Pk = $pk;
            #[inline(always)]
            fn key(self) -> u64 {
                // Branch-free (selects, no jumps): random signs would mispredict.
                const SIGN: $u = 1 << (<$u>::BITS - 1);
                let b = self.to_bits();
                let neg = (b >> (<$u>::BITS - 1)).wrapping_neg();
                let k = b ^ (neg | SIGN);
                let k = if self == 0.0 { SIGN } else { k };
                (if self.is_nan() { <$u>::MAX } else { k }) as u64
            }
            #[inline(always)]
            fn flip(key: u64) -> u64 {
                (!(key as $u)) as u64
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                self.is_nan()
            }
        }
    };
}
float_key!(f32, u32, u64);
float_key!(f64, u64, u128);

macro_rules! int_key {
    ($t:ty, $u:ty, $pk:ty, |$v:ident| $key:expr) => {
        impl SortKey for $t {
            type Pk = $pk;
            #[inline(always)]
            fn key(self) -> u64 {
                let $v = self;
                ($key) as u64
            }
            #[inline(always)]
            fn flip(key: u64) -> u64 {
                (!(key as $u)) as u64
            }
        }
    };
}
int_key!(i32, u32, u64, |v| (v as u32) ^ (1 << 31));
int_key!(i64, u64, u128, |v| (v as u64) ^ (1 << 63));
int_key!(u8, u32, u64, |v| v as u32);
int_key!(bool, u32, u64, |v| v as u32);

/// A contiguous (rows, n) input and where each row's results go.
pub struct Rows<T> {
    pub x: P<T>,
    pub rows: usize,
    pub n: usize,
}

impl<T: SortKey> Rows<T> {
    /// Row `r` of the input.
    fn row(&self, r: usize) -> &[T] {
        // SAFETY: the input holds rows * n elements.
        unsafe { std::slice::from_raw_parts(self.x.at((r * self.n) as isize), self.n) }
    }
    fn packed(&self, r: usize, desc: bool) -> Vec<T::Pk> {
        self.row(r).iter().enumerate().map(|(i, &v)| v.pack(i as u32, desc)).collect()
    }
    /// Writes the first `out_n` packed elements of row `r` as values and indices.
    fn emit(&self, r: usize, p: &[T::Pk], vals: P<T>, idx: P<i64>, out_n: usize) {
        let row = self.row(r);
        for (i, q) in p.iter().take(out_n).enumerate() {
            let j = q.index() as usize;
            let o = (r * out_n + i) as isize;
            // SAFETY: the outputs hold rows * out_n elements.
            unsafe {
                *vals.at(o) = row[j];
                *idx.at(o) = j as i64;
            }
        }
    }
}

/// sort: values and indices of every row, ascending or descending; stable.
pub fn sort<T: SortKey>(x: &Rows<T>, desc: bool, vals: P<T>, idx: P<i64>) {
    for_each_if(x.rows * x.n, x.rows, |r| {
        let mut p = x.packed(r, desc);
        T::Pk::sort_row(&mut p);
        x.emit(r, &p, vals, idx, x.n);
    });
}

/// The `k` smallest packed elements of `row` (whose first element has index
/// `base`), in any order. One streaming pass: an element enters a small
/// buffer only when it beats the current k-th smallest, and a full buffer is
/// cut back to its k smallest, so a long row is never packed whole.
fn smallest<T: SortKey>(row: &[T], base: usize, k: usize, desc: bool) -> Vec<T::Pk> {
    let cap = (4 * k).max(256);
    let mut buf = Vec::with_capacity(cap.min(row.len()));
    let mut bound: Option<T::Pk> = None;
    for (i, &v) in row.iter().enumerate() {
        let q = v.pack((base + i) as u32, desc);
        if bound.is_some_and(|b| q > b) {
            continue;
        }
        buf.push(q);
        if buf.len() == cap {
            buf.select_nth_unstable(k - 1);
            buf.truncate(k);
            bound = Some(buf[k - 1]);
        }
    }
    if buf.len() > k {
        buf.select_nth_unstable(k - 1);
        buf.truncate(k);
    }
    buf
}

/// topk: the k largest (or smallest) of every row, sorted (also for
/// sorted=False, whose order PyTorch leaves open: the GPU gives the same).
/// A single long row is split into chunks selected in parallel.
pub fn topk<T: SortKey>(x: &Rows<T>, k: usize, largest: bool, vals: P<T>, idx: P<i64>) {
    if k == 0 {
        return;
    }
    let threads = super::threads();
    let chunked = x.rows < threads && threads > 1 && x.n >= 1 << 16 && k * threads * 8 <= x.n;
    for_each_if(x.rows * x.n, x.rows, |r| {
        let row = x.row(r);
        let mut p = if chunked {
            let chunk = x.n.div_ceil(threads);
            let parts = super::team::map(x.n.div_ceil(chunk), |c| {
                let lo = c * chunk;
                smallest(&row[lo..(lo + chunk).min(x.n)], lo, k, largest)
            });
            let mut all = parts.concat();
            all.select_nth_unstable(k - 1);
            all.truncate(k);
            all
        } else {
            smallest(row, 0, k, largest)
        };
        p.sort_unstable();
        x.emit(r, &p, vals, idx, k);
    });
}

/// Which element of the ascending order a selection takes.
#[derive(Copy, Clone)]
pub enum Select {
    /// The k-th smallest (0-based).
    Kth(usize),
    /// The lower median; a row with a NaN gives its first NaN.
    Median,
    /// The lower median of the non-NaN values (a NaN when all are NaN).
    NanMedian,
}

/// kthvalue / median / nanmedian of every row: one value and index per row.
pub fn select<T: SortKey>(x: &Rows<T>, how: Select, vals: P<T>, idx: P<i64>) {
    for_each_if(x.rows * x.n, x.rows, |r| {
        let mut p = x.packed(r, false);
        let nan = || x.row(r).iter().filter(|v| v.is_nan()).count();
        // NaNs sort last, in index order.
        let pos = match how {
            Select::Kth(k) => k,
            Select::Median => match nan() {
                0 => (x.n - 1) / 2,
                m => x.n - m,
            },
            Select::NanMedian => (x.n - nan()).saturating_sub(1) / 2,
        };
        p.select_nth_unstable(pos);
        x.emit(r, &p[pos..pos + 1], vals, idx, 1);
    });
}

/// mode of every row: the most frequent value (the smallest among equally
/// frequent ones; NaNs count as one value) and the last index holding it.
pub fn mode<T: SortKey>(x: &Rows<T>, vals: P<T>, idx: P<i64>) {
    for_each_if(x.rows * x.n, x.rows, |r| {
        let mut p = x.packed(r, false);
        T::Pk::sort_row(&mut p);
        let (mut best, mut best_len, mut start) = (0, 0, 0);
        for i in 1..=p.len() {
            if i == p.len() || p[i].key() != p[start].key() {
                if i - start > best_len {
                    (best, best_len) = (i - 1, i - start);
                }
                start = i;
            }
        }
        x.emit(r, &p[best..best + 1], vals, idx, 1);
    });
}

/// unique over the rows of `x` (each row one item, compared element by
/// element; NaNs never equal, as in PyTorch): for each distinct item in
/// order (sorted, or as consecutive runs), the row that represents it, the
/// item each row maps to, and the count of each item.
pub fn unique<T: SortKey>(x: &Rows<T>, sorted: bool) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    let (rows, m) = (x.rows, x.n);
    let keys = |r: usize| x.row(r).iter().map(|v| v.key());
    let order: Vec<usize> = if !sorted {
        (0..rows).collect()
    } else if m == 1 {
        let mut p: Vec<T::Pk> = (0..rows).map(|r| x.row(r)[0].pack(r as u32, false)).collect();
        T::Pk::sort_row(&mut p);
        p.iter().map(|q| q.index() as usize).collect()
    } else {
        let mut o: Vec<usize> = (0..rows).collect();
        o.sort_by(|&a, &b| keys(a).cmp(keys(b)));
        o
    };
    let same = |a: usize, b: usize| {
        x.row(a).iter().zip(x.row(b)).all(|(u, v)| !u.is_nan() && u.key() == v.key())
    };
    let (mut reps, mut inverse, mut counts) = (Vec::new(), vec![0i64; rows], Vec::new());
    for (i, &r) in order.iter().enumerate() {
        if i == 0 || !same(order[i - 1], r) {
            reps.push(r as i64);
            counts.push(0);
        }
        inverse[r] = reps.len() as i64 - 1;
        *counts.last_mut().expect("pushed above") += 1;
    }
    (reps, inverse, counts)
}

/// searchsorted: for each value, the first position in its sorted row where it
/// could be inserted (after equal elements when `right`), with PyTorch's
/// comparisons (a NaN value goes last). `seq` rows have `n` elements; value
/// row `r` searches seq row `r % seq_rows`.
pub fn searchsorted<T: Element>(
    seq: &[T],
    n: usize,
    values: &[T],
    per_row: usize,
    right: bool,
    out: &mut [i64],
) {
    let seq_rows = (seq.len() / n.max(1)).max(1);
    let pout = P(out.as_mut_ptr());
    for_each_if(values.len() * 4, values.len().div_ceil(per_row.max(1)), |r| {
        let s = &seq[(r % seq_rows) * n..(r % seq_rows) * n + n];
        for i in r * per_row..((r + 1) * per_row).min(values.len()) {
            let v = values[i];
            let (mut lo, mut hi) = (0, n);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                // !(s > v) and !(s >= v): NaNs compare as neither.
                let c = s[mid].partial_cmp(&v);
                let go_right =
                    if right { c != Some(Greater) } else { !matches!(c, Some(Greater | Equal)) };
                if go_right {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            // SAFETY: i < values.len() == out.len().
            unsafe { *pout.at(i as isize) = lo as i64 };
        }
    });
}

/// Histogram of `x` over the bins between consecutive `edges` (the last bin
/// closed), optionally weighted; values outside the edges and NaNs are
/// skipped. `uniform`: the edges are evenly spaced (a division finds the bin,
/// then the edges correct its rounding), else a binary search does.
pub fn histogram(x: &[f64], w: Option<&[f64]>, edges: &[f64], uniform: bool) -> Vec<f64> {
    let bins = edges.len().saturating_sub(1);
    let mut hist = vec![0.0; bins];
    if bins == 0 {
        return hist;
    }
    let (lo, hi) = (edges[0], edges[bins]);
    for (i, &v) in x.iter().enumerate() {
        if !(v >= lo && v <= hi) {
            continue;
        }
        let mut b = if uniform {
            (((v - lo) * bins as f64 / (hi - lo)) as usize).min(bins - 1)
        } else {
            edges.partition_point(|&e| e <= v).saturating_sub(1).min(bins - 1)
        };
        if uniform {
            while b > 0 && v < edges[b] {
                b -= 1;
            }
            while b + 1 < bins && v >= edges[b + 1] {
                b += 1;
            }
        }
        hist[b] += w.map_or(1.0, |w| w[i]);
    }
    hist
}

/// bincount: counts (or weight sums) of the non-negative integers in `x`.
pub fn bincount(x: &[i64], w: Option<&[f64]>, len: usize) -> Vec<f64> {
    let mut out = vec![0.0; len];
    for (i, &v) in x.iter().enumerate() {
        out[v as usize] += w.map_or(1.0, |w| w[i]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_keys_follow_pytorch_order() {
        let vals = [f32::NEG_INFINITY, -2.5, -0.0, 0.0, 1e-30, 3.0, f32::INFINITY, f32::NAN];
        let keys: Vec<u64> = vals.iter().map(|v| v.key()).collect();
        for w in keys.windows(2) {
            assert!(w[0] <= w[1]);
        }
        assert_eq!((-0.0f32).key(), 0.0f32.key());
        assert_eq!((-f32::NAN).key(), f32::NAN.key());
    }

    #[test]
    fn radix_equals_comparison_sort() {
        let mut s = 12345u64;
        let mut v: Vec<u64> = (0..5000u32)
            .map(|i| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                u64::make((s >> 40) & 0xff0f, i)
            })
            .collect();
        let mut w = v.clone();
        w.sort_unstable();
        radix_sort(&mut v);
        assert_eq!(v, w);
    }
}
