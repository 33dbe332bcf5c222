//! Padding as a gather over per-dim maps (its adjoint is resample's
//! `taps_adjoint` with one tap of weight 1). Output rows are whole last-dim rows: the part of a row that maps
//! onto consecutive source elements moves as one copy, the rest element-wise.

use super::P;
use crate::tensor::layout::numel;

/// A map entry with no source: the fill value goes there.
pub const FILL: isize = isize::MIN;

/// The longest stretch [j0, j1) of `last` that reads consecutive source
/// elements (offsets stepping by 1).
fn copy_run(last: &[isize]) -> (usize, usize) {
    let (mut best, mut start) = ((0, 0), 0);
    for j in 0..last.len() {
        let extends =
            j > start && last[j] != FILL && last[j - 1] != FILL && last[j] == last[j - 1] + 1;
        if !extends {
            start = j;
        }
        if last[j] != FILL && j + 1 - start > best.1 - best.0 {
            best = (start, j + 1);
        }
    }
    best
}

/// Copies n elements in blocks of 16 (the last one overlapping) without a
/// call to memcpy, whose cost shows on rows of a few dozen elements.
#[inline(always)]
unsafe fn copy_short<T: Copy>(d: *mut T, s: *const T, n: usize) {
    const B: usize = 16;
    let block = |k: usize| {
        (d.add(k) as *mut [T; B]).write_unaligned((s.add(k) as *const [T; B]).read_unaligned())
    };
    if n < B {
        (0..n).for_each(|j| *d.add(j) = *s.add(j));
        return;
    }
    (0..n / B).for_each(|i| block(i * B));
    if !n.is_multiple_of(B) {
        block(n - B);
    }
}

/// out (contiguous, of shape `offs[d].len()` per dim) = the source elements at
/// `src + Σ offs[d][i_d]`, or `fill` where any offs entry is FILL.
///
/// # Safety
/// `out` must hold the output's elements; every non-FILL combination of
/// offsets must address an element of `src`'s storage.
pub unsafe fn gather<T: Copy + Send + Sync>(out: P<T>, src: P<T>, offs: &[Vec<isize>], fill: T) {
    let Some((last, outer)) = offs.split_last() else {
        *out.get() = *src.get();
        return;
    };
    let (w, rows) = (last.len(), numel(&outer.iter().map(Vec::len).collect::<Vec<_>>()));
    if w == 0 || rows == 0 {
        return;
    }
    let (j0, j1) = copy_run(last);
    let row = move |o: *mut T, base: Option<isize>| match base {
        None => (0..w).for_each(|j| *o.add(j) = fill),
        Some(b) => {
            let at = |j: usize| if last[j] == FILL { fill } else { *src.at(b + last[j]) };
            (0..j0).for_each(|j| *o.add(j) = at(j));
            if j1 > j0 {
                copy_short(o.add(j0), src.at(b + last[j0]), j1 - j0);
            }
            (j1..w).for_each(|j| *o.add(j) = at(j));
        }
    };
    // Rows r = (plane p, row i of the innermost outer dim): the plane's base
    // offset is found once per run of its rows.
    let (planes, inner_rows) = match outer.split_last() {
        Some((rows_map, _)) => (rows / rows_map.len(), Some(rows_map)),
        None => (1, None),
    };
    let h = rows / planes;
    let plane_base = |mut p: usize| {
        let mut base = Some(0isize);
        for m in outer[..outer.len() - 1].iter().rev() {
            let o = m[p % m.len()];
            base = base.and_then(|b| (o != FILL).then_some(b + o));
            p /= m.len();
        }
        base
    };
    let chunks = rows.min(super::threads() * 8);
    super::team::for_each_if(rows * w, chunks, |c| {
        super::simd(
            #[inline(always)]
            || {
                let (mut r, e) = (c * rows / chunks, (c + 1) * rows / chunks);
                while r < e {
                    let (p, i0) = (r / h, r % h);
                    let pb = if inner_rows.is_some() { plane_base(p) } else { Some(0) };
                    for i in i0..h.min(i0 + e - r) {
                        let base = match inner_rows {
                            Some(m) => pb.and_then(|b| (m[i] != FILL).then_some(b + m[i])),
                            None => pb,
                        };
                        row(out.at(((p * h + i) * w) as isize), base);
                    }
                    r += h.min(i0 + e - r) - i0;
                }
            },
        )
    });
}
