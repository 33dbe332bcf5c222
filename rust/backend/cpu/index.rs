//! Gather/scatter by element offsets: the kernels behind indexing, gather,
//! scatter, index_select and one_hot. Offsets are computed (and bounds-checked)
//! by the ops; these loops only move data.

use super::P;
use crate::backend::cpu::elementwise::Arith;

/// out[i] = src[offs[i]], out contiguous.
///
/// # Safety
/// Every offset must address an element of `src`; `out` holds offs.len() elements.
pub unsafe fn take<T: Copy + Send + Sync>(out: P<T>, src: P<T>, offs: &[isize]) {
    let body = |(i, &o): (usize, &isize)| *out.at(i as isize) = *src.at(o);
    super::strided::split_range(offs.len(), |a, b| (a..b).for_each(|i| body((i, &offs[i]))));
}

/// dst[offs[i]] = vals[i]. Sequential: with repeated offsets the last write wins.
///
/// # Safety
/// Every offset must address an element of `dst`; `vals` holds offs.len() elements.
pub unsafe fn put<T: Copy>(dst: P<T>, vals: P<T>, offs: &[isize]) {
    for (i, &o) in offs.iter().enumerate() {
        *dst.at(o) = *vals.at(i as isize);
    }
}

/// dst[offs[i]] += vals[i]; repeated offsets accumulate.
///
/// # Safety
/// As for `put`.
pub unsafe fn put_add<T: Arith>(dst: P<T>, vals: P<T>, offs: &[isize]) {
    for (i, &o) in offs.iter().enumerate() {
        *dst.at(o) = (*dst.at(o)).add(*vals.at(i as isize));
    }
}
