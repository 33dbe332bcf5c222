//! rumus.linalg's decompositions: det, slogdet, inv, cholesky, qr, eigh, svd.
//! Each validates its input, runs the batch through faer on the host
//! (backend/cpu/linalg.rs; GPU tensors are copied to the host and the results
//! back), and records one `LinalgBackward` whose math (PyTorch's formulas) is
//! written with tensor ops, so it runs on the tensors' device and can be
//! differentiated again.

use super::matmul;
use crate::autograd::{self, math, Backward, Node, SavedTensor};
use crate::backend::cpu::linalg as cpu;
use crate::bail;
use crate::error::{Error, Result};
use crate::ops::shape::{matrix_transpose as mt, narrow, tri, unsqueeze};
use crate::tensor::layout::{fmt_shape, numel, Shape};
use crate::tensor::{DType, Device, Element, Scalar, Tensor};
use std::sync::Arc;

/// Checks a float32/float64 input of at least 2 dims (square with `square`);
/// returns its batch shape, rows and columns.
pub fn check(op: &str, a: &Tensor, square: bool, what: &str) -> Result<(Shape, usize, usize)> {
    if !matches!(a.dtype(), DType::F32 | DType::F64) {
        if a.dtype().is_float() {
            bail!(Runtime, "{}: Low precision dtypes not supported. Got {}", op, a.dtype().name());
        }
        bail!(
            Runtime,
            "{}: Expected a floating point or complex tensor as input. Got {}",
            op,
            a.dtype().name()
        );
    }
    if a.ndim() < 2 {
        bail!(
            Runtime,
            "{}: The input tensor {} must have at least 2 dimensions (got shape {}).",
            op,
            what,
            fmt_shape(a.shape())
        );
    }
    let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
    if square && m != n {
        bail!(
            Runtime,
            "{}: {} must be batches of square matrices, but they are {} by {} matrices (shape {})",
            op,
            what,
            m,
            n,
            fmt_shape(a.shape())
        );
    }
    Ok((a.shape()[..a.ndim() - 2].into(), m, n))
}

/// The elements of `a` on the host, row-major.
pub fn host<T: Element>(a: &Tensor) -> Result<Vec<T>> {
    a.to_vec::<T>()
}

/// A new tensor of `v` on `device`.
pub fn put<T: Element>(v: Vec<T>, shape: &[usize], device: Device) -> Result<Tensor> {
    let t = Tensor::from_vec(v, shape)?;
    match device {
        Device::Gpu(_) => crate::ops::copy::transfer(&t, device),
        Device::Cpu => Ok(t),
    }
}

/// `batch` + `dims`.
pub fn shape_of(batch: &[usize], dims: &[usize]) -> Shape {
    let mut s: Shape = batch.into();
    s.extend_from_slice(dims);
    s
}

/// LinAlgError for the first nonzero info, as PyTorch words it (with the
/// batch element when the input is batched).
pub fn raise_info(
    op: &str,
    info: &[i32],
    batched: bool,
    msg: impl Fn(i32) -> String,
) -> Result<()> {
    if let Some((b, &k)) = info.iter().enumerate().find(|(_, &k)| k != 0) {
        let pre = if batched { format!("(Batch element {}): ", b) } else { String::new() };
        return Err(Error::LinAlg(format!("{}: {}{}", op, pre, msg(k))));
    }
    Ok(())
}

pub fn singular_msg(k: i32) -> String {
    format!("The diagonal element {} is zero, the inversion could not be completed because the input matrix is singular.", k)
}

pub fn not_pd_msg(k: i32) -> String {
    format!("The factorization could not be completed because the input is not positive-definite (the leading minor of order {} is not positive-definite).", k)
}

/// The info tensor (int32, the batch shape) on `device`.
pub fn info_tensor(info: Vec<i32>, batch: &[usize], device: Device) -> Result<Tensor> {
    put(info, batch, device)
}

