//! Elementwise ops with NumPy broadcasting and PyTorch type promotion:
//! unary math (unary.rs), binary arithmetic and comparisons (binary.rs),
//! where/masked_fill/clamp (conditional.rs), and their in-place forms. Each
//! file validates, dispatches and records the op, and holds its backward; the
//! loops are in backend/cpu/{unary,binary}.rs, the GPU launchers in
//! backend/gpu/elementwise.rs, the kernels in shaders/elementwise.wgsl.

mod binary;
mod conditional;
mod halfchunk;
mod unary;

pub use binary::{binary, binary_, binary_checks, Binary, BinaryBackward};
pub use conditional::{clamp, clamp_, masked_fill, where_, ClampBackward, WhereBackward};
pub use unary::{unary, unary_, Unary, UnaryBackward, UnaryCode, UNARY_FUNCTIONS};

use super::Operand;
use crate::autograd::{Node, SavedTensor};
use crate::bail;
use crate::error::Result;
use crate::tensor::{DType, Tensor};
use std::sync::Arc;

pub(super) fn tensors<'a>(ops: &[&'a Operand]) -> smallvec::SmallVec<[&'a Tensor; 3]> {
    ops.iter().filter_map(|o| if let Operand::T(t) = o { Some(t) } else { None }).collect()
}

/// PyTorch's can_cast for writing a result into an existing tensor.
pub(super) fn check_inplace_cast(name: &str, result: DType, target: DType) -> Result<()> {
    if result.category() > target.category() {
        bail!(
            Runtime,
            "result type {} can't be cast to the desired output type {} (in {}_)",
            result.name(),
            target.name(),
            name
        );
    }
    Ok(())
}

pub(super) fn capitalized(name: &str) -> String {
    name.split('_').map(|w| w[..1].to_uppercase() + &w[1..]).collect()
}

/// One operand of a recorded binary op: its edge index (tensors only), the
/// saved value when the backward reads it, or the Python number.
#[derive(Clone)]
pub(super) struct Side {
    pub(super) edge: Option<usize>,
    pub(super) saved: Option<SavedTensor>,
    pub(super) scalar: Option<crate::tensor::Scalar>,
    pub(super) shape: crate::tensor::Shape,
    pub(super) dtype: DType,
}

impl Side {
    pub(super) fn new(o: &Operand, edge: &mut usize, save: bool) -> Side {
        match o {
            Operand::T(t) => {
                let e = *edge;
                *edge += 1;
                Side {
                    edge: Some(e),
                    saved: save.then(|| SavedTensor::input(t)),
                    scalar: None,
                    shape: t.shape().clone(),
                    dtype: t.dtype(),
                }
            }
            Operand::S(s) => Side {
                edge: None,
                saved: None,
                scalar: Some(*s),
                shape: Default::default(),
                dtype: DType::F64,
            },
        }
    }
    pub(super) fn value(&self, node: &Arc<Node>) -> Result<Operand> {
        match (&self.saved, self.scalar) {
            (_, Some(s)) => Ok(Operand::S(s)),
            (Some(t), None) => Ok(Operand::T(t.unpack(node)?)),
            (None, None) => bail!(Runtime, "internal: operand not saved for backward"),
        }
    }
    pub(super) fn needs(&self, node: &Node) -> bool {
        self.edge.is_some_and(|e| node.needs_input_grad(e))
    }
}
