"""Optimizers whose per-parameter update is one fused Rust step, and schedulers."""

# adagrad ... radam: PyTorch's module paths (torch.optim.adamw.AdamW) for the
# optimizers rumus groups by family in adam.py and rmsprop.py.
from . import adagrad, adamax, adamw, lr_scheduler, nadam, radam  # noqa: F401
from .adam import Adam, Adamax, AdamW, NAdam, RAdam
from .optimizer import Optimizer
from .rmsprop import Adagrad, RMSprop
from .sgd import SGD

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
    "lr_scheduler",
]
