//! Launchers for shaders/elementwise.wgsl: unary, binary, compare, where,
//! casts and fill over strided, broadcast views, with the same dtype rules as
//! the CPU (ops/elementwise/).

use super::codes::flag;
use super::dtype::{elem_bytes, kind, word, Kind};
use super::exec::{self, Variant};
use super::params::ShaderParams;
use super::shaders::ELEMENTWISE;
use crate::bail;
use crate::error::Result;
use crate::ops::copy::to_dtype;
use crate::ops::elementwise::{binary_checks, Binary, Unary};
use crate::ops::{gpu_operand, gpu_tensor, result_type, Operand};
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::layout::Layout;
use crate::tensor::{DType, Device, Scalar, Tensor};

/// An operand of an elementwise kernel: a tensor view or a scalar word.
pub enum Arg<'a> {
    T(&'a Tensor),
    S(u32),
}

const MAX_DIMS: usize = 8;

crate::wgsl_flags! {
    /// Bits of `Params::flags`.
    pub struct ElemFlags = "ELEM" {
        /// Every operand walks the output with stride 1.
        CONTIGUOUS = 1,
        /// a is the scalar s0.
        A_SCALAR = 2,
        /// b is the scalar s1.
        B_SCALAR = 4,
    }
}

crate::wgsl_params! {
    /// n elements, ndim, op code, `ElemFlags`, two scalar words (bit patterns of
    /// the operands' type), alpha (its bits; add/sub), the output shape, then
    /// offset and strides (elements) of o, a, b, c.
    pub struct Params in ELEMENTWISE {
        n: u32, ndim: u32, op: u32, flags: u32,
        s0: u32, s1: u32, alpha: u32, pad: u32,
        shape: [u32; MAX_DIMS],
        o_off: u32, a_off: u32, b_off: u32, c_off: u32,
        o_st: [i32; MAX_DIMS],
        a_st: [i32; MAX_DIMS],
        b_st: [i32; MAX_DIMS],
        c_st: [i32; MAX_DIMS],
    }
}
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
    launch_in::<Params>(entry, op, out, args, extra)
}

