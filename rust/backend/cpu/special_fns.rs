//! The scalar math of rust/ops/special_fns.rs (torch.special's Bessel, Airy,
//! incomplete-gamma, Hurwitz-zeta, erfcx and orthogonal-polynomial functions),
//! in float64 for every input dtype. Bessel J and Y come from libm; K and Airy
//! Ai are integrals summed by the trapezoidal rule, which converges
//! geometrically for these analytic, fast-decaying integrands.

use super::special::{lgamma, zeta as hurwitz};
use std::f64::consts::PI;

/// The Euler–Mascheroni constant γ (std's EULER_GAMMA is newer than our MSRV).
const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

/// e^x K_ν(x) for x > 0 and ν ≥ 0: ∫_0^∞ e^(-x (cosh t - 1)) cosh(ν t) dt.
/// The integrand is even and analytic in the strip |Im t| < π/2, so the
/// trapezoidal sum with step h has error ~e^(-π²/h) (1e-18 at h = 0.15) while
/// x is small; for large x it is a Gaussian of width 1/√x, which steps of
/// 0.6/√x sum to 1e-17.
fn k_scaled(nu: f64, x: f64) -> f64 {
    let h = (0.6 / x.sqrt()).min(0.15);
    // Beyond t_max the integrand is below e^-45 of its peak (cosh(ν t) grows
    // at most like e^t, hence the log term for small x).
    let tail = 45.0 + (1.0 / x).ln().max(0.0);
    let t_max = (1.0 + tail / x).acosh();
    let mut sum = 0.5;
    let mut k = 1.0;
    while k * h <= t_max {
        let t = k * h;
        sum += (-x * (t.cosh() - 1.0)).exp() * (nu * t).cosh();
        k += 1.0;
    }
    sum * h
}

/// K_ν(x) (or e^x K_ν(x) when `scaled`): +inf at 0, NaN below.
fn bessel_k(nu: f64, x: f64, scaled: bool) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::INFINITY;
    }
    if x == f64::INFINITY {
        return 0.0;
    }
    let k = if x < 1e-8 {
        // K0 ~ -ln(x/2) - γ and K1 ~ 1/x (the next terms are below x² relative)
        let k = if nu == 0.0 { -(0.5 * x).ln() - EULER_GAMMA } else { 1.0 / x };
        k * x.exp()
    } else if x > 1e4 {
        // Hankel's expansion: sqrt(π/2x) Σ_k Π_{j≤k} (4ν² - (2j-1)²) / (k! (8x)^k)
        let mu = 4.0 * nu * nu;
        let (mut term, mut sum) = (1.0, 1.0);
        for k in 1..12 {
            let odd = (2 * k - 1) as f64;
            term *= (mu - odd * odd) / (k as f64 * 8.0 * x);
            sum += term;
        }
        sum * (PI / (2.0 * x)).sqrt()
    } else {
        k_scaled(nu, x)
    };
    if scaled {
        k
    } else {
        k * (-x).exp()
    }
}

pub fn modified_bessel_k0(x: f64) -> f64 {
    bessel_k(0.0, x, false)
}
pub fn modified_bessel_k1(x: f64) -> f64 {
    bessel_k(1.0, x, false)
}
pub fn scaled_modified_bessel_k0(x: f64) -> f64 {
    bessel_k(0.0, x, true)
}
pub fn scaled_modified_bessel_k1(x: f64) -> f64 {
    bessel_k(1.0, x, true)
}

/// J and Y of order 0 and 1: libm's, with PyTorch's values where they
/// differ: NaN at ±inf (and for Y below 0; Y(0) = -inf).
pub fn bessel_jy(order: u8, second_kind: bool, x: f64) -> f64 {
    if x.is_infinite() || (second_kind && x < 0.0) {
        return f64::NAN;
    }
    match (order, second_kind) {
        (0, false) => libm::j0(x),
        (_, false) => libm::j1(x),
        (0, true) => libm::y0(x),
        _ => libm::y1(x),
    }
}

/// sin(x)/x, from its Taylor series near 0.
pub fn spherical_bessel_j0(x: f64) -> f64 {
    if x.is_infinite() {
        return 0.0;
    }
    if x.abs() < 0.5 {
        let q = x * x;
        // 1 - q/3! + q²/5! - ... through q⁸/17! (below 1e-19 at |x| = 0.5)
        let mut term = 1.0;
        let mut sum = 1.0;
        for k in 1..=8 {
            term *= -q / ((2 * k) as f64 * (2 * k + 1) as f64);
            sum += term;
        }
        return sum;
    }
    x.sin() / x
}

