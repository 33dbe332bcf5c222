"""rumus.nn.functional: PyTorch's functional API.

The heavy kernels (convolutions, pooling, unfold/fold, softmax, layer_norm, linear)
are Rust functions bound here as they are. Everything else is a composition of
differentiable rumus ops, so autograd derives its gradients and double gradients.
"""

# Annotations stay unevaluated: `X | None` works on Python 3.9, and no typing names
# join this module's public namespace (tests/test_ops.py treats those as ops).
from __future__ import annotations

import math
import numbers
import sys
import typing as _typing
import warnings

import numpy as np

from .. import _rumus
from .._rumus import Tensor
from ..autograd import is_grad_enabled, no_grad
from ._attention import fused_sdpa as _fused_sdpa
from ._pooling3d import (  # noqa: F401 - re-exported: F.max_pool3d, ...
    adaptive_avg_pool3d,
    adaptive_max_pool3d,
    avg_pool3d,
    max_pool3d,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from ._sample import affine_grid, grid_sample  # noqa: F401 - re-exported

if _typing.TYPE_CHECKING:
    from collections.abc import Sequence

# Rust kernels with PyTorch's signatures, bound as they are. Bound by name (not in a loop)
# so a kernel missing from the engine fails the import with an AttributeError naming it.
conv1d = _rumus.conv1d
conv2d = _rumus.conv2d
conv3d = _rumus.conv3d
conv_transpose1d = _rumus.conv_transpose1d
conv_transpose2d = _rumus.conv_transpose2d
conv_transpose3d = _rumus.conv_transpose3d
unfold = _rumus.unfold
fold = _rumus.fold
max_pool1d = _rumus.max_pool1d
max_pool2d = _rumus.max_pool2d
avg_pool1d = _rumus.avg_pool1d
avg_pool2d = _rumus.avg_pool2d
adaptive_avg_pool1d = _rumus.adaptive_avg_pool1d
adaptive_avg_pool2d = _rumus.adaptive_avg_pool2d
adaptive_max_pool1d = _rumus.adaptive_max_pool1d
adaptive_max_pool2d = _rumus.adaptive_max_pool2d
softmax = _rumus.softmax
log_softmax = _rumus.log_softmax
layer_norm = _rumus.layer_norm
linear = _rumus.linear
one_hot = _rumus.one_hot

# Machine epsilon per dtype (rms_norm's default eps, as torch.finfo(dtype).eps).
_EPS = {
    _rumus.float32: float(np.finfo(np.float32).eps),
    _rumus.float64: float(np.finfo(np.float64).eps),
    _rumus.float16: float(np.finfo(np.float16).eps),
    _rumus.bfloat16: 2.0**-7,
}


def _shape(t):
    return list(t.shape)


def _index(values, like):
    """int64 index tensor on ``like``'s device."""
    return _rumus.tensor(np.asarray(values, dtype=np.int64), device=like.device)


def _channel_view(t, ndim, dim=1):
    """(C,) tensor reshaped to broadcast along ``dim`` of an ``ndim``-D tensor."""
    return t.reshape((-1,) + (1,) * (ndim - dim - 1))


# The dtypes a Python-composed op accepts, as PyTorch's kernels do: floating only, or any but bool.
_FLOAT, _NUMBER = "float", "number"

_INT_RANGE = {
    _rumus.int64: (-(2**63), 2**63 - 1),
    _rumus.int32: (-(2**31), 2**31 - 1),
    _rumus.uint8: (0, 255),
}


def _to_int(v, dtype):
    """A Python scalar as PyTorch converts it into an integer ``dtype``: truncated; a float out of
    range is an overflow, an int may wrap as two's complement (-1 is 255 in uint8)."""
    lo, hi = _INT_RANGE[dtype]
    low = -hi if lo == 0 and not isinstance(v, float) else lo
    if not low <= v <= hi:
        raise RuntimeError(f"value cannot be converted to type {dtype} without overflow")
    return int(v) % 256 if dtype == _rumus.uint8 else int(v)


def _check_input(fn, input, dtypes=_FLOAT, arg="input", pos=1, error=NotImplementedError):
    """PyTorch's argument checks for ``fn``'s tensor argument: a non-tensor is a TypeError, a
    dtype its kernel lacks an ``error`` (most kernels: NotImplementedError). Cheap: no tensor op."""
    if not isinstance(input, Tensor):
        raise TypeError(
            f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {type(input).__name__}"
        )
    dt = input.dtype
    if dtypes is not None and not dt.is_floating_point and (dtypes == _FLOAT or dt == _rumus.bool):
        raise error(f"\"{fn}\" not implemented for '{str(dt).removeprefix('rumus.')}'")


# ------------------------------------------------------------------ activations

# same signatures as PyTorch's functional forms: the Rust methods themselves
sigmoid = Tensor.sigmoid
tanh = Tensor.tanh
softplus = Tensor.softplus
gelu = Tensor.gelu


def _write_back(input, fn):
    """In-place form of an op rumus has no in-place kernel for: compute, then copy.
    Under autograd the op reads a clone, so the tensor its backward saved is not the
    one overwritten."""
    src = input.clone() if input.requires_grad and is_grad_enabled() else input
    out = fn(src)
    if out.dtype.is_floating_point and not input.dtype.is_floating_point:
        # As PyTorch's in-place ops: a float result is never truncated into an int tensor.
        raise RuntimeError(
            f"result type {out.dtype} can't be cast to the desired output type {input.dtype}"
        )
    return input.copy_(out)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """Applies ``max(0, x)`` elementwise.

    Args:
        input (Tensor): the input.
        inplace (bool): write the result into ``input``.

    Returns:
        Tensor: of the input's shape.
    """
    return input.relu_() if inplace else input.relu()


def hardtanh(
    input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Tensor:
    """Clamps the input to ``[min_val, max_val]``.

    Args:
        input (Tensor): the input.
        min_val (float): the lower bound.
        max_val (float): the upper bound.
        inplace (bool): write the result into ``input``.

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("hardtanh", input, _NUMBER)
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if not input.dtype.is_floating_point:
        # PyTorch clamps an integer tensor to the bounds truncated, as integers of its range
        lo, hi = _INT_RANGE[input.dtype]
        min_val, max_val = (min(max(int(v), lo), hi) for v in (min_val, max_val))
    return input.clamp_(min_val, max_val) if inplace else input.clamp(min_val, max_val)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """Applies ``min(max(0, x), 6)`` elementwise.

    Args:
        input (Tensor): the input.
        inplace (bool): write the result into ``input``.

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("relu6", input, _NUMBER)
    return hardtanh(input, 0.0, 6.0, inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """Applies ELU: ``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)``.

    Args:
        input (Tensor): the input.
        alpha (float): the negative saturation value.
        inplace (bool): write the result into ``input``.

    Returns:
        Tensor: of the input's shape.
    """
    return _write_back(input, lambda t: t.elu(alpha)) if inplace else input.elu(alpha)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """Applies SELU: ``scale * elu(x, alpha)`` with the self-normalizing constants.

    Args:
        input (Tensor): the input.
        inplace (bool): write the result into ``input``.

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("selu", input)
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    if inplace:
        return _write_back(input, lambda t: t.elu(alpha) * scale)
    return input.elu(alpha) * scale


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    # celu(x) = alpha * elu(x / alpha)
    """Applies CELU: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Args:
        input (Tensor): the input.
        alpha (float): the scale of the negative part.
        inplace (bool): write the result into ``input``.

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("celu", input)
    if inplace:
        return _write_back(input, lambda t: (t / alpha).elu() * alpha)
    return (input / alpha).elu() * alpha


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """Applies ``x`` if ``x >= 0`` else ``negative_slope * x``.

    Args:
        input (Tensor): the input.
        negative_slope (float): the slope for negative inputs.
        inplace (bool): write the result into ``input``.

    Returns:
        Tensor: of the input's shape.
    """
    if inplace:
        return _write_back(input, lambda t: t.leaky_relu(negative_slope))
    return input.leaky_relu(negative_slope)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """Applies SiLU (swish): ``x * sigmoid(x)``.

    Args:
        input (Tensor): the input.
        inplace (bool): write the result into ``input``.

    Returns:
        Tensor: of the input's shape.
    """
    return input.silu_() if inplace else input.silu()


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """Applies Mish: ``x * tanh(softplus(x))``.

    Args:
        input (Tensor): the input.
        inplace (bool): write the result into ``input``.

    Returns:
        Tensor: of the input's shape.
    """
    return input.mish_() if inplace else input.mish()


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """Applies ``relu6(x + 3) / 6`` elementwise.

    Args:
        input (Tensor): the input.
        inplace (bool): write the result into ``input``.

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("hardsigmoid", input)
    if inplace:
        return _write_back(input, lambda t: t._hardsigmoid())
    return input._hardsigmoid()


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """Applies ``x * relu6(x + 3) / 6`` elementwise.

    Args:
        input (Tensor): the input.
        inplace (bool): write the result into ``input``.

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("hardswish", input)
    if inplace:
        return _write_back(input, lambda t: t._hardswish())
    return input._hardswish()


def logsigmoid(input: Tensor) -> Tensor:
    """Applies ``log(sigmoid(x))``, computed stably.

    Args:
        input (Tensor): the input.

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("logsigmoid", input)
    return -softplus(-input)


def softsign(input: Tensor) -> Tensor:
    """Applies ``x / (1 + |x|)``.

    Args:
        input (Tensor): the input.

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("softsign", input, _NUMBER)
    if not input.dtype.is_floating_point:
        input = input.float()  # as PyTorch: 255 + 1 must not wrap around in uint8
    return input / (input.abs() + 1)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """Replaces the elements not above ``threshold`` by ``value``.

    Args:
        input (Tensor): the input.
        threshold (float): the threshold.
        value (float): the replacement.
        inplace (bool): write the result into ``input``.

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("threshold", input, _NUMBER)
    if not input.dtype.is_floating_point:
        threshold, value = _to_int(threshold, input.dtype), _to_int(value, input.dtype)
    if inplace:
        return input.masked_fill_(input <= threshold, value)
    return input.masked_fill(input <= threshold, value)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """Applies ``max(0, x) + weight * min(0, x)`` with a learnt slope.

    Args:
        input (Tensor): the input.
        weight (Tensor): one slope, or one per channel (dimension 1).

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("prelu", input)
    _check_input("prelu", weight, None, arg="weight", pos=2)
    if weight.numel() != 1:
        channels = input.size(1) if input.dim() >= 2 else 1
        if weight.dim() != 1 or weight.numel() != channels:
            raise RuntimeError(
                f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                f"{weight.numel()} and channel size = {channels}."
            )
        if input.dim() >= 2:
            weight = _channel_view(weight, input.dim())
    return input.relu() + weight * input.clamp_max(0.0)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: ``a * sigmoid(b)`` for the halves ``a, b`` of ``input`` along ``dim``.

    Args:
        input (Tensor): the input.
        dim (int): the dimension to split (its size must be even).

    Returns:
        Tensor: with ``dim`` halved.
    """
    _check_input("glu", input)
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.size(dim) % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {dim} is size {input.size(dim)}"
        )
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def softmin(
    input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: _rumus.dtype | None = None
) -> Tensor:
    """Applies ``softmax(-x)`` along ``dim``.

    Args:
        input (Tensor): the input.
        dim (int): the dimension that sums to 1.
        dtype (dtype, optional): cast the input to this dtype first.

    Returns:
        Tensor: of the input's shape.
    """
    return softmax(-input, dim, dtype=dtype)


# ----------------------------------------------------------------------- linear


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Applies ``y = x1^T A x2 + b``.

    Args:
        input1 (Tensor): of shape ``(*, in1)``.
        input2 (Tensor): of shape ``(*, in2)``.
        weight (Tensor): of shape ``(out, in1, in2)``.
        bias (Tensor, optional): of shape ``(out,)``.

    Returns:
        Tensor: of shape ``(*, out)``.
    """
    _check_input("bilinear", input1, _NUMBER, arg="input1")
    _check_input("bilinear", input2, None, arg="input2", pos=2)
    if weight.dim() != 3:
        raise RuntimeError(
            f"bilinear(): weight must be 3-dimensional (out, in1, in2), got shape {_shape(weight)}"
        )
    if input1.dim() != input2.dim():
        raise RuntimeError(
            f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}"
        )
    for i, (a, b) in enumerate(zip(input1.shape[:-1], input2.shape[:-1])):
        if a != b:
            raise RuntimeError(
                f"bilinear(): input batch dimensions do not match at dim {i}: got {a} and {b}"
            )
    out_f, in1, in2 = weight.shape
    sizes = [("input1", input1.size(-1), in1), ("input2", input2.size(-1), in2)]
    if bias is not None:
        sizes.append(("bias", bias.size(-1) if bias.dim() == 1 else _shape(bias), out_f))
    for name, got, expected in sizes:
        if got != expected:
            raise RuntimeError(
                f"bilinear(): {name} size does not match weight size: got {got} but expected "
                f"{expected}"
            )
    batch = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    # y[n, o] = sum_ij x1[n, i] W[o, i, j] x2[n, j]: one matmul over (o, i) rows, then a dot with x1
    t = (x2 @ weight.reshape(out_f * in1, in2).t()).reshape(-1, out_f, in1)
    y = (t * x1.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    if y.dtype != input1.dtype:  # sum() widens int32/uint8 to int64; PyTorch keeps the dtype
        y = y.to(input1.dtype)
    return y.reshape(batch + (out_f,))


# ---------------------------------------------------------------- normalization


def _check_affine(name, t, channels):
    if t is not None and t.numel() != channels:
        raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")


def _normalize(input, mean, var, eps, weight, bias):
    """(input - mean) / sqrt(var + eps) * weight + bias, the scale folded on the small side."""
    scale = (var + eps).rsqrt()
    if weight is not None:
        scale = scale * _channel_view(weight, input.dim())
    out = (input - mean) * scale
    return out + _channel_view(bias, input.dim()) if bias is not None else out


def _fused_batch_norm(input, weight, bias):
    """Whether training-mode batch_norm runs as the fused op: float32 (CPU or GPU) or
    float16 (GPU) tensors, weight and bias (when given) alike; not while rumus.onnx traces
    (the exporter records the composite path as ONNX ops)."""
    tracer = sys.modules.get("rumus.onnx._trace")
    if tracer is not None and tracer.ACTIVE:
        return False
    fused = (_rumus.float32, _rumus.float16) if input.device.type == "gpu" else (_rumus.float32,)
    if input.dtype not in fused:
        return False
    return all(
        t is None or (t.device == input.device and t.dtype == input.dtype) for t in (weight, bias)
    )


def _affine(x, weight, bias):
    if weight is not None:
        x = x * _channel_view(weight, x.dim())
    if bias is not None:
        x = x + _channel_view(bias, x.dim())
    return x


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Batch normalization over the channel dimension (1).

    Args:
        input (Tensor): the input. Of shape ``(N, C, ...)``.
        running_mean (Tensor, optional): per-channel mean, updated in training mode.
        running_var (Tensor, optional): per-channel variance, updated in training mode.
        weight (Tensor, optional): per-channel scale.
        bias (Tensor, optional): per-channel shift.
        training (bool): normalize with the batch statistics (and update the running ones).
        momentum (float): the running statistics' update factor.
        eps (float): added to the variance.

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("batch_norm", input, None)
    if input.dim() < 2:
        raise RuntimeError(
            f"batch_norm: expected an input of shape (N, C, *), got shape {_shape(input)}"
        )
    if not training:
        if running_mean is None:
            raise RuntimeError("running_mean must be defined in evaluation mode")
        if running_var is None:
            raise RuntimeError("running_var must be defined in evaluation mode")
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    c = input.size(1)
    for name, t in (
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ):
        _check_affine(name, t, c)
    nd = input.dim()
    if training:
        n = input.numel() // c
        if n == 1:
            raise ValueError(
                "Expected more than 1 value per channel when training, got input size "
                f"{input.shape}"
            )
        if _fused_batch_norm(input, weight, bias):
            # Two sweeps forward and two backward (rust/ops/batch_norm.rs).
            out, mean, var = _rumus._batch_norm_train(input, weight, bias, eps)
        else:
            dims = (0,) + tuple(range(2, nd))
            mean = input.mean(dims, keepdim=True)
            var = input.var(dims, keepdim=True, correction=0)
            out = _normalize(input, mean, var, eps, weight, bias)
        if running_mean is not None:
            with no_grad():
                running_mean.mul_(1 - momentum).add_(mean.reshape(-1) * momentum)
                running_var.mul_(1 - momentum).add_(var.reshape(-1) * (momentum * n / (n - 1)))
        return out
    # evaluation: fold the per-channel factors, two ops on the full-size tensor
    scale = (_channel_view(running_var, nd) + eps).rsqrt()
    if weight is not None:
        scale = scale * _channel_view(weight, nd)
    shift = -_channel_view(running_mean, nd) * scale
    if bias is not None:
        shift = shift + _channel_view(bias, nd)
    return input * scale + shift


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Instance normalization: each channel of each sample normalized over its spatial dimensions.

    Args:
        input (Tensor): the input. Of shape ``(N, C, ...)``.
        running_mean (Tensor, optional): per-channel mean.
        running_var (Tensor, optional): per-channel variance.
        weight (Tensor, optional): per-channel scale.
        bias (Tensor, optional): per-channel shift.
        use_input_stats (bool): normalize with the input's statistics rather than the running ones.
        momentum (float): the running statistics' update factor.
        eps (float): added to the variance.

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("instance_norm", input, None)
    if input.dim() < 2:
        raise RuntimeError(
            f"instance_norm: expected an input of shape (N, C, *), got shape {_shape(input)}"
        )
    c = input.size(1)
    for name, t in (
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ):
        _check_affine(name, t, c)
    nd = input.dim()
    if use_input_stats:
        spatial = math.prod(input.shape[2:])
        if spatial == 1:
            raise ValueError(
                f"Expected more than 1 spatial element when training, got input size {input.shape}"
            )
        rows = input.reshape(input.size(0), c, -1)
        if running_mean is not None and running_var is not None:
            # running stats follow the batch average of the per-instance statistics
            with no_grad():
                running_mean.mul_(1 - momentum).add_(rows.mean(-1).mean(0) * momentum)
                unbiased = rows.var(-1, correction=0).mean(0) * (spatial / (spatial - 1))
                running_var.mul_(1 - momentum).add_(unbiased * momentum)
        # Each (n, c) row normalized by the fused layer_norm kernel, forward and backward.
        out = layer_norm(rows, (rows.size(-1),), eps=eps).reshape(input.shape)
        return _affine(out, weight, bias)
    if running_mean is None or running_var is None:
        raise RuntimeError(
            "Expected running_mean and running_var to be defined when use_input_stats is false"
        )
    mean, var = _channel_view(running_mean, nd), _channel_view(running_var, nd)
    return _normalize(input, mean, var, eps, weight, bias)


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Group normalization: the channels are split in groups, each normalized over its channels and
    spatial dimensions.

    Args:
        input (Tensor): the input. Of shape ``(N, C, ...)``.
        num_groups (int): the number of groups (divides C).
        weight (Tensor, optional): per-channel scale.
        bias (Tensor, optional): per-channel shift.
        eps (float): added to the variance.

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("group_norm", input, None)
    if input.dim() < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {input.dim()}"
        )
    n, c = input.shape[:2]
    if c % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input of "
            f"shape {_shape(input)} and num_groups={num_groups}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != c):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in input, "
                f"but got {name} of shape {_shape(t)} and input of shape {_shape(input)}"
            )
    if n * c // num_groups * math.prod(input.shape[2:]) == 1:
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size {_shape(input)}"
        )
    # Each (n, group) row normalized by the fused layer_norm kernel, forward and backward.
    x = input.reshape(n, num_groups, -1)
    out = layer_norm(x, (x.size(-1),), eps=eps).reshape(input.shape)
    return _affine(out, weight, bias)


