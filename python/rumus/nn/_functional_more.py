"""rumus.nn.functional, continued: the shrink activations, rrelu and the in-place
spellings (relu_, elu_, ...), lp_pool*, local_response_norm, channel_shuffle and
embedding_bag. Each is a composition of differentiable rumus ops (exact gradients,
no Python loop over elements, bags or time). functional.py re-exports them."""

import math

from .. import _rumus
from .._rumus import Tensor
from ..autograd import no_grad
from . import functional as F

__all__ = [
    "rrelu",
    "rrelu_",
    "hardshrink",
    "softshrink",
    "tanhshrink",
    "relu_",
    "elu_",
    "celu_",
    "selu_",
    "leaky_relu_",
    "hardtanh_",
    "threshold_",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "local_response_norm",
    "channel_shuffle",
    "native_channel_shuffle",
    "embedding_bag",
]


def _tensor(op, name, t):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    return t


def _float(op, t, name="input"):
    """``t``, after checking it is a floating-point tensor (PyTorch raises for integers)."""
    _tensor(op, name, t)
    if not t.is_floating_point():
        raise RuntimeError(
            f"\"{op}\" not implemented for '{t.dtype}' ({name} must be floating point)"
        )
    return t


# ------------------------------------------------------------------ activations


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU.

    In training every non-positive element gets its own slope drawn from U(lower, upper);
    in evaluation the slope is (lower + upper) / 2.

    Args:
        input: a floating-point tensor.
        lower: the lower bound of the slope.
        upper: the upper bound of the slope.
        training: whether to draw random slopes.
        inplace: whether to write the result into ``input``.

    Returns:
        A tensor of the same shape.
    """
    _float("rrelu", input)
    if lower > upper:
        raise RuntimeError(
            f"Lower bound should be less than or equal to the upper bound (got lower={lower}, "
            f"upper={upper})"
        )
    if not training:
        return F.leaky_relu(input, (lower + upper) / 2, inplace)

    def fn(t):
        with no_grad():
            slope = _rumus.empty_like(t).uniform_(lower, upper)
        return _rumus.where(t > 0, t, t * slope)

    return F._write_back(input, fn) if inplace else fn(input)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place ``rrelu``.

    Args:
        input: a floating-point tensor, overwritten.
        lower: the lower bound of the slope.
        upper: the upper bound of the slope.
        training: whether to draw random slopes.

    Returns:
        ``input``.
    """
    return rrelu(input, lower, upper, training, inplace=True)


def hardshrink(input, lambd=0.5):
    """Hard shrinkage: x where |x| > lambd, else 0.

    Args:
        input: a floating-point tensor.
        lambd: the threshold.

    Returns:
        A tensor of the same shape.
    """
    _float("hardshrink", input)
    return _rumus.where(input.abs() > lambd, input, 0.0)


def softshrink(input, lambd=0.5):
    """Soft shrinkage: x - lambd above lambd, x + lambd below -lambd, 0 between.

    Args:
        input: a floating-point tensor.
        lambd: the threshold (>= 0).

    Returns:
        A tensor of the same shape.
    """
    _float("softshrink", input)
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    # x - clamp(x, -lambd, lambd) has slope 0 inside the band and 1 outside, as PyTorch's
    return _rumus.where(input.abs() > lambd, input - input.clamp(-lambd, lambd), 0.0)


def tanhshrink(input):
    """x - tanh(x), elementwise.

    Args:
        input: a floating-point tensor.

    Returns:
        A tensor of the same shape.
    """
    _float("tanhshrink", input)
    return input - input.tanh()


def relu_(input):
    """In-place ReLU, max(0, x).

    Args:
        input: the tensor to overwrite.

    Returns:
        ``input``.
    """
    return F.relu(input, inplace=True)


def elu_(input, alpha=1.0):
    """In-place ELU: x for x > 0, alpha * (exp(x) - 1) otherwise.

    Args:
        input: a floating-point tensor, overwritten.
        alpha: the scale of the negative part.

    Returns:
        ``input``.
    """
    _float("elu_", input)
    return F.elu(input, alpha, inplace=True)


