//! Reductions of float16/bfloat16 tensors read in place: each element is
//! widened in registers (branch-free bit arithmetic that vectorizes) as the
//! reduce driver folds it, sums accumulate in float64 as the float32 path's
//! do, and no float32 copy of the input is made. The driver's layouts
//! (contiguous rows, strided rows, kept inner dims) are the float32 ones.

use super::reduce::{reduce, run, Extreme, Fold, Reducer};
use super::P;
use crate::error::Result;
use crate::tensor::{Element, Tensor};
use half::{bf16, f16};

/// A half type: widened to float32 exactly, in code that vectorizes.
pub trait Half: Element {
    fn wide(self) -> f32;
    fn narrow(x: f32) -> Self;
    /// dst = src widened (lengths equal).
    fn widen_slice(src: &[Self], dst: &mut [f32]);
    /// dst = src rounded to nearest even (lengths equal).
    fn narrow_slice(src: &[f32], dst: &mut [Self]);
}

impl Half for bf16 {
    #[inline(always)]
    fn wide(self) -> f32 {
        f32::from_bits((self.to_bits() as u32) << 16)
    }
    #[inline(always)]
    fn narrow(x: f32) -> Self {
        bf16::from_bits(super::halfcast::bf16_bits(x))
    }
    fn widen_slice(src: &[Self], dst: &mut [f32]) {
        super::simd(
            #[inline(always)]
            || dst.iter_mut().zip(src).for_each(|(d, s)| *d = s.wide()),
        )
    }
    fn narrow_slice(src: &[f32], dst: &mut [Self]) {
        super::simd(
            #[inline(always)]
            || dst.iter_mut().zip(src).for_each(|(d, &s)| *d = Self::narrow(s)),
        )
    }
}

impl Half for f16 {
    /// The magnitude bits shifted into a float32 are the value times
    /// 2^-112 (subnormals become float32 subnormals), so one exact multiply
    /// rebiases every finite value; inf/NaN get the all-ones exponent back
    /// and keep their mantissa. No branches: it vectorizes.
    #[inline(always)]
    fn wide(self) -> f32 {
        let h = self.to_bits() as u32;
        let em = h & 0x7fff;
        let v = f32::from_bits(em << 13) * f32::from_bits((127 + 112) << 23);
        let inf_nan = ((em >= 0x7c00) as u32).wrapping_neg() & 0x7f80_0000;
        f32::from_bits(v.to_bits() | inf_nan | (h & 0x8000) << 16)
    }
    #[inline(always)]
    fn narrow(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn widen_slice(src: &[Self], dst: &mut [f32]) {
        super::halfcast::f16_to_f32(dst, src)
    }
    fn narrow_slice(src: &[f32], dst: &mut [Self]) {
        super::halfcast::f32_to_f16(dst, src)
    }
}

/// Runs `$body` with `$H` the half type of `$dtype` (float16 or bfloat16;
/// any other dtype is an internal error).
#[macro_export]
macro_rules! dispatch_half {
    ($dtype:expr, $H:ident => $body:expr) => {
        match $dtype {
            $crate::tensor::DType::F16 => {
                type $H = half::f16;
                $body
            }
            $crate::tensor::DType::BF16 => {
                type $H = half::bf16;
                $body
            }
            d => $crate::bail!(Runtime, "internal: a half-precision kernel got {}", d.name()),
        }
    };
}

/// Sum in float64, in the float32 path's lanes and order, so results agree with it.
struct Sum;
impl<H: Half> Reducer<H> for Sum {
    type Acc = f64;
    fn init(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn step(&self, acc: f64, x: H, _: usize) -> f64 {
        acc + x.wide() as f64
    }
    fn combine(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    unsafe fn row(&self, acc: f64, p: *const H, len: usize, stride: isize, _: usize) -> f64 {
        if stride != 1 {
            return (0..len).fold(acc, |a, i| a + (*p.offset(i as isize * stride)).wide() as f64);
        }
        let s = std::slice::from_raw_parts(p, len);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("f16c")
            && !std::arch::is_x86_feature_detected!("avx512f")
        {
            // SAFETY: the CPU has AVX2 and F16C.
            let (lanes, done) = unsafe { x86::sum32::<H>(s) };
            let rest = &s[done..];
            return acc + super::reduce::sum_f64_end(&lanes, rest, |x: H| x.wide() as f64);
        }
        super::simd(
            #[inline(always)]
            || acc + super::reduce::sum_f64(s, |x: H| x.wide() as f64),
        )
    }
}

/// The 32 lane sums of `sum_f64` on AVX2, the elements widened by F16C or a
/// shift: the generic loop's bit arithmetic for float16 and its 32 float64
/// lanes spilled on AVX2's 16 registers (3.9x PyTorch's time for a float16 sum).
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Half;
    use half::{bf16, f16};
    use std::arch::x86_64::*;

    /// The lane sums over whole groups of 32 and how many elements they took.
    ///
    /// # Safety
    /// The CPU has AVX2 and F16C.
    #[target_feature(enable = "avx2,f16c")]
    pub unsafe fn sum32<H: Half>(s: &[H]) -> ([f64; 32], usize) {
        let f16 = std::any::TypeId::of::<H>() == std::any::TypeId::of::<f16>();
        debug_assert!(f16 || std::any::TypeId::of::<H>() == std::any::TypeId::of::<bf16>());
        let p = s.as_ptr() as *const u16;
        let n = s.len() / 32 * 32;
        let mut acc = [_mm256_setzero_pd(); 8];
        // 8 elements from p + i as float32 lanes.
        let load = |i: usize| {
            // SAFETY: i + 8 <= n.
            let h = unsafe { _mm_loadu_si128(p.add(i).cast()) };
            if f16 {
                _mm256_cvtph_ps(h)
            } else {
                _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h)))
            }
        };
        for i in (0..n).step_by(32) {
            for q in 0..4 {
                let v = load(i + 8 * q);
                let (lo, hi) = (_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
                acc[2 * q] = _mm256_add_pd(acc[2 * q], _mm256_cvtps_pd(lo));
                acc[2 * q + 1] = _mm256_add_pd(acc[2 * q + 1], _mm256_cvtps_pd(hi));
            }
        }
        let mut lanes = [0.0f64; 32];
        for (k, a) in acc.iter().enumerate() {
            // SAFETY: lanes has room for 4 at 4k.
            unsafe { _mm256_storeu_pd(lanes.as_mut_ptr().add(4 * k), *a) };
        }
        (lanes, n)
    }
}

