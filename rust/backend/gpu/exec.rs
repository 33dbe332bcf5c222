//! Running kernels (their pipelines are built and cached in `pipeline`):
//! dispatches recorded into one shared encoder and submitted in
//! batches (on a readback of data the batch writes, `synchronize()` or every
//! `MAX_BATCH` dispatches; see `fence`); per-dispatch parameters packed into
//! one arena buffer per batch. Graph capture (`graph`) and timestamp
//! profiles (`profile`) hook in at `dispatch_binds`.

use super::buffer_pool::{self, GpuBuffer};
use super::context::{self, Context};
use super::params::ShaderParams;
use super::pipeline::{self, Kernel};
pub use super::pipeline::{used_bindings, Variant};
use super::shaders::Shader;
use super::{fence, graph, profile};
use crate::bail;
use crate::error::Result;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// Dispatches per submission: large enough to amortize a submit, small enough
/// that the GPU starts working while Python records more.
const MAX_BATCH: usize = 256;
/// Bytes of parameters per batch.
const PARAMS_BYTES: u64 = 1 << 20;

/// Records one dispatch of `entry` in WGSL generated at run time: the
/// pipeline is cached by `key` (`source` runs only on a miss). `binds` are
/// bindings 0.., the params bytes the next binding.
pub fn dispatch_generated(
    key: &str,
    source: impl FnOnce() -> String,
    entry: &str,
    binds: &[Bind],
    params: &[u8],
    groups: [u32; 3],
) -> Result<()> {
    let ctx = context::get()?;
    let k = pipeline::generated(ctx, key, source, entry)?;
    if graph::capturing() {
        let (p, l) = (&k.pipeline, &k.layout);
        return graph::record_dispatch(ctx, p, l, &k.used, &k.written, binds, params, groups);
    }
    let mut b = crate::tensor::lock(context::here(&BATCH));
    let align = ctx.limits.min_storage_buffer_offset_alignment as usize;
    if b.params.len().next_multiple_of(align) + params.len() > PARAMS_BYTES as usize {
        b.submit(ctx)?;
    }
    dispatch_locked(ctx, &mut b, &k, binds, params, groups)
}

/// Kernel dispatches recorded since start-up (rumus.gpu.kernel_stats()).
pub static DISPATCHES: AtomicU64 = AtomicU64::new(0);

struct Batch {
    encoder: Option<wgpu::CommandEncoder>,
    pass: Option<wgpu::ComputePass<'static>>,
    params: Vec<u8>,
    params_buf: Option<wgpu::Buffer>,
    dispatches: usize,
    /// The last submission's index (reads wait for it).
    last: Option<wgpu::SubmissionIndex>,
    /// Timestamp queries of the batch's dispatches while profiling.
    prof: Option<profile::Recorder>,
}

/// Each device records and submits its own batch.
static BATCH: [Mutex<Batch>; context::MAX_GPUS] = [const {
    Mutex::new(Batch {
        encoder: None,
        pass: None,
        params: Vec::new(),
        params_buf: None,
        dispatches: 0,
        last: None,
        prof: None,
    })
}; context::MAX_GPUS];

impl Batch {
    fn encoder(&mut self, ctx: &Context) -> &mut wgpu::CommandEncoder {
        self.pass = None;
        self.encoder.get_or_insert_with(|| ctx.device.create_command_encoder(&Default::default()))
    }
    fn pass(&mut self, ctx: &Context) -> &mut wgpu::ComputePass<'static> {
        if self.pass.is_none() {
            let enc = self.encoder(ctx);
            self.pass = Some(enc.begin_compute_pass(&Default::default()).forget_lifetime());
        }
        self.pass.as_mut().expect("open pass")
    }
    fn submit(&mut self, ctx: &Context) -> Result<()> {
        self.pass = None;
        if let Some(mut enc) = self.encoder.take() {
            if !self.params.is_empty() {
                let buf = self.params_buf.as_ref().expect("params buffer");
                ctx.queue.write_buffer(buf, 0, &self.params);
            }
            if let Some(rec) = self.prof.take() {
                profile::resolve(ctx, &mut enc, rec);
            }
            self.last = Some(ctx.queue.submit([enc.finish()]));
            fence::submitted(true);
        }
        self.params.clear();
        self.dispatches = 0;
        ctx.check()
    }
}

