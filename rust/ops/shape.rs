//! Views (reshape/view, permute, transpose, squeeze/unsqueeze, expand, narrow,
//! flatten, movedim, unbind) and shape ops that copy (cat, stack, flip, roll, tril/triu).
//! Views record their own backward; stack, split, chunk, unbind and roll are
//! built from recorded ops and need none of their own (nor tril/triu on the GPU).

use super::copy::{clone_as, contiguous, copy_into};
use super::elementwise::{binary, where_, Binary};
use super::index::{Region, TakeBackward};
use super::Operand;
use crate::autograd::{self, math, Backward, BackwardOp, Node};
use crate::bail;
use crate::error::Result;
use crate::tensor::dtype::promote;
use crate::tensor::layout::{fmt_shape, infer_shape, wrap_dim, wrap_dims, Layout, Shape};
use crate::tensor::{DType, Scalar, Tensor};
use std::sync::Arc;

/// A view of `t` with layout `l`, recorded with the backward `make` builds.
fn view_of(t: &Tensor, l: Layout, make: impl FnOnce() -> Result<BackwardOp>) -> Result<Tensor> {
    autograd::record(&[t], || Ok(t.with_layout(l)), |_| make())
}

/// A view that selects part of `t` (narrow, select, basic indexing): its
/// backward writes the gradient into that part of zeros. `f` maps a layout to
/// the view's layout; applied to a contiguous layout it gives the region.
pub fn region_view(
    t: &Tensor,
    name: &'static str,
    f: impl Fn(&Layout) -> Result<Layout>,
) -> Result<Tensor> {
    let l = f(t.layout())?;
    view_of(t, l, || {
        let region = Region::View(f(&Layout::contiguous(t.shape()))?);
        Ok(TakeBackward::new(name, t, region).into())
    })
}

fn reshape_backward(t: &Tensor) -> Result<BackwardOp> {
    Ok(ReshapeBackward { in_shape: t.shape().clone() }.into())
}

/// The diagonal of dims `dim1` and `dim2` shifted by `offset`, as a view
/// whose last dim walks it (torch.diagonal).
pub fn diagonal(t: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    let (d1, d2) = (wrap_dim(dim1, t.ndim())?, wrap_dim(dim2, t.ndim())?);
    if t.ndim() < 2 {
        bail!(Runtime, "diagonal(): expected a tensor of at least 2 dims, got {}", t.ndim());
    }
    if d1 == d2 {
        bail!(Runtime, "diagonal dimensions cannot be identical {}, {}", dim1, dim2);
    }
    region_view(t, "DiagonalBackward0", |l| Ok(l.diagonal(offset, d1, d2)))
}

/// The sum of a matrix's main diagonal (torch.trace).
pub fn trace(t: &Tensor) -> Result<Tensor> {
    if t.ndim() != 2 {
        bail!(Runtime, "trace: expected a matrix, but got tensor with dim {}", t.ndim());
    }
    if t.dtype() == DType::Bool {
        bail!(Runtime, "\"trace\" not implemented for 'Bool'");
    }
    super::reduce::sum(&diagonal(t, 0, 0, 1)?, None, false, None)
}

pub fn reshape(t: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let shape = infer_shape(shape, t.numel())?;
    match t.layout().view(&shape) {
        Some(l) => view_of(t, l, || reshape_backward(t)),
        None => autograd::record(
            &[t],
            || {
                let c = clone_as(t, t.dtype())?;
                Ok(Tensor::new(c.storage().clone(), Layout::contiguous(&shape)))
            },
            |_| reshape_backward(t),
        ),
    }
}

