//! where, masked_fill and clamp: ops that pick between values, with their
//! in-place forms and backward formulas.

use super::binary::binary_raw;
use super::{binary, check_inplace_cast, tensors, Binary, Side};
use crate::autograd::{self, math, Backward, Node, SavedTensor};
use crate::backend::cpu::binary::run_where;
use crate::backend::cpu::elementwise::{map1, Arith};
use crate::backend::cpu::P;
use crate::backend::gpu::elementwise::gpu_where;
use crate::error::Result;
use crate::ops::copy::copy_into;
use crate::ops::{on_gpu, result_type, same_device, Operand};
use crate::tensor::dtype::Element;
use crate::tensor::layout::{broadcast_shapes, fmt_shape};
use crate::tensor::{DType, Tensor};
use crate::{bail, dispatch_float};
use std::sync::Arc;

fn check_bool_mask(op: &str, mask: &Tensor) -> Result<()> {
    if mask.dtype() != DType::Bool {
        bail!(
            Runtime,
            "{} expected a boolean condition/mask, but got mask with dtype {}",
            op,
            mask.dtype().name()
        );
    }
    Ok(())
}

/// torch.where(cond, x, y).
pub fn where_(cond: &Tensor, x: &Operand, y: &Operand) -> Result<Tensor> {
    let inputs = tensors(&[x, y]);
    autograd::record(
        &inputs,
        || where_raw(cond, x, y),
        |_| Ok(WhereBackward::new(cond, x, y, false).into()),
    )
}

fn where_raw(cond: &Tensor, x: &Operand, y: &Operand) -> Result<Tensor> {
    check_bool_mask("where", cond)?;
    let dtype = result_type(&[x, y]);
    let shape = broadcast_shapes(&broadcast_shapes(cond.shape(), x.shape())?, y.shape())?;
    if cond.is_gpu() || on_gpu(&[x, y]) {
        return gpu_where(cond, x, y, dtype, &shape);
    }
    let (tx, ty) = (x.tensor_as(dtype)?, y.tensor_as(dtype)?);
    let out = Tensor::for_output(&shape, dtype)?;
    crate::dispatch_all!(dtype, T => run_where::<T>(&out, cond, &tx, &ty))?;
    Ok(out)
}

/// masked_fill / masked_fill_: `value` where mask is true; keeps t's dtype and shape.
pub fn masked_fill(t: &Tensor, mask: &Tensor, value: &Operand, in_place: bool) -> Result<Tensor> {
    let v = tensors(&[value]);
    let tv = Operand::T(t.clone());
    if in_place {
        autograd::inplace(
            t,
            &v,
            "masked_fill_",
            || masked_fill_raw(t, mask, value, true).map(drop),
            |x| masked_fill(x, mask, value, false),
        )?;
        return Ok(t.clone());
    }
    let mut inputs = vec![t];
    inputs.extend(v);
    autograd::record(
        &inputs,
        || masked_fill_raw(t, mask, value, false),
        |_| Ok(WhereBackward::new(mask, value, &tv, true).into()),
    )
}

fn masked_fill_raw(t: &Tensor, mask: &Tensor, value: &Operand, in_place: bool) -> Result<Tensor> {
    check_bool_mask("masked_fill", mask)?;
    if let Operand::T(v) = value {
        if v.ndim() != 0 {
            bail!(
                Runtime,
                "masked_fill only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                v.ndim()
            );
        }
    }
    let shape = broadcast_shapes(t.shape(), mask.shape())?;
    if shape.as_slice() != t.shape().as_slice() && in_place {
        bail!(
            Runtime,
            "masked_fill_: mask of shape {} does not broadcast to the tensor's shape {}",
            fmt_shape(mask.shape()),
            fmt_shape(t.shape())
        );
    }
    if in_place {
        t.check_writable("masked_fill_")?;
    }
    // A mask that shares memory with `t` must be read before any write.
    let mask = &if std::sync::Arc::ptr_eq(mask.storage(), t.storage()) {
        crate::ops::copy::clone_as(mask, DType::Bool)?
    } else {
        mask.clone()
    };
    if t.is_gpu() || mask.is_gpu() {
        same_device("masked_fill", &[t, mask])?;
        let r = gpu_where(mask, value, &Operand::T(t.clone()), t.dtype(), &shape)?;
        if in_place {
            copy_into(t, &r)?;
            t.storage().bump_version();
        }
        return Ok(if in_place { t.clone() } else { r });
    }
    let v = value.tensor_as(t.dtype())?;
    let out = if in_place { t.clone() } else { Tensor::for_output(&shape, t.dtype())? };
    crate::dispatch_all!(t.dtype(), T => run_where::<T>(&out, mask, &v, t))?;
    if in_place {
        t.storage().bump_version();
    }
    Ok(out)
}

