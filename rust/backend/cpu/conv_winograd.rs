//! Winograd F(2×2, 3×3) convolutions on the CPU for float32 stride-1 3×3
//! layers (ResNet's and VGG's bulk). Each 2×2 output tile comes from a 4×4
//! input tile: with V = Bᵀ d B (the input tile), U = G g Gᵀ (the kernel) and
//! Y = Aᵀ (U ⊙ V) A, the channel sum becomes 16 GEMMs, one per position ξ
//! of the 4×4 transform domain: M[ξ] (O × tiles) = U[ξ] (O × C) · V[ξ]
//! (C × tiles). That is 16 multiplies per tile per channel pair where the
//! direct kernels do 36: 2.25× fewer, the rest is linear transforms.
//!
//! The three passes share the transforms:
//! - forward: as above;
//! - input gradient: the forward of dy with the kernel rotated by 180°,
//!   channels swapped, and padding 2 - p;
//! - weight gradient: dU[ξ] (O × C) = Σ over tiles of dM[ξ] · V[ξ]ᵀ with
//!   dM = A dY Aᵀ, then dW = Gᵀ dU G.
//!
//! Tiles are processed in blocks of a few tile rows, or of a few whole
//! images when they are small, so that each block's 16 GEMMs are large
//! enough. Each image is first copied into zero-padded planes whose rows
//! are split into even and odd columns: a tile k reads columns 2k..2k+3,
//! which in the split row are e[k], o[k], e[k+1], o[k+1], so every transform
//! is a loop over the tiles of a row, on pulp's SIMD vectors.
//! `RUMUS_CONV_WINOGRAD=0` turns these kernels off (the direct ones run),
//! for A/B runs.

use super::conv::Geom;
use super::conv_direct::{mat, per_thread, with_scratch};
use super::conv_winograd_lanes as lanes;
use super::gemm::matmul;
use super::P;
use pulp::{Arch, Simd, WithSimd};

/// Tiles × (C + O) per block: V and M of a block (16 · (C + O) · tiles
/// float32) take up to 1.5 MiB. Half that (in L2) measured slower: the
/// GEMMs per block, 16 of them, are then small (M, N, K of 32-128).
const BLOCK_BUDGET: usize = 24 << 10;

/// Whether these kernels run the convolution (the caller checks float32):
/// 2-D, 3×3, stride 1, no dilation, one group, padding ≤ 2 (the input
/// gradient pads by 2 - p), enough channels on both sides for the GEMMs,
/// and planes of at least 4×4. With a group of 16 images per thread the
/// kernels on vectors across images run (conv_winograd_lanes.rs), else
/// these on vectors along a row, which need planes wide enough: measured
/// against the other kernels (forward + backward), they won from 14
/// columns at 32 channels, from 12 at 64 and from 8 at 128; they lost on
/// 8×8 at 32 channels and tied at 64.
pub fn applies(g: &Geom, groups: usize, oc: usize) -> bool {
    g.d == 1
        && g.kd == 1
        && g.od == 1
        && (g.kh, g.kw, g.sh, g.sw, g.dh, g.dw) == (3, 3, 1, 1, 1, 1)
        && groups == 1
        && g.ph <= 2
        && g.pw <= 2
        && g.c >= 16
        && oc >= 16
        && g.oh >= 4
        && g.ow >= 4
        && (lanes::applies(g, oc)
            || g.ow
                >= match g.c.min(oc) {
                    ..64 => 14,
                    64..128 => 12,
                    _ => 8,
                })
        && std::env::var_os("RUMUS_CONV_WINOGRAD").is_none_or(|v| v != "0")
}

