//! Bindings of the sorting family (rust/ops/sort/): Tensor methods, also
//! `rumus.<name>` functions (python/rumus/__init__.py), and the functions
//! searchsorted and bucketize.

use super::convert::{operand_req, tensor_req};
use super::gil::run;
use super::methods::one_dim;
use super::tensor::{wrap, PyTensor};
use crate::ops::sort::{self, bins, unique};
use crate::tensor::Tensor;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};

static VALUES_INDICES: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static HISTOGRAM: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// A torch.return_types-style named tuple from rumus._size.
fn named(
    py: Python<'_>,
    cell: &'static PyOnceLock<Py<PyType>>,
    name: &str,
    pair: (Tensor, Tensor),
) -> PyResult<Py<PyAny>> {
    let ty = cell.import(py, "rumus._size", name)?;
    Ok(ty.call1((wrap(pair.0), wrap(pair.1)))?.unbind())
}

fn pair(py: Python<'_>, r: (Tensor, Tensor)) -> PyResult<Py<PyAny>> {
    named(py, &VALUES_INDICES, "ValuesIndices", r)
}

fn tensor_obj(py: Python<'_>, t: Tensor) -> PyResult<Py<PyAny>> {
    Ok(Bound::new(py, wrap(t))?.into_any().unbind())
}

fn opt_dim(dim: Option<&Bound<'_, PyAny>>) -> PyResult<Option<i64>> {
    dim.filter(|d| !d.is_none()).map(one_dim).transpose()
}

/// unique's result: the values alone, or a tuple with the asked-for extras.
fn unique_result(
    py: Python<'_>,
    r: (Tensor, Tensor, Tensor),
    inverse: bool,
    counts: bool,
) -> PyResult<Py<PyAny>> {
    if !inverse && !counts {
        return tensor_obj(py, r.0);
    }
    let mut items = vec![wrap(r.0)];
    if inverse {
        items.push(wrap(r.1));
    }
    if counts {
        items.push(wrap(r.2));
    }
    Ok(PyTuple::new(py, items)?.into_any().unbind())
}

