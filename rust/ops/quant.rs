//! Quantized inference ops: the dynamically quantized Linear (int8 weights
//! per output channel, activations quantized per row at run time, int32
//! accumulation, scales and bias in the epilogue), its exact integer GEMM,
//! and the Q8 block format's product and dequantization. Inference only: no
//! gradients are recorded, as PyTorch's quantized modules have none.
//!
//! int8 data travels in int32 tensors, four codes per word in little-endian
//! byte order (rumus has no int8 dtype), so the same tensor is the CPU's byte
//! array and the GPU's packed words. The Python layer (rumus.quantization)
//! builds the packed weights.

use super::copy::{contiguous_clone, to_device, to_dtype};
use crate::backend::cpu::qgemm::{self as kernel, A_MAX, K_ALIGN};
use crate::backend::cpu::P;
use crate::bail;
use crate::error::Result;
use crate::tensor::{DType, Device, Tensor};

/// `t` contiguous from element 0 of its storage (GPU kernels bind whole buffers).
fn dense(t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() && t.layout().offset == 0 {
        Ok(t.clone())
    } else {
        contiguous_clone(t)
    }
}

fn expect(
    op: &str,
    what: &str,
    t: &Tensor,
    dtype: DType,
    shape: &[usize],
    device: Device,
) -> Result<()> {
    if t.dtype() != dtype {
        bail!(
            Type,
            "{}: expected {} of dtype {}, got {}",
            op,
            what,
            dtype.name(),
            t.dtype().name()
        );
    }
    if t.shape()[..] != *shape {
        bail!(Runtime, "{}: expected {} of shape {:?}, got {:?}", op, what, shape, &t.shape()[..]);
    }
    if t.device() != device {
        bail!(
            Runtime,
            "{}: expected all tensors on the same device, got {} on {} and the input on {}",
            op,
            what,
            t.device().name(),
            device.name()
        );
    }
    Ok(())
}

/// (m, k) of a 2-D float32 input, converted from other float dtypes.
fn input_2d(op: &str, x: &Tensor) -> Result<(Tensor, usize, usize)> {
    if x.ndim() != 2 {
        bail!(Runtime, "{}: expected a 2-D input, got shape {:?}", op, &x.shape()[..]);
    }
    if !x.dtype().is_float() {
        bail!(Type, "{}: expected a floating point input, got {}", op, x.dtype().name());
    }
    let (m, k) = (x.shape()[0], x.shape()[1]);
    Ok((dense(&to_dtype(&x.detach(), DType::F32)?)?, m, k))
}

fn slice<T: crate::tensor::Element>(t: &Tensor) -> Result<&[T]> {
    // SAFETY: `t` is dense (contiguous from offset 0) with numel elements of T,
    // alive for the borrow.
    Ok(unsafe { std::slice::from_raw_parts(t.ptr::<T>()?, t.numel()) })
}

