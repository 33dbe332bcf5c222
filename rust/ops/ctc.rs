//! ctc_loss: the per-sample negative log-likelihood of the targets under
//! every monotonic alignment (Graves et al. 2006), with its exact gradient.
//! The gradient comes out of the same alpha-beta pass as the loss, so it is
//! computed in the forward (only when autograd records) and saved.
//!
//! GPU tensors: the recursion is sequential over time and branchy per label,
//! so it runs on the host: the log-probabilities are copied to the CPU, and
//! the loss and gradient copied back. The copy costs one read-back per call.
//!
//! The gradient is d nll / d log_probs exactly (log_probs need not be
//! normalized). PyTorch's kernel returns that plus exp(log_probs), a term that
//! vanishes once it passes back through a log_softmax; gradients of the usual
//! `ctc_loss(x.log_softmax(2), ...)` are the same in both.

use super::copy::{contiguous, to_dtype, transfer};
use crate::autograd::{self, math, mode, Backward, Node, SavedTensor};
use crate::backend::cpu::{ctc as kernel, P};
use crate::bail;
use crate::error::Result;
use crate::tensor::{DType, Device, Tensor};
use std::cell::Cell;
use std::sync::Arc;

/// Per-sample (offset into the flat targets, target length, input length),
/// after checking them against PyTorch's rules.
fn check(
    lp: &Tensor,
    targets: &Tensor,
    input_lengths: &[i64],
    target_lengths: &[i64],
    blank: i64,
) -> Result<Vec<(usize, usize, usize)>> {
    if lp.ndim() != 3 {
        bail!(
            Runtime,
            "ctc_loss: log_probs must be 3-D (T, N, C), got shape {:?}",
            lp.shape().as_slice()
        );
    }
    if !lp.dtype().is_float() {
        bail!(Runtime, "ctc_loss: log_probs must be a float tensor, got {}", lp.dtype().name());
    }
    if !matches!(targets.dtype(), DType::I64 | DType::I32) {
        bail!(
            Runtime,
            "ctc_loss: targets must be an int64 or int32 tensor, got {}",
            targets.dtype().name()
        );
    }
    let (t_max, n, c) = (lp.shape()[0], lp.shape()[1], lp.shape()[2]);
    if blank < 0 || blank as usize >= c {
        bail!(Runtime, "ctc_loss: blank must be in label range [0, {}), got {}", c, blank);
    }
    for (what, v) in [("input_lengths", input_lengths), ("target_lengths", target_lengths)] {
        if v.len() != n {
            bail!(
                Runtime,
                "ctc_loss: {} must be of size batch_size {} (log_probs shape {:?}), got {} values",
                what,
                n,
                lp.shape().as_slice(),
                v.len()
            );
        }
        if let Some(bad) = v.iter().find(|&&x| x < 0) {
            bail!(Runtime, "ctc_loss: {} must be non-negative, got {}", what, bad);
        }
    }
    if let Some(&bad) = input_lengths.iter().find(|&&x| x as usize > t_max) {
        bail!(
            Runtime,
            "ctc_loss: Expected input_lengths to have value at most {} (log_probs shape {:?}), but got value {}",
            t_max,
            lp.shape().as_slice(),
            bad
        );
    }
    let mut out = Vec::with_capacity(n);
    match targets.ndim() {
        2 => {
            let (rows, s) = (targets.shape()[0], targets.shape()[1]);
            if rows != n {
                bail!(
                    Runtime,
                    "ctc_loss: 2-D targets must have batch_size {} rows (log_probs shape {:?}), got shape {:?}",
                    n,
                    lp.shape().as_slice(),
                    targets.shape().as_slice()
                );
            }
            for (i, &tl) in target_lengths.iter().enumerate() {
                if tl as usize > s {
                    bail!(
                        Runtime,
                        "ctc_loss: target_lengths[{}] = {} exceeds the targets' padded length {} (targets shape {:?})",
                        i,
                        tl,
                        s,
                        targets.shape().as_slice()
                    );
                }
                out.push((i * s, tl as usize, input_lengths[i] as usize));
            }
        }
        1 => {
            let total: i64 = target_lengths.iter().sum();
            if total as usize > targets.numel() {
                bail!(
                    Runtime,
                    "ctc_loss: concatenated targets hold {} labels but target_lengths sum to {}",
                    targets.numel(),
                    total
                );
            }
            let mut off = 0;
            for (i, &tl) in target_lengths.iter().enumerate() {
                out.push((off, tl as usize, input_lengths[i] as usize));
                off += tl as usize;
            }
        }
        d => bail!(
            Runtime,
            "ctc_loss: targets must be 1-D (concatenated) or 2-D (N, S), got {}-D shape {:?}",
            d,
            targets.shape().as_slice()
        ),
    }
    Ok(out)
}

