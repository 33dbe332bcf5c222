//! Creation ops: constants, ranges, eye, and random tensors from a seeded generator.

use super::copy::{copy_into, fill_};
use crate::backend::cpu::elementwise::fill_indexed;
use crate::backend::cpu::random::{default_generator, Generator, GeneratorRef};
use crate::backend::cpu::P;
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::try_vec;
use crate::tensor::{DType, Element, Scalar, Tensor};
use std::sync::MutexGuard;

pub fn scalar_tensor(s: Scalar, dtype: DType) -> Result<Tensor> {
    crate::dispatch_all!(dtype, T => Tensor::scalar::<T>(s.cast::<T>()))
}

/// full() on a device: GPU tensors are filled there, nothing crosses the bus.
pub fn full_on(
    shape: &[usize],
    value: Scalar,
    dtype: DType,
    device: crate::tensor::Device,
) -> Result<Tensor> {
    if device == crate::tensor::Device::Cpu {
        return full(shape, value, dtype);
    }
    let t = Tensor::empty_on(shape, dtype, device)?;
    fill_(&t, value)?;
    Ok(t)
}

/// Zeros come zeroed from the allocator; any other value (-0.0 included) is
/// written once into uninitialized memory.
pub fn full(shape: &[usize], value: Scalar, dtype: DType) -> Result<Tensor> {
    if value.to_f64().to_bits() == 0 {
        return Tensor::zeros(shape, dtype);
    }
    let t = Tensor::for_output(shape, dtype)?;
    fill_(&t, value)?;
    Ok(t)
}

fn check_finite(op: &str, v: f64) -> Result<()> {
    if !v.is_finite() {
        bail!(Runtime, "{}: unsupported range: the bounds must be finite, got {}", op, v);
    }
    Ok(())
}

/// PyTorch has no bool kernel for arange, linspace and randperm.
fn refuse_bool(op: &str, dtype: DType) -> Result<()> {
    if dtype == DType::Bool {
        bail!(NotImplemented, "\"{}\" not implemented for 'Bool'", op);
    }
    Ok(())
}

/// arange(start, end, step): `ceil((end - start) / step)` values.
pub fn arange(start: Scalar, end: Scalar, step: Scalar, dtype: DType) -> Result<Tensor> {
    refuse_bool("arange", dtype)?;
    let (s, e, st) = (start.to_f64(), end.to_f64(), step.to_f64());
    check_finite("arange", s)?;
    check_finite("arange", e)?;
    if st == 0.0 || !st.is_finite() {
        bail!(Runtime, "arange: step must be nonzero and finite, got {}", st);
    }
    if (st > 0.0 && e < s) || (st < 0.0 && e > s) {
        bail!(Runtime, "arange: upper bound and larger bound inconsistent with step sign");
    }
    let all_int = [start, end, step].iter().all(|v| !matches!(v, Scalar::Float(_)));
    let n = if all_int {
        let (s, e, st) = (start.to_i64() as i128, end.to_i64() as i128, step.to_i64() as i128);
        ((e - s + st - st.signum()) / st).max(0) as usize
    } else {
        ((e - s) / st).ceil().max(0.0) as usize
    };
    let out = Tensor::for_output(&[n], dtype)?;
    crate::dispatch_all!(dtype, T => {
        let p = P(out.ptr::<T>()?);
        // SAFETY: out is a fresh contiguous tensor of n elements.
        if all_int && !dtype.is_float() {
            let (s, st) = (start.to_i64(), step.to_i64());
            unsafe { fill_indexed(p, n, move |i| T::from_i64(s.wrapping_add((i as i64).wrapping_mul(st)))) };
        } else {
            unsafe { fill_indexed(p, n, move |i| T::from_f64(s + i as f64 * st)) };
        }
    });
    Ok(out)
}

pub fn linspace(start: f64, end: f64, steps: i64, dtype: DType) -> Result<Tensor> {
    refuse_bool("linspace", dtype)?;
    if steps < 0 {
        bail!(Runtime, "linspace: number of steps must be non-negative, got {}", steps);
    }
    let n = steps as usize;
    let step = if n > 1 { (end - start) / (n - 1) as f64 } else { 0.0 };
    // Symmetric from both ends, so the last value is exactly `end`.
    let value = move |i: usize| {
        if n == 1 || i < n / 2 {
            start + step * i as f64
        } else {
            end - step * (n - 1 - i) as f64
        }
    };
    // Integer dtypes take the float64 values through the casts of `to`.
    let float = if dtype.is_float() { dtype } else { DType::F64 };
    let out = Tensor::for_output(&[n], float)?;
    crate::dispatch_all!(float, T => {
        // SAFETY: out is a fresh contiguous tensor of n elements.
        unsafe { fill_indexed(P(out.ptr::<T>()?), n, move |i| T::from_f64(value(i))) };
    });
    super::copy::to_dtype(&out, dtype)
}

