//! Elementwise ops: unary math, binary arithmetic and comparisons with NumPy
//! broadcasting and PyTorch type promotion, where/masked_fill/clamp, in-place forms.

use super::copy::{copy_into, to_dtype};
use super::{result_type, Operand};
use crate::autograd::{self, math, Backward, Node, SavedTensor};
use crate::backend::cpu::elementwise::{map1, map2, map3, Arith, FloatMath};
use crate::backend::cpu::{vmath, P};
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::{broadcast_shapes, fmt_shape};
use crate::tensor::{DType, Element, Tensor};
use crate::{dispatch_compute, dispatch_float};
use std::sync::Arc;

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
    Erf,
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
            Neg => "neg",
            Abs => "abs",
            Sign => "sign",
            Square => "square",
            Relu => "relu",
            Floor => "floor",
            Ceil => "ceil",
            Round => "round",
            Trunc => "trunc",
            Exp => "exp",
            Exp2 => "exp2",
            Log => "log",
            Log2 => "log2",
            Log10 => "log10",
            Log1p => "log1p",
            Expm1 => "expm1",
            Sqrt => "sqrt",
            Rsqrt => "rsqrt",
            Reciprocal => "reciprocal",
            Sin => "sin",
            Cos => "cos",
            Tan => "tan",
            Asin => "asin",
            Acos => "acos",
            Atan => "atan",
            Sinh => "sinh",
            Cosh => "cosh",
            Tanh => "tanh",
            Sigmoid => "sigmoid",
            Erf => "erf",
            Gelu | GeluTanh => "gelu",
            Silu => "silu",
            Mish => "mish",
            LeakyRelu(_) => "leaky_relu",
            Elu(_) => "elu",
            Softplus { .. } => "softplus",
            LogicalNot => "logical_not",
            BitwiseNot => "bitwise_not",
            IsNan => "isnan",
            IsInf => "isinf",
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
            Add => "add",
            Sub => "sub",
            Mul => "mul",
            Div => "div",
            DivTrunc => "div",
            FloorDiv => "floor_divide",
            Rem => "remainder",
            Fmod => "fmod",
            Pow => "pow",
            Maximum => "maximum",
            Minimum => "minimum",
            Atan2 => "atan2",
            Eq => "eq",
            Ne => "ne",
            Lt => "lt",
            Le => "le",
            Gt => "gt",
            Ge => "ge",
            LogicalAnd => "logical_and",
            LogicalOr => "logical_or",
            LogicalXor => "logical_xor",
            BitAnd => "bitwise_and",
            BitOr => "bitwise_or",
            BitXor => "bitwise_xor",
        }
    }
    /// Ops with a derivative (the rest give outputs that do not require grad).
    fn differentiable(self) -> bool {
        use Binary::*;
        matches!(self, Add | Sub | Mul | Div | Pow | Maximum | Minimum | Atan2 | Rem | Fmod)
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
        Erf => go!(|x: T| x.erf()),
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
    autograd::record(&[a], || unary_raw(op, a), |out| Ok(UnaryBackward::new(op, a, out).into()))
}

fn unary_raw(op: Unary, a: &Tensor) -> Result<Tensor> {
    if a.is_gpu() {
        return gpu_unary(op, a);
    }
    let (out_dtype, input) = unary_prepare(op, a)?;
    let compute = if out_dtype == DType::Bool { DType::Bool } else { out_dtype.compute() };
    let out = Tensor::for_output(a.shape(), compute)?;
    unary_into(op, &out, &input)?;
    to_dtype(&out, out_dtype)
}

/// In-place unary op (`t.exp_()`): the result must be castable back to t's dtype.
pub fn unary_(op: Unary, a: &Tensor) -> Result<()> {
    autograd::inplace(a, &[], op.name(), || unary_raw_(op, a), |x| unary(op, x))
}

fn unary_raw_(op: Unary, a: &Tensor) -> Result<()> {
    a.check_writable(op.name())?;
    let (out_dtype, input) = unary_prepare(op, a)?;
    check_inplace_cast(op.name(), out_dtype, a.dtype())?;
    if out_dtype == a.dtype() && !a.dtype().is_half() && !a.is_gpu() {
        unary_into(op, a, &input)?;
    } else {
        copy_into(a, &unary_raw(op, a)?)?;
    }
    a.storage().bump_version();
    Ok(())
}

/// PyTorch's can_cast for writing a result into an existing tensor.
fn check_inplace_cast(name: &str, result: DType, target: DType) -> Result<()> {
    if result.category() > target.category() {
        bail!(
            Runtime,
            "result type {} can't be cast to the desired output type {} (in {}_)",
            result.name(),
            target.name(),
            name
        );
    }
    Ok(())
}

fn run_binary<T: Arith>(
    op: Binary,
    out: &Tensor,
    a: &Tensor,
    b: &Tensor,
    shape: &[usize],
    alpha: Option<T>,
) -> Result<()> {
    let (la, lb) = (a.layout().broadcast_strides(shape)?, b.layout().broadcast_strides(shape)?);
    run_binary_args(op, out, (P(a.ptr::<T>()?), &la[..]), (P(b.ptr::<T>()?), &lb[..]), shape, alpha)
}

