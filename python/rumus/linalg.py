"""rumus.linalg: PyTorch's torch.linalg functions (a start: cross)."""

from ._rumus import Tensor

__all__ = ["cross"]


def cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along ``dim`` (default -1, unlike the deprecated
    default of ``rumus.cross``); the other dims broadcast."""
    return Tensor.cross(input, other, dim=dim)
