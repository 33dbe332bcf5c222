"""Adam, AdamW, Adamax, NAdam and RAdam: PyTorch's update rules, fused in Rust."""

from typing import Optional

from .. import _rumus
from .optimizer import Optimizer, ParamsT, _check, _check_common


class Adam(Optimizer):
    """Adam: adaptive moment estimation.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float): the learning rate.
        betas (tuple[float, float]): decay rates of the running averages of the gradient and its
            square.
        eps (float): added to the denominator for numerical stability.
        weight_decay (float): L2 penalty added to the gradient.
        amsgrad (bool): use the maximum of past squared-gradient averages (AMSGrad).
        maximize (bool): maximize the objective instead of minimizing it.
        decoupled_weight_decay (bool): decay the weights directly, as AdamW does.

    ``foreach``, ``fused``, ``capturable`` and ``differentiable`` are accepted and ignored
    (every step is one fused Rust call). The ``state_dict`` layout and parameter-group
    semantics are PyTorch's.
    """

    _kind = "adam"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: Optional[bool] = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: Optional[bool] = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        _check_common(lr, eps, weight_decay, betas)
        defaults = dict(
            lr=lr,
            betas=tuple(betas),
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=decoupled_weight_decay,
        )
        super().__init__(params, defaults)

    def _state_names(self, group):
        return (
            ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")
            if group["amsgrad"]
            else ("exp_avg", "exp_avg_sq")
        )


class AdamW(Adam):
    """AdamW: Adam with decoupled weight decay.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float): the learning rate.
        betas (tuple[float, float]): decay rates of the running averages of the gradient and its
            square.
        eps (float): added to the denominator for numerical stability.
        weight_decay (float): the decoupled weight decay coefficient.
        amsgrad (bool): use AMSGrad.
        maximize (bool): maximize the objective instead of minimizing it.

    ``foreach``, ``fused``, ``capturable`` and ``differentiable`` are accepted and ignored
    (every step is one fused Rust call). The ``state_dict`` layout and parameter-group
    semantics are PyTorch's.
    """

    _kind = "adamw"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: Optional[bool] = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: Optional[bool] = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )


class Adamax(Optimizer):
    """Adamax: Adam with the infinity norm in place of the second moment.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float): the learning rate.
        betas (tuple[float, float]): decay rates of the running averages of the gradient and its
            square.
        eps (float): added to the denominator for numerical stability.
        weight_decay (float): L2 penalty added to the gradient.
        maximize (bool): maximize the objective instead of minimizing it.

    ``foreach``, ``fused``, ``capturable`` and ``differentiable`` are accepted and ignored
    (every step is one fused Rust call). The ``state_dict`` layout and parameter-group
    semantics are PyTorch's.
    """

    _kind = "adamax"

    def __init__(
        self,
        params,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        capturable=False,
    ):
        _check_common(lr, eps, weight_decay, betas)
        defaults = dict(
            lr=lr,
            betas=tuple(betas),
            eps=eps,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def _state_names(self, group):
        return ("exp_avg", "exp_inf")


class NAdam(Optimizer):
    """NAdam: Adam with Nesterov momentum.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float): the learning rate.
        betas (tuple[float, float]): decay rates of the running averages of the gradient and its
            square.
        eps (float): added to the denominator for numerical stability.
        weight_decay (float): L2 penalty added to the gradient.
        momentum_decay (float): the momentum decay psi.
        decoupled_weight_decay (bool): decay the weights directly, as AdamW does.
        maximize (bool): maximize the objective instead of minimizing it.

    ``foreach``, ``fused``, ``capturable`` and ``differentiable`` are accepted and ignored
    (every step is one fused Rust call). The ``state_dict`` layout and parameter-group
    semantics are PyTorch's.
    """

    _kind = "nadam"
    _scalars = ("step", "mu_product")

    def __init__(
        self,
        params,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        momentum_decay=4e-3,
        decoupled_weight_decay=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
    ):
        _check_common(lr, eps, weight_decay, betas)
        _check(momentum_decay >= 0.0, f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(
            lr=lr,
            betas=tuple(betas),
            eps=eps,
            weight_decay=weight_decay,
            momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _state_names(self, group):
        return ("exp_avg", "exp_avg_sq")

    def _init_state(self, p, state, group):
        super()._init_state(p, state, group)
        state["mu_product"] = _rumus.tensor(1.0, device=p.device)


class RAdam(Optimizer):
    """RAdam: Adam with a rectified adaptive learning rate.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float): the learning rate.
        betas (tuple[float, float]): decay rates of the running averages of the gradient and its
            square.
        eps (float): added to the denominator for numerical stability.
        weight_decay (float): L2 penalty added to the gradient.
        decoupled_weight_decay (bool): decay the weights directly, as AdamW does.
        maximize (bool): maximize the objective instead of minimizing it.

    ``foreach``, ``fused``, ``capturable`` and ``differentiable`` are accepted and ignored
    (every step is one fused Rust call). The ``state_dict`` layout and parameter-group
    semantics are PyTorch's.
    """

    _kind = "radam"

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        decoupled_weight_decay=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
    ):
        _check_common(lr, eps, weight_decay, betas)
        defaults = dict(
            lr=lr,
            betas=tuple(betas),
            eps=eps,
            weight_decay=weight_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _state_names(self, group):
        return ("exp_avg", "exp_avg_sq")
