//! sin, cos and tan over contiguous float32, and sin and cos over float64,
//! vectorized: range reduction + polynomials per lane (Cephes' for float32,
//! fdlibm's for float64), libm for the lanes out of range.

use super::{map_checked, poly, poly64};
use crate::backend::cpu::P;

/// Inputs above this (and inf, NaN) leave `sin_cos_small`'s range.
const SIN_COS_MAX: f32 = 8192.0;

/// sin x (or cos x) for |x| ≤ 8192, within 2 ulp: x = q·π/2 + r with π/2 in
/// three parts (q·part exact), |r| ≤ π/4, Cephes' sinf/cosf polynomials on r,
/// and the quadrant picks the polynomial and the sign.
#[inline(always)]
fn sin_cos_small(x: f32, cos: bool) -> f32 {
    const FRAC_2_PI: f32 = std::f32::consts::FRAC_2_PI;
    let t = x * FRAC_2_PI + 12_582_912.0;
    let q = t - 12_582_912.0;
    let r = x - q * 1.570_312_5 - q * 4.837_513e-4 - q * 7.549_79e-8;
    let z = r * r;
    let sin_r = r * z * poly(z, [-1.666_665_5e-1, 8.332_161e-3, -1.951_529_6e-4]) + r;
    let cos_r = z * z * poly(z, [4.166_664_6e-2, -1.388_731_6e-3, 2.443_315_7e-5]) - 0.5 * z + 1.0;
    // Quadrant of x (of x + π/2 for the cosine): odd ones take the other polynomial,
    // the upper two flip the sign.
    let k = (t.to_bits() as i32 - 0x4b40_0000) as u32 + cos as u32;
    let v = if k & 1 == 1 { cos_r } else { sin_r };
    let v = f32::from_bits(v.to_bits() ^ ((k & 2) << 30));
    if x == 0.0 && !cos {
        x // sin(-0.0) = -0.0
    } else {
        v
    }
}

/// tan x for |x| ≤ TAN_MAX, within 1 ulp: in float64 (the poles and roots
/// magnify the reduction's error, and -1/tan r adds a rounding), x = q·π/2 + r,
/// Cephes' tanf polynomial on r (|r| ≤ π/4), -1/tan r in odd quadrants.
#[inline(always)]
fn tan_small(x: f32) -> f32 {
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5·2^52: adding it rounds to an integer
    let xd = x as f64;
    let t = xd * std::f64::consts::FRAC_2_PI + MAGIC;
    let q = t - MAGIC;
    // π/2 in two parts, the first with 33 bits so that q·part is exact for q < 2^20.
    let r = (xd - q * 1.570_796_326_734_125_6) - q * 6.077_100_506_506_192e-11;
    let z = r * r;
    let c = [
        3.333_315_685_48e-1,
        1.333_879_940_85e-1,
        5.341_128_070_05e-2,
        2.443_013_545_25e-2,
        3.119_922_326_97e-3,
        9.385_401_855_43e-3,
    ];
    let mut p = c[5];
    for k in (0..5).rev() {
        p = p * z + c[k];
    }
    let y = r * z * p + r;
    (if t.to_bits() & 1 == 1 { -1.0 / y } else { y }) as f32
}

/// Inputs above this (and inf, NaN) leave `tan_small`'s range.
const TAN_MAX: f32 = 1.0e6;

/// Which function `trig` computes.
#[derive(Copy, Clone, PartialEq)]
pub enum Trig {
    Sin,
    Cos,
    Tan,
}

/// out = sin, cos or tan of inp over n contiguous elements (`out` may equal
/// `inp`).
///
/// # Safety
/// Both pointers must be valid for `n` elements.
pub unsafe fn trig(out: P<f32>, inp: P<f32>, n: usize, f: Trig) {
    let max = if f == Trig::Tan { TAN_MAX } else { SIN_COS_MAX };
    let fast = move |x: f32| {
        let v = match f {
            Trig::Tan => tan_small(x),
            _ => sin_cos_small(x, f == Trig::Cos),
        };
        (v, x.is_nan() || x.abs() > max)
    };
    let exact = move |x: f32| match f {
        Trig::Sin => libm::sinf(x),
        Trig::Cos => libm::cosf(x),
        Trig::Tan => libm::tanf(x),
    };
    map_checked(out, inp, n, fast, exact)
}

