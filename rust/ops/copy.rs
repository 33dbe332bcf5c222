//! Copies and casts: contiguous(), to(dtype), copy_(src) with broadcasting.

use crate::autograd::{self, Backward, Node};
use crate::backend::cpu::elementwise::map1;
use crate::backend::cpu::P;
use crate::bail;
use crate::dispatch_all;
use crate::error::Result;
use crate::tensor::layout::fmt_shape;
use crate::tensor::{DType, Device, Element, Tensor};

/// Writes `src` (broadcast to dst's shape, cast to dst's dtype) into `dst`'s elements.
/// Does not bump the version: callers that implement user-visible in-place ops do.
pub fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    if dst.device() != src.device() {
        // Across devices (copy_, setitem): move src over first, cast on the
        // host side (the GPU has no float64 to receive it).
        let s = if dst.is_gpu() && src.dtype() != dst.dtype() {
            clone_as(src, dst.dtype())?
        } else {
            src.clone()
        };
        return copy_into(dst, &transfer(&s, dst.device())?);
    }
    let src_strides = src.layout().broadcast_strides(dst.shape()).map_err(|_| {
        crate::error::Error::Runtime(format!(
            "output with shape {} doesn't match the broadcast shape {}",
            fmt_shape(dst.shape()),
            fmt_shape(src.shape())
        ))
    })?;
    if dst.numel() == 0 {
        return Ok(());
    }
    if dst.dtype().is_complex() || src.dtype().is_complex() {
        return crate::ops::complex::copy_into_complex(dst, src);
    }
    if dst.is_gpu() {
        return crate::backend::gpu::elementwise::copy(dst, src);
    }
    // A transposed source (stride 1 on an inner dim that is not the last) into a
    // contiguous destination: tiled, instead of a strided read per element.
    let unit = crate::backend::cpu::strided::transposed_unit(dst.shape(), &src_strides);
    if let (Some(a), true, true) = (unit, src.dtype() == dst.dtype(), dst.is_contiguous()) {
        dispatch_all!(dst.dtype(), T => {
            // SAFETY: src's layout lies within its storage; dst is contiguous with the same shape.
            unsafe { crate::backend::cpu::strided::transpose_copy::<T>(dst.shape(), &src_strides, a, P(src.ptr::<T>()?), P(dst.ptr::<T>()?)) };
        });
        return Ok(());
    }
    if crate::backend::cpu::halfcast::cast(dst, src, &src_strides)? {
        return Ok(());
    }
    if src.dtype() == dst.dtype() {
        // A plain move: the cast below goes through float64 (in software for the half types).
        dispatch_all!(dst.dtype(), T => {
            let (pd, ps) = (P(dst.ptr::<T>()?), P(src.ptr::<T>()?));
            // SAFETY: as below.
            unsafe { map1(dst.shape(), (pd, dst.strides()), (ps, &src_strides[..]), |x: T| x) };
        });
        return Ok(());
    }
    dispatch_all!(dst.dtype(), D => dispatch_all!(src.dtype(), S => {
        let (pd, ps) = (P(dst.ptr::<D>()?), P(src.ptr::<S>()?));
        // SAFETY: both layouts lie within their storages; dst is written element-for-element.
        unsafe { map1(dst.shape(), (pd, dst.strides()), (ps, &src_strides[..]), |x: S| x.cast::<D>()) };
    }));
    Ok(())
}

/// A contiguous tensor with the same values: `t` itself when already contiguous.
pub fn contiguous(t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() {
        return Ok(t.clone());
    }
    clone(t)
}

/// Tensor.clone(): a fresh contiguous copy, recorded (the gradient passes through).
pub fn clone(t: &Tensor) -> Result<Tensor> {
    autograd::record(
        &[t],
        || clone_as(t, t.dtype()),
        |_| Ok(CastBackward { from: t.dtype(), name: "CloneBackward0" }.into()),
    )
}

/// `value` (same shape and dtype as `t`, e.g. an unpacked saved tensor)
/// standing for `t` in the graph: its gradient flows to `t` unchanged.
pub fn alias_of(t: &Tensor, value: &Tensor) -> Result<Tensor> {
    autograd::record(
        &[t],
        || Ok(value.detach_nonview()),
        |_| Ok(CastBackward { from: t.dtype(), name: "AliasBackward0" }.into()),
    )
}

/// A contiguous copy that is never recorded (gradient buffers).
pub fn contiguous_clone(t: &Tensor) -> Result<Tensor> {
    clone_as(t, t.dtype())
}

/// A fresh contiguous copy with the given dtype.
pub fn clone_as(t: &Tensor, dtype: DType) -> Result<Tensor> {
    if t.is_gpu() && t.dtype() != dtype && [t.dtype(), dtype].iter().all(|d| d.is_float()) {
        // float32 <-> float16 casts join the GPU's pending elementwise chains.
        if let Some(out) = crate::backend::gpu::fusion::cast(t, dtype)? {
            return Ok(out);
        }
    }
    let out = Tensor::empty_on(t.shape(), dtype, t.device())?;
    copy_into(&out, t)?;
    Ok(out)
}

/// `t.to(dtype)`: `t` itself when the dtype already matches.
pub fn to_dtype(t: &Tensor, dtype: DType) -> Result<Tensor> {
    if t.dtype() == dtype {
        return Ok(t.clone());
    }
    autograd::record(
        &[t],
        || clone_as(t, dtype),
        |_| Ok(CastBackward { from: t.dtype(), name: "ToCopyBackward0" }.into()),
    )
}

