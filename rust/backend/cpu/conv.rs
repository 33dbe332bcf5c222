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
    /// Whether every tap is one shifted copy of a plane: stride 1 and output
    /// rows as wide as input rows ('same' padding), so output position t of tap
    /// (i, j) reads input position t + shift(i, j) whenever it is in range.
    fn shifted(&self) -> bool {
        self.sh == 1 && self.sw == 1 && self.ow == self.w
    }
    fn shift(&self, i: usize, j: usize) -> isize {
        ((i * self.dh) as isize - self.ph as isize) * self.w as isize + (j * self.dw) as isize
            - self.pw as isize
    }
    /// Per tap (i, j), which output positions read inside the input, and the
    /// range of positions whose shifted position lies inside the plane.
    fn tap_masks(&self) -> Vec<(Vec<bool>, usize, usize)> {
        let (l, hw) = (self.oh * self.ow, (self.h * self.w) as isize);
        let mut masks = Vec::with_capacity(self.kh * self.kw);
        for i in 0..self.kh {
            let (ylo, yhi) = self.valid_rows(i);
            for j in 0..self.kw {
                let (xlo, xhi) = self.valid_cols(j);
                let mask = (0..l)
                    .map(|t| {
                        (ylo..yhi).contains(&(t / self.ow)) && (xlo..xhi).contains(&(t % self.ow))
                    })
                    .collect();
                let sh = self.shift(i, j);
                let (lo, hi) =
                    ((-sh).clamp(0, l as isize) as usize, (hw - sh).clamp(0, l as isize) as usize);
                masks.push((mask, lo, hi.max(lo)));
            }
        }
        masks
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
    if g.shifted() {
        // Small images give row segments too short to vectorize; here each tap
        // of each plane is one masked pass over the whole plane.
        let masks = g.tap_masks();
        let row = |r: usize| {
            let (c, t) = (r / kk, r % kk);
            let (mask, lo, hi) = (&masks[t].0, masks[t].1, masks[t].2);
            let sh = g.shift(t / g.kw, t % g.kw);
            for n in 0..g.n {
                // SAFETY: the row segment has l elements; positions [lo, hi) shifted lie in the plane.
                let (dst, src) = unsafe {
                    (
                        std::slice::from_raw_parts_mut(col.at((r * cols + n * l) as isize), l),
                        std::slice::from_raw_parts(
                            x.at(((n * g.c + c) * g.h * g.w) as isize + sh + lo as isize),
                            hi - lo,
                        ),
                    )
                };
                dst[..lo].fill(T::default());
                dst[hi..].fill(T::default());
                super::simd(
                    #[inline(always)]
                    || {
                        for ((d, &v), &m) in dst[lo..hi].iter_mut().zip(src).zip(&mask[lo..hi]) {
                            *d = if m { v } else { T::default() };
                        }
                    },
                );
            }
        };
        return super::team::for_each_if(g.rows() * cols, g.rows(), row);
    }
    let row = |r: usize| {
        super::simd(
            #[inline(always)]
            || {
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
            },
        )
    };
    super::team::for_each_if(g.rows() * cols, g.rows(), row);
}

/// The adjoint of im2col: every column entry added back to the input position it came from.
///
/// # Safety
/// `col` holds rows × cols elements; `out` points to a zeroed contiguous (N, C, H, W) tensor.
pub unsafe fn col2im<T: Copy + Default + Send + Sync + std::ops::Add<Output = T>>(
    g: &Geom,
    col: P<T>,
    out: P<T>,
) {
    let (l, cols, kk) = (g.oh * g.ow, g.cols(), g.kh * g.kw);
    if g.shifted() {
        // As in im2col: one masked pass per tap over the whole plane.
        let masks = g.tap_masks();
        let plane = |p: usize| {
            let (n, c) = (p / g.c, p % g.c);
            for (t, (mask, lo, hi)) in masks.iter().enumerate() {
                let (lo, hi) = (*lo, *hi);
                // SAFETY: the column segment has l elements; positions [lo, hi)
                // shifted lie in this task's plane.
                let (src, dst) = unsafe {
                    (
                        std::slice::from_raw_parts(
                            col.at(((c * kk + t) * cols + n * l + lo) as isize),
                            hi - lo,
                        ),
                        std::slice::from_raw_parts_mut(
                            out.at((p * g.h * g.w + lo) as isize + g.shift(t / g.kw, t % g.kw)),
                            hi - lo,
                        ),
                    )
                };
                super::simd(
                    #[inline(always)]
                    || {
                        for ((d, &v), &m) in dst.iter_mut().zip(src).zip(&mask[lo..hi]) {
                            *d = *d + if m { v } else { T::default() };
                        }
                    },
                );
            }
        };
        return super::team::for_each_if(g.rows() * cols, g.n * g.c, plane);
    }
    // Each (n, c) plane is written by one task: planes are disjoint.
    let plane = |p: usize| {
        super::simd(
            #[inline(always)]
            || {
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
                                    std::slice::from_raw_parts(
                                        col.at((r * cols + n * l + y * g.ow + lo) as isize),
                                        hi - lo,
                                    ),
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
            },
        )
    };
    super::team::for_each_if(g.rows() * cols, g.n * g.c, plane);
}