/// One pass's tiling: `cin` input planes of h×w padded by (ph, pw) give
/// `cout` output planes of oh×ow, in th×tw tiles.
struct Tiles {
    cin: usize,
    h: usize,
    w: usize,
    ph: usize,
    pw: usize,
    cout: usize,
    oh: usize,
    ow: usize,
    th: usize,
    tw: usize,
    /// Columns of each half (even, odd) of a split padded row: tw + 1.
    half: usize,
    /// Padded rows per plane (2·th + 2) and the plane's size.
    hp: usize,
    plane: usize,
    /// Tile rows per block, and images per block (more than one only for
    /// images of at most `rows` tile rows: small planes make small GEMMs).
    rows: usize,
    images: usize,
}

impl Tiles {
    #[allow(clippy::too_many_arguments)]
    fn new(
        cin: usize,
        h: usize,
        w: usize,
        ph: usize,
        pw: usize,
        cout: usize,
        oh: usize,
        ow: usize,
        n: usize,
    ) -> Tiles {
        let (th, tw) = (oh.div_ceil(2), ow.div_ceil(2));
        let (half, hp) = (tw + 1, 2 * th + 2);
        // At most the budget's tile rows per block, split evenly (a last
        // block of a row or two made small GEMMs); whole small images
        // grouped, keeping at least one group per thread.
        let most = (BLOCK_BUDGET / ((cin + cout) * tw)).max(1);
        let (rows, images) = if most >= th {
            (th, (most / th).clamp(1, n.div_ceil(super::threads()).max(1)))
        } else {
            (th.div_ceil(th.div_ceil(most)), 1)
        };
        let plane = hp * 2 * half;
        Tiles { cin, h, w, ph, pw, cout, oh, ow, th, tw, half, hp, plane, rows, images }
    }
    /// Scratch lengths: the padded images of a group plus temporaries (four
    /// rows of tiles), V of a block, and M (or dM) of a block.
    fn scratch(&self) -> [usize; 3] {
        let b = self.images * self.rows * self.tw;
        [self.images * self.cin * self.plane + 4 * self.tw, 16 * self.cin * b, 16 * self.cout * b]
    }
    /// Runs `f(first image, images)` for each group of images, spread over
    /// the team.
    fn per_group(&self, n: usize, f: impl Fn(usize, usize) + Sync) {
        let g = self.images;
        super::team::for_each(n.div_ceil(g), |i| f(i * g, g.min(n - i * g)));
    }
    /// Runs `f(ty0, tile rows)` for each block of tile rows of an image.
    fn blocks(&self, mut f: impl FnMut(usize, usize)) {
        for ty0 in (0..self.th).step_by(self.rows) {
            f(ty0, self.rows.min(self.th - ty0));
        }
    }
}

/// U[ξ][r][s] = (G g Gᵀ)[ξ] for the 3×3 kernel g of (r, s): for the forward
/// r = o, s = c and g = w[o][c]; `flip` gives the input gradient's r = c,
/// s = o and g = w[o][c] rotated by 180°.
///
/// # Safety
/// w is a contiguous (O, C, 3, 3) kernel.
pub(super) unsafe fn kernel_transform(w: P<f32>, oc: usize, c: usize, flip: bool) -> Vec<f32> {
    let mut u = vec![0.0; 16 * oc * c];
    let (rows, cols) = if flip { (c, oc) } else { (oc, c) };
    for o in 0..oc {
        for ci in 0..c {
            // SAFETY: kernel (o, ci) of w.
            let k = unsafe { std::slice::from_raw_parts(w.at(((o * c + ci) * 9) as isize), 9) };
            let g = |i: usize, j: usize| if flip { k[(2 - i) * 3 + 2 - j] } else { k[i * 3 + j] };
            // G g: rows g0, (g0+g1+g2)/2, (g0-g1+g2)/2, g2; then the same on columns.
            let gg: [[f32; 3]; 4] = std::array::from_fn(|i| {
                std::array::from_fn(|j| match i {
                    0 => g(0, j),
                    1 => 0.5 * (g(0, j) + g(1, j) + g(2, j)),
                    2 => 0.5 * (g(0, j) - g(1, j) + g(2, j)),
                    _ => g(2, j),
                })
            });
            let (r, s) = if flip { (ci, o) } else { (o, ci) };
            for (i, [a, b, cc]) in gg.into_iter().enumerate() {
                let row = [a, 0.5 * (a + b + cc), 0.5 * (a - b + cc), cc];
                for (j, v) in row.into_iter().enumerate() {
                    u[((i * 4 + j) * rows + r) * cols + s] = v;
                }
            }
        }
    }
    u
}

