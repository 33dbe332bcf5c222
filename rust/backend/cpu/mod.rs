//! CPU kernels. `strided` walks any number of operands with arbitrary strides
//! in parallel rows; the other files build the op kernels on top of it.

pub mod conv;
pub mod elementwise;
pub mod gemm;
pub mod index;
pub mod norm;
pub mod pool;
pub mod random;
pub mod softmax;
pub mod reduce;
pub mod strided;
pub mod vmath;

/// Below this many elements a kernel runs on the calling thread: waking the
/// pool costs more than the work.
pub const PAR_THRESHOLD: usize = 1 << 15;

/// A raw pointer that may cross into rayon tasks. Kernels write disjoint
/// elements, so sharing it is sound.
pub struct P<T>(pub *mut T);
impl<T> Clone for P<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for P<T> {}
unsafe impl<T> Send for P<T> {}
unsafe impl<T> Sync for P<T> {}
impl<T> P<T> {
    #[inline(always)]
    pub fn get(self) -> *mut T {
        self.0
    }
    #[inline(always)]
    pub fn at(self, off: isize) -> *mut T {
        // SAFETY: callers pass offsets computed from a layout inside the storage.
        unsafe { self.0.offset(off) }
    }
}
