//! DLPack exchange (`Tensor.__dlpack__`, `__dlpack_device__`, `rumus.from_dlpack`):
//! the C structs of the DLPack spec (dlpack.h, ABI 1.x and the older unversioned
//! one), capsules named and renamed as the Python spec says, zero-copy both ways.
//!
//! Export: the capsule holds a `DLManagedTensor[Versioned]` boxed together with a
//! clone of the tensor (so its storage outlives the producer's Python object)
//! and the shape/strides arrays; its deleter frees all of it. The capsule's
//! destructor calls the deleter only while the capsule still has its unused
//! name, i.e. no consumer took ownership.
//!
//! Import: the consumer renames the capsule to "used_..." and the storage borrows
//! the producer's memory through a `CpuBuffer` whose owner calls the producer's
//! deleter when the storage is dropped (the mechanism `from_numpy` uses).

use super::gil::{run, ALWAYS};
use super::tensor::{wrap, PyTensor};
use crate::ops::copy::transfer;
use crate::tensor::layout::contiguous_strides;
use crate::tensor::storage::{CpuBuffer, Storage};
use crate::tensor::{DType, Device, Layout, Tensor};
use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_void, CStr};
use std::sync::Arc;

// ---- the C ABI (dlpack.h) ----

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    /// In elements; null means row-major contiguous.
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

const FLAG_READ_ONLY: u64 = 1;
const FLAG_IS_COPIED: u64 = 1 << 1;

/// DLDeviceType codes.
const KDL_CPU: i32 = 1;
const KDL_CUDA_HOST: i32 = 3;
const KDL_VULKAN: i32 = 7;
const KDL_METAL: i32 = 8;
const KDL_ROCM_HOST: i32 = 11;
const KDL_EXT_DEV: i32 = 12;

/// DLDataTypeCode values.
const KDL_INT: u8 = 0;
const KDL_UINT: u8 = 1;
const KDL_FLOAT: u8 = 2;
const KDL_BFLOAT: u8 = 4;
const KDL_COMPLEX: u8 = 5;
const KDL_BOOL: u8 = 6;

const VERSIONED: &CStr = c"dltensor_versioned";
const VERSIONED_USED: &CStr = c"used_dltensor_versioned";
const LEGACY: &CStr = c"dltensor";
const LEGACY_USED: &CStr = c"used_dltensor";

fn device_name(d: DLDevice) -> String {
    let kind = match d.device_type {
        1 => "cpu",
        2 => "cuda",
        3 => "cuda_host",
        4 => "opencl",
        7 => "vulkan",
        8 => "metal",
        9 => "vpi",
        10 => "rocm",
        11 => "rocm_host",
        12 => "ext_dev",
        13 => "cuda_managed",
        14 => "oneapi",
        15 => "webgpu",
        16 => "hexagon",
        17 => "maia",
        _ => return format!("DLPack device type {} (id {})", d.device_type, d.device_id),
    };
    format!("{}:{}", kind, d.device_id)
}

fn to_dl(d: DType) -> DLDataType {
    let code = match d {
        DType::Bool => KDL_BOOL,
        DType::U8 => KDL_UINT,
        DType::I32 | DType::I64 => KDL_INT,
        DType::F16 | DType::F32 | DType::F64 => KDL_FLOAT,
        DType::BF16 => KDL_BFLOAT,
        DType::C64 | DType::C128 => KDL_COMPLEX,
    };
    DLDataType { code, bits: 8 * d.size() as u8, lanes: 1 }
}

fn from_dl(t: DLDataType) -> PyResult<DType> {
    let d = match (t.code, t.bits, t.lanes) {
        (KDL_BOOL, 8, 1) => DType::Bool,
        (KDL_UINT, 8, 1) => DType::U8,
        (KDL_INT, 32, 1) => DType::I32,
        (KDL_INT, 64, 1) => DType::I64,
        (KDL_FLOAT, 16, 1) => DType::F16,
        (KDL_FLOAT, 32, 1) => DType::F32,
        (KDL_FLOAT, 64, 1) => DType::F64,
        (KDL_BFLOAT, 16, 1) => DType::BF16,
        (KDL_COMPLEX, 64, 1) => DType::C64,
        (KDL_COMPLEX, 128, 1) => DType::C128,
        _ => {
            let kind = match t.code {
                KDL_INT => "int",
                KDL_UINT => "uint",
                KDL_FLOAT => "float",
                KDL_BFLOAT => "bfloat",
                5 => "complex",
                KDL_BOOL => "bool",
                _ => "",
            };
            let mut name = if kind.is_empty() {
                format!("with DLPack type code {} ({} bits)", t.code, t.bits)
            } else {
                format!("{}{}", kind, t.bits)
            };
            if t.lanes != 1 {
                name += &format!(" x {} lanes", t.lanes);
            }
            return Err(PyTypeError::new_err(format!(
                "rumus.from_dlpack: unsupported dtype {name}; rumus supports float64, float32, float16, bfloat16, int64, int32, uint8 and bool"
            )));
        }
    };
    Ok(d)
}