/// a[m] = src[2m], b[m] = src[2m + 1] for as many m as fit (a takes
/// src[2m] when src has one more).
#[inline(always)]
fn deinterleave(src: &[f32], a: &mut [f32], b: &mut [f32]) {
    let m = (src.len() / 2).min(a.len()).min(b.len());
    let (sc, _) = src[..2 * m].as_chunks::<32>();
    let (ac, _) = a[..m].as_chunks_mut::<16>();
    let (bc, _) = b[..m].as_chunks_mut::<16>();
    for ((s, a), b) in sc.iter().zip(ac).zip(bc) {
        for l in 0..16 {
            a[l] = s[2 * l];
            b[l] = s[2 * l + 1];
        }
    }
    for l in m / 16 * 16..m {
        a[l] = src[2 * l];
        b[l] = src[2 * l + 1];
    }
    if let (Some(&v), Some(d)) = (src.get(2 * m), a.get_mut(m)) {
        *d = v;
    }
}

/// dst[2m] = a[m], dst[2m + 1] = b[m] for as many m as fit.
#[inline(always)]
fn interleave(dst: &mut [f32], a: &[f32], b: &[f32]) {
    let m = (dst.len() / 2).min(a.len()).min(b.len());
    let (dc, _) = dst[..2 * m].as_chunks_mut::<32>();
    let (ac, _) = a[..m].as_chunks::<16>();
    let (bc, _) = b[..m].as_chunks::<16>();
    for ((d, a), b) in dc.iter_mut().zip(ac).zip(bc) {
        for l in 0..16 {
            d[2 * l] = a[l];
            d[2 * l + 1] = b[l];
        }
    }
    for l in m / 16 * 16..m {
        dst[2 * l] = a[l];
        dst[2 * l + 1] = b[l];
    }
    if let (Some(d), Some(&v)) = (dst.get_mut(2 * m), a.get(m)) {
        *d = v;
    }
}

/// Copies one image (cin, h, w) into the zeroed split padded planes `p`.
#[inline(always)]
fn pad_split_body(t: &Tiles, src: &[f32], p: &mut [f32]) {
    p.fill(0.0);
    let rl = 2 * t.half;
    for c in 0..t.cin {
        for yi in 0..t.h.min(t.hp.saturating_sub(t.ph)) {
            let row = &src[(c * t.h + yi) * t.w..][..t.w];
            let (e, o) = p[c * t.plane + (yi + t.ph) * rl..][..rl].split_at_mut(t.half);
            // Padded column q = x + pw goes to e[q / 2] (q even) or o[q / 2].
            let h = t.pw / 2;
            if t.pw.is_multiple_of(2) {
                deinterleave(row, &mut e[h..], &mut o[h..]);
            } else {
                deinterleave(row, &mut o[h..], &mut e[h + 1..]);
            }
        }
    }
}

/// Four temporaries of `len` elements each from the front of `tmp`.
#[inline(always)]
fn four(tmp: &mut [f32], len: usize) -> [&mut [f32]; 4] {
    let (a, rest) = tmp[..4 * len].split_at_mut(len);
    let (b, rest) = rest.split_at_mut(len);
    let (c, d) = rest.split_at_mut(len);
    [a, b, c, d]
}

/// A vector from x (`S::F32_LANES` elements or fewer): a plain load when
/// x fills it (pulp's partial loads are calls, not inlined).
#[inline(always)]
fn load<S: Simd>(s: S, x: &[f32]) -> S::f32s {
    match S::as_simd_f32s(x) {
        ([v], []) => *v,
        _ => s.partial_load_f32s(x),
    }
}