/// `launch` for an entry of a shader whose params have elementwise's layout
/// (`P`): shaders/bf16.wgsl, whose kernels alone read packed bfloat16.
pub fn launch_in<P: ShaderParams + From<Params>>(
    entry: &'static str,
    op: u32,
    out: &Tensor,
    args: [Option<Arg>; 3],
    extra: [u32; 3],
) -> Result<()> {
    let packed = P::SHADER.name == super::shaders::BF16.name;
    fn words(t: &Tensor, packed: bool) -> Result<&wgpu::Buffer> {
        if packed {
            t.storage().gpu_packed_buffer()
        } else {
            t.storage().gpu_buffer()
        }
    }
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    let shape = out.shape();
    let mut strides: [Vec<isize>; 4] = Default::default();
    let mut offs = [out.layout().offset as isize, 0, 0, 0];
    // Operands in (o, a, b, c) order; o binds at 3, a, b, c at 0, 1, 2.
    let dummy = exec::dummy()?;
    let mut bufs: [&wgpu::Buffer; 4] = [words(out, packed)?, dummy, dummy, dummy];
    let mut elem = [elem_bytes(out.dtype())?, 0, 0, 0];
    let mut flags = 0u32;
    let mut s = [extra[0], extra[1]];
    // Float operands of one dispatch share T: float16 kernels when any is float16.
    let mut variant = if packed { Variant::F32 } else { Variant::of(out.dtype()) };
    strides[0] = out.strides().to_vec();
    for (k, arg) in args.iter().enumerate() {
        match arg {
            Some(Arg::T(t)) => {
                if t.device() != out.device() {
                    // The ops check devices first (ops::gpu_tensor / gpu_operand);
                    // this is the last guard, with PyTorch's error all the same.
                    return Err(crate::ops::device_mismatch(entry, out.device(), t.device()));
                }
                strides[k + 1] = t.layout().broadcast_strides(shape)?.to_vec();
                offs[k + 1] = t.layout().offset as isize;
                bufs[k + 1] = words(t, packed)?;
                elem[k + 1] = elem_bytes(t.dtype())?;
                if t.dtype() == DType::F16 && !packed {
                    variant = Variant::F16;
                }
            }
            Some(Arg::S(w)) => {
                strides[k + 1] = vec![0; shape.len()];
                s[k] = *w;
                flags |= [ElemFlags::A_SCALAR, ElemFlags::B_SCALAR][k];
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
        let dims = |v: &[isize]| std::array::from_fn(|d| v.get(d).map_or(0, |&x| x as i32));
        let p = Params {
            n: count as u32,
            ndim: shape.len() as u32,
            op,
            flags: flags | flag(contiguous, ElemFlags::CONTIGUOUS),
            s0: s[0],
            s1: s[1],
            alpha: extra[2],
            pad: 0,
            shape: std::array::from_fn(|d| shape.get(d).map_or(1, |&x| x as u32)),
            o_off: rel[0],
            a_off: rel[1],
            b_off: rel[2],
            c_off: rel[3],
            o_st: dims(&strides[0]),
            a_st: dims(&strides[1]),
            b_st: dims(&strides[2]),
            c_st: dims(&strides[3]),
        };
        exec::dispatch_binds(entry, variant, &binds, &P::from(p), exec::grid_1d(count))?;
    }
    Ok(())
}

/// dst (any GPU view) = src broadcast and cast to dst's dtype.
pub fn copy(dst: &Tensor, src: &Tensor) -> Result<()> {
    let (from, to) = (kind(src.dtype())?, kind(dst.dtype())?);
    if from == Kind::Bf16 || to == Kind::Bf16 {
        return super::bf16::copy(dst, src);
    }
    let (entry, op) = match (from == Kind::Half, to == Kind::Half) {
        (false, false) => ("copy", from as u32 | ((to as u32) << 4)),
        (true, true) => ("copy_t", 0),
        (true, false) => ("cast_from_t", to as u32),
        (false, true) => ("cast_to_t", from as u32),
    };
    launch(entry, op, dst, [Some(Arg::T(src)), None, None], [0; 3])
}

pub fn fill(dst: &Tensor, value: Scalar) -> Result<()> {
    if dst.dtype() == DType::BF16 {
        return super::bf16::fill(dst, value);
    }
    let entry = if dst.dtype() == DType::F16 { "fill_t" } else { "fill" };
    launch(entry, 0, dst, [None, None, None], [word(value, dst.dtype())?, 0, 0])
}

pub fn gpu_unary(op: Unary, a: &Tensor) -> Result<Tensor> {
    let out_dtype = op.out_dtype(a.dtype())?;
    let code = op.code() as u32;
    // Arguments of the parameterized ops (kernel words s0, s1).
    let (s0, s1) = match op {
        Unary::LeakyRelu(a) | Unary::Elu(a) => (a as f32, 0.0),
        Unary::Softplus(beta, threshold) => (beta as f32, threshold as f32),
        Unary::Polygamma(n) => (n as f32, 0.0),
        Unary::SmoothL1(e) | Unary::Huber(e) => (e as f32, 0.0),
        _ => (0.0f32, 0.0f32),
    };
    // Float kernels read float16 as is (their float16 variant), anything else as float32.
    let float_in = |t: &Tensor| to_dtype(t, t.dtype().gpu_compute());
    if out_dtype == DType::Bool {
        // isnan/isinf/isfinite/logical_not read any input as a float.
        let x = float_in(a)?;
        let out = Tensor::empty_on(a.shape(), DType::Bool, Device::active_gpu())?;
        launch("classify", code, &out, [Some(Arg::T(&x)), None, None], [0; 3])?;
        return Ok(out);
    }
    if !out_dtype.is_float() {
        // Integer ops run on int32 words (bool and uint8 via int32, then cast back).
        let x = to_dtype(a, DType::I64)?;
        let out = Tensor::empty_on(a.shape(), DType::I64, Device::active_gpu())?;
        launch("unary_i32", code, &out, [Some(Arg::T(&x)), None, None], [0; 3])?;
        return to_dtype(&out, out_dtype);
    }
    if out_dtype == a.dtype() && matches!(out_dtype, DType::F32 | DType::F16) {
        if let Some(out) = super::fusion::unary(code, [s0, s1], a)? {
            return Ok(out);
        }
    }
    let x = float_in(a)?;
    let out = Tensor::empty_on(a.shape(), x.dtype(), Device::active_gpu())?;
    launch("unary", code, &out, [Some(Arg::T(&x)), None, None], [s0.to_bits(), s1.to_bits(), 0])?;
    to_dtype(&out, out_dtype)
}

/// A GPU kernel operand in `compute`'s representation.
enum GOperand {
    T(Tensor),
    S(u32),
}

impl GOperand {
    fn new(o: &Operand, compute: DType) -> Result<GOperand> {
        Ok(match o {
            Operand::T(t) => GOperand::T(to_dtype(t, compute)?),
            Operand::S(s) => GOperand::S(word(*s, compute)?),
        })
    }
    fn arg(&self) -> Arg<'_> {
        match self {
            GOperand::T(t) => Arg::T(t),
            GOperand::S(w) => Arg::S(*w),
        }
    }
}

pub fn gpu_binary(op: Binary, a: &Operand, b: &Operand, alpha: Option<f64>) -> Result<Tensor> {
    let dev = crate::ops::gpu_device(op.name(), &[a, b])?;
    let (a, b) = (gpu_operand(op.name(), dev, a)?, gpu_operand(op.name(), dev, b)?);
    let common = result_type(&[&a, &b]);
    let (compute, out_dtype) = op.dtypes(common)?;
    binary_checks(op, &b, alpha, common, compute)?;
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    // Float ops run in float16 kernels on float16 operands, else in float32;
    // bool and uint8 arithmetic runs on int32 words (the cast back saturates
    // or wraps as PyTorch does).
    let kcompute = if compute.is_float() { common.gpu_compute() } else { DType::I64 };
    let (ga, gb) = (GOperand::new(&a, kcompute)?, GOperand::new(&b, kcompute)?);
    let float = kcompute.is_float();
    let alpha_word = match alpha {
        None => {
            if float {
                1f32.to_bits()
            } else {
                1
            }
        }
        Some(al) => {
            if float {
                (al as f32).to_bits()
            } else {
                al as i64 as i32 as u32
            }
        }
    };
    let (entry, kout) = match (op.is_compare(), float) {
        (true, true) => ("compare", DType::Bool),
        (true, false) => ("compare_i32", DType::Bool),
        (false, true) => ("binary", kcompute),
        (false, false) => ("binary_i32", DType::I64),
    };
    if !float && op == Binary::Atan2 {
        bail!(Runtime, "\"atan2\" not implemented for '{}'", compute.name());
    }
    if entry == "binary" && kcompute == out_dtype && matches!(kcompute, DType::F32 | DType::F16) {
        fn fin(g: &GOperand) -> super::fusion::In<'_> {
            match g {
                GOperand::T(t) => super::fusion::In::T(t),
                GOperand::S(w) => super::fusion::In::S(f32::from_bits(*w)),
            }
        }
        let alpha = f32::from_bits(alpha_word);
        let (a, b) = (fin(&ga), fin(&gb));
        if let Some(out) = super::fusion::binary(op as u32, alpha, a, b, &shape, kcompute)? {
            return Ok(out);
        }
    }
    let out = Tensor::empty_on(&shape, kout, Device::active_gpu())?;
    launch(entry, op as u32, &out, [Some(ga.arg()), Some(gb.arg()), None], [0, 0, alpha_word])?;
    to_dtype(&out, out_dtype)
}

pub fn gpu_where(
    cond: &Tensor,
    x: &Operand,
    y: &Operand,
    dtype: DType,
    shape: &[usize],
) -> Result<Tensor> {
    if dtype == DType::BF16 {
        // Selected in float32, then rounded to bfloat16 (no bfloat16 where kernel).
        return to_dtype(&gpu_where(cond, x, y, DType::F32, shape)?, dtype);
    }
    let dev = crate::ops::gpu_device("where", &[&Operand::T(cond.clone()), x, y])?;
    let cond = &gpu_tensor("where", dev, cond)?;
    let (x, y) = (gpu_operand("where", dev, x)?, gpu_operand("where", dev, y)?);
    let (gx, gy) = (GOperand::new(&x, dtype)?, GOperand::new(&y, dtype)?);
    let out = Tensor::empty_on(shape, dtype, Device::active_gpu())?;
    let entry = if dtype == DType::F16 { "where_t" } else { "where_" };
    launch(entry, 0, &out, [Some(gx.arg()), Some(gy.arg()), Some(Arg::T(cond))], [0; 3])?;
    Ok(out)
}
