//! Python objects for dtypes, devices and random generators.

use crate::backend::cpu::random::{default_generator, Generator, GeneratorRef, STATE_BYTES};
use crate::tensor::{DType, Device, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString, PyType};
use std::sync::{Arc, Mutex};

/// A tensor element type: rumus.float32, rumus.int64, ... (not constructible).
#[pyclass(name = "dtype", module = "rumus", frozen, eq, hash, from_py_object)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDType {
    pub d: DType,
}

#[pymethods]
impl PyDType {
    /// Whether the dtype is a floating-point type.
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.d.is_float()
    }
    /// Whether the dtype is complex (complex64 or complex128).
    #[getter]
    fn is_complex(&self) -> bool {
        self.d.is_complex()
    }
    /// The size of one element in bytes.
    #[getter]
    fn itemsize(&self) -> usize {
        self.d.size()
    }
    /// Whether the dtype can hold negative values.
    #[getter]
    fn is_signed(&self) -> bool {
        !matches!(self.d, DType::Bool | DType::U8)
    }
    fn __repr__(&self) -> String {
        format!("rumus.{}", self.d.name())
    }
    /// Pickles as a reference to the module attribute `rumus.<name>`.
    fn __reduce__(&self) -> &'static str {
        self.d.name()
    }
}

/// A dtype argument: a rumus dtype, or the Python types float/int/bool as PyTorch accepts.
pub fn dtype_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DType>> {
    let Some(obj) = obj else { return Ok(None) };
    if obj.is_none() {
        return Ok(None);
    }
    if let Ok(d) = obj.cast::<PyDType>() {
        return Ok(Some(d.get().d));
    }
    if let Ok(t) = obj.cast::<PyType>() {
        if t.is(obj.py().get_type::<PyFloat>()) {
            return Ok(Some(DType::F64));
        }
        if t.is(obj.py().get_type::<PyBool>()) {
            return Ok(Some(DType::Bool));
        }
        if t.is(obj.py().get_type::<PyInt>()) {
            return Ok(Some(DType::I64));
        }
    }
    if let Ok(s) = obj.cast::<PyString>() {
        if let Some(d) = DType::from_name(&s.extract::<String>()?) {
            return Ok(Some(d));
        }
    }
    Err(PyTypeError::new_err(format!("dtype must be a rumus.dtype, got {}", obj.repr()?)))
}

/// A device: ``device("cpu")``, ``device("gpu")`` or ``device("gpu", 0)``.
///
/// Args:
///   type (str): ``"cpu"``, ``"gpu"`` or ``"gpu:0"``.
///   index (int, optional): the device index (0 for the GPU).
#[pyclass(name = "device", module = "rumus", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyDevice {
    kind: String,
    index: Option<i64>,
}

