"""Fully sharded data parallelism (PyTorch's ``torch.distributed.fsdp``); see
``fully_sharded_data_parallel`` for how parameters are gathered, freed and reduce-scattered."""

from .api import (
    BackwardPrefetch,
    CPUOffload,
    FullStateDictConfig,
    MixedPrecision,
    ShardedStateDictConfig,
    ShardingStrategy,
    StateDictConfig,
    StateDictType,
)
from .fully_sharded_data_parallel import FullyShardedDataParallel

__all__ = [
    "BackwardPrefetch",
    "CPUOffload",
    "FullStateDictConfig",
    "FullyShardedDataParallel",
    "MixedPrecision",
    "ShardedStateDictConfig",
    "ShardingStrategy",
    "StateDictConfig",
    "StateDictType",
]
