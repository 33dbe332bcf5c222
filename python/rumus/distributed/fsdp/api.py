"""FSDP's option types (PyTorch's ``torch.distributed.fsdp`` API enums and configs)."""

from dataclasses import dataclass
from enum import Enum, auto

__all__ = [
    "BackwardPrefetch",
    "FullStateDictConfig",
    "ShardedStateDictConfig",
    "ShardingStrategy",
    "StateDictConfig",
    "StateDictType",
]


class ShardingStrategy(Enum):
    """How parameters, gradients and optimizer state are sharded. rumus implements
    ``FULL_SHARD`` (everything sharded, parameters gathered per unit for its forward and its
    backward); the others raise NotImplementedError."""

    FULL_SHARD = auto()
    SHARD_GRAD_OP = auto()
    NO_SHARD = auto()
    HYBRID_SHARD = auto()
    _HYBRID_SHARD_ZERO2 = auto()


class BackwardPrefetch(Enum):
    """Accepted for compatibility; rumus gathers each unit's parameters when its backward
    starts (no prefetch)."""

    BACKWARD_PRE = auto()
    BACKWARD_POST = auto()


class StateDictType(Enum):
    """What ``state_dict()`` of an FSDP model returns: ``FULL_STATE_DICT`` (the original
    module's keys and full tensors), ``SHARDED_STATE_DICT`` (the original keys, each value a
    :class:`~rumus.distributed.ShardedTensor` holding this rank's piece) or
    ``LOCAL_STATE_DICT`` (the flat shards under their own names)."""

    FULL_STATE_DICT = auto()
    LOCAL_STATE_DICT = auto()
    SHARDED_STATE_DICT = auto()


@dataclass
class StateDictConfig:
    """Base of the state-dict configs.

    Args:
        offload_to_cpu (bool): return CPU tensors.
    """

    offload_to_cpu: bool = False


@dataclass
class FullStateDictConfig(StateDictConfig):
    """Options of ``FULL_STATE_DICT``.

    Args:
        offload_to_cpu (bool): return CPU tensors.
        rank0_only (bool): only rank 0 gets the state dict (the others get an empty dict);
            loading then reads it on rank 0 only.
    """

    rank0_only: bool = False


@dataclass
class ShardedStateDictConfig(StateDictConfig):
    """Options of ``SHARDED_STATE_DICT``.

    Args:
        offload_to_cpu (bool): return CPU tensors.
    """
