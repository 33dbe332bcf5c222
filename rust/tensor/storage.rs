//! Reference-counted memory shared by every view of a tensor, with the version
//! counter that autograd checks. Memory is CPU-owned, borrowed from an external
//! owner (a NumPy array), on a GPU, or on both with a record of the newer side.

use super::dtype::{DType, Element};
use crate::backend::gpu::GpuBuffer;
use crate::bail;
use crate::error::Result;
use std::alloc::{alloc, alloc_zeroed, dealloc, Layout as AllocLayout};
use std::any::Any;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;

/// The allocator's natural alignment: with it, zeroed allocations go through
/// calloc, which is cheap for the small buffers that take this path.
const ALIGN: usize = 16;

/// Buffers at least this large are mapped directly (see `map_huge`).
const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Keeps borrowed memory alive; the Python layer wraps the NumPy array in it.
pub type ExternalOwner = Box<dyn Any + Send + Sync>;

pub enum CpuOwner {
    /// Allocated here with `ALIGN`; freed on drop.
    Owned,
    /// A private anonymous mapping (large buffers on Linux), unmapped on drop.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Mapped { base: *mut u8, len: usize },
    /// Borrowed; freed when the owner (e.g. the NumPy array) is released.
    External(#[allow(dead_code)] ExternalOwner),
}

pub struct CpuBuffer {
    ptr: NonNull<u8>,
    nbytes: usize,
    owner: CpuOwner,
}

// The buffer is plain memory; synchronisation of writes is the caller's contract,
// exactly as for any PyTorch storage shared between views.
unsafe impl Send for CpuBuffer {}
unsafe impl Sync for CpuBuffer {}

/// Physical memory plus swap, in bytes: no single buffer can be larger. Large
/// mappings are lazy, so without this check an absurd size would "succeed"
/// and the process would be killed when the memory is touched.
pub fn memory_limit() -> usize {
    static LIMIT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: sysinfo fills the struct it is given.
            let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
            if unsafe { libc::sysinfo(&mut info) } == 0 {
                let unit = info.mem_unit.max(1) as usize;
                return (info.totalram as usize)
                    .saturating_add(info.totalswap as usize)
                    .saturating_mul(unit);
            }
        }
        usize::MAX
    })
}

impl CpuBuffer {
    pub fn zeroed(nbytes: usize) -> Result<CpuBuffer> {
        CpuBuffer::alloc(nbytes, false)
    }
    /// A buffer whose contents are unspecified: for outputs a kernel
    /// overwrites completely before anything reads them. Large ones may come
    /// from the reuse cache.
    pub fn reusable(nbytes: usize) -> Result<CpuBuffer> {
        CpuBuffer::alloc(nbytes, true)
    }
    fn alloc(nbytes: usize, reuse: bool) -> Result<CpuBuffer> {
        keep_freed_pages();
        if nbytes == 0 {
            return Ok(CpuBuffer { ptr: NonNull::dangling(), nbytes, owner: CpuOwner::Owned });
        }
        let Ok(layout) = AllocLayout::from_size_align(nbytes, ALIGN) else {
            bail!(Runtime, "cannot allocate {} bytes: size too large", nbytes);
        };
        if nbytes > memory_limit() {
            bail!(Runtime, "CPU out of memory: tried to allocate {} bytes, more than the machine's {} bytes of memory", nbytes, memory_limit());
        }
        if nbytes >= HUGE_PAGE_BYTES {
            if let Some(buf) = map_huge(nbytes, reuse) {
                return Ok(buf);
            }
        }
        // Outputs that kernels overwrite skip the zero-fill.
        // SAFETY: layout has a non-zero size.
        let ptr = unsafe {
            if reuse {
                alloc(layout)
            } else {
                alloc_zeroed(layout)
            }
        };
        match NonNull::new(ptr) {
            Some(ptr) => Ok(CpuBuffer { ptr, nbytes, owner: CpuOwner::Owned }),
            None => bail!(Runtime, "CPU out of memory: tried to allocate {} bytes", nbytes),
        }
    }
    /// # Safety
    /// `ptr` must stay valid for `nbytes` as long as `owner` lives.
    pub unsafe fn borrowed(ptr: *mut u8, nbytes: usize, owner: ExternalOwner) -> CpuBuffer {
        let ptr = NonNull::new(ptr).unwrap_or(NonNull::dangling());
        CpuBuffer { ptr, nbytes, owner: CpuOwner::External(owner) }
    }
    pub fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

/// Buffers under `HUGE_PAGE_BYTES` come from mimalloc, which by default
/// hands pages freed a second ago back to the OS (madvise): the next step's
/// activations then fault them in again, each zeroed by the kernel (a tenth
/// of an autocast transformer step, whose bfloat16 activations are mostly
/// under 2 MiB). Pages idle for 10 s still go back.
fn keep_freed_pages() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        extern "C" {
            // libmimalloc-sys links it; its Rust binding needs a feature we do not use.
            fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
        }
        /// `mi_option_purge_delay` in mimalloc.h's option enum (milliseconds).
        const PURGE_DELAY: std::ffi::c_int = 15;
        // SAFETY: sets one integer option; mimalloc reads options at any time.
        unsafe { mi_option_set(PURGE_DELAY, 10_000) };
    });
}

