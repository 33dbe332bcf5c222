//! Vectorizable float32 math: exp, log, tanh, expm1, log1p, erf, the normal
//! CDF (and sin, cos, tan in `trig`) written branch-free (range reduction + polynomials: Cephes' coefficients,
//! and for erf our own fits), so a loop over them compiles to SIMD. `map` and
//! `map2` run such a loop compiled for AVX-512 or AVX2+FMA when the CPU has
//! them (checked at run time), else for the baseline.

use super::strided::split_range;
use super::P;

mod arc;
mod exp64;
mod trig;

pub use arc::{acos, acosh, asin, asinh, atan2, atanh, hypot};
pub use exp64::exp_f64;
pub use trig::{sin_cos_f64, trig, Trig};

const LOG2E: f32 = std::f32::consts::LOG2_E;
/// ln 2 split in two so n * LN2_HI is exact.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;

/// e^x, within 2 ulp; inf above ~88.72; results below f32's normal range (x < ~-87.3) flush to 0.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    let xc = x.clamp(-87.336_55, 88.722_84);
    // Round to nearest with the 1.5 * 2^23 trick: t's low mantissa bits hold n as an
    // integer, so neither a rounding call nor a float->int conversion is needed.
    let t = xc * LOG2E + 12_582_912.0;
    let n = t - 12_582_912.0;
    let r = xc - n * LN2_HI - n * LN2_LO;
    finish_exp(x, times_pow2(exp_reduced(r), t), x > 88.722_84, x < -87.336_55)
}

/// e^r for |r| ≤ ln 2 / 2.
#[inline(always)]
fn exp_reduced(r: f32) -> f32 {
    let c = [5.000_000_1e-1, 1.666_666_5e-1, 4.166_579_6e-2, 8.333_452e-3, 1.398_199_9e-3];
    poly(r, [c[0], c[1], c[2], c[3], c[4], 1.987_569_1e-4]) * r * r + r + 1.0
}

/// y · 2^n, n held in t's low mantissa bits (t = n + 1.5 · 2^23), applied in
/// two halves: n reaches 128 at the top of the range, past f32's largest exponent.
#[inline(always)]
fn times_pow2(y: f32, t: f32) -> f32 {
    let ni = t.to_bits() as i32 - 0x4b40_0000;
    let (h1, h2) = (ni >> 1, ni - (ni >> 1));
    y * f32::from_bits(((h1 + 127) as u32) << 23) * f32::from_bits(((h2 + 127) as u32) << 23)
}

/// An exponential's special values: NaN stays, overflow is inf, underflow 0.
#[inline(always)]
fn finish_exp(x: f32, v: f32, over: bool, under: bool) -> f32 {
    #[allow(clippy::eq_op)]
    let nan = x != x;
    if nan {
        x
    } else if over {
        f32::INFINITY
    } else if under {
        0.0
    } else {
        v
    }
}

/// Natural log, within 2 ulp; log(0) = -inf, log(<0) = NaN, log(inf) = inf.
#[inline(always)]
pub fn ln(x: f32) -> f32 {
    // Scale subnormals into the normal range first.
    let tiny = x < f32::MIN_POSITIVE;
    let xs = if tiny { x * 8_388_608.0 } else { x };
    let bits = xs.to_bits();
    let mut e = ((bits >> 23) & 0xff) as i32 - 126 - if tiny { 23 } else { 0 };
    let mut m = f32::from_bits((bits & 0x007f_ffff) | 0x3f00_0000); // in [0.5, 1)
    if m < std::f32::consts::FRAC_1_SQRT_2 {
        e -= 1;
        m = m + m - 1.0;
    } else {
        m -= 1.0;
    }
    let z = m * m;
    let mut p = 7.037_683_6e-2_f32;
    p = p * m - 1.151_461e-1;
    p = p * m + 1.167_699_9e-1;
    p = p * m - 1.242_014_1e-1;
    p = p * m + 1.424_932_3e-1;
    p = p * m - 1.666_805_8e-1;
    p = p * m + 2.000_071_4e-1;
    p = p * m - 2.499_999_4e-1;
    p = p * m + 3.333_333_1e-1;
    let ef = e as f32;
    let y = p * m * z + ef * LN2_LO - 0.5 * z;
    let v = m + y + ef * LN2_HI;
    #[allow(clippy::eq_op)]
    let nan = x != x;
    if nan || x < 0.0 {
        f32::NAN
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else if x == f32::INFINITY {
        x
    } else {
        v
    }
}

/// tanh: a polynomial near 0 (no cancellation), 1 - 2 / (e^2|x| + 1) elsewhere.
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let a = x.abs();
    let z = x * x;
    let mut p = -5.704_988_7e-3_f32;
    p = p * z + 2.063_908_9e-2;
    p = p * z - 5.373_971_6e-2;
    p = p * z + 1.333_144_2e-1;
    p = p * z - 3.333_328_2e-1;
    let small = p * z * x + x;
    let big = (1.0 - 2.0 / (exp(2.0 * a) + 1.0)).copysign(x);
    if a < 0.625 {
        small
    } else {
        big
    }
}

