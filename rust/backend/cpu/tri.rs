//! tril/triu: each row of each matrix copies the columns on its side of the
//! diagonal and zeroes the rest, in one pass.

use super::P;

/// out (contiguous, `batch` matrices of r × c) = src (strides `bs`, `rs`, `cs`
/// for batch, row, column) with the columns kept where col − row ≤ k (lower)
/// or ≥ k (upper), zero elsewhere.
///
/// # Safety
/// `out` must hold batch·r·c elements and `src` address every element of its layout.
#[allow(clippy::too_many_arguments)]
pub unsafe fn tri<T: Copy + Default + Send + Sync>(
    out: P<T>,
    src: P<T>,
    (batch, r, c): (usize, usize, usize),
    (bs, rs, cs): (isize, isize, isize),
    k: i64,
    lower: bool,
) {
    super::team::for_rows(batch * r, c, |row| {
        let (b, i) = (row / r, (row % r) as i64);
        let edge = |x: i64| x.clamp(0, c as i64) as usize;
        let (lo, hi) = if lower { (0, edge(i + k + 1)) } else { (edge(i + k), c) };
        let o = out.at((row * c) as isize);
        let s = src.at(b as isize * bs + i as isize * rs);
        (0..lo).for_each(|j| *o.add(j) = T::default());
        if cs == 1 {
            std::ptr::copy_nonoverlapping(s.add(lo), o.add(lo), hi - lo);
        } else {
            (lo..hi).for_each(|j| *o.add(j) = *s.offset(j as isize * cs));
        }
        (hi..c).for_each(|j| *o.add(j) = T::default());
    });
}