def celu_(input, alpha=1.0):
    """In-place CELU: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).

    Args:
        input: a floating-point tensor, overwritten.
        alpha: the alpha of the formula.

    Returns:
        ``input``.
    """
    _float("celu_", input)
    return F.celu(input, alpha, inplace=True)


def selu_(input):
    """In-place SELU, scale * elu(x, alpha) with PyTorch's fixed constants.

    Args:
        input: a floating-point tensor, overwritten.

    Returns:
        ``input``.
    """
    _float("selu_", input)
    return F.selu(input, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    """In-place leaky ReLU: x for x >= 0, negative_slope * x otherwise.

    Args:
        input: a floating-point tensor, overwritten.
        negative_slope: the slope of the negative part.

    Returns:
        ``input``.
    """
    _float("leaky_relu_", input)
    return F.leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """In-place hardtanh, clamping every element to [min_val, max_val].

    Args:
        input: the tensor to overwrite.
        min_val: the lower bound.
        max_val: the upper bound.

    Returns:
        ``input``.
    """
    return F.hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input, threshold, value):
    """In-place threshold: elements <= threshold are replaced by ``value``.

    Args:
        input: the tensor to overwrite.
        threshold: the threshold.
        value: the replacement value.

    Returns:
        ``input``.
    """
    return F.threshold(input, threshold, value, inplace=True)


# ---------------------------------------------------------------------- pooling


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _lp_finish(pooled, norm_type, window):
    # sign * relu(|.|) as PyTorch's: the mean of x^p may round to a tiny negative value
    return (pooled.sign() * pooled.abs().relu() * window) ** (1.0 / norm_type)


def _lp_check(op, input, nd):
    _float(op, input)
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"{op}: expected {nd + 1}D or {nd + 2}D input (unbatched or batched), got shape "
            f"{list(input.shape)}"
        )


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """1-D power-average pooling, (sum over each window of x^p)^(1/p).

    Computed as avg_pool1d of x^p times the window size.

    Args:
        input: a floating-point tensor (C, L) or (N, C, L).
        norm_type: the power p.
        kernel_size: the window size.
        stride: the stride (default: ``kernel_size``).
        ceil_mode: whether to use ceil instead of floor for the output size.

    Returns:
        The pooled tensor.
    """
    _lp_check("lp_pool1d", input, 1)
    (k,) = _tuple(kernel_size, 1)
    stride = k if stride is None else stride
    out = F.avg_pool1d(input**norm_type, k, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, k)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """2-D power-average pooling, (sum over each window of x^p)^(1/p).

    Args:
        input: a floating-point tensor (C, H, W) or (N, C, H, W).
        norm_type: the power p.
        kernel_size: the window size (an int or a pair).
        stride: the stride (default: ``kernel_size``).
        ceil_mode: whether to use ceil instead of floor for the output size.

    Returns:
        The pooled tensor.
    """
    _lp_check("lp_pool2d", input, 2)
    kh, kw = _tuple(kernel_size, 2)
    stride = (kh, kw) if stride is None else stride
    out = F.avg_pool2d(input**norm_type, (kh, kw), stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kh * kw)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """3-D power-average pooling, (sum over each window of x^p)^(1/p).

    With no padding the box average separates into a 2-D pool over (H, W), then a 1-D
    pool over D, so no avg_pool3d kernel is needed.

    Args:
        input: a floating-point tensor (C, D, H, W) or (N, C, D, H, W).
        norm_type: the power p.
        kernel_size: the window size (an int or a triple).
        stride: the stride (default: ``kernel_size``).
        ceil_mode: whether to use ceil instead of floor for the output size.

    Returns:
        The pooled tensor.
    """
    _lp_check("lp_pool3d", input, 3)
    kd, kh, kw = _tuple(kernel_size, 3)
    sd, sh, sw = (kd, kh, kw) if stride is None else _tuple(stride, 3)
    unbatched = input.dim() == 4
    x = (input.unsqueeze(0) if unbatched else input) ** norm_type
    n, c, d, h, w = x.shape
    x = F.avg_pool2d(x.reshape(n, c * d, h, w), (kh, kw), (sh, sw), 0, ceil_mode)
    ho, wo = x.shape[-2:]
    x = x.reshape(n, c, d, ho * wo).transpose(2, 3).reshape(n, c * ho * wo, d)
    x = F.avg_pool1d(x, kd, sd, 0, ceil_mode)
    x = x.reshape(n, c, ho * wo, -1).transpose(2, 3).reshape(n, c, -1, ho, wo)
    out = _lp_finish(x, norm_type, kd * kh * kw)
    return out.squeeze(0) if unbatched else out


