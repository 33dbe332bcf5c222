//! grid_sample (F.grid_sample): samples an (N, C, [D,] H, W) input at the
//! normalized points of an (N, [D',] H', W', nd) grid, with bilinear
//! (trilinear in 3-D), nearest or bicubic (2-D) taps and zeros, border or
//! reflection padding, as PyTorch. The kernels are backend/cpu/sample.rs and
//! shaders/sample.wgsl; backward gives the input and grid gradients from one
//! recorded `GridSampleBackward` (not itself differentiable, as PyTorch's).

use super::copy::{contiguous, to_dtype};
use crate::autograd::{self, mode, Backward, Node, SavedTensor};
use crate::backend::cpu::sample::{self as kernel, Geom};
use crate::backend::gpu::sample as gpu;
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::fmt_shape;
use crate::tensor::{DType, Element, Tensor};
use std::sync::Arc;

crate::wgsl_codes! {
    /// Interpolation of grid_sample.
    pub enum GridMode = "GRID_MODE" { Bilinear, Nearest, Bicubic }
}

crate::wgsl_codes! {
    /// What grid_sample reads outside the input.
    pub enum GridPad = "GRID_PAD" { Zeros, Border, Reflection }
}

impl GridMode {
    pub fn parse(s: &str) -> Result<GridMode> {
        Ok(match s {
            "bilinear" => GridMode::Bilinear,
            "nearest" => GridMode::Nearest,
            "bicubic" => GridMode::Bicubic,
            _ => bail!(
                Value,
                "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '{}'",
                s
            ),
        })
    }
}

impl GridPad {
    pub fn parse(s: &str) -> Result<GridPad> {
        Ok(match s {
            "zeros" => GridPad::Zeros,
            "border" => GridPad::Border,
            "reflection" => GridPad::Reflection,
            _ => bail!(
                Value,
                "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: '{}'",
                s
            ),
        })
    }
}

/// Checks the shapes, dtypes and devices; returns the geometry.
fn validate(x: &Tensor, grid: &Tensor, mode: GridMode, pad: GridPad, align: bool) -> Result<Geom> {
    let (xs, gs) = (x.shape(), grid.shape());
    if !(x.ndim() == 4 || x.ndim() == 5) || grid.ndim() != x.ndim() {
        bail!(
            Runtime,
            "grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got input with sizes {} and grid with sizes {}",
            fmt_shape(xs),
            fmt_shape(gs)
        );
    }
    let nd = x.ndim() - 2;
    if xs[0] != gs[0] {
        bail!(
            Runtime,
            "grid_sampler(): expected grid and input to have same batch size, but got input with sizes {} and grid with sizes {}",
            fmt_shape(xs),
            fmt_shape(gs)
        );
    }
    if gs[nd + 1] != nd {
        bail!(
            Runtime,
            "grid_sampler(): expected grid to have size {} in last dimension, but got grid with sizes {}",
            nd,
            fmt_shape(gs)
        );
    }
    if let Some(i) = xs[2..].iter().position(|&s| s == 0) {
        bail!(
            Runtime,
            "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes {} with dimension {} being empty",
            fmt_shape(xs),
            i + 2
        );
    }
    if !x.dtype().is_float() || grid.dtype() != x.dtype() {
        bail!(
            Runtime,
            "grid_sampler(): expected input and grid to have the same floating point dtype, but input has {} and grid has {}",
            x.dtype().name(),
            grid.dtype().name()
        );
    }
    super::same_device("grid_sampler", &[x, grid])?;
    if mode == GridMode::Bicubic && nd != 2 {
        bail!(Runtime, "grid_sampler(): bicubic interpolation only supports 4D input.");
    }
    let size = if nd == 3 { [xs[2], xs[3], xs[4]] } else { [1, xs[2], xs[3]] };
    let pts = gs[1..=nd].iter().product();
    Ok(Geom { n: xs[0], c: xs[1], size, pts, nd, mode, pad, align })
}

/// The dtype the kernels run in: float64 on the CPU as is, else float32 (the
/// GPU's input-gradient scatter adds float32 bits atomically).
fn compute(t: &Tensor) -> DType {
    if t.dtype() == DType::F64 && !t.is_gpu() {
        DType::F64
    } else {
        DType::F32
    }
}

