//! Products composed of the matrix products and elementwise ops (so autograd
//! and the GPU come with them): addmm, addmv, addbmm, baddbmm (beta·input +
//! alpha·product), tensordot, kron and cross.

use super::elementwise::{binary, Binary};
use super::linalg::{bmm, mm, mv};
use super::pointwise::check_integral_scale;
use super::shape::{expand, narrow, permute, reshape};
use super::Operand;
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::{broadcast_shapes, fmt_shape, wrap_dim};
use crate::tensor::{Scalar, Tensor};

fn t(x: &Tensor) -> Operand {
    Operand::T(x.clone())
}

fn sizes(s: &[usize]) -> Vec<i64> {
    s.iter().map(|&d| d as i64).collect()
}

/// beta · input + alpha · product, input broadcast to the product's shape;
/// beta = 0 ignores input's values (NaN and inf included), as in PyTorch.
fn scaled_sum(
    op: &str,
    input: &Tensor,
    mats: [&Tensor; 2],
    product: impl FnOnce() -> Result<Tensor>,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    super::same_device(op, &[input, mats[0], mats[1]])?;
    for m in mats {
        if m.dtype() != input.dtype() {
            bail!(
                Runtime,
                "{}: expected self and mat2 to have the same dtype, but got: {} != {}",
                op,
                input.dtype().name(),
                m.dtype().name()
            );
        }
    }
    check_integral_scale(op, "beta", input.dtype(), beta)?;
    check_integral_scale(op, "alpha", input.dtype(), alpha)?;
    let p = product()?;
    let inp = expand(input, &sizes(p.shape())).map_err(|_| {
        crate::error::Error::Runtime(format!(
            "{}: the input of shape {} cannot be broadcast to the product's shape {}",
            op,
            fmt_shape(input.shape()),
            fmt_shape(p.shape())
        ))
    })?;
    let (b, a) = (beta.to_f64(), alpha.to_f64());
    if b == 0.0 {
        return if a == 1.0 {
            Ok(p)
        } else {
            binary(Binary::Mul, &t(&p), &Operand::S(alpha), None)
        };
    }
    let inp = if b == 1.0 { inp } else { binary(Binary::Mul, &t(&inp), &Operand::S(beta), None)? };
    binary(Binary::Add, &t(&inp), &t(&p), (a != 1.0).then_some(a))
}

fn check_ndim(op: &str, what: &str, x: &Tensor, nd: usize) -> Result<()> {
    if x.ndim() != nd {
        bail!(
            Runtime,
            "{}: {} must be a {}D tensor, got a {}D tensor of shape {}",
            op,
            what,
            nd,
            x.ndim(),
            fmt_shape(x.shape())
        );
    }
    Ok(())
}

/// beta · input + alpha · (mat1 @ mat2).
pub fn addmm(
    input: &Tensor,
    m1: &Tensor,
    m2: &Tensor,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    check_ndim("addmm", "mat1", m1, 2)?;
    check_ndim("addmm", "mat2", m2, 2)?;
    scaled_sum("addmm", input, [m1, m2], || mm(m1, m2), beta, alpha)
}

/// beta · input + alpha · (mat @ vec).
pub fn addmv(
    input: &Tensor,
    mat: &Tensor,
    vec: &Tensor,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    check_ndim("addmv", "mat", mat, 2)?;
    check_ndim("addmv", "vec", vec, 1)?;
    scaled_sum("addmv", input, [mat, vec], || mv(mat, vec), beta, alpha)
}

/// beta · input + alpha · (b1 @ b2) per batch.
pub fn baddbmm(
    input: &Tensor,
    b1: &Tensor,
    b2: &Tensor,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    check_ndim("baddbmm", "batch1", b1, 3)?;
    check_ndim("baddbmm", "batch2", b2, 3)?;
    scaled_sum("baddbmm", input, [b1, b2], || bmm(b1, b2), beta, alpha)
}

/// beta · input + alpha · Σ_b (b1[b] @ b2[b]): one (n, B·k) @ (B·k, p) product.
pub fn addbmm(
    input: &Tensor,
    b1: &Tensor,
    b2: &Tensor,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    check_ndim("addbmm", "batch1", b1, 3)?;
    check_ndim("addbmm", "batch2", b2, 3)?;
    let (s1, s2) = (b1.shape(), b2.shape());
    if s1[0] != s2[0] || s1[2] != s2[1] {
        bail!(
            Runtime,
            "addbmm: batch1 and batch2 shapes cannot be multiplied ({} and {})",
            fmt_shape(s1),
            fmt_shape(s2)
        );
    }
    let product = || {
        let (nb, n, k, p) = (s1[0] as i64, s1[1] as i64, s1[2] as i64, s2[2] as i64);
        let a = reshape(&permute(b1, &[1, 0, 2])?, &[n, nb * k])?;
        let b = reshape(b2, &[nb * k, p])?;
        mm(&a, &b)
    };
    scaled_sum("addbmm", input, [b1, b2], product, beta, alpha)
}

/// beta · input + alpha · outer(vec1, vec2).
pub fn addr(
    input: &Tensor,
    v1: &Tensor,
    v2: &Tensor,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    check_ndim("addr", "vec1", v1, 1)?;
    check_ndim("addr", "vec2", v2, 1)?;
    super::linalg::check_dtypes("addr", v1, v2)?;
    scaled_sum("addr", input, [v1, v2], || super::linalg::outer(v1, v2), beta, alpha)
}

