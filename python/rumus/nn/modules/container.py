"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""

import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from itertools import chain, islice
from typing import Any, Optional, Union

from ... import _rumus
from ..parameter import Parameter
from .module import Module, _addindent

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _abs_index(idx, size):
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size


def _renumber(module):
    # After a deletion the remaining children are numbered 0..n-1 again, as in PyTorch.
    object.__setattr__(
        module, "_modules", {str(i): m for i, m in enumerate(module._modules.values())}
    )


def _tensor_line(key, p):
    if not isinstance(p, _rumus.Tensor):
        return f"  ({key}): Object of type: {type(p).__name__}"
    size = "x".join(str(s) for s in p.shape)
    device = "" if p.device.type == "cpu" else f" ({p.device})"
    kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
    return f"  ({key}): {kind} containing: [{p.dtype} of size {size}{device}]"


class Sequential(Module):
    """Chains modules: ``forward`` feeds the input through each in order.

    ``Sequential(m0, m1, ...)`` names them "0", "1", ...; ``Sequential(OrderedDict(name=m))``
    keeps the given names.

    Args:
        *args (Module or OrderedDict): the modules, in order, or one OrderedDict of named modules.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _key_at(self, idx):
        return next(islice(self._modules, _abs_index(idx, len(self)), None))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._key_at(idx)]

    def __setitem__(self, idx, module):
        setattr(self, self._key_at(idx), module)

    def __delitem__(self, idx):
        keys = list(self._modules)[idx] if isinstance(idx, slice) else [self._key_at(idx)]
        for key in keys:
            delattr(self, key)
        _renumber(self)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(
                f"add operator supports only objects of Sequential class, but {type(other)} is "
                "given."
            )
        out = Sequential()
        for module in chain(self, other):
            out.append(module)
        return out

    def __iadd__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(
                f"add operator supports only objects of Sequential class, but {type(other)} is "
                "given."
            )
        return self.extend(other)

    def __mul__(self, other):
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        out = Sequential()
        for _ in range(other):
            for module in self:
                out.append(module)
        return out

    __rmul__ = __mul__

    def __imul__(self, other):
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        modules = list(self)
        for _ in range(other - 1):
            for module in modules:
                self.append(module)
        return self

    def append(self, module):
        """Appends a module at the end.

        Args:
            module (Module): the module to add.

        Returns:
            Sequential: self.
        """
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        """Inserts a module before position ``index``.

        Args:
            index (int): the position (negative counts from the end).
            module (Module): the module to insert.

        Returns:
            Sequential: self.
        """
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        modules = list(self)
        modules.insert(index, module)
        object.__setattr__(self, "_modules", {str(i): m for i, m in enumerate(modules)})
        return self

    def extend(self, sequential):
        """Appends every module of ``sequential`` (any iterable of modules).

        Args:
            sequential (Iterable[Module]): the modules to add.

        Returns:
            Sequential: self.
        """
        for module in sequential:
            self.append(module)
        return self

    def pop(self, key):
        """Removes the module at ``key`` and returns it.

        Args:
            key (int or slice): its position.

        Returns:
            Module: the removed module.
        """
        v = self[key]
        del self[key]
        return v

    def forward(self, input):
        """Runs the modules in order, each on the previous one's output.

        Args:
            input: the first module's input.

        Returns:
            The last module's output.
        """
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered as children "0", "1", ... (no ``forward`` of its own).

    Args:
        modules (Iterable or Mapping, optional): initial modules.
    """

    def __init__(self, modules: Optional[Iterable[Module]] = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_abs_index(idx, len(self)))]

    def __setitem__(self, idx, module):
        setattr(self, str(_abs_index(idx, len(self))), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for k in range(len(self))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, str(_abs_index(idx, len(self))))
        _renumber(self)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        out = ModuleList()
        for module in chain(self, other):
            out.append(module)
        return out

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def __repr__(self):
        # Runs of children with equal reprs print once: "(0-2): 3 x Linear(...)", as PyTorch does.
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        lines, start = [], 0
        for i in range(1, len(reprs) + 1):
            if i < len(reprs) and reprs[i] == reprs[start]:
                continue
            body = _addindent(reprs[start], 2)
            if i - start == 1:
                lines.append(f"({start}): {body}")
            else:
                lines.append(f"({start}-{i - 1}): {i - start} x {body}")
            start = i
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def insert(self, index, module):
        """Inserts a module before position ``index``.

        Args:
            index (int): the position.
            module (Module): the module to insert.
        """
        modules = list(self)
        modules.insert(index, module)
        for m in modules:
            if m is not None and not isinstance(m, Module):
                raise TypeError(f"{type(m).__name__} is not a Module subclass")
        object.__setattr__(self, "_modules", {str(i): m for i, m in enumerate(modules)})

    def append(self, module):
        """Appends a module at the end.

        Args:
            module (Module): the module to add.

        Returns:
            ModuleList: self.
        """
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        """Removes the module at ``key`` and returns it.

        Args:
            key (int or slice): its position.

        Returns:
            Module: the removed module.
        """
        v = self[key]
        del self[key]
        return v

    def extend(self, modules):
        """Appends the modules of an iterable.

        Args:
            modules (Iterable[Module]): the modules to add.

        Returns:
            ModuleList: self.
        """
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleList.extend should be called with an iterable, but got "
                + type(modules).__name__
            )
        for module in modules:
            self.append(module)
        return self


