//! Recurrent layers (nn.RNN, nn.LSTM, nn.GRU and their cells): one call runs
//! one layer in one direction over all time steps. Rows are packed
//! time-major with per-step batch sizes, PyTorch's PackedSequence layout (a
//! padded batch of B sequences is the case where every step has B rows); the
//! Python modules stack layers and directions and apply dropout between them.
//!
//! On the CPU the time loop and backward through time are the fused kernels
//! of backend/cpu/rnn.rs, recorded as one `RnnBackward` per call that keeps
//! the gate activations and states. On the GPU the loop is rnn_gpu.rs:
//! recorded GEMMs and one fused gate kernel per step.

use super::copy::{contiguous, to_dtype};
use crate::autograd::{self, graph, mode, Backward, GradMode, Node, SavedTensor};
use crate::backend::cpu::rnn::{self as kernel, Act, Dims, Saved, Weights};
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::fmt_shape;
use crate::tensor::{DType, Element, Tensor};
use std::sync::Arc;

/// The recurrence of a layer; the gate order is PyTorch's (LSTM i, f, g, o;
/// GRU r, z, n).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Cell {
    RnnTanh,
    RnnRelu,
    Lstm,
    Gru,
}

impl Cell {
    pub fn parse(mode: &str) -> Result<Cell> {
        Ok(match mode {
            "RNN_TANH" => Cell::RnnTanh,
            "RNN_RELU" => Cell::RnnRelu,
            "LSTM" => Cell::Lstm,
            "GRU" => Cell::Gru,
            _ => bail!(Value, "unknown RNN mode '{}'", mode),
        })
    }
    pub fn gates(self) -> usize {
        match self {
            Cell::RnnTanh | Cell::RnnRelu => 1,
            Cell::Lstm => 4,
            Cell::Gru => 3,
        }
    }
}

/// The tensors of one layer-direction.
pub struct Layer<'a> {
    pub w_ih: &'a Tensor,
    pub w_hh: &'a Tensor,
    pub b_ih: Option<&'a Tensor>,
    pub b_hh: Option<&'a Tensor>,
    pub w_hr: Option<&'a Tensor>,
}

fn check_shape(what: &str, t: &Tensor, want: &[usize]) -> Result<()> {
    if t.shape()[..] != *want {
        bail!(
            Runtime,
            "rnn: expected {} of size {}, got {}",
            what,
            fmt_shape(want),
            fmt_shape(t.shape())
        );
    }
    Ok(())
}