# ---------------------------------------------------------------- normalization


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Local response normalization across channels.

    Computes x / (k + alpha / size * sum of x^2 over the ``size`` neighbouring
    channels)^beta; the window sum is an average pool of the zero-padded squares.

    Args:
        input: a floating-point tensor (N, C, *) with at least 3 dimensions.
        size: the number of neighbouring channels in the sum.
        alpha: the multiplicative factor.
        beta: the exponent.
        k: the additive constant.

    Returns:
        A tensor of the same shape.
    """
    _float("local_response_norm", input)
    if input.dim() < 3:
        raise ValueError(
            f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)"
        )
    if input.numel() == 0:
        return input
    n, c = input.shape[:2]
    sq = (input * input).reshape(n, 1, c, -1)
    sq = F.pad(sq, (0, 0, size // 2, (size - 1) // 2))
    div = F.avg_pool2d(sq, (size, 1), stride=1).reshape(input.shape)
    return input / (div * alpha + k) ** beta


# ---------------------------------------------------------------------- shuffle


def channel_shuffle(input, groups):
    """Shuffles the channels: (N, g * k, *) -> (N, k * g, *), channel i * k + j moves to j * g + i.

    Args:
        input: a tensor (N, C, *) with at least 3 dimensions.
        groups: the number of groups g; C must be divisible by it.

    Returns:
        A tensor of the same shape.
    """
    _tensor("channel_shuffle", "input", input)
    if groups <= 0:
        raise RuntimeError(
            f"Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )
    if input.dim() < 3:
        raise RuntimeError(
            "channel_shuffle expects input to have at least 3 dimensions, but got input with "
            f"{input.dim()} dimension(s)"
        )
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups."
        )
    x = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return x.reshape(input.shape)


native_channel_shuffle = channel_shuffle


# -------------------------------------------------------------------- embedding


def _bag_ids(input, offsets, include_last_offset):
    """(flat indices, bag id of each index, number of bags). Bag ids come from a
    cumulative count of the bag starts, so empty bags need no special case."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
                "of fixed length sequences. However, found offsets of type "
                f"{type(offsets).__name__}"
            )
        b, length = input.shape
        flat = input.reshape(-1)
        bag = _rumus.arange(b, device=input.device).unsqueeze(1).expand(b, length).reshape(-1)
        return flat, bag, b
    if input.dim() != 1:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}"
        )
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    _tensor("embedding_bag", "offsets", offsets)
    if offsets.dim() != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    if offsets.dtype not in (_rumus.int64, _rumus.int32):
        raise RuntimeError(
            f"embedding_bag: offsets must be an int64 or int32 tensor, got {offsets.dtype}"
        )
    m = input.numel()
    bags = offsets.numel() - (1 if include_last_offset else 0)
    if bags < 0:
        raise ValueError("embedding_bag: include_last_offset=True needs at least one offset")
    off = offsets.tolist()  # a few values (one per bag), checked on the host
    if off:
        if off[0] != 0:
            raise ValueError(
                "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                f"from position 0. However, got {off[0]}"
            )
        if min(off) < 0 or max(off) > m:
            raise ValueError(
                f"embedding_bag: offsets must lie in [0, {m}] (input has {m} indices), got "
                f"values in [{min(off)}, {max(off)}]"
            )
        if any(b < a for a, b in zip(off, off[1:])):
            raise ValueError("embedding_bag: offsets must be non-decreasing")
    starts = _rumus.zeros(m + 1, dtype=_rumus.int64, device=input.device)
    starts = starts.index_add(0, offsets.long(), _rumus.ones_like(offsets, dtype=_rumus.int64))
    # index i belongs to the last bag starting at or before i; the ones past the last
    # offset (include_last_offset) get id `bags` and are dropped by the caller
    bag = starts[:m].cumsum(0) - 1
    return input, bag, bags


