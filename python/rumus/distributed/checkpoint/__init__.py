"""Sharded checkpoints (PyTorch's ``torch.distributed.checkpoint``, "DCP"): every rank writes
its part of a state dict to a directory, and any number of ranks, one included, loads it back.

Layout of a checkpoint directory:

* ``<token>-rank<r>.safetensors``: what rank r wrote, a plain safetensors file: the pieces of
  the ``ShardedTensor`` values it holds, and (rank 0 only) the plain tensors, which are taken
  to be the same on every rank (replicated) and so are written once;
* ``index.json``: for every entry of the state dict, its path of keys and either its JSON
  value (ints, floats, strings ... ) or the tensor's shape, dtype and pieces (file, name in
  the file, offset and length in the flattened tensor).

Saving is atomic per file (``rumus.save``'s temporary file and rename), and the index is
written last, by rank 0, once every rank has written its file: it is the commit point. A
save that fails midway leaves the previous checkpoint's index (and the files it names) in
place; the files of older saves are removed after the new index is written. The ``token``
is fresh for each save, so a new save never overwrites a file an existing index names.

Loading reads the index and fills the given state dict in place: a plain tensor receives the
whole saved tensor, a ``ShardedTensor`` the elements of its own piece, gathered from whatever
pieces the saving ranks wrote; other values are replaced by the saved ones. Every rank reads
the files itself (on several machines the directory must be on a shared file system).
"""

import json
import os
import uuid

import numpy as np

from ... import _rumus
from ..._archive import atomic_write
from ...serialization import load as _load_file
from ...serialization import save as _save_file
from .. import _watchdog
from .. import distributed_c10d as c10d
from .._shard import ShardedTensor

__all__ = ["FileSystemReader", "FileSystemWriter", "load", "save"]

_INDEX = "index.json"
_FORMAT = "rumus.distributed.checkpoint"


class FileSystemWriter:
    """Where :func:`save` writes: a directory (created when missing).

    Args:
        path (str or PathLike): the checkpoint directory.
    """

    def __init__(self, path, *args, **kwargs):
        self.path = os.fspath(path)


class FileSystemReader:
    """Where :func:`load` reads: a checkpoint directory.

    Args:
        path (str or PathLike): the checkpoint directory.
    """

    def __init__(self, path, *args, **kwargs):
        self.path = os.fspath(path)


def _directory(checkpoint_id, storage, cls, what):
    if storage is not None:
        if not isinstance(storage, cls):
            raise TypeError(f"{what} must be a {cls.__name__}, but got {type(storage).__name__}")
        return storage.path
    if checkpoint_id is None:
        raise ValueError(f"pass checkpoint_id (a directory) or {what}")
    return os.fspath(checkpoint_id)


def _flatten(obj, path=(), out=None):
    """(path, leaf) pairs of a nested dict, in order."""
    out = [] if out is None else out
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not isinstance(k, str):
                raise TypeError(f"checkpoint state dict keys must be str, got {k!r} at {path}")
            _flatten(v, (*path, k), out)
    else:
        out.append((path, obj))
    return out


def _name(path):
    return "/".join(path)


def _group(process_group):
    if not c10d.is_initialized():
        return None
    return c10d._group(process_group)


