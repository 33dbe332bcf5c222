//! Graph capture and replay (rumus.gpu.graph, like CUDA graphs). While a
//! capture is open, dispatches and copies are recorded, not run: each keeps
//! its pipeline, its bind group (with parameters in a buffer of its own) and
//! its grid. Replay encodes the recorded commands again and submits them,
//! with no Python, autograd, pipeline or bind-group work. wgpu cannot
//! resubmit a command buffer, so "replay" re-encodes; nothing is re-created.
//!
//! Memory: buffers allocated during capture belong to the graph (their
//! tensors may drop; replay still writes them), and buffers freed during
//! capture go to the capture's own free list, never back to the pool where
//! another tensor could take memory the graph uses.

use super::context::{self, Context};
use super::exec::Bind;
use super::fence;
use crate::bail;
use crate::error::Result;
use crate::tensor::lock;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

enum Cmd {
    Dispatch { pipeline: wgpu::ComputePipeline, bind: wgpu::BindGroup, groups: [u32; 3] },
    Copy { src: wgpu::Buffer, src_off: u64, dst: wgpu::Buffer, dst_off: u64, n: u64 },
}

/// A recorded graph: replayable any number of times.
#[derive(Default)]
pub struct Graph {
    cmds: Vec<Cmd>,
    /// Buffers the commands write (their host copies go stale at replay).
    written: Vec<wgpu::Buffer>,
    /// Buffers allocated during capture, kept alive for replay.
    owned: Vec<wgpu::Buffer>,
    /// The device the graph runs on.
    device: usize,
}

#[derive(Default)]
struct Capture {
    /// Marks the buffers allocated in this capture (see `give_free`).
    id: u64,
    graph: Graph,
    written: HashSet<wgpu::Buffer>,
    /// Buffers freed during capture, by size, for reuse within the capture.
    free: HashMap<u64, Vec<wgpu::Buffer>>,
}

static CAPTURING: AtomicBool = AtomicBool::new(false);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static CAPTURE: Mutex<Option<Capture>> = Mutex::new(None);
/// The device the open capture records (work on other devices runs eagerly).
static DEVICE: AtomicUsize = AtomicUsize::new(0);

/// Whether a capture records the active device's work.
pub fn capturing() -> bool {
    capturing_on(context::active())
}

fn capturing_on(device: usize) -> bool {
    CAPTURING.load(Ordering::Acquire) && DEVICE.load(Ordering::Acquire) == device
}

/// The error for work that cannot be captured (host reads, synchronize).
pub fn refuse(what: &str) -> Result<()> {
    if capturing() {
        bail!(
            Runtime,
            "{} is not allowed while a rumus.gpu.graph capture is recording: captured work \
             does not run until replay()",
            what
        );
    }
    Ok(())
}

/// Opens a capture.
pub fn begin() -> Result<()> {
    context::get()?;
    // Fused chains recorded before the capture run now, outside the graph.
    super::fusion::flush()?;
    let mut c = lock(&CAPTURE);
    if c.is_some() {
        bail!(Runtime, "a rumus.gpu.graph capture is already recording (captures do not nest)");
    }
    let mut capture = Capture { id: NEXT_ID.fetch_add(1, Ordering::Relaxed), ..Default::default() };
    capture.graph.device = context::active();
    DEVICE.store(capture.graph.device, Ordering::Release);
    *c = Some(capture);
    CAPTURING.store(true, Ordering::Release);
    Ok(())
}

/// Closes the capture and returns its graph; the capture's free buffers stay
/// with the graph (recorded commands may use them).
pub fn end() -> Result<Graph> {
    // Fused chains still pending belong to the captured step.
    if CAPTURING.load(Ordering::Acquire) {
        context::activate(DEVICE.load(Ordering::Acquire));
        super::fusion::flush()?;
    }
    let Some(mut c) = lock(&CAPTURE).take() else {
        bail!(Runtime, "no rumus.gpu.graph capture is recording");
    };
    CAPTURING.store(false, Ordering::Release);
    c.graph.written = c.written.into_iter().collect();
    c.graph.owned.extend(c.free.into_values().flatten());
    Ok(c.graph)
}

/// A buffer of `size` bytes freed earlier in the capture, if any, with the
/// capture's id.
pub fn take_free(size: u64) -> Option<(wgpu::Buffer, u64)> {
    let mut c = lock(&CAPTURE);
    let c = c.as_mut()?;
    Some((c.free.get_mut(&size)?.pop()?, c.id))
}