def rms_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    """Root-mean-square normalization over the last dimensions.

    Args:
        input (Tensor): the input.
        normalized_shape (list[int]): the trailing shape to normalize over.
        weight (Tensor, optional): elementwise scale of that shape.
        eps (float, optional): added to the mean square; the dtype's machine epsilon when None.

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("rms_norm", input, None)
    if isinstance(normalized_shape, numbers.Integral):
        raise TypeError(
            "rms_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not int"
        )
    ns = [int(s) for s in normalized_shape]
    if not ns or _shape(input)[-len(ns) :] != ns:
        raise RuntimeError(
            f"Given normalized_shape={ns}, expected input with shape [*, "
            f"{', '.join(map(str, ns))}], but got input of size {_shape(input)}"
        )
    if weight is not None and _shape(weight) != ns:
        raise RuntimeError(
            f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
            f"{_shape(weight)} and normalized_shape = {ns}"
        )
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"rms_norm" not implemented for {input.dtype}')
    if eps is None:
        eps = _EPS[input.dtype]
    dims = tuple(range(-len(ns), 0))
    out = input * (input.square().mean(dims, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


def _vector_norm(x, p, dim, keepdim=False, floor=0.0):
    """p-norm along ``dim``, at least ``floor``. For 0 < p < inf the floor is applied
    before the root, so a zero vector gets a zero gradient, not 0 * inf."""
    if p == math.inf:
        return x.abs().amax(dim, keepdim).clamp_min(floor)
    if p == -math.inf:
        return x.abs().amin(dim, keepdim).clamp_min(floor)
    if p == 0:
        return (x != 0).to(x.dtype).sum(dim, keepdim).clamp_min(floor)
    if p == 1:
        return x.abs().sum(dim, keepdim).clamp_min(floor)
    if p == 2:
        return x.square().sum(dim, keepdim).clamp_min(floor * floor).sqrt()
    if p > 0:
        return (x.abs() ** p).sum(dim, keepdim).clamp_min(floor**p) ** (1.0 / p)
    return ((x.abs() ** p).sum(dim, keepdim) ** (1.0 / p)).clamp_min(floor)


def normalize(
    input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None
) -> Tensor:
    """Divides by the ``p``-norm along ``dim``: ``x / max(||x||_p, eps)``.

    Args:
        input (Tensor): the input.
        p (float): the norm's exponent.
        dim (int): the dimension.
        eps (float): the smallest divisor.
        out (Tensor, optional): written with the result.

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("normalize", input)
    result = input / _vector_norm(input, p, dim, keepdim=True, floor=eps)
    return result if out is None else out.copy_(result)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between ``x1`` and ``x2`` along ``dim``.

    Args:
        x1 (Tensor): the first input.
        x2 (Tensor): the second input, broadcastable with ``x1``.
        dim (int): the dimension of the vectors.
        eps (float): the smallest norm used in the division.

    Returns:
        Tensor: the broadcast shape without ``dim``.
    """
    _check_input("cosine_similarity", x1, arg="x1", error=RuntimeError)
    _check_input("cosine_similarity", x2, None, arg="x2", pos=2)
    shape = _rumus.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    x1, x2 = x1.expand(*shape), x2.expand(*shape)
    n1 = _vector_norm(x1, 2, dim, keepdim=True, floor=eps)
    n2 = _vector_norm(x2, 2, dim, keepdim=True, floor=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """The ``p``-norm distance ``||x1 - x2 + eps||_p`` along the last dimension.

    Args:
        x1 (Tensor): of shape ``(N, D)`` or ``(D,)``.
        x2 (Tensor): broadcastable with ``x1``.
        p (float): the norm's exponent.
        eps (float): added to the difference to avoid division by zero in the gradient.
        keepdim (bool): keep the last dimension with size 1.

    Returns:
        Tensor: of shape ``(N,)`` (or ``()``).
    """
    _check_input("pairwise_distance", x1, _NUMBER, arg="x1")
    _check_input("pairwise_distance", x2, None, arg="x2", pos=2)
    dim = max(x1.dim(), x2.dim()) - 1
    return _vector_norm(x1 - x2 + eps, p, max(dim, 0), keepdim)


# ---------------------------------------------------------------------- embedding


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Looks up rows of ``weight`` by index.

    Args:
        input (Tensor): integer indices, any shape.
        weight (Tensor): the table, of shape ``(num_embeddings, embedding_dim)``.
        padding_idx (int, optional): this row gets no gradient.
        max_norm (float, optional): renormalize looked-up rows to at most this norm (in place in
            ``weight``).
        norm_type (float): the p of that norm.
        scale_grad_by_freq (bool): scale gradients by the inverse frequency of the indices in the
            batch.
        sparse (bool): accepted for compatibility; gradients are dense.

    Returns:
        Tensor: of shape ``input.shape + (embedding_dim,)``.
    """
    _check_input("embedding", input, None)
    _check_input("embedding", weight, None, arg="weight", pos=2)
    if weight.dim() != 2:
        raise RuntimeError(f"'weight' must be 2-D, got shape {_shape(weight)}")
    num = weight.size(0)
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= num
    if sparse:
        raise RuntimeError("embedding(sparse=True) is not supported: rumus has no sparse tensors")
    if input.dtype not in (_rumus.int64, _rumus.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {input.dtype} instead (while checking arguments for embedding)"
        )
    flat = input.reshape(-1)
    if max_norm is not None:
        with no_grad():
            rows = weight.index_select(0, flat)
            norms = _vector_norm(rows, norm_type, 1, keepdim=True)
            weight[flat] = rows * _rumus.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    rows = weight.index_select(0, flat)
    if rows.requires_grad:
        if padding_idx is not None:
            # the padding row keeps its values but gets no gradient
            rows = _rumus.where((flat != padding_idx).unsqueeze(1), rows, rows.detach())
        if scale_grad_by_freq:
            counts = _rumus.zeros(num, dtype=rows.dtype, device=rows.device).scatter_add(
                0, flat.long(), _rumus.ones_like(flat, dtype=rows.dtype)
            )
            inv = counts.index_select(0, flat).reciprocal().unsqueeze(1)
            frozen = rows.detach()
            rows = frozen + (rows - frozen) * inv  # same values, gradient divided by the count
    return rows.reshape(tuple(input.shape) + (weight.size(1),))


