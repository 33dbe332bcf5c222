//! im2col / col2im: the data movement that turns a 2-D convolution into one
//! GEMM per group (1-D convolutions are the H = 1 case). Columns are laid out
//! (C·kh·kw, N·OH·OW), so a whole batch is a single wide GEMM.

use super::{P, PAR_THRESHOLD};
use rayon::prelude::*;

/// Geometry of a 2-D sliding window: input (N, C, H, W), kernel (kh, kw),
/// stride, padding before the first element, dilation, output (OH, OW).
/// Padding after the last element is implied by OH/OW (asymmetric 'same').
#[derive(Clone, Debug, PartialEq)]
pub struct Geom {
    pub n: usize,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub kh: usize,
    pub kw: usize,
    pub sh: usize,
    pub sw: usize,
    pub ph: usize,
    pub pw: usize,
    pub dh: usize,
    pub dw: usize,
    pub oh: usize,
    pub ow: usize,
}

impl Geom {
    pub fn rows(&self) -> usize {
        self.c * self.kh * self.kw
    }
    pub fn cols(&self) -> usize {
        self.n * self.oh * self.ow
    }
    /// Input index along one axis for output position `o` and kernel tap `k`,
    /// None when it falls in the padding.
    #[inline(always)]
    fn src(o: usize, k: usize, s: usize, p: usize, d: usize, size: usize) -> Option<usize> {
        (o * s + k * d).checked_sub(p).filter(|&i| i < size)
    }
}

/// col[(c, i, j), (n, y, x)] = input[n, c, y·sh - ph + i·dh, x·sw - pw + j·dw], 0 in the padding.
///
/// # Safety
/// `x` points to a contiguous (N, C, H, W) tensor and `col` to rows × cols elements.
pub unsafe fn im2col<T: Copy + Default + Send + Sync>(g: &Geom, x: P<T>, col: P<T>) {
    let (l, cols, kk) = (g.oh * g.ow, g.cols(), g.kh * g.kw);
    let row = |r: usize| {
        let (c, i, j) = (r / kk, (r % kk) / g.kw, r % g.kw);
        for n in 0..g.n {
            let plane = x.at(((n * g.c + c) * g.h * g.w) as isize);
            for y in 0..g.oh {
                let dst = col.at((r * cols + n * l + y * g.ow) as isize);
                let Some(iy) = Geom::src(y, i, g.sh, g.ph, g.dh, g.h) else {
                    // SAFETY: the destination row segment has ow elements.
                    unsafe { std::slice::from_raw_parts_mut(dst, g.ow) }.fill(T::default());
                    continue;
                };
                let src = plane.wrapping_add(iy * g.w);
                for xo in 0..g.ow {
                    // SAFETY: reads are bounds-checked by `src`, writes stay in the row.
                    unsafe {
                        *dst.add(xo) = match Geom::src(xo, j, g.sw, g.pw, g.dw, g.w) {
                            Some(ix) => *src.add(ix),
                            None => T::default(),
                        }
                    };
                }
            }
        }
    };
    if g.rows() * cols >= PAR_THRESHOLD {
        (0..g.rows()).into_par_iter().for_each(row);
    } else {
        (0..g.rows()).for_each(row);
    }
}

/// The adjoint of im2col: every column entry added back to the input position it came from.
///
/// # Safety
/// `col` holds rows × cols elements; `out` points to a zeroed contiguous (N, C, H, W) tensor.
pub unsafe fn col2im<T: Copy + Send + Sync + std::ops::Add<Output = T>>(g: &Geom, col: P<T>, out: P<T>) {
    let (l, cols, kk) = (g.oh * g.ow, g.cols(), g.kh * g.kw);
    // Each (n, c) plane is written by one task: planes are disjoint.
    let plane = |p: usize| {
        let (n, c) = (p / g.c, p % g.c);
        let dst = out.at((p * g.h * g.w) as isize);
        for i in 0..g.kh {
            for j in 0..g.kw {
                let r = c * kk + i * g.kw + j;
                for y in 0..g.oh {
                    let Some(iy) = Geom::src(y, i, g.sh, g.ph, g.dh, g.h) else { continue };
                    let src = col.at((r * cols + n * l + y * g.ow) as isize);
                    for xo in 0..g.ow {
                        if let Some(ix) = Geom::src(xo, j, g.sw, g.pw, g.dw, g.w) {
                            // SAFETY: indices are bounds-checked against the plane and the row.
                            unsafe {
                                let d = dst.add(iy * g.w + ix);
                                *d = *d + *src.add(xo);
                            }
                        }
                    }
                }
            }
        }
    };
    if g.rows() * cols >= PAR_THRESHOLD {
        (0..g.n * g.c).into_par_iter().for_each(plane);
    } else {
        (0..g.n * g.c).for_each(plane);
    }
}
