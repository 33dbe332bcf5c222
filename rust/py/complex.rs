//! Bindings of the complex ops (rumus.view_as_real, rumus.complex, ...,
//! Tensor.real/imag/conj/angle) and the private transforms behind rumus.fft.

use super::convert::tensor_req;
use super::gil::run;
use super::tensor::{wrap, PyTensor};
use crate::ops::complex as cx;
use crate::ops::fft::{transform, Kind};
use crate::tensor::{DType, Tensor};
use pyo3::prelude::*;
use pyo3::types::PyComplex;

fn t(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    tensor_req(obj, "input")
}

fn go(
    py: Python<'_>,
    x: &Tensor,
    f: impl FnOnce() -> crate::error::Result<Tensor> + Send,
) -> PyResult<PyTensor> {
    Ok(wrap(run(py, x.numel(), f)?))
}

/// A view of a complex tensor as real, with a trailing dimension of size 2 (real, imaginary).
///
/// Args:
///   input (Tensor): a complex tensor.
///
/// Returns:
///   Tensor: a float view sharing the memory of ``input``.
#[pyfunction]
fn view_as_real(py: Python<'_>, input: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let x = t(input)?;
    go(py, &x, || cx::view_as_real(&x))
}

/// A view of a real tensor whose last dimension has size 2 as complex.
///
/// Args:
///   input (Tensor): a float32/float64 tensor with a last dimension of size 2 and stride 1.
///
/// Returns:
///   Tensor: a complex view sharing the memory of ``input``.
#[pyfunction]
fn view_as_complex(py: Python<'_>, input: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let x = t(input)?;
    go(py, &x, || cx::view_as_complex(&x))
}

/// A complex tensor from its real and imaginary parts.
///
/// Args:
///   real (Tensor): the real parts (float32 or float64).
///   imag (Tensor): the imaginary parts, same dtype; the two broadcast.
///
/// Returns:
///   Tensor: complex64 for float32 parts, complex128 for float64.
#[pyfunction]
fn complex(py: Python<'_>, real: &Bound<'_, PyAny>, imag: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let (a, b) = (tensor_req(real, "real")?, tensor_req(imag, "imag")?);
    go(py, &a, || cx::from_parts(&a, &b, false))
}

/// A complex tensor from absolute values and angles: ``abs * (cos(angle) + i sin(angle))``.
///
/// Args:
///   abs (Tensor): the absolute values (float32 or float64).
///   angle (Tensor): the angles in radians, same dtype; the two broadcast.
///
/// Returns:
///   Tensor: the complex tensor.
#[pyfunction]
fn polar(py: Python<'_>, abs: &Bound<'_, PyAny>, angle: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let (a, b) = (tensor_req(abs, "abs")?, tensor_req(angle, "angle")?);
    go(py, &a, || cx::from_parts(&a, &b, true))
}

/// One transform of rumus.fft along ``dim`` (see rust/ops/fft.rs).
#[pyfunction]
fn _fft_transform(
    py: Python<'_>,
    kind: &str,
    input: &Bound<'_, PyAny>,
    dim: i64,
    n: usize,
    out_len: usize,
    scale: f64,
) -> PyResult<PyTensor> {
    let x = t(input)?;
    let kind = match kind {
        "c2c" => Kind::C2C { forward: true },
        "c2c_inv" => Kind::C2C { forward: false },
        "r2c" => Kind::R2C,
        _ => Kind::C2R,
    };
    go(py, &x, || transform(kind, &x, dim, n, out_len, scale))
}

