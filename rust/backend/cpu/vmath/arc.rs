//! The inverse trigonometric functions of two arguments or of a bounded one
//! (asin, acos, atan2), the inverse hyperbolic ones and hypot, on float32
//! lanes.

use super::{atan, ln, log1p, poly};
use std::f32::consts::LN_2;

/// From here on √(1 + a²) and √(a² - 1) are a in float32: asinh and acosh
/// are ln(2a), and below it a² cannot overflow.
const HYPERBOLIC_BIG: f32 = 8192.0;

/// asinh within 3 ulp: log1p(a + a²/(1 + √(1 + a²))) of a = |x|, the
/// identity log(a + √(1 + a²)) without its cancellation for small a.
#[inline(always)]
pub fn asinh(x: f32) -> f32 {
    let a = x.abs();
    let m = a.min(HYPERBOLIC_BIG);
    let small = log1p(m + m * m / (1.0 + (1.0 + m * m).sqrt()));
    let r = if a >= HYPERBOLIC_BIG { ln(a) + LN_2 } else { small };
    if x.is_nan() {
        x
    } else {
        r.copysign(x)
    }
}

/// acosh within 3 ulp: log1p(t + √(t (t + 2))) with t = x - 1, exact near 1;
/// NaN below 1.
#[inline(always)]
pub fn acosh(x: f32) -> f32 {
    let t = x.min(HYPERBOLIC_BIG) - 1.0;
    let small = log1p(t + (t * (t + 2.0)).sqrt());
    let r = if x >= HYPERBOLIC_BIG { ln(x) + LN_2 } else { small };
    if x >= 1.0 {
        r
    } else {
        f32::NAN
    }
}

/// atanh within 4 ulp: log1p(2a / (1 - a)) / 2 of a = |x| (1 - a is exact
/// near 1); ±inf at ±1, NaN beyond.
#[inline(always)]
pub fn atanh(x: f32) -> f32 {
    let a = x.abs();
    (0.5 * log1p(2.0 * a / (1.0 - a))).copysign(x)
}

/// arcsin of |x| ≤ 1 given a = |x| (Cephes' asinf): an odd polynomial on
/// [0, 1/2], and asin(a) = π/2 - 2 asin(√((1 - a)/2)) above; the sign is
/// the caller's. |x| > 1 gives NaN (the square root of a negative).
#[inline(always)]
fn asin_abs(a: f32) -> f32 {
    let big = a > 0.5;
    let z = if big { 0.5 * (1.0 - a) } else { a * a };
    let s = if big { z.sqrt() } else { a };
    let p = poly(z, [1.666_675_2e-1, 7.495_300_3e-2, 4.547_002_6e-2, 2.418_131_1e-2, 4.216_32e-2]);
    let r = p * z * s + s;
    if big {
        std::f32::consts::FRAC_PI_2 - 2.0 * r
    } else {
        r
    }
}

/// arcsin, within 2 ulp; NaN outside [-1, 1].
#[inline(always)]
pub fn asin(x: f32) -> f32 {
    asin_abs(x.abs()).copysign(x)
}

/// arccos, within 2 ulp, through asin of the reduced argument (Cephes' acosf):
/// 2 asin(√((1 - x)/2)) above 1/2, π - that of -x below -1/2 and
/// π/2 - asin(x) between; NaN outside [-1, 1].
#[inline(always)]
pub fn acos(x: f32) -> f32 {
    let a = x.abs();
    // π/2 - asin(a) = 2 asin(√((1 - a)/2)), without the cancellation; 1 - a
    // is exact above 1/2.
    let far = 2.0 * asin_abs((0.5 * (1.0 - a)).sqrt());
    if a <= 0.5 {
        std::f32::consts::FRAC_PI_2 - asin_abs(a).copysign(x)
    } else if x > 0.0 {
        far
    } else {
        std::f32::consts::PI - far
    }
}

/// atan2(y, x) with C's values at zeros and infinities, within 3 ulp and
/// branch-free (so loops of it vectorize): the angle of min/max(|x|, |y|) in
/// [0, π/4], reflected into its octant.
#[inline(always)]
pub fn atan2(y: f32, x: f32) -> f32 {
    let (ax, ay) = (x.abs(), y.abs());
    let (lo, hi) = (ax.min(ay), ax.max(ay));
    // 0/0 (both zero) counts as 0, inf/inf (both infinite) as 1.
    let q = if hi == 0.0 {
        0.0
    } else if lo == f32::INFINITY {
        1.0
    } else {
        lo / hi
    };
    let mut t = atan(q);
    if ay > ax {
        t = std::f32::consts::FRAC_PI_2 - t;
    }
    if x.is_sign_negative() {
        t = std::f32::consts::PI - t;
    }
    if x.is_nan() || y.is_nan() {
        x + y
    } else {
        t.copysign(y)
    }
}

