"""Parametrizations (torch.nn.utils.parametrize): a tensor of a module
computed on each access from stored "original" tensors by a chain of modules.

As in PyTorch, registering a parametrization on ``module.weight`` swaps the
module's class for a subclass ``Parametrized<Class>`` whose property
``weight`` evaluates ``module.parametrizations.weight``, a
ParametrizationList holding the parametrization modules and the original
tensor(s) as ``original`` (or ``original0``, ``original1``, ... when
``right_inverse`` returns several); state_dict keys follow, e.g.
``parametrizations.weight.original``.
"""

import collections.abc
from contextlib import contextmanager

from ..._rumus import Tensor
from ...autograd import no_grad
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = [
    "cached",
    "ParametrizationList",
    "register_parametrization",
    "is_parametrized",
    "remove_parametrizations",
    "type_before_parametrizations",
    "transfer_parametrizations_and_params",
]

_cache_enabled = 0
_cache = {}


@contextmanager
def cached():
    """Within this context each parametrized tensor is computed once, on its
    first access, and reused (one forward computes a shared weight once)."""
    global _cache_enabled, _cache
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module, name, x):
    if isinstance(x, Parameter):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x)


def _maybe_set(dest, src):
    """Puts src's values into dest in place (dest keeps its identity), as PyTorch's set_."""
    if dest is src:
        return
    if tuple(dest.shape) != tuple(src.shape) or dest.dtype != src.dtype:
        raise RuntimeError(
            "rumus cannot change a tensor's shape or dtype in place (no Tensor.set_): the "
            f"original has shape {tuple(dest.shape)} and dtype {dest.dtype}, the new value "
            f"shape {tuple(src.shape)} and dtype {src.dtype}"
        )
    dest.copy_(src)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the original tensor(s).

    The originals are ``original``, or ``original0``, ... when the first
    parametrization has a ``right_inverse`` returning several tensors.

    Args:
        modules: the parametrization modules.
        original: the tensor being parametrized.
        unsafe: allow a parametrization that changes the shape or dtype.
    """

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = tuple(original.shape), original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, Tensor) and not isinstance(new, collections.abc.Sequence):
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(new).__name__}"
            )
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}"
                )
            with no_grad():
                if tuple(new.shape) == original_shape:
                    _maybe_set(original, new)
                else:
                    original = _like(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors "
                        f"(list, tuple...). Got element {i} of the sequence with type "
                        f"{type(originali).__name__}."
                    )
                _register_parameter_or_buffer(self, f"original{i}", _like(original, originali))
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if z.dtype != original_dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized dtype: {original_dtype}\nparametrized dtype: {z.dtype}"
                )
            if tuple(z.shape) != original_shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized shape: {original_shape}\nparametrized shape: {tuple(z.shape)}"
                )

    def right_inverse(self, value):
        """Sets the original(s) so that the parametrized tensor becomes ``value``
        (through each parametrization's ``right_inverse``, last first)."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(
                        f"parametrization {type(module).__name__} does not implement right_inverse."
                    )
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(
                        f"`right_inverse` should return a tensor. Got {type(value).__name__}"
                    )
                _maybe_set(self.original, value)
            else:
                if not isinstance(value, collections.abc.Sequence) or len(value) != self.ntensors:
                    raise ValueError(
                        f"'right_inverse' must return a sequence of {self.ntensors} tensors. "
                        f"Got {type(value).__name__}"
                    )
                for i, v in enumerate(value):
                    _maybe_set(getattr(self, f"original{i}"), v)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _like(original, value):
    """A new Parameter (or buffer tensor) holding value, with original's requires_grad."""
    value = value.detach().clone()
    if isinstance(original, Parameter):
        return Parameter(value, original.requires_grad)
    return value.requires_grad_(original.requires_grad)


def _default_deepcopy(self, memo):
    from copy import deepcopy

    obj = memo.get(id(self))
    if obj is not None:
        return obj
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = deepcopy(self.__dict__, memo)
    return replica


def _getstate(self):
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(). "
        "See: https://pytorch.org/tutorials/beginner/saving_loading_models.html"
        "#saving-loading-model-for-inference"
    )


def _inject_new_class(module):
    cls = module.__class__
    dct = {"__getstate__": _getstate}
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = _default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), dct)


def _inject_property(module, tensor_name):
    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(module), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Makes ``module.<tensor_name>`` the output of ``parametrization`` on the stored original.

    A second registration on the same name chains after the first.

    Args:
        module: the module holding the tensor.
        tensor_name: the name of the parameter or buffer.
        parametrization: the module computing the tensor from the original.
        unsafe: allow a change of shape or dtype.

    Returns:
        ``module``.
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
            if x.dtype != y.dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    "unless the `unsafe` flag is enabled.\n"
                    f"module.{tensor_name}.dtype: {y.dtype}\n"
                    f"parametrization(module.{tensor_name}).dtype: {x.dtype}"
                )
            if tuple(x.shape) != tuple(y.shape):
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    "unless the `unsafe` flag is enabled.\n"
                    f"module.{tensor_name}.shape: {tuple(y.shape)}\n"
                    f"parametrization(module.{tensor_name}).shape: {tuple(x.shape)}"
                )
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(z, Tensor):
                        raise ValueError(
                            "parametrization.right_inverse must return a tensor. Got: "
                            f"{type(z).__name__}"
                        )
                    if z.dtype != y.dtype or tuple(z.shape) != tuple(y.shape):
                        raise ValueError(
                            "The tensor returned by parametrization.right_inverse must have the "
                            "same dtype and shape as module."
                            f"{tensor_name}"
                        )
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element "
            f"with name '{tensor_name}'"
        )
    return module


def is_parametrized(module, tensor_name=None):
    """Whether ``module`` has a parametrization (on ``tensor_name``, if given).

    Args:
        module: the module.
        tensor_name: a tensor name, or None for any.

    Returns:
        A bool.
    """
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Removes the parametrizations of ``tensor_name``: it becomes a plain parameter (or buffer).

    Args:
        module: the module holding the tensor.
        tensor_name: the name of the parametrized tensor.
        leave_parametrized: keep the current parametrized value (True) or the original (False).

    Returns:
        ``module``.
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                if tuple(t.shape) == tuple(original.shape) and t.dtype == original.dtype:
                    _maybe_set(original, t)
                else:
                    original = _like(original, t)
    else:
        if not leave_parametrized:
            raise ValueError(
                "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                "parametrized in terms of a sequence of tensors."
            )
        with no_grad():
            t = getattr(module, tensor_name)
        # A parameter when the originals were parameters (PyTorch checks the first).
        original = _like(plist.original0, t)
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class before parametrizations were registered.

    Args:
        module: the module.

    Returns:
        The class.
    """
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Registers ``from_module``'s parametrizations on ``to_module``, sharing the originals.

    Args:
        from_module: the parametrized module.
        to_module: the module to parametrize.
        tensor_name: the tensor whose parametrizations move (None: every parametrized tensor).

    Returns:
        ``to_module``.
    """
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        src = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        for fn in src:
            register_parametrization(to_module, name, fn)
        dst = to_module.parametrizations[name]
        if src.is_tensor:
            dst.original = src.original
        else:
            for i in range(src.ntensors):
                setattr(dst, f"original{i}", getattr(src, f"original{i}"))
    return to_module