#[pymethods]
impl PyDevice {
    #[new]
    #[pyo3(signature = (r#type, index=None))]
    fn new(r#type: &str, index: Option<i64>) -> PyResult<PyDevice> {
        let (kind, idx) = match r#type.split_once(':') {
            Some((k, i)) => (
                k,
                Some(i.parse::<i64>().map_err(|_| {
                    PyRuntimeError::new_err(format!("Invalid device string: '{}'", r#type))
                })?),
            ),
            None => (r#type, index),
        };
        if kind == "cuda" {
            // Ported PyTorch code: say what to write instead.
            return Err(PyRuntimeError::new_err(format!(
                "rumus has no 'cuda' device: use 'gpu' (any GPU, through wgpu) instead of '{}'; \
                 rumus.cuda.is_available() is always False",
                r#type
            )));
        }
        if !matches!(kind, "cpu" | "gpu" | "wgpu") {
            return Err(PyRuntimeError::new_err(format!(
                "Expected one of cpu, gpu device type at start of device string: {}",
                r#type
            )));
        }
        Ok(PyDevice { kind: kind.to_string(), index: idx })
    }
    /// The device type: ``"cpu"`` or ``"gpu"``.
    #[getter]
    fn r#type(&self) -> &str {
        &self.kind
    }
    /// The device index: None for the CPU (and for "gpu" given without one), i for gpu:i.
    #[getter]
    fn index(&self) -> Option<i64> {
        self.index
    }
    fn __repr__(&self) -> String {
        match self.index {
            Some(i) => format!("device(type='{}', index={})", self.kind, i),
            None => format!("device(type='{}')", self.kind),
        }
    }
    fn __str__(&self) -> String {
        match self.index {
            Some(i) => format!("{}:{}", self.kind, i),
            None => self.kind.clone(),
        }
    }
}

impl PyDevice {
    pub fn of(d: Device) -> PyDevice {
        match d {
            Device::Cpu => PyDevice { kind: "cpu".into(), index: None },
            Device::Gpu(i) => PyDevice { kind: "gpu".into(), index: Some(i as i64) },
        }
    }
}

/// Where creation functions put tensors when no device is given
/// (rumus.set_default_device); 0 = CPU, 1 = the current GPU, 2 + i = gpu:i.
static DEFAULT_DEVICE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

pub fn default_device() -> Device {
    match DEFAULT_DEVICE.load(std::sync::atomic::Ordering::Relaxed) {
        0 => Device::Cpu,
        // Checked by set_default_device.
        1 => Device::Gpu(crate::backend::gpu::context::current_index().unwrap_or(0) as u8),
        i => Device::Gpu(i - 2),
    }
}

/// The GPU `gpu` (no index) means now (`rumus.gpu.set_device`).
pub fn current_gpu() -> PyResult<Device> {
    Ok(Device::Gpu(crate::backend::gpu::context::current()? as u8))
}

/// Sets the device the creation functions use by default.
///
/// Args:
///   device (str or device or None): ``"cpu"``, ``"gpu"``; None restores the CPU.
#[pyfunction]
pub fn set_default_device(device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let code = match device_parts(device)? {
        None | Some(None) => 0,
        Some(Some(None)) => {
            crate::backend::gpu::context::current()?;
            1
        }
        Some(Some(Some(i))) => i as u8 + 2,
    };
    DEFAULT_DEVICE.store(code, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// The device the creation functions use by default.
///
/// Returns:
///   device: the default device.
#[pyfunction]
pub fn get_default_device() -> PyDevice {
    PyDevice::of(default_device())
}

/// A device argument: None when absent. "gpu", "wgpu", "gpu:<i>", an integer i
/// and rumus.device("gpu", i) name a GPU; "gpu" alone is the current one
/// (`rumus.gpu.set_device`).
pub fn device_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Device>> {
    Ok(match device_parts(obj)? {
        None => None,
        Some(None) => Some(Device::Cpu),
        Some(Some(None)) => Some(current_gpu()?),
        Some(Some(Some(i))) => Some(Device::Gpu(i as u8)),
    })
}

/// A device argument as None (absent), Some(None) (the CPU) or
/// Some(Some(index)) for a GPU (index None: no index given); indices are checked.
#[allow(clippy::type_complexity)]
fn device_parts(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Option<Option<usize>>>> {
    let Some(obj) = obj else { return Ok(None) };
    if obj.is_none() {
        return Ok(None);
    }
    let dev = if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(
            "device must be a string, an int or rumus.device, got a bool",
        ));
    } else if let Ok(i) = obj.extract::<i64>() {
        PyDevice { kind: "gpu".into(), index: Some(i) }
    } else if let Ok(d) = obj.cast::<PyDevice>() {
        d.get().clone()
    } else if let Ok(s) = obj.cast::<PyString>() {
        PyDevice::new(&s.extract::<String>()?, None)?
    } else {
        return Err(PyTypeError::new_err(format!(
            "device must be a string or rumus.device, got {}",
            obj.repr()?
        )));
    };
    match (dev.kind.as_str(), dev.index) {
        ("cpu", _) => Ok(Some(None)),
        (_, None) => Ok(Some(Some(None))),
        (_, Some(i)) if i < 0 => Err(PyRuntimeError::new_err(format!(
            "Device index must not be negative, got gpu:{}",
            i
        ))),
        (_, Some(i)) => {
            crate::backend::gpu::context::check_index(i as usize)?;
            Ok(Some(Some(Some(i as usize))))
        }
    }
}

/// A random number generator (ChaCha8); its state can be saved and restored.
///
/// Args:
///   device (str or device, optional): accepted for compatibility: the generator draws on the host.
#[pyclass(name = "Generator", module = "rumus", frozen)]
pub struct PyGenerator {
    pub g: GeneratorRef,
}

fn locked(g: &GeneratorRef) -> std::sync::MutexGuard<'_, Generator> {
    g.lock().unwrap_or_else(|e| e.into_inner())
}

#[pymethods]
impl PyGenerator {
    #[new]
    #[pyo3(signature = (device=None))]
    fn new(device: Option<&Bound<'_, PyAny>>) -> PyResult<PyGenerator> {
        // One generator serves both devices (GPU random numbers are drawn on the host).
        device_arg(device)?;
        Ok(PyGenerator { g: Arc::new(Mutex::new(Generator::new(67280421310721))) })
    }
    /// Seeds the generator.
    ///
    /// Args:
    ///   seed (int): the seed.
    ///
    /// Returns:
    ///   Generator: self.
    fn manual_seed<'py>(
        slf: Bound<'py, Self>,
        seed: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        locked(&slf.get().g).manual_seed(seed_value(seed)?);
        Ok(slf)
    }
    /// The seed the generator was last seeded with.
    ///
    /// Returns:
    ///   int: the seed.
    fn initial_seed(&self) -> u64 {
        locked(&self.g).initial_seed()
    }
    /// Reseeds from the OS clock, as torch.Generator.seed(); returns the seed.
    fn seed(&self) -> u64 {
        let s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        locked(&self.g).manual_seed(s);
        s
    }
    /// The generator's state, to restore with :meth:`set_state`.
    ///
    /// Returns:
    ///   Tensor: a uint8 tensor.
    fn get_state(&self) -> PyResult<super::tensor::PyTensor> {
        get_state(&self.g)
    }
    /// Restores a state :meth:`get_state` returned.
    ///
    /// Args:
    ///   state (Tensor): the uint8 state tensor.
    ///
    /// Returns:
    ///   Generator: self.
    fn set_state<'py>(
        slf: Bound<'py, Self>,
        state: PyRef<'py, super::tensor::PyTensor>,
    ) -> PyResult<Bound<'py, Self>> {
        set_state(&slf.get().g, &state)?;
        Ok(slf)
    }
}

