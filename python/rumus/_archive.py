"""The zip checkpoint format of rumus.save / rumus.load: a pickle of the object
beside the raw bytes of its tensors (see rumus.serialization for the layout).

Tensors pickle as a call to :func:`_rebuild_tensor` (or
:func:`_rebuild_tensor_subclass` for Parameters) whose first argument is a
persistent reference to a storage record, so every tensor of one storage is
one record in the file and comes back as a view of one loaded storage.
NumPy arrays and scalars pickle the same way (records, or inline bytes), so a
weights-only load needs no NumPy globals and runs no NumPy unpickling code.

The weights-only unpickler is the pure-Python one with its opcode table
restricted: globals come only from the allowlist, REDUCE/NEWOBJ call only
allowlisted callables and classes, BUILD sets the state of allowlisted classes
only, and APPEND/SETITEM/ADD only fill built-in containers.
"""

import _compat_pickle
import collections
import ctypes
import io
import os
import pickle
import struct
import sys
import tempfile
import zipfile
import zlib

import numpy as np

from . import _rumus
from ._size import Size

FORMAT_VERSION = 1
PREFIX = "archive/"
VERSION_RECORD = PREFIX + "rumus_version"
PICKLE_RECORD = PREFIX + "data.pkl"
DATA_PREFIX = PREFIX + "data/"
ALIGN = 64  # tensor bytes start at multiples of this in the file (zero-copy mmap)
_PAD_EXTRA_ID = 0x5252  # id of the zip "extra" field that pads local headers
_CHUNK = 1 << 26

_DTYPES = {
    name: getattr(_rumus, name)
    for name in ("float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool")
}
_NP_DTYPES = {
    "float32": "<f4",
    "float64": "<f8",
    "float16": "<f2",
    "int64": "<i8",
    "int32": "<i4",
    "uint8": "u1",
    "bool": "?",
}
_NP_KINDS = set("biufcSUmM")

if sys.byteorder != "little":  # pragma: no cover - rumus targets little-endian machines
    raise ImportError("rumus checkpoints store little-endian data; this machine is big-endian")


def _dtype_name(dtype):
    return str(dtype).removeprefix("rumus.")


# ---------------------------------------------------------------- views of a storage


def _view_plan(shape, strides):
    """How a view with this layout is cut out of a flat storage with narrow /
    unflatten / select: the dims of size > 1 and stride > 0, outermost (largest
    stride) first, and the number of elements read from the view's offset.
    None when the layout overlaps itself (no such chain of views gives it)."""
    core = sorted(
        (i for i in range(len(shape)) if shape[i] > 1 and strides[i] > 0),
        key=lambda i: -strides[i],
    )
    for a, b in zip(core, core[1:]):
        if shape[b] * strides[b] > strides[a]:
            return None
    return core, (shape[core[0]] * strides[core[0]] if core else 1)


def _extent(offset, shape, strides):
    """One past the last element a (non-empty) view reads."""
    return offset + sum((n - 1) * s for n, s in zip(shape, strides)) + 1


def _strided_view(flat, offset, shape, strides):
    """The view of the 1-d tensor ``flat`` with this offset, shape and strides."""
    if 0 in shape:
        return flat.narrow(0, 0, 0).reshape(shape)
    plan = _view_plan(shape, strides)
    if plan is None:
        raise ValueError(f"strides {list(strides)} overlap for shape {list(shape)}")
    core, need = plan
    if offset + need > flat.numel():
        raise ValueError(
            f"a view at offset {offset} with shape {list(shape)} and strides {list(strides)} "
            f"reads past the end of its storage ({flat.numel()} elements)"
        )
    x = flat.narrow(0, offset, need)
    if core:
        x = x.reshape(shape[core[0]], strides[core[0]])
        for a, b in zip(core, core[1:]):
            x = x.narrow(-1, 0, shape[b] * strides[b]).unflatten(-1, (shape[b], strides[b]))
        x = x.select(-1, 0).permute(sorted(range(len(core)), key=lambda j: core[j]))
    else:
        x = x.reshape(())
    for i in range(len(shape)):
        if i not in core:
            x = x.unsqueeze(i)
    return x if tuple(x.shape) == tuple(shape) else x.expand(*shape)


