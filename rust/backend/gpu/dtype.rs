//! How each dtype is stored on the GPU: its element kind (the word format
//! the kernels read), bytes per element, and scalars as kernel words.

use super::context;
use crate::bail;
use crate::error::Result;
use crate::tensor::{DType, Scalar};

crate::wgsl_codes! {
    /// Element kind of a dtype on the GPU (`KIND_*` in WGSL): float32, int32
    /// (int32 and int64), bool and uint8 take one 4-byte word each; Half is
    /// float16 (two bytes, the float16 kernels' `T`; adapters without
    /// shader-f16 refuse it); Bf16 is bfloat16, two per u32 word, which only
    /// the kernels of shaders/bf16.wgsl and matmul_bf16.wgsl read or write.
    pub enum Kind = "KIND" { F32, I32, Bool, U8, Half, Bf16 }
}

pub fn kind(dtype: DType) -> Result<Kind> {
    Ok(match dtype {
        DType::F32 => Kind::F32,
        DType::I32 | DType::I64 => Kind::I32,
        DType::Bool => Kind::Bool,
        DType::U8 => Kind::U8,
        DType::F16 => {
            let ctx = context::get()?;
            if !ctx.has_f16() {
                bail!(
                    Type,
                    "float16 tensors on the GPU need the shader-f16 feature, which {} lacks; use float32",
                    ctx.info.name
                );
            }
            Kind::Half
        }
        DType::F64 => bail!(
            Type,
            "float64 is not supported on gpu devices (WGSL has no 64-bit floats); convert to float32 first"
        ),
        DType::C64 | DType::C128 => bail!(
            Type,
            "{} tensors are not supported on gpu devices: complex numbers and rumus.fft run on the CPU only for now",
            dtype.name()
        ),
        DType::BF16 => Kind::Bf16,
    })
}

/// Bytes per element of `dtype` on the GPU.
pub fn elem_bytes(dtype: DType) -> Result<usize> {
    Ok(if matches!(kind(dtype)?, Kind::Half | Kind::Bf16) { 2 } else { 4 })
}

/// A scalar as a 4-byte word in the GPU representation of `dtype` (float32
/// bits for float16 and bfloat16: kernels compute in float32).
pub fn word(s: Scalar, dtype: DType) -> Result<u32> {
    Ok(match kind(dtype)? {
        Kind::F32 | Kind::Half | Kind::Bf16 => (s.to_f64() as f32).to_bits(),
        Kind::I32 => {
            let v = s.to_i64();
            if i32::try_from(v).is_err() {
                bail!(Runtime, "value {} does not fit in the GPU's 32-bit integers", v);
            }
            v as i32 as u32
        }
        Kind::Bool => (s.to_f64() != 0.0) as u32,
        Kind::U8 => (s.to_i64() as u8) as u32,
    })
}