/// Checks every shape, dtype and device against x (rows, input) and the
/// per-step batch sizes; returns the sizes.
fn validate(
    cell: Cell,
    x: &Tensor,
    l: &Layer,
    h0: &Tensor,
    c0: Option<&Tensor>,
    bs: &[usize],
) -> Result<Dims> {
    if x.ndim() != 2 {
        bail!(
            Runtime,
            "rnn: expected packed input of 2 dims (rows, input_size), got {}",
            fmt_shape(x.shape())
        );
    }
    if l.w_ih.ndim() != 2 || l.w_hh.ndim() != 2 {
        bail!(
            Runtime,
            "rnn: weights must be 2-D, got weight_ih {} and weight_hh {}",
            fmt_shape(l.w_ih.shape()),
            fmt_shape(l.w_hh.shape())
        );
    }
    let gh = l.w_ih.shape()[0];
    if !gh.is_multiple_of(cell.gates()) {
        bail!(
            Runtime,
            "rnn: weight_ih has {} rows, not a multiple of the {} gates",
            gh,
            cell.gates()
        );
    }
    let hidden = gh / cell.gates();
    let p = match l.w_hr {
        Some(w) => {
            if cell != Cell::Lstm {
                bail!(Runtime, "rnn: weight_hr (proj_size) is only supported for LSTM");
            }
            w.shape().first().copied().unwrap_or(0)
        }
        None => hidden,
    };
    let (rows, input) = (x.shape()[0], x.shape()[1]);
    check_shape("weight_ih", l.w_ih, &[gh, input])?;
    check_shape("weight_hh", l.w_hh, &[gh, p])?;
    for (n, b) in [("bias_ih", l.b_ih), ("bias_hh", l.b_hh)] {
        if let Some(b) = b {
            check_shape(n, b, &[gh])?;
        }
    }
    if l.b_ih.is_some() != l.b_hh.is_some() {
        bail!(Runtime, "rnn: bias_ih and bias_hh must both be given or both be None");
    }
    if let Some(w) = l.w_hr {
        check_shape("weight_hr", w, &[p, hidden])?;
    }
    if bs.is_empty() || bs.contains(&0) || bs.windows(2).any(|w| w[1] > w[0]) {
        bail!(Runtime, "rnn: batch_sizes must be positive and non-increasing, got {:?}", bs);
    }
    if bs.iter().sum::<usize>() != rows {
        bail!(
            Runtime,
            "rnn: batch_sizes {:?} sum to {}, but the input has {} rows",
            bs,
            bs.iter().sum::<usize>(),
            rows
        );
    }
    let batch = bs[0];
    check_shape("hidden state", h0, &[batch, p])?;
    match (cell, c0) {
        (Cell::Lstm, Some(c)) => check_shape("cell state", c, &[batch, hidden])?,
        (Cell::Lstm, None) => bail!(Runtime, "rnn: LSTM needs a cell state"),
        (_, Some(_)) => bail!(Runtime, "rnn: only LSTM takes a cell state"),
        _ => {}
    }
    let all: Vec<&Tensor> =
        [Some(x), Some(l.w_ih), Some(l.w_hh), l.b_ih, l.b_hh, l.w_hr, Some(h0), c0]
            .into_iter()
            .flatten()
            .collect();
    super::same_device("rnn", &all)?;
    if !x.dtype().is_float() {
        bail!(Runtime, "rnn: expected a floating point input, got {}", x.dtype().name());
    }
    if let Some(t) = all.iter().find(|t| t.dtype() != x.dtype()) {
        bail!(
            Runtime,
            "rnn: input and parameters/hidden states must have the same dtype, got input {} and {} of shape {}",
            x.dtype().name(),
            t.dtype().name(),
            fmt_shape(t.shape())
        );
    }
    Ok(Dims { cell, rows, input, hidden, p, batch })
}

/// One layer in one direction: returns [output (rows, p), h_n (batch, p)]
/// and, for LSTMs, c_n (batch, hidden).
pub fn rnn_layer(
    cell: Cell,
    x: &Tensor,
    l: &Layer,
    h0: &Tensor,
    c0: Option<&Tensor>,
    bs: &[usize],
    reverse: bool,
) -> Result<Vec<Tensor>> {
    let d = validate(cell, x, l, h0, c0, bs)?;
    if x.is_gpu() {
        return super::rnn_gpu::run(d, x, l, h0, c0, bs, reverse);
    }
    let inputs: Vec<&Tensor> =
        [Some(x), Some(l.w_ih), Some(l.w_hh), l.b_ih, l.b_hh, l.w_hr, Some(h0), c0]
            .into_iter()
            .flatten()
            .collect();
    if !autograd::needs_grad(&inputs) {
        return Ok(run_cpu(d, bs, reverse, l, &inputs)?.0);
    }
    let (outs, saved) = {
        let _off = GradMode::set(false);
        run_cpu(d, bs, reverse, l, &inputs)?
    };
    let op = RnnBackward {
        d,
        bs: bs.into(),
        reverse,
        has_b: l.b_ih.is_some(),
        has_hr: l.w_hr.is_some(),
        dtype: x.dtype(),
        inputs: inputs.iter().map(|t| SavedTensor::input(t)).collect(),
        saved,
    };
    Ok(graph::attach(op.into(), &inputs, outs))
}

