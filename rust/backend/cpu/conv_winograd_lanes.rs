//! Winograd F(2×2, 3×3) for small planes, on vectors across images. Along a
//! row of an 8×8 plane there are 4 tiles, so conv_winograd.rs's vectors of
//! a row's tiles were a quarter full and every load was a partial one.
//! Here a group of L images is transposed so that each pixel's L values
//! are one vector: x (L, C, H, W) becomes (C, H + 2p, W + 2p, L) with zero
//! borders. Every tile transform then loads and stores whole vectors at
//! fixed offsets (no gathers), and the outputs are transposed back. The 16
//! GEMMs per block are the same as conv_winograd.rs's, with tile·L columns.

use super::conv::Geom;
use super::conv_direct::with_scratch;
use super::conv_winograd::{
    grad_tile, input_tile, kernel_transform, output_tile, products, weight_grad_by_parts,
    weight_products,
};
use super::P;
use pulp::{Arch, Simd, WithSimd};

/// Images per group: one AVX-512 vector of float32, two AVX2 ones.
pub const L: usize = 16;

/// Tiles × (C + O) per block: V and M of a block hold 16 · L times that
/// many float32 (1 MiB at most when it is over one tile row).
const BLOCK_BUDGET: usize = 1 << 9;

/// The transposed planes of a group (input and output, C + O channels)
/// stay under 64 MiB per thread: ImageNet-sized planes keep the row-wise kernels.
const MAX_GROUP: usize = 1 << 24;

/// Whether these kernels run a Winograd convolution (conv_winograd.rs
/// checks the rest): a full group of images per thread, and transposed
/// planes of moderate size. Measured against the row-wise Winograd kernels
/// and the direct ones (forward + backward, 2 threads): faster from 4×4 to
/// 32×32 planes at 16 to 128 channels, by 1.2× (32×32, 128 channels) to
/// 2.5× (8×8, 64).
pub fn applies(g: &Geom, oc: usize) -> bool {
    g.n >= L * super::threads() && (g.c + oc) * (g.h + 4) * (g.w + 4) * L <= MAX_GROUP
}

/// One pass's tiling, as conv_winograd.rs's `Tiles`: `cin` planes of h×w
/// padded by (ph, pw) give `cout` planes of oh×ow in th×tw tiles.
struct Lanes {
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
    /// Tile rows per block.
    rows: usize,
}

impl Lanes {
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
    ) -> Lanes {
        let (th, tw) = (oh.div_ceil(2), ow.div_ceil(2));
        let rows = (BLOCK_BUDGET / ((cin + cout) * tw)).clamp(1, th);
        Lanes { cin, h, w, ph, pw, cout, oh, ow, th, tw, rows }
    }
    /// The padded transposed input: (cin, 2·th + 2, 2·tw + 2, L).
    fn in_dims(&self) -> Dims {
        Dims { c: self.cin, h: self.h, w: self.w, hp: 2 * self.th + 2, wp: 2 * self.tw + 2 }
    }
    /// The transposed output (or output gradient): (cout, 2·th, 2·tw, L).
    fn out_dims(&self) -> Dims {
        Dims { c: self.cout, h: self.oh, w: self.ow, hp: 2 * self.th, wp: 2 * self.tw }
    }
    /// Scratch: the transposed input and output, V and M of a block.
    fn scratch(&self) -> [usize; 3] {
        let tb = self.rows * self.tw * L;
        [
            self.in_dims().len() + self.out_dims().len(),
            16 * pitch(self.cin, tb),
            16 * pitch(self.cout, tb),
        ]
    }
    /// Runs `f(ty0, tile rows)` for each block of tile rows.
    fn blocks(&self, mut f: impl FnMut(usize, usize)) {
        for ty0 in (0..self.th).step_by(self.rows) {
            f(ty0, self.rows.min(self.th - ty0));
        }
    }
}

/// Elements from V[ξ] (or M[ξ]) to V[ξ + 1] of a block of `tb` columns and c
/// rows: a cache line more than the matrix, since a multiple of 4 KiB put
/// the 16 stores of a tile transform in one L1 set (they took 3/4 of its time).
fn pitch(c: usize, tb: usize) -> usize {
    c * tb + 16
}

