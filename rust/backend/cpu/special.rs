//! Special functions for the CPU kernels (lgamma, digamma, polygamma, erfc,
//! erfinv, modified Bessel functions), in float64; float32 rounds the float64
//! result. libm has lgamma and erfc; the others are written here from their
//! series and asymptotic expansions.

use std::f64::consts::{FRAC_2_SQRT_PI, PI};

pub fn lgamma(x: f64) -> f64 {
    libm::lgamma(x)
}

pub fn erfc(x: f64) -> f64 {
    libm::erfc(x)
}

/// ψ(x): recurrence up to x ≥ 10, then the asymptotic series; reflection
/// below zero. ψ(0) = -inf and ψ(negative integer) = nan, as PyTorch.
pub fn digamma(x: f64) -> f64 {
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x < 0.0 {
        if x == x.floor() {
            return f64::NAN;
        }
        return digamma(1.0 - x) - PI / (PI * x).tan();
    }
    let (mut x, mut acc) = (x, 0.0);
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    // ln x - 1/2x - Σ B_2k / (2k x^2k), through B_14.
    let f = 1.0 / (x * x);
    let series = f
        * (1.0 / 12.0
            - f * (1.0 / 120.0
                - f * (1.0 / 252.0
                    - f * (1.0 / 240.0
                        - f * (1.0 / 132.0 - f * (691.0 / 32760.0 - f * (1.0 / 12.0)))))));
    acc + x.ln() - 0.5 / x - series
}

/// B_2j / (2j)! for j = 1..7: the Euler–Maclaurin coefficients of `zeta`.
const EM: [f64; 7] = [
    1.0 / 12.0,
    -1.0 / 720.0,
    1.0 / 30_240.0,
    -1.0 / 1_209_600.0,
    1.0 / 47_900_160.0,
    -691.0 / 1_307_674_368_000.0,
    1.0 / 74_724_249_600.0,
];

/// Hurwitz ζ(s, q) = Σ_k (q + k)^-s for s > 1: the first terms summed until
/// q + k ≥ 10 + s, the tail by Euler–Maclaurin. Poles at q = 0, -1, -2, ...
pub fn zeta(s: f64, q: f64) -> f64 {
    if q <= 0.0 && q == q.floor() {
        return f64::INFINITY;
    }
    let (mut a, mut sum) = (q, 0.0);
    while a < 10.0 + s {
        let term = a.powf(-s);
        sum += term;
        // With q > 0 (positive, shrinking terms), a large s makes them vanish
        // long before a reaches 10 + s (and the tail, below a/(s-1) of the
        // last term, with them).
        if q > 0.0 && s > 2.0 && term <= sum * 1e-18 {
            return sum;
        }
        a += 1.0;
    }
    sum += a.powf(1.0 - s) / (s - 1.0) + 0.5 * a.powf(-s);
    // The j-th term: EM[j] · s (s+1) ... (s+2j-2) · a^(-s-2j+1).
    let mut fac = s * a.powf(-s - 1.0);
    for (j, c) in EM.iter().enumerate() {
        sum += c * fac;
        let k = 2.0 * j as f64;
        fac *= (s + k + 1.0) * (s + k + 2.0) / (a * a);
    }
    sum
}

/// ψ⁽ⁿ⁾(x) = (-1)^(n+1) n! ζ(n + 1, x) for n ≥ 1.
pub fn polygamma(n: i64, x: f64) -> f64 {
    if n == 0 {
        return digamma(x);
    }
    let fact: f64 = (1..=n).map(|k| k as f64).product();
    let sign = if n % 2 == 1 { 1.0 } else { -1.0 };
    sign * fact * zeta(n as f64 + 1.0, x)
}

/// erf⁻¹: Winitzki's closed form (relative error ~2e-3), then three Halley
/// steps on erf (erfc near ±1, where 1 - |y| carries the precision).
pub fn erfinv(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return y * f64::INFINITY;
    }
    if y == 0.0 {
        return y;
    }
    let (s, y) = (y.signum(), y.abs());
    let a = 0.147;
    let w = -((1.0 - y) * (1.0 + y)).ln();
    let t = 2.0 / (PI * a) - 0.5 * w;
    let mut x = ((t * t + w / a).sqrt() - t).sqrt();
    for _ in 0..3 {
        // f = erf(x) - y, written through erfc when y is near 1.
        let f = if y < 0.5 { libm::erf(x) - y } else { (1.0 - y) - libm::erfc(x) };
        let d = FRAC_2_SQRT_PI * (-x * x).exp();
        x -= f / (d + x * f);
    }
    s * x
}

/// e^-|x| I_ν(|x|) for ν = 0, 1 and x ≥ 0: the power series (positive terms,
/// no cancellation) below 30, Hankel's asymptotic expansion above.
fn bessel_scaled(nu: u32, x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x <= 30.0 {
        let q = 0.25 * x * x;
        let mut term = if nu == 0 { 1.0 } else { 0.5 * x };
        let mut sum = term;
        let mut k = 1.0;
        while term > sum * 1e-17 {
            term *= q / (k * (k + nu as f64));
            sum += term;
            k += 1.0;
        }
        return sum * (-x).exp();
    }
    // Σ_k (-1)^k Π_{j≤k} (4ν² - (2j-1)²) / (k! (8x)^k), over sqrt(2πx).
    let mu = 4.0 * (nu * nu) as f64;
    let (mut term, mut sum) = (1.0, 1.0);
    for k in 1..40 {
        let odd = (2 * k - 1) as f64;
        term *= -(mu - odd * odd) / (k as f64 * 8.0 * x);
        sum += term;
        if term.abs() < 1e-17 * sum.abs() {
            break;
        }
    }
    sum / (2.0 * PI * x).sqrt()
}

