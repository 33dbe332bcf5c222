//! Stride-1 2-D convolutions on the CPU without im2col columns. Each image is
//! copied once into a zero-padded plane per channel (rows `hp`, columns `wp`)
//! in a per-thread scratch buffer; in it, kernel tap (i, j) reads for output
//! position q = y·wp + x the input at q + i·dh·wp + j·dw, so the tap's operand
//! is a plain strided (C, oh·wp) matrix and the convolution is kh·kw
//! accumulating GEMMs per image on data that stays in cache. The columns
//! x ≥ ow of the "wide" output are junk and dropped (wp/ow - 1 extra work,
//! 6% at 32×32 for a 3×3 kernel). The im2col route instead writes and reads
//! back columns kh·kw times the input, through memory, for every layer.

use super::conv::Geom;
use super::gemm::{matmul, GemmElem, Mat};
use super::P;
use std::cell::RefCell;

/// Whether the direct kernels handle this geometry and are worth it: 2-D or
/// 1-D, stride 1, one group, enough channels for the per-tap GEMMs
/// (K = C) and an image large enough that the junk columns stay few.
pub fn applies(g: &Geom, groups: usize) -> bool {
    g.d == 1
        && g.kd == 1
        && g.od == 1
        && g.sh == 1
        && g.sw == 1
        && groups == 1
        && g.c >= 16
        && g.oh * g.ow >= 256
        && g.kh * g.kw > 1
}

/// The padded plane of one image: `rows` rows of `wp` columns are read by
/// some output, plus one zero row so the junk columns' reads stay inside.
struct Plane {
    wp: usize,
    rows: usize,
    size: usize,
    /// Output positions per image in the wide layout (oh·wp).
    wide: usize,
}

impl Plane {
    fn of(g: &Geom) -> Plane {
        let wp = g.ow + (g.kw - 1) * g.dw;
        let rows = g.oh + (g.kh - 1) * g.dh;
        Plane { wp, rows, size: (rows + 1) * wp, wide: g.oh * wp }
    }
    /// Offset of tap (i, j) in the plane.
    fn tap(&self, g: &Geom, i: usize, j: usize) -> usize {
        i * g.dh * self.wp + j * g.dw
    }
    /// The padded-plane index of input (yi, xi), None when no output reads it.
    #[inline(always)]
    fn at(&self, g: &Geom, yi: usize, xi: usize) -> Option<usize> {
        let (r, c) = (yi + g.ph, xi + g.pw);
        (r < self.rows && c < self.wp).then_some(r * self.wp + c)
    }
}

/// Copies image `n` of x (N, C, H, W) into the zeroed padded planes `xp`.
///
/// # Safety
/// x holds the whole batch; xp has C·size elements.
unsafe fn pad<T: Copy + Default>(g: &Geom, pl: &Plane, x: P<T>, n: usize, xp: &mut [T]) {
    xp.fill(T::default());
    let hw = g.h * g.w;
    let cols = g.w.min(pl.wp.saturating_sub(g.pw));
    for c in 0..g.c {
        let src = x.at(((n * g.c + c) * hw) as isize);
        for yi in 0..g.h {
            let Some(o) = pl.at(g, yi, 0) else { break };
            // SAFETY: row yi of plane (n, c) has w ≥ cols elements.
            let row = unsafe { std::slice::from_raw_parts(src.add(yi * g.w), cols) };
            xp[c * pl.size + o..c * pl.size + o + cols].copy_from_slice(row);
        }
    }
}

/// Image `n` of dy (N, O, oh, ow) in the wide layout, junk columns zero.
///
/// # Safety
/// dy holds the whole batch; dyw has O·wide elements.
unsafe fn widen<T: Copy + Default>(
    g: &Geom,
    pl: &Plane,
    oc: usize,
    dy: P<T>,
    n: usize,
    dyw: &mut [T],
) {
    let l = g.oh * g.ow;
    for o in 0..oc {
        for y in 0..g.oh {
            // SAFETY: row y of output plane (n, o).
            let src = unsafe {
                std::slice::from_raw_parts(dy.at(((n * oc + o) * l + y * g.ow) as isize), g.ow)
            };
            let dst = &mut dyw[o * pl.wide + y * pl.wp..o * pl.wide + (y + 1) * pl.wp];
            dst[..g.ow].copy_from_slice(src);
            dst[g.ow..].fill(T::default());
        }
    }
}