/// (count, mean, sum of squared deviations), merged with Chan's formula.
type Moments = (f64, f64, f64);

fn merge(a: Moments, b: Moments) -> Moments {
    if a.0 == 0.0 {
        return b;
    }
    if b.0 == 0.0 {
        return a;
    }
    let n = a.0 + b.0;
    let d = b.1 - a.1;
    (n, a.1 + d * (b.0 / n), a.2 + b.2 + d * d * (a.0 * b.0 / n))
}

/// Σ f(x) in eight independent lanes (so it vectorizes).
#[inline(always)]
fn lanes(b: &[f64], f: impl Fn(f64) -> f64) -> f64 {
    let mut l = [0.0f64; 8];
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        for k in 0..8 {
            l[k] += f(c[k]);
        }
    }
    chunks.remainder().iter().map(|&x| f(x)).sum::<f64>() + l.iter().sum::<f64>()
}

/// Variance moments in one pass: Welford per element, and per block of a
/// contiguous row a two-pass mean/deviation sum merged in.
struct Var;
impl<H: Half> Reducer<H> for Var {
    type Acc = Moments;
    fn init(&self) -> Moments {
        (0.0, 0.0, 0.0)
    }
    #[inline(always)]
    fn step(&self, (n, mean, m2): Moments, x: H, _: usize) -> Moments {
        let (x, n) = (x.wide() as f64, n + 1.0);
        let d = x - mean;
        let mean = mean + d / n;
        (n, mean, m2 + d * (x - mean))
    }
    fn combine(&self, a: Moments, b: Moments) -> Moments {
        merge(a, b)
    }
    unsafe fn row(
        &self,
        mut acc: Moments,
        p: *const H,
        len: usize,
        stride: isize,
        _: usize,
    ) -> Moments {
        const BLOCK: usize = 256;
        let mut buf = [0f64; BLOCK];
        for lo in (0..len).step_by(BLOCK) {
            let n = BLOCK.min(len - lo);
            let q = p.offset(lo as isize * stride);
            let (mean, m2) = super::simd(
                #[inline(always)]
                || {
                    let b = &mut buf[..n];
                    if stride == 1 {
                        let s = std::slice::from_raw_parts(q, n);
                        b.iter_mut().zip(s).for_each(|(b, x)| *b = x.wide() as f64);
                    } else {
                        for (i, b) in b.iter_mut().enumerate() {
                            *b = (*q.offset(i as isize * stride)).wide() as f64;
                        }
                    }
                    let mean = lanes(b, |x| x) / n as f64;
                    (mean, lanes(b, |x| (x - mean) * (x - mean)))
                },
            );
            acc = merge(acc, (n as f64, mean, m2));
        }
        acc
    }
}