fn prepared(t: &Tensor) -> Result<Tensor> {
    contiguous(&to_dtype(t, compute(t))?)
}

/// # Safety
/// `t` must be a contiguous CPU tensor of `T`.
unsafe fn slice<T: Element>(t: &Tensor) -> Result<&[T]> {
    Ok(std::slice::from_raw_parts(t.ptr::<T>()?, t.numel()))
}

/// F.grid_sample's core: (N, C, *out) samples of `x` at `grid`.
pub fn grid_sample(
    x: &Tensor,
    grid: &Tensor,
    mode: GridMode,
    pad: GridPad,
    align: bool,
) -> Result<Tensor> {
    let geo = validate(x, grid, mode, pad, align)?;
    let nd = geo.nd;
    let mut shape = vec![geo.n, geo.c];
    shape.extend_from_slice(&grid.shape()[1..=nd]);
    autograd::record(
        &[x, grid],
        || {
            let (xc, gc) = (prepared(x)?, prepared(grid)?);
            let out = Tensor::empty_on(&shape, xc.dtype(), xc.device())?;
            if geo.n * geo.c * geo.pts > 0 {
                if xc.is_gpu() {
                    gpu::forward(&geo, &xc, &gc, &out)?;
                } else {
                    crate::dispatch_float!(xc.dtype(), T => {
                        // SAFETY: contiguous tensors of T; out is fresh.
                        unsafe { kernel::forward::<T>(&geo, slice(&xc)?, slice(&gc)?, std::slice::from_raw_parts_mut(out.ptr::<T>()?, out.numel())) }
                    });
                }
            }
            to_dtype(&out, x.dtype())
        },
        |_| {
            Ok(GridSampleBackward { geo, x: SavedTensor::input(x), grid: SavedTensor::input(grid) }
                .into())
        },
    )
}

#[derive(Clone)]
pub struct GridSampleBackward {
    geo: Geom,
    x: SavedTensor,
    grid: SavedTensor,
}

impl Backward for GridSampleBackward {
    fn name(&self) -> String {
        if self.geo.nd == 3 { "GridSampler3DBackward0" } else { "GridSampler2DBackward0" }.into()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        if mode::is_grad_enabled() {
            bail!(
                Runtime,
                "{}: double backward (create_graph=True) through grid_sample is not supported",
                self.name()
            );
        }
        let (x, grid) = (self.x.unpack(node)?, self.grid.unpack(node)?);
        let (need_x, need_g) = (node.needs_input_grad(0), node.needs_input_grad(1));
        let (xc, gc) = (prepared(&x)?, prepared(&grid)?);
        let go = contiguous(&to_dtype(&grads[0], xc.dtype())?)?;
        let geo = &self.geo;
        let gx =
            need_x.then(|| Tensor::empty_on(x.shape(), xc.dtype(), xc.device())).transpose()?;
        let gg =
            need_g.then(|| Tensor::empty_on(grid.shape(), xc.dtype(), xc.device())).transpose()?;
        if geo.n * geo.c * geo.pts > 0 {
            if xc.is_gpu() {
                gpu::backward(geo, &xc, &gc, &go, gx.as_ref(), gg.as_ref())?;
            } else {
                crate::dispatch_float!(xc.dtype(), T => {
                    // SAFETY: contiguous tensors of T; the gradients are fresh.
                    unsafe {
                        let (xs, gs, gos) = (slice::<T>(&xc)?, slice::<T>(&gc)?, slice::<T>(&go)?);
                        if let Some(gx) = &gx {
                            kernel::input_grad(geo, gs, gos, std::slice::from_raw_parts_mut(gx.ptr::<T>()?, gx.numel()));
                        }
                        if let Some(gg) = &gg {
                            kernel::grid_grad(geo, xs, gs, gos, std::slice::from_raw_parts_mut(gg.ptr::<T>()?, gg.numel()));
                        }
                    }
                });
            }
        } else {
            for t in gx.iter().chain(gg.iter()) {
                super::copy::fill_(t, crate::tensor::Scalar::Int(0))?;
            }
        }
        Ok(vec![
            gx.map(|t| to_dtype(&t, x.dtype())).transpose()?,
            gg.map(|t| to_dtype(&t, grid.dtype())).transpose()?,
        ])
    }
}
