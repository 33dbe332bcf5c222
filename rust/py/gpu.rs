//! rumus.gpu: availability, adapter facts, synchronization, memory and
//! transfer statistics (python/rumus/gpu.py wraps these).

use crate::backend::gpu::exec::Variant;
use crate::backend::gpu::{
    buffer_pool, context, exec, fence, fusion, fusion_codegen, graph, matmul_coop, profile, shaders,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::atomic::Ordering;

/// Makes `device` (None: the current device) the one the next GPU work uses.
fn enter(device: Option<usize>) -> crate::error::Result<()> {
    context::enter(device.or_else(context::current_index).unwrap_or(0))
}

#[pyfunction]
fn _gpu_is_available(py: Python<'_>) -> bool {
    py.detach(context::is_available)
}

/// Why no GPU is available (None when one is).
#[pyfunction]
fn _gpu_unavailable_reason(py: Python<'_>) -> Option<String> {
    py.detach(|| context::current().and_then(context::get_on).err().map(|e| e.to_string()))
}

#[pyfunction]
#[pyo3(signature = (device=None))]
fn _gpu_adapter_info(py: Python<'_>, device: Option<usize>) -> PyResult<Bound<'_, PyDict>> {
    let ctx = py.detach(|| enter(device).and_then(|_| context::get()))?;
    let d = PyDict::new(py);
    let i = &ctx.info;
    d.set_item("name", &i.name)?;
    d.set_item("backend", i.backend.to_string())?;
    d.set_item("device_type", format!("{:?}", i.device_type))?;
    d.set_item("vendor", i.vendor)?;
    d.set_item("device", i.device)?;
    d.set_item("driver", &i.driver)?;
    d.set_item("driver_info", &i.driver_info)?;
    d.set_item("shader_f16", ctx.has_f16())?;
    d.set_item("max_buffer_size", ctx.limits.max_buffer_size)?;
    d.set_item("max_storage_buffer_binding_size", ctx.limits.max_storage_buffer_binding_size)?;
    let l = &ctx.limits;
    d.set_item("max_compute_workgroups_per_dimension", l.max_compute_workgroups_per_dimension)?;
    d.set_item("max_compute_invocations_per_workgroup", l.max_compute_invocations_per_workgroup)?;
    d.set_item("max_compute_workgroup_storage_size", l.max_compute_workgroup_storage_size)?;
    let coop: Vec<String> = ctx
        .coop
        .iter()
        .map(|p| {
            let sat = if p.saturating_accumulation { " saturating" } else { "" };
            let (ab, cr) = (format!("{:?}", p.ab_type), format!("{:?}", p.cr_type));
            let (ab, cr) = (ab.to_lowercase(), cr.to_lowercase());
            format!("{}x{}x{} {}->{}{}", p.m_size, p.n_size, p.k_size, ab, cr, sat)
        })
        .collect();
    d.set_item("cooperative_matrix", coop)?;
    d.set_item("cooperative_matrix_kernel", matmul_coop::describe(ctx))?;
    Ok(d)
}

/// The adapters' names in `gpu:i` order (no device is created).
#[pyfunction]
fn _gpu_adapter_names(py: Python<'_>) -> Vec<String> {
    py.detach(context::adapter_names)
}

/// Makes `gpu:<index>` the current device (what "gpu" means); `explicit=False` is a
/// proposal (the local rank) that RUMUS_GPU_ADAPTER and set_device override.
#[pyfunction]
#[pyo3(signature = (index, explicit=true))]
fn _gpu_set_device(py: Python<'_>, index: i64, explicit: bool) -> PyResult<()> {
    if index < 0 {
        return Err(PyValueError::new_err(format!(
            "Device index must not be negative, got {}",
            index
        )));
    }
    Ok(py.detach(|| context::request(index as usize, explicit))?)
}

/// The adapter index `gpu` means in this process (None without an adapter).
#[pyfunction]
fn _gpu_current_device(py: Python<'_>) -> Option<usize> {
    py.detach(context::current_index)
}

#[pyfunction]
#[pyo3(signature = (device=None))]
fn _gpu_synchronize(py: Python<'_>, device: Option<usize>) -> PyResult<()> {
    Ok(py.detach(|| enter(device).and_then(|_| exec::synchronize()))?)
}

/// (allocated, reserved, peak allocated) in bytes, of one device.
#[pyfunction]
#[pyo3(signature = (device=None))]
fn _gpu_memory_stats(device: Option<usize>) -> PyResult<(u64, u64, u64)> {
    enter(device)?;
    Ok(buffer_pool::stats())
}

#[pyfunction]
#[pyo3(signature = (device=None))]
fn _gpu_reset_peak_memory_stats(device: Option<usize>) -> PyResult<()> {
    enter(device)?;
    buffer_pool::reset_peak();
    Ok(())
}

#[pyfunction]
#[pyo3(signature = (device=None))]
fn _gpu_empty_cache(py: Python<'_>, device: Option<usize>) -> PyResult<()> {
    Ok(py.detach(|| enter(device).and_then(|_| buffer_pool::empty_cache()))?)
}

/// (bytes to device, copies to device, bytes to host, copies to host).
#[pyfunction]
fn _gpu_transfer_stats() -> (u64, u64, u64, u64) {
    let r = |c: &[std::sync::atomic::AtomicU64; 2], i: usize| c[i].load(Ordering::Relaxed);
    (r(&exec::TO_DEVICE, 0), r(&exec::TO_DEVICE, 1), r(&exec::TO_HOST, 0), r(&exec::TO_HOST, 1))
}

#[pyfunction]
fn _gpu_reset_transfer_stats() {
    for c in exec::TO_DEVICE.iter().chain(exec::TO_HOST.iter()) {
        c.store(0, Ordering::Relaxed);
    }
}

/// Queue counters by name (rumus.gpu.queue_stats()).
#[pyfunction]
fn _gpu_queue_stats(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (name, c) in fence::STAT_NAMES.iter().zip(&fence::STATS) {
        d.set_item(*name, c.load(Ordering::Relaxed))?;
    }
    Ok(d)
}

#[pyfunction]
fn _gpu_reset_queue_stats() {
    for c in &fence::STATS {
        c.store(0, Ordering::Relaxed);
    }
}

#[pyfunction]
#[pyo3(signature = (device=None))]
fn _gpu_profile_start(py: Python<'_>, device: Option<usize>) -> PyResult<()> {
    Ok(py.detach(|| enter(device).and_then(|_| profile::start()))?)
}

/// Every profiled dispatch's (kernel name, GPU nanoseconds).
#[pyfunction]
fn _gpu_profile_stop(py: Python<'_>) -> PyResult<Vec<(String, f64)>> {
    Ok(py.detach(profile::stop)?)
}

#[pyfunction]
#[pyo3(signature = (device=None))]
fn _gpu_graph_begin(py: Python<'_>, device: Option<usize>) -> PyResult<()> {
    Ok(py.detach(|| enter(device).and_then(|_| graph::begin()))?)
}

/// Closes the capture and returns its graph.
#[pyfunction]
fn _gpu_graph_end(py: Python<'_>) -> PyResult<GpuGraph> {
    Ok(GpuGraph(py.detach(graph::end)?))
}

/// A captured graph (rumus.gpu.GPUGraph wraps it).
#[pyclass(name = "_GpuGraph", module = "rumus._rumus", frozen)]
pub struct GpuGraph(graph::Graph);

#[pymethods]
impl GpuGraph {
    /// Submits the recorded work once.
    fn replay(&self, py: Python<'_>) -> PyResult<()> {
        Ok(py.detach(|| self.0.replay())?)
    }
    /// Recorded commands (dispatches and copies).
    fn __len__(&self) -> usize {
        self.0.len()
    }
    /// Bytes of GPU buffers the graph keeps alive.
    fn owned_bytes(&self) -> u64 {
        self.0.owned_bytes()
    }
}

/// (kernel dispatches, fused kernel dispatches, fused kernels compiled).
#[pyfunction]
fn _gpu_kernel_stats() -> (u64, u64, usize) {
    (
        exec::DISPATCHES.load(Ordering::Relaxed),
        fusion::FUSED_DISPATCHES.load(Ordering::Relaxed),
        fusion_codegen::sources_count(),
    )
}

#[pyfunction]
fn _gpu_reset_kernel_stats() {
    exec::DISPATCHES.store(0, Ordering::Relaxed);
    fusion::FUSED_DISPATCHES.store(0, Ordering::Relaxed);
}

/// Turns elementwise fusion on or off (pending results are written first);
/// returns the previous setting. For tests' A/B runs.
#[pyfunction]
fn _gpu_set_fusion(py: Python<'_>, on: bool) -> PyResult<bool> {
    Ok(py.detach(|| fusion::set_enabled(on))?)
}

/// Whether elementwise fusion is on.
#[pyfunction]
fn _gpu_fusion_enabled() -> bool {
    fusion::enabled()
}

/// The WGSL of every fused kernel generated so far.
#[pyfunction]
fn _gpu_fused_sources() -> Vec<String> {
    fusion_codegen::sources()
}

/// Validates WGSL with naga; returns the bindings `entry` uses.
#[pyfunction]
fn _gpu_validate_wgsl(source: &str, entry: &str) -> PyResult<Vec<u32>> {
    exec::used_bindings(source, entry).map_err(PyValueError::new_err)
}

/// The WGSL rumus compiles for shaders/<name>.wgsl (code constants
/// prepended; `f16` for the float16 variant), for the wgpu-py shader tests.
#[pyfunction]
#[pyo3(signature = (name, f16=false))]
fn _gpu_shader_source(name: &str, f16: bool) -> PyResult<String> {
    let shader = shaders::by_name(name)
        .ok_or_else(|| PyValueError::new_err(format!("no shader named {:?}", name)))?;
    Ok(shaders::source(shader, if f16 { Variant::F16 } else { Variant::F32 }))
}

/// Every code constant the shaders see, by WGSL name.
#[pyfunction]
fn _gpu_codes(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for s in shaders::ALL {
        for (name, value) in (s.codes)().into_iter().flatten() {
            d.set_item(name, value)?;
        }
    }
    Ok(d)
}

/// The matmul variant chosen per shape class in this process, as
/// ``(class, variant, how)`` tuples (how: tuned, cached, forced, heuristic).
#[pyfunction]
fn _gpu_matmul_choices() -> Vec<(String, String, String)> {
    crate::backend::gpu::autotune::choices()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_gpu_matmul_choices, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_shader_source, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_codes, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_is_available, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_unavailable_reason, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_adapter_info, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_adapter_names, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_set_device, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_current_device, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_reset_peak_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_empty_cache, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_transfer_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_reset_transfer_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_queue_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_reset_queue_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_profile_start, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_profile_stop, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_graph_begin, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_graph_end, m)?)?;
    m.add_class::<GpuGraph>()?;
    m.add_function(wrap_pyfunction!(_gpu_kernel_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_reset_kernel_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_set_fusion, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_fusion_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_fused_sources, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_validate_wgsl, m)?)?;
    Ok(())
}
