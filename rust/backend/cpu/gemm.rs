//! Matrix products through the `gemm` crate (packed, SIMD micro-kernels).
//! Operands may have any row/column strides: no copies. Parallel products
//! split the output into blocks the team's threads claim as they come free,
//! each a single-threaded gemm call.

use gemm::Parallelism;

/// Work (m*n*k) below which one product runs on one thread (a team job
/// costs about a microsecond).
const PAR_GEMM_WORK: usize = 1 << 19;

/// Element types with a gemm kernel.
pub trait GemmElem: Copy + 'static {
    const ZERO: Self;
    const ONE: Self;
    /// Runs the product on a kernel of this type's own instead of the gemm
    /// crate's; false where it has none.
    ///
    /// # Safety
    /// As `matmul`.
    unsafe fn own_kernel(
        _m: usize,
        _n: usize,
        _k: usize,
        _dst: Mat<Self>,
        _lhs: Mat<Self>,
        _rhs: Mat<Self>,
        _threads: usize,
        _acc: bool,
    ) -> bool {
        false
    }
}
impl GemmElem for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
}
impl GemmElem for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
}
/// bfloat16 runs only on `gemm_bf16` (callers check `gemm_bf16::available()`).
impl GemmElem for half::bf16 {
    const ZERO: half::bf16 = half::bf16::ZERO;
    const ONE: half::bf16 = half::bf16::ONE;
    unsafe fn own_kernel(
        m: usize,
        n: usize,
        k: usize,
        dst: Mat<Self>,
        lhs: Mat<Self>,
        rhs: Mat<Self>,
        threads: usize,
        acc: bool,
    ) -> bool {
        // SAFETY: forwarded from the caller of `matmul`.
        unsafe { super::gemm_bf16::matmul(m, n, k, dst, lhs, rhs, threads, acc) };
        true
    }
}

/// float16 runs on `gemm_f16` where the CPU has AVX-512 (callers check
/// `gemm_f16::available()`), else on the gemm crate.
impl GemmElem for half::f16 {
    const ZERO: half::f16 = half::f16::ZERO;
    const ONE: half::f16 = half::f16::ONE;
    unsafe fn own_kernel(
        m: usize,
        n: usize,
        k: usize,
        dst: Mat<Self>,
        lhs: Mat<Self>,
        rhs: Mat<Self>,
        threads: usize,
        acc: bool,
    ) -> bool {
        if !super::gemm_f16::available() {
            return false;
        }
        // SAFETY: forwarded from the caller of `matmul`; the CPU has AVX-512F.
        unsafe { super::gemm_f16::matmul(m, n, k, dst, lhs, rhs, threads, acc) };
        true
    }
}

/// A strided matrix: pointer to [0, 0], row stride, column stride (elements).
#[derive(Copy, Clone)]
pub struct Mat<T> {
    pub ptr: *mut T,
    pub rs: isize,
    pub cs: isize,
}
unsafe impl<T> Send for Mat<T> {}
unsafe impl<T> Sync for Mat<T> {}

impl<T> Mat<T> {
    /// The sub-matrix starting at [i, j].
    fn at(self, i: usize, j: usize) -> Mat<T> {
        Mat { ptr: self.ptr.wrapping_offset(i as isize * self.rs + j as isize * self.cs), ..self }
    }
}

pub fn parallel_for(m: usize, n: usize, k: usize) -> bool {
    m.saturating_mul(n).saturating_mul(k) >= PAR_GEMM_WORK && super::threads() > 1
}

/// dst (m x n) = lhs (m x k) @ rhs (k x n), overwriting dst, or added to it with `acc`.
///
/// # Safety
/// All three matrices must be valid for their shapes and strides; dst must not overlap the inputs.
pub unsafe fn matmul<T: GemmElem>(
    m: usize,
    n: usize,
    k: usize,
    dst: Mat<T>,
    lhs: Mat<T>,
    rhs: Mat<T>,
    threads: usize,
    acc: bool,
) {
    if m == 0 || n == 0 || (k == 0 && acc) {
        return;
    }
    // SAFETY: the caller's guarantees, forwarded.
    if unsafe { T::own_kernel(m, n, k, dst, lhs, rhs, threads, acc) } {
        return;
    }
    if k == 0 {
        for i in 0..m as isize {
            for j in 0..n as isize {
                *dst.ptr.offset(i * dst.rs + j * dst.cs) = T::ZERO;
            }
        }
        return;
    }
    // Split the longer side of dst into about eight blocks per thread, claimed
    // as threads come free: one block per thread left a fast core waiting on
    // a slow one (VM cores differ by up to 1.4x), 10-20% of a large product.
    // A block keeps at least 64 rows/columns and half the parallel threshold's
    // work, so each single-threaded call still amortizes its packing. With
    // one thread (a product inside a parallel task) it is one call.
    let (split_cols, len) = if n >= m { (true, n) } else { (false, m) };
    let other = if split_cols { m } else { n };
    let min_len = (PAR_GEMM_WORK / 2 / (other * k)).max(64);
    let per = if threads <= 1 { len } else { len.div_ceil(threads * 8).max(min_len) };
    let per = per.next_multiple_of(16);
    let blocks = len.div_ceil(per);
    let block = |b: usize| {
        let (lo, size) = (b * per, per.min(len - b * per));
        let (d, l, r, mm, nn) = if split_cols {
            (dst.at(0, lo), lhs, rhs.at(0, lo), m, size)
        } else {
            (dst.at(lo, 0), lhs.at(lo, 0), rhs, size, n)
        };
        // SAFETY: each block is a sub-matrix of the caller's valid operands; blocks of dst are disjoint.
        unsafe {
            gemm::gemm(
                mm,
                nn,
                k,
                d.ptr,
                d.cs,
                d.rs,
                acc,
                l.ptr,
                l.cs,
                l.rs,
                r.ptr,
                r.cs,
                r.rs,
                T::ONE,
                T::ONE,
                false,
                false,
                false,
                Parallelism::None,
            )
        };
    };
    super::team::for_each(blocks, block);
}
