//! The recurrent layers on the GPU (rust/ops/rnn.rs validates and routes
//! here): one GEMM for the input projections of all steps, then per step one
//! GEMM for the recurrent projection and one fused gate dispatch
//! (shaders/rnn.wgsl) computing every nonlinearity and the new state. The
//! gate dispatch is recorded as one `RnnGatesBackward`, whose backward is one
//! fused dispatch too, so backward through time runs the recorded GEMMs and
//! one gate-gradient kernel per step rather than chains of small ops.

use super::copy::contiguous;
use super::linalg::linear;
use super::rnn::{Cell, Layer};
use super::shape::{cat, narrow};
use crate::autograd::{self, graph, mode, Backward, Node, SavedTensor};
use crate::backend::cpu::rnn::{schedule, Dims};
use crate::backend::gpu::rnn::launch;
use crate::bail;
use crate::error::Result;
use crate::tensor::Tensor;
use std::sync::Arc;

/// Saved floats per unit and row: RNN h; LSTM i, f, g, o and tanh(c);
/// GRU r, z, n and W_hn h + b_hn (the layout shaders/rnn.wgsl writes).
fn saved_width(cell: Cell) -> usize {
    match cell {
        Cell::RnnTanh | Cell::RnnRelu => 1,
        Cell::Lstm => 5,
        Cell::Gru => 4,
    }
}

/// One step's gates from the input projection `a` and recurrent projection
/// `b` (rows, G·H) and, for LSTMs and GRUs, the state `s` read (c_prev or
/// h_prev, (rows, H)): returns [h] (RNN, GRU) or [m, c] (LSTM, m = o·tanh(c)).
fn gates(cell: Cell, a: &Tensor, b: &Tensor, s: Option<&Tensor>) -> Result<Vec<Tensor>> {
    let (a, b) = (contiguous(a)?, contiguous(b)?);
    let s = s.map(contiguous).transpose()?;
    let (rows, hidden) = (b.shape()[0], b.shape()[1] / cell.gates());
    let new = |w: usize| Tensor::empty_on(&[rows, w], b.dtype(), b.device());
    let h = new(hidden)?;
    let c = if cell == Cell::Lstm { Some(new(hidden)?) } else { None };
    let saved = new(saved_width(cell) * hidden)?;
    let ts = [Some(&a), Some(&b), s.as_ref(), None, Some(&h), c.as_ref(), Some(&saved)];
    launch(cell, false, rows, hidden, &ts)?;
    let mut outs = vec![h];
    outs.extend(c);
    let inputs: Vec<&Tensor> = [Some(&a), Some(&b), s.as_ref()].into_iter().flatten().collect();
    if !autograd::needs_grad(&inputs) {
        return Ok(outs);
    }
    let op =
        RnnGatesBackward { cell, rows, hidden, saved, state: s.as_ref().map(SavedTensor::input) };
    Ok(graph::attach(op.into(), &inputs, outs))
}

/// The backward of one step's gates: the saved activations (written by the
/// forward kernel only) and the state it read.
#[derive(Clone)]
pub struct RnnGatesBackward {
    cell: Cell,
    rows: usize,
    hidden: usize,
    saved: Tensor,
    state: Option<SavedTensor>,
}

impl Backward for RnnGatesBackward {
    fn name(&self) -> String {
        match self.cell {
            Cell::Lstm => "LstmCellGatesBackward0",
            Cell::Gru => "GruCellGatesBackward0",
            _ => "RnnCellGatesBackward0",
        }
        .into()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        if mode::is_grad_enabled() {
            bail!(
                Runtime,
                "{}: double backward (create_graph=True) through recurrent layers is not supported",
                self.name()
            );
        }
        let (rows, hd, cell) = (self.rows, self.hidden, self.cell);
        let gs = grads.iter().map(contiguous).collect::<Result<Vec<_>>>()?;
        let s = self.state.as_ref().map(|s| s.unpack(node)).transpose()?;
        let new = |w: usize| Tensor::empty_on(&[rows, w], gs[0].dtype(), gs[0].device());
        let da = new(cell.gates() * hd)?;
        Ok(match cell {
            Cell::RnnTanh | Cell::RnnRelu => {
                let ts = [Some(&self.saved), None, Some(&gs[0]), None, Some(&da), None, None];
                launch(cell, true, rows, hd, &ts)?;
                vec![Some(da.clone()), Some(da)]
            }
            Cell::Lstm => {
                let dc = new(hd)?;
                let ts = [
                    Some(&self.saved),
                    s.as_ref(),
                    Some(&gs[0]),
                    Some(&gs[1]),
                    Some(&da),
                    None,
                    Some(&dc),
                ];
                launch(cell, true, rows, hd, &ts)?;
                vec![Some(da.clone()), Some(da), Some(dc)]
            }
            Cell::Gru => {
                let (db, dh) = (new(3 * hd)?, new(hd)?);
                let ts = [
                    Some(&self.saved),
                    s.as_ref(),
                    Some(&gs[0]),
                    None,
                    Some(&da),
                    Some(&db),
                    Some(&dh),
                ];
                launch(cell, true, rows, hd, &ts)?;
                vec![Some(da), Some(db), Some(dh)]
            }
        })
    }
}

/// `rows` new leading rows over the rest of `state` (sequences not live this step).
fn replace_rows(state: &Tensor, new: Tensor, rows: usize) -> Result<Tensor> {
    let total = state.shape()[0];
    if rows == total {
        return Ok(new);
    }
    cat(&[new, narrow(state, 0, rows as i64, (total - rows) as i64)?], 0)
}

/// The time loop of one layer-direction on the GPU, recorded op by op
/// (GEMMs, fused gates, the row bookkeeping of packed batches); returns
/// [output, h_n] and, for LSTMs, c_n.
pub fn run(
    d: Dims,
    x: &Tensor,
    l: &Layer,
    h0: &Tensor,
    c0: Option<&Tensor>,
    bs: &[usize],
    reverse: bool,
) -> Result<Vec<Tensor>> {
    let gx = linear(x, l.w_ih, l.b_ih)?;
    let (off, order) = schedule(bs, reverse);
    let (mut h, mut c) = (h0.clone(), c0.cloned());
    let mut outs: Vec<Option<Tensor>> = vec![None; bs.len()];
    for &t in &order {
        let b = bs[t];
        let hb = narrow(&h, 0, 0, b as i64)?;
        let xg = narrow(&gx, 0, off[t] as i64, b as i64)?;
        let hg = linear(&hb, l.w_hh, l.b_hh)?;
        let hn = match d.cell {
            Cell::RnnTanh | Cell::RnnRelu | Cell::Gru => {
                let s = (d.cell == Cell::Gru).then_some(&hb);
                gates(d.cell, &xg, &hg, s)?.swap_remove(0)
            }
            Cell::Lstm => {
                let cs = c.as_ref().expect("LSTM has a cell state");
                let mut mc = gates(d.cell, &xg, &hg, Some(&narrow(cs, 0, 0, b as i64)?))?;
                let (cn, m) = (mc.pop().expect("c"), mc.pop().expect("m"));
                c = Some(replace_rows(cs, cn, b)?);
                match l.w_hr {
                    Some(w) => linear(&m, w, None)?,
                    None => m,
                }
            }
        };
        h = replace_rows(&h, hn.clone(), b)?;
        outs[t] = Some(hn);
    }
    let y = cat(&outs.into_iter().map(|o| o.expect("every step ran")).collect::<Vec<_>>(), 0)?;
    let mut res = vec![y, h];
    res.extend(c);
    Ok(res)
}