def _update_pairs(target, items, cls_name):
    """dict.update-style insertion of key/value pairs, with PyTorch's error messages."""
    for j, m in enumerate(items):
        if not isinstance(m, Iterable):
            raise TypeError(
                f"{cls_name} update sequence element #{j} should be Iterable; is{type(m).__name__}"
            )
        m = list(m)
        if len(m) != 2:
            raise ValueError(
                f"{cls_name} update sequence element #{j} has length {len(m)}; 2 is required"
            )
        target[m[0]] = m[1]


class ModuleDict(Module):
    """An ordered dict of modules, registered as children under their keys.

    Args:
        modules (Iterable or Mapping, optional): initial modules.
    """

    def __init__(
        self, modules: Optional[Union[Mapping[str, Module], Iterable[tuple[str, Module]]]] = None
    ) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        """Removes every module."""
        self._modules.clear()

    def pop(self, key):
        """Removes the module named ``key`` and returns it.

        Args:
            key (str): its name.

        Returns:
            Module: the removed module.
        """
        v = self[key]
        del self[key]
        return v

    def keys(self):
        """The names of the modules, in insertion order.

        Returns:
            Iterable[str]: the keys.
        """
        return self._modules.keys()

    def items(self):
        """The (name, module) pairs, in insertion order.

        Returns:
            Iterable[tuple[str, Module]]: the pairs.
        """
        return self._modules.items()

    def values(self):
        """The modules, in insertion order.

        Returns:
            Iterable[Module]: the modules.
        """
        return self._modules.values()

    def update(self, modules):
        """Adds or replaces modules from a mapping or an iterable of (name, module) pairs.

        Args:
            modules (Mapping or Iterable): the modules to add.
        """
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleDict.update should be called with an iterable of key/value pairs, but got "
                + type(modules).__name__
            )
        if isinstance(modules, (Mapping, ModuleDict)):
            for key, module in modules.items():
                self[key] = module
        else:
            _update_pairs(self, modules, "ModuleDict")