#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

/// 2^x, within 2 ulp: x = n + r with |r| ≤ ½ (exact), 2^r = e^(r·ln 2) by
/// exp's polynomial, then 2^n in two halves. Inf above 128; results below
/// f32's normal range (x < -126) flush to 0, as `exp`'s do.
#[inline(always)]
pub fn exp2(x: f32) -> f32 {
    let xc = x.clamp(-126.0, 128.0);
    let t = xc + 12_582_912.0;
    let n = t - 12_582_912.0;
    let r = (xc - n) * std::f32::consts::LN_2;
    finish_exp(x, times_pow2(exp_reduced(r), t), x >= 128.0, x < -126.0)
}

/// log2(x) and log10(x) as ln(x) times the constant: within 3 ulp.
#[inline(always)]
pub fn log2(x: f32) -> f32 {
    ln(x) * std::f32::consts::LOG2_E
}

#[inline(always)]
pub fn log10(x: f32) -> f32 {
    ln(x) * std::f32::consts::LOG10_E
}

/// arctan, within 2 ulp (Cephes' atanf): |x| reduced to [0, tan(π/8)] by
/// atan(x) = π/2 - atan(1/x) above tan(3π/8) and π/4 + atan((x-1)/(x+1))
/// above tan(π/8), then an odd polynomial.
#[inline(always)]
pub fn atan(x: f32) -> f32 {
    let a = x.abs();
    let (big, mid) = (a > 2.414_213_6, a > 0.414_213_57);
    let quarter = std::f32::consts::FRAC_PI_4;
    let (y0, z) = if big {
        (2.0 * quarter, -1.0 / a)
    } else if mid {
        (quarter, (a - 1.0) / (a + 1.0))
    } else {
        (0.0, a)
    };
    let z2 = z * z;
    let p = poly(z2, [-3.333_294_9e-1, 1.997_771_1e-1, -1.387_768_6e-1, 8.053_744_5e-2]);
    (y0 + (p * z2 * z + z)).copysign(x)
}

/// Inverse error function (Giles' single-precision approximation: a
/// polynomial in ln(1 - x²), two ranges), one Newton step on `erf` after it.
/// ±1 give ±inf, |x| > 1 and NaN give NaN.
#[inline(always)]
pub fn erfinv(x: f32) -> f32 {
    let w = -ln((1.0 - x) * (1.0 + x));
    let p = if w < 5.0 {
        let c = [1.501_409_4, 2.466_407_3e-1, -4.177_681_6e-3, -1.253_725e-3, 2.185_808_7e-4];
        poly(
            w - 2.5,
            [
                c[0],
                c[1],
                c[2],
                c[3],
                c[4],
                -4.391_506_5e-6,
                -3.523_387_7e-6,
                3.432_739_4e-7,
                2.810_226_4e-8,
            ],
        )
    } else {
        let c = [2.832_976_8, 1.001_674_1, 9.438_870_5e-3, -7.622_461_3e-3, 5.739_507_7e-3];
        poly(
            w.sqrt() - 3.0,
            [
                c[0],
                c[1],
                c[2],
                c[3],
                c[4],
                -3.673_428_4e-3,
                1.349_343_2e-3,
                1.009_505_6e-4,
                -2.002_142_6e-4,
            ],
        )
    };
    let y = p * x;
    // Newton: erf'(y) = 2/√π · e^(-y²).
    let y = y - (erf(y) - x) / (std::f32::consts::FRAC_2_SQRT_PI * exp(-y * y));
    let a = x.abs();
    if a == 1.0 {
        f32::INFINITY.copysign(x)
    } else if a < 1.0 {
        y
    } else {
        f32::NAN
    }
}

