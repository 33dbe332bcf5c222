//! The wgpu devices: one context (device and queue) per logical GPU index,
//! created lazily on the first use of that index, with the adapter's own
//! limits. GPU work goes to the thread's active device, which follows the
//! tensors an op touches (`activate`). wgpu reports errors through callbacks
//! (and panics without one); they are collected here and turned into `Error`s
//! by `check`.

use crate::bail;
use crate::error::Result;
use std::sync::{Arc, Mutex, OnceLock};

pub struct Context {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    pub features: wgpu::Features,
    /// The cooperative-matrix (tensor core) configurations the adapter offers;
    /// empty unless the device was created with them (`coop_requested`).
    pub coop: Vec<wgpu::CooperativeMatrixProperties>,
    /// Errors reported since the last `check`, and the reason the device was lost.
    errors: Arc<Mutex<Vec<String>>>,
    lost: Arc<Mutex<Option<String>>>,
}

/// The most logical devices (`gpu:0` ... `gpu:15`) a process drives.
pub const MAX_GPUS: usize = 16;

/// One context per logical device, each created on first use of its index.
static CONTEXTS: [OnceLock<std::result::Result<Context, String>>; MAX_GPUS] =
    [const { OnceLock::new() }; MAX_GPUS];

thread_local! {
    /// The device the GPU work of this thread runs on: set from the tensors
    /// an op reads or allocates (`activate`), as PyTorch's device guard does.
    static ACTIVE: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

/// The logical device GPU work on this thread goes to now.
pub fn active() -> usize {
    ACTIVE.with(|a| a.get()) as usize
}

/// Points this thread's GPU work at device `index` (a tensor's own index,
/// so it is below `MAX_GPUS`).
pub fn activate(index: usize) {
    ACTIVE.with(|a| a.set(index as u8));
}

/// The entry of a per-device table for the active device.
pub fn here<T>(table: &[T; MAX_GPUS]) -> &T {
    &table[active()]
}

/// The active device's context, created on first call; the error says why
/// there is none.
pub fn get() -> Result<&'static Context> {
    get_on(active())
}

/// Device `index`'s context, created on first call.
pub fn get_on(index: usize) -> Result<&'static Context> {
    let Some(cell) = CONTEXTS.get(index) else {
        bail!(Runtime, "device gpu:{} is not available: {}", index, listing(&adapter_names()))
    };
    match cell.get_or_init(|| create(index)) {
        Ok(c) => Ok(c),
        Err(e) => bail!(Runtime, "no GPU available: {}", e),
    }
}

/// Checks that `gpu:<index>` exists and makes it the active device.
pub fn enter(index: usize) -> Result<()> {
    check_index(index)?;
    activate(index);
    Ok(())
}

/// Checks that `gpu:<index>` names a device of this machine.
pub fn check_index(index: usize) -> Result<()> {
    static COUNT: OnceLock<usize> = OnceLock::new();
    if index >= *COUNT.get_or_init(|| adapter_names().len()) {
        bail!(Runtime, "device gpu:{} is not available: {}", index, listing(&adapter_names()));
    }
    Ok(())
}

/// Whether the current device's context exists (creating it if needed).
pub fn is_available() -> bool {
    current_index().is_some_and(|i| get_on(i).is_ok())
}

/// Whether the adapter search ran (successfully or not); nothing starts it but `get`.
pub fn is_initialized() -> bool {
    CONTEXTS.iter().any(|c| c.get().is_some())
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

/// The adapters wgpu can see, in a stable order: best type first (discrete,
/// integrated, virtual, other, software), then PCI bus id, name and backend, so
/// `gpu:i` names the same card in every process of a machine. Enumerated once.
fn adapters() -> &'static [wgpu::Adapter] {
    static ALL: OnceLock<Vec<wgpu::Adapter>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = pollster::block_on(instance().enumerate_adapters(BACKENDS));
        all.sort_by_cached_key(|a| {
            let i = a.get_info();
            let key = (i.device_pci_bus_id.clone(), i.name.clone(), i.backend.to_string());
            (std::cmp::Reverse(rank(i.device_type)), key, i.device)
        });
        all
    })
}

/// `RUMUS_GPU_VIRTUAL_DEVICES=N` (a developer and test option): each adapter
/// shows as N logical devices, each a wgpu device of its own requested from
/// that adapter, so code for several GPUs runs on a machine with one.
fn virtual_devices() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        let v = std::env::var("RUMUS_GPU_VIRTUAL_DEVICES").ok();
        v.and_then(|v| v.trim().parse::<usize>().ok()).unwrap_or(1).max(1)
    })
}

/// The logical devices' names, in `gpu:i` order (enumerating creates no
/// device): the adapters', each repeated `RUMUS_GPU_VIRTUAL_DEVICES` times,
/// and at most `MAX_GPUS`.
pub fn adapter_names() -> Vec<String> {
    let n = virtual_devices();
    let mut names = Vec::new();
    for a in adapters() {
        let name = a.get_info().name;
        names.extend(std::iter::repeat_n(name, n));
    }
    names.truncate(MAX_GPUS);
    names
}