/// Max (or min) compared in float32, NaN winning, 16 lanes on contiguous rows.
struct Extreme32 {
    max: bool,
}
impl<H: Half> Reducer<H> for Extreme32 {
    type Acc = f32;
    fn init(&self) -> f32 {
        <Extreme as Reducer<f32>>::init(&Extreme { max: self.max })
    }
    #[inline(always)]
    fn step(&self, acc: f32, x: H, _: usize) -> f32 {
        <Extreme as Reducer<f32>>::step(&Extreme { max: self.max }, acc, x.wide(), 0)
    }
    fn combine(&self, a: f32, b: f32) -> f32 {
        <Extreme as Reducer<f32>>::combine(&Extreme { max: self.max }, a, b)
    }
    #[inline(always)]
    unsafe fn row(&self, acc: f32, p: *const H, len: usize, stride: isize, _: usize) -> f32 {
        if stride != 1 {
            return (0..len).fold(acc, |a, i| self.step(a, *p.offset(i as isize * stride), 0));
        }
        let s = std::slice::from_raw_parts(p, len);
        super::simd(
            #[inline(always)]
            || {
                let mut lanes = [acc; 16];
                let mut chunks = s.chunks_exact(16);
                for c in &mut chunks {
                    for k in 0..16 {
                        lanes[k] = self.step(lanes[k], c[k], 0);
                    }
                }
                let acc = chunks.remainder().iter().fold(acc, |a, &x| self.step(a, x, 0));
                lanes.iter().fold(acc, |a, &x| <Self as Reducer<H>>::combine(self, a, x))
            },
        )
    }
}

/// Float64 tensor of `finish(sum)` per output of the half tensor x.
pub fn sum(
    x: &Tensor,
    reduced: &[bool],
    shape: &[usize],
    finish: impl Fn(f64) -> f64,
) -> Result<Tensor> {
    dispatch_half!(x.dtype(), H => run::<H, _, f64>(x, reduced, shape, &Sum, finish))
}

/// Float64 tensor of the products per output.
pub fn prod(x: &Tensor, reduced: &[bool], shape: &[usize]) -> Result<Tensor> {
    dispatch_half!(x.dtype(), H => {
        let f = Fold {
            init: 1.0f64,
            step: |a: f64, v: H, _| a * v.wide() as f64,
            combine: |a: f64, b: f64| a * b,
        };
        run::<H, _, f64>(x, reduced, shape, &f, |a| a)
    })
}

/// amax / amin, in x's dtype (exact: the result is one of the elements).
pub fn extreme_values(x: &Tensor, reduced: &[bool], shape: &[usize], max: bool) -> Result<Tensor> {
    dispatch_half!(x.dtype(), H => run::<H, _, H>(x, reduced, shape, &Extreme32 { max }, H::narrow))
}

/// max / min with indices, compared in float32: NaN wins, the first of
/// equal values wins (as `reduce::extreme`).
pub fn extreme(
    x: &Tensor,
    reduced: &[bool],
    shape: &[usize],
    max: bool,
) -> Result<(Tensor, Tensor)> {
    let beats = move |v: f32, cur: f32| {
        !cur.is_nan() && (v.is_nan() || if max { v > cur } else { v < cur })
    };
    dispatch_half!(x.dtype(), H => {
        let f = Fold {
            init: (0f32, 0usize, false),
            step: move |a: (f32, usize, bool), v: H, i: usize| {
                let v = v.wide();
                if !a.2 || beats(v, a.0) { (v, i, true) } else { a }
            },
            combine: move |a: (f32, usize, bool), b: (f32, usize, bool)| {
                if b.2 && (!a.2 || beats(b.0, a.0)) { b } else { a }
            },
        };
        // SAFETY: x's layout lies within its storage.
        let accs = unsafe { reduce(P(x.ptr::<H>()?.sub(x.layout().offset)), x.layout(), reduced, &f)? };
        let vals = Tensor::from_vec(accs.iter().map(|a| H::narrow(a.0)).collect(), shape)?;
        let idx = Tensor::from_vec(accs.iter().map(|a| a.1 as i64).collect(), shape)?;
        Ok((vals, idx))
    })
}

/// Float64 variance (sum of squared deviations / max(n - correction, 0)).
pub fn var(x: &Tensor, reduced: &[bool], shape: &[usize], correction: f64) -> Result<Tensor> {
    dispatch_half!(x.dtype(), H => {
        run::<H, _, f64>(x, reduced, shape, &Var, |(n, _, m2)| m2 / (n - correction).max(0.0))
    })
}