/// The binary kernels on raw operands (a scalar operand is a stride-0 pointer).
fn run_binary_args<T: Arith>(
    op: Binary,
    out: &Tensor,
    pa: Arg<T>,
    pb: Arg<T>,
    shape: &[usize],
    alpha: Option<T>,
) -> Result<()> {
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
            _ => {
                return run_arith::<T>(
                    op,
                    (P(out.ptr::<T>()?), out.strides()),
                    pa,
                    pb,
                    shape,
                    alpha,
                )
            }
        }
        return Ok(());
    }
    run_arith::<T>(op, (P(out.ptr::<T>()?), out.strides()), pa, pb, shape, alpha)
}

/// Tensor-with-number ops on float tensors whose dtype the number keeps
/// (x * 0.5, 1 - x, x > 0): the number is read through a stride-0 pointer to
/// a local, so no 0-d tensor is allocated.
fn float_scalar<T: Arith>(
    op: Binary,
    t: &Tensor,
    s: crate::tensor::Scalar,
    scalar_first: bool,
    alpha: Option<f64>,
) -> Result<Tensor> {
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

fn run_arith<T: Arith>(
    op: Binary,
    po: Arg<T>,
    pa: Arg<T>,
    pb: Arg<T>,
    shape: &[usize],
    alpha: Option<T>,
) -> Result<()> {
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

/// Argument checks shared by the CPU and GPU paths.
fn binary_checks(
    op: Binary,
    b: &Operand,
    alpha: Option<f64>,
    common: DType,
    compute: DType,
) -> Result<()> {
    if let Some(al) = alpha {
        if !common.is_float() && al.fract() != 0.0 {
            bail!(
                Runtime,
                "For integral input tensors, argument alpha must not be a floating point number."
            );
        }
    }
    if op == Binary::Pow && !compute.is_float() && matches!(b, Operand::S(s) if s.to_f64() < 0.0) {
        bail!(Runtime, "Integers to negative integer powers are not allowed.");
    }
    Ok(())
}

/// Prepares both operands in the compute dtype and returns (a, b, shape, compute, out dtype).
fn binary_prepare(
    op: Binary,
    a: &Operand,
    b: &Operand,
    alpha: Option<f64>,
) -> Result<(Tensor, Tensor, crate::tensor::Shape, DType, DType)> {
    let common = result_type(&[a, b]);
    let (compute, out) = op.dtypes(common)?;
    binary_checks(op, b, alpha, common, compute)?;
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let (ta, tb) = (a.tensor_as(compute)?, b.tensor_as(compute)?);
    check_int_divisor(op, &tb)?;
    Ok((ta, tb, shape, compute, out))
}

fn binary_into(
    op: Binary,
    out: &Tensor,
    a: &Tensor,
    b: &Tensor,
    shape: &[usize],
    alpha: Option<f64>,
) -> Result<()> {
    if op == Binary::Atan2 {
        return dispatch_float!(a.dtype(), T => run_atan2::<T>(out, a, b, shape));
    }
    dispatch_compute!(a.dtype(), T => run_binary::<T>(op, out, a, b, shape, alpha.map(T::from_f64)))
}

/// `a op b` with broadcasting. `alpha` scales b (add/sub).
pub fn binary(op: Binary, a: &Operand, b: &Operand, alpha: Option<f64>) -> Result<Tensor> {
    let inputs = tensors(&[a, b]);
    if op.differentiable() && autograd::needs_grad(&inputs) {
        return autograd::record(
            &inputs,
            || binary_raw(op, a, b, alpha),
            |out| Ok(BinaryBackward::new(op, a, b, alpha, out).into()),
        );
    }
    binary_raw(op, a, b, alpha)
}

/// The tensors among some operands, in order (the node's edges).
fn tensors<'a>(ops: &[&'a Operand]) -> smallvec::SmallVec<[&'a Tensor; 3]> {
    ops.iter().filter_map(|o| if let Operand::T(t) = o { Some(t) } else { None }).collect()
}

