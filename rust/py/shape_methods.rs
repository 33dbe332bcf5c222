//! Tensor methods for shapes, views and indexing, bound straight to the Rust
//! ops (methods.rs has the elementwise and reduction ones).

use super::convert::{dims_arg, int_list, operand_req};
use super::gil::run;
use super::methods::tensors;
use super::tensor::{number, sizes, wrap, PyTensor};
use crate::ops::{index, repeat, shape, Operand};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

#[pymethods]
impl PyTensor {
    // ---- shape and views ----
    #[pyo3(signature = (*shape))]
    fn reshape(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let (s, t) = (sizes(shape)?, &self.t);
        Ok(wrap(run(py, reshape_work(t), || shape::reshape(t, &s))?))
    }
    #[pyo3(signature = (*shape))]
    fn view(&self, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(wrap(shape::view(&self.t, &sizes(shape)?)?))
    }
    fn view_as(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let s: Vec<i64> = other.t.shape().iter().map(|&d| d as i64).collect();
        Ok(wrap(shape::view(&self.t, &s)?))
    }
    fn reshape_as(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (s, t): (Vec<i64>, _) = (other.t.shape().iter().map(|&d| d as i64).collect(), &self.t);
        Ok(wrap(run(py, reshape_work(t), || shape::reshape(t, &s))?))
    }
    #[pyo3(signature = (*dims))]
    fn permute(&self, dims: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(wrap(shape::permute(&self.t, &super::convert::varargs_ints(dims, "dims")?)?))
    }
    fn transpose(&self, dim0: i64, dim1: i64) -> PyResult<PyTensor> {
        Ok(wrap(shape::transpose(&self.t, dim0, dim1)?))
    }
    fn swapaxes(&self, axis0: i64, axis1: i64) -> PyResult<PyTensor> {
        self.transpose(axis0, axis1)
    }
    fn t(&self) -> PyResult<PyTensor> {
        Ok(wrap(shape::t2(&self.t)?))
    }
    #[getter(T)]
    fn big_t(&self) -> PyResult<PyTensor> {
        Ok(wrap(shape::reverse_dims(&self.t)?))
    }
    #[getter(mT)]
    fn m_t(&self) -> PyResult<PyTensor> {
        Ok(wrap(shape::matrix_transpose(&self.t)?))
    }
    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten(&self, py: Python<'_>, start_dim: i64, end_dim: i64) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, reshape_work(t), || shape::flatten(t, start_dim, end_dim))?))
    }
    fn unflatten(&self, py: Python<'_>, dim: i64, sizes: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (s, t) = (int_list(sizes, "sizes")?, &self.t);
        Ok(wrap(run(py, reshape_work(t), || shape::unflatten(t, dim, &s))?))
    }
    fn unsqueeze(&self, dim: i64) -> PyResult<PyTensor> {
        Ok(wrap(shape::unsqueeze(&self.t, dim)?))
    }
    #[pyo3(signature = (dim=None))]
    fn squeeze(&self, dim: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        Ok(wrap(shape::squeeze(&self.t, dims_arg(dim)?.as_deref())?))
    }
    #[pyo3(signature = (*sizes))]
    fn expand(&self, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(wrap(shape::expand(&self.t, &super::tensor::sizes(sizes)?)?))
    }
    fn expand_as(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let s: Vec<i64> = other.t.shape().iter().map(|&d| d as i64).collect();
        Ok(wrap(shape::expand(&self.t, &s)?))
    }
    #[pyo3(signature = (*sizes))]
    fn broadcast_to(&self, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        self.expand(sizes)
    }
    fn narrow(&self, dim: i64, start: i64, length: i64) -> PyResult<PyTensor> {
        Ok(wrap(shape::narrow(&self.t, dim, start, length)?))
    }
    fn select(&self, dim: i64, index: i64) -> PyResult<PyTensor> {
        Ok(wrap(shape::select(&self.t, dim, index)?))
    }
    #[pyo3(signature = (dim=0))]
    fn unbind(&self, py: Python<'_>, dim: i64) -> PyResult<Py<PyTuple>> {
        tensors(py, shape::unbind(&self.t, dim)?)
    }
    fn movedim(
        &self,
        source: &Bound<'_, PyAny>,
        destination: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        Ok(wrap(shape::movedim(
            &self.t,
            &int_list(source, "source")?,
            &int_list(destination, "destination")?,
        )?))
    }
    fn moveaxis(
        &self,
        source: &Bound<'_, PyAny>,
        destination: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        self.movedim(source, destination)
    }
    #[pyo3(signature = (split_size_or_sections, dim=0))]
    fn split(
        &self,
        py: Python<'_>,
        split_size_or_sections: &Bound<'_, PyAny>,
        dim: i64,
    ) -> PyResult<Py<PyTuple>> {
        let parts = if split_size_or_sections.is_instance_of::<PyList>()
            || split_size_or_sections.is_instance_of::<PyTuple>()
        {
            shape::split_sections(&self.t, &int_list(split_size_or_sections, "split_size")?, dim)?
        } else {
            shape::split_size(&self.t, int_list(split_size_or_sections, "split_size")?[0], dim)?
        };
        tensors(py, parts)
    }
    #[pyo3(signature = (chunks, dim=0))]
    fn chunk(&self, py: Python<'_>, chunks: i64, dim: i64) -> PyResult<Py<PyTuple>> {
        tensors(py, shape::chunk(&self.t, chunks, dim)?)
    }
    #[pyo3(signature = (*sizes))]
    fn repeat(&self, py: Python<'_>, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let (s, t) = (super::convert::varargs_ints(sizes, "sizes")?, &self.t);
        let work = t.numel() * s.iter().product::<i64>().max(1) as usize;
        Ok(wrap(run(py, work, || repeat::repeat(t, &s))?))
    }
    #[pyo3(signature = (*dims))]
    fn tile(&self, py: Python<'_>, dims: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let (d, t) = (super::convert::varargs_ints(dims, "dims")?, &self.t);
        let work = t.numel() * d.iter().product::<i64>().max(1) as usize;
        Ok(wrap(run(py, work, || repeat::tile(t, &d))?))
    }
    /// x.repeat_interleave(repeats, dim=None, *, output_size=None); without
    /// repeats (rumus.repeat_interleave(r)), x holds the repeat counts.
    #[pyo3(signature = (repeats=None, dim=None, *, output_size=None))]
    fn repeat_interleave(
        &self,
        py: Python<'_>,
        repeats: Option<&Bound<'_, PyAny>>,
        dim: Option<i64>,
        output_size: Option<i64>,
    ) -> PyResult<PyTensor> {
        let t = &self.t;
        let out = match repeats {
            None => run(py, t.numel(), || repeat::repeat_indices(t, output_size))?,
            Some(r) => match r.cast::<PyTensor>() {
                Ok(r) => {
                    let r = r.get().t.clone();
                    let reps = repeat::Repeats::Tensor(&r);
                    run(py, t.numel(), || repeat::repeat_interleave(t, reps, dim, output_size))?
                }
                Err(_) => {
                    let reps = repeat::Repeats::Int(r.extract::<i64>().map_err(|_| {
                        PyTypeError::new_err(format!(
                            "repeat_interleave(): argument 'repeats' must be an int or a Tensor, not {}",
                            r.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                        ))
                    })?);
                    run(py, t.numel(), || repeat::repeat_interleave(t, reps, dim, output_size))?
                }
            },
        };
        Ok(wrap(out))
    }
    #[pyo3(signature = (offset=0, dim1=0, dim2=1))]
    fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> PyResult<PyTensor> {
        Ok(wrap(shape::diagonal(&self.t, offset, dim1, dim2)?))
    }
    fn trace(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || shape::trace(t))?))
    }
    /// flip(dims) with a list, flip(*dims) (the method) or flip(dims=...), as in PyTorch.
    #[pyo3(signature = (*args, dims=None))]
    fn flip(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        dims: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let d = match dims {
            Some(_) if !args.is_empty() => {
                return Err(PyTypeError::new_err("flip() got multiple values for argument 'dims'"))
            }
            Some(d) => int_list(d, "dims")?,
            None if args.is_empty() => {
                return Err(PyTypeError::new_err("flip() missing 1 required argument: 'dims'"))
            }
            None => super::convert::varargs_ints(args, "dims")?,
        };
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || shape::flip(t, &d))?))
    }
    #[pyo3(signature = (shifts, dims=None))]
    fn roll(
        &self,
        py: Python<'_>,
        shifts: &Bound<'_, PyAny>,
        dims: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (d, s, t) = (dims_arg(dims)?.unwrap_or_default(), int_list(shifts, "shifts")?, &self.t);
        Ok(wrap(run(py, t.numel(), || shape::roll(t, &s, &d))?))
    }
    #[pyo3(signature = (diagonal=0))]
    fn tril(&self, py: Python<'_>, diagonal: i64) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || shape::tri(t, diagonal, true))?))
    }
    #[pyo3(signature = (diagonal=0))]
    fn triu(&self, py: Python<'_>, diagonal: i64) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || shape::tri(t, diagonal, false))?))
    }

    // ---- index ops ----
    fn gather(&self, py: Python<'_>, dim: i64, index: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (t, i) = (&self.t, &index.t);
        Ok(wrap(run(py, i.numel(), || index::gather(t, dim, i))?))
    }
    #[pyo3(signature = (dim, index, src=None, *, value=None))]
    fn scatter(
        &self,
        py: Python<'_>,
        dim: i64,
        index: PyRef<'_, PyTensor>,
        src: Option<&Bound<'_, PyAny>>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (t, i, s) = (&self.t, &index.t, scatter_src(src, value)?);
        Ok(wrap(run(py, t.numel(), || index::scatter(t, dim, i, &s, false))?))
    }
    #[pyo3(signature = (dim, index, src=None, *, value=None))]
    fn scatter_<'py>(
        slf: Bound<'py, Self>,
        dim: i64,
        index: PyRef<'py, PyTensor>,
        src: Option<&Bound<'py, PyAny>>,
        value: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let (t, i, s) = (&slf.get().t, &index.t, scatter_src(src, value)?);
        run(slf.py(), i.numel(), || index::scatter_into(t, dim, i, &s, false))?;
        Ok(slf)
    }
    fn scatter_add(
        &self,
        py: Python<'_>,
        dim: i64,
        index: PyRef<'_, PyTensor>,
        src: PyRef<'_, PyTensor>,
    ) -> PyResult<PyTensor> {
        let (t, i, s) = (&self.t, &index.t, Operand::T(src.t.clone()));
        Ok(wrap(run(py, t.numel(), || index::scatter(t, dim, i, &s, true))?))
    }
    fn scatter_add_<'py>(
        slf: Bound<'py, Self>,
        dim: i64,
        index: PyRef<'py, PyTensor>,
        src: PyRef<'py, PyTensor>,
    ) -> PyResult<Bound<'py, Self>> {
        let (t, i, s) = (&slf.get().t, &index.t, Operand::T(src.t.clone()));
        run(slf.py(), i.numel(), || index::scatter_into(t, dim, i, &s, true))?;
        Ok(slf)
    }
    fn index_select(
        &self,
        py: Python<'_>,
        dim: i64,
        index: PyRef<'_, PyTensor>,
    ) -> PyResult<PyTensor> {
        let (t, i) = (&self.t, &index.t);
        Ok(wrap(run(py, t.numel(), || index::index_select(t, dim, i))?))
    }
    #[pyo3(signature = (*, as_tuple=false))]
    fn nonzero(&self, py: Python<'_>, as_tuple: bool) -> PyResult<Py<PyAny>> {
        let t = &self.t;
        if as_tuple {
            let cols = run(py, t.numel(), || nonzero_columns(t))?;
            return Ok(PyTuple::new(py, cols.into_iter().map(wrap))?.into_any().unbind());
        }
        Ok(Bound::new(py, wrap(run(py, t.numel(), || index::nonzero(t))?))?.into_any().unbind())
    }
}

/// nonzero(as_tuple=True): one index tensor per dim (one for a 0-d tensor).
fn nonzero_columns(t: &crate::tensor::Tensor) -> crate::error::Result<Vec<crate::tensor::Tensor>> {
    let nz = index::nonzero(t)?;
    if t.ndim() == 0 {
        return Ok(vec![shape::reshape(&nz, &[-1])?]);
    }
    (0..t.ndim() as i64).map(|k| crate::ops::copy::contiguous(&shape::select(&nz, 1, k)?)).collect()
}

/// Elements a reshape copies, at most: none when `t` is contiguous (always a view).
fn reshape_work(t: &crate::tensor::Tensor) -> usize {
    if t.is_contiguous() {
        0
    } else {
        t.numel()
    }
}

fn scatter_src(
    src: Option<&Bound<'_, PyAny>>,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<Operand> {
    match (src.filter(|s| !s.is_none()), value.filter(|v| !v.is_none())) {
        (Some(s), None) => operand_req(s, "scatter"),
        (None, Some(v)) => Ok(Operand::S(number(v)?)),
        _ => Err(PyTypeError::new_err("scatter() expects exactly one of 'src' or 'value'")),
    }
}
