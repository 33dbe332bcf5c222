//! sin, cos and tan over contiguous float32, vectorized: range reduction +
//! Cephes' polynomials per lane, libm for the lanes out of range.

use super::poly;
use crate::backend::cpu::strided::split_range;
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
/// `inp`), in blocks of 16 on vectors; a block holding a large or non-finite
/// input redoes those lanes with libm.
///
/// # Safety
/// Both pointers must be valid for `n` elements.
pub unsafe fn trig(out: P<f32>, inp: P<f32>, n: usize, f: Trig) {
    let exact = move |x: f32| match f {
        Trig::Sin => libm::sinf(x),
        Trig::Cos => libm::cosf(x),
        Trig::Tan => libm::tanf(x),
    };
    let max = if f == Trig::Tan { TAN_MAX } else { SIN_COS_MAX };
    split_range(n, |s, e| {
        let (o, i, n) = (out.at(s as isize), inp.at(s as isize), e - s);
        crate::backend::cpu::simd(
            #[inline(always)]
            || {
                const B: usize = 16;
                let mut k = 0;
                while k < n {
                    let m = B.min(n - k);
                    let (mut xs, mut ys) = ([0f32; B], [0f32; B]);
                    std::ptr::copy_nonoverlapping(i.add(k), xs.as_mut_ptr(), m);
                    for j in 0..B {
                        ys[j] = match f {
                            Trig::Tan => tan_small(xs[j]),
                            _ => sin_cos_small(xs[j], f == Trig::Cos),
                        };
                    }
                    let big = |x: f32| x.is_nan() || x.abs() > max;
                    if xs.iter().any(|&x| big(x)) {
                        for j in 0..m {
                            if big(xs[j]) {
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
}
