//! Ops, one file per family: validate arguments, pick dtypes, dispatch to the
//! backend kernels. Backward rules join each family in the autograd issue.

pub mod attention;
pub mod batch_norm;
pub mod blas;
pub mod complex;
pub mod conv;
pub mod conv_igemm;
pub mod copy;
pub mod creation;
pub mod ctc;
pub mod einsum;
pub mod elementwise;
pub mod fft;
pub mod index;
pub mod linalg;
pub mod norm;
pub mod pad;
pub mod pointwise;
pub mod pool;
pub mod quant;
pub mod reduce;
pub mod repeat;
pub mod resample;
pub mod rnn;
pub mod rnn_gpu;
pub mod sample;
pub mod sampling;
pub mod scan;
pub mod shape;
pub mod softmax;
pub mod sort;
pub mod special_fns;
pub mod split;

use crate::error::Result;
use crate::tensor::dtype::ResultType;
use crate::tensor::{DType, Scalar, Tensor};

/// An argument that may be a tensor or a Python number.
#[derive(Clone)]
pub enum Operand {
    T(Tensor),
    S(Scalar),
}

impl Operand {
    pub fn add_to(&self, rt: &mut ResultType) {
        match self {
            Operand::T(t) => rt.tensor(t.dtype(), t.ndim()),
            Operand::S(s) => rt.scalar(*s),
        };
    }
    /// The operand as a tensor of `dtype` (scalars become 0-d tensors).
    pub fn tensor_as(&self, dtype: DType) -> Result<Tensor> {
        match self {
            Operand::T(t) => copy::to_dtype(t, dtype),
            Operand::S(s) => creation::scalar_tensor(*s, dtype),
        }
    }
    pub fn shape(&self) -> &[usize] {
        match self {
            Operand::T(t) => t.shape(),
            Operand::S(_) => &[],
        }
    }
}

/// PyTorch's result type of a list of operands.
pub fn result_type(ops: &[&Operand]) -> DType {
    let mut rt = ResultType::default();
    for o in ops {
        o.add_to(&mut rt);
    }
    rt.result()
}

/// The device all of `ts` are on; mixing devices is an error, as in PyTorch.
pub fn same_device(op: &str, ts: &[&Tensor]) -> Result<crate::tensor::Device> {
    let d = ts.first().map_or(crate::tensor::Device::Cpu, |t| t.device());
    if let Some(t) = ts.iter().find(|t| t.device() != d) {
        return Err(device_mismatch(op, d, t.device()));
    }
    Ok(d)
}

/// Whether any operand is a GPU tensor (the op then runs on the GPU).
pub fn on_gpu(ops: &[&Operand]) -> bool {
    ops.iter().any(|o| matches!(o, Operand::T(t) if t.is_gpu()))
}

/// PyTorch's device-mismatch error, naming the op and both devices.
pub fn device_mismatch(
    op: &str,
    a: crate::tensor::Device,
    b: crate::tensor::Device,
) -> crate::error::Error {
    crate::error::Error::Runtime(format!(
        "{}: Expected all tensors to be on the same device, but found at least two devices, {} and {}!",
        op,
        a.name(),
        b.name()
    ))
}

/// A tensor operand of an op running on `device`: tensors there stay; a 0-d
/// tensor elsewhere is copied over (PyTorch lets 0-d CPU tensors join GPU
/// ops, as `gpu_operand` does for numbers); any other is a device mismatch.
pub fn tensor_on(op: &str, device: crate::tensor::Device, t: &Tensor) -> Result<Tensor> {
    if t.device() == device {
        return Ok(t.clone());
    }
    if t.ndim() != 0 {
        return Err(device_mismatch(op, device, t.device()));
    }
    copy::transfer(t, device)
}

/// The GPU an op on `ops` runs on (made the active one): the device of its
/// GPU tensors, which must all be the same.
pub fn gpu_device(op: &str, ops: &[&Operand]) -> Result<crate::tensor::Device> {
    let mut dev = None;
    for o in ops {
        if let Operand::T(t) = o {
            let d = t.device();
            match dev {
                _ if !d.is_gpu() => {}
                None => dev = Some(d),
                Some(first) if first != d => return Err(device_mismatch(op, first, d)),
                Some(_) => {}
            }
        }
    }
    let dev = dev.unwrap_or_else(crate::tensor::Device::active_gpu);
    if let Some(i) = dev.gpu_index() {
        crate::backend::gpu::context::activate(i);
    }
    Ok(dev)
}

/// A tensor operand of a GPU kernel on `device` (`tensor_on` it).
pub fn gpu_tensor(op: &str, device: crate::tensor::Device, t: &Tensor) -> Result<Tensor> {
    tensor_on(op, device, t)
}

/// An operand of a GPU op on `device`: its tensors stay; 0-d CPU tensors act
/// as numbers, as PyTorch allows; any other tensor is a device mismatch.
pub fn gpu_operand(op: &str, device: crate::tensor::Device, o: &Operand) -> Result<Operand> {
    match o {
        Operand::T(t) if t.device() != device => {
            if t.ndim() != 0 || t.is_gpu() {
                return Err(device_mismatch(op, device, t.device()));
            }
            Ok(Operand::S(copy::item(t)?))
        }
        _ => Ok(o.clone()),
    }
}