thread_local! {
    /// Each thread's scratch, kept across calls: fresh buffers of a few
    /// hundred KiB per call were mapped and faulted in every time.
    static SCRATCH: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on three scratch slices of `a`, `b` and `c` elements with
/// unspecified contents (float types only: any bits are a value).
pub(super) fn with_scratch<T: GemmElem, R>(
    [a, b, c]: [usize; 3],
    f: impl FnOnce(&mut [T], &mut [T], &mut [T]) -> R,
) -> R {
    assert!(std::mem::align_of::<T>() <= 8);
    let words = ((a + b + c) * std::mem::size_of::<T>()).div_ceil(8);
    let run = |buf: &mut Vec<u64>| {
        if buf.len() < words {
            buf.resize(words, 0);
        }
        let p = buf.as_mut_ptr() as *mut T;
        // SAFETY: a + b + c elements of T fit in the buffer, which is 8-byte
        // aligned; the three slices are disjoint.
        unsafe {
            f(
                std::slice::from_raw_parts_mut(p, a),
                std::slice::from_raw_parts_mut(p.add(a), b),
                std::slice::from_raw_parts_mut(p.add(a + b), c),
            )
        }
    };
    SCRATCH.with(|s| match s.try_borrow_mut() {
        Ok(mut buf) => run(&mut buf),
        Err(_) => run(&mut Vec::new()),
    })
}

pub(super) fn mat<T>(ptr: *mut T, rs: usize, cs: usize) -> Mat<T> {
    Mat { ptr, rs: rs as isize, cs: cs as isize }
}

/// Runs `f(images)` for disjoint contiguous ranges of images, one per thread.
pub(super) fn per_thread(n: usize, f: impl Fn(usize, std::ops::Range<usize>) + Sync) {
    let t = super::threads().clamp(1, n.max(1));
    let per = n.div_ceil(t);
    super::team::for_each(t, |k| f(k, k * per..((k + 1) * per).min(n)));
}

/// y (N, O, oh, ow) = conv(x (N, C, H, W), w (O, C, kh, kw)) + bias.
///
/// # Safety
/// Contiguous operands of these shapes; y does not overlap the others.
pub unsafe fn forward<T: GemmElem + Default + std::ops::Add<Output = T> + Send + Sync>(
    g: &Geom,
    oc: usize,
    x: P<T>,
    w: P<T>,
    bias: Option<P<T>>,
    y: P<T>,
) {
    let (pl, kk, l) = (Plane::of(g), g.kh * g.kw, g.oh * g.ow);
    per_thread(g.n, |_, images| {
        with_scratch([g.c * pl.size, oc * pl.wide, 0], |xp: &mut [T], yw: &mut [T], _| {
            for n in images.clone() {
                // SAFETY: the caller's guarantees; image n's outputs belong to this task.
                unsafe {
                    pad(g, &pl, x, n, xp);
                    for t in 0..kk {
                        let (i, j) = (t / g.kw, t % g.kw);
                        matmul(
                            oc,
                            pl.wide,
                            g.c,
                            mat(yw.as_mut_ptr(), pl.wide, 1),
                            mat(w.at(t as isize), g.c * kk, kk),
                            mat(xp.as_mut_ptr().add(pl.tap(g, i, j)), pl.size, 1),
                            1,
                            t > 0,
                        );
                    }
                    for o in 0..oc {
                        let b = bias.map_or(T::ZERO, |b| *b.at(o as isize));
                        let dst =
                            std::slice::from_raw_parts_mut(y.at(((n * oc + o) * l) as isize), l);
                        for (yy, row) in dst.chunks_exact_mut(g.ow).enumerate() {
                            let src = &yw[o * pl.wide + yy * pl.wp..][..g.ow];
                            row.iter_mut().zip(src).for_each(|(d, &v)| *d = v + b);
                        }
                    }
                }
            }
        });
    });
}

/// dx (N, C, H, W) of the convolution from dy (N, O, oh, ow) and w.
///
/// # Safety
/// As `forward`; dx does not overlap the others.
pub unsafe fn input_grad<T: GemmElem + Default + Send + Sync>(
    g: &Geom,
    oc: usize,
    dy: P<T>,
    w: P<T>,
    dx: P<T>,
) {
    let (pl, kk, hw) = (Plane::of(g), g.kh * g.kw, g.h * g.w);
    per_thread(g.n, |_, images| {
        with_scratch([oc * pl.wide, g.c * pl.size, 0], |dyw: &mut [T], dxp: &mut [T], _| {
            for n in images.clone() {
                // SAFETY: the caller's guarantees; image n's outputs belong to this task.
                unsafe {
                    widen(g, &pl, oc, dy, n, dyw);
                    dxp.fill(T::default());
                    // Tap t of output q read input q + tap: its adjoint adds back there.
                    for t in 0..kk {
                        let (i, j) = (t / g.kw, t % g.kw);
                        matmul(
                            g.c,
                            pl.wide,
                            oc,
                            mat(dxp.as_mut_ptr().add(pl.tap(g, i, j)), pl.size, 1),
                            mat(w.at(t as isize), kk, g.c * kk),
                            mat(dyw.as_mut_ptr(), pl.wide, 1),
                            1,
                            true,
                        );
                    }
                    for c in 0..g.c {
                        let dst = std::slice::from_raw_parts_mut(
                            dx.at(((n * g.c + c) * hw) as isize),
                            hw,
                        );
                        for (yi, row) in dst.chunks_exact_mut(g.w).enumerate() {
                            for (xi, d) in row.iter_mut().enumerate() {
                                *d = pl.at(g, yi, xi).map_or(T::ZERO, |p| dxp[c * pl.size + p]);
                            }
                        }
                    }
                }
            }
        });
    });
}

/// dw (O, C, kh, kw) of the convolution of x (N, C, H, W) from dy (N, O, oh, ow).
///
/// # Safety
/// As `forward`; dw does not overlap the others.
pub unsafe fn weight_grad<T: GemmElem + Default + std::ops::Add<Output = T> + Send + Sync>(
    g: &Geom,
    oc: usize,
    x: P<T>,
    dy: P<T>,
    dw: P<T>,
) {
    let (pl, kk) = (Plane::of(g), g.kh * g.kw);
    let size = oc * g.c * kk;
    // SAFETY: dw has `size` elements.
    let out = std::sync::Mutex::new(unsafe { std::slice::from_raw_parts_mut(dw.get(), size) });
    out.lock().unwrap_or_else(|e| e.into_inner()).fill(T::ZERO);
    // Each thread sums its images into its own partial, then adds it to dw.
    per_thread(g.n, |_, images| {
        let lens = [g.c * pl.size, oc * pl.wide, size];
        with_scratch(lens, |xp: &mut [T], dyw: &mut [T], part: &mut [T]| {
            part.fill(T::ZERO);
            for n in images.clone() {
                // SAFETY: the caller's guarantees; `part` is this task's own.
                unsafe {
                    pad(g, &pl, x, n, xp);
                    widen(g, &pl, oc, dy, n, dyw);
                    for t in 0..kk {
                        let (i, j) = (t / g.kw, t % g.kw);
                        matmul(
                            oc,
                            g.c,
                            pl.wide,
                            mat(part.as_mut_ptr().add(t), g.c * kk, kk),
                            mat(dyw.as_mut_ptr(), pl.wide, 1),
                            mat(xp.as_mut_ptr().add(pl.tap(g, i, j)), 1, pl.size),
                            1,
                            true,
                        );
                    }
                }
            }
            let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
            out.iter_mut().zip(part.iter()).for_each(|(d, &v)| *d = *d + v);
        });
    });
}
