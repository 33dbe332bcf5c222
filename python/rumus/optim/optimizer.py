"""The Optimizer base class: param groups, state, state_dict, zero_grad.

Subclasses name their Rust update rule (`_kind`) and their state; `step`
collects each group's parameters and runs one fused Rust call per group.
"""

import warnings
from collections import defaultdict
from collections.abc import Iterable
from copy import deepcopy
from itertools import chain
from typing import Any, Callable, Optional, Union

from .. import _rumus
from .._rumus import Tensor
from ..autograd import enable_grad, no_grad

# What optimizers take: tensors, or dicts of options with a "params" entry (param groups).
ParamsT = Union[Iterable[Tensor], Iterable[dict[str, Any]]]

_SET_MESSAGE = (
    "optimizer parameters need to be organized in ordered collections, but the ordering of "
    "tensors in sets will change between runs. Please use a list instead."
)


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    # Rust update rule, names of the state tensors shaped like the parameter
    # (in the rule's order) and of the 0-d scalars (the step counter first).
    """Base class of the optimizers.

    Args:
        params (iterable): tensors to optimize, or dicts defining parameter groups
            (each with ``"params"`` and per-group options).
        defaults (dict): the default value of each option.
    """

    _kind = None
    _scalars = ("step",)

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                "dicts, but got " + type(params).__name__
            )
        if isinstance(params, set):
            warnings.warn(
                _SET_MESSAGE + " This will be an error in a future release.",
                FutureWarning,
                stacklevel=3,
            )
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        lines = [self.__class__.__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Adds a parameter group (for example layers unfrozen during fine-tuning).

        Args:
            param_group (dict): ``"params"`` and the group's options; missing options
                take the optimizer's defaults.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(_SET_MESSAGE)
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, but one of the params is "
                    + type(p).__name__
                )
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required optimization parameter "
                    f"{name}"
                )
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this "
                "will cause an error; see github.com/pytorch/pytorch/issues/40967 for more "
                "information",
                stacklevel=3,
            )
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the gradients of every optimized parameter.

        Args:
            set_to_none (bool): set ``.grad`` to None instead of filling it with zeros.
        """
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g.detach_()
                    g.zero_()

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state: per-parameter state keyed by index, and the parameter groups.

        Returns:
            dict: ``{"state": ..., "param_groups": ...}``, in PyTorch's layout.
        """
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads a state returned by :meth:`state_dict`.

        Args:
            state_dict (dict): the state; its groups must match this optimizer's in number and
                sizes.
        """
        state_dict = deepcopy(state_dict)
        groups, saved = self.param_groups, state_dict["param_groups"]
        if len(groups) != len(saved):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group"
            )
        id_map = dict(
            zip(
                chain.from_iterable(s["params"] for s in saved),
                chain.from_iterable(g["params"] for g in groups),
            )
        )
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k not in id_map:
                continue
            p = id_map[k]
            # As PyTorch: state moves to the parameter's device; moments take its dtype.
            state[p] = {
                name: (
                    val.to(p.device, p.dtype)
                    if name not in self._scalars and val.is_floating_point()
                    else val.to(p.device)
                )
                if isinstance(val, Tensor)
                else val
                for name, val in v.items()
            }
        self.state = state
        self.param_groups = [dict(s, params=g["params"]) for g, s in zip(groups, saved)]

    def _state_names(self, group):
        """Names of the state tensors shaped like the parameter, in the Rust rule's order."""
        raise NotImplementedError

    def _init_state(self, p, state, group):
        for name in self._state_names(group):
            state[name] = _rumus.zeros_like(p)
        # On the parameter's device: GPU steps update it there, with no readback.
        state["step"] = _rumus.tensor(0.0, device=p.device)

    @no_grad()
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Performs one optimization step (one fused Rust call per parameter group).

        Args:
            closure (callable, optional): re-evaluates the model and returns the loss.

        Returns:
            The closure's loss, or None.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            params, grads, states, scalars, fresh = [], [], [], [], []
            names = self._state_names(group)
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                new = any(n not in st for n in names) or any(n not in st for n in self._scalars)
                if new:
                    self._init_state(p, st, group)
                params.append(p)
                grads.append(p.grad)
                states.append([st[n] for n in names])
                scalars.append([st[n] for n in self._scalars])
                fresh.append(new)
            if params:
                _rumus._optimizer_step(self._kind, group, params, grads, states, scalars, fresh)
        return loss


def _check(cond, message):
    if not cond:
        raise ValueError(message)


def _check_common(lr, eps=None, weight_decay=0.0, betas=None):
    _check(lr >= 0.0, f"Invalid learning rate: {lr}")
    if eps is not None:
        _check(eps >= 0.0, f"Invalid epsilon value: {eps}")
    _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
    if betas is not None:
        _check(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
        _check(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