# ------------------------------------------------------------------------ dropout


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout(input, p, training, inplace, mask_shape):
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    gpu = input.device.type == "gpu"
    native = (_rumus.float32,) if gpu else (_rumus.float32, _rumus.float64)
    if input.dtype in native and not (gpu and tuple(mask_shape) != tuple(input.shape)):
        # One native mask, Philox-drawn alike on both devices; on the GPU with fusion on it
        # is computed inside the kernel that uses it.
        mask = _rumus._dropout_mask(
            list(mask_shape), 1.0 - p, 1.0 / (1.0 - p), input.dtype, input.device
        )
    else:
        mask = (
            _rumus.empty(mask_shape, dtype=input.dtype, device=input.device)
            .bernoulli_(1.0 - p)
            .div_(1.0 - p)
        )
    return input.mul_(mask) if inplace else input * mask


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes elements with probability ``p`` and scales the rest by ``1 / (1 - p)``.

    Args:
        input (Tensor): the input.
        p (float): the probability of zeroing an element.
        training (bool): apply dropout (identity when False).
        inplace (bool): write the result into ``input``.

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("dropout", input, None)
    _check_p(p)
    return _dropout(input, p, training, inplace, tuple(input.shape))


def _feature_mask_shape(input):
    return tuple(input.shape[:2]) + (1,) * (input.dim() - 2)


