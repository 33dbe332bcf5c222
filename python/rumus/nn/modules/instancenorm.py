"""InstanceNorm layers under PyTorch's module path (torch.nn.modules.instancenorm);
rumus keeps them with the other norms in normalization.py."""

from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "_InstanceNorm"]
