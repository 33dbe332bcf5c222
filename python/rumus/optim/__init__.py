"""Optimizers whose per-parameter update is one fused Rust step, and schedulers."""

from . import lr_scheduler  # noqa: E402  (written alongside; needs Optimizer)
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
