// Elementwise ops over strided, broadcast operands: unary math, binary
// arithmetic, comparisons, where, casts (copy) and fill. Every operand is a
// view: offset + strides over the output's shape (stride 0 = broadcast).
// Float kernels use T; int32/int64 tensors are i32 and bool/uint8 are u32 on
// the GPU (shaders/README.md).
alias T = f32;

// Bindings: 0 a, 1 b, 2 c (inputs, read), 3 o (output), 4 params. Entry
// points use the subset they need, so unused bindings are not bound.
// Params (Rust twin: backend/gpu/elementwise.rs): n elements, ndim (<= 8), op
// code, flags (ELEM_*), two scalars (bit patterns of the operands' type),
// alpha's bits, the output shape, then offset and strides (elements) of o, a, b, c.
struct Params {
    n: u32, ndim: u32, op: u32, flags: u32,
    s0: u32, s1: u32, alpha: u32, pad: u32,
    shape: array<u32, 8>,
    o_off: u32, a_off: u32, b_off: u32, c_off: u32,
    o_st: array<i32, 8>,
    a_st: array<i32, 8>,
    b_st: array<i32, 8>,
    c_st: array<i32, 8>,
}

@group(0) @binding(4) var<storage, read> p: Params;

fn flat(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

// Element offsets of output element i in (o, a, b, c).
fn offsets(i: u32) -> vec4<u32> {
    if ((p.flags & ELEM_CONTIGUOUS) != 0u) {
        return vec4<u32>(p.o_off + i, p.a_off + i, p.b_off + i, p.c_off + i);
    }
    var rem = i;
    var o = vec4<i32>(i32(p.o_off), i32(p.a_off), i32(p.b_off), i32(p.c_off));
    for (var d = i32(p.ndim) - 1; d >= 0; d--) {
        let size = p.shape[d];
        let c = i32(rem % size);
        rem = rem / size;
        o += c * vec4<i32>(p.o_st[d], p.a_st[d], p.b_st[d], p.c_st[d]);
    }
    return vec4<u32>(o);
}

fn is_nan(x: f32) -> bool {
    // Bit test: drivers may fold x != x away under fast math.
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}
fn is_inf(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u;
}
fn nan() -> f32 {
    return bitcast<f32>(0x7fc00000u);
}

// erfc with relative error < 1.2e-7 (a Chebyshev fit, Numerical Recipes 6.2).
fn erfc_(x: f32) -> f32 {
    let z = abs(x);
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
        + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
    return select(r, 2.0 - r, x < 0.0);
}
fn erf_(x: f32) -> f32 {
    return 1.0 - erfc_(x);
}

// Special functions in float32 (the CPU's float64 versions, with the same
// methods, are in rust/backend/cpu/special.rs).
const PI_: f32 = 3.14159265358979;
fn inf_() -> f32 {
    return bitcast<f32>(0x7f800000u);
}
// ln|Γ(x)|: recurrence up to x ≥ 8, then Stirling's series; reflection below 1/2.
fn lgamma_pos(x: f32) -> f32 {
    var z = x;
    var p = 1.0;
    while (z < 8.0) {
        p = p * z;
        z = z + 1.0;
    }
    let f = 1.0 / (z * z);
    let series = (1.0 / 12.0 - f * (1.0 / 360.0 - f * (1.0 / 1260.0 - f / 1680.0))) / z;
    return (z - 0.5) * log(z) - z + 0.9189385332046727 + series - log(p);
}
fn lgamma_(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    if (is_inf(x) || (x <= 0.0 && floor(x) == x)) { return inf_(); }
    if (x < 0.5) { return log(PI_ / abs(sin_(PI_ * x))) - lgamma_pos(1.0 - x); }
    return lgamma_pos(x);
}
// ψ(x): recurrence up to x ≥ 6, then the asymptotic series; reflection below 0.
fn digamma_(x: f32) -> f32 {
    if (x == 0.0) { return -inf_(); }
    var acc = 0.0;
    var z = x;
    if (x < 0.0) {
        if (floor(x) == x) { return nan(); }
        acc = -PI_ / tan_(PI_ * x);
        z = 1.0 - x;
    }
    while (z < 6.0) {
        acc = acc - 1.0 / z;
        z = z + 1.0;
    }
    let f = 1.0 / (z * z);
    return acc + log(z) - 0.5 / z - f * (1.0 / 12.0 - f * (1.0 / 120.0 - f * (1.0 / 252.0 - f * (1.0 / 240.0))));
}
// Hurwitz ζ(s, q), s > 1: terms until q + k ≥ 10 + s, then Euler–Maclaurin.
fn zeta_(s: f32, q: f32) -> f32 {
    if (q <= 0.0 && floor(q) == q) { return inf_(); }
    var a = q;
    var sum = 0.0;
    while (a < 10.0 + s) {
        sum = sum + pow_(a, -s);
        a = a + 1.0;
    }
    sum = sum + pow(a, 1.0 - s) / (s - 1.0) + 0.5 * pow(a, -s);
    let a2 = a * a;
    var fac = s * pow(a, -s - 1.0);
    sum = sum + fac / 12.0;
    fac = fac * (s + 1.0) * (s + 2.0) / a2;
    sum = sum - fac / 720.0;
    fac = fac * (s + 3.0) * (s + 4.0) / a2;
    sum = sum + fac / 30240.0;
    fac = fac * (s + 5.0) * (s + 6.0) / a2;
    return sum - fac / 1209600.0;
}
// ψ⁽ⁿ⁾(x) = (-1)^(n+1) n! ζ(n + 1, x).
fn polygamma_(n: f32, x: f32) -> f32 {
    if (n == 0.0) { return digamma_(x); }
    var fact = 1.0;
    for (var k = 2.0; k <= n; k = k + 1.0) {
        fact = fact * k;
    }
    let odd = (u32(n) & 1u) == 1u;
    return select(-fact, fact, odd) * zeta_(n + 1.0, x);
}
// erf⁻¹: Winitzki's closed form, then two Halley steps (on erfc near ±1).
fn erfinv_(y: f32) -> f32 {
    let ay = abs(y);
    if (is_nan(y) || ay > 1.0) { return nan(); }
    if (ay == 1.0) { return select(inf_(), -inf_(), y < 0.0); }
    if (y == 0.0) { return y; }
    let w = -log((1.0 - ay) * (1.0 + ay));
    let t = 2.0 / (PI_ * 0.147) - 0.5 * w;
    var x = sqrt(sqrt(t * t + w / 0.147) - t);
    for (var i = 0; i < 2; i = i + 1) {
        let f = select((1.0 - ay) - erfc_(x), erf_(x) - ay, ay < 0.5);
        x = x - f / (1.1283791670955126 * exp(-x * x) + x * f);
    }
    return select(x, -x, y < 0.0);
}
// e^-x I_ν(x) for ν = 0, 1 and x ≥ 0: power series below 15, Hankel's
// asymptotic expansion above.
fn bessel_scaled(nu: f32, x: f32) -> f32 {
    if (x <= 15.0) {
        let q = 0.25 * x * x;
        var term = select(1.0, 0.5 * x, nu == 1.0);
        var sum = term;
        for (var k = 1.0; k < 64.0; k = k + 1.0) {
            term = term * q / (k * (k + nu));
            sum = sum + term;
            if (term < sum * 1e-8) { break; }
        }
        return sum * exp(-x);
    }
    let mu = 4.0 * nu * nu;
    var term = 1.0;
    var sum = 1.0;
    for (var k = 1.0; k < 12.0; k = k + 1.0) {
        let odd = 2.0 * k - 1.0;
        term = -term * (mu - odd * odd) / (k * 8.0 * x);
        sum = sum + term;
    }
    return sum * inverseSqrt(2.0 * PI_ * x);
}
fn bessel_(nu: f32, scaled: bool, x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    let ax = abs(x);
    var r = bessel_scaled(nu, ax);
    if (!scaled) { r = r * exp(ax); }
    return select(r, -r, nu == 1.0 && x < 0.0);
}
// log1p, expm1 and tanh accurate near 0: series there, since drivers' exp
// and log are only accurate in absolute terms around 0 and 1.
fn log1p_(x: f32) -> f32 {
    if (abs(x) < 0.35) {
        // 2 atanh(s), s = x / (2 + x): odd series in s (|s| < 0.22).
        let s = x / (2.0 + x);
        let s2 = s * s;
        return 2.0 * s * (1.0 + s2 * (1.0 / 3.0 + s2 * (0.2 + s2 * (1.0 / 7.0 + s2 * (1.0 / 9.0 + s2 * (1.0 / 11.0))))));
    }
    return log(1.0 + x);
}
// Inverse hyperbolics through log1p_ (no cancellation near 0 and 1); past
// 2^13 the square roots equal their leading term, and ln(2x) is exact.
fn asinh_(x: f32) -> f32 {
    let a = abs(x);
    let m = min(a, 8192.0);
    let r = select(log1p_(m + m * m / (1.0 + sqrt(1.0 + m * m))), log(a) + 0.6931471805599453, a >= 8192.0);
    return select(sign(x) * r, x, is_nan(x) || x == 0.0);
}
fn acosh_(x: f32) -> f32 {
    let t = min(x, 8192.0) - 1.0;
    let r = select(log1p_(t + sqrt(t * (t + 2.0))), log(x) + 0.6931471805599453, x >= 8192.0);
    return select(r, nan(), x < 1.0 || is_nan(x));
}
fn expm1_(x: f32) -> f32 {
    if (abs(x) < 0.35) {
        return x * (1.0 + x * (0.5 + x * (1.0 / 6.0 + x * (1.0 / 24.0 + x * (1.0 / 120.0 + x * (1.0 / 720.0 + x * (1.0 / 5040.0 + x * (1.0 / 40320.0))))))));
    }
    return exp(x) - 1.0;
}
fn tanh_(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    if (abs(x) > 9.0) { return sign(x); }
    let e = expm1_(2.0 * x);
    return e / (e + 2.0);
}
// sin, cos and tan to a few ulp. Drivers' builtins are only accurate in
// absolute terms (Vulkan allows 2^-11 on [-pi, pi]), which loses small
// results. x = k·pi/2 + r with |r| <= pi/4 (Cody-Waite): pi/2 is split into
// four parts, the first three of 8 significant bits, so k·part is exact for
// |k| < 2^16 and r carries pi/2 to ~55 bits. Past |x| = 1e5 (k near 2^16)
// the builtins are used: huge arguments need a wider reduction than f32 has.
const PIO2_1: f32 = 1.5703125;
const PIO2_2: f32 = 0.0004825592041015625;
const PIO2_3: f32 = 1.2665987014770508e-06;
const PIO2_4: f32 = 9.92093629470503e-10;

// (sin r, cos r, k mod 4) for x = k·pi/2 + r.
fn sincos_reduced(x: f32) -> vec3<f32> {
    let k = round(x * 0.6366197723675814);
    // k = 0 keeps x itself: tiny arguments and the sign of -0 stay exact.
    let r = select((((x - k * PIO2_1) - k * PIO2_2) - k * PIO2_3) - k * PIO2_4, x, k == 0.0);
    let r2 = r * r;
    // Taylor polynomials; the first terms left out are below 2^-26 for |r| <= pi/4.
    let s = r + r * r2 * (-1.0 / 6.0 + r2 * (1.0 / 120.0 + r2 * (-1.0 / 5040.0 + r2 * (1.0 / 362880.0))));
    let c = 1.0 - 0.5 * r2 + r2 * r2 * (1.0 / 24.0 + r2 * (-1.0 / 720.0 + r2 * (1.0 / 40320.0 + r2 * (-1.0 / 3628800.0))));
    return vec3<f32>(s, c, f32(i32(k) & 3));
}
fn sin_(x: f32) -> f32 {
    if (abs(x) > 1e5) { return sin(x); }
    let v = sincos_reduced(x);
    // sin(r + q·pi/2) for quadrant q: s, c, -s, -c.
    let t = select(v.x, v.y, v.z == 1.0 || v.z == 3.0);
    return select(t, -t, v.z >= 2.0);
}
fn cos_(x: f32) -> f32 {
    if (abs(x) > 1e5) { return cos(x); }
    let v = sincos_reduced(x);
    // cos(r + q·pi/2): c, -s, -c, s.
    let t = select(v.y, v.x, v.z == 1.0 || v.z == 3.0);
    return select(t, -t, v.z == 1.0 || v.z == 2.0);
}
fn tan_(x: f32) -> f32 {
    if (abs(x) > 1e5) { return tan(x); }
    let v = sincos_reduced(x);
    // tan(r + q·pi/2): s / c for even q, -c / s for odd q.
    return select(v.x / v.y, -v.y / v.x, v.z == 1.0 || v.z == 3.0);
}
fn sigmoid(x: f32) -> f32 {
    return 1.0 / (1.0 + exp(-x));
}
fn softplus(x: f32, beta: f32, threshold: f32) -> f32 {
    if (x * beta > threshold) { return x; }
    return log1p_(exp(x * beta)) / beta;
}
fn sign_(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    return select(select(0.0, 1.0, x > 0.0), -1.0, x < 0.0);
}

// Unary float ops; the UNARY_* codes come from the table in rust/ops/elementwise/unary.rs.
fn unary_op(op: u32, x: f32, s0: f32, s1: f32) -> f32 {
    switch op {
        case UNARY_NEG: { return -x; }
        case UNARY_ABS: { return abs(x); }
        case UNARY_SIGN: { return sign_(x); }
        case UNARY_SQUARE: { return x * x; }
        // relu: NaN stays NaN, tested by bits since drivers may turn the select into
        // a max (which returns 0 for NaN).
        case UNARY_RELU: { return select(select(x, 0.0, x < 0.0), x, is_nan(x)); }
        case UNARY_FLOOR: { return floor(x); }
        case UNARY_CEIL: { return ceil(x); }
        case UNARY_ROUND: { return round(x); }                                 // ties to even
        case UNARY_TRUNC: { return trunc(x); }
        case UNARY_EXP: { return exp(x); }
        case UNARY_EXP2: { return exp2(x); }
        case UNARY_LOG: { return log(x); }
        case UNARY_LOG2: { return log2(x); }
        case UNARY_LOG10: { return log(x) * 0.4342944819032518; }
        case UNARY_LOG1P: { return log1p_(x); }
        case UNARY_EXPM1: { return expm1_(x); }
        case UNARY_SQRT: { return sqrt(x); }
        case UNARY_RSQRT: { return inverseSqrt(x); }
        case UNARY_RECIPROCAL: { return 1.0 / x; }
        case UNARY_SIN: { return sin_(x); }
        case UNARY_COS: { return cos_(x); }
        case UNARY_TAN: { return tan_(x); }
        // Through atan2: some drivers' asin/acos are off by 1e-4.
        case UNARY_ASIN: { return atan2(x, sqrt(max(1.0 - x * x, 0.0))) + select(0.0, nan(), abs(x) > 1.0 || is_nan(x)); }
        case UNARY_ACOS: { return atan2(sqrt(max(1.0 - x * x, 0.0)), x) + select(0.0, nan(), abs(x) > 1.0 || is_nan(x)); }
        case UNARY_ATAN: { return atan(x); }
        case UNARY_SINH: { return sinh(x); }
        case UNARY_COSH: { return cosh(x); }
        case UNARY_TANH: { return tanh_(x); }
        case UNARY_ASINH: { return asinh_(x); }
        case UNARY_ACOSH: { return acosh_(x); }
        // 1 - |x| is exact near 1; ±1 give ±inf, |x| > 1 NaN (log1p of < -1).
        case UNARY_ATANH: { let a = abs(x); return sign(x) * 0.5 * log1p_(2.0 * a / (1.0 - a)); }
        case UNARY_SIGMOID: { return sigmoid(x); }
        case UNARY_ERF: { return erf_(x); }
        case UNARY_ERFC: { return erfc_(x); }
        case UNARY_ERFINV: { return erfinv_(x); }
        case UNARY_LGAMMA: { return lgamma_(x); }
        case UNARY_DIGAMMA: { return digamma_(x); }
        case UNARY_POLYGAMMA: { return polygamma_(s0, x); }                  // polygamma(n)
        case UNARY_I0: { return bessel_(0.0, false, x); }
        case UNARY_I0E: { return bessel_(0.0, true, x); }
        case UNARY_I1: { return bessel_(1.0, false, x); }
        case UNARY_I1E: { return bessel_(1.0, true, x); }
        case UNARY_GELU: { return 0.5 * x * (1.0 + erf_(x * 0.7071067811865476)); }
        case UNARY_GELU_TANH: { return 0.5 * x * (1.0 + tanh_(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
        case UNARY_SILU: { return x * sigmoid(x); }
        case UNARY_MISH: { return x * tanh_(softplus(x, 1.0, 20.0)); }
        case UNARY_LEAKY_RELU: { return select(x, x * s0, x < 0.0); }               // leaky_relu(slope)
        case UNARY_ELU: { return select(x, s0 * expm1_(x), x <= 0.0); }      // elu(alpha)
        case UNARY_SOFTPLUS: { return softplus(x, s0, s1); }
        case UNARY_HARDSIGMOID: { return select(select((x + 3.0) / 6.0, 1.0, x >= 3.0), 0.0, x <= -3.0); }
        case UNARY_HARDSWISH: { return select(select(x * (x + 3.0) / 6.0, x, x >= 3.0), 0.0, x <= -3.0); }
        case UNARY_SMOOTH_L1: { let z = abs(x); return select(z - 0.5 * s0, 0.5 * z * z / s0, z < s0); }  // smooth_l1(beta)
        case UNARY_HUBER: { let z = abs(x); return select(s0 * (z - 0.5 * s0), 0.5 * z * z, z < s0); }     // huber(delta)
        default: { return nan(); }
    }
}

fn pow_(x: f32, y: f32) -> f32 {
    if (y == 0.0 || x == 1.0) { return 1.0; }
    if (x == -1.0 && is_inf(y)) { return 1.0; }
    if (is_nan(x) || is_nan(y)) { return nan(); }
    if (y == 1.0) { return x; }
    if (y == 2.0) { return x * x; }
    let ax = abs(x);
    if (ax == 0.0) { return select(0.0, bitcast<f32>(0x7f800000u), y < 0.0); }
    let r = exp2(y * log2(ax));
    if (x > 0.0) { return r; }
    // Negative base: defined for integral exponents only, odd ones flip the sign.
    if (trunc(y) != y) { return nan(); }
    let odd = abs(y) < 16777216.0 && (i32(abs(y)) & 1) == 1;
    return select(r, -r, odd);
}
// WGSL leaves atan2 of two zeros or two infinities to the driver (lavapipe
// gives 3π/4 for (0, 0)): those take C's values, with the signs of y and x.
fn atan2_(y: f32, x: f32) -> f32 {
    let x_neg = (bitcast<u32>(x) & 0x80000000u) != 0u;
    let y_sign = select(1.0, -1.0, (bitcast<u32>(y) & 0x80000000u) != 0u);
    if (y == 0.0 && x == 0.0) {
        return select(y, y_sign * 3.14159265358979, x_neg);
    }
    if (is_inf(y) && is_inf(x)) {
        return y_sign * select(0.785398163397448, 2.35619449019234, x_neg);
    }
    return atan2(y, x);
}
// sqrt(x² + y²) scaled by the larger magnitude: no overflow for large inputs.
fn hypot_(x: f32, y: f32) -> f32 {
    let ax = abs(x);
    let ay = abs(y);
    if (is_inf(ax) || is_inf(ay)) { return bitcast<f32>(0x7f800000u); }
    if (is_nan(x) || is_nan(y)) { return nan(); }
    let m = max(ax, ay);
    if (m == 0.0) { return 0.0; }
    let u = ax / m;
    let v = ay / m;
    return m * sqrt(u * u + v * v);
}
// log(e^x + e^y) (base2: log2(2^x + 2^y)) as max + log1p(e^-|x - y|).
fn log_add_exp(x: f32, y: f32, base2: bool) -> f32 {
    if (is_nan(x) || is_nan(y)) { return nan(); }
    if (is_inf(x) && x == y) { return x; }
    let m = max(x, y);
    let d = -abs(x - y);
    if (base2) { return m + log1p_(exp2(d)) * 1.4426950408889634; }
    return m + log1p_(exp(d));
}

// Binary float ops (BINARY_* from rust/ops/elementwise/binary.rs); `alpha` scales b for add/sub.
fn binary_op(op: u32, a: f32, b: f32, alpha: f32) -> f32 {
    switch op {
        case BINARY_ADD: { return a + alpha * b; }
        case BINARY_SUB: { return a - alpha * b; }
        case BINARY_MUL: { return a * b; }
        case BINARY_DIV: { return a / b; }
        case BINARY_DIV_TRUNC: { return trunc(a / b); }
        case BINARY_FLOOR_DIV: { return floor(a / b); }
        case BINARY_REM: {                                                    // remainder: sign of b
            let r = a - b * trunc(a / b);
            return select(r, r + b, r != 0.0 && ((r < 0.0) != (b < 0.0)));
        }
        case BINARY_FMOD: { return a - b * trunc(a / b); }                     // fmod: sign of a
        case BINARY_POW: { return pow_(a, b); }
        case BINARY_MAXIMUM: { if (is_nan(a) || is_nan(b)) { return nan(); } return max(a, b); }
        case BINARY_MINIMUM: { if (is_nan(a) || is_nan(b)) { return nan(); } return min(a, b); }
        case BINARY_ATAN2: { return atan2_(a, b); }
        case BINARY_HYPOT: { return hypot_(a, b); }
        case BINARY_LOG_ADD_EXP: { return log_add_exp(a, b, false); }
        case BINARY_LOG_ADD_EXP2: { return log_add_exp(a, b, true); }
        case BINARY_XLOGY: {                                   // xlogy(0, y) = 0 unless y is NaN
            if (is_nan(b)) { return b; }
            if (a == 0.0) { return 0.0; }
            return a * log(b);
        }
        default: { return nan(); }
    }
}

// Comparison / logical op codes. NaN is tested explicitly: WGSL lets
// implementations assume there are none.
fn compare_f(op: u32, a: f32, b: f32) -> bool {
    let nan_in = is_nan(a) || is_nan(b);
    switch op {
        case BINARY_EQ: { return !nan_in && a == b; }
        case BINARY_NE: { return nan_in || a != b; }
        case BINARY_LT: { return !nan_in && a < b; }
        case BINARY_LE: { return !nan_in && a <= b; }
        case BINARY_GT: { return !nan_in && a > b; }
        case BINARY_GE: { return !nan_in && a >= b; }
        case BINARY_LOGICAL_AND: { return truthy(a) && truthy(b); }
        case BINARY_LOGICAL_OR: { return truthy(a) || truthy(b); }
        default: { return truthy(a) != truthy(b); }
    }
}
fn truthy(x: f32) -> bool {
    return x != 0.0 || is_nan(x);
}
fn compare_i(op: u32, a: i32, b: i32) -> bool {
    switch op {
        case BINARY_EQ: { return a == b; }
        case BINARY_NE: { return a != b; }
        case BINARY_LT: { return a < b; }
        case BINARY_LE: { return a <= b; }
        case BINARY_GT: { return a > b; }
        case BINARY_GE: { return a >= b; }
        case BINARY_LOGICAL_AND: { return a != 0 && b != 0; }
        case BINARY_LOGICAL_OR: { return a != 0 || b != 0; }
        default: { return (a != 0) != (b != 0); }
    }
}

@group(0) @binding(0) var<storage, read> fa: array<T>;
@group(0) @binding(1) var<storage, read> fb: array<T>;
@group(0) @binding(3) var<storage, read_write> fo: array<T>;

fn fa_at(off: u32) -> f32 {
    if ((p.flags & ELEM_A_SCALAR) != 0u) { return bitcast<f32>(p.s0); }
    return f32(fa[off]);
}
fn fb_at(off: u32) -> f32 {
    if ((p.flags & ELEM_B_SCALAR) != 0u) { return bitcast<f32>(p.s1); }
    return f32(fb[off]);
}

// o = op(a) on floats; s0, s1 carry op arguments (f32 bits).
@compute @workgroup_size(256)
fn unary(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= p.n) { return; }
    let off = offsets(i);
    fo[off.x] = T(unary_op(p.op, f32(fa[off.y]), bitcast<f32>(p.s0), bitcast<f32>(p.s1)));
}

// o = a op b on floats; a or b may be a scalar (flags); alpha holds its f32 bits.
@compute @workgroup_size(256)
fn binary(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= p.n) { return; }
    let off = offsets(i);
    fo[off.x] = T(binary_op(p.op, fa_at(off.y), fb_at(off.z), bitcast<f32>(p.alpha)));
}

@group(0) @binding(3) var<storage, read_write> bo: array<u32>;

// bool o = a op b (comparisons, logical ops) on floats.
@compute @workgroup_size(256)
fn compare(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= p.n) { return; }
    let off = offsets(i);
    bo[off.x] = u32(compare_f(p.op, fa_at(off.y), fb_at(off.z)));
}

// bool o = op(a) on floats: isnan, isinf, isfinite, else logical_not.
@compute @workgroup_size(256)
fn classify(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= p.n) { return; }
    let off = offsets(i);
    let x = f32(fa[off.y]);
    var r: bool;
    switch p.op {
        case UNARY_IS_NAN: { r = is_nan(x); }
        case UNARY_IS_INF: { r = is_inf(x); }
        case UNARY_IS_FINITE: { r = !is_nan(x) && !is_inf(x); }
        default: { r = !truthy(x); }
    }
    bo[off.x] = u32(r);
}