/// x (m × k) · Wᵀ + bias for a packed int8 weight `w` (n × kw int32 words,
/// kw·4 = k rounded up to 64), per-channel `scale` (n, float32), `wsum` (n,
/// int32: each channel's sum of codes) and optional `bias` (n, float32).
pub fn qlinear(
    x: &Tensor,
    w: &Tensor,
    scale: &Tensor,
    wsum: &Tensor,
    bias: Option<&Tensor>,
) -> Result<Tensor> {
    const OP: &str = "quantized::linear_dynamic";
    let (x, m, k) = input_2d(OP, x)?;
    if w.ndim() != 2 {
        bail!(Runtime, "{}: expected a 2-D packed weight, got shape {:?}", OP, &w.shape()[..]);
    }
    let (n, kw) = (w.shape()[0], w.shape()[1]);
    let dev = x.device();
    let kp = k.next_multiple_of(K_ALIGN);
    expect(OP, "the packed weight", w, DType::I32, &[n, kp / 4], dev)
        .map_err(|_| crate::error::Error::Runtime(format!(
            "{}: input has {} features, which needs a packed int32 weight of shape [out_features, {}] on {}, got {} of shape {:?} on {}",
            OP, k, kp / 4, dev.name(), w.dtype().name(), &w.shape()[..], w.device().name()
        )))?;
    expect(OP, "the weight scales", scale, DType::F32, &[n], dev)?;
    expect(OP, "the weight code sums", wsum, DType::I32, &[n], dev)?;
    if let Some(b) = bias {
        expect(OP, "the bias", b, DType::F32, &[n], dev)?;
    }
    let (w, scale, wsum) = (dense(w)?, dense(scale)?, dense(wsum)?);
    let bias = bias.map(dense).transpose()?;
    if m * n == 0 {
        return Tensor::zeros(&[m, n], DType::F32).and_then(|t| to_device(&t, dev));
    }
    if dev.is_gpu() {
        let (codes, info) = crate::backend::gpu::qgemm::quantize_rows(&x, m, k, kw)?;
        let out = Tensor::empty_on(&[m, n], DType::F32, dev)?;
        crate::backend::gpu::qgemm::qlinear(
            &codes,
            &info,
            &w,
            &scale,
            &wsum,
            bias.as_ref(),
            &out,
            m,
            n,
            kw,
        )?;
        return Ok(out);
    }
    let mut codes = vec![0u8; m * kp];
    let info = kernel::quantize_rows(slice::<f32>(&x)?, m, k, kp, &mut codes);
    let (sw, sums) = (slice::<f32>(&scale)?, slice::<i32>(&wsum)?);
    let b = bias.as_ref().map(slice::<f32>).transpose()?;
    let out = Tensor::for_output(&[m, n], DType::F32)?;
    let o = P(out.ptr::<f32>()?);
    let store = |i: usize, j: usize, acc: i32| {
        let (sa, zp) = info[i];
        let v = (acc - zp * sums[j]) as f32 * (sa * sw[j]) + b.map_or(0.0, |b| b[j]);
        // SAFETY: (i, j) is inside the m × n output; each pair is stored once.
        unsafe { *o.at((i * n + j) as isize) = v };
    };
    // SAFETY: codes and w hold m and n rows of kp bytes.
    unsafe { kernel::gemm_s32(m, n, kp, codes.as_ptr(), w.ptr::<i32>()? as *const i8, &store)? };
    Ok(out)
}

/// Rows of int32 `t` (r × k) as int8 bytes padded to kp, after checking the range.
fn pack_rows(t: &Tensor, kp: usize, lo: i32, hi: i32, what: &str) -> Result<Vec<u8>> {
    let (r, k) = (t.shape()[0], t.shape()[1]);
    let v = t.to_vec::<i32>()?;
    if let Some(bad) = v.iter().find(|&&x| x < lo || x > hi) {
        bail!(Value, "qgemm_s32: {} values must lie in [{}, {}], got {}", what, lo, hi, bad);
    }
    let mut out = vec![0u8; r * kp];
    for i in 0..r {
        for j in 0..k {
            out[i * kp + j] = v[i * k + j] as i8 as u8;
        }
    }
    Ok(out)
}

/// The exact int32 products a · wᵀ of activation codes `a` (m × k int32 in
/// [0, 127]) and weight codes `w` (n × k int32 in [-128, 127]), through the
/// CPU path in use or the GPU kernel: the kernels' integer core, for tests.
pub fn qgemm_s32(a: &Tensor, w: &Tensor) -> Result<Tensor> {
    for (t, name) in [(a, "a"), (w, "w")] {
        if t.ndim() != 2 || t.dtype() != DType::I32 {
            bail!(
                Type,
                "qgemm_s32: expected {} to be a 2-D int32 tensor, got {} of shape {:?}",
                name,
                t.dtype().name(),
                &t.shape()[..]
            );
        }
    }
    let (m, k, n) = (a.shape()[0], a.shape()[1], w.shape()[0]);
    if w.shape()[1] != k {
        bail!(
            Runtime,
            "qgemm_s32: shapes {:?} and {:?} differ in k",
            &a.shape()[..],
            &w.shape()[..]
        );
    }
    if a.device() != w.device() {
        bail!(
            Runtime,
            "qgemm_s32: expected both tensors on the same device, got {} and {}",
            a.device().name(),
            w.device().name()
        );
    }
    let kp = k.next_multiple_of(K_ALIGN);
    let ab = pack_rows(a, kp, 0, A_MAX, "activation")?;
    let wb = pack_rows(w, kp, -128, 127, "weight")?;
    if m * n == 0 {
        return Tensor::zeros(&[m, n], DType::I32).and_then(|t| to_device(&t, a.device()));
    }
    if a.is_gpu() {
        let words = |b: &[u8], r: usize| -> Result<Tensor> {
            let v: Vec<i32> = bytemuck::pod_collect_to_vec(b);
            to_device(&Tensor::from_vec(v, &[r, kp / 4])?, a.device())
        };
        let (aw, ww) = (words(&ab, m)?, words(&wb, n)?);
        let out = Tensor::empty_on(&[m, n], DType::I32, a.device())?;
        crate::backend::gpu::qgemm::gemm_s32(&aw, &ww, &out, m, n, kp / 4)?;
        return Ok(out);
    }
    let out = Tensor::for_output(&[m, n], DType::I32)?;
    let o = P(out.ptr::<i32>()?);
    // SAFETY: as in qlinear.
    let store = |i: usize, j: usize, acc: i32| unsafe { *o.at((i * n + j) as isize) = acc };
    unsafe { kernel::gemm_s32(m, n, kp, ab.as_ptr(), wb.as_ptr() as *const i8, &store)? };
    Ok(out)
}

