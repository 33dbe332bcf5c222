"""Distributed training on MPI (PyTorch's ``torch.distributed``): process groups, collectives
and point-to-point communication between processes started by ``mpirun``. See
``distributed_c10d`` for the memory and pickle notes. Subpackages: ``optim``
(ZeroRedundancyOptimizer), ``fsdp`` (FullyShardedDataParallel), ``checkpoint`` (sharded
checkpoints)."""

from . import distributed_c10d as _c10d
from ._shard import ShardedTensor
from .distributed_c10d import *  # noqa: F401,F403

__all__ = [*_c10d.__all__, "ShardedTensor"]
