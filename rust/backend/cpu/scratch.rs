//! Packing buffers of the half-precision GEMM kernels, kept per thread
//! between products: a fresh multi-megabyte allocation comes from the OS as
//! pages the kernel zeroes and faults in one by one, on every call (a tenth
//! of an autocast training step's time went there).

use std::cell::Cell;
use std::mem::MaybeUninit;

thread_local! {
    static KEPT: Cell<Vec<MaybeUninit<u32>>> = const { Cell::new(Vec::new()) };
}

/// `len` uninitialized 32-bit words, handed back to the thread on drop
/// (a nested call on the same thread just allocates its own).
pub struct Scratch(Vec<MaybeUninit<u32>>);

impl Scratch {
    pub fn new(len: usize) -> Scratch {
        let mut v = KEPT.take();
        v.clear();
        v.reserve(len);
        // SAFETY: MaybeUninit words need no initialization.
        unsafe { v.set_len(len) };
        Scratch(v)
    }
    /// The words as `T` (a 4-byte plain type: u32 or f32); the caller
    /// writes each one before reading it.
    pub fn ptr<T>(&mut self) -> *mut T {
        const { assert!(std::mem::size_of::<T>() == 4 && std::mem::align_of::<T>() <= 4) };
        self.0.as_mut_ptr().cast()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let v = std::mem::take(&mut self.0);
        KEPT.with(|k| {
            let old = k.take();
            k.set(if old.capacity() > v.capacity() { old } else { v });
        });
    }
}
