"""Learning-rate schedulers with PyTorch's ``torch.optim.lr_scheduler`` API.

A scheduler works on any optimizer object with ``param_groups`` (a list of
dicts holding ``'lr'``; ``'momentum'`` or ``'betas'`` too for OneCycleLR's
momentum cycling). ``step()`` moves to the next epoch with the recursive
("chainable") rule, so schedulers stacked on one optimizer compose; the
deprecated ``step(epoch)`` jumps to ``epoch`` with the closed form where a
scheduler has one."""

import math
import types
import warnings
import weakref
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable
from functools import wraps
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from .._rumus import Tensor
from ..autograd.grad_mode import no_grad

if TYPE_CHECKING:
    from .optimizer import Optimizer

__all__ = [
    "LRScheduler",
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ConstantLR",
    "LinearLR",
    "ExponentialLR",
    "PolynomialLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "SequentialLR",
    "ChainedScheduler",
    "OneCycleLR",
    "CyclicLR",
    "ReduceLROnPlateau",
]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available."
)


def _set_group_value(group, key, value):
    """Writes ``group[key] = value``, in place when the group holds a tensor (so its identity is
    kept)."""
    if isinstance(group[key], Tensor):
        with no_grad():
            group[key].fill_(value)
    else:
        group[key] = value


def _format_param(name, optimizer, param):
    """One value per param group: a list of matching length, or a scalar repeated."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. "
                f"{name} has {len(param)} values, param_groups has {len(optimizer.param_groups)}."
            )
        return list(param)
    return [param] * len(optimizer.param_groups)


def _mark_optimizer_steps(optimizer):
    """Wraps ``optimizer.step`` once so that a scheduler can warn when it is stepped first."""
    step = getattr(optimizer, "step", None)
    if step is None or getattr(step, "_counted_by_lr_scheduler", False):
        return
    bound = getattr(step, "__func__", None)
    if bound is None:
        return  # not a method: nothing we can wrap safely
    owner = weakref.ref(optimizer)

    @wraps(bound)
    def counted_step(*args, **kwargs):
        opt = owner()  # a weak reference: the wrapper lives on the optimizer itself
        opt._opt_called = True
        return bound(opt, *args, **kwargs)

    counted_step._counted_by_lr_scheduler = True
    optimizer.step = counted_step


class LRScheduler:
    """Base class: subclasses implement ``get_lr()`` (the chainable rule, from
    the groups' current lrs) and optionally ``_get_closed_form_lr()``.

    On creation (``last_epoch=-1``) each param group gets ``'initial_lr'``
    (its current ``'lr'``), which become ``base_lrs``, and the scheduler takes
    its first step to epoch 0. Resuming with ``last_epoch >= 0`` needs
    ``'initial_lr'`` in every group already.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        last_epoch (int): the index of the last epoch; -1 starts afresh.
    """

    _get_lr_called_within_step = False

    def __init__(self, optimizer: "Optimizer", last_epoch: int = -1) -> None:
        if not hasattr(optimizer, "param_groups"):
            raise TypeError(
                f"{type(optimizer).__name__} is not an Optimizer (it has no param_groups)"
            )
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                lr = group["lr"]
                group.setdefault("initial_lr", lr.clone() if isinstance(lr, Tensor) else lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                        "an optimizer"
                    )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        _mark_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        self.step()

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the scheduler's state from :meth:`state_dict`'s output.

        Args:
            state_dict (dict): the saved state.
        """
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[float]:
        """The learning rates the last ``step()`` set, one per param group."""
        return self._last_lr

    def get_lr(self):
        """The learning rates of the current epoch, one per parameter group (called by ``step``).

        Returns:
            list[float]: the new learning rates.
        """
        raise NotImplementedError

    def _warn_if_called_outside_step(self):
        if not self._get_lr_called_within_step:
            warnings.warn(
                "To get the last learning rate computed by the scheduler, please use "
                "`get_last_lr()`.",
                UserWarning,
            )

    def step(self, epoch: Optional[int] = None) -> None:
        """Advances one epoch (or, deprecated, jumps to ``epoch``) and writes the new lrs into the
        optimizer.

        Args:
            epoch (int, optional): deprecated: the epoch to jump to.
        """
        self._step_count += 1
        counted = getattr(getattr(self.optimizer, "step", None), "_counted_by_lr_scheduler", False)
        if self._step_count == 2 and counted and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch "
                "1.1.0 and later, you should call them in the opposite order: `optimizer.step()` "
                "before `lr_scheduler.step()`.  Failure to do this will result in PyTorch "
                "skipping the first value of the learning rate schedule.",
                UserWarning,
            )
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning)
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _group_lrs(self):
        return [group["lr"] for group in self.optimizer.param_groups]


