//! Add, subtract, multiply and divide float16/bfloat16 CPU tensors in one
//! pass over memory: each
//! block of the operands is widened into float32 buffers on the stack (L1),
//! combined there and rounded into the output, once per element as PyTorch
//! does. The chunked path (ops/elementwise/halfchunk.rs) built float32 tensors
//! per chunk and ran four passes through L2: 2.3x PyTorch's time for h + h.

use super::{simd, P};
use half::{bf16, f16};

/// Elements per stack block: three float32 buffers of it stay in L1.
const BLOCK: usize = 512;
/// Elements per parallel task.
const TASK: usize = 1 << 14;

/// A half type (widened and rounded a slice at a time as the reductions do)
/// with its fused AVX2 loop.
pub trait Half: super::halfreduce::Half + Send + Sync {
    /// `arith` on whole groups of 8 from lo on, converted in registers;
    /// returns where it stopped.
    ///
    /// # Safety
    /// As `arith`; the CPU has AVX2 and F16C.
    #[cfg(target_arch = "x86_64")]
    unsafe fn lanes(
        op: Arith,
        lo: usize,
        hi: usize,
        out: P<Self>,
        a: Side<Self>,
        b: Side<Self>,
    ) -> usize;
}

impl Half for f16 {
    #[cfg(target_arch = "x86_64")]
    unsafe fn lanes(
        op: Arith,
        lo: usize,
        hi: usize,
        out: P<f16>,
        a: Side<f16>,
        b: Side<f16>,
    ) -> usize {
        // SAFETY: forwarded.
        unsafe { x86::lanes::<x86::F16, _>(op, lo, hi, out.get().cast(), a, b) }
    }
}

impl Half for bf16 {
    #[cfg(target_arch = "x86_64")]
    unsafe fn lanes(
        op: Arith,
        lo: usize,
        hi: usize,
        out: P<bf16>,
        a: Side<bf16>,
        b: Side<bf16>,
    ) -> usize {
        // SAFETY: forwarded.
        unsafe { x86::lanes::<x86::Bf16, _>(op, lo, hi, out.get().cast(), a, b) }
    }
}

/// The arithmetic this kernel runs, in float32.
#[derive(Clone, Copy)]
pub enum Arith {
    /// a + alpha·b
    Add(f32),
    /// a − alpha·b
    Sub(f32),
    Mul,
    Div,
}

/// One operand: a contiguous half tensor of the output's length, or a number.
#[derive(Clone, Copy)]
pub enum Side<H> {
    T(P<H>),
    S(f32),
}

/// out[i] = a[i] op b[i] over n elements, computed in float32 and rounded once.
///
/// # Safety
/// Tensor sides and `out` hold n contiguous elements; `out` may be a side.
pub unsafe fn arith<H: Half>(op: Arith, n: usize, out: P<H>, a: Side<H>, b: Side<H>) {
    super::team::for_each_if(n, n.div_ceil(TASK), |t| {
        let (mut lo, hi) = (t * TASK, ((t + 1) * TASK).min(n));
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("f16c")
        {
            // SAFETY: the caller's guarantee; the CPU has AVX2 and F16C.
            lo = unsafe { H::lanes(op, lo, hi, out, a, b) };
        }
        // SAFETY: the caller's guarantee.
        unsafe { blocks(op, lo, hi, out, a, b) };
    });
}

/// `arith` on elements lo..hi through float32 buffers on the stack.
///
/// # Safety
/// As `arith`.
unsafe fn blocks<H: Half>(op: Arith, lo: usize, hi: usize, out: P<H>, a: Side<H>, b: Side<H>) {
    let (mut wa, mut wb) = ([0f32; BLOCK], [0f32; BLOCK]);
    let mut i = lo;
    while i < hi {
        let len = BLOCK.min(hi - i);
        // A tensor side widened into its buffer, a number repeated.
        let side = |s: Side<H>, w: &mut [f32; BLOCK]| match s {
            // SAFETY: elements i..i + len are in bounds (the caller's guarantee).
            Side::T(p) => H::widen_slice(
                unsafe { std::slice::from_raw_parts(p.at(i as isize), len) },
                &mut w[..len],
            ),
            Side::S(v) => w[..len].fill(v),
        };
        side(a, &mut wa);
        side(b, &mut wb);
        let (x, y) = (&mut wa[..len], &wb[..len]);
        simd(
            #[inline(always)]
            || match op {
                Arith::Add(al) => x.iter_mut().zip(y).for_each(|(x, &y)| *x += y * al),
                Arith::Sub(al) => x.iter_mut().zip(y).for_each(|(x, &y)| *x -= y * al),
                Arith::Mul => x.iter_mut().zip(y).for_each(|(x, &y)| *x *= y),
                Arith::Div => x.iter_mut().zip(y).for_each(|(x, &y)| *x /= y),
            },
        );
        // SAFETY: as above; this task alone writes these elements.
        H::narrow_slice(x, unsafe { std::slice::from_raw_parts_mut(out.at(i as isize), len) });
        i += len;
    }
}