/// The device `gpu` (no index) means, and how firmly it was chosen:
/// `set_device` (explicit, any time) beats `RUMUS_GPU_ADAPTER`, which beats the
/// local rank that `init_process_group` proposes (taken modulo the device
/// count, so ranks share cards when there are fewer cards than ranks).
static REQUESTED: Mutex<Option<(usize, bool)>> = Mutex::new(None);

fn listing(names: &[String]) -> String {
    let all: Vec<String> =
        names.iter().enumerate().map(|(i, n)| format!("gpu:{}: {}", i, n)).collect();
    format!("{} adapter(s) found ({})", names.len(), all.join(", "))
}

/// The index `gpu` (no index) means now.
fn resolve() -> std::result::Result<usize, String> {
    let names = adapter_names();
    if names.is_empty() {
        return Err("wgpu found no Vulkan, Metal or DX12 adapter (on Linux without a GPU, install Mesa's lavapipe: mesa-vulkan-drivers)".into());
    }
    let requested = *crate::tensor::lock(&REQUESTED);
    if let Some((i, true)) = requested {
        return Ok(i);
    }
    if let Ok(want) = std::env::var("RUMUS_GPU_ADAPTER") {
        if let Ok(i) = want.trim().parse::<usize>() {
            if i >= names.len() {
                return Err(format!(
                    "RUMUS_GPU_ADAPTER={} is not an adapter index: {}",
                    i,
                    listing(&names)
                ));
            }
            return Ok(i);
        }
        let lower = want.to_lowercase();
        return names.iter().position(|n| n.to_lowercase().contains(&lower)).ok_or_else(|| {
            format!(
                "RUMUS_GPU_ADAPTER={:?} matches none of the adapters: {}",
                want,
                listing(&names)
            )
        });
    }
    Ok(requested.map_or(0, |(i, _)| i % names.len()))
}

/// The index `gpu` means in this process (None when there is no adapter).
pub fn current_index() -> Option<usize> {
    resolve().ok()
}

/// The index `gpu` means, or why there is none (no adapter, a bad `RUMUS_GPU_ADAPTER`).
pub fn current() -> Result<usize> {
    resolve().or_else(|e| bail!(Runtime, "no GPU available: {}", e))
}

/// Makes `index` what `gpu` means. Explicit requests (`set_device`) must name
/// an existing device and may come at any time; the local-rank proposal
/// yields to them and to `RUMUS_GPU_ADAPTER`.
pub fn request(index: usize, explicit: bool) -> Result<()> {
    if explicit {
        check_index(index)?;
    } else if matches!(*crate::tensor::lock(&REQUESTED), Some((_, true))) {
        return Ok(());
    }
    *crate::tensor::lock(&REQUESTED) = Some((index, explicit));
    Ok(())
}

fn create(index: usize) -> std::result::Result<Context, String> {
    let names = adapter_names();
    if index >= names.len() {
        return Err(format!("device gpu:{} is not available: {}", index, listing(&names)));
    }
    let adapter = &adapters()[index / virtual_devices()];
    let info = adapter.get_info();
    // The adapter's own limits, not WebGPU's small defaults: large tensors fit.
    let limits = adapter.limits();
    // Timestamp queries only serve rumus.gpu.profile(); enabling them costs nothing.
    let mut features =
        adapter.features() & (wgpu::Features::SHADER_F16 | wgpu::Features::TIMESTAMP_QUERY);
    // Tensor cores (backend/gpu/matmul_coop.rs): cooperative matrices, with the
    // subgroup builtins its kernels use. wgpu gates them as experimental.
    let coop_features = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
        | wgpu::Features::SUBGROUP
        | wgpu::Features::SHADER_F16;
    let coop = if adapter.features().contains(coop_features) && !coop_disabled() {
        features |= coop_features;
        adapter.cooperative_matrix_properties()
    } else {
        Vec::new()
    };
    let mut desc = wgpu::DeviceDescriptor {
        label: Some("rumus"),
        required_features: features,
        required_limits: limits.clone(),
        ..Default::default()
    };
    if !coop.is_empty() {
        // SAFETY: only the cooperative-matrix kernels use the experimental
        // feature, and `RUMUS_GPU_DISABLE_COOP=1` keeps it off entirely.
        desc.experimental_features = unsafe { wgpu::ExperimentalFeatures::enabled() };
    }
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
    Ok(Context { device, queue, info, limits, features, coop, errors, lost })
}

/// `RUMUS_GPU_DISABLE_COOP=1` (any value but empty or 0): no tensor-core
/// kernels, the portable ones instead (read at each matmul, and at start-up,
/// where it also keeps the experimental feature off).
pub fn coop_disabled() -> bool {
    disables_coop(std::env::var("RUMUS_GPU_DISABLE_COOP").ok().as_deref())
}

/// Whether a `RUMUS_GPU_DISABLE_COOP` value (None: unset) turns tensor cores off.
pub fn disables_coop(value: Option<&str>) -> bool {
    value.is_some_and(|v| !v.trim().is_empty() && v.trim() != "0")
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