#[pymethods]
impl PyTensor {
    /// The real parts: a view for complex tensors, self for real ones.
    ///
    /// Returns:
    ///   Tensor: the real parts.
    #[getter]
    fn real(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let x = &self.t;
        go(py, x, || cx::real(x))
    }
    /// The imaginary parts of a complex tensor, as a view.
    ///
    /// Returns:
    ///   Tensor: the imaginary parts.
    #[getter]
    fn imag(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let x = &self.t;
        go(py, x, || cx::imag(x))
    }
    /// The complex conjugate (self for real tensors).
    ///
    /// Returns:
    ///   Tensor: the conjugate.
    fn conj(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let x = &self.t;
        go(py, x, || cx::conj(x))
    }
    /// The complex conjugate, always materialized (self for real tensors).
    ///
    /// Returns:
    ///   Tensor: the conjugate.
    fn conj_physical(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.conj(py)
    }
    /// Self: rumus materializes conjugates eagerly, so there is no conjugate bit to resolve.
    ///
    /// Returns:
    ///   Tensor: self.
    fn resolve_conj(&self) -> PyTensor {
        wrap(self.t.clone())
    }
    /// Always False: rumus has no lazy conjugate views.
    ///
    /// Returns:
    ///   bool: False.
    fn is_conj(&self) -> bool {
        false
    }
    /// The element-wise angle (argument) in radians; for real tensors pi where negative, else 0.
    ///
    /// Returns:
    ///   Tensor: a real tensor.
    fn angle(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let x = &self.t;
        go(py, x, || cx::angle(x))
    }
    /// The sign of complex numbers, ``z / abs(z)`` (0 at 0); sign() for real tensors.
    ///
    /// Returns:
    ///   Tensor: the signs.
    fn sgn(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let x = &self.t;
        go(py, x, || cx::sgn(x))
    }
    /// Whether the dtype is complex64 or complex128.
    ///
    /// Returns:
    ///   bool: the answer.
    fn is_complex(&self) -> bool {
        self.t.dtype().is_complex()
    }
    /// Converts to complex64.
    ///
    /// Returns:
    ///   Tensor: self if already complex64, else a copy.
    fn cfloat(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let x = &self.t;
        go(py, x, || crate::ops::copy::to_dtype(x, DType::C64))
    }
    /// Converts to complex128.
    ///
    /// Returns:
    ///   Tensor: self if already complex128, else a copy.
    fn cdouble(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let x = &self.t;
        go(py, x, || crate::ops::copy::to_dtype(x, DType::C128))
    }
    pub(super) fn __complex__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyComplex>> {
        let x = &self.t;
        if x.numel() != 1 {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                "a Tensor with {} elements cannot be converted to Scalar",
                x.numel()
            )));
        }
        let (re, im) = if x.dtype().is_complex() {
            run(py, 0, || cx::item(x))?
        } else {
            (crate::ops::copy::item(x)?.to_f64(), 0.0)
        };
        Ok(PyComplex::from_doubles(py, re, im))
    }
}

/// Python complex numbers for `tolist()` / `item()` of complex tensors.
pub fn complex_values(x: &Tensor) -> crate::error::Result<Vec<(f64, f64)>> {
    let c = crate::ops::copy::clone_as(x, DType::C128)?;
    let r = cx::raw_real(&c)?.to_vec::<f64>()?;
    Ok(r.chunks_exact(2).map(|p| (p[0], p[1])).collect())
}

/// linalg.eig / linalg.eigvals (python/rumus/linalg.py wraps it).
#[pyfunction]
fn _linalg_eig(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    vectors: bool,
) -> PyResult<(PyTensor, Option<PyTensor>)> {
    let a = tensor_req(a, "A")?;
    let (w, v) = run(py, a.numel(), || crate::ops::linalg::eig::eig(&a, vectors))?;
    Ok((wrap(w), v.map(wrap)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_linalg_eig, m)?)?;
    m.add_function(wrap_pyfunction!(view_as_real, m)?)?;
    m.add_function(wrap_pyfunction!(view_as_complex, m)?)?;
    m.add_function(wrap_pyfunction!(complex, m)?)?;
    m.add_function(wrap_pyfunction!(polar, m)?)?;
    m.add_function(wrap_pyfunction!(_fft_transform, m)?)?;
    Ok(())
}
