"""rumus.save / rumus.load: checkpoints in two formats, chosen by what is saved.

**safetensors**, for plain containers of tensors. A ``dict`` of str -> Tensor
is written as exactly a safetensors file, so the ``safetensors`` package and
other tools read it: 8 bytes (little-endian u64) header length N, N bytes of
JSON header ``{name: {"dtype", "shape", "data_offsets": [begin, end]}, ...,
"__metadata__": {str: str}}`` padded with spaces, then the tensors' bytes back
to back. Nested dicts (OrderedDict too), lists and tuples of Tensors,
Parameters, int, float, bool, str and None (a state_dict, an optimizer's
state_dict, ``{"model": ..., "optimizer": ..., "epoch": 3}``) are safetensors
files too: the tensors are ordinary entries named after their key path, and
the rest is described in the metadata entry ``"rumus.structure"`` (JSON). In
this format every tensor is stored as its own values: tensors sharing storage
come back as independent tensors.

**zip archive**, for any other picklable object (a whole ``nn.Module``, an
optimizer, NumPy arrays, namedtuples, sets, your own classes), in PyTorch's
semantics. The file is a zip archive (records stored, not compressed) of
``archive/rumus_version`` (the format version), ``archive/data.pkl`` (the
pickled object) and ``archive/data/<key>`` (raw little-endian bytes, one
record per storage, aligned to 64 bytes in the file so they can be
memory-mapped). Tensors are pickled as references to their storage's record
plus offset, shape, strides, requires_grad and their class (Parameter), so
a storage shared by several tensors (views, tied weights, an optimizer's
state keyed by the model's parameters) is stored once and loads shared.

:func:`load` tells the formats apart by the file's first bytes. It loads zip
archives with ``weights_only=True`` by default: a restricted unpickler that
rebuilds tensors, Parameters, NumPy arrays and scalars, dtypes, devices, the
built-in containers (dict, OrderedDict, defaultdict, Counter, list, tuple,
set, frozenset) and primitives, and no other global unless you allowlist it
with :func:`add_safe_globals` or :func:`safe_globals` (a whole module needs
its classes allowlisted, as in PyTorch). Nothing is imported and no other
code runs while such a file loads; anything else raises
``pickle.UnpicklingError`` naming the global. ``weights_only=False`` runs
the full unpickler, which can execute arbitrary code: use it only for files
you trust.

Differences from PyTorch: plain containers of tensors are safetensors files
(no sharing, no pickle); NumPy arrays and scalars load under weights_only
without allowlisting (rumus stores their bytes itself); a zip record holds
its storage only up to the last element a saved tensor uses; GPU tensors
that are distinct views of one storage are saved as separate copies (the
same tensor object in several places is saved once); ``.grad`` and hooks
are not saved; ``load`` memory-maps a path by default (``mmap=None``); and
PyTorch's own checkpoints can't be read (their pickles name torch's
internals).

The safetensors bytes are handled in Rust (the ``safetensors`` crate validates
and writes the header); both formats are written atomically (a temporary file
renamed over the target).
"""

import collections
import json
import os
import pickle

from . import _archive, _rumus

_STRUCTURE_KEY = "rumus.structure"
_STRUCTURE_VERSION = 1
_METADATA = "__metadata__"

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


def _flatten(obj):
    """The tensors to write, in order, as (name, tensor), and the metadata
    (None for a flat dict)."""
    if _is_flat(obj):
        return list(obj.items()), None
    plan = _Plan()
    root = plan.node(obj, ())
    structure = json.dumps(
        {"version": _STRUCTURE_VERSION, "root": root}, separators=(",", ":"), allow_nan=False
    )
    return plan.tensors, {_STRUCTURE_KEY: structure}


def _safetensors_plan(obj):
    """(tensors, metadata) when `obj` fits the safetensors format, else None."""
    try:
        return _flatten(obj)
    except (TypeError, ValueError):
        return None


