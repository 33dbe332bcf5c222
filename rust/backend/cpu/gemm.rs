//! Matrix products through the `gemm` crate (packed, SIMD micro-kernels,
//! rayon-parallel). Operands may have any row/column strides: no copies.

use gemm::Parallelism;

/// Work (m*n*k) below which one product runs on one thread.
const PAR_GEMM_WORK: usize = 160 * 160 * 160;

/// Element types with a gemm kernel.
pub trait GemmElem: Copy + 'static {
    const ZERO: Self;
    const ONE: Self;
}
impl GemmElem for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
}
impl GemmElem for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
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

pub fn parallel_for(m: usize, n: usize, k: usize) -> bool {
    m.saturating_mul(n).saturating_mul(k) >= PAR_GEMM_WORK && super::threads() > 1
}

/// dst (m x n) = lhs (m x k) @ rhs (k x n), overwriting dst.
///
/// # Safety
/// All three matrices must be valid for their shapes and strides; dst must not overlap the inputs.
pub unsafe fn matmul<T: GemmElem>(m: usize, n: usize, k: usize, dst: Mat<T>, lhs: Mat<T>, rhs: Mat<T>, threads: usize) {
    if m == 0 || n == 0 {
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
    let par = if threads > 1 { Parallelism::Rayon(threads) } else { Parallelism::None };
    gemm::gemm(
        m, n, k, dst.ptr, dst.cs, dst.rs, false, lhs.ptr, lhs.cs, lhs.rs, rhs.ptr, rhs.cs, rhs.rs, T::ZERO, T::ONE,
        false, false, false, par,
    );
}
