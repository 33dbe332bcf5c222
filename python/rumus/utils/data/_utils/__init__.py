"""Internals of ``rumus.utils.data`` (collation)."""

from . import collate
