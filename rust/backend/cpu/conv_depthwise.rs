//! Depthwise 2-D convolutions on the CPU (groups = C: output channel o reads
//! input channel o / m alone, m = OC / C): each plane is a sum of kh·kw
//! shifted copies of one input plane, so no GEMM (whose M would be 1) and no
//! columns.
//!
//! Each input plane is copied, zero-padded, into sh·sw phases: phase (ri, rj)
//! holds the padded plane's rows ri, ri + sh, ... and columns rj, rj + sw, ...
//! as a grid of `wq` columns. Tap (i, j), with i·dh = ai·sh + ri and
//! j·dw = aj·sw + rj, reads for output (y, x) phase (ri, rj) at (y + ai,
//! x + aj); with outputs in the same "wide" layout (q = y·wq + x, the columns
//! x ≥ OW junk), every tap is one contiguous loop over q reading at q +
//! ai·wq + aj. Short output rows (32 columns and less) stay vectorized.

use super::conv::Geom;
use super::lanes::{lane_sums, tree, LANES};
use super::P;
use num_traits::Float;

/// Whether these kernels run the convolution: 2-D (or 1-D), more than one
/// group, one group per input channel, a nonempty output.
pub fn applies(g: &Geom, groups: usize, oc: usize) -> bool {
    groups > 1
        && groups == g.c
        && oc.is_multiple_of(g.c)
        && (g.d, g.kd, g.od) == (1, 1, 1)
        && g.oh * g.ow > 0
}

/// The phase layout of one plane.
struct Layout {
    /// Columns of a phase row and of a wide output row.
    wq: usize,
    /// Rows of a phase: the outputs' rows, those the taps reach past them,
    /// and a zero row for the junk columns' reads.
    hq: usize,
    /// Per tap: the first element it reads in the phase buffer (its phase's
    /// start + ai·wq + aj).
    taps: Vec<usize>,
}

impl Layout {
    fn of(g: &Geom) -> Layout {
        let (ai_max, aj_max) = ((g.kh - 1) * g.dh / g.sh, (g.kw - 1) * g.dw / g.sw);
        let (wq, hq) = (g.ow + aj_max, g.oh + ai_max + 1);
        let taps = (0..g.kh * g.kw)
            .map(|t| {
                let (i, j) = (t / g.kw * g.dh, t % g.kw * g.dw);
                let phase = (i % g.sh) * g.sw + j % g.sw;
                phase * hq * wq + (i / g.sh) * wq + j / g.sw
            })
            .collect();
        Layout { wq, hq, taps }
    }
    fn phases_len(&self, g: &Geom) -> usize {
        g.sh * g.sw * self.hq * self.wq
    }
    fn wide_len(&self, g: &Geom) -> usize {
        g.oh * self.wq
    }
    /// Calls `f(phase row start, plane row start, [lo, hi))` for every phase
    /// row that holds input elements: its columns [lo, hi) are the plane row's
    /// columns lo·sw + rj - pw ...
    fn rows(&self, g: &Geom, mut f: impl FnMut(usize, usize, usize, usize, usize)) {
        for ri in 0..g.sh {
            let (alo, ahi) = Geom::valid(self.hq, g.h, ri, g.sh, g.ph);
            for rj in 0..g.sw {
                let (blo, bhi) = Geom::valid(self.wq, g.w, rj, g.sw, g.pw);
                let base = (ri * g.sw + rj) * self.hq * self.wq;
                for a in alo..ahi {
                    let y = a * g.sh + ri - g.ph;
                    f(base + a * self.wq, y * g.w, blo, bhi, blo * g.sw + rj - g.pw);
                }
            }
        }
    }
}

/// Copies plane x (h × w) into its zero-padded phases in `dst`.
fn split<T: Float>(g: &Geom, lay: &Layout, x: &[T], dst: &mut [T]) {
    dst.fill(T::zero());
    lay.rows(g, |at, row, lo, hi, c0| {
        if g.sw == 1 {
            dst[at + lo..at + hi].copy_from_slice(&x[row + c0..][..hi - lo]);
        } else {
            for (k, d) in dst[at + lo..at + hi].iter_mut().enumerate() {
                *d = x[row + c0 + k * g.sw];
            }
        }
    });
}

/// Copies an output-shaped plane (OH × OW) into the wide layout; the junk
/// columns keep whatever they held (zero in the backward passes' buffers).
fn to_wide<T: Float>(g: &Geom, lay: &Layout, plane: &[T], wide: &mut [T]) {
    for (wr, pr) in wide.chunks_exact_mut(lay.wq).zip(plane.chunks_exact(g.ow)) {
        wr[..g.ow].copy_from_slice(pr);
    }
}

/// Planes per task: about 64 Ki outputs.
fn per_task(plane: usize, planes: usize) -> usize {
    ((1 << 16) / plane.max(1)).clamp(1, planes.max(1))
}

/// acc[q] += wv · src[q] over the wide plane (one tap).
#[inline(always)]
fn axpy<T: Float>(acc: &mut [T], wv: T, src: &[T]) {
    for (a, &s) in acc.iter_mut().zip(src) {
        *a = *a + wv * s;
    }
}