// ---- export ----

/// What a capsule keeps alive: the tensor and the arrays its DLTensor points into.
struct Export {
    tensor: Tensor,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

/// One allocation per capsule; `managed` first, so the deleter's pointer is the box's.
#[repr(C)]
struct Exported<M> {
    managed: M,
    keep: Export,
}

impl Export {
    fn new(tensor: Tensor) -> Export {
        let shape = tensor.shape().iter().map(|&n| n as i64).collect();
        let strides = tensor.strides().iter().map(|&s| s as i64).collect();
        Export { tensor, shape, strides }
    }
    /// The DLTensor describing `tensor`; its arrays live on the heap, so they
    /// stay put when `self` moves into the box.
    fn dl_tensor(&mut self) -> PyResult<DLTensor> {
        Ok(DLTensor {
            data: self.tensor.data_ptr()? as *mut c_void,
            device: DLDevice { device_type: KDL_CPU, device_id: 0 },
            ndim: self.shape.len() as i32,
            dtype: to_dl(self.tensor.dtype()),
            shape: self.shape.as_mut_ptr(),
            strides: self.strides.as_mut_ptr(),
            byte_offset: 0,
        })
    }
}

unsafe extern "C" fn delete_legacy(m: *mut DLManagedTensor) {
    // SAFETY: `m` came from Box::into_raw of an Exported<DLManagedTensor> (see export).
    release(unsafe { Box::from_raw(m as *mut Exported<DLManagedTensor>) });
}

unsafe extern "C" fn delete_versioned(m: *mut DLManagedTensorVersioned) {
    // SAFETY: as in delete_legacy.
    release(unsafe { Box::from_raw(m as *mut Exported<DLManagedTensorVersioned>) });
}

/// Drops what a capsule kept alive, attached to Python (consumers may call the
/// deleter without it): a storage borrowed from NumPy then releases its array
/// at once instead of at rumus's next call.
fn release<T>(keep: T) {
    Python::try_attach(move |_| drop(keep));
}

/// Frees the managed tensor unless a consumer renamed the capsule (took it).
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: PyCapsule_IsValid never fails or sets an error; the pointer of a
    // capsule with an unused name is the managed tensor it was created with.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, VERSIONED.as_ptr())
                as *mut DLManagedTensorVersioned;
            if let Some(d) = (*m).deleter {
                d(m)
            }
        } else if ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr()) as *mut DLManagedTensor;
            if let Some(d) = (*m).deleter {
                d(m)
            }
        }
    }
}

/// A capsule over a CPU tensor: versioned (DLPack 1.x) or the legacy kind.
fn export(py: Python<'_>, tensor: Tensor, versioned: bool, copied: bool) -> PyResult<Py<PyAny>> {
    let mut keep = Export::new(tensor);
    let dl_tensor = keep.dl_tensor()?;
    let (ptr, name) = if versioned {
        let managed = DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_versioned),
            flags: if copied { FLAG_IS_COPIED } else { 0 },
            dl_tensor,
        };
        (Box::into_raw(Box::new(Exported { managed, keep })) as *mut c_void, VERSIONED)
    } else {
        let managed = DLManagedTensor {
            dl_tensor,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_legacy),
        };
        (Box::into_raw(Box::new(Exported { managed, keep })) as *mut c_void, LEGACY)
    };
    // SAFETY: `name` is static; on failure nothing owns `ptr`, so it is freed here.
    unsafe {
        let cap = ffi::PyCapsule_New(ptr, name.as_ptr(), Some(capsule_destructor));
        if cap.is_null() {
            if versioned {
                delete_versioned(ptr as *mut DLManagedTensorVersioned);
            } else {
                delete_legacy(ptr as *mut DLManagedTensor);
            }
        }
        Ok(Bound::from_owned_ptr_or_err(py, cap)?.unbind())
    }
}

