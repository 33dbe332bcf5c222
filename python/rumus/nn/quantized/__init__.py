"""Quantized modules for inference (``torch.nn.quantized``): :class:`Q8Linear` (weights in
the Q8 block format) here, and the dynamically quantized
:class:`rumus.nn.quantized.dynamic.Linear` in :mod:`rumus.nn.quantized.dynamic`."""

from . import dynamic
from .modules import Q8Linear

__all__ = ["Q8Linear", "dynamic"]
