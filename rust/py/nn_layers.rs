//! Bindings of rumus.nn.functional's softmax, normalization, linear and
//! attention functions, with PyTorch's signatures (windowed ops: nn.rs).

use super::convert::int_list;
use super::gil::run;
use super::tensor::{wrap, PyTensor};
use crate::ops::softmax;
use crate::tensor::Tensor;
use pyo3::prelude::*;

/// softmax / log_softmax: dim None takes PyTorch's legacy choice (0 for 0-, 1- and 3-D inputs, else
/// 1).
fn softmax_call(
    py: Python<'_>,
    input: &Tensor,
    dim: Option<i64>,
    dtype: Option<&Bound<'_, PyAny>>,
    log: bool,
) -> PyResult<PyTensor> {
    let dim = dim.unwrap_or(if matches!(input.ndim(), 0 | 1 | 3) { 0 } else { 1 });
    let dtype = super::dtype::dtype_arg(dtype)?;
    let x = input.clone();
    Ok(wrap(run(py, x.numel(), || softmax::softmax(&x, dim, dtype, log))?))
}

/// Applies softmax along ``dim``: ``exp(x) / sum(exp(x))``.
///
/// Args:
///   input (Tensor): the input.
///   dim (int, optional): the dimension that sums to 1 (PyTorch's legacy choice when None).
///   _stacklevel (int): accepted for compatibility.
///   dtype (dtype, optional): cast the input to this dtype first.
///
/// Returns:
///   Tensor: of the input's shape.
#[pyfunction(name = "softmax")]
#[pyo3(signature = (input, dim=None, _stacklevel=3, dtype=None))]
fn softmax_fn(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    dim: Option<i64>,
    _stacklevel: i64,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    softmax_call(py, &input.t, dim, dtype, false)
}

/// Applies ``log(softmax(x))`` along ``dim``, computed stably.
///
/// Args:
///   input (Tensor): the input.
///   dim (int, optional): the dimension (PyTorch's legacy choice when None).
///   _stacklevel (int): accepted for compatibility.
///   dtype (dtype, optional): cast the input to this dtype first.
///
/// Returns:
///   Tensor: of the input's shape.
#[pyfunction]
#[pyo3(signature = (input, dim=None, _stacklevel=3, dtype=None))]
fn log_softmax(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    dim: Option<i64>,
    _stacklevel: i64,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    softmax_call(py, &input.t, dim, dtype, true)
}

#[pymethods]
impl PyTensor {
    /// Softmax along ``dim``.
    ///
    /// Args:
    ///   dim (int): the dimension that sums to 1.
    ///   dtype (dtype, optional): cast to this dtype first.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(name = "softmax", signature = (dim, dtype=None))]
    fn softmax_method(
        &self,
        py: Python<'_>,
        dim: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        softmax_call(py, &self.t, Some(dim), dtype, false)
    }
    /// ``log(softmax(x))`` along ``dim``, computed stably.
    ///
    /// Args:
    ///   dim (int): the dimension.
    ///   dtype (dtype, optional): cast to this dtype first.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(name = "log_softmax", signature = (dim, dtype=None))]
    fn log_softmax_method(
        &self,
        py: Python<'_>,
        dim: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        softmax_call(py, &self.t, Some(dim), dtype, true)
    }
}

/// Layer normalization over the trailing ``normalized_shape`` dimensions.
///
/// Args:
///   input (Tensor): the input.
///   normalized_shape (Sequence[int]): the trailing shape to normalize over.
///   weight (Tensor, optional): elementwise scale of that shape.
///   bias (Tensor, optional): elementwise shift of that shape.
///   eps (float): added to the variance.
///
/// Returns:
///   Tensor: of the input's shape.
#[pyfunction]
#[pyo3(signature = (input, normalized_shape, weight=None, bias=None, eps=1e-5))]
fn layer_norm(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    normalized_shape: &Bound<'_, PyAny>,
    weight: Option<PyRef<'_, PyTensor>>,
    bias: Option<PyRef<'_, PyTensor>>,
    eps: f64,
) -> PyResult<PyTensor> {
    let shape: Vec<usize> = int_list(normalized_shape, "normalized_shape")?
        .iter()
        .map(|&v| v.max(0) as usize)
        .collect();
    let (x, w, b) = (input.t.clone(), weight.map(|t| t.t.clone()), bias.map(|t| t.t.clone()));
    Ok(wrap(run(py, x.numel(), || {
        crate::ops::norm::layer_norm(&x, &shape, w.as_ref(), b.as_ref(), eps)
    })?))
}

/// Training-mode batch normalization in two fused sweeps (the backward in
/// two more); rumus.nn.functional.batch_norm uses it for float32 inputs and,
/// on the GPU, float16 ones.
///
/// Args:
///   input (Tensor): of shape ``(N, C, *)``: float32, or float16 on the GPU.
///   weight (Tensor, optional): per-channel scale.
///   bias (Tensor, optional): per-channel shift.
///   eps (float): added to the variance.
///
/// Returns:
///   tuple[Tensor, Tensor, Tensor]: the output, the batch mean and the biased
///   batch variance (both of shape ``(C,)``, not differentiable).
#[pyfunction]
#[pyo3(signature = (input, weight=None, bias=None, eps=1e-5))]
fn _batch_norm_train(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    weight: Option<PyRef<'_, PyTensor>>,
    bias: Option<PyRef<'_, PyTensor>>,
    eps: f64,
) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
    let (x, w, b) = (input.t.clone(), weight.map(|t| t.t.clone()), bias.map(|t| t.t.clone()));
    let (y, m, v) = run(py, x.numel(), || {
        crate::ops::batch_norm::batch_norm_train(&x, w.as_ref(), b.as_ref(), eps)
    })?;
    Ok((wrap(y), wrap(m), wrap(v)))
}

