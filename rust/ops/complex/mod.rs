//! Complex tensors (complex64/complex128, CPU only): zero-copy real views
//! (view_as_real, view_as_complex, real, imag), casts to and from real
//! dtypes, construction (complex, polar), elementwise arithmetic, sum/mean
//! and matmul. Gradients follow PyTorch's convention: the gradient of a real
//! loss L with respect to z = x + iy is dL/dx + i dL/dy (conjugate Wirtinger).

mod backward;

pub use backward::ComplexBackward;

use crate::autograd;
use crate::backend::cpu::complex as kernel;
use crate::bail;
use crate::dispatch_complex;
use crate::error::Result;
use crate::ops::copy::{copy_into, to_dtype};
use crate::ops::elementwise::{Binary, Unary};
use crate::ops::{result_type, Operand};
use crate::tensor::layout::{broadcast_shapes, wrap_dims, Layout};
use crate::tensor::storage::Storage;
use crate::tensor::{DType, Scalar, Tensor};
use std::sync::Arc;

/// Complex unary kernels.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CUnary {
    Neg,
    Conj,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Reciprocal,
    Square,
    Sin,
    Cos,
    Tan,
    Sinh,
    Cosh,
    Tanh,
    Sigmoid,
    Sgn,
    /// Real outputs.
    Abs,
    Angle,
}

/// Complex binary kernels.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CBinary {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Eq,
    Ne,
}

fn no_kernel(op: &str, d: DType) -> crate::error::Error {
    crate::error::Error::Type(format!(
        "{}: not supported for {} tensors (complex tensors support arithmetic, exp/log/sqrt/trigonometric functions, abs, angle, real, imag, conj, sum, mean, matmul and rumus.fft)",
        op,
        d.name()
    ))
}

// ------------------------------------------------------------ raw views

/// A complex tensor's memory as its real dtype with a trailing dim of 2
/// (never recorded).
pub fn raw_real(t: &Tensor) -> Result<Tensor> {
    let l = t.layout();
    let mut shape = l.shape.clone();
    shape.push(2);
    let mut strides: crate::tensor::layout::Strides = l.strides.iter().map(|s| s * 2).collect();
    strides.push(1);
    let storage = Arc::new(Storage::reinterpret(t.storage(), t.dtype().to_real())?);
    Ok(t.with_storage(storage, Layout { shape, strides, offset: l.offset * 2 }))
}

/// A real tensor whose last dim is (re, im) pairs as a complex tensor (never recorded).
pub fn raw_complex(t: &Tensor) -> Result<Tensor> {
    let l = t.layout();
    let n = l.shape.len();
    let ok = n > 0
        && l.shape[n - 1] == 2
        && l.strides[n - 1] == 1
        && l.offset.is_multiple_of(2)
        && l.strides[..n - 1].iter().zip(&l.shape[..n - 1]).all(|(s, &d)| s % 2 == 0 || d == 1);
    if !ok {
        if n == 0 || l.shape[n - 1] != 2 {
            bail!(Runtime, "Tensor must have a last dimension of size 2");
        }
        if l.strides[n - 1] != 1 {
            bail!(Runtime, "Tensor must have a last dimension with stride 1");
        }
        bail!(Runtime, "Tensor must have a stride divisible by 2 for all but last dimension");
    }
    let shape = l.shape[..n - 1].iter().copied().collect();
    let strides = l.strides[..n - 1].iter().map(|s| s / 2).collect();
    let storage = Arc::new(Storage::reinterpret(t.storage(), t.dtype().to_complex())?);
    Ok(t.with_storage(storage, Layout { shape, strides, offset: l.offset / 2 }))
}

/// Part `k` (0: real, 1: imaginary) of a complex tensor, as a real view.
fn raw_part(t: &Tensor, k: usize) -> Result<Tensor> {
    let r = raw_real(t)?;
    let l = r.layout();
    let n = l.shape.len() - 1;
    let layout = Layout {
        shape: l.shape[..n].iter().copied().collect(),
        strides: l.strides[..n].iter().copied().collect(),
        offset: l.offset + k,
    };
    Ok(r.with_layout(layout))
}

