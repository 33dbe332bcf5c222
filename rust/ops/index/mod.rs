//! Indexing ops: advanced indexing (integer and boolean index tensors with
//! NumPy's placement rules), gather, scatter, scatter_add, index_select,
//! nonzero, one_hot. All reduce to element offsets + the take/put kernels.
//! For autograd they reduce to two recorded ops that are each other's
//! adjoint: `take` (read a region) and `put` (write a region of a copy).
//!
//! offsets.rs turns index tensors into element offsets (CPU and GPU),
//! along.rs has the ops along one dim (index_select, gather, scatter,
//! one_hot), region.rs the recorded take/put ops and their backward.

mod along;
mod offsets;
mod region;

pub use along::*;
pub use offsets::*;
pub use region::*;