/// `t.copy_(src)`: user-facing in-place copy.
pub fn copy_(dst: &Tensor, src: &Tensor) -> Result<()> {
    // The old values get a zero gradient through where(all, src, old).
    autograd::inplace(
        dst,
        &[src],
        "copy_",
        || copy_raw_(dst, src),
        |old| {
            let all = crate::ops::creation::full_on(
                dst.shape(),
                crate::tensor::Scalar::Bool(true),
                DType::Bool,
                dst.device(),
            )?;
            let e = to_dtype(src, dst.dtype())?;
            crate::ops::elementwise::where_(
                &all,
                &crate::ops::Operand::T(e),
                &crate::ops::Operand::T(old.clone()),
            )
        },
    )
}

fn copy_raw_(dst: &Tensor, src: &Tensor) -> Result<()> {
    dst.check_writable("copy_")?;
    if dst.same_tensor(src) && dst.dtype() == src.dtype() {
        // x.copy_(x) moves nothing (and a GPU dispatch may not read and write one buffer).
    } else if !dst.storage().is_empty()
        && crate::tensor::storage::Storage::same_memory(dst.storage(), src.storage())
        && !dst.same_tensor(src)
    {
        // Overlapping views would read already-written elements: go through a copy.
        let tmp = clone_as(src, src.dtype())?;
        copy_into(dst, &tmp)?;
    } else {
        copy_into(dst, src)?;
    }
    dst.storage().bump_version();
    Ok(())
}

/// Reads element `[0, 0, ...]` of a one-element tensor as f64/i64/bool.
pub fn item(t: &Tensor) -> Result<crate::tensor::Scalar> {
    use crate::tensor::Scalar;
    if t.numel() != 1 {
        bail!(Runtime, "a Tensor with {} elements cannot be converted to Scalar", t.numel());
    }
    if t.is_gpu() {
        return item(&transfer(t, Device::Cpu)?);
    }
    Ok(dispatch_all!(t.dtype(), T => {
        // SAFETY: the tensor has one element at its offset.
        let v: T = unsafe { *t.ptr::<T>()? };
        match T::DTYPE {
            DType::Bool => Scalar::Bool(v.to_i64() != 0),
            d if d.is_float() => Scalar::Float(v.to_f64()),
            _ => Scalar::Int(v.to_i64()),
        }
    }))
}

/// Fills every element of `t` with `value` (fill_, zero_).
pub fn fill_(t: &Tensor, value: crate::tensor::Scalar) -> Result<()> {
    autograd::overwrite(t, "fill_", || fill_raw(t, value))
}

fn fill_raw(t: &Tensor, value: crate::tensor::Scalar) -> Result<()> {
    t.check_writable("fill_")?;
    if t.dtype().is_complex() {
        crate::ops::complex::fill_real(t, value)?;
        t.storage().bump_version();
        return Ok(());
    }
    if t.is_gpu() {
        crate::backend::gpu::elementwise::fill(t, value)?;
        t.storage().bump_version();
        return Ok(());
    }
    dispatch_all!(t.dtype(), T => {
        let v: T = value.cast::<T>();
        let p = P(t.ptr::<T>()?);
        // SAFETY: the layout lies within the storage.
        unsafe { map1(t.shape(), (p, t.strides()), (p, t.strides()), move |_: T| v) };
    });
    t.storage().bump_version();
    Ok(())
}

/// `t.to(device)`: a copy on `device` (`t` itself when already there); the
/// gradient goes back to t's device.
pub fn to_device(t: &Tensor, device: Device) -> Result<Tensor> {
    if t.device() == device {
        return Ok(t.clone());
    }
    let from = t.device();
    autograd::record(&[t], || transfer(t, device), |_| Ok(ToDeviceBackward { from }.into()))
}

/// A contiguous copy of `t` on `device`, never recorded.
pub fn transfer(t: &Tensor, device: Device) -> Result<Tensor> {
    use crate::backend::gpu::transfer;
    if t.device() == device {
        return clone_as(t, t.dtype());
    }
    // Views are packed on their own device first: only their elements cross.
    let dense = if t.is_contiguous() { t.clone() } else { clone_as(t, t.dtype())? };
    match device {
        // Between GPUs the data is staged through the host.
        Device::Gpu(i) => {
            let host = if dense.is_gpu() { transfer::download(&dense)? } else { dense };
            crate::backend::gpu::context::enter(i as usize)?;
            transfer::upload(&host)
        }
        Device::Cpu => transfer::download(&dense),
    }
}

#[derive(Clone)]
pub struct ToDeviceBackward {
    from: Device,
}

impl Backward for ToDeviceBackward {
    fn name(&self) -> String {
        "ToCopyBackward0".to_string()
    }
    fn apply(&self, _: &std::sync::Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(to_device(&grads[0], self.from)?)])
    }
}

/// Casts and clones: the gradient comes back in the input's dtype.
#[derive(Clone)]
pub struct CastBackward {
    from: DType,
    name: &'static str,
}

impl Backward for CastBackward {
    fn name(&self) -> String {
        self.name.to_string()
    }
    fn apply(&self, _: &std::sync::Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(to_dtype(&grads[0], self.from)?)])
    }
}