/// c planes of h×w inside transposed planes of hp×wp (× L lanes).
struct Dims {
    c: usize,
    h: usize,
    w: usize,
    hp: usize,
    wp: usize,
}

impl Dims {
    fn len(&self) -> usize {
        self.c * self.hp * self.wp * L
    }
}

/// dst (c, hp, wp, L) = src (ni, c, h, w) placed at (ph, pw), zero elsewhere
/// and in lanes ni.. . Blocks of 8 lanes × 8 pixels go through `transpose8`.
fn pack(d: &Dims, ph: usize, pw: usize, src: &[f32], ni: usize, dst: &mut [f32]) {
    let (hs, ws) = (d.h.min(d.hp - ph), d.w.min(d.wp - pw));
    if ni < L {
        dst.fill(0.0);
    } else {
        // Only the borders: every lane of the rest is written below.
        let plane = d.hp * d.wp * L;
        for p in dst[..d.c * plane].chunks_exact_mut(plane) {
            let (top, rest) = p.split_at_mut(ph * d.wp * L);
            top.fill(0.0);
            let (mid, bottom) = rest.split_at_mut(hs * d.wp * L);
            bottom.fill(0.0);
            for row in mid.chunks_exact_mut(d.wp * L) {
                row[..pw * L].fill(0.0);
                row[(pw + ws) * L..].fill(0.0);
            }
        }
    }
    let plane = d.c * d.h * d.w; // from one image's value to the next one's
    let (bl, bx) = blocks8(ni, ws);
    for c in 0..d.c {
        for y in 0..hs {
            let row = (c * d.hp + y + ph) * d.wp + pw;
            let out = &mut dst[row * L..(row + ws) * L];
            let first = (c * d.h + y) * d.w;
            assert!(ni == 0 || first + (ni - 1) * plane + ws <= src.len());
            for l0 in (0..bl).step_by(8) {
                for x0 in (0..bx).step_by(8) {
                    // SAFETY: rows l0..l0 + 8 of src hold pixels x0..x0 + 8 (checked
                    // above); out holds pixels x0..x0 + 8 of lanes l0..l0 + 8.
                    unsafe {
                        transpose8(
                            src.as_ptr().add(first + l0 * plane + x0),
                            plane,
                            out.as_mut_ptr().add(x0 * L + l0),
                            L,
                        )
                    };
                }
            }
            for l in 0..ni {
                let s = &src[first + l * plane..][..ws];
                let from = if l < bl { bx } else { 0 };
                for (o, &v) in out.chunks_exact_mut(L).zip(s).skip(from) {
                    o[l] = v;
                }
            }
        }
    }
}

/// dst (ni, c, h, w) = the top-left h×w of src (c, hp, wp, L), lanes ..ni.
/// Row by row, every lane of a row while it is in L1 (with the lanes
/// outermost, each lane's pass streamed all of src, megabytes, for 1/L of it).
fn unpack(d: &Dims, src: &[f32], ni: usize, dst: &mut [f32]) {
    let plane = d.c * d.h * d.w;
    let (bl, bx) = blocks8(ni, d.w);
    for c in 0..d.c {
        for y in 0..d.h {
            let row = &src[(c * d.hp + y) * d.wp * L..][..d.w * L];
            let first = (c * d.h + y) * d.w;
            assert!(ni == 0 || first + (ni - 1) * plane + d.w <= dst.len());
            for l0 in (0..bl).step_by(8) {
                for x0 in (0..bx).step_by(8) {
                    // SAFETY: as in `pack`, the other way round.
                    unsafe {
                        transpose8(
                            row.as_ptr().add(x0 * L + l0),
                            L,
                            dst.as_mut_ptr().add(first + l0 * plane + x0),
                            plane,
                        )
                    };
                }
            }
            for l in 0..ni {
                let out = &mut dst[first + l * plane..][..d.w];
                let from = if l < bl { bx } else { 0 };
                for (v, s) in out.iter_mut().zip(row.chunks_exact(L)).skip(from) {
                    *v = s[l];
                }
            }
        }
    }
}