/// Stores the first x.len() lanes of v into x, as `load`.
#[inline(always)]
fn store<S: Simd>(s: S, x: &mut [f32], v: S::f32s) {
    match S::as_mut_simd_f32s(x) {
        ([d], []) => *d = v,
        _ => s.partial_store_f32s(x, v),
    }
}

/// A tile's columns 2k..2k+3 in a split padded row (`half` = the even
/// half's length): e[k], o[k], e[k + 1], o[k + 1].
fn col_offsets(half: usize) -> [usize; 4] {
    [0, half, 1, half + 1]
}

/// Bᵀ d B of vectors of 4×4 input tiles d[i][j], at ξ = 4i + j. Bᵀ's rows
/// combine (x0, x1, x2, x3) into x0 - x2, x1 + x2, x2 - x1, x1 - x3.
#[inline(always)]
pub(super) fn input_tile<S: Simd>(s: S, d: [[S::f32s; 4]; 4]) -> [S::f32s; 16] {
    let bt = |x: [S::f32s; 4]| {
        [
            s.sub_f32s(x[0], x[2]),
            s.add_f32s(x[1], x[2]),
            s.sub_f32s(x[2], x[1]),
            s.sub_f32s(x[1], x[3]),
        ]
    };
    let cols: [[S::f32s; 4]; 4] = std::array::from_fn(|j| bt([d[0][j], d[1][j], d[2][j], d[3][j]]));
    let rows: [[S::f32s; 4]; 4] =
        std::array::from_fn(|i| bt([cols[0][i], cols[1][i], cols[2][i], cols[3][i]]));
    std::array::from_fn(|xi| rows[xi / 4][xi % 4])
}

/// Aᵀ m A of vectors of transformed tiles m[ξ]: the 2×2 outputs y00, y01,
/// y10, y11. Aᵀ's rows combine (x0, x1, x2, x3) into x0 + x1 + x2 and
/// x1 - x2 - x3.
#[inline(always)]
pub(super) fn output_tile<S: Simd>(s: S, q: [S::f32s; 16]) -> [S::f32s; 4] {
    let at = |x: [S::f32s; 4]| {
        [s.add_f32s(s.add_f32s(x[0], x[1]), x[2]), s.sub_f32s(s.sub_f32s(x[1], x[2]), x[3])]
    };
    let cols: [[S::f32s; 2]; 4] =
        std::array::from_fn(|j| at([q[j], q[4 + j], q[8 + j], q[12 + j]]));
    let [y00, y01] = at([cols[0][0], cols[1][0], cols[2][0], cols[3][0]]);
    let [y10, y11] = at([cols[0][1], cols[1][1], cols[2][1], cols[3][1]]);
    [y00, y01, y10, y11]
}

/// A dY Aᵀ of vectors of 2×2 output-gradient tiles (dy00, dy01, dy10,
/// dy11), at ξ = 4i + j. A's rows combine (x0, x1) into x0, x0 + x1,
/// x0 - x1, -x1.
#[inline(always)]
pub(super) fn grad_tile<S: Simd>(s: S, [d00, d01, d10, d11]: [S::f32s; 4]) -> [S::f32s; 16] {
    let a4 =
        |x0: S::f32s, x1: S::f32s| [x0, s.add_f32s(x0, x1), s.sub_f32s(x0, x1), s.neg_f32s(x1)];
    let (re, ro) = (a4(d00, d10), a4(d01, d11));
    let rows: [[S::f32s; 4]; 4] = std::array::from_fn(|i| a4(re[i], ro[i]));
    std::array::from_fn(|xi| rows[xi / 4][xi % 4])
}

/// V[ξ][c][base..base + tw] of tile row `ty` for every channel: Bᵀ d B on
/// vectors of tiles (pulp's SIMD types: AVX-512, AVX2 or scalar, chosen at
/// run time).
struct InputRow<'a> {
    t: &'a Tiles,
    p: &'a [f32],
    ty: usize,
    v: &'a mut [f32],
    tb: usize,
    base: usize,
}

