"""F.affine_grid and F.grid_sample as compositions of differentiable rumus ops.

grid_sample gathers the input at the integer taps around each sampling point (2 per axis for
bilinear/trilinear, 4 for bicubic, 1 for nearest) and sums them with weights computed from
the grid, so autograd gives the gradient w.r.t. the input (gather's scatter-add) and w.r.t.
the grid (the weights' derivative; the clip/reflection of border/reflection padding has
PyTorch's piecewise gradient). Out-of-range taps read 0 ('zeros'), or are clipped/reflected
into range (bicubic applies the padding to each tap, as PyTorch does).
"""

import math
import warnings

from .. import _rumus

_MODES = ("bilinear", "nearest", "bicubic")
_PADS = ("zeros", "border", "reflection")
_A = -0.75  # PyTorch's bicubic convolution coefficient


def _shape(t):
    return list(t.shape)


def _base(n, align_corners, like):
    """The n normalized coordinates of an axis in [-1, 1] (0 when n == 1)."""
    if n <= 1:
        return _rumus.zeros(max(n, 0), dtype=like.dtype, device=like.device)
    r = _rumus.linspace(-1.0, 1.0, n, dtype=like.dtype, device=like.device)
    return r if align_corners else r * ((n - 1) / n)


def _default_align_corners(align_corners):
    if align_corners is None:
        warnings.warn(
            "Default grid_sample and affine_grid behavior has changed to align_corners=False "
            "since 1.3.0. Please specify align_corners=True if the old behavior is desired. See "
            "the documentation of grid_sample for details.",
            stacklevel=3,
        )
        return False
    return bool(align_corners)


def affine_grid(theta, size, align_corners=None):
    """A sampling grid for grid_sample from a batch of affine matrices.

    Args:
        theta: floating-point affine matrices, (N, 2, 3) for 2-D or (N, 3, 4) for 3-D.
        size: the target size, (N, C, H, W) or (N, C, D, H, W).
        align_corners: whether -1 and 1 name the centers (True) or the outer edges (False) of
            the corner pixels; None warns and means False.

    Returns:
        The grid, (N, H, W, 2) or (N, D, H, W, 3), of normalized (x, y[, z]) coordinates.
    """
    align_corners = _default_align_corners(align_corners)
    if not isinstance(theta, _rumus.Tensor):
        raise TypeError(f"affine_grid: theta must be a Tensor, not {type(theta).__name__}")
    if not theta.dtype.is_floating_point:
        raise ValueError(
            f"Expected theta to have floating point type, but got {str(theta.dtype)[6:]}"
        )
    size = [int(s) for s in size]
    if len(size) not in (4, 5):
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    nsp = len(size) - 2
    if theta.dim() != 3 or _shape(theta) != [size[0], nsp, nsp + 1]:
        raise ValueError(
            f"Expected a batch of {nsp}D affine matrices of shape Nx{nsp}x{nsp + 1} for size "
            f"{size}. Got {_shape(theta)}."
        )
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if align_corners and min(size[2:]) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an intended use case of affine_grid. See the "
            "documentation of affine_grid for details.",
            stacklevel=2,
        )
    sp = size[2:]  # (H, W) or (D, H, W)
    # base[..., i] is the coordinate of axis x, y(, z) = sp reversed; the last column is 1
    axes = [_base(m, align_corners, theta) for m in reversed(sp)]
    cols = []
    for i, a in enumerate(axes):
        view = [1] * nsp
        view[nsp - 1 - i] = sp[nsp - 1 - i]
        cols.append(a.reshape(view).expand(*sp))
    cols.append(_rumus.ones(sp, dtype=theta.dtype, device=theta.device))
    base = _rumus.stack(cols, -1).reshape(1, -1, nsp + 1)  # (1, L, nsp + 1)
    grid = base @ theta.transpose(1, 2)  # (N, L, nsp)
    return grid.reshape(size[0], *sp, nsp)


def _unnormalize(g, size, align_corners):
    if align_corners:
        return (g + 1) * ((size - 1) / 2)
    return ((g + 1) * size - 1) / 2


def _reflect(x, lo2, hi2):
    """Reflects coordinates into [lo2 / 2, hi2 / 2] (twice the bounds, as PyTorch)."""
    if lo2 == hi2:
        return x * 0
    lo, span = lo2 / 2, (hi2 - lo2) / 2
    d = (x - lo).abs()
    flips = (d / span).floor()
    extra = d - flips * span
    even = (flips.remainder(2) == 0).to(x.dtype)
    return (extra + lo) * even + (span - extra + lo) * (1 - even)


def _pad_coord(x, size, padding_mode, align_corners):
    """Source coordinates after border / reflection padding (unchanged for zeros)."""
    if padding_mode == "border":
        return x.clamp(0, size - 1)
    if padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        return x.clamp(0, size - 1)
    return x


