//! unique and unique_consecutive, over elements (dim=None) or over slices
//! along a dim. On the GPU, elements go through the GPU sort, a flag where a
//! value differs from its neighbour and a scan of the flags; slices are
//! compared on the host. The result's size depends on the data, so the GPU
//! path reads one number back.

use crate::autograd::GradMode;
use crate::backend::cpu::sort as kernels;
use crate::backend::cpu::P;
use crate::bail;
use crate::dispatch_compute;
use crate::error::Result;
use crate::ops::copy::{contiguous, item, to_device, to_dtype};
use crate::ops::creation::full_on;
use crate::ops::elementwise::{binary, Binary};
use crate::ops::index::{index_select, scatter};
use crate::ops::scan::cumulative;
use crate::ops::shape::{cat, movedim, narrow, reshape};
use crate::ops::Operand;
use crate::tensor::layout::wrap_dim;
use crate::tensor::{DType, Device, Scalar, Tensor};

/// (values, inverse, counts). `consecutive`: runs of equal neighbours
/// (unique_consecutive), else distinct items in ascending order (`sorted` is
/// accepted for PyTorch's signature; the result is always sorted, an order
/// PyTorch allows for sorted=False).
pub fn unique(t: &Tensor, consecutive: bool, dim: Option<i64>) -> Result<(Tensor, Tensor, Tensor)> {
    let op = if consecutive { "unique_consecutive" } else { "unique" };
    let _off = GradMode::set(false);
    if t.is_gpu() {
        if dim.is_none() {
            return gpu_unique(t, consecutive);
        }
        let (v, i, c) = unique(&to_device(t, Device::Cpu)?, consecutive, dim)?;
        let dev = t.device();
        return Ok((to_device(&v, dev)?, to_device(&i, dev)?, to_device(&c, dev)?));
    }
    let (items, d) = match dim {
        None => (reshape(t, &[-1, 1])?, None),
        Some(dim) => {
            let d = wrap_dim(dim, t.ndim())?;
            if t.ndim() == 0 {
                bail!(Index, "{}(): dim {} is out of range for a 0-d input", op, dim);
            }
            let m = movedim(t, &[d as i64], &[0])?;
            let rows = t.shape()[d] as i64;
            let rest: i64 = t.shape().iter().product::<usize>() as i64 / rows.max(1);
            (reshape(&m, &[rows, if rows == 0 { 0 } else { rest }])?, Some(d))
        }
    };
    let x = contiguous(&to_dtype(&items, t.dtype().compute())?)?;
    let (rows, m) = (x.shape()[0], x.shape()[1]);
    let (reps, inverse, counts) = dispatch_compute!(x.dtype(), T => {
        kernels::unique::<T>(&kernels::Rows { x: P(x.ptr::<T>()?), rows, n: m }, !consecutive)
    });
    let nu = reps.len();
    let reps = Tensor::from_vec(reps, &[nu])?;
    let counts = Tensor::from_vec(counts, &[nu])?;
    Ok(match d {
        None => {
            let flat = reshape(t, &[-1])?;
            let shape: Vec<i64> = t.shape().iter().map(|&s| s as i64).collect();
            let inv = reshape(&Tensor::from_vec(inverse, &[rows])?, &shape)?;
            (index_select(&flat, 0, &reps)?, inv, counts)
        }
        Some(d) => {
            let inv = Tensor::from_vec(inverse, &[rows])?;
            (contiguous(&index_select(t, d as i64, &reps)?)?, inv, counts)
        }
    })
}

/// unique over the elements of a GPU tensor: the values in ascending order
/// (in their order for `consecutive`), each element's group, the group sizes.
fn gpu_unique(t: &Tensor, consecutive: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let dev = t.device();
    let flat = reshape(t, &[-1])?;
    let n = flat.numel();
    let shape: Vec<i64> = t.shape().iter().map(|&s| s as i64).collect();
    let zeros = |len: usize, dtype| full_on(&[len], Scalar::Int(0), dtype, dev);
    if n == 0 {
        return Ok((
            zeros(0, t.dtype())?,
            reshape(&zeros(0, DType::I64)?, &shape)?,
            zeros(0, DType::I64)?,
        ));
    }
    let (vals, perm) = if consecutive {
        (contiguous(&flat)?, None)
    } else {
        let (v, p) = super::sort(&flat, 0, false)?;
        (v, Some(p))
    };
    // A group starts at the first element and wherever a value differs from the
    // one before it (NaN != NaN: every NaN its own group, as on the CPU).
    let (a, b) = (narrow(&vals, 0, 1, n as i64 - 1)?, narrow(&vals, 0, 0, n as i64 - 1)?);
    let starts = binary(Binary::Ne, &Operand::T(a), &Operand::T(b), None)?;
    let first = full_on(&[1], Scalar::Int(1), DType::Bool, dev)?;
    let flags = cat(&[first, starts], 0)?;
    let groups = cumulative(&flags, 0, Some(DType::I64), false)?;
    let groups = binary(Binary::Sub, &Operand::T(groups), &Operand::S(Scalar::Int(1)), None)?;
    let nu = item(&narrow(&groups, 0, n as i64 - 1, 1)?)?.to_i64() as usize + 1;
    let values = scatter(&zeros(nu, t.dtype())?, 0, &groups, &Operand::T(vals), false)?;
    let ones = full_on(&[n], Scalar::Int(1), DType::I64, dev)?;
    let counts = scatter(&zeros(nu, DType::I64)?, 0, &groups, &Operand::T(ones), true)?;
    let inverse = match perm {
        None => groups,
        Some(p) => scatter(&zeros(n, DType::I64)?, 0, &p, &Operand::T(groups), false)?,
    };
    Ok((values, reshape(&inverse, &shape)?, counts))
}