/// Makes a buffer allocated during capture the graph's; returns the capture's
/// id (0 when none is open).
pub fn adopt(buf: &wgpu::Buffer) -> u64 {
    match lock(&CAPTURE).as_mut() {
        Some(c) => {
            c.graph.owned.push(buf.clone());
            c.id
        }
        None => 0,
    }
}

/// Takes a buffer of `device` freed while a capture of that device is open,
/// unless another graph owns it (`owner`: the id of the capture that allocated
/// it, 0 for the pool); gives it back otherwise.
pub fn give_free(
    size: u64,
    buf: wgpu::Buffer,
    owner: u64,
    device: usize,
) -> std::result::Result<(), wgpu::Buffer> {
    if !capturing_on(device) {
        return Err(buf);
    }
    match lock(&CAPTURE).as_mut() {
        Some(c) if owner == 0 || owner == c.id => {
            c.free.entry(size).or_default().push(buf);
            Ok(())
        }
        _ => Err(buf),
    }
}

/// Records a dispatch; `params` get a buffer of their own.
#[allow(clippy::too_many_arguments)]
pub fn record_dispatch(
    ctx: &Context,
    pipeline: &wgpu::ComputePipeline,
    layout: &wgpu::BindGroupLayout,
    used: &[u32],
    written: &[u32],
    binds: &[Bind],
    params: &[u8],
    groups: [u32; 3],
) -> Result<()> {
    use wgpu::util::DeviceExt;
    let params_buf = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("graph params"),
        contents: &[params, &[0u8; 3][..(4 - params.len() % 4) % 4]].concat(),
        usage: super::buffer_pool::USAGE,
    });
    let entries: Vec<wgpu::BindGroupEntry> = used
        .iter()
        .map(|&i| {
            let (buffer, offset, size) = match binds.get(i as usize) {
                Some(w) => (w.buf, w.offset, w.size.and_then(std::num::NonZeroU64::new)),
                None => (&params_buf, 0, None),
            };
            wgpu::BindGroupEntry {
                binding: i,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset,
                    size,
                }),
            }
        })
        .collect();
    let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("graph"),
        layout,
        entries: &entries,
    });
    ctx.check()?;
    let mut c = lock(&CAPTURE);
    let Some(c) = c.as_mut() else {
        bail!(Runtime, "internal error: no capture is recording");
    };
    for &i in written {
        if let Some(w) = binds.get(i as usize) {
            c.written.insert(w.buf.clone());
        }
    }
    c.graph.cmds.push(Cmd::Dispatch { pipeline: pipeline.clone(), bind, groups });
    Ok(())
}

/// Records a buffer-to-buffer copy.
pub fn record_copy(src: &wgpu::Buffer, src_off: u64, dst: &wgpu::Buffer, dst_off: u64, n: u64) {
    if let Some(c) = lock(&CAPTURE).as_mut() {
        c.written.insert(dst.clone());
        c.graph.cmds.push(Cmd::Copy { src: src.clone(), src_off, dst: dst.clone(), dst_off, n });
    }
}

impl Graph {
    /// Submits the recorded work once, after everything queued before it.
    pub fn replay(&self) -> Result<()> {
        context::activate(self.device);
        refuse("replaying a graph")?;
        let ctx = context::get()?;
        super::exec::flush()?;
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let mut pass: Option<wgpu::ComputePass<'static>> = None;
        for cmd in &self.cmds {
            match cmd {
                Cmd::Dispatch { pipeline, bind, groups } => {
                    let p = pass.get_or_insert_with(|| {
                        enc.begin_compute_pass(&Default::default()).forget_lifetime()
                    });
                    p.set_pipeline(pipeline);
                    p.set_bind_group(0, bind, &[]);
                    p.dispatch_workgroups(groups[0], groups[1], groups[2]);
                }
                Cmd::Copy { src, src_off, dst, dst_off, n } => {
                    pass = None;
                    enc.copy_buffer_to_buffer(src, *src_off, dst, *dst_off, *n);
                }
            }
        }
        drop(pass);
        // Before the submit: no read may keep a host copy the replay overwrites.
        for b in &self.written {
            fence::invalidate(b);
        }
        ctx.queue.submit([enc.finish()]);
        fence::submitted(false);
        ctx.check()
    }

    /// Commands recorded (dispatches and copies).
    pub fn len(&self) -> usize {
        self.cmds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cmds.is_empty()
    }

    /// Bytes of buffers the graph keeps alive for replay.
    pub fn owned_bytes(&self) -> u64 {
        self.owned.iter().map(|b| b.size()).sum()
    }
}
