"""torch's diagonal, gathering, splitting, rotating, index-building and statistics
compositions (``torch.diag``, ``torch.take``, ``torch.tensor_split``, ``torch.cov``...), built
from differentiable rumus ops (indexing, gather, where, pad, flip, cumsum, matmul), so autograd
and every device those ops support come for free."""

import itertools
import math
import operator

from . import _rumus
from ._rumus import Tensor
from .nn import functional as F


def _norm_dim(dim, ndim, fn):
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(
            f"{fn}: dimension out of range (expected to be in range of "
            f"[{-max(ndim, 1)}, {max(ndim, 1) - 1}], but got {dim})"
        )
    return dim % max(ndim, 1)


def _tensor(x, fn, name="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(x).__name__}")
    return x


def _as_tensor(x, like=None):
    if isinstance(x, Tensor):
        return x
    device = like.device if isinstance(like, Tensor) else None
    return _rumus.tensor(x, device=device) if device is not None else _rumus.tensor(x)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor whose diagonals (w.r.t. ``dim1`` and ``dim2``) are filled by the last
    dimension of ``input``, zeros elsewhere.

    Args:
        input (Tensor): at least 1-D; its last dimension fills the diagonals.
        offset (int): which diagonal: above (>0) or below (<0) the main one.
        dim1 (int): the first dimension of the diagonals in the result.
        dim2 (int): the second dimension of the diagonals in the result.

    Returns:
        Tensor: of ``input.dim() + 1`` dimensions.
    """
    _tensor(input, "diag_embed")
    x = input.unsqueeze(0) if input.dim() == 0 else input
    nd = x.dim() + 1
    d1, d2 = _norm_dim(dim1, nd, "diag_embed"), _norm_dim(dim2, nd, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diag_embed: diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = x.shape[-1]
    eye = _rumus.eye(n, dtype=_rumus.bool, device=x.device)
    out = _rumus.where(eye, x.unsqueeze(-2), x.new_zeros(()))
    if offset:
        k = abs(offset)
        out = F.pad(out, (k, 0, 0, k) if offset > 0 else (0, k, k, 0))
    return out.movedim((-2, -1), (d1, d2))


def diag(input, diagonal=0):
    """A square matrix with a 1-D ``input`` on a diagonal, or a 2-D ``input``'s diagonal.

    Args:
        input (Tensor): 1-D or 2-D.
        diagonal (int): which diagonal: above (>0) or below (<0) the main one.

    Returns:
        Tensor: a new 2-D matrix (1-D input) or 1-D vector (2-D input).
    """
    _tensor(input, "diag")
    if input.dim() == 1:
        return diag_embed(input, diagonal)
    if input.dim() == 2:
        return input.diagonal(diagonal).clone()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")


def block_diag(*tensors):
    """The block-diagonal matrix of ``tensors`` (0-d and 1-D ones count as 1-row matrices).

    Args:
        *tensors (Tensor): at most 2-D each; their dtypes promote.

    Returns:
        Tensor: of shape ``(sum of rows, sum of columns)``.
    """
    blocks = []
    for i, t in enumerate(tensors):
        _tensor(t, "block_diag", f"tensors[{i}]")
        if t.dim() > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                f"Input {i} has {t.dim()} dimensions"
            )
        blocks.append(t.reshape(1, -1) if t.dim() < 2 else t)
    if not blocks:
        return _rumus.empty(1, 0)
    dtype = blocks[0].dtype
    for b in blocks[1:]:
        dtype = _rumus.promote_types(dtype, b.dtype)
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        c = b.shape[1]
        rows.append(F.pad(b.to(dtype), (left, width - left - c)))
        left += c
    return _rumus.cat(rows, 0)


def take(input, index):
    """The elements of ``input``, read as 1-D, at ``index`` (negative ones count from the end).

    Args:
        input (Tensor): the input.
        index (Tensor): int64 indices into the flattened input.

    Returns:
        Tensor: of ``index``'s shape.
    """
    _tensor(input, "take")
    _tensor(index, "take", "index")
    if index.dtype != _rumus.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype}")
    # indexing checks the bounds (IndexError), on every device
    return input.reshape(-1)[index]


def take_along_dim(input, indices, dim=None):
    """``input``'s values at ``indices`` along ``dim`` (both broadcast on the other dims),
    or at ``indices`` into the flattened input when ``dim`` is None.

    Args:
        input (Tensor): the input.
        indices (Tensor): int64 indices.
        dim (int, optional): the dimension to select along; None: the flattened input.

    Returns:
        Tensor: the selected values.
    """
    _tensor(input, "take_along_dim")
    _tensor(indices, "take_along_dim", "indices")
    if indices.dtype not in (_rumus.int64, _rumus.int32):
        raise RuntimeError(
            f"take_along_dim(): dtype of indices should be int64 but got {indices.dtype}"
        )
    if dim is None:
        return input.reshape(-1).gather(0, indices.reshape(-1))
    if input.dim() != indices.dim():
        raise RuntimeError(
            f"torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {input.dim()} dimensions for input, and {indices.dim()} "
            f"dimensions for indices"
        )
    d = _norm_dim(dim, input.dim(), "take_along_dim")
    si, sx = list(indices.shape), list(input.shape)
    si[d], sx[d] = 1, 1
    shape = list(_rumus.broadcast_shapes(tuple(si), tuple(sx)))
    ti, tx = list(shape), list(shape)
    ti[d], tx[d] = indices.shape[d], input.shape[d]
    return input.expand(*tx).gather(d, indices.expand(*ti))


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of ``elements`` is in ``test_elements``.

    Args:
        elements (Tensor or number): the values to look up.
        test_elements (Tensor or number): the values to look for.
        assume_unique (bool): both inputs hold unique values (ignored: same result).
        invert (bool): return whether each element is NOT in ``test_elements``.

    Returns:
        Tensor: bool, of ``elements``' shape.
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): at least one of elements and test_elements must be a Tensor")
    e = _as_tensor(elements, test_elements)
    t = _as_tensor(test_elements, e)
    dtype = _rumus.promote_types(e.dtype, t.dtype)
    if dtype == _rumus.bool:  # searchsorted takes numbers
        dtype = _rumus.uint8
    e, t = e.to(dtype), t.reshape(-1).to(dtype)
    if t.numel() == 0:
        found = _rumus.zeros(tuple(e.shape), dtype=_rumus.bool, device=e.device)
    else:
        s = t.sort().values
        pos = _rumus.searchsorted(s, e.reshape(-1)).clamp(max=t.numel() - 1)
        found = (s[pos] == e.reshape(-1)).reshape(tuple(e.shape))
    return found.logical_not() if invert else found


def tensor_split(input, indices_or_sections, dim=0):
    """Splits ``input`` along ``dim`` into ``n`` nearly equal views (the first
    ``size % n`` one longer), or at the given indices (Python slice bounds).

    Args:
        input (Tensor): at least 1-D.
        indices_or_sections (int, list of ints or Tensor): the number of parts, or the
            indices to split before (a 0-d int64 tensor is a number of parts).
        dim (int): the dimension to split.

    Returns:
        tuple[Tensor, ...]: views of ``input``.
    """
    _tensor(input, "tensor_split")
    if input.dim() == 0:
        raise RuntimeError(
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"
        )
    d = _norm_dim(dim, input.dim(), "tensor_split")
    size = input.shape[d]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios.dtype != _rumus.int64 or ios.dim() > 1:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional "
                f"or one-dimensional tensor of dtype int64, but got {ios.dtype} of "
                f"{ios.dim()} dims"
            )
        ios = int(ios) if ios.dim() == 0 else [int(v) for v in ios.tolist()]
    if isinstance(ios, (list, tuple)):
        bounds = [0] + [operator.index(i) for i in ios] + [size]
        parts = []
        for a, b in zip(bounds, bounds[1:]):
            start, stop, _ = slice(a, b).indices(size)
            parts.append(input.narrow(d, start, max(stop - start, 0)))
        return tuple(parts)
    n = operator.index(ios)
    if n <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {n}")
    q, r = divmod(size, n)
    parts, start = [], 0
    for i in range(n):
        length = q + (i < r)
        parts.append(input.narrow(d, start, length))
        start += length
    return tuple(parts)


def rot90(input, k=1, dims=(0, 1)):
    """Rotates ``input`` by 90 degrees ``k`` times in the plane of ``dims``, from the first
    dim towards the second.

    Args:
        input (Tensor): at least 2-D.
        k (int): the number of rotations (negative: the other way).
        dims (sequence of 2 ints): the plane.

    Returns:
        Tensor: the rotated tensor.
    """
    _tensor(input, "rot90")
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = (_norm_dim(d, input.dim(), "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}"
        )
    k %= 4
    if k == 1:
        return input.flip([d1]).transpose(d0, d1)
    if k == 2:
        return input.flip([d0, d1])
    if k == 3:
        return input.flip([d0]).transpose(d0, d1)
    return input.clone()


def _indices(fn, row, col, offset, dtype, device, keep):
    for name, v in (("row", row), ("col", col)):
        if operator.index(v) < 0:
            raise RuntimeError(f"{name} must be non-negative, got{v}")
    if dtype not in (_rumus.int64, _rumus.int32):
        raise NotImplementedError(f'"{fn}" not implemented for {dtype}')
    r = _rumus.arange(row, device=device).unsqueeze(1)
    c = _rumus.arange(col, device=device)
    return keep(c - r, offset).nonzero().t().to(dtype).contiguous()


def tril_indices(row, col, offset=0, *, dtype=_rumus.int64, device=None, layout=None):
    """The indices of the lower triangle of a ``row`` x ``col`` matrix, row by row.

    Args:
        row (int): the number of rows.
        col (int): the number of columns.
        offset (int): the diagonal the triangle ends at: above (>0) or below (<0) the main one.
        dtype (rumus.dtype): int64 or int32.
        device (str or rumus.device, optional): where to create the result.
        layout: ignored (strided only).

    Returns:
        Tensor: of shape ``(2, N)``: the row indices, then the column indices.
    """
    return _indices("tril_indices", row, col, offset, dtype, device, lambda d, k: d <= k)


def triu_indices(row, col, offset=0, *, dtype=_rumus.int64, device=None, layout=None):
    """The indices of the upper triangle of a ``row`` x ``col`` matrix, row by row.

    Args:
        row (int): the number of rows.
        col (int): the number of columns.
        offset (int): the diagonal the triangle starts at: above (>0) or below (<0) the main
            one.
        dtype (rumus.dtype): int64 or int32.
        device (str or rumus.device, optional): where to create the result.
        layout: ignored (strided only).

    Returns:
        Tensor: of shape ``(2, N)``: the row indices, then the column indices.
    """
    return _indices("triu_indices", row, col, offset, dtype, device, lambda d, k: d >= k)


def _vector(t, fn, name="input"):
    _tensor(t, fn, name)
    if t.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    return t


def cartesian_prod(*tensors):
    """The Cartesian product of 1-D tensors (every combination, the last varying fastest).

    Args:
        *tensors (Tensor): 1-D tensors of one dtype.

    Returns:
        Tensor: of shape ``(N, len(tensors))``; a single tensor is returned as is.
    """
    ts = [_vector(t, "cartesian_prod", f"tensors[{i}]") for i, t in enumerate(tensors)]
    if len(ts) == 1:
        return ts[0]
    return _rumus.stack([g.reshape(-1) for g in _rumus.meshgrid(*ts, indexing="ij")], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of ``input``'s elements, as ``itertools.combinations``
    (or ``combinations_with_replacement``) orders them.

    Args:
        input (Tensor): 1-D.
        r (int): the length of each combination.
        with_replacement (bool): allow an element more than once.

    Returns:
        Tensor: of shape ``(N, r)`` (empty of shape ``(0,)`` for ``r == 0``).
    """
    _vector(input, "combinations")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = [list(c) for c in pick(range(input.shape[0]), r)]
    index = _rumus.tensor(idx, dtype=_rumus.int64, device=input.device).reshape(len(idx), r)
    return input[index]


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of ``x``: columns ``x**(N-1), ..., x, 1`` (reversed with
    ``increasing``).

    Args:
        x (Tensor): 1-D; integer and bool inputs give int64.
        N (int, optional): the number of columns (default ``len(x)``).
        increasing (bool): powers increase from left to right.

    Returns:
        Tensor: of shape ``(len(x), N)``.
    """
    _tensor(x, "vander", "x")
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0]
    N = n if N is None else operator.index(N)
    if N < 0:
        raise RuntimeError("N must be non-negative.")
    x = x.to(_rumus.promote_types(x.dtype, _rumus.int64))
    if N == 0:
        return x.new_empty((n, 0))
    out = x.new_ones((n, 1))
    if N > 1:
        out = _rumus.cat([out, x.unsqueeze(1).expand(n, N - 1).cumprod(1)], 1)
    return out if increasing else out.flip([1])


def _floating(t):
    return t if t.is_floating_point() else t.to(_rumus.get_default_dtype())


def _trapezoid_parts(fn, y, x, dx, dim):
    """Each interval's area along ``dim`` (``dim`` normalised), as torch computes it."""
    _tensor(y, fn, "y")
    d = _norm_dim(dim, y.dim(), fn)
    n = y.shape[d] if y.dim() else 1
    if x is not None:
        if dx is not None:
            raise TypeError(f"{fn}(): pass either x or dx, not both")
        _tensor(x, fn, "x")
    if y.dtype == _rumus.bool or (x is not None and x.dtype == _rumus.bool):
        raise NotImplementedError(
            f"{fn}: received a bool input for `x` or `y`, but bool is not supported"
        )
    y = _floating(y)  # integer sums would wrap
    if n == 0:
        return y.narrow(d, 0, 0), d
    ysum = y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)
    if x is None:
        return ysum * ((1.0 if dx is None else dx) / 2), d
    if x.dim() == 1:
        if x.shape[0] != n:
            raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[d] = n - 1
        widths = (x[1:] - x[:-1]).reshape(shape)
    else:
        xd = _norm_dim(dim, x.dim(), fn)
        widths = x.narrow(xd, 1, x.shape[xd] - 1) - x.narrow(xd, 0, x.shape[xd] - 1)
    return widths * ysum / 2, d


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of ``y`` along ``dim`` by the trapezoid rule, at the points ``x`` or
    spaced ``dx`` apart.

    Args:
        y (Tensor): the values.
        x (Tensor, optional): the sample points (1-D of ``y.size(dim)`` values, or
            broadcasting with ``y``).
        dx (float, optional): the spacing when ``x`` is not given (default 1).
        dim (int): the dimension to integrate along.

    Returns:
        Tensor: ``y`` without ``dim``.
    """
    parts, d = _trapezoid_parts("trapezoid", y, x, dx, dim)
    return parts.sum(d)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running integral of ``y`` along ``dim`` by the trapezoid rule.

    Args:
        y (Tensor): the values.
        x (Tensor, optional): the sample points (1-D of ``y.size(dim)`` values, or
            broadcasting with ``y``).
        dx (float, optional): the spacing when ``x`` is not given (default 1).
        dim (int): the dimension to integrate along.

    Returns:
        Tensor: ``y``'s shape with ``dim`` one shorter.
    """
    parts, d = _trapezoid_parts("cumulative_trapezoid", y, x, dx, dim)
    return parts.cumsum(d)