/// out = sin or cos (`cos`) of inp over n contiguous float64 elements (`out`
/// may equal `inp`).
///
/// # Safety
/// Both pointers must be valid for `n` elements.
pub unsafe fn sin_cos_f64(out: P<f64>, inp: P<f64>, n: usize, cos: bool) {
    let fast = move |x: f64| {
        let (t, q, r1) = quadrant(x);
        // x - q·π/2 with π/2 to 86 bits (fdlibm's first step): its error is below
        // |q|·1.5e-26, small enough unless the remainder is below |q|·1e-9 (or x
        // is out of range); lo is exact while the remainder is that large.
        let w = q * PIO2_1T;
        let hi = r1 - w;
        let lo = (r1 - hi) - w;
        let redo = x.is_nan() || x.abs() > SIN_COS_MAX_F64 || hi.abs() < q.abs() * 1.0e-9;
        (sin_cos_reduced(x, t, hi, lo, cos), redo)
    };
    let exact = move |x: f64| match x.abs() <= SIN_COS_MAX_F64 {
        true => sin_cos_precise(x, cos),
        false if cos => libm::cos(x),
        false => libm::sin(x),
    };
    map_checked(out, inp, n, fast, exact)
}

/// Inputs above this (and inf, NaN) leave the float64 reductions' range: below
/// it the quotient q < 2^20, so q times each 33-bit part of π/2 is exact.
const SIN_COS_MAX_F64: f64 = 1.0e6;

/// π/2 in parts: the first three have 33 bits (fdlibm's pio2_1, pio2_2,
/// pio2_3), the last is the rest to double precision; PIO2_1T is all of π/2 -
/// PIO2_1 to double precision.
const PIO2_1: f64 = 1.570_796_326_734_125_6;
const PIO2_1T: f64 = 6.077_100_506_506_192e-11;
const PIO2_2: f64 = 6.077_100_506_303_966e-11;
const PIO2_3: f64 = 2.022_266_248_711_166_5e-21;
const PIO2_3T: f64 = 8.478_427_660_368_9e-32;

/// The multiple q of π/2 nearest x: t = q + 1.5·2^52 (q in its low mantissa
/// bits), q as a float, and x - q·PIO2_1, which is exact: q·PIO2_1 is, and it
/// lies within a factor 2 of x (Sterbenz).
#[inline(always)]
fn quadrant(x: f64) -> (f64, f64, f64) {
    const MAGIC: f64 = 6_755_399_441_055_744.0; // adding it rounds to an integer
    let t = x * std::f64::consts::FRAC_2_PI + MAGIC;
    let q = t - MAGIC;
    (t, q, x - q * PIO2_1)
}

/// sin x (or cos x) for |x| ≤ 1e6, within 1 ulp, when the quick reduction is
/// not enough: the remainder in double-double from all four parts of π/2 (99
/// bits in three exact products, then the tail), so x near a multiple of π/2
/// keeps its relative accuracy.
fn sin_cos_precise(x: f64, cos: bool) -> f64 {
    let (t, q, r1) = quadrant(x);
    let (s2, e2) = two_sum(r1, -(q * PIO2_2));
    let (s3, e3) = two_sum(s2, -(q * PIO2_3));
    let lo = e2 + e3 - q * PIO2_3T;
    let hi = s3 + lo;
    sin_cos_reduced(x, t, hi, lo - (hi - s3), cos)
}

/// sin x (or cos x) from x = q·π/2 + (hi + lo), |hi| ≤ π/4, q in t's low
/// bits: the quadrant (of x + π/2 for the cosine) picks the kernel, the upper
/// two flip the sign.
#[inline(always)]
fn sin_cos_reduced(x: f64, t: f64, hi: f64, lo: f64, cos: bool) -> f64 {
    let k = t.to_bits() + cos as u64;
    let v = if k & 1 == 1 { cos_kernel(hi, lo) } else { sin_kernel(hi, lo) };
    let v = f64::from_bits(v.to_bits() ^ ((k & 2) << 62));
    if x == 0.0 && !cos {
        x // sin(-0.0) = -0.0
    } else {
        v
    }
}

/// a + b as a rounded sum and its exact error (Knuth's branch-free TwoSum).
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// sin(x + y) for |x| ≤ π/4, |y| ≤ ulp(x)/2: fdlibm's degree-13 polynomial,
/// sin x + y·cos x with cos x ≈ 1 - x²/2.
#[inline(always)]
fn sin_kernel(x: f64, y: f64) -> f64 {
    let z = x * x;
    let r = [
        8.333_333_333_322_49e-3,
        -1.984_126_982_985_795e-4,
        2.755_731_370_707_006_8e-6,
        -2.505_076_025_340_686_3e-8,
        1.589_690_995_211_55e-10,
    ];
    let p = poly64(z, r);
    x + (z * x * (-1.666_666_666_666_663_2e-1 + z * p) + y * (1.0 - 0.5 * z))
}

