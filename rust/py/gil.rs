//! The one way a binding runs a kernel (or other long work, like file I/O):
//! without the GIL when the work is large, so other Python threads run
//! meanwhile (data loaders, a GUI, a second model).

use pyo3::Python;

/// Work (elements, or bytes for file I/O) from which the GIL is released.
/// Below it, letting the GIL go costs more than it frees: taking it back can
/// wait for another thread's switch interval.
const RELEASE_GIL: usize = 1 << 16;

/// The work of calls whose length isn't known up front and may be long: a
/// GPU read-back (it waits for every queued kernel), a backward pass.
pub const ALWAYS: usize = usize::MAX;

/// Runs `f`, without the GIL when `work` is large.
pub fn run<R: Send, E: Send>(
    py: Python<'_>,
    work: usize,
    f: impl FnOnce() -> Result<R, E> + Send,
) -> Result<R, E> {
    if work >= RELEASE_GIL {
        py.detach(f)
    } else {
        f()
    }
}