/// `autograd::record_many` for the decompositions' one backward type.
pub fn record_outputs(
    inputs: &[&Tensor],
    forward: impl FnOnce() -> Result<Vec<Tensor>>,
    make: impl FnOnce(&[Tensor]) -> LinalgBackward,
) -> Result<Vec<Tensor>> {
    autograd::record_many(inputs, forward, |outs| Ok(make(outs).into()))
}

// ------------------------------------------------------------ forward ops

pub fn slogdet(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let (batch, n, _) = check("linalg.slogdet", a, true, "A")?;
    let dev = a.device();
    let mut o = record_outputs(
        &[a],
        || {
            crate::dispatch_float!(a.dtype(), T => {
                let (s, l) = cpu::slogdet::<T>(&host::<T>(a)?, numel(&batch), n);
                Ok(vec![put(s, &batch, dev)?, put(l, &batch, dev)?])
            })
        },
        |_| LinalgBackward::new(Kind::Slogdet, vec![SavedTensor::input(a)]),
    )?;
    let l = o.pop().expect("two outputs");
    Ok((o.pop().expect("two outputs"), l))
}

pub fn det(a: &Tensor) -> Result<Tensor> {
    let (batch, n, _) = check("linalg.det", a, true, "A")?;
    let dev = a.device();
    let o = record_outputs(
        &[a],
        || {
            crate::dispatch_float!(a.dtype(), T => {
                let (s, l) = cpu::slogdet::<T>(&host::<T>(a)?, numel(&batch), n);
                let d: Vec<T> = s.iter().zip(&l).map(|(&s, &l)| if s == 0.0 { 0.0 } else { s * l.exp() }).collect();
                Ok(vec![put(d, &batch, dev)?])
            })
        },
        |o| {
            LinalgBackward::new(
                Kind::Det,
                vec![SavedTensor::input(a), SavedTensor::output(&o[0], 0)],
            )
        },
    )?;
    Ok(o.into_iter().next().expect("one output"))
}

/// (inverse, info); raises LinAlgError for a singular matrix with `check_errors`.
pub fn inv_ex(a: &Tensor, check_errors: bool) -> Result<(Tensor, Tensor)> {
    let op = "linalg.inv";
    let (batch, n, _) = check(op, a, true, "A")?;
    let dev = a.device();
    let mut info = Vec::new();
    let o = record_outputs(
        &[a],
        || {
            crate::dispatch_float!(a.dtype(), T => {
                let (x, i) = cpu::solve::<T>(&host::<T>(a)?, None, numel(&batch), n, n);
                if check_errors {
                    raise_info(op, &i, !batch.is_empty(), singular_msg)?;
                }
                info = i;
                Ok(vec![put(x, a.shape(), dev)?])
            })
        },
        |o| LinalgBackward::new(Kind::Inv, vec![SavedTensor::output(&o[0], 0)]),
    )?;
    Ok((o.into_iter().next().expect("one output"), info_tensor(info, &batch, dev)?))
}

pub fn inv(a: &Tensor) -> Result<Tensor> {
    Ok(inv_ex(a, true)?.0)
}

/// (L, info): the lower Cholesky factor (its transpose with `upper`).
pub fn cholesky_ex(a: &Tensor, upper: bool, check_errors: bool) -> Result<(Tensor, Tensor)> {
    let op = "linalg.cholesky";
    let (batch, n, _) = check(op, a, true, "A")?;
    let dev = a.device();
    let mut info = Vec::new();
    let o = record_outputs(
        &[a],
        || {
            crate::dispatch_float!(a.dtype(), T => {
                let (l, i) = cpu::cholesky::<T>(&host::<T>(a)?, numel(&batch), n);
                if check_errors {
                    raise_info(op, &i, !batch.is_empty(), not_pd_msg)?;
                }
                info = i;
                Ok(vec![put(l, a.shape(), dev)?])
            })
        },
        |o| LinalgBackward::new(Kind::Cholesky, vec![SavedTensor::output(&o[0], 0)]),
    )?;
    let l = o.into_iter().next().expect("one output");
    let l = if upper { mt(&l)? } else { l };
    Ok((l, info_tensor(info, &batch, dev)?))
}

