//! rumus.linalg's solvers: solve / solve_ex (A X = B and X A = B),
//! solve_triangular, and the LU family (lu_factor, lu_solve, lu). Batch dims
//! of A and B broadcast; the solves record `LinalgBackward` (decomp.rs).

use super::decomp::{
    check, host, info_tensor, put, raise_info, record_outputs, shape_of, Kind, LinalgBackward,
};
use crate::autograd::{self, SavedTensor};
use crate::backend::cpu::linalg as cpu;
use crate::bail;
use crate::error::Result;
use crate::ops::shape::{expand, matrix_transpose as mt, squeeze_dim, unsqueeze};
use crate::tensor::layout::{broadcast_shapes, fmt_shape, numel, Shape};
use crate::tensor::{DType, Tensor};

/// A and B expanded to their common batch shape (a differentiable view).
fn broadcast_batch(op: &str, a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor, Shape)> {
    let (ra, rb) = (a.ndim(), b.ndim());
    let batch = broadcast_shapes(&a.shape()[..ra - 2], &b.shape()[..rb - 2]).map_err(|_| {
        crate::error::Error::Runtime(format!(
            "{}: the batch dimensions of A {} and B {} cannot be broadcast",
            op,
            fmt_shape(a.shape()),
            fmt_shape(b.shape())
        ))
    })?;
    let ex = |t: &Tensor| -> Result<Tensor> {
        let mut s: Vec<i64> = batch.iter().map(|&d| d as i64).collect();
        s.extend_from_slice(&[-1, -1]);
        if t.shape()[..t.ndim() - 2] == batch[..] {
            Ok(t.clone())
        } else {
            expand(t, &s)
        }
    };
    Ok((ex(a)?, ex(b)?, batch))
}

fn same_dtype(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() != b.dtype() {
        bail!(
            Runtime,
            "{}: Expected A and B to have the same dtype, but found A of type {} and B of type {} instead",
            op,
            a.dtype().name(),
            b.dtype().name()
        );
    }
    crate::ops::same_device(op, &[a, b])?;
    Ok(())
}

/// Whether B is a (batch of) vector(s) for A, by PyTorch's rule.
fn vector_case(a: &Tensor, b: &Tensor) -> bool {
    b.ndim() == 1 || (b.ndim() + 1 == a.ndim() && b.shape()[..] == a.shape()[..a.ndim() - 1])
}

/// (X, info) with A X = B (`left`) or X A = B.
pub fn solve_ex(
    a: &Tensor,
    b: &Tensor,
    left: bool,
    check_errors: bool,
) -> Result<(Tensor, Tensor)> {
    let op = "linalg.solve";
    check(op, a, true, "A")?;
    if b.ndim() == 0 {
        bail!(Runtime, "{}: The input tensor B must have at least 1 dimensions.", op);
    }
    same_dtype(op, a, b)?;
    if left && vector_case(a, b) {
        let (x, info) = solve_ex(a, &unsqueeze(b, -1)?, left, check_errors)?;
        return Ok((squeeze_dim(&x, -1)?, info));
    }
    if b.ndim() < 2 {
        bail!(Runtime, "{}: The input tensor B must have at least 2 dimensions.", op);
    }
    if !left {
        let (x, info) = solve_ex(&mt(a)?, &mt(b)?, true, check_errors)?;
        return Ok((mt(&x)?, info));
    }
    let n = a.shape()[a.ndim() - 1];
    if b.shape()[b.ndim() - 2] != n {
        bail!(
            Runtime,
            "{}: Incompatible shapes of A and B for the equation AX = B ({}x{} and {}x{}) (shapes {} and {})",
            op,
            n,
            n,
            b.shape()[b.ndim() - 2],
            b.shape()[b.ndim() - 1],
            fmt_shape(a.shape()),
            fmt_shape(b.shape())
        );
    }
    let (a, b, batch) = broadcast_batch(op, a, b)?;
    let k = b.shape()[b.ndim() - 1];
    let dev = a.device();
    let mut info = Vec::new();
    let o = record_outputs(
        &[&a, &b],
        || {
            crate::dispatch_float!(a.dtype(), T => {
                let (x, i) = cpu::solve::<T>(&host::<T>(&a)?, Some(&host::<T>(&b)?), numel(&batch), n, k);
                if check_errors {
                    raise_info(op, &i, !batch.is_empty(), |_| "The solver failed because the input matrix is singular.".into())?;
                }
                info = i;
                Ok(vec![put(x, b.shape(), dev)?])
            })
        },
        |o| {
            LinalgBackward::new(
                Kind::Solve,
                vec![SavedTensor::input(&a), SavedTensor::output(&o[0], 0)],
            )
        },
    )?;
    Ok((o.into_iter().next().expect("one output"), info_tensor(info, &batch, dev)?))
}

