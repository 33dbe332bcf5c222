"""Distributed training on MPI (PyTorch's ``torch.distributed``): process groups, collectives
and point-to-point communication between processes started by ``mpirun``. See
``distributed_c10d`` for the memory and pickle notes."""

from .distributed_c10d import *  # noqa: F401,F403
from .distributed_c10d import __all__  # noqa: F401
