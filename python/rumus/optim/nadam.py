"""NAdam under PyTorch's module path (torch.optim.nadam); rumus defines it in adam.py."""

from .adam import NAdam

__all__ = ["NAdam"]
