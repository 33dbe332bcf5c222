//! Unary ops: float math, activations, rounding, logical/bitwise not and the
//! float classifiers, with their in-place forms and backward formulas.

use super::{binary, where_};
use super::{capitalized, check_inplace_cast, Binary};
use crate::autograd::{self, math, Backward, Node, SavedTensor};
use crate::backend::cpu::unary::unary_into;
use crate::backend::gpu::elementwise::gpu_unary;
use crate::bail;
use crate::error::Result;
use crate::ops::copy::{copy_into, to_dtype};
use crate::ops::Operand;
use crate::tensor::{DType, Tensor};
use std::sync::Arc;

/// The unary ops, one row each: the variant (with its arguments), its name
/// in errors and grad_fn names, and the Tensor methods bound to it with their
/// in-place forms (each also a `rumus.<method>` function). Rows without
/// methods are bound by hand (keyword arguments). The rows also number the
/// GPU op codes (`UnaryCode`, `UNARY_*` in WGSL). `unary_ops!(m)` hands the
/// table to macro `m`.
#[macro_export]
macro_rules! unary_ops {
    ($m:ident) => {
        $crate::$m! {
            Neg "neg": neg neg_, negative negative_;
            Abs "abs": abs abs_, absolute absolute_;
            Sign "sign": sign sign_;
            Square "square": square square_;
            Relu "relu": relu relu_;
            Floor "floor": floor floor_;
            Ceil "ceil": ceil ceil_;
            Round "round": ;
            Trunc "trunc": trunc trunc_;
            Exp "exp": exp exp_;
            Exp2 "exp2": exp2 exp2_;
            Log "log": log log_;
            Log2 "log2": log2 log2_;
            Log10 "log10": log10 log10_;
            Log1p "log1p": log1p log1p_;
            Expm1 "expm1": expm1 expm1_;
            Sqrt "sqrt": sqrt sqrt_;
            Rsqrt "rsqrt": rsqrt rsqrt_;
            Reciprocal "reciprocal": reciprocal reciprocal_;
            Sin "sin": sin sin_;
            Cos "cos": cos cos_;
            Tan "tan": tan tan_;
            Asin "asin": asin asin_;
            Acos "acos": acos acos_;
            Atan "atan": atan atan_;
            Sinh "sinh": sinh sinh_;
            Cosh "cosh": cosh cosh_;
            Tanh "tanh": tanh tanh_;
            Asinh "asinh": asinh asinh_, arcsinh arcsinh_;
            Acosh "acosh": acosh acosh_, arccosh arccosh_;
            Atanh "atanh": atanh atanh_, arctanh arctanh_;
            Sigmoid "sigmoid": sigmoid sigmoid_;
            Erf "erf": erf erf_;
            Erfc "erfc": erfc erfc_;
            Erfinv "erfinv": erfinv erfinv_;
            Lgamma "lgamma": lgamma lgamma_;
            Digamma "digamma": digamma digamma_;
            Polygamma(i64) "polygamma": ;
            I0 "i0": i0 i0_;
            I0e "special_i0e": ;
            I1 "special_i1": ;
            I1e "special_i1e": ;
            Gelu "gelu": ;
            GeluTanh "gelu": ;
            Silu "silu": silu silu_;
            Mish "mish": mish mish_;
            LeakyRelu(f64) "leaky_relu": ;
            Elu(f64) "elu": ;
            Softplus(f64, f64) "softplus": ;
            Hardsigmoid "hardsigmoid": ;
            Hardswish "hardswish": ;
            SmoothL1(f64) "smooth_l1_loss": ;
            Huber(f64) "huber_loss": ;
            LogicalNot "logical_not": logical_not logical_not_;
            BitwiseNot "bitwise_not": bitwise_not bitwise_not_;
            IsNan "isnan": ;
            IsInf "isinf": ;
            IsFinite "isfinite": ;
        }
    };
}

/// Defines `Unary`, its names and its GPU op codes from the table.
#[macro_export]
macro_rules! define_unary {
    ($($v:ident $(($($arg:ty),*))? $name:literal : $($m:ident $($m_:ident)?),* ;)*) => {
        #[derive(Copy, Clone, Debug, PartialEq)]
        pub enum Unary {
            $($v $(($($arg),*))?),*
        }

        $crate::wgsl_codes! {
            /// Op codes of the unary kernels in shaders/elementwise.wgsl.
            pub enum UnaryCode = "UNARY" { $($v),* }
        }

        impl Unary {
            pub fn name(self) -> &'static str {
                match self {
                    $($crate::unary_pattern!($v $(($($arg),*))?) => $name),*
                }
            }
            /// The op code of the GPU kernels.
            pub fn code(self) -> UnaryCode {
                match self {
                    $($crate::unary_pattern!($v $(($($arg),*))?) => UnaryCode::$v),*
                }
            }
        }

        /// The table's methods (not their in-place forms): `rumus.<name>` too.
        pub const UNARY_FUNCTIONS: &[&str] = &[$($(stringify!($m),)*)*];
    };
}

