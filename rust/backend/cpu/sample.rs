//! grid_sample on the CPU (rust/ops/sample.rs), 2-D and 3-D alike: a 2-D
//! input is a 3-D one of depth 1 whose depth axis has one tap of weight 1.
//! Every output point reads the input at a product of per-axis taps (2 for
//! linear, 1 for nearest, 4 for bicubic) with per-axis weights; the
//! gradients reuse the same taps: the input's is the transposed scatter, the
//! grid's the weights' derivatives times the values read. shaders/sample.wgsl
//! mirrors this file.

use super::{team, P};
use crate::ops::sample::{GridMode, GridPad};
use num_traits::Float;

/// Sizes and options of one call: batch, channels, input depth/height/width
/// (depth 1 for 2-D), output points per batch, spatial dims (2 or 3).
#[derive(Clone, Copy)]
pub struct Geom {
    pub n: usize,
    pub c: usize,
    pub size: [usize; 3],
    pub pts: usize,
    pub nd: usize,
    pub mode: GridMode,
    pub pad: GridPad,
    pub align: bool,
}

impl Geom {
    fn plane(&self) -> usize {
        self.size.iter().product()
    }
    /// Taps of one output point: per axis 1 (nearest), 2 (linear) or 4 (cubic).
    fn taps_per_point(&self) -> usize {
        let k: usize = match self.mode {
            GridMode::Nearest => 1,
            GridMode::Bilinear => 2,
            GridMode::Bicubic => 4,
        };
        k.pow(self.nd as u32)
    }
}

/// PyTorch's bicubic convolution coefficient.
const A: f64 = -0.75;

/// The taps of one axis: positions (valid ones in range), weights and the
/// weights' derivatives w.r.t. the grid coordinate (chain rule included).
#[derive(Clone, Copy)]
struct Axis<T> {
    k: usize,
    pos: [usize; 4],
    ok: [bool; 4],
    w: [T; 4],
    dw: [T; 4],
}

#[inline(always)]
fn c<T: Float>(v: f64) -> T {
    T::from(v).expect("a float constant")
}

/// Grid value -> source coordinate and d(coordinate)/d(grid).
#[inline(always)]
fn unnormalize<T: Float>(g: T, size: usize, align: bool) -> (T, T) {
    let s: T = c(size as f64);
    if align {
        let m = (s - T::one()) / c(2.0);
        ((g + T::one()) * m, m)
    } else {
        (((g + T::one()) * s - T::one()) / c(2.0), s / c(2.0))
    }
}

/// Clamp into [0, size - 1]; the gradient passes only strictly inside. NaN
/// goes to 0, as in PyTorch.
#[inline(always)]
fn clip<T: Float>(x: T, size: usize) -> (T, T) {
    let hi: T = c((size - 1) as f64);
    if x <= T::zero() || x.is_nan() {
        (T::zero(), T::zero())
    } else if x >= hi {
        (hi, T::zero())
    } else {
        (x, T::one())
    }
}

/// Reflects x into [lo2 / 2, hi2 / 2] (bounds doubled, as PyTorch), with the
/// sign the reflection gives the gradient.
#[inline(always)]
fn reflect<T: Float>(x: T, lo2: f64, hi2: f64) -> (T, T) {
    if lo2 == hi2 {
        return (T::zero(), T::zero());
    }
    let (lo, span): (T, T) = (c(lo2 / 2.0), c((hi2 - lo2) / 2.0));
    let mut d = x - lo;
    let mut sign = T::one();
    if d < T::zero() {
        sign = -sign;
        d = -d;
    }
    let flips = (d / span).floor();
    let extra = d - flips * span;
    if flips % c(2.0) == T::zero() {
        (extra + lo, sign)
    } else {
        (span - extra + lo, -sign)
    }
}

/// Border / reflection padding of a source coordinate (zeros: unchanged).
#[inline(always)]
fn pad_coord<T: Float>(x: T, size: usize, pad: GridPad, align: bool) -> (T, T) {
    match pad {
        GridPad::Zeros => (x, T::one()),
        GridPad::Border => clip(x, size),
        GridPad::Reflection => {
            let s = size as f64;
            let (r, m1) = if align {
                reflect(x, 0.0, 2.0 * (s - 1.0))
            } else {
                reflect(x, -1.0, 2.0 * s - 1.0)
            };
            let (v, m2) = clip(r, size);
            (v, m1 * m2)
        }
    }
}