def save(
    state_dict,
    *,
    checkpoint_id=None,
    storage_writer=None,
    planner=None,
    process_group=None,
    no_dist=False,
):
    """Saves ``state_dict`` (a nested dict of Tensors, ``ShardedTensor``s and JSON values) to a
    checkpoint directory. Call it on every rank of the group with the same keys; each rank
    writes its ShardedTensor pieces, rank 0 the plain tensors and other values.

    Args:
        state_dict (dict): what to save, e.g. ``{"model": fsdp_model.state_dict()}`` under
            ``SHARDED_STATE_DICT``.
        checkpoint_id (str or PathLike): the checkpoint directory.
        storage_writer (FileSystemWriter, optional): the directory, instead of checkpoint_id.
        planner: not supported (must be None).
        process_group (ProcessGroup, optional): the ranks that save (default: all).
        no_dist (bool): save from this process alone, as a world of one.

    Returns:
        dict: the checkpoint's metadata (the parsed ``index.json``).
    """
    if planner is not None:
        raise NotImplementedError("rumus.distributed.checkpoint.save: planner is not supported")
    directory = _directory(checkpoint_id, storage_writer, FileSystemWriter, "storage_writer")
    pg = None if no_dist else _group(process_group)
    rank, world = (pg.rank(), pg.size()) if pg is not None else (0, 1)
    token = uuid.uuid4().hex[:12] if rank == 0 else None
    if pg is not None:
        box = [token]
        c10d.broadcast_object_list(box, src=pg.ranks[0], group=pg)
        token = box[0]
    os.makedirs(directory, exist_ok=True)
    fname = f"{token}-rank{rank}.safetensors"
    tensors, entries, names = {}, [], set()
    for path, value in _flatten(state_dict):
        name = _name(path)
        if name in names:
            raise ValueError(f"checkpoint: two entries share the name {name!r}")
        names.add(name)
        if isinstance(value, ShardedTensor):
            local = value.local_tensor().detach().cpu().contiguous()
            entry = {"path": list(path), "shape": list(value.size()), "dtype": _dtype(local)}
            entry["pieces"] = []
            if local.numel():
                tensors[name] = local
                entry["pieces"] = [[fname, name, value.offset, local.numel()]]
        elif isinstance(value, _rumus.Tensor):
            full = value.detach().cpu().contiguous()
            entry = {"path": list(path), "shape": list(full.shape), "dtype": _dtype(full)}
            entry["pieces"] = []
            if rank == 0:
                tensors[name] = full.reshape(-1)
                entry["pieces"] = [[fname, name, 0, full.numel()]]
        else:
            try:
                json.dumps(value, allow_nan=True)
            except TypeError:
                raise TypeError(
                    f"checkpoint: {name!r} is a {type(value).__name__}; only tensors, "
                    "ShardedTensors and JSON values (numbers, strings, lists, None) are saved"
                ) from None
            entry = {"path": list(path), "value": _encode(value)}
        entries.append(entry)
    _save_file(tensors, os.path.join(directory, fname))
    everything = [entries]
    if pg is not None:
        with _watchdog.watch("checkpoint.save"):
            everything = pg.comm.gather(entries, root=0)
    index = None
    if rank == 0:
        index = _merge(everything, world)
        data = json.dumps(index).encode()
        atomic_write(os.path.join(directory, _INDEX), lambda f: f.write(data))
        _remove_unreferenced(directory, index)
    if pg is not None:
        with _watchdog.watch("checkpoint.save"):
            index = pg.comm.bcast(index, root=0)
    return index


def _dtype(t):
    return str(t.dtype).replace("rumus.", "")


def _merge(per_rank, world):
    """One index entry per key: the pieces of every rank, checked to agree and to cover each
    tensor exactly once."""
    merged = {}
    for entries in per_rank:
        for e in entries:
            name = _name(e["path"])
            if name not in merged:
                merged[name] = dict(e, pieces=list(e.get("pieces", [])))
                continue
            m = merged[name]
            if ("value" in e) != ("value" in m) or (
                "shape" in e and (e["shape"] != m["shape"] or e["dtype"] != m["dtype"])
            ):
                raise ValueError(
                    f"checkpoint: ranks disagree on {name!r}: {_describe(m)} vs {_describe(e)}"
                )
            m["pieces"] += e.get("pieces", [])
    for name, m in merged.items():
        if "shape" not in m:
            continue
        numel = int(np.prod(m["shape"], dtype=np.int64))
        covered = sorted((p[2], p[3]) for p in m["pieces"])
        at = 0
        for off, n in covered:
            if off != at:
                raise ValueError(
                    f"checkpoint: the pieces of {name!r} do not cover it exactly once "
                    f"(elements {at}..{off})"
                )
            at += n
        if at != numel:
            raise ValueError(f"checkpoint: the pieces of {name!r} hold {at} of {numel} elements")
    return {"format": _FORMAT, "version": 1, "world_size": world, "entries": list(merged.values())}


def _describe(e):
    return f"value {e['value']!r}" if "value" in e else f"tensor {e['shape']} {e['dtype']}"


