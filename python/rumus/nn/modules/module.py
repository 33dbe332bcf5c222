"""Module: the base class of every layer and model (PyTorch's ``torch.nn.Module`` API)."""

import itertools
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from ... import _rumus
from ...autograd.grad_mode import no_grad
from ...utils.hooks import RemovableHandle
from ..parameter import Parameter
from ._hooks import (
    _HOOK_DICTS,
    _ModuleHooks,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)

__all__ = [
    "Module",
    "RemovableHandle",
    "register_module_forward_hook",
    "register_module_forward_pre_hook",
    "register_module_full_backward_hook",
    "register_module_full_backward_pre_hook",
]

_Tensor = _rumus.Tensor
# What train(), to(), apply()... return: the module itself, typed as its own class.
_M = TypeVar("_M", bound="Module")


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _typename(value):
    return "rumus.Tensor" if type(value) is _Tensor else type(value).__name__


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class _Converter:
    """Wraps the function given to ``_apply`` so that a tensor shared by several modules (tied
    weights) is converted once and stays shared: rumus can't swap a Parameter's data in place, so
    changed Parameters are replaced by new Parameter objects, one per original."""

    def __init__(self, fn):
        self.fn = fn
        # id(original) -> (original, converted); the original is kept so ids stay unique
        self.done = {}

    def __call__(self, t):
        hit = self.done.get(id(t))
        if hit is None:
            hit = self.done[id(t)] = (t, self.fn(t))
        return hit[1]

    def parameter(self, p):
        hit = self.done.get(id(p))
        if hit is not None:
            return hit[1]
        with no_grad():
            data = self.fn(p)
            new = p if data is p else Parameter(data, p.requires_grad)
            if new is not p and p.grad is not None:
                new.grad = self.fn(p.grad)
        self.done[id(p)] = (p, new)
        return new


def _parse_to(*args, **kwargs):
    """(device, dtype, non_blocking) from the arguments of ``Module.to``."""
    allowed = {"device", "dtype", "non_blocking", "copy"}  # rumus has no memory formats
    bad = set(kwargs) - allowed
    if bad:
        raise TypeError(f"to() got an unexpected keyword argument '{sorted(bad)[0]}'")
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    non_blocking = kwargs.get("non_blocking", False)
    rest = list(args)
    if rest and isinstance(rest[0], _Tensor):
        if len(rest) > 2 or device is not None or dtype is not None:
            raise TypeError(
                "to() received an invalid combination of arguments: a tensor argument "
                "can only be followed by non_blocking"
            )
        t = rest.pop(0)
        device, dtype = t.device, t.dtype
        if rest:
            non_blocking = rest.pop(0)
    else:
        if rest and isinstance(rest[0], _rumus.dtype):
            dtype = rest.pop(0)
        elif rest and (isinstance(rest[0], (str, _rumus.device, int)) or rest[0] is None):
            device = rest.pop(0)
            if rest and isinstance(rest[0], _rumus.dtype):
                dtype = rest.pop(0)
        if rest and isinstance(rest[0], bool):
            non_blocking = rest.pop(0)
        if rest:
            raise TypeError(
                f"to() received an invalid combination of arguments: got {args!r}; "
                "expected (device=None, dtype=None, non_blocking=False), "
                "(dtype, non_blocking=False) or (tensor, non_blocking=False)"
            )
    if device is not None and not isinstance(device, _rumus.device):
        device = _rumus.device(device)
    if dtype is not None and not isinstance(dtype, _rumus.dtype):
        raise TypeError(f"to(): dtype must be a rumus.dtype, got {type(dtype).__name__}")
    return device, dtype, non_blocking