/// (Q, R) for mode "reduced", "complete" or "r" (Q empty).
pub fn qr(a: &Tensor, mode: &str) -> Result<(Tensor, Tensor)> {
    let op = "linalg.qr";
    if !matches!(mode, "reduced" | "complete" | "r") {
        bail!(Runtime, "qr received unrecognized mode '{}' but expected one of 'reduced' (default), 'r', or 'complete'", mode);
    }
    let (batch, m, n) = check(op, a, false, "A")?;
    let (dev, k, complete) = (a.device(), m.min(n), mode == "complete");
    let (qc, rr) = if complete { (m, m) } else { (k, k) };
    let o = record_outputs(
        &[a],
        || {
            crate::dispatch_float!(a.dtype(), T => {
                let (q, r) = cpu::qr::<T>(&host::<T>(a)?, numel(&batch), m, n, complete);
                Ok(vec![put(q, &shape_of(&batch, &[m, qc]), dev)?, put(r, &shape_of(&batch, &[rr, n]), dev)?])
            })
        },
        |o| {
            let kind =
                Kind::Qr { differentiable: mode != "r" && m >= n && (mode == "reduced" || m == n) };
            LinalgBackward::new(
                kind,
                vec![SavedTensor::output(&o[0], 0), SavedTensor::output(&o[1], 1)],
            )
        },
    )?;
    let (q, r) = (o[0].clone(), o[1].clone());
    if mode == "r" {
        return Ok((crate::ops::creation::full_on(&[0], Scalar::Int(0), a.dtype(), dev)?, r));
    }
    Ok((q, r))
}

/// (eigenvalues ascending, eigenvectors as columns) of symmetric matrices,
/// reading the lower (UPLO "L") or upper triangle.
pub fn eigh(a: &Tensor, uplo: &str, vectors: bool) -> Result<(Tensor, Option<Tensor>)> {
    let op = if vectors { "linalg.eigh" } else { "linalg.eigvalsh" };
    let lower = match uplo {
        "L" | "l" => true,
        "U" | "u" => false,
        _ => bail!(Runtime, "{}: Expected UPLO argument to be 'L' or 'U', but got {}", op, uplo),
    };
    let (batch, n, _) = check(op, a, true, "A")?;
    let dev = a.device();
    // eigenvalues with a gradient come from the full decomposition.
    let vectors_run = vectors || autograd::needs_grad(&[a]);
    let o = record_outputs(
        &[a],
        || {
            crate::dispatch_float!(a.dtype(), T => {
                let (w, v, i) = cpu::eigh::<T>(&host::<T>(a)?, numel(&batch), n, lower, vectors_run);
                raise_info(op, &i, !batch.is_empty(), |_| "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated eigenvalues.".into())?;
                let mut out = vec![put(w, &shape_of(&batch, &[n]), dev)?];
                if vectors_run {
                    out.push(put(v, a.shape(), dev)?);
                }
                Ok(out)
            })
        },
        |o| {
            LinalgBackward::new(
                Kind::Eigh,
                vec![SavedTensor::output(&o[0], 0), SavedTensor::output(&o[1], 1)],
            )
        },
    )?;
    Ok((o[0].clone(), if vectors { Some(o[1].clone()) } else { None }))
}

