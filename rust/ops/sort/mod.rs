//! Sorting and selection along a dim: sort, argsort, msort, topk, kthvalue,
//! median, nanmedian, mode and their backward (this file); unique and
//! unique_consecutive (unique.rs); searchsorted, bucketize, bincount, histc
//! and histogram (bins.rs). CPU loops in backend/cpu/sort.rs; the GPU sorts
//! with the bitonic kernels of shaders/sort.wgsl (backend/gpu/sort.rs), and
//! topk, kthvalue, median and nanmedian compose that sort with gathers there.

pub mod bins;
pub mod unique;

use super::copy::{contiguous, to_dtype};
use super::elementwise::{binary, unary, where_, Binary, Unary};
use super::shape::{movedim, narrow, reshape, squeeze_dim, unsqueeze};
use super::Operand;
use crate::autograd::{self, math, Backward, GradMode, Node, SavedTensor};
use crate::backend::cpu::sort::{self as kernels, Rows, Select};
use crate::backend::cpu::P;
use crate::bail;
use crate::dispatch_compute;
use crate::error::Result;
use crate::tensor::layout::{fmt_shape, wrap_dim, Shape};
use crate::tensor::{DType, Scalar, Tensor};
use std::sync::Arc;

/// The input as a contiguous (rows, n) matrix with `d` last, in the dtype
/// the kernels read (the compute dtype on the CPU; float16 as float32 on the GPU).
struct Plan {
    x: Tensor,
    rows: usize,
    n: usize,
    d: usize,
    ndim: usize,
    /// The input's shape with `d` moved last.
    moved: Shape,
}

fn plan(t: &Tensor, d: usize) -> Result<Plan> {
    let moved_t = if t.ndim() == 0 { reshape(t, &[1])? } else { movedim(t, &[d as i64], &[-1])? };
    let kd = if t.is_gpu() && t.dtype().is_half() { DType::F32 } else { t.dtype().compute() };
    let x = contiguous(&to_dtype(&moved_t, kd)?)?;
    let n = *x.shape().last().expect("at least 1-d");
    let rows: usize = x.shape()[..x.ndim() - 1].iter().product();
    let moved = x.shape().clone();
    let x = reshape(&x, &[rows as i64, n as i64])?;
    Ok(Plan { moved, x, rows, n, d, ndim: t.ndim() })
}

impl Plan {
    fn rows<T: crate::tensor::Element>(&self) -> Result<Rows<T>> {
        Ok(Rows { x: P(self.x.ptr::<T>()?), rows: self.rows, n: self.n })
    }
    /// A (rows, m) result back in the input's layout: `m` along `d`, which a
    /// reduction (`drop`) removes.
    fn finish(&self, out: &Tensor, dtype: DType, drop: bool) -> Result<Tensor> {
        let out = to_dtype(out, dtype)?;
        if self.ndim == 0 {
            return reshape(&out, &[]);
        }
        let mut shape: Vec<i64> = self.moved.iter().map(|&s| s as i64).collect();
        *shape.last_mut().expect("at least 1-d") = out.shape()[1] as i64;
        let back = movedim(&reshape(&out, &shape)?, &[-1], &[self.d as i64])?;
        let back = contiguous(&back)?;
        if drop {
            squeeze_dim(&back, self.d as i64)
        } else {
            Ok(back)
        }
    }
    fn outputs(&self, m: usize) -> Result<(Tensor, Tensor)> {
        Ok((
            Tensor::for_output(&[self.rows, m], self.x.dtype())?,
            Tensor::for_output(&[self.rows, m], DType::I64)?,
        ))
    }
}

fn refuse_bool(op: &str, t: &Tensor) -> Result<()> {
    if t.dtype() == DType::Bool {
        bail!(Runtime, "{}(): \"{}\" not implemented for 'Bool'", op, op);
    }
    Ok(())
}

