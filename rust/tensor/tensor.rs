//! Tensor = storage + layout + autograd state. Cloning a `Tensor` clones a
//! handle to the same tensor (as Python references do); views get a new handle.

use super::dtype::{DType, Element};
use super::layout::{Layout, Shape};
use super::storage::{Device, Storage};
use crate::autograd::graph::Node;
use crate::bail;
use crate::error::Result;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Autograd state of a tensor. A tensor with a `grad_fn` is an op's output
/// (not a leaf); `requires_grad` is true for those and for user-marked leaves.
pub struct AutogradMeta {
    pub requires_grad: AtomicBool,
    pub grad: Mutex<Option<Tensor>>,
    /// The node that produced this tensor and which of its outputs it is.
    /// A Mutex because an in-place op moves a tensor to a new node.
    pub grad_fn: Mutex<Option<(Arc<Node>, u32)>>,
    pub retains_grad: AtomicBool,
    /// For views: the storage version when the view was made. rumus does not
    /// rebase a view's history after an in-place write, so it refuses to use
    /// such a stale view in a graph.
    pub view_version: Option<u64>,
    /// A leaf's tensor hooks and its AccumulateGrad's hooks, set on first use.
    pub hooks: std::sync::OnceLock<Arc<dyn crate::autograd::hooks::Hooks>>,
}

impl AutogradMeta {
    pub fn view(view_version: Option<u64>) -> AutogradMeta {
        AutogradMeta {
            requires_grad: AtomicBool::new(false),
            grad: Mutex::new(None),
            grad_fn: Mutex::new(None),
            retains_grad: AtomicBool::new(false),
            view_version,
            hooks: std::sync::OnceLock::new(),
        }
    }
}

impl Default for AutogradMeta {
    fn default() -> AutogradMeta {
        AutogradMeta::view(None)
    }
}

impl Drop for AutogradMeta {
    fn drop(&mut self) {
        if let Some((n, _)) = self.grad_fn.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            crate::autograd::graph::release(n);
        }
    }
}

pub struct TensorImpl {
    pub storage: Arc<Storage>,
    pub layout: Layout,
    pub autograd: AutogradMeta,
}

#[derive(Clone)]
pub struct Tensor(pub Arc<TensorImpl>);

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Tensor>();
};

