"""3-D pooling and max unpooling, built on the 2-D Rust pooling kernels.

Pooling windows are boxes, so 3-D pooling is separable: a 2-D pass over (H, W) of every depth
plane, then a 1-D pass over D (a 2-D pool with a (k, 1) window over (D, OH·OW)). Averages
divide by per-axis factors whose product is PyTorch's divisor (with or without padding); a
max of maxima keeps PyTorch's tie rule (the first maximum in (d, h, w) scan order, NaN wins)
and the two passes' indices combine into flat D·H·W positions. Gradients come from the 2-D
kernels' recorded backwards.
"""

import math
import numbers

from .. import _rumus


def _shape(t):
    return list(t.shape)


def _ints(v, n, op, what, minimum):
    if isinstance(v, numbers.Integral):
        v = (int(v),) * n
    v = tuple(int(x) for x in v)
    if len(v) == 1:
        v = v * n
    if len(v) != n:
        raise RuntimeError(
            f"{op}: {what} must either be a single int, or a tuple of {n} ints (got {list(v)})"
        )
    if any(x < minimum for x in v):
        kind = "negative" if minimum == 0 else "non-positive"
        raise RuntimeError(f"{op}: {kind} {what} is not supported (got {list(v)})")
    return v


def _batched(input, op, nsp=3):
    """(N, C, *spatial) from a batched or unbatched input, and whether a batch dim was added."""
    if not isinstance(input, _rumus.Tensor):
        raise TypeError(f"{op}: input must be a Tensor, not {type(input).__name__}")
    nd = input.dim()
    if nd not in (nsp + 1, nsp + 2):
        raise RuntimeError(
            f"{op}: Expected {nsp + 1}D or {nsp + 2}D (batch mode) tensor with optional 0 dim "
            f"batch size for input, but got: {_shape(input)}"
        )
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"\"{op}\" not implemented for '{str(input.dtype).removeprefix('rumus.')}'"
        )
    if any(s == 0 for s in input.shape[nd - nsp - 1 :]):
        raise RuntimeError(
            f"{op}: Expected input's non-batch dimensions to have positive length, but input has "
            f"a shape of {_shape(input)}"
        )
    return (input.unsqueeze(0), True) if nd == nsp + 1 else (input, False)


def _sliding_args(op, kernel_size, stride, padding, dilation, half):
    k = _ints(kernel_size, 3, op, "kernel_size", 1)
    empty = not isinstance(stride, numbers.Integral) and stride is not None and len(stride) == 0
    s = k if stride is None or empty else stride
    s = _ints(s, 3, op, "stride", 1)
    p = _ints(padding, 3, op, "padding", 0)
    d = _ints(dilation, 3, op, "dilation", 1)
    for kk, pp, dd in zip(k, p, d):
        if pp > half(kk, dd):
            raise RuntimeError(
                f"{op}: pad should be at most half of effective kernel size, but got pad={pp}, "
                f"kernel_size={kk} and dilation={dd}"
            )
    return k, s, p, d


def _check_output_size(op, size, k, s, p, d, ceil_mode):
    num = size + 2 * p - d * (k - 1) - 1
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    if num < 0 or out <= 0:
        raise RuntimeError(
            f"{op}: Given input size: ({size}). Calculated output size: ({max(out, 0)}). Output "
            "size is too small"
        )


def _combine(i1, i2, plane, n, c, depth):
    """Flat D·H·W indices from the (H, W) pass's indices ``i1`` (per depth plane, within an
    H·W plane) and the D pass's ``i2`` (within (D, OH·OW))."""
    l2 = i1.shape[-1] * i1.shape[-2]
    z = i2.reshape(n, c, i2.shape[2], l2) // l2
    inner = i1.reshape(n, c, depth, l2).gather(2, z)
    return z * plane + inner


def _max3d(x, pass_hw, pass_d, return_indices, unbatched):
    n, c, depth, h, w = x.shape
    y1, i1 = pass_hw(x.reshape(n, c * depth, h, w))
    oh, ow = y1.shape[-2:]
    y2, i2 = pass_d(y1.reshape(n, c, depth, oh * ow))
    out = y2.reshape(n, c, y2.shape[2], oh, ow)
    if unbatched:
        out = out.squeeze(0)
    if not return_indices:
        return out
    idx = _combine(i1.reshape(n, c * depth, oh, ow), i2, h * w, n, c, depth).reshape(out.shape)
    return out, idx