fn nonempty(op: &str, t: &Tensor, p: &Plan) -> Result<()> {
    if p.n == 0 {
        bail!(
            Index,
            "{}(): Expected reduction dim {} to have non-zero size (input of shape {})",
            op,
            p.d,
            fmt_shape(t.shape())
        );
    }
    Ok(())
}

/// Records `values` as a differentiable function of `t` whose gradient goes
/// back through `indices` along `d` (`reduced`: one index per row, the dim
/// kept only if `keepdim`).
fn record(
    name: &'static str,
    t: &Tensor,
    values: Tensor,
    indices: &Tensor,
    d: usize,
    reduced: bool,
    keepdim: bool,
) -> Result<Tensor> {
    autograd::record(
        &[t],
        || Ok(values),
        |_| {
            Ok(SortBackward {
                name,
                in_shape: t.shape().clone(),
                in_dtype: t.dtype(),
                dim: d,
                unsqueeze: reduced && !keepdim,
                indices: SavedTensor::input(indices),
            }
            .into())
        },
    )
}

/// sort(dim, descending, stable) -> (values, indices). Both devices sort
/// stably (ties keep their order), so `stable` changes nothing.
pub fn sort(t: &Tensor, dim: i64, descending: bool) -> Result<(Tensor, Tensor)> {
    let d = wrap_dim(dim, t.ndim())?;
    let (v, i) = {
        let _off = GradMode::set(false);
        sort_raw(t, d, descending)?
    };
    Ok((record("SortBackward0", t, v, &i, d, false, false)?, i))
}

fn sort_raw(t: &Tensor, d: usize, desc: bool) -> Result<(Tensor, Tensor)> {
    let p = plan(t, d)?;
    let (v, i) = sorted_rows(&p, desc)?;
    Ok((p.finish(&v, t.dtype(), false)?, p.finish(&i, DType::I64, false)?))
}

/// The rows sorted: (rows, n) values and indices on the input's device.
fn sorted_rows(p: &Plan, desc: bool) -> Result<(Tensor, Tensor)> {
    if p.x.is_gpu() {
        return crate::backend::gpu::sort::sort(&p.x, p.rows, p.n, desc);
    }
    let (v, i) = p.outputs(p.n)?;
    if p.x.numel() > 0 {
        dispatch_compute!(p.x.dtype(), T => {
            kernels::sort::<T>(&p.rows::<T>()?, desc, P(v.ptr::<T>()?), P(i.ptr::<i64>()?))
        });
    }
    Ok((v, i))
}

pub fn argsort(t: &Tensor, dim: i64, descending: bool) -> Result<Tensor> {
    let d = wrap_dim(dim, t.ndim())?;
    let _off = GradMode::set(false);
    Ok(sort_raw(t, d, descending)?.1)
}

/// msort: sorted along dim 0 (the values of sort(dim=0)).
pub fn msort(t: &Tensor) -> Result<Tensor> {
    Ok(sort(t, 0, false)?.0)
}

/// topk(k, dim, largest, sorted) -> (values, indices), always sorted (an
/// order PyTorch allows for sorted=False).
pub fn topk(t: &Tensor, k: i64, dim: i64, largest: bool) -> Result<(Tensor, Tensor)> {
    refuse_bool("topk", t)?;
    let d = wrap_dim(dim, t.ndim())?;
    let size = if t.ndim() == 0 { 1 } else { t.shape()[d] };
    if k < 0 || k as usize > size {
        bail!(
            Runtime,
            "topk(): selected index k out of range: k = {} but dimension {} of the input of shape {} has size {}",
            k,
            d,
            fmt_shape(t.shape()),
            size
        );
    }
    let k = k as usize;
    let (v, i) = {
        let _off = GradMode::set(false);
        let p = plan(t, d)?;
        let (v, i) = if p.x.is_gpu() {
            let (v, i) = sorted_rows(&p, largest)?;
            (contiguous(&narrow(&v, 1, 0, k as i64)?)?, contiguous(&narrow(&i, 1, 0, k as i64)?)?)
        } else {
            let (v, i) = p.outputs(k)?;
            if p.rows * k > 0 {
                dispatch_compute!(p.x.dtype(), T => kernels::topk::<T>(
                    &p.rows::<T>()?, k, largest, P(v.ptr::<T>()?), P(i.ptr::<i64>()?)
                ));
            }
            (v, i)
        };
        (p.finish(&v, t.dtype(), false)?, p.finish(&i, DType::I64, false)?)
    };
    Ok((record("TopkBackward0", t, v, &i, d, false, false)?, i))
}

