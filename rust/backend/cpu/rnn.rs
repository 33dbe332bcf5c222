//! The time loops of the recurrent layers (rust/ops/rnn.rs), one layer and
//! direction per call. Rows are packed time-major: step t owns rows
//! off[t]..off[t] + bs[t] (PyTorch's PackedSequence layout; a padded batch is
//! the case bs[t] = B). Batch sizes never grow along time, so the first bs[t]
//! rows of the state buffers are the live sequences; rows past them keep the
//! state of sequences that ended (forward) or have not started (reverse),
//! which makes the buffers end up holding h_n / dh0 row by row.
//!
//! Forward: one GEMM for the input projections of all steps, then per step
//! one GEMM for the recurrent projection (added into the gate rows) and one
//! fused pass applying nonlinearities and the cell update. Backward: per step
//! the fused gate gradients and one GEMM for dh_prev; then dx and the weight
//! gradients as GEMMs over all steps at once.

use super::gemm::{self, GemmElem, Mat};
use super::{simd, team, vmath, P};
use crate::ops::rnn::Cell;
use num_traits::Float;

/// The float types the loops run in, with their gate nonlinearities (the
/// SIMD-friendly float32 ones from vmath).
pub trait Act: Float + GemmElem + Send + Sync {
    fn sig(x: Self) -> Self;
    fn th(x: Self) -> Self;
}
impl Act for f32 {
    #[inline(always)]
    fn sig(x: f32) -> f32 {
        vmath::sigmoid(x)
    }
    #[inline(always)]
    fn th(x: f32) -> f32 {
        vmath::tanh(x)
    }
}
impl Act for f64 {
    #[inline(always)]
    fn sig(x: f64) -> f64 {
        1.0 / (1.0 + (-x).exp())
    }
    #[inline(always)]
    fn th(x: f64) -> f64 {
        x.tanh()
    }
}

/// Sizes of one layer-direction: rows (all steps), input, hidden, and the
/// state width `p` (proj_size for projected LSTMs, else hidden).
#[derive(Clone, Copy)]
pub struct Dims {
    pub cell: Cell,
    pub rows: usize,
    pub input: usize,
    pub hidden: usize,
    pub p: usize,
    pub batch: usize,
}

impl Dims {
    fn gh(&self) -> usize {
        self.cell.gates() * self.hidden
    }
}

/// Contiguous weights: w_ih (G·H, I), w_hh (G·H, p), w_hr (p, H).
pub struct Weights<'a, T> {
    pub w_ih: &'a [T],
    pub w_hh: &'a [T],
    pub b_ih: Option<&'a [T]>,
    pub b_hh: Option<&'a [T]>,
    pub w_hr: Option<&'a [T]>,
}

/// What backward needs: activated gates (rows, G·H), the state each step
/// read (rows, p), for LSTMs the cell state read and tanh of the one written
/// (rows, H), for GRUs W_hn h + b_hn (rows, H) in `aux`, and with a
/// projection the unprojected output (rows, H).
pub struct Saved<T> {
    pub gates: Vec<T>,
    pub hprev: Vec<T>,
    pub cprev: Vec<T>,
    pub aux: Vec<T>,
    pub m: Vec<T>,
}

/// Row offsets of the steps and the order they run in.
pub fn schedule(bs: &[usize], reverse: bool) -> (Vec<usize>, Vec<usize>) {
    let mut off = Vec::with_capacity(bs.len());
    let mut acc = 0;
    for &b in bs {
        off.push(acc);
        acc += b;
    }
    let order = if reverse { (0..bs.len()).rev().collect() } else { (0..bs.len()).collect() };
    (off, order)
}

