//! CPU loops of the unary ops (ops/elementwise/unary.rs): float math with
//! SIMD fast paths for contiguous float32, integer forms, bool results.

use super::elementwise::{map1, Arith};
use super::{special, vmath, P};
use crate::bail;
use crate::error::Result;
use crate::ops::elementwise::Unary;
use crate::tensor::{DType, Element, Tensor};
use crate::{dispatch_compute, dispatch_float};

fn run_unary<T: FloatMath>(op: Unary, out: &Tensor, a: &Tensor) -> Result<()> {
    use Unary::*;
    if T::DTYPE == DType::F32 && out.is_contiguous() && a.is_contiguous() {
        let (po, pa, n) = (P(out.ptr::<f32>()?), P(a.ptr::<f32>()?), a.numel());
        macro_rules! simd {
            ($f:expr) => {{
                // SAFETY: both tensors are contiguous float32 with n elements.
                unsafe { vmath::map(po, pa, n, $f) };
                return Ok(());
            }};
        }
        match op {
            Exp => simd!(vmath::exp),
            Log => simd!(vmath::ln),
            Tanh => simd!(vmath::tanh),
            Sigmoid => simd!(vmath::sigmoid),
            Silu => simd!(
                #[inline(always)]
                |x: f32| x * vmath::sigmoid(x)
            ),
            Sin | Cos | Tan => {
                use vmath::Trig;
                let f = match op {
                    Sin => Trig::Sin,
                    Cos => Trig::Cos,
                    _ => Trig::Tan,
                };
                // SAFETY: both tensors are contiguous float32 with n elements.
                unsafe { vmath::trig(po, pa, n, f) };
                return Ok(());
            }
            Erf => simd!(vmath::erf),
            Exp2 => simd!(vmath::exp2),
            Log2 => simd!(vmath::log2),
            Log10 => simd!(vmath::log10),
            Atan => simd!(vmath::atan),
            Asin => simd!(vmath::asin),
            Acos => simd!(vmath::acos),
            Asinh => simd!(
                #[inline(always)]
                |x: f32| vmath::asinh(x)
            ),
            Acosh => simd!(
                #[inline(always)]
                |x: f32| vmath::acosh(x)
            ),
            Atanh => simd!(vmath::atanh),
            // Through an always-inlined closure: the fn item's call shim is too big to
            // be inlined into the vector loop on its own.
            Erfinv => simd!(
                #[inline(always)]
                |x: f32| vmath::erfinv(x)
            ),
            Expm1 => simd!(vmath::expm1),
            Log1p => simd!(vmath::log1p),
            Gelu => simd!(
                #[inline(always)]
                |x: f32| x * vmath::ncdf(x)
            ),
            Elu(alpha) => {
                let alpha = alpha as f32;
                simd!(
                    #[inline(always)]
                    move |x: f32| if x > 0.0 { x } else { alpha * vmath::expm1(x) }
                )
            }
            Softplus(beta, threshold) => {
                let (beta, threshold) = (beta as f32, threshold as f32);
                simd!(
                    #[inline(always)]
                    move |x: f32| softplus(x, beta, threshold)
                )
            }
            Mish => simd!(
                #[inline(always)]
                |x: f32| x * vmath::tanh(softplus(x, 1.0, 20.0))
            ),
            GeluTanh => {
                let k = (2.0 / std::f32::consts::PI).sqrt();
                simd!(
                    #[inline(always)]
                    move |x: f32| 0.5 * x * (1.0 + vmath::tanh(k * (x + 0.044_715 * x * x * x)))
                )
            }
            _ => {}
        }
    }
    let f64_simd = matches!(op, Sin | Cos | Exp);
    if T::DTYPE == DType::F64 && f64_simd && out.is_contiguous() && a.is_contiguous() {
        let (po, pa, n) = (P(out.ptr::<f64>()?), P(a.ptr::<f64>()?), a.numel());
        // SAFETY: both tensors are contiguous float64 with n elements.
        unsafe {
            match op {
                Exp => vmath::exp_f64(po, pa, n),
                _ => vmath::sin_cos_f64(po, pa, n, op == Cos),
            }
        }
        return Ok(());
    }
    let (po, pa) = (P(out.ptr::<T>()?), P(a.ptr::<T>()?));
    let (s, o, st) = (out.shape(), out.strides(), a.strides());
    let f = T::from_f;
    let (zero, one, half) = (<T as Element>::zero(), <T as Element>::one(), f(0.5));
    macro_rules! go {
        ($f:expr) => {
            // SAFETY: out and a are laid out over `s` within their storages.
            unsafe { map1(s, (po, o), (pa, st), $f) }
        };
    }
    match op {
        Floor => go!(move |x: T| x.floor()),
        Ceil => go!(move |x: T| x.ceil()),
        Round => go!(move |x: T| x.round_even()),
        Trunc => go!(move |x: T| x.trunc()),
        Exp => go!(move |x: T| x.exp()),
        Exp2 => go!(move |x: T| x.exp2()),
        Log => go!(move |x: T| x.ln()),
        Log2 => go!(move |x: T| x.log2()),
        Log10 => go!(move |x: T| x.log10()),
        Log1p => go!(move |x: T| x.ln_1p()),
        Expm1 => go!(move |x: T| x.exp_m1()),
        Sqrt => go!(move |x: T| x.sqrt()),
        Rsqrt => go!(move |x: T| one / x.sqrt()),
        Reciprocal => go!(move |x: T| one / x),
        Sin => go!(move |x: T| x.sin()),
        Cos => go!(move |x: T| x.cos()),
        Tan => go!(move |x: T| x.tan()),
        Asin => go!(move |x: T| x.asin()),
        Acos => go!(move |x: T| x.acos()),
        Atan => go!(move |x: T| x.atan()),
        Sinh => go!(move |x: T| x.sinh()),
        Cosh => go!(move |x: T| x.cosh()),
        Tanh => go!(move |x: T| x.tanh()),
        Asinh => go!(move |x: T| x.via_f64(libm::asinh)),
        Acosh => go!(move |x: T| x.via_f64(libm::acosh)),
        Atanh => go!(move |x: T| x.via_f64(libm::atanh)),
        Sigmoid => go!(move |x: T| one / (one + (-x).exp())),
        Erf => go!(move |x: T| x.erf()),
        Erfc => go!(move |x: T| x.via_f64(special::erfc)),
        Erfinv => go!(move |x: T| x.via_f64(special::erfinv)),
        Lgamma => go!(move |x: T| x.via_f64(special::lgamma)),
        Digamma => go!(move |x: T| x.via_f64(special::digamma)),
        Polygamma(n) => go!(move |x: T| T::from_f(special::polygamma(n, x.to_f64()))),
        I0 => go!(move |x: T| x.via_f64(special::i0)),
        I0e => go!(move |x: T| x.via_f64(special::i0e)),
        I1 => go!(move |x: T| x.via_f64(special::i1)),
        I1e => go!(move |x: T| x.via_f64(special::i1e)),
        Gelu => {
            let r = f(std::f64::consts::FRAC_1_SQRT_2);
            go!(move |x: T| half * x * (one + (x * r).erf()))
        }
        GeluTanh => {
            let (k, c) = (f((2.0 / std::f64::consts::PI).sqrt()), f(0.044715));
            go!(move |x: T| half * x * (one + (k * (x + c * x * x * x)).tanh()))
        }
        Silu => go!(move |x: T| x / (one + (-x).exp())),
        Mish => go!(move |x: T| x * (if x > f(20.0) { x } else { x.exp().ln_1p() }).tanh()),
        LeakyRelu(slope) => {
            let slope = f(slope);
            go!(move |x: T| if x > zero { x } else { x * slope })
        }
        Elu(alpha) => {
            let alpha = f(alpha);
            go!(move |x: T| if x > zero { x } else { alpha * x.exp_m1() })
        }
        Softplus(beta, threshold) => {
            let (beta, threshold) = (f(beta), f(threshold));
            go!(move |x: T| if x * beta > threshold { x } else { (x * beta).exp().ln_1p() / beta })
        }
        // PyTorch's formulas and rounding; NaN stays NaN.
        Hardsigmoid => {
            let (three, six) = (f(3.0), f(6.0));
            go!(move |x: T| if x <= -three {
                zero
            } else if x >= three {
                one
            } else {
                (x + three) / six
            })
        }
        Hardswish => {
            let (three, six) = (f(3.0), f(6.0));
            go!(move |x: T| if x <= -three {
                zero
            } else if x >= three {
                x
            } else {
                x * (x + three) / six
            })
        }
        SmoothL1(beta) => {
            let beta = f(beta);
            go!(move |d: T| {
                let z = <T as Arith>::abs(d);
                if z < beta {
                    half * z * z / beta
                } else {
                    z - half * beta
                }
            })
        }
        Huber(delta) => {
            let delta = f(delta);
            go!(move |d: T| {
                let z = <T as Arith>::abs(d);
                if z < delta {
                    half * z * z
                } else {
                    delta * (z - half * delta)
                }
            })
        }
        _ => return run_unary_any::<T>(op, out, a),
    }
    Ok(())
}

