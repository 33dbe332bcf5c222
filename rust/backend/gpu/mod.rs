//! GPU backend on wgpu: context, buffer pool, pipeline cache, command batching
//! and one launcher file per op family (mirroring `backend::cpu`).

pub mod context;
pub mod elementwise;
pub mod exec;
pub mod transfer;
pub mod pool;
pub mod shaders;

pub use pool::GpuBuffer;
