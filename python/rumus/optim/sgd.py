"""Stochastic gradient descent (optionally with momentum), PyTorch's SGD."""

from typing import Optional

from .. import _rumus
from .optimizer import Optimizer, ParamsT, _check, _check_common


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum and Nesterov momentum.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float): the learning rate.
        momentum (float): the momentum factor.
        dampening (float): dampening of the momentum.
        weight_decay (float): L2 penalty added to the gradient.
        nesterov (bool): use Nesterov momentum.
        maximize (bool): maximize the objective instead of minimizing it.

    ``foreach``, ``fused``, ``capturable`` and ``differentiable`` are accepted and ignored
    (every step is one fused Rust call). The ``state_dict`` layout and parameter-group
    semantics are PyTorch's.
    """

    _kind = "sgd"
    _scalars = ()

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: Optional[bool] = None,
        differentiable: bool = False,
        fused: Optional[bool] = None,
    ) -> None:
        _check_common(lr, weight_decay=weight_decay)
        _check(momentum >= 0.0, f"Invalid momentum value: {momentum}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
            foreach=foreach,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)

    def _state_names(self, group):
        return ("momentum_buffer",) if group["momentum"] != 0 else ()

    def _init_state(self, p, state, group):
        for name in self._state_names(group):
            state[name] = _rumus.zeros_like(p)
