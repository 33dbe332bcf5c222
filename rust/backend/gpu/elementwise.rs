//! Launchers for shaders/elementwise.wgsl: unary, binary, compare, where,
//! casts and fill over strided, broadcast views.

use super::context;
use super::exec::{self, Variant};
use super::shaders::ELEMENTWISE;
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::Layout;
use crate::tensor::{DType, Scalar, Tensor};

/// Element kind of a dtype on the GPU: 0 float32, 1 int32 (int32 and int64),
/// 2 bool, 3 uint8 (one 4-byte word each), HALF float16 (two bytes, the
/// float16 kernels' `T`; adapters without shader-f16 refuse it).
pub fn kind(dtype: DType) -> Result<u32> {
    Ok(match dtype {
        DType::F32 => 0,
        DType::I32 | DType::I64 => 1,
        DType::Bool => 2,
        DType::U8 => 3,
        DType::F16 => {
            let ctx = context::get()?;
            if !ctx.has_f16() {
                bail!(Type, "float16 tensors on the GPU need the shader-f16 feature, which {} lacks; use float32", ctx.info.name);
            }
            HALF
        }
        DType::F64 => bail!(Type, "float64 is not supported on the GPU (WGSL has no 64-bit floats); convert to float32 first"),
        DType::BF16 => bail!(NotImplemented, "bfloat16 tensors on the GPU are not supported (WGSL has no bfloat16); use float16 or float32"),
    })
}

pub const HALF: u32 = 4;

/// Bytes per element of `dtype` on the GPU.
pub fn elem_bytes(dtype: DType) -> Result<usize> {
    Ok(if kind(dtype)? == HALF { 2 } else { 4 })
}

/// A scalar as a 4-byte word in the GPU representation of `dtype` (float32
/// bits for float16: kernels compute in float32).
pub fn word(s: Scalar, dtype: DType) -> Result<u32> {
    Ok(match kind(dtype)? {
        0 | HALF => (s.to_f64() as f32).to_bits(),
        1 => {
            let v = s.to_i64();
            if i32::try_from(v).is_err() {
                bail!(Runtime, "value {} does not fit in the GPU's 32-bit integers", v);
            }
            v as i32 as u32
        }
        2 => (s.to_f64() != 0.0) as u32,
        _ => (s.to_i64() as u8) as u32,
    })
}

/// An operand of an elementwise kernel: a tensor view or a scalar word.
pub enum Arg<'a> {
    T(&'a Tensor),
    S(u32),
}

const MAX_DIMS: usize = 8;

/// Dispatches `entry` writing `out` from up to three operands (a, b, c).
/// `s` are extra scalar words (s0, s1) for ops that take arguments; scalar
/// operands a and b use the same slots.
pub fn launch(entry: &'static str, op: u32, out: &Tensor, args: [Option<Arg>; 3], extra: [u32; 3]) -> Result<()> {
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    if n > u32::MAX as usize / 2 {
        bail!(NotImplemented, "GPU elementwise ops on more than 2^31 elements are not supported yet");
    }
    let shape = out.shape();
    let mut strides: [Vec<isize>; 4] = Default::default();
    let mut offs = [out.layout().offset as u32, 0, 0, 0];
    let dummy = exec::dummy()?;
    let mut bufs: Vec<&wgpu::Buffer> = vec![dummy, dummy, dummy, out.storage().gpu_buffer()?];
    let mut flags = 0u32;
    let mut s = [extra[0], extra[1]];
    // Float operands of one dispatch share T: float16 kernels when any is float16.
    let mut variant = Variant::of(out.dtype());
    strides[0] = out.strides().to_vec();
    for (k, arg) in args.iter().enumerate() {
        match arg {
            Some(Arg::T(t)) => {
                if t.device() != out.device() {
                    bail!(Runtime, "internal error: operand on {} for a GPU kernel", t.device().name());
                }
                strides[k + 1] = t.layout().broadcast_strides(shape)?.to_vec();
                offs[k + 1] = t.layout().offset as u32;
                bufs[k] = t.storage().gpu_buffer()?;
                if t.dtype() == DType::F16 {
                    variant = Variant::F16;
                }
            }
            Some(Arg::S(w)) => {
                strides[k + 1] = vec![0; shape.len()];
                s[k] = *w;
                flags |= 2 << k;
            }
            None => strides[k + 1] = vec![0; shape.len()],
        }
    }
    let (cshape, cstrides) = Layout::coalesce(shape, [&strides[0], &strides[1], &strides[2], &strides[3]]);
    if cshape.len() > MAX_DIMS {
        bail!(NotImplemented, "GPU elementwise ops over views with more than {} non-mergeable dims are not supported yet", MAX_DIMS);
    }
    // One dense run when every tensor operand walks the output with stride 1.
    let is_tensor = |k: usize| k == 0 || matches!(args[k - 1], Some(Arg::T(_)));
    let contiguous = cshape.len() <= 1 && (0..4).all(|k| !is_tensor(k) || cstrides[k].first().is_none_or(|&st| st == 1));
    if contiguous {
        flags |= 1;
    }
    let mut p: Vec<u32> = vec![n as u32, cshape.len() as u32, op, flags, s[0], s[1], extra[2], 0];
    p.extend((0..MAX_DIMS).map(|d| cshape.get(d).copied().unwrap_or(1) as u32));
    p.extend_from_slice(&offs);
    for st in &cstrides {
        p.extend((0..MAX_DIMS).map(|d| st.get(d).copied().unwrap_or(0) as i32 as u32));
    }
    exec::dispatch(&ELEMENTWISE, entry, variant, &bufs, &p, exec::grid_1d(n))
}

/// dst (any GPU view) = src broadcast and cast to dst's dtype.
pub fn copy(dst: &Tensor, src: &Tensor) -> Result<()> {
    let (from, to) = (kind(src.dtype())?, kind(dst.dtype())?);
    let (entry, op) = match (from == HALF, to == HALF) {
        (false, false) => ("copy", from | (to << 4)),
        (true, true) => ("copy_t", 0),
        (true, false) => ("cast_from_t", to),
        (false, true) => ("cast_to_t", from),
    };
    launch(entry, op, dst, [Some(Arg::T(src)), None, None], [0; 3])
}

pub fn fill(dst: &Tensor, value: Scalar) -> Result<()> {
    let entry = if dst.dtype() == DType::F16 { "fill_t" } else { "fill" };
    launch(entry, 0, dst, [None, None, None], [word(value, dst.dtype())?, 0, 0])
}
