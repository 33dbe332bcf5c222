"""Fold and Unfold: sliding local blocks to columns (im2col) and back (col2im, summing overlaps)."""

from .. import functional as F
from .module import Module

__all__ = ["Fold", "Unfold"]


class Fold(Module):
    """(N, C * prod(kernel_size), L) -> (N, C, *output_size), overlapping values summed.

    Args:
        output_size (int or tuple): the output size.
        kernel_size (int or tuple): the size of the window.
        dilation (int or tuple): the spacing between window elements.
        padding (int or tuple): the padding on each side.
        stride (int or tuple): the step of the window.
    """

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.fold(
            input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self):
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
            f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
        )


class Unfold(Module):
    """(N, C, H, W) -> (N, C * prod(kernel_size), L) with one column per block position.

    Args:
        kernel_size (int or tuple): the size of the window.
        dilation (int or tuple): the spacing between window elements.
        padding (int or tuple): the padding on each side.
        stride (int or tuple): the step of the window.
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
            f"stride={self.stride}"
        )