pub fn view(t: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let shape = infer_shape(shape, t.numel())?;
    match t.layout().view(&shape) {
        Some(l) => view_of(t, l, || reshape_backward(t)),
        None => bail!(
            Runtime,
            "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        ),
    }
}

pub fn permute(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let l = t.layout().permute(dims)?;
    view_of(t, l, || {
        let d = wrap_dims(dims, t.ndim())?;
        let mut inverse = vec![0i64; d.len()];
        for (i, &x) in d.iter().enumerate() {
            inverse[x] = i as i64;
        }
        Ok(PermuteBackward { inverse }.into())
    })
}
pub fn transpose(t: &Tensor, d0: i64, d1: i64) -> Result<Tensor> {
    let l = t.layout().transpose(d0, d1)?;
    view_of(t, l, || {
        let nd = t.ndim().max(1);
        let (a, b) = (wrap_dim(d0, nd)?, wrap_dim(d1, nd)?);
        let mut inverse: Vec<i64> = (0..t.ndim() as i64).collect();
        if t.ndim() > 0 {
            inverse.swap(a, b);
        }
        Ok(PermuteBackward { inverse }.into())
    })
}
pub fn unsqueeze(t: &Tensor, dim: i64) -> Result<Tensor> {
    let l = t.layout().unsqueeze(dim)?;
    view_of(t, l, || reshape_backward(t))
}
pub fn squeeze(t: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
    let l = t.layout().squeeze(dims)?;
    view_of(t, l, || reshape_backward(t))
}
pub fn squeeze_dim(t: &Tensor, dim: i64) -> Result<Tensor> {
    squeeze(t, Some(&[dim]))
}
pub fn expand(t: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    let l = t.layout().expand(sizes)?;
    view_of(t, l, || Ok(ExpandBackward { in_shape: t.shape().clone() }.into()))
}
pub fn narrow(t: &Tensor, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    region_view(t, "NarrowBackward0", |l| l.narrow(dim, start, length))
}
pub fn select(t: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    if t.ndim() == 0 {
        bail!(Index, "select() cannot be applied to a 0-dim tensor.");
    }
    let d = wrap_dim(dim, t.ndim())?;
    region_view(t, "SelectBackward0", |l| l.select(d, index))
}

/// t.T (all dims reversed) and t.mT (last two swapped).
pub fn reverse_dims(t: &Tensor) -> Result<Tensor> {
    let dims: Vec<i64> = (0..t.ndim() as i64).rev().collect();
    permute(t, &dims)
}
pub fn matrix_transpose(t: &Tensor) -> Result<Tensor> {
    if t.ndim() < 2 {
        bail!(
            Runtime,
            "tensor.mT is only supported on matrices or batches of matrices. Got {}-D tensor.",
            t.ndim()
        );
    }
    transpose(t, -2, -1)
}
/// t.t(): 2-D transpose, identity for 0-D and 1-D.
pub fn t2(t: &Tensor) -> Result<Tensor> {
    if t.ndim() > 2 {
        bail!(Runtime, "t() expects a tensor with <= 2 dimensions, but self is {}D", t.ndim());
    }
    if t.ndim() < 2 {
        return Ok(t.clone());
    }
    transpose(t, 0, 1)
}

pub fn flatten(t: &Tensor, start: i64, end: i64) -> Result<Tensor> {
    if t.ndim() == 0 {
        return reshape(t, &[1]);
    }
    let (s, e) = (wrap_dim(start, t.ndim())?, wrap_dim(end, t.ndim())?);
    if s > e {
        bail!(Runtime, "flatten() has invalid args: start_dim cannot come after end_dim");
    }
    let mut shape: Vec<i64> = t.shape()[..s].iter().map(|&d| d as i64).collect();
    shape.push(crate::tensor::layout::numel(&t.shape()[s..=e]) as i64);
    shape.extend(t.shape()[e + 1..].iter().map(|&d| d as i64));
    reshape(t, &shape)
}

pub fn unflatten(t: &Tensor, dim: i64, sizes: &[i64]) -> Result<Tensor> {
    if t.ndim() == 0 {
        bail!(Runtime, "unflatten: Provided dim {} cannot be used on a 0-dim tensor", dim);
    }
    let d = wrap_dim(dim, t.ndim())?;
    let inner = infer_shape(sizes, t.shape()[d]).map_err(|_| {
        crate::error::Error::Runtime(format!(
            "unflatten: Provided sizes {:?} don't multiply up to the size of dim {} ({}) in the input tensor",
            sizes,
            dim,
            t.shape()[d]
        ))
    })?;
    let mut shape: Vec<i64> = t.shape()[..d].iter().map(|&x| x as i64).collect();
    shape.extend(inner.iter().map(|&x| x as i64));
    shape.extend(t.shape()[d + 1..].iter().map(|&x| x as i64));
    reshape(t, &shape)
}

pub fn movedim(t: &Tensor, src: &[i64], dst: &[i64]) -> Result<Tensor> {
    if src.len() != dst.len() {
        bail!(Runtime, "movedim: Invalid source or destination dims: source ({:?} dims) should contain the same number of dims as destination ({:?} dims)", src, dst);
    }
    let nd = t.ndim();
    let (s, d) = (wrap_dims(src, nd)?, wrap_dims(dst, nd)?);
    if nd == 0 {
        return Ok(t.with_layout(t.layout().clone()));
    }
    let mut order: Vec<i64> = vec![-1; nd];
    for (&si, &di) in s.iter().zip(&d) {
        order[di] = si as i64;
    }
    let mut rest = (0..nd).filter(|x| !s.contains(x));
    for o in order.iter_mut() {
        if *o < 0 {
            *o = rest.next().map(|x| x as i64).unwrap_or(0);
        }
    }
    permute(t, &order)
}

pub fn cat(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    if tensors.iter().any(|t| t.dtype().is_complex()) {
        return crate::ops::complex::cat(tensors, dim);
    }
    let inputs: Vec<&Tensor> = tensors.iter().collect();
    autograd::record(
        &inputs,
        || cat_raw(tensors, dim),
        |out| {
            // The legacy-skipped empty 1-D inputs get no gradient.
            let d = if out.ndim() == 0 { 0 } else { wrap_dim(dim, out.ndim())? };
            let parts = tensors
                .iter()
                .map(|t| {
                    (!(t.ndim() == 1 && t.numel() == 0))
                        .then(|| (t.shape()[d.min(t.ndim().saturating_sub(1))], t.dtype()))
                })
                .collect();
            Ok(CatBackward { dim: d, parts }.into())
        },
    )
}

fn cat_raw(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    if tensors.is_empty() {
        bail!(Value, "torch.cat(): expected a non-empty list of Tensors");
    }
    // Legacy rule: 1-D empty tensors are skipped.
    let parts: Vec<&Tensor> =
        tensors.iter().filter(|t| !(t.ndim() == 1 && t.numel() == 0)).collect();
    let Some(first) = parts.first() else {
        return clone_as(
            &tensors[0],
            tensors.iter().map(|t| t.dtype()).reduce(promote).unwrap_or(DType::F32),
        );
    };
    let nd = first.ndim();
    if nd == 0 {
        bail!(Runtime, "zero-dimensional tensor (at position 0) cannot be concatenated");
    }
    let d = wrap_dim(dim, nd)?;
    let mut total = 0;
    for (i, t) in parts.iter().enumerate() {
        if t.ndim() != nd {
            bail!(
                Runtime,
                "Tensors must have same number of dimensions: got {} and {}",
                nd,
                t.ndim()
            );
        }
        for k in 0..nd {
            if k != d && t.shape()[k] != first.shape()[k] {
                bail!(
                    Runtime,
                    "Sizes of tensors must match except in dimension {}. Expected size {} but got size {} for tensor number {} in the list.",
                    d,
                    first.shape()[k],
                    t.shape()[k],
                    i
                );
            }
        }
        total += t.shape()[d];
    }
    let dtype = parts.iter().map(|t| t.dtype()).reduce(promote).unwrap_or(first.dtype());
    let mut shape = first.shape().clone();
    shape[d] = total;
    let out = Tensor::empty_on(&shape, dtype, super::same_device("cat", &parts)?)?;
    let mut at = 0;
    for t in parts {
        let n = t.shape()[d];
        copy_into(&out.with_layout(out.layout().narrow(d as i64, at as i64, n as i64)?), t)?;
        at += n;
    }
    Ok(out)
}

pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let Some(first) = tensors.first() else {
        bail!(Value, "stack expects a non-empty TensorList");
    };
    for (i, t) in tensors.iter().enumerate() {
        if t.shape() != first.shape() {
            bail!(
                Runtime,
                "stack expects each tensor to be equal size, but got {} at entry 0 and {} at entry {}",
                fmt_shape(first.shape()),
                fmt_shape(t.shape()),
                i
            );
        }
    }
    let d = wrap_dim(dim, first.ndim() + 1)? as i64;
    let parts: Result<Vec<Tensor>> = tensors.iter().map(|t| unsqueeze(t, d)).collect();
    cat(&parts?, d)
}

