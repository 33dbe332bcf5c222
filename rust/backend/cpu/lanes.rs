//! Sums in lanes of partials. A serial float sum is an order the compiler
//! must keep (one add after the other, no SIMD); 16 partials, element i in
//! partial i % 16, vectorize and hide the adds' latency.

use num_traits::Float;

pub const LANES: usize = 16;

/// The 16 partial sums of f(x₀[i], x₁[i], ...) over the slices' elements
/// (element i in partial i % 16). The slices have one length.
#[inline(always)]
pub fn lane_sums<T: Float, const K: usize>(
    xs: [&[T]; K],
    mut f: impl FnMut([T; K]) -> T,
) -> [T; LANES] {
    let n = xs.first().map_or(0, |s| s.len());
    assert!(xs.iter().all(|s| s.len() == n), "lane_sums: slices of different lengths");
    // SAFETY: i < n, every slice's length.
    let at = |i: usize| std::array::from_fn(|k| unsafe { *xs[k].get_unchecked(i) });
    let mut acc = [T::zero(); LANES];
    let full = n - n % LANES;
    for c in (0..full).step_by(LANES) {
        for (l, a) in acc.iter_mut().enumerate() {
            *a = *a + f(at(c + l));
        }
    }
    for (a, i) in acc.iter_mut().zip(full..n) {
        *a = *a + f(at(i));
    }
    acc
}

/// Σ f(x₀[i], x₁[i], ...), added in lanes.
#[inline(always)]
pub fn sum<T: Float, const K: usize>(xs: [&[T]; K], f: impl FnMut([T; K]) -> T) -> T {
    lane_sums(xs, f).iter().fold(T::zero(), |s, &v| s + v)
}
