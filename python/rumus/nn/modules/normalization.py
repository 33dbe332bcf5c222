"""Normalization layers: BatchNorm1d/2d, InstanceNorm1d/2d, LayerNorm, GroupNorm, RMSNorm."""

import numbers
import warnings
from typing import Any, Optional, Union

import rumus

from ...utils.checkpoint import is_checkpointing
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LayerNorm",
    "GroupNorm",
    "RMSNorm",
    "LocalResponseNorm",
]


def _register_affine(module, affine, shape, bias, device, dtype):
    """weight (and bias unless bias=False) of `shape` when affine, else both registered as None."""
    module.register_parameter(
        "weight", Parameter(rumus.empty(shape, device=device, dtype=dtype)) if affine else None
    )
    module.register_parameter(
        "bias",
        Parameter(rumus.empty(shape, device=device, dtype=dtype)) if affine and bias else None,
    )


def _reset_affine(module):
    """The identity transform: weight 1, bias 0."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class _NormBase(Module):
    """Per-channel affine parameters and running statistics shared by batch and instance norm."""

    _version = 2  # version 2 added num_batches_tracked (as in PyTorch)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: Optional[float] = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _register_affine(self, affine, num_features, bias, device, dtype)
        if track_running_stats:
            self.register_buffer(
                "running_mean", rumus.zeros(num_features, device=device, dtype=dtype)
            )
            self.register_buffer(
                "running_var", rumus.ones(num_features, device=device, dtype=dtype)
            )
            # Always int64, whatever the factory dtype (as in PyTorch).
            self.register_buffer(
                "num_batches_tracked", rumus.tensor(0, dtype=rumus.int64, device=device)
            )
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        """Re-initializes the parameters as the constructor does (PyTorch's defaults)."""
        self.reset_running_stats()
        _reset_affine(self)

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        # Checkpoints older than version 2 have no num_batches_tracked: it starts at 0.
        version = local_metadata.get("version")
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            state_dict[key] = rumus.tensor(0, dtype=rumus.int64)
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )

    def _check_input_dim(self, input):
        if input.dim() not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {want} input (got {input.dim()}D input)")

    def extra_repr(self):
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        # momentum=None means a cumulative moving average: factor 1/n at the n-th batch.
        factor = 0.0 if self.momentum is None else self.momentum
        # Running stats are updated only while training with track_running_stats (which may be
        # switched off after construction), and not again when checkpoint recomputes the
        # forward in backward: the first run already counted this batch.
        update = self.training and self.track_running_stats and not is_checkpointing()
        if update and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / self.num_batches_tracked.item()
        # Without running stats, eval mode normalizes with the batch statistics too.
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        # Eval mode always normalizes with the running stats when present.
        with_stats = not self.training or update
        return F.batch_norm(
            input,
            self.running_mean if with_stats else None,
            self.running_var if with_stats else None,
            self.weight,
            self.bias,
            use_batch_stats,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) input.

    Args:
        num_features (int): the number of channels C.
        eps (float): added to the denominator for numerical stability.
        momentum (float): the running statistics' update factor (None: a cumulative average).
        affine (bool): learn a per-channel weight and bias.
        track_running_stats (bool): keep running estimates of mean and variance for eval mode.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
        bias (bool): learn an additive bias.
    """

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) input.

    Args:
        num_features (int): the number of channels C.
        eps (float): added to the denominator for numerical stability.
        momentum (float): the running statistics' update factor (None: a cumulative average).
        affine (bool): learn a per-channel weight and bias.
        track_running_stats (bool): keep running estimates of mean and variance for eval mode.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
        bias (bool): learn an additive bias.
    """

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch norm over (N, C, D, H, W) input.

    Args:
        num_features (int): the number of channels C.
        eps (float): added to the denominator for numerical stability.
        momentum (float): the running statistics' update factor (None: a cumulative average).
        affine (bool): learn a per-channel weight and bias.
        track_running_stats (bool): keep running estimates of mean and variance for eval mode.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
        bias (bool): learn an additive bias.
    """

    _dims = (5,)


class _InstanceNorm(_NormBase):
    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: Optional[float] = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def forward(self, input):
        self._check_input_dim(input)
        unbatched = input.dim() == self._dims[0]
        channel_dim = 0 if unbatched else 1
        if input.size(channel_dim) != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim={channel_dim} to match num_features "
                    f"({self.num_features}), but got: {input.size(channel_dim)}."
                )
            warnings.warn(
                f"input's size at dim={channel_dim} does not match num_features. You can "
                "silence this warning by not passing in num_features, which is not used because "
                "affine=False"
            )
        if unbatched:
            input = input.unsqueeze(0)
        out = F.instance_norm(
            input,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            0.1 if self.momentum is None else self.momentum,
            self.eps,
        )
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over (N, C, L) or unbatched (C, L) input.

    Args:
        num_features (int): the number of channels C.
        eps (float): added to the denominator for numerical stability.
        momentum (float): the running statistics' update factor (None: a cumulative average).
        affine (bool): learn a per-channel weight and bias.
        track_running_stats (bool): keep running estimates of mean and variance for eval mode.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
        bias (bool): learn an additive bias.
    """

    _dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over (N, C, H, W) or unbatched (C, H, W) input.

    Args:
        num_features (int): the number of channels C.
        eps (float): added to the denominator for numerical stability.
        momentum (float): the running statistics' update factor (None: a cumulative average).
        affine (bool): learn a per-channel weight and bias.
        track_running_stats (bool): keep running estimates of mean and variance for eval mode.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
        bias (bool): learn an additive bias.
    """

    _dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over (N, C, D, H, W) or unbatched (C, D, H, W) input.

    Args:
        num_features (int): the number of channels C.
        eps (float): added to the denominator for numerical stability.
        momentum (float): the running statistics' update factor (None: a cumulative average).
        affine (bool): learn a per-channel weight and bias.
        track_running_stats (bool): keep running estimates of mean and variance for eval mode.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
        bias (bool): learn an additive bias.
    """

    _dims = (4, 5)