pub fn solve(a: &Tensor, b: &Tensor, left: bool) -> Result<Tensor> {
    Ok(solve_ex(a, b, left, true)?.0)
}

/// X with A X = B (`left`) or X A = B for triangular A.
pub fn solve_triangular(
    a: &Tensor,
    b: &Tensor,
    upper: bool,
    left: bool,
    unit: bool,
) -> Result<Tensor> {
    let op = "linalg.solve_triangular";
    check(op, a, true, "A")?;
    if b.ndim() < 2 {
        bail!(
            Runtime,
            "{}: The input tensor B must have at least 2 dimensions (got shape {}).",
            op,
            fmt_shape(b.shape())
        );
    }
    same_dtype(op, a, b)?;
    if !left {
        return mt(&solve_triangular(&mt(a)?, &mt(b)?, !upper, true, unit)?);
    }
    let n = a.shape()[a.ndim() - 1];
    if b.shape()[b.ndim() - 2] != n {
        bail!(
            Runtime,
            "{}: Incompatible shapes of A and B for the equation AX = B ({}x{} and {}x{}) (shapes {} and {})",
            op,
            n,
            n,
            b.shape()[b.ndim() - 2],
            b.shape()[b.ndim() - 1],
            fmt_shape(a.shape()),
            fmt_shape(b.shape())
        );
    }
    let (a, b, batch) = broadcast_batch(op, a, b)?;
    let k = b.shape()[b.ndim() - 1];
    let dev = a.device();
    let o = record_outputs(
        &[&a, &b],
        || {
            crate::dispatch_float!(a.dtype(), T => {
                let x = cpu::solve_triangular::<T>(&host::<T>(&a)?, &host::<T>(&b)?, numel(&batch), n, k, upper, unit);
                Ok(vec![put(x, b.shape(), dev)?])
            })
        },
        |o| {
            LinalgBackward::new(
                Kind::Triangular { upper, unit },
                vec![SavedTensor::input(&a), SavedTensor::output(&o[0], 0)],
            )
        },
    )?;
    Ok(o.into_iter().next().expect("one output"))
}

fn no_grad(op: &str, ts: &[&Tensor]) -> Result<()> {
    if autograd::needs_grad(ts) {
        bail!(NotImplemented, "{}: the derivative is not implemented in rumus yet (use linalg.solve / linalg.inv, which have one)", op);
    }
    Ok(())
}

/// (LU, pivots, info): packed factors and LAPACK's 1-based int32 pivots.
pub fn lu_factor_ex(
    a: &Tensor,
    pivot: bool,
    check_errors: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    let op = "linalg.lu_factor";
    let (batch, m, n) = check(op, a, false, "A")?;
    if !pivot {
        bail!(Runtime, "{}: LU without pivoting is not implemented on the CPU", op);
    }
    no_grad(op, &[a])?;
    let dev = a.device();
    crate::dispatch_float!(a.dtype(), T => {
        let (lu, piv, info) = cpu::lu_factor::<T>(&host::<T>(a)?, numel(&batch), m, n);
        if check_errors {
            raise_info(op, &info, !batch.is_empty(), |k| format!("U[{},{}] is zero and using it on lu_solve would result in a division by zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)", k, k))?;
        }
        Ok((
            put(lu, a.shape(), dev)?,
            put(piv, &shape_of(&batch, &[m.min(n)]), dev)?,
            info_tensor(info, &batch, dev)?,
        ))
    })
}

