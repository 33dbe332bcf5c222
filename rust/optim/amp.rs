//! GradScaler's fused check and unscale (PyTorch's
//! `_amp_foreach_non_finite_check_and_unscale_`): every gradient is
//! multiplied by `inv_scale` in place, and `found_inf` (a one-element float32
//! tensor on the gradients' device) becomes 1 when any element of any gradient
//! is inf or NaN. No value comes back to the host: on the GPU it is one
//! dispatch per gradient, all ORing into the same `found_inf`.

use super::Opt;
use crate::bail;
use crate::error::Result;
use crate::tensor::{DType, Tensor};

const OP: &str = "_amp_foreach_non_finite_check_and_unscale_";

pub fn non_finite_check_and_unscale(
    grads: &[Tensor],
    found_inf: &Tensor,
    inv_scale: &Tensor,
) -> Result<()> {
    for (what, t) in [("found_inf", found_inf), ("inv_scale", inv_scale)] {
        if t.numel() != 1 || t.dtype() != DType::F32 {
            bail!(
                Runtime,
                "{}: {} must be a one-element float32 tensor, got dtype {} with {} elements",
                OP,
                what,
                t.dtype().name(),
                t.numel()
            );
        }
    }
    found_inf.check_writable(OP)?;
    let all: Vec<&Tensor> = grads.iter().chain([found_inf, inv_scale]).collect();
    crate::ops::same_device(OP, &all)?;
    for g in grads {
        let ok = match g.dtype() {
            DType::F32 => true,
            DType::F64 => !g.is_gpu(),
            DType::F16 => g.is_gpu(),
            _ => false,
        };
        if !ok {
            bail!(
                Runtime,
                "{}: gradients must be float32 (or float64 on the CPU, float16 on the GPU), got {} on the {}",
                OP,
                g.dtype().name(),
                if g.is_gpu() { "GPU" } else { "CPU" }
            );
        }
        g.check_writable(OP)?;
    }
    for g in grads {
        // Strided gradients are processed in a contiguous copy, written back after.
        let work =
            if g.is_contiguous() { g.clone() } else { crate::ops::copy::contiguous_clone(g)? };
        if g.is_gpu() {
            gpu(&work, found_inf, inv_scale)?;
        } else {
            cpu(&work, found_inf, inv_scale)?;
        }
        if !g.is_contiguous() {
            crate::ops::copy::copy_into(g, &work)?;
        }
        g.storage().bump_version();
    }
    found_inf.storage().bump_version();
    Ok(())
}

fn cpu(g: &Tensor, found_inf: &Tensor, inv_scale: &Tensor) -> Result<()> {
    // SAFETY: one-element float32 tensors (checked by the caller).
    let inv = unsafe { *inv_scale.ptr::<f32>()? };
    let n = g.numel();
    let bad = crate::dispatch_float!(g.dtype(), T => {
        // SAFETY: g is contiguous with n elements, and no other reference to it is live.
        let x = unsafe { std::slice::from_raw_parts_mut(g.ptr::<T>()?, n) };
        let inv = inv as T;
        let mut bad = false;
        for v in x.iter_mut() {
            bad |= !v.is_finite();
            *v *= inv;
        }
        bad
    });
    if bad {
        // SAFETY: as above.
        unsafe { *found_inf.ptr::<f32>()? = 1.0 };
    }
    Ok(())
}

fn gpu(g: &Tensor, found_inf: &Tensor, inv_scale: &Tensor) -> Result<()> {
    use crate::backend::gpu::exec::{self, Bind, Variant};
    fn buf(t: &Tensor) -> Result<&wgpu::Buffer> {
        t.storage().gpu_buffer()
    }
    let variant = if g.dtype() == DType::F16 { Variant::F16 } else { Variant::F32 };
    let elem = g.dtype().size();
    let n = g.numel();
    let mut chunk = n;
    while chunk > 1 && !exec::fits(buf(g)?, chunk, elem)? {
        chunk = chunk.div_ceil(2);
    }
    for start in (0..n).step_by(chunk.max(1)) {
        let len = chunk.min(n - start);
        let lo = g.layout().offset + start;
        let (bind, base) = Bind::window(buf(g)?, lo, lo + len - 1, elem)?;
        let params = Opt {
            n: len as u32,
            g_off: (lo - base) as u32,
            s0_off: found_inf.layout().offset as u32,
            s1_off: inv_scale.layout().offset as u32,
            ..Opt::default()
        };
        let binds = [Bind::whole(buf(found_inf)?), Bind::whole(buf(inv_scale)?), bind];
        exec::dispatch_binds("amp_unscale", variant, &binds, &params, exec::grid_1d(len))?;
    }
    Ok(())
}