/// `copy_into` when either side is complex: real views of the parts do the work.
pub fn copy_into_complex(dst: &Tensor, src: &Tensor) -> Result<()> {
    if dst.is_gpu() || src.is_gpu() {
        bail!(Type, "{} tensors are not supported on gpu devices", src.dtype().to_complex().name());
    }
    match (dst.dtype().is_complex(), src.dtype().is_complex()) {
        (true, true) if dst.dtype() == src.dtype() => {
            let strides = src.layout().broadcast_strides(dst.shape())?.into_owned();
            // SAFETY: src's layout (broadcast to dst's shape) lies within its storage.
            dispatch_complex!(dst.dtype(), R => unsafe { move_complex::<R>(dst, src, &strides) })
        }
        (true, true) => {
            // Broadcast src first so its trailing (re, im) dim lines up with dst's.
            let shape: Vec<i64> = dst.shape().iter().map(|&s| s as i64).collect();
            let strides = src.layout().broadcast_strides(dst.shape())?.into_owned();
            let b = src.with_layout(Layout {
                shape: shape.iter().map(|&s| s as usize).collect(),
                strides: strides.into_iter().collect(),
                offset: src.layout().offset,
            });
            copy_into(&raw_real(dst)?, &raw_real(&b)?)
        }
        (true, false) => {
            copy_into(&raw_part(dst, 0)?, src)?;
            copy_into(&raw_part(dst, 1)?, &Tensor::zeros(&[], dst.dtype().to_real())?)
        }
        (false, _) if dst.dtype() == DType::Bool => {
            let nz = binary_raw(CBinary::Ne, src, &scalar(0.0, 0.0, src.dtype())?)?;
            copy_into(dst, &nz)
        }
        (false, _) => copy_into(dst, &raw_part(src, 0)?),
    }
}

/// dst = src (one complex dtype), moved as whole complex elements: a
/// transposed source into a contiguous dst is copied in tiles (the (re, im)
/// view made rows of two elements, 20× slower).
///
/// # Safety
/// `strides` are src's strides broadcast to dst's shape, inside src's storage.
unsafe fn move_complex<R: crate::tensor::Element>(
    dst: &Tensor,
    src: &Tensor,
    strides: &[isize],
) -> Result<()> {
    use crate::backend::cpu::{elementwise::map1, strided, P};
    let (pd, ps) = (P(dst.cptr::<R>()?), P(src.cptr::<R>()?));
    match strided::transposed_unit(dst.shape(), strides) {
        Some(a) if dst.is_contiguous() => strided::transpose_copy(dst.shape(), strides, a, ps, pd),
        _ => map1(dst.shape(), (pd, dst.strides()), (ps, strides), |x| x),
    }
    Ok(())
}

/// A 0-d complex tensor.
pub fn scalar(re: f64, im: f64, dtype: DType) -> Result<Tensor> {
    let t = Tensor::zeros(&[], DType::C128)?;
    // SAFETY: a fresh 0-d complex128 tensor.
    unsafe { *t.cptr::<f64>()? = num_complex::Complex::new(re, im) };
    if dtype == DType::C128 {
        Ok(t)
    } else {
        crate::ops::copy::clone_as(&t, dtype)
    }
}

/// Element [0, ...] of a one-element complex tensor.
pub fn item(t: &Tensor) -> Result<(f64, f64)> {
    let c = crate::ops::copy::clone_as(t, DType::C128)?;
    // SAFETY: one element.
    let z = unsafe { *c.cptr::<f64>()? };
    Ok((z.re, z.im))
}

/// Fills a complex tensor with a real number.
pub fn fill_real(t: &Tensor, v: Scalar) -> Result<()> {
    copy_into(t, &scalar(v.to_f64(), 0.0, DType::C128)?)
}

// ------------------------------------------------------------ recorded views

