//! FFT loops through rustfft (complex) and realfft (real input/output): each
//! lane of a contiguous (rows, len) tensor is copied into a buffer of the
//! transform length (zero-padded or cut), transformed, scaled and written to
//! a row of the output (cut or zero-padded to the output length).

use super::P;
use crate::error::{Error, Result};
use crate::tensor::{Element, Tensor};
use num_complex::Complex;
use num_traits::{Float, Zero};
use rayon::prelude::*;
use realfft::RealFftPlanner;
use rustfft::{FftNum, FftPlanner};
use std::sync::{Mutex, OnceLock};

/// The planners, kept for the process: each caches the plans it made, so a
/// transform repeated at one size (every training step) plans once.
pub trait Planned: Element + Float + FftNum {
    fn planners() -> &'static Mutex<(FftPlanner<Self>, RealFftPlanner<Self>)>;
}

macro_rules! planned {
    ($t:ty) => {
        impl Planned for $t {
            fn planners() -> &'static Mutex<(FftPlanner<$t>, RealFftPlanner<$t>)> {
                static P: OnceLock<Mutex<(FftPlanner<$t>, RealFftPlanner<$t>)>> = OnceLock::new();
                P.get_or_init(|| Mutex::new((FftPlanner::new(), RealFftPlanner::new())))
            }
        }
    };
}
planned!(f32);
planned!(f64);

/// Rows per rayon task: FFTs of short lanes are cheap.
fn rows_per_task(n: usize, rows: usize) -> usize {
    if super::threads() <= 1 {
        return rows.max(1); // one task: set_num_threads(1) or a forked child
    }
    (4096 / n.max(1)).clamp(1, rows.max(1))
}

/// Lanes of `x` (contiguous, last dim `len`) as slices; `out` likewise.
unsafe fn lanes<'a, A, B>(
    a: *const A,
    rows: usize,
    la: usize,
    b: *mut B,
    lb: usize,
) -> (&'a [A], &'a mut [B]) {
    (std::slice::from_raw_parts(a, rows * la), std::slice::from_raw_parts_mut(b, rows * lb))
}

/// Complex-to-complex along the last dim of contiguous `x` into contiguous `out`.
pub fn c2c<R: Planned>(
    x: &Tensor,
    out: &Tensor,
    n: usize,
    scale: f64,
    forward: bool,
) -> Result<()> {
    if out.numel() == 0 {
        return Ok(());
    }
    let (la, lo) = (*x.shape().last().unwrap_or(&1), *out.shape().last().unwrap_or(&1));
    // out is non-empty, so lo >= 1.
    let rows = out.numel() / lo;
    let plan = {
        let mut p = crate::tensor::lock(R::planners());
        if forward {
            p.0.plan_fft_forward(n)
        } else {
            p.0.plan_fft_inverse(n)
        }
    };
    let s = R::from(scale).unwrap_or_else(<R as num_traits::One>::one);
    let (px, po) = (P(x.cptr::<R>()?), P(out.cptr::<R>()?));
    // SAFETY: both tensors are contiguous with `rows` lanes of their last dims.
    let (src, dst) = unsafe { lanes(px.get(), rows, la, po.get(), lo) };
    let task = rows_per_task(n, rows);
    dst.par_chunks_mut(lo * task).enumerate().for_each_init(
        || (vec![Complex::zero(); n], vec![Complex::zero(); plan.get_inplace_scratch_len()]),
        |(buf, scratch), (c, out_rows)| {
            for (r, o) in out_rows.chunks_mut(lo.max(1)).enumerate() {
                let row = c * task + r;
                let inp = &src[row * la..row * la + la];
                let k = la.min(n);
                buf[..k].copy_from_slice(&inp[..k]);
                buf[k..].fill(Complex::zero());
                plan.process_with_scratch(buf, scratch);
                let m = lo.min(n);
                for (d, v) in o[..m].iter_mut().zip(&buf[..m]) {
                    *d = v * s;
                }
                o[m..].fill(Complex::zero());
            }
        },
    );
    Ok(())
}

