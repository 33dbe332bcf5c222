//! Grad mode (thread-local, as in PyTorch) and anomaly detection (process-wide).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}
static ANOMALY: AtomicBool = AtomicBool::new(false);

pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}
pub fn set_grad_enabled(on: bool) {
    GRAD_ENABLED.with(|g| g.set(on));
}

/// Sets grad mode for a scope and restores the previous mode on drop (also on
/// an early return through `?`).
pub struct GradMode(bool);

impl GradMode {
    pub fn set(on: bool) -> GradMode {
        let prev = is_grad_enabled();
        set_grad_enabled(on);
        GradMode(prev)
    }
}
impl Drop for GradMode {
    fn drop(&mut self) {
        set_grad_enabled(self.0);
    }
}

pub fn anomaly_enabled() -> bool {
    ANOMALY.load(Ordering::Relaxed)
}
pub fn set_anomaly_enabled(on: bool) {
    ANOMALY.store(on, Ordering::Relaxed);
}
