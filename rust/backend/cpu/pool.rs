//! Pooling kernels over (planes, H, W) data. Windows are given per axis, so
//! one description serves max/avg pooling (stride, padding, dilation,
//! ceil_mode) and the adaptive variants (variable window bounds).

use super::{P, PAR_THRESHOLD};
use num_traits::Float;
use rayon::prelude::*;

/// The input positions first + i·step (i < count) of one output index along
/// one axis; positions outside [0, size) are padding and skipped.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub first: isize,
    pub count: usize,
    pub step: usize,
}

/// Windows of a 2-D pooling: spans per output row / column, and the average's
/// divisor factor per row / column (the divisor of output (y, x) is dh[y]·dw[x]).
#[derive(Clone, Debug, PartialEq)]
pub struct Windows {
    pub h: usize,
    pub w: usize,
    pub rows: Vec<Span>,
    pub cols: Vec<Span>,
    pub div_rows: Vec<f64>,
    pub div_cols: Vec<f64>,
}

impl Windows {
    fn out_len(&self) -> usize {
        self.rows.len() * self.cols.len()
    }
}

/// In-range positions of a span.
#[inline(always)]
fn positions(s: &Span, size: usize) -> impl Iterator<Item = usize> + '_ {
    (0..s.count).filter_map(move |i| {
        let p = s.first + (i * s.step) as isize;
        (p >= 0 && (p as usize) < size).then_some(p as usize)
    })
}

fn for_planes(planes: usize, work: usize, f: impl Fn(usize) + Sync + Send) {
    if work >= PAR_THRESHOLD {
        (0..planes).into_par_iter().for_each(f);
    } else {
        (0..planes).for_each(f);
    }
}

/// Per output, the flat index (y·W + x) of its window's maximum (NaN wins, as in PyTorch).
///
/// # Safety
/// `x` holds planes × H × W contiguous elements, `idx` planes × out elements.
pub unsafe fn max_indices<T: Float + Send + Sync>(planes: usize, win: &Windows, x: P<T>, idx: P<i64>) {
    let (hw, out) = (win.h * win.w, win.out_len());
    for_planes(planes, planes * out * 4, |p| {
        let src = x.at((p * hw) as isize);
        let dst = idx.at((p * out) as isize);
        for (oy, ry) in win.rows.iter().enumerate() {
            for (ox, rx) in win.cols.iter().enumerate() {
                let (mut best, mut at) = (T::neg_infinity(), -1i64);
                'win: for iy in positions(ry, win.h) {
                    for ix in positions(rx, win.w) {
                        let k = iy * win.w + ix;
                        // SAFETY: k < H·W.
                        let v = unsafe { *src.add(k) };
                        if v > best || v.is_nan() || at < 0 {
                            best = v;
                            at = k as i64;
                            if v.is_nan() {
                                break 'win;
                            }
                        }
                    }
                }
                // SAFETY: one write per output of this plane.
                unsafe { *dst.add(oy * win.cols.len() + ox) = at };
            }
        }
    });
}

/// out = window sums / divisors.
///
/// # Safety
/// `x` holds planes × H × W elements, `out` planes × out elements.
pub unsafe fn avg<T: Float + Send + Sync>(planes: usize, win: &Windows, x: P<T>, out: P<T>) {
    let (hw, n_out) = (win.h * win.w, win.out_len());
    for_planes(planes, planes * hw, |p| {
        let src = x.at((p * hw) as isize);
        let dst = out.at((p * n_out) as isize);
        for (oy, ry) in win.rows.iter().enumerate() {
            for (ox, rx) in win.cols.iter().enumerate() {
                let mut s = T::zero();
                for iy in positions(ry, win.h) {
                    for ix in positions(rx, win.w) {
                        // SAFETY: in-range position of the plane.
                        s = s + unsafe { *src.add(iy * win.w + ix) };
                    }
                }
                let d = T::from(win.div_rows[oy] * win.div_cols[ox]).unwrap_or(T::one());
                // SAFETY: one write per output.
                unsafe { *dst.add(oy * win.cols.len() + ox) = s / d };
            }
        }
    });
}

/// The adjoint of `avg`: each output's gradient / divisor spread over its window.
///
/// # Safety
/// `g` holds planes × out elements, `out` planes × H × W zeroed elements.
pub unsafe fn avg_adjoint<T: Float + Send + Sync>(planes: usize, win: &Windows, g: P<T>, out: P<T>) {
    let (hw, n_out) = (win.h * win.w, win.out_len());
    for_planes(planes, planes * hw, |p| {
        let src = g.at((p * n_out) as isize);
        let dst = out.at((p * hw) as isize);
        for (oy, ry) in win.rows.iter().enumerate() {
            for (ox, rx) in win.cols.iter().enumerate() {
                let d = T::from(win.div_rows[oy] * win.div_cols[ox]).unwrap_or(T::one());
                // SAFETY: one read per output.
                let v = unsafe { *src.add(oy * win.cols.len() + ox) } / d;
                for iy in positions(ry, win.h) {
                    for ix in positions(rx, win.w) {
                        // SAFETY: in-range position of this task's plane.
                        unsafe {
                            let q = dst.add(iy * win.w + ix);
                            *q = *q + v;
                        }
                    }
                }
            }
        }
    });
}
