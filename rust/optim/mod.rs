//! Fused optimizer steps: one pass over each parameter updates it and its
//! state in place, with PyTorch's update rules (the single-tensor forms of
//! torch.optim). Scalars that depend on the step count are computed once per
//! tensor here, not per element.

use crate::backend::cpu::P;
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::fmt_shape;
use crate::tensor::{DType, Tensor};
use num_traits::Float;
use rayon::prelude::*;

/// One optimizer's hyperparameters (per param group).
#[derive(Clone, Debug)]
pub enum Rule {
    Sgd { lr: f64, momentum: f64, dampening: f64, nesterov: bool, wd: f64, maximize: bool },
    /// Adam, and AdamW when `decoupled`.
    Adam { lr: f64, b1: f64, b2: f64, eps: f64, wd: f64, amsgrad: bool, maximize: bool, decoupled: bool },
    RmsProp { lr: f64, alpha: f64, eps: f64, wd: f64, momentum: f64, centered: bool, maximize: bool },
    Adagrad { lr: f64, lr_decay: f64, wd: f64, eps: f64, maximize: bool },
    Adamax { lr: f64, b1: f64, b2: f64, eps: f64, wd: f64, maximize: bool },
    NAdam { lr: f64, b1: f64, b2: f64, eps: f64, wd: f64, momentum_decay: f64, decoupled: bool, maximize: bool },
    RAdam { lr: f64, b1: f64, b2: f64, eps: f64, wd: f64, decoupled: bool, maximize: bool },
}

impl Rule {
    /// How many state tensors (shaped like the parameter) the rule uses.
    pub fn n_state(&self) -> usize {
        match *self {
            Rule::Sgd { momentum, .. } => (momentum != 0.0) as usize,
            Rule::Adam { amsgrad, .. } => 2 + amsgrad as usize,
            Rule::RmsProp { momentum, centered, .. } => 1 + (momentum > 0.0) as usize + centered as usize,
            Rule::Adagrad { .. } => 1,
            Rule::Adamax { .. } | Rule::NAdam { .. } | Rule::RAdam { .. } => 2,
        }
    }
    /// How many 0-d float32 scalars of state it keeps: step (all but SGD), NAdam's mu_product.
    pub fn n_scalars(&self) -> usize {
        match self {
            Rule::Sgd { .. } => 0,
            Rule::NAdam { .. } => 2,
            _ => 1,
        }
    }
}

const CHUNK: usize = 1 << 14;

/// Runs `f(start, end)` over [0, n) in chunks, in parallel when large.
fn chunks(n: usize, f: impl Fn(usize, usize) + Sync + Send) {
    if n >= 4 * CHUNK {
        (0..n.div_ceil(CHUNK)).into_par_iter().for_each(|c| f(c * CHUNK, ((c + 1) * CHUNK).min(n)));
    } else {
        f(0, n);
    }
}

fn read_scalar(t: &Tensor) -> Result<f64> {
    Ok(crate::ops::copy::to_dtype(t, DType::F64)?.to_vec::<f64>()?[0])
}

fn write_scalar(t: &Tensor, v: f64) -> Result<()> {
    crate::ops::copy::fill_(t, crate::tensor::Scalar::Float(v))
}

