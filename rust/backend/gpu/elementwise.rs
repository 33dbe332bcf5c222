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
/// Output elements per dispatch: flat ids stay far from u32 overflow.
const MAX_CHUNK: usize = 1 << 30;

/// One sub-block of the output: shape, strides of (o, a, b, c), offsets.
type Block = (Vec<usize>, [Vec<isize>; 4], [isize; 4]);

/// Dispatches `entry` writing `out` from up to three operands (a, b, c).
/// `s` are extra scalar words (s0, s1) for ops that take arguments; scalar
/// operands a and b use the same slots.
pub fn launch(
    entry: &'static str,
    op: u32,
    out: &Tensor,
    args: [Option<Arg>; 3],
    extra: [u32; 3],
) -> Result<()> {
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    let shape = out.shape();
    let mut strides: [Vec<isize>; 4] = Default::default();
    let mut offs = [out.layout().offset as isize, 0, 0, 0];
    // Operands in (o, a, b, c) order; o binds at 3, a, b, c at 0, 1, 2.
    let dummy = exec::dummy()?;
    let mut bufs: [&wgpu::Buffer; 4] = [out.storage().gpu_buffer()?, dummy, dummy, dummy];
    let mut elem = [elem_bytes(out.dtype())?, 0, 0, 0];
    let mut flags = 0u32;
    let mut s = [extra[0], extra[1]];
    // Float operands of one dispatch share T: float16 kernels when any is float16.
    let mut variant = Variant::of(out.dtype());
    strides[0] = out.strides().to_vec();
    for (k, arg) in args.iter().enumerate() {
        match arg {
            Some(Arg::T(t)) => {
                if t.device() != out.device() {
                    bail!(
                        Runtime,
                        "internal error: operand on {} for a GPU kernel",
                        t.device().name()
                    );
                }
                strides[k + 1] = t.layout().broadcast_strides(shape)?.to_vec();
                offs[k + 1] = t.layout().offset as isize;
                bufs[k + 1] = t.storage().gpu_buffer()?;
                elem[k + 1] = elem_bytes(t.dtype())?;
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
    let (cshape, cstrides) =
        Layout::coalesce(shape, [&strides[0], &strides[1], &strides[2], &strides[3]]);
    if cshape.len() > MAX_DIMS {
        bail!(NotImplemented, "GPU elementwise ops over views with more than {} non-mergeable dims are not supported yet", MAX_DIMS);
    }
    let tensors: Vec<usize> = (0..4).filter(|&k| elem[k] > 0).collect();
    // Output blocks whose every operand window fits one binding: the whole
    // output unless a tensor is beyond the binding limit, else halves of the
    // outermost dim until they fit.
    let mut todo: Vec<Block> = vec![(cshape.to_vec(), cstrides.map(|st| st.to_vec()), offs)];
    while let Some((shape, strides, offs)) = todo.pop() {
        let count: usize = shape.iter().product();
        let mut range = [(0isize, 0isize); 4];
        let mut fits = count <= MAX_CHUNK;
        for &k in &tensors {
            let (mut lo, mut hi) = (offs[k], offs[k]);
            for (&size, &st) in shape.iter().zip(&strides[k]) {
                let e = st * (size as isize - 1);
                if e < 0 {
                    lo += e
                } else {
                    hi += e
                }
            }
            range[k] = (lo, hi);
            fits &= exec::fits(bufs[k], (hi - lo) as usize + 1, elem[k])?;
        }
        if !fits {
            let (mut first, mut rest) =
                ((shape.clone(), strides.clone(), offs), (shape, strides, offs));
            let half = first.0[0] / 2;
            if half == 0 {
                // A dim of one element: drop it.
                rest.0.remove(0);
                rest.1.iter_mut().for_each(|st| {
                    st.remove(0);
                });
                todo.push(rest);
            } else {
                first.0[0] = half;
                rest.0[0] -= half;
                for k in 0..4 {
                    rest.2[k] += half as isize * rest.1[k][0];
                }
                todo.extend([rest, first]);
            }
            continue;
        }
        let mut binds = [exec::Bind::whole(dummy); 4];
        let mut rel = [0u32; 4];
        for k in 0..4 {
            binds[(k + 3) % 4] = if elem[k] > 0 {
                let (b, base) =
                    exec::Bind::window(bufs[k], range[k].0 as usize, range[k].1 as usize, elem[k])?;
                rel[k] = (offs[k] - base as isize) as u32;
                b
            } else {
                exec::Bind::whole(bufs[k])
            };
        }
        // One dense run when every tensor operand walks the output with stride 1.
        let contiguous = shape.len() <= 1
            && tensors.iter().all(|&k| strides[k].first().is_none_or(|&st| st == 1));
        let mut p: Vec<u32> = vec![
            count as u32,
            shape.len() as u32,
            op,
            flags | contiguous as u32,
            s[0],
            s[1],
            extra[2],
            0,
        ];
        p.extend((0..MAX_DIMS).map(|d| shape.get(d).copied().unwrap_or(1) as u32));
        p.extend_from_slice(&rel);
        for st in &strides {
            p.extend((0..MAX_DIMS).map(|d| st.get(d).copied().unwrap_or(0) as i32 as u32));
        }
        exec::dispatch_binds(&ELEMENTWISE, entry, variant, &binds, &p, exec::grid_1d(count))?;
    }
    Ok(())
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
