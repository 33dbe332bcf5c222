"""Utilities: gradient checkpointing (``rumus.utils.checkpoint``), data loading
(``rumus.utils.data``) and DLPack exchange (``rumus.utils.dlpack``)."""

from . import checkpoint, data, dlpack

__all__ = ["checkpoint", "data", "dlpack"]
