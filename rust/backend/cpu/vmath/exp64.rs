//! e^x over contiguous float64, vectorized: x = n·ln 2 + r, a degree-13
//! polynomial for e^r, 2^n from the exponent bits; libm for the lanes out of
//! range.

use super::{map_checked, poly64};
use crate::backend::cpu::P;

/// Inputs above this in magnitude (and inf, NaN) go to libm: the result or
/// 2^n would leave float64's normal range.
const EXP_MAX: f64 = 708.0;

/// e^x for |x| ≤ 708, within 1 ulp: n = round(x / ln 2), r = x - n·ln 2 with
/// ln 2 in two parts (n times the first, of 32 bits, is exact), e^r by its
/// Taylor polynomial to degree 13 (truncation below 2^-57 for |r| ≤ ln 2 / 2),
/// with r's rounding error added back.
#[inline(always)]
fn exp_small(x: f64) -> f64 {
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5·2^52: adding it rounds to an integer
    const LN2_HI: f64 = 6.931_471_803_691_238_2e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    let t = x * std::f64::consts::LOG2_E + MAGIC;
    let n = t - MAGIC;
    let hi = x - n * LN2_HI;
    let lo = n * LN2_LO;
    let r = hi - lo;
    let r_err = (hi - r) - lo;
    // 1/k! for k = 2..13.
    let c = [
        0.5,
        0.166_666_666_666_666_66,
        0.041_666_666_666_666_664,
        0.008_333_333_333_333_333,
        0.001_388_888_888_888_889,
        0.000_198_412_698_412_698_4,
        2.480_158_730_158_73e-5,
        2.755_731_922_398_589_3e-6,
        2.755_731_922_398_589e-7,
        2.505_210_838_544_172e-8,
        2.087_675_698_786_81e-9,
        1.605_904_383_682_161_3e-10,
    ];
    let e = 1.0 + (r + (r * r * poly64(r, c) + r_err));
    // 2^n: n (in t's low bits) moved into the exponent field.
    let scale = f64::from_bits((t.to_bits().wrapping_sub(MAGIC.to_bits()) + 1023) << 52);
    e * scale
}

/// out = e^inp over n contiguous float64 elements (`out` may equal `inp`).
///
/// # Safety
/// Both pointers must be valid for `n` elements.
pub unsafe fn exp_f64(out: P<f64>, inp: P<f64>, n: usize) {
    let fast = |x: f64| (exp_small(x), x.is_nan() || x.abs() > EXP_MAX);
    map_checked(out, inp, n, fast, libm::exp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_f64_matches_libm() {
        let mut xs: Vec<f64> = (0..600_000).map(|i| -746.0 + i as f64 * 2.425_003_7e-3).collect();
        xs.extend((-1074..0).map(|e| 2f64.powi(e) * 1.37));
        xs.extend([0.0, 708.0, 709.7, 709.8, -745.2, -745.1, f64::INFINITY, f64::NAN]);
        let neg: Vec<f64> = xs.iter().map(|x| -x).collect();
        xs.extend(neg);
        let mut out = vec![0f64; xs.len()];
        // SAFETY: both buffers hold xs.len() elements.
        unsafe { exp_f64(P(out.as_mut_ptr()), P(xs.as_ptr() as *mut f64), xs.len()) };
        for (&x, &y) in xs.iter().zip(&out) {
            let r = x.exp();
            assert_eq!(y.is_nan(), r.is_nan(), "x = {x}");
            let err = if y == r || y.is_nan() {
                0
            } else {
                (y.to_bits() as i64 - r.to_bits() as i64).unsigned_abs()
            };
            assert!(err <= 1, "exp({x:e}) = {y:e}, not {r:e}");
        }
    }
}