/// softplus(x) = ln(1 + e^(βx)) / β, x itself past the threshold, as PyTorch.
#[inline(always)]
fn softplus<T: GradMath>(x: T, beta: T, threshold: T) -> T {
    let bx = x * beta;
    if bx > threshold {
        x
    } else {
        bx.vexp().vlog1p() / beta
    }
}

/// The math of the fused activation gradients: float32 through `vmath`
/// (loops of it vectorize), float64 through std.
pub trait GradMath: FloatMath {
    fn vexp(self) -> Self;
    fn vtanh(self) -> Self;
    fn vlog1p(self) -> Self;
    /// The standard normal CDF Φ(x) and e^(-x²/2).
    fn vncdf_exp(self) -> (Self, Self);
    #[inline(always)]
    fn vsigmoid(self) -> Self {
        let one = <Self as Element>::one();
        one / (one + (-self).vexp())
    }
}
impl GradMath for f32 {
    #[inline(always)]
    fn vexp(self) -> Self {
        vmath::exp(self)
    }
    #[inline(always)]
    fn vtanh(self) -> Self {
        vmath::tanh(self)
    }
    #[inline(always)]
    fn vlog1p(self) -> Self {
        vmath::log1p(self)
    }
    #[inline(always)]
    fn vncdf_exp(self) -> (Self, Self) {
        vmath::ncdf_exp(self)
    }
}
impl GradMath for f64 {
    fn vexp(self) -> Self {
        self.exp()
    }
    fn vtanh(self) -> Self {
        self.tanh()
    }
    fn vlog1p(self) -> Self {
        self.ln_1p()
    }
    fn vncdf_exp(self) -> (Self, Self) {
        let ncdf = 0.5 * libm::erfc(-self * std::f64::consts::FRAC_1_SQRT_2);
        (ncdf, (-0.5 * self * self).exp())
    }
}

