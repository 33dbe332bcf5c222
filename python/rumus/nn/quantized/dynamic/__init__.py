"""Dynamically quantized modules (``torch.nn.quantized.dynamic``)."""

from ..modules import DynamicLinear as Linear

__all__ = ["Linear"]