/// A seed in [-2**63, 2**64): negative seeds wrap to u64 as in PyTorch.
pub fn seed_value(seed: &Bound<'_, PyAny>) -> PyResult<u64> {
    let v: i128 = seed.extract().map_err(|_| {
        PyRuntimeError::new_err(format!("Overflow when unpacking long: seed {}", seed))
    })?;
    if v < i64::MIN as i128 || v > u64::MAX as i128 {
        return Err(PyRuntimeError::new_err(format!(
            "Overflow when unpacking long: seed {} must be within [-2**63, 2**64)",
            v
        )));
    }
    Ok(v as u64)
}

pub fn get_state(g: &GeneratorRef) -> PyResult<super::tensor::PyTensor> {
    let bytes = locked(g).state();
    Ok(Tensor::from_vec(bytes, &[STATE_BYTES])?.into())
}

pub fn set_state(g: &GeneratorRef, state: &super::tensor::PyTensor) -> PyResult<()> {
    if state.t.dtype() != DType::U8 {
        return Err(PyRuntimeError::new_err(format!(
            "RNG state must be a uint8 tensor, got {}",
            state.t.dtype().name()
        )));
    }
    let bytes = state.t.to_vec::<u8>()?;
    locked(g).set_state(&bytes).ok_or_else(|| {
        PyRuntimeError::new_err(format!(
            "RNG state must hold {} bytes, got {}",
            STATE_BYTES,
            bytes.len()
        ))
    })
}

pub fn generator_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<GeneratorRef>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => match o.cast::<PyGenerator>() {
            Ok(g) => Ok(Some(g.get().g.clone())),
            Err(_) => Err(PyTypeError::new_err(format!(
                "generator must be a rumus.Generator, got {}",
                o.repr()?
            ))),
        },
    }
}

pub fn default_gen() -> GeneratorRef {
    default_generator()
}