def _remove_unreferenced(directory, index):
    keep = {p[0] for e in index["entries"] for p in e.get("pieces", [])}
    for f in os.listdir(directory):
        if f.endswith(".safetensors") and "-rank" in f and f not in keep:
            try:
                os.remove(os.path.join(directory, f))
            except OSError:
                pass


def load(
    state_dict,
    *,
    checkpoint_id=None,
    storage_reader=None,
    planner=None,
    process_group=None,
    no_dist=False,
):
    """Loads a checkpoint into ``state_dict`` in place: each tensor is filled with the saved
    tensor of the same key, each ``ShardedTensor`` with its own elements, other values are
    replaced. Works on any number of ranks (no collectives: each rank reads what it needs).

    Args:
        state_dict (dict): the state dict to fill; its keys select what is read.
        checkpoint_id (str or PathLike): the checkpoint directory.
        storage_reader (FileSystemReader, optional): the directory, instead of checkpoint_id.
        planner: not supported (must be None).
        process_group (ProcessGroup, optional): unused (accepted for compatibility).
        no_dist (bool): unused (loading never communicates).
    """
    if planner is not None:
        raise NotImplementedError("rumus.distributed.checkpoint.load: planner is not supported")
    directory = _directory(checkpoint_id, storage_reader, FileSystemReader, "storage_reader")
    path = os.path.join(directory, _INDEX)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{directory!r} holds no checkpoint ({_INDEX} is missing)")
    with open(path, "rb") as f:
        index = json.loads(f.read())
    if index.get("format") != _FORMAT:
        raise RuntimeError(f"{path!r} is not a rumus.distributed.checkpoint index")
    saved = {_name(e["path"]): e for e in index["entries"]}
    files = {}

    def read(entry, start, count):
        """Elements start..start+count of the flattened saved tensor, as a NumPy array."""
        out = np.empty(count, dtype=_np_dtype(entry["dtype"]))
        filled = 0
        for fname, name, off, n in entry["pieces"]:
            lo, hi = max(off, start), min(off + n, start + count)
            if lo >= hi:
                continue
            if fname not in files:
                files[fname] = _load_file(os.path.join(directory, fname))
            piece = files[fname][name].numpy()
            out[lo - start : hi - start] = piece[lo - off : hi - off]
            filled += hi - lo
        if filled != count:
            raise RuntimeError("checkpoint: the saved pieces do not cover the requested elements")
        return out

    for path_, value in _flatten(state_dict):
        name = _name(path_)
        if name not in saved:
            raise RuntimeError(f"Missing key in checkpoint state_dict: {name}.")
        entry = saved[name]
        if isinstance(value, (ShardedTensor, _rumus.Tensor)):
            if "shape" not in entry:
                raise RuntimeError(f"checkpoint: {name!r} was saved as a value, not a tensor")
            if tuple(entry["shape"]) != tuple(value.shape):
                raise RuntimeError(
                    f"checkpoint: size mismatch for {name!r}: saved {tuple(entry['shape'])}, "
                    f"the state dict has {tuple(value.shape)}"
                )
            if isinstance(value, ShardedTensor):
                target = value.local_tensor()
                data = read(entry, value.offset, target.numel())
            else:
                target = value
                data = read(entry, 0, value.numel()).reshape(tuple(value.shape))
            with _no_grad():
                target.copy_(_rumus.from_numpy(data).to(target.device, target.dtype))
        else:
            if "value" not in entry:
                raise RuntimeError(f"checkpoint: {name!r} was saved as a tensor, not a value")
            parent = state_dict
            for k in path_[:-1]:
                parent = parent[k]
            parent[path_[-1]] = _decode(entry["value"])


def _encode(value):
    """JSON has no tuples: they are saved as {"__tuple__": [...]} (optimizer betas ...)."""
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


def _decode(value):
    if isinstance(value, dict):
        if set(value) == {"__tuple__"}:
            return tuple(_decode(v) for v in value["__tuple__"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _np_dtype(name):
    if name == "bfloat16":
        raise TypeError("checkpoint: bfloat16 tensors are not supported by the loader")
    return np.dtype(name)


def _no_grad():
    from ...autograd.grad_mode import no_grad

    return no_grad()