/// kthvalue(k, dim, keepdim) -> (values, indices): the k-th smallest (1-based).
pub fn kthvalue(t: &Tensor, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    refuse_bool("kthvalue", t)?;
    let d = wrap_dim(dim, t.ndim())?;
    let size = if t.ndim() == 0 { 1 } else { t.shape()[d] };
    if k < 1 || k as usize > size {
        bail!(
            Runtime,
            "kthvalue(): selected number k out of range: k = {} but dimension {} of the input of shape {} has size {}",
            k,
            d,
            fmt_shape(t.shape()),
            size
        );
    }
    selection("KthvalueBackward0", t, d, keepdim, Select::Kth(k as usize - 1))
}

/// median along a dim -> (values, indices): the lower median; a row with a
/// NaN gives its first NaN (nanmedian: the lower median of the other values).
pub fn median_dim(
    t: &Tensor,
    dim: i64,
    keepdim: bool,
    ignore_nan: bool,
) -> Result<(Tensor, Tensor)> {
    let op = if ignore_nan { "nanmedian" } else { "median" };
    refuse_bool(op, t)?;
    let d = wrap_dim(dim, t.ndim())?;
    let how = if ignore_nan { Select::NanMedian } else { Select::Median };
    let name = if ignore_nan { "NanmedianBackward1" } else { "MedianBackward1" };
    selection(name, t, d, keepdim, how)
}

/// median() / nanmedian() of all elements: a 0-d value (NaN for an empty float input).
pub fn median(t: &Tensor, ignore_nan: bool) -> Result<Tensor> {
    let op = if ignore_nan { "nanmedian" } else { "median" };
    refuse_bool(op, t)?;
    if t.numel() == 0 {
        if !t.dtype().is_float() {
            bail!(Runtime, "{}(): input of shape {} is empty", op, fmt_shape(t.shape()));
        }
        let nan = super::creation::full_on(&[], Scalar::Float(f64::NAN), t.dtype(), t.device())?;
        return Ok(nan);
    }
    let flat = reshape(t, &[-1])?;
    let (v, _) = median_dim(&flat, 0, false, ignore_nan)?;
    Ok(v)
}

fn selection(
    name: &'static str,
    t: &Tensor,
    d: usize,
    keepdim: bool,
    how: Select,
) -> Result<(Tensor, Tensor)> {
    let op = name.trim_end_matches("Backward0").trim_end_matches("Backward1").to_lowercase();
    let (v, i) = {
        let _off = GradMode::set(false);
        let p = plan(t, d)?;
        nonempty(&op, t, &p)?;
        let (v, i) = if p.x.is_gpu() {
            gpu_selection(&p, how)?
        } else {
            let (v, i) = p.outputs(1)?;
            if p.rows > 0 {
                dispatch_compute!(p.x.dtype(), T => kernels::select::<T>(
                    &p.rows::<T>()?, how, P(v.ptr::<T>()?), P(i.ptr::<i64>()?)
                ));
            }
            (v, i)
        };
        (p.finish(&v, t.dtype(), !keepdim)?, p.finish(&i, DType::I64, !keepdim)?)
    };
    Ok((record(name, t, v, &i, d, true, keepdim)?, i))
}

