//! Elementwise ops: unary math, binary arithmetic and comparisons with NumPy
//! broadcasting and PyTorch type promotion, where/masked_fill/clamp, in-place forms.

use super::copy::{copy_into, to_dtype};
use super::{result_type, Operand};
use crate::backend::cpu::elementwise::{map1, map2, map3, Arith, FloatMath};
use crate::backend::cpu::{vmath, P};
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::{broadcast_shapes, fmt_shape};
use crate::tensor::{DType, Element, Tensor};
use crate::{dispatch_compute, dispatch_float};

#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Unary {
    Neg,
    Abs,
    Sign,
    Square,
    Relu,
    Floor,
    Ceil,
    Round,
    Trunc,
    Exp,
    Exp2,
    Log,
    Log2,
    Log10,
    Log1p,
    Expm1,
    Sqrt,
    Rsqrt,
    Reciprocal,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Sigmoid,
    Gelu,
    GeluTanh,
    Silu,
    Mish,
    LeakyRelu(f64),
    Elu(f64),
    Softplus { beta: f64, threshold: f64 },
    LogicalNot,
    BitwiseNot,
    IsNan,
    IsInf,
    IsFinite,
}

impl Unary {
    pub fn name(self) -> &'static str {
        use Unary::*;
        match self {
            Neg => "neg", Abs => "abs", Sign => "sign", Square => "square", Relu => "relu", Floor => "floor",
            Ceil => "ceil", Round => "round", Trunc => "trunc", Exp => "exp", Exp2 => "exp2", Log => "log",
            Log2 => "log2", Log10 => "log10", Log1p => "log1p", Expm1 => "expm1", Sqrt => "sqrt", Rsqrt => "rsqrt",
            Reciprocal => "reciprocal", Sin => "sin", Cos => "cos", Tan => "tan", Asin => "asin", Acos => "acos",
            Atan => "atan", Sinh => "sinh", Cosh => "cosh", Tanh => "tanh", Sigmoid => "sigmoid", Gelu | GeluTanh => "gelu",
            Silu => "silu", Mish => "mish", LeakyRelu(_) => "leaky_relu", Elu(_) => "elu", Softplus { .. } => "softplus",
            LogicalNot => "logical_not", BitwiseNot => "bitwise_not", IsNan => "isnan", IsInf => "isinf",
            IsFinite => "isfinite",
        }
    }
    /// Ops that keep integer dtypes; the others compute in float.
    fn keeps_ints(self) -> bool {
        use Unary::*;
        matches!(self, Neg | Abs | Sign | Square | Relu | Floor | Ceil | Round | Trunc)
    }
    fn out_dtype(self, input: DType) -> Result<DType> {
        use Unary::*;
        Ok(match self {
            LogicalNot | IsNan | IsInf | IsFinite => DType::Bool,
            BitwiseNot if input.is_float() => {
                bail!(Type, "bitwise_not: only integral and boolean tensors are supported, got {}", input.name())
            }
            BitwiseNot => input,
            Neg if input == DType::Bool => bail!(
                Runtime,
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
            ),
            Square if input == DType::Bool => DType::I64,
            _ if self.keeps_ints() => input,
            _ => input.to_float(),
        })
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Binary {
    Add,
    Sub,
    Mul,
    Div,
    DivTrunc,
    FloorDiv,
    Rem,
    Fmod,
    Pow,
    Maximum,
    Minimum,
    Atan2,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LogicalAnd,
    LogicalOr,
    LogicalXor,
    BitAnd,
    BitOr,
    BitXor,
}

impl Binary {
    pub fn name(self) -> &'static str {
        use Binary::*;
        match self {
            Add => "add", Sub => "sub", Mul => "mul", Div => "div", DivTrunc => "div", FloorDiv => "floor_divide",
            Rem => "remainder", Fmod => "fmod", Pow => "pow", Maximum => "maximum", Minimum => "minimum",
            Atan2 => "atan2", Eq => "eq", Ne => "ne", Lt => "lt", Le => "le", Gt => "gt", Ge => "ge",
            LogicalAnd => "logical_and", LogicalOr => "logical_or", LogicalXor => "logical_xor",
            BitAnd => "bitwise_and", BitOr => "bitwise_or", BitXor => "bitwise_xor",
        }
    }
    fn is_compare(self) -> bool {
        use Binary::*;
        matches!(self, Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor)
    }
    /// (dtype the kernel computes in, dtype of the result).
    fn dtypes(self, common: DType) -> Result<(DType, DType)> {
        use Binary::*;
        match self {
            _ if self.is_compare() => Ok((common.compute(), DType::Bool)),
            Div | Atan2 => Ok((common.to_float().compute(), common.to_float())),
            BitAnd | BitOr | BitXor if common.is_float() => {
                bail!(Type, "{}: only integral and boolean tensors are supported, got {}", self.name(), common.name())
            }
            Sub if common == DType::Bool => bail!(
                Runtime,
                "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead."
            ),
            DivTrunc | FloorDiv | Rem | Fmod | Pow if common == DType::Bool => {
                bail!(Runtime, "\"{}\" not implemented for 'Bool'", self.name())
            }
            _ => Ok((common.compute(), common)),
        }
    }
}

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
            Silu => simd!(|x: f32| x * vmath::sigmoid(x)),
            GeluTanh => {
                let k = (2.0 / std::f32::consts::PI).sqrt();
                simd!(move |x: f32| 0.5 * x * (1.0 + vmath::tanh(k * (x + 0.044_715 * x * x * x))))
            }
            _ => {}
        }
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
        Floor => go!(|x: T| x.floor()),
        Ceil => go!(|x: T| x.ceil()),
        Round => go!(|x: T| x.round_even()),
        Trunc => go!(|x: T| x.trunc()),
        Exp => go!(|x: T| x.exp()),
        Exp2 => go!(|x: T| x.exp2()),
        Log => go!(|x: T| x.ln()),
        Log2 => go!(|x: T| x.log2()),
        Log10 => go!(|x: T| x.log10()),
        Log1p => go!(|x: T| x.ln_1p()),
        Expm1 => go!(|x: T| x.exp_m1()),
        Sqrt => go!(|x: T| x.sqrt()),
        Rsqrt => go!(|x: T| one / x.sqrt()),
        Reciprocal => go!(|x: T| one / x),
        Sin => go!(|x: T| x.sin()),
        Cos => go!(|x: T| x.cos()),
        Tan => go!(|x: T| x.tan()),
        Asin => go!(|x: T| x.asin()),
        Acos => go!(|x: T| x.acos()),
        Atan => go!(|x: T| x.atan()),
        Sinh => go!(|x: T| x.sinh()),
        Cosh => go!(|x: T| x.cosh()),
        Tanh => go!(|x: T| x.tanh()),
        Sigmoid => go!(|x: T| one / (one + (-x).exp())),
        Gelu => {
            let r = f(std::f64::consts::FRAC_1_SQRT_2);
            go!(|x: T| half * x * (one + (x * r).erf()))
        }
        GeluTanh => {
            let (k, c) = (f((2.0 / std::f64::consts::PI).sqrt()), f(0.044715));
            go!(|x: T| half * x * (one + (k * (x + c * x * x * x)).tanh()))
        }
        Silu => go!(|x: T| x / (one + (-x).exp())),
        Mish => go!(|x: T| x * (if x > f(20.0) { x } else { x.exp().ln_1p() }).tanh()),
        LeakyRelu(slope) => {
            let slope = f(slope);
            go!(|x: T| if x > zero { x } else { x * slope })
        }
        Elu(alpha) => {
            let alpha = f(alpha);
            go!(|x: T| if x > zero { x } else { alpha * x.exp_m1() })
        }
        Softplus { beta, threshold } => {
            let (beta, threshold) = (f(beta), f(threshold));
            go!(|x: T| if x * beta > threshold { x } else { (x * beta).exp().ln_1p() / beta })
        }
        _ => return run_unary_any::<T>(op, out, a),
    }
    Ok(())
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
        Neg => go!(|x: T| x.neg()),
        Abs => go!(|x: T| x.abs()),
        Sign => go!(|x: T| x.sign()),
        Square => go!(|x: T| x.mul(x)),
        Relu => go!(|x: T| if x > T::zero() { x } else { T::zero() }),
        // Integer rounding is the identity.
        Floor | Ceil | Round | Trunc => go!(|x: T| x),
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
        LogicalNot => go!(|x: T| x.is_zero()),
        // x != x only for NaN; ints are never NaN or infinite.
        IsNan => go!(|x: T| x != x),
        IsInf => go!(|x: T| is_float && x.to_f64().is_infinite()),
        IsFinite => go!(|x: T| !is_float || x.to_f64().is_finite()),
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

