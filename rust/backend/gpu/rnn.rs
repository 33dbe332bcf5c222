//! Launcher for shaders/rnn.wgsl: the fused gate kernels of one time step,
//! forward and backward (ops/rnn_gpu.rs drives the time loop).

use super::exec::{self, Variant};
use super::shaders::RNN;
use crate::error::Result;
use crate::ops::rnn::Cell;
use crate::tensor::Tensor;

crate::wgsl_params! {
    /// Live rows of the step, hidden size, relu (RNN: 1 relu, 0 tanh), then
    /// the element offset where the tensor of each binding 0..6 starts.
    pub struct Params in RNN {
        rows: u32, hidden: u32, relu: u32,
        off: [u32; 7],
    }
}

/// Runs the gate kernel of `cell` (its backward when `backward`) over
/// `rows` rows of H units. `ts` are the tensors of bindings 0..6 (None:
/// unused by the entry), each holding `rows` contiguous rows; they are bound
/// as windows, in chunks of rows when a tensor exceeds the binding limit.
pub fn launch(
    cell: Cell,
    backward: bool,
    rows: usize,
    hidden: usize,
    ts: &[Option<&Tensor>; 7],
) -> Result<()> {
    let entry = match (cell, backward) {
        (Cell::RnnTanh | Cell::RnnRelu, false) => "rnn_cell",
        (Cell::Lstm, false) => "lstm_cell",
        (Cell::Gru, false) => "gru_cell",
        (Cell::RnnTanh | Cell::RnnRelu, true) => "rnn_cell_backward",
        (Cell::Lstm, true) => "lstm_cell_backward",
        (Cell::Gru, true) => "gru_cell_backward",
    };
    let relu = cell == Cell::RnnRelu;
    let dt = ts.iter().flatten().next().expect("a tensor").dtype();
    exec::dispatch_row_chunks(entry, Variant::of(dt), rows, ts, |_, count, offs| {
        let mut off = [0u32; 7];
        off.copy_from_slice(offs);
        let p = Params { rows: count as u32, hidden: hidden as u32, relu: u32::from(relu), off };
        (p, exec::grid_1d(count * hidden))
    })
}
