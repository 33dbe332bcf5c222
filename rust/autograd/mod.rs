//! Autograd: every differentiable op, when grad mode is on and an input
//! requires grad, runs its forward with recording off and attaches a graph
//! node holding one `BackwardOp` variant (graph.rs). Saved tensors carry
//! version snapshots (version.rs); engine.rs runs backward.

pub mod backward_op;
pub mod engine;
pub mod graph;
pub mod hooks;
pub mod math;
pub mod mode;
pub mod version;

pub use backward_op::{Backward, BackwardOp, CustomBackward};
pub use graph::{Edge, Node};
pub use mode::{is_grad_enabled, set_grad_enabled, GradMode};
pub use version::SavedTensor;

use crate::bail;
use crate::error::Result;
use crate::tensor::Tensor;

/// True when an op on `inputs` must be recorded.
pub fn needs_grad(inputs: &[&Tensor]) -> bool {
    is_grad_enabled() && inputs.iter().any(|t| t.requires_grad())
}

/// A view whose storage was written in place after the view was made has a
/// stale history; PyTorch rebases it, rumus refuses to use it.
fn check_fresh_view(t: &Tensor) -> Result<()> {
    if let Some(v) = t.0.autograd.view_version {
        if t.version() != v && t.grad_fn().is_some() {
            bail!(
                Runtime,
                "a view of a tensor that requires grad was used after its base (or another view of it) was modified in place (version {} -> {}); rumus does not rebase view histories: take the view again after the in-place op, or clone() it before",
                v,
                t.version()
            );
        }
    }
    Ok(())
}

/// Runs `forward`; when recording, runs it with recording off and attaches
/// the node that `make` builds from the output. Non-float outputs are never
/// differentiable.
pub fn record(
    inputs: &[&Tensor],
    forward: impl FnOnce() -> Result<Tensor>,
    make: impl FnOnce(&Tensor) -> Result<BackwardOp>,
) -> Result<Tensor> {
    if !needs_grad(inputs) {
        return forward();
    }
    for t in inputs {
        check_fresh_view(t)?;
    }
    let out = {
        let _off = GradMode::set(false);
        forward()?
    };
    if !out.dtype().is_differentiable() {
        return Ok(out);
    }
    let op = make(&out);
    hooks::take_pack_error()?;
    Ok(graph::attach(op?, inputs, vec![out]).pop().expect("one output"))
}

/// `record` for an op with several outputs (one node for all of them; an
/// output whose gradient never arrives gets zeros).
pub fn record_many(
    inputs: &[&Tensor],
    forward: impl FnOnce() -> Result<Vec<Tensor>>,
    make: impl FnOnce(&[Tensor]) -> Result<BackwardOp>,
) -> Result<Vec<Tensor>> {
    if !needs_grad(inputs) {
        return forward();
    }
    for t in inputs {
        check_fresh_view(t)?;
    }
    let outs = {
        let _off = GradMode::set(false);
        forward()?
    };
    let op = make(&outs);
    hooks::take_pack_error()?;
    Ok(graph::attach(op?, inputs, outs))
}

/// An in-place write of values that do not depend on `target` (fill_,
/// zero_, uniform_, ...): the same rules as `inplace`; a tensor in a graph
/// stays in it, passing zero gradient to its old history (as PyTorch does).
pub fn overwrite(target: &Tensor, name: &str, raw: impl FnOnce() -> Result<()>) -> Result<()> {
    if !(is_grad_enabled() && target.requires_grad()) {
        return raw();
    }
    check_inplace_target(target, name)?;
    raw()?;
    inplace(
        target,
        &[],
        name,
        || Ok(()),
        |x| {
            let all = crate::ops::creation::full_on(
                x.shape(),
                crate::tensor::Scalar::Bool(true),
                crate::tensor::DType::Bool,
                x.device(),
            )?;
            crate::ops::elementwise::where_(
                &all,
                &crate::ops::Operand::T(x.detach()),
                &crate::ops::Operand::T(x.clone()),
            )
        },
    )
}

fn check_inplace_target(target: &Tensor, name: &str) -> Result<()> {
    if target.requires_grad() && target.is_leaf() {
        bail!(
            Runtime,
            "a leaf Variable that requires grad is being used in an in-place operation ({}).",
            name
        );
    }
    if target.is_view() {
        bail!(
            Runtime,
            "{}: in-place operation on a view of a tensor that takes part in autograd is not supported by rumus (it does not rebase view histories); apply the op out of place, or write into the base tensor with indexing (base[idx] = value)",
            name
        );
    }
    Ok(())
}

/// An in-place op on `target` reading `others`. Without autograd it runs
/// `raw`. With autograd, PyTorch's rules: a leaf that requires grad may not be
/// written; otherwise the op runs out of place on a copy of `target` that
/// carries its history, the result is written back, and `target` becomes the
/// output of the new node. (The copy keeps saved values safe from the write.)
pub fn inplace(
    target: &Tensor,
    others: &[&Tensor],
    name: &str,
    raw: impl FnOnce() -> Result<()>,
    out_of_place: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<()> {
    if !is_grad_enabled() || !(target.requires_grad() || others.iter().any(|t| t.requires_grad())) {
        return raw();
    }
    check_inplace_target(target, name)?;
    target.check_writable(name)?;
    let alias = {
        let _off = GradMode::set(false);
        crate::ops::copy::clone_as(target, target.dtype())?
    };
    if let Some((n, nr)) = target.grad_fn() {
        alias.set_grad_fn(n, nr);
    }
    let out = out_of_place(&alias)?;
    if out.shape() != target.shape() {
        bail!(
            Runtime,
            "{}: output with shape {:?} doesn't match the broadcast shape {:?}",
            name,
            target.shape().as_slice(),
            out.shape().as_slice()
        );
    }
    if out.dtype().category() > target.dtype().category() {
        bail!(
            Runtime,
            "result type {} can't be cast to the desired output type {} (in {})",
            out.dtype().name(),
            target.dtype().name(),
            name
        );
    }
    {
        let _off = GradMode::set(false);
        crate::ops::copy::copy_into(target, &out)?;
        target.storage().bump_version();
    }
    match out.grad_fn() {
        Some((n, nr)) => target.set_grad_fn(n, nr),
        None => {
            *crate::tensor::lock(&target.0.autograd.grad_fn) = None;
            target.0.autograd.requires_grad.store(false, std::sync::atomic::Ordering::Relaxed);
        }
    }
    Ok(())
}
