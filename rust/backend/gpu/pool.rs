//! Launcher for shaders/pool.wgsl: max/avg pooling and the avg adjoint over
//! (planes, H, W) views; ops/pool.rs computes the window geometry.

use super::exec::{self, Variant};
use super::shaders::POOL;
use crate::error::Result;
use crate::tensor::Tensor;

crate::wgsl_flags! {
    /// Bits of `Params::flags`: adaptive windows, count_include_pad, and a
    /// divisor_override that replaces the window size.
    pub struct PoolFlags = "POOL" { ADAPTIVE = 1, INCLUDE_PAD = 2, DIVISOR = 4 }
}

crate::wgsl_params! {
    /// Planes, input and output sizes, `PoolFlags`, the sliding windows
    /// (ignored when adaptive), the divisor override, then the element
    /// offsets where x, out and idx start.
    pub struct Params in POOL {
        planes: u32, h: u32, w: u32, oh: u32,
        ow: u32, flags: u32, kh: u32, kw: u32,
        sh: u32, sw: u32, ph: u32, pw: u32,
        dh: u32, dw: u32, divisor: f32, x_off: u32,
        o_off: u32, idx_off: u32,
    }
}

/// The pooling kernels.
#[derive(Copy, Clone)]
pub enum Entry {
    MaxPool,
    AvgPool,
    AvgPoolAdjoint,
}

/// Runs `entry` over `planes` planes of `x` into `out` (and `idx`), `threads`
/// invocations over all planes. `params`' plane count and offsets are set per
/// dispatch: tensors beyond the binding limit go in chunks of planes bound as
/// windows; without `idx` its binding is a dummy.
pub fn launch(
    entry: Entry,
    planes: usize,
    params: &Params,
    x: &Tensor,
    out: &Tensor,
    idx: Option<&Tensor>,
    threads: usize,
) -> Result<()> {
    let entry = match entry {
        Entry::MaxPool => "max_pool",
        Entry::AvgPool => "avg_pool",
        Entry::AvgPoolAdjoint => "avg_pool_adjoint",
    };
    let ts = [Some(x), Some(out), idx];
    exec::dispatch_row_chunks(entry, Variant::of(x.dtype()), planes, &ts, |_, count, offs| {
        let p = Params {
            planes: count as u32,
            x_off: offs[0],
            o_off: offs[1],
            idx_off: offs[2],
            ..*params
        };
        (p, exec::grid_1d(threads / planes * count))
    })
}
