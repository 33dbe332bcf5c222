"""rumus.save / rumus.load: checkpoints in the safetensors format, never pickle.

A safetensors file is: 8 bytes (little-endian u64) header length N, N bytes of
JSON header ``{name: {"dtype", "shape", "data_offsets": [begin, end]}, ...,
"__metadata__": {str: str}}`` padded with spaces, then the tensors' bytes back
to back. A plain ``dict`` of str -> Tensor is written as exactly that, so the
``safetensors`` package reads it. Any other object (nested dicts, lists,
tuples, ints, floats, bools, str, None, tensors that require grad) keeps its
tensors as ordinary entries, named after their key path, and describes the
rest in the metadata entry ``"rumus.structure"`` (JSON).

Differences from torch.save/torch.load, by design: no pickle (so no arbitrary
objects, ``weights_only`` changes nothing), tensors sharing storage are saved
as separate copies, and loading from a path memory-maps the file by default
(see :func:`load`).
"""

import collections
import json
import math
import os
import secrets
import struct
import sys

import numpy as np

from . import _rumus

_STRUCTURE_KEY = "rumus.structure"
_STRUCTURE_VERSION = 1
_METADATA = "__metadata__"

# safetensors dtype name <-> rumus dtype and the little-endian NumPy dtype of its bytes.
_DTYPES = {
    "BOOL": (_rumus.bool, "|u1"),
    "U8": (_rumus.uint8, "|u1"),
    "I32": (_rumus.int32, "<i4"),
    "I64": (_rumus.int64, "<i8"),
    "F16": (_rumus.float16, "<f2"),
    "BF16": (_rumus.bfloat16, "<u2"),
    "F32": (_rumus.float32, "<f4"),
    "F64": (_rumus.float64, "<f8"),
}
_NAME_OF = {rdt: name for name, (rdt, _) in _DTYPES.items()}
# Dtypes of the safetensors format that rumus has no tensor type for.
_UNSUPPORTED = {
    "I8",
    "I16",
    "U16",
    "U32",
    "U64",
    "F8_E4M3",
    "F8_E5M2",
    "F8_E8M0",
    "F4",
    "F6_E2M3",
    "F6_E3M2",
    "C64",
}

_LEAF_TYPES = (type(None), bool, int, float, str)


def _parameter_class():
    from .nn.parameter import Parameter  # imported late: rumus.nn imports the rumus package

    return Parameter


def _path_str(path):
    return "obj" + "".join(f"[{k!r}]" for k in path)


# ---------------------------------------------------------------- save


class _Plan:
    """Walks the object once: the structure JSON and the tensors to write, in order."""

    def __init__(self):
        self.tensors = []  # (name, tensor)
        self.names = {_METADATA}
        self.active = set()  # ids of the containers on the current path (cycle check)

    def unique_name(self, path):
        base = ".".join(str(k) for k in path) or "tensor"
        name, i = base, 1
        while name in self.names:
            name, i = f"{base}#{i}", i + 1
        self.names.add(name)
        return name

    def node(self, obj, path):
        if type(obj) in _LEAF_TYPES:
            return self.leaf(obj)
        if isinstance(obj, _rumus.Tensor):
            return self.tensor(obj, path)
        if isinstance(obj, dict) or type(obj) in (list, tuple):
            if id(obj) in self.active:
                raise ValueError(f"rumus.save: circular reference at {_path_str(path)}")
            self.active.add(id(obj))
            try:
                if isinstance(obj, dict):
                    tag = "odict" if isinstance(obj, collections.OrderedDict) else "dict"
                    return {
                        tag: [
                            [self.key(k, path), self.node(v, path + (k,))] for k, v in obj.items()
                        ]
                    }
                return {type(obj).__name__: [self.node(v, path + (i,)) for i, v in enumerate(obj)]}
            finally:
                self.active.discard(id(obj))
        raise TypeError(
            f"rumus.save can't save an object of type {type(obj).__name__!r} "
            f"(at {_path_str(path)}); it saves Tensors and dicts, lists and tuples "
            "of Tensors, int, float, bool, str and None"
        )

    @staticmethod
    def leaf(obj):
        # repr keeps a float exact (nan and inf included) and apart from ints in JSON.
        return {"float": repr(obj)} if type(obj) is float else obj

    def key(self, k, path):
        if type(k) not in _LEAF_TYPES:
            raise TypeError(
                f"rumus.save can't save a dict key of type {type(k).__name__!r} "
                f"(in {_path_str(path)}); keys must be str, int, float, bool or None"
            )
        return self.leaf(k)

    def tensor(self, t, path):
        node = {"tensor": self.unique_name(path)}
        if type(t) is not _rumus.Tensor:
            if type(t) is not _parameter_class():
                raise TypeError(
                    f"rumus.save can't save a Tensor subclass {type(t).__name__!r} "
                    f"(at {_path_str(path)}); save a plain Tensor (t.detach()) instead"
                )
            node["parameter"] = True
        if t.requires_grad:
            node["requires_grad"] = True
        self.tensors.append((node["tensor"], t))
        return node


