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
