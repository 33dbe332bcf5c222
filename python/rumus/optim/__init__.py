"""Optimizers whose per-parameter update is one fused Rust step, and schedulers."""

# adagrad ... radam: PyTorch's module paths (torch.optim.adamw.AdamW) for the
# optimizers rumus groups by family in adam.py and rmsprop.py.
from . import adagrad, adamax, adamw, lr_scheduler, nadam, radam, swa_utils  # noqa: F401
from .adadelta import Adadelta
from .adam import Adam, Adamax, AdamW, NAdam, RAdam
from .asgd import ASGD
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import Adagrad, RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "Adamax",
    "NAdam",
    "RAdam",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "ASGD",
    "Rprop",
    "SparseAdam",
    "LBFGS",
    "lr_scheduler",
    "swa_utils",
]
