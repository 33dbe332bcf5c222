//! Core errors become the Python exceptions PyTorch raises for the same mistake.

use crate::error::Error;
use pyo3::exceptions::{
    PyIndexError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::PyErr;

pyo3::create_exception!(
    rumus.linalg,
    LinAlgError,
    PyRuntimeError,
    "A linear algebra routine failed: the input is singular or not positive-definite, or the algorithm did not converge."
);

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        match e {
            Error::Value(m) => PyValueError::new_err(m),
            Error::Type(m) => PyTypeError::new_err(m),
            Error::Index(m) => PyIndexError::new_err(m),
            Error::Runtime(m) => PyRuntimeError::new_err(m),
            Error::LinAlg(m) => LinAlgError::new_err(m),
            Error::NotImplemented(m) => PyNotImplementedError::new_err(m),
            Error::Foreign(f) => match f.0.downcast_ref::<PyErr>() {
                Some(e) => pyo3::Python::attach(|py| e.clone_ref(py)),
                None => PyRuntimeError::new_err("error raised in user code"),
            },
        }
    }
}

/// A Python exception carried through the core (custom backward functions).
pub fn foreign(e: PyErr) -> Error {
    Error::Foreign(crate::error::Foreign(std::sync::Arc::new(e)))
}
