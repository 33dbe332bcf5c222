//! CTC loss: the forward (alpha) and backward (beta) recursions over the
//! extended label sequence (blank, l1, blank, l2, ..., blank), in log space,
//! one batch element per task.

use super::P;
use num_traits::Float;

/// Where sample `n`'s data lives: its targets and its input length.
pub struct Sample<'a> {
    pub targets: &'a [i64],
    pub input_len: usize,
}

/// log(exp(a) + exp(b)) without overflow; -inf when both are -inf.
#[inline(always)]
fn lse<T: Float>(a: T, b: T) -> T {
    let m = a.max(b);
    if m == T::neg_infinity() {
        return m;
    }
    // one exp and one log: the larger term contributes exp(0) = 1
    m + (-(a - b).abs()).exp().ln_1p()
}

/// Label of extended position `s`: blank at even positions, target s/2 at odd.
#[inline(always)]
fn label(targets: &[i64], s: usize, blank: usize) -> usize {
    if s.is_multiple_of(2) {
        blank
    } else {
        targets[s / 2] as usize
    }
}

/// Whether the step s-2 -> s may skip a blank: s is a label unlike the one before it.
#[inline(always)]
fn can_skip(targets: &[i64], s: usize) -> bool {
    s % 2 == 1 && s >= 3 && targets[s / 2] != targets[s / 2 - 1]
}

/// nll[n] = -log p(targets_n | lp[.., n, ..]) for every sample, and, when `grad`
/// is given, d nll[n] / d lp[t, n, c] into `grad` (shape (T, N, C), all written:
/// zero where t >= the input length or c labels no extended position).
/// `zero_infinity` turns an impossible alignment's inf loss (and its gradient) into 0.
///
/// # Safety
/// `lp` and `grad` hold T × N × C contiguous elements, `nll` holds N; every
/// target lies in [0, C) and every input length is at most T.
#[allow(clippy::too_many_arguments)]
pub unsafe fn ctc<T: Float + Send + Sync>(
    lp: &[T],
    dims: (usize, usize, usize),
    samples: &[Sample<'_>],
    blank: usize,
    zero_infinity: bool,
    nll: P<T>,
    grad: Option<P<T>>,
) {
    let (t_max, n_batch, c) = dims;
    let at = |t: usize, n: usize, k: usize| lp[(t * n_batch + n) * c + k];
    let work = t_max * n_batch * c;
    super::team::for_each_if(work, n_batch, |n| {
        let Sample { targets, input_len: tn } = samples[n];
        let ls = 2 * targets.len() + 1;
        let ninf = T::neg_infinity();
        // alpha[t][s]: log-probability of all prefixes of length t+1 ending at position s.
        let mut alpha = vec![ninf; tn * ls];
        if tn > 0 {
            alpha[0] = at(0, n, blank);
            if ls > 1 {
                alpha[1] = at(0, n, label(targets, 1, blank));
            }
        }
        for t in 1..tn {
            let (prev, cur) = alpha.split_at_mut(t * ls);
            let prev = &prev[(t - 1) * ls..];
            for s in 0..ls {
                let mut v = prev[s];
                if s >= 1 {
                    v = lse(v, prev[s - 1]);
                }
                if can_skip(targets, s) {
                    v = lse(v, prev[s - 2]);
                }
                cur[s] = v + at(t, n, label(targets, s, blank));
            }
        }
        let mut loss = if tn == 0 {
            // no frames: only the empty target has an alignment (probability 1)
            if targets.is_empty() {
                T::zero()
            } else {
                T::infinity()
            }
        } else {
            let last = &alpha[(tn - 1) * ls..];
            let total = if ls > 1 { lse(last[ls - 1], last[ls - 2]) } else { last[0] };
            -total
        };
        let zeroed = zero_infinity && loss == T::infinity();
        if zeroed {
            loss = T::zero();
        }
        // SAFETY: task n alone writes nll[n] and grad[.., n, ..].
        unsafe { *nll.at(n as isize) = loss };
        let Some(g) = grad else { return };
        let put =
            |t: usize, k: usize, v: T| unsafe { *g.at(((t * n_batch + n) * c + k) as isize) = v };
        for t in 0..t_max {
            for k in 0..c {
                put(t, k, T::zero());
            }
        }
        if zeroed || tn == 0 {
            return;
        }
        // beta[s] at time t: log-probability of all suffixes from t starting at s
        // (including frame t), kept for one time step; ab[k] gathers
        // log sum over positions labelled k of alpha * beta.
        let mut beta = vec![ninf; ls];
        let mut next = vec![ninf; ls];
        let mut ab = vec![ninf; c];
        for t in (0..tn).rev() {
            for s in 0..ls {
                let here = at(t, n, label(targets, s, blank));
                next[s] = if t == tn - 1 {
                    if s + 2 >= ls {
                        here
                    } else {
                        ninf
                    }
                } else {
                    let mut v = beta[s];
                    if s + 1 < ls {
                        v = lse(v, beta[s + 1]);
                    }
                    if s + 2 < ls && can_skip(targets, s + 2) {
                        v = lse(v, beta[s + 2]);
                    }
                    v + here
                };
            }
            std::mem::swap(&mut beta, &mut next);
            ab.iter_mut().for_each(|v| *v = ninf);
            for s in 0..ls {
                let k = label(targets, s, blank);
                ab[k] = lse(ab[k], alpha[t * ls + s] + beta[s]);
            }
            // p = sum_s alpha_t(s) beta_t(s) / y_t(l_s), so
            // d(-log p)/d lp[t, k] = -exp(ab[k] - lp[t, k] + nll)
            for (k, &v) in ab.iter().enumerate() {
                if v != ninf {
                    put(t, k, -(v - at(t, n, k) + loss).exp());
                }
            }
        }
    });
}