/// Whether `act_backward` computes the gradient of `op`.
pub fn has_act_backward(op: Unary) -> bool {
    use Unary::*;
    matches!(
        op,
        Tanh | Sigmoid
            | Erf
            | Gelu
            | GeluTanh
            | Silu
            | Mish
            | Elu(_)
            | Softplus(..)
            | LeakyRelu(_)
            | Hardsigmoid
            | Hardswish
            | SmoothL1(_)
            | Huber(_)
    )
}

/// out = g · f'(v) in one pass for the activations and smooth functions below
/// (v: the saved input, or the output for tanh and sigmoid); the recorded
/// forms take three to ten passes. Returns false for other ops.
pub fn act_backward(op: Unary, out: &Tensor, g: &Tensor, v: &Tensor) -> Result<bool> {
    match out.dtype() {
        DType::F32 => act_backward_t::<f32>(op, out, g, v),
        DType::F64 => act_backward_t::<f64>(op, out, g, v),
        _ => Ok(false),
    }
}

fn act_backward_t<T: GradMath>(op: Unary, out: &Tensor, g: &Tensor, v: &Tensor) -> Result<bool> {
    use Unary::*;
    let shape = out.shape().clone();
    let (lg, lv) = (g.layout().broadcast_strides(&shape)?, v.layout().broadcast_strides(&shape)?);
    let flat = out.is_contiguous() && v.is_contiguous() && v.shape() == &shape;
    // A gradient broadcast from one value (the backward of a sum) reads as a scalar.
    let g_one = lg.iter().all(|&s| s == 0);
    let flat = flat && (g_one || g.is_contiguous() && g.shape() == &shape);
    let (po, pg, pv) = (P(out.ptr::<T>()?), P(g.ptr::<T>()?), P(v.ptr::<T>()?));
    let f = T::from_f;
    let (zero, one, half) = (<T as Element>::zero(), <T as Element>::one(), f(0.5));
    let (out_, g_, v_) = ((po, out.strides()), (pg, &lg[..]), (pv, &lv[..]));
    macro_rules! go {
        ($d:expr) => {{
            // SAFETY: the layouts span `shape` within their storages.
            unsafe { grad_map(flat, g_one, &shape, out_, g_, v_, $d) };
            return Ok(true);
        }};
    }
    match op {
        Tanh => go!(
            #[inline(always)]
            move |y: T| one - y * y
        ),
        Sigmoid => go!(
            #[inline(always)]
            move |y: T| y * (one - y)
        ),
        Erf => {
            let c = f(std::f64::consts::FRAC_2_SQRT_PI);
            go!(
                #[inline(always)]
                move |x: T| c * (-(x * x)).vexp()
            )
        }
        // d/dx x·Φ(x) = Φ(x) + x·φ(x)
        Gelu => {
            let c = f(0.5 * std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2);
            go!(
                #[inline(always)]
                move |x: T| {
                    let (ncdf, e) = x.vncdf_exp();
                    ncdf + x * c * e
                }
            )
        }
        GeluTanh => {
            let (k, c) = (f((2.0 / std::f64::consts::PI).sqrt()), f(0.044_715));
            let c3 = f(3.0) * c;
            go!(
                #[inline(always)]
                move |x: T| {
                    let x2 = x * x;
                    let t = (k * (x + c * x2 * x)).vtanh();
                    half * (one + t) + half * x * (one - t * t) * k * (one + c3 * x2)
                }
            )
        }
        Silu => go!(
            #[inline(always)]
            move |x: T| {
                let s = x.vsigmoid();
                s * (one + x * (one - s))
            }
        ),
        Mish => {
            let twenty = f(20.0);
            go!(
                #[inline(always)]
                move |x: T| {
                    let t = softplus(x, one, twenty).vtanh();
                    t + x * (one - t * t) * x.vsigmoid()
                }
            )
        }
        Elu(alpha) => {
            let alpha = f(alpha);
            go!(
                #[inline(always)]
                move |x: T| if x > zero { one } else { alpha * x.vexp() }
            )
        }
        Softplus(beta, threshold) => {
            let (beta, threshold) = (f(beta), f(threshold));
            go!(
                #[inline(always)]
                move |x: T| if x * beta > threshold { one } else { (x * beta).vsigmoid() }
            )
        }
        LeakyRelu(slope) => {
            let slope = f(slope);
            go!(
                #[inline(always)]
                move |x: T| if x > zero { one } else { slope }
            )
        }
        // The boundaries as PyTorch's backward kernels draw them.
        Hardsigmoid => {
            let (three, sixth) = (f(3.0), f(1.0 / 6.0));
            go!(
                #[inline(always)]
                move |x: T| if x > -three && x < three { sixth } else { zero }
            )
        }
        Hardswish => {
            let three = f(3.0);
            go!(
                #[inline(always)]
                move |x: T| if x < -three {
                    zero
                } else if x <= three {
                    x / three + half
                } else {
                    one
                }
            )
        }
        SmoothL1(beta) => {
            let beta = f(beta);
            go!(
                #[inline(always)]
                move |d: T| if d <= -beta {
                    -one
                } else if d >= beta {
                    one
                } else {
                    d / beta
                }
            )
        }
        Huber(delta) => {
            let delta = f(delta);
            go!(
                #[inline(always)]
                move |d: T| if d <= -delta {
                    -delta
                } else if d >= delta {
                    delta
                } else {
                    d
                }
            )
        }
        _ => Ok(false),
    }
}

