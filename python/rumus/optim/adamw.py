"""AdamW under PyTorch's module path (torch.optim.adamw); rumus defines it in adam.py."""

from .adam import AdamW

__all__ = ["AdamW"]