def save(obj, f, pickle_module=None, pickle_protocol=4, **kwargs):
    """Save ``obj`` to ``f``, a path or a writable binary file object.

    A Tensor, or a nested dict/list/tuple of Tensors, int, float, bool, str and
    None (state dicts and the usual ``{"model": ..., "optimizer": ..., "epoch":
    ...}``) is written in the safetensors format; any other picklable object (a
    module, an optimizer, NumPy arrays, namedtuples, ...) as a zip archive with
    its tensors' storages beside the pickle (see the module docstring).
    ``pickle_module`` may only be None or ``pickle``; PyTorch's private keyword
    arguments (``_use_new_zipfile_serialization`` ...) are accepted and ignored.

    Writing to a path is atomic: the data goes to a temporary file in the same
    directory, which replaces the target only once it is complete and synced,
    so a failure leaves any existing file untouched. A process killed while
    saving leaves no temporary file behind (on Linux the file has no name until
    it is complete; elsewhere the next save of the same path removes it).

    Args:
        obj (object): what to save.
        f (str, PathLike or file): a path or a binary file object.
        pickle_module (module, optional): None or ``pickle``.
        pickle_protocol (int): the pickle protocol.
        **kwargs: PyTorch's private keyword arguments, accepted and ignored.
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise TypeError("rumus.save: pickle_module must be None or the pickle module")
    unknown = sorted(k for k in kwargs if not k.startswith("_"))
    if unknown:
        raise TypeError(f"rumus.save() got an unexpected keyword argument {unknown[0]!r}")
    if not hasattr(f, "write") and not isinstance(f, (str, bytes, os.PathLike)):
        raise TypeError(
            f"rumus.save: f must be a path or a writable binary file object, got {type(f).__name__}"
        )
    plan = _safetensors_plan(obj)
    if hasattr(f, "write"):
        if plan is not None:
            _rumus._save_stream(*plan, f)
        else:
            _archive.save_to_stream(_archive.prepare(obj, pickle_protocol), f)
        return
    # realpath: saving through a symlink updates the file it points to.
    path = os.path.realpath(os.fsdecode(os.fspath(f)))
    if plan is not None:
        _rumus._save_file(*plan, path)
        return
    # Pickled before the file system is touched: an unpicklable object leaves nothing behind.
    prepared = _archive.prepare(obj, pickle_protocol)
    _archive.atomic_write(path, lambda fobj: _archive.write_archive(prepared, fobj))


# ---------------------------------------------------------------- load


def _fail(where, what):
    raise RuntimeError(f"rumus.load: {where}: {what}")


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


# ---------------------------------------------------------------- map_location


def _as_device(loc, map_location):
    if isinstance(loc, _rumus.device):
        return loc
    if isinstance(loc, str):
        return _rumus.device(loc)
    raise TypeError(
        f"rumus.load: map_location={map_location!r}: expected None, a device or device "
        "string, a dict of location strings or a callable(storage, location)"
    )


def _restorer(map_location):
    """restore(tensor, location): the tensor (a loaded storage, on the CPU) on the
    device that map_location asks for, as PyTorch's map_location does: None keeps
    the saved location, a device (or its name) moves everything there, a dict
    renames saved locations, a callable(storage, location) returns the storage to
    use (or None for the default)."""

    def to(t, loc):
        dev = _as_device(loc, map_location)
        if dev.type == "cpu":
            return t if t.device.type == "cpu" else t.cpu()
        if dev.type == "gpu" and not gpu_available():
            raise RuntimeError(
                f"rumus.load: the checkpoint has tensors on {loc!s}, but no GPU is available "
                f"({_rumus._gpu_unavailable_reason()}). On a machine without a GPU, load with "
                "map_location='cpu'."
            )
        return t.to(dev)

    if map_location is None:
        return to
    if isinstance(map_location, (str, _rumus.device)):
        _as_device(map_location, map_location)  # a bad device name fails before reading
        return lambda t, loc: to(t, map_location)
    if isinstance(map_location, dict):
        return lambda t, loc: to(t, map_location.get(loc, loc))
    if callable(map_location):

        def call(t, loc):
            out = map_location(t, loc)
            if out is None:
                return to(t, loc)
            if not isinstance(out, _rumus.Tensor):
                raise TypeError(
                    f"rumus.load: map_location returned {type(out).__name__}, expected a Tensor"
                )
            return out

        return call
    return _as_device(map_location, map_location)


def gpu_available():
    """Whether a GPU is available to load tensors saved from the GPU onto.

    Returns:
        bool: True if a GPU adapter is usable.
    """
    return _rumus._gpu_is_available()


# ---------------------------------------------------------------- safe globals

_safe_globals = []  # user allowlisted: objects, or (object, "module.qualname")


def _entries(globs, who):
    if not isinstance(globs, (list, tuple)):
        raise TypeError(f"{who}: expected a list of globals, got {type(globs).__name__}")
    for g in globs:
        if isinstance(g, tuple) and not (len(g) == 2 and isinstance(g[1], str)):
            raise TypeError(f"{who}: a tuple entry must be (object, 'module.qualname'), got {g!r}")
    return list(globs)


def add_safe_globals(safe_globals):
    """Allowlist classes and functions for ``rumus.load(..., weights_only=True)``.

    Each entry is an object (found in a checkpoint under its ``__module__`` and
    ``__qualname__``) or a pair ``(object, "module.qualname")`` for an object
    pickled under another name. Only allowlist what you trust: loading may call
    these (classes are created and their ``__setstate__`` runs).

    Args:
        safe_globals (list): classes and functions, or (object, "module.name") pairs.
    """
    _safe_globals.extend(_entries(safe_globals, "add_safe_globals"))


def get_safe_globals():
    """The globals allowlisted with :func:`add_safe_globals` (a copy)."""
    return list(_safe_globals)


def clear_safe_globals():
    """Forget every global allowlisted with :func:`add_safe_globals`."""
    _safe_globals.clear()


class safe_globals:
    """Context manager: allowlist these globals (as :func:`add_safe_globals`)
    until the block ends. ``with rumus.serialization.safe_globals([MyNet]): ...``

    Args:
        safe_globals (list): classes and functions, or (object, "module.name") pairs.
    """

    def __init__(self, safe_globals):
        self.safe_globals = _entries(safe_globals, "safe_globals")

    def __enter__(self):
        self._saved = list(_safe_globals)
        _safe_globals.extend(self.safe_globals)
        return self

    def __exit__(self, *exc):
        _safe_globals[:] = self._saved
        return False


def _allowed_globals():
    allowed = {}
    for g in [*_archive.DEFAULT_SAFE_GLOBALS, _parameter_class(), *_safe_globals]:
        obj, name = g if isinstance(g, tuple) else (g, _archive.global_name(g))
        allowed[name] = obj
    return allowed


# ---------------------------------------------------------------- load


def _archive_buffer(path, mmap):
    """The bytes of the archive at `path`: a private memory map (None, True) or
    a bytearray (False); and whether to check the records' CRCs (not for a map:
    that would read every page)."""
    if mmap is not False:
        return _archive.map_file(path), False
    with open(path, "rb") as fobj:
        buf = bytearray(os.fstat(fobj.fileno()).st_size)
        del buf[fobj.readinto(buf) :]
    return buf, True


_PICKLE_MAGIC = tuple(bytes([0x80, p]) for p in range(2, 6))


def _fail_not_checkpoint(where, head):
    if head[:2] in _PICKLE_MAGIC:
        _fail(
            where,
            "a bare pickle (PyTorch's legacy format?), not a rumus checkpoint: rumus.load "
            "reads safetensors files and rumus zip archives",
        )


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_kw):
    """Load what :func:`save` wrote (or any safetensors file) from ``f``, a
    path or a readable binary file object. The format is told by the first bytes.

    ``weights_only`` (default True) loads zip archives with a restricted
    unpickler that runs no code from the file: it rebuilds tensors,
    Parameters, NumPy data, containers and primitives, and only the other
    classes and functions allowlisted with :func:`add_safe_globals` or
    :func:`safe_globals`; any other global raises ``pickle.UnpicklingError``
    naming it. ``weights_only=False`` unpickles anything and so can run
    arbitrary code: use it only for files you trust. Safetensors files never
    hold code; for them ``weights_only`` changes nothing.

    ``map_location`` is None (tensors go back to the device they were saved
    from), a device or device name ('cpu', 'gpu'), a dict mapping saved
    locations to new ones (``{"gpu:0": "cpu"}``), or a callable(storage,
    location) returning the storage to use (a 1-d CPU tensor), or None for
    the default. Safetensors files hold CPU tensors (location 'cpu').

    Unlike PyTorch, a path is memory-mapped by default (``mmap=None`` or
    True): tensors are zero-copy copy-on-write views of the file, so the file
    must not be truncated or rewritten in place while they live (saving over
    it with rumus.save is fine: that replaces the file). ``mmap=False`` reads
    the file into memory (and, for zip archives, checks every record's CRC).

    Args:
        f (str, PathLike or file): a path or a binary file object.
        map_location (str, device, dict or callable, optional): where to put the tensors (see
            above).
        pickle_module (module, optional): None or ``pickle``.
        weights_only (bool, optional): use the restricted unpickler (True by default).
        mmap (bool, optional): memory-map a path (True by default).
        **pickle_kw: passed to the unpickler (weights_only=False only).

    Returns:
        The saved object.
    """
    if weights_only is None:
        weights_only = True
    if pickle_module is not None and pickle_module is not pickle:
        raise TypeError("rumus.load: pickle_module must be None or the pickle module")
    if weights_only and pickle_kw:
        raise TypeError(f"rumus.load: pickle arguments {sorted(pickle_kw)} need weights_only=False")
    restore = _restorer(map_location)
    if not hasattr(f, "read") and not isinstance(f, (str, bytes, os.PathLike)):
        raise TypeError(
            f"rumus.load: f must be a path or a readable binary file object, got {type(f).__name__}"
        )
    where = (
        repr(os.fsdecode(os.fspath(f)))
        if not hasattr(f, "read")
        else f"file object {getattr(f, 'name', type(f).__name__)!r}"
    )
    if hasattr(f, "read"):
        if mmap:
            raise ValueError("rumus.load: mmap=True needs a file path, not a file object")
        chunks = []
        while chunk := f.read(1 << 24):
            chunks.append(chunk)
        raw = b"".join(chunks)
        head = raw[:8]
    else:
        with open(os.fsdecode(os.fspath(f)), "rb") as fobj:
            head = fobj.read(8)
        raw = None
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        if raw is not None:
            buf, verify = bytearray(raw), True
            del raw
        else:
            buf, verify = _archive_buffer(os.fsdecode(os.fspath(f)), mmap)
        try:
            return _archive.read_archive(
                buf,
                verify_data=verify,
                restore=restore,
                weights_only=weights_only,
                allowed=_allowed_globals() if weights_only else None,
                user_allowed=[g[0] if isinstance(g, tuple) else g for g in _safe_globals],
                pickle_kw=pickle_kw,
            )
        except _archive.CorruptArchive as e:
            _fail(where, str(e))
        except pickle.UnpicklingError as e:
            raise pickle.UnpicklingError(f"rumus.load: {where}: {e}") from None
        except (EOFError, KeyError, IndexError, ValueError, TypeError, AttributeError) as e:
            if not weights_only and not isinstance(e, EOFError):
                raise
            raise pickle.UnpicklingError(
                f"rumus.load: {where}: the pickle in the archive is truncated or corrupt "
                f"({type(e).__name__}: {e})"
            ) from e
    _fail_not_checkpoint(where, head)
    if raw is not None:
        tensors, metadata = _rumus._load_bytes(raw, where)
    else:
        tensors, metadata = _rumus._load_file(os.fsdecode(os.fspath(f)), mmap is not False, where)
    tensors = {k: restore(t, "cpu") for k, t in tensors.items()}
    unknown = sorted(k for k in metadata if k.startswith("rumus.") and k != _STRUCTURE_KEY)
    if unknown:
        _fail(where, f"unknown rumus metadata {unknown} (written by a newer rumus?)")
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
