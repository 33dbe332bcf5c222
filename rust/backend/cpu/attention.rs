//! Fused scaled-dot-product attention on the CPU, FlashAttention-2's schedule:
//! the forward walks key blocks with an online softmax (running max and sum)
//! and keeps only the output and the row logsumexp; the backward recomputes
//! each score block from them. Scores exist only as one block per task, never
//! as a (B, H, L, S) tensor. Block products go through the single-threaded
//! gemm; parallelism is over (problem, row block) forward and problems
//! backward (dQ accumulates over key blocks, dK/dV over row blocks).

use super::gemm::{matmul, GemmElem, Mat};
use super::softmax::{exp_sum, row_max, SoftElem};
use super::P;

/// Query rows per forward task and keys per forward block: a row block's
/// scores (64 × 256) stay in L2, and at S ≤ 256 there is no rescaling.
const BR: usize = 64;
const BC: usize = 256;
/// Rows and keys of a recomputed backward block.
const BB: usize = 128;

/// Dropout on the attention weights, regenerated from a counter-based hash
/// of (seed, problem, row, column) so the backward needs no stored mask. The
/// same hash is in shaders/attention.wgsl, so both devices drop alike.
#[derive(Clone, Copy)]
pub struct Dropout {
    /// Elements whose hash is below this are dropped (p · 2^32).
    pub thresh: u32,
    pub seed: [u32; 2],
    /// 1 / (1 - p).
    pub rp: f64,
}