/// Ai(x): Maclaurin series on [-7, 1]; for x > 1, (1/π)·sqrt(x/3)·K_⅓(ζ)
/// with ζ = ⅔ x^(3/2); below -7 the oscillating asymptotic expansion. Where
/// the two meet, the series' cancellation and the expansion's smallest term
/// both leave ~1e-10 absolute error (PyTorch's is ~1e-9 there).
pub fn airy_ai(x: f64) -> f64 {
    if !x.is_finite() {
        return f64::NAN; // PyTorch's value at ±inf
    }
    if x > 1.0 {
        let zeta = 2.0 / 3.0 * x * x.sqrt();
        if zeta > 745.0 {
            return 0.0;
        }
        return (x / 3.0).sqrt() / PI * k_scaled(1.0 / 3.0, zeta) * (-zeta).exp();
    }
    if x >= -7.0 {
        // Ai(x) = c1 f(x) - c2 g(x): f = Σ 3^k (⅓)_k x^(3k) / (3k)!,
        // g = Σ 3^k (⅔)_k x^(3k+1) / (3k+1)!, c1 = Ai(0), c2 = -Ai'(0).
        const C1: f64 = 0.355_028_053_887_817_2;
        const C2: f64 = 0.258_819_403_792_806_8;
        let x3 = x * x * x;
        let (mut f, mut g) = (1.0, x);
        let (mut tf, mut tg) = (1.0, x);
        let mut k = 0.0;
        while k < 200.0 {
            // term ratios: x³ / ((3k+2)(3k+3)) and x³ / ((3k+3)(3k+4))
            tf *= x3 / ((3.0 * k + 2.0) * (3.0 * k + 3.0));
            tg *= x3 / ((3.0 * k + 3.0) * (3.0 * k + 4.0));
            f += tf;
            g += tg;
            if tf.abs() < 1e-18 * f.abs().max(1e-300) && tg.abs() < 1e-18 * g.abs().max(1e-300) {
                break;
            }
            k += 1.0;
        }
        return C1 * f - C2 * g;
    }
    // Ai(-z) ~ (π^-½ z^-¼) [sin(ζ + π/4) P(ζ) - cos(ζ + π/4) Q(ζ)], with
    // P = Σ (-1)^k u_2k ζ^-2k, Q = Σ (-1)^k u_(2k+1) ζ^-(2k+1) and
    // u_k = (6k-5)(6k-3)(6k-1) / (216 k (2k-1)) · u_(k-1).
    let z = -x;
    let zeta = 2.0 / 3.0 * z * z.sqrt();
    let (mut p, mut q) = (1.0, 0.0);
    let mut u = 1.0;
    let mut zk = 1.0;
    for k in 1..40 {
        let kf = k as f64;
        u *= (6.0 * kf - 5.0) * (6.0 * kf - 3.0) * (6.0 * kf - 1.0)
            / (216.0 * kf * (2.0 * kf - 1.0));
        zk /= zeta;
        let term = u * zk;
        if term.abs() < 1e-17 {
            break;
        }
        // k = 1, 2, 3, 4 ...: Q gets +u1, P gets -u2, Q -u3, P +u4, ...
        match k % 4 {
            1 => q += term,
            2 => p -= term,
            3 => q -= term,
            _ => p += term,
        }
    }
    let phase = zeta + PI / 4.0;
    (phase.sin() * p - phase.cos() * q) / (PI.sqrt() * z.sqrt().sqrt())
}

/// e^(x²) erfc(x): the product below 8 (relative error ≤ x²·2^-53), Laplace's
/// continued fraction above.
pub fn erfcx(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < 8.0 {
        return (x * x).exp() * libm::erfc(x);
    }
    if x > 1e8 {
        return 1.0 / (PI.sqrt() * x);
    }
    // erfc(x) e^(x²) = (1/√π) / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...))))
    let mut t = x;
    for k in (1..=60).rev() {
        t = x + (k as f64 * 0.5) / t;
    }
    1.0 / (PI.sqrt() * t)
}