impl Tensor {
    pub fn new(storage: Arc<Storage>, layout: Layout) -> Tensor {
        Tensor(Arc::new(TensorImpl { storage, layout, autograd: AutogradMeta::default() }))
    }
    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
        let layout = Layout::contiguous(shape);
        Ok(Tensor::new(Arc::new(Storage::zeros(dtype, layout.numel())?), layout))
    }
    /// A tensor whose every element the caller is about to write (kernel outputs).
    pub fn for_output(shape: &[usize], dtype: DType) -> Result<Tensor> {
        let layout = Layout::contiguous(shape);
        Ok(Tensor::new(Arc::new(Storage::for_output(dtype, layout.numel())?), layout))
    }
    /// A tensor on `device` whose every element the caller is about to write.
    pub fn empty_on(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        match device {
            Device::Cpu => Tensor::for_output(shape, dtype),
            Device::Gpu(i) => {
                let layout = Layout::contiguous(shape);
                Ok(Tensor::new(
                    Arc::new(Storage::on_gpu(dtype, layout.numel(), i as usize)?),
                    layout,
                ))
            }
        }
    }
    /// An uninitialized tensor of `shape` laid out densely with its dims in
    /// memory in `order` (outermost first; `Layout::memory_order` gives
    /// torch.empty_like's preserve_format): a gradient or output made so
    /// keeps its consumers' views free.
    pub fn empty_in_order(
        shape: &[usize],
        order: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        let flat = Tensor::empty_on(&[super::layout::numel(shape)], dtype, device)?;
        Ok(Tensor::new(flat.0.storage.clone(), Layout::dense_in_order(shape, order)))
    }
    pub fn device(&self) -> Device {
        self.0.storage.device()
    }
    pub fn is_gpu(&self) -> bool {
        self.device().is_gpu()
    }
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        if data.len() != super::layout::numel(shape) {
            bail!(Runtime, "from_vec: {} elements do not fill shape {:?}", data.len(), shape);
        }
        Ok(Tensor::new(Arc::new(Storage::from_vec(data)?), Layout::contiguous(shape)))
    }
    pub fn scalar<T: Element>(v: T) -> Result<Tensor> {
        Tensor::from_vec(vec![v], &[])
    }
    /// A view: same storage, another layout.
    pub fn with_layout(&self, layout: Layout) -> Tensor {
        let autograd = AutogradMeta::view(Some(self.version()));
        Tensor(Arc::new(TensorImpl { storage: self.0.storage.clone(), layout, autograd }))
    }
    /// A view over another storage that shares this tensor's memory
    /// (a reinterpretation as another dtype).
    pub fn with_storage(&self, storage: Arc<Storage>, layout: Layout) -> Tensor {
        let autograd = AutogradMeta::view(Some(self.version()));
        Tensor(Arc::new(TensorImpl { storage, layout, autograd }))
    }
    /// Same data and layout, no autograd history (Tensor.detach()).
    pub fn detach(&self) -> Tensor {
        self.with_layout(self.0.layout.clone())
    }
    /// A new handle on the same data and layout with no history, not marked as a view.
    pub fn detach_nonview(&self) -> Tensor {
        Tensor::new(self.0.storage.clone(), self.0.layout.clone())
    }
    pub fn is_view(&self) -> bool {
        self.0.autograd.view_version.is_some()
    }
    pub fn storage(&self) -> &Arc<Storage> {
        &self.0.storage
    }
    pub fn layout(&self) -> &Layout {
        &self.0.layout
    }
    pub fn shape(&self) -> &Shape {
        &self.0.layout.shape
    }
    pub fn strides(&self) -> &[isize] {
        &self.0.layout.strides
    }
    pub fn dtype(&self) -> DType {
        self.0.storage.dtype()
    }
    pub fn ndim(&self) -> usize {
        self.0.layout.ndim()
    }
    pub fn numel(&self) -> usize {
        self.0.layout.numel()
    }
    pub fn is_contiguous(&self) -> bool {
        self.0.layout.is_contiguous()
    }
    pub fn same_tensor(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
    pub fn requires_grad(&self) -> bool {
        self.0.autograd.requires_grad.load(Ordering::Relaxed)
    }
    /// Tensor.requires_grad_(): only for leaves, as in PyTorch.
    pub fn set_requires_grad(&self, on: bool) -> Result<()> {
        if on && !self.dtype().is_differentiable() {
            bail!(
                Runtime,
                "only Tensors of floating point dtype can require gradients (got {})",
                self.dtype().name()
            );
        }
        if !on && self.grad_fn().is_some() {
            bail!(
                Runtime,
                "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
            );
        }
        self.0.autograd.requires_grad.store(on, Ordering::Relaxed);
        Ok(())
    }
    pub fn grad_fn(&self) -> Option<(Arc<Node>, u32)> {
        self.0.autograd.grad_fn.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    /// Makes this tensor output `nr` of `node` (op outputs and in-place rebases).
    pub fn set_grad_fn(&self, node: Arc<Node>, nr: u32) {
        *self.0.autograd.grad_fn.lock().unwrap_or_else(|e| e.into_inner()) = Some((node, nr));
        self.0.autograd.requires_grad.store(true, Ordering::Relaxed);
    }
    pub fn is_leaf(&self) -> bool {
        self.0.autograd.grad_fn.lock().unwrap_or_else(|e| e.into_inner()).is_none()
    }
    pub fn grad(&self) -> Option<Tensor> {
        self.0.autograd.grad.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    pub fn set_grad(&self, g: Option<Tensor>) {
        *self.0.autograd.grad.lock().unwrap_or_else(|e| e.into_inner()) = g;
    }
    /// Rejects in-place writes into views where several positions share memory.
    pub fn check_writable(&self, op: &str) -> Result<()> {
        if self.0.layout.has_internal_overlap() {
            bail!(
                Runtime,
                "{}: unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.",
                op
            );
        }
        Ok(())
    }
    pub fn version(&self) -> u64 {
        self.0.storage.version()
    }
    /// Pointer to element [0, 0, ...] of this view, typed. The storage must be
    /// on the CPU and hold `T`.
    pub fn ptr<T: Element>(&self) -> Result<*mut T> {
        if T::DTYPE != self.dtype() {
            if self.dtype().is_complex() {
                bail!(
                    Type,
                    "this operation has no kernel for {} tensors (complex tensors support the ops listed in the docs' complex numbers page)",
                    self.dtype().name()
                );
            }
            bail!(
                Runtime,
                "internal dtype mismatch: {} accessed as {}",
                self.dtype().name(),
                T::DTYPE.name()
            );
        }
        let base = self.0.storage.cpu_ptr()? as *mut T;
        // SAFETY: the layout offset lies within the storage by construction.
        Ok(unsafe { base.add(self.0.layout.offset) })
    }
    /// Pointer to element [0, 0, ...] of a complex view whose parts are `R`
    /// (f32: complex64, f64: complex128).
    pub fn cptr<R: Element>(&self) -> Result<*mut num_complex::Complex<R>> {
        if !self.dtype().is_complex() || self.dtype().to_real() != R::DTYPE {
            bail!(
                Runtime,
                "internal dtype mismatch: {} accessed as complex with {} parts",
                self.dtype().name(),
                R::DTYPE.name()
            );
        }
        let base = self.0.storage.cpu_ptr()? as *mut num_complex::Complex<R>;
        // SAFETY: the layout offset lies within the storage by construction.
        Ok(unsafe { base.add(self.0.layout.offset) })
    }
    /// Data address of element [0, 0, ...] (Tensor.data_ptr()).
    pub fn data_ptr(&self) -> Result<usize> {
        let base = self.0.storage.cpu_ptr()? as usize;
        Ok(base + self.0.layout.offset * self.dtype().size())
    }
    /// Copies the elements out in logical (row-major) order.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if self.is_gpu() {
            return crate::ops::copy::transfer(self, Device::Cpu)?.to_vec();
        }
        let c = crate::ops::copy::contiguous(self)?;
        let p = c.ptr::<T>()?;
        // SAFETY: `c` is contiguous with numel elements of T.
        Ok(unsafe { std::slice::from_raw_parts(p, c.numel()) }.to_vec())
    }
}

/// Locks a mutex, ignoring poisoning: the data behind these locks stays valid
/// even if a thread panicked while holding one.
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
