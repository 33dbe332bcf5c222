//! Launcher for shaders/rnn.wgsl: the fused gate kernels of one time step,
//! forward and backward (ops/rnn_gpu.rs drives the time loop).

use super::exec::{self, Variant};
use super::shaders::RNN;
use crate::error::Result;
use crate::tensor::Tensor;

crate::wgsl_params! {
    /// Live rows of the step, hidden size, relu (RNN: 1 relu, 0 tanh), then
    /// the element offset where the tensor of each binding 0..6 starts.
    pub struct Params in RNN {
        rows: u32, hidden: u32, relu: u32,
        off: [u32; 7],
    }
}

/// Runs `entry` over `rows` rows of H units. `ts` are the tensors of
/// bindings 0..6 (None: unused by the entry), each holding `rows` contiguous
/// rows; they are bound as windows, in chunks of rows when a tensor exceeds
/// the binding limit.
pub fn launch(
    entry: &'static str,
    rows: usize,
    hidden: usize,
    relu: bool,
    ts: &[Option<&Tensor>; 7],
) -> Result<()> {
    let dt = ts.iter().flatten().next().expect("a tensor").dtype();
    exec::dispatch_row_chunks(entry, Variant::of(dt), rows, ts, |_, count, offs| {
        let mut off = [0u32; 7];
        off.copy_from_slice(offs);
        let p = Params { rows: count as u32, hidden: hidden as u32, relu: u32::from(relu), off };
        (p, exec::grid_1d(count * hidden))
    })
}
