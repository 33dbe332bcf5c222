//! Moving tensors between host and GPU. float32, float16 and bfloat16 cross
//! as they are (the 2-byte ones packed two per GPU word); int64, bool and
//! uint8 become 4-byte words on the way (see `dtype::kind`).

use super::dtype::kind;
use super::exec;
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::Layout;
use crate::tensor::storage::Storage;
use crate::tensor::{DType, Tensor};
use std::sync::Arc;

/// A GPU copy of a contiguous CPU tensor.
pub fn upload(t: &Tensor) -> Result<Tensor> {
    kind(t.dtype())?;
    let n = t.numel();
    let raw = |size: usize| -> Result<&[u8]> {
        // SAFETY: contiguous, n elements of `size` bytes at the view's offset.
        Ok(unsafe {
            std::slice::from_raw_parts(
                t.storage().cpu_ptr()?.add(t.layout().offset * size),
                n * size,
            )
        })
    };
    let words: Vec<u32> = match t.dtype() {
        DType::F32 | DType::I32 => return finish(t, exec::upload(raw(4)?)?),
        DType::F16 | DType::BF16 => return finish(t, exec::upload(raw(2)?)?),
        DType::I64 => {
            // SAFETY: contiguous, n elements.
            let v = unsafe { std::slice::from_raw_parts(t.ptr::<i64>()?, n) };
            let mut out = Vec::with_capacity(n);
            for &x in v {
                let Ok(w) = i32::try_from(x) else {
                    bail!(Runtime, "int64 value {} does not fit in 32 bits: int64 tensors on the GPU hold 32-bit values", x);
                };
                out.push(w as u32);
            }
            out
        }
        DType::Bool | DType::U8 => raw(1)?.iter().map(|&b| b as u32).collect(),
        d => bail!(Type, "{} tensors cannot move to the GPU", d.name()),
    };
    finish(t, exec::upload(bytemuck::cast_slice(&words))?)
}

fn finish(t: &Tensor, buf: super::GpuBuffer) -> Result<Tensor> {
    Ok(Tensor::new(
        Arc::new(Storage::from_gpu(t.dtype(), t.numel(), buf)),
        Layout::contiguous(t.shape()),
    ))
}

/// A CPU copy of a contiguous GPU tensor.
pub fn download(t: &Tensor) -> Result<Tensor> {
    let n = t.numel();
    let shape = t.shape();
    if t.dtype().is_half() {
        // Copies start at 4-byte boundaries: an odd offset reads one element early.
        let skip = t.layout().offset % 2;
        let bytes = exec::download(
            t.storage().gpu_packed_buffer()?,
            (t.layout().offset - skip) as u64 * 2,
            (n + skip) * 2,
        )?;
        let halves = bytes[skip * 2..].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]));
        return if t.dtype() == DType::F16 {
            Tensor::from_vec::<half::f16>(halves.map(half::f16::from_bits).collect(), shape)
        } else {
            Tensor::from_vec::<half::bf16>(halves.map(half::bf16::from_bits).collect(), shape)
        };
    }
    let bytes = exec::download(t.storage().gpu_buffer()?, t.layout().offset as u64 * 4, n * 4)?;
    // Decoded word by word: a Vec<u8> carries no 4-byte alignment.
    let words: Vec<u32> =
        bytes.chunks_exact(4).map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect();
    match t.dtype() {
        DType::F32 => {
            Tensor::from_vec(words.iter().map(|&w| f32::from_bits(w)).collect::<Vec<f32>>(), shape)
        }
        DType::I32 => {
            Tensor::from_vec(words.iter().map(|&w| w as i32).collect::<Vec<i32>>(), shape)
        }
        DType::I64 => {
            Tensor::from_vec(words.iter().map(|&w| w as i32 as i64).collect::<Vec<i64>>(), shape)
        }
        DType::Bool => {
            Tensor::from_vec(words.iter().map(|&w| w != 0).collect::<Vec<bool>>(), shape)
        }
        DType::U8 => Tensor::from_vec(words.iter().map(|&w| w as u8).collect::<Vec<u8>>(), shape),
        d => bail!(Type, "{} tensors cannot live on the GPU", d.name()),
    }
}
