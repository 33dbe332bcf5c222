"""RAdam under PyTorch's module path (torch.optim.radam); rumus defines it in adam.py."""

from .adam import RAdam

__all__ = ["RAdam"]
