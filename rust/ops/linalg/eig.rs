//! linalg.eig / linalg.eigvals: eigenvalues and eigenvectors of general
//! (non-symmetric) real matrices through faer, as complex tensors. The
//! gradient is an autograd.Function in python/rumus/linalg.py (PyTorch's
//! formula); called directly with a differentiable input this raises.

use super::decomp::{check, host, raise_info, shape_of};
use crate::backend::cpu::linalg::Real;
use crate::bail;
use crate::error::Result;
use crate::ops::complex::raw_complex;
use crate::tensor::layout::numel;
use crate::tensor::Tensor;
use faer::MatRef;

/// (eigenvalues (*, n), eigenvectors (*, n, n) as unit-norm columns when `vectors`).
pub fn eig(a: &Tensor, vectors: bool) -> Result<(Tensor, Option<Tensor>)> {
    let op = if vectors { "linalg.eig" } else { "linalg.eigvals" };
    if a.dtype().is_complex() {
        bail!(
            NotImplemented,
            "{}: complex input matrices are not supported yet (float32/float64 only)",
            op
        );
    }
    let (batch, n, _) = check(op, a, true, "A")?;
    if a.is_gpu() {
        bail!(
            Type,
            "{}: its complex results cannot live on gpu devices; call it on a CPU tensor",
            op
        );
    }
    if crate::autograd::is_grad_enabled() && a.requires_grad() {
        bail!(
            NotImplemented,
            "{}: the native call records no gradient; rumus.linalg.eig differentiates it (python/rumus/linalg.py)",
            op
        );
    }
    let count = if n == 0 { 0 } else { numel(&batch) };
    crate::dispatch_float!(a.dtype(), T => {
        let (w, v, info) = run::<T>(&host::<T>(a)?, count, n, vectors);
        raise_info(op, &info, !batch.is_empty(), |_| "The algorithm failed to converge.".into())?;
        let w = raw_complex(&Tensor::from_vec(w, &shape_of(&batch, &[n, 2]))?)?;
        let v = if vectors {
            Some(raw_complex(&Tensor::from_vec(v, &shape_of(&batch, &[n, n, 2]))?)?)
        } else {
            None
        };
        Ok((w, v))
    })
}

/// Eigenvalues and row-major eigenvector matrices, as interleaved (re, im) parts.
fn run<T: Real>(a: &[T], count: usize, n: usize, vectors: bool) -> (Vec<T>, Vec<T>, Vec<i32>) {
    let zero = <T as num_traits::Zero>::zero();
    let mut w = vec![zero; count * n * 2];
    let mut v = vec![zero; if vectors { count * n * n * 2 } else { 0 }];
    let mut info = vec![0i32; count];
    for i in 0..count {
        let x = MatRef::from_row_major_slice(&a[i * n * n..(i + 1) * n * n], n, n);
        let wi = &mut w[i * n * 2..(i + 1) * n * 2];
        if !vectors {
            match x.eigenvalues() {
                Ok(e) => e.iter().enumerate().for_each(|(k, z)| {
                    wi[2 * k] = z.re;
                    wi[2 * k + 1] = z.im;
                }),
                Err(_) => info[i] = 1,
            }
            continue;
        }
        let Ok(e) = x.eigen() else {
            info[i] = 1;
            continue;
        };
        let (s, u) = (e.S().column_vector(), e.U());
        let vi = &mut v[i * n * n * 2..(i + 1) * n * n * 2];
        for c in 0..n {
            wi[2 * c] = s[c].re;
            wi[2 * c + 1] = s[c].im;
            // LAPACK's convention: each eigenvector has unit Euclidean norm.
            let norm = (0..n).map(|r| u[(r, c)].norm_sqr()).fold(zero, |p, q| p + q).sqrt();
            let scale = if norm > zero { norm.recip() } else { <T as num_traits::One>::one() };
            for r in 0..n {
                vi[2 * (r * n + c)] = u[(r, c)].re * scale;
                vi[2 * (r * n + c) + 1] = u[(r, c)].im * scale;
            }
        }
    }
    (w, v, info)
}
