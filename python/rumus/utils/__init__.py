"""Utilities: gradient checkpointing (``rumus.utils.checkpoint``) and data loading
(``rumus.utils.data``)."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
