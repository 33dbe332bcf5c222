//! The three one-dimensional transforms behind rumus.fft (python/rumus/fft.py
//! composes fftn, hfft, norm= and the rest from them), with their backward.
//!
//! Each transform reads the input along `dim` cut or zero-padded to the
//! transform length n, scales by `scale`, and writes an output of `out_len`
//! entries along `dim` (cut or zero-padded). That makes each one's adjoint a
//! transform of the same family, so backward is again these ops:
//! - c2c: y = cut(s·F±·pad(x)); the gradient is c2c(g) in the other direction;
//! - r2c: the first n/2+1 bins of a real input's DFT; the gradient is
//!   Re(c2c⁻(g)) (the missing bins contribute nothing);
//! - c2r: the real signal whose half spectrum is x; the gradient is r2c(g)
//!   with bins 1..⌈n/2⌉-1 doubled (each stands for itself and its conjugate).

use crate::autograd::{self, Backward, Node};
use crate::backend::cpu::fft as kernel;
use crate::bail;
use crate::dispatch_complex;
use crate::error::Result;
use crate::ops::copy::contiguous;
use crate::tensor::layout::wrap_dim;
use crate::tensor::{DType, Tensor};
use std::sync::Arc;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    C2C { forward: bool },
    R2C,
    C2R,
}

/// Runs `kind` along `dim` of `x` (made contiguous) into a contiguous output
/// of the same layout with `out_len` entries along `dim`.
fn run(kind: Kind, x: &Tensor, dim: usize, n: usize, out_len: usize, scale: f64) -> Result<Tensor> {
    let xc = contiguous(x)?;
    let shape = xc.shape();
    let g = kernel::Lanes {
        outer: shape[..dim].iter().product(),
        inner: shape[dim + 1..].iter().product(),
        la: shape[dim],
        lo: out_len,
    };
    let mut oshape = shape.clone();
    oshape[dim] = out_len;
    let (out_dtype, read) = match kind {
        Kind::C2C { .. } => (x.dtype(), x.dtype()),
        Kind::R2C => (x.dtype().to_complex(), x.dtype()),
        Kind::C2R => (x.dtype().to_real(), x.dtype()),
    };
    let out = Tensor::for_output(&oshape, out_dtype)?;
    let real = read.to_real();
    dispatch_complex!(real.to_complex(), R => match kind {
        Kind::C2C { forward } => kernel::c2c::<R>(&xc, &out, g, n, scale, forward),
        Kind::R2C => kernel::r2c::<R>(&xc, &out, g, n, scale),
        Kind::C2R => kernel::c2r::<R>(&xc, &out, g, n, scale),
    })?;
    Ok(out)
}

/// One transform of rumus.fft (see the module doc). `x` must already have
/// the dtype the kernel reads: complex for c2c/c2r, float32/float64 for r2c.
pub fn transform(
    kind: Kind,
    x: &Tensor,
    dim: i64,
    n: usize,
    out_len: usize,
    scale: f64,
) -> Result<Tensor> {
    if x.is_gpu() {
        bail!(Type, "rumus.fft: tensors on gpu devices are not supported yet (FFTs run on the CPU); move the input with .cpu()");
    }
    if n == 0 {
        bail!(Runtime, "Invalid number of data points (0) specified");
    }
    let ok = match kind {
        Kind::R2C => matches!(x.dtype(), DType::F32 | DType::F64),
        _ => x.dtype().is_complex(),
    };
    if !ok {
        bail!(Type, "rumus.fft: internal transform {:?} got a {} tensor", kind, x.dtype().name());
    }
    let x1 = if x.ndim() == 0 { crate::ops::shape::unsqueeze(x, 0)? } else { x.clone() };
    let d = wrap_dim(dim, x1.ndim())?;
    let in_len = x1.shape()[d];
    let out = autograd::record(
        &[&x1],
        || run(kind, &x1, d, n, out_len, scale),
        |_| Ok(FftBackward { kind, dim: d, n, in_len, scale }.into()),
    )?;
    Ok(out)
}

/// Doubling weights of c2r's gradient: 1 for bin 0 (and n/2 when n is even), 2 for the others.
fn c2r_weights(len: usize, n: usize, dtype: DType, ndim: usize, dim: usize) -> Result<Tensor> {
    let w: Vec<f64> = (0..len).map(|k| if k == 0 || 2 * k >= n { 1.0 } else { 2.0 }).collect();
    let mut shape = vec![1usize; ndim];
    shape[dim] = len;
    let t = Tensor::from_vec(w, &shape)?;
    crate::ops::copy::to_dtype(&t, dtype)
}

#[derive(Clone)]
pub struct FftBackward {
    kind: Kind,
    dim: usize,
    n: usize,
    in_len: usize,
    scale: f64,
}

impl Backward for FftBackward {
    fn name(&self) -> String {
        match self.kind {
            Kind::C2C { .. } => "FftC2CBackward0",
            Kind::R2C => "FftR2CBackward0",
            Kind::C2R => "FftC2RBackward0",
        }
        .to_string()
    }
    fn apply(&self, _: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let g = &grads[0];
        let (d, n, l, s) = (self.dim as i64, self.n, self.in_len, self.scale);
        let gx = match self.kind {
            Kind::C2C { forward } => transform(Kind::C2C { forward: !forward }, g, d, n, l, s)?,
            Kind::R2C => {
                // Output bins past n/2+1 (zero padding) carry no gradient.
                let m = n / 2 + 1;
                let g = if g.shape()[self.dim] > m {
                    crate::ops::shape::narrow(g, d, 0, m as i64)?
                } else {
                    g.clone()
                };
                crate::ops::complex::real(&transform(
                    Kind::C2C { forward: false },
                    &g,
                    d,
                    n,
                    l,
                    s,
                )?)?
            }
            Kind::C2R => {
                let r = transform(Kind::R2C, g, d, n, l, s)?;
                let w = c2r_weights(l, n, g.dtype(), g.ndim(), self.dim)?;
                crate::autograd::math::mul(&r, &w)?
            }
        };
        Ok(vec![Some(gx)])
    }
}
