//! Launchers for shaders/index.wgsl: reads and writes at element offsets (an
//! int32 GPU tensor), the GPU form of `Region::Offsets`.

use super::dtype::elem_bytes;
use super::exec::{self, Bind, Variant};
use super::shaders::INDEX;
use crate::bail;
use crate::error::Result;
use crate::tensor::{DType, Tensor};

crate::wgsl_params! {
    /// take / put: n offsets and where each side starts (src_off of take and
    /// out_off of put are i32 bit patterns: the indexed tensor's window may
    /// start past its base); elements outside [0, lim) of the window are skipped.
    pub struct Flat in INDEX { n: u32, src_off: u32, offs_off: u32, out_off: u32, lim: u32 }
}

crate::wgsl_params! {
    /// check_range: n index values from idx_off must lie in [lo, hi), else
    /// the status word rises to `code`.
    pub struct Range in INDEX { n: u32, idx_off: u32, lo: i32, hi: i32, code: u32 }
}

/// The whole storage of a bfloat16 GPU tensor as a 1-D view, and a float32
/// copy of it: offsets into the storage address both alike.
fn widened(t: &Tensor) -> Result<(Tensor, Tensor)> {
    let len = t.storage().len();
    let whole = t.detach().with_layout(crate::tensor::layout::Layout::contiguous(&[len]));
    let wide = crate::ops::copy::to_dtype(&whole, DType::F32)?;
    Ok((whole, wide))
}

/// out[i] = src.storage[offs[i]] (offsets relative to src's storage start).
pub fn take(src: &Tensor, offs: &Tensor, out: &Tensor) -> Result<()> {
    if src.dtype() == DType::BF16 {
        // No packed take: through a float32 copy (exact both ways).
        let wide_out = Tensor::empty_on(out.shape(), DType::F32, out.device())?;
        take(&widened(src)?.1, offs, &wide_out)?;
        return crate::ops::copy::copy_into(out, &wide_out);
    }
    // Floats move as T (float16 in its own variant), other dtypes as 4-byte words.
    let entry = if src.dtype().is_float() { "take" } else { "take_x32" };
    flat(entry, Variant::of(src.dtype()), src, offs, out, true)
}

/// dst.storage[offs[i]] = vals[i] (or += with `accumulate`); vals contiguous.
pub fn put(dst: &Tensor, offs: &Tensor, vals: &Tensor, accumulate: bool) -> Result<()> {
    if dst.dtype() == DType::BF16 || (accumulate && dst.dtype() == DType::F16) {
        // Written into a float32 copy of the storage, then rounded back (float16
        // sums too: there is no float16 atomic add).
        let (whole, wide) = widened(dst)?;
        put(&wide, offs, &crate::ops::copy::to_dtype(vals, DType::F32)?, accumulate)?;
        return crate::ops::copy::copy_into(&whole, &wide);
    }
    let entry = match (accumulate, dst.dtype()) {
        (false, DType::F32 | DType::F16) => "put",
        (false, _) => "put_x32",
        (true, DType::F32) => "put_add",
        (true, DType::I32 | DType::I64) => "put_add_i32",
        (true, d) => bail!(
            NotImplemented,
            "accumulating index writes into {} tensors have no GPU kernel",
            d.name()
        ),
    };
    flat(entry, Variant::of(dst.dtype()), dst, offs, vals, false)
}

/// A take (`is_take`) or put between the indexed tensor `data` (addressed by
/// storage offsets) and `seq` (out of take, vals of put), one element per
/// offset. Offsets and `seq` go in chunks that fit a binding; a `data` beyond
/// the binding limit is covered by one dispatch per window of its storage,
/// each skipping the offsets outside it.
fn flat(
    entry: &'static str,
    variant: Variant,
    data: &Tensor,
    offs: &Tensor,
    seq: &Tensor,
    is_take: bool,
) -> Result<()> {
    let n = offs.numel();
    if n == 0 {
        return Ok(());
    }
    let (dbuf, obuf, sbuf) =
        (data.storage().gpu_buffer()?, offs.storage().gpu_buffer()?, seq.storage().gpu_buffer()?);
    let (de, se) = (elem_bytes(data.dtype())?, elem_bytes(seq.dtype())?);
    let chunk = exec::rows_per_chunk(entry, n, &[(obuf, 1, 4), (sbuf, 1, se)])?;
    let total = dbuf.size() as usize / de;
    // Windows start at multiples of the offset alignment, so that none overlaps the next.
    let step = (exec::offset_alignment()? / de).max(1);
    let wchunk = if exec::fits(dbuf, total, de)? {
        total
    } else {
        (exec::rows_per_chunk(entry, total, &[(dbuf, 1, de)])? / step * step).max(step)
    };
    for c0 in (0..n).step_by(chunk) {
        let len = chunk.min(n - c0);
        let window = |t: &'_ Tensor, buf, elem| -> Result<(Bind<'_>, u32)> {
            let lo = t.layout().offset + c0;
            let (b, base) = Bind::window(buf, lo, lo + len - 1, elem)?;
            Ok((b, (lo - base) as u32))
        };
        let (ob, o_off) = window(offs, obuf, 4)?;
        let (sb, s_off) = window(seq, sbuf, se)?;
        for w0 in (0..total).step_by(wchunk) {
            let end = (w0 + wchunk).min(total);
            let (db, base) = Bind::window(dbuf, w0, end - 1, de)?;
            let lim = if db.size.is_none() { u32::MAX } else { (end - base) as u32 };
            let d_off = (base as i64).wrapping_neg() as i32 as u32;
            let (n, offs_off) = (len as u32, o_off);
            let (p, binds) = if is_take {
                (Flat { n, src_off: d_off, offs_off, out_off: s_off, lim }, [db, ob, sb])
            } else {
                (Flat { n, src_off: s_off, offs_off, out_off: d_off, lim }, [sb, ob, db])
            };
            exec::dispatch_binds(entry, variant, &binds, &p, exec::grid_1d(len))?;
        }
    }
    Ok(())
}

/// Checks on the device that every value of `index` (contiguous int32/int64
/// words) lies in [0, size); a failure raises `message` at the next readback.
pub fn check_range(index: &Tensor, size: usize, message: String) -> Result<()> {
    let n = index.numel();
    if n == 0 {
        return Ok(());
    }
    let (status, code) = exec::status_code(message)?;
    let buf = index.storage().gpu_buffer()?;
    let chunk = exec::rows_per_chunk("check_range", n, &[(buf, 1, 4)])?;
    for c0 in (0..n).step_by(chunk) {
        let (len, lo) = (chunk.min(n - c0), index.layout().offset + c0);
        let (b, base) = Bind::window(buf, lo, lo + len - 1, 4)?;
        let p = Range {
            n: len as u32,
            idx_off: (lo - base) as u32,
            lo: 0,
            hi: size.min(i32::MAX as usize) as i32,
            code,
        };
        exec::dispatch_binds(
            "check_range",
            Variant::F32,
            &[b, Bind::whole(&status)],
            &p,
            exec::grid_1d(len),
        )?;
    }
    Ok(())
}
