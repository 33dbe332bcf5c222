//! Indexing ops: advanced indexing (integer and boolean index tensors with
//! NumPy's placement rules), gather, scatter, scatter_add, index_select,
//! nonzero, one_hot. All reduce to element offsets + the take/put kernels.
//! For autograd they reduce to two recorded ops that are each other's
//! adjoint: `take` (read a region) and `put` (write a region of a copy).

use super::copy::{clone_as, contiguous, copy_into, to_device, to_dtype};
use crate::autograd::{self, math, Backward, Node};
use crate::backend::cpu::index as kernel;
use crate::backend::cpu::P;
use crate::bail;
use crate::dispatch_all;
use crate::error::Result;
use crate::tensor::layout::{broadcast_shapes, fmt_shape, numel, try_vec, wrap_dim, Layout, Shape};
use crate::tensor::{DType, Tensor};
use std::sync::Arc;

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
            crate::error::Error::Index(format!(
                "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                shapes.join(", ")
            ))
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
    let adjacent = dims.iter().max().is_none_or(|&m| m + 1 - first == dims.len());
    let rest: Vec<usize> = (0..v.ndim()).filter(|d| !dims.contains(d)).collect();
    let (pre, post): (Vec<usize>, Vec<usize>) =
        if adjacent { rest.iter().partition(|&&d| d < first) } else { (vec![], rest) };
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
    if t.is_gpu() {
        return take_gpu(t, shape, &upload_offsets(offs)?);
    }
    let out = Tensor::for_output(shape, t.dtype())?;
    dispatch_all!(t.dtype(), T => {
        let base = P(unsafe { t.ptr::<T>()?.sub(t.layout().offset) });
        // SAFETY: offsets were computed from t's layout and bounds-checked.
        unsafe { kernel::take(P(out.ptr::<T>()?), base, offs) };
    });
    Ok(out)
}

/// Writes `vals` (broadcast to `shape`) into `t`'s storage at `offs`.
pub fn put_offsets(
    t: &Tensor,
    shape: &[usize],
    offs: &[isize],
    vals: &Tensor,
    accumulate: bool,
) -> Result<()> {
    t.check_writable("index_put_")?;
    // A number written into a GPU tensor arrives as a 0-d CPU tensor.
    let vals = &super::tensor_on("index_put_", t.device(), vals)?;
    let vals = contiguous(&clone_as(&vals.with_layout(vals.layout().broadcast_to(shape).map_err(|_| {
        crate::error::Error::Runtime(format!(
            "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
            fmt_shape(vals.shape()),
            fmt_shape(shape)
        ))
    })?), t.dtype())?)?;
    if t.is_gpu() {
        crate::backend::gpu::index::put(t, &upload_offsets(offs)?, &vals, accumulate)?;
        t.storage().bump_version();
        return Ok(());
    }
    if accumulate {
        if t.dtype().is_half() {
            bail!(
                Runtime,
                "accumulating index writes are not implemented for {}",
                t.dtype().name()
            );
        }
        crate::dispatch_compute!(t.dtype(), T => {
            // SAFETY: offsets were computed from t's layout and bounds-checked.
            unsafe { kernel::put_add(P(t.ptr::<T>()?.sub(t.layout().offset)), P(vals.ptr::<T>()?), offs) };
        });
    } else {
        dispatch_all!(t.dtype(), T => {
            // SAFETY: as above.
            unsafe { kernel::put(P(t.ptr::<T>()?.sub(t.layout().offset)), P(vals.ptr::<T>()?), offs) };
        });
    }
    t.storage().bump_version();
    Ok(())
}

// ---- GPU offsets ----

/// CPU-computed offsets as an int64 GPU tensor (an upload, never a readback).
fn upload_offsets(offs: &[isize]) -> Result<Tensor> {
    let v: Vec<i64> = offs.iter().map(|&o| o as i64).collect();
    super::copy::transfer(&Tensor::from_vec(v, &[offs.len()])?, crate::tensor::Device::active_gpu())
}

fn take_gpu(t: &Tensor, shape: &[usize], offs: &Tensor) -> Result<Tensor> {
    let out = Tensor::empty_on(shape, t.dtype(), t.device())?;
    crate::backend::gpu::index::take(t, offs, &out)?;
    Ok(out)
}

