"""Ops written as compositions of existing engine ops (issue 15): more reductions
(std_mean, var_mean, aminmax, nanmean, nansum, count_nonzero, cummax, cummin,
logcumsumexp), indexing (index_add, index_copy, index_fill, index_put, masked_scatter,
masked_select, scatter_reduce), distances (cdist, pdist) and the Tensor.new_* constructors.

Each op is built from engine ops that already have CPU and GPU kernels and a backward, so
the results run on the input's device and differentiate (twice) without new kernels. The
scans (cummax, cummin, logcumsumexp) are Hillis-Steele scans: log2(n) steps of one
elementwise op over shifted views, with no read-back to the host."""

from typing import NamedTuple

from . import _rumus
from ._rumus import Tensor
from ._size import ValuesIndices

# Named "aminmax", as PyTorch's torch.return_types.aminmax.
MinMax = NamedTuple("aminmax", [("min", Tensor), ("max", Tensor)])

_FLOATS = ("float64", "float32", "float16", "bfloat16")


def _dtype_name(t):
    return str(t.dtype).removeprefix("rumus.")


def _is_float(t):
    return _dtype_name(t) in _FLOATS


def _check_tensor(op, x, what="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{what}' must be Tensor, not {type(x).__name__}")


def _wrap_dim(op, dim, ndim):
    n = max(ndim, 1)
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"{op}(): dim must be an int, not {type(dim).__name__}")
    if not -n <= dim < n:
        raise IndexError(
            f"{op}(): Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
            f"but got {dim})"
        )
    return dim % n


