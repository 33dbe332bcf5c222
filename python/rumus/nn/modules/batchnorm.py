"""BatchNorm layers under PyTorch's module path (torch.nn.modules.batchnorm);
rumus keeps them with the other norms in normalization.py."""

from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm, _NormBase

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "_BatchNorm", "_NormBase"]
