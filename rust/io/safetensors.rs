//! Checkpoints in the safetensors format, through the `safetensors` crate.
//!
//! Loading: the crate validates the header (`SafeTensors::read_metadata`, what
//! `deserialize` runs: offsets, overlaps, dtypes, sizes, coverage of the data);
//! the tensors then borrow the file's memory, a private copy-on-write mapping
//! or the buffer the file was read into, without copying it.
//!
//! Saving: the header is the crate's (`Metadata`, serialized by the crate),
//! built from a `View` of each tensor, then the tensors' bytes are streamed
//! from their own memory. The tensors keep the caller's order: the crate's
//! `serialize` would sort them by dtype and name, losing a state_dict's order.

use super::Failure;
use crate::bail;
use crate::ops::copy::{contiguous_clone, transfer};
use crate::tensor::storage::{CpuBuffer, Storage};
use crate::tensor::{DType, Device, Layout, Tensor};
use memmap2::{MmapMut, MmapOptions};
use safetensors::tensor::{Metadata, TensorInfo};
use safetensors::{Dtype, SafeTensorError, SafeTensors, View};
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

/// The largest header the crate reads back.
const MAX_HEADER: usize = 100_000_000;

fn file_dtype(d: DType) -> crate::error::Result<Dtype> {
    Ok(match d {
        DType::Bool => Dtype::BOOL,
        DType::U8 => Dtype::U8,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
        DType::C64 => Dtype::C64,
        DType::C128 => bail!(
            Type,
            "safetensors has no complex128 dtype (only C64): convert the tensor with .to(rumus.complex64) or save its view_as_real()"
        ),
    })
}

fn rumus_dtype(d: Dtype) -> Option<DType> {
    Some(match d {
        Dtype::BOOL => DType::Bool,
        Dtype::U8 => DType::U8,
        Dtype::I32 => DType::I32,
        Dtype::I64 => DType::I64,
        Dtype::F16 => DType::F16,
        Dtype::BF16 => DType::BF16,
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        Dtype::C64 => DType::C64,
        _ => return None,
    })
}

// ---------------------------------------------------------------- load

/// A loaded file: its tensors in the order of the header (the order
/// rumus.save wrote them in) and its `__metadata__`.
pub struct Checkpoint {
    pub tensors: Vec<(String, Tensor)>,
    pub metadata: HashMap<String, String>,
}

/// The memory a file's tensors borrow; it lives as long as any of them.
enum Backing {
    /// A private mapping: writes (in-place ops on loaded tensors) never reach the file.
    Map(MmapMut),
    /// A buffer the file was read into, and its length.
    Heap(CpuBuffer, usize),
}

impl Backing {
    fn bytes(&mut self) -> &mut [u8] {
        match self {
            Backing::Map(m) => m,
            Backing::Heap(b, len) => {
                // SAFETY: the buffer holds `len` bytes, all written by the loader.
                unsafe { std::slice::from_raw_parts_mut(b.ptr(), *len) }
            }
        }
    }
}

/// Loads the file at `path`: memory-mapped (copy-on-write) when `mmap`, else read into memory.
pub fn load_file(path: &Path, mmap: bool) -> Result<Checkpoint, Failure> {
    let mut file = File::open(path)?;
    let stat = file.metadata()?;
    if stat.is_dir() {
        // Opening a directory succeeds on Linux; reading or mapping it fails obscurely.
        return Err(std::io::Error::from_raw_os_error(libc::EISDIR).into());
    }
    let len = usize::try_from(stat.len())
        .map_err(|_| Failure::Format("file too large to address".into()))?;
    // Files too short to map meaningfully take the read path to their error message.
    let backing = if mmap && len >= 8 {
        // SAFETY: a private mapping; the file changing underneath is the caller's
        // contract (documented on rumus.load), as with numpy.memmap.
        Backing::Map(unsafe { MmapOptions::new().map_copy(&file)? })
    } else {
        let buf = CpuBuffer::reusable(len)?;
        // SAFETY: the buffer holds `len` bytes.
        file.read_exact(unsafe { std::slice::from_raw_parts_mut(buf.ptr(), len) })?;
        Backing::Heap(buf, len)
    };
    parse(backing)
}

