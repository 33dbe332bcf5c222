"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d."""

import math
from typing import Any, Union

import rumus

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module
from .utils import _pair, _single, _triple

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_STRINGS = ("same", "valid")
_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """Shared parameters, init and repr of the convolutions. `_ntuple` and `_nd` are set per
    class."""

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        bias,
        padding_mode,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"padding_mode must be one of {_PADDING_MODES}, but got "
                f"padding_mode='{padding_mode}'"
            )
        tup = self._ntuple
        kernel_size, stride, dilation = tup(kernel_size), tup(stride), tup(dilation)
        if isinstance(padding, str):
            if transposed:
                raise ValueError(
                    f"{type(self).__name__} does not support string padding, got "
                    f"padding='{padding}'"
                )
            if padding not in _PADDING_STRINGS:
                raise ValueError(
                    f"Invalid padding string '{padding}', should be one of {_PADDING_STRINGS}"
                )
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = tup(padding)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = tup(output_padding)
        self.groups = groups
        self.padding_mode = padding_mode
        self._set_padding_plan()
        shape = (
            (in_channels, out_channels // groups)
            if transposed
            else (out_channels, in_channels // groups)
        )
        self.weight = Parameter(rumus.empty(shape + kernel_size, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(rumus.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _set_padding_plan(self):
        """Decide once how forward pads: the conv's own symmetric zero padding where that is
        exact, else an explicit F.pad (non-zero modes, or 'same' with an odd total padding,
        whose extra element goes on the right as in PyTorch)."""
        if self.padding == "valid":
            pairs = [(0, 0)] * len(self.kernel_size)
        elif self.padding == "same":
            pairs = []
            for d, k in zip(self.dilation, self.kernel_size):
                total = d * (k - 1)
                pairs.append((total // 2, total - total // 2))
        else:
            pairs = [(p, p) for p in self.padding]
        if self.padding_mode == "zeros" and all(left == right for left, right in pairs):
            self._conv_padding = tuple(left for left, _ in pairs)
            self._f_pad = None
        else:
            self._conv_padding = 0
            # F.pad takes (left, right) pairs starting from the last dim.
            self._f_pad = tuple(p for pair in reversed(pairs) for p in pair)

    def reset_parameters(self):
        # Same rule as Linear: U(-1/sqrt(fan_in), 1/sqrt(fan_in)); for transposed convs fan_in
        # comes from weight dim 1 (out_channels / groups), as in PyTorch.
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * len(self.kernel_size):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Union[int, tuple[int, ...]],
        stride: Union[int, tuple[int, ...]] = 1,
        padding: Union[str, int, tuple[int, ...]] = 0,
        dilation: Union[int, tuple[int, ...]] = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            False,
            0,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def _conv_forward(self, input, weight, bias):
        if self._f_pad is not None:
            mode = "constant" if self.padding_mode == "zeros" else self.padding_mode
            input = F.pad(input, self._f_pad, mode=mode)
        return self._conv(
            input, weight, bias, self.stride, self._conv_padding, self.dilation, self.groups
        )

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) or unbatched (C_in, L) input.

    Args:
        in_channels (int): the number of input channels.
        out_channels (int): the number of output channels.
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple): the step of the window.
        padding (int or tuple): the padding on each side.
        dilation (int or tuple): the spacing between window elements.
        groups (int): the number of blocked connections from input to output channels.
        bias (bool): learn an additive bias.
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
    """

    _ntuple = staticmethod(_single)

    @staticmethod
    def _conv(*args):
        return F.conv1d(*args)


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) or unbatched (C_in, H, W) input.

    Args:
        in_channels (int): the number of input channels.
        out_channels (int): the number of output channels.
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple): the step of the window.
        padding (int or tuple): the padding on each side.
        dilation (int or tuple): the spacing between window elements.
        groups (int): the number of blocked connections from input to output channels.
        bias (bool): learn an additive bias.
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
    """

    _ntuple = staticmethod(_pair)

    @staticmethod
    def _conv(*args):
        return F.conv2d(*args)


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W) or unbatched (C_in, D, H, W) input.

    Args:
        in_channels (int): the number of input channels.
        out_channels (int): the number of output channels.
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple): the step of the window.
        padding (int or tuple): the padding on each side.
        dilation (int or tuple): the spacing between window elements.
        groups (int): the number of blocked connections from input to output channels.
        bias (bool): learn an additive bias.
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
    """

    _ntuple = staticmethod(_triple)

    @staticmethod
    def _conv(*args):
        return F.conv3d(*args)


class _ConvTransposeNd(_ConvNd):
    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            True,
            output_padding,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def _output_padding(self, input, output_size):
        """output_padding that makes the output exactly `output_size` (spatial dims, optionally
        preceded by the batch and channel sizes)."""
        if output_size is None:
            return self.output_padding
        nd = len(self.kernel_size)
        lead = input.dim() - nd  # 2 for batched input, 1 for unbatched
        output_size = list(output_size)
        if len(output_size) == lead + nd:
            output_size = output_size[lead:]
        if len(output_size) != nd:
            raise ValueError(
                f"ConvTranspose{nd}D: for {input.dim()}D input, output_size must have {nd} "
                f"or {lead + nd} elements (got {len(output_size)})"
            )
        spatial = list(input.shape[lead:])
        min_sizes = [
            (n - 1) * s - 2 * p + d * (k - 1) + 1
            for n, s, p, d, k in zip(
                spatial, self.stride, self.padding, self.dilation, self.kernel_size
            )
        ]
        max_sizes = [m + s - 1 for m, s in zip(min_sizes, self.stride)]
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if not lo <= size <= hi:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range from "
                    f"{min_sizes} to {max_sizes} (for an input of {spatial})"
                )
        return tuple(size - lo for size, lo in zip(output_size, min_sizes))

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return self._conv_transpose(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            output_padding,
            self.groups,
            self.dilation,
        )


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution; forward(input, output_size=None).

    Args:
        in_channels (int): the number of input channels.
        out_channels (int): the number of output channels.
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple): the step of the window.
        padding (int or tuple): the padding on each side.
        output_padding (int or tuple): extra size added to one side of the output.
        groups (int): the number of blocked connections from input to output channels.
        bias (bool): learn an additive bias.
        dilation (int or tuple): the spacing between window elements.
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
    """

    _ntuple = staticmethod(_single)

    @staticmethod
    def _conv_transpose(*args):
        return F.conv_transpose1d(*args)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution; forward(input, output_size=None).

    Args:
        in_channels (int): the number of input channels.
        out_channels (int): the number of output channels.
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple): the step of the window.
        padding (int or tuple): the padding on each side.
        output_padding (int or tuple): extra size added to one side of the output.
        groups (int): the number of blocked connections from input to output channels.
        bias (bool): learn an additive bias.
        dilation (int or tuple): the spacing between window elements.
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
    """

    _ntuple = staticmethod(_pair)

    @staticmethod
    def _conv_transpose(*args):
        return F.conv_transpose2d(*args)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution; forward(input, output_size=None).

    Args:
        in_channels (int): the number of input channels.
        out_channels (int): the number of output channels.
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple): the step of the window.
        padding (int or tuple): the padding on each side.
        output_padding (int or tuple): extra size added to one side of the output.
        groups (int): the number of blocked connections from input to output channels.
        bias (bool): learn an additive bias.
        dilation (int or tuple): the spacing between window elements.
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
    """

    _ntuple = staticmethod(_triple)

    @staticmethod
    def _conv_transpose(*args):
        return F.conv_transpose3d(*args)