fn put_gpu(
    t: &Tensor,
    shape: &[usize],
    offs: &Tensor,
    vals: &Tensor,
    accumulate: bool,
) -> Result<()> {
    t.check_writable("index_put_")?;
    let vals = &super::tensor_on("index_put_", t.device(), vals)?;
    let vals = clone_as(&vals.with_layout(vals.layout().broadcast_to(shape)?), t.dtype())?;
    crate::backend::gpu::index::put(t, offs, &vals, accumulate)?;
    t.storage().bump_version();
    Ok(())
}

/// gather/scatter offsets on the GPU, relative to a contiguous layout of t:
/// for each position p of `index`, p with dim `d` replaced by index[p]. The
/// index values never leave the GPU; out-of-range values are not detected
/// there (WebGPU clamps the accesses to the buffer, so nothing outside it is touched).
fn gpu_along_offsets(op: &str, t: &Tensor, d: usize, index: &Tensor) -> Result<Tensor> {
    super::same_device(op, &[t, index])?;
    let l = Layout::contiguous(t.shape());
    check_along(op, &l, d, index)?;
    let stride = if l.ndim() == 0 { 0 } else { l.strides[d] };
    let size = if l.ndim() == 0 { 1 } else { l.shape[d] };
    let dense = super::copy::contiguous(index)?;
    crate::backend::gpu::index::check_range(
        &dense,
        size,
        format!("{}(): an index is out of bounds for dimension {} with size {}", op, d, size),
    )?;
    let mut base_strides: Vec<isize> =
        (0..index.ndim()).map(|k| if k < l.ndim() { l.strides[k] } else { 0 }).collect();
    if d < base_strides.len() {
        base_strides[d] = 0;
    }
    let base = upload_offsets(&all_offsets(index.shape(), &base_strides)?)?;
    let base =
        super::shape::reshape(&base, &index.shape().iter().map(|&s| s as i64).collect::<Vec<_>>())?;
    use super::elementwise::{binary, Binary};
    use super::Operand;
    let scaled = binary(
        Binary::Mul,
        &Operand::T(index.clone()),
        &Operand::S(crate::tensor::Scalar::Int(stride as i64)),
        None,
    )?;
    binary(Binary::Add, &Operand::T(base), &Operand::T(scaled), None)
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
    (0..mask.ndim())
        .map(|k| Ok((dim + k, contiguous(&super::shape::select(&nz, 1, k as i64)?)?)))
        .collect()
}

/// Positions of non-zero elements: int64 of shape [count, ndim], on t's
/// device (found on the host: the count decides the shape).
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
    let n = out.len().checked_div(nd).unwrap_or_else(|| b.iter().filter(|&&x| x).count());
    to_device(&Tensor::from_vec(out, &[n, nd])?, t.device())
}

pub fn index_select(t: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    if (t.is_gpu() || index.is_gpu()) && t.ndim() > 0 {
        super::same_device("index_select", &[t, index])?;
        if index.ndim() > 1 {
            bail!(
                Index,
                "index_select(): Index is supposed to be a vector, got {}-D",
                index.ndim()
            );
        }
        if index.dtype() != DType::I64 && index.dtype() != DType::I32 {
            bail!(
                Index,
                "index_select(): Expected dtype int32/int64 for index, got {}",
                index.dtype().name()
            );
        }
        // offsets = base (every position with dim d at 0) + index[j] · stride_d, all on the GPU.
        let d = wrap_dim(dim, t.ndim())?;
        let k = index.numel();
        let mut shape = t.shape().clone();
        shape[d] = k;
        let l = Layout::contiguous(t.shape());
        let mut strides = l.strides.clone();
        strides[d] = 0;
        let base = super::shape::reshape(
            &upload_offsets(&all_offsets(&shape, &strides)?)?,
            &shape.iter().map(|&s| s as i64).collect::<Vec<_>>(),
        )?;
        let mut along = vec![1i64; t.ndim()];
        along[d] = k as i64;
        let iv = super::shape::reshape(&to_dtype(index, DType::I64)?, &along)?;
        crate::backend::gpu::index::check_range(
            &super::copy::contiguous(&iv)?,
            t.shape()[d],
            "index_select(): index out of range in self".into(),
        )?;
        use super::elementwise::{binary, Binary};
        use super::Operand;
        let scaled = binary(
            Binary::Mul,
            &Operand::T(iv),
            &Operand::S(crate::tensor::Scalar::Int(l.strides[d] as i64)),
            None,
        )?;
        let offs = binary(Binary::Add, &Operand::T(base), &Operand::T(scaled), None)?;
        return take(t, &Region::Gpu { shape, offs }, "IndexSelectBackward0");
    }
    autograd::record(
        &[t],
        || index_select_raw(t, dim, index),
        |_| {
            let d = wrap_dim(dim, t.ndim())?;
            let idx = super::shape::reshape(index, &[-1])?;
            let region = if t.ndim() == 0 {
                Region::Offsets {
                    shape: Shape::from_slice(&[idx.numel()]),
                    offs: Arc::new(vec![0; idx.numel()]),
                }
            } else {
                let (shape, offs) = advanced_offsets(&Layout::contiguous(t.shape()), &[(d, idx)])?;
                Region::Offsets { shape, offs: Arc::new(offs) }
            };
            Ok(TakeBackward::new("IndexSelectBackward0", t, region).into())
        },
    )
}