/// The 4 cubic weights of taps floor - 1 .. floor + 2 at fraction t, and
/// their derivatives in t.
#[inline(always)]
fn cubic<T: Float>(t: T) -> ([T; 4], [T; 4]) {
    let a: T = c(A);
    let near = |x: T| ((a + c(2.0)) * x - (a + c(3.0))) * x * x + T::one();
    let dnear = |x: T| c::<T>(3.0) * (a + c(2.0)) * x * x - c::<T>(2.0) * (a + c(3.0)) * x;
    let far = |x: T| ((a * x - c::<T>(5.0) * a) * x + c::<T>(8.0) * a) * x - c::<T>(4.0) * a;
    let dfar = |x: T| c::<T>(3.0) * a * x * x - c::<T>(10.0) * a * x + c::<T>(8.0) * a;
    let one = T::one();
    let two: T = c(2.0);
    (
        [far(t + one), near(t), near(one - t), far(two - t)],
        [dfar(t + one), dnear(t), -dnear(one - t), -dfar(two - t)],
    )
}

/// The taps of grid coordinate `g` along an axis of `size`.
#[inline(always)]
fn axis<T: Float>(g: T, size: usize, geo: &Geom) -> Axis<T> {
    let (u, mu) = unnormalize(g, size, geo.align);
    let z = T::zero();
    let mut ax = Axis { k: 0, pos: [0; 4], ok: [false; 4], w: [z; 4], dw: [z; 4] };
    let mut put = |x: T, w: T, dw: T| {
        let i = ax.k;
        ax.k += 1;
        ax.ok[i] = x >= z && x <= c((size - 1) as f64);
        ax.pos[i] = if ax.ok[i] { x.to_usize().unwrap_or(0) } else { 0 };
        ax.w[i] = w;
        ax.dw[i] = dw;
    };
    match geo.mode {
        GridMode::Bilinear => {
            let (x, m) = pad_coord(u, size, geo.pad, geo.align);
            let x0 = x.floor();
            let f = x - x0;
            put(x0, T::one() - f, -m * mu);
            put(x0 + T::one(), f, m * mu);
        }
        GridMode::Nearest => {
            let (x, _) = pad_coord(u, size, geo.pad, geo.align);
            put(round_even(x), T::one(), z);
        }
        GridMode::Bicubic => {
            let x0 = u.floor();
            let (w, dw) = cubic(u - x0);
            for k in 0..4 {
                let tap = x0 + c((k as f64) - 1.0);
                let (p, _) = pad_coord(tap, size, geo.pad, geo.align);
                put(p.round(), w[k], dw[k] * mu);
            }
        }
    }
    ax
}

/// Round half to even (PyTorch's nearbyint).
#[inline(always)]
fn round_even<T: Float>(x: T) -> T {
    let r = x.round();
    if (r - x).abs() == c(0.5) && r % c(2.0) != T::zero() {
        r - (r - x).signum()
    } else {
        r
    }
}

/// The three axes (depth, height, width) of point `p` of batch `b`; a 2-D
/// call's depth axis is one tap at 0 of weight 1.
#[inline(always)]
fn taps<T: Float>(geo: &Geom, grid: &[T], b: usize, p: usize) -> [Axis<T>; 3] {
    let g = &grid[(b * geo.pts + p) * geo.nd..][..geo.nd];
    let unit = Axis {
        k: 1,
        pos: [0; 4],
        ok: [true, false, false, false],
        w: [T::one(), T::zero(), T::zero(), T::zero()],
        dw: [T::zero(); 4],
    };
    let d = if geo.nd == 3 { axis(g[2], geo.size[0], geo) } else { unit };
    [d, axis(g[1], geo.size[1], geo), axis(g[0], geo.size[2], geo)]
}

/// Calls `f(flat position, weight, [d weight / d axis], in range)` for every
/// tap of the product (an out-of-range tap has position 0 and reads nothing).
#[inline(always)]
fn each_tap<T: Float>(geo: &Geom, ax: &[Axis<T>; 3], mut f: impl FnMut(usize, T, [T; 3], bool)) {
    let [d, h, w] = ax;
    for i in 0..d.k {
        for j in 0..h.k {
            for k in 0..w.k {
                let ok = d.ok[i] && h.ok[j] && w.ok[k];
                let at = if ok {
                    (d.pos[i] * geo.size[1] + h.pos[j]) * geo.size[2] + w.pos[k]
                } else {
                    0
                };
                let wt = d.w[i] * h.w[j] * w.w[k];
                let dw = [
                    d.dw[i] * h.w[j] * w.w[k],
                    d.w[i] * h.dw[j] * w.w[k],
                    d.w[i] * h.w[j] * w.dw[k],
                ];
                f(at, wt, dw, ok);
            }
        }
    }
}

