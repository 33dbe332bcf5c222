"""Dropout layers: active in training mode, the identity in eval mode."""

from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout2d"]


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zeroes each element with probability p and scales the rest by 1 / (1 - p).

    Args:
        p (float): the probability of zeroing an element.
        inplace (bool): modify the input in place.
    """

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zeroes whole channels of (N, C, H, W) or (C, H, W) input.

    Args:
        p (float): the probability of zeroing a channel.
        inplace (bool): modify the input in place.
    """

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)