/// The saved buffers of one call, in its compute dtype.
#[derive(Clone)]
pub enum SavedBufs {
    F32(Arc<Saved<f32>>),
    F64(Arc<Saved<f64>>),
}

/// The compute types, with the way into and out of `SavedBufs`.
trait Compute: Act + Element {
    fn wrap(s: Saved<Self>) -> SavedBufs;
    fn pick(s: &SavedBufs) -> &Saved<Self>;
}
impl Compute for f32 {
    fn wrap(s: Saved<f32>) -> SavedBufs {
        SavedBufs::F32(Arc::new(s))
    }
    fn pick(s: &SavedBufs) -> &Saved<f32> {
        match s {
            SavedBufs::F32(s) => s,
            SavedBufs::F64(_) => unreachable!("saved in the dtype it runs in"),
        }
    }
}
impl Compute for f64 {
    fn wrap(s: Saved<f64>) -> SavedBufs {
        SavedBufs::F64(Arc::new(s))
    }
    fn pick(s: &SavedBufs) -> &Saved<f64> {
        match s {
            SavedBufs::F64(s) => s,
            SavedBufs::F32(_) => unreachable!("saved in the dtype it runs in"),
        }
    }
}

fn compute_dtype(d: DType) -> DType {
    if d == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

/// The tensors in the compute dtype, contiguous, in the order
/// [x, w_ih, w_hh, b_ih?, b_hh?, w_hr?, h0, c0?].
fn prepared(inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
    let ct = compute_dtype(inputs[0].dtype());
    inputs.iter().map(|t| contiguous(&to_dtype(t, ct)?)).collect()
}

/// # Safety
/// `t` must be a contiguous CPU tensor of `T`; the slice lives as long as `t`.
unsafe fn slice<T: Element>(t: &Tensor) -> Result<&[T]> {
    Ok(std::slice::from_raw_parts(t.ptr::<T>()?, t.numel()))
}

struct Unpacked<'a, T> {
    x: &'a [T],
    w: Weights<'a, T>,
    h0: &'a [T],
    c0: Option<&'a [T]>,
}

/// Views `prepared` tensors as slices; the flags say which optional ones are there.
fn unpack<'a, T: Element>(ts: &'a [Tensor], has_b: bool, has_hr: bool) -> Result<Unpacked<'a, T>> {
    // SAFETY: `prepared` made every tensor contiguous in T.
    let s = |i: usize| unsafe { slice::<T>(&ts[i]) };
    let mut k = 3;
    let mut pos = |on: bool| {
        k += usize::from(on);
        on.then_some(k - 1)
    };
    let (bi, bh, hr, h0) = (pos(has_b), pos(has_b), pos(has_hr), pos(true).expect("h0"));
    let c0 = (ts.len() > h0 + 1).then_some(h0 + 1);
    let opt = |p: Option<usize>| p.map(s).transpose();
    Ok(Unpacked {
        x: s(0)?,
        w: Weights { w_ih: s(1)?, w_hh: s(2)?, b_ih: opt(bi)?, b_hh: opt(bh)?, w_hr: opt(hr)? },
        h0: s(h0)?,
        c0: opt(c0)?,
    })
}

fn run_cpu(
    d: Dims,
    bs: &[usize],
    reverse: bool,
    l: &Layer,
    inputs: &[&Tensor],
) -> Result<(Vec<Tensor>, SavedBufs)> {
    let dt = inputs[0].dtype();
    let ts = prepared(inputs)?;
    let flags = (l.b_ih.is_some(), l.w_hr.is_some());
    crate::dispatch_float!(compute_dtype(dt), T => run_typed::<T>(d, bs, reverse, &ts, flags, dt))
}