/// Loads a file already in memory (read from a Python file object): copied
/// once into aligned memory the tensors then share.
pub fn load_bytes(data: &[u8]) -> Result<Checkpoint, Failure> {
    let buf = CpuBuffer::reusable(data.len())?;
    // SAFETY: the new buffer holds data.len() bytes and doesn't overlap `data`.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf.ptr(), data.len()) };
    parse(Backing::Heap(buf, data.len()))
}

fn parse(mut backing: Backing) -> Result<Checkpoint, Failure> {
    let bytes = backing.bytes();
    let (n, meta) = match SafeTensors::read_metadata(bytes) {
        Ok(r) => r,
        Err(e) => return Err(Failure::Format(explain(bytes, e))),
    };
    let start = 8 + n;
    // The crate keeps the entries in a map: their order comes from the header itself.
    let names = match serde_json::from_slice::<Entries<IgnoredAny>>(&bytes[8..start]) {
        Ok(Entries(e)) => e.into_iter().map(|(k, _)| k).filter(|k| k != "__metadata__"),
        Err(e) => return Err(Failure::Format(format!("header: {}", e))),
    };
    let mut entries = Vec::new();
    for name in names {
        let Some(info) = meta.info(&name) else {
            return Err(Failure::Format(format!("tensor {} is missing", quoted(&name))));
        };
        let Some(dtype) = rumus_dtype(info.dtype) else {
            return Err(Failure::Format(format!(
                "tensor {} has dtype {}, which rumus doesn't support",
                quoted(&name),
                info.dtype
            )));
        };
        let (b, e) = info.data_offsets;
        normalize(&mut bytes[start + b..start + e], dtype);
        entries.push((name, dtype, info.shape.clone(), start + b));
    }
    let base = bytes.as_mut_ptr();
    let owner = Arc::new(backing);
    let tensors = entries
        .into_iter()
        .map(|(name, dtype, shape, at)| {
            let layout = Layout::contiguous(&shape);
            let len = layout.numel();
            // SAFETY: the crate checked that the tensor's bytes lie within the file.
            let ptr = unsafe { base.add(at) };
            let storage = if (ptr as usize).is_multiple_of(dtype.size()) {
                // SAFETY: `owner` keeps the memory alive as long as the storage.
                let buf = unsafe {
                    CpuBuffer::borrowed(ptr, len * dtype.size(), Box::new(owner.clone()))
                };
                Storage::from_cpu(dtype, len, buf)
            } else {
                // Misaligned (a foreign file without alignment padding): copied.
                let s = Storage::for_output(dtype, len)?;
                // SAFETY: both regions hold len * size bytes.
                unsafe { std::ptr::copy_nonoverlapping(ptr, s.cpu_ptr()?, len * dtype.size()) };
                s
            };
            Ok((name, Tensor::new(Arc::new(storage), layout)))
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    Ok(Checkpoint { tensors, metadata: meta.metadata().clone().unwrap_or_default() })
}

/// Makes a tensor's stored bytes valid values of `dtype` in place, before any
/// tensor sees them: bools are 0 or 1 (any non-zero byte is True, as in NumPy),
/// and multi-byte values become native-endian.
fn normalize(bytes: &mut [u8], dtype: DType) {
    if dtype == DType::Bool {
        for b in bytes.iter_mut().filter(|b| **b > 1) {
            *b = 1;
        }
    }
    if cfg!(target_endian = "big") && dtype.size() > 1 {
        bytes.chunks_exact_mut(dtype.size()).for_each(<[u8]>::reverse);
    }
}

fn quoted(name: &str) -> String {
    format!("'{}'", name.escape_debug())
}

/// Why the crate rejected `buf`, naming the tensor and the problem: the crate's
/// own errors say neither which tensor nor what about it is wrong.
fn explain(buf: &[u8], err: SafeTensorError) -> String {
    let len = buf.len();
    if len < 8 {
        return format!("file too short ({} bytes) to be a safetensors file", len);
    }
    if buf.starts_with(b"PK\x03\x04")
        || buf.starts_with(b"PK\x05\x06")
        || (buf[0] == 0x80 && (2..=5).contains(&buf[1]))
    {
        return "not a safetensors file; rumus.load reads safetensors files only, never pickles \
                (this looks like a PyTorch zip/pickle checkpoint)"
            .into();
    }
    let n = u64::from_le_bytes(buf[..8].try_into().expect("8 bytes"));
    if n > (len - 8) as u64 {
        return format!("header length {} is larger than the file ({} bytes)", n, len);
    }
    if n > MAX_HEADER as u64 {
        return format!(
            "header length {} is larger than the {} bytes the safetensors format allows",
            n, MAX_HEADER
        );
    }
    let (head, data) = buf[8..].split_at(n as usize);
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) => return format!("header is not valid JSON (invalid UTF-8: {})", e),
    };
    let header: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return format!("header is not valid JSON ({})", e),
    };
    if !header.is_object() {
        return format!("header is not a JSON object (got {})", json_kind(&header));
    }
    let entries = match serde_json::from_str::<Entries<Value>>(text) {
        Ok(Entries(e)) => e,
        Err(e) => return format!("header: {}", e),
    };
    explain_entries(entries, data.len()).unwrap_or_else(|| format!("invalid header ({})", err))
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What is wrong with the header's entries, the first problem found.
fn explain_entries(entries: Vec<(String, Value)>, data_len: usize) -> Option<String> {
    let mut infos = Vec::new();
    for (name, v) in entries {
        if name == "__metadata__" {
            let strings = v.as_object().is_some_and(|m| m.values().all(Value::is_string));
            if !strings {
                return Some("__metadata__ must be an object of str -> str".into());
            }
            continue;
        }
        match serde_json::from_value::<TensorInfo>(v) {
            Ok(info) => infos.push((name, info)),
            Err(e) => return Some(format!("tensor {}: {}", quoted(&name), e)),
        }
    }
    for (name, info) in &infos {
        let (b, e) = info.data_offsets;
        let bits = info.shape.iter().try_fold(info.dtype.bitsize(), |acc, &d| acc.checked_mul(d));
        let what = match bits {
            _ if e < b => format!("data_offsets [{}, {}] end before they begin", b, e),
            None => format!("shape {:?} of {} is too large", info.shape, info.dtype),
            Some(bits) if !bits.is_multiple_of(8) => {
                format!("shape {:?} of {} is not a whole number of bytes", info.shape, info.dtype)
            }
            Some(bits) if e - b != bits / 8 => format!(
                "data_offsets [{}, {}] hold {} bytes but shape {:?} of {} needs {}",
                b,
                e,
                e - b,
                info.shape,
                info.dtype,
                bits / 8
            ),
            _ if e > data_len => format!(
                "data_offsets [{}, {}] are out of range (the data section has {} bytes)",
                b, e, data_len
            ),
            _ => continue,
        };
        return Some(format!("tensor {}: {}", quoted(name), what));
    }
    infos.sort_by_key(|(_, info)| info.data_offsets);
    let mut end = 0;
    for (name, info) in &infos {
        let (b, e) = info.data_offsets;
        if b != end {
            let what = if b < end {
                "overlaps the previous tensor".to_string()
            } else {
                format!("leaves a gap of {} bytes", b - end)
            };
            return Some(format!(
                "tensor {} at data_offsets [{}, {}] {}",
                quoted(name),
                b,
                e,
                what
            ));
        }
        end = e;
    }
    (end != data_len)
        .then(|| format!("{} bytes of trailing data after the last tensor", data_len - end))
}