/// The fused AVX2 loop: 8 elements of each side loaded and widened in
/// registers, combined and rounded back, with no buffers between (the block
/// path costs 2x as many loads and stores: 1.6x this loop's time).
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Arith, Side};
    use std::arch::x86_64::*;

    /// 8 lanes of a half type as bits (u16) in memory.
    pub trait Conv {
        unsafe fn load(p: *const u16) -> __m256;
        unsafe fn store(p: *mut u16, v: __m256);
    }

    pub struct F16;
    impl Conv for F16 {
        #[inline(always)]
        unsafe fn load(p: *const u16) -> __m256 {
            unsafe { _mm256_cvtph_ps(_mm_loadu_si128(p.cast())) }
        }
        #[inline(always)]
        unsafe fn store(p: *mut u16, v: __m256) {
            // F16C's immediate is the rounding mode alone (3 bits).
            unsafe { _mm_storeu_si128(p.cast(), _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v)) }
        }
    }

    pub struct Bf16;
    impl Conv for Bf16 {
        #[inline(always)]
        unsafe fn load(p: *const u16) -> __m256 {
            unsafe {
                _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(
                    _mm_loadu_si128(p.cast()),
                )))
            }
        }
        /// Rounded to nearest even, NaN kept quiet: `bf16_bits` in 8 lanes.
        #[inline(always)]
        unsafe fn store(p: *mut u16, v: __m256) {
            unsafe {
                let b = _mm256_castps_si256(v);
                let odd = _mm256_and_si256(_mm256_srli_epi32::<16>(b), _mm256_set1_epi32(1));
                let bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd);
                let rounded = _mm256_srli_epi32::<16>(_mm256_add_epi32(b, bias));
                let quiet = _mm256_or_si256(_mm256_srli_epi32::<16>(b), _mm256_set1_epi32(0x40));
                let abs = _mm256_and_si256(b, _mm256_set1_epi32(0x7fff_ffff));
                let nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f80_0000));
                let bits = _mm256_and_si256(
                    _mm256_blendv_epi8(rounded, quiet, nan),
                    _mm256_set1_epi32(0xffff),
                );
                // Packs within 128-bit halves; lanes 0 and 2 hold the 8 results.
                let packed = _mm256_permute4x64_epi64::<0x08>(_mm256_packus_epi32(bits, bits));
                _mm_storeu_si128(p.cast(), _mm256_castsi256_si128(packed));
            }
        }
    }

    /// As `Half::lanes`, on the bits of the half type `C` converts.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn lanes<C: Conv, H: Copy>(
        op: Arith,
        lo: usize,
        hi: usize,
        out: *mut u16,
        a: Side<H>,
        b: Side<H>,
    ) -> usize {
        let end = lo + (hi - lo) / 8 * 8;
        let load = |s: Side<H>, i: usize| match s {
            // SAFETY: elements i..i + 8 are in bounds.
            Side::T(p) => unsafe { C::load(p.at(i as isize).cast()) },
            Side::S(v) => _mm256_set1_ps(v),
        };
        macro_rules! each {
            ($f:expr) => {
                for i in (lo..end).step_by(8) {
                    let (x, y) = (load(a, i), load(b, i));
                    // SAFETY: as above.
                    unsafe { C::store(out.add(i), $f(x, y)) };
                }
            };
        }
        match op {
            Arith::Add(1.0) => each!(|x, y| _mm256_add_ps(x, y)),
            Arith::Sub(1.0) => each!(|x, y| _mm256_sub_ps(x, y)),
            Arith::Add(al) => each!(|x, y| _mm256_add_ps(x, _mm256_mul_ps(y, _mm256_set1_ps(al)))),
            Arith::Sub(al) => each!(|x, y| _mm256_sub_ps(x, _mm256_mul_ps(y, _mm256_set1_ps(al)))),
            Arith::Mul => each!(|x, y| _mm256_mul_ps(x, y)),
            Arith::Div => each!(|x, y| _mm256_div_ps(x, y)),
        }
        end
    }
}
