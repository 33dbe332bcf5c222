//! FFT loops through rustfft (complex) and realfft (real input/output). A
//! contiguous input is seen as (outer, len, inner): its outer·inner lanes run
//! along the middle dim, and the output has the same layout with the
//! transform's output length there. Lanes of the last dim (inner == 1) are
//! read and written where they lie; strided lanes are gathered a block of
//! columns at a time into a contiguous scratch and scattered back (a blocked
//! transpose that stays in cache), so no transposed copy of the whole tensor
//! is made. Each lane is copied into a buffer of the transform length
//! (zero-padded or cut), transformed, scaled and written (cut or zero-padded
//! to the output length).

use super::{team, P};
use crate::error::{Error, Result};
use crate::tensor::{Element, Tensor};
use num_complex::Complex;
use num_traits::{Float, Zero};
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

/// A call's lanes: `outer` × `inner` of them, `la` input and `lo` output
/// entries long, `inner` apart in memory.
#[derive(Clone, Copy, Debug)]
pub struct Lanes {
    pub outer: usize,
    pub inner: usize,
    pub la: usize,
    pub lo: usize,
}

/// Strided lanes gathered per task: 16 columns make 128-byte row pieces of
/// complex64, two cache lines per read.
const BLOCK: usize = 16;

/// Scratch padding between gathered lanes, in elements (a cache line or more).
const PAD: usize = 16;

/// Runs `lane(scratch, input lane, output lane)` for every lane of `src`
/// into `dst`, over the thread team; `n` (the transform length) sizes the
/// work. `init` makes one task's scratch.
fn drive<A, B, S>(
    src: &[A],
    dst: &mut [B],
    g: Lanes,
    n: usize,
    init: impl Fn() -> S + Sync,
    lane: impl Fn(&mut S, &[A], &mut [B]) + Sync,
) where
    A: Copy + Zero + Send + Sync,
    B: Copy + Zero + Send + Sync,
{
    let Lanes { outer, inner, la, lo } = g;
    let dp = P(dst.as_mut_ptr());
    let work = outer * inner * n.max(la) * 8;
    if inner == 1 {
        // FFTs of short lanes are cheap: a few thousand entries per task.
        let per = (4096 / n.max(1)).clamp(1, outer.max(1));
        team::for_each_if(work, outer.div_ceil(per), |t| {
            let mut s = init();
            for r in t * per..((t + 1) * per).min(outer) {
                // SAFETY: output lane r is written by this task only.
                let o = unsafe { std::slice::from_raw_parts_mut(dp.get().add(r * lo), lo) };
                lane(&mut s, &src[r * la..][..la], o);
            }
        });
        return;
    }
    let blocks = inner.div_ceil(BLOCK);
    team::for_each_if(work, outer * blocks, |t| {
        let (o, i0) = (t / blocks, t % blocks * BLOCK);
        let w = BLOCK.min(inner - i0);
        let mut s = init();
        // Lanes a cache line more than their length apart in the scratch: at
        // power-of-two strides the block's lanes would share cache sets.
        let (sa, sb) = (la + PAD, lo + PAD);
        let (mut a, mut b) = (vec![A::zero(); w * sa], vec![B::zero(); w * sb]);
        for j in 0..la {
            let row = &src[(o * la + j) * inner + i0..][..w];
            for (c, &v) in row.iter().enumerate() {
                a[c * sa + j] = v;
            }
        }
        for c in 0..w {
            lane(&mut s, &a[c * sa..][..la], &mut b[c * sb..][..lo]);
        }
        for j in 0..lo {
            // SAFETY: columns i0..i0 + w of outer slice o are written by this task only.
            let row = unsafe {
                std::slice::from_raw_parts_mut(dp.get().add((o * lo + j) * inner + i0), w)
            };
            for (c, v) in row.iter_mut().enumerate() {
                *v = b[c * sb + j];
            }
        }
    });
}

/// `src` and `dst` as slices of `g`'s lanes.
///
/// # Safety
/// `a` and `b` point at contiguous tensors of `g.outer · g.la · g.inner` and
/// `g.outer · g.lo · g.inner` elements.
unsafe fn slices<'a, A, B>(a: *const A, b: *mut B, g: Lanes) -> (&'a [A], &'a mut [B]) {
    (
        std::slice::from_raw_parts(a, g.outer * g.la * g.inner),
        std::slice::from_raw_parts_mut(b, g.outer * g.lo * g.inner),
    )
}