/// Horner's rule over coefficients from the constant term up, in fused
/// multiply-adds: one instruction per step where `simd` compiled the caller
/// for FMA (half the work and latency of a multiply then an add); elsewhere a
/// libm call, correct but slow, so keep hot loops inside `simd`.
#[inline(always)]
fn poly<const N: usize>(x: f32, c: [f32; N]) -> f32 {
    let mut p = c[N - 1];
    for k in (0..N - 1).rev() {
        p = p.mul_add(x, c[k]);
    }
    p
}

/// c[0] + c[1]·x + … by Horner's rule.
#[inline(always)]
fn poly64<const N: usize>(x: f64, c: [f64; N]) -> f64 {
    let mut p = c[N - 1];
    for k in (0..N - 1).rev() {
        p = p.mul_add(x, c[k]);
    }
    p
}

/// e^x - 1, within 2 ulp: x = n·ln 2 + r with |r| ≤ ln 2 / 2, e^r - 1 by a
/// polynomial (Cephes' expm1f), then 2^n (e^r - 1) + (2^n - 1), exact near 0.
#[inline(always)]
pub fn expm1(x: f32) -> f32 {
    let xc = x.clamp(-88.0, 88.0);
    let t = xc * LOG2E + 12_582_912.0;
    let n = t - 12_582_912.0;
    let r = xc - n * LN2_HI - n * LN2_LO;
    let p = poly(
        r,
        [5.000_000_1e-1, 1.666_666_5e-1, 4.166_579_6e-2, 8.333_452e-3, 1.398_2e-3, 1.987_569_1e-4],
    );
    let em = r * r * p + r;
    let ni = t.to_bits() as i32 - 0x4b40_0000;
    let two = f32::from_bits(((ni + 127).max(0) as u32) << 23);
    let v = two * em + (two - 1.0);
    #[allow(clippy::eq_op)]
    let nan = x != x;
    if nan || x == 0.0 {
        x // -0.0 stays -0.0
    } else if x > 88.0 {
        exp(x)
    } else {
        v
    }
}

/// ln(1 + x), within 3 ulp: the log of u = 1 + x corrected by the rounding of
/// that sum, (x - (u - 1)) / u.
#[inline(always)]
pub fn log1p(x: f32) -> f32 {
    let u = 1.0 + x;
    let v = ln(u) + (x - (u - 1.0)) / u;
    if u == 0.0 || x == f32::INFINITY {
        ln(u)
    } else if x == 0.0 {
        x // -0.0 stays -0.0
    } else {
        v
    }
}

/// x² as hi + lo with hi exact (x's top 12 bits squared), so that e^(-x²)
/// keeps its accuracy for large x.
#[inline(always)]
fn square_split(x: f32) -> (f32, f32) {
    let xh = f32::from_bits(x.to_bits() & 0xffff_f000);
    let xl = x - xh;
    (xh * xh, (xh + xh + xl) * xl)
}

/// erfc(a) for a ≥ 1, given a² = hi + lo: e^(-a²) R(1/a), R a polynomial
/// fitted to erfc(a) e^(a²) on [1, 10]. Within 8 ulp; 0 past a = 9.3.
#[inline(always)]
fn erfc_big(a: f32, (hi, lo): (f32, f32)) -> f32 {
    let r = poly(
        1.0 / a.min(10.0),
        [
            -3.471_540_6e-6,
            5.643_337e-1,
            -2.572_777_4e-3,
            -2.560_250_8e-1,
            -1.660_231_5e-1,
            1.113_006_7,
            -1.841_911_9,
            1.739_695_9,
            -1.011_139_3,
            3.383_58e-1,
            -5.013_496_8e-2,
        ],
    );
    exp(-hi) * poly(lo, [1.0, -1.0, 0.5, -1.0 / 6.0, 1.0 / 24.0]) * r
}