fn binary_raw(op: Binary, a: &Operand, b: &Operand, alpha: Option<f64>) -> Result<Tensor> {
    if super::on_gpu(&[a, b]) {
        return gpu_binary(op, a, b, alpha);
    }
    // Fast path for the common case: same dtype and shape, float, no casts.
    if let (Operand::T(x), Operand::T(y)) = (a, b) {
        let d = x.dtype();
        if matches!(d, DType::F32 | DType::F64)
            && y.dtype() == d
            && x.shape() == y.shape()
            && op != Binary::Atan2
        {
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
    let others = tensors(&[b]);
    if !op.differentiable() {
        return binary_raw_(op, a, b, alpha);
    }
    autograd::inplace(
        a,
        &others,
        op.name(),
        || binary_raw_(op, a, b, alpha),
        |x| binary(op, &Operand::T(x.clone()), b, alpha),
    )
}

fn binary_raw_(op: Binary, a: &Tensor, b: &Operand, alpha: Option<f64>) -> Result<()> {
    a.check_writable(op.name())?;
    if super::on_gpu(&[&Operand::T(a.clone()), b]) {
        let r = gpu_binary(op, &Operand::T(a.clone()), b, alpha)?;
        if r.shape() != a.shape() {
            bail!(
                Runtime,
                "output with shape {} doesn't match the broadcast shape {}",
                fmt_shape(a.shape()),
                fmt_shape(r.shape())
            );
        }
        check_inplace_cast(op.name(), r.dtype(), a.dtype())?;
        if !a.is_gpu() {
            bail!(Runtime, "{}_: Expected all tensors to be on the same device, but found at least two devices, cpu and gpu:0!", op.name());
        }
        copy_into(a, &r)?;
        a.storage().bump_version();
        return Ok(());
    }
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
    let (lc, lx, ly) = (
        cond.layout().broadcast_strides(&shape)?,
        x.layout().broadcast_strides(&shape)?,
        y.layout().broadcast_strides(&shape)?,
    );
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
        bail!(
            Runtime,
            "{} expected a boolean condition/mask, but got mask with dtype {}",
            op,
            mask.dtype().name()
        );
    }
    Ok(())
}

/// torch.where(cond, x, y).
pub fn where_(cond: &Tensor, x: &Operand, y: &Operand) -> Result<Tensor> {
    let inputs = tensors(&[x, y]);
    autograd::record(
        &inputs,
        || where_raw(cond, x, y),
        |_| Ok(WhereBackward::new(cond, x, y, false).into()),
    )
}

fn where_raw(cond: &Tensor, x: &Operand, y: &Operand) -> Result<Tensor> {
    check_bool_mask("where", cond)?;
    let dtype = result_type(&[x, y]);
    let shape = broadcast_shapes(&broadcast_shapes(cond.shape(), x.shape())?, y.shape())?;
    if cond.is_gpu() || super::on_gpu(&[x, y]) {
        return gpu_where(cond, x, y, dtype, &shape);
    }
    let (tx, ty) = (x.tensor_as(dtype)?, y.tensor_as(dtype)?);
    let out = Tensor::for_output(&shape, dtype)?;
    crate::dispatch_all!(dtype, T => run_where::<T>(&out, cond, &tx, &ty))?;
    Ok(out)
}

/// masked_fill / masked_fill_: `value` where mask is true; keeps t's dtype and shape.
pub fn masked_fill(t: &Tensor, mask: &Tensor, value: &Operand, in_place: bool) -> Result<Tensor> {
    let v = tensors(&[value]);
    let tv = Operand::T(t.clone());
    if in_place {
        autograd::inplace(
            t,
            &v,
            "masked_fill_",
            || masked_fill_raw(t, mask, value, true).map(drop),
            |x| masked_fill(x, mask, value, false),
        )?;
        return Ok(t.clone());
    }
    let mut inputs = vec![t];
    inputs.extend(v);
    autograd::record(
        &inputs,
        || masked_fill_raw(t, mask, value, false),
        |_| Ok(WhereBackward::new(mask, value, &tv, true).into()),
    )
}

fn masked_fill_raw(t: &Tensor, mask: &Tensor, value: &Operand, in_place: bool) -> Result<Tensor> {
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
        bail!(
            Runtime,
            "masked_fill_: mask of shape {} does not broadcast to the tensor's shape {}",
            fmt_shape(mask.shape()),
            fmt_shape(t.shape())
        );
    }
    if in_place {
        t.check_writable("masked_fill_")?;
    }
    // A mask that shares memory with `t` must be read before any write.
    let mask = &if std::sync::Arc::ptr_eq(mask.storage(), t.storage()) {
        super::copy::clone_as(mask, DType::Bool)?
    } else {
        mask.clone()
    };
    if t.is_gpu() || mask.is_gpu() {
        super::same_device("masked_fill", &[t, mask])?;
        let r = gpu_where(mask, value, &Operand::T(t.clone()), t.dtype(), &shape)?;
        if in_place {
            copy_into(t, &r)?;
            t.storage().bump_version();
        }
        return Ok(if in_place { t.clone() } else { r });
    }
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
    let mut inputs = vec![t];
    inputs.extend(min.map(|m| tensors(&[m])).unwrap_or_default());
    inputs.extend(max.map(|m| tensors(&[m])).unwrap_or_default());
    autograd::record(
        &inputs,
        || clamp_raw(t, min, max),
        |_| Ok(ClampBackward::new(t, min, max).into()),
    )
}

/// clamp_: the result must be castable back to t's dtype.
pub fn clamp_(t: &Tensor, min: Option<&Operand>, max: Option<&Operand>) -> Result<()> {
    let mut others = Vec::new();
    others.extend(min.map(|m| tensors(&[m])).unwrap_or_default());
    others.extend(max.map(|m| tensors(&[m])).unwrap_or_default());
    let raw = || -> Result<()> {
        t.check_writable("clamp_")?;
        let r = clamp_raw(t, min, max)?;
        check_inplace_cast("clamp", r.dtype(), t.dtype())?;
        copy_into(t, &r)?;
        t.storage().bump_version();
        Ok(())
    };
    autograd::inplace(t, &others, "clamp_", raw, |x| clamp(x, min, max))
}

fn clamp_raw(t: &Tensor, min: Option<&Operand>, max: Option<&Operand>) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        bail!(Runtime, "torch.clamp: At least one of 'min' or 'max' must not be None");
    }
    let mut out = t.clone();
    if let Some(lo) = min {
        out = binary_raw(Binary::Maximum, &Operand::T(out), lo, None)?;
    }
    if let Some(hi) = max {
        out = binary_raw(Binary::Minimum, &Operand::T(out), hi, None)?;
    }
    Ok(out)
}

// ---- backward ----

#[derive(Clone)]
pub struct UnaryBackward {
    op: Unary,
    input: Option<SavedTensor>,
    output: Option<SavedTensor>,
}

