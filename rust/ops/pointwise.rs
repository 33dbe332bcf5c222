//! Composite pointwise ops, written with the elementwise ops (so autograd and
//! the GPU come with them): addcmul, addcdiv, lerp, logit, nan_to_num,
//! isclose / allclose / equal; and the in-place form of any composite op.

use super::copy::{copy_into, to_dtype};
use super::elementwise::{binary, clamp, unary, where_, Binary, Unary};
use super::Operand;
use crate::autograd::{self, GradMode};
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::fmt_shape;
use crate::tensor::{DType, Scalar, Tensor};

fn t(x: &Tensor) -> Operand {
    Operand::T(x.clone())
}
fn f(v: f64) -> Operand {
    Operand::S(Scalar::Float(v))
}
fn bin(op: Binary, a: &Operand, b: &Operand) -> Result<Tensor> {
    binary(op, a, b, None)
}

/// The in-place form of a composite op: `f(target)` computed out of place,
/// then written into `target` (which must keep its shape and be able to hold
/// the result's dtype), through autograd's in-place rules.
pub fn composite_(
    target: &Tensor,
    others: &[&Tensor],
    name: &str,
    f: impl Fn(&Tensor) -> Result<Tensor>,
) -> Result<()> {
    autograd::inplace(
        target,
        others,
        name,
        || {
            target.check_writable(name)?;
            let r = f(target)?;
            check_inplace_result(name, &r, target)?;
            copy_into(target, &r)?;
            target.storage().bump_version();
            Ok(())
        },
        |x| f(x),
    )
}

fn check_inplace_result(name: &str, r: &Tensor, target: &Tensor) -> Result<()> {
    if r.shape() != target.shape() {
        bail!(
            Runtime,
            "{}: output with shape {} doesn't match the broadcast shape {}",
            name,
            fmt_shape(target.shape()),
            fmt_shape(r.shape())
        );
    }
    if r.dtype().category() > target.dtype().category() {
        bail!(
            Runtime,
            "result type {} can't be cast to the desired output type {} (in {})",
            r.dtype().name(),
            target.dtype().name(),
            name
        );
    }
    Ok(())
}

/// PyTorch's rule for scale arguments (value=, alpha=, beta=): integral
/// tensors take integral numbers only.
pub(crate) fn check_integral_scale(op: &str, arg: &str, dtype: DType, v: Scalar) -> Result<()> {
    if !dtype.is_float() && matches!(v, Scalar::Float(_)) {
        bail!(
            Runtime,
            "{}: For integral input tensors, argument {} must not be a floating point number.",
            op,
            arg
        );
    }
    Ok(())
}

fn common_dtype(ts: &[&Tensor]) -> DType {
    let ops: Vec<Operand> = ts.iter().map(|x| t(x)).collect();
    super::result_type(&ops.iter().collect::<Vec<_>>())
}

/// input + value · t1 · t2.
pub fn addcmul(input: &Tensor, t1: &Tensor, t2: &Tensor, value: Scalar) -> Result<Tensor> {
    super::same_device("addcmul", &[input, t1, t2])?;
    let common = common_dtype(&[input, t1, t2]);
    if common == DType::Bool {
        bail!(Runtime, "\"addcmul\" not implemented for 'Bool'");
    }
    check_integral_scale("addcmul", "value", common, value)?;
    if let Some(out) = fused(Fused::Addcmul(value.to_f64()), input, t1, Some(t2), false)? {
        return Ok(out);
    }
    let prod = bin(Binary::Mul, &t(t1), &t(t2))?;
    binary(Binary::Add, &t(input), &t(&prod), scale_arg(value))
}

/// input + value · t1 / t2 (true division; integer t1 / t2 raise, as in PyTorch).
pub fn addcdiv(input: &Tensor, t1: &Tensor, t2: &Tensor, value: Scalar) -> Result<Tensor> {
    super::same_device("addcdiv", &[input, t1, t2])?;
    if !t1.dtype().is_float() && !t2.dtype().is_float() {
        bail!(
            Runtime,
            "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes."
        );
    }
    check_integral_scale("addcdiv", "value", common_dtype(&[input, t1, t2]), value)?;
    if let Some(out) = fused(Fused::Addcdiv(value.to_f64()), input, t1, Some(t2), false)? {
        return Ok(out);
    }
    let q = bin(Binary::Div, &t(t1), &t(t2))?;
    binary(Binary::Add, &t(input), &t(&q), scale_arg(value))
}