pub fn view_as_real(t: &Tensor) -> Result<Tensor> {
    if !t.dtype().is_complex() {
        bail!(Runtime, "view_as_real is only supported for complex tensors");
    }
    autograd::record(&[t], || raw_real(t), |_| Ok(ComplexBackward::ViewAsReal.into()))
}

pub fn view_as_complex(t: &Tensor) -> Result<Tensor> {
    if !matches!(t.dtype(), DType::F32 | DType::F64) {
        bail!(
            Runtime,
            "view_as_complex is only supported for float and double tensors, but got a tensor of scalar type: {}",
            t.dtype().name()
        );
    }
    autograd::record(&[t], || raw_complex(t), |_| Ok(ComplexBackward::ViewAsComplex.into()))
}

/// Tensor.real: a view of the real parts (the tensor itself when real).
pub fn real(t: &Tensor) -> Result<Tensor> {
    if !t.dtype().is_complex() {
        return Ok(t.clone());
    }
    crate::ops::shape::select(&view_as_real(t)?, -1, 0)
}

/// Tensor.imag: a view of the imaginary parts.
pub fn imag(t: &Tensor) -> Result<Tensor> {
    if !t.dtype().is_complex() {
        bail!(Runtime, "imag is not implemented for tensors with non-complex dtypes.");
    }
    crate::ops::shape::select(&view_as_real(t)?, -1, 1)
}

/// conj: a copy with negated imaginary parts (rumus has no lazy conjugate
/// bit); the tensor itself when real, as PyTorch.
pub fn conj(t: &Tensor) -> Result<Tensor> {
    if !t.dtype().is_complex() {
        return Ok(t.clone());
    }
    unary(CUnary::Conj, t)
}

/// rumus.complex(real, imag) and rumus.polar(abs, angle).
pub fn from_parts(a: &Tensor, b: &Tensor, polar: bool) -> Result<Tensor> {
    let op = if polar { "polar" } else { "complex" };
    let (na, nb) = if polar { ("abs", "angle") } else { ("real", "imag") };
    if a.dtype() != b.dtype() {
        bail!(
            Runtime,
            "{}(): expected object of scalar type {} but got scalar type {} for second argument",
            op,
            a.dtype().name(),
            b.dtype().name()
        );
    }
    if !matches!(a.dtype(), DType::F32 | DType::F64) {
        bail!(
            Runtime,
            "{}(): expected both inputs ({} and {}) to be float or double tensors, got {}",
            op,
            na,
            nb,
            a.dtype().name()
        );
    }
    if a.is_gpu() || b.is_gpu() {
        bail!(Type, "{}(): complex tensors are not supported on gpu devices", op);
    }
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    autograd::record(
        &[a, b],
        || {
            let out = Tensor::for_output(&shape, a.dtype().to_complex())?;
            dispatch_complex!(out.dtype(), R => kernel::from_parts::<R>(&out, a, b, polar))?;
            Ok(out)
        },
        |out| Ok(ComplexBackward::parts(a, b, out, polar)),
    )
}

// ------------------------------------------------------------ elementwise

fn cunary_of(op: Unary) -> Option<CUnary> {
    Some(match op {
        Unary::Neg => CUnary::Neg,
        Unary::Exp => CUnary::Exp,
        Unary::Log => CUnary::Log,
        Unary::Sqrt => CUnary::Sqrt,
        Unary::Rsqrt => CUnary::Rsqrt,
        Unary::Reciprocal => CUnary::Reciprocal,
        Unary::Square => CUnary::Square,
        Unary::Sin => CUnary::Sin,
        Unary::Cos => CUnary::Cos,
        Unary::Tan => CUnary::Tan,
        Unary::Sinh => CUnary::Sinh,
        Unary::Cosh => CUnary::Cosh,
        Unary::Tanh => CUnary::Tanh,
        Unary::Sigmoid => CUnary::Sigmoid,
        Unary::Abs => CUnary::Abs,
        _ => return None,
    })
}

/// The entry for the unary table's ops on a complex tensor.
pub fn unary_op(op: Unary, t: &Tensor) -> Result<Tensor> {
    match cunary_of(op) {
        Some(c) => unary(c, t),
        None => Err(no_kernel(op.name(), t.dtype())),
    }
}