impl WithSimd for InputRow<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) {
        let InputRow { t, p, ty, v, tb, base } = self;
        let (rl, tw, h) = (2 * t.half, t.tw, t.half);
        for c in 0..t.cin {
            let r: [&[f32]; 4] =
                std::array::from_fn(|i| &p[c * t.plane + (2 * ty + i) * rl..][..rl]);
            for k in (0..tw).step_by(S::F32_LANES) {
                let n = S::F32_LANES.min(tw - k);
                let ld = |row: &[f32], off: usize| load(s, &row[off + k..off + k + n]);
                // Row i's columns 2k..2k+3 of the tiles: e[k], o[k], e[k + 1], o[k + 1].
                let d: [[S::f32s; 4]; 4] =
                    std::array::from_fn(|i| col_offsets(h).map(|off| ld(r[i], off)));
                for (xi, val) in input_tile(s, d).into_iter().enumerate() {
                    store(s, &mut v[(xi * t.cin + c) * tb + base + k..][..n], val);
                }
            }
        }
    }
}

/// The output rows of `rows` tile rows from ty0 of one image from M of the
/// block (tiles from `base`, `tb` per block): Aᵀ m A plus the bias.
struct OutputBlock<'a> {
    t: &'a Tiles,
    m: &'a [f32],
    tmp: &'a mut [f32],
    ty0: usize,
    rows: usize,
    tb: usize,
    base: usize,
    bias: Option<&'a [f32]>,
    y: &'a mut [f32],
}

impl WithSimd for OutputBlock<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) {
        let OutputBlock { t, m, tmp, ty0, rows, tb, base, bias, y } = self;
        let tw = t.tw;
        let [y00, y01, y10, y11] = four(tmp, tw);
        for o in 0..t.cout {
            let b = s.splat_f32s(bias.map_or(0.0, |b| b[o]));
            for r in 0..rows {
                for k in (0..tw).step_by(S::F32_LANES) {
                    let n = S::F32_LANES.min(tw - k);
                    let q: [S::f32s; 16] = std::array::from_fn(|xi| {
                        load(s, &m[(xi * t.cout + o) * tb + base + r * tw + k..][..n])
                    });
                    let out = output_tile(s, q);
                    for (d, val) in
                        [&mut *y00, &mut *y01, &mut *y10, &mut *y11].into_iter().zip(out)
                    {
                        store(s, &mut d[k..k + n], s.add_f32s(val, b));
                    }
                }
                for (a, (e, od)) in [(&*y00, &*y01), (&*y10, &*y11)].into_iter().enumerate() {
                    let yr = 2 * (ty0 + r) + a;
                    if yr < t.oh {
                        interleave(&mut y[(o * t.oh + yr) * t.ow..][..t.ow], e, od);
                    }
                }
            }
        }
    }
}

/// dM[ξ][o][base..base + tw] of tile row `ty` from dy (cout, oh, ow): A dY Aᵀ
/// with the tile's entries outside the output zero.
struct GradRow<'a> {
    t: &'a Tiles,
    dy: &'a [f32],
    tmp: &'a mut [f32],
    ty: usize,
    dm: &'a mut [f32],
    tb: usize,
    base: usize,
}

impl WithSimd for GradRow<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) {
        let GradRow { t, dy, tmp, ty, dm, tb, base } = self;
        let tw = t.tw;
        let [ae, ao, be, bo] = four(tmp, tw);
        for o in 0..t.cout {
            // Rows 2·ty and 2·ty + 1, split into even and odd columns.
            for (r, e, od) in [(2 * ty, &mut *ae, &mut *ao), (2 * ty + 1, &mut *be, &mut *bo)] {
                e.fill(0.0);
                od.fill(0.0);
                if r < t.oh {
                    deinterleave(&dy[(o * t.oh + r) * t.ow..][..t.ow], e, od);
                }
            }
            for k in (0..tw).step_by(S::F32_LANES) {
                let n = S::F32_LANES.min(tw - k);
                let ld = |x: &[f32]| load(s, &x[k..k + n]);
                let dy = grad_tile(s, [ld(ae), ld(ao), ld(be), ld(bo)]);
                for (xi, val) in dy.into_iter().enumerate() {
                    store(s, &mut dm[(xi * t.cout + o) * tb + base + k..][..n], val);
                }
            }
        }
    }
}

