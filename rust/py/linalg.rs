//! Bindings of rumus.linalg: `_rumus._linalg_<name>` functions returning
//! tensors or plain tuples; python/rumus/linalg.py gives them PyTorch's
//! signatures and named tuples.

use super::convert::tensor_req;
use super::gil::run;
use super::tensor::{wrap, PyTensor};
use crate::ops::linalg::{decomp, solve};
use pyo3::prelude::*;

type T3 = (PyTensor, PyTensor, PyTensor);

fn t(obj: &Bound<'_, PyAny>) -> PyResult<crate::tensor::Tensor> {
    tensor_req(obj, "A")
}

#[pyfunction]
fn _linalg_det(py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let a = t(a)?;
    Ok(wrap(run(py, a.numel(), || decomp::det(&a))?))
}

#[pyfunction]
fn _linalg_slogdet(py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<(PyTensor, PyTensor)> {
    let a = t(a)?;
    let (s, l) = run(py, a.numel(), || decomp::slogdet(&a))?;
    Ok((wrap(s), wrap(l)))
}

#[pyfunction]
fn _linalg_inv_ex(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    check_errors: bool,
) -> PyResult<(PyTensor, PyTensor)> {
    let a = t(a)?;
    let (x, i) = run(py, a.numel(), || decomp::inv_ex(&a, check_errors))?;
    Ok((wrap(x), wrap(i)))
}

#[pyfunction]
fn _linalg_cholesky_ex(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    upper: bool,
    check_errors: bool,
) -> PyResult<(PyTensor, PyTensor)> {
    let a = t(a)?;
    let (x, i) = run(py, a.numel(), || decomp::cholesky_ex(&a, upper, check_errors))?;
    Ok((wrap(x), wrap(i)))
}

#[pyfunction]
fn _linalg_qr(py: Python<'_>, a: &Bound<'_, PyAny>, mode: &str) -> PyResult<(PyTensor, PyTensor)> {
    let a = t(a)?;
    let (q, r) = run(py, a.numel(), || decomp::qr(&a, mode))?;
    Ok((wrap(q), wrap(r)))
}

#[pyfunction]
fn _linalg_eigh(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    uplo: &str,
    vectors: bool,
) -> PyResult<(PyTensor, Option<PyTensor>)> {
    let a = t(a)?;
    let (w, v) = run(py, a.numel(), || decomp::eigh(&a, uplo, vectors))?;
    Ok((wrap(w), v.map(wrap)))
}

#[pyfunction]
fn _linalg_svd(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    full_matrices: bool,
    vectors: bool,
) -> PyResult<T3> {
    let a = t(a)?;
    let (u, s, v) = run(py, a.numel(), || decomp::svd(&a, full_matrices, vectors))?;
    Ok((wrap(u), wrap(s), wrap(v)))
}

#[pyfunction]
fn _linalg_solve_ex(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    left: bool,
    check_errors: bool,
) -> PyResult<(PyTensor, PyTensor)> {
    let (a, b) = (t(a)?, tensor_req(b, "B")?);
    let (x, i) = run(py, a.numel(), || solve::solve_ex(&a, &b, left, check_errors))?;
    Ok((wrap(x), wrap(i)))
}

#[pyfunction]
fn _linalg_solve_triangular(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    upper: bool,
    left: bool,
    unitriangular: bool,
) -> PyResult<PyTensor> {
    let (a, b) = (t(a)?, tensor_req(b, "B")?);
    Ok(wrap(run(py, a.numel(), || solve::solve_triangular(&a, &b, upper, left, unitriangular))?))
}

#[pyfunction]
fn _linalg_lu_factor_ex(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    pivot: bool,
    check_errors: bool,
) -> PyResult<T3> {
    let a = t(a)?;
    let (f, p, i) = run(py, a.numel(), || solve::lu_factor_ex(&a, pivot, check_errors))?;
    Ok((wrap(f), wrap(p), wrap(i)))
}

#[pyfunction]
fn _linalg_lu_solve(
    py: Python<'_>,
    lu: &Bound<'_, PyAny>,
    pivots: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    left: bool,
    adjoint: bool,
) -> PyResult<PyTensor> {
    let (lu, p, b) = (tensor_req(lu, "LU")?, tensor_req(pivots, "pivots")?, tensor_req(b, "B")?);
    Ok(wrap(run(py, lu.numel(), || solve::lu_solve(&lu, &p, &b, left, adjoint))?))
}

#[pyfunction]
fn _linalg_lu(py: Python<'_>, a: &Bound<'_, PyAny>, pivot: bool) -> PyResult<T3> {
    let a = t(a)?;
    let (p, l, u) = run(py, a.numel(), || solve::lu(&a, pivot))?;
    Ok((wrap(p), wrap(l), wrap(u)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("LinAlgError", m.py().get_type::<super::error::LinAlgError>())?;
    m.add_function(wrap_pyfunction!(_linalg_det, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_slogdet, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_inv_ex, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_cholesky_ex, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_qr, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_eigh, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_svd, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_solve_ex, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_solve_triangular, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_lu_factor_ex, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_lu_solve, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_lu, m)?)?;
    Ok(())
}
