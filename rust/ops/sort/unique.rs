//! unique and unique_consecutive, over elements (dim=None) or over slices
//! along a dim. CPU only: the result's size depends on the data.

use crate::autograd::GradMode;
use crate::backend::cpu::sort as kernels;
use crate::backend::cpu::P;
use crate::bail;
use crate::dispatch_compute;
use crate::error::Result;
use crate::ops::copy::{contiguous, to_dtype};
use crate::ops::index::index_select;
use crate::ops::shape::{movedim, reshape};
use crate::tensor::layout::{fmt_shape, wrap_dim};
use crate::tensor::Tensor;

/// (values, inverse, counts). `consecutive`: runs of equal neighbours
/// (unique_consecutive), else distinct items in ascending order (`sorted` is
/// accepted for PyTorch's signature; the result is always sorted, an order
/// PyTorch allows for sorted=False).
pub fn unique(t: &Tensor, consecutive: bool, dim: Option<i64>) -> Result<(Tensor, Tensor, Tensor)> {
    let op = if consecutive { "unique_consecutive" } else { "unique" };
    if t.is_gpu() {
        bail!(
            NotImplemented,
            "{}(): no GPU kernel (input of shape {} on a gpu device; the result's size depends on the data); move the tensor to the CPU",
            op,
            fmt_shape(t.shape())
        );
    }
    let _off = GradMode::set(false);
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