/// Updates `p` (and `state`, `scalars`) in place from its gradient `g`.
/// `p` and `state` may be strided; all must have p's shape and dtype.
/// `fresh`: the state was just created (SGD's momentum buffer starts as the gradient).
pub fn step(rule: &Rule, p: &Tensor, g: &Tensor, state: &[Tensor], scalars: &[Tensor], fresh: bool) -> Result<()> {
    if !matches!(p.dtype(), DType::F32 | DType::F64) {
        bail!(Runtime, "optimizer step: parameters must be float32 or float64, got {}", p.dtype().name());
    }
    if state.len() != rule.n_state() || scalars.len() != rule.n_scalars() {
        bail!(Runtime, "optimizer step: expected {} state tensors and {} scalars, got {} and {}", rule.n_state(), rule.n_scalars(), state.len(), scalars.len());
    }
    for (what, t) in std::iter::once(("grad", g)).chain(state.iter().map(|s| ("state", s))) {
        if t.shape() != p.shape() || t.dtype() != p.dtype() {
            bail!(
                Runtime,
                "optimizer step: {} of shape {} and dtype {} does not match the parameter's shape {} and dtype {}",
                what,
                fmt_shape(t.shape()),
                t.dtype().name(),
                fmt_shape(p.shape()),
                p.dtype().name()
            );
        }
    }
    p.check_writable("optimizer step")?;
    // Strided parameters or state are updated in contiguous copies, written back after.
    let dense = |t: &Tensor| if t.is_contiguous() { Ok(t.clone()) } else { crate::ops::copy::contiguous_clone(t) };
    let originals: Vec<&Tensor> = std::iter::once(p).chain(state).collect();
    let work: Vec<Tensor> = originals.iter().map(|t| dense(t)).collect::<Result<_>>()?;
    let (p_work, state) = (&work[0], &work[1..]);
    let g = crate::ops::copy::contiguous(g)?;
    // Step-dependent scalars, advanced once per tensor.
    let mut k = [0f64; 2];
    for (i, s) in scalars.iter().enumerate() {
        k[i] = read_scalar(s)?;
    }
    if rule.n_scalars() > 0 {
        k[0] += 1.0;
        write_scalar(&scalars[0], k[0])?;
    }
    let mu_product = if let Rule::NAdam { b1, momentum_decay, .. } = *rule {
        let mu = b1 * (1.0 - 0.5 * 0.96f64.powf(k[0] * momentum_decay));
        write_scalar(&scalars[1], k[1] * mu)?;
        // Read back: the update uses the product as stored (float32), as PyTorch does.
        read_scalar(&scalars[1])?
    } else {
        0.0
    };
    crate::dispatch_float!(p.dtype(), T => {
        let ptrs: Vec<P<T>> = state.iter().map(|s| s.ptr::<T>().map(P)).collect::<Result<_>>()?;
        // SAFETY: p, g and state are contiguous with p.numel() elements each (checked above).
        unsafe { update::<T>(rule, P(p_work.ptr::<T>()?), P(g.ptr::<T>()?), &ptrs, p.numel(), k[0], mu_product, fresh) };
    });
    for (orig, w) in originals.iter().zip(&work) {
        if orig.is_contiguous() {
            orig.storage().bump_version();
        } else {
            crate::ops::copy::copy_into(orig, w)?;
            orig.storage().bump_version();
        }
    }
    Ok(())
}

