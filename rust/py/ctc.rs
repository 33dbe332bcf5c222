//! Binding of ctc_loss's per-sample kernel; rumus.nn.functional.ctc_loss adds
//! PyTorch's argument forms (tensors or sequences, unbatched input) and reductions.

use super::convert::int_list;
use super::gil::run;
use super::tensor::{wrap, PyTensor};
use pyo3::prelude::*;

/// (N,) negative log-likelihoods of `targets` under `log_probs` (T, N, C).
#[pyfunction]
#[pyo3(signature = (log_probs, targets, input_lengths, target_lengths, blank=0, zero_infinity=false))]
fn _ctc_loss(
    py: Python<'_>,
    log_probs: PyRef<'_, PyTensor>,
    targets: PyRef<'_, PyTensor>,
    input_lengths: &Bound<'_, PyAny>,
    target_lengths: &Bound<'_, PyAny>,
    blank: i64,
    zero_infinity: bool,
) -> PyResult<PyTensor> {
    let il = int_list(input_lengths, "input_lengths")?;
    let tl = int_list(target_lengths, "target_lengths")?;
    let (lp, tg) = (log_probs.t.clone(), targets.t.clone());
    let work = lp.numel().saturating_mul(4);
    Ok(wrap(run(py, work, || crate::ops::ctc::ctc_loss(&lp, &tg, &il, &tl, blank, zero_infinity))?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_ctc_loss, m)?)
}
