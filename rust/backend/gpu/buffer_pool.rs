//! Size-bucketed buffer pool: a tensor's buffer goes back to its bucket when
//! the storage drops and serves the next tensor of that bucket, so a training
//! loop stops allocating after its first steps.

use super::context;
use crate::bail;
use crate::error::Result;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

/// A pooled GPU buffer; returned to the pool on drop.
pub struct GpuBuffer {
    buffer: Option<wgpu::Buffer>,
    /// Bucket size in bytes (the buffer's size).
    pub nbytes: u64,
    /// The graph capture that allocated it (0: none). A graph owns the
    /// memory it allocates, so such a buffer never goes back to the pool.
    captured: u64,
    /// The device (logical index) the buffer lives on.
    pub device: usize,
}

impl GpuBuffer {
    pub fn buffer(&self) -> &wgpu::Buffer {
        self.buffer.as_ref().expect("live buffer")
    }
}

impl Drop for GpuBuffer {
    fn drop(&mut self) {
        if let Some(b) = self.buffer.take() {
            super::fence::forget(&b);
            // Freed during a capture: recorded commands may still use it.
            let b = super::graph::give_free(self.nbytes, b, self.captured, self.device).err();
            let mut pool = crate::tensor::lock(&POOLS[self.device]);
            pool.allocated -= self.nbytes;
            match b {
                Some(b) if self.captured == 0 => pool.free.entry(self.nbytes).or_default().push(b),
                // The graph (or the capture) keeps the buffer.
                _ => pool.reserved -= self.nbytes,
            }
        }
    }
}

#[derive(Default)]
struct Pool {
    free: HashMap<u64, Vec<wgpu::Buffer>>,
    /// Bytes in live buffers, in the pool, and the high-water mark of `allocated`.
    allocated: u64,
    reserved: u64,
    peak: u64,
}

/// One pool per device.
static POOLS: LazyLock<[Mutex<Pool>; context::MAX_GPUS]> = LazyLock::new(Default::default);

/// Rounds up to one of 8 buckets per power of two (at most 12.5% slack), at
/// least 256 bytes.
pub fn bucket(nbytes: u64) -> u64 {
    let n = nbytes.max(256);
    let step = (n.next_power_of_two() / 8).max(256);
    n.div_ceil(step) * step
}

pub const USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

/// A buffer of at least `nbytes` on the active device, contents unspecified.
pub fn alloc(nbytes: u64) -> Result<GpuBuffer> {
    let device = context::active();
    let ctx = context::get_on(device)?;
    let max = ctx.limits.max_buffer_size / 4 * 4;
    if nbytes > max {
        bail!(Runtime, "GPU out of memory: a tensor of {} bytes exceeds the {} bytes one buffer can hold on {}", nbytes, max, ctx.info.name);
    }
    // A bucket never lifts a tensor over a limit it fits under: tensors within
    // the binding limit keep whole-buffer bindings (every kernel takes them).
    let size = [ctx.binding_limit() / 4 * 4, max].into_iter().fold(bucket(nbytes), |s, cap| {
        if nbytes <= cap {
            s.min(cap)
        } else {
            s
        }
    });
    let capturing = super::graph::capturing();
    if capturing {
        if let Some((b, id)) = super::graph::take_free(size) {
            let mut pool = crate::tensor::lock(&POOLS[device]);
            pool.allocated += size;
            pool.reserved += size;
            pool.peak = pool.peak.max(pool.allocated);
            return Ok(GpuBuffer { buffer: Some(b), nbytes: size, captured: id, device });
        }
    }
    let mut pool = crate::tensor::lock(&POOLS[device]);
    let buffer = match pool.free.get_mut(&size).and_then(|v| v.pop()) {
        Some(b) => b,
        None => {
            let fresh = |pool: &mut Pool| -> Result<wgpu::Buffer> {
                let b = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                    label: None,
                    size,
                    usage: USAGE,
                    mapped_at_creation: false,
                });
                ctx.check()?;
                pool.reserved += size;
                Ok(b)
            };
            match fresh(&mut pool) {
                Ok(b) => b,
                // Out of memory with buffers cached: free them and try once more.
                Err(_) if !pool.free.is_empty() => {
                    release(&mut pool);
                    fresh(&mut pool)?
                }
                Err(e) => return Err(e),
            }
        }
    };
    pool.allocated += size;
    pool.peak = pool.peak.max(pool.allocated);
    drop(pool);
    let captured = if capturing { super::graph::adopt(&buffer) } else { 0 };
    Ok(GpuBuffer { buffer: Some(buffer), nbytes: size, captured, device })
}

fn release(pool: &mut Pool) {
    for (size, bufs) in pool.free.drain() {
        // Dropped, not destroyed: wgpu keeps a buffer alive while recorded
        // commands still use it.
        pool.reserved -= size * bufs.len() as u64;
    }
}

/// (allocated, reserved, peak allocated) in bytes, on the active device.
pub fn stats() -> (u64, u64, u64) {
    let pool = crate::tensor::lock(context::here(&POOLS));
    (pool.allocated, pool.reserved, pool.peak)
}

pub fn reset_peak() {
    let mut pool = crate::tensor::lock(context::here(&POOLS));
    pool.peak = pool.allocated;
}

/// Frees every cached buffer of the active device (rumus.gpu.empty_cache()).
pub fn empty_cache() -> Result<()> {
    if context::get().is_ok() {
        super::exec::flush()?;
    }
    release(&mut crate::tensor::lock(context::here(&POOLS)));
    Ok(())
}
