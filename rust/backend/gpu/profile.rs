//! GPU time per dispatch from timestamp queries (rumus.gpu.profile()). While
//! profiling, every dispatch gets a compute pass of its own whose beginning
//! and end write timestamps; each batch resolves its queries when it is
//! submitted, and `stop` reads them all back.

use super::context::{self, Context};
use crate::bail;
use crate::error::Result;
use crate::tensor::lock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The device being profiled (work on others is not timed).
static DEVICE: AtomicUsize = AtomicUsize::new(0);

/// The open batch's queries: two per dispatch, with the dispatches' names.
pub struct Recorder {
    set: wgpu::QuerySet,
    names: Vec<Arc<str>>,
}

/// Resolved batches waiting to be read: (mappable buffer, names).
static DONE: Mutex<Vec<(wgpu::Buffer, Vec<Arc<str>>)>> = Mutex::new(Vec::new());

/// Whether the active device's dispatches are being timed.
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed) && DEVICE.load(Ordering::Relaxed) == context::active()
}

/// Starts recording (the adapter must support timestamp queries).
pub fn start() -> Result<()> {
    let ctx = context::get()?;
    if !ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
        bail!(
            Runtime,
            "rumus.gpu.profile() needs timestamp queries, which {} ({}) does not support",
            ctx.info.name,
            ctx.info.backend
        );
    }
    if ACTIVE.load(Ordering::Acquire) {
        bail!(Runtime, "a rumus.gpu.profile() is already recording");
    }
    DEVICE.store(context::active(), Ordering::Release);
    ACTIVE.store(true, Ordering::Release);
    super::exec::flush()?;
    lock(&DONE).clear();
    Ok(())
}

/// A compute pass for one dispatch named `name`, timed by the batch's queries.
pub fn pass(
    ctx: &Context,
    enc: &mut wgpu::CommandEncoder,
    rec: &mut Option<Recorder>,
    max: usize,
    name: &Arc<str>,
) -> wgpu::ComputePass<'static> {
    let rec = rec.get_or_insert_with(|| Recorder {
        set: ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("profile"),
            ty: wgpu::QueryType::Timestamp,
            count: 2 * max as u32,
        }),
        names: Vec::new(),
    });
    let i = 2 * rec.names.len() as u32;
    rec.names.push(name.clone());
    enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: None,
        timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
            query_set: &rec.set,
            beginning_of_pass_write_index: Some(i),
            end_of_pass_write_index: Some(i + 1),
        }),
    })
    .forget_lifetime()
}

/// Resolves a batch's queries into a buffer read at `stop` (before the batch's submit).
pub fn resolve(ctx: &Context, enc: &mut wgpu::CommandEncoder, rec: Recorder) {
    let n = 2 * rec.names.len() as u32;
    if n == 0 {
        return;
    }
    let bytes = n as u64 * 8;
    let resolved = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("profile resolve"),
        size: bytes,
        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let out = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("profile read"),
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    enc.resolve_query_set(&rec.set, 0..n, &resolved, 0);
    enc.copy_buffer_to_buffer(&resolved, 0, &out, 0, bytes);
    lock(&DONE).push((out, rec.names));
}

/// Stops recording; returns every profiled dispatch's (name, GPU nanoseconds)
/// in submission order.
pub fn stop() -> Result<Vec<(String, f64)>> {
    if !ACTIVE.load(Ordering::Acquire) {
        bail!(Runtime, "no rumus.gpu.profile() is recording");
    }
    context::activate(DEVICE.load(Ordering::Acquire));
    let ctx = context::get()?;
    // Submitted while still active, so the last batch resolves its queries.
    let flushed = super::exec::flush();
    ACTIVE.store(false, Ordering::Release);
    flushed?;
    let done = std::mem::take(&mut *lock(&DONE));
    for (buf, _) in &done {
        buf.map_async(wgpu::MapMode::Read, .., |_| {});
    }
    ctx.device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| crate::error::Error::Runtime(format!("GPU error: {}", e)))?;
    ctx.check()?;
    let period = ctx.queue.get_timestamp_period() as f64;
    let mut out = Vec::new();
    for (buf, names) in done {
        let view = buf
            .get_mapped_range(..)
            .map_err(|e| crate::error::Error::Runtime(format!("profile readback: {:?}", e)))?;
        let ticks: Vec<u64> = view
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        for (i, name) in names.iter().enumerate() {
            let dt = ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * period;
            out.push((name.to_string(), dt));
        }
    }
    Ok(out)
}
