"""Turning a list of samples into a batch (``default_collate``) and converting
a single sample's NumPy arrays to tensors (``default_convert``)."""

import collections.abc
import copy

import numpy as np

from .... import _rumus
from ...._rumus import Tensor

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

_ERR = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def _is_text_array(a):
    # bytes, str and object arrays have no tensor dtype
    return a.dtype.char in "SaUO"


def _rebuild(data, items):
    """A container of ``data``'s type holding ``items`` (dict or list when the type can't be
    built)."""
    if isinstance(data, collections.abc.Mapping):
        if isinstance(data, collections.abc.MutableMapping):
            clone = copy.copy(data)
            clone.update(items)
            return clone
        try:
            return type(data)(items)
        except TypeError:
            return dict(items)
    try:
        return type(data)(items)
    except TypeError:
        return list(items)


def default_convert(data):
    """Converts NumPy arrays and NumPy scalars in ``data`` to tensors, recursing
    into dicts, namedtuples and sequences (tuples become lists, as in PyTorch);
    Python numbers, strings and tensors are returned unchanged. The DataLoader
    uses it when automatic batching is off (``batch_size=None``).

    Args:
        data (object): a sample.

    Returns:
        The data with arrays converted to tensors.
    """
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        if isinstance(data, np.ndarray) and _is_text_array(data):
            return data
        if isinstance(data, (np.str_, np.bytes_)):
            return data
        return _rumus.as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return _rebuild(data, {k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild(data, [default_convert(d) for d in data])
    return data


def _collate_tensor(batch, *, collate_fn_map=None):
    return _rumus.stack(list(batch), 0)


def _collate_ndarray(batch, *, collate_fn_map=None):
    if _is_text_array(batch[0]):
        raise TypeError(_ERR.format(batch[0].dtype))
    return collate([_rumus.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def _collate_numpy_scalar(batch, *, collate_fn_map=None):
    return _rumus.as_tensor(np.asarray(batch))


def _collate_float(batch, *, collate_fn_map=None):
    return _rumus.tensor(list(batch), dtype=_rumus.float64)


def _collate_int(batch, *, collate_fn_map=None):
    # bools land here too and give a bool tensor, as in PyTorch
    return _rumus.tensor(list(batch))


def _collate_str(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    Tensor: _collate_tensor,
    np.ndarray: _collate_ndarray,
    np.bool_: _collate_numpy_scalar,
    np.number: _collate_numpy_scalar,
    float: _collate_float,
    int: _collate_int,
    str: _collate_str,
    bytes: _collate_str,
}


def collate(batch, *, collate_fn_map=None):
    """Collates ``batch`` (a list of samples that share one structure).

    ``collate_fn_map`` maps element types to ``fn(batch, *, collate_fn_map)``;
    an exact type match wins, then the first ``isinstance`` match in the
    map's order. Dicts, namedtuples and other sequences are collated field by
    field (plain tuples and lists give lists)."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for t, fn in collate_fn_map.items():
            if isinstance(elem, t):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild(
            elem, {k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem}
        )
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return columns
        return _rebuild(elem, columns)
    raise TypeError(_ERR.format(elem_type))


def default_collate(batch):
    """Stacks a list of samples into a batch, like PyTorch's ``default_collate``:

    * tensors are stacked along a new first dimension;
    * NumPy arrays become tensors and are stacked; NumPy scalars give a 1-d tensor of their dtype;
    * Python floats give a float64 tensor, ints an int64 tensor, bools a bool tensor;
    * strings and bytes are kept (the batch of them is returned as is);
    * dicts, namedtuples, tuples and lists are collated element-wise (tuples give lists).

    Args:
        batch (list): the samples.

    Returns:
        The batch: tensors stacked along a new first dimension, containers collated elementwise.
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
