//! Private bindings of the quantized kernels (rust/ops/quant.rs); the public
//! API is rumus.quantization and rumus.nn.quantized.

use super::gil::run;
use super::tensor::{wrap, PyTensor};
use crate::ops::quant;
use pyo3::prelude::*;

/// Dynamically quantized linear: x (m, k) @ W.T + bias for a packed int8 W.
///
/// Args:
///   input (Tensor): float input of shape ``(m, k)``.
///   weight (Tensor): int32 words, four int8 codes each, shape ``(n, ceil(k/64)*16)``.
///   scale (Tensor): float32 per-channel scales, shape ``(n,)``.
///   wsum (Tensor): int32 per-channel sums of the codes, shape ``(n,)``.
///   bias (Tensor, optional): float32 bias, shape ``(n,)``.
#[pyfunction]
#[pyo3(signature = (input, weight, scale, wsum, bias=None))]
fn _qlinear(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    weight: PyRef<'_, PyTensor>,
    scale: PyRef<'_, PyTensor>,
    wsum: PyRef<'_, PyTensor>,
    bias: Option<PyRef<'_, PyTensor>>,
) -> PyResult<PyTensor> {
    let (x, w, s, ws) = (input.t.clone(), weight.t.clone(), scale.t.clone(), wsum.t.clone());
    let b = bias.map(|b| b.t.clone());
    let work = x.numel().saturating_mul(w.shape().first().copied().unwrap_or(0));
    Ok(wrap(run(py, work, || quant::qlinear(&x, &w, &s, &ws, b.as_ref()))?))
}

/// Exact int32 product a @ w.T of int8 codes held in int32 tensors.
///
/// Args:
///   a (Tensor): int32 activation codes in [0, 127], shape ``(m, k)``.
///   w (Tensor): int32 weight codes in [-128, 127], shape ``(n, k)``.
#[pyfunction]
fn _qgemm_s32(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    w: PyRef<'_, PyTensor>,
) -> PyResult<PyTensor> {
    let (a, w) = (a.t.clone(), w.t.clone());
    let work = a.numel().saturating_mul(w.shape().first().copied().unwrap_or(0));
    Ok(wrap(run(py, work, || quant::qgemm_s32(&a, &w))?))
}

/// Sets the CPU int8 GEMM path and returns the one now in use.
///
/// Args:
///   path (str, optional): "auto", "avx512_vnni", "avx2" or "scalar"; None only reads it.
#[pyfunction]
#[pyo3(signature = (path=None))]
fn _qgemm_path(path: Option<&str>) -> PyResult<&'static str> {
    if let Some(p) = path {
        crate::backend::cpu::qgemm::set_path(p)?;
    }
    Ok(crate::backend::cpu::qgemm::path()?.name())
}

/// x (m, k) @ W.T (+ bias) with W stored as Q8 blocks.
///
/// Args:
///   input (Tensor): float input of shape ``(m, k)``.
///   words (Tensor): 1-D int32 Q8 data, ``ceil(k/block_size)`` blocks per row.
///   out_features (int): rows of W.
///   block_size (int): codes per block.
///   bias (Tensor, optional): float32 bias, shape ``(out_features,)``.
#[pyfunction]
#[pyo3(signature = (input, words, out_features, block_size, bias=None))]
fn _q8_linear(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    words: PyRef<'_, PyTensor>,
    out_features: usize,
    block_size: usize,
    bias: Option<PyRef<'_, PyTensor>>,
) -> PyResult<PyTensor> {
    let (x, w) = (input.t.clone(), words.t.clone());
    let b = bias.map(|b| b.t.clone());
    let work = x.numel().saturating_mul(out_features);
    Ok(wrap(run(py, work, || quant::q8_linear(&x, &w, out_features, block_size, b.as_ref()))?))
}

/// The values of Q8 data (rows of blocks) as a 1-D float32 tensor.
///
/// Args:
///   words (Tensor): 1-D int32 Q8 data, ``ceil(k/block_size)`` blocks per row.
///   rows (int): number of rows.
///   k (int): values per row.
///   block_size (int): codes per block.
#[pyfunction]
fn _q8_dequantize(
    py: Python<'_>,
    words: PyRef<'_, PyTensor>,
    rows: usize,
    k: usize,
    block_size: usize,
) -> PyResult<PyTensor> {
    let w = words.t.clone();
    let work = rows.saturating_mul(k);
    Ok(wrap(run(py, work, || quant::q8_dequantize(&w, rows, k, block_size))?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_qlinear, m)?)?;
    m.add_function(wrap_pyfunction!(_qgemm_s32, m)?)?;
    m.add_function(wrap_pyfunction!(_qgemm_path, m)?)?;
    m.add_function(wrap_pyfunction!(_q8_linear, m)?)?;
    m.add_function(wrap_pyfunction!(_q8_dequantize, m)?)
}
