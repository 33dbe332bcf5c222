//! Binding of grid_sample (rust/ops/sample.rs), called by F.grid_sample after
//! it checks its arguments.

use super::gil::run;
use super::tensor::{wrap, PyTensor};
use crate::ops::sample::{self, GridMode, GridPad};
use pyo3::prelude::*;

/// Samples `input` at the normalized points of `grid` (F.grid_sample's core).
#[pyfunction]
#[pyo3(name = "_grid_sample", signature = (input, grid, mode, padding_mode, align_corners))]
fn grid_sample(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    grid: PyRef<'_, PyTensor>,
    mode: &str,
    padding_mode: &str,
    align_corners: bool,
) -> PyResult<PyTensor> {
    let (mode, pad) = (GridMode::parse(mode)?, GridPad::parse(padding_mode)?);
    let (x, g) = (input.t.clone(), grid.t.clone());
    let work = x.shape()[..2.min(x.ndim())].iter().product::<usize>().saturating_mul(g.numel());
    let out = run(py, work, || sample::grid_sample(&x, &g, mode, pad, align_corners))?;
    Ok(wrap(out))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(grid_sample, m)?)?;
    Ok(())
}