fn unary_into(op: Unary, out: &Tensor, a: &Tensor) -> Result<()> {
    if out.dtype() == DType::Bool && !matches!(op, Unary::BitwiseNot | Unary::Sign | Unary::Abs | Unary::Relu) {
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

/// Output dtype and the input converted to the dtype the kernel reads.
fn unary_prepare(op: Unary, a: &Tensor) -> Result<(DType, Tensor)> {
    let out = op.out_dtype(a.dtype())?;
    let input = if out == DType::Bool || op == Unary::BitwiseNot {
        to_dtype(a, a.dtype().compute())?
    } else {
        to_dtype(a, out.compute())?
    };
    Ok((out, input))
}

pub fn unary(op: Unary, a: &Tensor) -> Result<Tensor> {
    let (out_dtype, input) = unary_prepare(op, a)?;
    let compute = if out_dtype == DType::Bool { DType::Bool } else { out_dtype.compute() };
    let out = Tensor::for_output(a.shape(), compute)?;
    unary_into(op, &out, &input)?;
    to_dtype(&out, out_dtype)
}

/// In-place unary op (`t.exp_()`): the result must be castable back to t's dtype.
pub fn unary_(op: Unary, a: &Tensor) -> Result<()> {
    a.check_writable(op.name())?;
    let (out_dtype, input) = unary_prepare(op, a)?;
    check_inplace_cast(op.name(), out_dtype, a.dtype())?;
    if out_dtype == a.dtype() && !a.dtype().is_half() {
        unary_into(op, a, &input)?;
    } else {
        copy_into(a, &unary(op, a)?)?;
    }
    a.storage().bump_version();
    Ok(())
}

/// PyTorch's can_cast for writing a result into an existing tensor.
fn check_inplace_cast(name: &str, result: DType, target: DType) -> Result<()> {
    if result.category() > target.category() {
        bail!(Runtime, "result type {} can't be cast to the desired output type {} (in {}_)", result.name(), target.name(), name);
    }
    Ok(())
}

fn run_binary<T: Arith>(op: Binary, out: &Tensor, a: &Tensor, b: &Tensor, shape: &[usize], alpha: Option<T>) -> Result<()> {
    let (la, lb) = (a.layout().broadcast_strides(shape)?, b.layout().broadcast_strides(shape)?);
    run_binary_args(op, out, (P(a.ptr::<T>()?), &la[..]), (P(b.ptr::<T>()?), &lb[..]), shape, alpha)
}

/// The binary kernels on raw operands (a scalar operand is a stride-0 pointer).
fn run_binary_args<T: Arith>(op: Binary, out: &Tensor, pa: Arg<T>, pb: Arg<T>, shape: &[usize], alpha: Option<T>) -> Result<()> {
    use Binary::*;
    if out.dtype() == DType::Bool {
        let po = (P(out.ptr::<bool>()?), out.strides());
        macro_rules! cmp {
            ($f:expr) => {
                // SAFETY: all layouts span `shape` within their storages.
                unsafe { map2(shape, po, pa, pb, $f) }
            };
        }
        match op {
            Eq => cmp!(|x: T, y: T| x == y),
            Ne => cmp!(|x: T, y: T| x != y),
            Lt => cmp!(|x: T, y: T| x < y),
            Le => cmp!(|x: T, y: T| x <= y),
            Gt => cmp!(|x: T, y: T| x > y),
            Ge => cmp!(|x: T, y: T| x >= y),
            LogicalAnd => cmp!(|x: T, y: T| !x.is_zero() && !y.is_zero()),
            LogicalOr => cmp!(|x: T, y: T| !x.is_zero() || !y.is_zero()),
            LogicalXor => cmp!(|x: T, y: T| x.is_zero() != y.is_zero()),
            _ => return run_arith::<T>(op, (P(out.ptr::<T>()?), out.strides()), pa, pb, shape, alpha),
        }
        return Ok(());
    }
    run_arith::<T>(op, (P(out.ptr::<T>()?), out.strides()), pa, pb, shape, alpha)
}

/// Tensor-with-number ops on float tensors whose dtype the number keeps
/// (x * 0.5, 1 - x, x > 0): the number is read through a stride-0 pointer to
/// a local, so no 0-d tensor is allocated.
fn float_scalar<T: Arith>(op: Binary, t: &Tensor, s: crate::tensor::Scalar, scalar_first: bool, alpha: Option<f64>) -> Result<Tensor> {
    let (_, out_dtype) = op.dtypes(T::DTYPE)?;
    let out = Tensor::for_output(t.shape(), out_dtype)?;
    let v: T = s.cast();
    let zeros = vec![0isize; t.ndim()];
    let sv = (P(&v as *const T as *mut T), &zeros[..]);
    let tv = (P(t.ptr::<T>()?), t.strides());
    let (a, b) = if scalar_first { (sv, tv) } else { (tv, sv) };
    run_binary_args(op, &out, a, b, t.shape(), alpha.map(T::from_f64))?;
    Ok(out)
}

type Arg<'a, T> = (P<T>, &'a [isize]);

fn run_arith<T: Arith>(op: Binary, po: Arg<T>, pa: Arg<T>, pb: Arg<T>, shape: &[usize], alpha: Option<T>) -> Result<()> {
    use Binary::*;
    macro_rules! go {
        ($f:expr) => {
            // SAFETY: all layouts span `shape` within their storages.
            unsafe { map2(shape, po, pa, pb, $f) }
        };
    }
    match (op, alpha) {
        (Add, Some(al)) => go!(|x: T, y: T| x.add(y.mul(al))),
        (Sub, Some(al)) => go!(|x: T, y: T| x.sub(y.mul(al))),
        (Add, None) => go!(|x: T, y: T| x.add(y)),
        (Sub, None) => go!(|x: T, y: T| x.sub(y)),
        (Mul, _) => go!(|x: T, y: T| x.mul(y)),
        (Div | DivTrunc, _) => go!(|x: T, y: T| x.div(y)),
        (FloorDiv, _) => go!(|x: T, y: T| x.floor_div(y)),
        (Rem, _) => go!(|x: T, y: T| x.rem(y)),
        (Fmod, _) => go!(|x: T, y: T| x.fmod(y)),
        (Pow, _) => go!(|x: T, y: T| x.pow(y)),
        (Maximum, _) => go!(|x: T, y: T| x.max(y)),
        (Minimum, _) => go!(|x: T, y: T| x.min(y)),
        (BitAnd, _) => go!(|x: T, y: T| T::from_i64(x.to_i64() & y.to_i64())),
        (BitOr, _) => go!(|x: T, y: T| T::from_i64(x.to_i64() | y.to_i64())),
        (BitXor, _) => go!(|x: T, y: T| T::from_i64(x.to_i64() ^ y.to_i64())),
        _ => bail!(Runtime, "\"{}\" not implemented for '{}'", op.name(), T::DTYPE.name()),
    }
    Ok(())
}

fn run_atan2<T: FloatMath>(out: &Tensor, a: &Tensor, b: &Tensor, shape: &[usize]) -> Result<()> {
    let (la, lb) = (a.layout().broadcast_strides(shape)?, b.layout().broadcast_strides(shape)?);
    // SAFETY: all layouts span `shape` within their storages.
    unsafe {
        map2(
            shape,
            (P(out.ptr::<T>()?), out.strides()),
            (P(a.ptr::<T>()?), &la[..]),
            (P(b.ptr::<T>()?), &lb[..]),
            |y: T, x: T| y.atan2(x),
        )
    };
    Ok(())
}

/// Integer division by zero and negative integer powers are errors, not UB.
fn check_int_divisor(op: Binary, b: &Tensor) -> Result<()> {
    use Binary::*;
    let compute = b.dtype();
    if compute.is_float() || !matches!(op, DivTrunc | FloorDiv | Rem | Fmod | Pow) {
        return Ok(());
    }
    let any = |pred: fn(i64) -> bool| -> Result<bool> {
        let found = std::sync::atomic::AtomicBool::new(false);
        crate::dispatch_all!(compute, T => {
            let p = P(b.ptr::<T>()?);
            crate::backend::cpu::strided::for_each_row(b.shape(), [b.strides()], |[o], len, [s]| {
                // SAFETY: b's layout lies within its storage.
                if (0..len as isize).any(|i| pred(unsafe { *p.at(o + i * s) }.to_i64())) {
                    found.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            });
        });
        Ok(found.into_inner())
    };
    if op == Pow {
        if any(|v| v < 0)? {
            bail!(Runtime, "Integers to negative integer powers are not allowed.");
        }
    } else if any(|v| v == 0)? {
        bail!(Runtime, "ZeroDivisionError");
    }
    Ok(())
}

/// Prepares both operands in the compute dtype and returns (a, b, shape, compute, out dtype).
fn binary_prepare(op: Binary, a: &Operand, b: &Operand, alpha: Option<f64>) -> Result<(Tensor, Tensor, crate::tensor::Shape, DType, DType)> {
    let common = result_type(&[a, b]);
    let (compute, out) = op.dtypes(common)?;
    if let Some(al) = alpha {
        if !common.is_float() && al.fract() != 0.0 {
            bail!(Runtime, "For integral input tensors, argument alpha must not be a floating point number.");
        }
    }
    if op == Binary::Pow && !compute.is_float() && matches!(b, Operand::S(s) if s.to_f64() < 0.0) {
        bail!(Runtime, "Integers to negative integer powers are not allowed.");
    }
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let (ta, tb) = (a.tensor_as(compute)?, b.tensor_as(compute)?);
    check_int_divisor(op, &tb)?;
    Ok((ta, tb, shape, compute, out))
}

fn binary_into(op: Binary, out: &Tensor, a: &Tensor, b: &Tensor, shape: &[usize], alpha: Option<f64>) -> Result<()> {
    if op == Binary::Atan2 {
        return dispatch_float!(a.dtype(), T => run_atan2::<T>(out, a, b, shape));
    }
    dispatch_compute!(a.dtype(), T => run_binary::<T>(op, out, a, b, shape, alpha.map(T::from_f64)))
}

/// `a op b` with broadcasting. `alpha` scales b (add/sub).
pub fn binary(op: Binary, a: &Operand, b: &Operand, alpha: Option<f64>) -> Result<Tensor> {
    // Fast path for the common case: same dtype and shape, float, no casts.
    if let (Operand::T(x), Operand::T(y)) = (a, b) {
        let d = x.dtype();
        if matches!(d, DType::F32 | DType::F64) && y.dtype() == d && x.shape() == y.shape() && op != Binary::Atan2 {
            let (compute, out_dtype) = op.dtypes(d)?;
            let out = Tensor::for_output(x.shape(), out_dtype)?;
            dispatch_float!(compute, T => run_binary::<T>(op, &out, x, y, x.shape(), alpha.map(T::from_f64)))?;
            return Ok(out);
        }
    }
    let with_scalar = match (a, b) {
        (Operand::T(t), Operand::S(v)) => Some((t, *v, false)),
        (Operand::S(v), Operand::T(t)) => Some((t, *v, true)),
        _ => None,
    };
    if let Some((t, v, scalar_first)) = with_scalar {
        if matches!(t.dtype(), DType::F32 | DType::F64) && op != Binary::Atan2 {
            return dispatch_float!(t.dtype(), T => float_scalar::<T>(op, t, v, scalar_first, alpha));
        }
    }
    let (ta, tb, shape, compute, out_dtype) = binary_prepare(op, a, b, alpha)?;
    let kernel_out = if out_dtype == DType::Bool { DType::Bool } else { compute };
    let out = Tensor::for_output(&shape, kernel_out)?;
    binary_into(op, &out, &ta, &tb, &shape, alpha)?;
    to_dtype(&out, out_dtype)
}

/// `a op= b`: b broadcasts to a's shape; the result must be castable to a's dtype.
pub fn binary_(op: Binary, a: &Tensor, b: &Operand, alpha: Option<f64>) -> Result<()> {
    a.check_writable(op.name())?;
    let (ta, tb, shape, compute, out_dtype) = binary_prepare(op, &Operand::T(a.clone()), b, alpha)?;
    if shape.as_slice() != a.shape().as_slice() {
        bail!(
            Runtime,
            "output with shape {} doesn't match the broadcast shape {}",
            fmt_shape(a.shape()),
            fmt_shape(&shape)
        );
    }
    check_inplace_cast(op.name(), out_dtype, a.dtype())?;
    let overlaps = matches!(b, Operand::T(t) if std::sync::Arc::ptr_eq(t.storage(), a.storage()) && !t.same_tensor(a));
    if out_dtype == a.dtype() && compute == a.dtype() && !overlaps {
        binary_into(op, a, &ta, &tb, &shape, alpha)?;
    } else {
        let kernel_out = if out_dtype == DType::Bool { DType::Bool } else { compute };
        let tmp = Tensor::for_output(&shape, kernel_out)?;
        binary_into(op, &tmp, &ta, &tb, &shape, alpha)?;
        copy_into(a, &tmp)?;
    }
    a.storage().bump_version();
    Ok(())
}

fn run_where<T: Element>(out: &Tensor, cond: &Tensor, x: &Tensor, y: &Tensor) -> Result<()> {
    let shape = out.shape().clone();
    let (lc, lx, ly) = (cond.layout().broadcast_strides(&shape)?, x.layout().broadcast_strides(&shape)?, y.layout().broadcast_strides(&shape)?);
    // SAFETY: all layouts span `shape` within their storages.
    unsafe {
        map3(
            &shape,
            (P(out.ptr::<T>()?), out.strides()),
            (P(cond.ptr::<bool>()?), &lc[..]),
            (P(x.ptr::<T>()?), &lx[..]),
            (P(y.ptr::<T>()?), &ly[..]),
            |c: bool, a: T, b: T| if c { a } else { b },
        )
    };
    Ok(())
}

fn check_bool_mask(op: &str, mask: &Tensor) -> Result<()> {
    if mask.dtype() != DType::Bool {
        bail!(Runtime, "{} expected a boolean condition/mask, but got mask with dtype {}", op, mask.dtype().name());
    }
    Ok(())
}

/// torch.where(cond, x, y).
pub fn where_(cond: &Tensor, x: &Operand, y: &Operand) -> Result<Tensor> {
    check_bool_mask("where", cond)?;
    let dtype = result_type(&[x, y]);
    let shape = broadcast_shapes(&broadcast_shapes(cond.shape(), x.shape())?, y.shape())?;
    let (tx, ty) = (x.tensor_as(dtype)?, y.tensor_as(dtype)?);
    let out = Tensor::for_output(&shape, dtype)?;
    crate::dispatch_all!(dtype, T => run_where::<T>(&out, cond, &tx, &ty))?;
    Ok(out)
}

/// masked_fill / masked_fill_: `value` where mask is true; keeps t's dtype and shape.
pub fn masked_fill(t: &Tensor, mask: &Tensor, value: &Operand, in_place: bool) -> Result<Tensor> {
    check_bool_mask("masked_fill", mask)?;
    if let Operand::T(v) = value {
        if v.ndim() != 0 {
            bail!(
                Runtime,
                "masked_fill only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                v.ndim()
            );
        }
    }
    let shape = broadcast_shapes(t.shape(), mask.shape())?;
    if shape.as_slice() != t.shape().as_slice() && in_place {
        bail!(Runtime, "masked_fill_: mask of shape {} does not broadcast to the tensor's shape {}", fmt_shape(mask.shape()), fmt_shape(t.shape()));
    }
    if in_place {
        t.check_writable("masked_fill_")?;
    }
    // A mask that shares memory with `t` must be read before any write.
    let mask = &if std::sync::Arc::ptr_eq(mask.storage(), t.storage()) { super::copy::clone_as(mask, DType::Bool)? } else { mask.clone() };
    let v = value.tensor_as(t.dtype())?;
    let out = if in_place { t.clone() } else { Tensor::for_output(&shape, t.dtype())? };
    crate::dispatch_all!(t.dtype(), T => run_where::<T>(&out, mask, &v, t))?;
    if in_place {
        t.storage().bump_version();
    }
    Ok(out)
}

/// clamp(min, max) with scalar or tensor bounds; NaN inputs stay NaN.
pub fn clamp(t: &Tensor, min: Option<&Operand>, max: Option<&Operand>) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        bail!(Runtime, "torch.clamp: At least one of 'min' or 'max' must not be None");
    }
    let mut out = t.clone();
    if let Some(lo) = min {
        out = binary(Binary::Maximum, &Operand::T(out), lo, None)?;
    }
    if let Some(hi) = max {
        out = binary(Binary::Minimum, &Operand::T(out), hi, None)?;
    }
    Ok(out)
}