/// Writes `s · v[..]` into `o`, cut or zero-padded to `o`'s length.
fn put<T: Copy + Zero + std::ops::Mul<R, Output = T>, R: Copy>(o: &mut [T], v: &[T], s: R) {
    let m = o.len().min(v.len());
    for (d, &x) in o[..m].iter_mut().zip(&v[..m]) {
        *d = x * s;
    }
    o[m..].fill(T::zero());
}

/// The first error a lane's transform reported, as rumus's error.
fn reported(failed: Mutex<Option<String>>, op: &str) -> Result<()> {
    match failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(Error::Runtime(format!("{}: {}", op, e))),
        None => Ok(()),
    }
}

/// Complex-to-complex along the lanes of contiguous `x` into contiguous `out`.
pub fn c2c<R: Planned>(
    x: &Tensor,
    out: &Tensor,
    g: Lanes,
    n: usize,
    scale: f64,
    forward: bool,
) -> Result<()> {
    if out.numel() == 0 {
        return Ok(());
    }
    let plan = {
        let mut p = crate::tensor::lock(R::planners());
        if forward {
            p.0.plan_fft_forward(n)
        } else {
            p.0.plan_fft_inverse(n)
        }
    };
    let s = R::from(scale).unwrap_or_else(<R as num_traits::One>::one);
    // SAFETY: both tensors are contiguous, laid out as `g` says.
    let (src, dst) = unsafe { slices(x.cptr::<R>()?, out.cptr::<R>()?, g) };
    drive(
        src,
        dst,
        g,
        n,
        || (vec![Complex::zero(); n], vec![Complex::zero(); plan.get_inplace_scratch_len()]),
        |(buf, scratch), inp, o| {
            let k = inp.len().min(n);
            buf[..k].copy_from_slice(&inp[..k]);
            buf[k..].fill(Complex::zero());
            plan.process_with_scratch(buf, scratch);
            put(o, buf, s);
        },
    );
    Ok(())
}

/// Real-to-complex (the n/2+1 non-redundant bins) along the lanes.
pub fn r2c<R: Planned>(x: &Tensor, out: &Tensor, g: Lanes, n: usize, scale: f64) -> Result<()> {
    if out.numel() == 0 {
        return Ok(());
    }
    let plan = crate::tensor::lock(R::planners()).1.plan_fft_forward(n);
    let s = R::from(scale).unwrap_or_else(<R as num_traits::One>::one);
    // SAFETY: as in c2c.
    let (src, dst) = unsafe { slices(x.ptr::<R>()?, out.cptr::<R>()?, g) };
    let failed = Mutex::new(None);
    drive(
        src,
        dst,
        g,
        n,
        || (plan.make_input_vec(), plan.make_output_vec(), plan.make_scratch_vec()),
        |(buf, spec, scratch), inp, o| {
            let k = inp.len().min(n);
            buf[..k].copy_from_slice(&inp[..k]);
            buf[k..].fill(<R as Zero>::zero());
            if let Err(e) = plan.process_with_scratch(buf, spec, scratch) {
                *crate::tensor::lock(&failed) = Some(e.to_string());
            }
            put(o, spec, s);
        },
    );
    reported(failed, "rfft")
}

/// Complex-to-real of length n from the first n/2+1 bins along the lanes
/// (the imaginary parts of the DC and Nyquist bins are ignored, as NumPy does).
pub fn c2r<R: Planned>(x: &Tensor, out: &Tensor, g: Lanes, n: usize, scale: f64) -> Result<()> {
    if out.numel() == 0 {
        return Ok(());
    }
    let plan = crate::tensor::lock(R::planners()).1.plan_fft_inverse(n);
    let s = R::from(scale).unwrap_or_else(<R as num_traits::One>::one);
    // SAFETY: as in c2c.
    let (src, dst) = unsafe { slices(x.cptr::<R>()?, out.ptr::<R>()?, g) };
    let failed = Mutex::new(None);
    drive(
        src,
        dst,
        g,
        n,
        || (plan.make_input_vec(), plan.make_output_vec(), plan.make_scratch_vec()),
        |(spec, buf, scratch), inp, o| {
            let m = spec.len();
            let k = inp.len().min(m);
            spec[..k].copy_from_slice(&inp[..k]);
            spec[k..].fill(Complex::zero());
            spec[0].im = <R as Zero>::zero();
            if n.is_multiple_of(2) {
                spec[m - 1].im = <R as Zero>::zero();
            }
            if let Err(e) = plan.process_with_scratch(spec, buf, scratch) {
                *crate::tensor::lock(&failed) = Some(e.to_string());
            }
            put(o, buf, s);
        },
    );
    reported(failed, "irfft")
}