@group(0) @binding(0) var<storage, read> ia: array<i32>;
@group(0) @binding(1) var<storage, read> ib: array<i32>;
@group(0) @binding(3) var<storage, read_write> io: array<i32>;

fn ia_at(off: u32) -> i32 {
    if ((p.flags & ELEM_A_SCALAR) != 0u) { return bitcast<i32>(p.s0); }
    return ia[off];
}
fn ib_at(off: u32) -> i32 {
    if ((p.flags & ELEM_B_SCALAR) != 0u) { return bitcast<i32>(p.s1); }
    return ib[off];
}

// Integer division on magnitudes as u32, with the signs fixed up after:
// drivers and shader translators disagree on `/` and `%` with negative
// operands (some compute `%` unsigned). Returns (trunc quotient, fmod
// remainder), both wrapping like PyTorch for i32::MIN / -1; b = 0 gives 0s.
fn divmod_i(a: i32, b: i32) -> vec2<i32> {
    if (b == 0) { return vec2<i32>(0, 0); }
    let ua = select(bitcast<u32>(a), 0u - bitcast<u32>(a), a < 0);
    let ub = select(bitcast<u32>(b), 0u - bitcast<u32>(b), b < 0);
    let q = ua / ub;
    let r = ua - q * ub;
    return vec2<i32>(bitcast<i32>(select(q, 0u - q, (a < 0) != (b < 0))), bitcast<i32>(select(r, 0u - r, a < 0)));
}
// (floor quotient, remainder with the sign of b).
fn floor_divmod_i(a: i32, b: i32) -> vec2<i32> {
    let t = divmod_i(a, b);
    let adjust = t.y != 0 && ((t.y < 0) != (b < 0));
    return select(t, vec2<i32>(t.x - 1, t.y + b), adjust);
}
fn pow_i(a: i32, e: i32) -> i32 {
    var r = 1;
    var base = a;
    var k = e;
    loop {
        if (k <= 0) { break; }
        if ((k & 1) == 1) { r *= base; }
        base *= base;
        k = k >> 1u;
    }
    return r;
}