pub fn flip(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    autograd::record(
        &[t],
        || flip_raw(t, dims),
        |_| Ok(FlipBackward { dims: dims.to_vec() }.into()),
    )
}

fn flip_raw(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let ds = wrap_dims(dims, t.ndim())?;
    let mut l = t.layout().clone();
    for d in ds {
        if l.ndim() == 0 || l.shape[d] == 0 {
            continue;
        }
        l.offset = (l.offset as isize + (l.shape[d] as isize - 1) * l.strides[d]) as usize;
        l.strides[d] = -l.strides[d];
    }
    clone_as(&t.with_layout(l), t.dtype())
}

pub fn roll(t: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    if dims.is_empty() {
        if shifts.len() != 1 {
            bail!(
                Runtime,
                "roll: `shifts` required to be a single value when no dims are given, got {:?}",
                shifts
            );
        }
        let flat = flatten(t, 0, -1)?;
        let r = roll(&flat, shifts, &[0])?;
        let shape: Vec<i64> = t.shape().iter().map(|&d| d as i64).collect();
        return reshape(&r, &shape);
    }
    if shifts.len() != dims.len() {
        bail!(
            Runtime,
            "shifts and dimensions must align. shifts: {}, dims: {}",
            shifts.len(),
            dims.len()
        );
    }
    if t.ndim() == 0 {
        wrap_dims(dims, 0)?;
        return clone_as(t, t.dtype());
    }
    let mut out = t.clone();
    for (&s, &dim) in shifts.iter().zip(dims) {
        let d = wrap_dim(dim, out.ndim())? as i64;
        let n = out.shape()[d as usize] as i64;
        if n == 0 {
            continue;
        }
        let s = s.rem_euclid(n);
        if s == 0 {
            out = contiguous(&out)?;
            continue;
        }
        out = cat(&[narrow(&out, d, n - s, s)?, narrow(&out, d, 0, n - s)?], d)?;
    }
    if out.same_tensor(t) {
        return clone_as(t, t.dtype());
    }
    Ok(out)
}

