//! Ops that index along one dim: index_select, gather, scatter (and its
//! reductions), index_put along a dim, one_hot.

use super::offsets::*;
use super::region::*;
use crate::autograd;
use crate::backend::cpu::P;
use crate::bail;
use crate::dispatch_all;
use crate::error::Result;
use crate::ops::copy::{clone_as, contiguous, copy_into, to_device, to_dtype};
use crate::tensor::layout::{fmt_shape, numel, try_vec, wrap_dim, Layout, Shape, Strides};
use crate::tensor::{DType, Tensor};
use std::sync::Arc;

pub fn index_select(t: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    if (t.is_gpu() || index.is_gpu()) && t.ndim() > 0 {
        crate::ops::same_device("index_select", &[t, index])?;
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
        let base = crate::ops::shape::reshape(
            &upload_offsets(&all_offsets(&shape, &strides)?)?,
            &shape.iter().map(|&s| s as i64).collect::<Vec<_>>(),
        )?;
        let mut along = vec![1i64; t.ndim()];
        along[d] = k as i64;
        let iv = crate::ops::shape::reshape(&to_dtype(index, DType::I64)?, &along)?;
        crate::backend::gpu::index::check_range(
            &crate::ops::copy::contiguous(&iv)?,
            t.shape()[d],
            "index_select(): index out of range in self".into(),
        )?;
        use crate::ops::elementwise::{binary, Binary};
        use crate::ops::Operand;
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
            let idx = crate::ops::shape::reshape(index, &[-1])?;
            let region = if t.ndim() == 0 {
                Region::Offsets {
                    shape: Shape::from_slice(&[idx.numel()]),
                    offs: Arc::new(Runs::elements(vec![0; idx.numel()])),
                }
            } else {
                let (shape, offs) = advanced_offsets(&Layout::contiguous(t.shape()), &[(d, idx)])?;
                Region::Offsets { shape, offs: Arc::new(offs) }
            };
            Ok(TakeBackward::new("IndexSelectBackward0", t, region).into())
        },
    )
}

