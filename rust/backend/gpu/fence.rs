//! Per-buffer write tracking for host reads. Every GPU write of a buffer (a
//! dispatch that binds it `read_write`, a copy or an upload into it) is noted
//! here with the batch it was recorded in. A host read then submits the open
//! batch only when that batch writes the buffer, waits only for its own copy's
//! submission, and keeps the bytes it read until the next write: reading an
//! unchanged tensor again downloads nothing.

use crate::tensor::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex};

/// Bytes of host copies kept at most, all buffers together: the cache is for
/// logged losses and metrics, not for mirroring every tensor on the host.
const KEEP_BYTES: usize = 64 << 20;

/// Bytes of host copies kept now.
static KEPT: AtomicUsize = AtomicUsize::new(0);

/// Drops a state's host copy.
fn drop_host(s: &mut State) {
    if let Some((_, bytes)) = s.host.take() {
        KEPT.fetch_sub(bytes.len(), Ordering::Relaxed);
    }
}

struct State {
    /// The batch (see `SEQ`) that last wrote the buffer.
    batch: u64,
    /// Writes so far: a read keeps its bytes only if none came in between.
    writes: u64,
    /// The bytes last read back and their byte offset; dropped by any write.
    host: Option<(u64, Vec<u8>)>,
}

static STATES: LazyLock<Mutex<HashMap<wgpu::Buffer, State>>> = LazyLock::new(Default::default);

/// Each device's open batch number: how many batches it submitted before it.
static SEQ: [AtomicU64; super::context::MAX_GPUS] =
    [const { AtomicU64::new(0) }; super::context::MAX_GPUS];

fn seq() -> &'static AtomicU64 {
    super::context::here(&SEQ)
}

/// Counters for `rumus.gpu.queue_stats()`, in `STAT_NAMES` order.
pub static STATS: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];
pub const STAT_NAMES: [&str; 5] =
    ["submits", "dispatches", "reads", "read_flushes", "to_host_cached"];
const SUBMITS: usize = 0;
pub const DISPATCHES: usize = 1;
const READS: usize = 2;
const READ_FLUSHES: usize = 3;
const CACHED: usize = 4;

pub fn bump(i: usize) {
    STATS[i].fetch_add(1, Ordering::Relaxed);
}

/// Notes a write of `buf` recorded in the open batch (call with the batch locked).
pub fn wrote(buf: &wgpu::Buffer) {
    let seq = seq().load(Ordering::Acquire);
    let mut m = lock(&STATES);
    let s = m.entry(buf.clone()).or_insert(State { batch: seq, writes: 0, host: None });
    s.batch = seq;
    s.writes += 1;
    drop_host(s);
}

/// Notes a write of `buf` already submitted (a graph replay): drops its host copy.
pub fn invalidate(buf: &wgpu::Buffer) {
    if let Some(s) = lock(&STATES).get_mut(buf) {
        s.writes += 1;
        drop_host(s);
    }
}

/// Called when the open batch is submitted (`batch`) or a standalone
/// submission is made (a readback copy, a graph replay).
pub fn submitted(batch: bool) {
    if batch {
        seq().fetch_add(1, Ordering::AcqRel);
    }
    bump(SUBMITS);
}

/// Whether the open batch writes `buf`: a read must submit it first. Counts
/// the read and, when it must, the flush.
pub fn read_needs_flush(buf: Option<&wgpu::Buffer>) -> bool {
    bump(READS);
    let seq = seq().load(Ordering::Acquire);
    let pending = buf.is_some_and(|b| lock(&STATES).get(b).is_some_and(|s| s.batch == seq));
    if pending {
        bump(READ_FLUSHES);
    }
    pending
}

/// The bytes `offset..offset + n` of `buf` if a host copy of them is current.
pub fn cached(buf: &wgpu::Buffer, offset: u64, n: usize) -> Option<Vec<u8>> {
    let m = lock(&STATES);
    let (at, bytes) = m.get(buf)?.host.as_ref()?;
    let lo = offset.checked_sub(*at)? as usize;
    let out = bytes.get(lo..lo + n)?.to_vec();
    bump(CACHED);
    Some(out)
}

/// The write count of `buf`, taken before a read (see `keep`).
pub fn generation(buf: &wgpu::Buffer) -> u64 {
    lock(&STATES).get(buf).map_or(0, |s| s.writes)
}

/// Keeps the bytes a read brought back, unless a write came in since `generation`.
pub fn keep(buf: &wgpu::Buffer, generation: u64, offset: u64, bytes: &[u8]) {
    let mut m = lock(&STATES);
    let s = m.entry(buf.clone()).or_insert(State { batch: u64::MAX, writes: 0, host: None });
    if s.writes != generation {
        return;
    }
    drop_host(s);
    if KEPT.load(Ordering::Relaxed) + bytes.len() <= KEEP_BYTES {
        KEPT.fetch_add(bytes.len(), Ordering::Relaxed);
        s.host = Some((offset, bytes.to_vec()));
    }
}

/// Forgets a buffer going back to the pool: its next owner starts clean.
pub fn forget(buf: &wgpu::Buffer) {
    if let Some(mut s) = lock(&STATES).remove(buf) {
        drop_host(&mut s);
    }
}