/// kthvalue / median / nanmedian on the GPU: the sorted rows (NaNs last, in
/// index order) read at a position per row (one that depends on the row's
/// NaN count for the medians).
fn gpu_selection(p: &Plan, how: Select) -> Result<(Tensor, Tensor)> {
    let (v, i) = sorted_rows(p, false)?;
    let n = p.n as f64;
    let pos = match how {
        Select::Kth(k) => return Ok((narrow(&v, 1, k as i64, 1)?, narrow(&i, 1, k as i64, 1)?)),
        _ if !p.x.dtype().is_float() => {
            let k = (p.n - 1) as i64 / 2;
            return Ok((narrow(&v, 1, k, 1)?, narrow(&i, 1, k, 1)?));
        }
        Select::Median | Select::NanMedian => {
            let nan = to_dtype(&unary(Unary::IsNan, &p.x)?, DType::F32)?;
            let nan = Operand::T(super::reduce::sum(&nan, Some(&[1]), true, None)?);
            let f = |x: f64| Operand::S(Scalar::Float(x));
            let valid = binary(Binary::Sub, &f(n), &nan, None)?;
            let lower = |c: &Tensor| -> Result<Tensor> {
                let c = binary(Binary::Sub, &Operand::T(c.clone()), &f(1.0), None)?;
                let c = binary(Binary::Maximum, &Operand::T(c), &f(0.0), None)?;
                unary(Unary::Floor, &binary(Binary::Mul, &Operand::T(c), &f(0.5), None)?)
            };
            match how {
                Select::Median => {
                    let any = binary(Binary::Gt, &nan, &f(0.0), None)?;
                    let mid = f(((p.n - 1) / 2) as f64);
                    where_(&any, &Operand::T(valid), &mid)?
                }
                _ => lower(&valid)?,
            }
        }
    };
    let pos = to_dtype(&pos, DType::I64)?;
    let gather = super::index::gather;
    Ok((gather(&v, 1, &pos)?, gather(&i, 1, &pos)?))
}

/// mode(dim, keepdim) -> (values, indices): the most frequent value of each
/// row (the smallest of equally frequent ones) and the last index holding it.
pub fn mode(t: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let d = wrap_dim(dim, t.ndim())?;
    let (v, i) = {
        let _off = GradMode::set(false);
        let p = plan(t, d)?;
        nonempty("mode", t, &p)?;
        let (v, i) = if p.x.is_gpu() {
            let (sv, si) = sorted_rows(&p, false)?;
            crate::backend::gpu::sort::mode_sorted(&sv, &si, p.rows, p.n)?
        } else {
            p.outputs(1)?
        };
        if p.rows > 0 && !p.x.is_gpu() {
            dispatch_compute!(p.x.dtype(), T => kernels::mode::<T>(
                &p.rows::<T>()?, P(v.ptr::<T>()?), P(i.ptr::<i64>()?)
            ));
        }
        (p.finish(&v, t.dtype(), !keepdim)?, p.finish(&i, DType::I64, !keepdim)?)
    };
    Ok((record("ModeBackward0", t, v, &i, d, true, keepdim)?, i))
}

/// The backward of every op here: the gradient of each output element goes to
/// the input element its index names (a scatter into zeros, itself a recorded
/// op, so it differentiates again; indices within a row are distinct).
#[derive(Clone)]
pub struct SortBackward {
    name: &'static str,
    in_shape: Shape,
    in_dtype: DType,
    dim: usize,
    /// The op reduced `dim` without keepdim: put it back first.
    unsqueeze: bool,
    indices: SavedTensor,
}

impl Backward for SortBackward {
    fn name(&self) -> String {
        self.name.to_string()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let g = &grads[0];
        if self.in_shape.is_empty() {
            return Ok(vec![Some(math::cast(&math::reshape(g, &[])?, self.in_dtype)?)]);
        }
        let mut idx = self.indices.unpack(node)?;
        let mut g = g.clone();
        if self.unsqueeze {
            g = unsqueeze(&g, self.dim as i64)?;
            idx = unsqueeze(&idx, self.dim as i64)?;
        }
        let zeros = math::zeros(&self.in_shape, g.dtype(), &g)?;
        let gx = super::index::scatter(&zeros, self.dim as i64, &idx, &Operand::T(g), false)?;
        Ok(vec![Some(math::cast(&gx, self.in_dtype)?)])
    }
}