/// `t.op_()` in place on a complex tensor (abs_ is refused: its result is real).
pub fn unary_op_(op: Unary, t: &Tensor) -> Result<()> {
    if op == Unary::Abs {
        bail!(Runtime, "In-place abs is not supported for complex tensors.");
    }
    let r = unary_op(op, t)?;
    crate::ops::copy::copy_(t, &r)
}

fn unary_raw(op: CUnary, t: &Tensor) -> Result<Tensor> {
    let out_dtype =
        if matches!(op, CUnary::Abs | CUnary::Angle) { t.dtype().to_real() } else { t.dtype() };
    let out = Tensor::for_output(t.shape(), out_dtype)?;
    dispatch_complex!(t.dtype(), R => kernel::unary::<R>(op, &out, t))?;
    Ok(out)
}

pub fn unary(op: CUnary, t: &Tensor) -> Result<Tensor> {
    if t.is_gpu() {
        bail!(Type, "{:?}: complex tensors are not supported on gpu devices", op);
    }
    autograd::record(&[t], || unary_raw(op, t), |out| Ok(ComplexBackward::unary(op, t, out)))
}

/// Tensor.angle(): atan2(imag, real); for real tensors pi where negative, else 0.
pub fn angle(t: &Tensor) -> Result<Tensor> {
    if t.dtype().is_complex() {
        return unary(CUnary::Angle, t);
    }
    let f = to_dtype(t, t.dtype().to_float())?;
    let zero = crate::ops::creation::scalar_tensor(Scalar::Float(0.0), f.dtype())?;
    let a =
        crate::ops::elementwise::binary(Binary::Atan2, &Operand::T(zero), &Operand::T(f), None)?;
    // NaN stays NaN (atan2 gives it already); the gradient of a real angle is zero.
    Ok(a.detach_nonview())
}

/// sgn(z) = z/|z| (0 at 0).
pub fn sgn(t: &Tensor) -> Result<Tensor> {
    if !t.dtype().is_complex() {
        return crate::ops::elementwise::unary(Unary::Sign, t);
    }
    unary(CUnary::Sgn, t)
}

fn cbinary_of(op: Binary) -> Option<CBinary> {
    Some(match op {
        Binary::Add => CBinary::Add,
        Binary::Sub => CBinary::Sub,
        Binary::Mul => CBinary::Mul,
        Binary::Div => CBinary::Div,
        Binary::Pow => CBinary::Pow,
        Binary::Eq => CBinary::Eq,
        Binary::Ne => CBinary::Ne,
        _ => return None,
    })
}

/// Whether an operand is a complex tensor.
pub fn is_complex_operand(o: &Operand) -> bool {
    matches!(o, Operand::T(t) if t.dtype().is_complex())
}

fn as_complex(o: &Operand, dtype: DType) -> Result<Tensor> {
    match o {
        Operand::T(t) => to_dtype(t, dtype),
        Operand::S(s) => scalar(s.to_f64(), 0.0, dtype),
    }
}

/// The entry for binary ops where an operand is complex.
pub fn binary_op(op: Binary, a: &Operand, b: &Operand, alpha: Option<f64>) -> Result<Tensor> {
    let dtype = result_type(&[a, b]);
    let Some(c) = cbinary_of(op) else {
        return Err(no_kernel(op.name(), dtype));
    };
    if crate::ops::on_gpu(&[a, b]) {
        bail!(Type, "{}: complex tensors are not supported on gpu devices", op.name());
    }
    let (ta, mut tb) = (as_complex(a, dtype)?, as_complex(b, dtype)?);
    if let Some(al) = alpha.filter(|&al| al != 1.0) {
        tb = binary(CBinary::Mul, &tb, &scalar(al, 0.0, dtype)?)?;
    }
    binary(c, &ta, &tb)
}