impl UnaryBackward {
    fn new(op: Unary, a: &Tensor, out: &Tensor) -> UnaryBackward {
        use Unary::*;
        let (input, output) = match op {
            Exp | Exp2 | Expm1 | Sqrt | Rsqrt | Reciprocal | Tan | Tanh | Sigmoid | Relu => {
                (false, true)
            }
            Neg | Sign | Floor | Ceil | Round | Trunc => (false, false),
            _ => (true, false),
        };
        UnaryBackward {
            op,
            input: input.then(|| SavedTensor::input(a)),
            output: output.then(|| SavedTensor::output(out, 0)),
        }
    }
}

fn capitalized(name: &str) -> String {
    name.split('_').map(|w| w[..1].to_uppercase() + &w[1..]).collect()
}

impl Backward for UnaryBackward {
    fn name(&self) -> String {
        format!("{}Backward0", capitalized(self.op.name()))
    }
    fn saves_tensors(&self) -> bool {
        self.input.is_some() || self.output.is_some()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        use math::*;
        use Unary::*;
        let g = &grads[0];
        let x = || self.input.as_ref().expect("saved input").unpack(node);
        let y = || self.output.as_ref().expect("saved output").unpack(node);
        let positive = |t: &Tensor| -> Result<Tensor> {
            binary(
                Binary::Gt,
                &Operand::T(t.clone()),
                &Operand::S(crate::tensor::Scalar::Int(0)),
                None,
            )
        };
        let (ln2, ln10) = (std::f64::consts::LN_2, std::f64::consts::LN_10);
        let r = match self.op {
            Neg => neg(g)?,
            Sign | Floor | Ceil | Round | Trunc => zeros(g.shape(), g.dtype(), g)?,
            Abs => mul(g, &un(Sign, &x()?)?)?,
            Square => mul(g, &scale(&x()?, 2.0)?)?,
            Relu => mul(g, &mask_as(&positive(&y()?)?, g.dtype())?)?,
            Exp => mul(g, &y()?)?,
            Exp2 => mul(g, &scale(&y()?, ln2)?)?,
            Expm1 => mul(g, &add_scalar(&y()?, 1.0)?)?,
            Log => div(g, &x()?)?,
            Log2 => div(g, &scale(&x()?, ln2)?)?,
            Log10 => div(g, &scale(&x()?, ln10)?)?,
            Log1p => div(g, &add_scalar(&x()?, 1.0)?)?,
            Sqrt => div(g, &scale(&y()?, 2.0)?)?,
            Rsqrt => mul(g, &scale(&pow_scalar(&y()?, 3.0)?, -0.5)?)?,
            Reciprocal => neg(&mul(g, &un(Square, &y()?)?)?)?,
            Sin => mul(g, &un(Cos, &x()?)?)?,
            Cos => neg(&mul(g, &un(Sin, &x()?)?)?)?,
            Tan => mul(g, &add_scalar(&un(Square, &y()?)?, 1.0)?)?,
            Asin => mul(g, &un(Rsqrt, &rsub_scalar(1.0, &un(Square, &x()?)?)?)?)?,
            Acos => neg(&mul(g, &un(Rsqrt, &rsub_scalar(1.0, &un(Square, &x()?)?)?)?)?)?,
            Atan => div(g, &add_scalar(&un(Square, &x()?)?, 1.0)?)?,
            Sinh => mul(g, &un(Cosh, &x()?)?)?,
            Cosh => mul(g, &un(Sinh, &x()?)?)?,
            Tanh => mul(g, &rsub_scalar(1.0, &un(Square, &y()?)?)?)?,
            Sigmoid => {
                let y = y()?;
                mul(g, &mul(&y, &rsub_scalar(1.0, &y)?)?)?
            }
            Erf => mul(
                g,
                &scale(&un(Exp, &neg(&un(Square, &x()?)?)?)?, std::f64::consts::FRAC_2_SQRT_PI)?,
            )?,
            Gelu => {
                // d/dx x·Φ(x) = Φ(x) + x·φ(x)
                let x = x()?;
                let cdf = scale(
                    &add_scalar(&un(Erf, &scale(&x, std::f64::consts::FRAC_1_SQRT_2)?)?, 1.0)?,
                    0.5,
                )?;
                let pdf = scale(
                    &un(Exp, &scale(&un(Square, &x)?, -0.5)?)?,
                    1.0 / (2.0 * std::f64::consts::PI).sqrt(),
                )?;
                mul(g, &add(&cdf, &mul(&x, &pdf)?)?)?
            }
            GeluTanh => {
                let (k, c) = ((2.0 / std::f64::consts::PI).sqrt(), 0.044_715);
                let x = x()?;
                let x2 = un(Square, &x)?;
                let t = un(Tanh, &scale(&add(&x, &scale(&mul(&x2, &x)?, c)?)?, k)?)?;
                let du = scale(&add_scalar(&scale(&x2, 3.0 * c)?, 1.0)?, k)?;
                let d = add(
                    &scale(&add_scalar(&t, 1.0)?, 0.5)?,
                    &mul(&scale(&x, 0.5)?, &mul(&rsub_scalar(1.0, &un(Square, &t)?)?, &du)?)?,
                )?;
                mul(g, &d)?
            }
            Silu => {
                let x = x()?;
                let s = un(Sigmoid, &x)?;
                mul(g, &mul(&s, &add_scalar(&mul(&x, &rsub_scalar(1.0, &s)?)?, 1.0)?)?)?
            }
            Mish => {
                let x = x()?;
                let t = un(Tanh, &un(Softplus { beta: 1.0, threshold: 20.0 }, &x)?)?;
                let d = add(
                    &t,
                    &mul(&mul(&x, &rsub_scalar(1.0, &un(Square, &t)?)?)?, &un(Sigmoid, &x)?)?,
                )?;
                mul(g, &d)?
            }
            LeakyRelu(slope) => {
                let m = mask_as(&positive(&x()?)?, g.dtype())?;
                mul(g, &add_scalar(&scale(&m, 1.0 - slope)?, slope)?)?
            }
            Elu(alpha) => {
                let x = x()?;
                let neg_part = scale(&un(Exp, &x)?, alpha)?;
                let d = where_(
                    &positive(&x)?,
                    &Operand::S(crate::tensor::Scalar::Float(1.0)),
                    &Operand::T(neg_part),
                )?;
                mul(g, &d)?
            }
            Softplus { beta, threshold } => {
                let bx = scale(&x()?, beta)?;
                let linear = binary(
                    Binary::Gt,
                    &Operand::T(bx.clone()),
                    &Operand::S(crate::tensor::Scalar::Float(threshold)),
                    None,
                )?;
                let d = where_(
                    &linear,
                    &Operand::S(crate::tensor::Scalar::Float(1.0)),
                    &Operand::T(un(Sigmoid, &bx)?),
                )?;
                mul(g, &d)?
            }
            LogicalNot | BitwiseNot | IsNan | IsInf | IsFinite => {
                unreachable!("not recorded: non-float output")
            }
        };
        Ok(vec![Some(r)])
    }
}

