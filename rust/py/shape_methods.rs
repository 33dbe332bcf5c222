//! Tensor methods for shapes, views and indexing, bound straight to the Rust
//! ops (methods.rs has the elementwise and reduction ones).

use super::convert::{dims_arg, int_list, operand_req};
use super::gil::run;
use super::methods::tensors;
use super::tensor::{number, sizes, wrap, PyTensor};
use crate::ops::{index, repeat, shape, split, Operand};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

#[pymethods]
impl PyTensor {
    // ---- shape and views ----
    /// The same elements in a new shape.
    ///
    /// Args:
    ///   *shape (int or Sequence[int]): the shape (one size may be -1).
    ///
    /// Returns:
    ///   Tensor: a view when possible, else a copy.
    #[pyo3(signature = (*shape))]
    fn reshape(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let (s, t) = (sizes(shape)?, &self.t);
        Ok(wrap(run(py, reshape_work(t), || shape::reshape(t, &s))?))
    }
    /// The same memory seen with a new shape (strides must allow it).
    ///
    /// Args:
    ///   *shape (int or Sequence[int]): the shape (one size may be -1).
    ///
    /// Returns:
    ///   Tensor: a view sharing self's memory.
    #[pyo3(signature = (*shape))]
    fn view(&self, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(wrap(shape::view(&self.t, &sizes(shape)?)?))
    }
    /// A view with other's shape.
    ///
    /// Args:
    ///   other (Tensor): the tensor whose shape to take.
    ///
    /// Returns:
    ///   Tensor: a view sharing self's memory.
    fn view_as(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let s: Vec<i64> = other.t.shape().iter().map(|&d| d as i64).collect();
        Ok(wrap(shape::view(&self.t, &s)?))
    }
    /// Reshapes to other's shape.
    ///
    /// Args:
    ///   other (Tensor): the tensor whose shape to take.
    ///
    /// Returns:
    ///   Tensor: a view when possible, else a copy.
    fn reshape_as(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (s, t): (Vec<i64>, _) = (other.t.shape().iter().map(|&d| d as i64).collect(), &self.t);
        Ok(wrap(run(py, reshape_work(t), || shape::reshape(t, &s))?))
    }
    /// Reorders the dimensions.
    ///
    /// Args:
    ///   *dims (int or Sequence[int]): the new order.
    ///
    /// Returns:
    ///   Tensor: a view sharing self's memory.
    #[pyo3(signature = (*dims))]
    fn permute(&self, dims: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(wrap(shape::permute(&self.t, &super::convert::varargs_ints(dims, "dims")?)?))
    }
    /// Swaps two dimensions.
    ///
    /// Args:
    ///   dim0 (int): the first dimension.
    ///   dim1 (int): the second dimension.
    ///
    /// Returns:
    ///   Tensor: a view sharing self's memory.
    fn transpose(&self, dim0: i64, dim1: i64) -> PyResult<PyTensor> {
        Ok(wrap(shape::transpose(&self.t, dim0, dim1)?))
    }
    /// Swaps two dimensions (alias of :meth:`transpose`).
    ///
    /// Args:
    ///   axis0 (int): the first dimension.
    ///   axis1 (int): the second dimension.
    ///
    /// Returns:
    ///   Tensor: a view sharing self's memory.
    fn swapaxes(&self, axis0: i64, axis1: i64) -> PyResult<PyTensor> {
        self.transpose(axis0, axis1)
    }
    /// Transposes a tensor of at most 2 dimensions.
    ///
    /// Returns:
    ///   Tensor: a view sharing self's memory.
    fn t(&self) -> PyResult<PyTensor> {
        Ok(wrap(shape::t2(&self.t)?))
    }
    /// The tensor with its dimensions reversed (deprecated beyond 2-d in PyTorch).
    #[getter(T)]
    fn big_t(&self) -> PyResult<PyTensor> {
        Ok(wrap(shape::reverse_dims(&self.t)?))
    }
    /// The transpose of the last two dimensions (batches of matrices).
    #[getter(mT)]
    fn m_t(&self) -> PyResult<PyTensor> {
        Ok(wrap(shape::matrix_transpose(&self.t)?))
    }
    /// Flattens dimensions ``start_dim`` to ``end_dim`` into one.
    ///
    /// Args:
    ///   start_dim (int): the first dimension.
    ///   end_dim (int): the last dimension.
    ///
    /// Returns:
    ///   Tensor: a view when possible, else a copy.
    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten(&self, py: Python<'_>, start_dim: i64, end_dim: i64) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, reshape_work(t), || shape::flatten(t, start_dim, end_dim))?))
    }
    /// Splits dimension ``dim`` into ``sizes``.
    ///
    /// Args:
    ///   dim (int): the dimension.
    ///   sizes (Sequence[int]): the new sizes (one may be -1).
    ///
    /// Returns:
    ///   Tensor: a view sharing self's memory.
    fn unflatten(&self, py: Python<'_>, dim: i64, sizes: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (s, t) = (int_list(sizes, "sizes")?, &self.t);
        Ok(wrap(run(py, reshape_work(t), || shape::unflatten(t, dim, &s))?))
    }
    /// Inserts a dimension of size 1.
    ///
    /// Args:
    ///   dim (int): its position.
    ///
    /// Returns:
    ///   Tensor: a view sharing self's memory.
    fn unsqueeze(&self, dim: i64) -> PyResult<PyTensor> {
        Ok(wrap(shape::unsqueeze(&self.t, dim)?))
    }
    /// Removes dimensions of size 1.
    ///
    /// Args:
    ///   dim (int or tuple[int], optional): only these; all when None.
    ///
    /// Returns:
    ///   Tensor: a view sharing self's memory.
    #[pyo3(signature = (dim=None))]
    fn squeeze(&self, dim: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        Ok(wrap(shape::squeeze(&self.t, dims_arg(dim)?.as_deref())?))
    }
    /// Repeats size-1 dimensions without copying.
    ///
    /// Args:
    ///   *sizes (int or Sequence[int]): the new shape; -1 keeps a size.
    ///
    /// Returns:
    ///   Tensor: a view sharing self's memory.
    #[pyo3(signature = (*sizes))]
    fn expand(&self, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(wrap(shape::expand(&self.t, &super::tensor::sizes(sizes)?)?))
    }
    /// Expands to other's shape.
    ///
    /// Args:
    ///   other (Tensor): the tensor whose shape to take.
    ///
    /// Returns:
    ///   Tensor: a view sharing self's memory.
    fn expand_as(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let s: Vec<i64> = other.t.shape().iter().map(|&d| d as i64).collect();
        Ok(wrap(shape::expand(&self.t, &s)?))
    }
    /// Broadcasts to a shape, as :meth:`expand`.
    ///
    /// Args:
    ///   *sizes (int or Sequence[int]): the shape; -1 keeps a size.
    ///
    /// Returns:
    ///   Tensor: a view sharing self's memory.
    #[pyo3(signature = (*sizes))]
    fn broadcast_to(&self, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        self.expand(sizes)
    }
    /// The slice ``start : start + length`` along ``dim``.
    ///
    /// Args:
    ///   dim (int): the dimension.
    ///   start (int): the first index.
    ///   length (int): the length.
    ///
    /// Returns:
    ///   Tensor: a view sharing self's memory.
    fn narrow(&self, dim: i64, start: i64, length: i64) -> PyResult<PyTensor> {
        Ok(wrap(shape::narrow(&self.t, dim, start, length)?))
    }
    /// The slice at ``index`` along ``dim``, without that dimension.
    ///
    /// Args:
    ///   dim (int): the dimension.
    ///   index (int): the position.
    ///
    /// Returns:
    ///   Tensor: a view sharing self's memory.
    fn select(&self, dim: i64, index: i64) -> PyResult<PyTensor> {
        Ok(wrap(shape::select(&self.t, dim, index)?))
    }
    /// Removes a dimension, returning its slices.
    ///
    /// Args:
    ///   dim (int): the dimension.
    ///
    /// Returns:
    ///   tuple[Tensor, ...]: views.
    #[pyo3(signature = (dim=0))]
    fn unbind(&self, py: Python<'_>, dim: i64) -> PyResult<Py<PyTuple>> {
        tensors(py, split::unbind(&self.t, dim)?)
    }
    /// Moves dimensions to new positions.
    ///
    /// Args:
    ///   source (int or Sequence[int]): the dimensions to move.
    ///   destination (int or Sequence[int]): their new positions.
    ///
    /// Returns:
    ///   Tensor: a view sharing self's memory.
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
    /// Alias of :meth:`movedim`.
    ///
    /// Args:
    ///   source (int or Sequence[int]): the dimensions to move.
    ///   destination (int or Sequence[int]): their new positions.
    ///
    /// Returns:
    ///   Tensor: a view sharing self's memory.
    fn moveaxis(
        &self,
        source: &Bound<'_, PyAny>,
        destination: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        self.movedim(source, destination)
    }
    /// Splits along ``dim`` into pieces of a size or of the given sizes.
    ///
    /// Args:
    ///   split_size_or_sections (int or list[int]): the size of each piece, or the sizes.
    ///   dim (int): the dimension.
    ///
    /// Returns:
    ///   tuple[Tensor, ...]: views.
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
            split::split_sections(&self.t, &int_list(split_size_or_sections, "split_size")?, dim)?
        } else {
            split::split_size(&self.t, int_list(split_size_or_sections, "split_size")?[0], dim)?
        };
        tensors(py, parts)
    }
    /// Splits into ``chunks`` nearly equal pieces along ``dim``.
    ///
    /// Args:
    ///   chunks (int): the number of pieces.
    ///   dim (int): the dimension.
    ///
    /// Returns:
    ///   tuple[Tensor, ...]: views.
    #[pyo3(signature = (chunks, dim=0))]
    fn chunk(&self, py: Python<'_>, chunks: i64, dim: i64) -> PyResult<Py<PyTuple>> {
        tensors(py, split::chunk(&self.t, chunks, dim)?)
    }
    /// Tiles the tensor: repeats it ``sizes[i]`` times along each dimension.
    ///
    /// Args:
    ///   *sizes (int or Sequence[int]): the repeats (at least self.ndim).
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(signature = (*sizes))]
    fn repeat(&self, py: Python<'_>, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let (s, t) = (super::convert::varargs_ints(sizes, "sizes")?, &self.t);
        let work = t.numel() * s.iter().product::<i64>().max(1) as usize;
        Ok(wrap(run(py, work, || repeat::repeat(t, &s))?))
    }
    /// Repeats the tensor along each dimension (``dims`` padded with leading ones).
    ///
    /// Args:
    ///   *dims (int or Sequence[int]): the repeats.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
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
    /// The diagonal with respect to ``dim1`` and ``dim2``, as a new last dimension.
    ///
    /// Args:
    ///   offset (int): above (>0) or below (<0) the main diagonal.
    ///   dim1 (int): the first dimension.
    ///   dim2 (int): the second dimension.
    ///
    /// Returns:
    ///   Tensor: a view sharing self's memory.
    #[pyo3(signature = (offset=0, dim1=0, dim2=1))]
    fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> PyResult<PyTensor> {
        Ok(wrap(shape::diagonal(&self.t, offset, dim1, dim2)?))
    }
    /// The sum of the main diagonal of a 2-d tensor.
    ///
    /// Returns:
    ///   Tensor: 0-d.
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
    /// Rolls elements along dimensions (those shifted off one end come back at the other).
    ///
    /// Args:
    ///   shifts (int or Sequence[int]): the shifts.
    ///   dims (int or Sequence[int], optional): the dimensions; the flattened tensor when None.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
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
    /// The lower triangle (elements above the ``diagonal``-th diagonal set to 0).
    ///
    /// Args:
    ///   diagonal (int): which diagonal bounds it.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(signature = (diagonal=0))]
    fn tril(&self, py: Python<'_>, diagonal: i64) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || shape::tri(t, diagonal, true))?))
    }
    /// The upper triangle (elements below the ``diagonal``-th diagonal set to 0).
    ///
    /// Args:
    ///   diagonal (int): which diagonal bounds it.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    #[pyo3(signature = (diagonal=0))]
    fn triu(&self, py: Python<'_>, diagonal: i64) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || shape::tri(t, diagonal, false))?))
    }

    // ---- index ops ----
    /// Picks values along ``dim`` at ``index``: ``out[i][j] = self[index[i][j]][j]`` for dim 0.
    ///
    /// Args:
    ///   dim (int): the dimension.
    ///   index (Tensor): int64 indices.
    ///
    /// Returns:
    ///   Tensor: of index's shape.
    fn gather(&self, py: Python<'_>, dim: i64, index: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (t, i) = (&self.t, &index.t);
        Ok(wrap(run(py, i.numel(), || index::gather(t, dim, i))?))
    }
    /// Writes ``src`` (or ``value``) at ``index`` along ``dim``; the out-of-place :meth:`scatter_`.
    ///
    /// Args:
    ///   dim (int): the dimension.
    ///   index (Tensor): int64 indices.
    ///   src (Tensor, optional): the values.
    ///   value (Number, optional): one value instead of ``src``.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
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
    /// Writes ``src`` (or ``value``) into self at ``index`` along ``dim``.
    ///
    /// Args:
    ///   dim (int): the dimension.
    ///   index (Tensor): int64 indices.
    ///   src (Tensor, optional): the values.
    ///   value (Number, optional): one value instead of ``src``.
    ///
    /// Returns:
    ///   Tensor: self.
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
    /// Adds ``src`` at ``index`` along ``dim`` (repeated indices accumulate).
    ///
    /// Args:
    ///   dim (int): the dimension.
    ///   index (Tensor): int64 indices.
    ///   src (Tensor): the source values.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
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
    /// In-place :meth:`scatter_add`.
    ///
    /// Args:
    ///   dim (int): the dimension.
    ///   index (Tensor): int64 indices.
    ///   src (Tensor): the source values.
    ///
    /// Returns:
    ///   Tensor: self.
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
    /// index_add / index_copy (``accumulate``) of the slices of ``source`` at
    /// ``index`` along ``dim``, into a copy or (``inplace``) into self: the
    /// CPU path of rumus/_composite.py, which checks the arguments first.
    fn _index_put_along<'py>(
        slf: Bound<'py, Self>,
        dim: i64,
        index: PyRef<'py, PyTensor>,
        source: PyRef<'py, PyTensor>,
        accumulate: bool,
        inplace: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let (t, i, s) = (&slf.get().t, &index.t, &source.t);
        let n = t.numel().max(s.numel());
        if inplace {
            run(py, n, || index::index_put_along_(t, dim, i, s, accumulate))?;
            return Ok(slf.into_any());
        }
        Ok(Bound::new(py, wrap(run(py, n, || index::index_put_along(t, dim, i, s, accumulate))?))?
            .into_any())
    }
    /// Selects the slices at ``index`` along ``dim``.
    ///
    /// Args:
    ///   dim (int): the dimension.
    ///   index (Tensor): 1-d int indices.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    fn index_select(
        &self,
        py: Python<'_>,
        dim: i64,
        index: PyRef<'_, PyTensor>,
    ) -> PyResult<PyTensor> {
        let (t, i) = (&self.t, &index.t);
        Ok(wrap(run(py, t.numel(), || index::index_select(t, dim, i))?))
    }
    /// The indices of the non-zero elements.
    ///
    /// Args:
    ///   as_tuple (bool): return one 1-d tensor per dimension instead of an ``(n, ndim)`` tensor.
    ///
    /// Returns:
    ///   Tensor or tuple[Tensor, ...]: int64 indices.
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