pub fn i0(x: f64) -> f64 {
    let a = x.abs();
    bessel_scaled(0, a) * a.exp()
}

pub fn i0e(x: f64) -> f64 {
    bessel_scaled(0, x.abs())
}

pub fn i1(x: f64) -> f64 {
    let a = x.abs();
    (bessel_scaled(1, a) * a.exp()).copysign(x)
}

pub fn i1e(x: f64) -> f64 {
    bessel_scaled(1, x.abs()).copysign(x)
}

/// d x / d α for x ~ Γ(α, 1) by implicit differentiation of the CDF P(α, x):
/// -(∂P/∂α) / p(x). With P = Σ_k t_k, t_k = x^(α+k) e^-x / Γ(α+k+1), the
/// derivative is Σ_k t_k (ln x - ψ(α+k+1)). Above α = 500, where that series
/// grows long, the Wilson–Hilferty cube-root normal form gives it in closed form.
pub fn standard_gamma_grad(alpha: f64, x: f64) -> f64 {
    if alpha.is_nan() || alpha <= 0.0 || x.is_nan() {
        return f64::NAN;
    }
    if x <= 0.0 {
        return 0.0;
    }
    if alpha > 500.0 {
        // x = α (1 - 1/(9α) + z / (3√α))³ with z held fixed.
        let s = alpha.sqrt();
        let u = (x / alpha).cbrt();
        let z = (u - 1.0 + 1.0 / (9.0 * alpha)) * 3.0 * s;
        let du = 1.0 / (9.0 * alpha * alpha) - z / (6.0 * alpha * s);
        return u * u * u + 3.0 * alpha * u * u * du;
    }
    let lx = x.ln();
    let mut t = (alpha * lx - x - lgamma(alpha + 1.0)).exp();
    let mut psi = digamma(alpha + 1.0);
    let (mut dp, mut p) = (0.0, 0.0);
    let mut k = 0.0;
    loop {
        dp += t * (lx - psi);
        p += t;
        // t_k+1 = t_k x / (α+k+1); ψ(α+k+2) = ψ(α+k+1) + 1/(α+k+1).
        let z = alpha + k + 1.0;
        t *= x / z;
        psi += 1.0 / z;
        k += 1.0;
        if (k > x && t < 1e-17 * p) || k > 100_000.0 {
            break;
        }
    }
    let density = ((alpha - 1.0) * lx - x - lgamma(alpha)).exp();
    -dp / density
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rtol: f64) {
        assert!((a - b).abs() <= rtol * b.abs().max(1e-300), "{a} vs {b}");
    }

    #[test]
    fn known_values() {
        // ψ(1) = -γ, ψ(1/2) = -γ - 2 ln 2, ψ'(1) = π²/6, ψ''(1) = -2 ζ(3).
        let gamma = 0.577_215_664_901_532_9;
        close(digamma(1.0), -gamma, 1e-14);
        close(digamma(0.5), -gamma - 2.0 * std::f64::consts::LN_2, 1e-14);
        close(digamma(-0.5), 0.036_489_973_978_576_5, 1e-12);
        close(polygamma(1, 1.0), PI * PI / 6.0, 1e-14);
        close(polygamma(2, 1.0), -2.0 * 1.202_056_903_159_594_3, 1e-13);
        close(polygamma(3, 2.5), 0.223_905_848_817_252_1, 1e-12);
        // erf(erfinv(y)) = y, including near ±1.
        for y in [-0.999_999, -0.7, -1e-8, 0.3, 0.5, 0.9, 0.999_999_999] {
            close(libm::erf(erfinv(y)), y, 1e-14);
        }
        // I0(1), I1(1), I0(50) e^-50 and I1(40) e^-40.
        close(i0(1.0), 1.266_065_877_752_008_4, 1e-15);
        close(i1(-1.0), -0.565_159_103_992_485_1, 1e-15);
        close(i0e(50.0), 0.056_561_626_647_454_18, 1e-13);
        close(i1e(40.0), 0.062_482_229_074_442_06, 1e-13);
    }

    /// d x / d α against a central difference of the inverse CDF, through the series
    /// and (above α = 500) the closed form.
    #[test]
    fn gamma_reparameterization() {
        // P(α, x) by its series, and x(α) at a fixed P by bisection.
        let cdf = |a: f64, x: f64| {
            let (mut t, mut p, mut k) = ((a * x.ln() - x - lgamma(a + 1.0)).exp(), 0.0, 0.0);
            while k < x + 200.0 {
                p += t;
                k += 1.0;
                t *= x / (a + k);
            }
            p
        };
        let quantile = |a: f64, u: f64| {
            let (mut lo, mut hi) = (0.0, a + 40.0 * a.sqrt() + 40.0);
            for _ in 0..200 {
                let mid = 0.5 * (lo + hi);
                if cdf(a, mid) < u {
                    lo = mid
                } else {
                    hi = mid
                }
            }
            0.5 * (lo + hi)
        };
        for (a, u) in [(0.3, 0.4), (1.0, 0.7), (2.5, 0.1), (40.0, 0.9)] {
            let h = 1e-5 * a;
            let fd = (quantile(a + h, u) - quantile(a - h, u)) / (2.0 * h);
            close(standard_gamma_grad(a, quantile(a, u)), fd, 1e-5);
        }
        let (a, x): (f64, f64) = (900.0, 930.0);
        let u = (x / a).cbrt();
        let h = 1e-3;
        let z = (u - 1.0 + 1.0 / (9.0 * a)) * 3.0 * a.sqrt();
        let at = |a: f64| a * (1.0 - 1.0 / (9.0 * a) + z / (3.0 * a.sqrt())).powi(3);
        close(standard_gamma_grad(a, x), (at(a + h) - at(a - h)) / (2.0 * h), 1e-6);
    }
}
