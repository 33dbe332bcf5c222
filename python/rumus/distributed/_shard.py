"""ShardedTensor: one rank's contiguous piece of a tensor that is split across ranks."""

from .._rumus import Tensor

__all__ = ["ShardedTensor"]


class ShardedTensor:
    """This rank's piece of a tensor of shape ``size`` whose elements (in row-major order)
    are split across ranks: the piece holds elements ``offset`` to ``offset + numel`` of the
    flattened tensor. FSDP's ``SHARDED_STATE_DICT`` values are ShardedTensors, and
    ``rumus.distributed.checkpoint`` saves and loads them on any number of ranks.

    Args:
        local (Tensor): this rank's piece, one-dimensional.
        size (tuple[int, ...]): the full tensor's shape.
        offset (int): where the piece starts in the flattened full tensor.
    """

    def __init__(self, local, size, offset):
        if not isinstance(local, Tensor) or local.dim() != 1:
            raise TypeError("ShardedTensor: local must be a one-dimensional Tensor")
        self._local = local
        self._size = tuple(int(s) for s in size)
        self.offset = int(offset)
        total = 1
        for s in self._size:
            total *= s
        if self.offset < 0 or self.offset + local.numel() > total:
            raise ValueError(
                f"ShardedTensor: elements {self.offset}..{self.offset + local.numel()} do not "
                f"fit a tensor of shape {self._size}"
            )

    def local_tensor(self):
        """This rank's piece (1-D), sharing memory with the sharded parameter."""
        return self._local

    def size(self):
        """The full tensor's shape."""
        return self._size

    @property
    def shape(self):
        return self._size

    @property
    def dtype(self):
        return self._local.dtype

    @property
    def device(self):
        return self._local.device

    def __repr__(self):
        return (
            f"ShardedTensor(size={self._size}, offset={self.offset}, "
            f"local_numel={self._local.numel()}, dtype={self.dtype})"
        )
