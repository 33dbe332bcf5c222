//! Elementwise ops on float16/bfloat16 CPU tensors, computed in float32 one
//! cache-sized chunk at a time: each chunk of the inputs is widened into a
//! small float32 buffer, the op's float32 path runs on it and its result is
//! rounded into the half output. The whole-tensor path materializes float32
//! copies of every input and of the output (three to four full passes over
//! memory more, and as many large allocations).

use crate::backend::cpu::team;
use crate::error::{Error, Result};
use crate::ops::copy::{clone_as, copy_into};
use crate::tensor::layout::Layout;
use crate::tensor::{DType, Tensor};
use std::sync::Mutex;

/// Elements per chunk: a few float32 buffers of 128 KB stay in L2.
const CHUNK: usize = 1 << 15;

/// out (half, inputs' shape) = kernel over chunks, when every input is a
/// contiguous CPU tensor of one half dtype and shape, large enough to split;
/// None otherwise (the caller takes the whole-tensor path).
pub fn run(
    inputs: &[&Tensor],
    out_dtype: DType,
    kernel: impl Fn(&[Tensor]) -> Result<Tensor> + Sync,
) -> Result<Option<Tensor>> {
    let first = inputs[0];
    let dtype = first.dtype();
    let n = first.numel();
    let fits = |t: &&Tensor| {
        t.dtype() == dtype && t.shape() == first.shape() && t.is_contiguous() && !t.is_gpu()
    };
    if !dtype.is_half() || out_dtype != dtype || n < 2 * CHUNK || !inputs.iter().all(fits) {
        return Ok(None);
    }
    let out = Tensor::for_output(first.shape(), dtype)?;
    // A 1-D view of `len` elements of t from element `lo` (no autograd).
    let part = |t: &Tensor, lo: usize, len: usize| {
        t.detach().with_layout(Layout {
            shape: [len].as_slice().into(),
            strides: [1].as_slice().into(),
            offset: t.layout().offset + lo,
        })
    };
    let failed: Mutex<Option<Error>> = Mutex::new(None);
    team::for_each(n.div_ceil(CHUNK), |c| {
        let (lo, len) = (c * CHUNK, CHUNK.min(n - c * CHUNK));
        let step = || -> Result<()> {
            let wide = inputs
                .iter()
                .map(|t| clone_as(&part(t, lo, len), DType::F32))
                .collect::<Result<Vec<_>>>()?;
            copy_into(&part(&out, lo, len), &kernel(&wide)?)
        };
        if let Err(e) = step() {
            *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        }
    });
    match failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(Some(out)),
    }
}