/// dst (m × n, row stride ld) = or += a · b, with a and b given by their strides.
#[allow(clippy::too_many_arguments)]
unsafe fn mm<T: GemmElem>(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T,
    ld: usize,
    a: (*const T, usize, usize),
    b: (*const T, usize, usize),
    acc: bool,
) {
    let threads = if gemm::parallel_for(m, n, k) { super::threads() } else { 1 };
    let mat = |p: *const T, rs: usize, cs: usize| Mat {
        ptr: p as *mut T,
        rs: rs as isize,
        cs: cs as isize,
    };
    gemm::matmul(m, n, k, mat(dst, ld, 1), mat(a.0, a.1, a.2), mat(b.0, b.1, b.2), threads, acc);
}

/// Runs `f(row)` for rows 0..b, over the team when the step is large.
fn rows(b: usize, width: usize, f: impl Fn(usize) + Sync) {
    team::for_each_if(b * width, b, f);
}

/// The forward of one layer-direction. `h` (batch, p) and `c` (batch, H)
/// hold h0 / c0 on entry and h_n / c_n on return; `y` (rows, p) gets the
/// outputs.
#[allow(clippy::too_many_arguments)]
pub fn forward<T: Act>(
    d: Dims,
    bs: &[usize],
    reverse: bool,
    x: &[T],
    w: &Weights<T>,
    h: &mut [T],
    c: &mut [T],
    y: &mut [T],
) -> Saved<T> {
    let (hd, p, g) = (d.hidden, d.p, d.gh());
    let lstm = d.cell == Cell::Lstm;
    let gru = d.cell == Cell::Gru;
    let mut s = Saved {
        gates: vec![T::zero(); d.rows * g],
        hprev: vec![T::zero(); d.rows * p],
        cprev: if lstm { vec![T::zero(); d.rows * hd] } else { Vec::new() },
        aux: if lstm || gru { vec![T::zero(); d.rows * hd] } else { Vec::new() },
        m: if w.w_hr.is_some() { vec![T::zero(); d.rows * hd] } else { Vec::new() },
    };
    // Input projections of every step, added to the biases that join them.
    let (b1, b2) = (w.b_ih, if gru { None } else { w.b_hh });
    let biased = b1.is_some() || b2.is_some();
    if biased {
        let bias: Vec<T> = (0..g)
            .map(|j| b1.map_or(T::zero(), |b| b[j]) + b2.map_or(T::zero(), |b| b[j]))
            .collect();
        s.gates.chunks_exact_mut(g).for_each(|row| row.copy_from_slice(&bias));
    }
    // SAFETY: the buffers have the sizes the strides describe.
    unsafe {
        mm(
            d.rows,
            g,
            d.input,
            s.gates.as_mut_ptr(),
            g,
            (x.as_ptr(), d.input, 1),
            (w.w_ih.as_ptr(), 1, d.input),
            biased,
        );
    }
    // The per-step products read W_hh and W_hr transposed; with only a few
    // rows per product, the GEMM would repack a strided right-hand side at
    // every step (about 4x slower), so transpose them once.
    let w_hh_t = transposed(w.w_hh, g, p);
    let w_hr_t = w.w_hr.map(|w| transposed(w, p, hd)).unwrap_or_default();
    let mut gh = if gru { vec![T::zero(); d.batch * g] } else { Vec::new() };
    let (off, order) = schedule(bs, reverse);
    for &t in &order {
        let (b, r0) = (bs[t], off[t]);
        s.hprev[r0 * p..(r0 + b) * p].copy_from_slice(&h[..b * p]);
        if lstm {
            s.cprev[r0 * hd..(r0 + b) * hd].copy_from_slice(&c[..b * hd]);
        }
        // SAFETY: rows r0..r0+b of the gates and the first b rows of h exist.
        unsafe {
            let (dst, acc) = if gru {
                (gh.as_mut_ptr(), false)
            } else {
                (s.gates.as_mut_ptr().add(r0 * g), true)
            };
            mm(b, g, p, dst, g, (h.as_ptr(), p, 1), (w_hh_t.as_ptr(), g, 1), acc);
        }
        let gp = P(s.gates.as_mut_ptr().wrapping_add(r0 * g));
        let hp = P(h.as_mut_ptr());
        match d.cell {
            Cell::RnnTanh | Cell::RnnRelu => {
                let relu = d.cell == Cell::RnnRelu;
                rows(b, g, |i| {
                    simd(
                        #[inline(always)]
                        || {
                            // SAFETY: row i of this step is touched by this task only.
                            let (gr, hr) = unsafe { (row(gp, i, g), row(hp, i, p)) };
                            for (v, o) in gr.iter_mut().zip(hr.iter_mut()) {
                                *v = if relu { v.max(T::zero()) } else { T::th(*v) };
                                *o = *v;
                            }
                        },
                    )
                });
            }
            Cell::Lstm => {
                let cp = P(c.as_mut_ptr());
                let tp = P(s.aux.as_mut_ptr().wrapping_add(r0 * hd));
                let proj = w.w_hr.is_some();
                let (mp, mw) =
                    if proj { (P(s.m.as_mut_ptr().wrapping_add(r0 * hd)), hd) } else { (hp, p) };
                rows(b, g, |i| {
                    simd(
                        #[inline(always)]
                        || {
                            // SAFETY: row i of this step is touched by this task only.
                            let (gr, cr, tr, mr) = unsafe {
                                (row(gp, i, g), row(cp, i, hd), row(tp, i, hd), row(mp, i, mw))
                            };
                            let (gi, rest) = gr.split_at_mut(hd);
                            let (gf, rest) = rest.split_at_mut(hd);
                            let (gg, go) = rest.split_at_mut(hd);
                            // Equal lengths let the loop vectorize without bounds checks.
                            let (go, cr, tr, mr) =
                                (&mut go[..hd], &mut cr[..hd], &mut tr[..hd], &mut mr[..hd]);
                            for j in 0..hd {
                                let ig = T::sig(gi[j]);
                                let fg = T::sig(gf[j]);
                                let cg = T::th(gg[j]);
                                let og = T::sig(go[j]);
                                let cn = fg * cr[j] + ig * cg;
                                let tc = T::th(cn);
                                (gi[j], gf[j], gg[j], go[j]) = (ig, fg, cg, og);
                                cr[j] = cn;
                                tr[j] = tc;
                                mr[j] = og * tc;
                            }
                        },
                    )
                });
                if w.w_hr.is_some() {
                    // SAFETY: b rows of m (H wide) projected into the first b rows of h.
                    unsafe {
                        mm(
                            b,
                            p,
                            hd,
                            h.as_mut_ptr(),
                            p,
                            (s.m.as_ptr().add(r0 * hd), hd, 1),
                            (w_hr_t.as_ptr(), p, 1),
                            false,
                        );
                    }
                }
            }
            Cell::Gru => {
                let ghp = P(gh.as_mut_ptr());
                let ap = P(s.aux.as_mut_ptr().wrapping_add(r0 * hd));
                let bhh = w.b_hh;
                rows(b, g, |i| {
                    simd(
                        #[inline(always)]
                        || {
                            // SAFETY: row i of this step is touched by this task only.
                            let (gr, hr, ghr, ar) = unsafe {
                                (row(gp, i, g), row(hp, i, hd), row(ghp, i, g), row(ap, i, hd))
                            };
                            if let Some(bh) = bhh {
                                ghr.iter_mut().zip(bh).for_each(|(v, &b)| *v = *v + b);
                            }
                            let (xr, rest) = gr.split_at_mut(hd);
                            let (xz, xn) = rest.split_at_mut(hd);
                            let (hr_, rest) = ghr.split_at(hd);
                            let (hz, hn) = rest.split_at(hd);
                            // Equal lengths let the loop vectorize without bounds checks.
                            let (xn, hn, hr, ar) =
                                (&mut xn[..hd], &hn[..hd], &mut hr[..hd], &mut ar[..hd]);
                            for j in 0..hd {
                                let r = T::sig(xr[j] + hr_[j]);
                                let z = T::sig(xz[j] + hz[j]);
                                let n = T::th(xn[j] + r * hn[j]);
                                (xr[j], xz[j], xn[j]) = (r, z, n);
                                ar[j] = hn[j];
                                hr[j] = (T::one() - z) * n + z * hr[j];
                            }
                        },
                    )
                });
            }
        }
        y[r0 * p..(r0 + b) * p].copy_from_slice(&h[..b * p]);
    }
    s
}

