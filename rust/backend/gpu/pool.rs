//! Launcher for shaders/pool.wgsl: max/avg pooling and the avg adjoint over
//! (planes, H, W) views; ops/pool.rs computes the window geometry.

use super::exec::{self, Variant};
use super::shaders::POOL;
use crate::error::Result;
use crate::tensor::Tensor;

/// The pooling kernels.
#[derive(Copy, Clone)]
pub enum Entry {
    MaxPool,
    AvgPool,
    AvgPoolAdjoint,
}

/// Runs `entry` over `planes` planes of `x` into `out` (and `idx`), `threads`
/// invocations over all planes. `params` are the shader's words up to the
/// offsets (its first word, the plane count, is set per dispatch); tensors
/// beyond the binding limit go in chunks of planes bound as windows; without
/// `idx` its binding is a dummy.
pub fn launch(
    entry: Entry,
    planes: usize,
    params: &[u32],
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
    exec::dispatch_row_chunks(&POOL, entry, Variant::of(x.dtype()), planes, &ts, |_, count| {
        let mut p = params.to_vec();
        p[0] = count as u32;
        (p, exec::grid_1d(threads / planes * count))
    })
}
