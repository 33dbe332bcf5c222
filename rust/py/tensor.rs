//! The Python `Tensor` class: attributes, conversion, operators, and the common
//! methods, all straight to Rust. Conversions live in `conversion_methods.rs`,
//! op-family methods in `methods.rs`.

use super::conversion_methods::item_of;
use super::convert::{operand, operand_req, scalar, tensor_req, varargs_ints};
use super::dtype::{PyDType, PyDevice};
use super::gil::run;
use crate::ops::copy::{copy_, item};
use crate::ops::elementwise::{binary, binary_, Binary};
use crate::ops::{linalg, Operand};
use crate::tensor::layout::numel;
use crate::tensor::{DType, Scalar, Tensor};
use pyo3::basic::CompareOp;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};

/// A multi-dimensional array of one dtype on one device, with autograd.
///
/// Args:
///   data (array-like, optional): the values (copied); an empty float32 tensor when None.
///   requires_grad (bool): record operations on it for autograd.
#[pyclass(name = "Tensor", module = "rumus", frozen, weakref, subclass)]
pub struct PyTensor {
    pub t: Tensor,
}

impl From<Tensor> for PyTensor {
    fn from(t: Tensor) -> PyTensor {
        PyTensor { t }
    }
}

static SIZE_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// A `rumus.Size` (tuple subclass defined in Python).
pub fn size_obj<'py>(py: Python<'py>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let ty = SIZE_TYPE.import(py, "rumus._size", "Size")?;
    ty.call1((PyTuple::new(py, shape.iter())?,))
}

pub fn wrap(t: Tensor) -> PyTensor {
    PyTensor { t }
}

fn binop(
    py: Python<'_>,
    op: Binary,
    a: Operand,
    other: &Bound<'_, PyAny>,
    swap: bool,
) -> PyResult<Py<PyAny>> {
    let Some(b) = operand(other)? else { return Ok(py.NotImplemented()) };
    let (x, y) = if swap { (b, a) } else { (a, b) };
    let work = numel(x.shape()).max(numel(y.shape()));
    let r = run(py, work, || binary(op, &x, &y, None))?;
    Ok(Bound::new(py, wrap(r))?.into_any().unbind())
}

fn ibinop(py: Python<'_>, op: Binary, t: &Tensor, other: &Bound<'_, PyAny>) -> PyResult<()> {
    let b = operand_req(other, op.name())?;
    Ok(run(py, t.numel(), || binary_(op, t, &b, None))?)
}

#[pymethods]
impl PyTensor {
    /// `Tensor(t)` shares `t`'s data as a new leaf (what `nn.Parameter` builds on);
    /// `Tensor(data)` copies numbers or arrays into float32, as `torch.Tensor` does.
    #[new]
    #[pyo3(signature = (data=None, requires_grad=false))]
    fn py_new(
        py: Python<'_>,
        data: Option<&Bound<'_, PyAny>>,
        requires_grad: bool,
    ) -> PyResult<PyTensor> {
        let t = match data {
            None => crate::ops::creation::full(&[0], Scalar::Float(0.0), DType::F32)?,
            Some(d) => match d.cast::<PyTensor>() {
                Ok(src) => src.get().t.detach_nonview(),
                Err(_) => super::convert::tensor_from_data(py, d, Some(DType::F32))?,
            },
        };
        if requires_grad {
            t.set_requires_grad(true)?;
        }
        Ok(wrap(t))
    }