/// cos(x + y) for |x| ≤ π/4, |y| ≤ ulp(x)/2: fdlibm's degree-14 polynomial,
/// 1 - x²/2 rounded once with its rounding error added back, minus y·sin x
/// with sin x ≈ x.
#[inline(always)]
fn cos_kernel(x: f64, y: f64) -> f64 {
    let z = x * x;
    let c = [
        4.166_666_666_666_660_2e-2,
        -1.388_888_888_887_411e-3,
        2.480_158_728_947_673e-5,
        -2.755_731_435_139_066_3e-7,
        2.087_572_321_298_175e-9,
        -1.135_964_755_778_819_5e-11,
    ];
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    w + (((1.0 - w) - hz) + (z * z * poly64(z, c) - x * y))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::vmath::tests::{sweep, ulps};

    #[test]
    fn trig_matches_libm() {
        let mut xs: Vec<f32> = sweep(-8200.0, 8200.0, 0.013_7).collect();
        xs.extend((-40..0).map(|e| 2f32.powi(e) * 1.37));
        // Floats nearest to multiples of π/2: tan's poles and roots.
        xs.extend((1..2000).map(|q| (q as f64 * std::f64::consts::FRAC_PI_2) as f32));
        xs.extend([0.0, -0.0, 1e5, 9e5, -3e7, 1e38, f32::INFINITY, f32::NEG_INFINITY, f32::NAN]);
        let neg: Vec<f32> = xs.iter().map(|x| -x).collect();
        xs.extend(neg);
        for f in [Trig::Sin, Trig::Cos, Trig::Tan] {
            let mut out = vec![0f32; xs.len()];
            // SAFETY: both buffers hold xs.len() elements.
            unsafe { trig(P(out.as_mut_ptr()), P(xs.as_ptr() as *mut f32), xs.len(), f) };
            let mut worst = 0;
            for (&x, &y) in xs.iter().zip(&out) {
                let x64 = x as f64;
                let r = match f {
                    Trig::Sin => x64.sin(),
                    Trig::Cos => x64.cos(),
                    Trig::Tan => x64.tan(),
                } as f32;
                assert_eq!(y.is_nan(), r.is_nan(), "x = {x}");
                // sin and cos near a root are tiny: held to 2 ulp of 1e-3 there; tan
                // keeps its relative accuracy everywhere.
                let err = if f != Trig::Tan && r.abs() < 1e-3 {
                    ((y - r).abs() / (1e-3 * f32::EPSILON / 2.0)) as u32
                } else {
                    ulps(y, r)
                };
                assert!(err <= 1 || f != Trig::Tan, "tan({x}) = {y}, not {r}");
                worst = worst.max(err);
            }
            assert!(worst <= 2, "{}: {worst} ulps", ["sin", "cos", "tan"][f as usize]);
        }
        for f in [Trig::Sin, Trig::Tan] {
            let mut z = [-0.0f32];
            // SAFETY: one element, in place.
            unsafe { trig(P(z.as_mut_ptr()), P(z.as_mut_ptr()), 1, f) };
            assert_eq!(z[0].to_bits(), (-0.0f32).to_bits());
        }
    }

    #[test]
    fn sin_cos_f64_match_libm() {
        let mut xs: Vec<f64> = (0..400_000).map(|i| -1.0e6 + i as f64 * 5.000_037).collect();
        xs.extend((0..20_000).map(|i| i as f64 * 1.37e-3));
        xs.extend((-1074..0).map(|e| 2f64.powi(e) * 1.37));
        // Doubles nearest to multiples of π/2 (up to the range's end): the remainder
        // is tiny there, and only an exact reduction keeps its relative accuracy.
        xs.extend((1..636_000).step_by(7).map(|q| q as f64 * std::f64::consts::FRAC_PI_2));
        xs.extend([0.0, 1e6, 1.1e6, 3e9, 1e300, f64::MAX, f64::INFINITY, f64::NAN]);
        let neg: Vec<f64> = xs.iter().map(|x| -x).collect();
        xs.extend(neg);
        for cos in [false, true] {
            let mut out = vec![0f64; xs.len()];
            // SAFETY: both buffers hold xs.len() elements.
            unsafe { sin_cos_f64(P(out.as_mut_ptr()), P(xs.as_ptr() as *mut f64), xs.len(), cos) };
            for (&x, &y) in xs.iter().zip(&out) {
                let r = if cos { x.cos() } else { x.sin() };
                assert_eq!(y.is_nan(), r.is_nan(), "x = {x}");
                let err = if y == r || y.is_nan() {
                    0
                } else {
                    (y.to_bits() as i64 - r.to_bits() as i64).unsigned_abs()
                };
                assert!(err <= 1, "{}({x:e}) = {y:e}, not {r:e}", ["sin", "cos"][cos as usize]);
            }
        }
        let mut z = [-0.0f64];
        // SAFETY: one element, in place.
        unsafe { sin_cos_f64(P(z.as_mut_ptr()), P(z.as_mut_ptr()), 1, false) };
        assert_eq!(z[0].to_bits(), (-0.0f64).to_bits());
    }
}
