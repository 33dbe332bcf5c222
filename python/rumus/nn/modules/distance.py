"""CosineSimilarity and PairwiseDistance."""

from .. import functional as F
from .module import Module

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """Cosine of the angle between x1 and x2 along dim (norms clamped below by eps).

    Args:
        dim (int): the dimension.
        eps (float): the smallest norm used in the division.
    """

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """p-norm of x1 - x2 + eps along the last dim.

    Args:
        p (float): the norm's exponent.
        eps (float): added to the difference.
        keepdim (bool): keep the last dimension with size 1.
    """

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
