"""Stochastic weight averaging and EMA of weights (torch.optim.swa_utils):
AveragedModel, SWALR, update_bn and the averaging functions."""

import itertools
import math
from copy import deepcopy

from .. import _rumus
from ..autograd import no_grad
from ..nn.modules.module import Module
from ..nn.modules.normalization import _BatchNorm
from .lr_scheduler import LRScheduler, _format_param

__all__ = [
    "AveragedModel",
    "update_bn",
    "SWALR",
    "get_ema_multi_avg_fn",
    "get_swa_multi_avg_fn",
    "get_ema_avg_fn",
    "get_swa_avg_fn",
]


def get_ema_multi_avg_fn(decay=0.999):
    """An in-place EMA over lists of tensors: ema = decay·ema + (1 - decay)·current.

    Args:
        decay: the decay.

    Returns:
        A function for AveragedModel's ``multi_avg_fn``.
    """

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        for p_ema, p_model in zip(ema_param_list, current_param_list):
            if p_ema.is_floating_point():
                p_ema.add_((p_model - p_ema) * (1 - decay))
            else:
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """An in-place running mean over lists of tensors: avg += (current - avg) / (n + 1)."""

    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        for p_avg, p_model in zip(averaged_param_list, current_param_list):
            p_avg.copy_(p_avg + (p_model - p_avg) / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """EMA of one tensor: returns decay·ema + (1 - decay)·current.

    Args:
        decay: the decay.

    Returns:
        A function for AveragedModel's ``avg_fn``.
    """

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """Running mean of one tensor: returns avg + (current - avg) / (n + 1)."""

    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A deep copy of ``model`` whose parameters hold an average of ``model``'s.

    The average runs over the calls of ``update_parameters``: the running mean (SWA) by
    default. ``n_averaged`` is an int64 buffer.

    Args:
        model: the model to average.
        device: where to keep the copy (default: where the model is).
        avg_fn: ``avg_fn(averaged, current, n_averaged)`` returning the new average of a tensor.
        multi_avg_fn: ``multi_avg_fn(averaged_list, current_list, n_averaged)`` updating lists
            of tensors in place.
        use_buffers: average the buffers too (else they are copied).
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise ValueError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        n = _rumus.tensor(0, dtype=_rumus.int64)
        self.register_buffer("n_averaged", n if device is None else n.to(device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _averaged(self, model):
        if self.use_buffers:
            return (
                itertools.chain(self.module.parameters(), self.module.buffers()),
                itertools.chain(model.parameters(), model.buffers()),
            )
        return self.parameters(), model.parameters()

    @no_grad()
    def update_parameters(self, model):
        mine, theirs = self._averaged(model)
        averaged, current = [], []
        first = int(self.n_averaged) == 0
        for p_avg, p_model in zip(mine, theirs):
            p_avg = p_avg.detach()
            p_model = p_model.detach().to(p_avg.device)
            averaged.append(p_avg)
            current.append(p_model)
            if first:
                p_avg.copy_(p_model)
        if not first:
            n = self.n_averaged
            if self.avg_fn is not None:
                for p_avg, p_model in zip(averaged, current):
                    p_avg.copy_(self.avg_fn(p_avg, p_model, n.to(p_avg.device)))
            else:
                fn = self.multi_avg_fn or get_swa_multi_avg_fn()
                # One call per device and dtype, as PyTorch groups them.
                groups = {}
                for p_avg, p_model in zip(averaged, current):
                    key = (str(p_avg.device), str(p_avg.dtype))
                    groups.setdefault(key, ([], []))
                    groups[key][0].append(p_avg)
                    groups[key][1].append(p_model)
                for avg_list, cur_list in groups.values():
                    fn(avg_list, cur_list, n.to(avg_list[0].device))
        if not self.use_buffers:
            # Buffers are not averaged: keep them in sync with the source model.
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged.add_(1)


@no_grad()
def update_bn(loader, model, device=None):
    """Recomputes the running statistics of every BatchNorm of ``model`` over ``loader``.

    One pass, as a cumulative average; a batch that is a list or tuple gives its first element.

    Args:
        loader: an iterable of batches.
        model: the model.
        device: if given, each batch is moved there first.
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to ``swa_lr`` over ``anneal_epochs`` steps, then holds it.

    Args:
        optimizer: the wrapped optimizer.
        swa_lr: the final learning rate (a float, or a list with one per group).
        anneal_epochs: the number of annealing steps.
        anneal_strategy: "cos" or "linear".
        last_epoch: the index of the last epoch.
    """

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        for lr, group in zip(_format_param("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must by one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        self._warn_if_called_outside_step()
        # The lr before annealing is recovered from the current one, so the
        # schedule composes with other schedulers (PyTorch's chainable form).
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        span = max(1, self.anneal_epochs)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / span)))
        prev_lrs = [
            self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha)
            for g in self.optimizer.param_groups
        ]
        alpha = self.anneal_func(max(0, min(1, step / span)))
        return [
            g["swa_lr"] * alpha + lr * (1 - alpha)
            for g, lr in zip(self.optimizer.param_groups, prev_lrs)
        ]
