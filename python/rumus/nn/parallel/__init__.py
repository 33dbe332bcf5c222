"""Data parallelism across processes (PyTorch's ``torch.nn.parallel``)."""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