/// (U, S, Vh); with `vectors == false` only S is computed (U, Vh empty)
/// unless S needs a gradient.
pub fn svd(a: &Tensor, full_matrices: bool, vectors: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let op = if vectors { "linalg.svd" } else { "linalg.svdvals" };
    let (batch, m, n) = check(op, a, false, "A")?;
    let (dev, k) = (a.device(), m.min(n));
    let vectors_run = vectors || autograd::needs_grad(&[a]);
    let full = full_matrices && vectors;
    let (uc, vr) = if full { (m, n) } else { (k, k) };
    let o = record_outputs(
        &[a],
        || {
            crate::dispatch_float!(a.dtype(), T => {
                let (u, s, vt, i) = cpu::svd::<T>(&host::<T>(a)?, numel(&batch), m, n, vectors_run, full);
                raise_info(op, &i, !batch.is_empty(), |_| "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated singular values.".into())?;
                let s = put(s, &shape_of(&batch, &[k]), dev)?;
                if !vectors_run {
                    let e = crate::ops::creation::full_on(&[0], Scalar::Int(0), a.dtype(), dev)?;
                    return Ok(vec![e.clone(), s, e]);
                }
                Ok(vec![put(u, &shape_of(&batch, &[m, uc]), dev)?, s, put(vt, &shape_of(&batch, &[vr, n]), dev)?])
            })
        },
        |o| {
            LinalgBackward::new(
                Kind::Svd { k },
                vec![
                    SavedTensor::output(&o[0], 0),
                    SavedTensor::output(&o[1], 1),
                    SavedTensor::output(&o[2], 2),
                ],
            )
        },
    )?;
    Ok((o[0].clone(), o[1].clone(), o[2].clone()))
}

// ------------------------------------------------------------ backward

#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Det,
    Slogdet,
    Inv,
    /// inputs (A, B), saved (A, X)
    Solve,
    Cholesky,
    /// inputs (A, B), saved (A, X)
    Triangular {
        upper: bool,
        unit: bool,
    },
    Qr {
        differentiable: bool,
    },
    Eigh,
    Svd {
        k: usize,
    },
}

/// The backward of every decomposition: one variant of `Kind` and the saved
/// inputs / outputs it reads.
#[derive(Clone)]
pub struct LinalgBackward {
    kind: Kind,
    saved: Vec<SavedTensor>,
}

impl LinalgBackward {
    pub fn new(kind: Kind, saved: Vec<SavedTensor>) -> LinalgBackward {
        LinalgBackward { kind, saved }
    }
}

fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    matmul(a, b)
}

/// (..., 1, 1) view of a batch of scalars.
fn as_mat(t: &Tensor) -> Result<Tensor> {
    unsqueeze(&unsqueeze(t, -1)?, -1)
}

/// The identity on the device and dtype of `like`.
pub fn eye_like(n: usize, like: &Tensor) -> Result<Tensor> {
    let e = crate::ops::creation::eye(n as i64, n as i64, like.dtype())?;
    crate::ops::copy::to_device(&e, like.device())
}

/// diag(v) for a batch of vectors.
pub fn diag_embed(v: &Tensor) -> Result<Tensor> {
    let n = v.shape()[v.ndim() - 1];
    math::mul(&unsqueeze(v, -1)?, &eye_like(n, v)?)
}

/// Whether a gradient passed to backward carries anything: the engine gives
/// zeros for outputs nobody used, and the terms of such gradients are skipped
/// (they are zero; skipping also keeps a 1/σ from turning them into NaN).
fn used(g: &Tensor) -> Result<bool> {
    if g.requires_grad() || g.numel() == 0 {
        return Ok(g.requires_grad());
    }
    let nz = crate::ops::elementwise::binary(
        crate::ops::elementwise::Binary::Ne,
        &crate::ops::Operand::T(g.clone()),
        &crate::ops::Operand::S(Scalar::Float(0.0)),
        None,
    )?;
    let any = crate::ops::reduce::all_any(&nz, None, false, false)?;
    Ok(matches!(crate::ops::copy::item(&any)?, Scalar::Bool(true)))
}