/// One operand of a recorded binary op: its edge index (tensors only), the
/// saved value when the backward reads it, or the Python number.
#[derive(Clone)]
struct Side {
    edge: Option<usize>,
    saved: Option<SavedTensor>,
    scalar: Option<crate::tensor::Scalar>,
    shape: crate::tensor::Shape,
    dtype: DType,
}

impl Side {
    fn new(o: &Operand, edge: &mut usize, save: bool) -> Side {
        match o {
            Operand::T(t) => {
                let e = *edge;
                *edge += 1;
                Side {
                    edge: Some(e),
                    saved: save.then(|| SavedTensor::input(t)),
                    scalar: None,
                    shape: t.shape().clone(),
                    dtype: t.dtype(),
                }
            }
            Operand::S(s) => Side {
                edge: None,
                saved: None,
                scalar: Some(*s),
                shape: Default::default(),
                dtype: DType::F64,
            },
        }
    }
    fn value(&self, node: &Arc<Node>) -> Result<Operand> {
        match (&self.saved, self.scalar) {
            (_, Some(s)) => Ok(Operand::S(s)),
            (Some(t), None) => Ok(Operand::T(t.unpack(node)?)),
            (None, None) => bail!(Runtime, "internal: operand not saved for backward"),
        }
    }
    fn needs(&self, node: &Node) -> bool {
        self.edge.is_some_and(|e| node.needs_input_grad(e))
    }
}

#[derive(Clone)]
pub struct BinaryBackward {
    op: Binary,
    a: Side,
    b: Side,
    alpha: Option<f64>,
    out: Option<SavedTensor>,
}

impl BinaryBackward {
    fn new(
        op: Binary,
        a: &Operand,
        b: &Operand,
        alpha: Option<f64>,
        out: &Tensor,
    ) -> BinaryBackward {
        use Binary::*;
        let rg = |o: &Operand| matches!(o, Operand::T(t) if t.requires_grad());
        let (ga, gb) = (rg(a), rg(b));
        // Which operands each gradient reads.
        let (save_a, save_b) = match op {
            Add | Sub => (false, false),
            Mul => (gb, ga),
            Div => (gb, ga || gb),
            Rem | Fmod => (gb, gb),
            Pow | Maximum | Minimum | Atan2 => (true, true),
            _ => (false, false),
        };
        let mut edge = 0;
        let a = Side::new(a, &mut edge, save_a);
        let b = Side::new(b, &mut edge, save_b);
        let out = (op == Pow && gb).then(|| SavedTensor::output(out, 0));
        BinaryBackward { op, a, b, alpha, out }
    }
}

