//! Convolutions on the GPU as implicit GEMMs (shaders/conv_igemm.wgsl), and
//! stride-1 ones on the CPU as per-tap GEMMs on padded images
//! (backend/cpu/conv_direct.rs): the forward, the input gradient and the
//! weight gradient are three recorded ops that gather their operands on the
//! fly, so no im2col columns (9× the input for a 3×3 kernel) are ever allocated. The three are bilinear and
//! each one's derivatives are the other two (plus itself), so every higher
//! derivative stays on these kernels. Tensors are 5-D (N, C, D, H, W).

use super::copy::contiguous;
use super::device_mismatch;
use super::reduce::sum;
use super::shape::narrow;
use crate::autograd::{self, Backward, Node, SavedTensor};
use crate::backend::cpu::conv::Geom;
use crate::backend::cpu::conv_cols as cols;
use crate::backend::cpu::conv_depthwise as depthwise;
use crate::backend::cpu::conv_direct as direct;
use crate::backend::cpu::conv_winograd as winograd;
use crate::backend::cpu::gemm::GemmElem;
use crate::backend::cpu::P;
use crate::backend::gpu::conv_igemm::{self as kernel, Pass};
use crate::backend::gpu::dtype::elem_bytes;
use crate::error::Result;
use crate::tensor::{DType, Element, Tensor};
use std::sync::Arc;

/// A convolution's shape: the window geometry (c = input channels), groups
/// and output channels.
#[derive(Clone, Debug)]
pub struct Conv {
    pub geom: Geom,
    pub groups: usize,
    pub oc: usize,
}

/// Whether the implicit-GEMM kernels run a convolution of `x` (float32 or
/// float16 on the GPU); the others go through im2col + GEMM.
pub fn applies(x: &Tensor) -> bool {
    x.is_gpu() && matches!(x.dtype(), DType::F32 | DType::F16)
}

/// Whether the CPU's kernels without whole-batch columns run this
/// convolution of `x` (float32 or float64): Winograd's for float32 3×3
/// layers, the direct ones, or per-chunk columns in cache.
pub fn applies_cpu(x: &Tensor, cv: &Conv) -> bool {
    let (g, groups) = (&cv.geom, cv.groups);
    !x.is_gpu()
        && match x.dtype() {
            DType::F32 => {
                winograd_applies(cv)
                    || direct::applies(g, groups)
                    || cols::applies(g, groups)
                    || depthwise::applies(g, groups, cv.oc)
            }
            DType::F64 => {
                direct::applies(g, groups)
                    || cols::applies(g, groups)
                    || depthwise::applies(g, groups, cv.oc)
            }
            _ => false,
        }
}

fn winograd_applies(cv: &Conv) -> bool {
    winograd::applies(&cv.geom, cv.groups, cv.oc)
}

/// One pass on the CPU's Winograd (float32 3×3), direct, per-chunk-column or
/// depthwise kernels into `out` (the pass's shape).
fn raw_cpu<
    T: GemmElem + Default + std::ops::Add<Output = T> + Send + Sync + Element + num_traits::Float,
>(
    pass: Pass,
    cv: &Conv,
    s0: &Tensor,
    s1: &Tensor,
    bias: Option<&Tensor>,
    out: &Tensor,
) -> Result<()> {
    let (g, oc) = (&cv.geom, cv.oc);
    let (a, b, o) = (P(s0.ptr::<T>()?), P(s1.ptr::<T>()?), P(out.ptr::<T>()?));
    let bias = bias.map(|t| t.ptr::<T>().map(P)).transpose()?;
    // SAFETY: contiguous operands of the pass's shapes (raw checked them), a fresh output.
    unsafe {
        if T::DTYPE == DType::F32 && winograd_applies(cv) {
            let f = |p: P<T>| P(p.0 as *mut f32);
            match pass {
                Pass::Forward => winograd::forward(g, oc, f(b), f(a), bias.map(f), f(o)),
                Pass::InputGrad => winograd::input_grad(g, oc, f(b), f(a), f(o)),
                Pass::WeightGrad => winograd::weight_grad(g, oc, f(b), f(a), f(o)),
            }
        } else if depthwise::applies(g, cv.groups, oc) {
            match pass {
                Pass::Forward => depthwise::forward(g, oc, b, a, bias, o),
                Pass::InputGrad => depthwise::input_grad(g, oc, b, a, o),
                Pass::WeightGrad => depthwise::weight_grad(g, oc, b, a, o),
            }
        } else if direct::applies(g, cv.groups) {
            match pass {
                Pass::Forward => direct::forward(g, oc, b, a, bias, o),
                Pass::InputGrad => direct::input_grad(g, oc, b, a, o),
                Pass::WeightGrad => direct::weight_grad(g, oc, b, a, o),
            }
        } else {
            match pass {
                Pass::Forward => cols::forward(g, oc, b, a, bias, o),
                Pass::InputGrad => cols::input_grad(g, oc, b, a, o),
                Pass::WeightGrad => cols::weight_grad(g, oc, b, a, o),
            }
        }
    }
    Ok(())
}

/// A device-mismatch error unless every tensor is on x's device.
pub fn check_devices(op: &str, x: &Tensor, others: &[Option<&Tensor>]) -> Result<()> {
    for t in others.iter().flatten() {
        if t.device() != x.device() {
            return Err(device_mismatch(op, x.device(), t.device()));
        }
    }
    Ok(())
}

