"""Upsample (and the UpsamplingNearest2d / UpsamplingBilinear2d shorthands) over F.interpolate."""

from .. import functional as F
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    """Resizes to `size` or by `scale_factor` with F.interpolate's modes.

    Args:
        size (int or tuple, optional): the output spatial size.
        scale_factor (float or tuple, optional): the multiplier of the spatial size.
        mode (str): the interpolation mode (see ``F.interpolate``).
        align_corners (bool, optional): align the corner pixels' centres (linear modes).
        recompute_scale_factor (bool, optional): compute the scale from the output size.
    """

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode="nearest",
        align_corners=None,
        recompute_scale_factor=None,
    ):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self):
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Upsample with mode='nearest'.

    Args:
        size (int or tuple, optional): the output spatial size.
        scale_factor (float or tuple, optional): the multiplier of the spatial size.
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample with mode='bilinear' and align_corners=True.

    Args:
        size (int or tuple, optional): the output spatial size.
        scale_factor (float or tuple, optional): the multiplier of the spatial size.
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