/// Grid for `n` invocations of a 1-D kernel with 256 threads per workgroup:
/// at most 65,535 workgroups in x, the rest in y (see shaders/README.md).
pub fn grid_1d(n: usize) -> [u32; 3] {
    grid_rows(n.div_ceil(256))
}

/// Grid for `rows` workgroups (a workgroup per row).
pub fn grid_rows(rows: usize) -> [u32; 3] {
    let g = rows.max(1);
    let x = g.min(65_535);
    [x as u32, g.div_ceil(x) as u32, 1]
}

/// A tensor binding: the whole buffer (as every launcher binds buffers that
/// fit), or a window of it for tensors beyond the binding limit.
#[derive(Copy, Clone)]
pub struct Bind<'a> {
    pub buf: &'a wgpu::Buffer,
    pub offset: u64,
    /// None: the whole buffer.
    pub size: Option<u64>,
}

impl<'a> Bind<'a> {
    pub fn whole(buf: &'a wgpu::Buffer) -> Bind<'a> {
        Bind { buf, offset: 0, size: None }
    }

    /// Elements `lo..=hi` (of `elem` bytes) of `buf`: the whole buffer when it
    /// fits the binding limit, else the window from the aligned offset at or
    /// below `lo`. Also returns the element the binding starts at: kernels
    /// index relative to it, so launchers subtract it from their offsets.
    pub fn window(
        buf: &'a wgpu::Buffer,
        lo: usize,
        hi: usize,
        elem: usize,
    ) -> Result<(Bind<'a>, usize)> {
        let ctx = context::get()?;
        let limit = ctx.binding_limit();
        if buf.size() <= limit {
            return Ok((Bind::whole(buf), 0));
        }
        let align = ctx.limits.min_storage_buffer_offset_alignment as u64;
        let start = (lo * elem) as u64 / align * align;
        let end = (((hi + 1) * elem) as u64).next_multiple_of(4).min(buf.size());
        if end - start > limit {
            bail!(Runtime, "internal error: a GPU binding window of {} bytes exceeds the adapter's limit of {}", end - start, limit);
        }
        Ok((Bind { buf, offset: start, size: Some(end - start) }, (start / elem as u64) as usize))
    }
}

/// Whether `span` consecutive elements of `elem` bytes of `buf` can be bound
/// at once, wherever they start (a window's offset is aligned down).
pub fn fits(buf: &wgpu::Buffer, span: usize, elem: usize) -> Result<bool> {
    let ctx = context::get()?;
    let limit = ctx.binding_limit();
    Ok(buf.size() <= limit
        || (span * elem) as u64 + ctx.limits.min_storage_buffer_offset_alignment as u64 <= limit)
}

/// How many of `items` items of `item_bytes` bytes each fit one binding
/// window together, wherever it starts (at least 1): for launchers that
/// split work before their buffers exist (conv's images per im2col).
pub fn items_per_binding(items: usize, item_bytes: usize) -> Result<usize> {
    let ctx = context::get()?;
    let room = ctx.binding_limit() - ctx.limits.min_storage_buffer_offset_alignment as u64;
    Ok((room as usize / item_bytes.max(1)).clamp(1, items.max(1)))
}

/// The alignment of a binding window's start, in bytes.
pub fn offset_alignment() -> Result<usize> {
    Ok(context::get()?.limits.min_storage_buffer_offset_alignment as usize)
}

/// Rows per dispatch for a launcher that splits its work into chunks of rows:
/// all `rows` when they fit, else halved until every `(buffer, elements per
/// row, element bytes)` has a window that fits one binding. NotImplemented,
/// naming `what`, when even one row does not fit.
pub fn rows_per_chunk(
    what: &str,
    rows: usize,
    parts: &[(&wgpu::Buffer, usize, usize)],
) -> Result<usize> {
    let fit = |c: usize| -> Result<bool> {
        for &(buf, per_row, elem) in parts {
            if !fits(buf, c * per_row, elem)? {
                return Ok(false);
            }
        }
        Ok(true)
    };
    let mut chunk = rows.max(1);
    while chunk > 1 && !fit(chunk)? {
        chunk = chunk.div_ceil(2);
    }
    if !fit(chunk)? {
        bail!(
            NotImplemented,
            "{} on the GPU: one row exceeds the adapter's binding limit of {} bytes",
            what,
            context::get()?.binding_limit()
        );
    }
    Ok(chunk)
}

/// Dispatches `entry` over `rows` rows of the tensors in chunks that fit one
/// binding each (see `rows_per_chunk`): every tensor is split evenly into
/// rows and bound as the window of the chunk's rows (a missing optional
/// tensor is bound to a dummy). `params(first row, rows, offsets)` gives the
/// params and the grid, where `offsets` are the element offsets of each
/// tensor's chunk in its window (0 for a missing tensor), in `tensors` order.
pub fn dispatch_row_chunks<P: ShaderParams>(
    entry: &'static str,
    variant: Variant,
    rows: usize,
    tensors: &[Option<&crate::tensor::Tensor>],
    params: impl Fn(usize, usize, &[u32]) -> (P, [u32; 3]),
) -> Result<()> {
    use super::dtype::elem_bytes;
    if rows == 0 {
        return Ok(());
    }
    let present: Vec<&crate::tensor::Tensor> = tensors.iter().flatten().copied().collect();
    let parts = present
        .iter()
        .map(|t| Ok((t.storage().gpu_buffer()?, t.numel() / rows, elem_bytes(t.dtype())?)))
        .collect::<Result<Vec<_>>>()?;
    let chunk = rows_per_chunk(entry, rows, &parts)?;
    for first in (0..rows).step_by(chunk) {
        let count = chunk.min(rows - first);
        let mut offsets = Vec::with_capacity(tensors.len());
        let mut binds = Vec::with_capacity(tensors.len());
        for t in tensors {
            let Some(t) = t else {
                binds.push(Bind::whole(dummy()?));
                offsets.push(0);
                continue;
            };
            let per = t.numel() / rows;
            let lo = t.layout().offset + first * per;
            let hi = lo + (count * per).max(1) - 1;
            let (b, base) =
                Bind::window(t.storage().gpu_buffer()?, lo, hi, elem_bytes(t.dtype())?)?;
            offsets.push((lo - base) as u32);
            binds.push(b);
        }
        let (p, grid) = params(first, count, &offsets);
        dispatch_binds(entry, variant, &binds, &p, grid)?;
    }
    Ok(())
}

/// Records one dispatch of `entry` in the params' shader. `buffers` are the
/// tensor bindings in ABI order, bound whole; the params become the next binding.
pub fn dispatch<P: ShaderParams>(
    entry: &'static str,
    variant: Variant,
    buffers: &[&wgpu::Buffer],
    params: &P,
    groups: [u32; 3],
) -> Result<()> {
    let binds: Vec<Bind> = buffers.iter().map(|b| Bind::whole(b)).collect();
    dispatch_binds(entry, variant, &binds, params, groups)
}

/// Records one dispatch with `binds` as the tensor bindings in ABI order. A
/// whole buffer beyond the binding limit is refused: launchers that handle
/// large tensors bind windows.
pub fn dispatch_binds<P: ShaderParams>(
    entry: &'static str,
    variant: Variant,
    binds: &[Bind],
    params: &P,
    groups: [u32; 3],
) -> Result<()> {
    dispatch_shader(P::SHADER, entry, variant, binds, bytemuck::bytes_of(params), groups)
}

/// `dispatch_binds` for a shader chosen at run time (generated variants,
/// backend/gpu/matmul_coop.rs), with the params as bytes.
pub fn dispatch_shader(
    shader: &'static Shader,
    entry: &'static str,
    variant: Variant,
    binds: &[Bind],
    bytes: &[u8],
    groups: [u32; 3],
) -> Result<()> {
    let ctx = context::get()?;
    // A kernel may write a buffer that pending fused results still read.
    super::fusion::before_dispatch(binds.iter().map(|b| b.buf))?;
    if groups.contains(&0) {
        return Ok(());
    }
    let max = ctx.limits.max_compute_workgroups_per_dimension;
    if groups.iter().any(|&g| g > max) {
        bail!(
            Runtime,
            "{}.{}: grid {:?} exceeds the adapter's {} workgroups per dimension",
            shader.name,
            entry,
            groups,
            max
        );
    }
    let k = pipeline::kernel(ctx, shader, entry, variant)?;
    let limit = ctx.binding_limit();
    if let Some(big) = k
        .used
        .iter()
        .filter_map(|&i| binds.get(i as usize))
        .find(|b| b.size.is_none() && b.buf.size() > limit)
    {
        bail!(
            NotImplemented,
            "{} on the GPU: tensor of {} bytes exceeds the adapter's binding limit of {} bytes",
            entry,
            big.buf.size(),
            limit
        );
    }
    if graph::capturing() {
        return graph::record_dispatch(
            ctx,
            &k.pipeline,
            &k.layout,
            &k.used,
            &k.written,
            binds,
            bytes,
            groups,
        );
    }
    let mut b = crate::tensor::lock(context::here(&BATCH));
    let align = ctx.limits.min_storage_buffer_offset_alignment as usize;
    if b.params.len().next_multiple_of(align) + bytes.len() > PARAMS_BYTES as usize {
        // The arena is full: submit what it holds and start a new batch.
        b.submit(ctx)?;
    }
    dispatch_locked(ctx, &mut b, &k, binds, bytes, groups)
}

fn dispatch_locked(
    ctx: &Context,
    b: &mut Batch,
    k: &Kernel,
    binds: &[Bind],
    bytes: &[u8],
    groups: [u32; 3],
) -> Result<()> {
    let align = ctx.limits.min_storage_buffer_offset_alignment as usize;
    let offset = b.params.len().next_multiple_of(align);
    b.params.resize(offset, 0);
    b.params.extend_from_slice(bytes);
    let size = (b.params.len() - offset) as u64;
    let params_buf = b
        .params_buf
        .get_or_insert_with(|| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("params"),
                size: PARAMS_BYTES,
                usage: buffer_pool::USAGE,
                mapped_at_creation: false,
            })
        })
        .clone();
    let entries: Vec<wgpu::BindGroupEntry> = k
        .used
        .iter()
        .map(|&i| {
            let resource = match binds.get(i as usize) {
                Some(w) => wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: w.buf,
                    offset: w.offset,
                    size: w.size.and_then(std::num::NonZeroU64::new),
                }),
                None => wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &params_buf,
                    offset: offset as u64,
                    size: std::num::NonZeroU64::new(size),
                }),
            };
            wgpu::BindGroupEntry { binding: i, resource }
        })
        .collect();
    let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &k.layout,
        entries: &entries,
    });
    for &i in &k.written {
        if let Some(w) = binds.get(i as usize) {
            fence::wrote(w.buf);
        }
    }
    let pass = if profile::active() {
        let b = &mut *b;
        b.pass = None;
        let enc =
            b.encoder.get_or_insert_with(|| ctx.device.create_command_encoder(&Default::default()));
        b.pass.insert(profile::pass(ctx, enc, &mut b.prof, MAX_BATCH, &k.name))
    } else {
        b.pass(ctx)
    };
    pass.set_pipeline(&k.pipeline);
    pass.set_bind_group(0, &bind, &[]);
    pass.dispatch_workgroups(groups[0], groups[1], groups[2]);
    fence::bump(fence::DISPATCHES);
    DISPATCHES.fetch_add(1, Ordering::Relaxed);
    b.dispatches += 1;
    if b.dispatches >= MAX_BATCH {
        b.submit(ctx)?;
    }
    Ok(())
}