// Integer unary ops: the codes that keep ints (neg, abs, sign, square, relu;
// the rounding ops are the identity) and bitwise_not.
@compute @workgroup_size(256)
fn unary_i32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= p.n) { return; }
    let off = offsets(i);
    let x = ia[off.y];
    var r = x;
    switch p.op {
        case UNARY_NEG: { r = -x; }
        case UNARY_ABS: { r = abs(x); }
        case UNARY_SIGN: { r = sign(x); }
        case UNARY_SQUARE: { r = x * x; }
        case UNARY_RELU: { r = max(x, 0); }
        case UNARY_BITWISE_NOT: { r = ~x; }
        default: {}
    }
    io[off.x] = r;
}

// Integer binary ops (the codes of `binary`, and bitwise and/or/xor).
// Division by zero gives 0 (the CPU raises before dispatching).
@compute @workgroup_size(256)
fn binary_i32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= p.n) { return; }
    let off = offsets(i);
    let a = ia_at(off.y);
    let b = ib_at(off.z);
    let alpha = bitcast<i32>(p.alpha);
    var r = 0;
    switch p.op {
        case BINARY_ADD: { r = a + alpha * b; }
        case BINARY_SUB: { r = a - alpha * b; }
        case BINARY_MUL: { r = a * b; }
        case BINARY_DIV_TRUNC: { r = divmod_i(a, b).x; }
        case BINARY_FLOOR_DIV: { r = floor_divmod_i(a, b).x; }
        case BINARY_REM: { r = floor_divmod_i(a, b).y; }
        case BINARY_FMOD: { r = divmod_i(a, b).y; }
        case BINARY_POW: { r = pow_i(a, b); }
        case BINARY_MAXIMUM: { r = max(a, b); }
        case BINARY_MINIMUM: { r = min(a, b); }
        case BINARY_BIT_AND: { r = a & b; }
        case BINARY_BIT_OR: { r = a | b; }
        case BINARY_BIT_XOR: { r = a ^ b; }
        default: {}
    }
    io[off.x] = r;
}

