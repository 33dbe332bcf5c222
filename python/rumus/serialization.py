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

The bytes are handled in Rust (the ``safetensors`` crate validates and writes
the header); this module turns objects into named tensors plus metadata and back.
"""

import collections
import json
import os

from . import _rumus

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


def save(obj, f):
    """Save ``obj`` (a Tensor or a nested dict/list/tuple of Tensors, int, float,
    bool, str, None) to ``f``, a path or a writable binary file object, in the
    safetensors format.

    Writing to a path is atomic: the data goes to a temporary file in the same
    directory, which replaces the target only once it is complete and synced,
    so a failure leaves any existing file untouched. A process killed while
    saving leaves no temporary file behind (on Linux the file has no name until
    it is complete; elsewhere the next save of the same path removes it).
    """
    if hasattr(f, "write"):
        _rumus._save_stream(*_flatten(obj), f)
        return
    if not isinstance(f, (str, bytes, os.PathLike)):
        raise TypeError(
            f"rumus.save: f must be a path or a writable binary file object, got {type(f).__name__}"
        )
    tensors, metadata = _flatten(obj)
    # realpath: saving through a symlink updates the file it points to.
    _rumus._save_file(tensors, metadata, os.path.realpath(os.fsdecode(os.fspath(f))))


# ---------------------------------------------------------------- load


def _fail(where, what):
    raise RuntimeError(f"rumus.load: {where}: {what}")


def _read(f, mmap, where):
    """The tensors of the file, {name: tensor} in header order, and its metadata."""
    if hasattr(f, "read"):
        if mmap:
            raise ValueError("rumus.load: mmap=True needs a file path, not a file object")
        chunks = []
        while chunk := f.read(1 << 24):
            chunks.append(chunk)
        return _rumus._load_bytes(b"".join(chunks), where)
    return _rumus._load_file(os.fsdecode(os.fspath(f)), mmap is not False, where)


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
    tensors, metadata = _read(f, mmap, where)
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
