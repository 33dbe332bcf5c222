"""Padding layers: constant (zero), reflection, replication and circular, in 1-D and 2-D.

`padding` is an int (same on every side) or a tuple in F.pad's order: (left, right) for 1-D,
(left, right, top, bottom) for 2-D."""

from .. import functional as F
from .module import Module
from .utils import _ntuple

__all__ = [
    "ConstantPad1d",
    "ConstantPad2d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "CircularPad1d",
    "CircularPad2d",
]

_pad_pair = _ntuple(2, "_pad_pair")
_pad_quad = _ntuple(4, "_pad_quad")


class _ConstantPadNd(Module):
    def __init__(self, padding, value):
        super().__init__()
        self.padding = self._expand(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with a constant value.

    Args:
        padding (int or tuple): the padding (left, right).
        value (float): the fill value.
    """

    _expand = staticmethod(_pad_pair)


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dims with a constant value.

    Args:
        padding (int or tuple): the padding on each side.
        value (float): the fill value.
    """

    _expand = staticmethod(_pad_quad)


class ZeroPad1d(ConstantPad1d):
    """Pads the last dim with zeros.

    Args:
        padding (int or tuple): the padding on each side.
    """

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last two dims with zeros.

    Args:
        padding (int or tuple): the padding on each side.
    """

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class _ModePadNd(Module):
    def __init__(self, padding):
        super().__init__()
        self.padding = self._expand(padding)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_ModePadNd):
    """Pads the last dim with its reflection (edge not repeated).

    Args:
        padding (int or tuple): the padding on each side.
    """

    _expand, _mode = staticmethod(_pad_pair), "reflect"


class ReflectionPad2d(_ModePadNd):
    """Pads the last two dims with their reflection (edge not repeated).

    Args:
        padding (int or tuple): the padding on each side.
    """

    _expand, _mode = staticmethod(_pad_quad), "reflect"


class ReplicationPad1d(_ModePadNd):
    """Pads the last dim by repeating its edge values.

    Args:
        padding (int or tuple): the padding on each side.
    """

    _expand, _mode = staticmethod(_pad_pair), "replicate"


class ReplicationPad2d(_ModePadNd):
    """Pads the last two dims by repeating their edge values.

    Args:
        padding (int or tuple): the padding on each side.
    """

    _expand, _mode = staticmethod(_pad_quad), "replicate"


class CircularPad1d(_ModePadNd):
    """Pads the last dim by wrapping around.

    Args:
        padding (int or tuple): the padding on each side.
    """

    _expand, _mode = staticmethod(_pad_pair), "circular"


class CircularPad2d(_ModePadNd):
    """Pads the last two dims by wrapping around.

    Args:
        padding (int or tuple): the padding on each side.
    """

    _expand, _mode = staticmethod(_pad_quad), "circular"