#[inline(always)]
fn mix(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

impl Dropout {
    /// The weight factors (0 or 1 / (1 - p)) of `n` problems of l × s, as a
    /// tensor would hold them: for the create_graph backward, which materializes.
    pub fn factors(&self, n: usize, l: usize, s: usize) -> Vec<f64> {
        let mut out = Vec::with_capacity(n * l * s);
        for b in 0..n {
            for i in 0..l {
                let h = self.row(b, i);
                out.extend((0..s).map(|j| if self.keep(h, j) { self.rp } else { 0.0 }));
            }
        }
        out
    }
    /// The hash state of row `i` of problem `n`.
    #[inline(always)]
    fn row(&self, n: usize, i: usize) -> u32 {
        mix(mix(self.seed[0] ^ mix(self.seed[1] ^ n as u32)) ^ i as u32)
    }
    #[inline(always)]
    fn keep(&self, row: u32, j: usize) -> bool {
        mix(row.wrapping_add(j as u32)) >= self.thresh
    }
}

/// One (B, H, rows, cols) tensor with contiguous columns: its start and its
/// batch, head and row strides. Head-split views of a packed projection
/// (the (B, L, H, E) memory of MultiheadAttention) are read and written in
/// place, with no transposing copies.
#[derive(Clone, Copy)]
pub struct Heads<T> {
    pub p: P<T>,
    pub sb: isize,
    pub sh: isize,
    pub sr: isize,
}

impl<T> Heads<T> {
    /// Row `i` of problem `n` (batch n / heads, head n % heads).
    #[inline(always)]
    fn row(self, heads: usize, n: usize, i: usize) -> *mut T {
        let (b, h) = ((n / heads) as isize, (n % heads) as isize);
        self.p.at(b * self.sb + h * self.sh + i as isize * self.sr)
    }
}

/// N = batch × heads problems of L queries and S keys; q, k: head dim d, v: dv.
pub struct Problem<T> {
    pub n: usize,
    pub heads: usize,
    pub l: usize,
    pub s: usize,
    pub d: usize,
    pub dv: usize,
    pub scale: f64,
    pub causal: bool,
    /// An additive mask and its (batch, head, row, col) strides, 0 where broadcast.
    pub mask: Option<(P<T>, [isize; 4])>,
    pub dropout: Option<Dropout>,
}

/// Element types of the fused kernel.
pub trait AttnElem: SoftElem + GemmElem {}
impl AttnElem for f32 {}
impl AttnElem for f64 {}

fn mat<T>(p: *const T, rs: isize, cs: isize) -> Mat<T> {
    Mat { ptr: p as *mut T, rs, cs }
}

impl<T: AttnElem> Problem<T> {
    /// s[r·ld + c] = scale · q_(i0+r) · k_(j0+c) + mask, -inf above the causal
    /// diagonal (key after query, aligned top-left as PyTorch's is_causal).
    ///
    /// # Safety
    /// q, k hold this problem set; s holds rows × ld elements.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn scores(
        &self,
        q: Heads<T>,
        k: Heads<T>,
        n: usize,
        (i0, rows): (usize, usize),
        (j0, cols): (usize, usize),
        s: &mut [T],
        ld: usize,
    ) {
        let (qp, kp) = (q.row(self.heads, n, i0), k.row(self.heads, n, j0));
        // SAFETY: the blocks lie inside q, k and s (caller's contract).
        unsafe {
            matmul(
                rows,
                cols,
                self.d,
                mat(s.as_mut_ptr(), ld as isize, 1),
                mat(qp, q.sr, 1),
                mat(kp, 1, k.sr),
                1,
                false,
            )
        };
        let scale = T::from(self.scale).expect("float");
        let (b, h) = (n / self.heads, n % self.heads);
        for r in 0..rows {
            let i = i0 + r;
            let row = &mut s[r * ld..r * ld + cols];
            row.iter_mut().for_each(|x| *x = *x * scale);
            if let Some((m, st)) = self.mask {
                let base = b as isize * st[0] + h as isize * st[1] + i as isize * st[2];
                for (c, x) in row.iter_mut().enumerate() {
                    // SAFETY: the mask broadcasts to (B, H, L, S) with these strides.
                    *x = *x + unsafe { *m.at(base + (j0 + c) as isize * st[3]) };
                }
            }
            if self.causal && j0 + cols > i + 1 {
                row[(i + 1).saturating_sub(j0)..].fill(T::neg_infinity());
            }
        }
    }

    /// out = softmax(scores) · v per row (dropout applied to the weights) and
    /// lse = the row logsumexp (-inf for a row with every key masked, whose
    /// output is 0 as PyTorch's safe softmax gives).
    ///
    /// # Safety
    /// q (B, H, L, d), k (B, H, S, d), v (B, H, S, dv), out (B, H, L, dv), a
    /// contiguous lse (N, L); out's rows do not overlap.
    pub unsafe fn forward(&self, q: Heads<T>, k: Heads<T>, v: Heads<T>, out: Heads<T>, lse: P<T>) {
        let blocks = self.l.div_ceil(BR);
        let work = self.n * self.l * self.s * self.d;
        super::team::for_each_if(work, self.n * blocks, |t| {
            super::simd(
                #[inline(always)]
                || {
                    let (n, i0) = (t / blocks, (t % blocks) * BR);
                    // SAFETY: each task writes its own rows of out and lse.
                    unsafe { self.forward_rows(q, k, v, out, lse, n, i0) }
                },
            )
        });
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn forward_rows(
        &self,
        q: Heads<T>,
        k: Heads<T>,
        v: Heads<T>,
        out: Heads<T>,
        lse: P<T>,
        n: usize,
        i0: usize,
    ) {
        let (rows, dv, ninf) = (BR.min(self.l - i0), self.dv, T::neg_infinity());
        let mut s = vec![T::zero(); rows * BC];
        let mut acc = vec![T::zero(); rows * dv];
        let (mut mx, mut sum) = (vec![ninf; rows], vec![T::zero(); rows]);
        let rp = self.dropout.map(|d| T::from(d.rp).expect("float"));
        for j0 in (0..self.s).step_by(BC) {
            if self.causal && j0 > i0 + rows - 1 {
                break;
            }
            // Causal rows see no key after the block's last row.
            let mut cols = BC.min(self.s - j0);
            if self.causal {
                cols = cols.min(i0 + rows - j0);
            }
            // SAFETY: the blocks are inside the tensors.
            unsafe { self.scores(q, k, n, (i0, rows), (j0, cols), &mut s, BC) };
            for r in 0..rows {
                let row = &mut s[r * BC..r * BC + cols];
                let bm = row_max(row, false);
                let m = if bm > mx[r] { bm } else { mx[r] };
                if m == ninf {
                    row.fill(T::zero());
                    continue;
                }
                let alpha = (mx[r] - m).fexp();
                let t = exp_sum(row, m);
                if let (Some(d), Some(rp)) = (self.dropout, rp) {
                    let h = d.row(n, i0 + r);
                    for (c, x) in row.iter_mut().enumerate() {
                        *x = if d.keep(h, j0 + c) { *x * rp } else { T::zero() };
                    }
                }
                sum[r] = sum[r] * alpha + t;
                mx[r] = m;
                if alpha != T::one() {
                    acc[r * dv..(r + 1) * dv].iter_mut().for_each(|a| *a = *a * alpha);
                }
            }
            let vp = v.row(self.heads, n, j0);
            // SAFETY: acc is rows × dv, s rows × BC, the v block cols × dv.
            unsafe {
                matmul(
                    rows,
                    dv,
                    cols,
                    mat(acc.as_mut_ptr(), dv as isize, 1),
                    mat(s.as_ptr(), BC as isize, 1),
                    mat(vp, v.sr, 1),
                    1,
                    true,
                )
            };
        }
        for r in 0..rows {
            let inv = if sum[r] > T::zero() { T::one() / sum[r] } else { T::zero() };
            let o = out.row(self.heads, n, i0 + r);
            for c in 0..dv {
                // SAFETY: this row of out belongs to this task.
                unsafe { *o.add(c) = acc[r * dv + c] * inv };
            }
            let l = if sum[r] > T::zero() { mx[r] + sum[r].ln() } else { ninf };
            // SAFETY: as above.
            unsafe { *lse.at((n * self.l + i0 + r) as isize) = l };
        }
    }

    /// dq, dk, dv from the saved out and lse and the output gradient g, the
    /// scores recomputed block by block (dq, dk, dv are overwritten).
    ///
    /// # Safety
    /// q, k, v, out, lse as `forward`; g of out's shape; dq, dk, dv of q's,
    /// k's and v's shapes, none of their rows overlapping.
    pub unsafe fn backward(
        &self,
        [q, k, v, out, g]: [Heads<T>; 5],
        lse: P<T>,
        [dq, dk, dv]: [Heads<T>; 3],
    ) {
        let work = self.n * self.l * self.s * self.d;
        super::team::for_each_if(work, self.n, |n| {
            super::simd(
                #[inline(always)]
                || {
                    // SAFETY: each task owns problem n of the gradients.
                    unsafe { self.backward_one(n, [q, k, v, out, g], lse, [dq, dk, dv]) }
                },
            )
        });
    }

    #[inline(always)]
    unsafe fn backward_one(
        &self,
        n: usize,
        [q, k, v, out, g]: [Heads<T>; 5],
        lse: P<T>,
        [dq, dk, dv]: [Heads<T>; 3],
    ) {
        let (l, s, d, e, hd) = (self.l, self.s, self.d, self.dv, self.heads);
        let zero = |x: Heads<T>, i: usize, len: usize| {
            // SAFETY: row i of problem n of a gradient this task owns, len elements.
            unsafe { std::slice::from_raw_parts_mut(x.row(hd, n, i), len) }.fill(T::zero())
        };
        for i in 0..l {
            zero(dq, i, d);
        }
        for j in 0..s {
            zero(dk, j, d);
            zero(dv, j, e);
        }
        let row = |x: Heads<T>, i: usize| {
            // SAFETY: row i of problem n of out or g, e elements.
            unsafe { std::slice::from_raw_parts(x.row(hd, n, i) as *const T, e) }
        };
        // SAFETY: problem n's logsumexp row.
        let lsen = unsafe { std::slice::from_raw_parts(lse.at((n * l) as isize), l) };
        // D_i = dO_i · O_i = Σ_j P_ij dP_ij: the softmax backward's row term.
        let dd: Vec<T> = (0..l)
            .map(|i| {
                let (o, gi) = (row(out, i), row(g, i));
                o.iter().zip(gi.iter()).fold(T::zero(), |a, (&x, &y)| a + x * y)
            })
            .collect();
        let scale = T::from(self.scale).expect("float");
        let rp = self.dropout.map(|d| T::from(d.rp).expect("float"));
        let (mut p, mut dp) = (vec![T::zero(); BB * BB], vec![T::zero(); BB * BB]);
        let mut fac = vec![T::zero(); BB];
        // Causal blocks take half as many rows, each with the keys up to its last
        // row only, so the diagonal blocks compute less of their masked triangle.
        let rb = if self.causal { BB / 2 } else { BB };
        for j0 in (0..s).step_by(BB) {
            for i0 in (0..l).step_by(rb) {
                let rows = rb.min(l - i0);
                let mut cols = BB.min(s - j0);
                if self.causal {
                    if i0 + rows - 1 < j0 {
                        continue;
                    }
                    cols = cols.min(i0 + rows - j0);
                }
                // SAFETY: the blocks are inside the tensors.
                unsafe { self.scores(q, k, n, (i0, rows), (j0, cols), &mut p, BB) };
                let (gp, vp) = (g.row(hd, n, i0), v.row(hd, n, j0));
                // SAFETY: dp is rows × BB; the g and v blocks are inside their tensors.
                unsafe {
                    matmul(
                        rows,
                        cols,
                        e,
                        mat(dp.as_mut_ptr(), BB as isize, 1),
                        mat(gp, g.sr, 1),
                        mat(vp, 1, v.sr),
                        1,
                        false,
                    )
                };
                for r in 0..rows {
                    let (i, m) = (i0 + r, lsen[i0 + r]);
                    let (pr, dr) = (&mut p[r * BB..r * BB + cols], &mut dp[r * BB..r * BB + cols]);
                    if m == T::neg_infinity() {
                        pr.fill(T::zero());
                        dr.fill(T::zero());
                        continue;
                    }
                    pr.iter_mut().for_each(|x| *x = (*x - m).fexp());
                    let ddi = dd[i];
                    // Without dropout these are plain loops (they vectorize); with it the
                    // kept factors of the row are made once and used for dP and P alike.
                    match (self.dropout, rp) {
                        (Some(dr_), Some(rp)) => {
                            let h = dr_.row(n, i);
                            for (c, f) in fac[..cols].iter_mut().enumerate() {
                                *f = if dr_.keep(h, j0 + c) { rp } else { T::zero() };
                            }
                            for ((x, y), &f) in pr.iter_mut().zip(dr.iter_mut()).zip(&fac) {
                                *y = *x * (*y * f - ddi) * scale;
                                *x = *x * f;
                            }
                        }
                        _ => pr
                            .iter()
                            .zip(dr.iter_mut())
                            .for_each(|(&x, y)| *y = x * (*y - ddi) * scale),
                    }
                }
                let (qp, kp) = (q.row(hd, n, i0), k.row(hd, n, j0));
                let bb = BB as isize;
                // SAFETY: every block lies inside its tensor; the destinations are this task's.
                unsafe {
                    matmul(
                        cols,
                        e,
                        rows,
                        mat(dv.row(hd, n, j0), dv.sr, 1),
                        mat(p.as_ptr(), 1, bb),
                        mat(gp, g.sr, 1),
                        1,
                        true,
                    );
                    matmul(
                        rows,
                        d,
                        cols,
                        mat(dq.row(hd, n, i0), dq.sr, 1),
                        mat(dp.as_ptr(), bb, 1),
                        mat(kp, k.sr, 1),
                        1,
                        true,
                    );
                    matmul(
                        cols,
                        d,
                        rows,
                        mat(dk.row(hd, n, j0), dk.sr, 1),
                        mat(dp.as_ptr(), 1, bb),
                        mat(qp, q.sr, 1),
                        1,
                        true,
                    );
                }
            }
        }
    }
}
