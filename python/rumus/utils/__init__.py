"""Utilities: gradient checkpointing (``rumus.utils.checkpoint``), data loading
(``rumus.utils.data``), DLPack exchange (``rumus.utils.dlpack``) and hook handles
(``rumus.utils.hooks``)."""

from . import checkpoint, data, dlpack, hooks

__all__ = ["checkpoint", "data", "dlpack", "hooks"]
