"""FSDP's option types (PyTorch's ``torch.distributed.fsdp`` API enums and configs)."""

from dataclasses import dataclass
from enum import Enum, auto

__all__ = [
    "BackwardPrefetch",
    "CPUOffload",
    "FullStateDictConfig",
    "MixedPrecision",
    "ShardedStateDictConfig",
    "ShardingStrategy",
    "StateDictConfig",
    "StateDictType",
]


class ShardingStrategy(Enum):
    """How parameters, gradients and optimizer state are sharded across the ranks.

    ``FULL_SHARD``: parameters, gradients and optimizer state are sharded; each unit gathers
    its parameters for its forward, frees them, and gathers them again in backward
    (recomputing its forward). ``SHARD_GRAD_OP``: gradients and optimizer state are sharded;
    the parameters gathered for a unit's forward stay until its backward (no second gather,
    no recompute; more memory). ``NO_SHARD``: nothing is sharded; gradients are all-reduced
    (DistributedDataParallel's scheme). ``HYBRID_SHARD`` / ``_HYBRID_SHARD_ZERO2``: as
    ``FULL_SHARD`` / ``SHARD_GRAD_OP`` within a group of ranks (by default the ranks of one
    machine), replicated across the groups (gradients are also averaged over the replicas);
    ``process_group`` may give the pair ``(shard group, replicate group)``.
    """

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


@dataclass
class MixedPrecision:
    """Mixed-precision training for FSDP: the sharded parameters (what the optimizer updates)
    stay in full precision; each unit computes with its gathered parameters cast to
    ``param_dtype``, and gradients are reduced in ``reduce_dtype``.

    Args:
        param_dtype (dtype, optional): the dtype of the parameters during forward and
            backward (the root unit also casts its floating-point tensor inputs to it).
        reduce_dtype (dtype, optional): the dtype of the gradient reduction (default:
            ``param_dtype``). MPI has no 16-bit float sum: for ``bfloat16``/``float16`` the
            gradients are rounded to that dtype before and after a float32 reduction.
        buffer_dtype (dtype, optional): the dtype the module's floating-point buffers are
            cast to.
        keep_low_precision_grads (bool): must be False (gradients are given to the shards in
            their own dtype).
        cast_forward_inputs (bool): every unit (not only the root) casts its floating-point
            tensor inputs to ``param_dtype``.
        cast_root_forward_inputs (bool): the root unit casts its inputs to ``param_dtype``.
    """

    param_dtype: object = None
    reduce_dtype: object = None
    buffer_dtype: object = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True


@dataclass
class CPUOffload:
    """Keeps the sharded parameters (and so their gradients and the optimizer state) in
    host memory: a unit's parameters are gathered on the host and moved to the compute
    device for its forward and backward, and the reduced gradients come back to the host.
    With CPU tensors it changes nothing.

    Args:
        offload_params (bool): offload the sharded parameters.
    """

    offload_params: bool = False