@compute @workgroup_size(256)
fn compare_i32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= p.n) { return; }
    let off = offsets(i);
    bo[off.x] = u32(compare_i(p.op, ia_at(off.y), ib_at(off.z)));
}

// Casts and strided copies between the element kinds (KIND_*: float32, int32,
// bool, uint8 words; rust/backend/gpu/dtype.rs).
@group(0) @binding(0) var<storage, read> wa: array<u32>;
@group(0) @binding(3) var<storage, read_write> wo: array<u32>;

// o (kind = op >> 4) = a (kind = op & 15), with PyTorch's conversions. Same
// kinds copy the bits (NaN payloads survive). f32 words only (no f16 here).
@compute @workgroup_size(256)
fn copy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= p.n) { return; }
    let off = offsets(i);
    let w = wa[off.y];
    let src = p.op & 15u;
    let to = p.op >> 4u;
    var r = w;
    if (src != to) {
        if (to == KIND_F32) {
            r = bitcast<u32>(select(f32(w), f32(bitcast<i32>(w)), src == KIND_I32));
        } else if (to == KIND_BOOL) {
            r = u32(select(w != 0u, truthy(bitcast<f32>(w)), src == KIND_F32));
        } else {
            var v = select(bitcast<i32>(w), i32(trunc(bitcast<f32>(w))), src == KIND_F32);
            r = select(bitcast<u32>(v), bitcast<u32>(v) & 255u, to == KIND_U8);
        }
    }
    wo[off.x] = r;
}

