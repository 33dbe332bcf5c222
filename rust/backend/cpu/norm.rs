//! Layer normalization over rows of length m: forward with the per-row mean
//! and 1/std saved, backward in one pass per row plus weight/bias sums.

use super::{parallel, P};
use num_traits::Float;

/// Rows per parallel task (also the granularity of the weight/bias partial sums).
const CHUNK: usize = 16;

/// y = (x - mean)·rstd·w + b per row; mean and rstd written per row.
///
/// # Safety
/// `x`, `y` hold rows × m elements; `w`, `b` m elements when given; `mean`, `rstd` rows.
#[allow(clippy::too_many_arguments)]
pub unsafe fn forward<T: Float + Send + Sync>(
    x: P<T>,
    y: P<T>,
    w: Option<P<T>>,
    b: Option<P<T>>,
    mean: P<T>,
    rstd: P<T>,
    rows: usize,
    m: usize,
    eps: f64,
) {
    let mf = T::from(m).unwrap_or(T::one());
    let eps = T::from(eps).unwrap_or(T::zero());
    let row = |r: usize| {
        super::simd(
            #[inline(always)]
            || {
                // SAFETY: row r is touched by this task only.
                let (xs, ys) = unsafe {
                    (
                        std::slice::from_raw_parts(x.at((r * m) as isize), m),
                        std::slice::from_raw_parts_mut(y.at((r * m) as isize), m),
                    )
                };
                let mu = xs.iter().fold(T::zero(), |s, &v| s + v) / mf;
                let var = xs.iter().fold(T::zero(), |s, &v| s + (v - mu) * (v - mu)) / mf;
                let rs = T::one() / (var + eps).sqrt();
                // SAFETY: one write per row.
                unsafe {
                    *mean.at(r as isize) = mu;
                    *rstd.at(r as isize) = rs;
                }
                for (j, (yv, &xv)) in ys.iter_mut().zip(xs).enumerate() {
                    let mut v = (xv - mu) * rs;
                    // SAFETY: j < m.
                    unsafe {
                        if let Some(w) = w {
                            v = v * *w.at(j as isize);
                        }
                        if let Some(b) = b {
                            v = v + *b.at(j as isize);
                        }
                    }
                    *yv = v;
                }
            },
        )
    };
    super::team::for_each_if(rows * m, rows.div_ceil(CHUNK), |c| {
        (c * CHUNK..((c + 1) * CHUNK).min(rows)).for_each(&row)
    });
}

/// gx per row; gw = Σ g·x̂ and gb = Σ g over rows (returned, length m each).
///
/// # Safety
/// `x`, `g`, `gx` hold rows × m elements; `w` m elements; `mean`, `rstd` rows.
#[allow(clippy::too_many_arguments)]
pub unsafe fn backward<T: Float + Send + Sync>(
    x: P<T>,
    g: P<T>,
    w: Option<P<T>>,
    mean: P<T>,
    rstd: P<T>,
    gx: P<T>,
    rows: usize,
    m: usize,
) -> (Vec<T>, Vec<T>) {
    let mf = T::from(m).unwrap_or(T::one());
    let chunk = |c: usize| {
        super::simd(
            #[inline(always)]
            || {
                let (mut gw, mut gb) = (vec![T::zero(); m], vec![T::zero(); m]);
                let mut gxh = vec![T::zero(); m];
                for r in c * CHUNK..((c + 1) * CHUNK).min(rows) {
                    // SAFETY: row r is touched by this task only.
                    let (xs, gs, out) = unsafe {
                        (
                            std::slice::from_raw_parts(x.at((r * m) as isize), m),
                            std::slice::from_raw_parts(g.at((r * m) as isize), m),
                            std::slice::from_raw_parts_mut(gx.at((r * m) as isize), m),
                        )
                    };
                    let (mu, rs) = unsafe { (*mean.at(r as isize), *rstd.at(r as isize)) };
                    let (mut s1, mut s2) = (T::zero(), T::zero());
                    for j in 0..m {
                        let xh = (xs[j] - mu) * rs;
                        // SAFETY: j < m.
                        let gh = gs[j] * w.map_or(T::one(), |w| unsafe { *w.at(j as isize) });
                        gxh[j] = gh;
                        s1 = s1 + gh;
                        s2 = s2 + gh * xh;
                        gw[j] = gw[j] + gs[j] * xh;
                        gb[j] = gb[j] + gs[j];
                    }
                    let (a, b) = (s1 / mf, s2 / mf);
                    for j in 0..m {
                        let xh = (xs[j] - mu) * rs;
                        out[j] = rs * (gxh[j] - a - xh * b);
                    }
                }
                (gw, gb)
            },
        )
    };
    let chunks = rows.div_ceil(CHUNK);
    let add = |(mut a, mut b): (Vec<T>, Vec<T>), (c, d): (Vec<T>, Vec<T>)| {
        a.iter_mut().zip(c).for_each(|(x, y)| *x = *x + y);
        b.iter_mut().zip(d).for_each(|(x, y)| *x = *x + y);
        (a, b)
    };
    let zero = || (vec![T::zero(); m], vec![T::zero(); m]);
    if parallel(rows * m) {
        super::team::map(chunks, chunk).into_iter().fold(zero(), add)
    } else {
        (0..chunks).map(chunk).fold(zero(), add)
    }
}
