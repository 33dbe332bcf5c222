//! Index tensors to element offsets: advanced indexing's runs, boolean
//! masks (nonzero), and their GPU uploads.

use crate::backend::cpu::index as kernel;
use crate::backend::cpu::P;
use crate::bail;
use crate::dispatch_all;
use crate::error::Result;
use crate::ops::copy::{clone_as, contiguous, to_device, to_dtype};
use crate::tensor::layout::{broadcast_shapes, fmt_shape, numel, try_vec, Layout, Shape};
use crate::tensor::{DType, Device, Tensor};

use super::along::check_along;

/// Reads an index tensor as contiguous int64 values.
pub(super) fn index_values(op: &str, idx: &Tensor) -> Result<Vec<i64>> {
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
pub(super) fn checked(v: i64, size: usize, dim: usize) -> Result<isize> {
    let n = size as i64;
    if v < -n || v >= n {
        bail!(Index, "index {} is out of bounds for dimension {} with size {}", v, dim, size);
    }
    Ok(if v < 0 { v + n } else { v } as isize)
}

/// Offsets of every element of each layout position, in row-major order.
pub(super) fn all_offsets(shape: &[usize], strides: &[isize]) -> Result<Vec<isize>> {
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
    pub(super) fn of_layout(base: isize, shape: &[usize], strides: &[isize]) -> Result<Runs> {
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
        let (n, stride) = (v.shape[*dim] as i64, v.strides[*dim]);
        // Bounds first, in one pass that vectorizes; the error names the first bad index.
        if vals.iter().any(|&x| x < -n || x >= n) {
            for &x in &vals {
                checked(x, v.shape[*dim], *dim)?;
            }
        }
        let wrapped = move |x: i64| (x + ((x >> 63) & n)) as isize * stride;
        if t.shape() == &bshape {
            adv_off.iter_mut().zip(&vals).for_each(|(o, &x)| *o += wrapped(x));
        } else {
            // Positions in the contiguous `vals` of each broadcast position.
            let bl = Layout::contiguous(t.shape()).broadcast_to(&bshape)?;
            let pos = all_offsets(&bl.shape, &bl.strides)?;
            adv_off.iter_mut().zip(&pos).for_each(|(o, &p)| *o += wrapped(vals[p as usize]));
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
        if let [c] = post_r.starts[..] {
            // One run per index position (nothing or whole rows after the indexed dims).
            starts.extend(adv_off.iter().map(|&b| v.offset as isize + a + b + c));
            continue;
        }
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
    let vals = &crate::ops::tensor_on("index_put_", t.device(), vals)?;
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
pub(super) fn upload_offsets(offs: &[isize]) -> Result<Tensor> {
    let v: Vec<i64> = offs.iter().map(|&o| o as i64).collect();
    crate::ops::copy::transfer(
        &Tensor::from_vec(v, &[offs.len()])?,
        crate::tensor::Device::active_gpu(),
    )
}

pub(super) fn upload_runs(offs: &Runs) -> Result<Tensor> {
    upload_offsets(&offs.flat())
}

pub(super) fn take_gpu(t: &Tensor, shape: &[usize], offs: &Tensor) -> Result<Tensor> {
    let out = Tensor::empty_on(shape, t.dtype(), t.device())?;
    crate::backend::gpu::index::take(t, offs, &out)?;
    Ok(out)
}

pub(super) fn put_gpu(
    t: &Tensor,
    shape: &[usize],
    offs: &Tensor,
    vals: &Tensor,
    accumulate: bool,
) -> Result<()> {
    t.check_writable("index_put_")?;
    let vals = &crate::ops::tensor_on("index_put_", t.device(), vals)?;
    let vals = clone_as(&vals.with_layout(vals.layout().broadcast_to(shape)?), t.dtype())?;
    crate::backend::gpu::index::put(t, offs, &vals, accumulate)?;
    t.storage().bump_version();
    Ok(())
}

/// gather/scatter offsets on the GPU, relative to a contiguous layout of t:
/// for each position p of `index`, p with dim `d` replaced by index[p]. The
/// index values never leave the GPU; out-of-range values are not detected
/// there (WebGPU clamps the accesses to the buffer, so nothing outside it is touched).
pub(super) fn gpu_along_offsets(op: &str, t: &Tensor, d: usize, index: &Tensor) -> Result<Tensor> {
    crate::ops::same_device(op, &[t, index])?;
    let l = Layout::contiguous(t.shape());
    check_along(op, &l, d, index)?;
    let stride = if l.ndim() == 0 { 0 } else { l.strides[d] };
    let size = if l.ndim() == 0 { 1 } else { l.shape[d] };
    let dense = crate::ops::copy::contiguous(index)?;
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
    let base = crate::ops::shape::reshape(
        &base,
        &index.shape().iter().map(|&s| s as i64).collect::<Vec<_>>(),
    )?;
    use crate::ops::elementwise::{binary, Binary};
    use crate::ops::Operand;
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
        .map(|k| Ok((dim + k, contiguous(&crate::ops::shape::select(&nz, 1, k as i64)?)?)))
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
