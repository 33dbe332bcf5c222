"""Neural-network building blocks. Modules and layers arrive with the nn issue."""

from . import functional

__all__ = ["functional"]