/// `a op= b` for a complex `a`, or a real `a` with a complex `b` (refused: the
/// result can't be cast back, as in PyTorch).
pub fn binary_op_(op: Binary, a: &Tensor, b: &Operand, alpha: Option<f64>) -> Result<()> {
    let r = binary_op(op, &Operand::T(a.clone()), b, alpha)?;
    if !a.dtype().is_complex() {
        bail!(
            Runtime,
            "result type {} can't be cast to the desired output type {}",
            r.dtype().name(),
            a.dtype().name()
        );
    }
    if r.shape() != a.shape() {
        bail!(
            Runtime,
            "output with shape {:?} doesn't match the broadcast shape {:?}",
            a.shape().as_slice(),
            r.shape().as_slice()
        );
    }
    crate::ops::copy::copy_(a, &r)
}

fn binary_raw(op: CBinary, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let out_dtype = if matches!(op, CBinary::Eq | CBinary::Ne) { DType::Bool } else { a.dtype() };
    let out = Tensor::for_output(&shape, out_dtype)?;
    dispatch_complex!(a.dtype(), R => kernel::binary::<R>(op, &out, a, b))?;
    Ok(out)
}

/// Two complex tensors of one dtype.
pub fn binary(op: CBinary, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if matches!(op, CBinary::Eq | CBinary::Ne) {
        return binary_raw(op, a, b);
    }
    autograd::record(
        &[a, b],
        || binary_raw(op, a, b),
        |out| Ok(ComplexBackward::binary(op, a, b, out)),
    )
}

/// cat with a complex input: the (real, imag) views are concatenated.
pub fn cat(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let dtype =
        tensors.iter().fold(tensors[0].dtype(), |d, t| crate::tensor::dtype::promote(d, t.dtype()));
    let d = crate::tensor::layout::wrap_dim(dim, tensors[0].ndim().max(1))? as i64;
    let parts =
        tensors.iter().map(|t| view_as_real(&to_dtype(t, dtype)?)).collect::<Result<Vec<_>>>()?;
    view_as_complex(&crate::ops::shape::cat(&parts, d)?)
}

// ------------------------------------------------------------ reductions, matmul

/// sum/mean over `dims` of a complex tensor: the real view's reduction over
/// the same dims (its trailing (re, im) dim kept). Called unrecorded.
pub fn sum_raw(t: &Tensor, dims: Option<&[i64]>, keepdim: bool, mean: bool) -> Result<Tensor> {
    if t.ndim() == 0 {
        // A 0-d tensor reduces to itself (its dims, if given, are checked by the caller's plan).
        wrap_dims(dims.unwrap_or(&[]), 1)?;
        return crate::ops::copy::clone_as(t, t.dtype());
    }
    let dims: Vec<i64> = match dims {
        Some(d) if !d.is_empty() => wrap_dims(d, t.ndim())?.into_iter().map(|d| d as i64).collect(),
        _ => (0..t.ndim() as i64).collect(),
    };
    let r = raw_real(t)?;
    let s = if mean {
        crate::ops::reduce::mean(&r, Some(&dims), keepdim, None)?
    } else {
        crate::ops::reduce::sum(&r, Some(&dims), keepdim, None)?
    };
    raw_complex(&crate::ops::copy::contiguous(&s)?)
}

/// matmul with a complex operand: four real products of the parts, recorded
/// through real/imag/complex so the gradient follows from theirs.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let dtype = crate::tensor::dtype::promote(a.dtype(), b.dtype());
    if !dtype.is_complex() {
        bail!(Runtime, "internal: complex matmul of {} and {}", a.dtype().name(), b.dtype().name());
    }
    let (a, b) = (to_dtype(a, dtype)?, to_dtype(b, dtype)?);
    let mm = crate::ops::linalg::matmul;
    let (ar, ai, br, bi) = (real(&a)?, imag(&a)?, real(&b)?, imag(&b)?);
    use crate::autograd::math::{add, sub};
    let re = sub(&mm(&ar, &br)?, &mm(&ai, &bi)?)?;
    let im = add(&mm(&ar, &bi)?, &mm(&ai, &br)?)?;
    from_parts(&re, &im, false)
}
