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

/// The indices (row-major, `shape.len()` per element) of the true elements of
/// a contiguous bool buffer: chunks counted in parallel, then each chunk
/// writes its indices at its offset, branch-free (every element writes, and
/// the write position advances by the flag; the chunk stops at its last true
/// element, so no write lands past its part).
pub fn nonzero(mask: &[bool], shape: &[usize]) -> Vec<i64> {
    let nd = shape.len().max(1);
    let row = shape.last().copied().unwrap_or(1).max(1);
    let rows = mask.len() / row;
    // Whole rows per chunk, about 64K elements each.
    let per = (65_536 / row).max(1);
    let chunks = rows.div_ceil(per);
    let range = |c: usize| c * per * row..((c + 1) * per).min(rows) * row;
    let counts =
        super::team::map(chunks, |c| mask[range(c)].iter().map(|&b| b as usize).sum::<usize>());
    let total: usize = counts.iter().sum();
    let mut out = vec![0i64; total * nd];
    let starts: Vec<usize> = counts
        .iter()
        .scan(0, |s, &c| {
            *s += c;
            Some(*s - c)
        })
        .collect();
    let po = P(out.as_mut_ptr());
    super::team::for_each_if(mask.len(), chunks, |c| {
        let (po, mut w, end) = (po, starts[c] * nd, (starts[c] + counts[c]) * nd);
        if w == end {
            return;
        }
        let mut lead = vec![0i64; nd - 1];
        'rows: for r in c * per..((c + 1) * per).min(rows) {
            // The row's leading indices, from its number.
            let mut q = r;
            for d in (0..nd - 1).rev() {
                lead[d] = (q % shape[d]) as i64;
                q /= shape[d];
            }
            for (j, &b) in mask[r * row..(r + 1) * row].iter().enumerate() {
                // SAFETY: w < end ≤ total · nd: the loop stops once w reaches end.
                unsafe {
                    for (d, &v) in lead.iter().enumerate() {
                        *po.at((w + d) as isize) = v;
                    }
                    *po.at((w + nd - 1) as isize) = j as i64;
                }
                w += nd * b as usize;
                if w == end {
                    break 'rows;
                }
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn nonzero_matches_a_serial_walk() {
        // Rows of 7 (chunks of whole rows), several chunks, true runs and gaps.
        for shape in [vec![0], vec![5], vec![3, 30_000, 7], vec![70_001], vec![2, 0, 3]] {
            let n: usize = shape.iter().product();
            let mask: Vec<bool> = (0..n).map(|i| (i * 7919) % 13 < 5).collect();
            let mut want = Vec::new();
            for (i, _) in mask.iter().enumerate().filter(|(_, &b)| b) {
                let mut q = i;
                let mut idx = vec![0i64; shape.len()];
                for d in (0..shape.len()).rev() {
                    idx[d] = (q % shape[d]) as i64;
                    q /= shape[d];
                }
                want.extend(idx);
            }
            assert_eq!(super::nonzero(&mask, &shape), want, "shape {shape:?}");
        }
    }
}