/// The DLPack device of a GPU tensor: the wgpu backend's API (its buffers are
/// not device pointers a consumer could use, so they are never exported as such).
fn gpu_device_type() -> i32 {
    match crate::backend::gpu::context::get().map(|c| c.info.backend) {
        Ok(wgpu::Backend::Vulkan) => KDL_VULKAN,
        Ok(wgpu::Backend::Metal) => KDL_METAL,
        _ => KDL_EXT_DEV,
    }
}

#[pymethods]
impl PyTensor {
    /// (device type, device id) as DLPack codes: (1, 0) (kDLCPU) for CPU tensors.
    fn __dlpack_device__(&self) -> (i32, i32) {
        match self.t.device() {
            Device::Cpu => (KDL_CPU, 0),
            Device::Gpu(i) => (gpu_device_type(), i as i32),
        }
    }

    /// A DLPack capsule sharing this tensor's memory: "dltensor_versioned" when
    /// the consumer passes max_version >= (1, 0), else the legacy "dltensor".
    /// GPU tensors export a host copy when `copy=True` or `dl_device` asks for
    /// the CPU (copy=None); otherwise they raise BufferError.
    #[pyo3(signature = (stream=None, *, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        let t = &self.t;
        if let Some(s) = stream.filter(|s| !s.is_none()) {
            return Err(PyBufferError::new_err(format!(
                "Tensor.__dlpack__: stream must be None for a tensor exported to the CPU (got {s}); rumus has no streams to synchronize with"
            )));
        }
        if t.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "Can't export tensors that require gradient, use tensor.detach()",
            ));
        }
        let wants_cpu = match dl_device {
            None => false,
            Some((KDL_CPU, 0)) => true,
            Some((ty, id)) => {
                return Err(PyBufferError::new_err(format!(
                    "Tensor.__dlpack__: can't export to dl_device {}: rumus exports only to the CPU, (1, 0)",
                    device_name(DLDevice { device_type: ty, device_id: id })
                )))
            }
        };
        let versioned = max_version.is_some_and(|(major, _)| major >= 1);
        let host_copy = match (t.device(), copy) {
            (Device::Cpu, c) => c == Some(true),
            (Device::Gpu(_), Some(true)) => true,
            (Device::Gpu(_), None) if wants_cpu => true,
            (Device::Gpu(_), _) => {
                let how = if copy == Some(false) {
                    "copy=False forbids the copy"
                } else {
                    "pass copy=True (or dl_device=(1, 0)) for a host copy, or call .cpu() first"
                };
                return Err(PyBufferError::new_err(format!(
                    "Tensor.__dlpack__: can't export a tensor on {} through DLPack without a copy: wgpu buffers are not device pointers other libraries can use; {}",
                    t.device().name(), how
                )));
            }
        };
        if host_copy {
            let c = run(py, ALWAYS, || transfer(t, Device::Cpu))?;
            return export(py, c, versioned, true);
        }
        export(py, t.detach_nonview(), versioned, false)
    }
}

/// `rumus.utils.dlpack.to_dlpack(tensor)`: the legacy "dltensor" capsule, as PyTorch's.
#[pyfunction]
fn _to_dlpack(py: Python<'_>, tensor: PyRef<'_, PyTensor>) -> PyResult<Py<PyAny>> {
    tensor.__dlpack__(py, None, None, None, None)
}

// ---- import ----

/// Releases a consumed capsule's tensor: the producer's deleter runs when the
/// storage borrowing its memory is dropped (or at once after a copy).
struct Producer {
    managed: *mut c_void,
    versioned: bool,
}

// SAFETY: the deleter may be called from any thread (DLPack); Python producers'
// deleters get the GIL themselves, and `drop` attaches to Python besides.
unsafe impl Send for Producer {}
unsafe impl Sync for Producer {}