/// The elementwise update of each rule.
///
/// # Safety
/// Every pointer is valid for `n` elements and they do not alias.
#[allow(clippy::too_many_arguments)]
unsafe fn update<T: Float + Send + Sync>(rule: &Rule, p: P<T>, g: P<T>, s: &[P<T>], n: usize, step: f64, mu_product: f64, fresh: bool) {
    let c = |v: f64| T::from(v).unwrap_or(T::zero());
    // The gradient with maximize and (coupled) weight decay applied.
    let grad = move |i: usize, maximize: bool, wd: f64| -> T {
        // SAFETY: i < n.
        let (gv, pv) = unsafe { (*g.at(i as isize), *p.at(i as isize)) };
        let gv = if maximize { -gv } else { gv };
        if wd != 0.0 { gv + c(wd) * pv } else { gv }
    };
    macro_rules! at {
        ($ptr:expr, $i:expr) => {
            // SAFETY: i < n; each index is touched by one chunk.
            *unsafe { &mut *$ptr.at($i as isize) }
        };
    }
    match *rule {
        Rule::Sgd { lr, momentum, dampening, nesterov, wd, maximize } => chunks(n, |a, b| {
            for i in a..b {
                let mut d = grad(i, maximize, wd);
                if momentum != 0.0 {
                    let buf = if fresh { d } else { c(momentum) * at!(s[0], i) + c(1.0 - dampening) * d };
                    at!(s[0], i) = buf;
                    d = if nesterov { d + c(momentum) * buf } else { buf };
                }
                at!(p, i) = at!(p, i) - c(lr) * d;
            }
        }),
        Rule::Adam { lr, b1, b2, eps, wd, amsgrad, maximize, decoupled } => {
            let (bc1, bc2) = (1.0 - b1.powf(step), 1.0 - b2.powf(step));
            let (step_size, bc2_sqrt) = (c(lr / bc1), c(bc2.sqrt()));
            let decay = c(1.0 - lr * wd);
            chunks(n, |a, b| {
                for i in a..b {
                    if decoupled {
                        at!(p, i) = at!(p, i) * decay;
                    }
                    let d = grad(i, maximize, if decoupled { 0.0 } else { wd });
                    let m = at!(s[0], i) + (d - at!(s[0], i)) * c(1.0 - b1);
                    let v = c(b2) * at!(s[1], i) + c(1.0 - b2) * d * d;
                    at!(s[0], i) = m;
                    at!(s[1], i) = v;
                    let vhat = if amsgrad {
                        let mx = at!(s[2], i).max(v);
                        at!(s[2], i) = mx;
                        mx
                    } else {
                        v
                    };
                    let denom = vhat.sqrt() / bc2_sqrt + c(eps);
                    at!(p, i) = at!(p, i) - step_size * m / denom;
                }
            })
        }
        Rule::RmsProp { lr, alpha, eps, wd, momentum, centered, maximize } => chunks(n, |a, b| {
            let gi = 1 + (momentum > 0.0) as usize;
            for i in a..b {
                let d = grad(i, maximize, wd);
                let sq = c(alpha) * at!(s[0], i) + c(1.0 - alpha) * d * d;
                at!(s[0], i) = sq;
                let avg = if centered {
                    let ga = at!(s[gi], i) + (d - at!(s[gi], i)) * c(1.0 - alpha);
                    at!(s[gi], i) = ga;
                    (sq - ga * ga).sqrt() + c(eps)
                } else {
                    sq.sqrt() + c(eps)
                };
                if momentum > 0.0 {
                    let buf = c(momentum) * at!(s[1], i) + d / avg;
                    at!(s[1], i) = buf;
                    at!(p, i) = at!(p, i) - c(lr) * buf;
                } else {
                    at!(p, i) = at!(p, i) - c(lr) * d / avg;
                }
            }
        }),
        Rule::Adagrad { lr, lr_decay, wd, eps, maximize } => {
            let clr = c(lr / (1.0 + (step - 1.0) * lr_decay));
            chunks(n, |a, b| {
                for i in a..b {
                    let d = grad(i, maximize, wd);
                    let sum = at!(s[0], i) + d * d;
                    at!(s[0], i) = sum;
                    at!(p, i) = at!(p, i) - clr * d / (sum.sqrt() + c(eps));
                }
            })
        }
        Rule::Adamax { lr, b1, b2, eps, wd, maximize } => {
            let clr = c(lr / (1.0 - b1.powf(step)));
            chunks(n, |a, b| {
                for i in a..b {
                    let d = grad(i, maximize, wd);
                    let m = at!(s[0], i) + (d - at!(s[0], i)) * c(1.0 - b1);
                    let u = (c(b2) * at!(s[1], i)).max(d.abs() + c(eps));
                    at!(s[0], i) = m;
                    at!(s[1], i) = u;
                    at!(p, i) = at!(p, i) - clr * m / u;
                }
            })
        }
        Rule::NAdam { lr, b1, b2, eps, wd, momentum_decay, decoupled, maximize } => {
            let bc2 = 1.0 - b2.powf(step);
            let mu = b1 * (1.0 - 0.5 * 0.96f64.powf(step * momentum_decay));
            let mu_next = b1 * (1.0 - 0.5 * 0.96f64.powf((step + 1.0) * momentum_decay));
            let (k1, k2) = (c(lr * (1.0 - mu) / (1.0 - mu_product)), c(lr * mu_next / (1.0 - mu_product * mu_next)));
            let decay = c(1.0 - lr * wd);
            chunks(n, |a, b| {
                for i in a..b {
                    if decoupled {
                        at!(p, i) = at!(p, i) * decay;
                    }
                    let d = grad(i, maximize, if decoupled { 0.0 } else { wd });
                    let m = at!(s[0], i) + (d - at!(s[0], i)) * c(1.0 - b1);
                    let v = c(b2) * at!(s[1], i) + c(1.0 - b2) * d * d;
                    at!(s[0], i) = m;
                    at!(s[1], i) = v;
                    let denom = (v / c(bc2)).sqrt() + c(eps);
                    at!(p, i) = at!(p, i) - k1 * d / denom - k2 * m / denom;
                }
            })
        }
        Rule::RAdam { lr, b1, b2, eps, wd, decoupled, maximize } => {
            let (bc1, bc2) = (1.0 - b1.powf(step), 1.0 - b2.powf(step));
            let rho_inf = 2.0 / (1.0 - b2) - 1.0;
            let rho_t = rho_inf - 2.0 * step * b2.powf(step) / bc2;
            let rect = (rho_t > 5.0).then(|| ((rho_t - 4.0) * (rho_t - 2.0) * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t)).sqrt());
            let decay = c(1.0 - lr * wd);
            chunks(n, |a, b| {
                for i in a..b {
                    if decoupled {
                        at!(p, i) = at!(p, i) * decay;
                    }
                    let d = grad(i, maximize, if decoupled { 0.0 } else { wd });
                    let m = at!(s[0], i) + (d - at!(s[0], i)) * c(1.0 - b1);
                    let v = c(b2) * at!(s[1], i) + c(1.0 - b2) * d * d;
                    at!(s[0], i) = m;
                    at!(s[1], i) = v;
                    let mhat = m / c(bc1);
                    let upd = match rect {
                        Some(r) => mhat * c(lr * r * bc2.sqrt()) / (v.sqrt() + c(eps)),
                        None => mhat * c(lr),
                    };
                    at!(p, i) = at!(p, i) - upd;
                }
            })
        }
    }
}