/// Real-to-complex (the n/2+1 non-redundant bins) along the last dim.
pub fn r2c<R: Planned>(x: &Tensor, out: &Tensor, n: usize, scale: f64) -> Result<()> {
    if out.numel() == 0 {
        return Ok(());
    }
    let (la, lo) = (*x.shape().last().unwrap_or(&1), *out.shape().last().unwrap_or(&1));
    // out is non-empty, so lo >= 1.
    let rows = out.numel() / lo;
    let plan = crate::tensor::lock(R::planners()).1.plan_fft_forward(n);
    let s = R::from(scale).unwrap_or_else(<R as num_traits::One>::one);
    let (px, po) = (P(x.ptr::<R>()?), P(out.cptr::<R>()?));
    // SAFETY: as in c2c.
    let (src, dst) = unsafe { lanes(px.get(), rows, la, po.get(), lo) };
    let task = rows_per_task(n, rows);
    let failed = std::sync::Mutex::new(None);
    dst.par_chunks_mut(lo * task).enumerate().for_each_init(
        || (plan.make_input_vec(), plan.make_output_vec(), plan.make_scratch_vec()),
        |(buf, spec, scratch), (c, out_rows)| {
            for (r, o) in out_rows.chunks_mut(lo.max(1)).enumerate() {
                let row = c * task + r;
                let k = la.min(n);
                buf[..k].copy_from_slice(&src[row * la..row * la + k]);
                buf[k..].fill(<R as Zero>::zero());
                if let Err(e) = plan.process_with_scratch(buf, spec, scratch) {
                    *crate::tensor::lock(&failed) = Some(e.to_string());
                }
                let m = lo.min(spec.len());
                for (d, v) in o[..m].iter_mut().zip(&spec[..m]) {
                    *d = v * s;
                }
                o[m..].fill(Complex::zero());
            }
        },
    );
    match failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(Error::Runtime(format!("rfft: {}", e))),
        None => Ok(()),
    }
}

/// Complex-to-real of length n from the first n/2+1 bins along the last dim
/// (the imaginary parts of the DC and Nyquist bins are ignored, as NumPy does).
pub fn c2r<R: Planned>(x: &Tensor, out: &Tensor, n: usize, scale: f64) -> Result<()> {
    if out.numel() == 0 {
        return Ok(());
    }
    let (la, lo) = (*x.shape().last().unwrap_or(&1), n);
    // out is non-empty, so lo >= 1.
    let rows = out.numel() / lo;
    let plan = crate::tensor::lock(R::planners()).1.plan_fft_inverse(n);
    let s = R::from(scale).unwrap_or_else(<R as num_traits::One>::one);
    let (px, po) = (P(x.cptr::<R>()?), P(out.ptr::<R>()?));
    // SAFETY: as in c2c.
    let (src, dst) = unsafe { lanes(px.get(), rows, la, po.get(), lo) };
    let task = rows_per_task(n, rows);
    let failed = std::sync::Mutex::new(None);
    dst.par_chunks_mut(lo * task).enumerate().for_each_init(
        || (plan.make_input_vec(), plan.make_output_vec(), plan.make_scratch_vec()),
        |(spec, buf, scratch), (c, out_rows)| {
            for (r, o) in out_rows.chunks_mut(lo.max(1)).enumerate() {
                let row = c * task + r;
                let m = spec.len();
                let k = la.min(m);
                spec[..k].copy_from_slice(&src[row * la..row * la + k]);
                spec[k..].fill(Complex::zero());
                spec[0].im = <R as Zero>::zero();
                if n.is_multiple_of(2) {
                    spec[m - 1].im = <R as Zero>::zero();
                }
                if let Err(e) = plan.process_with_scratch(spec, buf, scratch) {
                    *crate::tensor::lock(&failed) = Some(e.to_string());
                }
                for (d, v) in o.iter_mut().zip(buf.iter()) {
                    *d = *v * s;
                }
            }
        },
    );
    match failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(Error::Runtime(format!("irfft: {}", e))),
        None => Ok(()),
    }
}