/// The lanes and pixels of a row that `transpose8` covers: whole blocks of
/// 8, none where the CPU lacks AVX (the scalar loops then take them all).
fn blocks8(lanes: usize, pixels: usize) -> (usize, usize) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        return (lanes - lanes % 8, pixels - pixels % 8);
    }
    (0, 0)
}

/// dst[j·ds + i] = src[i·ss + j] for i, j < 8: an 8×8 float32 block
/// transposed in registers (3 rounds of shuffles), 16 vector loads and
/// stores where the scalar copy made 64 of each.
///
/// # Safety
/// Both blocks lie in valid memory; the CPU has AVX (`blocks8` checked).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn transpose8(src: *const f32, ss: usize, dst: *mut f32, ds: usize) {
    use std::arch::x86_64::*;
    // SAFETY: the caller's contract.
    unsafe {
        let r = |i: usize| _mm256_loadu_ps(src.add(i * ss));
        // Pairs of rows interleaved: (a0 b0 a1 b1 | a4 b4 a5 b5), (a2 b2 a3 b3 | ...).
        let (t0, t1) = (_mm256_unpacklo_ps(r(0), r(1)), _mm256_unpackhi_ps(r(0), r(1)));
        let (t2, t3) = (_mm256_unpacklo_ps(r(2), r(3)), _mm256_unpackhi_ps(r(2), r(3)));
        let (t4, t5) = (_mm256_unpacklo_ps(r(4), r(5)), _mm256_unpackhi_ps(r(4), r(5)));
        let (t6, t7) = (_mm256_unpacklo_ps(r(6), r(7)), _mm256_unpackhi_ps(r(6), r(7)));
        // Quads: column j of rows 0..4 in the low half, column j + 4 in the high.
        let u = [
            _mm256_shuffle_ps::<0x44>(t0, t2),
            _mm256_shuffle_ps::<0xEE>(t0, t2),
            _mm256_shuffle_ps::<0x44>(t1, t3),
            _mm256_shuffle_ps::<0xEE>(t1, t3),
        ];
        let v = [
            _mm256_shuffle_ps::<0x44>(t4, t6),
            _mm256_shuffle_ps::<0xEE>(t4, t6),
            _mm256_shuffle_ps::<0x44>(t5, t7),
            _mm256_shuffle_ps::<0xEE>(t5, t7),
        ];
        for j in 0..4 {
            _mm256_storeu_ps(dst.add(j * ds), _mm256_permute2f128_ps::<0x20>(u[j], v[j]));
            _mm256_storeu_ps(dst.add((j + 4) * ds), _mm256_permute2f128_ps::<0x31>(u[j], v[j]));
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn transpose8(_: *const f32, _: usize, _: *mut f32, _: usize) {
    unreachable!("blocks8 gives no blocks here")
}

/// Runs `$body` with `$px` = the offset of a tile's top-left pixel (2ty, 2tx)
/// in a transposed plane of width `$wp` and `$col` = the tile's column in V
/// or M, for each vector of lanes of every tile of a block of `$rows` tile
/// rows from `$ty0`. A macro: as a closure the body was not inlined, and the
/// transform's 16 results went through the stack (2.5× slower).
macro_rules! each_tile {
    ($t:expr, $ty0:expr, $rows:expr, $wp:expr, |$px:ident, $col:ident| $body:block) => {
        for r in 0..$rows {
            for tx in 0..$t.tw {
                for k in (0..L).step_by(S::F32_LANES) {
                    let $px = (2 * ($ty0 + r) * $wp + 2 * tx) * L + k;
                    let $col = (r * $t.tw + tx) * L + k;
                    $body
                }
            }
        }
    };
}

/// V[ξ][c][tile·L + l] of a block (`tb` columns) from the transposed
/// padded input: Bᵀ d B on whole vectors.
struct InputBlock<'a> {
    t: &'a Lanes,
    xt: &'a [f32],
    ty0: usize,
    rows: usize,
    v: &'a mut [f32],
    tb: usize,
}

impl WithSimd for InputBlock<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) {
        let InputBlock { t, xt, ty0, rows, v, tb } = self;
        let (hp, wp) = (2 * t.th + 2, 2 * t.tw + 2);
        for c in 0..t.cin {
            let plane = &xt[c * hp * wp * L..][..hp * wp * L];
            each_tile!(t, ty0, rows, wp, |px, col| {
                let d = std::array::from_fn(|i| {
                    std::array::from_fn(|j| vector(s, &plane[px + (i * wp + j) * L..]))
                });
                for (xi, val) in input_tile(s, d).into_iter().enumerate() {
                    put(s, &mut v[xi * pitch(t.cin, tb) + c * tb + col..], val);
                }
            });
        }
    }
}