/// A small buffer bound where an entry point declares a binding the op does
/// not use (a scalar operand), so no tensor buffer is bound twice.
pub fn dummy() -> Result<&'static wgpu::Buffer> {
    static DUMMY: [OnceLock<wgpu::Buffer>; context::MAX_GPUS] =
        [const { OnceLock::new() }; context::MAX_GPUS];
    let ctx = context::get()?;
    Ok(context::here(&DUMMY).get_or_init(|| {
        ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("dummy"),
            size: 256,
            usage: buffer_pool::USAGE,
            mapped_at_creation: false,
        })
    }))
}

/// Device-side error reporting. Checks that cannot run on the host without a
/// readback (index values held on the GPU) raise a status word on the device
/// to a code registered here; every readback brings the word back with the
/// data and turns a raised code into the registered message.
struct Status {
    buffer: wgpu::Buffer,
    messages: Vec<String>,
}

static STATUS: [Mutex<Option<Status>>; context::MAX_GPUS] =
    [const { Mutex::new(None) }; context::MAX_GPUS];

/// Registers `message` for a device-side check and returns the status buffer
/// and the code the check writes when it fails.
pub fn status_code(message: String) -> Result<(wgpu::Buffer, u32)> {
    let ctx = context::get()?;
    let mut st = crate::tensor::lock(context::here(&STATUS));
    let s = st.get_or_insert_with(|| Status {
        buffer: ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("status"),
            size: 256,
            usage: buffer_pool::USAGE,
            mapped_at_creation: false,
        }),
        messages: Vec::new(),
    });
    // Repeated checks (every training step) share their message's code.
    let code = match s.messages.iter().position(|m| *m == message) {
        Some(i) => i,
        None => {
            s.messages.push(message);
            s.messages.len() - 1
        }
    };
    Ok((s.buffer.clone(), code as u32 + 1))
}