/// Contracts dims `da` of a with dims `db` of b (pairwise), as torch.tensordot.
pub fn tensordot(a: &Tensor, b: &Tensor, da: &[i64], db: &[i64]) -> Result<Tensor> {
    if da.len() != db.len() {
        bail!(
            Runtime,
            "tensordot: both dimension lists should have same length, got {} and {}",
            da.len(),
            db.len()
        );
    }
    if a.dtype() != b.dtype() {
        bail!(
            Runtime,
            "tensordot: expected both tensors to have the same dtype, but got {} and {}",
            a.dtype().name(),
            b.dtype().name()
        );
    }
    super::same_device("tensordot", &[a, b])?;
    let (ra, rb) = (a.ndim(), b.ndim());
    let mut ca = Vec::new();
    let mut cb = Vec::new();
    for (&x, &y) in da.iter().zip(db) {
        let (x, y) = (wrap_dim(x, ra)?, wrap_dim(y, rb)?);
        if x >= ra || y >= rb {
            bail!(Index, "tensordot: cannot contract a dimension of a 0-d tensor");
        }
        if ca.contains(&x) || cb.contains(&y) {
            bail!(Runtime, "tensordot: a dimension appears twice in the contracted dims");
        }
        if a.shape()[x] != b.shape()[y] {
            bail!(
                Runtime,
                "tensordot: contracted dimensions need to match, but first has size {} in dim {} and second has size {} in dim {}",
                a.shape()[x],
                x,
                b.shape()[y],
                y
            );
        }
        ca.push(x);
        cb.push(y);
    }
    let free_a: Vec<usize> = (0..ra).filter(|d| !ca.contains(d)).collect();
    let free_b: Vec<usize> = (0..rb).filter(|d| !cb.contains(d)).collect();
    let k: usize = ca.iter().map(|&d| a.shape()[d]).product();
    let fa: usize = free_a.iter().map(|&d| a.shape()[d]).product();
    let fb: usize = free_b.iter().map(|&d| b.shape()[d]).product();
    let pa: Vec<i64> = free_a.iter().chain(&ca).map(|&d| d as i64).collect();
    let pb: Vec<i64> = cb.iter().chain(&free_b).map(|&d| d as i64).collect();
    let ma = reshape(&permute(a, &pa)?, &[fa as i64, k as i64])?;
    let mb = reshape(&permute(b, &pb)?, &[k as i64, fb as i64])?;
    let out: Vec<i64> = free_a
        .iter()
        .map(|&d| a.shape()[d] as i64)
        .chain(free_b.iter().map(|&d| b.shape()[d] as i64))
        .collect();
    reshape(&mm(&ma, &mb)?, &out)
}

/// The Kronecker product: a's dims interleaved with b's, then merged pairwise.
pub fn kron(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    super::same_device("kron", &[a, b])?;
    let nd = a.ndim().max(b.ndim());
    let pad = |x: &Tensor| -> Vec<usize> {
        let mut s = vec![1; nd - x.ndim()];
        s.extend_from_slice(x.shape());
        s
    };
    let (sa, sb) = (pad(a), pad(b));
    // a as (a0, 1, a1, 1, ...), b as (1, b0, 1, b1, ...).
    let va: Vec<i64> = sa.iter().flat_map(|&d| [d as i64, 1]).collect();
    let vb: Vec<i64> = sb.iter().flat_map(|&d| [1, d as i64]).collect();
    let prod = binary(Binary::Mul, &t(&reshape(a, &va)?), &t(&reshape(b, &vb)?), None)?;
    let out: Vec<i64> = sa.iter().zip(&sb).map(|(&x, &y)| (x * y) as i64).collect();
    reshape(&prod, &out)
}

/// The dim torch.cross uses without dim=: the first of size 3 (deprecated in
/// PyTorch, where linalg.cross defaults to -1).
pub fn default_cross_dim(a: &Tensor) -> Result<i64> {
    match a.shape().iter().position(|&s| s == 3) {
        Some(d) => Ok(d as i64),
        None => bail!(Runtime, "no dimension of size 3 in input"),
    }
}

/// The cross product of 3-vectors along `dim`; the other dims broadcast.
pub fn cross(a: &Tensor, b: &Tensor, dim: i64) -> Result<Tensor> {
    if a.ndim() != b.ndim() {
        bail!(
            Runtime,
            "linalg.cross: inputs must have the same number of dimensions (got shapes {} and {})",
            fmt_shape(a.shape()),
            fmt_shape(b.shape())
        );
    }
    super::same_device("cross", &[a, b])?;
    let d = wrap_dim(dim, a.ndim())?;
    if a.ndim() == 0 {
        bail!(Runtime, "linalg.cross: inputs must have at least one dimension, got 0-d tensors");
    }
    if a.shape()[d] != 3 || b.shape()[d] != 3 {
        bail!(
            Runtime,
            "linalg.cross: inputs dimension {} must have length 3. Got {} and {}",
            dim,
            a.shape()[d],
            b.shape()[d]
        );
    }
    // Broadcast first, so the components of a and b line up.
    let mut shape = broadcast_shapes(a.shape(), b.shape())?;
    shape[d] = 3;
    let (a, b) = (expand(a, &sizes(&shape))?, expand(b, &sizes(&shape))?);
    let c = |x: &Tensor, i: i64| narrow(x, d as i64, i, 1).map(|v| t(&v));
    let term = |i: i64, j: i64| -> Result<Tensor> {
        let l = binary(Binary::Mul, &c(&a, i)?, &c(&b, j)?, None)?;
        let r = binary(Binary::Mul, &c(&a, j)?, &c(&b, i)?, None)?;
        binary(Binary::Sub, &t(&l), &t(&r), None)
    };
    let parts = [term(1, 2)?, term(2, 0)?, term(0, 1)?];
    super::shape::cat(&parts, d as i64)
}