/// The transposed output of a block from M: Aᵀ m A plus the bias.
struct OutputBlock<'a> {
    t: &'a Lanes,
    m: &'a [f32],
    ty0: usize,
    rows: usize,
    tb: usize,
    bias: Option<&'a [f32]>,
    yt: &'a mut [f32],
}

impl WithSimd for OutputBlock<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) {
        let OutputBlock { t, m, ty0, rows, tb, bias, yt } = self;
        let (hp, wp) = (2 * t.th, 2 * t.tw);
        for o in 0..t.cout {
            let b = s.splat_f32s(bias.map_or(0.0, |b| b[o]));
            let plane = &mut yt[o * hp * wp * L..][..hp * wp * L];
            each_tile!(t, ty0, rows, wp, |px, col| {
                let q = std::array::from_fn(|xi| {
                    vector(s, &m[xi * pitch(t.cout, tb) + o * tb + col..])
                });
                for (ab, val) in output_tile(s, q).into_iter().enumerate() {
                    let at = px + ((ab / 2) * wp + ab % 2) * L;
                    put(s, &mut plane[at..], s.add_f32s(val, b));
                }
            });
        }
    }
}

/// dM[ξ][o][tile·L + l] of a block from the transposed output gradient:
/// A dY Aᵀ on whole vectors.
struct GradBlock<'a> {
    t: &'a Lanes,
    dyt: &'a [f32],
    ty0: usize,
    rows: usize,
    dm: &'a mut [f32],
    tb: usize,
}

impl WithSimd for GradBlock<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) {
        let GradBlock { t, dyt, ty0, rows, dm, tb } = self;
        let (hp, wp) = (2 * t.th, 2 * t.tw);
        for o in 0..t.cout {
            let plane = &dyt[o * hp * wp * L..][..hp * wp * L];
            each_tile!(t, ty0, rows, wp, |px, col| {
                let d = std::array::from_fn(|ab| {
                    vector(s, &plane[px + ((ab / 2) * wp + ab % 2) * L..])
                });
                for (xi, val) in grad_tile(s, d).into_iter().enumerate() {
                    put(s, &mut dm[xi * pitch(t.cout, tb) + o * tb + col..], val);
                }
            });
        }
    }
}

/// The vector at the front of x (which holds at least one).
#[inline(always)]
fn vector<S: Simd>(_: S, x: &[f32]) -> S::f32s {
    S::as_simd_f32s(&x[..S::F32_LANES]).0[0]
}

/// Stores v at the front of x (which holds at least one vector).
#[inline(always)]
fn put<S: Simd>(_: S, x: &mut [f32], v: S::f32s) {
    S::as_mut_simd_f32s(&mut x[..S::F32_LANES]).0[0] = v;
}

/// Runs `f(first image, images)` for each group of L images, spread over the team.
fn per_group(n: usize, f: impl Fn(usize, usize) + Sync) {
    super::team::for_each(n.div_ceil(L), |i| f(i * L, L.min(n - i * L)));
}