/// The (cols, rows) transpose of a row-major (rows, cols) matrix.
fn transposed<T: Act>(a: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut t = vec![T::zero(); rows * cols];
    for (i, row) in a.chunks_exact(cols).enumerate() {
        for (j, &v) in row.iter().enumerate() {
            t[j * rows + i] = v;
        }
    }
    t
}

/// Row `i` (width `w`) of the read-only matrix at `p`.
///
/// # Safety
/// The row must lie inside the buffer.
#[inline(always)]
unsafe fn crow<'a, T>(p: *const T, i: usize, w: usize) -> &'a [T] {
    std::slice::from_raw_parts(p.add(i * w), w)
}

/// Row `i` (width `w`) of the matrix at `p`.
///
/// # Safety
/// The row must lie inside the buffer and be touched by no one else meanwhile.
#[inline(always)]
unsafe fn row<'a, T>(p: P<T>, i: usize, w: usize) -> &'a mut [T] {
    std::slice::from_raw_parts_mut(p.0.add(i * w), w)
}

/// Gradients of one layer-direction.
pub struct Grads<T> {
    pub dx: Option<Vec<T>>,
    pub dw_ih: Vec<T>,
    pub dw_hh: Vec<T>,
    pub db_ih: Vec<T>,
    pub db_hh: Vec<T>,
    pub dw_hr: Vec<T>,
}