/// `pad_split_body` compiled for AVX-512 where the CPU has it, as a
/// function of its own with the slices as parameters: LLVM vectorizes its
/// fixed-width deinterleave there, but left it scalar when it was inlined
/// into a closure (whose slices are captures, without `noalias`).
#[inline(always)]
fn pad_split(t: &Tiles, src: &[f32], p: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        #[inline(never)]
        unsafe fn avx512(t: &Tiles, src: &[f32], p: &mut [f32]) {
            pad_split_body(t, src, p)
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features `avx512` is compiled for.
            return unsafe { avx512(t, src, p) };
        }
    }
    pad_split_body(t, src, p)
}

/// y (N, cout, oh, ow) = the convolution of x (N, cin, h, w) with the
/// transformed kernel u, plus the bias.
///
/// # Safety
/// x and y hold n images of their shapes and do not overlap.
unsafe fn run(t: &Tiles, n: usize, x: P<f32>, u: &[f32], bias: Option<P<f32>>, y: P<f32>) {
    let (isz, osz, psz) = (t.cin * t.h * t.w, t.cout * t.oh * t.ow, t.cin * t.plane);
    // SAFETY: the bias has cout elements.
    let bias = bias.map(|b| unsafe { std::slice::from_raw_parts(b.get() as *const f32, t.cout) });
    t.per_group(n, |i0, ni| {
        // SAFETY: images i0.. of x and y; each task writes its own images.
        let (src, dst) = unsafe {
            (
                std::slice::from_raw_parts(x.at((i0 * isz) as isize) as *const f32, ni * isz),
                std::slice::from_raw_parts_mut(y.at((i0 * osz) as isize), ni * osz),
            )
        };
        with_scratch(t.scratch(), |pt: &mut [f32], v: &mut [f32], m: &mut [f32]| {
            let (p, tmp) = pt.split_at_mut(t.images * psz);
            for i in 0..ni {
                pad_split(t, &src[i * isz..][..isz], &mut p[i * psz..][..psz]);
            }
            t.blocks(|ty0, rows| {
                let tb = ni * rows * t.tw;
                for i in 0..ni {
                    for r in 0..rows {
                        let (p, base) = (&p[i * psz..][..psz], (i * rows + r) * t.tw);
                        Arch::new().dispatch(InputRow { t, p, ty: ty0 + r, v, tb, base });
                    }
                }
                // SAFETY: V and M of the block, of these shapes.
                unsafe { products(t.cout, t.cin, tb, u, v, t.cin * tb, m, t.cout * tb) };
                for i in 0..ni {
                    let (y, base) = (&mut dst[i * osz..][..osz], i * rows * t.tw);
                    Arch::new().dispatch(OutputBlock { t, m, tmp, ty0, rows, tb, base, bias, y });
                }
            });
        });
    });
}

/// y (N, O, oh, ow) = conv(x (N, C, H, W), w (O, C, 3, 3)) + bias.
///
/// # Safety
/// Contiguous operands of these shapes; y does not overlap the others.
pub unsafe fn forward(g: &Geom, oc: usize, x: P<f32>, w: P<f32>, bias: Option<P<f32>>, y: P<f32>) {
    if lanes::applies(g, oc) {
        // SAFETY: the caller's guarantees.
        return unsafe { lanes::forward(g, oc, x, w, bias, y) };
    }
    let t = Tiles::new(g.c, g.h, g.w, g.ph, g.pw, oc, g.oh, g.ow, g.n);
    // SAFETY: the caller's guarantees.
    unsafe { run(&t, g.n, x, &kernel_transform(w, oc, g.c, false), bias, y) }
}

