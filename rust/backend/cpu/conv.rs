//! im2col / col2im: the data movement that turns a convolution into one GEMM
//! per group. The geometry is 3-D (D, H, W); 2-D convolutions are the D = 1
//! case and 1-D ones D = H = 1. Columns are laid out (C·kd·kh·kw, N·OD·OH·OW),
//! so a whole batch is a single wide GEMM.

use super::P;

/// Geometry of a 3-D sliding window: input (N, C, D, H, W), kernel
/// (kd, kh, kw), stride, padding before the first element, dilation, output
/// (OD, OH, OW). Padding after the last element is implied by the output size
/// (asymmetric 'same').
#[derive(Clone, Debug, PartialEq)]
pub struct Geom {
    pub n: usize,
    pub c: usize,
    pub d: usize,
    pub h: usize,
    pub w: usize,
    pub kd: usize,
    pub kh: usize,
    pub kw: usize,
    pub sd: usize,
    pub sh: usize,
    pub sw: usize,
    pub pd: usize,
    pub ph: usize,
    pub pw: usize,
    pub dd: usize,
    pub dh: usize,
    pub dw: usize,
    pub od: usize,
    pub oh: usize,
    pub ow: usize,
}

impl Geom {
    pub fn rows(&self) -> usize {
        self.c * self.kd * self.kh * self.kw
    }
    pub fn cols(&self) -> usize {
        self.n * self.od * self.oh * self.ow
    }
    /// The (N, C, D, H, W) shape of the image side.
    pub fn image_shape(&self) -> [usize; 5] {
        [self.n, self.c, self.d, self.h, self.w]
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
    /// The output rows [lo, hi) whose tap `i` reads inside the input plane.
    #[inline(always)]
    fn valid_rows(&self, i: usize) -> (usize, usize) {
        Geom::valid(self.oh, self.h, i * self.dh, self.sh, self.ph)
    }
    /// The output planes [lo, hi) whose depth tap `a` reads inside the input.
    #[inline(always)]
    fn valid_planes(&self, a: usize) -> (usize, usize) {
        Geom::valid(self.od, self.d, a * self.dd, self.sd, self.pd)
    }
    /// Input plane read by output plane `z` at depth tap `a` (inside the input).
    #[inline(always)]
    fn plane_of(&self, z: usize, a: usize) -> usize {
        z * self.sd + a * self.dd - self.pd
    }
    /// Whether every (H, W) tap is one shifted copy of a plane: stride 1 and
    /// output rows as wide as input rows ('same' padding), so output position t
    /// of tap (i, j) reads input position t + shift(i, j) whenever it is in range.
    fn shifted(&self) -> bool {
        self.sh == 1 && self.sw == 1 && self.ow == self.w
    }
    fn shift(&self, i: usize, j: usize) -> isize {
        ((i * self.dh) as isize - self.ph as isize) * self.w as isize + (j * self.dw) as isize
            - self.pw as isize
    }
    /// Per (H, W) tap (i, j), which output positions of a plane read inside the
    /// input plane, and the range of positions whose shifted position lies in it.
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

/// col[(c, a, i, j), (n, z, y, x)] = input[n, c, z·sd - pd + a·dd, y·sh - ph + i·dh,
/// x·sw - pw + j·dw], 0 in the padding.
///
/// # Safety
/// `x` points to a contiguous (N, C, D, H, W) tensor and `col` to rows × cols elements.
pub unsafe fn im2col<T: Copy + Default + Send + Sync>(g: &Geom, x: P<T>, col: P<T>) {
    let (l2, cols, khw) = (g.oh * g.ow, g.cols(), g.kh * g.kw);
    let (l, kk, hw) = (g.od * l2, g.kd * khw, g.h * g.w);
    // Start of input plane (n, c, iz), or None when output plane z of depth tap a is padding.
    let plane = |n: usize, c: usize, z: usize, a: usize| {
        Geom::src(z, a, g.sd, g.pd, g.dd, g.d).map(|iz| ((n * g.c + c) * g.d + iz) * hw)
    };
    if g.shifted() {
        // Small images give row segments too short to vectorize; here each tap
        // of each plane is one masked pass over the whole plane.
        let masks = g.tap_masks();
        let row = |r: usize| {
            let (c, a, t) = (r / kk, (r % kk) / khw, r % khw);
            let (mask, lo, hi) = (&masks[t].0, masks[t].1, masks[t].2);
            let sh = g.shift(t / g.kw, t % g.kw);
            for n in 0..g.n {
                for z in 0..g.od {
                    // SAFETY: the row segment has l2 elements inside row r of `col`.
                    let dst = unsafe {
                        std::slice::from_raw_parts_mut(
                            col.at((r * cols + n * l + z * l2) as isize),
                            l2,
                        )
                    };
                    let Some(start) = plane(n, c, z, a) else {
                        dst.fill(T::default());
                        continue;
                    };
                    // SAFETY: positions [lo, hi) shifted lie in the plane.
                    let src = unsafe {
                        std::slice::from_raw_parts(x.at(start as isize + sh + lo as isize), hi - lo)
                    };
                    dst[..lo].fill(T::default());
                    dst[hi..].fill(T::default());
                    super::simd(
                        #[inline(always)]
                        || {
                            for ((d, &v), &m) in dst[lo..hi].iter_mut().zip(src).zip(&mask[lo..hi])
                            {
                                *d = if m { v } else { T::default() };
                            }
                        },
                    );
                }
            }
        };
        return super::team::for_each_if(g.rows() * cols, g.rows(), row);
    }
    let row = |r: usize| {
        super::simd(
            #[inline(always)]
            || {
                let (c, a, i, j) = (r / kk, (r % kk) / khw, (r % khw) / g.kw, r % g.kw);
                let (lo, hi) = g.valid_cols(j);
                for n in 0..g.n {
                    for z in 0..g.od {
                        let seg = col.at((r * cols + n * l + z * l2) as isize);
                        let Some(start) = plane(n, c, z, a) else {
                            // SAFETY: the destination plane segment has l2 elements.
                            unsafe { std::slice::from_raw_parts_mut(seg, l2) }.fill(T::default());
                            continue;
                        };
                        let base = x.at(start as isize);
                        for y in 0..g.oh {
                            let dst = seg.wrapping_add(y * g.ow);
                            let Some(iy) = Geom::src(y, i, g.sh, g.ph, g.dh, g.h) else {
                                // SAFETY: the destination row segment has ow elements.
                                unsafe { std::slice::from_raw_parts_mut(dst, g.ow) }
                                    .fill(T::default());
                                continue;
                            };
                            let src = base.wrapping_add(iy * g.w);
                            // SAFETY: xo < ow stays in the row; for xo in [lo, hi) the
                            // source column xo·sw + j·dw - pw lies in [0, w).
                            unsafe {
                                let row = std::slice::from_raw_parts_mut(dst, g.ow);
                                row[..lo].fill(T::default());
                                row[hi..].fill(T::default());
                                if hi > lo {
                                    let first = src.add((lo * g.sw + j * g.dw) - g.pw);
                                    if g.sw == 1 {
                                        std::ptr::copy_nonoverlapping(first, dst.add(lo), hi - lo);
                                    } else if g.sw == 2 {
                                        // A constant stride: the loads vectorize (with
                                        // shuffles); the variable one stayed scalar.
                                        for (k, v) in row[lo..hi].iter_mut().enumerate() {
                                            *v = *first.add(2 * k);
                                        }
                                    } else {
                                        for (k, v) in row[lo..hi].iter_mut().enumerate() {
                                            *v = *first.add(k * g.sw);
                                        }
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
/// `col` holds rows × cols elements; `out` points to a zeroed contiguous (N, C, D, H, W) tensor.
pub unsafe fn col2im<T: Copy + Default + Send + Sync + std::ops::Add<Output = T>>(
    g: &Geom,
    col: P<T>,
    out: P<T>,
) {
    let (l2, cols, khw) = (g.oh * g.ow, g.cols(), g.kh * g.kw);
    let (l, kk, hw) = (g.od * l2, g.kd * khw, g.h * g.w);
    if g.shifted() {
        // As in im2col: one masked pass per tap over the whole plane.
        let masks = g.tap_masks();
        let volume = |p: usize| {
            let (n, c) = (p / g.c, p % g.c);
            for a in 0..g.kd {
                let (zlo, zhi) = g.valid_planes(a);
                for (t, (mask, lo, hi)) in masks.iter().enumerate() {
                    let (lo, hi) = (*lo, *hi);
                    let r = c * kk + a * khw + t;
                    for z in zlo..zhi {
                        let iz = g.plane_of(z, a);
                        // SAFETY: the column segment has l2 elements; positions [lo, hi)
                        // shifted lie in plane iz of this task's volume.
                        let (src, dst) = unsafe {
                            (
                                std::slice::from_raw_parts(
                                    col.at((r * cols + n * l + z * l2 + lo) as isize),
                                    hi - lo,
                                ),
                                std::slice::from_raw_parts_mut(
                                    out.at(((p * g.d + iz) * hw + lo) as isize
                                        + g.shift(t / g.kw, t % g.kw)),
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
                }
            }
        };
        return super::team::for_each_if(g.rows() * cols, g.n * g.c, volume);
    }
    // Each (n, c) volume is written by one task: volumes are disjoint.
    let volume = |p: usize| {
        super::simd(
            #[inline(always)]
            || {
                let (n, c) = (p / g.c, p % g.c);
                for a in 0..g.kd {
                    let (zlo, zhi) = g.valid_planes(a);
                    for z in zlo..zhi {
                        let dst = out.at(((p * g.d + g.plane_of(z, a)) * hw) as isize);
                        let seg = n * l + z * l2;
                        for i in 0..g.kh {
                            let (ylo, yhi) = g.valid_rows(i);
                            for j in 0..g.kw {
                                let r = c * kk + a * khw + i * g.kw + j;
                                let (lo, hi) = g.valid_cols(j);
                                if hi <= lo {
                                    continue;
                                }
                                for y in ylo..yhi {
                                    let iy = y * g.sh + i * g.dh - g.ph;
                                    // SAFETY: columns [lo, hi) map inside row iy of plane
                                    // iz of this task's volume, and the column segment
                                    // lies inside row r of `col`.
                                    let (src, d) = unsafe {
                                        (
                                            std::slice::from_raw_parts(
                                                col.at((r * cols + seg + y * g.ow + lo) as isize),
                                                hi - lo,
                                            ),
                                            dst.add(iy * g.w + lo * g.sw + j * g.dw - g.pw),
                                        )
                                    };
                                    if g.sw == 1 {
                                        // SAFETY: as above; the destination segment is contiguous.
                                        let d =
                                            unsafe { std::slice::from_raw_parts_mut(d, hi - lo) };
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
                    }
                }
            },
        )
    };
    super::team::for_each_if(g.rows() * cols, g.n * g.c, volume);
}
