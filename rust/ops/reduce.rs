//! Reductions over any set of dims with keepdim: sum, mean, prod, amax/amin,
//! max/min with indices, argmax/argmin, var/std, logsumexp, all/any (cumsum and
//! cumprod are in scan.rs). CPU loops in backend/cpu/reduce.rs, GPU launchers in
//! backend/gpu/reduce.rs.

use super::copy::to_dtype;
use super::elementwise::{binary, unary, Binary, Unary};
use super::scan::cumulative;
use super::Operand;
use crate::autograd::{self, math, Backward, Node, SavedTensor};
use crate::backend::cpu::halfreduce as half;
use crate::backend::cpu::reduce::{extreme, run, Extreme, Fold, SumF64};
use crate::backend::gpu::reduce::{gpu_input, reduce_dims};
use crate::bail;
use crate::dispatch_compute;
use crate::error::Result;
use crate::tensor::layout::{wrap_dims, Shape};
use crate::tensor::{DType, Scalar, Tensor};
use std::sync::Arc;

/// Which dims are reduced and the output shape. `None` or an empty list: all dims.
pub fn plan(t: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<(Vec<bool>, Shape)> {
    let nd = t.ndim();
    let mut reduced = vec![false; nd];
    match dims {
        Some(ds) if !ds.is_empty() => {
            for d in wrap_dims(ds, nd)? {
                if nd > 0 {
                    reduced[d] = true;
                }
            }
        }
        _ => reduced.iter_mut().for_each(|r| *r = true),
    }
    let shape = (0..nd)
        .filter_map(|d| {
            if !reduced[d] {
                Some(t.shape()[d])
            } else if keepdim {
                Some(1)
            } else {
                None
            }
        })
        .collect();
    Ok((reduced, shape))
}

fn reduced_count(t: &Tensor, reduced: &[bool]) -> usize {
    (0..t.ndim()).filter(|&d| reduced[d]).map(|d| t.shape()[d]).product()
}

/// Halves and the like are read in their compute dtype.
fn computable(t: &Tensor) -> Result<Tensor> {
    to_dtype(t, t.dtype().compute())
}

pub(crate) fn sum_dtype(t: &Tensor, dtype: Option<DType>) -> DType {
    dtype.unwrap_or(if t.dtype().is_differentiable() { t.dtype() } else { DType::I64 })
}

pub fn sum(
    t: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    autograd::record(
        &[t],
        || sum_raw(t, dims, keepdim, dtype),
        |_| SumBackward::op(t, dims, keepdim, false),
    )
}

fn sum_raw(
    t: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    let out = sum_dtype(t, dtype);
    if out.is_complex() || t.dtype().is_complex() {
        let t = to_dtype(t, out)?;
        return crate::ops::complex::sum_raw(&t, dims, keepdim, false);
    }
    let (reduced, shape) = plan(t, dims, keepdim)?;
    if t.is_gpu() {
        let r = if out.is_float() {
            reduce_dims("sum", &to_dtype(t, out.gpu_compute())?, &reduced, &shape, 1.0)?
        } else {
            reduce_dims("sum_i32", &to_dtype(t, DType::I64)?, &reduced, &shape, 1.0)?
        };
        return to_dtype(&r, out);
    }
    // Half inputs are read in place (widening is exact) whatever the float
    // result dtype.
    if t.dtype().is_half() && out.is_float() {
        return to_dtype(&half::sum(t, &reduced, &shape, |a| a)?, out);
    }
    let x = computable(&to_dtype(t, if out.is_float() { out } else { t.dtype() })?)?;
    let r = if out.is_float() {
        dispatch_compute!(x.dtype(), T => run::<T, _, f64>(&x, &reduced, &shape, &SumF64, |a| a))?
    } else {
        let f = Fold {
            init: 0i64,
            step: |a: i64, v: i64, _| a.wrapping_add(v),
            combine: |a: i64, b: i64| a.wrapping_add(b),
        };
        let xi = to_dtype(&x, DType::I64)?;
        run::<i64, _, i64>(&xi, &reduced, &shape, &f, |a| a)?
    };
    to_dtype(&r, out)
}

pub fn mean(
    t: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    autograd::record(
        &[t],
        || mean_raw(t, dims, keepdim, dtype),
        |_| SumBackward::op(t, dims, keepdim, true),
    )
}

fn mean_raw(
    t: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    let out = dtype.unwrap_or(t.dtype());
    if out.is_complex() {
        plan(t, dims, keepdim)?;
        return crate::ops::complex::sum_raw(&to_dtype(t, out)?, dims, keepdim, true);
    }
    if !out.is_float() {
        bail!(
            Runtime,
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
            out.name()
        );
    }
    let (reduced, shape) = plan(t, dims, keepdim)?;
    let n = reduced_count(t, &reduced) as f64;
    if t.is_gpu() {
        return to_dtype(
            &reduce_dims(
                "sum",
                &to_dtype(t, out.gpu_compute())?,
                &reduced,
                &shape,
                (1.0 / n) as f32,
            )?,
            out,
        );
    }
    if t.dtype().is_half() {
        return to_dtype(&half::sum(t, &reduced, &shape, |a| a / n)?, out);
    }
    let x = computable(&to_dtype(t, out)?)?;
    let r = dispatch_compute!(x.dtype(), T => run::<T, _, f64>(&x, &reduced, &shape, &SumF64, |a| a / n))?;
    to_dtype(&r, out)
}

pub fn prod(
    t: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    autograd::record(
        &[t],
        || prod_raw(t, dims, keepdim, dtype),
        |_| {
            let (reduced, _) = plan(t, dims, keepdim)?;
            Ok(ProdBackward { input: SavedTensor::input(t), reduced, keepdim }.into())
        },
    )
}

fn prod_raw(
    t: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    let (reduced, shape) = plan(t, dims, keepdim)?;
    let out = sum_dtype(t, dtype);
    if t.is_gpu() {
        let (x, op) = gpu_input("prod", &to_dtype(t, out)?)?;
        return to_dtype(&reduce_dims(&op, &x, &reduced, &shape, 1.0)?, out);
    }
    let r = if out.is_float() && out.is_half() {
        half::prod(&to_dtype(t, out)?, &reduced, &shape)?
    } else if out.is_float() {
        let x = computable(&to_dtype(t, out)?)?;
        let prod = &crate::backend::cpu::reduce::Prod;
        dispatch_compute!(x.dtype(), T => run::<T, _, f64>(&x, &reduced, &shape, prod, |a| a))?
    } else {
        let f = Fold {
            init: 1i64,
            step: |a: i64, v: i64, _| a.wrapping_mul(v),
            combine: |a: i64, b: i64| a.wrapping_mul(b),
        };
        let x = to_dtype(t, DType::I64)?;
        run::<i64, _, i64>(&x, &reduced, &shape, &f, |a| a)?
    };
    to_dtype(&r, out)
}

fn check_nonempty(op: &str, t: &Tensor, reduced: &[bool], dim_given: bool) -> Result<()> {
    if t.numel() > 0 {
        return Ok(());
    }
    if !dim_given {
        bail!(
            Runtime,
            "{}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.",
            op
        );
    }
    if let Some(d) = (0..t.ndim()).find(|&d| reduced[d] && t.shape()[d] == 0) {
        bail!(Index, "{}(): Expected reduction dim {} to have non-zero size.", op, d);
    }
    Ok(())
}

/// Values and indices of the max (or min) over `dims`.
fn extreme_op(
    op: &str,
    t: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    max: bool,
) -> Result<(Tensor, Tensor)> {
    if t.dtype() == DType::Bool && op.starts_with("arg") {
        bail!(Runtime, "\"{}\" not implemented for 'Bool'", op);
    }
    let (reduced, shape) = plan(t, dims, keepdim)?;
    check_nonempty(op, t, &reduced, dims.is_some())?;
    if t.is_gpu() {
        let arg = op.starts_with("arg");
        let kernel = match (arg, max) {
            (true, true) => "argmax",
            (true, false) => "argmin",
            (false, true) => "max_idx",
            (false, false) => "min_idx",
        };
        let (x, kernel) = gpu_input(kernel, t)?;
        let (x, outer, n, inner) = crate::backend::gpu::reduce::blocks(&x, &reduced)?;
        let idx = Tensor::empty_on(&shape, DType::I64, t.device())?;
        if arg {
            crate::backend::gpu::reduce::reduce(&kernel, &x, outer, n, inner, &[&idx], 1.0)?;
            return Ok((idx.clone(), idx));
        }
        let vals = Tensor::empty_on(&shape, x.dtype(), x.device())?;
        crate::backend::gpu::reduce::reduce(&kernel, &x, outer, n, inner, &[&vals, &idx], 1.0)?;
        return Ok((to_dtype(&vals, t.dtype())?, idx));
    }
    if t.dtype().is_half() {
        return half::extreme(t, &reduced, &shape, max);
    }
    let x = computable(t)?;
    let (v, i) = dispatch_compute!(x.dtype(), T => extreme::<T>(&x, &reduced, &shape, max))?;
    Ok((to_dtype(&v, t.dtype())?, i))
}

/// amax / amin: values only, through the vectorized `Extreme` reducer.
fn extreme_values(
    op: &str,
    t: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    max: bool,
) -> Result<Tensor> {
    let (reduced, shape) = plan(t, dims, keepdim)?;
    check_nonempty(op, t, &reduced, dims.is_some())?;
    if t.is_gpu() {
        let (x, op) = gpu_input(if max { "amax" } else { "amin" }, t)?;
        return to_dtype(&reduce_dims(&op, &x, &reduced, &shape, 1.0)?, t.dtype());
    }
    if t.dtype().is_half() {
        return half::extreme_values(t, &reduced, &shape, max);
    }
    let x = computable(t)?;
    let r = dispatch_compute!(x.dtype(), T => run::<T, _, T>(&x, &reduced, &shape, &Extreme { max }, |a| a))?;
    to_dtype(&r, t.dtype())
}

pub fn amax(t: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    extreme_recorded("amax", t, dims, keepdim, true)
}
pub fn amin(t: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    extreme_recorded("amin", t, dims, keepdim, false)
}
fn extreme_recorded(
    op: &'static str,
    t: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    max: bool,
) -> Result<Tensor> {
    autograd::record(
        &[t],
        || extreme_values(op, t, dims, keepdim, max),
        |out| {
            let (reduced, _) = plan(t, dims, keepdim)?;
            Ok(ExtremeBackward {
                name: op,
                input: SavedTensor::input(t),
                output: SavedTensor::output(out, 0),
                reduced,
                keepdim,
            }
            .into())
        },
    )
}
/// max(dim) / min(dim): (values, indices).
pub fn max_dim(t: &Tensor, dim: i64, keepdim: bool, max: bool) -> Result<(Tensor, Tensor)> {
    let name = if max { "max" } else { "min" };
    let (values, indices) = extreme_op(name, t, Some(&[dim]), keepdim, max)?;
    let values = autograd::record(
        &[t],
        || Ok(values),
        |_| {
            let d = crate::tensor::layout::wrap_dim(dim, t.ndim().max(1))?;
            Ok(MaxDimBackward {
                name,
                in_shape: t.shape().clone(),
                dim: d,
                keepdim,
                indices: SavedTensor::input(&indices),
            }
            .into())
        },
    )?;
    Ok((values, indices))
}
pub fn argmax(t: &Tensor, dim: Option<i64>, keepdim: bool, max: bool) -> Result<Tensor> {
    let name = if max { "argmax" } else { "argmin" };
    match dim {
        Some(d) => Ok(extreme_op(name, t, Some(&[d]), keepdim, max)?.1),
        None => {
            let (_, i) = extreme_op(name, t, None, false, max)?;
            if keepdim {
                let ones: Vec<i64> = vec![1; t.ndim()];
                return super::shape::reshape(&i, &ones);
            }
            Ok(i)
        }
    }
}

/// Two passes, each a vectorized kernel: the mean, then the sum of squared
/// deviations (accumulated in f64) divided by n - correction.
pub fn var(t: &Tensor, dims: Option<&[i64]>, correction: f64, keepdim: bool) -> Result<Tensor> {
    autograd::record(
        &[t],
        || var_raw(t, dims, correction, keepdim),
        |_| {
            let (reduced, _) = plan(t, dims, keepdim)?;
            Ok(VarBackward { input: SavedTensor::input(t), reduced, correction, keepdim }.into())
        },
    )
}

fn var_raw(t: &Tensor, dims: Option<&[i64]>, correction: f64, keepdim: bool) -> Result<Tensor> {
    if !t.dtype().is_float() {
        bail!(
            Runtime,
            "std and var only support floating point and complex dtypes, got {}",
            t.dtype().name()
        );
    }
    let (reduced, shape) = plan(t, dims, keepdim)?;
    if t.dtype().is_half() && !t.is_gpu() {
        return to_dtype(&half::var(t, &reduced, &shape, correction)?, t.dtype());
    }
    let n = reduced_count(t, &reduced) as f64;
    let x = to_dtype(t, t.dtype().compute())?;
    let m = mean(&x, dims, true, None)?;
    let d = binary(Binary::Sub, &Operand::T(x), &Operand::T(m), None)?;
    let ss = sum(
        &binary(Binary::Mul, &Operand::T(d.clone()), &Operand::T(d), None)?,
        dims,
        keepdim,
        None,
    )?;
    let r = binary(
        Binary::Div,
        &Operand::T(ss),
        &Operand::S(Scalar::Float((n - correction).max(0.0))),
        None,
    )?;
    to_dtype(&r, t.dtype())
}

pub fn std(t: &Tensor, dims: Option<&[i64]>, correction: f64, keepdim: bool) -> Result<Tensor> {
    unary(Unary::Sqrt, &var(t, dims, correction, keepdim)?)
}

/// log(sum(exp(x))) computed as m + log(sum(exp(x - m))) with m the max (0 where m is infinite).
pub fn logsumexp(t: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    autograd::record(
        &[t],
        || logsumexp_raw(t, dims, keepdim),
        |out| {
            let (reduced, _) = plan(t, Some(dims), keepdim)?;
            Ok(LogSumExpBackward {
                input: SavedTensor::input(t),
                output: SavedTensor::output(out, 0),
                reduced,
                keepdim,
            }
            .into())
        },
    )
}

fn logsumexp_raw(t: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    let x = to_dtype(t, t.dtype().to_float())?;
    let m = if x.numel() == 0 {
        super::creation::full_on(
            &plan(&x, Some(dims), true)?.1,
            Scalar::Float(0.0),
            x.dtype(),
            x.device(),
        )?
    } else {
        let m = extreme_values("logsumexp", &x, Some(dims), true, true)?;
        let finite = unary(Unary::IsFinite, &m)?;
        super::elementwise::where_(&finite, &Operand::T(m), &Operand::S(Scalar::Float(0.0)))?
    };
    let shifted = unary(
        Unary::Exp,
        &binary(Binary::Sub, &Operand::T(x.clone()), &Operand::T(m.clone()), None)?,
    )?;
    let s = sum(&shifted, Some(dims), true, None)?;
    let r = binary(Binary::Add, &Operand::T(unary(Unary::Log, &s)?), &Operand::T(m), None)?;
    if keepdim {
        Ok(r)
    } else {
        super::shape::reshape(
            &r,
            &plan(&x, Some(dims), false)?.1.iter().map(|&d| d as i64).collect::<Vec<_>>(),
        )
    }
}

/// all / any: bool results for any dtype.
pub fn all_any(t: &Tensor, dims: Option<&[i64]>, keepdim: bool, all: bool) -> Result<Tensor> {
    let (reduced, shape) = plan(t, dims, keepdim)?;
    let x = to_dtype(t, DType::Bool)?;
    if t.is_gpu() {
        return reduce_dims(if all { "all" } else { "any" }, &x, &reduced, &shape, 1.0);
    }
    let f = Fold {
        init: all,
        step: move |a: bool, v: bool, _| if all { a && v } else { a || v },
        combine: move |a: bool, b: bool| if all { a && b } else { a || b },
    };
    run::<bool, _, bool>(&x, &reduced, &shape, &f, |a| a)
}

// ---- backward ----

fn dims_of(reduced: &[bool]) -> Vec<i64> {
    (0..reduced.len()).filter(|&d| reduced[d]).map(|d| d as i64).collect()
}

/// sum and mean: the gradient spreads back over the reduced dims.
#[derive(Clone)]
pub struct SumBackward {
    in_shape: Shape,
    in_dtype: DType,
    reduced: Vec<bool>,
    keepdim: bool,
    mean: bool,
}

impl SumBackward {
    fn op(
        t: &Tensor,
        dims: Option<&[i64]>,
        keepdim: bool,
        mean: bool,
    ) -> Result<autograd::BackwardOp> {
        let (reduced, _) = plan(t, dims, keepdim)?;
        Ok(SumBackward { in_shape: t.shape().clone(), in_dtype: t.dtype(), reduced, keepdim, mean }
            .into())
    }
}

impl Backward for SumBackward {
    fn name(&self) -> String {
        if self.mean { "MeanBackward0" } else { "SumBackward0" }.to_string()
    }
    fn apply(&self, _: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let g = math::unsqueeze_reduced(&grads[0], &self.in_shape, &self.reduced, self.keepdim)?;
        let mut g = math::cast(&math::expand(&g, &self.in_shape)?, self.in_dtype)?;
        if self.mean {
            let n: usize = self
                .in_shape
                .iter()
                .zip(&self.reduced)
                .filter(|(_, &r)| r)
                .map(|(&s, _)| s)
                .product();
            g = math::scale(&g, 1.0 / n as f64)?;
        }
        Ok(vec![Some(g)])
    }
}

/// prod: each element's gradient is the product of the others, taken as
/// exclusive cumulative products from both sides (correct with zeros).
#[derive(Clone)]
pub struct ProdBackward {
    input: SavedTensor,
    reduced: Vec<bool>,
    keepdim: bool,
}

impl Backward for ProdBackward {
    fn name(&self) -> String {
        "ProdBackward0".to_string()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        use super::shape::{cat, flip, narrow, permute};
        let x = self.input.unpack(node)?;
        let nd = x.ndim();
        let g = math::unsqueeze_reduced(&grads[0], x.shape(), &self.reduced, self.keepdim)?;
        if nd == 0 {
            return Ok(vec![Some(math::cast(&g, x.dtype())?)]);
        }
        // Move the reduced dims last and merge them into one.
        let order: Vec<i64> = (0..nd)
            .filter(|&d| !self.reduced[d])
            .chain((0..nd).filter(|&d| self.reduced[d]))
            .map(|d| d as i64)
            .collect();
        let xp = permute(&x, &order)?;
        let kept: Vec<usize> = xp.shape()[..nd - dims_of(&self.reduced).len()].to_vec();
        let r: usize = xp.shape()[kept.len()..].iter().product();
        let mut flat_shape = kept.clone();
        flat_shape.push(r);
        let x2 = math::reshape(&xp, &flat_shape)?;
        let last = kept.len() as i64;
        let exclusive = |z: &Tensor| -> Result<Tensor> {
            let mut one_shape = kept.clone();
            one_shape.push(1);
            let ones = super::creation::full_on(&one_shape, Scalar::Int(1), z.dtype(), z.device())?;
            let head = narrow(z, last, 0, r as i64 - 1)?;
            cumulative(&cat(&[ones, head], last)?, last, None, true)
        };
        let left = exclusive(&x2)?;
        let right = flip(&exclusive(&flip(&x2, &[last])?)?, &[last])?;
        let others = math::mul(&left, &right)?;
        let mut g_kept = kept.clone();
        g_kept.push(1);
        let gp = permute(&g, &order)?;
        let g2 = math::reshape(&gp, &g_kept)?;
        let gx2 = math::mul(&g2, &others)?;
        let gxp = math::reshape(&gx2, xp.shape())?;
        let mut inverse = vec![0i64; nd];
        for (i, &o) in order.iter().enumerate() {
            inverse[o as usize] = i as i64;
        }
        Ok(vec![Some(math::cast(&permute(&gxp, &inverse)?, x.dtype())?)])
    }
}

/// amax/amin: the gradient is shared evenly by the elements equal to the extreme.
#[derive(Clone)]
pub struct ExtremeBackward {
    name: &'static str,
    input: SavedTensor,
    output: SavedTensor,
    reduced: Vec<bool>,
    keepdim: bool,
}

impl Backward for ExtremeBackward {
    fn name(&self) -> String {
        format!("{}Backward0", if self.name == "amax" { "Amax" } else { "Amin" })
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let x = self.input.unpack(node)?;
        let out = math::unsqueeze_reduced(
            &self.output.unpack(node)?,
            x.shape(),
            &self.reduced,
            self.keepdim,
        )?;
        let g = math::unsqueeze_reduced(&grads[0], x.shape(), &self.reduced, self.keepdim)?;
        let hit = math::mask_as(
            &binary(Binary::Eq, &Operand::T(x.clone()), &Operand::T(out), None)?,
            g.dtype(),
        )?;
        let count = sum(&hit, Some(&dims_of(&self.reduced)), true, None)?;
        Ok(vec![Some(math::mul(&math::div(&g, &count)?, &hit)?)])
    }
}

/// max(dim)/min(dim): the gradient goes to the selected index only.
#[derive(Clone)]
pub struct MaxDimBackward {
    name: &'static str,
    in_shape: Shape,
    dim: usize,
    keepdim: bool,
    indices: SavedTensor,
}

impl Backward for MaxDimBackward {
    fn name(&self) -> String {
        format!("{}Backward0", if self.name == "max" { "Max" } else { "Min" })
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let mut reduced = vec![false; self.in_shape.len()];
        if !reduced.is_empty() {
            reduced[self.dim] = true;
        }
        let g = math::unsqueeze_reduced(&grads[0], &self.in_shape, &reduced, self.keepdim)?;
        let idx = math::unsqueeze_reduced(
            &self.indices.unpack(node)?,
            &self.in_shape,
            &reduced,
            self.keepdim,
        )?;
        let zeros = math::zeros(&self.in_shape, g.dtype(), &g)?;
        Ok(vec![Some(super::index::scatter(&zeros, self.dim as i64, &idx, &Operand::T(g), true)?)])
    }
}

/// var (std is sqrt of var): 2(x - mean)/(n - correction).
#[derive(Clone)]
pub struct VarBackward {
    input: SavedTensor,
    reduced: Vec<bool>,
    correction: f64,
    keepdim: bool,
}

impl Backward for VarBackward {
    fn name(&self) -> String {
        "VarBackward0".to_string()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let x = self.input.unpack(node)?;
        let dims = dims_of(&self.reduced);
        let n: usize =
            x.shape().iter().zip(&self.reduced).filter(|(_, &r)| r).map(|(&s, _)| s).product();
        let g = math::unsqueeze_reduced(&grads[0], x.shape(), &self.reduced, self.keepdim)?;
        let centered = math::sub(&x, &mean(&x, Some(&dims), true, None)?)?;
        let d = math::scale(&centered, 2.0 / (n as f64 - self.correction).max(0.0))?;
        Ok(vec![Some(math::mul(&g, &d)?)])
    }
}

/// logsumexp: softmax of the input times the gradient.
#[derive(Clone)]
pub struct LogSumExpBackward {
    input: SavedTensor,
    output: SavedTensor,
    reduced: Vec<bool>,
    keepdim: bool,
}

impl Backward for LogSumExpBackward {
    fn name(&self) -> String {
        "LogsumexpBackward0".to_string()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let x = self.input.unpack(node)?;
        let out = math::unsqueeze_reduced(
            &self.output.unpack(node)?,
            x.shape(),
            &self.reduced,
            self.keepdim,
        )?;
        let g = math::unsqueeze_reduced(&grads[0], x.shape(), &self.reduced, self.keepdim)?;
        Ok(vec![Some(math::mul(&g, &unary(Unary::Exp, &math::sub(&x, &out)?)?)?)])
    }
}
