"""Rprop (resilient backpropagation): PyTorch's update rule, fused in Rust
(torch.optim.rprop). State: ``step``, ``prev`` (the last gradient used) and
``step_size`` (per element, starting at ``lr``)."""

from .. import _rumus
from .optimizer import Optimizer, _check

__all__ = ["Rprop"]


class Rprop(Optimizer):
    _kind = "rprop"

    def __init__(
        self,
        params,
        lr=1e-2,
        etas=(0.5, 1.2),
        step_sizes=(1e-6, 50),
        *,
        capturable=False,
        foreach=None,
        maximize=False,
        differentiable=False,
    ):
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(0.0 < etas[0] < 1.0 < etas[1], f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(
            lr=lr,
            etas=tuple(etas),
            step_sizes=tuple(step_sizes),
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def _state_names(self, group):
        return ("prev", "step_size")

    def _init_state(self, p, state, group):
        state["step"] = _rumus.tensor(0.0, device=p.device)
        state["prev"] = _rumus.zeros_like(p)
        state["step_size"] = _rumus.full_like(p, group["lr"])
