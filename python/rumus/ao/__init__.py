"""``torch.ao`` counterpart: :mod:`rumus.ao.quantization`."""

from . import quantization

__all__ = ["quantization"]
