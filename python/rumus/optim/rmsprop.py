"""RMSprop and Adagrad: PyTorch's update rules, fused in Rust."""

from .. import _rumus
from .optimizer import Optimizer, _check, _check_common


class RMSprop(Optimizer):
    """RMSprop: divides the gradient by a running root mean square.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float): the learning rate.
        alpha (float): the smoothing constant of the running average.
        eps (float): added to the denominator for numerical stability.
        weight_decay (float): L2 penalty added to the gradient.
        momentum (float): the momentum factor.
        centered (bool): normalize by an estimate of the gradient's variance.
        maximize (bool): maximize the objective instead of minimizing it.

    ``foreach``, ``fused``, ``capturable`` and ``differentiable`` are accepted and ignored
    (every step is one fused Rust call). The ``state_dict`` layout and parameter-group
    semantics are PyTorch's.
    """

    _kind = "rmsprop"

    def __init__(
        self,
        params,
        lr=1e-2,
        alpha=0.99,
        eps=1e-8,
        weight_decay=0,
        momentum=0,
        centered=False,
        capturable=False,
        foreach=None,
        maximize=False,
        differentiable=False,
    ):
        _check_common(lr, eps, weight_decay)
        _check(momentum >= 0.0, f"Invalid momentum value: {momentum}")
        _check(alpha >= 0.0, f"Invalid alpha value: {alpha}")
        defaults = dict(
            lr=lr,
            momentum=momentum,
            alpha=alpha,
            eps=eps,
            centered=centered,
            weight_decay=weight_decay,
            capturable=capturable,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _state_names(self, group):
        names = ["square_avg"]
        if group["momentum"] > 0:
            names.append("momentum_buffer")
        if group["centered"]:
            names.append("grad_avg")
        return tuple(names)


class Adagrad(Optimizer):
    """Adagrad: per-element learning rates scaled by the accumulated squared gradients.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float): the learning rate.
        lr_decay (float): the learning rate decay.
        weight_decay (float): L2 penalty added to the gradient.
        initial_accumulator_value (float): the accumulators' starting value.
        eps (float): added to the denominator for numerical stability.
        maximize (bool): maximize the objective instead of minimizing it.

    ``foreach``, ``fused``, ``capturable`` and ``differentiable`` are accepted and ignored
    (every step is one fused Rust call). The ``state_dict`` layout and parameter-group
    semantics are PyTorch's.
    """

    _kind = "adagrad"

    def __init__(
        self,
        params,
        lr=1e-2,
        lr_decay=0,
        weight_decay=0,
        initial_accumulator_value=0,
        eps=1e-10,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        fused=None,
    ):
        _check_common(lr, eps, weight_decay)
        _check(lr_decay >= 0.0, f"Invalid lr_decay value: {lr_decay}")
        _check(
            initial_accumulator_value >= 0.0,
            f"Invalid initial_accumulator_value value: {initial_accumulator_value}",
        )
        defaults = dict(
            lr=lr,
            lr_decay=lr_decay,
            eps=eps,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)
        # PyTorch creates Adagrad's state up front.
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, self.state[p], group)

    def _state_names(self, group):
        return ("sum",)

    def _init_state(self, p, state, group):
        state["sum"] = _rumus.full_like(p, group["initial_accumulator_value"])
        state["step"] = _rumus.tensor(0.0, device=p.device)