/// y (N, OC, OH, OW) = the depthwise convolution of x (N, C, H, W) with w
/// (OC, 1, kh, kw), plus bias.
///
/// # Safety
/// Contiguous operands of these shapes; y does not overlap them.
pub unsafe fn forward<T: Float + Send + Sync>(
    g: &Geom,
    oc: usize,
    x: P<T>,
    w: P<T>,
    bias: Option<P<T>>,
    y: P<T>,
) {
    let (m, kk, hw, l) = (oc / g.c, g.kh * g.kw, g.h * g.w, g.oh * g.ow);
    let (planes, lay) = (g.n * oc, Layout::of(g));
    let per = per_task(l, planes);
    super::team::for_each_if(planes * l * kk, planes.div_ceil(per), |t| {
        let mut ph = vec![T::zero(); lay.phases_len(g)];
        let mut wide = vec![T::zero(); lay.wide_len(g)];
        let mut last = usize::MAX; // the input plane in `ph`
        for p in t * per..((t + 1) * per).min(planes) {
            let (n, o) = (p / oc, p % oc);
            let src = n * g.c + o / m;
            // SAFETY: plane src of x, plane p of y, row o of w, bias of oc.
            let (xs, ys, ws, b) = unsafe {
                (
                    std::slice::from_raw_parts(x.at((src * hw) as isize), hw),
                    std::slice::from_raw_parts_mut(y.at((p * l) as isize), l),
                    std::slice::from_raw_parts(w.at((o * kk) as isize), kk),
                    bias.map_or(T::zero(), |b| *b.at(o as isize)),
                )
            };
            if src != last {
                split(g, &lay, xs, &mut ph);
                last = src;
            }
            super::simd(
                #[inline(always)]
                || {
                    wide.fill(b);
                    let len = wide.len();
                    for (&at, &wv) in lay.taps.iter().zip(ws) {
                        axpy(&mut wide, wv, &ph[at..at + len]);
                    }
                },
            );
            for (yr, wr) in ys.chunks_exact_mut(g.ow).zip(wide.chunks_exact(lay.wq)) {
                yr.copy_from_slice(&wr[..g.ow]);
            }
        }
    });
}

/// dx (N, C, H, W) of a depthwise convolution from dy (N, OC, OH, OW) and w.
///
/// # Safety
/// Contiguous operands of these shapes; dx does not overlap them.
pub unsafe fn input_grad<T: Float + Send + Sync>(g: &Geom, oc: usize, dy: P<T>, w: P<T>, dx: P<T>) {
    let (m, kk, hw, l) = (oc / g.c, g.kh * g.kw, g.h * g.w, g.oh * g.ow);
    let (planes, lay) = (g.n * g.c, Layout::of(g));
    let per = per_task(hw, planes);
    super::team::for_each_if(planes * l * kk * m, planes.div_ceil(per), |t| {
        let mut ph = vec![T::zero(); lay.phases_len(g)];
        // The junk columns stay zero, so they add nothing.
        let mut wide = vec![T::zero(); lay.wide_len(g)];
        for p in t * per..((t + 1) * per).min(planes) {
            let (n, c) = (p / g.c, p % g.c);
            ph.fill(T::zero());
            for o in c * m..(c + 1) * m {
                // SAFETY: plane (n, o) of dy, row o of w.
                let (gs, ws) = unsafe {
                    (
                        std::slice::from_raw_parts(dy.at(((n * oc + o) * l) as isize), l),
                        std::slice::from_raw_parts(w.at((o * kk) as isize), kk),
                    )
                };
                to_wide(g, &lay, gs, &mut wide);
                super::simd(
                    #[inline(always)]
                    || {
                        let len = wide.len();
                        for (&at, &wv) in lay.taps.iter().zip(ws) {
                            axpy(&mut ph[at..at + len], wv, &wide);
                        }
                    },
                );
            }
            // SAFETY: plane p of dx.
            let xs = unsafe { std::slice::from_raw_parts_mut(dx.at((p * hw) as isize), hw) };
            // Every element of the plane lies in exactly one phase; the padding is dropped.
            lay.rows(g, |at, row, lo, hi, c0| {
                for (k, &v) in ph[at + lo..at + hi].iter().enumerate() {
                    xs[row + c0 + k * g.sw] = v;
                }
            });
        }
    });
}

/// dw (OC, 1, kh, kw) of a depthwise convolution of x from dy.
///
/// # Safety
/// Contiguous operands of these shapes; dw does not overlap them.
pub unsafe fn weight_grad<T: Float + Send + Sync>(
    g: &Geom,
    oc: usize,
    x: P<T>,
    dy: P<T>,
    dw: P<T>,
) {
    let (m, kk, hw, l) = (oc / g.c, g.kh * g.kw, g.h * g.w, g.oh * g.ow);
    let lay = Layout::of(g);
    // One task per output channel: it sums over the images in order, so the
    // result does not depend on the thread count.
    super::team::for_each_if(g.n * oc * l * kk, oc, |o| {
        let mut ph = vec![T::zero(); lay.phases_len(g)];
        let mut wide = vec![T::zero(); lay.wide_len(g)];
        let mut acc = vec![[T::zero(); LANES]; kk];
        for n in 0..g.n {
            // SAFETY: plane (n, o / m) of x and plane (n, o) of dy.
            let (xs, gs) = unsafe {
                (
                    std::slice::from_raw_parts(x.at(((n * g.c + o / m) * hw) as isize), hw),
                    std::slice::from_raw_parts(dy.at(((n * oc + o) * l) as isize), l),
                )
            };
            split(g, &lay, xs, &mut ph);
            to_wide(g, &lay, gs, &mut wide);
            super::simd(
                #[inline(always)]
                || {
                    let len = wide.len();
                    for (&at, a) in lay.taps.iter().zip(acc.iter_mut()) {
                        let part = lane_sums([&wide[..], &ph[at..at + len]], |[d, v]| d * v);
                        for (a, p) in a.iter_mut().zip(part) {
                            *a = *a + p;
                        }
                    }
                },
            );
        }
        // SAFETY: row o of dw.
        let out = unsafe { std::slice::from_raw_parts_mut(dw.at((o * kk) as isize), kk) };
        for (d, a) in out.iter_mut().zip(acc) {
            *d = tree(a, |a, b| a + b);
        }
    });
}