/// Regularized lower incomplete gamma P(a, x) (`upper`: Q = 1 - P): the
/// series where x < a + 1, else the continued fraction for Q (Lentz).
pub fn gammainc(a: f64, x: f64, upper: bool) -> f64 {
    let pick = |p: f64, q: f64| if upper { q } else { p };
    // PyTorch's order of the special cases (a NaN a at x = 0 gives P = 0).
    if a < 0.0 || x < 0.0 {
        return f64::NAN;
    }
    if a == 0.0 {
        return if x > 0.0 { pick(1.0, 0.0) } else { f64::NAN };
    }
    if x == 0.0 {
        return pick(0.0, 1.0);
    }
    if a.is_nan() || x.is_nan() {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return pick(1.0, 0.0);
    }
    if a == f64::INFINITY {
        return pick(0.0, 1.0);
    }
    let log_pre = a * x.ln() - x - lgamma(a);
    if x < a + 1.0 {
        // P = x^a e^-x / Γ(a+1) · Σ_n x^n / ((a+1)...(a+n))
        let (mut term, mut sum, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..100_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term < sum * 1e-17 {
                break;
            }
        }
        let p = (log_pre.exp() * sum).min(1.0);
        return pick(p, 1.0 - p);
    }
    // Q = x^a e^-x / Γ(a) · 1 / (x + 1 - a - 1(1-a) / (x + 3 - a - 2(2-a) / ...))
    let tiny = 1e-300;
    let mut b = x + 1.0 - a;
    let mut c = 1.0 / tiny;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..100_000 {
        let an = -(i as f64) * (i as f64 - a);
        b += 2.0;
        d = an * d + b;
        if d.abs() < tiny {
            d = tiny;
        }
        c = b + an / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    let q = (log_pre.exp() * h).min(1.0);
    pick(1.0 - q, q)
}

/// Hurwitz ζ(x, q) with PyTorch's domain: +inf at x = 1 and at the poles
/// q = 0, -1, ...; NaN for x < 1, and for q < 0 unless x is an integer.
pub fn zeta(x: f64, q: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    if x < 1.0 {
        return f64::NAN;
    }
    // (PyTorch's order: a pole of q wins over a NaN x.)
    if q <= 0.0 {
        if q == q.floor() {
            return f64::INFINITY;
        }
        if x != x.floor() {
            return f64::NAN;
        }
    }
    if x.is_nan() || q.is_nan() {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return if q > 1.0 {
            0.0
        } else if q == 1.0 {
            1.0
        } else {
            f64::INFINITY
        };
    }
    hurwitz(x, q)
}

/// The orthogonal polynomials (x, n): n truncates to an integer, and n < 0 gives 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poly {
    ChebyshevT,
    ChebyshevU,
    ChebyshevV,
    ChebyshevW,
    HermiteH,
    HermiteHe,
    LaguerreL,
    LegendreP,
}

/// Above this degree the Chebyshev families on (-1, 1) use their closed
/// trigonometric forms instead of the recurrence.
const TRIG_DEGREE: i64 = 64;