#[pymethods]
impl PyTensor {
    /// Sorts along ``dim``.
    ///
    /// Args:
    ///   dim (int): the dimension (the last by default).
    ///   descending (bool): sort from largest to smallest.
    ///   stable (bool): keep the order of equal elements.
    ///
    /// Returns:
    ///   tuple[Tensor, Tensor]: ``(values, indices)``.
    #[pyo3(signature = (dim=-1, descending=false, stable=false))]
    fn sort(
        &self,
        py: Python<'_>,
        dim: i64,
        descending: bool,
        stable: bool,
    ) -> PyResult<Py<PyAny>> {
        let _ = stable; // every sort is stable
        let (d, t) = (dim, &self.t);
        pair(py, run(py, t.numel(), || sort::sort(t, d, descending))?)
    }
    /// The indices that sort self along ``dim``.
    ///
    /// Args:
    ///   dim (int): the dimension (the last by default).
    ///   descending (bool): sort from largest to smallest.
    ///   stable (bool): keep the order of equal elements.
    ///
    /// Returns:
    ///   Tensor: int64 indices.
    #[pyo3(signature = (dim=-1, descending=false, stable=false))]
    fn argsort(
        &self,
        py: Python<'_>,
        dim: i64,
        descending: bool,
        stable: bool,
    ) -> PyResult<PyTensor> {
        let _ = stable;
        let (d, t) = (dim, &self.t);
        Ok(wrap(run(py, t.numel(), || sort::argsort(t, d, descending))?))
    }
    /// Sorts along the first dimension.
    ///
    /// Returns:
    ///   Tensor: the sorted values.
    fn msort(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || sort::msort(t))?))
    }
    /// The ``k`` largest (or smallest) elements along ``dim``.
    ///
    /// Args:
    ///   k (int): how many.
    ///   dim (int): the dimension (the last by default).
    ///   largest (bool): the largest (True) or the smallest.
    ///   sorted (bool): return them sorted.
    ///
    /// Returns:
    ///   tuple[Tensor, Tensor]: ``(values, indices)``.
    #[pyo3(signature = (k, dim=-1, largest=true, sorted=true))]
    fn topk(
        &self,
        py: Python<'_>,
        k: i64,
        dim: i64,
        largest: bool,
        sorted: bool,
    ) -> PyResult<Py<PyAny>> {
        let _ = sorted; // always sorted
        let (d, t) = (dim, &self.t);
        pair(py, run(py, t.numel(), || sort::topk(t, k, d, largest))?)
    }
    /// The ``k``-th smallest element along ``dim``.
    ///
    /// Args:
    ///   k (int): 1-based rank.
    ///   dim (int): the dimension (the last by default).
    ///   keepdim (bool): keep the reduced dimensions with size 1.
    ///
    /// Returns:
    ///   tuple[Tensor, Tensor]: ``(values, indices)``.
    #[pyo3(signature = (k, dim=-1, keepdim=false))]
    fn kthvalue(&self, py: Python<'_>, k: i64, dim: i64, keepdim: bool) -> PyResult<Py<PyAny>> {
        let (d, t) = (dim, &self.t);
        pair(py, run(py, t.numel(), || sort::kthvalue(t, k, d, keepdim))?)
    }
    /// median() -> value; median(dim, keepdim) -> (values, indices).
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn median(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        self.median_impl(py, dim, keepdim, false)
    }
    /// The median ignoring NaNs (the lower of the two middle values).
    ///
    /// Args:
    ///   dim (int, optional): the dimension; all elements when None.
    ///   keepdim (bool): keep the reduced dimensions with size 1.
    ///
    /// Returns:
    ///   Tensor or tuple[Tensor, Tensor]: the median, or ``(values, indices)`` along ``dim``.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn nanmedian(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        self.median_impl(py, dim, keepdim, true)
    }
    /// The most frequent value along ``dim`` (the smallest among ties).
    ///
    /// Args:
    ///   dim (int): the dimension (the last by default).
    ///   keepdim (bool): keep the reduced dimensions with size 1.
    ///
    /// Returns:
    ///   tuple[Tensor, Tensor]: ``(values, indices)``.
    #[pyo3(signature = (dim=-1, keepdim=false))]
    fn mode(&self, py: Python<'_>, dim: i64, keepdim: bool) -> PyResult<Py<PyAny>> {
        let (d, t) = (dim, &self.t);
        pair(py, run(py, t.numel(), || sort::mode(t, d, keepdim))?)
    }
    /// The unique elements (or slices along ``dim``).
    ///
    /// Args:
    ///   sorted (bool): return them sorted (they always are).
    ///   return_inverse (bool): also return where each element went.
    ///   return_counts (bool): also return how often each occurs.
    ///   dim (int, optional): unique slices along this dimension.
    ///
    /// Returns:
    ///   Tensor or tuple: the unique values, then the inverse indices and counts if asked.
    #[pyo3(signature = (sorted=true, return_inverse=false, return_counts=false, dim=None))]
    fn unique(
        &self,
        py: Python<'_>,
        sorted: bool,
        return_inverse: bool,
        return_counts: bool,
        dim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = sorted; // always sorted (an order PyTorch allows for sorted=False)
        let (d, t) = (opt_dim(dim)?, &self.t);
        let r = run(py, t.numel(), || unique::unique(t, false, d))?;
        unique_result(py, r, return_inverse, return_counts)
    }
    /// Removes consecutive duplicates (or duplicate consecutive slices along ``dim``).
    ///
    /// Args:
    ///   return_inverse (bool): also return where each element went.
    ///   return_counts (bool): also return the run lengths.
    ///   dim (int, optional): compare slices along this dimension.
    ///
    /// Returns:
    ///   Tensor or tuple: the values, then the inverse indices and counts if asked.
    #[pyo3(signature = (return_inverse=false, return_counts=false, dim=None))]
    fn unique_consecutive(
        &self,
        py: Python<'_>,
        return_inverse: bool,
        return_counts: bool,
        dim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let (d, t) = (opt_dim(dim)?, &self.t);
        let r = run(py, t.numel(), || unique::unique(t, true, d))?;
        unique_result(py, r, return_inverse, return_counts)
    }
    /// Counts the occurrences of each value of a 1-d non-negative int tensor.
    ///
    /// Args:
    ///   weights (Tensor, optional): add these instead of ones.
    ///   minlength (int): the smallest length of the result.
    ///
    /// Returns:
    ///   Tensor: of length ``max(self) + 1`` or ``minlength``.
    #[pyo3(signature = (weights=None, minlength=0))]
    fn bincount(
        &self,
        py: Python<'_>,
        weights: Option<&Bound<'_, PyAny>>,
        minlength: i64,
    ) -> PyResult<PyTensor> {
        let w = weights.filter(|w| !w.is_none()).map(|w| tensor_req(w, "weights")).transpose()?;
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || bins::bincount(t, w.as_ref(), minlength))?))
    }
    /// A histogram with ``bins`` equal bins between ``min`` and ``max``.
    ///
    /// Args:
    ///   bins (int): the number of bins.
    ///   min (float): the lower edge (with max=min=0: the data's minimum).
    ///   max (float): the upper edge.
    ///
    /// Returns:
    ///   Tensor: the counts.
    #[pyo3(signature = (bins=100, min=0.0, max=0.0))]
    fn histc(&self, py: Python<'_>, bins: i64, min: f64, max: f64) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || bins::histc(t, bins, min, max))?))
    }
    /// A histogram of the values, with its bin edges.
    ///
    /// Args:
    ///   bins (int or Tensor): the number of equal bins, or the bin edges.
    ///   range (tuple[float, float], optional): the lower and upper edges.
    ///   weight (Tensor, optional): a weight per element.
    ///   density (bool): normalize to a probability density.
    ///
    /// Returns:
    ///   tuple[Tensor, Tensor]: ``(hist, bin_edges)``.
    #[pyo3(signature = (bins, *, range=None, weight=None, density=false))]
    fn histogram(
        &self,
        py: Python<'_>,
        bins: &Bound<'_, PyAny>,
        range: Option<(f64, f64)>,
        weight: Option<&Bound<'_, PyAny>>,
        density: bool,
    ) -> PyResult<Py<PyAny>> {
        let b = match bins.cast::<PyTensor>() {
            Ok(e) => bins::Bins::Edges(e.get().t.clone()),
            Err(_) => bins::Bins::Count(bins.extract::<i64>().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(
                    "histogram(): bins must be an int or a 1-d Tensor of bin edges",
                )
            })?),
        };
        let w = weight.filter(|w| !w.is_none()).map(|w| tensor_req(w, "weight")).transpose()?;
        let t = &self.t;
        let r = run(py, t.numel(), || bins::histogram(t, &b, range, w.as_ref(), density))?;
        named(py, &HISTOGRAM, "Histogram", r)
    }
}