/// erf(|x|) - |x| for |x| < 1, over |x|: a polynomial in x² fitted to it.
#[inline(always)]
fn erf_small(a: f32) -> f32 {
    let c = [
        1.283_791_7e-1,
        -3.761_263e-1,
        1.128_361_2e-1,
        -2.685_481e-2,
        5.190_053_5e-3,
        -8.024_354e-4,
        7.898_21e-5,
    ];
    a * poly(a * a, c) + a
}

/// erf, within 2 ulp.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let a = x.abs();
    let b = a.clamp(1.0, 10.0);
    let v = if a < 1.0 { erf_small(a) } else { 1.0 - erfc_big(b, square_split(b)) };
    #[allow(clippy::eq_op)]
    let nan = x != x;
    if nan {
        x
    } else {
        v.copysign(x)
    }
}

/// e^-(hi + lo) for 0 ≤ hi with lo ≪ hi (x² split by `square_split`), 0 past
/// hi = 87. hi - n·ln 2 is exact (n·LN2_HI is, and the two are close), so lo
/// enters the reduced argument at full precision.
#[inline(always)]
fn exp_neg_split(hi: f32, lo: f32) -> f32 {
    let h = hi.min(87.0);
    let t = (-h).mul_add(LOG2E, 12_582_912.0);
    let n = t - 12_582_912.0;
    let r = n.mul_add(-LN2_HI, -h) - lo;
    let r = n.mul_add(-LN2_LO, r);
    // n ≥ -126: 2^n is a normal float.
    let scale = f32::from_bits(((t.to_bits() as i32 - 0x4b40_0000 + 127) as u32) << 23);
    if hi > 87.0 {
        0.0
    } else {
        exp_reduced(r) * scale
    }
}

/// The standard normal CDF Φ(x) within 6 ulp and e^(-x²/2) within 1, both tails
/// keeping their relative accuracy: Φ(-|x|) = erfc(t)/2 with t = |x|/√2 and
/// erfc(t) = e^(-t²) u Q(u), u = 1/(1 + 0.3t), Q a degree-8 polynomial of
/// ours fitted to erfc(t) e^(t²)/u on t ∈ [0, 10] (relative error 3e-8).
/// One polynomial and one exponential for every lane, no branches to
/// evaluate both sides of; Φ is 0 below x ≈ -13.2 (it would be subnormal).
#[inline(always)]
pub fn ncdf_exp(x: f32) -> (f32, f32) {
    let a = x.abs().min(14.0);
    let (hi, lo) = square_split(a);
    let e = exp_neg_split(0.5 * hi, 0.5 * lo);
    let u = 1.0 / (a * std::f32::consts::FRAC_1_SQRT_2).mul_add(0.3, 1.0);
    let q = [
        1.691_880_5e-1,
        1.707_145_1e-1,
        1.483_438_5e-1,
        2.149_090_6e-1,
        -9.461_31e-2,
        5.476_680_4e-1,
        -5.122_342e-1,
        4.855_425e-1,
        -1.295_187_2e-1,
    ];
    let c = 0.5 * e * u * poly(u, q);
    #[allow(clippy::eq_op)]
    let nan = x != x;
    let phi = if nan {
        x
    } else if x < 0.0 {
        c
    } else {
        1.0 - c
    };
    (phi, e)
}

/// The standard normal CDF Φ(x) (see `ncdf_exp`).
#[inline(always)]
pub fn ncdf(x: f32) -> f32 {
    ncdf_exp(x).0
}

/// fmod(a, b) (C's, the sign of a) exactly and without a loop: for
/// |a/b| < 2^22 the float32 quotient's truncation q is off by at most one, and
/// a fused a - q·b is exact when q is right or one too large (the result fits
/// in a float); one too small, it is at least b and redone with q + 1. NaN
/// elsewhere (b = 0, infinities, NaN, larger quotients), for the caller to
/// redo those lanes with libm. Fast only where FMA is an instruction (`simd`).
#[inline(always)]
pub fn fmod(a: f32, b: f32) -> f32 {
    let (x, y) = (a.abs(), b.abs());
    let q = (x / y).trunc();
    let r = (-q).mul_add(y, x);
    let r = if r >= y {
        (-(q + 1.0)).mul_add(y, x)
    } else if r < 0.0 {
        r + y
    } else {
        r
    };
    // q = 0 keeps x as it is, also for an infinite y (0·inf is NaN).
    let r = if q == 0.0 { x } else { r };
    if q < 4_194_304.0 {
        r.copysign(a)
    } else {
        f32::NAN
    }
}