/// √(x² + y²) in float64, where the squares can neither overflow nor lose
/// bits, rounded once to float32 (within 1 ulp; libm's hypotf is a call per
/// element). An infinite side gives inf even beside a NaN, as in C.
#[inline(always)]
pub fn hypot(x: f32, y: f32) -> f32 {
    let (a, b) = (x as f64, y as f64);
    // The squares are exact (48 bits): the sum and the root round once each.
    let r = (a * a + b * b).sqrt() as f32;
    if x.abs() == f32::INFINITY || y.abs() == f32::INFINITY {
        f32::INFINITY
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::vmath::tests::{sweep, ulps, worst};

    #[test]
    fn asin_acos_match_libm() {
        let tiny = (-40..0).map(|e| 2f32.powi(e) * 1.37);
        let near_one = (1..24).map(|k| 1.0 - 2f32.powi(-k));
        let xs = || {
            sweep(-1.0, 1.0, 3.7e-6)
                .chain(tiny.clone())
                .chain(tiny.clone().map(|x| -x))
                .chain(near_one.clone())
                .chain(near_one.clone().map(|x| -x))
        };
        let cases =
            [("asin", worst(xs(), asin, f64::asin), 2), ("acos", worst(xs(), acos, f64::acos), 2)];
        for (name, ulp, limit) in cases {
            assert!(ulp <= limit, "{name}: {ulp} ulps (limit {limit})");
        }
        let half_pi = std::f32::consts::FRAC_PI_2;
        assert_eq!((asin(1.0), asin(-1.0)), (half_pi, -half_pi));
        assert_eq!((acos(1.0), acos(-1.0), acos(0.0)), (0.0, std::f32::consts::PI, half_pi));
        assert_eq!(asin(-0.0).to_bits(), (-0.0f32).to_bits());
        for f in [asin, acos] {
            for x in [1.0001, -1.5, f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
                assert!(f(x).is_nan(), "{x}");
            }
        }
    }

    #[test]
    fn inverse_hyperbolics_match_libm() {
        let tiny = || (-40..0).map(|e| 2f32.powi(e) * 1.37);
        let signed = |v: Vec<f32>| v.iter().flat_map(|&x| [x, -x]).collect::<Vec<_>>();
        let wide: Vec<f32> = sweep(0.0, 20.0, 1.3e-4)
            .chain(tiny())
            .chain((0..120).map(|e| 1.9f32.powi(e)))
            .collect();
        let near_one = || (1..24).map(|k| 1.0 - 2f32.powi(-k));
        let unit: Vec<f32> = sweep(-1.0, 1.0, 3.7e-6).chain(tiny()).chain(near_one()).collect();
        let above_one: Vec<f32> =
            wide.iter().map(|x| 1.0 + x).chain((1..24).map(|k| 1.0 + 2f32.powi(-k))).collect();
        let cases = [
            ("asinh", worst(signed(wide).into_iter(), asinh, f64::asinh), 3),
            ("acosh", worst(above_one.into_iter(), acosh, f64::acosh), 3),
            ("atanh", worst(signed(unit).into_iter(), atanh, f64::atanh), 4),
        ];
        for (name, ulp, limit) in cases {
            assert!(ulp <= limit, "{name}: {ulp} ulps (limit {limit})");
        }
        let inf = f32::INFINITY;
        assert_eq!((atanh(1.0), atanh(-1.0), asinh(-inf), acosh(inf)), (inf, -inf, -inf, inf));
        assert_eq!(acosh(1.0), 0.0);
        let max = f32::MAX as f64;
        assert!(ulps(asinh(f32::MAX), max.asinh() as f32) <= 1);
        assert!(ulps(acosh(f32::MAX), max.acosh() as f32) <= 1);
        assert_eq!(
            (asinh(-0.0).to_bits(), atanh(-0.0).to_bits()),
            ((-0.0f32).to_bits(), (-0.0f32).to_bits())
        );
        for (f, bad) in
            [(atanh as fn(f32) -> f32, [1.5, -1.0001, inf]), (acosh, [0.999, -1.0, -inf])]
        {
            for x in bad.into_iter().chain([f32::NAN]) {
                assert!(f(x).is_nan(), "{x}");
            }
        }
        assert!(asinh(f32::NAN).is_nan());
    }

    #[test]
    fn hypot_matches_libm() {
        let vals: Vec<f32> = sweep(-7.0, 7.0, 0.0371)
            .chain((-45..39).map(|e| 3f32.powi(e)))
            .chain([f32::MAX, f32::MIN_POSITIVE, 1e-45])
            .collect();
        for &y in &vals {
            for &x in &vals {
                let (got, want) = (hypot(x, y), libm::hypotf(x, y));
                assert!(ulps(got, want) <= 1, "hypot({x}, {y}) = {got}, libm {want}");
            }
        }
        let (inf, nan) = (f32::INFINITY, f32::NAN);
        assert_eq!((hypot(inf, nan), hypot(nan, -inf), hypot(f32::MAX, f32::MAX)), (inf, inf, inf));
        assert!(hypot(nan, 1.0).is_nan() && hypot(0.0, nan).is_nan());
        assert_eq!(hypot(-0.0, -0.0).to_bits(), 0);
    }

    #[test]
    fn atan2_matches_libm() {
        let vals: Vec<f32> = sweep(-7.0, 7.0, 0.0137)
            .chain((-30..30).map(|e| 3f32.powi(e)))
            .chain((-30..30).map(|e| -(3f32.powi(e))))
            .collect();
        let mut worst = 0;
        for &y in vals.iter().step_by(3) {
            for &x in &vals {
                worst = worst.max(ulps(atan2(y, x), (y as f64).atan2(x as f64) as f32));
            }
        }
        assert!(worst <= 3, "atan2: {worst} ulps");
        let specials = [0.0f32, -0.0, 1.5, -1.5, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
        for &y in &specials {
            for &x in &specials {
                let (got, want) = (atan2(y, x), libm::atan2f(y, x));
                assert!(
                    ulps(got, want) <= 1 && got.is_sign_negative() == want.is_sign_negative()
                        || (got.is_nan() && want.is_nan()),
                    "atan2({y}, {x}) = {got}, libm {want}"
                );
            }
        }
    }
}