/// X with A X = B (or Aᵀ X = B with `adjoint`; X A = B with `left == false`)
/// from lu_factor's results.
pub fn lu_solve(
    lu: &Tensor,
    piv: &Tensor,
    b: &Tensor,
    left: bool,
    adjoint: bool,
) -> Result<Tensor> {
    let op = "linalg.lu_solve";
    let (_, n, _) = check(op, lu, true, "LU")?;
    same_dtype(op, lu, b)?;
    if b.ndim() < 2 {
        bail!(Runtime, "{}: The input tensor B must have at least 2 dimensions.", op);
    }
    if !left {
        // X A = B  <=>  Aᵀ Xᵀ = Bᵀ
        return mt(&lu_solve(lu, piv, &mt(b)?, true, !adjoint)?);
    }
    if !matches!(piv.dtype(), DType::I32 | DType::I64)
        || piv.shape()[..] != lu.shape()[..lu.ndim() - 1]
    {
        bail!(
            Runtime,
            "{}: Expected pivots to be an integer tensor of shape {} (LU's shape without its last dim), got {} of shape {}",
            op,
            fmt_shape(&lu.shape()[..lu.ndim() - 1]),
            piv.dtype().name(),
            fmt_shape(piv.shape())
        );
    }
    if b.shape()[b.ndim() - 2] != n {
        bail!(
            Runtime,
            "{}: Incompatible shapes of A and B for the equation AX = B ({}x{} and {}x{})",
            op,
            n,
            n,
            b.shape()[b.ndim() - 2],
            b.shape()[b.ndim() - 1]
        );
    }
    no_grad(op, &[lu, b])?;
    let (lu_b, b_b, batch) = broadcast_batch(op, lu, b)?;
    let mut ps: Vec<i64> = batch.iter().map(|&d| d as i64).collect();
    ps.push(n as i64);
    let piv_b = expand(piv, &ps)?;
    let p: Vec<i32> = host::<i64>(&crate::ops::copy::to_dtype(&piv_b, DType::I64)?)?
        .into_iter()
        .map(|v| v as i32)
        .collect();
    if let Some(&bad) = p.iter().find(|&&v| v < 1 || v as usize > n) {
        bail!(Runtime, "{}: pivots must be between 1 and {} (got {})", op, n, bad);
    }
    let k = b_b.shape()[b_b.ndim() - 1];
    crate::dispatch_float!(lu.dtype(), T => {
        let x = cpu::lu_solve::<T>(&host::<T>(&lu_b)?, &p, &host::<T>(&b_b)?, numel(&batch), n, k, adjoint);
        put(x, b_b.shape(), lu.device())
    })
}

/// (P, L, U) with A = P L U.
pub fn lu(a: &Tensor, pivot: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let op = "linalg.lu";
    let (batch, m, n) = check(op, a, false, "A")?;
    if !pivot {
        bail!(Runtime, "{}: LU without pivoting is not implemented on the CPU", op);
    }
    no_grad(op, &[a])?;
    let k = m.min(n);
    let dev = a.device();
    crate::dispatch_float!(a.dtype(), T => {
        let (f, piv, _) = cpu::lu_factor::<T>(&host::<T>(a)?, numel(&batch), m, n);
        let count = numel(&batch);
        let (mut p, mut l, mut u) = (vec![<T as num_traits::Zero>::zero(); count * m * m], vec![<T as num_traits::Zero>::zero(); count * m * k], vec![<T as num_traits::Zero>::zero(); count * k * n]);
        for b in 0..count {
            let fb = &f[b * m * n..(b + 1) * m * n];
            let mut rows: Vec<usize> = (0..m).collect();
            for (i, &q) in piv[b * k..(b + 1) * k].iter().enumerate() {
                rows.swap(i, q as usize - 1);
            }
            for (i, &r) in rows.iter().enumerate() {
                p[b * m * m + r * m + i] = <T as num_traits::One>::one();
            }
            for i in 0..m {
                for j in 0..k {
                    l[b * m * k + i * k + j] = if i == j { <T as num_traits::One>::one() } else if i > j { fb[i * n + j] } else { <T as num_traits::Zero>::zero() };
                }
            }
            for i in 0..k {
                for j in i..n {
                    u[b * k * n + i * n + j] = fb[i * n + j];
                }
            }
        }
        Ok((
            put(p, &shape_of(&batch, &[m, m]), dev)?,
            put(l, &shape_of(&batch, &[m, k]), dev)?,
            put(u, &shape_of(&batch, &[k, n]), dev)?,
        ))
    })
}