pub fn eye(n: i64, m: i64, dtype: DType) -> Result<Tensor> {
    if n < 0 || m < 0 {
        bail!(Runtime, "eye: n and m must be non-negative, got n={}, m={}", n, m);
    }
    let (n, m) = (n as usize, m as usize);
    if n.checked_mul(m).is_none() {
        bail!(Runtime, "eye: {} x {} elements overflow", n, m);
    }
    let out = Tensor::zeros(&[n, m], dtype)?;
    crate::dispatch_all!(dtype, T => {
        let p = out.ptr::<T>()?;
        for i in 0..n.min(m) {
            // SAFETY: (i, i) lies inside the n x m contiguous tensor.
            unsafe { *p.add(i * m + i) = T::one() };
        }
    });
    Ok(out)
}

fn lock(g: &GeneratorRef) -> MutexGuard<'_, Generator> {
    g.lock().unwrap_or_else(|e| e.into_inner())
}

fn generator(g: Option<&GeneratorRef>) -> GeneratorRef {
    g.cloned().unwrap_or_else(default_generator)
}

/// Fills `t` (any layout, float dtype) from a float32 or float64 sample stream.
fn fill_random(
    t: &Tensor,
    g: Option<&GeneratorRef>,
    fill32: impl FnOnce(&mut Generator, &mut [f32]),
    fill64: impl FnOnce(&mut Generator, &mut [f64]),
) -> Result<()> {
    t.check_writable("random fill")?;
    let g = generator(g);
    let mut g = lock(&g);
    let n = t.numel();
    if t.dtype() == DType::F64 {
        let mut v = try_vec(n, 0.0f64)?;
        fill64(&mut g, &mut v);
        copy_into(t, &Tensor::from_vec(v, t.shape())?)?;
    } else if t.dtype() == DType::F32 && t.is_contiguous() && !t.is_gpu() {
        // SAFETY: a contiguous float32 view of n elements.
        let s = unsafe { std::slice::from_raw_parts_mut(t.ptr::<f32>()?, n) };
        fill32(&mut g, s);
    } else {
        let mut v = try_vec(n, 0.0f32)?;
        fill32(&mut g, &mut v);
        copy_into(t, &Tensor::from_vec(v, t.shape())?)?;
    }
    t.storage().bump_version();
    Ok(())
}

/// A device fill (shaders/random.wgsl) keyed by one draw of the host generator.
fn gpu_random(
    t: &Tensor,
    g: Option<&GeneratorRef>,
    entry: &'static str,
    a: f32,
    b: f32,
) -> Result<()> {
    t.check_writable("random fill")?;
    let key = lock(&generator(g)).next_key();
    let direct = t.is_contiguous() && t.dtype() == DType::F32;
    let out = if direct { t.clone() } else { Tensor::empty_on(t.shape(), DType::F32, t.device())? };
    crate::backend::gpu::random::fill(entry, &out, key, a, b, uniform_cut(b, t.dtype()))?;
    if !direct {
        copy_into(t, &out)?;
    }
    t.storage().bump_version();
    Ok(())
}

fn require_float(op: &str, t: &Tensor) -> Result<()> {
    if !t.dtype().is_float() {
        bail!(Runtime, "\"{}\" not implemented for '{}'", op, t.dtype().name());
    }
    Ok(())
}

