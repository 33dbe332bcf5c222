//! Training-mode batch_norm of float32 on the CPU: the two forward and two
//! backward sweeps of rust/ops/batch_norm.rs, one task per channel, so a
//! channel's N·S values stay in cache across its passes. The composite it
//! replaces runs about ten full-size elementwise ops with a temporary each.
//! x may be any view whose spatial dims are contiguous (a convolution's
//! (N, C, S) view of its (C, N, S) result included): no copy is made.

use super::lanes::lane_sums;
use super::P;

/// Where (n, c, s) of x lies: n·sn + c·sc + s.
#[derive(Clone, Copy)]
pub struct Shape {
    pub n: usize,
    pub c: usize,
    pub s: usize,
    pub sn: isize,
    pub sc: isize,
}

/// Σ f(v) over a run, in float32 lanes summed into float64.
#[inline(always)]
fn lane_sum(a: &[f32], f: impl Fn(f32) -> f32) -> f64 {
    lane_sums([a], |[v]| f(v)).iter().map(|&v| v as f64).sum()
}

/// Σ f(a, b) over two runs of one length, as `lane_sum`.
#[inline(always)]
fn lane_sum2(a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) -> f64 {
    lane_sums([a, b], |[u, v]| f(u, v)).iter().map(|&v| v as f64).sum()
}

impl Shape {
    /// Run n of channel c of x (s elements).
    ///
    /// # Safety
    /// x must be valid for this shape.
    #[inline(always)]
    unsafe fn run<'a>(&self, x: P<f32>, n: usize, c: usize) -> &'a [f32] {
        // SAFETY: the caller's guarantee.
        unsafe {
            std::slice::from_raw_parts(x.at(n as isize * self.sn + c as isize * self.sc), self.s)
        }
    }
    /// Run n of channel c of a contiguous (N, C, S) tensor.
    #[inline(always)]
    fn dense(&self, n: usize, c: usize) -> isize {
        ((n * self.c + c) * self.s) as isize
    }
    /// Channel c's mean and biased variance (two passes: no cancellation).
    ///
    /// # Safety
    /// x must be valid for this shape.
    unsafe fn moments(&self, x: P<f32>, c: usize) -> (f64, f64) {
        let m = (self.n * self.s) as f64;
        super::simd(
            #[inline(always)]
            || {
                // Plain loops: an iterator's fold was not inlined here, and ran
                // compiled for the baseline CPU (SSE2) outside this wrapper.
                let (mut sum, mut sq) = (0.0, 0.0);
                for n in 0..self.n {
                    // SAFETY: the caller's guarantee.
                    sum += lane_sum(unsafe { self.run(x, n, c) }, |v| v);
                }
                let mean = sum / m;
                let mf = mean as f32;
                for n in 0..self.n {
                    // SAFETY: as above.
                    sq += lane_sum(unsafe { self.run(x, n, c) }, |v| (v - mf) * (v - mf));
                }
                (mean, sq / m)
            },
        )
    }
}

/// y = (x - mean) · rstd · w + b per channel, with the batch mean and biased
/// variance written to `stats` ((2, C): row 0 the means, row 1 the variances).
///
/// # Safety
/// x valid for `sh`; w, b (when given) hold C values; stats 2·C; y a
/// contiguous (N, C, S) buffer not overlapping the others.
pub unsafe fn forward(
    sh: Shape,
    x: P<f32>,
    w: Option<P<f32>>,
    b: Option<P<f32>>,
    eps: f64,
    stats: P<f32>,
    y: P<f32>,
) {
    let channel = |c: usize| {
        // SAFETY: the caller's guarantees; channel c's outputs belong to this task.
        unsafe {
            let (mean, var) = sh.moments(x, c);
            *stats.at(c as isize) = mean as f32;
            *stats.at((sh.c + c) as isize) = var as f32;
            let rstd = 1.0 / (var + eps).sqrt();
            let a = rstd * w.map_or(1.0, |w| *w.at(c as isize) as f64);
            let shift = b.map_or(0.0, |b| *b.at(c as isize));
            let (a, mf) = (a as f32, mean as f32);
            for n in 0..sh.n {
                let src = sh.run(x, n, c);
                let dst = std::slice::from_raw_parts_mut(y.at(sh.dense(n, c)), sh.s);
                super::simd(
                    #[inline(always)]
                    || dst.iter_mut().zip(src).for_each(|(d, &v)| *d = (v - mf) * a + shift),
                );
            }
        }
    };
    super::team::for_each_if(sh.n * sh.c * sh.s, sh.c, channel);
}

/// dx from dy `g` (contiguous (N, C, S)): with r = rstd, a = r·w and M = N·S,
/// dx = a·(g - Σg/M - (x - mean)·r²·Σg·(x - mean)/M). Writes `gstats`
/// ((2, C): Σg and Σg·(x - mean)), from which dw and db follow.
///
/// # Safety
/// As `forward`; `stats` as `forward` wrote it; g and dx contiguous (N, C, S).
#[allow(clippy::too_many_arguments)]
pub unsafe fn backward(
    sh: Shape,
    x: P<f32>,
    g: P<f32>,
    w: Option<P<f32>>,
    eps: f64,
    stats: P<f32>,
    gstats: P<f32>,
    dx: P<f32>,
) {
    let m = (sh.n * sh.s) as f64;
    let dense = Shape { sn: (sh.c * sh.s) as isize, sc: sh.s as isize, ..sh };
    let channel = |c: usize| {
        // SAFETY: the caller's guarantees; channel c's outputs belong to this task.
        unsafe {
            let mean = *stats.at(c as isize) as f64;
            let rstd = 1.0 / (*stats.at((sh.c + c) as isize) as f64 + eps).sqrt();
            let mf = mean as f32;
            let (sg, sgx) = super::simd(
                #[inline(always)]
                || {
                    // A plain loop, as in `moments`.
                    let (mut sg, mut sgx) = (0.0, 0.0);
                    for n in 0..sh.n {
                        let (xr, gr) = (sh.run(x, n, c), dense.run(g, n, c));
                        sg += lane_sum(gr, |v| v);
                        sgx += lane_sum2(gr, xr, |u, v| u * (v - mf));
                    }
                    (sg, sgx)
                },
            );
            *gstats.at(c as isize) = sg as f32;
            *gstats.at((sh.c + c) as isize) = sgx as f32;
            // dx = a·g + p·(x - mean) + q.
            let a = rstd * w.map_or(1.0, |w| *w.at(c as isize) as f64);
            let p = -a * rstd * rstd * sgx / m;
            let q = -a * sg / m;
            let (a, p, q) = (a as f32, p as f32, q as f32);
            for n in 0..sh.n {
                let (xr, gr) = (sh.run(x, n, c), dense.run(g, n, c));
                let dst = std::slice::from_raw_parts_mut(dx.at(sh.dense(n, c)), sh.s);
                super::simd(
                    #[inline(always)]
                    || {
                        for ((d, &u), &v) in dst.iter_mut().zip(gr).zip(xr) {
                            *d = a * u + p * (v - mf) + q;
                        }
                    },
                );
            }
        }
    };
    super::team::for_each_if(sh.n * sh.c * sh.s, sh.c, channel);
}