def dropout1d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zeroes whole channels of ``(N, C, L)`` or ``(C, L)`` input with probability ``p``, scaling
    the rest by ``1 / (1 - p)``.

    Args:
        input (Tensor): the input.
        p (float): the probability of zeroing a channel.
        training (bool): apply dropout (identity when False).
        inplace (bool): write the result into ``input``.

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("dropout1d", input, None)
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, "
            "a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs)."
        )
    shape = (input.size(0), 1) if input.dim() == 2 else _feature_mask_shape(input)
    return _dropout(input, p, training, inplace, shape)


def dropout2d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zeroes whole channels of ``(N, C, H, W)`` or ``(C, H, W)`` input with probability ``p``,
    scaling the rest by ``1 / (1 - p)``.

    Args:
        input (Tensor): the input.
        p (float): the probability of zeroing a channel.
        training (bool): apply dropout (identity when False).
        inplace (bool): write the result into ``input``.

    Returns:
        Tensor: of the input's shape.
    """
    _check_input("dropout2d", input, None)
    _check_p(p)
    nd = input.dim()
    if nd == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    elif nd != 4:
        warnings.warn(
            f"dropout2d: Received a {nd}-D input to dropout2d, which is deprecated and will result "
            "in an error in a future release. To retain the behavior and silence this warning, "
            "please use dropout instead. Note that dropout2d exists to provide channel-wise "
            "dropout on inputs with 2 spatial dimensions, a channel dimension, and an optional "
            "batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2,
        )
    if nd < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _dropout(input, p, training, inplace, _feature_mask_shape(input))


# ---------------------------------------------------------------------- attention


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """Computes ``softmax(Q K^T * scale + mask) V``.

    float32 (and float64 on the CPU) inputs with up to two batch dims run a fused kernel that
    never materializes the ``(..., L, S)`` scores (rumus/nn/_attention.py lists the exceptions).

    Args:
        query (Tensor): of shape ``(..., L, E)``.
        key (Tensor): of shape ``(..., S, E)``.
        value (Tensor): of shape ``(..., S, Ev)``.
        attn_mask (Tensor, optional): boolean (True keeps) or additive, broadcastable to ``(..., L,
            S)``.
        dropout_p (float): dropout probability on the attention weights.
        is_causal (bool): apply a lower-triangular mask (no ``attn_mask`` then).
        scale (float, optional): defaults to ``1 / sqrt(E)``.
        enable_gqa (bool): let key and value have fewer heads than query (grouped-query attention).

    Returns:
        Tensor: of shape ``(..., L, Ev)``.
    """
    _check_input("scaled_dot_product_attention", query, None, arg="query")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be at least 2 dimensional, but got query.dim: "
            f"{query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} instead."
        )
    if not query.dtype == key.dtype == value.dtype:
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} instead."
        )
    if query.size(-1) != key.size(-1) or key.size(-2) != value.size(-2):
        raise RuntimeError(
            f"scaled_dot_product_attention: query {_shape(query)}, key {_shape(key)} and value "
            f"{_shape(value)} must share the embedding size (query/key) and the sequence length "
            "(key/value)"
        )
    if is_causal and attn_mask is not None:
        raise RuntimeError(
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
            "is_causal=True"
        )
    if enable_gqa and query.dim() >= 3 and query.size(-3) != key.size(-3):
        hq, hk = query.size(-3), key.size(-3)
        if hq % hk or key.size(-3) != value.size(-3):
            raise RuntimeError(
                f"scaled_dot_product_attention(enable_gqa=True): the query heads ({hq}) must be a "
                f"multiple of the key/value heads (key {key.size(-3)}, value {value.size(-3)})"
            )
        group = _index(np.arange(hq) // (hq // hk), key)
        key, value = key.index_select(-3, group), value.index_select(-3, group)
    length, source = query.size(-2), key.size(-2)
    if scale is None:
        scale = 1.0 / math.sqrt(query.size(-1))
    fused = _fused_sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale)
    if fused is not None:
        return fused
    scores = (query * scale) @ key.transpose(-2, -1)
    dead = None  # rows where every key is masked: their weights are 0, as PyTorch's safe softmax
    if is_causal:
        keep = _rumus.ones(length, source, dtype=_rumus.bool, device=query.device).tril()
        scores = scores.masked_fill(~keep, -math.inf)
    elif attn_mask is not None:
        if attn_mask.dtype == _rumus.bool:
            dead = ~attn_mask.any(-1, keepdim=True)
            scores = scores.masked_fill(~(attn_mask | dead), -math.inf)
        elif attn_mask.is_floating_point():
            dead = (attn_mask == -math.inf).all(-1, keepdim=True)
            scores = scores + attn_mask.masked_fill(dead, 0.0)
        else:
            raise RuntimeError(
                "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                f"attn_mask.dtype: {attn_mask.dtype} and query.dtype: {query.dtype} instead."
            )
    attn = softmax(scores, -1)
    if dead is not None:
        attn = attn.masked_fill(dead, 0.0)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p)
    return attn @ value


# ------------------------------------------------------------------ pad and resize


def _pad_index(n, before, after, mode, dim, shape):
    """Source index of every output position along one dim (before/after may be negative:
    reflect and replicate address the whole input; circular wraps around the cropped part)."""
    if mode == "circular":
        lo, hi = max(-before, 0), n - max(-after, 0)
        if max(before, 0) > hi - lo or max(after, 0) > hi - lo:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        return lo + np.arange(-max(before, 0), hi - lo + max(after, 0)) % (hi - lo)
    pos = np.arange(-before, n + after)
    if mode == "replicate":
        return np.clip(pos, 0, n - 1)
    if before >= n or after >= n:
        raise RuntimeError(
            "Argument #4: Padding size should be less than the corresponding input dimension, but "
            f"got: padding ({before}, {after}) at dimension {dim} of input {shape}"
        )
    pos = np.abs(pos)
    return np.where(pos > n - 1, 2 * (n - 1) - pos, pos)


def _native_pad(x):
    """Whether F.pad runs as one gather kernel (real CPU tensors), not as a composite of ops."""
    return not x.is_gpu and not x.is_complex()


def pad(
    input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None
) -> Tensor:
    """Pads the last dimensions.

    Args:
        input (Tensor): the input.
        pad (Sequence[int]): ``(left, right)`` sizes per dimension, last dimension first; negative
            values crop.
        mode (str): ``'constant'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
        value (float, optional): the fill of ``'constant'`` mode (0 by default).

    Returns:
        Tensor: the padded tensor.
    """
    _check_input("pad", input, None)
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    npad = len(pad) // 2
    nd = input.dim()
    if npad > nd:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but got "
            f"padding length {len(pad)} and input of dimension {nd}"
        )
    shape = _shape(input)
    pairs = [
        (nd - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(npad)
    ]  # pad starts at the last dim
    if mode == "constant":
        out_shape = list(shape)
        for d, before, after in pairs:
            out_shape[d] += before + after
            if max(-before, 0) + max(-after, 0) > shape[d] or out_shape[d] < 0:
                raise RuntimeError(
                    f"pad: padding ({before}, {after}) crops dimension {d} of input {shape} below "
                    "size 0"
                )
        if _native_pad(input):
            maps = [None] * nd
            for d, before, after in pairs:
                pos = np.arange(-before, shape[d] + after)
                maps[d] = np.where((pos >= 0) & (pos < shape[d]), pos, -1).tolist()
            return _rumus._pad_gather(input, maps, 0 if value is None else value)
        x = input
        for d, before, after in pairs:  # negative padding crops
            if before < 0 or after < 0:
                x = x.narrow(d, max(-before, 0), x.size(d) - max(-before, 0) - max(-after, 0))
        if out_shape == _shape(x):
            return x.clone()
        out = _rumus.full(
            out_shape, 0 if value is None else value, dtype=input.dtype, device=input.device
        )
        region = [slice(None)] * nd
        for d, before, after in pairs:
            region[d] = slice(max(before, 0), out_shape[d] - max(after, 0))
        out[tuple(region)] = x
        return out
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if npad not in (1, 2, 3) or nd not in (npad + 1, npad + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {nd}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
        )
    for d, before, after in pairs:
        if shape[d] == 0:
            raise RuntimeError(
                f"pad: mode '{mode}' needs non-empty padded dimensions, got input of shape {shape}"
            )
    maps = [None] * nd
    for d, before, after in pairs:
        if before or after:
            maps[d] = _pad_index(shape[d], before, after, mode, d, shape)
    if _native_pad(input):
        return _rumus._pad_gather(input, [None if m is None else m.tolist() for m in maps], 0)
    x = input
    for d, m in enumerate(maps):
        if m is not None:
            x = x.index_select(d, _index(m, input))
    return x


_INTERP_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_INTERP_NDIM = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}


def _cubic_weights(t):
    """Keys' cubic convolution weights (A = -0.75, as PyTorch) of the 4 taps around t in [0, 1)."""
    a = -0.75

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _taps(x, dim, idx, weights):
    """The CPU kernel: output j along ``dim`` is ``Σ_k weights[k][j] · x[idx[k][j]]``."""
    k = len(idx)
    idx = np.stack(idx, 1).ravel().tolist()
    weights = np.stack(weights, 1).astype(np.float64).ravel().tolist()
    return _rumus._resample(x, dim, idx, weights, k)