/// clamp(min, max) with scalar or tensor bounds; NaN inputs stay NaN.
pub fn clamp(t: &Tensor, min: Option<&Operand>, max: Option<&Operand>) -> Result<Tensor> {
    let mut inputs = vec![t];
    inputs.extend(min.map(|m| tensors(&[m])).unwrap_or_default());
    inputs.extend(max.map(|m| tensors(&[m])).unwrap_or_default());
    autograd::record(
        &inputs,
        || clamp_raw(t, min, max),
        |_| Ok(ClampBackward::new(t, min, max).into()),
    )
}

/// clamp_: the result must be castable back to t's dtype.
pub fn clamp_(t: &Tensor, min: Option<&Operand>, max: Option<&Operand>) -> Result<()> {
    let mut others = Vec::new();
    others.extend(min.map(|m| tensors(&[m])).unwrap_or_default());
    others.extend(max.map(|m| tensors(&[m])).unwrap_or_default());
    let raw = || -> Result<()> {
        t.check_writable("clamp_")?;
        if clamp_numbers(t, min, max, true)?.is_some() {
            t.storage().bump_version();
            return Ok(());
        }
        let r = clamp_raw(t, min, max)?;
        check_inplace_cast("clamp", r.dtype(), t.dtype())?;
        copy_into(t, &r)?;
        t.storage().bump_version();
        Ok(())
    };
    autograd::inplace(t, &others, "clamp_", raw, |x| clamp(x, min, max))
}

fn clamp_raw(t: &Tensor, min: Option<&Operand>, max: Option<&Operand>) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        bail!(Runtime, "torch.clamp: At least one of 'min' or 'max' must not be None");
    }
    if let Some(out) = clamp_numbers(t, min, max, false)? {
        return Ok(out);
    }
    let mut out = t.clone();
    if let Some(lo) = min {
        out = binary_raw(Binary::Maximum, &Operand::T(out), lo, None)?;
    }
    if let Some(hi) = max {
        out = binary_raw(Binary::Minimum, &Operand::T(out), hi, None)?;
    }
    Ok(out)
}

/// clamp of a float32/float64 CPU tensor between numbers in one pass (the
/// general path runs maximum, then minimum, and clamp_ copies back), into t
/// itself (`in_place`) or a new tensor. None for the other cases.
fn clamp_numbers(
    t: &Tensor,
    min: Option<&Operand>,
    max: Option<&Operand>,
    in_place: bool,
) -> Result<Option<Tensor>> {
    // An absent bound as the infinity that leaves every value (NaN too) as it is.
    let bound = |o: Option<&Operand>, none: f64| match o {
        None => Some(none),
        Some(Operand::S(v)) => Some(v.to_f64()),
        Some(Operand::T(_)) => None,
    };
    let (Some(lo), Some(hi)) = (bound(min, f64::NEG_INFINITY), bound(max, f64::INFINITY)) else {
        return Ok(None);
    };
    if t.is_gpu() || !matches!(t.dtype(), DType::F32 | DType::F64) {
        return Ok(None);
    }
    let out = if in_place { t.clone() } else { Tensor::for_output(t.shape(), t.dtype())? };
    dispatch_float!(t.dtype(), T => {
        let (lo, hi) = (<T as Element>::from_f64(lo), <T as Element>::from_f64(hi));
        // SAFETY: both layouts span t's shape; in place, out is t element for element.
        unsafe {
            map1(
                t.shape(),
                (P(out.ptr::<T>()?), out.strides()),
                (P(t.ptr::<T>()?), t.strides()),
                // Arith's max and min: NaN propagates, as maximum and minimum do.
                move |x: T| Arith::min(Arith::max(x, lo), hi),
            )
        };
    });
    Ok(Some(out))
}

