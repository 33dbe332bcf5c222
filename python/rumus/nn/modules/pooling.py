"""Pooling layers: max, average and adaptive pooling in 1-D, 2-D and 3-D; max unpooling."""

from typing import Optional, Union

from .. import functional as F
from .module import Module
from .utils import _pair, _single, _triple

__all__ = [
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
]


class _MaxPoolNd(Module):
    def __init__(
        self,
        kernel_size: Union[int, tuple[int, ...]],
        stride: Optional[Union[int, tuple[int, ...]]] = None,
        padding: Union[int, tuple[int, ...]] = 0,
        dilation: Union[int, tuple[int, ...]] = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPoolNd):
    """Max over sliding windows of (N, C, L) or (C, L) input; returns (out, indices) if
    return_indices.

    Args:
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple, optional): the step of the window (kernel_size when None).
        padding (int or tuple): the padding on each side.
        dilation (int or tuple): the spacing between window elements.
        return_indices (bool): also return the indices of the maxima.
        ceil_mode (bool): round the output size up instead of down.
    """

    def forward(self, input):
        return F.max_pool1d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


class MaxPool2d(_MaxPoolNd):
    """Max over sliding windows of (N, C, H, W) or (C, H, W) input; returns (out, indices) if
    return_indices.

    Args:
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple, optional): the step of the window (kernel_size when None).
        padding (int or tuple): the padding on each side.
        dilation (int or tuple): the spacing between window elements.
        return_indices (bool): also return the indices of the maxima.
        ceil_mode (bool): round the output size up instead of down.
    """

    def forward(self, input):
        return F.max_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


class MaxPool3d(_MaxPoolNd):
    """Max over sliding windows of (N, C, D, H, W) or (C, D, H, W) input.

    Returns (out, indices) if return_indices.

    Args:
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple, optional): the step of the window (kernel_size when None).
        padding (int or tuple): the padding on each side.
        dilation (int or tuple): the spacing between window elements.
        return_indices (bool): also return the indices of the maxima.
        ceil_mode (bool): round the output size up instead of down.
    """

    def forward(self, input):
        return F.max_pool3d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


class AvgPool1d(Module):
    """Average over sliding windows of (N, C, L) or (C, L) input.

    Args:
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple, optional): the step of the window (kernel_size when None).
        padding (int or tuple): the padding on each side.
        ceil_mode (bool): round the output size up instead of down.
        count_include_pad (bool): include the zero padding in the averages.
    """

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True
    ):
        super().__init__()
        # PyTorch stores the 1-d pooling sizes as 1-tuples (they show in the repr that way).
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return F.avg_pool1d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
        )

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(Module):
    """Shared state of AvgPool2d and AvgPool3d."""

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode=False,
        count_include_pad=True,
        divisor_override=None,
    ):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """Average over sliding windows of (N, C, H, W) or (C, H, W) input.

    Args:
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple, optional): the step of the window (kernel_size when None).
        padding (int or tuple): the padding on each side.
        ceil_mode (bool): round the output size up instead of down.
        count_include_pad (bool): include the zero padding in the averages.
        divisor_override (int, optional): divide by this instead of the window size.
    """

    def forward(self, input):
        return F.avg_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )


class AvgPool3d(_AvgPoolNd):
    """Average over sliding windows of (N, C, D, H, W) or (C, D, H, W) input.

    Args:
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple, optional): the step of the window (kernel_size when None).
        padding (int or tuple): the zero padding on each side.
        ceil_mode (bool): round the output size up instead of down.
        count_include_pad (bool): count the padded zeros in the divisor.
        divisor_override (int, optional): the divisor to use instead of the window size.
    """

    def forward(self, input):
        return F.avg_pool3d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )


class _AdaptiveAvgPoolNd(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed output length.

    Args:
        output_size (int or tuple): the output size.
    """

    def forward(self, input):
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed (H, W); None in output_size keeps that input size.

    Args:
        output_size (int or tuple): the output size.
    """

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed (D, H, W); None in output_size keeps that input size.

    Args:
        output_size (int or tuple): the output size.
    """

    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)


class _AdaptiveMaxPoolNd(Module):
    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed output length.

    Args:
        output_size (int or tuple): the output size.
        return_indices (bool): also return the indices of the maxima.
    """

    def forward(self, input):
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed (H, W); None in output_size keeps that input size.

    Args:
        output_size (int or tuple): the output size.
        return_indices (bool): also return the indices of the maxima.
    """

    def forward(self, input):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed (D, H, W); None in output_size keeps that input size.

    Args:
        output_size (int or tuple): the output size.
        return_indices (bool): also return the indices of the maxima.
    """

    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _MaxUnpoolNd(Module):
    """The partial inverse of MaxPoolNd: values put back at their indices, zeros elsewhere.
    ``_ntuple`` and ``_unpool`` are set per class."""

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = self._ntuple(kernel_size)
        self.stride = self._ntuple(stride if stride is not None else kernel_size)
        self.padding = self._ntuple(padding)

    def forward(self, input, indices, output_size=None):
        return self._unpool(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of MaxPool1d over (N, C, L) or (C, L) input.

    Values go back to their indices, zeros elsewhere.

    Args:
        kernel_size (int or tuple): the size of the pooling window.
        stride (int or tuple, optional): the step of the pooling window (kernel_size when None).
        padding (int or tuple): the pooling padding.
    """

    _ntuple = staticmethod(_single)
    _unpool = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of MaxPool2d over (N, C, H, W) or (C, H, W) input.

    Values go back to their indices, zeros elsewhere.

    Args:
        kernel_size (int or tuple): the size of the pooling window.
        stride (int or tuple, optional): the step of the pooling window (kernel_size when None).
        padding (int or tuple): the pooling padding.
    """

    _ntuple = staticmethod(_pair)
    _unpool = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of MaxPool3d over (N, C, D, H, W) or (C, D, H, W) input.

    Values go back to their indices, zeros elsewhere.

    Args:
        kernel_size (int or tuple): the size of the pooling window.
        stride (int or tuple, optional): the step of the pooling window (kernel_size when None).
        padding (int or tuple): the pooling padding.
    """

    _ntuple = staticmethod(_triple)
    _unpool = staticmethod(F.max_unpool3d)


class _LPPoolNd(Module):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPoolNd):
    """Power-average pooling over (N, C, L) or (C, L) input.

    Computes (sum of x^p over each window)^(1/p).

    Args:
        norm_type (float): the power p.
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple, optional): the step of the window (kernel_size when None).
        ceil_mode (bool): round the output size up instead of down.
    """

    def forward(self, input):
        return F.lp_pool1d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """Power-average pooling over (N, C, H, W) or (C, H, W) input.

    Computes (sum of x^p over each window)^(1/p).

    Args:
        norm_type (float): the power p.
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple, optional): the step of the window (kernel_size when None).
        ceil_mode (bool): round the output size up instead of down.
    """

    def forward(self, input):
        return F.lp_pool2d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool3d(_LPPoolNd):
    """Power-average pooling over (N, C, D, H, W) or (C, D, H, W) input.

    Computes (sum of x^p over each window)^(1/p).

    Args:
        norm_type (float): the power p.
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple, optional): the step of the window (kernel_size when None).
        ceil_mode (bool): round the output size up instead of down.
    """

    def forward(self, input):
        return F.lp_pool3d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)