/// Freed large mappings kept for reuse by `CpuBuffer::reusable`: an op repeated
/// at one size (every training step) then writes into pages already faulted in,
/// as glibc's heap does for NumPy, instead of faulting a fresh mapping each time.
#[cfg(target_os = "linux")]
mod cache {
    use std::sync::Mutex;

    /// A training step frees and reallocates about a hundred large buffers:
    /// with fewer entries the oldest, needed again next step, were evicted.
    const MAX_ENTRIES: usize = 512;

    /// A quarter of the machine's memory, at least 1 GiB: a ResNet step at
    /// batch 64 frees and reallocates over 1 GiB of columns and activations,
    /// and faulting them in again cost a fifth of its time.
    fn max_bytes() -> usize {
        (super::memory_limit() / 4).max(1 << 30)
    }

    /// (mapping length, base address), oldest first.
    static FREE: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

    pub fn take(len: usize) -> Option<*mut u8> {
        let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
        let i = free.iter().rposition(|&(l, _)| l == len)?;
        Some(free.remove(i).1 as *mut u8)
    }

    /// Keeps a mapping for reuse, unmapping the oldest ones beyond the limits.
    pub fn give(len: usize, base: *mut u8) {
        let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
        free.push((len, base as usize));
        while free.len() > MAX_ENTRIES || free.iter().map(|e| e.0).sum::<usize>() > max_bytes() {
            let (l, b) = free.remove(0);
            // SAFETY: a mapping made by `map_huge` and owned by the cache.
            unsafe { libc::munmap(b as *mut libc::c_void, l) };
        }
    }

    /// Unmaps every cached mapping.
    pub fn clear() {
        let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
        for (l, b) in free.drain(..) {
            // SAFETY: as in `give`.
            unsafe { libc::munmap(b as *mut libc::c_void, l) };
        }
    }
}

/// Returns cached CPU memory to the system (rumus.empty_cache()).
pub fn empty_cache() {
    #[cfg(target_os = "linux")]
    cache::clear();
}

