//! GPU backend on wgpu: context, buffer pool, pipeline cache, command batching
//! and one launcher file per op family (mirroring `backend::cpu`).

pub mod attention;
pub mod autotune;
pub mod batch_norm;
pub mod bf16;
pub mod buffer_pool;
pub mod codes;
pub mod context;
pub mod conv;
pub mod conv_igemm;
pub mod dtype;
pub mod elementwise;
pub mod exec;
pub mod fence;
pub mod fusion;
pub mod fusion_codegen;
pub mod graph;
pub mod index;
pub mod matmul;
pub mod matmul_bf16;
pub mod matmul_coop;
pub mod norm;
pub mod params;
pub mod pipeline;
pub mod pool;
pub mod profile;
pub mod qgemm;
pub mod random;
pub mod reduce;
pub mod rnn;
pub mod sample;
pub mod shaders;
pub mod softmax;
pub mod sort;
pub mod transfer;

pub use buffer_pool::GpuBuffer;