fn scale_arg(v: Scalar) -> Option<f64> {
    let v = v.to_f64();
    (v != 1.0).then_some(v)
}

/// lerp(input, end, weight) = input + weight · (end - input), computed as
/// end - (end - input) · (1 - weight) where |weight| >= 0.5 (exact at weight 1).
pub fn lerp(input: &Tensor, end: &Tensor, weight: &Operand) -> Result<Tensor> {
    let mut ts = vec![input, end];
    if let Operand::T(w) = weight {
        ts.push(w);
    }
    super::same_device("lerp", &ts)?;
    for (what, x) in [("end", end)].into_iter().chain(match weight {
        Operand::T(w) => Some(("weight", w)),
        _ => None,
    }) {
        if x.dtype() != input.dtype() {
            bail!(
                Runtime,
                "lerp: expected dtype {} for `{}` but got dtype {}",
                input.dtype().name(),
                what,
                x.dtype().name()
            );
        }
    }
    if !input.dtype().is_float() {
        bail!(Runtime, "\"lerp\" not implemented for '{}'", input.dtype().name());
    }
    if let Some(out) = lerp_fused(input, end, weight, false)? {
        return Ok(out);
    }
    let diff = bin(Binary::Sub, &t(end), &t(input))?;
    let low =
        |w: &Operand| binary(Binary::Add, &t(input), &t(&bin(Binary::Mul, w, &t(&diff))?), None);
    let high = |w: &Operand| {
        // A number weight stays a number (two numbers would make a float32 tensor).
        let one_minus = match w {
            Operand::S(s) => Operand::S(Scalar::Float(1.0 - s.to_f64())),
            _ => t(&bin(Binary::Sub, &Operand::S(Scalar::Int(1)), w)?),
        };
        bin(Binary::Sub, &t(end), &t(&bin(Binary::Mul, &t(&diff), &one_minus)?))
    };
    match weight {
        Operand::S(w) if w.to_f64().abs() < 0.5 => low(weight),
        Operand::S(_) => high(weight),
        Operand::T(w) => {
            let small = {
                let _off = GradMode::set(false);
                bin(Binary::Lt, &t(&unary(Unary::Abs, w)?), &f(0.5))?
            };
            where_(&small, &t(&low(weight)?), &t(&high(weight)?))
        }
    }
}

/// log(x / (1 - x)), x clamped to [eps, 1 - eps] when eps is given.
pub fn logit(input: &Tensor, eps: Option<f64>) -> Result<Tensor> {
    let x = to_dtype(input, input.dtype().to_float())?;
    let x = match eps {
        Some(e) => clamp(&x, Some(&f(e)), Some(&f(1.0 - e)))?,
        None => x,
    };
    let one_minus = bin(Binary::Sub, &Operand::S(Scalar::Int(1)), &t(&x))?;
    unary(Unary::Log, &bin(Binary::Div, &t(&x), &t(&one_minus))?)
}

/// The largest finite value of a float dtype (torch.finfo(dtype).max).
pub fn finite_max(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 65504.0,
        DType::BF16 => 3.3895313892515355e38,
        DType::F32 => f32::MAX as f64,
        _ => f64::MAX,
    }
}

/// NaN -> `nan`, +inf -> `posinf`, -inf -> `neginf` (defaults: 0 and the
/// dtype's finite max / min); integer and bool tensors are copied.
pub fn nan_to_num(
    input: &Tensor,
    nan: Option<f64>,
    posinf: Option<f64>,
    neginf: Option<f64>,
) -> Result<Tensor> {
    let d = input.dtype();
    if !d.is_float() {
        return super::copy::clone(input);
    }
    let big = finite_max(d);
    let (nan, posinf, neginf) = (nan.unwrap_or(0.0), posinf.unwrap_or(big), neginf.unwrap_or(-big));
    if matches!(d, DType::F32 | DType::F64) && !input.is_gpu() && !autograd::needs_grad(&[input]) {
        // One pass on the CPU; the composite below carries the gradient and the GPU.
        let out = Tensor::for_output(input.shape(), d)?;
        crate::dispatch_float!(d, T => {
            let (nan, posinf, neginf) = (nan as T, posinf as T, neginf as T);
            // SAFETY: out is contiguous over input's shape; input's layout lies in its storage.
            unsafe {
                crate::backend::cpu::elementwise::map1(
                    input.shape(),
                    (crate::backend::cpu::P(out.ptr::<T>()?), out.strides()),
                    (crate::backend::cpu::P(input.ptr::<T>()?), input.strides()),
                    move |x: T| {
                        if x.is_nan() {
                            nan
                        } else if x == T::INFINITY {
                            posinf
                        } else if x == T::NEG_INFINITY {
                            neginf
                        } else {
                            x
                        }
                    },
                )
            };
        });
        return Ok(out);
    }
    let (is_nan, is_pos, is_neg) = {
        let _off = GradMode::set(false);
        (
            unary(Unary::IsNan, input)?,
            bin(Binary::Eq, &t(input), &f(f64::INFINITY))?,
            bin(Binary::Eq, &t(input), &f(f64::NEG_INFINITY))?,
        )
    };
    let r = where_(&is_neg, &f(neginf), &t(input))?;
    let r = where_(&is_pos, &f(posinf), &t(&r))?;
    where_(&is_nan, &f(nan), &t(&r))
}

