//! Core errors become the Python exceptions PyTorch raises for the same mistake.

use crate::error::Error;
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::PyErr;

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        match e {
            Error::Value(m) => PyValueError::new_err(m),
            Error::Type(m) => PyTypeError::new_err(m),
            Error::Index(m) => PyIndexError::new_err(m),
            Error::Runtime(m) => PyRuntimeError::new_err(m),
        }
    }
}