def max_pool3d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W) inputs.

    Args:
        input: the input tensor.
        kernel_size: the window size (an int or a triple).
        stride: the stride (default: ``kernel_size``).
        padding: the implicit -inf padding on each side (at most half the window).
        dilation: the spacing between window elements.
        ceil_mode: whether to use ceil instead of floor for the output size.
        return_indices: whether to also return the flat D·H·W index of each maximum.

    Returns:
        The pooled tensor, or (pooled, indices) with ``return_indices``.
    """
    op = "max_pool3d"
    x, unbatched = _batched(input, op)
    k, s, p, d = _sliding_args(
        op, kernel_size, stride, padding, dilation, lambda k, d: (d * (k - 1) + 1) // 2
    )
    for a in range(3):
        _check_output_size(op, x.shape[2 + a], k[a], s[a], p[a], d[a], ceil_mode)
    return _max3d(
        x,
        lambda t: _rumus.max_pool2d(t, k[1:], s[1:], p[1:], d[1:], ceil_mode, True),
        lambda t: _rumus.max_pool2d(t, (k[0], 1), (s[0], 1), (p[0], 0), (d[0], 1), ceil_mode, True),
        return_indices,
        unbatched,
    )


def avg_pool3d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """3-D average pooling over (N, C, D, H, W) or (C, D, H, W) inputs.

    Args:
        input: the input tensor.
        kernel_size: the window size (an int or a triple).
        stride: the stride (default: ``kernel_size``).
        padding: the implicit zero padding on each side (at most half the window).
        ceil_mode: whether to use ceil instead of floor for the output size.
        count_include_pad: whether padded zeros count in the divisor.
        divisor_override: if given, the divisor used instead of the window size.

    Returns:
        The pooled tensor.
    """
    op = "avg_pool3d"
    x, unbatched = _batched(input, op)
    k, s, p, _ = _sliding_args(op, kernel_size, stride, padding, 1, lambda k, d: k // 2)
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError("avg_pool3d: divisor must be not zero")
    for a in range(3):
        _check_output_size(op, x.shape[2 + a], k[a], s[a], p[a], 1, ceil_mode)
    n, c, depth, h, w = x.shape
    # With a divisor override the (H, W) pass sums and the D pass divides once.
    y1 = _rumus.avg_pool2d(
        x.reshape(n, c * depth, h, w),
        k[1:],
        s[1:],
        p[1:],
        ceil_mode,
        count_include_pad,
        None if divisor_override is None else 1,
    )
    oh, ow = y1.shape[-2:]
    y2 = _rumus.avg_pool2d(
        y1.reshape(n, c, depth, oh * ow),
        (k[0], 1),
        (s[0], 1),
        (p[0], 0),
        ceil_mode,
        count_include_pad,
        divisor_override,
    )
    out = y2.reshape(n, c, y2.shape[2], oh, ow)
    return out.squeeze(0) if unbatched else out


def _adaptive_sizes(op, x, output_size):
    if isinstance(output_size, numbers.Integral) or output_size is None:
        output_size = (output_size,) * 3
    output_size = tuple(output_size)
    if len(output_size) == 1:
        output_size = output_size * 3
    if len(output_size) != 3:
        raise RuntimeError(f"{op}: output_size must be 3 (got {list(output_size)})")
    out = []
    for i, v in enumerate(output_size):
        if v is None:
            out.append(x.shape[2 + i])
        elif int(v) < 0:
            raise RuntimeError(
                f"{op}: elements of output_size must be greater than or equal to 0 but received "
                f"{list(output_size)}"
            )
        else:
            out.append(int(v))
    return out


def _empty_like_out(x, sizes):
    """A differentiable empty (N, C, *sizes) result when an output size is 0."""
    n, c = x.shape[:2]
    return x.reshape(n, c, math.prod(x.shape[2:])).narrow(2, 0, 0).reshape(n, c, *sizes)


def adaptive_avg_pool3d(input, output_size):
    """3-D average pooling whose windows are chosen to give ``output_size``.

    Args:
        input: a tensor (N, C, D, H, W) or (C, D, H, W).
        output_size: the output (D, H, W): an int, or a triple whose None entries keep
            the input's size.

    Returns:
        The pooled tensor.
    """
    op = "adaptive_avg_pool3d"
    x, unbatched = _batched(input, op)
    od, oh, ow = _adaptive_sizes(op, x, output_size)
    n, c, depth, h, w = x.shape
    if od * oh * ow == 0:
        out = _empty_like_out(x, (od, oh, ow))
    else:
        y1 = _rumus.adaptive_avg_pool2d(x.reshape(n, c * depth, h, w), (oh, ow))
        y2 = _rumus.adaptive_avg_pool2d(y1.reshape(n, c, depth, oh * ow), (od, oh * ow))
        out = y2.reshape(n, c, od, oh, ow)
    return out.squeeze(0) if unbatched else out


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """3-D max pooling whose windows are chosen to give ``output_size``.

    Args:
        input: a tensor (N, C, D, H, W) or (C, D, H, W).
        output_size: the output (D, H, W): an int, or a triple whose None entries keep
            the input's size.
        return_indices: whether to also return the flat D·H·W index of each maximum.

    Returns:
        The pooled tensor, or (pooled, indices) with ``return_indices``.
    """
    op = "adaptive_max_pool3d"
    x, unbatched = _batched(input, op)
    od, oh, ow = _adaptive_sizes(op, x, output_size)
    if od * oh * ow == 0:
        out = _empty_like_out(x, (od, oh, ow))
        out = out.squeeze(0) if unbatched else out
        if not return_indices:
            return out
        return out, _rumus.zeros(_shape(out), dtype=_rumus.int64, device=input.device)
    return _max3d(
        x,
        lambda t: _rumus.adaptive_max_pool2d(t, (oh, ow), True),
        lambda t: _rumus.adaptive_max_pool2d(t, (od, t.shape[-1]), True),
        return_indices,
        unbatched,
    )


# ------------------------------------------------------------------ max_unpool


def _max_unpool(nsp, input, indices, kernel_size, stride, padding, output_size):
    op = f"max_unpool{nsp}d"
    if not isinstance(indices, _rumus.Tensor) or indices.dtype != _rumus.int64:
        raise RuntimeError(f"{op}: elements in indices should be type int64")
    x, unbatched = _batched(input, op, nsp)
    if _shape(indices) != _shape(input):
        raise RuntimeError(
            f"{op}: Expected shape of indices to be same as that of the input tensor "
            f"({_shape(input)}) but got indices tensor with shape: {_shape(indices)}"
        )
    k = _ints(kernel_size, nsp, op, "kernel_size", 1)
    s = k if stride is None else _ints(stride, nsp, op, "stride", 1)
    p = _ints(padding, nsp, op, "padding", 0)
    in_sp = list(x.shape[2:])
    default = [(i - 1) * ss - 2 * pp + kk for i, ss, pp, kk in zip(in_sp, s, p, k)]
    if output_size is None:
        out_sp = default
    else:
        out_sp = [int(v) for v in output_size]
        if len(out_sp) == nsp + 2:
            out_sp = out_sp[2:]
        if len(out_sp) != nsp:
            raise ValueError(
                f"output_size should be a sequence containing {nsp} or {nsp + 2} elements, but "
                f"it has a length of '{len(output_size)}'"
            )
        for a, (size, lo, ss) in enumerate(zip(out_sp, default, s)):
            if not lo - ss < size < lo + ss:
                raise ValueError(
                    f'invalid output_size "{out_sp}" (dim {a} must be between {lo - ss} and '
                    f"{lo + ss})"
                )
    if any(v <= 0 for v in out_sp):
        raise RuntimeError(f"{op}: the output size {out_sp} must be positive")
    n, c = x.shape[:2]
    total = math.prod(out_sp)
    count = math.prod(x.shape[2:])
    flat_idx = (indices.unsqueeze(0) if unbatched else indices).reshape(n, c, count)
    bad = (flat_idx < 0) | (flat_idx >= total)
    if bool(bad.any()):
        first = int(flat_idx.cpu()[bad.cpu()][0])
        raise RuntimeError(
            f"{op}: Found an invalid max index: {first} (output volumes are of size "
            f"{'x'.join(str(v) for v in out_sp)})"
        )
    flat = _rumus.zeros((n, c, total), dtype=input.dtype, device=input.device)
    out = flat.scatter(2, flat_idx, x.reshape(n, c, count)).reshape(n, c, *out_sp)
    return out.squeeze(0) if unbatched else out


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: scatters each value to the position its index names.

    Every other output element is 0.

    Args:
        input: the pooled values ((N, C, L) or (C, L)), batched or unbatched.
        indices: the int64 flat indices returned by max_pool1d(return_indices=True).
        kernel_size: the pooling window size.
        stride: the pooling stride (default: ``kernel_size``).
        padding: the pooling padding.
        output_size: the spatial output size (default: (in - 1) * stride - 2 * padding
            + kernel_size).

    Returns:
        The unpooled tensor.
    """
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: scatters each value to the position its index names.

    Every other output element is 0.

    Args:
        input: the pooled values ((N, C, H, W) or (C, H, W)), batched or unbatched.
        indices: the int64 flat indices returned by max_pool2d(return_indices=True).
        kernel_size: the pooling window size.
        stride: the pooling stride (default: ``kernel_size``).
        padding: the pooling padding.
        output_size: the spatial output size (default: (in - 1) * stride - 2 * padding
            + kernel_size).

    Returns:
        The unpooled tensor.
    """
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d: scatters each value to the position its index names.

    Every other output element is 0.

    Args:
        input: the pooled values ((N, C, D, H, W) or (C, D, H, W)), batched or unbatched.
        indices: the int64 flat indices returned by max_pool3d(return_indices=True).
        kernel_size: the pooling window size.
        stride: the pooling stride (default: ``kernel_size``).
        padding: the pooling padding.
        output_size: the spatial output size (default: (in - 1) * stride - 2 * padding
            + kernel_size).

    Returns:
        The unpooled tensor.
    """
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)