impl Drop for Producer {
    fn drop(&mut self) {
        // At interpreter shutdown the memory is left to the process's end.
        Python::try_attach(|_| {
            // SAFETY: the managed tensor of a capsule this process consumed, released once.
            unsafe {
                if self.versioned {
                    let m = self.managed as *mut DLManagedTensorVersioned;
                    if let Some(d) = (*m).deleter {
                        d(m)
                    }
                } else {
                    let m = self.managed as *mut DLManagedTensor;
                    if let Some(d) = (*m).deleter {
                        d(m)
                    }
                }
            }
        });
    }
}

/// Calls `f` with the byte offset of every element, in row-major order.
fn for_each_offset(shape: &[usize], strides: &[isize], base: isize, f: &mut impl FnMut(isize)) {
    match shape.split_first() {
        None => f(base),
        Some((&n, rest)) => {
            for i in 0..n as isize {
                for_each_offset(rest, &strides[1..], base + i * strides[0], f);
            }
        }
    }
}

/// Builds the tensor for a capsule's DLTensor. Validation happens before the
/// capsule is renamed: a refused capsule stays with its producer's destructor.
fn import(capsule: &Bound<'_, PyAny>, copy: Option<bool>) -> PyResult<Tensor> {
    let cap = capsule.as_ptr();
    // SAFETY: PyCapsule_* on a live object; GetPointer only after IsValid said yes.
    let (managed, versioned) = unsafe {
        if ffi::PyCapsule_CheckExact(cap) == 0 {
            return Err(PyTypeError::new_err(format!(
                "rumus.from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got {}",
                capsule.get_type().name()?
            )));
        }
        if ffi::PyCapsule_IsValid(cap, VERSIONED.as_ptr()) == 1 {
            (ffi::PyCapsule_GetPointer(cap, VERSIONED.as_ptr()), true)
        } else if ffi::PyCapsule_IsValid(cap, LEGACY.as_ptr()) == 1 {
            (ffi::PyCapsule_GetPointer(cap, LEGACY.as_ptr()), false)
        } else {
            let name = ffi::PyCapsule_GetName(cap);
            let name = if name.is_null() {
                "<no name>".into()
            } else {
                CStr::from_ptr(name).to_string_lossy()
            };
            if name.starts_with("used_dltensor") {
                return Err(PyRuntimeError::new_err("rumus.from_dlpack: this DLPack capsule was already consumed (a capsule can be consumed only once)"));
            }
            return Err(PyTypeError::new_err(format!(
                "rumus.from_dlpack: expected a capsule named \"dltensor\" or \"dltensor_versioned\", got \"{name}\""
            )));
        }
    };
    // SAFETY: a valid capsule of that name points to the managed tensor described by the spec.
    let (dl, flags) = unsafe {
        if versioned {
            let m = &*(managed as *const DLManagedTensorVersioned);
            if m.version.major != 1 {
                return Err(PyBufferError::new_err(format!(
                    "rumus.from_dlpack: unsupported DLPack version {}.{} (rumus reads 1.x)",
                    m.version.major, m.version.minor
                )));
            }
            (&m.dl_tensor, m.flags)
        } else {
            (&(*(managed as *const DLManagedTensor)).dl_tensor, 0)
        }
    };
    if !matches!(dl.device.device_type, KDL_CPU | KDL_CUDA_HOST | KDL_ROCM_HOST) {
        return Err(PyBufferError::new_err(format!(
            "rumus.from_dlpack: can't import a tensor on {}: rumus reads host memory only (kDLCPU); copy it to the CPU first",
            device_name(dl.device)
        )));
    }
    let dtype = from_dl(dl.dtype)?;
    let item = dtype.size() as isize;
    let ndim = usize::try_from(dl.ndim)
        .map_err(|_| PyBufferError::new_err(format!("rumus.from_dlpack: ndim {} < 0", dl.ndim)))?;
    // SAFETY: shape and (when non-null) strides hold ndim entries.
    let raw_shape = unsafe { std::slice::from_raw_parts(dl.shape, ndim) };
    let shape: Vec<usize> =
        raw_shape.iter().map(|&n| usize::try_from(n)).collect::<Result<_, _>>().map_err(|_| {
            PyBufferError::new_err(format!(
                "rumus.from_dlpack: negative size in shape {raw_shape:?}"
            ))
        })?;
    let numel = shape.iter().try_fold(1usize, |a, &n| a.checked_mul(n)).ok_or_else(|| {
        PyBufferError::new_err(format!("rumus.from_dlpack: shape {shape:?} overflows"))
    })?;
    let strides: Vec<isize> = if dl.strides.is_null() {
        contiguous_strides(&shape).to_vec()
    } else {
        // SAFETY: as above. A size-1 dim's stride is never used: kept non-negative.
        let s = unsafe { std::slice::from_raw_parts(dl.strides, ndim) };
        s.iter()
            .zip(&shape)
            .map(|(&s, &n)| if n == 1 { s.max(0) as isize } else { s as isize })
            .collect()
    };
    let data = (dl.data as *mut u8).wrapping_add(dl.byte_offset as usize);
    if numel > 0 && dl.data.is_null() {
        return Err(PyBufferError::new_err("rumus.from_dlpack: null data pointer"));
    }
    let byte_strides: Vec<isize> = strides.iter().map(|&s| s * item).collect();
    let layout =
        Layout { shape: shape.as_slice().into(), strides: strides.as_slice().into(), offset: 0 };
    let read_only = flags & FLAG_READ_ONLY != 0;
    let unusual = strides.iter().any(|&s| s < 0) || !(data as usize).is_multiple_of(item as usize);
    // Rust bools must be 0 or 1; other producers may treat any non-zero byte as true.
    let odd_bools = dtype == DType::Bool && numel > 0 && {
        let mut odd = false;
        // SAFETY: every offset lies in the producer's memory.
        for_each_offset(&shape, &byte_strides, 0, &mut |o| odd |= unsafe { *data.offset(o) } > 1);
        odd
    };
    let needs_copy = numel > 0 && (read_only || unusual || odd_bools);
    if needs_copy && copy == Some(false) {
        let why = if read_only {
            "the array is read-only (rumus tensors are always writable)"
        } else if odd_bools {
            "its bool bytes are not all 0 or 1"
        } else {
            "it has negative strides or misaligned data"
        };
        return Err(PyBufferError::new_err(format!(
            "rumus.from_dlpack: copy=False, but a copy is needed: {why}"
        )));
    }
    // Consumed from here on: dropping `producer` releases the producer's memory.
    let used = if versioned { VERSIONED_USED } else { LEGACY_USED };
    // SAFETY: a valid capsule; the new name is static.
    if unsafe { ffi::PyCapsule_SetName(cap, used.as_ptr()) } != 0 {
        return Err(PyErr::fetch(capsule.py()));
    }
    let producer = Producer { managed, versioned };
    if needs_copy || copy == Some(true) || numel == 0 {
        let out = Tensor::for_output(&shape, dtype)?;
        let dst = out.storage().cpu_ptr()?;
        let dense = layout.is_contiguous();
        let mut i = 0;
        // SAFETY: offsets lie in the producer's memory; `out` holds numel elements.
        unsafe {
            if dense {
                std::ptr::copy_nonoverlapping(data, dst, numel * item as usize);
            } else {
                for_each_offset(&shape, &byte_strides, 0, &mut |o| {
                    std::ptr::copy_nonoverlapping(data.offset(o), dst.add(i), item as usize);
                    i += item as usize;
                });
            }
            if dtype == DType::Bool {
                for j in 0..numel {
                    *dst.add(j) = (*dst.add(j) != 0) as u8;
                }
            }
        }
        drop(producer);
        return Ok(out);
    }
    // Non-negative strides: the memory spans [data, data + span elements).
    let span = 1 + shape.iter().zip(&strides).map(|(&n, &s)| (n as isize - 1) * s).sum::<isize>();
    // SAFETY: the producer keeps [data, data + span * item) valid until its deleter runs.
    let buf =
        unsafe { CpuBuffer::borrowed(data, span as usize * item as usize, Box::new(producer)) };
    Ok(Tensor::new(Arc::new(Storage::from_cpu(dtype, span as usize, buf)), layout))
}

/// `rumus.from_dlpack` on a capsule (python/rumus/utils/dlpack.py drives the protocol).
#[pyfunction]
#[pyo3(signature = (capsule, copy=None))]
fn _from_dlpack_capsule(capsule: &Bound<'_, PyAny>, copy: Option<bool>) -> PyResult<PyTensor> {
    Ok(wrap(import(capsule, copy)?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_from_dlpack_capsule, m)?)?;
    m.add_function(wrap_pyfunction!(_to_dlpack, m)?)?;
    Ok(())
}