/// The header's entries in file order, refusing duplicate names (which the
/// crate's map would silently collapse).
struct Entries<T>(Vec<(String, T)>);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Entries<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Entries<T>, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Entries<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries<T>, A::Error> {
                let (mut out, mut seen) = (Vec::new(), HashSet::new());
                while let Some((k, v)) = map.next_entry::<String, T>()? {
                    if !seen.insert(k.clone()) {
                        return Err(serde::de::Error::custom(format!(
                            "duplicate key {}",
                            quoted(&k)
                        )));
                    }
                    out.push((k, v));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

// ---------------------------------------------------------------- save

/// A tensor's values as stored: on the CPU, contiguous.
struct Stored(Tensor);

impl View for &Stored {
    fn dtype(&self) -> Dtype {
        // Checked when the tensor was taken in (save rejects complex128).
        file_dtype(self.0.dtype()).unwrap_or(Dtype::C64)
    }
    fn shape(&self) -> &[usize] {
        self.0.shape()
    }
    fn data(&self) -> Cow<'_, [u8]> {
        let ptr = self.0.data_ptr().expect("a CPU tensor") as *const u8;
        // SAFETY: the tensor is contiguous on the CPU: data_len bytes from data_ptr.
        let bytes = unsafe { std::slice::from_raw_parts(ptr, self.data_len()) };
        if cfg!(target_endian = "big") && self.0.dtype().size() > 1 {
            let mut v = bytes.to_vec();
            v.chunks_exact_mut(self.0.dtype().size()).for_each(<[u8]>::reverse);
            return Cow::Owned(v);
        }
        Cow::Borrowed(bytes)
    }
    fn data_len(&self) -> usize {
        self.0.numel() * self.0.dtype().size()
    }
}

/// A checkpoint ready to write: its header and the tensors' memory.
pub struct Prepared {
    header: Vec<u8>,
    tensors: Vec<Stored>,
}

/// Gathers each tensor's values (contiguous, on the CPU; the tensor's own
/// memory when it already is) and builds the header, in the given order.
pub fn prepare(
    tensors: &[(String, Tensor)],
    metadata: Option<HashMap<String, String>>,
) -> Result<Prepared, Failure> {
    let mut seen = HashSet::new();
    let mut stored = Vec::with_capacity(tensors.len());
    let mut infos = Vec::with_capacity(tensors.len());
    let mut offset = 0;
    for (name, t) in tensors {
        if name == "__metadata__" || !seen.insert(name.as_str()) {
            return Err(Failure::Format(format!(
                "tensor name {} is reserved or repeated",
                quoted(name)
            )));
        }
        file_dtype(t.dtype())?;
        let t = match t.device() {
            Device::Gpu(_) => transfer(t, Device::Cpu)?,
            Device::Cpu if t.is_contiguous() => t.clone(),
            Device::Cpu => contiguous_clone(t)?,
        };
        let s = Stored(t);
        let view = &s;
        let n = view.data_len();
        let info = TensorInfo {
            dtype: view.dtype(),
            shape: view.shape().to_vec(),
            data_offsets: (offset, offset + n),
        };
        offset += n;
        infos.push((name.clone(), info));
        stored.push(s);
    }
    let bad = |e: SafeTensorError| Failure::Format(format!("can't build the header: {}", e));
    let meta = Metadata::new(metadata, infos).map_err(bad)?;
    let mut json = serde_json::to_vec(&meta).map_err(|e| bad(e.into()))?;
    // Spaces up to a multiple of 8 keep the data aligned for readers that map the file.
    json.resize(json.len().next_multiple_of(8), b' ');
    if json.len() > MAX_HEADER {
        return Err(Failure::Format(format!(
            "the header would take {} bytes, more than the {} the safetensors format allows \
             (too many tensors or too much metadata)",
            json.len(),
            MAX_HEADER
        )));
    }
    let mut header = (json.len() as u64).to_le_bytes().to_vec();
    header.extend_from_slice(&json);
    Ok(Prepared { header, tensors: stored })
}

impl Prepared {
    /// Writes the whole file to `w`.
    pub fn write_to(&self, w: &mut impl Write) -> std::io::Result<()> {
        w.write_all(&self.header)?;
        for t in &self.tensors {
            w.write_all(&(&t).data())?;
        }
        w.flush()
    }
    /// Replaces the file at `path` atomically (see `super::atomic`).
    pub fn save(&self, path: &Path) -> Result<(), Failure> {
        super::atomic::replace(path, |f| {
            self.write_to(&mut std::io::BufWriter::with_capacity(1 << 20, f))
        })?;
        Ok(())
    }
}
