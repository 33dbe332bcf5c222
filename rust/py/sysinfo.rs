//! What `python -m rumus` reports: the version, the CPU features detected at
//! run time (the kernels pick their SIMD width from them), and whether the
//! GPU context exists yet (importing rumus must not create it).

use pyo3::prelude::*;

/// (feature, detected) for the CPU features the kernels or gemm can use.
#[pyfunction]
fn _cpu_features() -> Vec<(&'static str, bool)> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        vec![
            ("SSE4.2", has!("sse4.2")),
            ("AVX", has!("avx")),
            ("AVX2", has!("avx2")),
            ("FMA", has!("fma")),
            ("F16C", has!("f16c")),
            ("AVX-512F", has!("avx512f")),
            ("AVX-512DQ", has!("avx512dq")),
            ("AVX-512BW", has!("avx512bw")),
            ("AVX-512VL", has!("avx512vl")),
            ("AVX512-VNNI", has!("avx512vnni")),
            ("AVX512-BF16", has!("avx512bf16")),
            ("AVX512-FP16", has!("avx512fp16")),
        ]
    }
    #[cfg(target_arch = "aarch64")]
    {
        use std::arch::is_aarch64_feature_detected as has;
        vec![
            ("NEON", has!("neon")),
            ("FP16", has!("fp16")),
            ("BF16", has!("bf16")),
            ("DOTPROD", has!("dotprod")),
            ("I8MM", has!("i8mm")),
            ("SVE", has!("sve")),
        ]
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        Vec::new()
    }
}

/// The SIMD width rumus's own elementwise kernels run at (backend::cpu::simd's choice).
#[pyfunction]
fn _cpu_kernel_isa() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") {
            return "AVX-512";
        }
        if has!("avx2") && has!("fma") {
            return "AVX2+FMA";
        }
        "SSE2"
    }
    #[cfg(target_arch = "aarch64")]
    {
        "NEON"
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        "scalar"
    }
}

/// Whether the GPU context was created (an adapter was searched for).
#[pyfunction]
fn _gpu_initialized() -> bool {
    crate::backend::gpu::context::is_initialized()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(_cpu_features, m)?)?;
    m.add_function(wrap_pyfunction!(_cpu_kernel_isa, m)?)?;
    m.add_function(wrap_pyfunction!(_gpu_initialized, m)?)?;
    Ok(())
}