/// One axis of 2-D bilinear sampling with zeros or border padding: the two
/// taps (position, weight, in range), as each_tap would list them.
#[inline(always)]
fn linear_pair<T: Float>(g: T, size: usize, geo: &Geom) -> [(usize, T, bool); 2] {
    let (u, _) = unnormalize(g, size, geo.align);
    let hi: T = c((size - 1) as f64);
    let x = if geo.pad == GridPad::Border { clip(u, size).0 } else { u };
    let x0 = x.floor();
    let f = x - x0;
    let tap = |p: T, w: T| {
        let ok = p >= T::zero() && p <= hi;
        let at = if ok { p } else { T::zero() };
        (at.to_usize().unwrap_or(0), w, ok)
    };
    [tap(x0, T::one() - f), tap(x0 + T::one(), f)]
}

/// The four taps of points p0.. of batch b (as many as `at` holds / 4) for 2-D
/// bilinear sampling with zeros or border padding, tap-major: the same
/// values the general path finds through `axis` and `each_tap`, in
/// straight-line code per point that vectorizes.
#[inline(always)]
fn bilinear_taps<T: Float>(
    geo: &Geom,
    grid: &[T],
    b: usize,
    p0: usize,
    at: &mut [usize],
    wt: &mut [T],
    ok: &mut [bool],
) {
    let np = at.len() / 4;
    let (h, w) = (geo.size[1], geo.size[2]);
    let g = &grid[(b * geo.pts + p0) * 2..][..np * 2];
    for i in 0..np {
        let ys = linear_pair(g[2 * i + 1], h, geo);
        let xs = linear_pair(g[2 * i], w, geo);
        for (j, &(y, wy, oy)) in ys.iter().enumerate() {
            for (k, &(x, wx, ox)) in xs.iter().enumerate() {
                let q = (2 * j + k) * np + i;
                let inside = oy && ox;
                at[q] = if inside { y * w + x } else { 0 };
                // the general path's depth weight 1 times these: the same product
                wt[q] = wy * wx;
                ok[q] = inside;
            }
        }
    }
}

/// Points per task.
const CHUNK: usize = 256;

/// The taps (flat position, weight, in range) of points p0..p0 + np of batch
/// b, as many for every point, stored tap-major so channel loops run down
/// whole columns.
fn point_taps<T: Float>(
    geo: &Geom,
    grid: &[T],
    b: usize,
    p0: usize,
    np: usize,
) -> (Vec<usize>, Vec<T>, Vec<bool>) {
    let k = geo.taps_per_point();
    let (mut at, mut wt, mut ok) = (vec![0; k * np], vec![T::zero(); k * np], vec![false; k * np]);
    super::simd(
        #[inline(always)]
        || {
            let linear2d =
                geo.nd == 2 && geo.mode == GridMode::Bilinear && geo.pad != GridPad::Reflection;
            if linear2d {
                bilinear_taps(geo, grid, b, p0, &mut at, &mut wt, &mut ok);
                return;
            }
            for i in 0..np {
                let mut q = i;
                each_tap(geo, &taps(geo, grid, b, p0 + i), |a, w, _, in_range| {
                    (at[q], wt[q], ok[q]) = (a, w, in_range);
                    q += np;
                });
            }
        },
    );
    (at, wt, ok)
}

/// out (N, C, pts) = samples of x (N, C, plane) at grid (N, pts, nd). A task
/// takes CHUNK points of one batch: their taps (flat position, weight) are
/// found once, then each channel's plane is read through them.
pub fn forward<T: Float + Send + Sync>(geo: &Geom, x: &[T], grid: &[T], out: &mut [T]) {
    let chunks = geo.pts.div_ceil(CHUNK);
    let op = P(out.as_mut_ptr());
    let plane = geo.plane();
    team::for_each_if(geo.n * geo.c * geo.pts * 4, geo.n * chunks, |t| {
        let (b, p0) = (t / chunks, t % chunks * CHUNK);
        let p1 = (p0 + CHUNK).min(geo.pts);
        let (np, k) = (p1 - p0, geo.taps_per_point());
        let (at, wt, ok) = point_taps(geo, grid, b, p0, np);
        super::simd(
            #[inline(always)]
            || {
                for ch in 0..geo.c {
                    let src = &x[(b * geo.c + ch) * plane..][..plane];
                    // SAFETY: (b, ch, p0..p1) is written by this task only.
                    let row = unsafe {
                        std::slice::from_raw_parts_mut(
                            op.get().add((b * geo.c + ch) * geo.pts + p0),
                            np,
                        )
                    };
                    // inlined here (not through a function pointer) so the
                    // loops compile for the vector unit simd chose
                    match k {
                        1 => read_taps::<T, 1>(src, &at, &wt, &ok, row),
                        4 => read_taps::<T, 4>(src, &at, &wt, &ok, row),
                        8 => read_taps::<T, 8>(src, &at, &wt, &ok, row),
                        16 => read_taps::<T, 16>(src, &at, &wt, &ok, row),
                        // 1, 2 or 4 taps per axis, 2 or 3 axes
                        _ => read_taps::<T, 64>(src, &at, &wt, &ok, row),
                    }
                }
            },
        );
    });
}