/// Applies ``input @ weight.T + bias``.
///
/// Args:
///   input (Tensor): of shape ``(*, in_features)``.
///   weight (Tensor): of shape ``(out_features, in_features)``.
///   bias (Tensor, optional): of shape ``(out_features,)``.
///
/// Returns:
///   Tensor: of shape ``(*, out_features)``.
#[pyfunction]
#[pyo3(signature = (input, weight, bias=None))]
fn linear(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    weight: PyRef<'_, PyTensor>,
    bias: Option<PyRef<'_, PyTensor>>,
) -> PyResult<PyTensor> {
    let (x, w, b) = (input.t.clone(), weight.t.clone(), bias.map(|t| t.t.clone()));
    let work = x.numel().saturating_mul(w.shape().first().copied().unwrap_or(1));
    Ok(wrap(run(py, work, || crate::ops::linalg::linear(&x, &w, b.as_ref()))?))
}

/// act(input @ weightᵀ + bias) + residual with the bias, activation and
/// residual fused into the GPU matmul's epilogue (one dispatch; composed of
/// the ordinary ops elsewhere). The engine of the transformer's feed-forward
/// block; call F.linear and the activation instead.
///
/// Args:
///   input (Tensor): of shape ``(*, in_features)``.
///   weight (Tensor): of shape ``(out_features, in_features)``.
///   bias (Tensor, optional): of shape ``(out_features)``.
///   activation (str): ``'none'``, ``'relu'``, ``'gelu'``, ``'gelu_tanh'`` or ``'silu'``.
///   residual (Tensor, optional): added last, of the output's shape.
///
/// Returns:
///   Tensor: of shape ``(*, out_features)``.
#[pyfunction]
#[pyo3(signature = (input, weight, bias=None, activation="none", residual=None))]
fn _linear_act(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    weight: PyRef<'_, PyTensor>,
    bias: Option<PyRef<'_, PyTensor>>,
    activation: &str,
    residual: Option<PyRef<'_, PyTensor>>,
) -> PyResult<PyTensor> {
    let (x, w) = (input.t.clone(), weight.t.clone());
    let (b, r) = (bias.map(|t| t.t.clone()), residual.map(|t| t.t.clone()));
    let act = crate::ops::linalg::fused::parse_act(activation)?;
    let work = x.numel().saturating_mul(w.shape().first().copied().unwrap_or(1));
    Ok(wrap(run(py, work, || {
        crate::ops::linalg::fused::linear_act(&x, &w, b.as_ref(), act, r.as_ref())
    })?))
}

/// Fused attention over (B, H, L, E) tensors (the engine of
/// F.scaled_dot_product_attention; call that instead).
///
/// Args:
///   query (Tensor): of shape ``(B, H, L, E)``.
///   key (Tensor): of shape ``(B, H, S, E)``.
///   value (Tensor): of shape ``(B, H, S, Ev)``.
///   attn_mask (Tensor, optional): additive, 4-D, each dim 1 or that of ``(B, H, L, S)``.
///   dropout_p (float): dropout on the attention weights.
///   is_causal (bool): mask keys after the query (top-left aligned).
///   scale (float): the score scale.
///   seed (int, optional): the dropout seed (drawn from the default generator when None).
///
/// Returns:
///   Tensor: of shape ``(B, H, L, Ev)``.
#[pyfunction]
#[pyo3(signature = (query, key, value, attn_mask=None, dropout_p=0.0, is_causal=false, scale=1.0, seed=None))]
#[allow(clippy::too_many_arguments)]
fn _flash_attention(
    py: Python<'_>,
    query: PyRef<'_, PyTensor>,
    key: PyRef<'_, PyTensor>,
    value: PyRef<'_, PyTensor>,
    attn_mask: Option<PyRef<'_, PyTensor>>,
    dropout_p: f64,
    is_causal: bool,
    scale: f64,
    seed: Option<u64>,
) -> PyResult<PyTensor> {
    let (q, k, v, m) =
        (query.t.clone(), key.t.clone(), value.t.clone(), attn_mask.map(|t| t.t.clone()));
    let work = q.numel().saturating_mul(k.shape().get(2).copied().unwrap_or(1));
    Ok(wrap(run(py, work, || {
        crate::ops::attention::flash_attention(
            &q,
            &k,
            &v,
            m.as_ref(),
            dropout_p,
            is_causal,
            scale,
            seed,
        )
    })?))
}
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(layer_norm, m)?)?;
    m.add_function(wrap_pyfunction!(_flash_attention, m)?)?;
    m.add_function(wrap_pyfunction!(_batch_norm_train, m)?)?;
    m.add_function(wrap_pyfunction!(linear, m)?)?;
    m.add_function(wrap_pyfunction!(_linear_act, m)?)?;
    m.add_function(wrap_pyfunction!(softmax_fn, m)?)?;
    m.add_function(wrap_pyfunction!(log_softmax, m)?)?;
    Ok(())
}
