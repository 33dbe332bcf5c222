//! Launchers for shaders/qgemm.wgsl: the int8 GEMM of dynamically quantized
//! Linear layers (activations quantized per row on the GPU, then
//! dot4I8Packed) and the Q8 block-format product and dequantization. Every
//! operand is a contiguous tensor bound whole: int8 data travels as int32
//! words (four codes per word), float results as float32.

use super::exec::{self, Variant};
use super::shaders::QGEMM;
use crate::error::Result;
use crate::tensor::{DType, Device, Tensor};

crate::wgsl_params! {
    /// Rows, output columns and row length; words per packed row; the Q8
    /// block size; whether a bias is bound.
    pub struct Params in QGEMM {
        m: u32, n: u32, k: u32, kw: u32, bs: u32, has_bias: u32,
    }
}

/// The ten bindings of qgemm.wgsl, unused slots given the dummy buffer.
fn binds(slots: [Option<&Tensor>; 9]) -> Result<Vec<&wgpu::Buffer>> {
    slots
        .iter()
        .map(|t| match t {
            Some(t) => t.storage().gpu_buffer(),
            None => exec::dummy(),
        })
        .collect()
}

fn grid_2d(m: usize, n: usize) -> [u32; 3] {
    [n.div_ceil(16) as u32, m.div_ceil(16) as u32, 1]
}

/// Quantizes the m rows of `x` (m × k float32) into packed 7-bit codes (m × kw
/// words) and per-row (scale, zero point) pairs.
pub fn quantize_rows(x: &Tensor, m: usize, k: usize, kw: usize) -> Result<(Tensor, Tensor)> {
    let codes = Tensor::empty_on(&[m, kw], DType::I32, Device::active_gpu())?;
    let info = Tensor::empty_on(&[m, 2], DType::F32, Device::active_gpu())?;
    let p = Params { m: m as u32, k: k as u32, kw: kw as u32, ..Default::default() };
    let b = binds([Some(x), None, None, None, None, None, None, Some(&codes), Some(&info)])?;
    exec::dispatch("quantize_rows", Variant::F32, &b, &p, exec::grid_rows(m))?;
    Ok((codes, info))
}

/// out (m × n float32) = dequantized (codes · wᵀ) + bias, from `quantize_rows`'
/// output, packed int8 weights (n × kw words), their scales and code sums.
#[allow(clippy::too_many_arguments)]
pub fn qlinear(
    codes: &Tensor,
    info: &Tensor,
    w: &Tensor,
    scale: &Tensor,
    wsum: &Tensor,
    bias: Option<&Tensor>,
    out: &Tensor,
    m: usize,
    n: usize,
    kw: usize,
) -> Result<()> {
    let p = Params {
        m: m as u32,
        n: n as u32,
        kw: kw as u32,
        has_bias: bias.is_some() as u32,
        ..Default::default()
    };
    let b = binds([
        None,
        Some(codes),
        Some(info),
        Some(w),
        Some(scale),
        Some(wsum),
        bias,
        Some(out),
        None,
    ])?;
    exec::dispatch("qgemm", Variant::F32, &b, &p, grid_2d(m, n))
}

/// out (m × n int32) = codes (m × kw words) · wᵀ (n × kw words), exactly.
pub fn gemm_s32(
    codes: &Tensor,
    w: &Tensor,
    out: &Tensor,
    m: usize,
    n: usize,
    kw: usize,
) -> Result<()> {
    let p = Params { m: m as u32, n: n as u32, kw: kw as u32, ..Default::default() };
    let b = binds([None, Some(codes), None, Some(w), None, None, None, Some(out), None])?;
    exec::dispatch("qgemm_s32", Variant::F32, &b, &p, grid_2d(m, n))
}

/// out (m × n float32) = x (m × k) · Wᵀ (+ bias), W's rows being Q8 blocks of `bs`.
#[allow(clippy::too_many_arguments)]
pub fn q8_linear(
    x: &Tensor,
    words: &Tensor,
    bias: Option<&Tensor>,
    out: &Tensor,
    m: usize,
    n: usize,
    k: usize,
    bs: usize,
) -> Result<()> {
    let p = Params {
        m: m as u32,
        n: n as u32,
        k: k as u32,
        bs: bs as u32,
        has_bias: bias.is_some() as u32,
        ..Default::default()
    };
    let b = binds([Some(x), None, None, Some(words), None, None, bias, Some(out), None])?;
    exec::dispatch("q8_matmul", Variant::F32, &b, &p, grid_2d(m, n))
}

/// out (rows · k float32) = the Q8 tensor `words` (rows of ⌈k / bs⌉ blocks) dequantized.
pub fn q8_dequantize(words: &Tensor, out: &Tensor, rows: usize, k: usize, bs: usize) -> Result<()> {
    let numel = rows * k;
    let p = Params { m: numel as u32, k: k as u32, bs: bs as u32, ..Default::default() };
    let b = binds([None, None, None, Some(words), None, None, None, Some(out), None])?;
    exec::dispatch("q8_dequantize", Variant::F32, &b, &p, exec::grid_1d(numel))
}
