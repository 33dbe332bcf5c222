//! Binding of the recurrent layers' time loop (rust/ops/rnn.rs), called by
//! rumus.nn.modules.rnn once per layer and direction.

use super::gil::run;
use super::tensor::{wrap, PyTensor};
use crate::ops::rnn::{self, Cell, Layer};
use pyo3::prelude::*;

/// One layer-direction over packed rows: [output, h_n] (+ c_n for LSTM).
#[pyfunction]
#[pyo3(name = "_rnn_layer", signature = (mode, input, w_ih, w_hh, b_ih, b_hh, w_hr, h0, c0, batch_sizes, reverse))]
#[allow(clippy::too_many_arguments)]
fn rnn_layer(
    py: Python<'_>,
    mode: &str,
    input: PyRef<'_, PyTensor>,
    w_ih: PyRef<'_, PyTensor>,
    w_hh: PyRef<'_, PyTensor>,
    b_ih: Option<PyRef<'_, PyTensor>>,
    b_hh: Option<PyRef<'_, PyTensor>>,
    w_hr: Option<PyRef<'_, PyTensor>>,
    h0: PyRef<'_, PyTensor>,
    c0: Option<PyRef<'_, PyTensor>>,
    batch_sizes: Vec<usize>,
    reverse: bool,
) -> PyResult<Vec<PyTensor>> {
    let cell = Cell::parse(mode)?;
    let (x, wi, wh, h) = (input.t.clone(), w_ih.t.clone(), w_hh.t.clone(), h0.t.clone());
    let (bi, bh, wr, c) = (
        b_ih.map(|t| t.t.clone()),
        b_hh.map(|t| t.t.clone()),
        w_hr.map(|t| t.t.clone()),
        c0.map(|t| t.t.clone()),
    );
    let work = x.numel().saturating_mul(wi.shape().first().copied().unwrap_or(1));
    let outs = run(py, work, || {
        let l =
            Layer { w_ih: &wi, w_hh: &wh, b_ih: bi.as_ref(), b_hh: bh.as_ref(), w_hr: wr.as_ref() };
        rnn::rnn_layer(cell, &x, &l, &h, c.as_ref(), &batch_sizes, reverse)
    })?;
    Ok(outs.into_iter().map(wrap).collect())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rnn_layer, m)?)?;
    Ok(())
}