// o = s0 (the value's bit pattern in o's type).
@compute @workgroup_size(256)
fn fill(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= p.n) { return; }
    wo[offsets(i).x] = p.s0;
}

// float16 tensors (T = f16 in that variant): strided copies, casts from and
// to the word kinds above (op = the other side's kind), fill and where.
@compute @workgroup_size(256)
fn copy_t(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= p.n) { return; }
    let off = offsets(i);
    fo[off.x] = fa[off.y];
}

@compute @workgroup_size(256)
fn cast_to_t(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= p.n) { return; }
    let off = offsets(i);
    let w = wa[off.y];
    var v: f32;
    switch p.op {
        case KIND_F32: { v = bitcast<f32>(w); }
        case KIND_I32: { v = f32(bitcast<i32>(w)); }
        default: { v = f32(w); }
    }
    fo[off.x] = T(v);
}

@compute @workgroup_size(256)
fn cast_from_t(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= p.n) { return; }
    let off = offsets(i);
    let x = f32(fa[off.y]);
    var r: u32;
    switch p.op {
        case KIND_F32: { r = bitcast<u32>(x); }
        case KIND_BOOL: { r = u32(truthy(x)); }
        default: {
            let v = bitcast<u32>(i32(trunc(x)));
            r = select(v, v & 255u, p.op == KIND_U8);
        }
    }
    wo[off.x] = r;
}

// o = s0 (float32 bits).
@compute @workgroup_size(256)
fn fill_t(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= p.n) { return; }
    fo[offsets(i).x] = T(bitcast<f32>(p.s0));
}

@group(0) @binding(2) var<storage, read> wc: array<u32>;

// o = c ? a : b on T; a or b may be scalars (float32 bits).
@compute @workgroup_size(256)
fn where_t(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= p.n) { return; }
    let off = offsets(i);
    fo[off.x] = T(select(fb_at(off.z), fa_at(off.y), wc[off.w] != 0u));
}

// o = c ? a : b for any 4-byte element type (words); a or b may be scalars.
@compute @workgroup_size(256)
fn where_(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= p.n) { return; }
    let off = offsets(i);
    var v: u32;
    if (wc[off.w] != 0u) {
        v = select(wa[off.y], p.s0, (p.flags & ELEM_A_SCALAR) != 0u);
    } else {
        v = select(wb[off.z], p.s1, (p.flags & ELEM_B_SCALAR) != 0u);
    }
    wo[off.x] = v;
}

@group(0) @binding(1) var<storage, read> wb: array<u32>;