/// The n-th forward difference along `dim` (logical_xor for bool), after
/// concatenating `prepend` / `append` (0-d ones expand to one slice).
pub fn diff(
    t: &Tensor,
    n: i64,
    dim: i64,
    prepend: Option<&Tensor>,
    append: Option<&Tensor>,
) -> Result<Tensor> {
    if t.ndim() == 0 {
        bail!(Runtime, "diff expects input to be at least one-dimensional");
    }
    if n < 0 {
        bail!(Runtime, "order must be non-negative but got {}", n);
    }
    let d = wrap_dim(dim, t.ndim())?;
    let slice = |x: &Tensor| -> Result<Tensor> {
        if x.ndim() != 0 {
            return Ok(x.clone());
        }
        let mut s: Vec<i64> = t.shape().iter().map(|&v| v as i64).collect();
        s[d] = 1;
        expand(x, &s)
    };
    let mut parts = Vec::new();
    if let Some(p) = prepend {
        parts.push(slice(p)?);
    }
    parts.push(t.clone());
    if let Some(a) = append {
        parts.push(slice(a)?);
    }
    let mut x = if parts.len() == 1 { super::copy::clone(t)? } else { cat(&parts, d as i64)? };
    let op = if x.dtype() == DType::Bool { Binary::LogicalXor } else { Binary::Sub };
    for _ in 0..n {
        let len = x.shape()[d] as i64;
        if len == 0 {
            break;
        }
        let (hi, lo) = (narrow(&x, d as i64, 1, len - 1)?, narrow(&x, d as i64, 0, len - 1)?);
        x = binary(op, &Operand::T(hi), &Operand::T(lo), None)?;
    }
    Ok(x)
}

/// tril (lower=true) / triu: keeps elements with col - row <= k (>= k for triu).
pub fn tri(t: &Tensor, diagonal: i64, lower: bool) -> Result<Tensor> {
    if t.ndim() < 2 {
        bail!(
            Runtime,
            "{}: input tensor must have at least 2 dimensions",
            if lower { "tril" } else { "triu" }
        );
    }
    if !t.is_gpu() {
        return autograd::record(
            &[t],
            || tri_cpu(t, diagonal, lower),
            |_| Ok(TriBackward { diagonal, lower }.into()),
        );
    }
    // On the GPU: a where() over a (rows, cols) mask.
    let (r, c) = (t.shape()[t.ndim() - 2] as i64, t.shape()[t.ndim() - 1] as i64);
    let rows = super::creation::arange(Scalar::Int(0), Scalar::Int(r), Scalar::Int(1), DType::I64)?;
    let cols = super::creation::arange(Scalar::Int(0), Scalar::Int(c), Scalar::Int(1), DType::I64)?;
    let diff = binary(
        Binary::Sub,
        &Operand::T(unsqueeze(&cols, 0)?),
        &Operand::T(unsqueeze(&rows, 1)?),
        None,
    )?;
    let keep = binary(
        if lower { Binary::Le } else { Binary::Ge },
        &Operand::T(diff),
        &Operand::S(Scalar::Int(diagonal)),
        None,
    )?;
    let keep = super::copy::to_device(&keep, t.device())?;
    let zero = Operand::S(Scalar::Int(0));
    let out = where_(&keep, &Operand::T(t.clone()), &zero)?;
    super::copy::to_dtype(&out, t.dtype())
}