def _shape_tuple(normalized_shape):
    if isinstance(normalized_shape, numbers.Integral):
        return (int(normalized_shape),)
    return tuple(normalized_shape)


class LayerNorm(Module):
    """Normalizes over the last len(normalized_shape) dims; optional elementwise weight and bias.

    Args:
        normalized_shape (int or Sequence[int]): the trailing shape to normalize over.
        eps (float): added to the denominator for numerical stability.
        elementwise_affine (bool): learn an elementwise weight (and bias).
        bias (bool): learn an additive bias.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
    """

    def __init__(
        self,
        normalized_shape: Union[int, list[int], tuple[int, ...]],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _register_affine(self, elementwise_affine, self.normalized_shape, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-initializes the parameters as the constructor does (PyTorch's defaults)."""
        _reset_affine(self)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class GroupNorm(Module):
    """Normalizes (N, C, *) input over groups of C // num_groups channels; per-channel affine.

    Args:
        num_groups (int): the number of groups (divides num_channels).
        num_channels (int): the number of channels C.
        eps (float): added to the denominator for numerical stability.
        affine (bool): learn a per-channel weight and bias.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
        bias (bool): learn an additive bias.
    """

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _register_affine(self, affine, num_channels, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-initializes the parameters as the constructor does (PyTorch's defaults)."""
        _reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the last dims, times an optional weight. eps=None means the
    dtype's machine epsilon (PyTorch's default).

    Args:
        normalized_shape (int or Sequence[int]): the trailing shape to normalize over.
        eps (float, optional): added to the mean square (the dtype's epsilon when None).
        elementwise_affine (bool): learn an elementwise weight (and bias).
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
    """

    def __init__(
        self,
        normalized_shape: Union[int, list[int], tuple[int, ...]],
        eps: Optional[float] = None,
        elementwise_affine: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(rumus.empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-initializes the parameters as the constructor does (PyTorch's defaults)."""
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class LocalResponseNorm(Module):
    """Local response normalization across channels.

    Divides each value by (k + alpha / size * sum of squares over ``size`` neighbouring
    channels)^beta.

    Args:
        size (int): the number of neighbouring channels in the sum.
        alpha (float): the multiplicative factor.
        beta (float): the exponent.
        k (float): the additive constant.
    """

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
