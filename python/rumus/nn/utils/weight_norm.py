"""The legacy weight normalization (torch.nn.utils.weight_norm): a forward
pre-hook recomputes ``module.<name>`` from parameters ``<name>_g`` and
``<name>_v``. Deprecated in PyTorch in favor of
``nn.utils.parametrizations.weight_norm``, which rumus has too."""

import warnings

from ..parameter import Parameter
from .parametrizations import _norm_except_dim, _weight_norm

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name, dim):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two weight_norm hooks on the same parameter {name}"
                )
        if dim is None:
            dim = -1
        weight = getattr(module, name)
        if dim < -1:
            dim += weight.dim()
        fn = WeightNorm(name, dim)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Reparameterizes parameter ``name`` as ``g * v / ||v||``, recomputed before each forward.

    The new parameters are ``name_g`` and ``name_v``. Deprecated: warns (FutureWarning).

    Args:
        module: the module to modify.
        name: the name of the weight parameter.
        dim: the dimension kept by the norm (the norm is over every other dim); None: the
            norm of the whole tensor.

    Returns:
        ``module``, with the hook registered.
    """
    warnings.warn(
        "`torch.nn.utils.weight_norm` is deprecated in favor of "
        "`torch.nn.utils.parametrizations.weight_norm`.",
        FutureWarning,
        stacklevel=2,
    )
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Undoes ``weight_norm``: ``name`` becomes a plain parameter again.

    Args:
        module: the module holding the reparameterized weight.
        name: the name of the weight parameter.

    Returns:
        ``module``.

    Raises:
        ValueError: if ``name`` has no weight_norm.
    """
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
