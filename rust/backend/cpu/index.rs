//! Gather/scatter by runs of element offsets: the kernels behind indexing,
//! gather, scatter, index_select and index_add. Entry i of `starts` begins
//! `run` consecutive elements (a row of an embedding table moves as one
//! copy). Offsets are computed (and bounds-checked) by the ops; these loops
//! only move data.

use super::halfreduce::Half;
use super::P;
use crate::backend::cpu::elementwise::Arith;

/// Starts per parallel task: about 16K elements each.
fn per_task(run: usize) -> usize {
    ((1 << 14) / run.max(1)).max(1)
}

/// out[i·run + j] = src[starts[i] + j], out contiguous.
///
/// # Safety
/// Every run must lie inside `src`; `out` holds starts.len() · run elements.
pub unsafe fn take<T: Copy + Send + Sync>(out: P<T>, src: P<T>, starts: &[isize], run: usize) {
    let per = per_task(run);
    let tasks = starts.len().div_ceil(per);
    super::team::for_each_if(starts.len() * run, tasks, |t| {
        // Local copies: through the closure's references each element would reload them.
        let (out, src) = (out, src);
        let lo = t * per;
        for (i, &s) in starts.iter().enumerate().skip(lo).take(per) {
            if run == 1 {
                *out.at(i as isize) = *src.at(s);
            } else {
                std::ptr::copy_nonoverlapping(src.at(s), out.at((i * run) as isize), run);
            }
        }
    });
}

/// dst[starts[i] + j] = vals[i·run + j]. Sequential: with repeated offsets the last write wins.
///
/// # Safety
/// Every run must lie inside `dst`; `vals` holds starts.len() · run elements
/// and does not overlap `dst`.
pub unsafe fn put<T: Copy>(dst: P<T>, vals: P<T>, starts: &[isize], run: usize) {
    for (i, &s) in starts.iter().enumerate() {
        std::ptr::copy_nonoverlapping(vals.at((i * run) as isize), dst.at(s), run);
    }
}

/// dst[starts[i] + j] += vals[i·run + j]; repeated offsets accumulate.
///
/// # Safety
/// As for `put`.
pub unsafe fn put_add<T: Arith>(dst: P<T>, vals: P<T>, starts: &[isize], run: usize) {
    if run == 1 {
        for (i, &s) in starts.iter().enumerate() {
            *dst.at(s) = (*dst.at(s)).add(*vals.at(i as isize));
        }
        return;
    }
    super::simd(
        #[inline(always)]
        || {
            for (i, &s) in starts.iter().enumerate() {
                // SAFETY: the run lies inside dst; vals is a separate buffer.
                let (d, v) = unsafe {
                    (
                        std::slice::from_raw_parts_mut(dst.at(s), run),
                        std::slice::from_raw_parts(vals.at((i * run) as isize), run),
                    )
                };
                d.iter_mut().zip(v).for_each(|(d, &v)| *d = d.add(v));
            }
        },
    )
}

/// `put_add` for float16/bfloat16: each sum rounded back, as an add into the
/// tensor would round it.
///
/// # Safety
/// As for `put`.
pub unsafe fn put_add_half<H: Half>(dst: P<H>, vals: P<H>, starts: &[isize], run: usize) {
    for (i, &s) in starts.iter().enumerate() {
        for j in 0..run as isize {
            let d = dst.at(s + j);
            *d = H::narrow((*d).wide() + (*vals.at(i as isize * run as isize + j)).wide());
        }
    }
}