/// dx (N, C, H, W) of the convolution from dy (N, O, oh, ow) and w: the
/// forward of dy with the rotated kernel, padded by 2 - p.
///
/// # Safety
/// As `forward`; dx does not overlap the others.
pub unsafe fn input_grad(g: &Geom, oc: usize, dy: P<f32>, w: P<f32>, dx: P<f32>) {
    if lanes::applies(g, oc) {
        // SAFETY: the caller's guarantees.
        return unsafe { lanes::input_grad(g, oc, dy, w, dx) };
    }
    let t = Tiles::new(oc, g.oh, g.ow, 2 - g.ph, 2 - g.pw, g.c, g.h, g.w, g.n);
    // SAFETY: the caller's guarantees.
    unsafe { run(&t, g.n, dy, &kernel_transform(w, oc, g.c, true), None, dx) }
}

/// dw (O, C, 3, 3) of the convolution of x (N, C, H, W) from dy (N, O, oh, ow).
///
/// # Safety
/// As `forward`; dw does not overlap the others.
pub unsafe fn weight_grad(g: &Geom, oc: usize, x: P<f32>, dy: P<f32>, dw: P<f32>) {
    if lanes::applies(g, oc) {
        // SAFETY: the caller's guarantees.
        return unsafe { lanes::weight_grad(g, oc, x, dy, dw) };
    }
    let t = Tiles::new(g.c, g.h, g.w, g.ph, g.pw, oc, g.oh, g.ow, g.n);
    let (isz, osz, psz) = (t.cin * t.h * t.w, oc * t.oh * t.ow, t.cin * t.plane);
    let tasks = g.n.div_ceil(t.images);
    // SAFETY: dw has O·C·9 elements.
    let dw = unsafe { std::slice::from_raw_parts_mut(dw.get(), oc * t.cin * 9) };
    weight_grad_by_parts(tasks, oc, t.cin, dw, |groups, part| {
        with_scratch(t.scratch(), |pt: &mut [f32], v: &mut [f32], dm: &mut [f32]| {
            let (p, tmp) = pt.split_at_mut(t.images * psz);
            for i0 in groups.clone().map(|k| k * t.images) {
                let ni = t.images.min(g.n - i0);
                // SAFETY: images i0.. of x and dy.
                let (src, gy) = unsafe {
                    (
                        std::slice::from_raw_parts(
                            x.at((i0 * isz) as isize) as *const f32,
                            ni * isz,
                        ),
                        std::slice::from_raw_parts(
                            dy.at((i0 * osz) as isize) as *const f32,
                            ni * osz,
                        ),
                    )
                };
                for i in 0..ni {
                    pad_split(&t, &src[i * isz..][..isz], &mut p[i * psz..][..psz]);
                }
                t.blocks(|ty0, rows| {
                    let tb = ni * rows * t.tw;
                    for i in 0..ni {
                        let (p, dy) = (&p[i * psz..][..psz], &gy[i * osz..][..osz]);
                        for r in 0..rows {
                            let (ty, base) = (ty0 + r, (i * rows + r) * t.tw);
                            Arch::new().dispatch(InputRow { t: &t, p, ty, v, tb, base });
                            Arch::new().dispatch(GradRow { t: &t, dy, tmp, ty, dm, tb, base });
                        }
                    }
                    // SAFETY: V and dM of the block, of these shapes.
                    unsafe { weight_products(oc, t.cin, tb, part, dm, oc * tb, v, t.cin * tb) };
                });
            }
        });
    });
}

