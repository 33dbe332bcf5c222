pub mod dtype;
pub mod layout;
pub mod storage;
#[allow(clippy::module_inception)]
pub mod tensor;

pub use dtype::{DType, Element, Scalar};
pub use layout::{Layout, Shape};
pub use storage::Device;
pub use tensor::{lock, AutogradMeta, Tensor, TensorImpl};
