//! Bindings of ops/sampling.rs: rumus.poisson, rumus.binomial and the
//! private `_standard_gamma` / `_standard_gamma_grad` (torch's spellings).

use super::convert::tensor_req;
use super::dtype::generator_arg;
use super::gil::run;
use super::tensor::{wrap, PyTensor};
use crate::ops::sampling;
use pyo3::prelude::*;

fn arg(op: &str, what: &str, pos: usize, v: &Bound<'_, PyAny>) -> PyResult<crate::tensor::Tensor> {
    tensor_req(v, &format!("{op}(): argument '{what}' (position {pos})"))
}

/// Poisson draws, one per element of ``input`` (the rates, >= 0).
///
/// Args:
///   input (Tensor): the rates, a floating-point tensor.
///   generator (Generator, optional): the random generator to draw from.
///
/// Returns:
///   Tensor: the counts, with ``input``'s shape, dtype and device.
#[pyfunction]
#[pyo3(signature = (input, generator=None))]
fn poisson(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let (t, g) = (arg("poisson", "input", 1, input)?, generator_arg(generator)?);
    Ok(wrap(run(py, t.numel(), || sampling::poisson(&t, g.as_ref()))?))
}

/// Binomial draws: successes in ``count`` trials of probability ``prob``, elementwise.
///
/// Args:
///   count (Tensor): whole numbers of trials (>= 0), floating point.
///   prob (Tensor): success probabilities in [0, 1], of ``count``'s shape and dtype.
///   generator (Generator, optional): the random generator to draw from.
///
/// Returns:
///   Tensor: the counts, with ``count``'s shape, dtype and device.
#[pyfunction]
#[pyo3(signature = (count, prob, generator=None))]
fn binomial(
    py: Python<'_>,
    count: &Bound<'_, PyAny>,
    prob: &Bound<'_, PyAny>,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let (n, p) = (arg("binomial", "count", 1, count)?, arg("binomial", "prob", 2, prob)?);
    let g = generator_arg(generator)?;
    Ok(wrap(run(py, n.numel(), || sampling::binomial(&n, &p, g.as_ref()))?))
}

#[pyfunction]
#[pyo3(signature = (input, generator=None))]
fn _standard_gamma(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let (t, g) = (arg("_standard_gamma", "input", 1, input)?, generator_arg(generator)?);
    Ok(wrap(run(py, t.numel(), || sampling::standard_gamma(&t, g.as_ref()))?))
}

#[pyfunction]
fn _standard_gamma_grad(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    output: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let a = arg("_standard_gamma_grad", "input", 1, input)?;
    let x = arg("_standard_gamma_grad", "output", 2, output)?;
    Ok(wrap(run(py, a.numel(), || sampling::standard_gamma_grad(&a, &x))?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(poisson, m)?)?;
    m.add_function(wrap_pyfunction!(binomial, m)?)?;
    m.add_function(wrap_pyfunction!(_standard_gamma, m)?)?;
    m.add_function(wrap_pyfunction!(_standard_gamma_grad, m)?)?;
    Ok(())
}
