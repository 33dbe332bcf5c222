//! The wgpu device: chosen and created lazily on first use, with the adapter's
//! own limits. wgpu reports errors through callbacks (and panics without one);
//! they are collected here and turned into `Error`s by `check`.

use crate::bail;
use crate::error::Result;
use std::sync::{Arc, Mutex, OnceLock};

pub struct Context {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    pub features: wgpu::Features,
    /// Errors reported since the last `check`, and the reason the device was lost.
    errors: Arc<Mutex<Vec<String>>>,
    lost: Arc<Mutex<Option<String>>>,
}

static CONTEXT: OnceLock<std::result::Result<Context, String>> = OnceLock::new();

/// The GPU context, created on first call; the error says why there is none.
pub fn get() -> Result<&'static Context> {
    match CONTEXT.get_or_init(create) {
        Ok(c) => Ok(c),
        Err(e) => bail!(Runtime, "no GPU available: {}", e),
    }
}

pub fn is_available() -> bool {
    get().is_ok()
}

/// Whether the adapter search ran (successfully or not); nothing starts it but `get`.
pub fn is_initialized() -> bool {
    CONTEXT.get().is_some()
}

/// Vulkan, Metal and DX12 (GL lacks what the compute kernels need).
const BACKENDS: wgpu::Backends = wgpu::Backends::PRIMARY;

fn instance() -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    desc.backends = BACKENDS;
    wgpu::Instance::new(desc)
}

/// Higher is preferred: discrete first (high performance), software last.
fn rank(t: wgpu::DeviceType) -> u8 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 4,
        wgpu::DeviceType::IntegratedGpu => 3,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 1,
        wgpu::DeviceType::Cpu => 0,
    }
}

/// Every adapter wgpu can see, best first; `RUMUS_GPU_ADAPTER` (a substring of
/// the name, any case) keeps only the matching ones.
pub fn adapters(instance: &wgpu::Instance) -> std::result::Result<Vec<wgpu::Adapter>, String> {
    let mut all = pollster::block_on(instance.enumerate_adapters(BACKENDS));
    all.sort_by_key(|a| std::cmp::Reverse(rank(a.get_info().device_type)));
    if let Ok(want) = std::env::var("RUMUS_GPU_ADAPTER") {
        let names: Vec<String> = all.iter().map(|a| a.get_info().name).collect();
        all.retain(|a| a.get_info().name.to_lowercase().contains(&want.to_lowercase()));
        if all.is_empty() {
            return Err(format!(
                "RUMUS_GPU_ADAPTER={:?} matches none of the adapters {:?}",
                want, names
            ));
        }
    }
    Ok(all)
}

fn create() -> std::result::Result<Context, String> {
    let instance = instance();
    let adapter = adapters(&instance)?
        .into_iter()
        .next()
        .ok_or("wgpu found no Vulkan, Metal or DX12 adapter (on Linux without a GPU, install Mesa's lavapipe: mesa-vulkan-drivers)")?;
    let info = adapter.get_info();
    // The adapter's own limits, not WebGPU's small defaults: large tensors fit.
    let limits = adapter.limits();
    let features = adapter.features() & wgpu::Features::SHADER_F16;
    let desc = wgpu::DeviceDescriptor {
        label: Some("rumus"),
        required_features: features,
        required_limits: limits.clone(),
        ..Default::default()
    };
    let (device, queue) = pollster::block_on(adapter.request_device(&desc))
        .map_err(|e| format!("{} ({}): {}", info.name, info.backend, e))?;
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = errors.clone();
    device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
        crate::tensor::lock(&sink).push(e.to_string())
    }));
    let lost: Arc<Mutex<Option<String>>> = Arc::default();
    let flag = lost.clone();
    device.set_device_lost_callback(move |reason, msg| {
        *crate::tensor::lock(&flag) = Some(format!("{:?}: {}", reason, msg));
    });
    Ok(Context { device, queue, info, limits, features, errors, lost })
}

impl Context {
    /// Bytes one binding may hold on this adapter.
    pub fn binding_limit(&self) -> u64 {
        self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size)
    }

    /// Turns errors wgpu reported since the last call into an `Error`.
    pub fn check(&self) -> Result<()> {
        if let Some(why) = crate::tensor::lock(&self.lost).clone() {
            bail!(
                Runtime,
                "the GPU device was lost ({}); restart the process to use the GPU again",
                why
            );
        }
        let errs = std::mem::take(&mut *crate::tensor::lock(&self.errors));
        if let Some(first) = errs.first() {
            if first.contains("OutOfMemory") || first.to_lowercase().contains("out of memory") {
                bail!(Runtime, "GPU out of memory: {}", first);
            }
            bail!(Runtime, "GPU error: {}", errs.join("; "));
        }
        Ok(())
    }
    pub fn has_f16(&self) -> bool {
        self.features.contains(wgpu::Features::SHADER_F16)
    }
}
