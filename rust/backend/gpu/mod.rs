//! GPU backend on wgpu. The foundation only defines the buffer type that a
//! `Storage` can hold; context, pools, pipelines and shaders come with the GPU issue.

pub struct GpuBuffer {
    pub buffer: wgpu::Buffer,
    /// Bytes of tensor data (the buffer itself may be larger: pool buckets).
    pub nbytes: u64,
}
