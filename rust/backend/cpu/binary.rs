//! CPU loops of the binary ops and where (ops/elementwise/): arithmetic and
//! comparisons over broadcast strided operands, a scalar operand read through
//! a stride-0 pointer.

use super::elementwise::{map2, map3, Arith};
use super::unary::FloatMath;
use super::{vmath, P};
use crate::bail;
use crate::error::Result;
use crate::ops::elementwise::Binary;
use crate::tensor::{DType, Element, Tensor};
use crate::{dispatch_compute, dispatch_float};

pub fn run_binary<T: Arith>(
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
            LogicalAnd => cmp!(|x: T, y: T| !x.is_zero() & !y.is_zero()),
            LogicalOr => cmp!(|x: T, y: T| !x.is_zero() | !y.is_zero()),
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
pub fn float_scalar<T: Arith>(
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
    if T::DTYPE == DType::F32 && matches!(op, Fmod | Rem | FloorDiv) {
        fn f32_arg<T>((p, s): Arg<T>) -> Arg<f32> {
            (P(p.get() as *mut f32), s)
        }
        return fmod_family_f32(op, f32_arg(po), f32_arg(pa), f32_arg(pb), shape);
    }
    if matches!(op, FloorDiv | Rem | DivTrunc) && matches!(T::DTYPE, DType::I64 | DType::I32) {
        fn cast<T, U>((p, s): Arg<T>) -> Arg<U> {
            (P(p.get() as *mut U), s)
        }
        return match T::DTYPE {
            DType::I64 => int_division::<i64>(op, cast(po), cast(pa), cast(pb), shape),
            _ => int_division::<i32>(op, cast(po), cast(pa), cast(pb), shape),
        };
    }
    macro_rules! go {
        ($f:expr) => {
            // SAFETY: all layouts span `shape` within their storages.
            unsafe { map2(shape, po, pa, pb, $f) }
        };
    }
    match (op, alpha) {
        (Add, Some(al)) => go!(move |x: T, y: T| x.add(y.mul(al))),
        (Sub, Some(al)) => go!(move |x: T, y: T| x.sub(y.mul(al))),
        (Add, None) => go!(move |x: T, y: T| x.add(y)),
        (Sub, None) => go!(move |x: T, y: T| x.sub(y)),
        (Mul, _) => go!(move |x: T, y: T| x.mul(y)),
        (Div | DivTrunc, _) => go!(move |x: T, y: T| x.div(y)),
        (FloorDiv, _) => go!(move |x: T, y: T| x.floor_div(y)),
        (Rem, _) => go!(move |x: T, y: T| x.rem(y)),
        (Fmod, _) => go!(move |x: T, y: T| x.fmod(y)),
        (Pow, _) => go!(move |x: T, y: T| x.pow(y)),
        (Maximum, _) => go!(move |x: T, y: T| x.max(y)),
        (Minimum, _) => go!(move |x: T, y: T| x.min(y)),
        (BitAnd, _) => go!(move |x: T, y: T| T::from_i64(x.to_i64() & y.to_i64())),
        (BitOr, _) => go!(move |x: T, y: T| T::from_i64(x.to_i64() | y.to_i64())),
        (BitXor, _) => go!(move |x: T, y: T| T::from_i64(x.to_i64() ^ y.to_i64())),
        _ => bail!(Runtime, "\"{}\" not implemented for '{}'", op.name(), T::DTYPE.name()),
    }
    Ok(())
}

/// An integer type whose division runs in float64 lanes: the quotient of
/// integers below 2^51 in magnitude, rounded to float64, has the floor (and
/// truncation) of the exact one (an integer k strictly between them would be
/// within |a/b|·2^-53 < 1/|b| of a/b, but a/b is at least 1/|b| from any
/// integer it is not). Other operands take the integer division.
trait FloatDivisible: Arith {
    /// The value as float64 when it is in range, for division.
    fn wide(self) -> Option<f64>;
    /// An integral float64 within range as the integer.
    fn narrow(q: f64) -> Self;
    /// The result that marks a lane for the integer division.
    const MARK: Self;
}

/// 1.5·2^52: integers below 2^51 in magnitude added to it are its mantissa,
/// so conversions are an integer add and a float subtract (AVX2 has no
/// int64 <-> float64 conversions; LLVM made them scalar).
const MAGIC: f64 = 6_755_399_441_055_744.0;

impl FloatDivisible for i64 {
    #[inline(always)]
    fn wide(self) -> Option<f64> {
        let in_range = (self.wrapping_add(1 << 51) as u64) < (1 << 52);
        let v = f64::from_bits(self.wrapping_add(MAGIC.to_bits() as i64) as u64) - MAGIC;
        in_range.then_some(v)
    }
    #[inline(always)]
    fn narrow(q: f64) -> i64 {
        ((q + MAGIC).to_bits() as i64).wrapping_sub(MAGIC.to_bits() as i64)
    }
    const MARK: i64 = i64::MIN;
}

impl FloatDivisible for i32 {
    #[inline(always)]
    fn wide(self) -> Option<f64> {
        // i32::MIN / -1 overflows (the integer division wraps).
        (self != i32::MIN).then_some(self as f64)
    }
    #[inline(always)]
    fn narrow(q: f64) -> i32 {
        q as i32
    }
    const MARK: i32 = i32::MIN;
}

/// floor_divide, remainder (the divisor's sign) and truncating division of
/// integers through float64 division, vectorized (the integer division is one
/// `idiv` per element: 2.4x PyTorch's time); lanes out of range or dividing
/// by zero are redone by the integer division.
fn int_division<T: FloatDivisible>(
    op: Binary,
    po: Arg<T>,
    pa: Arg<T>,
    pb: Arg<T>,
    shape: &[usize],
) -> Result<()> {
    use super::elementwise::map2_redo;
    // The float64 quotient of a and b, rounded by `round`, or the mark.
    #[inline(always)]
    fn quotient<T: FloatDivisible>(a: T, b: T, round: fn(f64) -> f64) -> T {
        match (a.wide(), b.wide()) {
            (Some(x), Some(y)) if y != 0.0 => T::narrow(round(x / y)),
            _ => T::MARK,
        }
    }
    macro_rules! go {
        ($fast:expr, $exact:expr) => {
            // SAFETY: all layouts span `shape` within their storages.
            unsafe { map2_redo(shape, po, pa, pb, $fast, $exact, |r: T| r == T::MARK) }
        };
    }
    match op {
        Binary::FloorDiv => go!(
            #[inline(always)]
            |a: T, b: T| quotient(a, b, f64::floor),
            |a: T, b: T| a.floor_div(b)
        ),
        Binary::Rem => go!(
            #[inline(always)]
            |a: T, b: T| {
                let q = quotient(a, b, f64::floor);
                if q == T::MARK {
                    q
                } else {
                    a.sub(q.mul(b))
                }
            },
            |a: T, b: T| a.rem(b)
        ),
        _ => go!(
            #[inline(always)]
            |a: T, b: T| quotient(a, b, f64::trunc),
            |a: T, b: T| a.div(b)
        ),
    }
    Ok(())
}

/// fmod, remainder and floor_divide on float32 from `vmath::fmod` (vectors,
/// where libm's fmodf is a loop per element); the lanes it leaves NaN are
/// redone with libm.
fn fmod_family_f32(
    op: Binary,
    po: Arg<f32>,
    pa: Arg<f32>,
    pb: Arg<f32>,
    shape: &[usize],
) -> Result<()> {
    use super::elementwise::{floor_div_from_fmod, map2_redo, rem_from_fmod};
    macro_rules! go {
        ($fast:expr, $exact:expr) => {
            // SAFETY: all layouts span `shape` within their storages.
            unsafe { map2_redo(shape, po, pa, pb, $fast, $exact, f32::is_nan) }
        };
    }
    match op {
        Binary::Rem => go!(
            #[inline(always)]
            |x: f32, y: f32| rem_from_fmod(vmath::fmod(x, y), y),
            |x: f32, y: f32| x.rem(y)
        ),
        Binary::FloorDiv => go!(
            #[inline(always)]
            |x: f32, y: f32| floor_div_from_fmod(x, y, vmath::fmod(x, y)),
            |x: f32, y: f32| x.floor_div(y)
        ),
        _ => go!(vmath::fmod, |x: f32, y: f32| x % y),
    }
    Ok(())
}

/// The float-only binary ops (`Binary::float_only`).
fn run_float_binary<T: FloatMath>(
    op: Binary,
    out: &Tensor,
    a: &Tensor,
    b: &Tensor,
    shape: &[usize],
) -> Result<()> {
    use Binary::*;
    let (la, lb) = (a.layout().broadcast_strides(shape)?, b.layout().broadcast_strides(shape)?);
    if matches!(op, Atan2 | Hypot) && T::DTYPE == DType::F32 {
        let (o, x, y) = (
            (P(out.ptr::<f32>()?), out.strides()),
            (P(a.ptr::<f32>()?), &la[..]),
            (P(b.ptr::<f32>()?), &lb[..]),
        );
        // SAFETY: all layouts span `shape` within their storages.
        unsafe {
            match op {
                Atan2 => map2(shape, o, x, y, vmath::atan2),
                _ => map2(shape, o, x, y, vmath::hypot),
            }
        };
        return Ok(());
    }
    let (po, pa, pb) = (
        (P(out.ptr::<T>()?), out.strides()),
        (P(a.ptr::<T>()?), &la[..]),
        (P(b.ptr::<T>()?), &lb[..]),
    );
    macro_rules! go {
        ($f:expr) => {
            // SAFETY: all layouts span `shape` within their storages.
            unsafe { map2(shape, po, pa, pb, $f) }
        };
    }
    match op {
        Atan2 => go!(move |y: T, x: T| y.atan2(x)),
        Hypot => go!(move |x: T, y: T| x.hypot(y)),
        LogAddExp => go!(move |x: T, y: T| log_add_exp(x, y, false)),
        LogAddExp2 => go!(move |x: T, y: T| log_add_exp(x, y, true)),
        // xlogy(0, y) = 0 for every y but NaN (PyTorch's convention).
        Xlogy => go!(move |x: T, y: T| {
            if y.is_nan() {
                y
            } else if x == <T as num_traits::Zero>::zero() {
                <T as num_traits::Zero>::zero()
            } else {
                x * y.ln()
            }
        }),
        _ => bail!(Runtime, "\"{}\" has no float kernel", op.name()),
    }
    Ok(())
}

/// log(e^x + e^y) (or log2(2^x + 2^y)) as max + log1p(e^-|x - y|): no overflow.
#[inline(always)]
fn log_add_exp<T: FloatMath>(x: T, y: T, base2: bool) -> T {
    // Equal infinities: their difference is NaN, the answer is the infinity.
    if x.is_infinite() && x == y {
        return x;
    }
    let (m, d) = (num_traits::Float::max(x, y), num_traits::Float::abs(x - y));
    if x.is_nan() || y.is_nan() {
        return x + y;
    }
    if base2 {
        m + (-d).exp2().ln_1p() / T::from_f(std::f64::consts::LN_2)
    } else {
        m + (-d).exp().ln_1p()
    }
}

pub fn binary_into(
    op: Binary,
    out: &Tensor,
    a: &Tensor,
    b: &Tensor,
    shape: &[usize],
    alpha: Option<f64>,
) -> Result<()> {
    if op.float_only() {
        return dispatch_float!(a.dtype(), T => run_float_binary::<T>(op, out, a, b, shape));
    }
    dispatch_compute!(a.dtype(), T => run_binary::<T>(op, out, a, b, shape, alpha.map(T::from_f64)))
}

/// ReLU's gradient in one pass: out = g where y > 0, else 0 (y: ReLU's
/// output), as PyTorch's threshold_backward selects; the recorded form (gt,
/// cast, mul) makes three passes.
pub fn relu_backward(out: &Tensor, g: &Tensor, y: &Tensor) -> Result<()> {
    let shape = out.shape().clone();
    let (lg, ly) = (g.layout().broadcast_strides(&shape)?, y.layout().broadcast_strides(&shape)?);
    dispatch_float!(out.dtype(), T => {
        let zero = <T as num_traits::Zero>::zero();
        // SAFETY: all layouts span `shape` within their storages.
        unsafe {
            map2(
                &shape,
                (P(out.ptr::<T>()?), out.strides()),
                (P(g.ptr::<T>()?), &lg[..]),
                (P(y.ptr::<T>()?), &ly[..]),
                move |g: T, y: T| if y > zero { g } else { zero },
            )
        };
        Ok(())
    })
}

pub fn run_where<T: Element>(out: &Tensor, cond: &Tensor, x: &Tensor, y: &Tensor) -> Result<()> {
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
