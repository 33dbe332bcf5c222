//! Indexing ops: advanced indexing (integer and boolean index tensors with
//! NumPy's placement rules), gather, scatter, scatter_add, index_select,
//! nonzero, one_hot. All reduce to element offsets + the take/put kernels.

use super::copy::{clone_as, contiguous, to_dtype};
use crate::backend::cpu::index::{put, put_add, take};
use crate::backend::cpu::P;
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::{broadcast_shapes, fmt_shape, numel, try_vec, wrap_dim, Layout, Shape};
use crate::tensor::{DType, Tensor};
use crate::dispatch_all;

/// Reads an index tensor as contiguous int64 values.
fn index_values(op: &str, idx: &Tensor) -> Result<Vec<i64>> {
    if !matches!(idx.dtype(), DType::I64 | DType::I32 | DType::U8) {
        bail!(
            Index,
            "{}: tensors used as indices must be long, int, byte or bool tensors, got {}",
            op,
            idx.dtype().name()
        );
    }
    to_dtype(idx, DType::I64)?.to_vec::<i64>()
}

/// Wraps negative indices and checks bounds: IndexError naming the dim and size.
fn checked(v: i64, size: usize, dim: usize) -> Result<isize> {
    let n = size as i64;
    if v < -n || v >= n {
        bail!(Index, "index {} is out of bounds for dimension {} with size {}", v, dim, size);
    }
    Ok(if v < 0 { v + n } else { v } as isize)
}

