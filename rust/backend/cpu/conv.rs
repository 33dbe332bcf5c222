//! im2col / col2im: the data movement that turns a 2-D convolution into one
//! GEMM per group (1-D convolutions are the H = 1 case). Columns are laid out
//! (C·kh·kw, N·OH·OW), so a whole batch is a single wide GEMM.

use super::P;

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
    /// The outputs [lo, hi) along one axis (`n` of them) whose tap at offset
    /// `off` (= tap · dilation) reads inside [0, size): o·s + off - p in range.
    #[inline(always)]
    pub fn valid(n: usize, size: usize, off: usize, s: usize, p: usize) -> (usize, usize) {
        let lo = if off >= p { 0 } else { (p - off).div_ceil(s) }.min(n);
        let hi = if size + p > off { (size + p - off).div_ceil(s).min(n) } else { 0 };
        (lo, hi.max(lo))
    }
    /// The output columns [lo, hi) whose tap `j` reads inside the input row.
    #[inline(always)]
    fn valid_cols(&self, j: usize) -> (usize, usize) {
        Geom::valid(self.ow, self.w, j * self.dw, self.sw, self.pw)
    }
    /// The output rows [lo, hi) whose tap `i` reads inside the input.
    #[inline(always)]
    fn valid_rows(&self, i: usize) -> (usize, usize) {
        Geom::valid(self.oh, self.h, i * self.dh, self.sh, self.ph)
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
    let row = |r: usize| super::simd(|| {
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
                let (lo, hi) = g.valid_cols(j);
                // SAFETY: xo < ow stays in the row; for xo in [lo, hi) the source
                // column xo·sw + j·dw - pw lies in [0, w).
                unsafe {
                    let row = std::slice::from_raw_parts_mut(dst, g.ow);
                    row[..lo].fill(T::default());
                    row[hi..].fill(T::default());
                    if hi > lo {
                        let first = src.add((lo * g.sw + j * g.dw) - g.pw);
                        if g.sw == 1 {
                            std::ptr::copy_nonoverlapping(first, dst.add(lo), hi - lo);
                        } else {
                            for (k, v) in row[lo..hi].iter_mut().enumerate() {
                                *v = *first.add(k * g.sw);
                            }
                        }
                    }
                }
            }
        }
    });
    super::team::for_each_if(g.rows() * cols, g.rows(), row);
}

/// The adjoint of im2col: every column entry added back to the input position it came from.
///
/// # Safety
/// `col` holds rows × cols elements; `out` points to a zeroed contiguous (N, C, H, W) tensor.
pub unsafe fn col2im<T: Copy + Send + Sync + std::ops::Add<Output = T>>(g: &Geom, col: P<T>, out: P<T>) {
    let (l, cols, kk) = (g.oh * g.ow, g.cols(), g.kh * g.kw);
    // Each (n, c) plane is written by one task: planes are disjoint.
    let plane = |p: usize| super::simd(|| {
        let (n, c) = (p / g.c, p % g.c);
        let dst = out.at((p * g.h * g.w) as isize);
        for i in 0..g.kh {
            let (ylo, yhi) = g.valid_rows(i);
            for j in 0..g.kw {
                let r = c * kk + i * g.kw + j;
                let (lo, hi) = g.valid_cols(j);
                if hi <= lo {
                    continue;
                }
                for y in ylo..yhi {
                    let iy = y * g.sh + i * g.dh - g.ph;
                    // SAFETY: columns [lo, hi) map inside row iy of this task's plane,
                    // and the column segment lies inside row r of `col`.
                    let (src, d) = unsafe {
                        (
                            std::slice::from_raw_parts(col.at((r * cols + n * l + y * g.ow + lo) as isize), hi - lo),
                            dst.add(iy * g.w + lo * g.sw + j * g.dw - g.pw),
                        )
                    };
                    if g.sw == 1 {
                        // SAFETY: as above; the destination segment is contiguous.
                        let d = unsafe { std::slice::from_raw_parts_mut(d, hi - lo) };
                        d.iter_mut().zip(src).for_each(|(a, &b)| *a = *a + b);
                    } else {
                        for (k, &b) in src.iter().enumerate() {
                            // SAFETY: as above, every sw-th element of the row.
                            unsafe { *d.add(k * g.sw) = *d.add(k * g.sw) + b };
                        }
                    }
                }
            }
        }
    });
    super::team::for_each_if(g.rows() * cols, g.n * g.c, plane);
}