# ---------------------------------------------------------------- rebuild functions
# The globals a checkpoint names; all are allowlisted for weights-only loads, so
# each validates its arguments (they come from the file).


def _check_layout(offset, shape, strides):
    ok = (
        type(offset) is int
        and offset >= 0
        and isinstance(shape, tuple)
        and isinstance(strides, tuple)
        and len(shape) == len(strides)
        and all(type(n) is int and n >= 0 for n in shape)
        and all(type(s) is int and s >= 0 for s in strides)
    )
    if not ok:
        raise pickle.UnpicklingError(
            f"bad tensor layout: offset {offset!r}, shape {shape!r}, strides {strides!r}"
        )


def _rebuild_tensor(storage, offset, shape, strides, requires_grad):
    if not isinstance(storage, _rumus.Tensor) or storage.dim() != 1:
        raise pickle.UnpicklingError(f"a tensor's storage must be a loaded record, not {storage!r}")
    _check_layout(offset, shape, strides)
    try:
        t = _strided_view(storage, offset, shape, strides)
    except ValueError as e:
        raise pickle.UnpicklingError(f"bad tensor layout: {e}") from None
    return t.requires_grad_() if requires_grad is True else t


def _rebuild_tensor_subclass(cls, storage, offset, shape, strides, requires_grad, state):
    if not (isinstance(cls, type) and issubclass(cls, _rumus.Tensor)):
        raise pickle.UnpicklingError(f"{cls!r} is not a Tensor subclass")
    t = _rebuild_tensor(storage, offset, shape, strides, False)
    out = _rumus.Tensor.__new__(cls, t, requires_grad is True)
    if state:
        if not isinstance(state, dict):
            raise pickle.UnpicklingError(f"a tensor's state must be a dict, not {state!r}")
        out.__dict__.update(state)
    return out


def _numpy_dtype(descr):
    dt = np.dtype(descr) if type(descr) is str else None
    if dt is None or dt.kind not in _NP_KINDS or dt.fields is not None or dt.hasobject:
        raise pickle.UnpicklingError(f"unsupported NumPy dtype {descr!r}")
    return dt


def _rebuild_ndarray(data, descr, shape, fortran):
    dt = _numpy_dtype(descr)
    if not (isinstance(data, np.ndarray) and data.dtype == np.uint8 and data.ndim == 1):
        raise pickle.UnpicklingError(f"an array's data must be a loaded record, not {data!r}")
    if not (isinstance(shape, tuple) and all(type(n) is int and n >= 0 for n in shape)):
        raise pickle.UnpicklingError(f"bad array shape {shape!r}")
    n = 1
    for d in shape:
        n *= d
    if n * dt.itemsize != data.nbytes:
        raise pickle.UnpicklingError(
            f"array of shape {list(shape)} and dtype {dt} needs {n * dt.itemsize} bytes, "
            f"its record has {data.nbytes}"
        )
    flat = data.copy().view(dt) if n else np.empty(0, dt)
    return flat.reshape(shape, order="F" if fortran is True else "C")


def _rebuild_numpy_scalar(descr, raw):
    dt = _numpy_dtype(descr)
    if type(raw) is not bytes or len(raw) != dt.itemsize:
        raise pickle.UnpicklingError(f"a {dt} scalar needs {dt.itemsize} bytes, got {raw!r}")
    return np.frombuffer(raw, dt)[0]


def _rebuild_dtype(name):
    if name not in _DTYPES:
        raise pickle.UnpicklingError(f"unknown dtype {name!r}")
    return _DTYPES[name]


def _rebuild_device(name):
    if type(name) is not str:
        raise pickle.UnpicklingError(f"a device name must be a str, not {name!r}")
    return _rumus.device(name)


# ---------------------------------------------------------------- save