/// out = g · d(v) elementwise; `flat`: out and v contiguous, g too or (`g_one`)
/// one value broadcast.
///
/// # Safety
/// Each (pointer, strides) spans `shape` within its storage.
#[allow(clippy::too_many_arguments)]
unsafe fn grad_map<T: GradMath>(
    flat: bool,
    g_one: bool,
    shape: &[usize],
    out: (P<T>, &[isize]),
    g: (P<T>, &[isize]),
    v: (P<T>, &[isize]),
    d: impl Fn(T) -> T + Sync + Copy,
) {
    let n = shape.iter().product();
    if n == 0 {
        return;
    }
    if flat && g_one {
        let gv = *g.0.at(0);
        vmath::map(
            out.0,
            v.0,
            n,
            #[inline(always)]
            move |v: T| gv * d(v),
        );
    } else if flat {
        vmath::map2(
            out.0,
            g.0,
            v.0,
            n,
            #[inline(always)]
            move |g: T, v: T| g * d(v),
        );
    } else {
        super::elementwise::map2(
            shape,
            out,
            g,
            v,
            #[inline(always)]
            move |g: T, v: T| g * d(v),
        );
    }
}

/// Unary ops defined for every compute dtype, ints included.
fn run_unary_any<T: Arith>(op: Unary, out: &Tensor, a: &Tensor) -> Result<()> {
    use Unary::*;
    let (po, pa) = (P(out.ptr::<T>()?), P(a.ptr::<T>()?));
    let (s, o, st) = (out.shape(), out.strides(), a.strides());
    macro_rules! go {
        ($f:expr) => {
            // SAFETY: out and a are laid out over `s` within their storages.
            unsafe { map1(s, (po, o), (pa, st), $f) }
        };
    }
    match op {
        Neg => go!(move |x: T| x.neg()),
        Abs => go!(move |x: T| x.abs()),
        Sign => go!(move |x: T| x.sign()),
        Square => go!(move |x: T| x.mul(x)),
        // `x < 0` rather than `x > 0` so NaN stays NaN, as in PyTorch.
        Relu => go!(move |x: T| if x < T::zero() { T::zero() } else { x }),
        // Integer rounding is the identity.
        Floor | Ceil | Round | Trunc => go!(move |x: T| x),
        _ => bail!(Runtime, "\"{}\" not implemented for '{}'", op.name(), T::DTYPE.name()),
    }
    Ok(())
}