/// The status buffer to copy next to readback data, if any check was recorded.
fn status_buffer() -> Option<wgpu::Buffer> {
    crate::tensor::lock(context::here(&STATUS)).as_ref().map(|s| s.buffer.clone())
}

/// Raises the error a failed device-side check reported (and clears it).
fn raise_status(word: u32) -> Result<()> {
    if word == 0 {
        return Ok(());
    }
    let ctx = context::get()?;
    let st = crate::tensor::lock(context::here(&STATUS));
    let msg = st
        .as_ref()
        .and_then(|s| s.messages.get(word as usize - 1).cloned())
        .unwrap_or_else(|| "a device-side check failed".into());
    if let Some(s) = st.as_ref() {
        ctx.queue.write_buffer(&s.buffer, 0, &[0; 4]);
    }
    bail!(Runtime, "{} (detected on the GPU; reported at the next read of GPU data, so the failing op may be an earlier one)", msg)
}

/// Submits everything recorded so far.
pub fn flush() -> Result<()> {
    let ctx = context::get()?;
    crate::tensor::lock(context::here(&BATCH)).submit(ctx)
}

/// Waits until the GPU has finished all submitted work.
pub fn synchronize() -> Result<()> {
    graph::refuse("rumus.gpu.synchronize()")?;
    let ctx = context::get()?;
    super::fusion::flush()?;
    if status_buffer().is_some() {
        // Reading the status word (with everything queued) waits for all work too.
        read(None, 0, 0, true)?;
        return Ok(());
    }
    flush()?;
    ctx.device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| crate::error::Error::Runtime(format!("GPU error: {}", e)))?;
    ctx.check()
}

