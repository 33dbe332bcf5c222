//! Launchers for shaders/index.wgsl: reads and writes at element offsets (an
//! int32 GPU tensor), the GPU form of `Region::Offsets`.

use super::exec::{self, Variant};
use super::shaders::INDEX;
use crate::bail;
use crate::error::Result;
use crate::tensor::{DType, Tensor};

/// out[i] = src.storage[offs[i]] (offsets relative to src's storage start).
pub fn take(src: &Tensor, offs: &Tensor, out: &Tensor) -> Result<()> {
    // Floats move as T (float16 in its own variant), other dtypes as 4-byte words.
    let entry = if src.dtype().is_float() { "take" } else { "take_x32" };
    let p = [out.numel() as u32, 0, offs.layout().offset as u32, out.layout().offset as u32];
    let bufs = [src.storage().gpu_buffer()?, offs.storage().gpu_buffer()?, out.storage().gpu_buffer()?];
    exec::dispatch(&INDEX, entry, Variant::of(src.dtype()), &bufs, &p, exec::grid_1d(out.numel()))
}

/// dst.storage[offs[i]] = vals[i] (or += with `accumulate`); vals contiguous.
pub fn put(dst: &Tensor, offs: &Tensor, vals: &Tensor, accumulate: bool) -> Result<()> {
    let entry = match (accumulate, dst.dtype()) {
        (false, DType::F32 | DType::F16) => "put",
        (false, _) => "put_x32",
        (true, DType::F32) => "put_add",
        (true, DType::I32 | DType::I64) => "put_add_i32",
        (true, d) => bail!(NotImplemented, "accumulating index writes into {} tensors have no GPU kernel", d.name()),
    };
    let p = [offs.numel() as u32, vals.layout().offset as u32, offs.layout().offset as u32, 0];
    let bufs = [vals.storage().gpu_buffer()?, offs.storage().gpu_buffer()?, dst.storage().gpu_buffer()?];
    exec::dispatch(&INDEX, entry, Variant::of(dst.dtype()), &bufs, &p, exec::grid_1d(offs.numel()))
}

/// Checks on the device that every value of `index` (contiguous int32/int64
/// words) lies in [0, size); a failure raises `message` at the next readback.
pub fn check_range(index: &Tensor, size: usize, message: String) -> Result<()> {
    let n = index.numel();
    if n == 0 {
        return Ok(());
    }
    let (status, code) = exec::status_code(message)?;
    let p = [n as u32, index.layout().offset as u32, 0, size.min(i32::MAX as usize) as u32, code];
    exec::dispatch(&INDEX, "check_range", Variant::F32, &[index.storage().gpu_buffer()?, &status], &p, exec::grid_1d(n))
}