fn tri_cpu(t: &Tensor, k: i64, lower: bool) -> Result<Tensor> {
    let nd = t.ndim();
    let l = t.layout();
    // The batch dims as one stride, copying first when they do not fold into one.
    let batch = |l: &Layout| -> Vec<usize> { (0..nd - 2).filter(|&d| l.shape[d] != 1).collect() };
    let b = batch(l);
    let folds = b.windows(2).all(|w| l.strides[w[0]] == l.strides[w[1]] * l.shape[w[1]] as isize);
    let src = if folds { t.clone() } else { contiguous(t)? };
    let l = src.layout();
    let (r, c) = (l.shape[nd - 2], l.shape[nd - 1]);
    let bs = batch(l).last().map_or(0, |&d| l.strides[d]);
    let out = Tensor::for_output(t.shape(), t.dtype())?;
    if out.numel() > 0 {
        crate::dispatch_all!(t.dtype(), T => {
            // SAFETY: out holds t's shape; the strides are src's own.
            unsafe {
                crate::backend::cpu::tri::tri(
                    crate::backend::cpu::P(out.ptr::<T>()?),
                    crate::backend::cpu::P(src.ptr::<T>()?),
                    (out.numel() / (r * c), r, c),
                    (bs, l.strides[nd - 2], l.strides[nd - 1]),
                    k,
                    lower,
                )
            }
        });
    }
    Ok(out)
}

// ---- backward ----

#[derive(Clone)]
pub struct TriBackward {
    diagonal: i64,
    lower: bool,
}

impl Backward for TriBackward {
    fn name(&self) -> String {
        if self.lower { "TrilBackward0" } else { "TriuBackward0" }.to_string()
    }
    fn apply(&self, _: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(tri(&grads[0], self.diagonal, self.lower)?)])
    }
}

#[derive(Clone)]
pub struct ReshapeBackward {
    in_shape: Shape,
}

impl Backward for ReshapeBackward {
    fn name(&self) -> String {
        "ViewBackward0".to_string()
    }
    fn apply(&self, _: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(math::reshape(&grads[0], &self.in_shape)?)])
    }
}

#[derive(Clone)]
pub struct PermuteBackward {
    inverse: Vec<i64>,
}

impl Backward for PermuteBackward {
    fn name(&self) -> String {
        "PermuteBackward0".to_string()
    }
    fn apply(&self, _: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(permute(&grads[0], &self.inverse)?)])
    }
}

#[derive(Clone)]
pub struct ExpandBackward {
    in_shape: Shape,
}

impl Backward for ExpandBackward {
    fn name(&self) -> String {
        "ExpandBackward0".to_string()
    }
    fn apply(&self, _: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(math::sum_to(&grads[0], &self.in_shape)?)])
    }
}

/// cat: each input gets its slice of the gradient, in its own dtype.
#[derive(Clone)]
pub struct CatBackward {
    dim: usize,
    parts: Vec<Option<(usize, DType)>>,
}

impl Backward for CatBackward {
    fn name(&self) -> String {
        "CatBackward0".to_string()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let mut at = 0;
        let mut out = Vec::with_capacity(self.parts.len());
        for (i, p) in self.parts.iter().enumerate() {
            out.push(match p {
                Some((n, dtype)) => {
                    let g = narrow(&grads[0], self.dim as i64, at as i64, *n as i64)?;
                    at += n;
                    node.needs_input_grad(i).then(|| math::cast(&g, *dtype)).transpose()?
                }
                None => None,
            });
        }
        Ok(out)
    }
}

#[derive(Clone)]
pub struct FlipBackward {
    dims: Vec<i64>,
}

impl Backward for FlipBackward {
    fn name(&self) -> String {
        "FlipBackward0".to_string()
    }
    fn apply(&self, _: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(flip(&grads[0], &self.dims)?)])
    }
}
