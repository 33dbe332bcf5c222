//! Launchers for shaders/bf16.wgsl: bfloat16 tensors on the GPU (packed two
//! per word) cast from and to every other dtype, copied and filled. Ops
//! without a bfloat16 kernel convert their operands to float32 with these
//! casts (`DType::gpu_compute`) or raise TypeError (`Storage::gpu_buffer`).

use super::dtype::{kind, word, Kind};
use super::elementwise::{launch_in, Arg};
use super::shaders::BF16;
use crate::error::Result;
use crate::tensor::{DType, Scalar, Tensor};

crate::wgsl_params! {
    /// The elementwise launcher's params (same layout, see
    /// `elementwise::Params`), for the entries of shaders/bf16.wgsl.
    pub struct Params in BF16 {
        n: u32, ndim: u32, op: u32, flags: u32,
        s0: u32, s1: u32, alpha: u32, pad: u32,
        shape: [u32; 8],
        o_off: u32, a_off: u32, b_off: u32, c_off: u32,
        o_st: [i32; 8],
        a_st: [i32; 8],
        b_st: [i32; 8],
        c_st: [i32; 8],
    }
}

impl From<super::elementwise::Params> for Params {
    fn from(p: super::elementwise::Params) -> Params {
        bytemuck::cast(p)
    }
}

/// dst (any GPU view) = src broadcast and cast, where either side is bfloat16.
pub fn copy(dst: &Tensor, src: &Tensor) -> Result<()> {
    let (from, to) = (kind(src.dtype())?, kind(dst.dtype())?);
    let entry = if matches!(to, Kind::Bf16 | Kind::Half) { "store16" } else { "load16" };
    let op = from as u32 | ((to as u32) << 4);
    launch_in::<Params>(entry, op, dst, [Some(Arg::T(src)), None, None], [0; 3])
}

/// Every element of the bfloat16 view `dst` = value (rounded to bfloat16).
pub fn fill(dst: &Tensor, value: Scalar) -> Result<()> {
    let op = Kind::F32 as u32 | ((Kind::Bf16 as u32) << 4);
    let s = Arg::S(word(value, DType::F32)?);
    launch_in::<Params>("store16", op, dst, [Some(s), None, None], [0; 3])
}