    // ---- attributes ----
    /// The shape, a :class:`rumus.Size`.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        size_obj(py, self.t.shape())
    }
    /// The shape, or the size of one dimension.
    ///
    /// Args:
    ///   dim (int, optional): the dimension.
    ///
    /// Returns:
    ///   Size or int: the shape, or the size of ``dim``.
    #[pyo3(signature = (dim=None))]
    fn size<'py>(&self, py: Python<'py>, dim: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        match dim {
            None => size_obj(py, self.t.shape()),
            Some(d) => {
                let d = crate::tensor::layout::wrap_dim(d, self.t.ndim())?;
                Ok(self.t.shape().get(d).copied().unwrap_or(1).into_pyobject(py)?.into_any())
            }
        }
    }
    /// The number of dimensions.
    #[getter]
    fn ndim(&self) -> usize {
        self.t.ndim()
    }
    /// The number of dimensions.
    ///
    /// Returns:
    ///   int: the rank.
    fn dim(&self) -> usize {
        self.t.ndim()
    }
    /// The number of dimensions (alias of :meth:`dim`).
    ///
    /// Returns:
    ///   int: the rank.
    fn ndimension(&self) -> usize {
        self.t.ndim()
    }
    /// The element type.
    #[getter]
    fn dtype(&self) -> PyDType {
        PyDType { d: self.t.dtype() }
    }
    /// The device the tensor lives on.
    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice::of(self.t.device())
    }
    /// Whether the tensor is on the CPU.
    #[getter]
    fn is_cpu(&self) -> bool {
        !self.t.is_gpu()
    }
    /// Whether the tensor is on the GPU.
    #[getter]
    fn is_gpu(&self) -> bool {
        self.t.is_gpu()
    }
    /// rumus tensors are never CUDA tensors (scripts that branch on it take the other path).
    #[getter]
    fn is_cuda(&self) -> bool {
        false
    }
    /// The strides (in elements), or the stride of one dimension.
    ///
    /// Args:
    ///   dim (int, optional): the dimension.
    ///
    /// Returns:
    ///   tuple[int, ...] or int: the strides.
    #[pyo3(signature = (dim=None))]
    fn stride<'py>(&self, py: Python<'py>, dim: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        match dim {
            None => Ok(PyTuple::new(py, self.t.strides().iter())?.into_any()),
            Some(d) => {
                let d = crate::tensor::layout::wrap_dim(d, self.t.ndim())?;
                Ok(self.t.strides().get(d).copied().unwrap_or(1).into_pyobject(py)?.into_any())
            }
        }
    }
    /// Whether the elements are laid out in row-major order without gaps.
    ///
    /// Returns:
    ///   bool: the answer.
    fn is_contiguous(&self) -> bool {
        self.t.is_contiguous()
    }
    /// The number of elements.
    ///
    /// Returns:
    ///   int: the count.
    fn numel(&self) -> usize {
        self.t.numel()
    }
    /// The number of elements (alias of :meth:`numel`).
    ///
    /// Returns:
    ///   int: the count.
    fn nelement(&self) -> usize {
        self.t.numel()
    }
    /// The size of one element in bytes.
    ///
    /// Returns:
    ///   int: bytes.
    fn element_size(&self) -> usize {
        self.t.dtype().size()
    }
    /// The size of one element in bytes.
    #[getter]
    fn itemsize(&self) -> usize {
        self.t.dtype().size()
    }
    /// The number of bytes the elements take (numel * itemsize).
    #[getter]
    fn nbytes(&self) -> usize {
        self.t.dtype().size().saturating_mul(self.t.numel())
    }
    /// The offset of the first element in the storage, in elements.
    ///
    /// Returns:
    ///   int: the offset.
    fn storage_offset(&self) -> usize {
        self.t.layout().offset
    }
    /// The address of the first element (0 for GPU tensors).
    ///
    /// Returns:
    ///   int: the address.
    fn data_ptr(&self) -> PyResult<usize> {
        Ok(self.t.data_ptr()?)
    }
    /// Whether the dtype is a floating-point type.
    ///
    /// Returns:
    ///   bool: the answer.
    fn is_floating_point(&self) -> bool {
        self.t.dtype().is_float()
    }
    #[getter]
    fn _version(&self) -> u64 {
        self.t.version()
    }
    /// Whether autograd records operations on this tensor.
    #[getter]
    fn requires_grad(&self) -> bool {
        self.t.requires_grad()
    }
    #[setter]
    fn set_requires_grad(&self, on: bool) -> PyResult<()> {
        Ok(self.t.set_requires_grad(on)?)
    }
    /// Sets whether autograd records operations on this tensor (a leaf).
    ///
    /// Args:
    ///   requires_grad (bool): the setting.
    ///
    /// Returns:
    ///   Tensor: self.
    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_(slf: Bound<'_, Self>, requires_grad: bool) -> PyResult<Bound<'_, Self>> {
        slf.get().t.set_requires_grad(requires_grad)?;
        Ok(slf)
    }
    /// Whether the tensor is a graph leaf (created by the user, not by a recorded op).
    #[getter]
    fn is_leaf(&self) -> bool {
        self.t.is_leaf()
    }
    /// Makes backward fill ``.grad`` of this non-leaf tensor.
    fn retain_grad(&self) -> PyResult<()> {
        if let Some((n, nr)) = self.t.grad_fn() {
            n.retain(nr, &self.t);
            self.t.0.autograd.retains_grad.store(true, std::sync::atomic::Ordering::Relaxed);
        } else if !self.t.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "can't retain_grad on Tensor that has requires_grad=False",
            ));
        }
        Ok(())
    }
    /// Whether :meth:`retain_grad` was called on this non-leaf.
    #[getter]
    fn retains_grad(&self) -> bool {
        self.t.0.autograd.retains_grad.load(std::sync::atomic::Ordering::Relaxed)
    }
    /// Computes the gradient of this tensor with respect to the graph leaves (into their
    /// ``.grad``).
    ///
    /// Args:
    ///   gradient (Tensor, optional): the gradient of the output; required unless self has one
    ///     element.
    ///   retain_graph (bool, optional): keep the graph for another backward (``create_graph`` by
    ///     default).
    ///   create_graph (bool): record the backward pass, for higher-order gradients.
    ///   inputs (Tensor or Sequence[Tensor], optional): accumulate only into these.
    #[pyo3(signature = (gradient=None, retain_graph=None, create_graph=false, inputs=None))]
    fn backward(
        slf: &Bound<'_, Self>,
        gradient: Option<&Bound<'_, PyAny>>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let grads =
            gradient.filter(|g| !g.is_none()).map(|g| PyTuple::new(slf.py(), [g])).transpose()?;
        super::autograd::backward(
            slf.py(),
            slf.as_any(),
            grads.as_ref().map(|g| g.as_any()),
            retain_graph,
            create_graph,
            inputs,
        )
    }
    /// The gradient accumulated by backward (None until then).
    #[getter]
    fn grad(&self) -> Option<PyTensor> {
        self.t.0.autograd.grad.lock().unwrap_or_else(|e| e.into_inner()).clone().map(wrap)
    }
    #[setter]
    fn set_grad(&self, g: Option<PyRef<'_, PyTensor>>) -> PyResult<()> {
        if let Some(g) = &g {
            if g.t.shape() != self.t.shape() {
                return Err(PyRuntimeError::new_err(format!(
                    "assigned grad has data of a different size: {} vs {}",
                    crate::tensor::layout::fmt_shape(g.t.shape()),
                    crate::tensor::layout::fmt_shape(self.t.shape())
                )));
            }
            if g.t.dtype() != self.t.dtype() {
                return Err(PyRuntimeError::new_err(format!(
                    "assigned grad has data of a different type: {} vs {}",
                    g.t.dtype().name(),
                    self.t.dtype().name()
                )));
            }
            if g.t.device() != self.t.device() {
                return Err(PyRuntimeError::new_err(format!(
                    "assigned grad has data located on a different device: {} vs {}",
                    g.t.device().name(),
                    self.t.device().name()
                )));
            }
        }
        *self.t.0.autograd.grad.lock().unwrap_or_else(|e| e.into_inner()) = g.map(|g| g.t.clone());
        Ok(())
    }
    /// The backward node that created this tensor (None for leaves).
    #[getter]
    fn grad_fn(&self) -> Option<super::autograd::PyNode> {
        super::autograd::PyNode::of(&self.t)
    }
    /// A tensor sharing storage, cut from autograd.
    fn detach(&self) -> PyTensor {
        wrap(self.t.detach())
    }
    /// Cuts this tensor from the graph, making it a leaf.
    fn detach_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let t = &slf.get().t;
        if t.is_view() && t.grad_fn().is_some() {
            return Err(PyRuntimeError::new_err(
                "Can't detach views in-place. Use detach() instead.",
            ));
        }
        *crate::tensor::lock(&t.0.autograd.grad_fn) = None;
        t.0.autograd.requires_grad.store(false, std::sync::atomic::Ordering::Relaxed);
        Ok(slf)
    }
    #[getter]
    fn data(&self) -> PyTensor {
        self.detach()
    }
    #[getter]
    fn __array_interface__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        super::numpy::array_interface(py, &self.t)
    }

    // ---- in-place writes ----
    /// Copies ``src``'s values into self (broadcast, cast and moved as needed).
    ///
    /// Args:
    ///   src (Tensor or array-like): the values.
    ///
    /// Returns:
    ///   Tensor: self.
    fn copy_<'py>(slf: Bound<'py, Self>, src: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let src = match operand_req(src, "copy_")? {
            Operand::T(t) => t,
            Operand::S(s) => crate::ops::creation::scalar_tensor(s, slf.get().t.dtype())?,
        };
        let t = &slf.get().t;
        run(slf.py(), t.numel(), || copy_(t, &src))?;
        Ok(slf)
    }
    /// Fills self with ``value``.
    ///
    /// Args:
    ///   value (Number or 0-d Tensor): the value.
    ///
    /// Returns:
    ///   Tensor: self.
    fn fill_<'py>(slf: Bound<'py, Self>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let v = match operand_req(value, "fill_")? {
            Operand::S(s) => s,
            Operand::T(t) if t.ndim() == 0 => item_of(slf.py(), &t)?,
            Operand::T(t) => {
                return Err(PyRuntimeError::new_err(format!(
                "fill_ only supports 0-dimension value tensor but got tensor with {} dimensions.",
                t.ndim()
            )))
            }
        };
        let t = &slf.get().t;
        run(slf.py(), t.numel(), || crate::ops::copy::fill_(t, v))?;
        Ok(slf)
    }
    /// Fills self with zeros.
    ///
    /// Returns:
    ///   Tensor: self.
    fn zero_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let t = &slf.get().t;
        run(slf.py(), t.numel(), || crate::ops::copy::fill_(t, Scalar::Int(0)))?;
        Ok(slf)
    }

    // ---- operators (the arithmetic ones come from `arith_operators!` below) ----
    fn __matmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Ok(b) = o.cast::<PyTensor>() else { return Ok(py.NotImplemented()) };
        let (a, b) = (&self.t, &b.get().t);
        let r = run(py, a.numel() + b.numel(), || linalg::matmul(a, b))?;
        Ok(Bound::new(py, wrap(r))?.into_any().unbind())
    }
    fn __rmatmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Ok(a) = o.cast::<PyTensor>() else { return Ok(py.NotImplemented()) };
        let (a, b) = (&a.get().t, &self.t);
        let r = run(py, a.numel() + b.numel(), || linalg::matmul(a, b))?;
        Ok(Bound::new(py, wrap(r))?.into_any().unbind())
    }
    fn __neg__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || {
            crate::ops::elementwise::unary(crate::ops::elementwise::Unary::Neg, t)
        })?))
    }
    fn __pos__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }
    fn __abs__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || {
            crate::ops::elementwise::unary(crate::ops::elementwise::Unary::Abs, t)
        })?))
    }
    fn __invert__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = &self.t;
        Ok(wrap(run(py, t.numel(), || {
            crate::ops::elementwise::unary(crate::ops::elementwise::Unary::BitwiseNot, t)
        })?))
    }
    fn __richcmp__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        op: CompareOp,
    ) -> PyResult<Py<PyAny>> {
        let b = match op {
            CompareOp::Eq => Binary::Eq,
            CompareOp::Ne => Binary::Ne,
            CompareOp::Lt => Binary::Lt,
            CompareOp::Le => Binary::Le,
            CompareOp::Gt => Binary::Gt,
            CompareOp::Ge => Binary::Ge,
        };
        binop(py, b, Operand::T(self.t.clone()), o, false)
    }

    // ---- indexing ----
    fn __getitem__(&self, py: Python<'_>, idx: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(wrap(super::index::getitem(py, &self.t, idx)?))
    }
    fn __setitem__(
        &self,
        py: Python<'_>,
        idx: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        super::index::setitem(py, &self.t, idx, value)
    }

    // ---- linear algebra ----
    /// Matrix product with PyTorch's rules (``@``): vectors, matrices and broadcast batches.
    ///
    /// Args:
    ///   other (Tensor): the right operand.
    ///
    /// Returns:
    ///   Tensor: a new tensor.
    fn matmul(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let b = tensor_req(other, "matmul(): argument 'other'")?;
        let a = &self.t;
        Ok(wrap(run(py, a.numel() + b.numel(), || linalg::matmul(a, &b))?))
    }
    /// Matrix product of 2-d tensors.
    ///
    /// Args:
    ///   other (Tensor): of shape ``(m, p)``.
    ///
    /// Returns:
    ///   Tensor: of shape ``(n, p)``.
    fn mm(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (&self.t, &other.t);
        Ok(wrap(run(py, a.numel() + b.numel(), || linalg::mm(a, b))?))
    }
    /// Batched matrix product of ``(b, n, m)`` and ``(b, m, p)`` tensors.
    ///
    /// Args:
    ///   other (Tensor): of shape ``(b, m, p)``.
    ///
    /// Returns:
    ///   Tensor: of shape ``(b, n, p)``.
    fn bmm(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (&self.t, &other.t);
        Ok(wrap(run(py, a.numel() + b.numel(), || linalg::bmm(a, b))?))
    }
    /// Matrix-vector product.
    ///
    /// Args:
    ///   other (Tensor): a vector of length ``m``.
    ///
    /// Returns:
    ///   Tensor: of length ``n``.
    fn mv(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (&self.t, &other.t);
        Ok(wrap(run(py, a.numel(), || linalg::mv(a, b))?))
    }
    /// The dot product of two 1-d tensors.
    ///
    /// Args:
    ///   other (Tensor): 1-d, of self's length.
    ///
    /// Returns:
    ///   Tensor: 0-d.
    fn dot(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (&self.t, &other.t);
        Ok(wrap(run(py, a.numel(), || linalg::dot(a, b))?))
    }
    /// The outer product of two 1-d tensors.
    ///
    /// Args:
    ///   other (Tensor): 1-d.
    ///
    /// Returns:
    ///   Tensor: of shape ``(n, m)``.
    fn outer(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (&self.t, &other.t);
        Ok(wrap(run(py, a.numel().saturating_mul(b.numel()), || linalg::outer(a, b))?))
    }
}