impl Backward for BinaryBackward {
    fn name(&self) -> String {
        format!("{}Backward0", capitalized(self.op.name()))
    }
    fn saves_tensors(&self) -> bool {
        self.a.saved.is_some() || self.b.saved.is_some() || self.out.is_some()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        use math::*;
        use Binary::*;
        use Operand as O;
        let g = &grads[0];
        let (na, nb) = (self.a.needs(node), self.b.needs(node));
        let gt = |o: &Operand| binary(Mul, &O::T(g.clone()), o, None);
        let (mut ga, mut gb): (Option<Tensor>, Option<Tensor>) = (None, None);
        match self.op {
            Add | Sub => {
                if na {
                    ga = Some(g.clone());
                }
                if nb {
                    let s = self.alpha.unwrap_or(1.0) * if self.op == Sub { -1.0 } else { 1.0 };
                    gb = Some(if s == 1.0 { g.clone() } else { scale(g, s)? });
                }
            }
            Mul => {
                if na {
                    ga = Some(gt(&self.b.value(node)?)?);
                }
                if nb {
                    gb = Some(gt(&self.a.value(node)?)?);
                }
            }
            Div => {
                let b = self.b.value(node)?;
                let g_b = binary(Div, &O::T(g.clone()), &b, None)?;
                if nb {
                    // -g·a/b² = -(g/b)·(a/b)
                    let a_b = binary(Div, &self.a.value(node)?, &b, None)?;
                    gb = Some(neg(&mul(&g_b, &a_b)?)?);
                }
                if na {
                    ga = Some(g_b);
                }
            }
            Pow => {
                let (a, b) = (self.a.value(node)?, self.b.value(node)?);
                if na {
                    // g·b·a^(b-1); a zero exponent gives zero.
                    // A Python-number exponent stays a number (a 0-d tensor would round it to float32).
                    let bm1 = match &b {
                        O::S(crate::tensor::Scalar::Int(v)) => {
                            O::S(crate::tensor::Scalar::Int(v - 1))
                        }
                        O::S(s) => O::S(crate::tensor::Scalar::Float(s.to_f64() - 1.0)),
                        O::T(t) => O::T(binary(
                            Sub,
                            &O::T(t.clone()),
                            &O::S(crate::tensor::Scalar::Int(1)),
                            None,
                        )?),
                    };
                    let p = binary(Pow, &a, &bm1, None)?;
                    ga = Some(mul(g, &binary(Mul, &O::T(p), &b, None)?)?);
                }
                if nb {
                    // g·out·ln(a), 0 where a == 0 and b >= 0 (PyTorch's convention).
                    let out = self.out.as_ref().expect("saved").unpack(node)?;
                    let ln_a = match &a {
                        O::T(t) => un(Unary::Log, t)?,
                        O::S(s) => crate::ops::creation::scalar_tensor(
                            crate::tensor::Scalar::Float(s.to_f64().ln()),
                            out.dtype(),
                        )?,
                    };
                    let d = mul(&mul(g, &out)?, &ln_a)?;
                    let zero = crate::tensor::Scalar::Int(0);
                    let a0 = binary(Eq, &a, &O::S(zero), None)?;
                    let b_ge0 = binary(Ge, &b, &O::S(zero), None)?;
                    let m = binary(LogicalAnd, &O::T(a0), &O::T(b_ge0), None)?;
                    gb = Some(where_(&m, &O::S(zero), &O::T(d))?);
                }
            }
            Maximum | Minimum => {
                // Ties split the gradient in half (PyTorch's rule).
                let (a, b) = (self.a.value(node)?, self.b.value(node)?);
                let half =
                    where_(&binary(Eq, &a, &b, None)?, &O::T(scale(g, 0.5)?), &O::T(g.clone()))?;
                let (lose_a, lose_b) = if self.op == Maximum { (Lt, Gt) } else { (Gt, Lt) };
                let zero = O::S(crate::tensor::Scalar::Int(0));
                if na {
                    ga = Some(where_(&binary(lose_a, &a, &b, None)?, &zero, &O::T(half.clone()))?);
                }
                if nb {
                    gb = Some(where_(&binary(lose_b, &a, &b, None)?, &zero, &O::T(half))?);
                }
            }
            Atan2 => {
                let (a, b) = (self.a.value(node)?, self.b.value(node)?);
                let sq = |o: &Operand| binary(Mul, o, o, None);
                let denom = add(&sq(&a)?, &sq(&b)?)?;
                let gd = div(g, &denom)?;
                if na {
                    ga = Some(binary(Mul, &O::T(gd.clone()), &b, None)?);
                }
                if nb {
                    gb = Some(neg(&binary(Mul, &O::T(gd), &a, None)?)?);
                }
            }
            Rem | Fmod => {
                if na {
                    ga = Some(g.clone());
                }
                if nb {
                    let q = binary(Div, &self.a.value(node)?, &self.b.value(node)?, None)?;
                    let q = un(if self.op == Rem { Unary::Floor } else { Unary::Trunc }, &q)?;
                    gb = Some(neg(&mul(g, &q)?)?);
                }
            }
            _ => unreachable!("not differentiable"),
        }
        let mut out = vec![None; node.edges.len()];
        if let (Some(e), Some(ga)) = (self.a.edge, ga) {
            out[e] = Some(reduce_grad(&ga, &self.a.shape, self.a.dtype)?);
        }
        if let (Some(e), Some(gb)) = (self.b.edge, gb) {
            out[e] = Some(reduce_grad(&gb, &self.b.shape, self.b.dtype)?);
        }
        Ok(out)
    }
}

/// where(cond, x, y) and masked_fill (where(mask, value, t)).
#[derive(Clone)]
pub struct WhereBackward {
    cond: SavedTensor,
    x: Side,
    y: Side,
    name: &'static str,
}

impl WhereBackward {
    /// `y_first`: the node lists y's edge before x's (masked_fill: t, value).
    fn new(cond: &Tensor, x: &Operand, y: &Operand, y_first: bool) -> WhereBackward {
        let mut edge = 0;
        let (x, y) = if y_first {
            let y = Side::new(y, &mut edge, false);
            (Side::new(x, &mut edge, false), y)
        } else {
            (Side::new(x, &mut edge, false), Side::new(y, &mut edge, false))
        };
        WhereBackward {
            cond: SavedTensor::input(cond),
            x,
            y,
            name: if y_first { "MaskedFillBackward0" } else { "WhereBackward0" },
        }
    }
}