class Module(_ModuleHooks):
    """Base class for all neural-network modules; subclasses define ``forward``.

    Assigning a Parameter, a Module or (for a name registered with ``register_buffer``) a Tensor
    as an attribute registers it; ``parameters()``, ``state_dict()``, ``to()``, ``train()`` ...
    then walk the tree of submodules.
    """

    dump_patches = False
    _version = 1
    training: bool

    def __init__(self) -> None:
        # object.__setattr__: our __setattr__ needs these dicts to exist.
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_modules", {})
        # OrderedDicts: hook handles refer to them weakly (a plain dict can't be weakly referenced).
        self._init_hooks()

    def forward(self, *input):
        """Defines the computation of the module; call the module (``m(x)``), not ``forward``.

        Args:
            *input: the inputs, as the subclass defines them.

        Returns:
            The outputs, as the subclass defines them.
        """
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    # ---- registration -------------------------------------------------------------------

    def register_buffer(self, name: str, tensor: Any, persistent: bool = True) -> None:
        """Adds a buffer: state that is not a parameter (e.g. running statistics). Non-persistent
        buffers are left out of ``state_dict``.

        Args:
            name (str): the attribute name.
            tensor (Tensor or None): the buffer.
            persistent (bool): include the buffer in the state_dict.
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, _Tensor):
            raise TypeError(
                f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                "(rumus Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Any) -> None:
        """Adds a parameter (a Parameter, or None for an absent optional one such as a bias).

        Args:
            name (str): the attribute name.
            param (Parameter or None): the parameter.
        """
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter", self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                "(rumus.nn.Parameter or None required)"
            )
        self._parameters[name] = param

    def add_module(self, name: str, module: Any) -> None:
        """Adds a child module, reachable as attribute ``name``.

        Args:
            name (str): the attribute name.
            module (Module or None): the child.
        """
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        self._check_name(name, "module", self._modules)
        self._modules[name] = module

    register_module = add_module

    def _check_name(self, name, kind, own):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
        if hasattr(self, name) and name not in own:
            raise KeyError(f"attribute '{name}' already exists")

    def get_submodule(self, target: str) -> "Module":
        """The submodule at dotted path ``target`` ("" is self).

        Args:
            target (str): the dotted path.

        Returns:
            Module: the submodule.
        """
        mod = self
        if target == "":
            return mod
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target`` (e.g. "fc.weight").

        Args:
            target (str): the dotted path.

        Returns:
            Parameter: the parameter.
        """
        return self._get_member(target, Parameter, "an nn.Parameter")

    def get_buffer(self, target: str) -> Any:
        """The buffer at dotted path ``target``.

        Args:
            target (str): the dotted path.

        Returns:
            Tensor: the buffer.
        """
        return self._get_member(target, None, "a buffer")

    def _get_member(self, target, cls, what):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        value = getattr(mod, name)
        ok = isinstance(value, cls) if cls is not None else name in mod._buffers
        if not ok:
            raise AttributeError("`" + name + "` is not " + what)
        return value

    def get_extra_state(self):
        """Override (with ``set_extra_state``) to put picklable extra state in ``state_dict``."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called."
        )

    def set_extra_state(self, state):
        """Restores the state returned by ``get_extra_state`` from a state_dict.

        Args:
            state: the object ``get_extra_state`` returned when the state_dict was made.
        """
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called."
        )

    def _has_extra_state(self):
        return type(self).get_extra_state is not Module.get_extra_state

    # ---- attribute protocol -------------------------------------------------------------

    def __getattr__(self, name):
        # Only reached when normal lookup fails: look in the registries.
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            members = d.get(registry)
            if members is not None and name in members:
                return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__

        def remove_from(*registries):
            for r in registries:
                if name in r:
                    if isinstance(r, set):
                        r.discard(name)
                    else:
                        del r[name]

        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as parameter '{name}' "
                    "(rumus.nn.Parameter or None expected)"
                )
            params[name] = None
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(d, self._parameters, self._buffers, self._non_persistent_buffers_set)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as child module '{name}' "
                    "(rumus.nn.Module or None expected)"
                )
            modules[name] = None
            return
        buffers = d.get("_buffers")
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, _Tensor):
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as buffer '{name}' "
                    "(rumus.Tensor or None expected)"
                )
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = itertools.chain(
            dir(type(self)), self.__dict__, self._parameters, self._modules, self._buffers
        )
        return sorted({k for k in keys if not k[0].isdigit()})

    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in _HOOK_DICTS:
            self.__dict__.setdefault(name, OrderedDict())

    # ---- iteration over members ---------------------------------------------------------

    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (module_prefix + "." if module_prefix else "") + name, value

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Iterator over the parameters (each shared parameter once).

        Args:
            recurse (bool): include submodules.

        Returns:
            Iterator[Parameter]: the parameters.
        """
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """Iterator over (dotted name, parameter), in registration order.

        Args:
            prefix (str): prepended to every name.
            recurse (bool): include submodules.
            remove_duplicate (bool): yield a shared object once.

        Returns:
            Iterator[tuple[str, Parameter]]: the pairs.
        """
        yield from self._named_members(
            lambda m: m._parameters.items(), prefix, recurse, remove_duplicate
        )

    def buffers(self, recurse: bool = True) -> Iterator[Any]:
        """Iterates over the module's buffers.

        Args:
            recurse (bool): include the buffers of submodules.

        Returns:
            Iterator[Tensor]: each buffer once.
        """
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Any]]:
        """Iterates over the module's buffers with their dotted names.

        Args:
            prefix (str): prepended to every name.
            recurse (bool): include the buffers of submodules.
            remove_duplicate (bool): yield a buffer shared by several names once.

        Returns:
            Iterator[tuple[str, Tensor]]: (name, buffer) pairs.
        """
        yield from self._named_members(
            lambda m: m._buffers.items(), prefix, recurse, remove_duplicate
        )

    def children(self) -> Iterator["Module"]:
        """Iterates over the immediate submodules.

        Returns:
            Iterator[Module]: each child once.
        """
        for _, m in self.named_children():
            yield m

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        """Iterates over the immediate submodules with their names.

        Returns:
            Iterator[tuple[str, Module]]: (name, child) pairs.
        """
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def modules(self) -> Iterator["Module"]:
        """Iterates over this module and all its submodules, depth first.

        Returns:
            Iterator[Module]: each module once.
        """
        for _, m in self.named_modules():
            yield m

    def named_modules(
        self, memo: Any = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, "Module"]]:
        """Iterator over (dotted name, module) for self ("" or ``prefix``) and all submodules.

        Args:
            memo (set, optional): modules already visited.
            prefix (str): prepended to every name.
            remove_duplicate (bool): yield a shared object once.

        Returns:
            Iterator[tuple[str, Module]]: the pairs.
        """
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(
                    memo, prefix + ("." if prefix else "") + name, remove_duplicate
                )

    # ---- modes and gradients ------------------------------------------------------------

    def train(self: _M, mode: bool = True) -> _M:
        """Sets training mode on self and all submodules; returns self.

        Args:
            mode (bool): True for training mode, False for evaluation.

        Returns:
            Module: self.
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self: _M) -> _M:
        """Sets the module and its submodules to evaluation mode (``train(False)``).

        Returns:
            Module: self.
        """
        return self.train(False)

    def requires_grad_(self: _M, requires_grad: bool = True) -> _M:
        """Sets ``requires_grad`` on every parameter.

        Args:
            requires_grad (bool): whether autograd should record operations on them.

        Returns:
            Module: self.
        """
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the gradients of all parameters: to None (default), or zero-filled in place.

        Args:
            set_to_none (bool): set ``.grad`` to None instead of filling it with zeros.
        """
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                with no_grad():
                    p.grad.requires_grad_(False).zero_()

    def apply(self: _M, fn: Callable[["Module"], None]) -> _M:
        """Calls ``fn`` on every submodule (children first) and on self; returns self.

        Args:
            fn (callable): called with each module.

        Returns:
            Module: self.
        """
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ---- device and dtype ---------------------------------------------------------------

    def _apply(self, fn, recurse=True):
        """Replaces every parameter, its grad and every buffer ``t`` by ``fn(t)``.

        rumus can't change a tensor's data in place (no ``p.data = x``), so a parameter that
        ``fn`` changes becomes a new Parameter object (same name and requires_grad, converted
        grad); one that ``fn`` returns unchanged stays the same object. Tied parameters stay tied.
        """
        fn = fn if isinstance(fn, _Converter) else _Converter(fn)
        if recurse:
            for module in self.children():
                module._apply(fn)
        for name, p in self._parameters.items():
            if p is not None:
                self._parameters[name] = fn.parameter(p)
        for name, b in self._buffers.items():
            if b is not None:
                self._buffers[name] = fn(b)
        return self

    def to(self: _M, *args: Any, **kwargs: Any) -> _M:
        """Moves and/or casts parameters and buffers: ``to(device)``, ``to(dtype)``,
        ``to(device, dtype)``, ``to(tensor)`` (its device and dtype), keywords as PyTorch.

        A dtype applies to floating-point parameters and buffers only. Returns self.
        Unlike PyTorch, a parameter that changes dtype or device is replaced by a new
        Parameter object (rumus can't swap a tensor's data in place): build optimizers after
        calling ``to()``, or they keep updating the old parameters. Parameters that don't
        change stay the same objects.

        Args:
            *args: a device, a dtype, both, or a tensor whose device and dtype to take.
            **kwargs: ``device=``, ``dtype=``, ``non_blocking=``.

        Returns:
            Module: self.
        """
        device, dtype, non_blocking = _parse_to(*args, **kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(
                f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}"
            )

        def convert(t):
            kw = {"non_blocking": non_blocking}
            if device is not None:
                kw["device"] = device
            if dtype is not None and t.is_floating_point():
                kw["dtype"] = dtype
            return t.to(**kw)

        return self._apply(convert)

    def cpu(self: _M) -> _M:
        """Moves every parameter and buffer to the CPU.

        Returns:
            Module: self.
        """
        return self._apply(lambda t: t.cpu())

    def gpu(self: _M, device: Any = None) -> _M:
        """Moves parameters and buffers to a GPU (new Parameter objects, see ``to``).

        Args:
            device (int, str or device, optional): the GPU (default: the current one).

        Returns:
            Module: self.
        """
        return self._apply(lambda t: t.gpu(device))

    def type(self: _M, dst_type: Any) -> _M:
        """Casts all parameters and buffers (integer ones too) to ``dst_type``.

        Args:
            dst_type (dtype): the dtype.

        Returns:
            Module: self.
        """
        return self._apply(lambda t: t.type(dst_type))

    def _cast_floating(self, dtype):
        # Tensor.to returns the tensor itself when the dtype already matches (Tensor.float()
        # copies).
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self: _M) -> _M:
        """Casts the floating-point parameters and buffers to float32.

        Returns:
            Module: self (the parameters are new objects when the dtype changes).
        """
        return self._cast_floating(_rumus.float32)

    def double(self: _M) -> _M:
        """Casts the floating-point parameters and buffers to float64.

        Returns:
            Module: self (the parameters are new objects when the dtype changes).
        """
        return self._cast_floating(_rumus.float64)

    def half(self: _M) -> _M:
        """Casts the floating-point parameters and buffers to float16.

        Returns:
            Module: self (the parameters are new objects when the dtype changes).
        """
        return self._cast_floating(_rumus.float16)

    def bfloat16(self: _M) -> _M:
        """Casts the floating-point parameters and buffers to bfloat16.

        Returns:
            Module: self (the parameters are new objects when the dtype changes).
        """
        return self._cast_floating(_rumus.bfloat16)

    # ---- state dict ---------------------------------------------------------------------

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """Puts this module's own parameters and persistent buffers (not its children's) into
        ``destination``; layers override it to save extra entries."""
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if self._has_extra_state():
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def state_dict(
        self, *, destination: Any = None, prefix: str = "", keep_vars: bool = False
    ) -> dict[str, Any]:
        """OrderedDict of dotted name -> tensor for all parameters and persistent buffers
        (detached, sharing storage with the module, unless ``keep_vars``).

        Args:
            destination (dict, optional): the dict to fill.
            prefix (str): prepended to every name.
            keep_vars (bool): return the tensors attached to autograd instead of detached ones.

        Returns:
            dict[str, Tensor]: an OrderedDict.
        """
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars
                )
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if result is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif result is not None:
                destination = result
        return destination

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        """Loads this module's own entries of ``state_dict`` (keys ``prefix + name``), appending to
        the three lists. Layers override it to adapt old checkpoints
        (``local_metadata["version"]``)."""
        local_state = {
            k: v
            for k, v in itertools.chain(self._parameters.items(), self._buffers.items())
            if v is not None and k not in self._non_persistent_buffers_set
        }
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, _Tensor):
                error_msgs.append(
                    f'While copying the parameter named "{key}", expected rumus.Tensor from '
                    f"checkpoint but received {type(value)}"
                )
                continue
            if value.shape != param.shape:
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {value.shape} from "
                    f"checkpoint, the shape in current model is {param.shape}."
                )
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            value = (
                                Parameter(value, param.requires_grad)
                                if not isinstance(value, Parameter)
                                else value.requires_grad_(param.requires_grad)
                            )
                        setattr(self, name, value)
                    else:
                        param.copy_(value)
            except Exception as ex:
                error_msgs.append(
                    f'While copying the parameter named "{key}", whose dimensions in the model are '
                    f"{param.shape} and whose dimensions in the checkpoint are {value.shape}, "
                    f"an exception occurred : {ex.args}."
                )
        extra_key = prefix + "_extra_state"
        if self._has_extra_state():
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    head, dot, _ = key[len(prefix) :].partition(".")
                    if (head not in self._modules) if dot else (head not in local_state):
                        unexpected_keys.append(key)

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> _IncompatibleKeys:
        """Copies ``state_dict``'s tensors into the parameters and buffers (under no_grad, with
        ``copy_``'s dtype conversion), or with ``assign=True`` makes them the module's tensors.

        Returns ``_IncompatibleKeys(missing_keys, unexpected_keys)``; with ``strict`` missing or
        unexpected keys raise RuntimeError. Shape mismatches always raise.

        Args:
            state_dict (Mapping[str, Tensor]): the tensors, by dotted name.
            strict (bool): require exactly the module's keys.
            assign (bool): use the given tensors as the parameters instead of copying into them.

        Returns:
            NamedTuple: ``(missing_keys, unexpected_keys)``.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)

        def load(module, local_state_dict, prefix):
            local_metadata = dict(metadata.get(prefix[:-1], {})) if metadata is not None else {}
            if assign:
                local_metadata["assign_to_params_buffers"] = True
            for hook in module._load_state_dict_pre_hooks.values():
                hook(local_state_dict, prefix, local_metadata, True, missing, unexpected, errors)
            module._load_from_state_dict(
                local_state_dict, prefix, local_metadata, True, missing, unexpected, errors
            )
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(
                        child,
                        {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)},
                        child_prefix,
                    )
            incompatible = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible) is not None:
                    raise RuntimeError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                        "expected to return new values, if incompatible_keys need to be "
                        "modified, it should be done inplace."
                    )

        load(self, OrderedDict(state_dict), "")
        if strict:
            if unexpected:
                keys = ", ".join(f'"{k}"' for k in unexpected)
                errors.insert(0, f"Unexpected key(s) in state_dict: {keys}. ")
            if missing:
                keys = ", ".join(f'"{k}"' for k in missing)
                errors.insert(0, f"Missing key(s) in state_dict: {keys}. ")
        if errors:
            body = "\n\t".join(errors)
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t{body}"
            )
        return _IncompatibleKeys(missing, unexpected)

    # ---- repr ---------------------------------------------------------------------------

    def _get_name(self):
        return type(self).__name__

    def extra_repr(self) -> str:
        """One line (or several) shown inside the module's repr; layers override it."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + _addindent(repr(m), 2) for name, m in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if len(extra_lines) == 1 and not child_lines:
            body = extra_lines[0]
        elif lines:
            body = "\n  " + "\n  ".join(lines) + "\n"
        return self._get_name() + "(" + body + ")"