/// |a - b| <= atol + rtol·|b| elementwise, or a == b (infinities), or both
/// NaN with equal_nan. Both tensors must have the same dtype, as in PyTorch.
pub fn isclose(a: &Tensor, b: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<Tensor> {
    if a.dtype() != b.dtype() {
        bail!(
            Runtime,
            "isclose: expected self and other to have the same dtype, but got {} and {}",
            a.dtype().name(),
            b.dtype().name()
        );
    }
    if rtol < 0.0 {
        bail!(Runtime, "isclose: rtol must be greater than or equal to zero, but got {}", rtol);
    }
    if atol < 0.0 {
        bail!(Runtime, "isclose: atol must be greater than or equal to zero, but got {}", atol);
    }
    super::same_device("isclose", &[a, b])?;
    let _off = GradMode::set(false);
    let eq = bin(Binary::Eq, &t(a), &t(b))?;
    if a.dtype() == DType::Bool {
        return Ok(eq);
    }
    // Integers are compared in a float dtype: no wrap-around of |a - b|.
    let fd = match a.dtype() {
        d if d.is_float() => d,
        _ if a.is_gpu() => DType::F32,
        _ => DType::F64,
    };
    let (fa, fb) = (to_dtype(a, fd)?, to_dtype(b, fd)?);
    let err = unary(Unary::Abs, &bin(Binary::Sub, &t(&fa), &t(&fb))?)?;
    let allowed = binary(Binary::Add, &f(atol), &t(&unary(Unary::Abs, &fb)?), Some(rtol))?;
    let within = bin(Binary::Le, &t(&err), &t(&allowed))?;
    let finite = unary(Unary::IsFinite, &err)?;
    let close = bin(Binary::LogicalAnd, &t(&within), &t(&finite))?;
    let mut out = bin(Binary::LogicalOr, &t(&eq), &t(&close))?;
    if equal_nan && a.dtype().is_float() {
        let both =
            bin(Binary::LogicalAnd, &t(&unary(Unary::IsNan, a)?), &t(&unary(Unary::IsNan, b)?))?;
        out = bin(Binary::LogicalOr, &t(&out), &t(&both))?;
    }
    Ok(out)
}

/// Whether every element is close (isclose); a Python bool.
pub fn allclose(a: &Tensor, b: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<bool> {
    let c = isclose(a, b, rtol, atol, equal_nan)?;
    let all = super::reduce::all_any(&c, None, false, true)?;
    Ok(super::copy::item(&all)?.to_i64() != 0)
}

/// Same shape and same values (after type promotion; NaN is unequal).
pub fn equal(a: &Tensor, b: &Tensor) -> Result<bool> {
    if a.device() != b.device() {
        bail!(
            Runtime,
            "Cannot compare two tensors on different devices. Got: {} and {}",
            a.device().name(),
            b.device().name()
        );
    }
    if a.shape() != b.shape() {
        return Ok(false);
    }
    let _off = GradMode::set(false);
    let eq = bin(Binary::Eq, &t(a), &t(b))?;
    let all = super::reduce::all_any(&eq, None, false, true)?;
    Ok(super::copy::item(&all)?.to_i64() != 0)
}

/// lerp through `fused` (None: not that case).
pub fn lerp_fused(
    input: &Tensor,
    end: &Tensor,
    weight: &Operand,
    into: bool,
) -> Result<Option<Tensor>> {
    match weight {
        Operand::S(w) => fused(Fused::LerpBy(w.to_f64()), input, end, None, into),
        Operand::T(w) => fused(Fused::Lerp, input, end, Some(w), into),
    }
}

/// The composite pointwise ops that `fused` runs in one pass.
#[derive(Clone, Copy)]
pub enum Fused {
    /// x + value · y · z.
    Addcmul(f64),
    /// x + value · y / z.
    Addcdiv(f64),
    /// lerp(x, y, z) with the weight z a tensor.
    Lerp,
    /// lerp(x, y, w) with a number weight w (no z).
    LerpBy(f64),
}

/// `op` in one pass over float32/float64 CPU tensors of one dtype when no
/// gradient is needed (the composites make two to four passes, each with a
/// temporary), into a new tensor or, with `into`, into x itself (the in-place
/// forms: then y and z must not share x's memory and x must keep its shape).
/// None (nothing done) for every other case, which the composites handle.
pub fn fused(
    op: Fused,
    x: &Tensor,
    y: &Tensor,
    z: Option<&Tensor>,
    into: bool,
) -> Result<Option<Tensor>> {
    use crate::backend::cpu::elementwise::{map2, map3};
    use crate::backend::cpu::P;
    let all: Vec<&Tensor> = [Some(x), Some(y), z].into_iter().flatten().collect();
    let d = x.dtype();
    if autograd::needs_grad(&all)
        || !matches!(d, DType::F32 | DType::F64)
        || all.iter().any(|t| t.is_gpu() || t.dtype() != d)
        || matches!(
            (op, z),
            (Fused::LerpBy(_), Some(_))
                | (Fused::Addcmul(_) | Fused::Addcdiv(_) | Fused::Lerp, None)
        )
    {
        return Ok(None);
    }
    let mut shape = x.shape().to_vec();
    for t in &all[1..] {
        shape = crate::tensor::layout::broadcast_shapes(&shape, t.shape())?.to_vec();
    }
    let out = if into {
        let shares = all[1..]
            .iter()
            .any(|t| crate::tensor::storage::Storage::same_memory(t.storage(), x.storage()));
        if shares || shape != x.shape().as_slice() {
            return Ok(None);
        }
        x.check_writable(match op {
            Fused::Addcmul(_) => "addcmul_",
            Fused::Addcdiv(_) => "addcdiv_",
            Fused::Lerp | Fused::LerpBy(_) => "lerp_",
        })?;
        x.clone()
    } else {
        Tensor::for_output(&shape, d)?
    };
    let lay = |t: &Tensor| t.layout().broadcast_strides(&shape).map(|s| s.to_vec());
    let (lx, ly) = (lay(x)?, lay(y)?);
    crate::dispatch_float!(d, T => {
        let f = |v: f64| <T as crate::tensor::dtype::Element>::from_f64(v);
        let (half, one) = (f(0.5), f(1.0));
        let (po, px, py) = ((P(out.ptr::<T>()?), out.strides()), (P(x.ptr::<T>()?), &lx[..]), (P(y.ptr::<T>()?), &ly[..]));
        // SAFETY: every layout spans `shape` within its storage; in place, out is x
        // element for element and y, z are other memory.
        unsafe {
            match (op, z) {
                (Fused::LerpBy(w), _) => {
                    // As the composite: from the nearer end, exact at both ends.
                    let (w, w1) = (f(w), f(1.0 - w));
                    if w.abs() < half {
                        map2(&shape, po, px, py, move |a: T, b: T| a + w * (b - a))
                    } else {
                        map2(&shape, po, px, py, move |a: T, b: T| b - (b - a) * w1)
                    }
                }
                (op, Some(z)) => {
                    let lz = lay(z)?;
                    let pz = (P(z.ptr::<T>()?), &lz[..]);
                    // A value of 1 is not multiplied by, as the composite's alpha.
                    let scale = |v: f64| (v != 1.0).then(|| f(v));
                    match op {
                        Fused::Addcmul(v) => match scale(v) {
                            None => map3(&shape, po, px, py, pz, |a: T, b: T, c: T| a + b * c),
                            Some(v) => map3(&shape, po, px, py, pz, move |a: T, b: T, c: T| a + b * c * v),
                        },
                        Fused::Addcdiv(v) => match scale(v) {
                            None => map3(&shape, po, px, py, pz, |a: T, b: T, c: T| a + b / c),
                            Some(v) => map3(&shape, po, px, py, pz, move |a: T, b: T, c: T| a + b / c * v),
                        },
                        _ => map3(&shape, po, px, py, pz, move |a: T, b: T, w: T| {
                            if w.abs() < half { a + w * (b - a) } else { b - (b - a) * (one - w) }
                        }),
                    }
                }
                // Returned above: these pairings are not fused.
                (_, None) => {}
            }
        }
    });
    if into {
        x.storage().bump_version();
    }
    Ok(Some(out))
}