/// Large buffers: fresh zero pages from mmap, aligned to 2 MiB and advised as
/// transparent huge pages, so first writes fault 512x less often.
/// With `reuse`, a cached mapping of the same size may be returned: its
/// contents are whatever the last user left (initialized, not zero).
#[cfg(target_os = "linux")]
fn map_huge(nbytes: usize, reuse: bool) -> Option<CpuBuffer> {
    let len = nbytes.checked_add(HUGE_PAGE_BYTES)?;
    let start = |base: *mut u8| (base as usize).next_multiple_of(HUGE_PAGE_BYTES) as *mut u8;
    if let Some(base) = cache::take(len) {
        let ptr = NonNull::new(start(base))?;
        if !reuse {
            // SAFETY: [start, start + nbytes) lies inside the cached mapping.
            unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, nbytes) };
        }
        return Some(CpuBuffer { ptr, nbytes, owner: CpuOwner::Mapped { base, len } });
    }
    // SAFETY: an anonymous private mapping; checked for failure below.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return None;
    }
    let base = base as *mut u8;
    // SAFETY: [start, start + nbytes) lies inside the mapping; advice is only a hint.
    unsafe { libc::madvise(start(base) as *mut libc::c_void, nbytes, libc::MADV_HUGEPAGE) };
    if !reuse {
        // Zeroed buffers are populated up front: left to first touch, a read maps
        // the shared zero page and the following write faults again (copy-on-write
        // plus a TLB flush on every core). A write per page, after the advice, so
        // that the faults take huge pages (MAP_POPULATE faulted 4 KiB pages before
        // the advice, and an all-reduce of them ran at 0.5-0.7x NumPy's arrays).
        let p = start(base);
        for off in (0..nbytes).step_by(4096) {
            // SAFETY: inside [start, start + nbytes); fresh pages already read 0.
            unsafe { p.add(off).write_volatile(0) };
        }
    }
    Some(CpuBuffer {
        ptr: NonNull::new(start(base))?,
        nbytes,
        owner: CpuOwner::Mapped { base, len },
    })
}

#[cfg(not(target_os = "linux"))]
fn map_huge(_nbytes: usize, _reuse: bool) -> Option<CpuBuffer> {
    None
}

impl Drop for CpuBuffer {
    fn drop(&mut self) {
        match self.owner {
            CpuOwner::Owned if self.nbytes > 0 => {
                // SAFETY: allocated in `zeroed` with this exact layout.
                unsafe {
                    dealloc(
                        self.ptr.as_ptr(),
                        AllocLayout::from_size_align_unchecked(self.nbytes, ALIGN),
                    )
                }
            }
            #[cfg(target_os = "linux")]
            CpuOwner::Mapped { base, len } => cache::give(len, base),
            _ => {}
        }
    }
}

/// Where a tensor's data lives.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    Cpu,
    /// A GPU by its logical index (`gpu:<i>`, below `context::MAX_GPUS`).
    Gpu(u8),
}

impl Device {
    /// "cpu", or "gpu:<i>".
    pub fn name(self) -> &'static str {
        const GPUS: [&str; 16] = [
            "gpu:0", "gpu:1", "gpu:2", "gpu:3", "gpu:4", "gpu:5", "gpu:6", "gpu:7", "gpu:8",
            "gpu:9", "gpu:10", "gpu:11", "gpu:12", "gpu:13", "gpu:14", "gpu:15",
        ];
        match self {
            Device::Cpu => "cpu",
            Device::Gpu(i) => GPUS.get(i as usize).copied().unwrap_or("gpu"),
        }
    }
    /// The GPU index (None on the CPU).
    pub fn gpu_index(self) -> Option<usize> {
        match self {
            Device::Cpu => None,
            Device::Gpu(i) => Some(i as usize),
        }
    }
    pub fn is_gpu(self) -> bool {
        matches!(self, Device::Gpu(_))
    }
    /// The GPU the running op works on (set from its GPU operands).
    pub fn active_gpu() -> Device {
        Device::Gpu(crate::backend::gpu::context::active() as u8)
    }
}

/// A storage's memory: on the CPU or on the GPU. (The design's third form, a
/// copy on each side with the newer one recorded, is not used yet: `.cpu()`
/// and `.to("gpu")` make new tensors, as in PyTorch.)
pub enum StorageData {
    Cpu(CpuBuffer),
    Gpu(GpuBuffer),
}

