//! Layer normalization over rows of length m: forward with the per-row mean
//! and 1/std saved, backward in one pass per row plus weight/bias sums.

use super::{lanes, parallel, P};
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
    // Absent weight and bias as ones and zeros: one loop, no branch per element.
    let (ones, zeros) = (vec![T::one(); m], vec![T::zero(); m]);
    // SAFETY: w and b hold m elements when given.
    let (ws, bs) = unsafe {
        (
            w.map_or(&ones[..], |w| std::slice::from_raw_parts(w.get(), m)),
            b.map_or(&zeros[..], |b| std::slice::from_raw_parts(b.get(), m)),
        )
    };
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
                let mu = lanes::sum([xs], |[v]| v) / mf;
                let var = lanes::sum([xs], |[v]| (v - mu) * (v - mu)) / mf;
                let rs = T::one() / (var + eps).sqrt();
                // SAFETY: one write per row.
                unsafe {
                    *mean.at(r as isize) = mu;
                    *rstd.at(r as isize) = rs;
                }
                for (((yv, &xv), &wv), &bv) in ys.iter_mut().zip(xs).zip(ws).zip(bs) {
                    *yv = (xv - mu) * rs * wv + bv;
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
    let ones = vec![T::one(); m];
    // A few tasks per thread, each with its own weight and bias partials.
    let per = CHUNK.max(rows.div_ceil(4 * super::threads()));
    // SAFETY: w holds m elements when given.
    let ws = w.map_or(&ones[..], |w| unsafe { std::slice::from_raw_parts(w.get(), m) });
    let chunk = |c: usize| {
        super::simd(
            #[inline(always)]
            || {
                let (mut gw, mut gb) = (vec![T::zero(); m], vec![T::zero(); m]);
                for r in c * per..((c + 1) * per).min(rows) {
                    // SAFETY: row r is touched by this task only.
                    let (xs, gs, out) = unsafe {
                        (
                            std::slice::from_raw_parts(x.at((r * m) as isize), m),
                            std::slice::from_raw_parts(g.at((r * m) as isize), m),
                            std::slice::from_raw_parts_mut(gx.at((r * m) as isize), m),
                        )
                    };
                    let (mu, rs) = unsafe { (*mean.at(r as isize), *rstd.at(r as isize)) };
                    // With ĝ = g·w and x̂ = (x - mean)·rstd:
                    // gx = rstd·(ĝ - mean(ĝ) - x̂·mean(ĝ·x̂)).
                    let a = lanes::sum([gs, ws], |[g, w]| g * w) / mf;
                    let b = lanes::sum([gs, ws, xs], |[g, w, x]| g * w * (x - mu) * rs) / mf;
                    // All of length m, so that the loop needs no bounds checks.
                    let (gw, gb, ws) = (&mut gw[..m], &mut gb[..m], &ws[..m]);
                    for j in 0..m {
                        let xh = (xs[j] - mu) * rs;
                        gw[j] = gw[j] + gs[j] * xh;
                        gb[j] = gb[j] + gs[j];
                        out[j] = rs * (gs[j] * ws[j] - a - xh * b);
                    }
                }
                (gw, gb)
            },
        )
    };
    let chunks = rows.div_ceil(per);
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
