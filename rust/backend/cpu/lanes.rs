//! Sums in lanes of partials. A serial float sum is an order the compiler
//! must keep (one add after the other, no SIMD); 16 partials vectorize and
//! hide the adds' latency, and a tree (lanes 0..8 plus 8..16, then halves of
//! that...) folds them in four vector steps.
//!
//! Element k of n goes to partial `lane(k, n)`: k % 16, except that a row of
//! at least 16 ends with one whole block over its last 16 elements (which
//! overlaps the block before it) so the tail vectorizes too; its elements
//! past the last whole block go to partials 16 - (n % 16) .. 16.

use num_traits::Float;

pub const LANES: usize = 16;

/// The partial that element k of n is added to (see the module's note).
#[inline(always)]
pub fn lane(k: usize, n: usize) -> usize {
    if n >= LANES && k >= n - n % LANES {
        k + LANES - n
    } else {
        k % LANES
    }
}

/// The 16 partial sums of f(x₀[i], x₁[i], ...) over the slices' elements (one
/// length), element i in partial `lane(i, n)`. f must be pure: it runs again
/// on the elements the last block overlaps.
#[inline(always)]
pub fn lane_sums<T: Float, const K: usize>(xs: [&[T]; K], f: impl Fn([T; K]) -> T) -> [T; LANES] {
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
    if n < LANES {
        // A loop of constant length: a variable one would index acc at run
        // time and keep it in memory rather than registers.
        for (i, a) in acc.iter_mut().enumerate() {
            if i < n {
                *a = *a + f(at(i));
            }
        }
    } else if full < n {
        let first_new = LANES - (n - full);
        for (l, a) in acc.iter_mut().enumerate() {
            let v = f(at(n - LANES + l));
            *a = *a + if l >= first_new { v } else { T::zero() };
        }
    }
    acc
}

/// The partials folded as a tree: lane l with lane l + 8, then l + 4, ...
#[inline(always)]
pub fn tree<T: Copy>(acc: [T; LANES], op: impl Fn(T, T) -> T) -> T {
    // Arrays of constant size, so every step is a few vector instructions.
    let a: [T; 8] = std::array::from_fn(|l| op(acc[l], acc[l + 8]));
    let a: [T; 4] = std::array::from_fn(|l| op(a[l], a[l + 4]));
    op(op(a[0], a[2]), op(a[1], a[3]))
}

/// Σ f(x₀[i], x₁[i], ...), added in lanes.
#[inline(always)]
pub fn sum<T: Float, const K: usize>(xs: [&[T]; K], f: impl Fn([T; K]) -> T) -> T {
    tree(lane_sums(xs, f), |a, b| a + b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_element_lands_once_in_its_lane() {
        for n in 0..70 {
            for k in 0..n {
                let mut x = vec![0f32; n];
                x[k] = 1.0;
                let acc = lane_sums([&x[..]], |[v]| v);
                let want: [f32; LANES] = std::array::from_fn(|l| (l == lane(k, n)) as u8 as f32);
                assert_eq!(acc, want, "n {n}, k {k}");
            }
            let x: Vec<f64> = (0..n).map(|i| i as f64).collect();
            assert_eq!(sum([&x[..]], |[v]| v), (n * n.saturating_sub(1) / 2) as f64);
        }
        assert_eq!(tree(std::array::from_fn(|l| l as i32), |a, b| a.max(b)), 15);
    }
}
