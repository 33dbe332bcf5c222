"""The legacy spectral normalization (torch.nn.utils.spectral_norm): a
forward pre-hook sets ``module.<name>`` to ``<name>_orig / sigma``, sigma
estimated by power iteration with buffers ``<name>_u`` and ``<name>_v``.
PyTorch recommends ``nn.utils.parametrizations.spectral_norm``, which rumus
has too."""

from ... import _rumus
from ...autograd import no_grad
from .. import functional as F
from ..parameter import Parameter
from .parametrizations import _mv, _transposed_conv

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


class SpectralNorm:
    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                # v first, then u (the buffers are updated in place).
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(_mv(weight_mat.T, u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(_mv(weight_mat, v), dim=0, eps=self.eps))
            u, v = u.clone(), v.clone()
        sigma = (u * _mv(weight_mat, v)).sum()
        return weight / sigma

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two spectral_norm hooks on the same parameter {name}"
                )
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            kw = dict(dtype=weight.dtype, device=weight.device)
            u = F.normalize(_rumus.randn(h, **kw), dim=0, eps=fn.eps)
            v = F.normalize(_rumus.randn(w, **kw), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # A plain attribute until the first forward recomputes it.
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divides parameter ``name`` by its largest singular value before each forward.

    The parameter is kept as ``<name>_orig``; the singular value is estimated with
    ``n_power_iterations`` power-iteration steps in training mode.

    Args:
        module: the module to modify.
        name: the name of the weight parameter.
        n_power_iterations: the power-iteration steps per forward.
        eps: added to norms for numerical stability.
        dim: the dimension moved first when the weight is reshaped to a matrix (default 1
            for transposed convolutions, else 0).

    Returns:
        ``module``, with the hook registered.
    """
    if dim is None:
        dim = 1 if _transposed_conv(module) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undoes ``spectral_norm``: ``name`` becomes a plain parameter again.

    Args:
        module: the module holding the reparameterized weight.
        name: the name of the weight parameter.

    Returns:
        ``module``.

    Raises:
        ValueError: if ``name`` has no spectral_norm.
    """
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