pub struct Storage {
    dtype: DType,
    len: usize,
    version: AtomicU64,
    /// Owns the memory; never replaced while the storage lives.
    data: StorageData,
    /// The CPU buffer while it holds the current data, else null. A CPU buffer
    /// never moves while the storage lives, so kernels read this without the lock.
    cpu_ptr: AtomicPtr<u8>,
    /// For a reinterpretation of another storage's memory as another dtype
    /// (view_as_real, view_as_complex): that storage, whose version counter
    /// this one shares so in-place writes through either are seen by autograd.
    base: Option<Arc<Storage>>,
    /// A GPU storage whose contents the fusion layer has not written yet
    /// (backend/gpu/fusion.rs): `gpu_buffer` writes them first.
    pending: AtomicBool,
}

impl Drop for Storage {
    fn drop(&mut self) {
        // A pending result nobody can read any more: its expression (and the
        // inputs it holds) can go.
        if *self.pending.get_mut() {
            crate::backend::gpu::fusion::forget(self);
        }
    }
}

impl Storage {
    pub fn zeros(dtype: DType, len: usize) -> Result<Storage> {
        Ok(Storage::from_cpu(dtype, len, CpuBuffer::zeroed(Storage::nbytes(dtype, len)?)?))
    }
    /// Storage whose contents the caller overwrites (see `CpuBuffer::reusable`).
    pub fn for_output(dtype: DType, len: usize) -> Result<Storage> {
        Ok(Storage::from_cpu(dtype, len, CpuBuffer::reusable(Storage::nbytes(dtype, len)?)?))
    }
    fn nbytes(dtype: DType, len: usize) -> Result<usize> {
        match len.checked_mul(dtype.size()) {
            Some(n) => Ok(n),
            None => bail!(
                Runtime,
                "cannot allocate {} elements of {}: size overflows",
                len,
                dtype.name()
            ),
        }
    }
    pub fn from_cpu(dtype: DType, len: usize, buf: CpuBuffer) -> Storage {
        let cpu_ptr = AtomicPtr::new(buf.ptr());
        Storage {
            dtype,
            len,
            version: AtomicU64::new(0),
            data: StorageData::Cpu(buf),
            cpu_ptr,
            base: None,
            pending: AtomicBool::new(false),
        }
    }
    /// The memory of `base` (a CPU storage) read as `dtype`: a storage that
    /// keeps `base` alive and shares its version counter.
    pub fn reinterpret(base: &Arc<Storage>, dtype: DType) -> Result<Storage> {
        let root = base.base.clone().unwrap_or_else(|| base.clone());
        let ptr = base.cpu_ptr()?;
        let nbytes = base.len * base.dtype.size();
        // SAFETY: `root` owns the memory and lives as long as this storage.
        let buf = unsafe { CpuBuffer::borrowed(ptr, nbytes, Box::new(root.clone())) };
        let mut s = Storage::from_cpu(dtype, nbytes / dtype.size(), buf);
        s.base = Some(root);
        Ok(s)
    }
    /// Whether two storages share memory (one reinterprets the other).
    pub fn same_memory(a: &Arc<Storage>, b: &Arc<Storage>) -> bool {
        let root = |s: &Arc<Storage>| Arc::as_ptr(s.base.as_ref().unwrap_or(s));
        root(a) == root(b)
    }
    pub fn from_vec<T: Element>(v: Vec<T>) -> Result<Storage> {
        let s = Storage::for_output(T::DTYPE, v.len())?;
        // SAFETY: the new buffer holds exactly v.len() elements of T.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), s.cpu_ptr()? as *mut T, v.len()) };
        Ok(s)
    }
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn version(&self) -> u64 {
        match &self.base {
            Some(b) => b.version(),
            None => self.version.load(Ordering::Acquire),
        }
    }
    /// Called by every in-place write.
    pub fn bump_version(&self) {
        match &self.base {
            Some(b) => b.bump_version(),
            None => {
                self.version.fetch_add(1, Ordering::AcqRel);
            }
        }
    }
    /// GPU storage of `len` elements (see `gpu::dtype::kind`), contents unspecified.
    pub fn on_gpu(dtype: DType, len: usize, device: usize) -> Result<Storage> {
        crate::backend::gpu::context::activate(device);
        let Some(nbytes) = len.checked_mul(crate::backend::gpu::dtype::elem_bytes(dtype)?) else {
            bail!(Runtime, "GPU out of memory: {} elements", len)
        };
        let buf = crate::backend::gpu::buffer_pool::alloc(nbytes as u64)?;
        Ok(Storage::from_gpu(dtype, len, buf))
    }
    pub fn from_gpu(dtype: DType, len: usize, buf: GpuBuffer) -> Storage {
        Storage {
            dtype,
            len,
            version: AtomicU64::new(0),
            data: StorageData::Gpu(buf),
            cpu_ptr: AtomicPtr::new(std::ptr::null_mut()),
            base: None,
            pending: AtomicBool::new(false),
        }
    }
    /// Whether the fusion layer still owes this storage's contents.
    pub fn is_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }
    pub fn set_pending(&self, pending: bool) {
        self.pending.store(pending, Ordering::Release);
    }
    /// The GPU index of this storage (None on the CPU), without making it
    /// the active device (for drops, which may come during another device's work).
    pub fn gpu_index(&self) -> Option<usize> {
        match &self.data {
            StorageData::Cpu(_) => None,
            StorageData::Gpu(b) => Some(b.device),
        }
    }
    pub fn device(&self) -> Device {
        match &self.data {
            StorageData::Cpu(_) => Device::Cpu,
            StorageData::Gpu(b) => {
                // Whoever asks is about to work with this tensor: GPU work
                // follows it to its device.
                crate::backend::gpu::context::activate(b.device);
                Device::Gpu(b.device as u8)
            }
        }
    }
    /// Base address of this storage's CPU memory. CPU kernels reach GPU
    /// tensors only for ops that have no GPU kernel yet.
    pub fn cpu_ptr(&self) -> Result<*mut u8> {
        let p = self.cpu_ptr.load(Ordering::Acquire);
        if p.is_null() {
            bail!(NotImplemented, "this operation has no GPU kernel yet: the tensor is on {} (move it with .cpu() first)", self.device().name());
        }
        Ok(p)
    }
    /// The GPU buffer holding this storage, for kernels that read its dtype's
    /// GPU words. bfloat16 is refused: its elements are packed two per word,
    /// which only the bfloat16-aware launchers (`gpu_packed_buffer`) read, so
    /// an op without such a kernel raises instead of misreading the words.
    pub fn gpu_buffer(&self) -> Result<&wgpu::Buffer> {
        if self.dtype == DType::BF16 && self.device().is_gpu() {
            bail!(
                Type,
                "this operation has no kernel for bfloat16 tensors on {}; convert with .float() first (or run it on the CPU)",
                self.device().name()
            );
        }
        self.gpu_packed_buffer()
    }
    /// The GPU buffer holding this storage, whatever its dtype (bfloat16 as
    /// packed words included).
    /// A pending fused result is computed first.
    pub fn gpu_packed_buffer(&self) -> Result<&wgpu::Buffer> {
        if self.pending.load(Ordering::Acquire) {
            if let StorageData::Gpu(b) = &self.data {
                crate::backend::gpu::context::activate(b.device);
            }
            crate::backend::gpu::fusion::flush()?;
        }
        self.gpu_buffer_unwritten()
    }
    /// The GPU buffer even while the fusion layer still owes its contents:
    /// for the fusion layer itself, which writes it.
    pub fn gpu_buffer_unwritten(&self) -> Result<&wgpu::Buffer> {
        match &self.data {
            StorageData::Gpu(b) => {
                crate::backend::gpu::context::activate(b.device);
                Ok(b.buffer())
            }
            StorageData::Cpu(_) => {
                bail!(Runtime, "internal error: a CPU tensor reached a GPU kernel")
            }
        }
    }
}