/// Offsets of every element of each layout position, in row-major order.
fn all_offsets(shape: &[usize], strides: &[isize]) -> Result<Vec<isize>> {
    let n = numel(shape);
    let mut out = try_vec(n, 0isize)?;
    out.clear();
    let mut idx: Shape = smallvec::smallvec![0; shape.len()];
    for _ in 0..n {
        out.push(idx.iter().zip(strides).map(|(&i, &s)| i as isize * s).sum());
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(out)
}

/// Result shape and source offsets of `v[..., idx_0, ..., idx_k, ...]` where the
/// index tensors (already int64, bool masks expanded) sit at dims `adv[i].0` of `v`.
pub fn advanced_offsets(v: &Layout, adv: &[(usize, Tensor)]) -> Result<(Shape, Vec<isize>)> {
    let mut bshape = Shape::new();
    for (_, t) in adv {
        bshape = broadcast_shapes(&bshape, t.shape()).map_err(|_| {
            let shapes: Vec<String> = adv.iter().map(|(_, t)| fmt_shape(t.shape())).collect();
            crate::error::Error::Index(format!("shape mismatch: indexing tensors could not be broadcast together with shapes {}", shapes.join(", ")))
        })?;
    }
    let nb = numel(&bshape);
    // Offset contributed by the advanced dims, per broadcast position.
    let mut adv_off = try_vec(nb, 0isize)?;
    for (dim, t) in adv {
        let vals = index_values("index", t)?;
        // Positions in the contiguous `vals` of each broadcast position.
        let bl = Layout::contiguous(t.shape()).broadcast_to(&bshape)?;
        let pos = all_offsets(&bl.shape, &bl.strides)?;
        for (o, &p) in adv_off.iter_mut().zip(&pos) {
            *o += checked(vals[p as usize], v.shape[*dim], *dim)? * v.strides[*dim];
        }
    }
    let dims: Vec<usize> = adv.iter().map(|(d, _)| *d).collect();
    let first = *dims.iter().min().unwrap_or(&0);
    let adjacent = dims.iter().max().map_or(true, |&m| m + 1 - first == dims.len());
    let rest: Vec<usize> = (0..v.ndim()).filter(|d| !dims.contains(d)).collect();
    let (pre, post): (Vec<usize>, Vec<usize>) = if adjacent { rest.iter().partition(|&&d| d < first) } else { (vec![], rest) };
    let pick = |ds: &[usize]| -> Result<(Shape, Vec<isize>)> {
        let s: Shape = ds.iter().map(|&d| v.shape[d]).collect();
        let st: Vec<isize> = ds.iter().map(|&d| v.strides[d]).collect();
        let offs = all_offsets(&s, &st)?;
        Ok((s, offs))
    };
    let ((pre_s, pre_o), (post_s, post_o)) = (pick(&pre)?, pick(&post)?);
    let mut shape = pre_s;
    shape.extend_from_slice(&bshape);
    shape.extend_from_slice(&post_s);
    let mut offs = try_vec(pre_o.len().saturating_mul(nb).saturating_mul(post_o.len()), 0isize)?;
    offs.clear();
    for &a in &pre_o {
        for &b in &adv_off {
            for &c in &post_o {
                offs.push(v.offset as isize + a + b + c);
            }
        }
    }
    Ok((shape, offs))
}

/// Elements of `t`'s storage at `offs`, as a new contiguous tensor of `shape`.
pub fn take_offsets(t: &Tensor, shape: &[usize], offs: &[isize]) -> Result<Tensor> {
    let out = Tensor::for_output(shape, t.dtype())?;
    dispatch_all!(t.dtype(), T => {
        let base = P(unsafe { t.ptr::<T>()?.sub(t.layout().offset) });
        // SAFETY: offsets were computed from t's layout and bounds-checked.
        unsafe { take(P(out.ptr::<T>()?), base, offs) };
    });
    Ok(out)
}

/// Writes `vals` (broadcast to `shape`) into `t`'s storage at `offs`.
pub fn put_offsets(t: &Tensor, shape: &[usize], offs: &[isize], vals: &Tensor, accumulate: bool) -> Result<()> {
    t.check_writable("index_put_")?;
    let vals = contiguous(&clone_as(&vals.with_layout(vals.layout().broadcast_to(shape).map_err(|_| {
        crate::error::Error::Runtime(format!(
            "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
            fmt_shape(vals.shape()),
            fmt_shape(shape)
        ))
    })?), t.dtype())?)?;
    if accumulate {
        if t.dtype().is_half() {
            bail!(Runtime, "accumulating index writes are not implemented for {}", t.dtype().name());
        }
        crate::dispatch_compute!(t.dtype(), T => {
            // SAFETY: offsets were computed from t's layout and bounds-checked.
            unsafe { put_add(P(t.ptr::<T>()?.sub(t.layout().offset)), P(vals.ptr::<T>()?), offs) };
        });
    } else {
        dispatch_all!(t.dtype(), T => {
            // SAFETY: as above.
            unsafe { put(P(t.ptr::<T>()?.sub(t.layout().offset)), P(vals.ptr::<T>()?), offs) };
        });
    }
    t.storage().bump_version();
    Ok(())
}

/// Bool mask over dims [dim, dim + mask.ndim) of `v` -> one int64 index tensor per mask dim.
pub fn mask_to_indices(v: &Layout, dim: usize, mask: &Tensor) -> Result<Vec<(usize, Tensor)>> {
    for k in 0..mask.ndim() {
        if dim + k >= v.ndim() || mask.shape()[k] != v.shape[dim + k] {
            bail!(
                Index,
                "The shape of the mask {} at index {} does not match the shape of the indexed tensor {} at index {}",
                fmt_shape(mask.shape()),
                k,
                fmt_shape(&v.shape),
                dim + k
            );
        }
    }
    let nz = nonzero(mask)?;
    (0..mask.ndim()).map(|k| Ok((dim + k, contiguous(&super::shape::select(&nz, 1, k as i64)?)?))).collect()
}

/// Positions of non-zero elements: int64 of shape [count, ndim].
pub fn nonzero(t: &Tensor) -> Result<Tensor> {
    let b = to_dtype(t, DType::Bool)?.to_vec::<bool>()?;
    let shape = t.shape();
    let nd = shape.len();
    let mut out = Vec::new();
    let mut idx = vec![0i64; nd];
    for &flag in &b {
        if flag {
            out.extend_from_slice(&idx);
        }
        for d in (0..nd).rev() {
            idx[d] += 1;
            if (idx[d] as usize) < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    let n = if nd == 0 { b.iter().filter(|&&x| x).count() } else { out.len() / nd };
    Tensor::from_vec(out, &[n, nd])
}

pub fn index_select(t: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    if index.ndim() > 1 {
        bail!(Index, "index_select(): Index is supposed to be a vector, got {}-D", index.ndim());
    }
    let d = wrap_dim(dim, t.ndim())?;
    let idx = super::shape::reshape(index, &[-1])?;
    if t.ndim() == 0 {
        let vals = index_values("index_select", &idx)?;
        for &v in &vals {
            checked(v, 1, 0)?;
        }
        return super::shape::reshape(&clone_as(t, t.dtype())?, &[vals.len() as i64]).and_then(|r| {
            if vals.len() == 1 { super::shape::reshape(&r, &[]) } else { Ok(r) }
        });
    }
    let (shape, offs) = advanced_offsets(t.layout(), &[(d, idx)])?;
    take_offsets(t, &shape, &offs)
}

/// Offsets for gather/scatter: for each position p of `index`, the element of a
/// tensor with layout `l` at p with dim `d` replaced by index[p].
fn along_dim_offsets(op: &str, l: &Layout, d: usize, index: &Tensor) -> Result<Vec<isize>> {
    if index.ndim() != l.ndim().max(1) && !(l.ndim() == 0 && index.ndim() <= 1) {
        bail!(Runtime, "{}(): Index tensor must have the same number of dimensions as input tensor", op);
    }
    for k in 0..index.ndim().min(l.ndim()) {
        if k != d && index.shape()[k] > l.shape[k] {
            bail!(
                Runtime,
                "Size does not match at dimension {} expected index {} to be smaller than self {} apart from dimension {}",
                k,
                fmt_shape(index.shape()),
                fmt_shape(&l.shape),
                d
            );
        }
    }
    if index.dtype() != DType::I64 {
        bail!(Runtime, "{}(): Expected dtype int64 for index, got {}", op, index.dtype().name());
    }
    let vals = index.to_vec::<i64>()?;
    let size = if l.ndim() == 0 { 1 } else { l.shape[d] };
    let stride = if l.ndim() == 0 { 0 } else { l.strides[d] };
    let mut base_strides: Vec<isize> = (0..index.ndim()).map(|k| if k < l.ndim() { l.strides[k] } else { 0 }).collect();
    if d < base_strides.len() {
        base_strides[d] = 0;
    }
    let bases = all_offsets(index.shape(), &base_strides)?;
    bases
        .iter()
        .zip(&vals)
        .map(|(&b, &v)| {
            if v < 0 || v as usize >= size {
                bail!(Runtime, "{}(): index {} is out of bounds for dimension {} with size {}", op, v, d, size);
            }
            Ok(l.offset as isize + b + v as isize * stride)
        })
        .collect()
}

pub fn gather(t: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let d = wrap_dim(dim, t.ndim())?;
    let offs = along_dim_offsets("gather", t.layout(), d, index)?;
    take_offsets(t, index.shape(), &offs)
}

/// scatter / scatter_add into `target` (written in place; callers clone for the
/// out-of-place forms). `src` values are read at the positions of `index`.
pub fn scatter_into(target: &Tensor, dim: i64, index: &Tensor, src: &super::Operand, accumulate: bool) -> Result<()> {
    let d = wrap_dim(dim, target.ndim())?;
    let offs = along_dim_offsets(if accumulate { "scatter_add" } else { "scatter" }, target.layout(), d, index)?;
    let vals = match src {
        super::Operand::S(s) => super::creation::scalar_tensor(*s, target.dtype())?,
        super::Operand::T(s) => {
            if s.ndim() != index.ndim() || (0..s.ndim()).any(|k| index.shape()[k] > s.shape()[k]) {
                bail!(
                    Runtime,
                    "Expected index {} to be smaller than src {} in every dimension",
                    fmt_shape(index.shape()),
                    fmt_shape(s.shape())
                );
            }
            let mut l = s.layout().clone();
            l.shape = index.shape().clone();
            to_dtype(&contiguous(&s.with_layout(l))?, target.dtype())?
        }
    };
    // put_offsets works on storage offsets, which `offs` already are.
    put_offsets(target, index.shape(), &offs, &vals, accumulate)
}

pub fn one_hot(t: &Tensor, num_classes: i64) -> Result<Tensor> {
    if t.dtype() != DType::I64 {
        bail!(Runtime, "one_hot is only applicable to index tensor of type LongTensor, got {}", t.dtype().name());
    }
    let vals = t.to_vec::<i64>()?;
    let n = if num_classes == -1 {
        if vals.is_empty() {
            bail!(Runtime, "Can not infer total number of classes from empty tensor.");
        }
        vals.iter().copied().max().unwrap_or(0) + 1
    } else {
        num_classes
    };
    if vals.iter().any(|&v| v < 0) {
        bail!(Runtime, "Class values must be non-negative.");
    }
    if vals.iter().any(|&v| v >= n) {
        bail!(Runtime, "Class values must be smaller than num_classes.");
    }
    let mut shape = t.shape().clone();
    shape.push(n.max(0) as usize);
    let Some(total) = vals.len().checked_mul(n.max(0) as usize) else {
        bail!(Runtime, "one_hot: {} x {} elements overflow", vals.len(), n);
    };
    let mut out = try_vec(total, 0i64)?;
    for (i, &v) in vals.iter().enumerate() {
        out[i * n as usize + v as usize] = 1;
    }
    Tensor::from_vec(out, &shape)
}