/// Per-sample negative log-likelihood, shape (N,), of `targets` under
/// `log_probs` (T, N, C). Reductions are the caller's (rumus.nn.functional).
pub fn ctc_loss(
    log_probs: &Tensor,
    targets: &Tensor,
    input_lengths: &[i64],
    target_lengths: &[i64],
    blank: i64,
    zero_infinity: bool,
) -> Result<Tensor> {
    let spans = check(log_probs, targets, input_lengths, target_lengths, blank)?;
    let (t_max, n, c) = (log_probs.shape()[0], log_probs.shape()[1], log_probs.shape()[2]);
    let labels = to_dtype(targets, DType::I64)?.to_vec::<i64>()?;
    for &(off, len, _) in &spans {
        if let Some(&bad) = labels[off..off + len].iter().find(|&&v| v < 0 || v as usize >= c) {
            bail!(Index, "ctc_loss: target {} is out of bounds for {} classes", bad, c);
        }
    }
    let need_grad = autograd::needs_grad(&[log_probs]);
    let grad = Cell::new(None);
    autograd::record(
        &[log_probs],
        || {
            let device = log_probs.device();
            let host = if log_probs.is_gpu() {
                transfer(log_probs, Device::Cpu)?
            } else {
                log_probs.clone()
            };
            let kt = log_probs.dtype().float_kernel(false);
            let x = contiguous(&to_dtype(&host, kt)?)?;
            let nll = Tensor::for_output(&[n], kt)?;
            let g = if need_grad { Some(Tensor::for_output(&[t_max, n, c], kt)?) } else { None };
            let samples: Vec<kernel::Sample> = spans
                .iter()
                .map(|&(off, len, il)| kernel::Sample {
                    targets: &labels[off..off + len],
                    input_len: il,
                })
                .collect();
            crate::dispatch_float!(kt, T => {
                // SAFETY: x is contiguous (T, N, C); nll holds N and g T × N × C
                // elements; check() bounded every length and target.
                unsafe {
                    let lp = std::slice::from_raw_parts(x.ptr::<T>()?, x.numel());
                    let gp = match &g { Some(g) => Some(P(g.ptr::<T>()?)), None => None };
                    kernel::ctc::<T>(lp, (t_max, n, c), &samples, blank as usize, zero_infinity, P(nll.ptr::<T>()?), gp);
                }
            });
            let back = |t: Tensor| -> Result<Tensor> {
                let t = to_dtype(&t, log_probs.dtype())?;
                if device == Device::Cpu {
                    Ok(t)
                } else {
                    transfer(&t, device)
                }
            };
            grad.set(g.map(back).transpose()?);
            back(nll)
        },
        |_| {
            let grad = grad.take().expect("the forward computed the gradient");
            Ok(CtcBackward { grad, log_probs: SavedTensor::input(log_probs) }.into())
        },
    )
}

/// Gradient of ctc_loss: the saved d nll[n] / d log_probs scaled by the
/// incoming gradient of each sample.
#[derive(Clone)]
pub struct CtcBackward {
    grad: Tensor,
    log_probs: SavedTensor,
}

impl Backward for CtcBackward {
    fn name(&self) -> String {
        "CtcLossBackward0".into()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let g = math::reshape(&grads[0], &[1, self.grad.shape()[1], 1])?;
        if !mode::is_grad_enabled() {
            return Ok(vec![Some(math::mul(&self.grad, &g)?)]);
        }
        // create_graph: the result depends on log_probs too, through a
        // derivative rumus (like PyTorch) does not have; differentiating it raises.
        let lp = self.log_probs.unpack(node)?;
        let gx = autograd::record(
            &[&g, &lp],
            || math::mul(&self.grad, &g),
            |_| Ok(CtcDoubleBackward.into()),
        )?;
        Ok(vec![Some(gx)])
    }
}

/// The node of ctc_loss's gradient under create_graph: it has no derivative.
#[derive(Clone)]
pub struct CtcDoubleBackward;

impl Backward for CtcDoubleBackward {
    fn name(&self) -> String {
        "CtcLossBackwardBackward0".into()
    }
    fn apply(&self, _: &Arc<Node>, _: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        bail!(
            NotImplemented,
            "the derivative of ctc_loss's backward is not implemented (double backward through ctc_loss)"
        )
    }
}