/// `a op b`, `b op a` and `a op= b` for each arithmetic operator.
macro_rules! arith_operators {
    ($($op:ident, $rop:ident, $iop:ident => $bin:expr;)*) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $op(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                    binop(py, $bin, Operand::T(self.t.clone()), o, false)
                }
                fn $rop(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                    binop(py, $bin, Operand::T(self.t.clone()), o, true)
                }
                fn $iop(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<()> {
                    ibinop(py, $bin, &self.t, o)
                }
            )*
        }
    };
}

arith_operators! {
    __add__, __radd__, __iadd__ => Binary::Add;
    __sub__, __rsub__, __isub__ => Binary::Sub;
    __mul__, __rmul__, __imul__ => Binary::Mul;
    __truediv__, __rtruediv__, __itruediv__ => Binary::Div;
    __floordiv__, __rfloordiv__, __ifloordiv__ => Binary::FloorDiv;
    __mod__, __rmod__, __imod__ => Binary::Rem;
    __and__, __rand__, __iand__ => Binary::BitAnd;
    __or__, __ror__, __ior__ => Binary::BitOr;
    __xor__, __rxor__, __ixor__ => Binary::BitXor;
}

#[pymethods]
impl PyTensor {
    // `**` takes an (unused) modulo argument.
    fn __pow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        binop(py, Binary::Pow, Operand::T(self.t.clone()), o, false)
    }
    fn __rpow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        binop(py, Binary::Pow, Operand::T(self.t.clone()), o, true)
    }
    fn __ipow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        ibinop(py, Binary::Pow, &self.t, o)
    }
}

/// `scalar` re-exported for methods.rs.
pub fn number(obj: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(item(&t.get().t)?);
    }
    scalar(obj).ok_or_else(|| {
        PyValueError::new_err(format!(
            "expected a number, got {}",
            obj.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })
}

/// Sizes from varargs for view-like methods.
pub fn sizes(args: &Bound<'_, PyTuple>) -> PyResult<Vec<i64>> {
    varargs_ints(args, "size")
}
