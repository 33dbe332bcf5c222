"""Utilities: gradient checkpointing (``rumus.utils.checkpoint``)."""

from . import checkpoint

__all__ = ["checkpoint"]