impl Backward for LinalgBackward {
    fn name(&self) -> String {
        match self.kind {
            Kind::Det => "LinalgDetBackward0",
            Kind::Slogdet => "LinalgSlogdetBackward0",
            Kind::Inv => "LinalgInvExBackward0",
            Kind::Solve => "LinalgSolveExBackward0",
            Kind::Cholesky => "LinalgCholeskyExBackward0",
            Kind::Triangular { .. } => "LinalgSolveTriangularBackward0",
            Kind::Qr { .. } => "LinalgQrBackward0",
            Kind::Eigh => "LinalgEighBackward0",
            Kind::Svd { .. } => "LinalgSvdBackward0",
        }
        .into()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let s = |i: usize| self.saved[i].unpack(node);
        match self.kind {
            Kind::Det => {
                // d det = det · tr(A⁻¹ dA): gA = g det A⁻ᵀ (A must be invertible).
                let w = math::mul(&grads[0], &s(1)?)?;
                Ok(vec![Some(math::mul(&as_mat(&w)?, &mt(&inv(&s(0)?)?)?)?)])
            }
            Kind::Slogdet => Ok(vec![Some(math::mul(&as_mat(&grads[1])?, &mt(&inv(&s(0)?)?)?)?)]),
            Kind::Inv => {
                let xt = mt(&s(0)?)?;
                Ok(vec![Some(math::neg(&mm(&mm(&xt, &grads[0])?, &xt)?)?)])
            }
            Kind::Solve => {
                let (a, x) = (s(0)?, s(1)?);
                let gb = super::solve::solve(&mt(&a)?, &grads[0], true)?;
                let ga =
                    node.needs_input_grad(0).then(|| math::neg(&mm(&gb, &mt(&x)?)?)).transpose()?;
                Ok(vec![ga, Some(gb)])
            }
            Kind::Triangular { upper, unit } => {
                let (a, x) = (s(0)?, s(1)?);
                let gb = super::solve::solve_triangular(&mt(&a)?, &grads[0], !upper, true, unit)?;
                let ga = if node.needs_input_grad(0) {
                    let full = math::neg(&mm(&gb, &mt(&x)?)?)?;
                    let d = i64::from(unit);
                    Some(if upper { tri(&full, d, false)? } else { tri(&full, -d, true)? })
                } else {
                    None
                };
                Ok(vec![ga, Some(gb)])
            }
            Kind::Cholesky => {
                // gA = L⁻ᵀ Φ(Lᵀ gL) L⁻¹, symmetrized; Φ: lower triangle, diagonal halved.
                let l = s(0)?;
                let n = l.shape()[l.ndim() - 1];
                let p = tri(&mm(&mt(&l)?, &tri(&grads[0], 0, true)?)?, 0, true)?;
                let p = math::sub(&p, &math::scale(&math::mul(&p, &eye_like(n, &p)?)?, 0.5)?)?;
                let y = super::solve::solve_triangular(&mt(&l)?, &p, true, true, false)?;
                let g = super::solve::solve_triangular(&l, &y, false, false, false)?;
                Ok(vec![Some(math::scale(&math::add(&g, &mt(&g)?)?, 0.5)?)])
            }
            Kind::Qr { differentiable } => {
                if !differentiable {
                    bail!(
                        Runtime,
                        "linalg.qr: the derivative is implemented for nrows >= ncols with mode='reduced' (or 'complete' on square inputs); mode='r' does not compute Q, which it needs"
                    );
                }
                // M = R gRᵀ − gQᵀ Q; gA = (gQ + Q copyltu(M)) R⁻ᵀ.
                let (q, r) = (s(0)?, s(1)?);
                let (gq, gr) = (&grads[0], &grads[1]);
                let mut mmat = mm(&r, &mt(gr)?)?;
                let gq_used = used(gq)?;
                if gq_used {
                    mmat = math::sub(&mmat, &mm(&mt(gq)?, &q)?)?;
                }
                let low = tri(&mmat, 0, true)?;
                let sym = math::add(&low, &mt(&tri(&mmat, -1, true)?)?)?;
                let mut z = mm(&q, &sym)?;
                if gq_used {
                    z = math::add(&z, gq)?;
                }
                let ga = mt(&super::solve::solve_triangular(&r, &mt(&z)?, true, true, false)?)?;
                Ok(vec![Some(ga)])
            }
            Kind::Eigh => {
                // gA = V (diag(gw) + F ∘ (Vᵀ gV)) Vᵀ, F_ij = 1 / (w_j − w_i), F_ii = 0.
                let (w, v) = (s(0)?, s(1)?);
                let n = w.shape()[w.ndim() - 1];
                let mut inner = diag_embed(&grads[0])?;
                if used(&grads[1])? {
                    let i = eye_like(n, &w)?;
                    let e = math::sub(&unsqueeze(&w, -2)?, &unsqueeze(&w, -1)?)?;
                    let f = math::sub(&math::pow_scalar(&math::add(&e, &i)?, -1.0)?, &i)?;
                    inner = math::add(&inner, &math::mul(&f, &mm(&mt(&v)?, &grads[1])?)?)?;
                }
                Ok(vec![Some(mm(&mm(&v, &inner)?, &mt(&v)?)?)])
            }
            Kind::Svd { k } => svd_backward(s(0)?, s(1)?, s(2)?, grads, k),
        }
    }
}

