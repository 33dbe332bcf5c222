//! Reference-counted memory shared by every view of a tensor, with the version
//! counter that autograd checks. Memory is CPU-owned, borrowed from an external
//! owner (a NumPy array), on a GPU, or on both with a record of the newer side.

use super::dtype::DType;
use crate::backend::gpu::GpuBuffer;
use crate::bail;
use crate::error::Result;
use std::alloc::{alloc_zeroed, dealloc, Layout as AllocLayout};
use std::any::Any;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard};

/// Kernels like 64-byte aligned rows (one cache line, full AVX-512 vectors).
const ALIGN: usize = 64;

/// Keeps borrowed memory alive; the Python layer wraps the NumPy array in it.
pub type ExternalOwner = Box<dyn Any + Send + Sync>;

pub enum CpuOwner {
    /// Allocated here with `ALIGN`; freed on drop.
    Owned,
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

impl CpuBuffer {
    pub fn zeroed(nbytes: usize) -> Result<CpuBuffer> {
        if nbytes == 0 {
            let ptr = NonNull::new(ALIGN as *mut u8).expect("non-null constant");
            return Ok(CpuBuffer { ptr, nbytes, owner: CpuOwner::Owned });
        }
        let Ok(layout) = AllocLayout::from_size_align(nbytes, ALIGN) else {
            bail!(Runtime, "cannot allocate {} bytes: size too large", nbytes);
        };
        // SAFETY: layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
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
    pub fn nbytes(&self) -> usize {
        self.nbytes
    }
    pub fn is_borrowed(&self) -> bool {
        matches!(self.owner, CpuOwner::External(_))
    }
}

impl Drop for CpuBuffer {
    fn drop(&mut self) {
        if let CpuOwner::Owned = self.owner {
            if self.nbytes > 0 {
                // SAFETY: allocated in `zeroed` with this exact layout.
                unsafe { dealloc(self.ptr.as_ptr(), AllocLayout::from_size_align_unchecked(self.nbytes, ALIGN)) }
            }
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Side {
    Cpu,
    Gpu,
}

pub enum StorageData {
    Cpu(CpuBuffer),
    Gpu(GpuBuffer),
    /// Copies on both sides; `newer` is the side written last, the other is stale.
    Both { cpu: CpuBuffer, gpu: GpuBuffer, newer: Side },
}

pub struct Storage {
    dtype: DType,
    len: usize,
    version: AtomicU64,
    data: RwLock<StorageData>,
}

/// Read access to a storage's CPU memory; holds the lock so the data cannot move.
pub struct CpuGuard<'a>(RwLockReadGuard<'a, StorageData>);

impl CpuGuard<'_> {
    pub fn ptr(&self) -> *mut u8 {
        match &*self.0 {
            StorageData::Cpu(b) | StorageData::Both { cpu: b, .. } => b.ptr(),
            StorageData::Gpu(_) => unreachable!("CpuGuard is only built over CPU data"),
        }
    }
}

impl Storage {
    pub fn zeros(dtype: DType, len: usize) -> Result<Storage> {
        let Some(nbytes) = len.checked_mul(dtype.size()) else {
            bail!(Runtime, "cannot allocate {} elements of {}: size overflows", len, dtype.name());
        };
        Ok(Storage::from_cpu(dtype, len, CpuBuffer::zeroed(nbytes)?))
    }
    pub fn from_cpu(dtype: DType, len: usize, buf: CpuBuffer) -> Storage {
        Storage { dtype, len, version: AtomicU64::new(0), data: RwLock::new(StorageData::Cpu(buf)) }
    }
    pub fn from_vec<T: super::dtype::Element>(v: Vec<T>) -> Result<Storage> {
        let s = Storage::zeros(T::DTYPE, v.len())?;
        // SAFETY: the new buffer holds exactly v.len() elements of T.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), s.cpu()?.ptr() as *mut T, v.len()) };
        Ok(s)
    }
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }
    /// Called by every in-place write.
    pub fn bump_version(&self) {
        self.version.fetch_add(1, Ordering::AcqRel);
    }
    pub fn device_side(&self) -> Side {
        match &*self.read() {
            StorageData::Cpu(_) => Side::Cpu,
            StorageData::Gpu(_) => Side::Gpu,
            StorageData::Both { newer, .. } => *newer,
        }
    }
    fn read(&self) -> RwLockReadGuard<'_, StorageData> {
        // A poisoned lock only means a kernel panicked elsewhere; the data is still memory.
        self.data.read().unwrap_or_else(|e| e.into_inner())
    }
    /// CPU memory of this storage. GPU-resident data is read back by the GPU
    /// backend (issue: GPU backend); until then only CPU storage exists.
    pub fn cpu(&self) -> Result<CpuGuard<'_>> {
        let g = self.read();
        match &*g {
            StorageData::Cpu(_) | StorageData::Both { newer: Side::Cpu, .. } => Ok(CpuGuard(g)),
            _ => bail!(Runtime, "storage lives on the GPU; the GPU backend is not available in this build"),
        }
    }
    pub fn is_borrowed(&self) -> bool {
        matches!(&*self.read(), StorageData::Cpu(b) if b.is_borrowed())
    }
}
