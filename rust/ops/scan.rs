//! Inclusive scans along a dim: cumsum and cumprod, with their backward.

use super::copy::to_dtype;
use super::elementwise::{binary, where_, Binary};
use super::reduce::{all_any, sum_dtype};
use super::Operand;
use crate::autograd::{self, math, Backward, Node, SavedTensor};
use crate::backend::cpu::reduce::scan;
use crate::dispatch_compute;
use crate::error::Result;
use crate::tensor::{DType, Scalar, Tensor};
use std::sync::Arc;

/// Inclusive scan along `dim` (cumsum, cumprod). Ints and bools accumulate in int64.
pub fn cumulative(t: &Tensor, dim: i64, dtype: Option<DType>, product: bool) -> Result<Tensor> {
    autograd::record(
        &[t],
        || cumulative_raw(t, dim, dtype, product),
        |out| {
            let d = crate::tensor::layout::wrap_dim(dim, t.ndim())? as i64;
            let saved = product.then(|| (SavedTensor::input(t), SavedTensor::output(out, 0)));
            Ok(CumulativeBackward { dim: d, in_dtype: t.dtype(), saved }.into())
        },
    )
}

fn cumulative_raw(t: &Tensor, dim: i64, dtype: Option<DType>, product: bool) -> Result<Tensor> {
    let d = crate::tensor::layout::wrap_dim(dim, t.ndim())?;
    let out_dtype = sum_dtype(t, dtype);
    let x = to_dtype(t, if out_dtype.is_float() { out_dtype.compute() } else { DType::I64 })?;
    if t.is_gpu() {
        let op = match (out_dtype.is_float(), product) {
            (true, false) => "cumsum",
            (true, true) => "cumprod",
            (false, false) => "cumsum_i32",
            (false, true) => "cumprod_i32",
        };
        let x = super::copy::contiguous_clone(&x)?;
        let out = Tensor::empty_on(x.shape(), x.dtype(), x.device())?;
        let (outer, n, inner) = if x.ndim() == 0 {
            (1, 1, 1)
        } else {
            (x.shape()[..d].iter().product(), x.shape()[d], x.shape()[d + 1..].iter().product())
        };
        crate::backend::gpu::reduce::reduce(op, &x, outer, n, inner, &[&out], 1.0)?;
        return to_dtype(&out, out_dtype);
    }
    let out = Tensor::for_output(x.shape(), x.dtype())?;
    if x.numel() > 0 {
        dispatch_compute!(x.dtype(), T => scan::<T>(&x, &out, d, product))?;
    }
    to_dtype(&out, out_dtype)
}

/// cumsum: reversed cumsum of the gradient. cumprod: reversed cumsum of
/// g·out divided by the input where the input is non-zero (after a zero this
/// is 0, but still depends on that zero through out, which double backward
/// needs); at the first and second zero of a row, the reversed cumsum of g
/// times the cumprod with that zero replaced by one (exact values and second
/// derivatives). Every step is a recorded op, so it differentiates again.
#[derive(Clone)]
pub struct CumulativeBackward {
    dim: i64,
    in_dtype: DType,
    saved: Option<(SavedTensor, SavedTensor)>,
}

impl Backward for CumulativeBackward {
    fn name(&self) -> String {
        if self.saved.is_some() { "CumprodBackward0" } else { "CumsumBackward0" }.to_string()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        use super::shape::flip;
        let g = &grads[0];
        let d = [self.dim];
        let rev_cumsum = |t: &Tensor| -> Result<Tensor> {
            if t.ndim() == 0 {
                return Ok(t.clone());
            }
            flip(&cumulative(&flip(t, &d)?, self.dim, None, false)?, &d)
        };
        let r = match &self.saved {
            None => rev_cumsum(g)?,
            Some((x, out)) => {
                let (x, out) = (x.unpack(node)?, out.unpack(node)?);
                let zero = Operand::S(Scalar::Int(0));
                let one = Operand::S(Scalar::Int(1));
                let is_zero = binary(Binary::Eq, &Operand::T(x.clone()), &zero, None)?;
                let x_safe = where_(
                    &binary(Binary::Eq, &Operand::T(is_zero.clone()), &zero, None)?,
                    &Operand::T(x.clone()),
                    &one,
                )?;
                let mut r = math::div(&rev_cumsum(&math::mul(g, &out)?)?, &x_safe)?;
                let any_zero =
                    crate::ops::copy::item(&all_any(&is_zero, None, false, false)?)?.to_i64() != 0;
                if any_zero {
                    // The first and second zero of a row: the product of the
                    // others, as a cumprod with that zero replaced by one.
                    let zeros_so_far = Operand::T(cumulative(&is_zero, self.dim, None, false)?);
                    for nth in [1, 2] {
                        let nth_zero =
                            binary(Binary::Eq, &zeros_so_far, &Operand::S(Scalar::Int(nth)), None)?;
                        let at = binary(
                            Binary::LogicalAnd,
                            &Operand::T(nth_zero),
                            &Operand::T(is_zero.clone()),
                            None,
                        )?;
                        let skip = cumulative(
                            &where_(&at, &one, &Operand::T(x.clone()))?,
                            self.dim,
                            None,
                            true,
                        )?;
                        r = where_(
                            &at,
                            &Operand::T(rev_cumsum(&math::mul(g, &skip)?)?),
                            &Operand::T(r),
                        )?;
                    }
                }
                r
            }
        };
        Ok(vec![Some(math::cast(&r, self.in_dtype)?)])
    }
}
