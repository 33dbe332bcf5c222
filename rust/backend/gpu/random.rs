//! Launcher for shaders/random.wgsl: Philox4x32-10 on the device. Each fill
//! takes a fresh 64-bit key from the host generator, so results follow
//! manual_seed (but are not the CPU's numbers, as in PyTorch).

use super::exec::{self, Variant};
use super::shaders::RANDOM;
use crate::error::Result;
use crate::tensor::Tensor;

/// Fills contiguous float32 `out` with `entry` ("uniform", "normal",
/// "bernoulli_mask") and its two arguments.
pub fn fill(entry: &'static str, out: &Tensor, key: u64, a: f32, b: f32) -> Result<()> {
    let n = out.numel();
    let p = [n as u32, out.layout().offset as u32, key as u32, (key >> 32) as u32, 0, 0, a.to_bits(), b.to_bits()];
    exec::dispatch(&RANDOM, entry, Variant::F32, &[out.storage().gpu_buffer()?], &p, exec::grid_1d(n.div_ceil(4)))
}