pub(super) fn index_select_raw(t: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    if index.ndim() > 1 {
        bail!(Index, "index_select(): Index is supposed to be a vector, got {}-D", index.ndim());
    }
    let d = wrap_dim(dim, t.ndim())?;
    let idx = crate::ops::shape::reshape(index, &[-1])?;
    // Unlike t[idx], index_select does not wrap negative indices (PyTorch).
    if index_values("index_select", &idx)?.iter().any(|&v| v < 0) {
        bail!(Index, "index out of range in self");
    }
    if t.ndim() == 0 {
        let vals = index_values("index_select", &idx)?;
        for &v in &vals {
            checked(v, 1, 0)?;
        }
        return crate::ops::shape::reshape(&clone_as(t, t.dtype())?, &[vals.len() as i64])
            .and_then(
                |r| {
                    if vals.len() == 1 {
                        crate::ops::shape::reshape(&r, &[])
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
pub(super) fn check_along(op: &str, l: &Layout, d: usize, index: &Tensor) -> Result<()> {
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
pub(super) fn along_dim_offsets(op: &str, l: &Layout, d: usize, index: &Tensor) -> Result<Runs> {
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
        .collect::<Result<_>>()
        .map(Runs::elements)
}

/// RuntimeError naming the first value of the contiguous int64 `index` outside
/// t's dim `d`, as gather and scatter report it.
pub(super) fn check_range(op: &str, index: &Tensor, t: &Tensor, d: usize) -> Result<()> {
    let size = if t.ndim() == 0 { 1 } else { t.shape()[d] } as u64;
    // SAFETY: index is contiguous int64 with numel elements.
    let vals = unsafe { std::slice::from_raw_parts(index.ptr::<i64>()?, index.numel()) };
    // A branch-free pass (it vectorizes), then the search for the message.
    let bad = crate::backend::cpu::simd(
        #[inline(always)]
        || vals.iter().fold(false, |b, &v| b | (v as u64 >= size)),
    );
    if let Some(v) = bad.then(|| vals.iter().find(|&&v| v as u64 >= size)).flatten() {
        bail!(
            Runtime,
            "{}(): index {} is out of bounds for dimension {} with size {}",
            op,
            v,
            d,
            size
        );
    }
    Ok(())
}

/// t's strides seen from index's positions along `d`: dim d (whose position
/// comes from the index values) and dims t lacks step by 0.
pub(super) fn along_strides(t: &Tensor, d: usize, index: &Tensor) -> (Vec<isize>, isize) {
    let mut st: Vec<isize> =
        (0..index.ndim()).map(|k| if k < t.ndim() { t.strides()[k] } else { 0 }).collect();
    if d < st.len() {
        st[d] = 0;
    }
    (st, if t.ndim() == 0 { 0 } else { t.strides()[d] })
}

/// gather's forward on the CPU: out[p] = t[p with dim d at index[p]], walking
/// index's positions with t's strides, without an offsets vector. `index` is
/// contiguous int64 with values in range (checked by the caller).
pub(super) fn gather_cpu(t: &Tensor, d: usize, index: &Tensor) -> Result<Tensor> {
    let out = Tensor::for_output(index.shape(), t.dtype())?;
    let (st, sd) = along_strides(t, d, index);
    let pi = P(index.ptr::<i64>()?);
    dispatch_all!(t.dtype(), T => {
        let (po, ps) = (P(out.ptr::<T>()?), P(t.ptr::<T>()?));
        crate::backend::cpu::strided::for_each_row(
            index.shape(),
            [out.strides(), index.strides(), &st],
            |[oo, io, so], len, [os, is, ss]| {
                // Local copies: read through the closure's references, each element
                // would reload them (the stores might alias them).
                let (pi, po, ps, sd) = (pi, po, ps, sd);
                for i in 0..len as isize {
                    // SAFETY: positions walk index's (and out's) shape; the value is in
                    // range, so the element lies in t's layout.
                    unsafe {
                        let v = *pi.at(io + i * is) as isize;
                        *po.at(oo + i * os) = *ps.at(so + i * ss + v * sd);
                    }
                }
            },
        );
    });
    Ok(out)
}

/// scatter / scatter_add on the CPU straight into `dst`: dst[p with dim d at
/// index[p]] = (or +=) vals[p], in index order (a repeated position keeps the
/// last value, or sums). `index` is contiguous int64 in range; `vals` has
/// index's shape (or broadcasts to it) and dst's dtype, not half precision.
pub(super) fn scatter_cpu(
    dst: &Tensor,
    d: usize,
    index: &Tensor,
    vals: &Tensor,
    accumulate: bool,
) -> Result<()> {
    if index.numel() == 0 {
        return Ok(());
    }
    let (st, sd) = along_strides(dst, d, index);
    // A contiguous copy of the values unless they already are one, of dst's
    // dtype and in another storage (scattering reads them while writing dst).
    let own = vals.is_contiguous()
        && vals.shape() == index.shape()
        && vals.dtype() == dst.dtype()
        && !std::sync::Arc::ptr_eq(vals.storage(), dst.storage());
    let vals = if own {
        vals.clone()
    } else {
        clone_as(&vals.with_layout(vals.layout().broadcast_to(index.shape())?), dst.dtype())?
    };
    let pi = P(index.ptr::<i64>()?);
    crate::dispatch_compute!(dst.dtype(), T => {
        let (pd, pv) = (P(dst.ptr::<T>()?), P(vals.ptr::<T>()?));
        // A 0-d index walks as one position; walk_range wants a dim.
        let (shape, st): (Shape, Strides) = if index.ndim() == 0 {
            (smallvec::smallvec![1], smallvec::smallvec![0])
        } else {
            (index.shape().clone(), st.iter().copied().collect())
        };
        let cs = Layout::contiguous(&shape).strides;
        let (rows, total) = (shape[0], numel(&shape));
        // Positions that differ along a dim other than d write different
        // elements (dst has no internal overlap): with d != 0, blocks of
        // index rows run in parallel, each in order.
        let split = d != 0 && rows > 1 && st[0] != 0;
        let strides = [cs.clone(), cs, st];
        let walk = |start: usize, end: usize| {
            crate::backend::cpu::strided::walk_range(&shape, &strides, start, end, |[io, vo, so], len, [is, vs, ss]| {
                // Local copies, as in gather_cpu.
                let (pi, pv, pd, sd, accumulate) = (pi, pv, pd, sd, accumulate);
                for i in 0..len as isize {
                    // SAFETY: as in gather_cpu; vals is a separate contiguous copy.
                    unsafe {
                        let v = *pi.at(io + i * is) as isize;
                        let (x, at) = (*pv.at(vo + i * vs), pd.at(so + i * ss + v * sd));
                        *at = if accumulate { crate::backend::cpu::elementwise::Arith::add(*at, x) } else { x };
                    }
                }
            })
        };
        if split {
            let inner = total / rows;
            let chunks = (crate::backend::cpu::threads() * 4).min(rows);
            crate::backend::cpu::team::for_each_if(total, chunks, |c| {
                walk(c * rows / chunks * inner, (c + 1) * rows / chunks * inner)
            });
        } else {
            walk(0, total);
        }
    });
    dst.storage().bump_version();
    Ok(())
}

pub fn gather(t: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let d = wrap_dim(dim, t.ndim())?;
    if t.is_gpu() || index.is_gpu() {
        let offs = gpu_along_offsets("gather", t, d, index)?;
        return take(t, &Region::Gpu { shape: index.shape().clone(), offs }, "GatherBackward0");
    }
    check_along("gather", t.layout(), d, index)?;
    let index = contiguous(index)?;
    check_range("gather", &index, t, d)?;
    autograd::record(
        &[t],
        || gather_cpu(t, d, &index),
        |_| {
            let offs = along_dim_offsets("gather", &Layout::contiguous(t.shape()), d, &index)?;
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
    src: &crate::ops::Operand,
    accumulate: bool,
) -> Result<Tensor> {
    let d = wrap_dim(dim, t.ndim())?;
    let name = if accumulate { "scatter_add" } else { "scatter" };
    let vals = scatter_values(index, src, t.dtype())?;
    if t.is_gpu() || index.is_gpu() {
        // Refused before any check is queued on the device: nothing is left pending.
        if accumulate
            && !matches!(t.dtype(), DType::F32 | DType::F16 | DType::BF16 | DType::I32 | DType::I64)
        {
            bail!(
                NotImplemented,
                "scatter_add into {} tensors has no GPU kernel",
                t.dtype().name()
            );
        }
        let offs = gpu_along_offsets(name, t, d, index)?;
        let vals = crate::ops::tensor_on(name, t.device(), &vals)?;
        return put(t, &Region::Gpu { shape: index.shape().clone(), offs }, &vals, accumulate);
    }
    if !t.dtype().is_half() && !autograd::needs_grad(&[t, &vals]) {
        check_along(name, t.layout(), d, index)?;
        let index = contiguous(index)?;
        check_range(name, &index, t, d)?;
        let out = clone_as(t, t.dtype())?;
        scatter_cpu(&out, d, &index, &vals, accumulate)?;
        return Ok(out);
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
pub(super) fn scatter_values(
    index: &Tensor,
    src: &crate::ops::Operand,
    dtype: DType,
) -> Result<Tensor> {
    match src {
        crate::ops::Operand::S(s) => crate::ops::creation::scalar_tensor(*s, dtype),
        crate::ops::Operand::T(s) => {
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
                v = crate::ops::shape::narrow(&v, k as i64, 0, index.shape()[k] as i64)?;
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
    src: &crate::ops::Operand,
    accumulate: bool,
) -> Result<()> {
    let others: Vec<&Tensor> = match src {
        crate::ops::Operand::T(t) => vec![t],
        crate::ops::Operand::S(_) => vec![],
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

pub(super) fn scatter_into_raw(
    target: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &crate::ops::Operand,
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
    let name = if accumulate { "scatter_add" } else { "scatter" };
    let vals = scatter_values(index, src, target.dtype())?;
    if !target.dtype().is_half() {
        target.check_writable("scatter_")?;
        check_along(name, target.layout(), d, index)?;
        let index = contiguous(index)?;
        check_range(name, &index, target, d)?;
        return scatter_cpu(target, d, &index, &vals, accumulate);
    }
    let offs = along_dim_offsets(name, target.layout(), d, index)?;
    // put_offsets works on storage offsets, which `offs` already are.
    put_offsets(target, index.shape(), &offs, &vals, accumulate)
}

/// The region of index_add / index_copy in a tensor of layout `l`: the
/// slices at `index` (1-d, each in [0, size)) along `dim`, in runs of the
/// trailing dims.
pub(super) fn slices_along(
    op: &str,
    l: &Layout,
    dim: i64,
    index: &Tensor,
) -> Result<(Shape, Runs)> {
    if l.ndim() == 0 {
        bail!(Index, "{}(): the tensor has no dimension to index (0-d)", op);
    }
    let d = wrap_dim(dim, l.ndim())?;
    if index.ndim() > 1 {
        bail!(Index, "{}(): Index is supposed to be a vector, got {}-D", op, index.ndim());
    }
    let idx = crate::ops::shape::reshape(index, &[-1])?;
    if let Some(v) =
        index_values(op, &idx)?.into_iter().find(|&v| v < 0 || v as usize >= l.shape[d])
    {
        bail!(
            Index,
            "{}(): index {} is out of bounds for dimension {} with size {}",
            op,
            v,
            d,
            l.shape[d]
        );
    }
    advanced_offsets(l, &[(d, idx)])
}

/// index_add (`accumulate`) / index_copy out of place on a CPU tensor of at
/// least one dim: a copy of `t` with the slices of `src` (t's shape with
/// `index.numel()` at `dim`, checked by the caller) added or written at
/// `index` along `dim`. Whole rows move as runs, where a scatter along the
/// dim would need an offset per element.
pub fn index_put_along(
    t: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    accumulate: bool,
) -> Result<Tensor> {
    let op = if accumulate { "index_add" } else { "index_copy" };
    let (shape, offs) = slices_along(op, &Layout::contiguous(t.shape()), dim, index)?;
    put(t, &Region::Offsets { shape, offs: Arc::new(offs) }, src, accumulate)
}

/// In-place `index_put_along` (index_add_ / index_copy_).
pub fn index_put_along_(
    target: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    accumulate: bool,
) -> Result<()> {
    let op = if accumulate { "index_add_" } else { "index_copy_" };
    autograd::inplace(
        target,
        &[src],
        op,
        || {
            let (shape, offs) = slices_along(op, target.layout(), dim, index)?;
            put_offsets(target, &shape, &offs, src, accumulate)
        },
        |x| index_put_along(x, dim, index, src, accumulate),
    )
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