/// A pattern for one variant of `Unary`, ignoring its arguments.
#[macro_export]
macro_rules! unary_pattern {
    ($v:ident) => {
        Unary::$v
    };
    ($v:ident ($($arg:ty),*)) => {
        Unary::$v(..)
    };
}

unary_ops!(define_unary);

impl Unary {
    /// Ops that keep integer dtypes; the others compute in float.
    fn keeps_ints(self) -> bool {
        use Unary::*;
        matches!(self, Neg | Abs | Sign | Square | Relu | Floor | Ceil | Round | Trunc)
    }
    pub(crate) fn out_dtype(self, input: DType) -> Result<DType> {
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
    if a.dtype().is_complex() {
        return crate::ops::complex::unary_op(op, a);
    }
    autograd::record(&[a], || unary_raw(op, a), |out| Ok(UnaryBackward::new(op, a, out).into()))
}

fn unary_raw(op: Unary, a: &Tensor) -> Result<Tensor> {
    if a.is_gpu() {
        return gpu_unary(op, a);
    }
    if op != Unary::BitwiseNot {
        let out_dtype = op.out_dtype(a.dtype())?;
        if let Some(out) = super::halfchunk::run(&[a], out_dtype, |x| unary_raw(op, &x[0]))? {
            return Ok(out);
        }
    }
    let (out_dtype, input) = unary_prepare(op, a)?;
    let compute = if out_dtype == DType::Bool { DType::Bool } else { out_dtype.compute() };
    let out = Tensor::for_output(a.shape(), compute)?;
    unary_into(op, &out, &input)?;
    to_dtype(&out, out_dtype)
}

/// In-place unary op (`t.exp_()`): the result must be castable back to t's dtype.
pub fn unary_(op: Unary, a: &Tensor) -> Result<()> {
    if a.dtype().is_complex() {
        return crate::ops::complex::unary_op_(op, a);
    }
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

/// The gradient in one CPU pass when it is not differentiated again (float32
/// or float64; `v` is the saved input, or the output for ReLU, tanh and
/// sigmoid); None for the recorded formulas (differentiable ops; on the GPU
/// the fusion layer joins them).
fn plain_grad(op: Unary, g: &Tensor, v: &Tensor) -> Result<Option<Tensor>> {
    use crate::backend::cpu::unary::{act_backward, has_act_backward};
    let plain = (op == Unary::Relu || has_act_backward(op))
        && !autograd::is_grad_enabled()
        && !g.is_gpu()
        && g.dtype() == v.dtype()
        && matches!(g.dtype(), DType::F32 | DType::F64);
    if !plain {
        return Ok(None);
    }
    let out = Tensor::empty_on(v.shape(), v.dtype(), v.device())?;
    if op == Unary::Relu {
        crate::backend::cpu::binary::relu_backward(&out, g, v)?;
    } else if !act_backward(op, &out, g, v)? {
        return Ok(None);
    }
    Ok(Some(out))
}

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
            Exp | Exp2 | Expm1 | Sqrt | Rsqrt | Reciprocal | Tan | Tanh | Sigmoid | Relu
            | Erfinv => (false, true),
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

impl Backward for UnaryBackward {
    fn name(&self) -> String {
        format!("{}Backward0", capitalized(self.op.name()))
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        use math::*;
        use Unary::*;
        let g = &grads[0];
        // Each saved tensor is unpacked once (saved_tensors_hooks count unpacks).
        let xs = self.input.as_ref().map(|s| s.unpack(node)).transpose()?;
        let ys = self.output.as_ref().map(|s| s.unpack(node)).transpose()?;
        let x = || -> Result<Tensor> { Ok(xs.clone().expect("saved input")) };
        let y = || -> Result<Tensor> { Ok(ys.clone().expect("saved output")) };
        let positive = |t: &Tensor| -> Result<Tensor> {
            binary(
                Binary::Gt,
                &Operand::T(t.clone()),
                &Operand::S(crate::tensor::Scalar::Int(0)),
                None,
            )
        };
        let num = |v: f64| Operand::S(crate::tensor::Scalar::Float(v));
        let cmp =
            |op: Binary, t: &Tensor, v: f64| binary(op, &Operand::T(t.clone()), &num(v), None);
        if let Some(v) = xs.as_ref().or(ys.as_ref()) {
            if let Some(r) = plain_grad(self.op, g, v)? {
                return Ok(vec![Some(r)]);
            }
        }
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
            Asinh => mul(g, &un(Rsqrt, &add_scalar(&un(Square, &x()?)?, 1.0)?)?)?,
            Acosh => mul(g, &un(Rsqrt, &add_scalar(&un(Square, &x()?)?, -1.0)?)?)?,
            Atanh => div(g, &rsub_scalar(1.0, &un(Square, &x()?)?)?)?,
            Sigmoid => {
                let y = y()?;
                mul(g, &mul(&y, &rsub_scalar(1.0, &y)?)?)?
            }
            Erf => mul(
                g,
                &scale(&un(Exp, &neg(&un(Square, &x()?)?)?)?, std::f64::consts::FRAC_2_SQRT_PI)?,
            )?,
            Erfc => mul(
                g,
                &scale(&un(Exp, &neg(&un(Square, &x()?)?)?)?, -std::f64::consts::FRAC_2_SQRT_PI)?,
            )?,
            // d erfinv(x) = √π/2 · exp(erfinv(x)²)
            Erfinv => {
                mul(g, &scale(&un(Exp, &un(Square, &y()?)?)?, std::f64::consts::PI.sqrt() / 2.0)?)?
            }
            Lgamma => mul(g, &un(Digamma, &x()?)?)?,
            Digamma => mul(g, &un(Polygamma(1), &x()?)?)?,
            Polygamma(n) => mul(g, &un(Polygamma(n + 1), &x()?)?)?,
            I0 => mul(g, &un(I1, &x()?)?)?,
            // i0e' = i1e - sign(x) i0e
            I0e => {
                let x = x()?;
                mul(g, &sub(&un(I1e, &x)?, &mul(&un(Sign, &x)?, &un(I0e, &x)?)?)?)?
            }
            // i1' = i0 - i1/x and i1e' = i0e - i1e (sign(x) + 1/x), both 1/2 at 0.
            I1 | I1e => {
                let x = x()?;
                let (i0, i1) = if self.op == I1 { (I0, I1) } else { (I0e, I1e) };
                let mut r = div(&un(i1, &x)?, &x)?;
                if self.op == I1e {
                    r = add(&r, &mul(&un(Sign, &x)?, &un(I1e, &x)?)?)?;
                }
                let d = sub(&un(i0, &x)?, &r)?;
                let zero = binary(
                    Binary::Eq,
                    &Operand::T(x),
                    &Operand::S(crate::tensor::Scalar::Int(0)),
                    None,
                )?;
                mul(
                    g,
                    &where_(&zero, &Operand::S(crate::tensor::Scalar::Float(0.5)), &Operand::T(d))?,
                )?
            }
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
                let t = un(Tanh, &un(Softplus(1.0, 20.0), &x)?)?;
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
            Softplus(beta, threshold) => {
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
            Hardsigmoid => {
                let x = x()?;
                let inside = binary(
                    Binary::LogicalAnd,
                    &Operand::T(cmp(Binary::Gt, &x, -3.0)?),
                    &Operand::T(cmp(Binary::Lt, &x, 3.0)?),
                    None,
                )?;
                mul(g, &scale(&mask_as(&inside, g.dtype())?, 1.0 / 6.0)?)?
            }
            Hardswish => {
                let x = x()?;
                let mid = add_scalar(&scale(&x, 1.0 / 3.0)?, 0.5)?;
                let d = where_(&cmp(Binary::Le, &x, 3.0)?, &Operand::T(mid), &num(1.0))?;
                mul(g, &where_(&cmp(Binary::Lt, &x, -3.0)?, &num(0.0), &Operand::T(d))?)?
            }
            // Linear in the middle, the slopes ±1 (smooth_l1) or ±delta (huber) outside.
            SmoothL1(edge) | Huber(edge) => {
                let x = x()?;
                let (mid, side) = match self.op {
                    SmoothL1(_) => (scale(&x, 1.0 / edge)?, 1.0),
                    _ => (x.clone(), edge),
                };
                let d = where_(&cmp(Binary::Ge, &x, edge)?, &num(side), &Operand::T(mid))?;
                mul(g, &where_(&cmp(Binary::Le, &x, -edge)?, &num(-side), &Operand::T(d))?)?
            }
            LogicalNot | BitwiseNot | IsNan | IsInf | IsFinite => {
                unreachable!("not recorded: non-float output")
            }
        };
        Ok(vec![Some(r)])
    }
}
