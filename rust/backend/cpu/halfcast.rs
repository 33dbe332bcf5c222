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
            rows(dst, strides, pd, ps, |d: &mut [f16], s: &[f32]| d.convert_from_f32_slice(s));
        }
        (DType::F16, DType::F32) => {
            let (pd, ps) = (P(dst.ptr::<f32>()?), P(src.ptr::<f16>()?));
            rows(dst, strides, pd, ps, |d: &mut [f32], s: &[f16]| s.convert_to_f32_slice(d));
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
