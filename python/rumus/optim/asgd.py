"""Averaged SGD: PyTorch's update rule, fused in Rust (torch.optim.asgd).

State as PyTorch: ``step``, ``eta`` (the current learning rate), ``mu`` (the
averaging weight), all 0-d float32 tensors, and ``ax``, the running average
of the parameter.
"""

from .. import _rumus
from .optimizer import Optimizer, _check_common

__all__ = ["ASGD"]


class ASGD(Optimizer):
    _kind = "asgd"
    _scalars = ("step", "eta", "mu")

    def __init__(
        self,
        params,
        lr=1e-2,
        lambd=1e-4,
        alpha=0.75,
        t0=1e6,
        weight_decay=0,
        foreach=None,
        maximize=False,
        differentiable=False,
        capturable=False,
    ):
        _check_common(lr, weight_decay=weight_decay)
        defaults = dict(
            lr=lr,
            lambd=lambd,
            alpha=alpha,
            t0=t0,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def _state_names(self, group):
        return ("ax",)

    def _init_state(self, p, state, group):
        state["step"] = _rumus.tensor(0.0, device=p.device)
        state["eta"] = _rumus.tensor(float(group["lr"]), device=p.device)
        state["mu"] = _rumus.tensor(1.0, device=p.device)
        state["ax"] = _rumus.zeros_like(p)