/// y (N, cout, oh, ow) = the convolution of x (N, cin, h, w) with the
/// transformed kernel u, plus the bias.
///
/// # Safety
/// x and y hold n images of their shapes and do not overlap.
unsafe fn run(t: &Lanes, n: usize, x: P<f32>, u: &[f32], bias: Option<P<f32>>, y: P<f32>) {
    let (ind, outd) = (t.in_dims(), t.out_dims());
    let (isz, osz) = (t.cin * t.h * t.w, t.cout * t.oh * t.ow);
    // SAFETY: the bias has cout elements.
    let bias = bias.map(|b| unsafe { std::slice::from_raw_parts(b.get() as *const f32, t.cout) });
    per_group(n, |i0, ni| {
        // SAFETY: images i0.. of x and y; each task writes its own images.
        let (src, dst) = unsafe {
            (
                std::slice::from_raw_parts(x.at((i0 * isz) as isize) as *const f32, ni * isz),
                std::slice::from_raw_parts_mut(y.at((i0 * osz) as isize), ni * osz),
            )
        };
        with_scratch(t.scratch(), |io: &mut [f32], v: &mut [f32], m: &mut [f32]| {
            let (xt, yt) = io.split_at_mut(ind.len());
            pack(&ind, t.ph, t.pw, src, ni, xt);
            t.blocks(|ty0, rows| {
                let tb = rows * t.tw * L;
                Arch::new().dispatch(InputBlock { t, xt, ty0, rows, v, tb });
                // SAFETY: V and M of the block, of these shapes.
                unsafe {
                    products(t.cout, t.cin, tb, u, v, pitch(t.cin, tb), m, pitch(t.cout, tb))
                };
                Arch::new().dispatch(OutputBlock { t, m, ty0, rows, tb, bias, yt });
            });
            unpack(&outd, yt, ni, dst);
        });
    });
}

/// As conv_winograd::forward.
///
/// # Safety
/// As conv_winograd::forward.
pub unsafe fn forward(g: &Geom, oc: usize, x: P<f32>, w: P<f32>, bias: Option<P<f32>>, y: P<f32>) {
    let t = Lanes::new(g.c, g.h, g.w, g.ph, g.pw, oc, g.oh, g.ow);
    // SAFETY: the caller's guarantees.
    unsafe { run(&t, g.n, x, &kernel_transform(w, oc, g.c, false), bias, y) }
}

/// As conv_winograd::input_grad: the forward of dy with the rotated kernel.
///
/// # Safety
/// As conv_winograd::input_grad.
pub unsafe fn input_grad(g: &Geom, oc: usize, dy: P<f32>, w: P<f32>, dx: P<f32>) {
    let t = Lanes::new(oc, g.oh, g.ow, 2 - g.ph, 2 - g.pw, g.c, g.h, g.w);
    // SAFETY: the caller's guarantees.
    unsafe { run(&t, g.n, dy, &kernel_transform(w, oc, g.c, true), None, dx) }
}

/// As conv_winograd::weight_grad.
///
/// # Safety
/// As conv_winograd::weight_grad.
pub unsafe fn weight_grad(g: &Geom, oc: usize, x: P<f32>, dy: P<f32>, dw: P<f32>) {
    let t = Lanes::new(g.c, g.h, g.w, g.ph, g.pw, oc, g.oh, g.ow);
    let (ind, outd) = (t.in_dims(), t.out_dims());
    let (isz, osz) = (t.cin * t.h * t.w, oc * t.oh * t.ow);
    // SAFETY: dw has O·C·9 elements.
    let dw = unsafe { std::slice::from_raw_parts_mut(dw.get(), oc * t.cin * 9) };
    weight_grad_by_parts(g.n.div_ceil(L), oc, t.cin, dw, |groups, part| {
        with_scratch(t.scratch(), |io: &mut [f32], v: &mut [f32], dm: &mut [f32]| {
            let (xt, dyt) = io.split_at_mut(ind.len());
            for i0 in groups.clone().map(|k| k * L) {
                let ni = L.min(g.n - i0);
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
                pack(&ind, t.ph, t.pw, src, ni, xt);
                pack(&outd, 0, 0, gy, ni, dyt);
                t.blocks(|ty0, rows| {
                    let tb = rows * t.tw * L;
                    Arch::new().dispatch(InputBlock { t: &t, xt, ty0, rows, v, tb });
                    Arch::new().dispatch(GradBlock { t: &t, dyt, ty0, rows, dm, tb });
                    let (vp, dmp) = (pitch(t.cin, tb), pitch(oc, tb));
                    // SAFETY: V and dM of the block, of these shapes.
                    unsafe { weight_products(oc, t.cin, tb, part, dm, dmp, v, vp) };
                });
            }
        });
    });
}
