//! Hooks the engine calls back into: gradient hooks on tensors and graph
//! nodes, and pack/unpack hooks for saved tensors. The core only knows these
//! traits; the Python layer implements them (rust/py/hooks.rs).

use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::any::Any;
use std::cell::RefCell;
use std::sync::Arc;

/// The hooks of one graph node, or of one leaf (its AccumulateGrad).
pub trait Hooks: Send + Sync {
    /// Tensor hooks of output `nr` (0 for a leaf), in order; each may replace
    /// the gradient.
    fn tensor(&self, nr: u32, grad: Tensor) -> Result<Tensor>;
    /// Node pre-hooks on the gradients of the outputs (None: no gradient);
    /// may replace them.
    fn pre(&self, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>>;
    /// Node hooks on the gradients computed for the inputs, given those of
    /// the outputs; may replace the inputs' gradients.
    fn post(
        &self,
        grad_inputs: Vec<Option<Tensor>>,
        grad_outputs: &[Option<Tensor>],
    ) -> Result<Vec<Option<Tensor>>>;
    /// Leaves: runs after the gradient was accumulated into `.grad`.
    fn post_accumulate(&self, leaf: &Tensor) -> Result<()>;
    fn as_any(&self) -> &dyn Any;
}

/// A tensor hook must hand back a gradient like the one it got.
pub fn check_hook_result(new: &Tensor, old: &Tensor) -> Result<()> {
    if new.shape() != old.shape() {
        crate::bail!(
            Runtime,
            "hook has changed the size of value: expected {:?}, got {:?}",
            old.shape().as_slice(),
            new.shape().as_slice()
        );
    }
    if new.dtype() != old.dtype() || new.device() != old.device() {
        crate::bail!(
            Runtime,
            "hook has changed the type of value: expected {} on {}, got {} on {}",
            old.dtype().name(),
            old.device().name(),
            new.dtype().name(),
            new.device().name()
        );
    }
    Ok(())
}

/// What a pack hook made of a saved tensor.
pub trait Packed: Send + Sync {
    fn unpack(&self) -> Result<Tensor>;
}

/// A (pack_hook, unpack_hook) pair, active on this thread while its context is.
pub trait SavedHooks: Send + Sync {
    fn pack(&self, t: &Tensor) -> Result<Arc<dyn Packed>>;
}

thread_local! {
    /// The innermost pair applies; None entries disable hooks (with the message to raise).
    static SAVED_HOOKS: RefCell<Vec<SavedHookEntry>> = const { RefCell::new(Vec::new()) };
    /// The first pack hook failure while recording an op, raised by the recorder.
    static PACK_ERROR: RefCell<Option<Error>> = const { RefCell::new(None) };
}

#[derive(Clone)]
pub enum SavedHookEntry {
    Hooks(Arc<dyn SavedHooks>),
    Disabled(String),
}

pub fn push_saved_hooks(e: SavedHookEntry) -> Result<()> {
    SAVED_HOOKS.with(|s| {
        let mut s = s.borrow_mut();
        if let (SavedHookEntry::Hooks(_), Some(SavedHookEntry::Disabled(m))) = (&e, s.last()) {
            return Err(Error::Runtime(m.clone()));
        }
        s.push(e);
        Ok(())
    })
}

pub fn pop_saved_hooks() {
    SAVED_HOOKS.with(|s| s.borrow_mut().pop());
}

/// The pair that packs tensors saved now, if any.
pub fn current_saved_hooks() -> Option<Arc<dyn SavedHooks>> {
    SAVED_HOOKS.with(|s| match s.borrow().last() {
        Some(SavedHookEntry::Hooks(h)) => Some(h.clone()),
        _ => None,
    })
}

/// Runs `f` with no pack hooks active (a pack hook's own ops are not packed).
pub fn without_saved_hooks<R>(f: impl FnOnce() -> R) -> R {
    let saved = SAVED_HOOKS.with(|s| std::mem::take(&mut *s.borrow_mut()));
    struct Restore(Vec<SavedHookEntry>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let v = std::mem::take(&mut self.0);
            SAVED_HOOKS.with(|s| *s.borrow_mut() = v);
        }
    }
    let _restore = Restore(saved);
    f()
}

pub fn set_pack_error(e: Error) {
    PACK_ERROR.with(|p| {
        let mut p = p.borrow_mut();
        if p.is_none() {
            *p = Some(e);
        }
    });
}

/// Fails with the pack hook error raised while the last op was recorded.
pub fn take_pack_error() -> Result<()> {
    match PACK_ERROR.with(|p| p.borrow_mut().take()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
