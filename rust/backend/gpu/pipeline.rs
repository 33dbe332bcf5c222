//! Compute pipelines: built once per (shader, entry point, dtype), or per key
//! for generated WGSL, validated by naga first (which also tells the
//! bindings an entry uses and may write), cached per device.

use super::context::{self, Context};
use super::shaders::{source, Shader};
use crate::bail;
use crate::error::Result;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, OnceLock};

/// Kernel element type: the shader's `T`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    F32,
    F16,
}

impl Variant {
    /// The variant whose `T` holds `dtype`: float16 kernels for float16
    /// tensors, float32 kernels for everything else.
    pub fn of(dtype: crate::tensor::DType) -> Variant {
        if dtype == crate::tensor::DType::F16 {
            Variant::F16
        } else {
            Variant::F32
        }
    }
}

pub struct Kernel {
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
    /// The bindings this entry point uses (auto layouts contain only those).
    pub used: Vec<u32>,
    /// The bindings it may write (see `fence`).
    pub written: Vec<u32>,
    /// "shader.entry", for profiles.
    pub name: Arc<str>,
}

/// (shader, entry point, variant).
type KernelKey = (&'static str, &'static str, Variant);

/// Pipelines belong to a device: one cache per device.
type KernelCache = Mutex<HashMap<KernelKey, Arc<Kernel>>>;
static KERNELS: LazyLock<[KernelCache; context::MAX_GPUS]> = LazyLock::new(Default::default);

/// Which bindings of group 0 an entry point uses, from naga's analysis.
pub fn used_bindings(source: &str, entry: &str) -> std::result::Result<Vec<u32>, String> {
    bindings(source, entry).map(|(used, _)| used)
}

/// Validates `source` with naga and returns the bindings of group 0 that
/// `entry` uses, and those it may write (storage variables declared
/// `read_write`, for `fence`), each sorted: one parse for both.
fn bindings(source: &str, entry: &str) -> std::result::Result<(Vec<u32>, Vec<u32>), String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|e| e.emit_to_string(source))?;
    let index = module
        .entry_points
        .iter()
        .position(|e| e.name == entry)
        .ok_or_else(|| format!("no entry point {}", entry))?;
    let uses = info.get_entry_point(index);
    let (mut used, mut written) = (Vec::new(), Vec::new());
    for (h, g) in module.global_variables.iter() {
        let Some(b) = g.binding.as_ref().filter(|_| !uses[h].is_empty()) else {
            continue;
        };
        used.push(b.binding);
        if matches!(g.space, naga::AddressSpace::Storage { access }
            if access.contains(naga::StorageAccess::STORE))
        {
            written.push(b.binding);
        }
    }
    used.sort_unstable();
    written.sort_unstable();
    Ok((used, written))
}

pub fn kernel(
    ctx: &Context,
    shader: &Shader,
    entry: &'static str,
    variant: Variant,
) -> Result<Arc<Kernel>> {
    let key = (shader.name, entry, variant);
    if let Some(k) = crate::tensor::lock(context::here(&KERNELS)).get(&key) {
        return Ok(k.clone());
    }
    if variant == Variant::F16 && !ctx.has_f16() {
        bail!(Type, "float16 kernels need the shader-f16 feature, which {} lacks", ctx.info.name);
    }
    let k = Arc::new(build(ctx, shader.name, source(shader, variant), entry)?);
    crate::tensor::lock(context::here(&KERNELS)).insert(key, k.clone());
    Ok(k)
}

/// Whether shaders keep wgpu's runtime checks (`RUMUS_GPU_SHADER_CHECKS=1`,
/// to debug a kernel or to measure what the checks cost).
fn shader_checks() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("RUMUS_GPU_SHADER_CHECKS").is_ok_and(|v| v.trim() == "1"))
}

/// Validates `src` with naga and builds the pipeline of `entry`.
fn build(ctx: &Context, name: &str, src: String, entry: &str) -> Result<Kernel> {
    let (used, written) = bindings(&src, entry)
        .map_err(|e| crate::error::Error::Runtime(format!("shader {}.wgsl: {}", name, e)))?;
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some(name),
        source: wgpu::ShaderSource::Wgsl(src.into()),
    };
    let module = if shader_checks() {
        ctx.device.create_shader_module(desc)
    } else {
        // SAFETY: every shader is ours, validated by naga above and tested on
        // odd shapes: indices are checked against the sizes in the shader's
        // params, loops end at those sizes and divisors are nonzero extents.
        // wgpu's checks (clamped indices, a counter in every loop, guarded
        // integer division) cost ALU in the inner loops and stop the driver
        // from unrolling them. Storage buffers stay protected by Vulkan's
        // robust buffer access where the driver has it.
        unsafe {
            ctx.device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked())
        }
    };
    let pipeline = ctx.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry),
        layout: None,
        module: &module,
        entry_point: Some(entry),
        compilation_options: Default::default(),
        cache: None,
    });
    ctx.check()?;
    let layout = pipeline.get_bind_group_layout(0);
    let name = format!("{}.{}", name, entry).into();
    Ok(Kernel { pipeline, layout, used, written, name })
}

/// Pipelines built from generated WGSL (the fusion layer's kernels), by key.
type GeneratedCache = Mutex<HashMap<String, Arc<Kernel>>>;
static GENERATED: LazyLock<[GeneratedCache; context::MAX_GPUS]> = LazyLock::new(Default::default);

/// The pipeline of `entry` in generated WGSL, cached by `key` (`source`
/// runs only on a miss).
pub fn generated(
    ctx: &Context,
    key: &str,
    source: impl FnOnce() -> String,
    entry: &str,
) -> Result<Arc<Kernel>> {
    if let Some(k) = crate::tensor::lock(context::here(&GENERATED)).get(key) {
        return Ok(k.clone());
    }
    let k = Arc::new(build(ctx, "generated", source(), entry)?);
    crate::tensor::lock(context::here(&GENERATED)).insert(key.to_string(), k.clone());
    Ok(k)
}
