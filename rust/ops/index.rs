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
use crate::tensor::layout::{
    broadcast_shapes, fmt_shape, numel, try_vec, wrap_dim, Layout, Shape, Strides,
};
use crate::tensor::{DType, Device, Tensor};
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
    let Some((&last, outer)) = shape.split_last() else {
        out.push(0);
        return Ok(out);
    };
    if n == 0 {
        return Ok(out);
    }
    let ls = strides[shape.len() - 1];
    let mut idx: Shape = smallvec::smallvec![0; outer.len()];
    for _ in 0..n / last {
        let base: isize = idx.iter().zip(strides).map(|(&i, &s)| i as isize * s).sum();
        out.extend((0..last as isize).map(|j| base + j * ls));
        for d in (0..outer.len()).rev() {
            idx[d] += 1;
            if idx[d] < outer[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(out)
}

/// Storage offsets of a region's elements in row-major order, as runs: entry
/// i of `starts` begins `run` consecutive elements (the region's trailing
/// dims when they are contiguous), so whole rows move as one copy.
#[derive(Clone, Debug)]
pub struct Runs {
    pub starts: Vec<isize>,
    pub run: usize,
}

impl Runs {
    /// One offset per element.
    pub fn elements(starts: Vec<isize>) -> Runs {
        Runs { starts, run: 1 }
    }

    /// The offsets of `shape` with `strides`, from `base`: the trailing dims
    /// that are contiguous form the run.
    fn of_layout(base: isize, shape: &[usize], strides: &[isize]) -> Result<Runs> {
        let (mut run, mut k) = (1usize, shape.len());
        while k > 0 && strides[k - 1] == run as isize {
            run *= shape[k - 1];
            k -= 1;
        }
        let mut starts = all_offsets(&shape[..k], &strides[..k])?;
        if base != 0 {
            starts.iter_mut().for_each(|o| *o += base);
        }
        Ok(Runs { starts, run })
    }

    /// Every element's offset.
    pub fn flat(&self) -> Vec<isize> {
        if self.run == 1 {
            return self.starts.clone();
        }
        self.starts.iter().flat_map(|&s| (0..self.run as isize).map(move |j| s + j)).collect()
    }
}

/// Result shape and source offset runs of `v[..., idx_0, ..., idx_k, ...]` where the
/// index tensors (already int64, bool masks expanded) sit at dims `adv[i].0` of `v`.
pub fn advanced_offsets(v: &Layout, adv: &[(usize, Tensor)]) -> Result<(Shape, Runs)> {
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
    let (pre_s, pre_o) = pick(&pre)?;
    let post_s: Shape = post.iter().map(|&d| v.shape[d]).collect();
    let post_st: Vec<isize> = post.iter().map(|&d| v.strides[d]).collect();
    let post_r = Runs::of_layout(0, &post_s, &post_st)?;
    let mut shape = pre_s;
    shape.extend_from_slice(&bshape);
    shape.extend_from_slice(&post_s);
    let count = pre_o.len().saturating_mul(nb).saturating_mul(post_r.starts.len());
    let mut starts = try_vec(count, 0isize)?;
    starts.clear();
    for &a in &pre_o {
        for &b in &adv_off {
            starts.extend(post_r.starts.iter().map(|&c| v.offset as isize + a + b + c));
        }
    }
    Ok((shape, Runs { starts, run: post_r.run }))
}

/// Elements of `t`'s storage at `offs`, as a new contiguous tensor of `shape`.
pub fn take_offsets(t: &Tensor, shape: &[usize], offs: &Runs) -> Result<Tensor> {
    if t.is_gpu() {
        return take_gpu(t, shape, &upload_runs(offs)?);
    }
    let out = Tensor::for_output(shape, t.dtype())?;
    dispatch_all!(t.dtype(), T => {
        let base = P(unsafe { t.ptr::<T>()?.sub(t.layout().offset) });
        // SAFETY: offsets were computed from t's layout and bounds-checked.
        unsafe { kernel::take(P(out.ptr::<T>()?), base, &offs.starts, offs.run) };
    });
    Ok(out)
}

/// Writes `vals` (broadcast to `shape`) into `t`'s storage at `offs`.
pub fn put_offsets(
    t: &Tensor,
    shape: &[usize],
    offs: &Runs,
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
        crate::backend::gpu::index::put(t, &upload_runs(offs)?, &vals, accumulate)?;
        t.storage().bump_version();
        return Ok(());
    }
    if accumulate {
        if t.dtype().is_half() {
            crate::dispatch_half!(t.dtype(), H => {
                // SAFETY: offsets were computed from t's layout and bounds-checked.
                unsafe {
                    kernel::put_add_half(P(t.ptr::<H>()?.sub(t.layout().offset)), P(vals.ptr::<H>()?), &offs.starts, offs.run)
                };
            });
            t.storage().bump_version();
            return Ok(());
        }
        crate::dispatch_compute!(t.dtype(), T => {
            // SAFETY: offsets were computed from t's layout and bounds-checked.
            unsafe {
                kernel::put_add(P(t.ptr::<T>()?.sub(t.layout().offset)), P(vals.ptr::<T>()?), &offs.starts, offs.run)
            };
        });
    } else {
        dispatch_all!(t.dtype(), T => {
            // SAFETY: as above.
            unsafe {
                kernel::put(P(t.ptr::<T>()?.sub(t.layout().offset)), P(vals.ptr::<T>()?), &offs.starts, offs.run)
            };
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

fn upload_runs(offs: &Runs) -> Result<Tensor> {
    upload_offsets(&offs.flat())
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
    let b = contiguous(&to_device(&to_dtype(t, DType::Bool)?, Device::Cpu)?)?;
    let nd = t.ndim();
    // SAFETY: b is a contiguous bool tensor of numel elements.
    let mask = unsafe { std::slice::from_raw_parts(b.ptr::<bool>()?, b.numel()) };
    let out = kernel::nonzero(mask, t.shape());
    // A 0-d tensor: one index-less row when it is true.
    let n = out.len().checked_div(nd).unwrap_or(out.len());
    let out = if nd == 0 { Vec::new() } else { out };
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
fn along_dim_offsets(op: &str, l: &Layout, d: usize, index: &Tensor) -> Result<Runs> {
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
fn check_range(op: &str, index: &Tensor, t: &Tensor, d: usize) -> Result<()> {
    let size = if t.ndim() == 0 { 1 } else { t.shape()[d] } as u64;
    // SAFETY: index is contiguous int64 with numel elements.
    let vals = unsafe { std::slice::from_raw_parts(index.ptr::<i64>()?, index.numel()) };
    if let Some(v) = vals.iter().find(|&&v| v as u64 >= size) {
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
fn along_strides(t: &Tensor, d: usize, index: &Tensor) -> (Vec<isize>, isize) {
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
fn gather_cpu(t: &Tensor, d: usize, index: &Tensor) -> Result<Tensor> {
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
fn scatter_cpu(
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
    let vals =
        clone_as(&vals.with_layout(vals.layout().broadcast_to(index.shape())?), dst.dtype())?;
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
    src: &super::Operand,
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
        let vals = super::tensor_on(name, t.device(), &vals)?;
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
fn slices_along(op: &str, l: &Layout, dim: i64, index: &Tensor) -> Result<(Shape, Runs)> {
    if l.ndim() == 0 {
        bail!(Index, "{}(): the tensor has no dimension to index (0-d)", op);
    }
    let d = wrap_dim(dim, l.ndim())?;
    if index.ndim() > 1 {
        bail!(Index, "{}(): Index is supposed to be a vector, got {}-D", op, index.ndim());
    }
    let idx = super::shape::reshape(index, &[-1])?;
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

// ---- take / put: the recorded region ops ----

/// Part of a tensor, relative to a contiguous layout of its shape: a strided
/// view (basic indexing, narrow, select) or element offsets (advanced indexing,
/// gather, index_select, scatter).
#[derive(Clone)]
pub enum Region {
    View(Layout),
    Offsets {
        shape: Shape,
        offs: Arc<Runs>,
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
                    let offs = Runs::of_layout(l.offset as isize, &l.shape, &l.strides)?;
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
