//! `BackwardOp`: one variant per differentiable op, each a struct (defined
//! next to the op's forward in rust/ops/) holding exactly what its backward
//! needs. No closures: the enum is plain data, Send + Sync (asserted in
//! graph.rs). `Custom` carries user-defined functions (Python
//! rumus.autograd.Function, checkpointing).

use super::graph::Node;
use crate::error::Result;
use crate::ops::{conv, copy, elementwise, index, linalg, norm, pool, reduce, shape, softmax};
use crate::tensor::Tensor;
use std::sync::Arc;

/// The backward of one op: gradients of its outputs in, one optional gradient
/// per input edge out (None where an input needs none).
pub trait Backward {
    fn name(&self) -> String;
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>>;
}

/// A backward implemented outside the core (the Python layer).
pub trait CustomBackward: Send + Sync {
    fn name(&self) -> String;
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>>;
}

macro_rules! backward_ops {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        #[derive(Clone)]
        pub enum BackwardOp {
            $($variant($ty),)*
            Custom(Arc<dyn CustomBackward>),
        }
        impl BackwardOp {
            pub fn name(&self) -> String {
                match self {
                    $(BackwardOp::$variant(b) => b.name(),)*
                    BackwardOp::Custom(c) => c.name(),
                }
            }
            pub fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
                match self {
                    $(BackwardOp::$variant(b) => b.apply(node, grads),)*
                    BackwardOp::Custom(c) => c.apply(node, grads),
                }
            }
        }
        $(impl From<$ty> for BackwardOp {
            fn from(b: $ty) -> BackwardOp {
                BackwardOp::$variant(b)
            }
        })*
    };
}

backward_ops! {
    Unary(elementwise::UnaryBackward),
    Binary(elementwise::BinaryBackward),
    Where(elementwise::WhereBackward),
    Clamp(elementwise::ClampBackward),
    Sum(reduce::SumBackward),
    Prod(reduce::ProdBackward),
    Extreme(reduce::ExtremeBackward),
    MaxDim(reduce::MaxDimBackward),
    Var(reduce::VarBackward),
    LogSumExp(reduce::LogSumExpBackward),
    Cumulative(crate::ops::scan::CumulativeBackward),
    SpecialFn(crate::ops::special_fns::SpecialFnBackward),
    Matmul(linalg::MatmulBackward),
    Linear(linalg::LinearBackward),
    Linalg(linalg::decomp::LinalgBackward),
    Reshape(shape::ReshapeBackward),
    Permute(shape::PermuteBackward),
    Expand(shape::ExpandBackward),
    Cat(shape::CatBackward),
    Split(crate::ops::split::SplitBackward),
    Flip(shape::FlipBackward),
    Tri(shape::TriBackward),
    Pad(crate::ops::pad::PadBackward),
    PadSum(crate::ops::pad::PadSumBackward),
    Resample(crate::ops::resample::ResampleBackward),
    ResampleAdjoint(crate::ops::resample::ResampleAdjointBackward),
    Take(index::TakeBackward),
    Put(index::PutBackward),
    Cast(copy::CastBackward),
    ToDevice(copy::ToDeviceBackward),
    Cols(conv::ColsBackward),
    ConvIgemm(crate::ops::conv_igemm::ConvBackward),
    BatchNorm(crate::ops::batch_norm::BatchNormBackward),
    AvgPool(pool::AvgPoolBackward),
    Softmax(softmax::SoftmaxBackward),
    LayerNorm(norm::LayerNormBackward),
    Sort(crate::ops::sort::SortBackward),
    Ctc(crate::ops::ctc::CtcBackward),
    CtcDouble(crate::ops::ctc::CtcDoubleBackward),
    StandardGamma(crate::ops::sampling::StandardGammaBackward),
    Rnn(crate::ops::rnn::RnnBackward),
    RnnGates(crate::ops::rnn_gpu::RnnGatesBackward),
    GridSample(crate::ops::sample::GridSampleBackward),
    Complex(crate::ops::complex::ComplexBackward),
    Fft(crate::ops::fft::FftBackward),
    FlashAttention(crate::ops::attention::FlashAttentionBackward),
    FusedLinear(crate::ops::linalg::fused::FusedLinearBackward),
}