fn index_select_raw(t: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    if index.ndim() > 1 {
        bail!(Index, "index_select(): Index is supposed to be a vector, got {}-D", index.ndim());
    }
    let d = wrap_dim(dim, t.ndim())?;
    let idx = super::shape::reshape(index, &[-1])?;
    // Unlike t[idx], index_select does not wrap negative indices (PyTorch).
    if index_values("index_select", &idx)?.iter().any(|&v| v < 0) {
        bail!(Index, "index out of range in self");
    }
    if t.ndim() == 0 {
        let vals = index_values("index_select", &idx)?;
        for &v in &vals {
            checked(v, 1, 0)?;
        }
        return super::shape::reshape(&clone_as(t, t.dtype())?, &[vals.len() as i64]).and_then(
            |r| {
                if vals.len() == 1 {
                    super::shape::reshape(&r, &[])
                } else {
                    Ok(r)
                }
            },
        );
    }
    let (shape, offs) = advanced_offsets(t.layout(), &[(d, idx)])?;
    take_offsets(t, &shape, &offs)
}

/// The shape and dtype rules gather and scatter share for `index`.
fn check_along(op: &str, l: &Layout, d: usize, index: &Tensor) -> Result<()> {
    if index.ndim() != l.ndim().max(1) && !(l.ndim() == 0 && index.ndim() <= 1) {
        bail!(
            Runtime,
            "{}(): Index tensor must have the same number of dimensions as input tensor",
            op
        );
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
    Ok(())
}

/// Offsets for gather/scatter: for each position p of `index`, the element of a
/// tensor with layout `l` at p with dim `d` replaced by index[p].
fn along_dim_offsets(op: &str, l: &Layout, d: usize, index: &Tensor) -> Result<Vec<isize>> {
    check_along(op, l, d, index)?;
    let vals = index.to_vec::<i64>()?;
    let size = if l.ndim() == 0 { 1 } else { l.shape[d] };
    let stride = if l.ndim() == 0 { 0 } else { l.strides[d] };
    let mut base_strides: Vec<isize> =
        (0..index.ndim()).map(|k| if k < l.ndim() { l.strides[k] } else { 0 }).collect();
    if d < base_strides.len() {
        base_strides[d] = 0;
    }
    let bases = all_offsets(index.shape(), &base_strides)?;
    bases
        .iter()
        .zip(&vals)
        .map(|(&b, &v)| {
            if v < 0 || v as usize >= size {
                bail!(
                    Runtime,
                    "{}(): index {} is out of bounds for dimension {} with size {}",
                    op,
                    v,
                    d,
                    size
                );
            }
            Ok(l.offset as isize + b + v as isize * stride)
        })
        .collect()
}

pub fn gather(t: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let d = wrap_dim(dim, t.ndim())?;
    if t.is_gpu() || index.is_gpu() {
        let offs = gpu_along_offsets("gather", t, d, index)?;
        return take(t, &Region::Gpu { shape: index.shape().clone(), offs }, "GatherBackward0");
    }
    let offs = along_dim_offsets("gather", t.layout(), d, index)?;
    autograd::record(
        &[t],
        || take_offsets(t, index.shape(), &offs),
        |_| {
            let offs = along_dim_offsets("gather", &Layout::contiguous(t.shape()), d, index)?;
            Ok(TakeBackward::new(
                "GatherBackward0",
                t,
                Region::Offsets { shape: index.shape().clone(), offs: Arc::new(offs) },
            )
            .into())
        },
    )
}

/// scatter / scatter_add, out of place: a copy of `t` with `src` written (or
/// added) at the positions `index` selects along `dim`.
pub fn scatter(
    t: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &super::Operand,
    accumulate: bool,
) -> Result<Tensor> {
    let d = wrap_dim(dim, t.ndim())?;
    let name = if accumulate { "scatter_add" } else { "scatter" };
    let vals = scatter_values(index, src, t.dtype())?;
    if t.is_gpu() || index.is_gpu() {
        // Refused before any check is queued on the device: nothing is left pending.
        if accumulate && !matches!(t.dtype(), DType::F32 | DType::I32 | DType::I64) {
            bail!(
                NotImplemented,
                "scatter_add into {} tensors has no GPU kernel",
                t.dtype().name()
            );
        }
        let offs = gpu_along_offsets(name, t, d, index)?;
        let vals = super::tensor_on(name, t.device(), &vals)?;
        return put(t, &Region::Gpu { shape: index.shape().clone(), offs }, &vals, accumulate);
    }
    let offs = along_dim_offsets(name, &Layout::contiguous(t.shape()), d, index)?;
    put(
        t,
        &Region::Offsets { shape: index.shape().clone(), offs: Arc::new(offs) },
        &vals,
        accumulate,
    )
}

/// The values scatter writes: src cut to index's shape (or a number), keeping
/// src's dtype so its gradient flows back.
fn scatter_values(index: &Tensor, src: &super::Operand, dtype: DType) -> Result<Tensor> {
    match src {
        super::Operand::S(s) => super::creation::scalar_tensor(*s, dtype),
        super::Operand::T(s) => {
            if s.ndim() != index.ndim() || (0..s.ndim()).any(|k| index.shape()[k] > s.shape()[k]) {
                bail!(
                    Runtime,
                    "Expected index {} to be smaller than src {} in every dimension",
                    fmt_shape(index.shape()),
                    fmt_shape(s.shape())
                );
            }
            let mut v = s.clone();
            for k in 0..s.ndim() {
                v = super::shape::narrow(&v, k as i64, 0, index.shape()[k] as i64)?;
            }
            Ok(v)
        }
    }
}

/// scatter / scatter_add into `target` (written in place; callers clone for the
/// out-of-place forms). `src` values are read at the positions of `index`.
pub fn scatter_into(
    target: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &super::Operand,
    accumulate: bool,
) -> Result<()> {
    let others: Vec<&Tensor> = match src {
        super::Operand::T(t) => vec![t],
        super::Operand::S(_) => vec![],
    };
    let name = if accumulate { "scatter_add_" } else { "scatter_" };
    autograd::inplace(
        target,
        &others,
        name,
        || scatter_into_raw(target, dim, index, src, accumulate),
        |x| scatter(x, dim, index, src, accumulate),
    )
}

fn scatter_into_raw(
    target: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &super::Operand,
    accumulate: bool,
) -> Result<()> {
    let d = wrap_dim(dim, target.ndim())?;
    if target.is_gpu() || index.is_gpu() {
        // Checked first: `scatter` queues the device-side index check, whose
        // failure must not be left pending behind this error.
        target.check_writable("scatter_")?;
        // Through a dense copy: the offsets are relative to a contiguous layout.
        let r = scatter(target, dim, index, src, accumulate)?;
        copy_into(target, &r)?;
        target.storage().bump_version();
        return Ok(());
    }
    let offs = along_dim_offsets(
        if accumulate { "scatter_add" } else { "scatter" },
        target.layout(),
        d,
        index,
    )?;
    let vals = scatter_values(index, src, target.dtype())?;
    // put_offsets works on storage offsets, which `offs` already are.
    put_offsets(target, index.shape(), &offs, &vals, accumulate)
}

pub fn one_hot(t: &Tensor, num_classes: i64) -> Result<Tensor> {
    if t.dtype() != DType::I64 {
        bail!(
            Runtime,
            "one_hot is only applicable to index tensor of type LongTensor, got {}",
            t.dtype().name()
        );
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
    to_device(&Tensor::from_vec(out, &shape)?, t.device())
}

// ---- take / put: the recorded region ops ----

/// Part of a tensor, relative to a contiguous layout of its shape: a strided
/// view (basic indexing, narrow, select) or element offsets (advanced indexing,
/// gather, index_select, scatter).
#[derive(Clone)]
pub enum Region {
    View(Layout),
    Offsets {
        shape: Shape,
        offs: Arc<Vec<isize>>,
    },
    /// Offsets held in an int64 GPU tensor (computed there from index tensors).
    Gpu {
        shape: Shape,
        offs: Tensor,
    },
}

impl Region {
    /// Whether several region positions can name the same element.
    fn may_repeat(&self) -> bool {
        match self {
            Region::View(l) => l.has_internal_overlap(),
            Region::Offsets { .. } | Region::Gpu { .. } => true,
        }
    }
}

/// `t` itself when contiguous from offset 0 (what regions are relative to), else a copy.
fn dense(t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() && t.layout().offset == 0 {
        Ok(t.clone())
    } else {
        clone_as(t, t.dtype())
    }
}

/// The region of `t` (a view when it is strided and `t` is dense).
pub fn take(t: &Tensor, region: &Region, name: &'static str) -> Result<Tensor> {
    autograd::record(
        &[t],
        || {
            let d = dense(t)?;
            match region {
                Region::View(l) => Ok(d.with_layout(l.clone())),
                Region::Offsets { shape, offs } => take_offsets(&d, shape, offs),
                Region::Gpu { shape, offs } => take_gpu(&d, shape, offs),
            }
        },
        |_| Ok(TakeBackward::new(name, t, region.clone()).into()),
    )
}

/// A copy of `base` with `value` (broadcast to the region) written into the
/// region, or added to it when `accumulate` (repeated positions add up).
pub fn put(base: &Tensor, region: &Region, value: &Tensor, accumulate: bool) -> Result<Tensor> {
    autograd::record(
        &[base, value],
        || {
            let out = clone_as(base, base.dtype())?;
            match region {
                Region::View(l) if !accumulate => {
                    copy_into(&out.with_layout(l.clone()), value).map(|_| out)
                }
                Region::View(l) => {
                    let offs: Vec<isize> = all_offsets(&l.shape, &l.strides)?
                        .iter()
                        .map(|o| o + l.offset as isize)
                        .collect();
                    put_offsets(&out, &l.shape, &offs, value, true).map(|_| out)
                }
                Region::Offsets { shape, offs } => {
                    put_offsets(&out, shape, offs, value, accumulate).map(|_| out)
                }
                Region::Gpu { shape, offs } => {
                    put_gpu(&out, shape, offs, value, accumulate).map(|_| out)
                }
            }
        },
        |_| {
            Ok(PutBackward {
                region: region.clone(),
                accumulate,
                value_shape: value.shape().clone(),
                value_dtype: value.dtype(),
            }
            .into())
        },
    )
}

/// The backward of reading a region: the gradient written into that region of zeros.
#[derive(Clone)]
pub struct TakeBackward {
    name: &'static str,
    in_shape: Shape,
    in_dtype: DType,
    region: Region,
}

impl TakeBackward {
    pub fn new(name: &'static str, t: &Tensor, region: Region) -> TakeBackward {
        TakeBackward { name, in_shape: t.shape().clone(), in_dtype: t.dtype(), region }
    }
}

impl Backward for TakeBackward {
    fn name(&self) -> String {
        self.name.to_string()
    }
    fn apply(&self, _: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        // Repeated positions add up: half types accumulate in float32.
        let acc = self.in_dtype.compute();
        let g = math::cast(&grads[0], acc)?;
        let zeros = math::zeros(&self.in_shape, acc, &g)?;
        if !crate::autograd::is_grad_enabled() {
            // Not differentiated again: scatter into the fresh zeros directly.
            match &self.region {
                Region::Offsets { shape, offs } => {
                    put_offsets(&zeros, shape, offs, &g, true)?;
                    return Ok(vec![Some(math::cast(&zeros, self.in_dtype)?)]);
                }
                Region::Gpu { shape, offs } => {
                    put_gpu(&zeros, shape, offs, &g, true)?;
                    return Ok(vec![Some(math::cast(&zeros, self.in_dtype)?)]);
                }
                Region::View(_) => {}
            }
        }
        Ok(vec![Some(math::cast(
            &put(&zeros, &self.region, &g, self.region.may_repeat())?,
            self.in_dtype,
        )?)])
    }
}

/// The backward of writing a region: the base gets the gradient outside the
/// region (all of it when accumulating), the value gets the region's gradient.
#[derive(Clone)]
pub struct PutBackward {
    region: Region,
    accumulate: bool,
    value_shape: Shape,
    value_dtype: DType,
}

impl Backward for PutBackward {
    fn name(&self) -> String {
        if self.accumulate { "IndexPutAddBackward0" } else { "IndexPutBackward0" }.to_string()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let g = &grads[0];
        let mut out = vec![None, None];
        if node.needs_input_grad(0) {
            out[0] = Some(if self.accumulate {
                g.clone()
            } else {
                put(g, &self.region, &math::zeros(&[], g.dtype(), g)?, false)?
            });
        }
        if node.needs_input_grad(1) {
            let part = take(g, &self.region, "IndexBackward0")?;
            out[1] = Some(math::reduce_grad(&part, &self.value_shape, self.value_dtype)?);
        }
        Ok(out)
    }
}