def _weights(w, name, n, integral):
    _tensor(w, "cov", name)
    if w.dim() > 1:
        raise RuntimeError(
            f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
            f"{w.dim()} dimensions"
        )
    if w.numel() != n:
        raise RuntimeError(
            f"cov(): expected {name} to have the same numel as there are observations in the "
            f"input but got {w.numel()} != {n}"
        )
    if integral and (w.is_floating_point() or w.dtype == _rumus.bool):
        raise RuntimeError(
            f"cov(): expected {name} to have integral dtype but got {name} with {w.dtype} dtype"
        )
    if not integral and not w.is_floating_point():
        raise RuntimeError(
            f"cov(): expected {name} to have floating point dtype but got {name} with "
            f"{w.dtype} dtype"
        )
    if bool((w < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")
    return w


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in ``input``'s rows (observations in columns).

    Args:
        input (Tensor): 2-D ``(variables, observations)``, or 0-d/1-D (one variable).
        correction (int): subtracted from the number of observations (1: unbiased).
        fweights (Tensor, optional): 1-D integer frequency weights, one per observation.
        aweights (Tensor, optional): 1-D float importance weights, one per observation.

    Returns:
        Tensor: ``(variables, variables)``, 0-d for one variable.
    """
    _tensor(input, "cov")
    if input.dim() > 2:
        raise RuntimeError(
            f"cov(): expected input to have two or fewer dimensions but got an input with "
            f"{input.dim()} dimensions"
        )
    if input.dtype == _rumus.bool:
        raise NotImplementedError("cov(): bool dtype is not supported for input")
    x = _floating(input.reshape(1, -1) if input.dim() < 2 else input)
    n = x.shape[1]
    w = None if fweights is None else _weights(fweights, "fweights", n, True).to(x.dtype)
    if aweights is not None:
        aw = _weights(aweights, "aweights", n, False).to(x.dtype)
        w = aw if w is None else w * aw
    if w is None:
        avg, w_sum = x.mean(1), n
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    if w is None:
        norm = n - correction
    elif correction == 0:
        norm = w_sum
    elif aweights is None:
        norm = w_sum - correction
    else:
        norm = w_sum - correction * (w * aw).sum() / w_sum
    norm = max(norm, 0) if w is None else norm.clamp(min=0)
    xm = x - avg.unsqueeze(1)
    c = (xm if w is None else xm * w) @ xm.t()
    return (c / norm).squeeze()


def corrcoef(input):
    """The Pearson correlation coefficients of the variables in ``input``'s rows.

    Args:
        input (Tensor): 2-D ``(variables, observations)``, or 0-d/1-D (one variable).

    Returns:
        Tensor: ``(variables, variables)`` in [-1, 1], 0-d for one variable.
    """
    c = cov(input)
    if c.dim() == 0:
        return c / c
    std = c.diagonal().sqrt()
    return (c / std.unsqueeze(1) / std.unsqueeze(0)).clamp(-1, 1)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(fn, input, q, dim, keepdim, interpolation, ignore_nan):
    _tensor(input, fn)
    if not input.is_floating_point():
        raise RuntimeError(f"{fn}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(
            f"{fn}() interpolation must be one of {', '.join(_INTERPOLATIONS)}. Got {interpolation}"
        )
    if isinstance(q, Tensor):
        if q.dim() > 1:
            raise RuntimeError(f"{fn}() q must be a scalar or 1D tensor")
        if q.dtype != input.dtype:
            raise RuntimeError(f"{fn}() q tensor must be same dtype as the input tensor")
        scalar_q = q.dim() == 0
        qs = q.reshape(-1).to(device=input.device)
    else:
        scalar_q = True
        qs = _rumus.tensor([float(q)], dtype=input.dtype, device=input.device)
    if input.numel() == 0:
        raise RuntimeError(f"{fn}() input tensor must be non-empty")
    if bool(((qs < 0) | (qs > 1)).any()):
        raise RuntimeError(f"{fn}() q values must be in the range [0, 1]")
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        d = _norm_dim(dim, input.dim(), fn)
        x = input.unsqueeze(0) if input.dim() == 0 else input
    s = x.sort(dim=d).values.movedim(d, -1)  # NaNs sort last
    n = s.shape[-1]
    nan = s.isnan()
    if ignore_nan:
        count = n - nan.sum(-1, keepdim=True).to(s.dtype)
        rank = (count - 1) * qs
    else:
        rank = ((n - 1) * qs).expand(*s.shape[:-1], qs.shape[0])
    lo = rank.floor().clamp(0, n - 1)
    hi = rank.ceil().clamp(0, n - 1)
    vlo, vhi = s.gather(-1, lo.long()), s.gather(-1, hi.long())
    if interpolation == "linear":
        out = vlo + (vhi - vlo) * (rank - lo)
    elif interpolation == "lower":
        out = vlo
    elif interpolation == "higher":
        out = vhi
    elif interpolation == "midpoint":
        out = (vlo + vhi) / 2
    else:
        out = s.gather(-1, rank.round().clamp(0, n - 1).long())
    empty = count == 0 if ignore_nan else nan.any(-1, keepdim=True)
    out = _rumus.where(empty, out.new_full((), float("nan")), out)
    if keepdim and dim is None:
        out = out.reshape((1,) * input.dim() + (qs.shape[0],))
    elif keepdim and input.dim() > 0:
        out = out.unsqueeze(d)
    out = out.movedim(-1, 0)
    return out.squeeze(0) if scalar_q else out


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-th quantiles of ``input`` along ``dim`` (of all elements when None); NaN
    where a slice holds a NaN.

    Args:
        input (Tensor): floating point.
        q (float or Tensor): the quantiles, in [0, 1]: a number, or a 0-d/1-D tensor of
            ``input``'s dtype (a 1-D one adds a leading dimension to the result).
        dim (int, optional): the dimension to reduce; None: all elements.
        keepdim (bool): keep the reduced dimension (size 1).
        interpolation (str): between the two nearest ranks: 'linear', 'lower', 'higher',
            'midpoint' or 'nearest'.

    Returns:
        Tensor: the quantiles.
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """:func:`quantile` ignoring NaNs (NaN only where a slice holds nothing else).

    Args:
        input (Tensor): floating point.
        q (float or Tensor): the quantiles, in [0, 1]: a number, or a 0-d/1-D tensor of
            ``input``'s dtype (a 1-D one adds a leading dimension to the result).
        dim (int, optional): the dimension to reduce; None: all elements.
        keepdim (bool): keep the reduced dimension (size 1).
        interpolation (str): between the two nearest ranks: 'linear', 'lower', 'higher',
            'midpoint' or 'nearest'.

    Returns:
        Tensor: the quantiles.
    """
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


def _window(fn, window_length, periodic, dtype, device, requires_grad, values):
    """``values(n, L)`` on the sample points ``n = 0..L-1`` of a symmetric window of length
    ``L`` (one longer when ``periodic``, the last point then dropped), as ``dtype``."""
    n = operator.index(window_length)
    if n < 0:
        raise RuntimeError(f"{fn} requires non-negative window_length, got window_length={n}")
    dtype = dtype or _rumus.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"{fn} expects floating point dtypes, got: {dtype}")
    if n <= 1:
        out = _rumus.ones(n, dtype=dtype, device=device)
    else:
        length = n + 1 if periodic else n
        work = _rumus.float64 if dtype == _rumus.float64 else _rumus.float32
        pts = _rumus.arange(length, dtype=work, device=device)
        out = values(pts, length)[:n].to(dtype).contiguous()
    return out.requires_grad_() if requires_grad else out


def _cosine_sum(coeffs):
    """The generalized cosine window ``sum_k (-1)^k a_k cos(2 pi k n / (L - 1))``."""

    def values(pts, length):
        out = None
        for k, a in enumerate(coeffs):
            term = (pts * (2 * math.pi * k / (length - 1))).cos() * ((-1) ** k * a)
            out = term if out is None else out + term
        return out

    return values


def hann_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False
):
    """The Hann window ``0.5 - 0.5 cos(2 pi n / (L - 1))``.

    Args:
        window_length (int): the number of points.
        periodic (bool): a window for spectral analysis (one point of a window of
            ``window_length + 1``); False: symmetric.
        dtype (rumus.dtype, optional): a floating dtype (default: the default dtype).
        layout: ignored (strided only).
        device (str or rumus.device, optional): where to create it.
        requires_grad (bool): record operations on the result.

    Returns:
        Tensor: 1-D of ``window_length`` values.
    """
    return _window(
        "hann_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        _cosine_sum((0.5, 0.5)),
    )


def hamming_window(
    window_length,
    periodic=True,
    alpha=0.54,
    beta=0.46,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
):
    """The Hamming window ``alpha - beta cos(2 pi n / (L - 1))``.

    Args:
        window_length (int): the number of points.
        periodic (bool): a window for spectral analysis (one point of a window of
            ``window_length + 1``); False: symmetric.
        alpha (float): the constant coefficient.
        beta (float): the cosine coefficient.
        dtype (rumus.dtype, optional): a floating dtype (default: the default dtype).
        layout: ignored (strided only).
        device (str or rumus.device, optional): where to create it.
        requires_grad (bool): record operations on the result.

    Returns:
        Tensor: 1-D of ``window_length`` values.
    """
    values = _cosine_sum((alpha, beta))
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad, values)


def blackman_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False
):
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / (L - 1)) + 0.08 cos(4 pi n / (L - 1))``.

    Args:
        window_length (int): the number of points.
        periodic (bool): a window for spectral analysis (one point of a window of
            ``window_length + 1``); False: symmetric.
        dtype (rumus.dtype, optional): a floating dtype (default: the default dtype).
        layout: ignored (strided only).
        device (str or rumus.device, optional): where to create it.
        requires_grad (bool): record operations on the result.

    Returns:
        Tensor: 1-D of ``window_length`` values.
    """
    values = _cosine_sum((0.42, 0.5, 0.08))
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad, values)


def bartlett_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False
):
    """The Bartlett (triangular) window ``1 - |2 n / (L - 1) - 1|``.

    Args:
        window_length (int): the number of points.
        periodic (bool): a window for spectral analysis (one point of a window of
            ``window_length + 1``); False: symmetric.
        dtype (rumus.dtype, optional): a floating dtype (default: the default dtype).
        layout: ignored (strided only).
        device (str or rumus.device, optional): where to create it.
        requires_grad (bool): record operations on the result.

    Returns:
        Tensor: 1-D of ``window_length`` values.
    """

    def values(pts, length):
        return 1 - (pts * (2 / (length - 1)) - 1).abs()

    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad, values)


def kaiser_window(
    window_length,
    periodic=True,
    beta=12.0,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
):
    """The Kaiser window ``I0(beta sqrt(1 - (2 n / (L - 1) - 1)^2)) / I0(beta)``.

    Args:
        window_length (int): the number of points.
        periodic (bool): a window for spectral analysis (one point of a window of
            ``window_length + 1``); False: symmetric.
        beta (float): the shape parameter.
        dtype (rumus.dtype, optional): a floating dtype (default: the default dtype).
        layout: ignored (strided only).
        device (str or rumus.device, optional): where to create it.
        requires_grad (bool): record operations on the result.

    Returns:
        Tensor: 1-D of ``window_length`` values.
    """

    def values(pts, length):
        r = pts * (2 / (length - 1)) - 1
        arg = (1 - r * r).clamp(min=0).sqrt() * beta
        return arg.i0() / pts.new_full((), float(beta)).i0()

    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, values)


# torch's Tensor methods among these (torch has no Tensor.isin, block_diag...).
_METHODS = (
    "diag diag_embed take take_along_dim tensor_split rot90 cov corrcoef quantile nanquantile"
)
for _name in _METHODS.split():
    setattr(Tensor, _name, globals()[_name])
del _name
