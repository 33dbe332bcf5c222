"""F.affine_grid (a product of the base grid with theta, differentiable through matmul) and
F.grid_sample (its kernels are Rust and WGSL: rust/ops/sample.rs, backend/cpu/sample.rs,
shaders/sample.wgsl, with the gradients w.r.t. input and grid).
"""

import warnings

from .. import _rumus


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
    align_corners = _default_align_corners(align_corners)
    for name, t in (("input", input), ("grid", grid)):
        if not isinstance(t, _rumus.Tensor):
            raise TypeError(f"grid_sample: {name} must be a Tensor, not {type(t).__name__}")
    return _rumus._grid_sample(input, grid, mode, padding_mode, align_corners)