/// The unrecorded pass: chunks of images small enough for one binding each.
fn raw(pass: Pass, cv: &Conv, s0: &Tensor, s1: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    let (s0, s1) = (contiguous(s0)?, contiguous(s1)?);
    let bias = bias.map(contiguous).transpose()?;
    let g = &cv.geom;
    let shape = match pass {
        Pass::Forward => [g.n, cv.oc, g.od, g.oh, g.ow],
        Pass::InputGrad => [g.n, g.c, g.d, g.h, g.w],
        Pass::WeightGrad => [cv.oc, g.c / cv.groups, g.kd, g.kh, g.kw],
    };
    let (dtype, dev) = (s1.dtype(), s1.device());
    if pass == Pass::WeightGrad && g.n == 0 {
        return crate::autograd::math::zeros(&shape, dtype, &s1);
    }
    let out = Tensor::empty_on(&shape, dtype, dev)?;
    if !s1.is_gpu() {
        match dtype {
            DType::F32 => raw_cpu::<f32>(pass, cv, &s0, &s1, bias.as_ref(), &out)?,
            _ => raw_cpu::<f64>(pass, cv, &s0, &s1, bias.as_ref(), &out)?,
        }
        return Ok(out);
    }
    let per = kernel::images_per_dispatch(pass, g, cv.groups, cv.oc, elem_bytes(dtype)?)?;
    for i in (0..g.n).step_by(per) {
        let len = per.min(g.n - i);
        let gi = Geom { n: len, ..g.clone() };
        let img = |t: &Tensor| narrow(t, 0, i as i64, len as i64);
        let (run, s1c) = (kernel::run, &img(&s1)?);
        match pass {
            Pass::Forward => {
                run(pass, &gi, cv.groups, cv.oc, &s0, s1c, bias.as_ref(), &img(&out)?, false)
            }
            Pass::InputGrad => run(pass, &gi, cv.groups, cv.oc, &s0, s1c, None, &img(&out)?, false),
            // dW sums over every image: later chunks add to the first's.
            Pass::WeightGrad => {
                run(pass, &gi, cv.groups, cv.oc, &img(&s0)?, s1c, None, &out, i > 0)
            }
        }?;
    }
    Ok(out)
}

/// y (N, OC, OD, OH, OW) = conv(x, w) + bias.
pub fn forward(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, cv: &Conv) -> Result<Tensor> {
    let mut inputs = vec![x, w];
    inputs.extend(bias);
    autograd::record(
        &inputs,
        || raw(Pass::Forward, cv, w, x, bias),
        |_| Ok(ConvBackward::new(Pass::Forward, cv, x, w, bias.is_some()).into()),
    )
}

/// dx (N, C, D, H, W) of a convolution from its output gradient dy.
pub fn input_grad(dy: &Tensor, w: &Tensor, cv: &Conv) -> Result<Tensor> {
    autograd::record(
        &[dy, w],
        || raw(Pass::InputGrad, cv, w, dy, None),
        |_| Ok(ConvBackward::new(Pass::InputGrad, cv, dy, w, false).into()),
    )
}

/// dW (OC, C/G, kd, kh, kw) of a convolution of x from its output gradient dy.
pub fn weight_grad(x: &Tensor, dy: &Tensor, cv: &Conv) -> Result<Tensor> {
    autograd::record(
        &[x, dy],
        || raw(Pass::WeightGrad, cv, dy, x, None),
        |_| Ok(ConvBackward::new(Pass::WeightGrad, cv, x, dy, false).into()),
    )
}

/// The backward of the three passes; `a`, `b` are the recorded inputs in order.
#[derive(Clone)]
pub struct ConvBackward {
    pass: Pass,
    cv: Conv,
    a: SavedTensor,
    b: SavedTensor,
    has_bias: bool,
}

impl ConvBackward {
    fn new(pass: Pass, cv: &Conv, a: &Tensor, b: &Tensor, has_bias: bool) -> ConvBackward {
        ConvBackward {
            pass,
            cv: cv.clone(),
            a: SavedTensor::input(a),
            b: SavedTensor::input(b),
            has_bias,
        }
    }
}

impl Backward for ConvBackward {
    fn name(&self) -> String {
        match self.pass {
            Pass::Forward => "ConvolutionBackward0",
            Pass::InputGrad => "ConvolutionInputGradBackward0",
            Pass::WeightGrad => "ConvolutionWeightGradBackward0",
        }
        .into()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let (a, b, g, cv) = (self.a.unpack(node)?, self.b.unpack(node)?, &grads[0], &self.cv);
        let need = |i: usize| node.needs_input_grad(i);
        // Each pass's adjoints, from <g, pass(a, b)> = <da, a> = <db, b>.
        Ok(match self.pass {
            Pass::Forward => {
                let mut v = vec![
                    need(0).then(|| input_grad(g, &b, cv)).transpose()?,
                    need(1).then(|| weight_grad(&a, g, cv)).transpose()?,
                ];
                if self.has_bias {
                    v.push(need(2).then(|| sum(g, Some(&[0, 2, 3, 4]), false, None)).transpose()?);
                }
                v
            }
            Pass::InputGrad => vec![
                need(0).then(|| forward(g, &b, None, cv)).transpose()?,
                need(1).then(|| weight_grad(g, &a, cv)).transpose()?,
            ],
            Pass::WeightGrad => vec![
                need(0).then(|| input_grad(&b, g, cv)).transpose()?,
                need(1).then(|| forward(&a, g, None, cv)).transpose()?,
            ],
        })
    }
}