pub fn uniform_(t: &Tensor, lo: f64, hi: f64, g: Option<&GeneratorRef>) -> Result<()> {
    require_float("uniform_", t)?;
    if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
        bail!(
            Runtime,
            "uniform_ expects to return a [from, to) range, but found from={} > to={}",
            lo,
            hi
        );
    }
    if t.is_gpu() {
        return crate::autograd::overwrite(t, "uniform_", || {
            gpu_random(t, g, "uniform", lo as f32, hi as f32)
        });
    }
    let (lo32, hi32) = (lo as f32, hi as f32);
    let cut = uniform_cut(hi32, t.dtype());
    let fill32 = |g: &mut Generator, s: &mut [f32]| {
        g.uniform_f32(s, lo32, hi32);
        if cut < hi32 {
            s.iter_mut().filter(|v| **v >= cut).for_each(|v| *v = lo32);
        }
    };
    crate::autograd::overwrite(t, "uniform_", || {
        fill_random(t, g, fill32, |g, s| g.uniform(s, lo, hi))
    })
}

/// The least f32 that rounds to `hi` or above when stored as `dtype` (round to
/// nearest even or toward zero): uniform replaces values from it on by lo, as
/// PyTorch does, so half-precision results stay below hi.
fn uniform_cut(hi: f32, dtype: DType) -> f32 {
    type Bits = (fn(u16) -> f32, fn(f32) -> u16);
    let (to_f32, from_f32): Bits = match dtype {
        DType::F16 => (|b| half::f16::from_bits(b).to_f32(), |x| half::f16::from_f32(x).to_bits()),
        DType::BF16 => {
            (|b| half::bf16::from_bits(b).to_f32(), |x| half::bf16::from_f32(x).to_bits())
        }
        _ => return hi,
    };
    // Neighbouring 16-bit floats: bits ordered as integers (sign-magnitude).
    let step = |b: u16, up: bool| -> u16 {
        let ord = if b & 0x8000 != 0 { -i32::from(b & 0x7fff) } else { i32::from(b) };
        let ord = ord + if up { 1 } else { -1 };
        if ord < 0 {
            0x8000 | (-ord) as u16
        } else {
            ord as u16
        }
    };
    let h = from_f32(hi);
    let top = if to_f32(h) >= hi { step(h, false) } else { h };
    let next = step(top, true);
    let below = f64::from(to_f32(top));
    let above = f64::from(to_f32(next));
    // Past the largest finite value the next one is as far as the previous gap.
    let above =
        if above.is_finite() { above } else { 2.0 * below - f64::from(to_f32(step(top, false))) };
    // Two neighbours have at most 11 significant bits: their midpoint is exact
    // in f32, and a tie rounds to the even one.
    let mid = ((below + above) / 2.0) as f32;
    if next & 1 == 0 {
        mid
    } else {
        mid.next_up()
    }
}

pub fn normal_(t: &Tensor, mean: f64, std: f64, g: Option<&GeneratorRef>) -> Result<()> {
    require_float("normal_", t)?;
    if !(std >= 0.0 && std.is_finite() && mean.is_finite()) {
        bail!(Runtime, "normal expects std >= 0.0, but found std {}", std);
    }
    if t.is_gpu() {
        return crate::autograd::overwrite(t, "normal_", || {
            gpu_random(t, g, "normal", mean as f32, std as f32)
        });
    }
    crate::autograd::overwrite(t, "normal_", || {
        fill_random(
            t,
            g,
            |g, s| g.normal_f32(s, mean as f32, std as f32),
            |g, s| g.normal(s, mean, std),
        )
    })
}

pub fn rand(
    shape: &[usize],
    dtype: DType,
    device: crate::tensor::Device,
    g: Option<&GeneratorRef>,
) -> Result<Tensor> {
    let t = full_on(shape, Scalar::Int(0), dtype, device)?;
    uniform_(&t, 0.0, 1.0, g)?;
    Ok(t)
}

pub fn randn(
    shape: &[usize],
    dtype: DType,
    device: crate::tensor::Device,
    g: Option<&GeneratorRef>,
) -> Result<Tensor> {
    let t = full_on(shape, Scalar::Int(0), dtype, device)?;
    normal_(&t, 0.0, 1.0, g)?;
    Ok(t)
}

