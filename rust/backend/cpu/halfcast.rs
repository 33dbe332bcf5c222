//! Casts between float32 and the half types, row by row in registers:
//! bfloat16 by bit arithmetic that vectorizes (compiled for AVX-512 where
//! the CPU has it), float16 through the half crate's F16C slice conversions.
//! The generic cast goes through float64 and software rounding per element,
//! several times slower, and autocast casts every activation both ways.
//! Bool masks to the half types are here too.

use super::strided::for_each_row;
use super::{simd, P};
use crate::error::Result;
use crate::tensor::{DType, Tensor};
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

/// float32 to bfloat16 bits, rounded to nearest even; NaN stays a quiet NaN
/// (the same results as `bf16::from_f32`, in branch-free form).
#[inline(always)]
pub(crate) fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let nan = ((b >> 16) | 0x40) as u16;
    // Wraps only for NaN bit patterns, whose result is not used.
    let rounded = (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16;
    if b & 0x7fff_ffff > 0x7f80_0000 {
        nan
    } else {
        rounded
    }
}

/// dst (contiguous or not) = src cast, for float32 <-> float16/bfloat16
/// and bool -> float16/bfloat16;
/// false (nothing done) for any other pair of dtypes.
pub fn cast(dst: &Tensor, src: &Tensor, src_strides: &[isize]) -> Result<bool> {
    let strides = [dst.strides(), src_strides];
    match (src.dtype(), dst.dtype()) {
        (DType::F32, DType::BF16) => {
            let (pd, ps) = (P(dst.ptr::<bf16>()?.cast::<u16>()), P(src.ptr::<f32>()?));
            rows(dst, strides, pd, ps, |d: &mut [u16], s: &[f32]| {
                simd(
                    #[inline(always)]
                    || d.iter_mut().zip(s).for_each(|(d, &s)| *d = bf16_bits(s)),
                )
            });
        }
        (DType::BF16, DType::F32) => {
            let (pd, ps) = (P(dst.ptr::<f32>()?), P(src.ptr::<bf16>()?.cast::<u16>()));
            rows(dst, strides, pd, ps, |d: &mut [f32], s: &[u16]| {
                simd(
                    #[inline(always)]
                    || {
                        d.iter_mut()
                            .zip(s)
                            .for_each(|(d, &s)| *d = f32::from_bits((s as u32) << 16))
                    },
                )
            });
        }
        (DType::F32, DType::F16) => {
            let (pd, ps) = (P(dst.ptr::<f16>()?), P(src.ptr::<f32>()?));
            rows(dst, strides, pd, ps, |d: &mut [f16], s: &[f32]| f32_to_f16(d, s));
        }
        (DType::F16, DType::F32) => {
            let (pd, ps) = (P(dst.ptr::<f32>()?), P(src.ptr::<f16>()?));
            rows(dst, strides, pd, ps, |d: &mut [f32], s: &[f16]| f16_to_f32(d, s));
        }
        // Masks (relu's gradient, dropout): the generic path rounds every
        // element in software.
        (DType::Bool, DType::BF16 | DType::F16) => {
            let (one, pd) = if dst.dtype() == DType::BF16 {
                (bf16::ONE.to_bits(), dst.ptr::<bf16>()?.cast::<u16>())
            } else {
                (f16::ONE.to_bits(), dst.ptr::<f16>()?.cast::<u16>())
            };
            let (pd, ps) = (P(pd), P(src.ptr::<bool>()?));
            rows(dst, strides, pd, ps, move |d: &mut [u16], s: &[bool]| {
                simd(
                    #[inline(always)]
                    || d.iter_mut().zip(s).for_each(|(d, &s)| *d = one * s as u16),
                )
            });
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// d = s rounded to float16 (nearest even), 16 values per instruction with
/// AVX-512, 8 with F16C (the half crate's F16C path converts 4 or 8 per call
/// through a copy), else the half crate.
pub(crate) fn f32_to_f16(d: &mut [f16], s: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F.
            return unsafe { f32_to_f16_avx512(d, s) };
        }
        if std::arch::is_x86_feature_detected!("f16c") {
            // SAFETY: the CPU has F16C (and so AVX).
            return unsafe { f32_to_f16_f16c(d, s) };
        }
    }
    d.convert_from_f32_slice(s)
}

/// d = s widened (exact), as `f32_to_f16` chooses its path.
pub(crate) fn f16_to_f32(d: &mut [f32], s: &[f16]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F.
            return unsafe { f16_to_f32_avx512(d, s) };
        }
        if std::arch::is_x86_feature_detected!("f16c") {
            // SAFETY: the CPU has F16C (and so AVX).
            return unsafe { f16_to_f32_f16c(d, s) };
        }
    }
    s.convert_to_f32_slice(d)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn f32_to_f16_avx512(d: &mut [f16], s: &[f32]) {
    use std::arch::x86_64::*;
    let n = s.len().min(d.len());
    let full = n - n % 16;
    for i in (0..full).step_by(16) {
        let v = _mm512_loadu_ps(s.as_ptr().add(i));
        let h = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
        _mm256_storeu_si256(d.as_mut_ptr().add(i).cast(), h);
    }
    d[full..n].convert_from_f32_slice(&s[full..n]);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn f16_to_f32_avx512(d: &mut [f32], s: &[f16]) {
    use std::arch::x86_64::*;
    let n = s.len().min(d.len());
    let full = n - n % 16;
    for i in (0..full).step_by(16) {
        let h = _mm256_loadu_si256(s.as_ptr().add(i).cast());
        _mm512_storeu_ps(d.as_mut_ptr().add(i), _mm512_cvtph_ps(h));
    }
    s[full..n].convert_to_f32_slice(&mut d[full..n]);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn f32_to_f16_f16c(d: &mut [f16], s: &[f32]) {
    use std::arch::x86_64::*;
    let n = s.len().min(d.len());
    let full = n - n % 8;
    for i in (0..full).step_by(8) {
        let v = _mm256_loadu_ps(s.as_ptr().add(i));
        // F16C's immediate is the rounding mode alone (3 bits).
        let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
        _mm_storeu_si128(d.as_mut_ptr().add(i).cast(), h);
    }
    d[full..n].convert_from_f32_slice(&s[full..n]);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn f16_to_f32_f16c(d: &mut [f32], s: &[f16]) {
    use std::arch::x86_64::*;
    let n = s.len().min(d.len());
    let full = n - n % 8;
    for i in (0..full).step_by(8) {
        let h = _mm_loadu_si128(s.as_ptr().add(i).cast());
        _mm256_storeu_ps(d.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
    }
    s[full..n].convert_to_f32_slice(&mut d[full..n]);
}

/// Runs `conv` on every row of dst/src, through a small buffer for the
/// elements of rows that are not contiguous on both sides.
fn rows<D: Copy + Default, S: Copy + Default>(
    dst: &Tensor,
    strides: [&[isize]; 2],
    pd: P<D>,
    ps: P<S>,
    conv: impl Fn(&mut [D], &[S]) + Sync,
) {
    const CHUNK: usize = 256;
    for_each_row(dst.shape(), strides, |[od, os], len, [sd, ss]| {
        let (d, s) = (pd.at(od), ps.at(os));
        if sd == 1 && ss == 1 {
            // SAFETY: a row of `len` contiguous elements inside each storage;
            // dst's rows are disjoint from src (a fresh or distinct tensor).
            unsafe {
                conv(std::slice::from_raw_parts_mut(d, len), std::slice::from_raw_parts(s, len))
            };
            return;
        }
        let (mut bs, mut bd) = ([S::default(); CHUNK], [D::default(); CHUNK]);
        for lo in (0..len).step_by(CHUNK) {
            let n = CHUNK.min(len - lo);
            for i in 0..n {
                // SAFETY: element lo + i of the row lies inside src's storage.
                bs[i] = unsafe { *s.offset((lo + i) as isize * ss) };
            }
            conv(&mut bd[..n], &bs[..n]);
            for i in 0..n {
                // SAFETY: as above, for dst.
                unsafe { *d.offset((lo + i) as isize * sd) = bd[i] };
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_slice_conversions_match_the_scalar_ones_bit_for_bit() {
        // Every float16, and float32 values around every float16 (ties, halfway
        // points, subnormals, overflow, NaN payloads), in lengths with remainders.
        let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        let mut wide = vec![0f32; all.len()];
        f16_to_f32(&mut wide, &all);
        for (h, w) in all.iter().zip(&wide) {
            assert_eq!(w.to_bits(), h.to_f32().to_bits(), "{:#06x}", h.to_bits());
        }
        let xs: Vec<f32> = wide
            .iter()
            .filter(|w| w.is_finite())
            .flat_map(|&w| [w, f32::from_bits(w.to_bits() + 1), f32::from_bits(w.to_bits() + 4096)])
            .chain([f32::NAN, f32::INFINITY, -f32::INFINITY, 65520.0, 1e-10, -1e-8, 7e4])
            .collect();
        let mut narrow = vec![f16::ZERO; xs.len() - 3];
        f32_to_f16(&mut narrow, &xs[..xs.len() - 3]);
        for (x, h) in xs.iter().zip(&narrow) {
            let want = f16::from_f32(*x);
            assert!(
                h.to_bits() == want.to_bits() || (h.is_nan() && want.is_nan()),
                "{x:e}: {:#06x} vs {:#06x}",
                h.to_bits(),
                want.to_bits()
            );
        }
    }
}