impl PyTensor {
    fn median_impl(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        ignore_nan: bool,
    ) -> PyResult<Py<PyAny>> {
        let t = &self.t;
        match opt_dim(dim)? {
            Some(d) => {
                pair(py, run(py, t.numel(), || sort::median_dim(t, d, keepdim, ignore_nan))?)
            }
            None => tensor_obj(py, run(py, t.numel(), || sort::median(t, ignore_nan))?),
        }
    }
}

/// The indices at which ``input``'s values would be inserted into ``sorted_sequence`` to keep it
/// sorted.
///
/// Args:
///   sorted_sequence (Tensor): sorted along its last dimension (1-d, or with input's leading
///     dimensions).
///   input (Tensor or Number): the values to insert.
///   out_int32 (bool): return int32 indices instead of int64.
///   right (bool): return the last suitable position instead of the first.
///   side (str, optional): ``'left'`` or ``'right'`` (overrides ``right``).
///   sorter (Tensor, optional): indices that sort an unsorted ``sorted_sequence``.
///
/// Returns:
///   Tensor: indices of input's shape.
#[pyfunction]
#[pyo3(signature = (sorted_sequence, input, *, out_int32=false, right=false, side=None, sorter=None))]
fn searchsorted(
    py: Python<'_>,
    sorted_sequence: &Bound<'_, PyAny>,
    input: &Bound<'_, PyAny>,
    out_int32: bool,
    right: bool,
    side: Option<String>,
    sorter: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let seq = tensor_req(sorted_sequence, "searchsorted(): sorted_sequence")?;
    let vals = operand_req(input, "searchsorted")?;
    let sorter = sorter.filter(|s| !s.is_none()).map(|s| tensor_req(s, "sorter")).transpose()?;
    let r = run(py, seq.numel(), || {
        bins::searchsorted(&seq, &vals, out_int32, right, side.as_deref(), sorter.as_ref())
    })?;
    Ok(wrap(r))
}

/// The index of the bucket each value of ``input`` falls in, given sorted ``boundaries``.
///
/// Args:
///   input (Tensor or Number): the values.
///   boundaries (Tensor): 1-d, sorted ascending.
///   out_int32 (bool): return int32 indices instead of int64.
///   right (bool): return the last suitable position instead of the first.
///
/// Returns:
///   Tensor: indices of input's shape.
#[pyfunction]
#[pyo3(signature = (input, boundaries, *, out_int32=false, right=false))]
fn bucketize(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    boundaries: &Bound<'_, PyAny>,
    out_int32: bool,
    right: bool,
) -> PyResult<PyTensor> {
    let b = tensor_req(boundaries, "bucketize(): boundaries")?;
    let x = operand_req(input, "bucketize")?;
    Ok(wrap(run(py, b.numel(), || bins::bucketize(&x, &b, out_int32, right))?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(searchsorted, m)?)?;
    m.add_function(wrap_pyfunction!(bucketize, m)?)?;
    Ok(())
}