impl Backward for WhereBackward {
    fn name(&self) -> String {
        self.name.to_string()
    }
    fn saves_tensors(&self) -> bool {
        true
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let (g, cond) = (&grads[0], self.cond.unpack(node)?);
        let zero = Operand::S(crate::tensor::Scalar::Int(0));
        let mut out = vec![None; node.edges.len()];
        if self.x.needs(node) {
            let gx = where_(&cond, &Operand::T(g.clone()), &zero)?;
            out[self.x.edge.expect("tensor")] =
                Some(math::reduce_grad(&gx, &self.x.shape, self.x.dtype)?);
        }
        if self.y.needs(node) {
            let gy = where_(&cond, &zero, &Operand::T(g.clone()))?;
            out[self.y.edge.expect("tensor")] =
                Some(math::reduce_grad(&gy, &self.y.shape, self.y.dtype)?);
        }
        Ok(out)
    }
}

/// clamp with number or tensor bounds: the gradient passes where the input is
/// within the bounds (inclusive), and to a tensor bound where it was clamped.
#[derive(Clone)]
pub struct ClampBackward {
    input: SavedTensor,
    min: Option<Side>,
    max: Option<Side>,
}

impl ClampBackward {
    fn new(t: &Tensor, min: Option<&Operand>, max: Option<&Operand>) -> ClampBackward {
        let mut edge = 1;
        let min = min.map(|m| Side::new(m, &mut edge, true));
        let max = max.map(|m| Side::new(m, &mut edge, true));
        ClampBackward { input: SavedTensor::input(t), min, max }
    }
}

impl Backward for ClampBackward {
    fn name(&self) -> String {
        "ClampBackward1".to_string()
    }
    fn saves_tensors(&self) -> bool {
        true
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let (g, x) = (&grads[0], Operand::T(self.input.unpack(node)?));
        let zero = Operand::S(crate::tensor::Scalar::Int(0));
        let mut out = vec![None; node.edges.len()];
        let mut keep: Option<Tensor> = None;
        for (side, inside, outside) in
            [(&self.min, Binary::Ge, Binary::Lt), (&self.max, Binary::Le, Binary::Gt)]
        {
            let Some(side) = side else { continue };
            let bound = side.value(node)?;
            let m = binary(inside, &x, &bound, None)?;
            keep = Some(match keep {
                None => m,
                Some(k) => binary(Binary::LogicalAnd, &Operand::T(k), &Operand::T(m), None)?,
            });
            if side.needs(node) {
                let gb =
                    where_(&binary(outside, &x, &bound, None)?, &Operand::T(g.clone()), &zero)?;
                out[side.edge.expect("tensor")] =
                    Some(math::reduce_grad(&gb, &side.shape, side.dtype)?);
            }
        }
        if node.needs_input_grad(0) {
            out[0] = Some(where_(&keep.expect("a bound"), &Operand::T(g.clone()), &zero)?);
        }
        Ok(out)
    }
}

// ---- GPU: the same dtype rules, kernels from backend::gpu::elementwise ----

use crate::backend::gpu::elementwise::{self as gk, Arg as GArg};
use crate::tensor::Device;

/// Code and arguments of a float unary op in shaders/elementwise.wgsl.
fn unary_code(op: Unary) -> (u32, f32, f32) {
    use Unary::*;
    match op {
        Neg => (0, 0.0, 0.0),
        Abs => (1, 0.0, 0.0),
        Sign => (2, 0.0, 0.0),
        Square => (3, 0.0, 0.0),
        Relu => (4, 0.0, 0.0),
        Floor => (5, 0.0, 0.0),
        Ceil => (6, 0.0, 0.0),
        Round => (7, 0.0, 0.0),
        Trunc => (8, 0.0, 0.0),
        Exp => (9, 0.0, 0.0),
        Exp2 => (10, 0.0, 0.0),
        Log => (11, 0.0, 0.0),
        Log2 => (12, 0.0, 0.0),
        Log10 => (13, 0.0, 0.0),
        Log1p => (14, 0.0, 0.0),
        Expm1 => (15, 0.0, 0.0),
        Sqrt => (16, 0.0, 0.0),
        Rsqrt => (17, 0.0, 0.0),
        Reciprocal => (18, 0.0, 0.0),
        Sin => (19, 0.0, 0.0),
        Cos => (20, 0.0, 0.0),
        Tan => (21, 0.0, 0.0),
        Asin => (22, 0.0, 0.0),
        Acos => (23, 0.0, 0.0),
        Atan => (24, 0.0, 0.0),
        Sinh => (25, 0.0, 0.0),
        Cosh => (26, 0.0, 0.0),
        Tanh => (27, 0.0, 0.0),
        Sigmoid => (28, 0.0, 0.0),
        Erf => (29, 0.0, 0.0),
        Gelu => (30, 0.0, 0.0),
        GeluTanh => (31, 0.0, 0.0),
        Silu => (32, 0.0, 0.0),
        Mish => (33, 0.0, 0.0),
        LeakyRelu(s) => (34, s as f32, 0.0),
        Elu(a) => (35, a as f32, 0.0),
        Softplus { beta, threshold } => (36, beta as f32, threshold as f32),
        IsNan => (0, 0.0, 0.0),
        IsInf => (1, 0.0, 0.0),
        IsFinite => (2, 0.0, 0.0),
        LogicalNot => (3, 0.0, 0.0),
        BitwiseNot => (40, 0.0, 0.0),
    }
}

