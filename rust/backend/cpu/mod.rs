//! CPU kernels. `strided` walks any number of operands with arbitrary strides
//! in parallel rows; the other files build the op kernels on top of it.
//! Parallel work goes to the thread team (`team`).

pub mod attention;
pub mod batch_norm;
pub mod binary;
pub mod complex;
pub mod conv;
pub mod conv_cols;
pub mod conv_depthwise;
pub mod conv_direct;
pub mod conv_winograd;
pub mod conv_winograd_lanes;
pub mod ctc;
pub mod elementwise;
pub mod fft;
pub mod gemm;
pub mod gemm_bf16;
pub mod gemm_f16;
pub mod halfbinary;
pub mod halfcast;
pub mod halfreduce;
pub mod halfsoftmax;
pub mod index;
pub mod lanes;
pub mod linalg;
pub mod norm;
pub mod pad;
pub mod pool;
pub mod qgemm;
pub mod random;
pub mod reduce;
pub mod resample;
pub mod rnn;
pub mod sample;
pub mod scratch;
pub mod softmax;
pub mod sort;
pub mod special;
pub mod special_fns;
pub mod strided;
pub mod team;
pub mod tri;
pub mod unary;
pub mod vmath;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Below this many elements a kernel runs on the calling thread: waking the
/// pool costs more than the work.
pub const PAR_THRESHOLD: usize = 1 << 15;

static FORKED: AtomicBool = AtomicBool::new(false);

extern "C" fn after_fork_in_child() {
    FORKED.store(true, Ordering::Relaxed);
}

/// Called once at import: a child of fork() inherits the thread team without
/// its threads, so parallel work there would wait forever; children run serially.
pub fn watch_fork() {
    // SAFETY: the handler only stores to an atomic.
    unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
}

/// Whether `work` elements are worth the thread pool (never in a forked child).
#[inline]
pub fn parallel(work: usize) -> bool {
    work >= PAR_THRESHOLD && !FORKED.load(Ordering::Relaxed)
}

/// The count rumus.set_num_threads chose (0: none).
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// Threads a kernel may use: set_num_threads' count, else rayon's
/// (RAYON_NUM_THREADS or the cores); 1 in a forked child.
pub fn threads() -> usize {
    if FORKED.load(Ordering::Relaxed) {
        return 1;
    }
    match THREADS.load(Ordering::Relaxed) {
        0 => rayon::current_num_threads(),
        n => n,
    }
}

/// Kernels use `n` threads from now on (rumus.set_num_threads).
pub fn set_threads(n: usize) {
    THREADS.store(n.max(1), Ordering::Relaxed);
    team::resize(n.max(1));
}

/// Runs `f` inlined into a function compiled for the widest SIMD the CPU has
/// (AVX-512 or AVX2+FMA, checked at run time), so plain loops in `f`
/// vectorize that wide while the wheel stays portable. Mark the closure
/// `#[inline(always)]`: LLVM does not inline a large one, which then runs
/// compiled for the baseline CPU.
#[inline(always)]
pub fn simd<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { simd_avx512(f) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: as above.
            return unsafe { simd_avx2(f) };
        }
    }
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
unsafe fn simd_avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn simd_avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// A raw pointer that may cross into parallel tasks. Kernels write disjoint
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