class _Ref:
    """Stands for a record in the pickle (written as a persistent id)."""

    __slots__ = ("pid",)

    def __init__(self, pid):
        self.pid = pid


class _Storage:
    """A record holding elements [0, end) of one storage (zeros past `valid`)."""

    def __init__(self, key, dtype, location, base, keep):
        self.key, self.dtype, self.location = key, dtype, location
        self.base, self.keep = base, keep  # CPU address of element 0; tensors keeping it alive
        self.valid = self.end = 0
        self.ref = _Ref(("storage", key, _dtype_name(dtype), location))

    def cover(self, offset, shape, strides, need):
        if 0 not in shape:
            self.valid = max(self.valid, _extent(offset, shape, strides))
            self.end = max(self.end, offset + need)

    def nbytes(self):
        return self.end * self.dtype.itemsize

    def chunks(self):
        item = self.dtype.itemsize
        done, valid = 0, self.valid * item
        while done < valid:
            n = min(_CHUNK, valid - done)
            yield memoryview((ctypes.c_char * n).from_address(self.base + done)).cast("B")
            done += n
        if self.end > self.valid:
            yield bytes((self.end - self.valid) * item)


class _Bytes:
    def __init__(self, key, data):
        self.key, self.data = key, data
        self.ref = _Ref(("bytes", key))

    def nbytes(self):
        return len(self.data)

    def chunks(self):
        yield self.data


class Pickler(pickle.Pickler):
    """Pickles tensors and NumPy data as references to records (``self.records``)."""

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self.records = []
        self._storages = {}  # (base address, dtype) -> _Storage

    def persistent_id(self, obj):
        return obj.pid if type(obj) is _Ref else None

    def _new_storage(self, dtype, location, base, keep):
        s = _Storage(str(len(self.records)), dtype, location, base, keep)
        self.records.append(s)
        return s

    def _tensor(self, t):
        dtype = t.dtype
        item = dtype.itemsize
        shape, strides = tuple(t.shape), tuple(t.stride())
        plan = None if 0 in shape else _view_plan(shape, strides)
        if t.device.type == "cpu" and plan is not None:
            base = t.data_ptr() - t.storage_offset() * item
            key = (base, _dtype_name(dtype))
            storage = self._storages.get(key)
            if storage is None:
                storage = self._storages[key] = self._new_storage(dtype, "cpu", base, [t])
            else:
                storage.keep.append(t)
            offset = t.storage_offset()
        else:
            # A GPU tensor (rumus can't tell which GPU tensors share memory), an
            # empty one, or a self-overlapping layout: a storage of its own.
            c = t.detach().contiguous()
            location = str(t.device) if c.device.type != "cpu" else "cpu"
            c = c.cpu()
            base = c.data_ptr() if c.numel() else 0
            storage = self._new_storage(dtype, location, base, [c])
            offset, strides = 0, tuple(c.stride())
            plan = _view_plan(shape, strides) if 0 not in shape else ([], 0)
        storage.cover(offset, shape, strides, plan[1] if plan else 0)
        return storage.ref, offset, shape, strides, bool(t.requires_grad)

    def reducer_override(self, obj):
        if isinstance(obj, _rumus.Tensor):
            args = self._tensor(obj)
            if type(obj) is _rumus.Tensor:
                return _rebuild_tensor, args
            state = getattr(obj, "__dict__", None) or None
            return _rebuild_tensor_subclass, (type(obj), *args, state)
        t = type(obj)
        if t is np.ndarray and obj.dtype.kind in _NP_KINDS and obj.dtype.fields is None:
            fortran = obj.ndim > 1 and obj.flags.f_contiguous and not obj.flags.c_contiguous
            data = obj.tobytes(order="F" if fortran else "C")
            rec = _Bytes(str(len(self.records)), data)
            self.records.append(rec)
            return _rebuild_ndarray, (rec.ref, obj.dtype.str, obj.shape, fortran)
        if isinstance(obj, np.generic) and obj.dtype.kind in _NP_KINDS and obj.dtype.fields is None:
            return _rebuild_numpy_scalar, (obj.dtype.str, obj.tobytes())
        if t is _rumus.dtype:
            return _rebuild_dtype, (_dtype_name(obj),)
        if t is _rumus.device:
            return _rebuild_device, (str(obj),)
        return NotImplemented