class ParameterList(Module):
    """A list of parameters; plain tensors put in it become Parameters.

    Args:
        values (Iterable, optional): initial parameters.
    """

    def __init__(self, values: Optional[Iterable[Any]] = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = type(self)()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, str(_abs_index(idx, len(self))))

    def __setitem__(self, idx, param):
        idx = _abs_index(idx, len(self))
        if isinstance(param, _rumus.Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, str(idx), param)

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value):
        """Appends a value (tensors become Parameters).

        Args:
            value (Tensor or Any): the value to add.

        Returns:
            ParameterList: self.
        """
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        """Appends the values of an iterable (tensors become Parameters).

        Args:
            values (Iterable): the values to add.

        Returns:
            ParameterList: self.
        """
        if not isinstance(values, Iterable) or isinstance(values, _rumus.Tensor):
            raise TypeError(
                "ParameterList.extend should be called with an iterable, but got "
                + type(values).__name__
            )
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        return "\n".join(_tensor_line(k, p) for k, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters (string keys); plain tensors put in it become Parameters.

    Args:
        parameters (Mapping or Iterable, optional): initial (name, parameter) entries.
    """

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _key_to_attr(key):
        if not isinstance(key, str):
            raise TypeError(
                "Index given to ParameterDict cannot be used as a key as it is not a string "
                f"(type is '{type(key).__name__}')."
            )
        return key

    def __getitem__(self, key):
        return getattr(self, self._key_to_attr(key))

    def __setitem__(self, key, value):
        attr = self._key_to_attr(key)
        self._keys[key] = None
        if isinstance(value, _rumus.Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, self._key_to_attr(key))

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(list(self._keys))

    def __contains__(self, key):
        return key in self._keys

    def copy(self):
        """A shallow copy: a new ParameterDict holding the same parameters.

        Returns:
            ParameterDict: the copy.
        """
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key, default=None):
        """The value of ``key``, first setting it to ``default`` if absent.

        Args:
            key (str): the name.
            default: the value to set when ``key`` is absent.

        Returns:
            The value stored under ``key``.
        """
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        """Removes every entry."""
        for k in list(self._keys):
            del self[k]

    def pop(self, key):
        """Removes the entry ``key`` and returns its value.

        Args:
            key (str): the name.

        Returns:
            The removed value.
        """
        v = self[key]
        del self[key]
        return v

    def popitem(self):
        """Removes and returns the last inserted (key, value) pair.

        Returns:
            tuple: the pair.
        """
        k = next(reversed(self._keys))  # last in, first out, like dict.popitem
        return k, self.pop(k)

    def get(self, key, default=None):
        """The value of ``key``, or ``default`` when absent.

        Args:
            key (str): the name.
            default: returned when ``key`` is absent.

        Returns:
            The value.
        """
        return self[key] if key in self else default

    def fromkeys(self, keys, default=None):
        """A new ParameterDict with every key of ``keys`` set to ``default``.

        Args:
            keys (Iterable[str]): the names.
            default: the value of each.

        Returns:
            ParameterDict: the new dict.
        """
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        """The names, in insertion order.

        Returns:
            Iterable[str]: the keys.
        """
        return self._keys.keys()

    def items(self):
        """The (name, value) pairs, in insertion order.

        Returns:
            Iterable[tuple[str, Any]]: the pairs.
        """
        return ((k, self[k]) for k in self._keys)

    def values(self):
        """The values, in insertion order.

        Returns:
            Iterable: the values.
        """
        return (self[k] for k in self._keys)

    def update(self, parameters):
        """Adds or replaces entries from a mapping or an iterable of (key, value) pairs.

        Args:
            parameters (Mapping or Iterable): the entries to add.
        """
        if not isinstance(parameters, Iterable):
            raise TypeError(
                "ParametersDict.update should be called with an iterable of key/value pairs, but "
                "got " + type(parameters).__name__
            )
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for key, parameter in parameters.items():
                self[key] = parameter
        elif isinstance(parameters, Mapping):
            # PyTorch sorts the keys of a plain mapping.
            for key, parameter in sorted(parameters.items()):
                self[key] = parameter
        else:
            _update_pairs(self, parameters, "ParameterDict")

    def extra_repr(self):
        return "\n".join(_tensor_line(k, p) for k, p in self.items())

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other):
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other):
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other):
        self.update(other)
        return self
