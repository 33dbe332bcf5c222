//! rumus.save / rumus.load's bytes (python/rumus/serialization.py keeps the
//! structure and the metadata): the safetensors file through `crate::io`,
//! without the GIL while gathering tensors and doing file I/O.

use super::gil::run;
use super::tensor::{wrap, PyTensor};
use crate::io::safetensors::{self, Checkpoint};
use crate::io::Failure;
use crate::tensor::Tensor;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A load failure as a Python exception; `place` names the file.
fn load_err(f: Failure, place: &str, path: Option<&Path>) -> PyErr {
    match f {
        Failure::Os(e) => os_error(e, path),
        Failure::Format(m) => PyRuntimeError::new_err(format!("rumus.load: {}: {}", place, m)),
        Failure::Op(e) => e.into(),
    }
}

/// A save failure as a Python exception (one raised by a file object's `write` unchanged).
fn save_err(f: Failure, path: Option<&Path>) -> PyErr {
    match f {
        Failure::Os(e) => match e.downcast::<PyErr>() {
            Ok(raised) => raised,
            Err(e) => os_error(e, path),
        },
        Failure::Format(m) => PyValueError::new_err(format!("rumus.save: {}", m)),
        Failure::Op(e) => e.into(),
    }
}

/// OSError(errno, strerror, filename): Python picks the subclass (FileNotFoundError, ...).
fn os_error(e: std::io::Error, path: Option<&Path>) -> PyErr {
    match (e.raw_os_error(), path) {
        (Some(code), Some(p)) => {
            let text = e.to_string();
            let text = text.split(" (os error").next().unwrap_or(&text).to_string();
            PyOSError::new_err((code, text, p.as_os_str().to_os_string()))
        }
        _ => PyOSError::new_err(e.to_string()),
    }
}

/// ({name: tensor} in header order, {key: value} of the metadata).
type Loaded<'py> = (Bound<'py, PyDict>, Bound<'py, PyDict>);

fn loaded(py: Python<'_>, c: Checkpoint) -> PyResult<Loaded<'_>> {
    let tensors = PyDict::new(py);
    for (name, t) in c.tensors {
        tensors.set_item(name, wrap(t))?;
    }
    let metadata = PyDict::new(py);
    for (k, v) in c.metadata {
        metadata.set_item(k, v)?;
    }
    Ok((tensors, metadata))
}

/// The tensors and metadata of the file at `path`; `place` names the file in error messages.
#[pyfunction]
fn _load_file<'py>(
    py: Python<'py>,
    path: PathBuf,
    mmap: bool,
    place: &str,
) -> PyResult<Loaded<'py>> {
    let size = std::fs::metadata(&path).map(|m| m.len() as usize).unwrap_or(0);
    let c = run(py, size, || safetensors::load_file(&path, mmap))
        .map_err(|e| load_err(e, place, Some(&path)))?;
    loaded(py, c)
}

/// Like `_load_file`, from the bytes of a whole file.
#[pyfunction]
fn _load_bytes<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
    place: &str,
) -> PyResult<Loaded<'py>> {
    let bytes = data.as_bytes();
    let c = run(py, bytes.len(), || safetensors::load_bytes(bytes))
        .map_err(|e| load_err(e, place, None))?;
    loaded(py, c)
}

fn tensors_of(tensors: Vec<(String, PyRef<'_, PyTensor>)>) -> Vec<(String, Tensor)> {
    tensors.into_iter().map(|(n, t)| (n, t.t.clone())).collect()
}

fn nbytes(tensors: &[(String, Tensor)]) -> usize {
    tensors.iter().map(|(_, t)| t.numel() * t.dtype().size()).sum()
}

/// Saves the named tensors and the metadata to `path`, atomically.
#[pyfunction]
fn _save_file(
    py: Python<'_>,
    tensors: Vec<(String, PyRef<'_, PyTensor>)>,
    metadata: Option<HashMap<String, String>>,
    path: PathBuf,
) -> PyResult<()> {
    let tensors = tensors_of(tensors);
    run(py, nbytes(&tensors), || safetensors::prepare(&tensors, metadata)?.save(&path))
        .map_err(|e| save_err(e, Some(&path)))
}

/// Saves to a writable binary Python file object.
#[pyfunction]
fn _save_stream(
    py: Python<'_>,
    tensors: Vec<(String, PyRef<'_, PyTensor>)>,
    metadata: Option<HashMap<String, String>>,
    file: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let tensors = tensors_of(tensors);
    let prepared = run(py, nbytes(&tensors), || safetensors::prepare(&tensors, metadata))
        .map_err(|e| save_err(e, None))?;
    prepared.write_to(&mut PyWriter(file)).map_err(|e| save_err(Failure::Os(e), None))
}

/// `std::io::Write` over a Python file object; a Python exception raised by
/// its `write` travels inside the io::Error and comes out unchanged.
struct PyWriter<'a, 'py>(&'a Bound<'py, PyAny>);

impl std::io::Write for PyWriter<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // Bounded pieces: each becomes a bytes object (a copy).
        let piece = &buf[..buf.len().min(1 << 24)];
        let py = self.0.py();
        let written = self
            .0
            .call_method1("write", (PyBytes::new(py, piece),))
            .map_err(std::io::Error::other)?;
        // Raw (unbuffered) files may take less than they were given.
        if written.is_none() {
            return Ok(piece.len());
        }
        written.extract::<usize>().map_err(std::io::Error::other)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_load_file, m)?)?;
    m.add_function(wrap_pyfunction!(_load_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(_save_file, m)?)?;
    m.add_function(wrap_pyfunction!(_save_stream, m)?)?;
    Ok(())
}