fn binary_code(op: Binary) -> u32 {
    use Binary::*;
    match op {
        Add => 0,
        Sub => 1,
        Mul => 2,
        Div => 3,
        DivTrunc => 4,
        FloorDiv => 5,
        Rem => 6,
        Fmod => 7,
        Pow => 8,
        Maximum => 9,
        Minimum => 10,
        Atan2 => 11,
        BitAnd => 12,
        BitOr => 13,
        BitXor => 14,
        Eq => 0,
        Ne => 1,
        Lt => 2,
        Le => 3,
        Gt => 4,
        Ge => 5,
        LogicalAnd => 6,
        LogicalOr => 7,
        LogicalXor => 8,
    }
}

fn gpu_unary(op: Unary, a: &Tensor) -> Result<Tensor> {
    let out_dtype = op.out_dtype(a.dtype())?;
    let (code, s0, s1) = unary_code(op);
    // Float kernels read float16 as is (their float16 variant), anything else as float32.
    let float_in = |t: &Tensor| to_dtype(t, t.dtype().gpu_compute());
    if out_dtype == DType::Bool {
        // isnan/isinf/isfinite/logical_not read any input as a float.
        let x = float_in(a)?;
        let out = Tensor::empty_on(a.shape(), DType::Bool, Device::Gpu)?;
        gk::launch("classify", code, &out, [Some(GArg::T(&x)), None, None], [0; 3])?;
        return Ok(out);
    }
    if !out_dtype.is_float() {
        // Integer ops run on int32 words (bool and uint8 via int32, then cast back).
        let x = to_dtype(a, DType::I64)?;
        let out = Tensor::empty_on(a.shape(), DType::I64, Device::Gpu)?;
        gk::launch("unary_i32", code, &out, [Some(GArg::T(&x)), None, None], [0; 3])?;
        return to_dtype(&out, out_dtype);
    }
    let x = float_in(a)?;
    let out = Tensor::empty_on(a.shape(), x.dtype(), Device::Gpu)?;
    gk::launch(
        "unary",
        code,
        &out,
        [Some(GArg::T(&x)), None, None],
        [s0.to_bits(), s1.to_bits(), 0],
    )?;
    to_dtype(&out, out_dtype)
}

/// A GPU kernel operand in `compute`'s representation.
enum GOperand {
    T(Tensor),
    S(u32),
}

impl GOperand {
    fn new(o: &Operand, compute: DType) -> Result<GOperand> {
        Ok(match o {
            Operand::T(t) => GOperand::T(to_dtype(t, compute)?),
            Operand::S(s) => GOperand::S(gk::word(*s, compute)?),
        })
    }
    fn arg(&self) -> GArg<'_> {
        match self {
            GOperand::T(t) => GArg::T(t),
            GOperand::S(w) => GArg::S(*w),
        }
    }
}

fn gpu_binary(op: Binary, a: &Operand, b: &Operand, alpha: Option<f64>) -> Result<Tensor> {
    let (a, b) = (super::gpu_operand(op.name(), a)?, super::gpu_operand(op.name(), b)?);
    let common = result_type(&[&a, &b]);
    let (compute, out_dtype) = op.dtypes(common)?;
    binary_checks(op, &b, alpha, common, compute)?;
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    // Float ops run in float16 kernels on float16 operands, else in float32;
    // bool and uint8 arithmetic runs on int32 words (the cast back saturates
    // or wraps as PyTorch does).
    let kcompute = if compute.is_float() { common.gpu_compute() } else { DType::I64 };
    let (ga, gb) = (GOperand::new(&a, kcompute)?, GOperand::new(&b, kcompute)?);
    let float = kcompute.is_float();
    let alpha_word = match alpha {
        None => {
            if float {
                1f32.to_bits()
            } else {
                1
            }
        }
        Some(al) => {
            if float {
                (al as f32).to_bits()
            } else {
                al as i64 as i32 as u32
            }
        }
    };
    let (entry, kout) = match (op.is_compare(), float) {
        (true, true) => ("compare", DType::Bool),
        (true, false) => ("compare_i32", DType::Bool),
        (false, true) => ("binary", kcompute),
        (false, false) => ("binary_i32", DType::I64),
    };
    if !float && op == Binary::Atan2 {
        bail!(Runtime, "\"atan2\" not implemented for '{}'", compute.name());
    }
    let out = Tensor::empty_on(&shape, kout, Device::Gpu)?;
    gk::launch(
        entry,
        binary_code(op),
        &out,
        [Some(ga.arg()), Some(gb.arg()), None],
        [0, 0, alpha_word],
    )?;
    to_dtype(&out, out_dtype)
}

fn gpu_where(
    cond: &Tensor,
    x: &Operand,
    y: &Operand,
    dtype: DType,
    shape: &[usize],
) -> Result<Tensor> {
    super::same_device("where", &[cond])?;
    let (x, y) = (super::gpu_operand("where", x)?, super::gpu_operand("where", y)?);
    let (gx, gy) = (GOperand::new(&x, dtype)?, GOperand::new(&y, dtype)?);
    let out = Tensor::empty_on(shape, dtype, Device::Gpu)?;
    let entry = if dtype == DType::F16 { "where_t" } else { "where_" };
    gk::launch(entry, 0, &out, [Some(gx.arg()), Some(gy.arg()), Some(GArg::T(cond))], [0; 3])?;
    Ok(out)
}