/// Checks a Q8 block size and returns the words per block.
fn block_words(op: &str, bs: usize) -> Result<usize> {
    if bs == 0 || !bs.is_multiple_of(4) {
        bail!(Value, "{}: block_size must be a positive multiple of 4, got {}", op, bs);
    }
    Ok(1 + bs / 4)
}

fn expect_words(op: &str, words: &Tensor, len: usize) -> Result<()> {
    if words.dtype() != DType::I32 || words.ndim() != 1 || words.numel() != len {
        bail!(
            Runtime,
            "{}: expected the Q8 data as a 1-D int32 tensor of {} words, got {} of shape {:?}",
            op,
            len,
            words.dtype().name(),
            &words.shape()[..]
        );
    }
    Ok(())
}

/// x (m × k) · Wᵀ (+ bias) with W (n × k) stored as Q8 blocks of `bs`,
/// ⌈k / bs⌉ per row (rows padded with zero codes), dequantized on read.
pub fn q8_linear(
    x: &Tensor,
    words: &Tensor,
    n: usize,
    bs: usize,
    bias: Option<&Tensor>,
) -> Result<Tensor> {
    const OP: &str = "q8_linear";
    let bw = block_words(OP, bs)?;
    let (x, m, k) = input_2d(OP, x)?;
    expect_words(OP, words, n * k.div_ceil(bs) * bw)?;
    let dev = x.device();
    if words.device() != dev {
        bail!(
            Runtime,
            "{}: expected all tensors on the same device, got the weight on {} and the input on {}",
            OP,
            words.device().name(),
            dev.name()
        );
    }
    if let Some(b) = bias {
        expect(OP, "the bias", b, DType::F32, &[n], dev)?;
    }
    let words = dense(words)?;
    let bias = bias.map(dense).transpose()?;
    if m * n == 0 {
        return Tensor::zeros(&[m, n], DType::F32).and_then(|t| to_device(&t, dev));
    }
    let out = Tensor::empty_on(&[m, n], DType::F32, dev)?;
    if dev.is_gpu() {
        crate::backend::gpu::qgemm::q8_linear(&x, &words, bias.as_ref(), &out, m, n, k, bs)?;
        return Ok(out);
    }
    let w: &[u32] = bytemuck::cast_slice(slice::<i32>(&words)?);
    let b = bias.as_ref().map(slice::<f32>).transpose()?;
    // SAFETY: `out` is a fresh dense m × n float32 tensor.
    let o = unsafe { std::slice::from_raw_parts_mut(out.ptr::<f32>()?, m * n) };
    kernel::q8_linear(slice::<f32>(&x)?, m, k, w, n, bs, b, o);
    Ok(out)
}

/// The values of a Q8 tensor of `rows` rows of `k` values (⌈k / bs⌉ blocks
/// each) as a flat float32 tensor.
pub fn q8_dequantize(words: &Tensor, rows: usize, k: usize, bs: usize) -> Result<Tensor> {
    const OP: &str = "dequantize";
    let bw = block_words(OP, bs)?;
    expect_words(OP, words, rows * k.div_ceil(bs) * bw)?;
    let numel = rows * k;
    let words = dense(words)?;
    let out = Tensor::empty_on(&[numel], DType::F32, words.device())?;
    if numel == 0 {
        return Ok(out);
    }
    if words.is_gpu() {
        crate::backend::gpu::qgemm::q8_dequantize(&words, &out, rows, k, bs)?;
        return Ok(out);
    }
    let w: &[u32] = bytemuck::cast_slice(slice::<i32>(&words)?);
    // SAFETY: as in q8_linear.
    let o = unsafe { std::slice::from_raw_parts_mut(out.ptr::<f32>()?, numel) };
    kernel::q8_dequantize(w, k, bs, o);
    Ok(out)
}
