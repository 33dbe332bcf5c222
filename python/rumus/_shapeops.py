"""torch's diagonal, gathering, splitting, rotating, index-building and statistics
compositions (``torch.diag``, ``torch.take``, ``torch.tensor_split``, ``torch.cov``...), built
from differentiable rumus ops (indexing, gather, where, pad, flip, cumsum, matmul), so autograd
and every device those ops support come for free."""

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


# torch's Tensor methods among these (torch has no Tensor.isin, block_diag...).
for _name in "diag diag_embed take take_along_dim tensor_split rot90".split():
    setattr(Tensor, _name, globals()[_name])
del _name