pub fn poly(kind: Poly, x: f64, n: f64) -> f64 {
    if n.is_nan() {
        return f64::NAN;
    }
    let n = n as i64; // truncates (and saturates), as PyTorch's cast
                      // (PyTorch's order: the degree's cases come before a NaN x.)
    if n < 0 {
        return 0.0;
    }
    if n == 0 {
        return 1.0;
    }
    if x.is_nan() {
        return x;
    }
    use Poly::*;
    let chebyshev = matches!(kind, ChebyshevT | ChebyshevU | ChebyshevV | ChebyshevW);
    let odd = n % 2 == 1;
    if chebyshev && x.abs() == 1.0 {
        let nf = n as f64;
        let neg = x < 0.0 && odd;
        return match kind {
            ChebyshevT => {
                if neg {
                    -1.0
                } else {
                    1.0
                }
            }
            ChebyshevU => {
                if neg {
                    -(nf + 1.0)
                } else {
                    nf + 1.0
                }
            }
            ChebyshevV if x > 0.0 => 1.0,
            ChebyshevV => {
                if odd {
                    -(2.0 * nf + 1.0)
                } else {
                    2.0 * nf + 1.0
                }
            }
            ChebyshevW if x > 0.0 => 2.0 * nf + 1.0,
            _ => {
                if odd {
                    -1.0
                } else {
                    1.0
                }
            }
        };
    }
    if chebyshev && n > TRIG_DEGREE && x.abs() < 1.0 {
        let th = x.acos();
        let nf = n as f64;
        return match kind {
            ChebyshevT => (nf * th).cos(),
            ChebyshevU => ((nf + 1.0) * th).sin() / th.sin(),
            ChebyshevV => ((nf + 0.5) * th).cos() / (0.5 * th).cos(),
            _ => ((nf + 0.5) * th).sin() / (0.5 * th).sin(),
        };
    }
    if kind == LegendreP && x.abs() == 1.0 {
        return if x < 0.0 && odd { -1.0 } else { 1.0 };
    }
    if matches!(kind, HermiteH | HermiteHe) && x == 0.0 && odd {
        return 0.0;
    }
    let p1 = match kind {
        ChebyshevT | HermiteHe | LegendreP => x,
        ChebyshevU | HermiteH => 2.0 * x,
        ChebyshevV => 2.0 * x - 1.0,
        ChebyshevW => 2.0 * x + 1.0,
        LaguerreL => 1.0 - x,
    };
    let (mut prev, mut cur) = (1.0, p1);
    for k in 1..n {
        let kf = k as f64;
        let next = match kind {
            ChebyshevT | ChebyshevU | ChebyshevV | ChebyshevW => 2.0 * x * cur - prev,
            HermiteH => 2.0 * x * cur - 2.0 * kf * prev,
            HermiteHe => x * cur - kf * prev,
            LaguerreL => ((2.0 * kf + 1.0 - x) * cur - kf * prev) / (kf + 1.0),
            LegendreP => ((2.0 * kf + 1.0) * x * cur - kf * prev) / (kf + 1.0),
        };
        (prev, cur) = (cur, next);
        if !cur.is_finite() {
            break;
        }
    }
    cur
}

/// The shifted Chebyshev polynomials: the plain ones at 2x - 1.
pub fn shifted(kind: Poly, x: f64, n: f64) -> f64 {
    poly(kind, 2.0 * x - 1.0, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn k_and_airy_reference_values() {
        // reference values from scipy.special
        assert!(close(modified_bessel_k0(1.0), 0.421_024_438_240_708_3, 1e-14));
        assert!(close(modified_bessel_k1(1.0), 0.601_907_230_197_234_6, 1e-14));
        assert!(close(modified_bessel_k0(0.01), 4.721_244_730_161_095, 1e-14));
        assert!(close(scaled_modified_bessel_k0(100.0), 0.125_175_621_659_126_6, 1e-13));
        assert!(close(airy_ai(0.0), 0.355_028_053_887_817_2, 1e-15));
        assert!(close(airy_ai(2.0), 0.034_924_130_423_274_38, 1e-13));
        assert!(close(airy_ai(-2.0), 0.227_407_428_201_685_6, 1e-13));
        assert!(close(airy_ai(-10.0), 0.040_241_238_486_441_96, 1e-11));
        // tiny and huge arguments: the limiting forms, no endless or empty sums
        assert!(close(modified_bessel_k1(1e-300), 1e300, 1e-15));
        assert!(close(scaled_modified_bessel_k0(1e300), (PI / 2e300).sqrt(), 1e-15));
    }

    #[test]
    fn polynomials_against_closed_forms() {
        let x = 0.3;
        assert!(close(poly(Poly::ChebyshevT, x, 3.0), 4.0 * x * x * x - 3.0 * x, 1e-15));
        assert!(close(poly(Poly::HermiteH, x, 2.0), 4.0 * x * x - 2.0, 1e-15));
        assert!(close(poly(Poly::LegendreP, x, 2.0), 1.5 * x * x - 0.5, 1e-15));
        // the trigonometric form agrees with the recurrence
        let (r, t) = (poly(Poly::ChebyshevU, x, 64.0), poly(Poly::ChebyshevU, x, 65.0));
        let s = (66.0 * x.acos()).sin() / x.acos().sin();
        assert!(close(t, s, 1e-12) && (r - (65.0 * x.acos()).sin() / x.acos().sin()).abs() < 1e-12);
        assert_eq!(poly(Poly::ChebyshevV, -1.0, 3.0), -7.0);
        assert_eq!(poly(Poly::HermiteHe, 0.5, -1.0), 0.0);
    }
}
