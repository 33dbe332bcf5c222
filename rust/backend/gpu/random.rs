//! Launcher for shaders/random.wgsl: Philox4x32-10 on the device. Each fill
//! takes a fresh 64-bit key from the host generator, so results follow
//! manual_seed (but are not the CPU's numbers, as in PyTorch).

use super::exec::{self, Bind, Variant};
use super::shaders::RANDOM;
use crate::error::Result;
use crate::tensor::Tensor;

crate::wgsl_params! {
    /// n elements from out_off; the 64-bit key; the 64-bit stream offset; the
    /// two arguments; the Philox block of the first element; uniform's cut.
    pub struct RngF in RANDOM {
        n: u32, out_off: u32, seed_lo: u32, seed_hi: u32, off_lo: u32, off_hi: u32,
        a: f32, b: f32, block0: u32, cut: f32,
    }
}

/// Fills contiguous float32 `out` with `entry` ("uniform", "normal",
/// "bernoulli_mask") and its two arguments; uniform also takes `cut`, from
/// which values are replaced by a (see the shader). An `out` beyond the binding
/// limit is filled in chunks (of whole Philox blocks) that draw the same numbers.
pub fn fill(entry: &'static str, out: &Tensor, key: u64, a: f32, b: f32, cut: f32) -> Result<()> {
    let (n, off, buf) = (out.numel(), out.layout().offset, out.storage().gpu_buffer()?);
    let mut chunk = n;
    while !exec::fits(buf, chunk, 4)? {
        chunk = chunk.div_ceil(2).next_multiple_of(4);
    }
    for start in (0..n).step_by(chunk.max(1)) {
        let len = chunk.min(n - start);
        let (bind, base) = Bind::window(buf, off + start, off + start + len - 1, 4)?;
        let p = RngF {
            n: len as u32,
            out_off: (off + start - base) as u32,
            seed_lo: key as u32,
            seed_hi: (key >> 32) as u32,
            off_lo: 0,
            off_hi: 0,
            a,
            b,
            block0: (start / 4) as u32,
            cut,
        };
        exec::dispatch_binds(entry, Variant::F32, &[bind], &p, exec::grid_1d(len.div_ceil(4)))?;
    }
    Ok(())
}