/// where(cond, x, y) and masked_fill (where(mask, value, t)).
#[derive(Clone)]
pub struct WhereBackward {
    cond: SavedTensor,
    x: Side,
    y: Side,
    name: &'static str,
}

impl WhereBackward {
    /// `y_first`: the node lists y's edge before x's (masked_fill: t, value).
    fn new(cond: &Tensor, x: &Operand, y: &Operand, y_first: bool) -> WhereBackward {
        let mut edge = 0;
        let (x, y) = if y_first {
            let y = Side::new(y, &mut edge, false);
            (Side::new(x, &mut edge, false), y)
        } else {
            (Side::new(x, &mut edge, false), Side::new(y, &mut edge, false))
        };
        WhereBackward {
            cond: SavedTensor::input(cond),
            x,
            y,
            name: if y_first { "MaskedFillBackward0" } else { "WhereBackward0" },
        }
    }
}

impl Backward for WhereBackward {
    fn name(&self) -> String {
        self.name.to_string()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let (g, cond) = (&grads[0], self.cond.unpack(node)?);
        let zero = Operand::S(crate::tensor::Scalar::Int(0));
        let mut out = vec![None; node.edges.len()];
        if self.x.needs(node) {
            let gx = where_(&cond, &Operand::T(g.clone()), &zero)?;
            out[self.x.edge.expect("tensor")] =
                Some(math::reduce_grad(&gx, &self.x.shape, self.x.dtype)?);
        }
        if self.y.needs(node) {
            let gy = where_(&cond, &zero, &Operand::T(g.clone()))?;
            out[self.y.edge.expect("tensor")] =
                Some(math::reduce_grad(&gy, &self.y.shape, self.y.dtype)?);
        }
        Ok(out)
    }
}

/// clamp with number or tensor bounds: the gradient passes where the input is
/// within the bounds (inclusive), and to a tensor bound where it was clamped.
#[derive(Clone)]
pub struct ClampBackward {
    input: SavedTensor,
    min: Option<Side>,
    max: Option<Side>,
}

impl ClampBackward {
    fn new(t: &Tensor, min: Option<&Operand>, max: Option<&Operand>) -> ClampBackward {
        let mut edge = 1;
        let min = min.map(|m| Side::new(m, &mut edge, true));
        let max = max.map(|m| Side::new(m, &mut edge, true));
        ClampBackward { input: SavedTensor::input(t), min, max }
    }
}

impl Backward for ClampBackward {
    fn name(&self) -> String {
        "ClampBackward1".to_string()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let (g, x) = (&grads[0], Operand::T(self.input.unpack(node)?));
        let zero = Operand::S(crate::tensor::Scalar::Int(0));
        let mut out = vec![None; node.edges.len()];
        let mut keep: Option<Tensor> = None;
        for (side, inside, outside) in
            [(&self.min, Binary::Ge, Binary::Lt), (&self.max, Binary::Le, Binary::Gt)]
        {
            let Some(side) = side else { continue };
            let bound = side.value(node)?;
            let m = binary(inside, &x, &bound, None)?;
            keep = Some(match keep {
                None => m,
                Some(k) => binary(Binary::LogicalAnd, &Operand::T(k), &Operand::T(m), None)?,
            });
            if side.needs(node) {
                let gb =
                    where_(&binary(outside, &x, &bound, None)?, &Operand::T(g.clone()), &zero)?;
                out[side.edge.expect("tensor")] =
                    Some(math::reduce_grad(&gb, &side.shape, side.dtype)?);
            }
        }
        if node.needs_input_grad(0) {
            out[0] = Some(where_(&keep.expect("a bound"), &Operand::T(g.clone()), &zero)?);
        }
        Ok(out)
    }
}
