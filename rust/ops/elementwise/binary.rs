//! Binary ops: arithmetic, comparisons, logical and bitwise ops with
//! broadcasting, Python-number operands and PyTorch's dtype rules; in-place
//! forms; backward formulas.

use super::{capitalized, check_inplace_cast, tensors, where_, Side, Unary};
use crate::autograd::{self, math, Backward, Node, SavedTensor};
use crate::backend::cpu::binary::{binary_into, float_scalar, run_binary};
use crate::backend::cpu::P;
use crate::backend::gpu::elementwise::gpu_binary;
use crate::bail;
use crate::dispatch_float;
use crate::error::Result;
use crate::ops::copy::{copy_into, to_dtype};
use crate::ops::{on_gpu, result_type, Operand};
use crate::tensor::layout::{broadcast_shapes, fmt_shape};
use crate::tensor::{DType, Element, Tensor};
use std::sync::Arc;

crate::wgsl_codes! {
    /// Binary ops; the discriminants are the op codes of the binary and
    /// compare kernels in shaders/elementwise.wgsl (`BINARY_*`).
    pub enum Binary = "BINARY" {
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
    Hypot,
    LogAddExp,
    LogAddExp2,
    Xlogy,
}
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
            Hypot => "hypot",
            LogAddExp => "logaddexp",
            LogAddExp2 => "logaddexp2",
            Xlogy => "xlogy",
        }
    }
    /// Ops with a derivative (the rest give outputs that do not require grad).
    pub(crate) fn differentiable(self) -> bool {
        use Binary::*;
        matches!(
            self,
            Add | Sub
                | Mul
                | Div
                | Pow
                | Maximum
                | Minimum
                | Atan2
                | Rem
                | Fmod
                | Hypot
                | LogAddExp
                | LogAddExp2
                | Xlogy
        )
    }
    /// Ops with float kernels only (no integer loop): their operands are
    /// always cast to a float compute dtype.
    pub(crate) fn float_only(self) -> bool {
        use Binary::*;
        matches!(self, Atan2 | Hypot | LogAddExp | LogAddExp2 | Xlogy)
    }
    pub(crate) fn is_compare(self) -> bool {
        use Binary::*;
        matches!(self, Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor)
    }
    /// (dtype the kernel computes in, dtype of the result).
    pub(crate) fn dtypes(self, common: DType) -> Result<(DType, DType)> {
        use Binary::*;
        match self {
            _ if self.is_compare() => Ok((common.compute(), DType::Bool)),
            Div | Atan2 | Xlogy => Ok((common.to_float().compute(), common.to_float())),
            // PyTorch has float kernels only for these: integer inputs raise.
            Hypot | LogAddExp | LogAddExp2 if !common.is_float() => {
                bail!(Runtime, "\"{}\" not implemented for '{}'", self.name(), common.name())
            }
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

/// Integer division by zero and negative integer powers are errors, not UB.
fn check_int_divisor(op: Binary, b: &Tensor) -> Result<()> {
    use Binary::*;
    let compute = b.dtype();
    if compute.is_float() || !matches!(op, DivTrunc | FloorDiv | Rem | Fmod | Pow) {
        return Ok(());
    }
    // Whether any element is negative (`negative`) or zero. A flag folded over
    // each row with `|`, which vectorizes (a call per element did not).
    let any = |negative: bool| -> Result<bool> {
        let found = std::sync::atomic::AtomicBool::new(false);
        crate::dispatch_all!(compute, T => {
            let p = P(b.ptr::<T>()?);
            crate::backend::cpu::strided::for_each_row(b.shape(), [b.strides()], |[o], len, [s]| {
                let hit = |v: T| if negative { v.to_i64() < 0 } else { v.to_i64() == 0 };
                // SAFETY: b's layout lies within its storage.
                let at = |i: usize| unsafe { *p.at(o + i as isize * s) };
                let row = || match s {
                    // SAFETY: as above; the row is contiguous.
                    1 => unsafe { std::slice::from_raw_parts(p.at(o), len) }
                        .iter()
                        .fold(false, |h, &v| h | hit(v)),
                    _ => (0..len).fold(false, |h, i| h | hit(at(i))),
                };
                if crate::backend::cpu::simd(row) {
                    found.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            });
        });
        Ok(found.into_inner())
    };
    if op == Pow {
        if any(true)? {
            bail!(Runtime, "Integers to negative integer powers are not allowed.");
        }
    } else if any(false)? {
        bail!(Runtime, "ZeroDivisionError");
    }
    Ok(())
}

/// Argument checks shared by the CPU and GPU paths.
pub fn binary_checks(
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

/// Half tensors (and scalars) of one dtype and shape: the float32 path run
/// chunk by chunk (halfchunk.rs); None where that does not apply.
fn half_chunks(op: Binary, a: &Operand, b: &Operand, alpha: Option<f64>) -> Result<Option<Tensor>> {
    let ts = tensors(&[a, b]);
    if !ts.first().is_some_and(|t| t.dtype().is_half()) {
        return Ok(None);
    }
    let common = result_type(&[a, b]);
    let (_, out_dtype) = op.dtypes(common)?;
    binary_checks(op, b, alpha, common, DType::F32)?;
    if let Some(out) = half_arith(op, a, b, alpha, out_dtype)? {
        return Ok(Some(out));
    }
    // The widened chunks stand for the tensor operands, in order.
    let widen = |t: &[Tensor]| {
        let mut next = t.iter();
        let [wa, wb] = [a, b].map(|o| match o {
            Operand::T(_) => Operand::T(next.next().expect("one chunk per tensor").clone()),
            Operand::S(v) => Operand::S(*v),
        });
        binary_raw(op, &wa, &wb, alpha)
    };
    super::halfchunk::run(&ts, out_dtype, widen)
}

/// Add, sub, mul, div of contiguous half tensors of one dtype and shape (or
/// numbers): one fused pass (backend/cpu/halfbinary.rs); None where that does
/// not apply.
fn half_arith(
    op: Binary,
    a: &Operand,
    b: &Operand,
    alpha: Option<f64>,
    out_dtype: DType,
) -> Result<Option<Tensor>> {
    use crate::backend::cpu::halfbinary::{arith, Arith, Side};
    let al = alpha.unwrap_or(1.0) as f32;
    let kind = match op {
        Binary::Add => Arith::Add(al),
        Binary::Sub => Arith::Sub(al),
        Binary::Mul => Arith::Mul,
        Binary::Div => Arith::Div,
        _ => return Ok(None),
    };
    let ts = tensors(&[a, b]);
    let first = ts[0];
    let fits = |t: &&Tensor| {
        t.dtype() == out_dtype && t.shape() == first.shape() && t.is_contiguous() && !t.is_gpu()
    };
    if !ts.iter().all(fits) {
        return Ok(None);
    }
    let out = Tensor::for_output(first.shape(), out_dtype)?;
    fn go<H: crate::backend::cpu::halfbinary::Half + Element>(
        kind: Arith,
        out: &Tensor,
        a: &Operand,
        b: &Operand,
    ) -> Result<()> {
        let side = |o: &Operand| -> Result<Side<H>> {
            Ok(match o {
                Operand::T(t) => Side::T(P(t.ptr::<H>()?)),
                Operand::S(v) => Side::S(v.to_f64() as f32),
            })
        };
        // SAFETY: the tensor sides are contiguous with out's element count.
        unsafe { arith::<H>(kind, out.numel(), P(out.ptr::<H>()?), side(a)?, side(b)?) };
        Ok(())
    }
    match out_dtype {
        DType::F16 => go::<half::f16>(kind, &out, a, b)?,
        _ => go::<half::bf16>(kind, &out, a, b)?,
    }
    Ok(Some(out))
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

/// `a op b` with broadcasting. `alpha` scales b (add/sub).
pub fn binary(op: Binary, a: &Operand, b: &Operand, alpha: Option<f64>) -> Result<Tensor> {
    if crate::ops::complex::is_complex_operand(a) || crate::ops::complex::is_complex_operand(b) {
        return crate::ops::complex::binary_op(op, a, b, alpha);
    }
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

pub(super) fn binary_raw(
    op: Binary,
    a: &Operand,
    b: &Operand,
    alpha: Option<f64>,
) -> Result<Tensor> {
    if on_gpu(&[a, b]) {
        return gpu_binary(op, a, b, alpha);
    }
    // Fast path for the common case: same dtype and shape, float, no casts.
    if let (Operand::T(x), Operand::T(y)) = (a, b) {
        let d = x.dtype();
        if matches!(d, DType::F32 | DType::F64)
            && y.dtype() == d
            && x.shape() == y.shape()
            && !op.float_only()
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
    if let Some(out) = half_chunks(op, a, b, alpha)? {
        return Ok(out);
    }
    if let Some((t, v, scalar_first)) = with_scalar {
        if matches!(t.dtype(), DType::F32 | DType::F64) && !op.float_only() {
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
    if a.dtype().is_complex() || crate::ops::complex::is_complex_operand(b) {
        return crate::ops::complex::binary_op_(op, a, b, alpha);
    }
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
    if on_gpu(&[&Operand::T(a.clone()), b]) {
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
        if a.device() != r.device() {
            return Err(crate::ops::device_mismatch(
                &format!("{}_", op.name()),
                a.device(),
                r.device(),
            ));
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
            Pow | Maximum | Minimum | Atan2 | LogAddExp | LogAddExp2 | Xlogy => (true, true),
            Hypot => (ga, gb),
            _ => (false, false),
        };
        let mut edge = 0;
        let a = Side::new(a, &mut edge, save_a);
        let b = Side::new(b, &mut edge, save_b);
        let out = ((op == Pow && gb) || op == Hypot).then(|| SavedTensor::output(out, 0));
        BinaryBackward { op, a, b, alpha, out }
    }
}

impl Backward for BinaryBackward {
    fn name(&self) -> String {
        format!("{}Backward0", capitalized(self.op.name()))
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
            Hypot => {
                // g·a/out, g·b/out (NaN at a = b = 0, as in PyTorch).
                let out = O::T(self.out.as_ref().expect("saved").unpack(node)?);
                let g_out = binary(Div, &O::T(g.clone()), &out, None)?;
                if na {
                    ga = Some(binary(Mul, &O::T(g_out.clone()), &self.a.value(node)?, None)?);
                }
                if nb {
                    gb = Some(binary(Mul, &O::T(g_out), &self.b.value(node)?, None)?);
                }
            }
            LogAddExp | LogAddExp2 => {
                // g·sigmoid(k(a - b)) for a, g·sigmoid(k(b - a)) for b (k = 1 or ln 2).
                let (a, b) = (self.a.value(node)?, self.b.value(node)?);
                let d = binary(Sub, &a, &b, None)?;
                let d = if self.op == LogAddExp2 { scale(&d, std::f64::consts::LN_2)? } else { d };
                if na {
                    ga = Some(mul(g, &un(Unary::Sigmoid, &d)?)?);
                }
                if nb {
                    gb = Some(mul(g, &un(Unary::Sigmoid, &neg(&d)?)?)?);
                }
            }
            Xlogy => {
                let (a, b) = (self.a.value(node)?, self.b.value(node)?);
                if na {
                    // g·xlogy(a != 0, b): log b where a is nonzero, 0 where a is 0.
                    let zero = O::S(crate::tensor::Scalar::Int(0));
                    let nz = mask_as(&binary(Ne, &a, &zero, None)?, g.dtype())?;
                    ga = Some(mul(g, &binary(Xlogy, &O::T(nz), &b, None)?)?);
                }
                if nb {
                    // g·a/b
                    gb = Some(binary(
                        Div,
                        &O::T(binary(Mul, &O::T(g.clone()), &a, None)?),
                        &b,
                        None,
                    )?);
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
