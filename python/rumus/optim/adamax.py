"""Adamax under PyTorch's module path (torch.optim.adamax); rumus defines it in adam.py."""

from .adam import Adamax

__all__ = ["Adamax"]
