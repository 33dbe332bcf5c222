"""Distributed optimizers (PyTorch's ``torch.distributed.optim``)."""

from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