def _resample(x, dim, m, scale, mode, align_corners):
    """Resizes dim ``dim`` of ``x`` to ``m`` (separable: one dim at a time)."""
    n = x.size(dim)
    if m == n:
        return x
    # source coordinates in the precision PyTorch's kernels use (float for float32 and below)
    ft = np.float64 if x.dtype == _rumus.float64 else np.float32
    dst = np.arange(m, dtype=ft)
    ratio = ft(1.0 / scale) if scale is not None else ft(n) / ft(m)
    if mode in ("nearest", "nearest-exact"):
        if m == 2 * n and x.dim() == 4:
            src = (
                np.arange(m) // 2
            )  # PyTorch's 2-D kernel maps an exact doubling so, whatever the scale
        else:
            src = np.floor((dst + ft(0.5)) * ratio if mode == "nearest-exact" else dst * ratio)
        return x.index_select(dim, _index(np.minimum(src.astype(np.int64), n - 1), x))
    if align_corners:
        ratio = ft(n - 1) / ft(m - 1) if m > 1 else ft(0)
        src = ratio * dst
    else:
        src = ratio * (dst + ft(0.5)) - ft(0.5)
    shape = (m,) + (1,) * (x.dim() - dim - 1)

    def weight(w):
        return _rumus.tensor(np.asarray(w).reshape(shape), dtype=x.dtype, device=x.device)

    if mode == "bicubic":
        i0 = np.floor(src)
        taps = _cubic_weights(src - i0)
        i0 = i0.astype(np.int64)
        if not x.is_gpu:
            idx = [np.clip(i0 - 1 + k, 0, n - 1) for k in range(4)]
            return _taps(x, dim, idx, taps)
        out = None
        for k, w in enumerate(taps):
            term = x.index_select(dim, _index(np.clip(i0 - 1 + k, 0, n - 1), x)) * weight(w)
            out = term if out is None else out + term
        return out
    src = np.maximum(src, 0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    i1 = np.minimum(i0 + 1, n - 1)
    lam = np.clip(src - i0, 0, 1)
    if not x.is_gpu:
        return _taps(x, dim, [i0, i1], [1 - lam, lam])
    x0 = x.index_select(dim, _index(i0, x))
    x1 = x.index_select(dim, _index(i1, x))
    return x0 * weight(1 - lam) + x1 * weight(lam)


def interpolate(
    input: Tensor,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resizes the spatial dimensions of ``(N, C, ...)`` input.

    Args:
        input (Tensor): the input.
        size (int or Sequence[int], optional): the output spatial size.
        scale_factor (float or Sequence[float], optional): the multiplier of the spatial size
            (instead of ``size``).
        mode (str): ``'nearest'``, ``'nearest-exact'``, ``'linear'``, ``'bilinear'``, ``'bicubic'``,
            ``'trilinear'`` or ``'area'``.
        align_corners (bool, optional): for the linear and cubic modes, align the corner pixels'
            centres.
        recompute_scale_factor (bool, optional): compute the scale from the output size.
        antialias (bool): only False is supported.

    Returns:
        Tensor: of shape ``(N, C, *size)``.
    """
    # PyTorch's nearest kernels also take uint8 images; its other integer kernels do not exist
    uint8_ok = (
        mode in ("nearest", "nearest-exact") and getattr(input, "dtype", None) == _rumus.uint8
    )
    _check_input("interpolate", input, None if uint8_ok else _FLOAT)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: linear | "
                "bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    nd = input.dim()
    if nd not in (3, 4, 5) or mode not in _INTERP_MODES:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {nd}D) for the modes: "
            f"nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got {mode})"
        )
    if mode in _INTERP_NDIM and nd != _INTERP_NDIM[mode]:
        raise NotImplementedError(
            f"Got {nd}D input, but {mode} mode needs {_INTERP_NDIM[mode]}D input"
        )
    if antialias:
        if not (mode in ("bilinear", "bicubic") and nd == 4):
            raise ValueError(
                "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and "
                "requires a 4-D tensor as input"
            )
        raise NotImplementedError("interpolate(antialias=True) is not supported by rumus")
    in_sizes = _shape(input)[2:]
    nsp = nd - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        out_sizes = (
            [int(size)] * nsp if isinstance(size, numbers.Integral) else [int(s) for s in size]
        )
        if len(out_sizes) != nsp:
            raise ValueError(
                "Input and output must have the same number of spatial dimensions, but got input "
                f"with spatial dimensions of {in_sizes} and output size of {size}. Please provide "
                "input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                "...,oK) format."
            )
        scales = [None] * nsp
    elif scale_factor is not None:
        if isinstance(scale_factor, numbers.Real):
            factors = [float(scale_factor)] * nsp
        else:
            factors = [float(s) for s in scale_factor]
        if len(factors) != nsp:
            raise ValueError(
                "Input and scale_factor must have the same number of spatial dimensions, but got "
                f"input with spatial dimensions of {in_sizes} and scale_factor of shape "
                f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                "scale_factor in (s1, s2, ...,sK) format."
            )
        out_sizes = [int(math.floor(n * s)) for n, s in zip(in_sizes, factors)]
        scales = [None] * nsp if recompute_scale_factor else factors
    else:
        raise ValueError("either size or scale_factor should be defined")
    if min(in_sizes) <= 0 or min(out_sizes) <= 0:
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input {in_sizes} and output "
            f"{out_sizes}"
        )
    if mode == "area":
        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[nsp - 1]
        return pool(input, out_sizes)
    x = input
    for i in range(nsp):
        x = _resample(x, 2 + i, out_sizes[i], scales[i], mode, align_corners)
    return x if x is not input else input.clone()


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """Rearranges ``(*, C * r^2, H, W)`` into ``(*, C, H * r, W * r)``.

    Args:
        input (Tensor): the input.
        upscale_factor (int): r.

    Returns:
        Tensor: the rearranged tensor.
    """
    _check_input("pixel_shuffle", input, None)
    r = int(upscale_factor)
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    if input.dim() < 3:
        raise RuntimeError(
            "pixel_shuffle expects input to have at least 3 dimensions, but got input with "
            f"{input.dim()} dimension(s)"
        )
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
            f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    b = len(batch)
    x = input.reshape(*batch, c // (r * r), r, r, h, w)
    x = x.permute(*range(b), b, b + 3, b + 1, b + 4, b + 2)
    return x.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """Rearranges ``(*, C, H * r, W * r)`` into ``(*, C * r^2, H, W)``.

    Args:
        input (Tensor): the input.
        downscale_factor (int): r.

    Returns:
        Tensor: the rearranged tensor.
    """
    _check_input("pixel_unshuffle", input, None)
    r = int(downscale_factor)
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    if input.dim() < 3:
        raise RuntimeError(
            "pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
            f"{input.dim()} dimension(s)"
        )
    *batch, c, h, w = input.shape
    for name, size, idx in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                f"input.size({idx})={size} is not divisible by {r}"
            )
    b = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    x = x.permute(*range(b), b, b + 2, b + 4, b + 1, b + 3)
    return x.reshape(*batch, c * r * r, h // r, w // r)


# ------------------------------------------------------------------------- losses


def _legacy_reduction(size_average, reduce):
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "none" if not reduce else ("mean" if size_average else "sum")
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
        stacklevel=3,
    )
    return ret


def _reduction(reduction, size_average=None, reduce=None, extra=()):
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in ("none", "mean", "sum") + extra:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _warn_broadcast(input, target):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            stacklevel=3,
        )


def _pointwise_loss(loss, reduction, weight, input, mean_by_weight):
    if weight is None:
        return _reduce(loss, reduction)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean" and mean_by_weight:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean squared error ``(input - target)^2``.

    Args:
        input (Tensor): predictions.
        target (Tensor): of the same shape.
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
        weight (Tensor, optional): elementwise weights.

    Returns:
        Tensor: the loss; a scalar unless ``reduction='none'``.
    """
    _check_input("mse_loss", input, None)
    _check_input("mse_loss", target, None, arg="target", pos=2)
    reduction = _reduction(reduction, size_average, reduce)
    _warn_broadcast(input, target)
    return _pointwise_loss((input - target).square(), reduction, weight, input, True)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error ``|input - target|``.

    Args:
        input (Tensor): predictions.
        target (Tensor): of the same shape.
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
        weight (Tensor, optional): elementwise weights.

    Returns:
        Tensor: the loss; a scalar unless ``reduction='none'``.
    """
    _check_input("l1_loss", input, None)
    _check_input("l1_loss", target, None, arg="target", pos=2)
    reduction = _reduction(reduction, size_average, reduce)
    _warn_broadcast(input, target)
    return _pointwise_loss((input - target).abs(), reduction, weight, input, True)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Smooth L1 loss: quadratic below ``beta``, linear above.

    Args:
        input (Tensor): predictions.
        target (Tensor): of the same shape.
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
        beta (float): the threshold between the two regimes.

    Returns:
        Tensor: the loss; a scalar unless ``reduction='none'``.
    """
    _check_input("smooth_l1_loss", input)
    _check_input("smooth_l1_loss", target, None, arg="target", pos=2)
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _warn_broadcast(input, target)
    diff = input - target
    loss = diff.abs() if beta == 0 else diff._smooth_l1(beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Huber loss: ``0.5 d^2`` for ``|d| < delta``, else ``delta (|d| - 0.5 delta)``.

    Args:
        input (Tensor): predictions.
        target (Tensor): of the same shape.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
        delta (float): the threshold between the two regimes.
        weight (Tensor, optional): elementwise weights.

    Returns:
        Tensor: the loss; a scalar unless ``reduction='none'``.
    """
    _check_input("huber_loss", input)
    _check_input("huber_loss", target, None, arg="target", pos=2)
    reduction = _reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _warn_broadcast(input, target)
    return _pointwise_loss((input - target)._huber(delta), reduction, weight, input, False)


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of the target classes, given log-probabilities.

    Args:
        input (Tensor): log-probabilities of shape ``(N, C, ...)`` or ``(C,)``.
        target (Tensor): class indices of shape ``(N, ...)`` or ``()``.
        weight (Tensor, optional): per-class weights of shape ``(C,)``.
        size_average: deprecated, use ``reduction``.
        ignore_index (int): targets with this value contribute nothing.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.

    Returns:
        Tensor: the loss; a scalar unless ``reduction='none'``.
    """
    _check_input("nll_loss", input)
    _check_input("nll_loss", target, None, arg="target", pos=2)
    reduction = _reduction(reduction, size_average, reduce)
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if target.dtype not in (_rumus.int64, _rumus.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {target.dtype}")
    if input.dim() <= 2:
        if target.dim() > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if input.dim() == 2 and (target.dim() != 1 or target.size(0) != input.size(0)):
            raise ValueError(
                f"Expected input batch_size ({input.size(0)}) to match target batch_size "
                f"({target.size(0) if target.dim() else 0})."
            )
    else:
        if target.dim() == 0 or target.size(0) != input.size(0):
            raise ValueError(
                f"Expected input batch_size ({input.size(0)}) to match target batch_size "
                f"({target.size(0) if target.dim() else 0})."
            )
        expected = [input.size(0)] + _shape(input)[2:]
        if _shape(target) != expected:
            raise RuntimeError(f"Expected target size {expected}, got {_shape(target)}")
    cdim = 0 if input.dim() == 1 else 1
    classes = input.size(cdim)
    if weight is not None and weight.numel() != classes:
        raise RuntimeError(
            f"weight tensor should be defined either for all {classes} classes or no classes but "
            f"got weight tensor of shape: {_shape(weight)}"
        )
    target = target.long()
    valid = target != ignore_index
    safe = _rumus.where(valid, target, 0)
    index = safe.reshape(1) if cdim == 0 else safe.unsqueeze(1)
    try:
        picked = input.gather(cdim, index)
    except RuntimeError:
        bad = target[valid & ((target < 0) | (target >= classes))]
        if bad.numel():
            raise IndexError(f"Target {bad.reshape(-1)[0].item()} is out of bounds.") from None
        raise
    picked = picked.reshape(target.shape)
    if weight is None:
        w = valid.to(input.dtype)
    else:
        w = weight.index_select(0, safe.reshape(-1)).reshape(target.shape) * valid
    loss = -picked * w
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss, reduction)


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross-entropy between logits and class indices or class probabilities.

    Args:
        input (Tensor): logits of shape ``(N, C, ...)`` or ``(C,)``.
        target (Tensor): class indices of shape ``(N, ...)``, or probabilities of the input's shape.
        weight (Tensor, optional): per-class weights of shape ``(C,)``.
        size_average: deprecated, use ``reduction``.
        ignore_index (int): index targets with this value contribute nothing.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
        label_smoothing (float): mixes the target with the uniform distribution by this amount.

    Returns:
        Tensor: the loss; a scalar unless ``reduction='none'``.
    """
    _check_input("cross_entropy", input, None)
    _check_input("cross_entropy", target, None, arg="target", pos=2)
    reduction = _reduction(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    cdim = 0 if input.dim() == 1 else 1
    classes = input.size(cdim)
    logp = log_softmax(input, cdim)
    if target.is_floating_point():
        # class probabilities, one row per sample
        if _shape(target) != _shape(input):
            raise RuntimeError(
                "cross_entropy: class-probability targets must have the input's shape "
                f"{_shape(input)}, got {_shape(target)}"
            )
        if ignore_index != -100:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if weight is not None and weight.numel() != classes:
            raise RuntimeError(
                f"weight tensor should be defined either for all {classes} classes or no classes "
                f"but got weight tensor of shape: {_shape(weight)}"
            )
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / classes
        prod = logp * target
        if weight is not None:
            prod = prod * _channel_view(weight, input.dim(), cdim)
        return _reduce(-prod.sum(cdim), reduction)
    loss = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing == 0:
        return loss
    # the smoothing term: the (weighted) sum of -log p over the classes, ignored targets dropped
    valid = target != ignore_index
    prod = logp if weight is None else logp * _channel_view(weight, input.dim(), cdim)
    smooth = -prod.sum(cdim).masked_fill(~valid, 0.0)
    if reduction == "mean":
        if weight is None:
            denom = valid.sum()
        else:
            safe = _rumus.where(valid, target.long(), 0).reshape(-1)
            denom = (weight.index_select(0, safe) * valid.reshape(-1)).sum()
        smooth = smooth.sum() / denom
    else:
        smooth = _reduce(smooth, reduction)
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / classes)


def _clamped_log(x):
    """log(x) clamped at -100 as PyTorch's BCE; where x == 0 the log reads 1 instead,
    so the gradient there is 0, not 0 * inf."""
    pos = x > 0
    return _rumus.where(pos, _rumus.where(pos, x, 1.0).log(), -100.0).clamp_min(-100.0)


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    """Binary cross-entropy between probabilities and targets in [0, 1].

    Args:
        input (Tensor): probabilities.
        target (Tensor): of the same shape.
        weight (Tensor, optional): elementwise weights.
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.

    Returns:
        Tensor: the loss; a scalar unless ``reduction='none'``.
    """
    _check_input("binary_cross_entropy", input)
    _check_input("binary_cross_entropy", target, None, arg="target", pos=2)
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size."
        )
    if not ((input >= 0) & (input <= 1)).all().item():
        raise RuntimeError("all elements of input should be between 0 and 1")
    log_x = _clamped_log(input)
    log_1mx = _clamped_log(1 - input)
    loss = -(log_1mx + target * (log_x - log_1mx))
    if weight is not None:
        loss = loss * weight.expand_as(loss)
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
):
    """Binary cross-entropy on logits (a sigmoid fused in, numerically stable).

    Args:
        input (Tensor): logits.
        target (Tensor): of the same shape, in [0, 1].
        weight (Tensor, optional): elementwise weights.
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
        pos_weight (Tensor, optional): weights of the positive examples, broadcast over the last
            dimension.

    Returns:
        Tensor: the loss; a scalar unless ``reduction='none'``.
    """
    _check_input("binary_cross_entropy_with_logits", input)
    _check_input("binary_cross_entropy_with_logits", target, None, arg="target", pos=2)
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})"
        )
    # (1 - t) x + (1 + (pw - 1) t) log(1 + e^-x), with the log term as softplus(-x) (no overflow)
    sp = softplus(-input)
    if pos_weight is not None:
        sp = sp * ((pos_weight - 1) * target + 1)
    loss = input - input * target + sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence ``target * (log(target) - input)``, with ``input`` in log space.

    Args:
        input (Tensor): log-probabilities.
        target (Tensor): probabilities (or log-probabilities if ``log_target``).
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'``, ``'batchmean'`` or ``'sum'``.
        log_target (bool): ``target`` is in log space.

    Returns:
        Tensor: the loss; a scalar unless ``reduction='none'``.
    """
    _check_input("kl_div", input, error=RuntimeError)
    _check_input("kl_div", target, None, arg="target", pos=2)
    reduction = _reduction(reduction, size_average, reduce, extra=("batchmean",))
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            stacklevel=2,
        )
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # target * log(target) is 0 where target == 0 (xlogy)
        loss = target * (target.masked_fill(target == 0, 1.0).log() - input)
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.size(0) if input.dim() else total
    return _reduce(loss, reduction)


def cosine_embedding_loss(
    input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"
):
    """``1 - cos(x1, x2)`` for targets 1, ``max(0, cos(x1, x2) - margin)`` for targets -1.

    Args:
        input1 (Tensor): of shape ``(N, D)`` or ``(D,)``.
        input2 (Tensor): of the same shape.
        target (Tensor): 1 or -1, of shape ``(N,)`` or ``()``.
        margin (float): in [-1, 1].
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.

    Returns:
        Tensor: the loss; a scalar unless ``reduction='none'``.
    """
    _check_input("cosine_embedding_loss", input1, None, arg="input1")
    _check_input("cosine_embedding_loss", input2, None, arg="input2", pos=2)
    reduction = _reduction(reduction, size_average, reduce)
    tdim = target.dim()
    if tdim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.dim() != tdim + 1 or input2.dim() != tdim + 1:
        raise RuntimeError(
            f"{tdim}D target tensor expects {tdim + 1}D input tensors, but found inputs with sizes "
            f"{_shape(input1)} and {_shape(input2)}."
        )
    eps = 1e-12
    dot = (input1 * input2).sum(tdim)
    mag = ((input1 * input1).sum(tdim) + eps) * ((input2 * input2).sum(tdim) + eps)
    cos = dot / mag.sqrt()
    loss = _rumus.where(target == 1, 1 - cos, 0.0) + _rumus.where(
        target == -1, (cos - margin).clamp_min(0.0), 0.0
    )
    return _reduce(loss, reduction)


def margin_ranking_loss(
    input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"
):
    """``max(0, -target * (input1 - input2) + margin)``.

    Args:
        input1 (Tensor): scores.
        input2 (Tensor): scores of the same shape.
        target (Tensor): 1 (input1 ranks higher) or -1.
        margin (float): the margin.
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.

    Returns:
        Tensor: the loss; a scalar unless ``reduction='none'``.
    """
    _check_input("margin_ranking_loss", input1, _NUMBER, arg="input1")
    _check_input("margin_ranking_loss", input2, None, arg="input2", pos=2)
    reduction = _reduction(reduction, size_average, reduce)
    if not input1.dim() == input2.dim() == target.dim():
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} "
        )
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0.0), reduction)


__all__ = sorted(
    n
    for n, v in globals().items()
    if not n.startswith("_") and callable(v) and n not in ("Tensor", "is_grad_enabled", "no_grad")
)


from .._composite import pdist  # noqa: E402, F401 - F.pdist is torch.nn.functional.pdist
from ._functional_more import *  # noqa: E402, F401, F403 - shrink activations, lp_pool, embedding_bag...
from ._functional_more import __all__ as _more_all  # noqa: E402
from ._loss_more import *  # noqa: E402, F401, F403 - ctc_loss, the margin and likelihood losses
from ._loss_more import __all__ as _loss_more_all  # noqa: E402

__all__ = sorted(set(__all__) | set(_more_all) | set(_loss_more_all))