_LRScheduler = LRScheduler  # PyTorch's old name


def _lambda_state(scheduler):
    """state_dict of LambdaLR / MultiplicativeLR: functions can't be saved, callable objects'
    ``__dict__`` can."""
    state = {k: v for k, v in scheduler.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
    state["lr_lambdas"] = [
        None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
        for fn in scheduler.lr_lambdas
    ]
    return state


def _load_lambda_state(scheduler, state_dict):
    state = dict(state_dict)
    lambdas = state.pop("lr_lambdas")
    scheduler.__dict__.update(state)
    for fn, saved in zip(scheduler.lr_lambdas, lambdas):
        if saved is not None:
            fn.__dict__.update(saved)


def _lambdas(optimizer, lr_lambda):
    if isinstance(lr_lambda, (list, tuple)):
        if len(lr_lambda) != len(optimizer.param_groups):
            raise ValueError(
                f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}"
            )
        return list(lr_lambda)
    return [lr_lambda] * len(optimizer.param_groups)


class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(epoch) (one lambda, or one per param group).

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        lr_lambda (callable or list): a function of the epoch giving the multiplicative factor,
            or one such function per parameter group.
        last_epoch (int): the index of the last epoch; -1 starts afresh.
    """

    def __init__(
        self,
        optimizer: "Optimizer",
        lr_lambda: Union[Callable[[int], float], list[Callable[[int], float]]],
        last_epoch: int = -1,
    ) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        """The scheduler's state; a lambda that is a callable object is saved as its ``__dict__``, a
        function as None.

        Returns:
            dict: the state.
        """
        return _lambda_state(self)

    def load_state_dict(self, state_dict):
        """Restores the scheduler's state from :meth:`state_dict`'s output.

        Args:
            state_dict (dict): the saved state.
        """
        _load_lambda_state(self, state_dict)

    def get_lr(self):
        self._warn_if_called_outside_step()
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(LRScheduler):
    """lr *= lr_lambda(epoch) at every step after the first.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        lr_lambda (callable or list): a function of the epoch giving the factor applied at each
            step, or one such function per parameter group.
        last_epoch (int): the index of the last epoch; -1 starts afresh.
    """

    def __init__(
        self,
        optimizer: "Optimizer",
        lr_lambda: Union[Callable[[int], float], list[Callable[[int], float]]],
        last_epoch: int = -1,
    ) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        """The scheduler's state; a lambda that is a callable object is saved as its ``__dict__``, a
        function as None.

        Returns:
            dict: the state.
        """
        return _lambda_state(self)

    def load_state_dict(self, state_dict):
        """Restores the scheduler's state from :meth:`state_dict`'s output.

        Args:
            state_dict (dict): the saved state.
        """
        _load_lambda_state(self, state_dict)

    def get_lr(self):
        self._warn_if_called_outside_step()
        if self.last_epoch > 0:
            return [lr * fn(self.last_epoch) for fn, lr in zip(self.lr_lambdas, self._group_lrs())]
        return self._group_lrs()


class StepLR(LRScheduler):
    """lr = initial_lr * gamma ** (epoch // step_size).

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        step_size (int): the period of the decay, in epochs.
        gamma (float): the multiplicative factor of the decay.
        last_epoch (int): the index of the last epoch; -1 starts afresh.
    """

    def __init__(
        self, optimizer: "Optimizer", step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_if_called_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """lr = initial_lr * gamma ** (number of milestones <= epoch); a repeated milestone counts
    repeatedly.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        milestones (list[int]): the epochs at which to decay.
        gamma (float): the multiplicative factor of the decay.
        last_epoch (int): the index of the last epoch; -1 starts afresh.
    """

    def __init__(
        self,
        optimizer: "Optimizer",
        milestones: Iterable[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_if_called_outside_step()
        if self.last_epoch not in self.milestones:
            return self._group_lrs()
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma**passed for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """lr = initial_lr * factor for epochs < total_iters, then initial_lr.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        factor (float): the factor applied until total_iters.
        total_iters (int): the number of epochs the factor applies.
        last_epoch (int): the index of the last epoch; -1 starts afresh.
    """

    def __init__(
        self,
        optimizer: "Optimizer",
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_if_called_outside_step()
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._group_lrs()]
        if self.last_epoch != self.total_iters:
            return self._group_lrs()
        return [lr * (1.0 / self.factor) for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [
            base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
            for base in self.base_lrs
        ]


class LinearLR(LRScheduler):
    """The lr factor goes linearly from start_factor to end_factor over total_iters epochs, then
    stays.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        start_factor (float): the factor at the first epoch.
        end_factor (float): the factor at total_iters and after.
        total_iters (int): the number of epochs of the ramp.
        last_epoch (int): the index of the last epoch; -1 starts afresh.
    """

    def __init__(
        self,
        optimizer: "Optimizer",
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or equal "
                "to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_if_called_outside_step()
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._group_lrs()]
        if self.last_epoch > self.total_iters:
            return self._group_lrs()
        delta = self.end_factor - self.start_factor
        ratio = 1.0 + delta / (self.total_iters * self.start_factor + (self.last_epoch - 1) * delta)
        return [lr * ratio for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        frac = min(self.total_iters, self.last_epoch) / self.total_iters
        return [
            base * (self.start_factor + (self.end_factor - self.start_factor) * frac)
            for base in self.base_lrs
        ]


class ExponentialLR(LRScheduler):
    """lr = initial_lr * gamma ** epoch.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        gamma (float): the multiplicative factor per epoch.
        last_epoch (int): the index of the last epoch; -1 starts afresh.
    """

    def __init__(self, optimizer: "Optimizer", gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_if_called_outside_step()
        if self.last_epoch == 0:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """lr = initial_lr * (1 - min(epoch, total_iters) / total_iters) ** power.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        total_iters (int): the number of epochs of the decay.
        power (float): the power of the polynomial.
        last_epoch (int): the index of the last epoch; -1 starts afresh.
    """

    def __init__(
        self, optimizer: "Optimizer", total_iters: int = 5, power: float = 1.0, last_epoch: int = -1
    ) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_if_called_outside_step()
        if self.last_epoch == 0 or self.last_epoch > self.total_iters:
            return self._group_lrs()
        ratio = (
            (1.0 - self.last_epoch / self.total_iters)
            / (1.0 - (self.last_epoch - 1) / self.total_iters)
        ) ** self.power
        return [lr * ratio for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        frac = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (1.0 - frac) ** self.power for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from initial_lr to eta_min over T_max epochs (and back up, periodically
    after).

    ``step()`` uses the recursive form, so the lr follows
    ``eta_min + (initial_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``
    when this scheduler alone changes it, and composes with other changes.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        T_max (int): the number of epochs of half a cosine period.
        eta_min (float): the minimum learning rate.
        last_epoch (int): the index of the last epoch; -1 starts afresh.
    """

    def __init__(
        self, optimizer: "Optimizer", T_max: int, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_if_called_outside_step()
        e, T, lo = self.last_epoch, self.T_max, self.eta_min
        if e == 0:
            return self._group_lrs()
        if self._step_count == 1 and e > 0:
            # Resumed at a later epoch: start from the closed form.
            return [
                lo + (base - lo) * (1 + math.cos(e * math.pi / T)) / 2 for base in self.base_lrs
            ]
        if (e - 1 - T) % (2 * T) == 0:
            # At the bottom of the cosine the ratio below is 0/0; step up by the first increment
            # instead.
            return [
                lr + (base - lo) * (1 - math.cos(math.pi / T)) / 2
                for base, lr in zip(self.base_lrs, self._group_lrs())
            ]
        ratio = (1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T))
        return [ratio * (lr - lo) + lo for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [
            self.eta_min
            + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
            for base in self.base_lrs
        ]


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: cosine annealing from initial_lr to eta_min over T_i epochs, restarting
    at initial_lr; T_0 is the first period, each next one T_mult times longer.
    ``step(epoch)`` takes fractional epochs (e.g. ``epoch + i / iters``).

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        T_0 (int): the number of epochs before the first restart.
        T_mult (int): the factor by which the period grows after each restart.
        eta_min (float): the minimum learning rate.
        last_epoch (int): the index of the last epoch; -1 starts afresh.
    """

    def __init__(
        self,
        optimizer: "Optimizer",
        T_0: int,
        T_mult: int = 1,
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(
                f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}"
            )
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_if_called_outside_step()
        return [
            self.eta_min
            + (base - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
            for base in self.base_lrs
        ]

    def step(self, epoch: Optional[float] = None) -> None:
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur -= self.T_i
                self.T_i *= self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    # n full periods fit: T_0 * (T_mult**n - 1) / (T_mult - 1) <= epoch
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._step_count += 1
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = self._group_lrs()


def _check_same_optimizer(schedulers, optimizer, who):
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(
                f"{who} expects a list of schedulers, but index {i} is {type(s).__name__}"
            )
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(
                f"{who} does not support `ReduceLROnPlateau` scheduler as it requires additional "
                f"kwargs to be specified when calling `step`, but got one at index {i} in the "
                "given schedulers sequence."
            )
        if s.optimizer is not optimizer:
            raise ValueError(
                f"{who} expects all schedulers to belong to the same optimizer, but got scheduler "
                f"{type(s).__name__} at index {i} has {s.optimizer}, which is different from "
                f"{type(optimizer).__name__}."
            )


def _undo_first_step(schedulers):
    for s in schedulers:
        if isinstance(s, SequentialLR):
            _undo_first_step(s._schedulers)  # a nested SequentialLR's own epoch stays
        else:
            s.last_epoch -= 1


class SequentialLR(LRScheduler):
    """Runs ``schedulers[0]`` until ``milestones[0]``, then ``schedulers[1]`` (restarted) and so
    on.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        schedulers (list[LRScheduler]): the schedulers to run in turn.
        milestones (list[int]): the epochs at which to switch to the next scheduler.
        last_epoch (int): the index of the last epoch; -1 starts afresh.
    """

    def __init__(
        self,
        optimizer: "Optimizer",
        schedulers: list[LRScheduler],
        milestones: list[int],
        last_epoch: int = -1,
    ) -> None:
        if len(schedulers) < 1:
            raise ValueError(
                f"{type(self).__name__} expects at least one scheduler, but got no scheduler."
            )
        _check_same_optimizer(schedulers, optimizer, type(self).__name__)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more than "
                f"the number of milestone points, but got number of schedulers {len(schedulers)} "
                f"and the number of milestones to be equal to {len(milestones)}"
            )
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # Each scheduler took its first step when it was built; undo that and start from the first
        # one.
        for group in optimizer.param_groups:
            _set_group_value(group, "lr", group["initial_lr"])
        _undo_first_step(self._schedulers)
        self._schedulers[0]._initial_step()
        self._last_lr = self._schedulers[0].get_last_lr()

    def step(self) -> None:  # type: ignore[override]
        self.last_epoch += 1
        i = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # the epoch argument's deprecation
                scheduler.step(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self):
        """The scheduler's state, with the state of each child scheduler.

        Returns:
            dict: the state.
        """
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        """Restores the scheduler's state and its children's from :meth:`state_dict`'s output.

        Args:
            state_dict (dict): the saved state.
        """
        state = dict(state_dict)
        subs = state.pop("_schedulers")
        self.__dict__.update(state)
        for s, sub in zip(self._schedulers, subs):
            s.load_state_dict(sub)


class ChainedScheduler(LRScheduler):
    """Steps all ``schedulers`` (on one optimizer) together at every ``step()``.

    Args:
        schedulers (list[LRScheduler]): the schedulers to step together.
        optimizer (Optimizer, optional): their optimizer (taken from the schedulers when None).
    """

    def __init__(
        self, schedulers: list[LRScheduler], optimizer: Optional["Optimizer"] = None
    ) -> None:
        if len(schedulers) < 1:
            raise ValueError(
                f"{type(self).__name__} expects at least one scheduler to be chained, but got no "
                "scheduler."
            )
        optimizer = optimizer if optimizer is not None else schedulers[0].optimizer
        _check_same_optimizer(schedulers, optimizer, type(self).__name__)
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = self._group_lrs()

    def step(self) -> None:  # type: ignore[override]
        for s in self._schedulers:
            s.step()
        self._last_lr = self._group_lrs()

    def state_dict(self):
        """The scheduler's state, with the state of each child scheduler.

        Returns:
            dict: the state.
        """
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        """Restores the scheduler's state and its children's from :meth:`state_dict`'s output.

        Args:
            state_dict (dict): the saved state.
        """
        state = dict(state_dict)
        subs = state.pop("_schedulers")
        self.__dict__.update(state)
        for s, sub in zip(self._schedulers, subs):
            s.load_state_dict(sub)


def _set_momentum(group, value, use_beta1):
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


def _optimizer_defaults(optimizer):
    """The optimizer's ``defaults``, or (for a bare optimizer-like object) its first param group."""
    defaults = getattr(optimizer, "defaults", None)
    if defaults is None:
        defaults = optimizer.param_groups[0] if optimizer.param_groups else {}
    return defaults


class OneCycleLR(LRScheduler):
    """The 1cycle policy: lr rises from max_lr/div_factor to max_lr over the
    first ``pct_start`` of ``total_steps``, then anneals to
    max_lr/(div_factor*final_div_factor) (``three_phase``: back down to the
    initial lr first, then to the minimum). Momentum (or Adam's beta1) moves
    inversely between max_momentum and base_momentum. Step it every batch.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        max_lr (float or list[float]): the peak learning rate (per group).
        total_steps (int, optional): the length of the cycle; else epochs * steps_per_epoch.
        epochs (int, optional): the number of epochs.
        steps_per_epoch (int, optional): the number of steps per epoch.
        pct_start (float): the fraction of the cycle spent increasing the learning rate.
        anneal_strategy (str): 'cos' or 'linear'.
        cycle_momentum (bool): cycle the momentum (or beta1) inversely to the learning rate.
        base_momentum (float or list[float]): the lower momentum bound.
        max_momentum (float or list[float]): the upper momentum bound.
        div_factor (float): initial_lr = max_lr / div_factor.
        final_div_factor (float): min_lr = initial_lr / final_div_factor.
        three_phase (bool): add a third phase that anneals to min_lr after the symmetric ramp.
        last_epoch (int): the index of the last epoch; -1 starts afresh.
    """

    def __init__(
        self,
        optimizer: "Optimizer",
        max_lr: Union[float, list[float]],
        total_steps: Optional[int] = None,
        epochs: Optional[int] = None,
        steps_per_epoch: Optional[int] = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: Union[float, list[float]] = 0.85,
        max_momentum: Union[float, list[float]] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(
                    f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}"
                )
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._anneal_func_type = anneal_strategy
        total = self.total_steps
        if three_phase:
            self._schedule_phases = [
                dict(
                    end_step=float(pct_start * total) - 1,
                    start_lr="initial_lr",
                    end_lr="max_lr",
                    start_momentum="max_momentum",
                    end_momentum="base_momentum",
                ),
                dict(
                    end_step=float(2 * pct_start * total) - 2,
                    start_lr="max_lr",
                    end_lr="initial_lr",
                    start_momentum="base_momentum",
                    end_momentum="max_momentum",
                ),
                dict(
                    end_step=total - 1,
                    start_lr="initial_lr",
                    end_lr="min_lr",
                    start_momentum="max_momentum",
                    end_momentum="max_momentum",
                ),
            ]
        else:
            self._schedule_phases = [
                dict(
                    end_step=float(pct_start * total) - 1,
                    start_lr="initial_lr",
                    end_lr="max_lr",
                    start_momentum="max_momentum",
                    end_momentum="base_momentum",
                ),
                dict(
                    end_step=total - 1,
                    start_lr="max_lr",
                    end_lr="min_lr",
                    start_momentum="base_momentum",
                    end_momentum="max_momentum",
                ),
            ]
        max_lrs = _format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for m, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = m / div_factor
                group["max_lr"] = m
                group["min_lr"] = group["initial_lr"] / final_div_factor

        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            defaults = _optimizer_defaults(optimizer)
            if "momentum" not in defaults and "betas" not in defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
                )
            self.use_beta1 = "betas" in defaults
            max_ms = _format_param("max_momentum", optimizer, max_momentum)
            base_ms = _format_param("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for m_max, m_base, group in zip(max_ms, base_ms, optimizer.param_groups):
                    _set_momentum(group, m_max, self.use_beta1)
                    group["max_momentum"] = m_max
                    group["base_momentum"] = m_base
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        self._warn_if_called_outside_step()
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(
                f"Tried to step {step} times. The specified number of total steps is "
                f"{self.total_steps}"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lr = self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        momentum = self._anneal(
                            group[phase["start_momentum"]], group[phase["end_momentum"]], pct
                        )
                    break
                start = phase["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                _set_momentum(group, momentum, self.use_beta1)
        return lrs


class CyclicLR(LRScheduler):
    """Cyclical learning rate between base_lr and max_lr ('triangular',
    'triangular2', 'exp_range' or a custom ``scale_fn``), with momentum cycling
    inversely; step it every batch.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        base_lr (float or list[float]): the lower bound of the cycle (per group).
        max_lr (float or list[float]): the upper bound of the cycle (per group).
        step_size_up (int): the number of steps of the increasing half.
        step_size_down (int, optional): the number of steps of the decreasing half (default: up).
        mode (str): 'triangular', 'triangular2' or 'exp_range'.
        gamma (float): the decay constant of 'exp_range'.
        scale_fn (callable, optional): a custom amplitude scale (replaces mode).
        scale_mode (str): 'cycle' or 'iterations': what scale_fn takes.
        cycle_momentum (bool): cycle the momentum inversely to the learning rate.
        base_momentum (float or list[float]): the lower momentum bound.
        max_momentum (float or list[float]): the upper momentum bound.
        last_epoch (int): the index of the last epoch; -1 starts afresh.
    """

    def __init__(
        self,
        optimizer: "Optimizer",
        base_lr: Union[float, list[float]],
        max_lr: Union[float, list[float]],
        step_size_up: int = 2000,
        step_size_down: Optional[int] = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Optional[Callable[[float], float]] = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: Union[float, list[float]] = 0.8,
        max_momentum: Union[float, list[float]] = 0.9,
        last_epoch: int = -1,
    ) -> None:
        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                _set_group_value(group, "lr", lr)
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()

        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            defaults = _optimizer_defaults(optimizer)
            if "momentum" not in defaults and "betas" not in defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
                )
            self.use_beta1 = "betas" in defaults
            self.base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            self.max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for m_max, m_base, group in zip(
                    self.max_momentums, self.base_momentums, optimizer.param_groups
                ):
                    _set_momentum(group, m_max, self.use_beta1)
                    group["max_momentum"] = m_max
                    group["base_momentum"] = m_base
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self):
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref, self.scale_mode = (lambda x: 1.0), "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref, self.scale_mode = (lambda x: 1 / (2.0 ** (x - 1))), "cycle"
        else:
            gamma = self.gamma
            self._scale_fn_ref, self.scale_mode = (lambda x: gamma**x), "iterations"

    def scale_fn(self, x):
        """The amplitude scale of the cycle at ``x`` (the cycle number or the iteration).

        Args:
            x (float): the cycle number or the iteration, per ``scale_mode``.

        Returns:
            float: the scale.
        """
        return (self._scale_fn_custom or self._scale_fn_ref)(x)

    def get_lr(self):
        self._warn_if_called_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        scale = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [
            base + (top - base) * scale * self.scale_fn(at)
            for base, top in zip(self.base_lrs, self.max_lrs)
        ]
        if self.cycle_momentum:
            for group, lo, hi in zip(
                self.optimizer.param_groups, self.base_momentums, self.max_momentums
            ):
                _set_momentum(group, hi - (hi - lo) * scale * self.scale_fn(at), self.use_beta1)
        return lrs

    def state_dict(self):
        """The scheduler's state (a custom ``scale_fn`` is saved only when it is a callable object).

        Returns:
            dict: the state.
        """
        # The built-in scale functions are lambdas: rebuilt on load, not saved.
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = (
            None if fn is None or isinstance(fn, types.FunctionType) else fn.__dict__.copy()
        )
        return state

    def load_state_dict(self, state_dict):
        """Restores the scheduler's state from :meth:`state_dict`'s output.

        Args:
            state_dict (dict): the saved state.
        """
        state = dict(state_dict)
        fn = state.pop("_scale_fn_custom")
        super().load_state_dict(state)
        if fn is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


class ReduceLROnPlateau(LRScheduler):
    """Multiplies the lr by ``factor`` once the metric passed to ``step(metric)``
    has not improved for more than ``patience`` epochs, then waits ``cooldown``
    epochs; never below ``min_lr``, and changes smaller than ``eps`` are skipped.

    Improvement: in 'min' mode, ``a < best * (1 - threshold)`` ('rel') or
    ``a < best - threshold`` ('abs'); 'max' mode mirrors that.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        mode (str): 'min' (the metric should fall) or 'max'.
        factor (float): the factor of each reduction.
        patience (int): the number of epochs without improvement before a reduction.
        threshold (float): the smallest change counted as an improvement.
        threshold_mode (str): 'rel' or 'abs'.
        cooldown (int): the number of epochs to wait after a reduction.
        min_lr (float or list[float]): the lower bound of the learning rate (per group).
        eps (float): reductions smaller than this are skipped.
    """

    def __init__(
        self,
        optimizer: "Optimizer",
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: Union[float, list[float]] = 0,
        eps: float = 1e-8,
    ) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(
                    f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}"
                )
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = self._group_lrs()
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in ("min", "max"):
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.mode_worse = math.inf if mode == "min" else -math.inf

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def is_better(self, a, best):
        """Whether metric ``a`` improves on ``best`` by more than the threshold.

        Args:
            a (float): the new metric.
            best (float): the best metric so far.

        Returns:
            bool: True if ``a`` is an improvement.
        """
        if self.mode == "min":
            return a < (
                best * (1.0 - self.threshold)
                if self.threshold_mode == "rel"
                else best - self.threshold
            )
        return a > (
            best * (self.threshold + 1.0) if self.threshold_mode == "rel" else best + self.threshold
        )

    @property
    def in_cooldown(self):
        """Whether the scheduler is in its cooldown period after a reduction."""
        return self.cooldown_counter > 0

    def step(self, metrics: Any, epoch: Optional[int] = None) -> None:  # type: ignore[override]
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown don't count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._group_lrs()

    def _reduce_lr(self):
        groups = self.optimizer.param_groups
        if len(self.min_lrs) != len(groups):
            if self.default_min_lr is None:
                raise RuntimeError(
                    "The number of param groups in the `optimizer` "
                    f"({len(groups)}) differs from when `ReduceLROnPlateau` was initialized "
                    f"({len(self.min_lrs)}), usually due to a new param group being added to the "
                    "optimizer. Please modify the `min_lrs` field to match the length of the "
                    "`optimizer` param groups."
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, min_lr)
            if old - new > self.eps:
                _set_group_value(group, "lr", new)

    def load_state_dict(self, state_dict):
        """Restores the scheduler's state from :meth:`state_dict`'s output.

        Args:
            state_dict (dict): the saved state.
        """
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)