# ------------------------------------------------------------ reductions


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over dim: PyTorch's torch.var_mean.

    Args:
        input (Tensor): the input.
        dim (int or tuple[int], optional): the dimension(s); all when None.
        unbiased (bool, optional): Bessel's correction (deprecated; use ``correction``).
        keepdim (bool): keep the reduced dimensions with size 1.
        correction (int, optional): the difference between the count and the divisor (1 by default).

    Returns:
        tuple[Tensor, Tensor]: ``(var, mean)``.
    """
    _check_tensor("var_mean", input)
    if isinstance(dim, bool) and unbiased is None:  # var_mean(x, unbiased)
        dim, unbiased = None, dim
    var = input.var(dim, unbiased, keepdim, correction=correction)
    return var, input.mean(dim, keepdim=keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over dim: PyTorch's torch.std_mean.

    Args:
        input (Tensor): the input.
        dim (int or tuple[int], optional): the dimension(s); all when None.
        unbiased (bool, optional): Bessel's correction (deprecated; use ``correction``).
        keepdim (bool): keep the reduced dimensions with size 1.
        correction (int, optional): the difference between the count and the divisor (1 by default).

    Returns:
        tuple[Tensor, Tensor]: ``(std, mean)``.
    """
    _check_tensor("std_mean", input)
    if isinstance(dim, bool) and unbiased is None:
        dim, unbiased = None, dim
    std = input.std(dim, unbiased, keepdim, correction=correction)
    return std, input.mean(dim, keepdim=keepdim)


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) named tuple over dim (all elements when dim is None).

    Args:
        input (Tensor): the input.
        dim (int or tuple[int], optional): the dimension(s); all when None.
        keepdim (bool): keep the reduced dimensions with size 1.

    Returns:
        tuple[Tensor, Tensor]: ``(min, max)``.
    """
    _check_tensor("aminmax", input)
    if input.numel() == 0 and (dim is None or input.ndim == 0 or input.shape[dim] == 0):
        raise RuntimeError(
            "aminmax(): cannot compute aminmax over an empty dimension as the operation has "
            f"no identity (input of shape {tuple(input.shape)})"
        )
    if dim is None:
        if keepdim:
            return MinMax(
                input.amin(tuple(range(input.ndim)), keepdim=True),
                input.amax(tuple(range(input.ndim)), keepdim=True),
            )
        return MinMax(input.amin(), input.amax())
    return MinMax(input.amin(dim, keepdim=keepdim), input.amax(dim, keepdim=keepdim))


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum treating NaN as zero.

    Args:
        input (Tensor): the input.
        dim (int or tuple[int], optional): the dimension(s); all when None.
        keepdim (bool): keep the reduced dimensions with size 1.
        dtype (dtype, optional): the result's dtype.

    Returns:
        Tensor: the reduced values.
    """
    _check_tensor("nansum", input)
    x = input.masked_fill(input.isnan(), 0) if _is_float(input) else input
    return x.sum(dim, keepdim=keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over the non-NaN elements (NaN where all are NaN).

    Args:
        input (Tensor): the input.
        dim (int or tuple[int], optional): the dimension(s); all when None.
        keepdim (bool): keep the reduced dimensions with size 1.
        dtype (dtype, optional): the result's dtype.

    Returns:
        Tensor: the reduced values.
    """
    _check_tensor("nanmean", input)
    if not _is_float(input if dtype is None else _rumus.zeros(1, dtype=dtype)):
        raise RuntimeError(
            "nanmean(): expected input to have floating point or complex dtype but got "
            f"{input.dtype}"
        )
    if dtype is not None:
        input = input.to(dtype)
    keep = input.isnan().logical_not()
    total = input.masked_fill(input.isnan(), 0).sum(dim, keepdim=keepdim)
    return total / keep.sum(dim, keepdim=keepdim).to(total.dtype)


def count_nonzero(input, dim=None):
    """Number of nonzero elements over dim (an int or a tuple of ints): int64.

    Args:
        input (Tensor): the input.
        dim (int or tuple[int], optional): the dimension(s); all when None.

    Returns:
        Tensor: int64 counts.
    """
    _check_tensor("count_nonzero", input)
    return input.ne(0).sum(dim)


def _shift_scan(x, dim, step):
    """The Hillis-Steele scan of ``step(a, b)`` (a earlier, b later) along dim."""
    n = x.shape[dim]
    s = 1
    while s < n:
        head = x.narrow(dim, 0, s)
        tail = step(x.narrow(dim, 0, n - s), x.narrow(dim, s, n - s))
        x = _rumus.cat([head, tail], dim)
        s *= 2
    return x


def _cum_extreme(op, input, dim, better):
    _check_tensor(op, input)
    d = _wrap_dim(op, dim, input.ndim)
    if input.ndim == 0:
        return ValuesIndices(
            input.clone(), _rumus.zeros((), dtype=_rumus.int64, device=input.device)
        )
    x = input.detach()
    n = x.shape[d]
    if n == 0:
        idx = _rumus.zeros(x.shape, dtype=_rumus.int64, device=x.device)
        return ValuesIndices(input.clone(), idx)
    pick = Tensor.maximum if better == "max" else Tensor.minimum
    run = _shift_scan(x, d, lambda a, b: pick(a, b))
    # a position starts a new record when it ties or beats the record before it (PyTorch
    # picks the last index among ties) or is NaN (NaN propagates)
    prev = run.narrow(d, 0, n - 1)
    cur = x.narrow(d, 1, n - 1)
    beats = cur.ge(prev) if better == "max" else cur.le(prev)
    if _is_float(x):
        beats = beats.logical_or(cur.isnan())
    shape = [1] * x.ndim
    shape[d] = n
    pos = _rumus.arange(n, device=x.device).reshape(shape).expand(x.shape)
    first = _rumus.ones([n if i == d else s for i, s in enumerate(x.shape)], dtype=_rumus.bool)
    first = first.narrow(d, 0, 1).to(x.device)
    new = _rumus.cat([first, beats], d)
    idx = _shift_scan(pos.masked_fill(new.logical_not(), 0), d, Tensor.maximum)
    return ValuesIndices(input.gather(d, idx), idx)


def cummax(input, dim):
    """Running maximum along dim and the index of each maximum (gradient flows through the
    indices).

    Args:
        input (Tensor): the input.
        dim (int): the dimension.

    Returns:
        tuple[Tensor, Tensor]: ``(values, indices)``.
    """
    return _cum_extreme("cummax", input, dim, "max")


def cummin(input, dim):
    """Running minimum along dim and the index of each minimum.

    Args:
        input (Tensor): the input.
        dim (int): the dimension.

    Returns:
        tuple[Tensor, Tensor]: ``(values, indices)``.
    """
    return _cum_extreme("cummin", input, dim, "min")


def logcumsumexp(input, dim):
    """log(cumsum(exp(x))) along dim, computed as a scan of logaddexp (no overflow).

    Args:
        input (Tensor): the input.
        dim (int): the dimension.

    Returns:
        Tensor: of input's shape.
    """
    _check_tensor("logcumsumexp", input)
    d = _wrap_dim("logcumsumexp", dim, input.ndim)
    if not _is_float(input):
        raise RuntimeError(f'"logcumsumexp" not implemented for {input.dtype}')
    if input.ndim == 0 or input.shape[d] == 0:
        return input.clone()
    return _shift_scan(input, d, lambda a, b: a.logaddexp(b))


# ------------------------------------------------------------ indexing


def _index_along(op, x, dim, index, src_shape):
    """``index`` (1-d, int64) as a scatter index of shape ``src_shape`` along dim."""
    _check_tensor(op, index, "index")
    if _dtype_name(index) not in ("int64", "int32"):
        raise IndexError(f"{op}(): Expected dtype int64 for index, got {index.dtype}")
    if index.ndim > 1:
        raise IndexError(
            f"{op}(): Index is supposed to be a vector, got shape {tuple(index.shape)}"
        )
    index = index.reshape(-1).to(_rumus.int64)
    if x.ndim == 0:
        return index.reshape(src_shape) if src_shape else index.reshape(())
    shape = [1] * len(src_shape)
    shape[dim] = index.shape[0]
    return index.reshape(shape).expand(src_shape)


def _check_source(op, x, dim, index, source):
    _check_tensor(op, source, "source")
    want = list(x.shape)
    if x.ndim:
        want[dim] = index.numel()
    got = list(source.shape) if source.ndim else []
    if x.ndim == 0:
        ok = source.numel() == 1 and index.numel() == 1
    else:
        ok = got == want
    if not ok:
        raise RuntimeError(
            f"{op}(): source of shape {tuple(source.shape)} does not match self of shape "
            f"{tuple(x.shape)} with {index.numel()} indices along dim {dim}"
        )


def _by_slices(x, index, src):
    """Whether index_add / index_copy can move whole slices (CPU tensors of one
    dtype): one offset per slice row instead of the scatter's one per element."""
    return (
        x.ndim > 0 and src.dtype == x.dtype and all(t.device.type == "cpu" for t in (x, index, src))
    )


def _index_add(self, dim, index, source, *, alpha=1, inplace=False):
    op = "index_add_" if inplace else "index_add"
    _check_tensor(op, self, "self")
    dim = _wrap_dim(op, dim, self.ndim)
    _check_source(op, self, dim, index, source)
    src = source.reshape(self.shape) if self.ndim == 0 else source
    if alpha != 1:
        src = src * alpha
    idx = _index_along(op, self, dim, index, list(src.shape))
    if _by_slices(self, index, src):
        return self._index_put_along(dim, index, src, True, inplace)
    return self.scatter_add_(dim, idx, src) if inplace else self.scatter_add(dim, idx, src)


def index_add(input, dim, index, source, *, alpha=1):
    """input with alpha * source added at ``index`` along dim (repeated indices accumulate).

    Args:
        input (Tensor): the input.
        dim (int): the dimension to index.
        index (Tensor): 1-d integer indices.
        source (Tensor): the values, with ``len(index)`` slices along ``dim``.
        alpha (Number): the scale of ``source``.

    Returns:
        Tensor: a new tensor.
    """
    return _index_add(input, dim, index, source, alpha=alpha)


def index_add_(self, dim, index, source, *, alpha=1):
    """In-place :func:`rumus.index_add`: adds ``alpha * source`` at ``index`` along ``dim``.

    Args:
        dim (int): the dimension to index.
        index (Tensor): 1-d integer indices.
        source (Tensor): the values, with ``len(index)`` slices along ``dim``.
        alpha (Number): the scale of ``source``.

    Returns:
        Tensor: self.
    """
    return _index_add(self, dim, index, source, alpha=alpha, inplace=True)


def _index_copy(self, dim, index, source, inplace=False):
    op = "index_copy_" if inplace else "index_copy"
    _check_tensor(op, self, "self")
    dim = _wrap_dim(op, dim, self.ndim)
    _check_source(op, self, dim, index, source)
    src = source.reshape(self.shape) if self.ndim == 0 else source
    idx = _index_along(op, self, dim, index, list(src.shape))
    if _by_slices(self, index, src):
        return self._index_put_along(dim, index, src, False, inplace)
    return self.scatter_(dim, idx, src) if inplace else self.scatter(dim, idx, src)


def index_copy(input, dim, index, source):
    """input with the slices at ``index`` along dim replaced by source's.

    Args:
        input (Tensor): the input.
        dim (int): the dimension to index.
        index (Tensor): 1-d integer indices.
        source (Tensor): the values, with ``len(index)`` slices along ``dim``.

    Returns:
        Tensor: a new tensor.
    """
    return _index_copy(input, dim, index, source)


def index_copy_(self, dim, index, source):
    """In-place :func:`rumus.index_copy`: copies source's slices to ``index`` along ``dim``.

    Args:
        dim (int): the dimension to index.
        index (Tensor): 1-d integer indices.
        source (Tensor): the values, with ``len(index)`` slices along ``dim``.

    Returns:
        Tensor: self.
    """
    return _index_copy(self, dim, index, source, inplace=True)


def _dim_mask(op, x, dim, index):
    """A bool mask broadcastable to x, true at ``index`` along dim."""
    dim = _wrap_dim(op, dim, x.ndim)
    n = x.shape[dim] if x.ndim else 1
    _index_along(op, x, 0, index, [index.numel()])  # validates the index
    flat = index.reshape(-1).to(_rumus.int64)
    hit = _rumus.zeros(n, dtype=_rumus.bool, device=x.device).scatter(0, flat, value=True)
    shape = [1] * x.ndim
    if x.ndim:
        shape[dim] = n
    return hit.reshape(shape)


def index_fill(input, dim, index, value):
    """input with the slices at ``index`` along dim set to value (a number or 0-d tensor).

    Args:
        input (Tensor): the input.
        dim (int): the dimension to index.
        index (Tensor): 1-d integer indices.
        value (Number or Tensor): a number or a 0-d tensor.

    Returns:
        Tensor: a new tensor.
    """
    _check_tensor("index_fill", input)
    mask = _dim_mask("index_fill", input, dim, index)
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(
                "index_fill(): only supports a 0-dimensional value tensor, but got tensor "
                f"with {value.ndim} dimension(s)"
            )
        return input.masked_fill(mask, value.to(input.dtype))
    return input.masked_fill(mask, value)


def index_fill_(self, dim, index, value):
    """In-place :func:`rumus.index_fill`: sets the slices at ``index`` along ``dim`` to ``value``.

    Args:
        dim (int): the dimension to index.
        index (Tensor): 1-d integer indices.
        value (Number or Tensor): a number or a 0-d tensor.

    Returns:
        Tensor: self.
    """
    mask = _dim_mask("index_fill_", self, dim, index)
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError("index_fill_(): only supports a 0-dimensional value tensor")
    return self.masked_fill_(mask, value)


def _flat_index(op, x, indices):
    """The flat positions (over x's first len(indices) dims) named by a tuple of index
    tensors (int or bool), broadcast together, and the number of dims they cover."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{op}(): indices must be a tuple of tensors, not {type(indices).__name__}")
    parts = []
    for t in indices:
        _check_tensor(op, t, "indices")
        if _dtype_name(t) in ("bool", "uint8"):
            parts.extend(t.to(_rumus.bool).nonzero(as_tuple=True))
        elif _dtype_name(t) in ("int64", "int32"):
            parts.append(t.to(_rumus.int64))
        else:
            raise IndexError(
                f"{op}(): tensors used as indices must be long, int, byte or bool tensors, "
                f"got {t.dtype}"
            )
    if len(parts) > max(x.ndim, 0) or (x.ndim == 0 and parts):
        raise IndexError(
            f"{op}(): too many indices for tensor of dimension {x.ndim} (got {len(parts)})"
        )
    shape = _rumus.broadcast_shapes(*[p.shape for p in parts])
    flat = None
    for k, p in enumerate(parts):
        n = x.shape[k]
        p = p.expand(shape).to(x.device)
        bad = p.ge(n).logical_or(p.lt(-n))
        if bool(bad.any()):
            raise IndexError(f"{op}(): index out of bounds for dimension {k} with size {n}")
        p = _rumus.where(p.lt(0), p + n, p)
        flat = p if flat is None else flat * n + p
    return flat, len(parts), list(shape)


def _index_put(self, indices, values, accumulate=False, inplace=False):
    op = "index_put_" if inplace else "index_put"
    _check_tensor(op, self, "self")
    _check_tensor(op, values, "values")
    flat, k, ishape = _flat_index(op, self, indices)
    rest = list(self.shape[k:])
    lead = 1
    for s in self.shape[:k]:
        lead *= s
    vals = values.to(self.dtype).expand(ishape + rest).reshape([-1] + rest)
    pos = flat.reshape(-1)
    flat2d = (self.clone() if inplace else self).reshape([lead] + rest)
    res = (flat2d.index_add if accumulate else flat2d.index_copy)(0, pos, vals)
    res = res.reshape(self.shape)
    return self.copy_(res) if inplace else res


def index_put(input, indices, values, accumulate=False):
    """input with ``input[indices] = values`` (``+=`` with repeats accumulating when
    accumulate=True).

    Args:
        input (Tensor): the input.
        indices (tuple[Tensor, ...]): integer or boolean index tensors, one per leading dimension.
        values (Tensor): broadcast to the indexed positions.
        accumulate (bool): add instead of assigning; repeated positions accumulate.

    Returns:
        Tensor: a new tensor.
    """
    return _index_put(input, indices, values, accumulate)


def index_put_(self, indices, values, accumulate=False):
    """In-place :func:`rumus.index_put`: ``self[indices] = values`` (or ``+=``).

    Args:
        indices (tuple[Tensor, ...]): integer or boolean index tensors, one per leading dimension.
        values (Tensor): broadcast to the indexed positions.
        accumulate (bool): add instead of assigning; repeated positions accumulate.

    Returns:
        Tensor: self.
    """
    return _index_put(self, indices, values, accumulate, inplace=True)


def masked_select(input, mask):
    """The elements of input where mask (broadcast with input) is true, as a 1-d tensor.

    Args:
        input (Tensor): the input.
        mask (Tensor): a bool tensor broadcastable to input.

    Returns:
        Tensor: 1-d.
    """
    _check_tensor("masked_select", input)
    _check_tensor("masked_select", mask, "mask")
    if _dtype_name(mask) != "bool":
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    shape = _rumus.broadcast_shapes(input.shape, mask.shape)
    x = input.expand(shape).reshape(-1)
    m = mask.to(input.device).expand(shape).reshape(-1)
    return x.index_select(0, m.nonzero().reshape(-1).to(x.device))


def _masked_scatter(self, mask, source, inplace=False):
    op = "masked_scatter_" if inplace else "masked_scatter"
    _check_tensor(op, self, "self")
    _check_tensor(op, mask, "mask")
    _check_tensor(op, source, "source")
    if _dtype_name(mask) != "bool":
        raise RuntimeError(f"{op}: expected BoolTensor for mask, got {mask.dtype}")
    if source.dtype != self.dtype:
        raise RuntimeError(
            f"{op}: expected self and source to have same dtypes but got {self.dtype} and "
            f"{source.dtype}"
        )
    shape = tuple(self.shape) if inplace else _rumus.broadcast_shapes(self.shape, mask.shape)
    m = mask.to(self.device).expand(shape)
    count = int(m.sum().item()) if m.numel() else 0
    if count > source.numel():
        raise RuntimeError(
            f"{op}: Number of elements of source < number of ones in mask "
            f"({source.numel()} < {count})"
        )
    if count == 0:
        return self if inplace else self.expand(shape).clone()
    pos = (m.reshape(-1).to(_rumus.int64).cumsum(0) - 1).clamp_min(0).reshape(shape)
    picked = source.reshape(-1).narrow(0, 0, count).gather(0, pos.reshape(-1)).reshape(shape)
    out = _rumus.where(m, picked, self.clone() if inplace else self)
    return self.copy_(out) if inplace else out


def masked_scatter(input, mask, source):
    """input with the positions where mask is true filled, in order, from source.

    Args:
        input (Tensor): the input.
        mask (Tensor): a bool tensor broadcastable to input.
        source (Tensor): its first ``mask.sum()`` elements are used, in order.

    Returns:
        Tensor: a new tensor.
    """
    return _masked_scatter(input, mask, source)


def masked_scatter_(self, mask, source):
    """In-place :func:`rumus.masked_scatter`: fills where ``mask`` is true from ``source``.

    Args:
        mask (Tensor): a bool tensor broadcastable to self.
        source (Tensor): its first ``mask.sum()`` elements are used, in order.

    Returns:
        Tensor: self.
    """
    return _masked_scatter(self, mask, source, inplace=True)


_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _scatter_reduce(self, dim, index, src, reduce, include_self=True, inplace=False):
    op = "scatter_reduce_" if inplace else "scatter_reduce"
    _check_tensor(op, self, "self")
    _check_tensor(op, index, "index")
    _check_tensor(op, src, "src")
    if reduce not in _REDUCES:
        raise RuntimeError(
            f"{op}(): reduce argument must be one of sum, prod, mean, amax, amin, got {reduce}"
        )
    if src.dtype != self.dtype:
        raise RuntimeError(
            f"{op}(): Expected self.dtype to be equal to src.dtype, got {self.dtype} and "
            f"{src.dtype}"
        )
    if _dtype_name(self) in ("bool", "float16", "bfloat16"):
        raise RuntimeError(
            f"{op}(): not implemented for {self.dtype} (rumus composes it from "
            "scatter_add, which lacks that dtype)"
        )
    d = _wrap_dim(op, dim, self.ndim)
    if _dtype_name(index) != "int64":
        raise RuntimeError(f"{op}(): Expected dtype int64 for index, got {index.dtype}")
    if index.ndim != self.ndim or (self.ndim and index.ndim != src.ndim):
        raise RuntimeError(
            f"{op}(): Index tensor must have the same number of dimensions as self and src"
        )
    x = self.clone() if inplace else self
    if index.numel() == 0:
        return self if inplace else x.clone()
    # the part of src that index covers
    s = src
    for k in range(index.ndim):
        if index.shape[k] > src.shape[k]:
            raise RuntimeError(f"{op}(): index {tuple(index.shape)} is larger than src")
        if index.shape[k] < src.shape[k]:
            s = s.narrow(k, 0, index.shape[k])
    if x.ndim == 0:
        x1, s1, i1 = x.reshape(1), s.reshape(1), index.reshape(1)
        out = _scatter_reduce(x1, 0, i1, s1, reduce, include_self).reshape(())
        return self.copy_(out) if inplace else out
    n = x.shape[d]
    bad = index.ge(n).logical_or(index.lt(0))
    if bool(bad.any()):
        raise RuntimeError(f"{op}(): index out of bounds for dimension {d} with size {n}")
    ones = _rumus.ones_like(s)
    hits = _rumus.zeros_like(x).scatter_add(d, index, ones)  # how many src land where
    hit = hits.ne(0)
    if reduce in ("sum", "mean"):
        base = x if include_self else x.masked_fill(hit, 0)
        out = base.scatter_add(d, index, s)
        if reduce == "mean":
            cnt = hits + 1 if include_self else hits.masked_fill(hit.logical_not(), 1)
            if _is_float(x):
                out = out / cnt
            else:
                out = out.div(cnt, rounding_mode="floor")
    else:
        # dense: a one-hot axis over dim's n target positions, reduced over the src axis
        shape = [1] * (index.ndim + 1)
        shape[d + 1] = n
        onehot = index.unsqueeze(d + 1).eq(_rumus.arange(n, device=x.device).reshape(shape))
        if reduce == "prod":
            fill = 1
        else:
            fill = _extreme(x, low=reduce == "amax")
        vals = s.unsqueeze(d + 1).masked_fill(onehot.logical_not(), fill)
        red = getattr(vals, reduce)(d) if reduce != "prod" else vals.prod(d).to(x.dtype)
        # red covers index's extent on the other dims: pad it to x's with the fill
        for k in range(x.ndim):
            if k != d and red.shape[k] < x.shape[k]:
                padshape = list(red.shape)
                padshape[k] = x.shape[k] - red.shape[k]
                pad = _rumus.full(padshape, fill, dtype=x.dtype, device=x.device)
                red = _rumus.cat([red, pad], k)
        if include_self:
            if reduce == "prod":
                combined = x * red
            else:
                combined = (Tensor.maximum if reduce == "amax" else Tensor.minimum)(x, red)
        else:
            combined = red
        out = _rumus.where(hit, combined, x)
    return self.copy_(out) if inplace else out


def _extreme(x, low):
    name = _dtype_name(x)
    if name in _FLOATS:
        return float("-inf") if low else float("inf")
    if name == "bool":
        return not low
    import numpy as np

    if name == "int64" and x.device.type != "cpu":
        name = "int32"  # GPU int64 tensors hold 32-bit values
    info = np.iinfo(name)
    return int(info.min) if low else int(info.max)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """input with src's values reduced into the positions index names along dim.

    Args:
        input (Tensor): the input.
        dim (int): the dimension along which to index.
        index (Tensor): integer indices of src's shape.
        src (Tensor): the values to reduce.
        reduce (str): ``'sum'``, ``'prod'``, ``'mean'``, ``'amax'`` or ``'amin'``.
        include_self (bool): include input's values in the reduction.

    Returns:
        Tensor: a new tensor.
    """
    return _scatter_reduce(input, dim, index, src, reduce, include_self)


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    """In-place :func:`rumus.scatter_reduce`: reduces ``src`` into the positions ``index`` names.

    Args:
        dim (int): the dimension along which to index.
        index (Tensor): integer indices of ``src``'s shape.
        src (Tensor): the values to reduce, of self's dtype.
        reduce (str): ``'sum'``, ``'prod'``, ``'mean'``, ``'amax'`` or ``'amin'``.
        include_self (bool): include self's values in the reduction.

    Returns:
        Tensor: self.
    """
    return _scatter_reduce(self, dim, index, src, reduce, include_self, inplace=True)


# ------------------------------------------------------------ distances


def _pnorm(diff, p, dim=-1):
    if p == 0:
        return diff.ne(0).to(diff.dtype).sum(dim)
    if p == float("inf"):
        return diff.abs().amax(dim)
    from . import linalg

    return linalg.vector_norm(diff, p, dim)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between the rows of x1 (..., P, M) and x2 (..., R, M): (..., P, R).

    Args:
        x1 (Tensor): of shape ``(..., P, M)``.
        x2 (Tensor): of shape ``(..., R, M)``.
        p (float): the norm's exponent (>= 0).
        compute_mode (str): accepted for compatibility.

    Returns:
        Tensor: of shape ``(..., P, R)``.
    """
    _check_tensor("cdist", x1, "x1")
    _check_tensor("cdist", x2, "x2")
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(
            f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D, X2 got: {x2.ndim}D"
        )
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    if not _is_float(x1) or not _is_float(x2):
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {x1.dtype}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    if compute_mode not in (
        "use_mm_for_euclid_dist_if_necessary",
        "use_mm_for_euclid_dist",
        "donot_use_mm_for_euclid_dist",
        None,
    ):
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    mm = compute_mode == "use_mm_for_euclid_dist" or (
        compute_mode != "donot_use_mm_for_euclid_dist" and (x1.shape[-2] > 25 or x2.shape[-2] > 25)
    )
    if p == 2 and mm:
        # PyTorch's rule and form: |a|² + |b|² - 2a·b through a matmul, instead of
        # a (..., P, R, M) tensor of differences; clamped above 0 so that sqrt's
        # gradient stays finite where rows coincide.
        d2 = (
            x1.square().sum(-1, keepdim=True)
            + x2.square().sum(-1).unsqueeze(-2)
            - 2 * (x1 @ x2.transpose(-1, -2))
        )
        return d2.clamp_min(1e-30).sqrt()
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return _pnorm(diff, p)


def pdist(input, p=2):
    """p-norm distances between every pair of rows i < j of an (N, M) input, row-major:
    a 1-d tensor of N * (N - 1) / 2 elements.

    Args:
        input (Tensor): of shape ``(N, M)``.
        p (float): the norm's exponent.

    Returns:
        Tensor: of shape ``(N * (N - 1) / 2,)``.
    """
    _check_tensor("pdist", input)
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not _is_float(input):
        raise RuntimeError(f"pdist only supports floating-point dtypes, got: {input.dtype}")
    if p < 0:
        raise RuntimeError(f"pdist only supports non-negative p values, got {p}")
    n = input.shape[0]
    rows = [i for i in range(n) for _ in range(i + 1, n)]
    cols = [j for i in range(n) for j in range(i + 1, n)]
    ri = _rumus.tensor(rows, dtype=_rumus.int64, device=input.device)
    ci = _rumus.tensor(cols, dtype=_rumus.int64, device=input.device)
    diff = input.index_select(0, ri) - input.index_select(0, ci)
    return _pnorm(diff, p)


# ------------------------------------------------------------ constructors


def _like(self, dtype, device):
    return dtype if dtype is not None else self.dtype, device if device is not None else self.device


def _size(size):
    if (
        len(size) == 1
        and isinstance(size[0], (tuple, list))
        or (len(size) == 1 and type(size[0]).__name__ == "Size")
    ):
        return tuple(size[0])
    return tuple(size)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of data, with self's dtype and device by default.

    Args:
        data (array-like): the values (copied).
        dtype (dtype, optional): defaults to self's.
        device (str or device, optional): the device (self's when None).
        requires_grad (bool): record operations on the result.

    Returns:
        Tensor: a new tensor.
    """
    dtype, device = _like(self, dtype, device)
    if isinstance(data, Tensor):
        t = data.detach().to(dtype).to(device).clone()
    else:
        t = _rumus.tensor(data, dtype=dtype, device=device)
    return t.requires_grad_() if requires_grad else t


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """A tensor of ``size`` filled with ``fill_value``, with self's dtype and device by default.

    Args:
        size (Sequence[int]): the shape.
        fill_value (Number): the value.
        dtype (dtype, optional): defaults to self's.
        device (device, optional): defaults to self's.
        requires_grad (bool): record operations on the result.

    Returns:
        Tensor: the new tensor.
    """
    dtype, device = _like(self, dtype, device)
    return _rumus.full(
        tuple(size), fill_value, dtype=dtype, device=device, requires_grad=requires_grad
    )


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    """A tensor of zeros, with self's dtype and device by default.

    Args:
        *size (int or Sequence[int]): the shape.
        dtype (dtype, optional): defaults to self's.
        device (device, optional): defaults to self's.
        requires_grad (bool): record operations on the result.

    Returns:
        Tensor: the new tensor.
    """
    dtype, device = _like(self, dtype, device)
    return _rumus.zeros(_size(size), dtype=dtype, device=device, requires_grad=requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    """A tensor of ones, with self's dtype and device by default.

    Args:
        *size (int or Sequence[int]): the shape.
        dtype (dtype, optional): defaults to self's.
        device (device, optional): defaults to self's.
        requires_grad (bool): record operations on the result.

    Returns:
        Tensor: the new tensor.
    """
    dtype, device = _like(self, dtype, device)
    return _rumus.ones(_size(size), dtype=dtype, device=device, requires_grad=requires_grad)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    """An uninitialized tensor, with self's dtype and device by default.

    Args:
        *size (int or Sequence[int]): the shape.
        dtype (dtype, optional): defaults to self's.
        device (device, optional): defaults to self's.
        requires_grad (bool): record operations on the result.

    Returns:
        Tensor: the new tensor.
    """
    dtype, device = _like(self, dtype, device)
    return _rumus.empty(_size(size), dtype=dtype, device=device, requires_grad=requires_grad)


def randint_like(
    input, low=0, high=None, *, dtype=None, device=None, requires_grad=False, generator=None
):
    """Random integers in [low, high) of input's shape (randint_like(input, high) too).

    Args:
        input (Tensor): the input.
        low (int): the lower bound (the upper one when ``high`` is None).
        high (int, optional): the upper bound (exclusive).
        dtype (dtype, optional): defaults to input's.
        device (str or device, optional): the device (self's when None).
        requires_grad (bool): record operations on the result.
        generator (Generator, optional): the random generator.

    Returns:
        Tensor: a new tensor.
    """
    _check_tensor("randint_like", input)
    if high is None:
        low, high = 0, low
    dtype, device = _like(input, dtype, device)
    t = _rumus.randint(
        low, high, tuple(input.shape), dtype=dtype, device=device, generator=generator
    )
    return t.requires_grad_() if requires_grad else t


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Draws ``num_samples`` category indices from the weights in each row of
    ``input`` (1-d, or 2-d with one distribution per row), with or without
    replacement.

    With replacement a draw is a uniform number searched in the running sum of
    the weights; without, the categories with the ``num_samples`` largest
    ``weight / Exp(1)`` keys are taken, which samples in proportion to the
    weights without repeats.

    Args:
        input (Tensor): non-negative, finite weights (they need not sum to 1).
        num_samples (int): draws per row.
        replacement (bool): whether a category may be drawn again.
        generator (Generator, optional): the random generator to draw from.

    Returns:
        Tensor: int64 indices of shape ``input.shape[:-1] + (num_samples,)``.
    """
    _check_tensor("multinomial", input)
    if not _is_float(input):
        raise RuntimeError(
            f"multinomial only supports floating-point dtypes for input, got: {input.dtype}"
        )
    if input.ndim not in (1, 2):
        raise RuntimeError(f"prob_dist must be 1 or 2 dim, got {input.ndim}")
    n = input.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > n:
        raise RuntimeError(
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
        )
    # On a detached copy: the draws carry no gradient.
    w = input.detach().reshape(-1, n)
    if _dtype_name(w) in ("float16", "bfloat16"):
        w = w.float()
    if bool(((w < 0) | ~w.isfinite()).any()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if bool((w.sum(-1) <= 0).any()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    shape = (w.shape[0], num_samples)
    if replacement:
        cdf = w.cumsum(-1)
        u = _rumus.rand(shape, dtype=w.dtype, device=w.device, generator=generator)
        idx = _rumus.searchsorted(cdf, u * cdf[:, -1:], right=True).clamp_max(n - 1)
    else:
        if bool(((w > 0).sum(-1) < num_samples).any()):
            raise RuntimeError(
                "invalid multinomial distribution (with replacement=False, "
                "not enough non-negative category to sample)"
            )
        u = _rumus.rand(w.shape, dtype=w.dtype, device=w.device, generator=generator)
        idx = (w / -(-u).log1p()).topk(num_samples, -1).indices
    return idx.reshape(tuple(input.shape[:-1]) + (num_samples,))


FUNCTIONS = (
    "var_mean std_mean aminmax nansum nanmean count_nonzero cummax cummin logcumsumexp "
    "index_add index_copy index_fill index_put masked_scatter masked_select scatter_reduce "
    "cdist pdist randint_like multinomial"
).split()
METHODS = (
    "aminmax nansum nanmean count_nonzero cummax cummin logcumsumexp "
    "index_add index_add_ index_copy index_copy_ index_fill index_fill_ index_put index_put_ "
    "masked_scatter masked_scatter_ masked_select scatter_reduce scatter_reduce_ "
    "new_tensor new_zeros new_ones new_full new_empty multinomial"
).split()


def install(namespace):
    for name in METHODS:
        if not hasattr(Tensor, name):
            setattr(Tensor, name, globals()[name])
    for name in FUNCTIONS:
        namespace.setdefault(name, globals()[name])