/// out[i] = f(inp[i]) over n contiguous elements, in parallel chunks, with the
/// widest SIMD the CPU offers. `out` may equal `inp`.
///
/// # Safety
/// Both pointers must be valid for `n` elements.
pub unsafe fn map<T: Copy>(out: P<T>, inp: P<T>, n: usize, f: impl Fn(T) -> T + Sync + Copy) {
    split_range(n, |s, e| {
        let (o, i) = (out.at(s as isize), inp.at(s as isize));
        super::simd(
            #[inline(always)]
            || plain(o, i, e - s, f),
        )
    });
}

/// out = fast(inp).0 over n contiguous elements in blocks of 16 on vectors; a
/// block where `fast` flags a lane (out of its range, or not accurate
/// enough) redoes those lanes with `exact`.
///
/// # Safety
/// Both pointers must be valid for `n` elements.
#[inline(always)]
unsafe fn map_checked<T: Copy + Default>(
    out: P<T>,
    inp: P<T>,
    n: usize,
    fast: impl Fn(T) -> (T, bool) + Copy + Sync,
    exact: impl Fn(T) -> T + Copy + Sync,
) {
    split_range(n, |s, e| {
        let (o, i, n) = (out.at(s as isize), inp.at(s as isize), e - s);
        super::simd(
            #[inline(always)]
            || {
                const B: usize = 16;
                let mut k = 0;
                while k < n {
                    let m = B.min(n - k);
                    let (mut xs, mut ys) = ([T::default(); B], [T::default(); B]);
                    let mut redo = [false; B];
                    std::ptr::copy_nonoverlapping(i.add(k), xs.as_mut_ptr(), m);
                    for j in 0..B {
                        (ys[j], redo[j]) = fast(xs[j]);
                    }
                    if redo.iter().any(|&r| r) {
                        for j in 0..m {
                            if redo[j] {
                                ys[j] = exact(xs[j]);
                            }
                        }
                    }
                    std::ptr::copy(ys.as_ptr(), o.add(k), m);
                    k += B;
                }
            },
        )
    });
}

/// out[i] = f(a[i], b[i]) over n contiguous elements, in parallel chunks
/// compiled for the widest SIMD the CPU has.
///
/// # Safety
/// All pointers must be valid for `n` elements.
pub unsafe fn map2<T: Copy>(
    out: P<T>,
    a: P<T>,
    b: P<T>,
    n: usize,
    f: impl Fn(T, T) -> T + Sync + Copy,
) {
    split_range(n, |s, e| {
        let (o, a, b) = (out.at(s as isize), a.at(s as isize), b.at(s as isize));
        super::simd(
            #[inline(always)]
            || plain2(o, a, b, e - s, f),
        )
    });
}

/// `plain` for two inputs.
#[inline(always)]
unsafe fn plain2<T: Copy>(o: *mut T, a: *const T, b: *const T, n: usize, f: impl Fn(T, T) -> T) {
    const B: usize = 16;
    let mut k = 0;
    while k + B <= n {
        let mut buf = [*a; B];
        for j in 0..B {
            buf[j] = f(*a.add(k + j), *b.add(k + j));
        }
        std::ptr::copy(buf.as_ptr(), o.add(k), B);
        k += B;
    }
    for j in k..n {
        *o.add(j) = f(*a.add(j), *b.add(j));
    }
}