pub fn randint(
    low: i64,
    high: i64,
    shape: &[usize],
    dtype: DType,
    g: Option<&GeneratorRef>,
) -> Result<Tensor> {
    if high <= low {
        bail!(
            Runtime,
            "random_ expects 'from' to be less than 'to', but got from={} >= to={}",
            low,
            high
        );
    }
    // The integer dtypes' ranges (float ones hold any i64 bound, rounded).
    let range = match dtype {
        DType::Bool => Some((0, 1)),
        DType::U8 => Some((0, 255)),
        DType::I32 => Some((i32::MIN as i64, i32::MAX as i64)),
        _ => None,
    };
    if let Some((lo, hi)) = range {
        if !(lo..=hi).contains(&low) {
            bail!(Runtime, "from is out of bounds for {}", dtype.name());
        }
        if !(lo..=hi).contains(&(high - 1)) {
            bail!(Runtime, "to - 1 is out of bounds for {}", dtype.name());
        }
    }
    let mut v = try_vec(crate::tensor::layout::numel(shape), 0i64)?;
    lock(&generator(g)).randint(&mut v, low, high);
    super::copy::to_dtype(&Tensor::from_vec(v, shape)?, dtype)
}

pub fn randperm(n: i64, dtype: DType, g: Option<&GeneratorRef>) -> Result<Tensor> {
    refuse_bool("randperm", dtype)?;
    if n < 0 {
        bail!(Runtime, "randperm: n must be non-negative, got {}", n);
    }
    try_vec::<u8>((n as usize).saturating_mul(8), 0)?; // fails cleanly if the output cannot fit
    let v = lock(&generator(g)).randperm(n as usize);
    super::copy::to_dtype(&Tensor::from_vec(v, &[n as usize])?, dtype)
}

/// Elementwise Bernoulli draws with probability p (used by dropout later).
pub fn bernoulli_(t: &Tensor, p: f64, g: Option<&GeneratorRef>) -> Result<()> {
    if !(0.0..=1.0).contains(&p) {
        bail!(Runtime, "bernoulli_ expects p to be in [0, 1], but got p={}", p);
    }
    if t.is_gpu() {
        return crate::autograd::overwrite(t, "bernoulli_", || {
            gpu_random(t, g, "bernoulli_mask", p as f32, 1.0)
        });
    }
    let mut v = try_vec(t.numel(), false)?;
    lock(&generator(g)).bernoulli(&mut v, p);
    crate::autograd::overwrite(t, "bernoulli_", || {
        copy_into(t, &Tensor::from_vec(v, t.shape())?)?;
        t.storage().bump_version();
        Ok(())
    })
}

/// A dropout mask of `shape`: `scale` with probability `keep`, else 0, from
/// one key of the default generator, Philox-drawn as the GPU draws it (a seed
/// drops the same elements on both devices). float32 and float64 on the
/// CPU, float32 on the GPU (where fusion computes it inside its consumer).
pub fn dropout_mask(
    shape: &[usize],
    keep: f64,
    scale: f64,
    dtype: DType,
    device: crate::tensor::Device,
) -> Result<Tensor> {
    if !matches!(dtype, DType::F32 | DType::F64) || (device.is_gpu() && dtype != DType::F32) {
        bail!(Type, "dropout mask: no kernel for {} on {}", dtype.name(), device.name());
    }
    if let crate::tensor::Device::Gpu(i) = device {
        crate::backend::gpu::context::enter(i as usize)?;
        return crate::backend::gpu::fusion::dropout_mask(shape, keep as f32, scale as f32);
    }
    let key = lock(&default_generator()).next_key();
    let out = Tensor::empty_on(shape, dtype, device)?;
    let n = out.numel();
    crate::dispatch_float!(dtype, T => {
        // SAFETY: a fresh contiguous tensor of n elements.
        let s = unsafe { std::slice::from_raw_parts_mut(out.ptr::<T>()?, n) };
        crate::backend::cpu::random::dropout_mask(s, key, keep as f32, <T as num_traits::NumCast>::from(scale).expect("float"));
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Below the cut every f32 stores below hi; at it, hi (or above) is reached.
    #[test]
    fn uniform_cut_bounds_the_stored_value() {
        for hi in [1.0078125f32, 3.0, 0.1, -2.5, 1e-6, 65504.0, 7e4] {
            for (dtype, round) in [
                (DType::F16, (|x| half::f16::from_f32(x).to_f32()) as fn(f32) -> f32),
                (DType::BF16, |x| half::bf16::from_f32(x).to_f32()),
            ] {
                let cut = uniform_cut(hi, dtype);
                let below =
                    f32::from_bits(if cut > 0.0 { cut.to_bits() - 1 } else { cut.to_bits() + 1 });
                assert!(round(below) < hi && round(cut) >= hi, "{:?} hi={} cut={}", dtype, hi, cut);
            }
        }
        assert_eq!(uniform_cut(3.0, DType::F32), 3.0);
    }
}