/// PyTorch's svd_backward (real case) on the thin factors: with E_ij =
/// s_j² − s_i² (1 on the diagonal), J = skew(Uᵀ gU) / E, K = skew(Vᵀ gV) / E,
/// gA = U (J S + S K + diag(gS)) Vᵀ + (I − U Uᵀ) gU S⁻¹ Vᵀ + U S⁻¹ gVᵀ (I − V Vᵀ).
/// Full U / Vh are narrowed to their first min(m, n) columns / rows (the rest
/// do not depend on A uniquely).
fn svd_backward(
    u: Tensor,
    sv: Tensor,
    vh: Tensor,
    grads: &[Tensor],
    k: usize,
) -> Result<Vec<Option<Tensor>>> {
    let thin = |t: &Tensor, dim: i64| -> Result<Tensor> {
        let d = if dim < 0 { t.ndim() as i64 + dim } else { dim } as usize;
        if t.shape()[d] == k {
            Ok(t.clone())
        } else {
            narrow(t, dim, 0, k as i64)
        }
    };
    let (u, vh) = (thin(&u, -1)?, thin(&vh, -2)?);
    let (gu, gvh) = (thin(&grads[0], -1)?, thin(&grads[2], -2)?);
    let (gu_used, gv_used) = (used(&gu)?, used(&gvh)?);
    let v = mt(&vh)?;
    let mut inner = diag_embed(&grads[1])?;
    if !gu_used && !gv_used {
        return Ok(vec![Some(mm(&mm(&u, &inner)?, &vh)?)]);
    }
    let (m, n) = (u.shape()[u.ndim() - 2], vh.shape()[vh.ndim() - 1]);
    let s2 = math::mul(&sv, &sv)?;
    let i = eye_like(k, &sv)?;
    let e = math::add(&math::sub(&unsqueeze(&s2, -2)?, &unsqueeze(&s2, -1)?)?, &i)?;
    let smat = diag_embed(&sv)?;
    let sinv = unsqueeze(&math::pow_scalar(&sv, -1.0)?, -2)?; // scales columns
    let skew = |x: &Tensor| -> Result<Tensor> { math::sub(x, &mt(x)?) };
    let mut extra: Option<Tensor> = None;
    if gu_used {
        let j = math::div(&skew(&mm(&mt(&u)?, &gu)?)?, &e)?;
        inner = math::add(&inner, &mm(&j, &smat)?)?;
        if m > k {
            let proj = math::sub(&gu, &mm(&u, &mm(&mt(&u)?, &gu)?)?)?;
            extra = Some(mm(&math::mul(&proj, &sinv)?, &vh)?);
        }
    }
    if gv_used {
        let gv = mt(&gvh)?;
        let kk = math::div(&skew(&mm(&vh, &gv)?)?, &e)?;
        inner = math::add(&inner, &mm(&smat, &kk)?)?;
        if n > k {
            let proj = math::sub(&gv, &mm(&v, &mm(&vh, &gv)?)?)?;
            let t = mm(&math::mul(&u, &sinv)?, &mt(&proj)?)?;
            extra = Some(match extra {
                Some(x) => math::add(&x, &t)?,
                None => t,
            });
        }
    }
    let mut ga = mm(&mm(&u, &inner)?, &vh)?;
    if let Some(x) = extra {
        ga = math::add(&ga, &x)?;
    }
    Ok(vec![Some(ga)])
}