/// M[ξ] (O × tb) = U[ξ] (O × C) · V[ξ] (C × tb) for the 16 ξ; V[ξ] and M[ξ]
/// are row-major, `vp` and `mp` elements after V[ξ - 1] and M[ξ - 1].
///
/// # Safety
/// v and m hold the 16 matrices at those pitches; u holds 16 · O · C.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn products(
    o: usize,
    c: usize,
    tb: usize,
    u: &[f32],
    v: &mut [f32],
    vp: usize,
    m: &mut [f32],
    mp: usize,
) {
    assert!(u.len() >= 16 * o * c && v.len() >= 15 * vp + c * tb && m.len() >= 15 * mp + o * tb);
    for xi in 0..16 {
        // SAFETY: the matrices of ξ, inside the slices (asserted above).
        unsafe {
            matmul(
                o,
                tb,
                c,
                mat(m.as_mut_ptr().add(xi * mp), tb, 1),
                mat(u.as_ptr().add(xi * o * c) as *mut f32, c, 1),
                mat(v.as_mut_ptr().add(xi * vp), tb, 1),
                1,
                false,
            )
        };
    }
}

/// dU[ξ] (O × C) += dM[ξ] (O × tb) · V[ξ]ᵀ (tb × C) for the 16 ξ, with the
/// pitches of `products`.
///
/// # Safety
/// As `products`; du holds 16 · O · C.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn weight_products(
    o: usize,
    c: usize,
    tb: usize,
    du: &mut [f32],
    dm: &mut [f32],
    dmp: usize,
    v: &mut [f32],
    vp: usize,
) {
    assert!(du.len() >= 16 * o * c && v.len() >= 15 * vp + c * tb && dm.len() >= 15 * dmp + o * tb);
    for xi in 0..16 {
        // SAFETY: the matrices of ξ, inside the slices (asserted above).
        unsafe {
            matmul(
                o,
                c,
                tb,
                mat(du.as_mut_ptr().add(xi * o * c), c, 1),
                mat(dm.as_mut_ptr().add(xi * dmp), tb, 1),
                mat(v.as_mut_ptr().add(xi * vp), 1, tb),
                1,
                true,
            )
        };
    }
}

/// dw (O, C, 3, 3) from dU summed over `tasks`: each thread adds the dU of
/// its tasks (`f(tasks, its partial dU)`) into its own partial, then into the total.
pub(super) fn weight_grad_by_parts(
    tasks: usize,
    oc: usize,
    c: usize,
    dw: &mut [f32],
    f: impl Fn(std::ops::Range<usize>, &mut [f32]) + Sync,
) {
    let size = 16 * oc * c;
    let total = std::sync::Mutex::new(vec![0.0f32; size]);
    per_thread(tasks, |_, range| {
        let mut part = vec![0.0f32; size];
        f(range, &mut part);
        let mut total = total.lock().unwrap_or_else(|e| e.into_inner());
        total.iter_mut().zip(&part).for_each(|(d, &v)| *d += v);
    });
    weight_from_du(&total.into_inner().unwrap_or_else(|e| e.into_inner()), oc, c, dw);
}

/// dw (O, C, 3, 3) = Gᵀ dU G from dU[ξ] (O × C) in the transform domain.
fn weight_from_du(du: &[f32], oc: usize, c: usize, dw: &mut [f32]) {
    // Gᵀ's rows are (1, ½, ½, 0), (0, ½, -½, 0), (0, ½, ½, 1).
    let gt = |a: f32, b: f32, c: f32, d: f32| [a + 0.5 * (b + c), 0.5 * (b - c), 0.5 * (b + c) + d];
    for (oc_c, k) in dw.chunks_exact_mut(9).enumerate() {
        let d = |i: usize, j: usize| du[(i * 4 + j) * oc * c + oc_c];
        let cols: [[f32; 3]; 4] = std::array::from_fn(|j| gt(d(0, j), d(1, j), d(2, j), d(3, j)));
        for i in 0..3 {
            let [a, b, c] = gt(cols[0][i], cols[1][i], cols[2][i], cols[3][i]);
            k[i * 3..i * 3 + 3].copy_from_slice(&[a, b, c]);
        }
    }
}