def embedding_bag(
    input,
    weight,
    offsets=None,
    max_norm=None,
    norm_type=2,
    scale_grad_by_freq=False,
    mode="mean",
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=None,
):
    """Sums, means or maxima of bags of embedding rows, without materializing the rows per bag.

    Args:
        input: int64/int32 indices, 2-D (B, L: B bags of L) or 1-D (with ``offsets``).
        weight: the embedding matrix (num_embeddings, embedding_dim).
        offsets: for 1-D ``input``, the start of each bag.
        max_norm: if given, looked-up rows with a larger norm are renormalized in place.
        norm_type: the p of the p-norm for ``max_norm``.
        scale_grad_by_freq: whether to scale gradients by the inverse frequency of the indices.
        mode: "sum", "mean" or "max".
        sparse: must be False (rumus has no sparse gradients).
        per_sample_weights: weights of each index (mode="sum" only), same shape as ``input``.
        include_last_offset: whether ``offsets`` ends with the end of the last bag.
        padding_idx: an index whose rows are left out of the bags.

    Returns:
        A tensor (bags, embedding_dim); empty bags give zeros.
    """
    _tensor("embedding_bag", "input", input)
    _float("embedding_bag", weight, "weight")
    if weight.dim() != 2:
        raise ValueError(
            f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}"
        )
    if input.dtype not in (_rumus.int64, _rumus.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {input.dtype} instead (while checking arguments for embedding_bag)"
        )
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
    if per_sample_weights is not None:
        _tensor("embedding_bag", "per_sample_weights", per_sample_weights)
        if mode != "sum":
            raise NotImplementedError(
                "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                f"supported for mode='sum' (got mode='{mode}')."
            )
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(
                f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) is not "
                f"None, then it must have the same shape as the input ({list(input.shape)})"
            )
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if sparse:
        raise NotImplementedError(
            "embedding_bag(sparse=True): rumus has no sparse gradients; use sparse=False"
        )
    num, dim = weight.shape
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise AssertionError("padding_idx must be within num_embeddings")
        padding_idx %= num
    flat, bag, bags = _bag_ids(input, offsets, include_last_offset)
    flat = flat.reshape(-1)
    rows = F.embedding(flat, weight, None, max_norm, norm_type, scale_grad_by_freq)
    if rows.dtype in (_rumus.float16, _rumus.bfloat16):
        rows = rows.float()  # bags accumulate in float32 (index writes have no half kernels)
    keep = (bag < bags) if include_last_offset else None
    if padding_idx is not None:
        pad_ok = flat != padding_idx
        keep = pad_ok if keep is None else keep & pad_ok
    # ids past the last bag go to one extra row that is sliced off
    size = bags + (1 if include_last_offset else 0)
    if mode == "max":
        if keep is not None:
            rows = rows.masked_fill(~keep.unsqueeze(1), -math.inf)
        out = _rumus.zeros((size, dim), dtype=rows.dtype, device=rows.device)
        idx = bag.unsqueeze(1).expand(-1, dim)
        out = out.scatter_reduce(0, idx, rows, "amax", include_self=False)
        count = _rumus.zeros(size, dtype=_rumus.int64, device=rows.device).index_add(
            0, bag, _rumus.ones_like(bag) if keep is None else keep.long()
        )
        out = out.masked_fill((count == 0).unsqueeze(1), 0.0)
        return out[:bags].to(weight.dtype)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1).to(rows.dtype)
    if keep is not None:
        rows = rows * keep.unsqueeze(1).to(rows.dtype)
    out = _rumus.zeros((size, dim), dtype=rows.dtype, device=rows.device).index_add(0, bag, rows)
    if mode == "mean":
        w = (
            _rumus.ones(bag.shape, dtype=rows.dtype, device=rows.device)
            if keep is None
            else keep.to(rows.dtype)
        )
        count = _rumus.zeros(size, dtype=rows.dtype, device=rows.device).index_add(0, bag, w)
        out = out / count.clamp_min(1.0).unsqueeze(1)
    return out[:bags].to(weight.dtype)