/// Backward through time. `dh` (batch, p) and `dc` (batch, H) hold the
/// gradients of h_n / c_n on entry and those of h0 / c0 on return; `dy`
/// (rows, p) is the gradient of the outputs.
#[allow(clippy::too_many_arguments)]
pub fn backward<T: Act>(
    d: Dims,
    bs: &[usize],
    reverse: bool,
    x: &[T],
    w: &Weights<T>,
    s: &Saved<T>,
    dy: &[T],
    dh: &mut [T],
    dc: &mut [T],
    need_dx: bool,
) -> Grads<T> {
    let (hd, p, g) = (d.hidden, d.p, d.gh());
    let gru = d.cell == Cell::Gru;
    let proj = w.w_hr.is_some();
    // Pre-activation gate gradients; GRUs also keep the recurrent side's
    // (its n gate sees r · (W_hn h + b_hn)).
    let mut dgx = vec![T::zero(); d.rows * g];
    let mut dgh = if gru { vec![T::zero(); d.rows * g] } else { Vec::new() };
    let mut dht = if proj { vec![T::zero(); d.rows * p] } else { Vec::new() };
    let mut dm = if proj { vec![T::zero(); d.batch * hd] } else { Vec::new() };
    let (off, mut order) = schedule(bs, reverse);
    order.reverse();
    for &t in &order {
        let (b, r0) = (bs[t], off[t]);
        dh[..b * p].iter_mut().zip(&dy[r0 * p..(r0 + b) * p]).for_each(|(a, &v)| *a = *a + v);
        let gp = P(s.gates.as_ptr().wrapping_add(r0 * g) as *mut T);
        let dgp = P(dgx.as_mut_ptr().wrapping_add(r0 * g));
        let dhp = P(dh.as_mut_ptr());
        match d.cell {
            Cell::RnnTanh | Cell::RnnRelu => {
                let relu = d.cell == Cell::RnnRelu;
                rows(b, g, |i| {
                    simd(
                        #[inline(always)]
                        || {
                            // SAFETY: row i of this step is touched by this task only.
                            let (gr, dgr, dhr) =
                                unsafe { (crow(gp.get(), i, g), row(dgp, i, g), row(dhp, i, p)) };
                            // Equal lengths let the loop vectorize without bounds checks.
                            let (gr, dgr, dhr) = (&gr[..hd], &mut dgr[..hd], &dhr[..hd]);
                            for j in 0..hd {
                                let v = gr[j];
                                dgr[j] = if relu {
                                    if v > T::zero() {
                                        dhr[j]
                                    } else {
                                        T::zero()
                                    }
                                } else {
                                    dhr[j] * (T::one() - v * v)
                                };
                            }
                        },
                    )
                });
            }
            Cell::Lstm => {
                if let Some(w_hr) = w.w_hr {
                    dht[r0 * p..(r0 + b) * p].copy_from_slice(&dh[..b * p]);
                    // SAFETY: dm holds b rows of H; w_hr is (p, H).
                    unsafe {
                        mm(
                            b,
                            hd,
                            p,
                            dm.as_mut_ptr(),
                            hd,
                            (dh.as_ptr(), p, 1),
                            (w_hr.as_ptr(), hd, 1),
                            false,
                        )
                    };
                }
                let (mp, mw) = if proj { (P(dm.as_mut_ptr()), hd) } else { (dhp, p) };
                let cp = P(dc.as_mut_ptr());
                let tp = P(s.aux.as_ptr().wrapping_add(r0 * hd) as *mut T);
                let pp = P(s.cprev.as_ptr().wrapping_add(r0 * hd) as *mut T);
                rows(b, g, |i| {
                    simd(
                        #[inline(always)]
                        || {
                            // SAFETY: row i of this step is touched by this task only.
                            let (gr, dgr, mr, cr, tr, pr) = unsafe {
                                (
                                    crow(gp.get(), i, g),
                                    row(dgp, i, g),
                                    row(mp, i, mw),
                                    row(cp, i, hd),
                                    crow(tp.get(), i, hd),
                                    crow(pp.get(), i, hd),
                                )
                            };
                            let (di, rest) = dgr.split_at_mut(hd);
                            let (df, rest) = rest.split_at_mut(hd);
                            let (dg, dout) = rest.split_at_mut(hd);
                            let (gi, rest) = gr.split_at(hd);
                            let (gf, rest) = rest.split_at(hd);
                            let (gg, go) = rest.split_at(hd);
                            // Equal lengths let the loop vectorize without bounds checks.
                            let (dout, go, mr, cr, tr, pr) = (
                                &mut dout[..hd],
                                &go[..hd],
                                &mr[..hd],
                                &mut cr[..hd],
                                &tr[..hd],
                                &pr[..hd],
                            );
                            for j in 0..hd {
                                let (ig, fg, cg, og, tc) = (gi[j], gf[j], gg[j], go[j], tr[j]);
                                let dmj = mr[j];
                                let dcn = cr[j] + dmj * og * (T::one() - tc * tc);
                                let one = T::one();
                                di[j] = dcn * cg * ig * (one - ig);
                                df[j] = dcn * pr[j] * fg * (one - fg);
                                dg[j] = dcn * ig * (one - cg * cg);
                                dout[j] = dmj * tc * og * (one - og);
                                cr[j] = dcn * fg;
                            }
                        },
                    )
                });
            }
            Cell::Gru => {
                let dghp = P(dgh.as_mut_ptr().wrapping_add(r0 * g));
                let ap = P(s.aux.as_ptr().wrapping_add(r0 * hd) as *mut T);
                let hpp = P(s.hprev.as_ptr().wrapping_add(r0 * p) as *mut T);
                rows(b, g, |i| {
                    simd(
                        #[inline(always)]
                        || {
                            // SAFETY: row i of this step is touched by this task only.
                            let (gr, dgr, dghr, dhr, ar, hr) = unsafe {
                                (
                                    crow(gp.get(), i, g),
                                    row(dgp, i, g),
                                    row(dghp, i, g),
                                    row(dhp, i, hd),
                                    crow(ap.get(), i, hd),
                                    crow(hpp.get(), i, hd),
                                )
                            };
                            let (dxr, rest) = dgr.split_at_mut(hd);
                            let (dxz, dxn) = rest.split_at_mut(hd);
                            let (dhr_, rest) = dghr.split_at_mut(hd);
                            let (dhz, dhn) = rest.split_at_mut(hd);
                            let (gr_, rest) = gr.split_at(hd);
                            let (gz, gn) = rest.split_at(hd);
                            // Equal lengths let the loop vectorize without bounds checks.
                            let (dxn, dhn, gn, dhr, ar, hr) = (
                                &mut dxn[..hd],
                                &mut dhn[..hd],
                                &gn[..hd],
                                &mut dhr[..hd],
                                &ar[..hd],
                                &hr[..hd],
                            );
                            for j in 0..hd {
                                let (r, z, n, one) = (gr_[j], gz[j], gn[j], T::one());
                                let dhj = dhr[j];
                                let dnp = dhj * (one - z) * (one - n * n);
                                let dzp = dhj * (hr[j] - n) * z * (one - z);
                                let drp = dnp * ar[j] * r * (one - r);
                                (dxr[j], dxz[j], dxn[j]) = (drp, dzp, dnp);
                                (dhr_[j], dhz[j], dhn[j]) = (drp, dzp, dnp * r);
                                dhr[j] = dhj * z;
                            }
                        },
                    )
                });
            }
        }
        // dh_prev = dgates_h · W_hh (GRUs add it to the direct path z · dh).
        let (src, acc) = if gru { (dgh.as_ptr(), true) } else { (dgx.as_ptr(), false) };
        // SAFETY: b rows of the step's gate gradients times W_hh (G·H, p).
        unsafe {
            mm(b, p, g, dh.as_mut_ptr(), p, (src.add(r0 * g), g, 1), (w.w_hh.as_ptr(), p, 1), acc)
        };
    }
    let dgh_all = if gru { &dgh } else { &dgx };
    // Bias gradients: column sums, as a product with a row of ones.
    let ones = vec![T::one(); d.rows];
    let colsum = |m: &[T]| {
        let mut acc = vec![T::zero(); g];
        // SAFETY: m is (rows, g); acc is one row of g.
        unsafe {
            mm(
                1,
                g,
                d.rows,
                acc.as_mut_ptr(),
                g,
                (ones.as_ptr(), d.rows, 1),
                (m.as_ptr(), g, 1),
                false,
            )
        };
        acc
    };
    let mut out = Grads {
        dx: None,
        dw_ih: vec![T::zero(); g * d.input],
        dw_hh: vec![T::zero(); g * p],
        db_ih: colsum(&dgx),
        db_hh: if gru { colsum(&dgh) } else { Vec::new() },
        dw_hr: if proj { vec![T::zero(); p * hd] } else { Vec::new() },
    };
    if !gru {
        out.db_hh = out.db_ih.clone();
    }
    // SAFETY: every product below reads and writes buffers of the sizes its strides describe.
    unsafe {
        mm(
            g,
            d.input,
            d.rows,
            out.dw_ih.as_mut_ptr(),
            d.input,
            (dgx.as_ptr(), 1, g),
            (x.as_ptr(), d.input, 1),
            false,
        );
        mm(
            g,
            p,
            d.rows,
            out.dw_hh.as_mut_ptr(),
            p,
            (dgh_all.as_ptr(), 1, g),
            (s.hprev.as_ptr(), p, 1),
            false,
        );
        if proj {
            mm(
                p,
                hd,
                d.rows,
                out.dw_hr.as_mut_ptr(),
                hd,
                (dht.as_ptr(), 1, p),
                (s.m.as_ptr(), hd, 1),
                false,
            );
        }
        if need_dx {
            let mut dx = vec![T::zero(); d.rows * d.input];
            mm(
                d.rows,
                d.input,
                g,
                dx.as_mut_ptr(),
                d.input,
                (dgx.as_ptr(), g, 1),
                (w.w_ih.as_ptr(), d.input, 1),
                false,
            );
            out.dx = Some(dx);
        }
    }
    out
}