/// Bytes and copies across the bus, each way (rumus.gpu.transfer_stats()).
pub static TO_DEVICE: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];
pub static TO_HOST: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

fn count(c: &[AtomicU64; 2], bytes: usize) {
    c[0].fetch_add(bytes as u64, Ordering::Relaxed);
    c[1].fetch_add(1, Ordering::Relaxed);
}

/// A new buffer holding `bytes`. The copy is recorded in the batch, so it is
/// ordered after earlier work that may still use a recycled buffer.
pub fn upload(bytes: &[u8]) -> Result<GpuBuffer> {
    use wgpu::util::DeviceExt;
    let ctx = context::get()?;
    let dst = buffer_pool::alloc(bytes.len() as u64)?;
    if bytes.is_empty() {
        return Ok(dst);
    }
    let padded;
    let data = if bytes.len().is_multiple_of(4) {
        bytes
    } else {
        padded = [bytes, &[0u8; 3][..4 - bytes.len() % 4]].concat();
        &padded
    };
    let staging = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: data,
        usage: wgpu::BufferUsages::COPY_SRC,
    });
    if graph::capturing() {
        graph::record_copy(&staging, 0, dst.buffer(), 0, data.len() as u64);
    } else {
        let mut b = crate::tensor::lock(context::here(&BATCH));
        b.encoder(ctx).copy_buffer_to_buffer(&staging, 0, dst.buffer(), 0, data.len() as u64);
        fence::wrote(dst.buffer());
    }
    count(&TO_DEVICE, bytes.len());
    ctx.check()?;
    Ok(dst)
}

/// Bytes read back per staging buffer: a large tensor comes back in pieces, so
/// no staging buffer (data plus the status word) outgrows max_buffer_size.
const READ_BYTES: usize = 64 << 20;