/// Unary ops whose result is bool, computed for any input dtype.
fn run_unary_bool<T: Arith>(op: Unary, out: &Tensor, a: &Tensor) -> Result<()> {
    use Unary::*;
    let (po, pa) = (P(out.ptr::<bool>()?), P(a.ptr::<T>()?));
    let (s, o, st) = (out.shape(), out.strides(), a.strides());
    let is_float = T::DTYPE.is_float();
    macro_rules! go {
        ($f:expr) => {
            // SAFETY: out and a are laid out over `s` within their storages.
            unsafe { map1(s, (po, o), (pa, st), $f) }
        };
    }
    match op {
        LogicalNot => go!(move |x: T| x.is_zero()),
        // Only NaN is unordered with itself; ints are never NaN or infinite.
        IsNan => go!(move |x: T| x.partial_cmp(&x).is_none()),
        IsInf => go!(move |x: T| is_float && x.to_f64().is_infinite()),
        IsFinite => go!(move |x: T| !is_float || x.to_f64().is_finite()),
        _ => bail!(Runtime, "{} does not produce bool", op.name()),
    }
    Ok(())
}

fn run_bitwise_not<T: Element>(out: &Tensor, a: &Tensor) -> Result<()> {
    let (po, pa) = (P(out.ptr::<T>()?), P(a.ptr::<T>()?));
    let bool_input = T::DTYPE == DType::Bool;
    // SAFETY: out and a are laid out over the same shape within their storages.
    unsafe {
        map1(out.shape(), (po, out.strides()), (pa, a.strides()), |x: T| {
            if bool_input {
                T::from_i64((x.to_i64() == 0) as i64)
            } else {
                T::from_i64(!x.to_i64())
            }
        })
    };
    Ok(())
}

/// `out = op(a)`; `a` is in the dtype the kernel reads, `out` in the result's compute dtype.
pub fn unary_into(op: Unary, out: &Tensor, a: &Tensor) -> Result<()> {
    if out.dtype() == DType::Bool
        && !matches!(op, Unary::BitwiseNot | Unary::Sign | Unary::Abs | Unary::Relu)
    {
        return dispatch_compute!(a.dtype(), T => run_unary_bool::<T>(op, out, a));
    }
    if op == Unary::BitwiseNot {
        return crate::dispatch_all!(a.dtype(), T => run_bitwise_not::<T>(out, a));
    }
    if a.dtype().is_float() {
        dispatch_float!(a.dtype(), T => run_unary::<T>(op, out, a))
    } else {
        dispatch_compute!(a.dtype(), T => run_unary_any::<T>(op, out, a))
    }
}

/// Float functions the unary kernels need beyond num_traits::Float, for f32
/// and f64 (half types compute in float32).
pub trait FloatMath: Arith + num_traits::Float {
    fn erf(self) -> Self;
    /// Round half to even, as torch.round.
    fn round_even(self) -> Self;
    fn from_f(v: f64) -> Self {
        <Self as Element>::from_f64(v)
    }
    /// A float64 function applied to this value (float32 rounds its result).
    #[inline(always)]
    fn via_f64(self, f: fn(f64) -> f64) -> Self {
        Self::from_f(f(self.to_f64()))
    }
}
impl FloatMath for f32 {
    #[inline(always)]
    fn erf(self) -> Self {
        libm::erff(self)
    }
    #[inline(always)]
    fn round_even(self) -> Self {
        self.round_ties_even()
    }
}
impl FloatMath for f64 {
    #[inline(always)]
    fn erf(self) -> Self {
        libm::erf(self)
    }
    #[inline(always)]
    fn round_even(self) -> Self {
        self.round_ties_even()
    }
}