def _zip_info(name, size, pos):
    """A ZipInfo whose data, written at file position `pos`, starts ALIGN-aligned."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.file_size = size
    info.external_attr = 0o644 << 16
    zip64 = size * 1.05 > zipfile.ZIP64_LIMIT  # zipfile's own rule for a given file_size
    header = 30 + len(name.encode()) + (20 if zip64 else 0) + 4
    pad = -(pos + header) % ALIGN
    info.extra = struct.pack("<HH", _PAD_EXTRA_ID, pad) + bytes(pad)
    return info, zip64


def _write_record(zf, fobj, name, size, chunks):
    info, zip64 = _zip_info(name, size, fobj.tell())
    with zf.open(info, "w", force_zip64=zip64) as out:
        for c in chunks:
            out.write(c)


def prepare(obj, protocol):
    """Pickles `obj`: (the pickle's bytes, the records it refers to)."""
    buf = io.BytesIO()
    pickler = Pickler(buf, protocol)
    pickler.dump(obj)
    return buf.getvalue(), pickler.records


def write_archive(prepared, fobj):
    """Writes the archive of a prepared object to the seekable binary file `fobj`."""
    data_pkl, records = prepared
    with zipfile.ZipFile(fobj, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        _write_record(zf, fobj, VERSION_RECORD, 2, [f"{FORMAT_VERSION}\n".encode()])
        _write_record(zf, fobj, PICKLE_RECORD, len(data_pkl), [data_pkl])
        for rec in records:
            _write_record(zf, fobj, DATA_PREFIX + rec.key, rec.nbytes(), rec.chunks())


def write_all(f, data):
    """f.write until all of `data` is written (raw files may take part of it)."""
    mv = memoryview(data).cast("B")
    while mv:
        n = f.write(mv)
        if n is None:  # some file-like objects return nothing: all was taken
            return
        mv = mv[n:]


def save_to_stream(prepared, f):
    """Writes the archive to a file object (through a temporary file: zipfile
    needs to seek, and `f` may take part of each write)."""
    with tempfile.TemporaryFile() as tmp:
        write_archive(prepared, tmp)
        tmp.seek(0)
        while chunk := tmp.read(1 << 24):
            write_all(f, chunk)


# ---------------------------------------------------------------- load


class _MemoryFile(io.RawIOBase):
    """A read-only seekable file over a buffer (zipfile reads the directory through it)."""

    def __init__(self, buf):
        self._mv, self._pos = memoryview(buf).cast("B"), 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def readinto(self, b):
        n = max(0, min(len(b), len(self._mv) - self._pos))
        b[:n] = self._mv[self._pos : self._pos + n]
        self._pos += n
        return n

    def seek(self, pos, whence=0):
        self._pos = max(0, pos + (0, self._pos, len(self._mv))[whence])
        return self._pos

    def tell(self):
        return self._pos


class CorruptArchive(RuntimeError):
    pass


class Archive:
    """The records of a loaded archive: (offset, size) in `buf` by name."""

    def __init__(self, buf, verify_data):
        self.buf, self.verify_data = buf, verify_data
        try:
            with zipfile.ZipFile(_MemoryFile(buf)) as zf:
                infos = zf.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as e:
            raise CorruptArchive(f"truncated or corrupt zip archive ({e})") from None
        self.records = {}
        for info in infos:
            self.records[info.filename] = self._locate(info)

    def _locate(self, info):
        if info.compress_type != zipfile.ZIP_STORED:
            raise CorruptArchive(
                f"record {info.filename!r} is compressed (rumus writes them stored)"
            )
        head = bytes(memoryview(self.buf)[info.header_offset : info.header_offset + 30])
        if len(head) < 30 or head[:4] != b"PK\x03\x04":
            raise CorruptArchive(f"record {info.filename!r}: bad local header")
        n, m = struct.unpack("<HH", head[26:30])
        start = info.header_offset + 30 + n + m
        if start + info.file_size > len(self.buf):
            raise CorruptArchive(f"record {info.filename!r} runs past the end of the file")
        return start, info.file_size, info.CRC

    def has(self, name):
        return name in self.records

    def bytes_of(self, name, verify=True):
        """A zero-copy uint8 array of the record (writable: the buffer is)."""
        if name not in self.records:
            raise CorruptArchive(f"record {name!r} is missing")
        start, size, crc = self.records[name]
        data = np.frombuffer(self.buf, np.uint8, size, start) if size else np.empty(0, np.uint8)
        if verify and zlib.crc32(data) != crc:
            raise CorruptArchive(f"record {name!r} is corrupt (CRC mismatch)")
        return data


def _flat_tensor(data, dtype_name, key):
    dtype = _DTYPES[dtype_name]
    if data.nbytes % dtype.itemsize:
        raise CorruptArchive(
            f"storage {key!r}: {data.nbytes} bytes is not a whole number of {dtype_name} elements"
        )
    if data.nbytes == 0:
        return _rumus.empty(0, dtype=dtype)
    if dtype_name == "bfloat16":  # NumPy has no bfloat16: the safetensors reader takes the bits
        header = (
            f'{{"t":{{"dtype":"BF16","shape":[{data.nbytes // 2}],'
            f'"data_offsets":[0,{data.nbytes}]}}}}'
        ).encode()
        header += b" " * (-len(header) % 8)
        raw = struct.pack("<Q", len(header)) + header + data.tobytes()
        return _rumus._load_bytes(raw, "a bfloat16 record")[0]["t"]
    return _rumus.from_numpy(data.view(_NP_DTYPES[dtype_name]))


class _Loader:
    """What both unpicklers share: records as storages, map_location."""

    def __init__(self, archive, restore):
        self.archive, self.restore = archive, restore
        self.storages = {}

    def persistent_load(self, pid):
        if isinstance(pid, tuple) and len(pid) == 4 and pid[0] == "storage":
            _, key, dtype_name, location = pid
            if type(key) is not str or dtype_name not in _DTYPES or type(location) is not str:
                raise pickle.UnpicklingError(f"bad storage reference {pid!r}")
            if key not in self.storages:
                data = self.archive.bytes_of(DATA_PREFIX + key, self.archive.verify_data)
                flat = _flat_tensor(data, dtype_name, key)
                self.storages[key] = self.restore(flat, location)
            return self.storages[key]
        if isinstance(pid, tuple) and len(pid) == 2 and pid[0] == "bytes" and type(pid[1]) is str:
            return self.archive.bytes_of(DATA_PREFIX + pid[1], self.archive.verify_data)
        raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")


class FullUnpickler(pickle.Unpickler):
    """weights_only=False: any global, any callable (trusted files only)."""

    def __init__(self, file, loader, **kw):
        super().__init__(file, **kw)
        self._loader = loader

    def persistent_load(self, pid):
        return self._loader.persistent_load(pid)


# -------------------------------------------------------- the weights-only unpickler

_P = pickle._Unpickler

_BUILTIN_CONTAINERS = (dict, collections.OrderedDict, collections.defaultdict, collections.Counter)

# Always allowed: what rumus checkpoints name, and harmless built-ins.
DEFAULT_SAFE_GLOBALS = [
    _rebuild_tensor,
    _rebuild_tensor_subclass,
    _rebuild_ndarray,
    _rebuild_numpy_scalar,
    _rebuild_dtype,
    _rebuild_device,
    Size,
    collections.OrderedDict,
    collections.defaultdict,
    collections.Counter,
    dict,
    list,
    tuple,
    set,
    frozenset,
    bytearray,
    complex,
    slice,
    int,
    float,
    bool,
    str,
    bytes,
]


def global_name(obj):
    return f"{getattr(obj, '__module__', None)}.{getattr(obj, '__qualname__', None)}"


class WeightsUnpickler(_P):
    """weights_only=True: see the module docstring for what it allows."""

    def __init__(self, file, loader, allowed, user_allowed):
        super().__init__(file)
        self._loader, self._allowed = loader, allowed
        self._allowed_ids = {id(v) for v in allowed.values()}
        # BUILD sets the state of objects of the classes the user allowlisted only.
        self._buildable_ids = {id(v) for v in user_allowed}

    def persistent_load(self, pid):
        return self._loader.persistent_load(pid)

    def find_class(self, module, name):
        # Nothing is imported: only objects already named by the allowlist come back.
        if self.proto < 3:  # Python 2 names (protocol 2 writes builtins as __builtin__)
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
        full = f"{module}.{name}"
        if full in self._allowed:
            return self._allowed[full]
        short = name.rsplit(".", 1)[-1]
        raise pickle.UnpicklingError(
            f"Weights only load failed: unsupported global {full} is not an allowed global. "
            f"If you trust this class/function, allowlist it with "
            f"rumus.serialization.add_safe_globals([{short}]) or the "
            f"rumus.serialization.safe_globals([{short}]) context manager, then load again; or, "
            f"only if you trust the whole file, load it with weights_only=False (which can run "
            f"arbitrary code from the file)."
        )

    def _check_callable(self, func, what):
        if id(func) not in self._allowed_ids:
            raise pickle.UnpicklingError(
                f"Weights only load failed: {what} of {func!r}, which is not an allowed global"
            )

    def load_reduce(self):
        self._check_callable(self.stack[-2], "a call")
        _P.load_reduce(self)

    def load_newobj(self):
        cls = self.stack[-2]
        self._check_callable(cls, "creating an object")
        if not isinstance(cls, type):
            raise pickle.UnpicklingError(f"Weights only load failed: NEWOBJ of {cls!r}")
        _P.load_newobj(self)

    def load_newobj_ex(self):
        cls = self.stack[-3]
        self._check_callable(cls, "creating an object")
        if not isinstance(cls, type):
            raise pickle.UnpicklingError(f"Weights only load failed: NEWOBJ_EX of {cls!r}")
        _P.load_newobj_ex(self)

    def load_build(self):
        inst = self.stack[-2]
        if id(type(inst)) not in self._buildable_ids:
            raise pickle.UnpicklingError(
                f"Weights only load failed: setting the state of a {global_name(type(inst))} "
                "object, which is not an allowed global"
            )
        _P.load_build(self)

    def _container(self, kinds, obj, what):
        if type(obj) not in kinds and not (
            isinstance(obj, kinds) and id(type(obj)) in self._buildable_ids
        ):
            raise pickle.UnpicklingError(
                f"Weights only load failed: {what} into a {type(obj).__name__}"
            )

    def load_append(self):
        self._container((list,), self.stack[-2], "appending")
        _P.load_append(self)

    def load_appends(self):
        self._container((list,), self.metastack[-1][-1], "appending")
        _P.load_appends(self)

    def load_setitem(self):
        self._container(_BUILTIN_CONTAINERS, self.stack[-3], "setting items")
        _P.load_setitem(self)

    def load_setitems(self):
        self._container(_BUILTIN_CONTAINERS, self.metastack[-1][-1], "setting items")
        _P.load_setitems(self)

    def load_additems(self):
        self._container((set,), self.metastack[-1][-1], "adding items")
        _P.load_additems(self)

    def _refuse(self):
        raise pickle.UnpicklingError(
            "Weights only load failed: the pickle uses an opcode (INST, OBJ, EXT or "
            "out-of-band buffers) that weights-only loading does not allow"
        )

    dispatch = dict(_P.dispatch)
    for _op, _fn in [
        (pickle.REDUCE, load_reduce),
        (pickle.NEWOBJ, load_newobj),
        (pickle.NEWOBJ_EX, load_newobj_ex),
        (pickle.BUILD, load_build),
        (pickle.APPEND, load_append),
        (pickle.APPENDS, load_appends),
        (pickle.SETITEM, load_setitem),
        (pickle.SETITEMS, load_setitems),
        (pickle.ADDITEMS, load_additems),
    ]:
        dispatch[_op[0]] = _fn
    for _op in (
        pickle.INST,
        pickle.OBJ,
        pickle.EXT1,
        pickle.EXT2,
        pickle.EXT4,
        pickle.NEXT_BUFFER,
        pickle.READONLY_BUFFER,
    ):
        dispatch[_op[0]] = _refuse
    del _op, _fn


def read_archive(buf, *, verify_data, restore, weights_only, allowed, user_allowed, pickle_kw):
    """The object in the archive held by `buf` (a buffer: mmap or bytearray)."""
    archive = Archive(buf, verify_data)
    if not archive.has(VERSION_RECORD):
        raise CorruptArchive(
            "a zip archive but not a rumus checkpoint (it has no archive/rumus_version record); "
            "PyTorch's torch.save files can't be read by rumus.load: export the tensors with "
            "safetensors instead"
        )
    version = bytes(archive.bytes_of(VERSION_RECORD)).strip()
    if version != str(FORMAT_VERSION).encode():
        raise CorruptArchive(
            f"checkpoint format version {version.decode(errors='replace')!r} is not supported "
            f"(this rumus reads version {FORMAT_VERSION})"
        )
    data_pkl = archive.bytes_of(PICKLE_RECORD)
    loader = _Loader(archive, restore)
    f = io.BytesIO(data_pkl.tobytes())
    if weights_only:
        unpickler = WeightsUnpickler(f, loader, allowed, user_allowed)
    else:
        unpickler = FullUnpickler(f, loader, **pickle_kw)
    return unpickler.load()


def map_file(path):
    """A private (copy-on-write) memory map of the file at `path`."""
    import mmap

    with open(path, "rb") as fobj:
        return mmap.mmap(fobj.fileno(), 0, access=mmap.ACCESS_COPY)


# ---------------------------------------------------------------- atomic writes


def _alive(pid):
    if pid <= 0 or not hasattr(os, "kill"):
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _remove_stale(d, base):
    """Removes `.{base}.{pid}.{token}.tmp` files left by processes that no longer exist
    (the same names as the Rust writer's)."""
    prefix = f".{base}."
    try:
        names = os.listdir(d)
    except OSError:
        return
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        pid, _, token = name[len(prefix) : -4].partition(".")
        if not (pid.isdigit() and token and all(c in "0123456789abcdefABCDEF" for c in token)):
            continue
        if int(pid) != os.getpid() and not _alive(int(pid)):
            try:
                os.remove(os.path.join(d, name))
            except OSError:
                pass


def atomic_write(path, fill):
    """Replaces the file at `path` by what fill(fobj) writes, as the Rust writer does:
    a temporary file in the same directory (unnamed while written, on Linux),
    synced, renamed over the target, and the directory synced."""
    d, base = os.path.split(path)
    d = d or "."
    _remove_stale(d, base)
    tmp = os.path.join(d, f".{base}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
    fd = None
    if hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd"):
        try:
            fd = os.open(d, os.O_TMPFILE | os.O_RDWR, 0o666)
        except OSError:
            fd = None
    if fd is not None:
        with os.fdopen(fd, "w+b") as fobj:
            fill(fobj)
            fobj.flush()
            os.fsync(fobj.fileno())
            # linkat(AT_SYMLINK_FOLLOW) through /proc (os.link calls plain link() unless
            # given a dir fd, and link() would link the /proc symlink itself).
            proc = os.open("/proc/self/fd", os.O_RDONLY)
            try:
                os.link(str(fobj.fileno()), tmp, src_dir_fd=proc, follow_symlinks=True)
            finally:
                os.close(proc)
    else:
        try:
            with open(tmp, "xb") as fobj:
                fill(fobj)
                fobj.flush()
                os.fsync(fobj.fileno())
        except BaseException:
            try:
                os.remove(tmp)
            except OSError:
                pass
            raise
    try:
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
    try:
        dfd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