fn run_typed<T: Compute>(
    d: Dims,
    bs: &[usize],
    reverse: bool,
    ts: &[Tensor],
    (has_b, has_hr): (bool, bool),
    dt: DType,
) -> Result<(Vec<Tensor>, SavedBufs)> {
    let u = unpack::<T>(ts, has_b, has_hr)?;
    let mut h = u.h0.to_vec();
    let mut c = u.c0.map(|c| c.to_vec()).unwrap_or_default();
    let mut y: Vec<T> = vec![num_traits::Zero::zero(); d.rows * d.p];
    let saved = kernel::forward(d, bs, reverse, u.x, &u.w, &mut h, &mut c, &mut y);
    let mut outs = vec![
        to_dtype(&Tensor::from_vec(y, &[d.rows, d.p])?, dt)?,
        to_dtype(&Tensor::from_vec(h, &[d.batch, d.p])?, dt)?,
    ];
    if d.cell == Cell::Lstm {
        outs.push(to_dtype(&Tensor::from_vec(c, &[d.batch, d.hidden])?, dt)?);
    }
    Ok((outs, T::wrap(saved)))
}

#[derive(Clone)]
pub struct RnnBackward {
    d: Dims,
    bs: Vec<usize>,
    reverse: bool,
    has_b: bool,
    has_hr: bool,
    dtype: DType,
    inputs: Vec<SavedTensor>,
    saved: SavedBufs,
}

impl Backward for RnnBackward {
    fn name(&self) -> String {
        match self.d.cell {
            Cell::Lstm => "LstmBackward0",
            Cell::Gru => "GruBackward0",
            _ => "RnnBackward0",
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
        let ins = self.inputs.iter().map(|s| s.unpack(node)).collect::<Result<Vec<_>>>()?;
        let refs: Vec<&Tensor> = ins.iter().collect();
        let ts = prepared(&refs)?;
        let ct = compute_dtype(self.dtype);
        let gs = grads.iter().map(|g| contiguous(&to_dtype(g, ct)?)).collect::<Result<Vec<_>>>()?;
        let out = crate::dispatch_float!(ct, T => self.typed::<T>(node, &ts, &gs)?);
        out.into_iter().map(|g| g.map(|g| to_dtype(&g, self.dtype)).transpose()).collect()
    }
}

impl RnnBackward {
    fn typed<T: Compute>(
        &self,
        node: &Arc<Node>,
        ts: &[Tensor],
        gs: &[Tensor],
    ) -> Result<Vec<Option<Tensor>>> {
        let d = self.d;
        let u = unpack::<T>(ts, self.has_b, self.has_hr)?;
        // SAFETY: the output gradients were made contiguous in T.
        let (dy, mut dh) = unsafe { (slice::<T>(&gs[0])?, slice::<T>(&gs[1])?.to_vec()) };
        let mut dc = if d.cell == Cell::Lstm {
            // SAFETY: as above.
            unsafe { slice::<T>(&gs[2])?.to_vec() }
        } else {
            Vec::new()
        };
        let g = kernel::backward(
            d,
            &self.bs,
            self.reverse,
            u.x,
            &u.w,
            T::pick(&self.saved),
            dy,
            &mut dh,
            &mut dc,
            node.needs_input_grad(0),
        );
        let (gh, p, hd) = (d.cell.gates() * d.hidden, d.p, d.hidden);
        let t = |v: Vec<T>, s: &[usize]| Tensor::from_vec(v, s).map(Some);
        let mut out = vec![
            g.dx.map(|v| Tensor::from_vec(v, &[d.rows, d.input])).transpose()?,
            t(g.dw_ih, &[gh, d.input])?,
            t(g.dw_hh, &[gh, p])?,
        ];
        if self.has_b {
            out.push(t(g.db_ih, &[gh])?);
            out.push(t(g.db_hh, &[gh])?);
        }
        if self.has_hr {
            out.push(t(g.dw_hr, &[p, hd])?);
        }
        out.push(t(dh, &[d.batch, p])?);
        if d.cell == Cell::Lstm {
            out.push(t(dc, &[d.batch, hd])?);
        }
        Ok(out)
    }
}