def _cubic(t):
    """The 4 weights of taps floor - 1 .. floor + 2 at fraction t."""

    def near(x):
        return ((_A + 2) * x - (_A + 3)) * x * x + 1

    def far(x):
        return ((_A * x - 5 * _A) * x + 8 * _A) * x - 4 * _A

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _gather(flat, taps, sizes):
    """flat (N, C, prod(sizes)) read at integer taps (one (N, L) int64 index tensor per axis,
    in range); returns (N, C, L) values."""
    idx = taps[0]
    for t, s in zip(taps[1:], sizes[1:]):
        idx = idx * s + t
    n, c = flat.shape[:2]
    return flat.gather(2, idx.unsqueeze(1).expand(n, c, idx.shape[-1]))


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Samples ``input`` at the normalized coordinates of ``grid``.

    Args:
        input: a tensor (N, C, H_in, W_in) or (N, C, D_in, H_in, W_in).
        grid: coordinates in [-1, 1], (N, H_out, W_out, 2) or (N, D_out, H_out, W_out, 3),
            ordered (x, y[, z]).
        mode: "bilinear", "nearest" or "bicubic" (2-D only).
        padding_mode: what out-of-range points read: "zeros", "border" or "reflection".
        align_corners: whether -1 and 1 name the centers (True) or the outer edges (False) of
            the corner pixels; None warns and means False.

    Returns:
        The sampled tensor, (N, C, H_out, W_out) or (N, C, D_out, H_out, W_out).
    """
    if mode not in _MODES:
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in _PADS:
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    align_corners = _default_align_corners(align_corners)
    for name, t in (("input", input), ("grid", grid)):
        if not isinstance(t, _rumus.Tensor):
            raise TypeError(f"grid_sample: {name} must be a Tensor, not {type(t).__name__}")
    if input.dim() not in (4, 5) or grid.dim() != input.dim():
        raise RuntimeError(
            "grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, "
            f"but got input with sizes {_shape(input)} and grid with sizes {_shape(grid)}"
        )
    nsp = input.dim() - 2
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input "
            f"with sizes {_shape(input)} and grid with sizes {_shape(grid)}"
        )
    if grid.shape[-1] != nsp:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {nsp} in last dimension, but got grid "
            f"with sizes {_shape(grid)}"
        )
    if any(s == 0 for s in input.shape[2:]):
        raise RuntimeError(
            "grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
            f"sizes {_shape(input)} with dimension {2 + list(input.shape[2:]).index(0)} being "
            "empty"
        )
    if not input.dtype.is_floating_point or grid.dtype != input.dtype:
        raise RuntimeError(
            "grid_sampler(): expected input and grid to have the same floating point dtype, but "
            f"input has {input.dtype} and grid has {grid.dtype}"
        )
    if input.device != grid.device:
        raise RuntimeError(
            "grid_sampler(): expected input and grid to be on same device, but input is on "
            f"{input.device} and grid is on {grid.device}"
        )
    if mode == "bicubic" and nsp != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input.")
    n, c = input.shape[:2]
    sizes = list(input.shape[2:])  # (H, W) or (D, H, W)
    out_sp = list(grid.shape[1:-1])
    g = grid.reshape(n, math.prod(out_sp), nsp)
    # per spatial axis of the input (D, H, W order): its grid component (x is W, the last)
    coords = [_unnormalize(g[..., nsp - 1 - a], sizes[a], align_corners) for a in range(nsp)]
    flat = input.reshape(n, c, math.prod(sizes))
    if mode == "bicubic":
        out = _bicubic(flat, coords, sizes, padding_mode, align_corners)
    else:
        coords = [_pad_coord(x, s, padding_mode, align_corners) for x, s in zip(coords, sizes)]
        if mode == "nearest":
            out = _taps_sum(flat, [[(x.round(), None)] for x in coords], sizes)
        else:
            per_axis = []
            for x in coords:
                x0 = x.floor()
                frac = x - x0
                per_axis.append([(x0, 1 - frac), (x0 + 1, frac)])
            out = _taps_sum(flat, per_axis, sizes)
    return out.reshape(n, c, *out_sp)


def _taps_sum(flat, per_axis, sizes):
    """Sum over the product of per-axis (integer coordinate, weight) taps; taps out of range
    read 0. Coordinates are float tensors (N, L); weights are (N, L) or None (1)."""
    out = None
    for combo in _product(per_axis):
        valid = None
        weight = None
        idx = []
        for (pos, w), size in zip(combo, sizes):
            ok = (pos >= 0) & (pos <= size - 1)
            valid = ok if valid is None else valid & ok
            idx.append(pos.clamp(0, size - 1).long())
            if w is not None:
                weight = w if weight is None else weight * w
        mask = valid.to(flat.dtype)
        weight = mask if weight is None else weight * mask
        term = _gather(flat, idx, sizes) * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out


def _product(lists):
    if not lists:
        yield ()
        return
    for head in lists[0]:
        for rest in _product(lists[1:]):
            yield (head,) + rest


def _bicubic(flat, coords, sizes, padding_mode, align_corners):
    """4 x 4 taps with cubic weights; border/reflection pad each tap's integer coordinate."""
    per_axis = []
    for x, size in zip(coords, sizes):
        x0 = x.floor()
        weights = _cubic(x - x0)
        taps = []
        for k, w in enumerate(weights):
            pos = x0 + (k - 1)
            if padding_mode != "zeros":
                pos = _pad_coord(pos, size, padding_mode, align_corners).round().detach()
            taps.append((pos.detach(), w))
        per_axis.append(taps)
    return _taps_sum(flat, per_axis, sizes)
