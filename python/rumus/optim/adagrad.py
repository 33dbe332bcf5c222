"""Adagrad under PyTorch's module path (torch.optim.adagrad); rumus defines it in rmsprop.py."""

from .rmsprop import Adagrad

__all__ = ["Adagrad"]
