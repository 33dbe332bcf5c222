//! Resampling along one dim as K weighted taps per output position (linear:
//! 2, cubic: 4), and its adjoint, which also sums padding's gradient back.
//! Data is contiguous (outer, n, inner): with inner > 1 every tap adds a whole
//! row in a vector loop; with inner = 1 each output gathers its K inputs.

use super::elementwise::Arith;
use super::team::for_rows;
use super::P;

/// `out[a, j, c] = Σ_k w[j·K + k] · x[a, idx[j·K + k], c]` for x of shape
/// (outer, n, inner) and out of shape (outer, m, inner), m·K = idx.len().
///
/// # Safety
/// Both pointers must hold those shapes and every idx be in [0, n).
pub unsafe fn taps<T: Arith>(
    out: P<T>,
    x: P<T>,
    (outer, n, inner): (usize, usize, usize),
    idx: &[i64],
    w: &[T],
    k: usize,
) {
    let m = idx.len() / k;
    if inner == 1 {
        // Whole output rows: each element gathers its k inputs.
        return for_rows(outer, m, |a| {
            let (o, s) = (out.at((a * m) as isize), x.at((a * n) as isize));
            for j in 0..m {
                let mut acc = T::zero();
                for t in j * k..(j + 1) * k {
                    acc = acc.add(w[t].mul(*s.add(idx[t] as usize)));
                }
                *o.add(j) = acc;
            }
        });
    }
    for_rows(outer * m, inner, |r| {
        let (a, j) = (r / m, r % m);
        let o = std::slice::from_raw_parts_mut(out.at((r * inner) as isize), inner);
        let src = |t: usize| x.at(((a * n + idx[j * k + t] as usize) * inner) as isize);
        super::simd(
            #[inline(always)]
            || {
                for t in 0..k {
                    let (wt, s) = (w[j * k + t], std::slice::from_raw_parts(src(t), inner));
                    if t == 0 {
                        o.iter_mut().zip(s).for_each(|(o, &v)| *o = wt.mul(v));
                    } else {
                        o.iter_mut().zip(s).for_each(|(o, &v)| *o = o.add(wt.mul(v)));
                    }
                }
            },
        )
    });
}

/// The adjoint of `taps`: `out[a, i, c] = Σ w[p] · g[a, p / K, c]` over the
/// taps p with `idx[p] == i` (negative idx: no tap; w None: weights of 1), for
/// g of shape (outer, idx.len() / K, inner) and out of shape (outer, n, inner).
///
/// # Safety
/// Both pointers must hold those shapes and every idx be below n.
pub unsafe fn taps_adjoint<T: Arith>(
    out: P<T>,
    g: P<T>,
    (outer, n, inner): (usize, usize, usize),
    idx: &[i64],
    w: Option<&[T]>,
    k: usize,
) {
    // The taps of each source index, as one list split by `at`.
    let mut at = vec![0usize; n + 1];
    idx.iter().filter(|&&i| i >= 0).for_each(|&i| at[i as usize + 1] += 1);
    (0..n).for_each(|i| at[i + 1] += at[i]);
    let mut next = at.clone();
    // (tap, output position) pairs.
    let mut from = vec![(0usize, 0usize); at[n]];
    for (p, &i) in idx.iter().enumerate().filter(|(_, &i)| i >= 0) {
        from[next[i as usize]] = (p, p / k);
        next[i as usize] += 1;
    }
    let m = idx.len() / k;
    if inner == 1 {
        return for_rows(outer, n, |a| {
            let (o, s) = (out.at((a * n) as isize), g.at((a * m) as isize));
            for i in 0..n {
                let mut acc = T::zero();
                for &(p, j) in &from[at[i]..at[i + 1]] {
                    acc = acc.add(w.map_or(*s.add(j), |w| w[p].mul(*s.add(j))));
                }
                *o.add(i) = acc;
            }
        });
    }
    for_rows(outer * n, inner, |r| {
        let (a, i) = (r / n, r % n);
        let o = std::slice::from_raw_parts_mut(out.at((r * inner) as isize), inner);
        o.fill(T::zero());
        super::simd(
            #[inline(always)]
            || {
                for &(p, j) in &from[at[i]..at[i + 1]] {
                    let s = std::slice::from_raw_parts(g.at(((a * m + j) * inner) as isize), inner);
                    match w {
                        Some(w) => o.iter_mut().zip(s).for_each(|(o, &v)| *o = o.add(w[p].mul(v))),
                        None => o.iter_mut().zip(s).for_each(|(o, &v)| *o = o.add(v)),
                    }
                }
            },
        )
    });
}
