//! rumus: a deep-learning framework whose engine is Rust. The core (tensor,
//! ops, backend) never touches Python; `py` holds the PyO3 bindings only.

pub mod autograd;
pub mod backend;
pub mod error;
pub mod ops;
pub mod py;
pub mod tensor;
