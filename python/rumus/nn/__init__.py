"""Neural-network building blocks: Module, Parameter, the layers, functional, init and utils."""

from . import functional, init, parallel, quantized, utils
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parameter import Parameter

__all__ = ["Parameter", "functional", "init", "quantized", "utils", *_modules_all]