def _is_flat(obj):
    """A plain dict of str -> plain Tensor: saved without rumus metadata."""
    return type(obj) is dict and all(
        type(k) is str and k != _METADATA and type(v) is _rumus.Tensor and not v.requires_grad
        for k, v in obj.items()
    )


def _tensor_bytes(t):
    """The tensor's values as a contiguous little-endian uint8 array."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.to("cpu")
    if t.dtype == _rumus.bfloat16:
        # The float32 values are bf16 values, so their top 16 bits are the bf16 bits.
        a = (np.ascontiguousarray(t.float().numpy()).view(np.uint32) >> 16).astype(np.uint16)
    else:
        a = np.ascontiguousarray(t.numpy())
    if sys.byteorder == "big":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.reshape(-1).view(np.uint8)


def _write(obj, f):
    if _is_flat(obj):
        tensors, metadata = list(obj.items()), None
    else:
        plan = _Plan()
        root = plan.node(obj, ())
        tensors = plan.tensors
        metadata = {
            _STRUCTURE_KEY: json.dumps(
                {"version": _STRUCTURE_VERSION, "root": root},
                separators=(",", ":"),
                allow_nan=False,
            )
        }
    header = {}
    if metadata is not None:
        header[_METADATA] = metadata
    offset = 0
    for name, t in tensors:
        if t.dtype not in _NAME_OF:
            raise TypeError(f"rumus.save: unsupported dtype {t.dtype} (tensor {name!r})")
        nbytes = t.numel() * t.element_size()
        header[name] = {
            "dtype": _NAME_OF[t.dtype],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + nbytes],
        }
        offset += nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # keeps the data 8-byte aligned
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for name, t in tensors:
        data = _tensor_bytes(t)
        assert data.nbytes == header[name]["data_offsets"][1] - header[name]["data_offsets"][0]
        f.write(data)


def _fsync_dir(directory):
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # e.g. Windows can't open directories
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def save(obj, f):
    """Save ``obj`` (a Tensor or a nested dict/list/tuple of Tensors, int, float,
    bool, str, None) to ``f``, a path or a writable binary file object, in the
    safetensors format.

    Writing to a path is atomic: the data goes to a temporary file in the same
    directory, which replaces the target only once it is complete and synced,
    so a failure leaves any existing file untouched.
    """
    if hasattr(f, "write"):
        _write(obj, f)
        return
    if not isinstance(f, (str, bytes, os.PathLike)):
        raise TypeError(
            f"rumus.save: f must be a path or a writable binary file object, got {type(f).__name__}"
        )
    # realpath: saving through a symlink updates the file it points to.
    target = os.path.realpath(os.fsdecode(os.fspath(f)))
    directory, base = os.path.split(target)
    tmp = os.path.join(directory, f".{base}.{secrets.token_hex(8)}.tmp")
    # O_EXCL with the default mode: the new file gets the usual permissions (umask applies).
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as out:
            _write(obj, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


# ---------------------------------------------------------------- load


def _fail(where, what):
    raise RuntimeError(f"rumus.load: {where}: {what}")


def _read_buffer(f, mmap, where):
    """The whole file as a writable uint8 array (tensors become views of it)."""
    if hasattr(f, "read"):
        if mmap:
            raise ValueError("rumus.load: mmap=True needs a file path, not a file object")
        buf = bytearray()
        while chunk := f.read(1 << 24):
            buf += chunk
        return np.frombuffer(buf, dtype=np.uint8)
    path = os.fspath(f)
    size = os.path.getsize(path)
    if size < 8:
        _fail(where, f"file too short ({size} bytes) to be a safetensors file")
    if mmap is False:
        return np.fromfile(path, dtype=np.uint8)
    # Copy-on-write: writable (so from_numpy shares it), and writes never reach the file.
    return np.memmap(path, dtype=np.uint8, mode="c")


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _parse_header(buf, where):
    if len(buf) < 8:
        _fail(where, f"file too short ({len(buf)} bytes) to be a safetensors file")
    head = bytes(buf[:8])
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06") or (head[0] == 0x80 and 2 <= head[1] <= 5):
        _fail(
            where,
            "not a safetensors file; rumus.load reads safetensors files only, never "
            "pickles (this looks like a PyTorch zip/pickle checkpoint)",
        )
    (n,) = struct.unpack("<Q", head)
    if n > len(buf) - 8:
        _fail(where, f"header length {n} is larger than the file ({len(buf)} bytes)")
    try:
        header = json.loads(bytes(buf[8 : 8 + n]).decode("utf-8"), object_pairs_hook=_no_duplicates)
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError included
        _fail(where, f"header is not valid JSON ({e})")
    if not isinstance(header, dict):
        _fail(where, f"header is not a JSON object (got {type(header).__name__})")
    return header, 8 + n


def _uints(xs):
    return isinstance(xs, list) and all(type(x) is int and x >= 0 for x in xs)


def _check_entries(header, data_size, where):
    """Validates every tensor entry; returns {name: (dtype name, shape, begin, end)}."""
    metadata = header.pop(_METADATA, None)
    if metadata is not None and not (
        isinstance(metadata, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        _fail(where, "__metadata__ must be an object of str -> str")
    entries = {}
    for name, e in header.items():
        if not (isinstance(e, dict) and set(e) == {"dtype", "shape", "data_offsets"}):
            _fail(where, f"tensor {name!r}: entry must have exactly dtype, shape and data_offsets")
        dtype, shape, offs = e["dtype"], e["shape"], e["data_offsets"]
        if dtype in _UNSUPPORTED:
            _fail(where, f"tensor {name!r} has dtype {dtype}, which rumus doesn't support")
        if dtype not in _DTYPES:
            _fail(where, f"tensor {name!r} has unknown dtype {dtype!r}")
        if not _uints(shape):
            _fail(
                where, f"tensor {name!r}: shape must be a list of non-negative ints, got {shape!r}"
            )
        if not (_uints(offs) and len(offs) == 2 and offs[0] <= offs[1]):
            _fail(
                where,
                f"tensor {name!r}: data_offsets must be [begin, end] with "
                f"0 <= begin <= end, got {offs!r}",
            )
        itemsize = np.dtype(_DTYPES[dtype][1]).itemsize
        numel = math.prod(shape)
        if offs[1] - offs[0] != numel * itemsize:
            _fail(
                where,
                f"tensor {name!r}: data_offsets {offs} hold {offs[1] - offs[0]} bytes but "
                f"shape {shape} of {dtype} needs {numel * itemsize}",
            )
        if offs[1] > data_size:
            _fail(
                where,
                f"tensor {name!r}: data_offsets {offs} are out of range "
                f"(the data section has {data_size} bytes)",
            )
        entries[name] = (dtype, shape, offs[0], offs[1])
    end = 0
    for name, (_, _, begin, stop) in sorted(entries.items(), key=lambda kv: kv[1][2:]):
        if begin != end:
            what = (
                "overlaps the previous tensor"
                if begin < end
                else f"leaves a gap of {begin - end} bytes"
            )
            _fail(where, f"tensor {name!r} at data_offsets {[begin, stop]} {what}")
        end = stop
    if end != data_size:
        _fail(where, f"{data_size - end} bytes of trailing data after the last tensor")
    return entries, metadata or {}


def _make_tensor(data, dtype, shape):
    """A rumus tensor over ``data`` (a uint8 slice); zero-copy when aligned."""
    rdt, np_dtype = _DTYPES[dtype]
    a = data.view(np_dtype)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if dtype == "BF16":
        a = (a.astype(np.uint32) << 16).view(np.float32)
    elif dtype == "BOOL" and (a > 1).any():
        a = a != 0  # any non-zero byte is True, as in C and NumPy
    elif dtype == "BOOL":
        a = a.view(np.bool_)
    t = _rumus.from_numpy(a.reshape(shape))
    return t.to(rdt) if dtype == "BF16" else t


class _Rebuild:
    def __init__(self, tensors, where):
        self.tensors, self.where = tensors, where

    def bad(self, what):
        _fail(self.where, f"unknown {_STRUCTURE_KEY} metadata: {what}")

    def leaf(self, node):
        if node is None or type(node) in (bool, int, str):
            return node
        if isinstance(node, dict) and set(node) == {"float"} and isinstance(node["float"], str):
            try:
                return float(node["float"])
            except ValueError:
                pass
        self.bad(f"{node!r} is not a leaf value")

    def node(self, node):
        if isinstance(node, dict) and "tensor" in node:
            return self.tensor(node)
        if isinstance(node, dict) and len(node) == 1:
            ((tag, items),) = node.items()
            if tag in ("list", "tuple") and isinstance(items, list):
                seq = [self.node(v) for v in items]
                return seq if tag == "list" else tuple(seq)
            if tag in ("dict", "odict") and isinstance(items, list):
                out = {} if tag == "dict" else collections.OrderedDict()
                for kv in items:
                    if not (isinstance(kv, list) and len(kv) == 2):
                        self.bad(f"dict item {kv!r} is not a [key, value] pair")
                    out[self.leaf(kv[0])] = self.node(kv[1])
                return out
        return self.leaf(node)

    def tensor(self, node):
        extra = set(node) - {"tensor", "requires_grad", "parameter"}
        if (
            extra
            or node.get("requires_grad", True) is not True
            or node.get("parameter", True) is not True
        ):
            self.bad(f"tensor node {node!r}")
        t = self.tensors.get(node["tensor"]) if isinstance(node["tensor"], str) else None
        if t is None:
            self.bad(f"no tensor named {node['tensor']!r} in the file")
        if node.get("parameter"):
            return _parameter_class()(t, requires_grad=bool(node.get("requires_grad")))
        return t.requires_grad_() if node.get("requires_grad") else t


def load(f, map_location=None, *, weights_only=True, mmap=None):
    """Load what :func:`save` wrote (or any safetensors file) from ``f``, a
    path or a readable binary file object.

    Never runs code from the file (there is no pickle), so ``weights_only``
    changes nothing. ``map_location`` may be None or 'cpu' (other devices
    later). Unlike PyTorch, a path is memory-mapped by default (``mmap=None``
    or True): tensors are zero-copy copy-on-write views of the file, so the
    file must not be truncated or rewritten in place while they live (saving
    over it with rumus.save is fine: that replaces the file). ``mmap=False``
    reads the file into memory.
    """
    if map_location is not None:
        dev = (
            map_location
            if isinstance(map_location, _rumus.device)
            else _rumus.device(map_location)
            if isinstance(map_location, str)
            else None
        )
        if dev is None or dev.type != "cpu":
            raise RuntimeError(
                f"rumus.load: map_location={map_location!r} is not supported yet; "
                "tensors load on the CPU (use None or 'cpu', then .to(device))"
            )
    if not hasattr(f, "read") and not isinstance(f, (str, bytes, os.PathLike)):
        raise TypeError(
            f"rumus.load: f must be a path or a readable binary file object, got {type(f).__name__}"
        )
    where = (
        repr(os.fsdecode(os.fspath(f)))
        if not hasattr(f, "read")
        else f"file object {getattr(f, 'name', type(f).__name__)!r}"
    )
    buf = _read_buffer(f, mmap, where)
    header, start = _parse_header(buf, where)
    entries, metadata = _check_entries(header, len(buf) - start, where)
    unknown = sorted(k for k in metadata if k.startswith("rumus.") and k != _STRUCTURE_KEY)
    if unknown:
        _fail(where, f"unknown rumus metadata {unknown} (written by a newer rumus?)")
    data = buf[start:]
    tensors = {
        name: _make_tensor(data[b:e], dtype, shape)
        for name, (dtype, shape, b, e) in entries.items()
    }
    if _STRUCTURE_KEY not in metadata:
        return tensors
    try:
        structure = json.loads(metadata[_STRUCTURE_KEY])
    except ValueError as e:
        _fail(where, f"{_STRUCTURE_KEY} metadata is not valid JSON ({e})")
    if not (isinstance(structure, dict) and set(structure) == {"version", "root"}):
        _fail(where, f"unknown {_STRUCTURE_KEY} metadata: expected an object with version and root")
    if type(structure["version"]) is not int or structure["version"] != _STRUCTURE_VERSION:
        _fail(
            where,
            f"{_STRUCTURE_KEY} version {structure['version']!r} is not supported "
            f"(this rumus reads version {_STRUCTURE_VERSION})",
        )
    return _Rebuild(tensors, where).node(structure["root"])