/// out[i] = Σ_t wt[t, i] · (ok[t, i] ? src[at[t, i]] : 0) over the K taps of
/// each point (tap-major arrays of K rows of out.len()), summed in tap order
/// in a register: one pass over the points per channel.
#[inline(always)]
fn read_taps<T: Float, const K: usize>(
    src: &[T],
    at: &[usize],
    wt: &[T],
    ok: &[bool],
    out: &mut [T],
) {
    let np = out.len();
    assert!(at.len() == K * np && wt.len() == K * np && ok.len() == K * np);
    let src = src.as_ptr();
    for (i, o) in out.iter_mut().enumerate() {
        let mut a = T::zero();
        for t in 0..K {
            // SAFETY: t * np + i < K * np, the arrays' length (asserted); in-range
            // taps lie inside the plane and the others read index 0 of it.
            let (v, w, m) = unsafe {
                let j = t * np + i;
                (*src.add(*at.get_unchecked(j)), *wt.get_unchecked(j), *ok.get_unchecked(j))
            };
            a = a + w * if m { v } else { T::zero() };
        }
        *o = a;
    }
}

/// The grid gradient (N, pts, nd) from the output gradient `go` (N, C, pts).
pub fn grid_grad<T: Float + Send + Sync>(geo: &Geom, x: &[T], grid: &[T], go: &[T], gg: &mut [T]) {
    let chunks = geo.pts.div_ceil(CHUNK);
    let gp = P(gg.as_mut_ptr());
    let plane = geo.plane();
    team::for_each_if(geo.n * geo.c * geo.pts * 4, geo.n * chunks, |t| {
        let (b, p0) = (t / chunks, t % chunks * CHUNK);
        for p in p0..(p0 + CHUNK).min(geo.pts) {
            let ax = taps(geo, grid, b, p);
            let mut acc = [T::zero(); 3];
            for ch in 0..geo.c {
                let src = &x[(b * geo.c + ch) * plane..][..plane];
                let g = go[(b * geo.c + ch) * geo.pts + p];
                each_tap(geo, &ax, |at, _, dw, ok| {
                    if !ok {
                        return;
                    }
                    let v = g * src[at];
                    for a in 0..3 {
                        acc[a] = acc[a] + v * dw[a];
                    }
                });
            }
            // Grid components are (x, y[, z]): axis a (depth, height, width) is 2 - a.
            for a in (3 - geo.nd)..3 {
                // SAFETY: point (b, p) is written by this task only.
                unsafe { *gp.get().add((b * geo.pts + p) * geo.nd + 2 - a) = acc[a] };
            }
        }
    });
}

/// The input gradient (N, C, plane), overwritten: the transposed sampling,
/// each task owning whole planes so the scatter needs no atomics. A task per
/// batch computes each point's taps once for all its channels; with fewer
/// batches than threads, a task per (batch, channel) plane keeps the team
/// busy. Either way every element sums its points in the same order.
pub fn input_grad<T: Float + Send + Sync>(geo: &Geom, grid: &[T], go: &[T], gx: &mut [T]) {
    let plane = geo.plane();
    let xp = P(gx.as_mut_ptr());
    let per_batch = geo.n >= super::threads();
    let (tasks, chans) = if per_batch { (geo.n, geo.c) } else { (geo.n * geo.c, 1) };
    team::for_each_if(geo.n * geo.c * geo.pts * 4, tasks, |t| {
        let (b, c0) = if per_batch { (t, 0) } else { (t / geo.c, t % geo.c) };
        let first = b * geo.c + c0;
        // SAFETY: planes first..first + chans are written by this task only.
        let dst =
            unsafe { std::slice::from_raw_parts_mut(xp.get().add(first * plane), chans * plane) };
        dst.iter_mut().for_each(|v| *v = T::zero());
        // Each element sums its (point, tap) terms in that order, chunk by chunk.
        for p0 in (0..geo.pts).step_by(CHUNK) {
            let np = CHUNK.min(geo.pts - p0);
            let (at, wt, ok) = point_taps(geo, grid, b, p0, np);
            for i in 0..np {
                for (c, d) in dst.chunks_exact_mut(plane).enumerate() {
                    let g = go[(first + c) * geo.pts + p0 + i];
                    for q in (i..at.len()).step_by(np) {
                        if ok[q] {
                            d[at[q]] = d[at[q]] + wt[q] * g;
                        }
                    }
                }
            }
        }
    });
}