/// Blocks of 16 through a local buffer: the compiler vectorizes the block without
/// having to prove that `o` and `i` do not overlap (in-place ops pass o == i).
#[inline(always)]
unsafe fn plain<T: Copy>(o: *mut T, i: *const T, n: usize, f: impl Fn(T) -> T) {
    const B: usize = 16;
    let mut k = 0;
    while k + B <= n {
        let mut buf = [*i; B];
        for j in 0..B {
            buf[j] = f(*i.add(k + j));
        }
        std::ptr::copy(buf.as_ptr(), o.add(k), B);
        k += B;
    }
    for j in k..n {
        *o.add(j) = f(*i.add(j));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn ulps(a: f32, b: f32) -> u32 {
        if a == b || (a.is_nan() && b.is_nan()) {
            return 0;
        }
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }

    #[test]
    fn exp_log_tanh_match_libm() {
        let mut worst = [0u32; 3];
        let mut x = -90.0f32;
        while x < 90.0 {
            // Below ~-87.3 libm returns subnormals; exp flushes them to 0.
            if x.exp() >= f32::MIN_POSITIVE {
                worst[0] = worst[0].max(ulps(exp(x), x.exp()));
            } else {
                assert!(exp(x) <= f32::MIN_POSITIVE);
            }
            if x > 0.0 {
                worst[1] = worst[1].max(ulps(ln(x), x.ln()));
                worst[1] = worst[1].max(ulps(ln(x * 1e-40), (x * 1e-40).ln()));
            }
            worst[2] = worst[2].max(ulps(tanh(x), x.tanh()));
            x += 0.000_73;
        }
        assert!(
            worst[0] <= 3 && worst[1] <= 3 && worst[2] <= 4,
            "worst ulps exp/ln/tanh: {:?}",
            worst
        );
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert!(exp(f32::NAN).is_nan() && ln(-1.0).is_nan() && ln(f32::NAN).is_nan());
        assert_eq!(ln(0.0), f32::NEG_INFINITY);
        assert_eq!(ln(f32::INFINITY), f32::INFINITY);
        assert_eq!(tanh(f32::INFINITY), 1.0);
        assert_eq!(tanh(-f32::INFINITY), -1.0);
    }

    /// Worst ulps of `f` against the float64 `reference` rounded to float32.
    pub(super) fn worst(
        xs: impl Iterator<Item = f32>,
        f: fn(f32) -> f32,
        reference: fn(f64) -> f64,
    ) -> u32 {
        xs.map(|x| ulps(f(x), reference(x as f64) as f32)).max().unwrap_or(0)
    }

    pub(super) fn sweep(lo: f32, hi: f32, step: f32) -> impl Iterator<Item = f32> {
        (0..((hi - lo) / step) as usize).map(move |i| lo + i as f32 * step)
    }

    #[test]
    fn erf_expm1_log1p_match_libm() {
        let tiny = (-40..0).map(|e| 2f32.powi(e) * 1.37);
        let ncdf64 = |x: f64| 0.5 * libm::erfc(-x * std::f64::consts::FRAC_1_SQRT_2);
        let cases = [
            ("erf", worst(sweep(-5.0, 5.0, 3.1e-4).chain(tiny.clone()), erf, libm::erf), 2),
            ("ncdf", worst(sweep(-12.5, 6.0, 3.1e-4), ncdf, ncdf64), 6),
            (
                "ncdf's exp",
                worst(sweep(-13.0, 13.0, 3.1e-4), |x| ncdf_exp(x).1, |x| (-0.5 * x * x).exp()),
                10,
            ),
            ("expm1", worst(sweep(-90.0, 88.7, 1.7e-3).chain(tiny.clone()), expm1, f64::exp_m1), 2),
            ("log1p", worst(sweep(-0.999, 30.0, 1.3e-3).chain(tiny), log1p, f64::ln_1p), 3),
            ("log1p big", worst(sweep(1.0, 1e30, 7.3e25), log1p, f64::ln_1p), 3),
        ];
        for (name, ulp, limit) in cases {
            assert!(ulp <= limit, "{name}: {ulp} ulps (limit {limit})");
        }
        for (f, inf, ninf) in
            [(erf as fn(f32) -> f32, 1.0, -1.0), (ncdf, 1.0, 0.0), (expm1, f32::INFINITY, -1.0)]
        {
            assert_eq!((f(f32::INFINITY), f(f32::NEG_INFINITY)), (inf, ninf));
            assert!(f(f32::NAN).is_nan());
        }
        assert_eq!(
            (erf(-0.0).to_bits(), expm1(-0.0).to_bits()),
            ((-0.0f32).to_bits(), (-0.0f32).to_bits())
        );
        assert_eq!((log1p(-1.0), log1p(f32::INFINITY)), (f32::NEG_INFINITY, f32::INFINITY));
        assert_eq!(log1p(-0.0).to_bits(), (-0.0f32).to_bits());
        assert!(log1p(-2.0).is_nan() && log1p(f32::NAN).is_nan());
    }

    #[test]
    fn exp2_log2_log10_atan_match_libm() {
        let tiny = (-40..0).map(|e| 2f32.powi(e) * 1.37);
        let cases = [
            ("exp2", worst(sweep(-125.9, 127.9, 7.3e-3).chain(tiny.clone()), exp2, f64::exp2), 2),
            ("log2", worst(sweep(1e-3, 3e3, 3.1e-2).chain(tiny.clone()), log2, f64::log2), 3),
            ("log2 near 1", worst(sweep(0.9, 1.1, 1.3e-6), log2, f64::log2), 3),
            ("log10", worst(sweep(1e-3, 3e3, 3.1e-2).chain(tiny.clone()), log10, f64::log10), 3),
            ("atan", worst(sweep(-40.0, 40.0, 1.1e-3).chain(tiny), atan, f64::atan), 2),
            ("atan big", worst(sweep(1e3, 1e30, 7.3e25), atan, f64::atan), 2),
        ];
        for (name, ulp, limit) in cases {
            assert!(ulp <= limit, "{name}: {ulp} ulps (limit {limit})");
        }
        assert_eq!(
            (exp2(128.0), exp2(f32::INFINITY), exp2(f32::NEG_INFINITY)),
            (f32::INFINITY, f32::INFINITY, 0.0)
        );
        assert_eq!(
            (exp2(0.0), exp2(-126.0), exp2(127.0)),
            (1.0, f32::MIN_POSITIVE, 2f32.powi(127))
        );
        assert_eq!(
            (log2(0.0), log2(f32::INFINITY), log2(8.0)),
            (f32::NEG_INFINITY, f32::INFINITY, 3.0)
        );
        let half_pi = std::f32::consts::FRAC_PI_2;
        assert_eq!((atan(f32::INFINITY), atan(f32::NEG_INFINITY)), (half_pi, -half_pi));
        assert_eq!(atan(-0.0).to_bits(), (-0.0f32).to_bits());
        assert!(exp2(f32::NAN).is_nan() && log2(-1.0).is_nan() && atan(f32::NAN).is_nan());
    }

    #[test]
    fn erfinv_matches_float64() {
        let tiny = (-40..0).map(|e| 2f32.powi(e) * 1.37);
        let near_one = (1..24).map(|k| 1.0 - 2f32.powi(-k));
        let xs: Vec<f32> = sweep(-0.9999, 0.9999, 1.3e-5).chain(tiny).chain(near_one).collect();
        let w = worst(xs.into_iter(), erfinv, super::super::special::erfinv);
        assert!(w <= 4, "erfinv: {w} ulps");
        assert_eq!((erfinv(1.0), erfinv(-1.0)), (f32::INFINITY, f32::NEG_INFINITY));
        assert_eq!(erfinv(-0.0).to_bits(), (-0.0f32).to_bits());
        assert!(erfinv(1.5).is_nan() && erfinv(-1.0001).is_nan() && erfinv(f32::NAN).is_nan());
    }

    #[test]
    fn fmod_is_exact_or_nan() {
        // Float bit patterns from an LCG: every exponent and sign, subnormals, inf, NaN.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            f32::from_bits((state >> 32) as u32)
        };
        let mut fast = 0;
        for _ in 0..400_000 {
            let (a, b) = (next(), next());
            // Close exponents too: most pairs of random bits are far apart.
            let b2 = b.abs().max(1e-30) * a.abs().max(1e-30).sqrt().min(1e30);
            for (a, b) in [(a, b), (a, b2), (b2 * 3.5, b2), (-a, 7.25), (0.0, b), (-0.0, b)] {
                let (m, r) = (fmod(a, b), a % b);
                if !m.is_nan() {
                    assert_eq!(m.to_bits(), r.to_bits(), "fmod({a}, {b}) = {m}, not {r}");
                    fast += 1;
                } else {
                    let q = (a as f64 / b as f64).abs();
                    assert!(r.is_nan() || q >= 4e6, "fmod({a}, {b}): NaN");
                }
            }
        }
        assert!(fast > 600_000, "only {fast} pairs took the fast path");
        assert_eq!(fmod(5.5, f32::INFINITY), 5.5);
    }
}
