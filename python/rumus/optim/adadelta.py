"""Adadelta: PyTorch's update rule, fused in Rust (torch.optim.adadelta)."""

from .optimizer import Optimizer, _check, _check_common

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    _kind = "adadelta"

    def __init__(
        self,
        params,
        lr=1.0,
        rho=0.9,
        eps=1e-6,
        weight_decay=0,
        foreach=None,
        *,
        capturable=False,
        maximize=False,
        differentiable=False,
    ):
        _check_common(lr, eps, weight_decay)
        _check(0.0 <= rho <= 1.0, f"Invalid rho value: {rho}")
        defaults = dict(
            lr=lr,
            rho=rho,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            capturable=capturable,
            foreach=foreach,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _state_names(self, group):
        return ("square_avg", "acc_delta")
