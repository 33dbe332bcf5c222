//! rumus: a deep-learning framework whose engine is Rust. The core (tensor,
//! ops, backend) never touches Python; `py` holds the PyO3 bindings only.

pub mod autograd;
pub mod backend;
pub mod error;
pub mod io;
pub mod ops;
pub mod optim;
pub mod py;
pub mod tensor;

/// Every op allocates a few small objects (storage header, tensor handle, small
/// buffers); mimalloc serves them markedly faster than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