/// Reads `nbytes` from `offset` (a multiple of 4) of a buffer: from the host
/// copy an earlier read kept when no write came since, else by copying it
/// back (see `read`).
pub fn download(src: &wgpu::Buffer, offset: u64, nbytes: usize) -> Result<Vec<u8>> {
    graph::refuse("reading GPU data on the host")?;
    if nbytes == 0 {
        return Ok(Vec::new());
    }
    if let Some(bytes) = fence::cached(src, offset, nbytes) {
        return Ok(bytes);
    }
    let generation = fence::generation(src);
    let mut out = Vec::with_capacity(nbytes);
    while out.len() < nbytes {
        out.extend(read(
            Some(src),
            offset + out.len() as u64,
            (nbytes - out.len()).min(READ_BYTES),
            false,
        )?);
    }
    count(&TO_HOST, nbytes);
    fence::keep(src, generation, offset, &out);
    Ok(out)
}

/// Copies `nbytes` of `src` (if any) and the status word into one staging
/// buffer, waits, raises a failed device-side check, returns the data. The
/// open batch is submitted (with the copy at its end) only when it writes
/// `src` or `flush_all`; else the copy goes in a submission of its own. Only
/// the copy's submission is waited for (queues run in order, so it completes
/// after every write submitted before it).
fn read(
    src: Option<&wgpu::Buffer>,
    offset: u64,
    nbytes: usize,
    flush_all: bool,
) -> Result<Vec<u8>> {
    let ctx = context::get()?;
    let status = status_buffer();
    let data = (nbytes as u64).next_multiple_of(4);
    let size = data + if status.is_some() { 4 } else { 0 };
    if size == 0 {
        return Ok(Vec::new());
    }
    let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let index = {
        let mut b = crate::tensor::lock(context::here(&BATCH));
        let with_batch = fence::read_needs_flush(src) | flush_all;
        let mut own = None;
        let enc = if with_batch {
            b.encoder(ctx)
        } else {
            own.insert(ctx.device.create_command_encoder(&Default::default()))
        };
        if let Some(src) = src {
            enc.copy_buffer_to_buffer(src, offset, &staging, 0, data);
        }
        if let Some(st) = &status {
            enc.copy_buffer_to_buffer(st, 0, &staging, data, 4);
        }
        let index = match own {
            Some(enc) => {
                let index = ctx.queue.submit([enc.finish()]);
                fence::submitted(false);
                index
            }
            None => {
                b.submit(ctx)?;
                b.last.clone().expect("a submission")
            }
        };
        ctx.check()?;
        index
    };
    let (tx, rx) = std::sync::mpsc::channel();
    staging.map_async(wgpu::MapMode::Read, .., move |r| {
        let _ = tx.send(r);
    });
    ctx.device
        .poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: None })
        .map_err(|e| crate::error::Error::Runtime(format!("GPU error: {}", e)))?;
    ctx.check()?;
    match rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => bail!(Runtime, "GPU readback failed: {}", e),
        Err(_) => bail!(Runtime, "GPU readback failed: the map callback never ran"),
    }
    let view = staging
        .get_mapped_range(..)
        .map_err(|e| crate::error::Error::Runtime(format!("GPU readback failed: {:?}", e)))?;
    let out = view[..nbytes].to_vec();
    if status.is_some() {
        let w = &view[data as usize..data as usize + 4];
        raise_status(u32::from_ne_bytes([w[0], w[1], w[2], w[3]]))?;
    }
    Ok(out)
}

/// Records a buffer-to-buffer copy (both offsets and the size multiples of 4).
pub fn copy(
    src: &wgpu::Buffer,
    src_off: u64,
    dst: &wgpu::Buffer,
    dst_off: u64,
    nbytes: u64,
) -> Result<()> {
    let ctx = context::get()?;
    super::fusion::before_dispatch([src, dst].into_iter())?;
    if nbytes > 0 {
        if graph::capturing() {
            graph::record_copy(src, src_off, dst, dst_off, nbytes);
            return Ok(());
        }
        let mut b = crate::tensor::lock(context::here(&BATCH));
        b.encoder(ctx).copy_buffer_to_buffer(src, src_off, dst, dst_off, nbytes);
        fence::wrote(dst);
    }
    Ok(())
}
