//! The GPU product: GEMM over strided operands in the variant the autotuner
//! picks (backend/gpu/autotune.rs), with an optional fused epilogue.

use super::super::copy::to_dtype;
use super::super::shape::reshape;
use crate::backend::gpu::autotune::{self, Choice, Problem};
use crate::backend::gpu::exec::Variant;
use crate::backend::gpu::matmul::{gemm, vec4_ok, Act, Epilogue, Mat};
use crate::backend::gpu::matmul_bf16;
use crate::error::Result;
use crate::tensor::layout::{contiguous_strides, Layout};
use crate::tensor::{DType, Device, Tensor};

/// A fused epilogue at tensor level: `bias` (one value per output column)
/// and `residual` (contiguous, shaped like the output), both in the
/// product's compute dtype.
#[derive(Default)]
pub struct GpuEpilogue {
    pub bias: Option<Tensor>,
    pub act: Act,
    pub residual: Option<Tensor>,
}

/// The GPU product: float16 in its own kernel variant, bfloat16 read packed
/// by its own GEMM (float32 out, no epilogue: `fused::fuses` excludes it),
/// everything else in float32 (integer and bfloat16 products are cast back). Batch dims that cannot be
/// walked with one stride become one dispatch per leading index.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gpu_batched(
    a: &Tensor,
    b: &Tensor,
    batch: &[usize],
    n: usize,
    k: usize,
    p: usize,
    out_shape: &[usize],
    epi: Option<&GpuEpilogue>,
) -> Result<Tensor> {
    let dtype = a.dtype();
    if batch.iter().product::<usize>() * n * p == 0 {
        // Nothing to compute (and no batch index to walk).
        return Tensor::empty_on(out_shape, dtype, Device::active_gpu());
    }
    let compute = dtype.gpu_compute();
    let variant = Variant::of(compute);
    // bfloat16 operands stay packed: their GEMM widens them as it loads.
    let packed = dtype == DType::BF16;
    let held = if packed { dtype } else { compute };
    let operand = |t: &Tensor| -> Result<Tensor> {
        let t = to_dtype(t, held)?;
        // The kernel walks non-negative strides only (flipped views are copied).
        if t.strides().iter().any(|&s| s < 0) {
            return super::super::copy::clone_as(&t, held);
        }
        Ok(t)
    };
    let (ca, cb) = (operand(a)?, operand(b)?);
    let mut bshape: Vec<i64> = batch.iter().map(|&d| d as i64).collect();
    bshape.extend_from_slice(&[-1, -1]);
    let (la, lb) = (ca.layout().expand(&bshape)?, cb.layout().expand(&bshape)?);
    let nb = batch.len();
    let ob = contiguous_strides(batch);
    let (cshape, [sa, sb, so]) =
        Layout::coalesce(batch, [&la.strides[..nb], &lb.strides[..nb], &ob[..]]);
    let (ba, bb) = (ca.storage().gpu_packed_buffer()?, cb.storage().gpu_packed_buffer()?);
    let last = cshape.len().saturating_sub(1);
    let inner = cshape.get(last).copied().unwrap_or(1);
    let stride = |s: &[isize]| s.get(last).copied().unwrap_or(0);
    let outer: usize = cshape[..last.min(cshape.len())].iter().product();
    fn tensor_buf(t: &Option<Tensor>) -> Result<Option<(&wgpu::Buffer, usize)>> {
        Ok(match t {
            Some(t) => Some((t.storage().gpu_buffer()?, t.layout().offset)),
            None => None,
        })
    }
    let empty = GpuEpilogue::default();
    let epi = epi.unwrap_or(&empty);
    let (bias, residual) = (tensor_buf(&epi.bias)?, tensor_buf(&epi.residual)?);
    // The operands of the dispatch for outer index i, and its output offset.
    let mats = |i: usize| {
        let (mut rem, mut oa, mut obb, mut oo) = (i, 0isize, 0isize, 0isize);
        for d in (0..last).rev() {
            let idx = (rem % cshape[d]) as isize;
            rem /= cshape[d];
            oa += idx * sa[d];
            obb += idx * sb[d];
            oo += idx * so[d];
        }
        let ma = Mat {
            buf: ba,
            off: (la.offset as isize + oa) as usize,
            bs: stride(&sa),
            rs: la.strides[nb],
            cs: la.strides[nb + 1],
        };
        let mb = Mat {
            buf: bb,
            off: (lb.offset as isize + obb) as usize,
            bs: stride(&sb),
            rs: lb.strides[nb],
            cs: lb.strides[nb + 1],
        };
        (ma, mb, oo as usize * n * p)
    };
    if packed {
        let out = Tensor::empty_on(out_shape, compute, Device::active_gpu())?;
        let ob = out.storage().gpu_buffer()?;
        if !matmul_bf16::fits_whole(ba, bb, ob)? {
            // Beyond the binding limit: the float32 GEMM, which binds windows.
            let (wa, wb) = (to_dtype(a, compute)?, to_dtype(b, compute)?);
            let wide = gpu_batched(&wa, &wb, batch, n, k, p, out_shape, None)?;
            return to_dtype(&wide, dtype);
        }
        for i in 0..outer {
            let (ma, mb, off) = mats(i);
            matmul_bf16::gemm(n, p, k, inner, ma, mb, ob, off)?;
        }
        return to_dtype(&out, dtype);
    }
    let (ma0, mb0, _) = mats(0);
    let epilogue = !(epi.bias.is_none() && epi.act == Act::None && epi.residual.is_none());
    let problem = Problem {
        m: n,
        n: p,
        k,
        batch: outer * inner,
        variant,
        a_kfast: ma0.row_fast(),
        b_nfast: mb0.row_fast(),
        vec4: vec4_ok(n, p, k, &ma0, &mb0, 0),
        epilogue,
        coop: autotune::coop_applies(variant)?,
    };
    let product = |c: Choice| -> Result<Tensor> {
        if c.split > 1 {
            // k in s slices: a batch of s products into scratch, then their
            // sum (Problem::allows: a lone float32 product, no epilogue).
            let (s, ks) = (c.split, (k / c.split) as isize);
            let ma = Mat {
                buf: ba,
                off: la.offset,
                bs: ks * la.strides[nb + 1],
                rs: la.strides[nb],
                cs: la.strides[nb + 1],
            };
            let mb = Mat {
                buf: bb,
                off: lb.offset,
                bs: ks * lb.strides[nb],
                rs: lb.strides[nb],
                cs: lb.strides[nb + 1],
            };
            let parts = Tensor::empty_on(&[s, n, p], compute, Device::active_gpu())?;
            let pb = parts.storage().gpu_buffer()?;
            gemm(n, p, k / s, s, ma, mb, pb, 0, variant, c, Epilogue::default())?;
            let sum = super::super::reduce::sum(&parts, Some(&[0]), false, None)?;
            return reshape(&sum, &out_shape.iter().map(|&d| d as i64).collect::<Vec<_>>());
        }
        let out = Tensor::empty_on(out_shape, compute, Device::active_gpu())?;
        let ob = out.storage().gpu_buffer()?;
        // The tensor-core kernels have no epilogue: theirs follows as elementwise
        // ops, which the fusion layer joins to whatever consumes the result.
        let separate = c.coop.is_some() && epilogue;
        for i in 0..outer {
            let (ma, mb, off) = mats(i);
            let e = if separate {
                Epilogue::default()
            } else {
                Epilogue { bias, act: epi.act, residual: residual.map(|(r, o)| (r, o + off)) }
            };
            gemm(n, p, k, inner, ma, mb, ob, off, variant, c, e)?;
        }
        if separate {
            return apply_epilogue(out, epi);
        }
        Ok(out)
    };
    // Tuning runs materialize each candidate's result, epilogue included.
    let choice = autotune::choose(&problem, |c| product(c)?.storage().gpu_buffer().map(drop))?;
    to_dtype(&product(choice)?, dtype)
}

/// act(y + bias) + residual with elementwise ops (bias over y's last dim).
fn apply_epilogue(y: Tensor, epi: &GpuEpilogue) -> Result<Tensor> {
    use crate::backend::gpu::elementwise::{gpu_binary, gpu_unary};
    use crate::ops::elementwise::Binary;
    use crate::ops::Operand;
    let add = |a: Tensor, b: &Tensor| {
        gpu_binary(Binary::Add, &Operand::T(a), &Operand::T(b.clone()), None)
    };
    let mut y = match &epi.bias {
        Some(b) => add(y, b)?,
        None => y,
    };
    if let Some(op) = super::fused::act_op(epi.act) {
        y = gpu_unary(op, &y)?;
    }
    match &epi.residual {
        Some(r) => add(y, r),
        None => Ok(y),
    }
}
