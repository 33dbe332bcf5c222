//! The strided walker every elementwise-style kernel runs on: coalesces the
//! dims of N operands, then hands out rows (start offsets, length, inner
//! strides) — on one thread for small work, split across the thread team otherwise.

use super::{parallel, PAR_THRESHOLD};
use crate::tensor::layout::{numel, Layout, Shape, Strides};

/// Calls `f(offsets, len, inner_strides)` for every row of the iteration space.
/// Rows cover each element exactly once, in row-major order within a thread.
pub fn for_each_row<const N: usize, F>(shape: &[usize], strides: [&[isize]; N], f: F)
where
    F: Fn([isize; N], usize, [isize; N]) + Sync,
{
    let total = numel(shape);
    if total == 0 {
        return;
    }
    // A single run of equal strides: hand out slices of it directly.
    let one_run = |st: [isize; N]| {
        split_range(total, |start, end| f(st.map(|s| s * start as isize), end - start, st))
    };
    if shape.len() == 1 {
        return one_run(std::array::from_fn(|k| strides[k][0]));
    }
    let (shape, strides) = Layout::coalesce(shape, strides);
    if shape.is_empty() {
        f([0; N], 1, [0; N]);
        return;
    }
    if shape.len() == 1 {
        return one_run(std::array::from_fn(|k| strides[k][0]));
    }
    split_range(total, |start, end| walk_range(&shape, &strides, start, end, &f));
}

/// Runs `run(start, end)` over [0, total): inline when small, else in parallel chunks.
pub fn split_range(total: usize, run: impl Fn(usize, usize) + Sync) {
    if !parallel(total) {
        run(0, total);
    } else {
        let chunks = (super::threads() * 4).min(total / (PAR_THRESHOLD / 4)).max(1);
        let per = total.div_ceil(chunks);
        super::team::for_each(chunks, |c| run(c * per, ((c + 1) * per).min(total)));
    }
}

/// Walks linear positions [start, end) of the (coalesced) space on this thread.
pub fn walk_range<const N: usize>(
    shape: &Shape,
    strides: &[Strides; N],
    start: usize,
    end: usize,
    mut f: impl FnMut([isize; N], usize, [isize; N]),
) {
    let nd = shape.len();
    let inner = shape[nd - 1];
    let inner_strides: [isize; N] = std::array::from_fn(|k| strides[k][nd - 1]);
    // Multi-index of `start`.
    let mut idx: Shape = smallvec::smallvec![0; nd];
    let mut rem = start;
    for d in (0..nd).rev() {
        idx[d] = rem % shape[d];
        rem /= shape[d];
    }
    let mut pos = start;
    while pos < end {
        let offs: [isize; N] = std::array::from_fn(|k| {
            (0..nd).map(|d| idx[d] as isize * strides[k][d]).sum::<isize>()
        });
        let len = (inner - idx[nd - 1]).min(end - pos);
        f(offs, len, inner_strides);
        pos += len;
        idx[nd - 1] += len;
        let mut d = nd - 1;
        while idx[d] == shape[d] && d > 0 {
            idx[d] = 0;
            d -= 1;
            idx[d] += 1;
        }
    }
}

/// Asks for the cache line holding `p` (a hint: any address is allowed).
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching never faults; SSE is part of the x86_64 baseline.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The dim `transpose_copy` takes as its unit-stride src dim, when copying
/// src (`strides`, broadcast to `shape`) into a contiguous dst is a transpose:
/// an inner dim of stride 1, a last dim that is not, no negative strides.
pub fn transposed_unit(shape: &[usize], strides: &[isize]) -> Option<usize> {
    let nd = shape.len();
    let a = (0..nd.saturating_sub(1)).rev().find(|&d| strides[d] == 1 && shape[d] > 1)?;
    (strides[nd - 1] != 1 && strides.iter().all(|&s| s >= 0)).then_some(a)
}

/// Copies a transposed layout into a contiguous `dst` in tiles of one cache
/// line by one cache line (16 × 16 float32, 32 × 32 bfloat16), staged in a
/// buffer so that every line of either side is read or written once per
/// tile. Walking the tile directly left one side revisiting lines a
/// power-of-two stride apart, which share an L1 set and evict each other (a
/// 2048 × 1024 float32 transpose ran at 7 ns an element, most of it waiting
/// on src lines). `a` is the src dim
/// with stride 1 (not the last); the other dims are walked as a batch.
///
/// # Safety
/// `src` with `strides` must be valid for `shape`; `dst` holds numel(shape) elements.
pub unsafe fn transpose_copy<T: Copy + Send + Sync>(
    shape: &[usize],
    strides: &[isize],
    a: usize,
    src: super::P<T>,
    dst: super::P<T>,
) {
    const MAX: usize = 32;
    let tile_n = (64 / std::mem::size_of::<T>().max(1)).clamp(8, MAX);
    let nd = shape.len();
    let b = nd - 1;
    let dst_strides = Layout::contiguous(shape).strides;
    let (na, nb) = (shape[a], shape[b]);
    let (da, sb) = (dst_strides[a], strides[b]);
    let batch_dims: Vec<usize> = (0..nd).filter(|&d| d != a && d != b).collect();
    let batch: usize = batch_dims.iter().map(|&d| shape[d]).product();
    let tiles_a = na.div_ceil(tile_n);
    let tile = |t: usize| {
        let (bi, ta) = (t / tiles_a, t % tiles_a);
        // Offsets of batch position bi in both layouts.
        let (mut rem, mut so, mut dof) = (bi, 0isize, 0isize);
        for &d in batch_dims.iter().rev() {
            let i = (rem % shape[d]) as isize;
            rem /= shape[d];
            so += i * strides[d];
            dof += i * dst_strides[d];
        }
        let a0 = ta * tile_n;
        let wa = tile_n.min(na - a0);
        // Row i of the buffer is the tile's part of dst row a0 + i.
        let mut buf = [std::mem::MaybeUninit::<T>::uninit(); MAX * MAX];
        for b0 in (0..nb).step_by(tile_n) {
            let wb = tile_n.min(nb - b0);
            // The src lines are a stride apart that no hardware prefetcher
            // follows: fetch the tile after next while this one is copied.
            let ahead = b0 + 2 * tile_n;
            for j in ahead..(ahead + tile_n).min(nb) {
                let s = src.at(so + a0 as isize + j as isize * sb);
                prefetch(s);
                prefetch(s.wrapping_add(wa - 1));
            }
            for j in 0..wb {
                let s = src.at(so + a0 as isize + (b0 + j) as isize * sb);
                for i in 0..wa {
                    // SAFETY: a0 + i < na, b0 + j < nb: inside src's layout.
                    buf[i * MAX + j] = std::mem::MaybeUninit::new(unsafe { *s.add(i) });
                }
            }
            for i in 0..wa {
                let d = dst.at(dof + (a0 + i) as isize * da + b0 as isize);
                for j in 0..wb {
                    // SAFETY: written above; inside dst's row a0 + i.
                    unsafe { *d.add(j) = buf[i * MAX + j].assume_init() };
                }
            }
        }
    };
    let count = batch * tiles_a;
    super::team::for_each_if(numel(shape), count, tile);
}
