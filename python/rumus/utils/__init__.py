"""Utilities: gradient checkpointing (``rumus.utils.checkpoint``) and data loading
(``rumus.utils.data``)."""

from . import checkpoint, data, hooks

__all__ = ["checkpoint", "data", "hooks"]
