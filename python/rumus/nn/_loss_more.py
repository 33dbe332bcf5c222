"""rumus.nn.functional's losses, continued: ctc_loss (a Rust kernel, the alpha-beta
recursion) and the margin, triplet and likelihood losses (compositions of
differentiable rumus ops). functional.py re-exports them."""

import math
import numbers

from .. import _rumus
from .._rumus import Tensor
from ..autograd import no_grad
from . import functional as F
from ._functional_more import _float, _tensor

__all__ = [
    "ctc_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
    "hinge_embedding_loss",
    "poisson_nll_loss",
    "gaussian_nll_loss",
]


def _lengths(v, what):
    """Lengths as a list of ints: a tensor (0-d or 1-d), an int, or a sequence of ints."""
    if isinstance(v, Tensor):
        if v.is_floating_point() or v.dtype == _rumus.bool:
            raise RuntimeError(f"ctc_loss: {what} must be an integer tensor, got {v.dtype}")
        v = v.tolist()
    if isinstance(v, numbers.Integral):
        return [int(v)]
    return [int(x) for x in v]


def ctc_loss(
    log_probs,
    targets,
    input_lengths,
    target_lengths,
    blank=0,
    reduction="mean",
    zero_infinity=False,
):
    """Connectionist temporal classification loss.

    Targets are (N, S) padded, or 1-D with the N targets concatenated. 'mean' divides each
    loss by its target length, then averages over the batch. A target longer than its input
    raises ValueError unless ``zero_infinity`` (PyTorch returns inf).

    Differences from PyTorch: the gradient is d loss / d log_probs exactly (PyTorch's adds
    exp(log_probs), which cancels once it passes back through log_softmax, so the usual
    ``ctc_loss(x.log_softmax(-1), ...)`` gets the same gradient); GPU log_probs are copied
    to the host for the recursion and the results copied back (rust/ops/ctc.rs).

    Args:
        log_probs: log-probabilities (T, N, C), or unbatched (T, C).
        targets: the target label sequences (no blanks).
        input_lengths: the length of each input (a tensor, an int or a sequence of ints).
        target_lengths: the length of each target (a tensor, an int or a sequence of ints).
        blank: the index of the blank label.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.
        zero_infinity: replace infinite losses (impossible alignments) and their gradients by 0.

    Returns:
        The loss (a scalar, or (N,) with reduction='none').
    """
    _float("ctc_loss", log_probs, "log_probs")
    _tensor("ctc_loss", "targets", targets)
    reduction = F._reduction(reduction)
    unbatched = log_probs.dim() == 2
    if unbatched:
        if targets.dim() != 1:
            raise RuntimeError(
                f"ctc_loss: unbatched log_probs {list(log_probs.shape)} (T, C) need 1-D targets, "
                f"got shape {list(targets.shape)}"
            )
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0)
    elif log_probs.dim() != 3:
        raise RuntimeError(
            f"ctc_loss: log_probs must be (T, N, C) or unbatched (T, C), got shape "
            f"{list(log_probs.shape)}"
        )
    il = _lengths(input_lengths, "input_lengths")
    tl = _lengths(target_lengths, "target_lengths")
    # A target longer than its input has no alignment at all: a mistake in the lengths, so
    # it raises (PyTorch returns inf). zero_infinity=True asks for those losses to be zeroed,
    # as it does for targets that fit but cannot align (repeats needing separating blanks).
    longer = [i for i, (a, b) in enumerate(zip(il, tl)) if 0 <= a < b]
    if longer and not zero_infinity:
        i = longer[0]
        raise ValueError(
            f"ctc_loss: target {i} has length {tl[i]}, longer than its input length {il[i]}; "
            "pass zero_infinity=True to get a zero loss for such samples instead"
        )
    nll = _rumus._ctc_loss(log_probs, targets, il, tl, blank, zero_infinity)
    if unbatched:
        nll = nll.squeeze(0)
    if reduction == "mean":
        div = _rumus.tensor(tl, dtype=nll.dtype, device=nll.device).clamp_min(1.0)
        return (nll / div.reshape(nll.shape)).mean()
    return F._reduce(nll, reduction)


def _classes_check(op, input, target):
    """(N, C) or unbatched (C,) input with a class index per sample."""
    if input.dim() not in (1, 2) or input.dim() == 2 and input.size(1) == 0:
        raise RuntimeError(
            f"{op}: expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{list(input.shape)}"
        )


def multi_margin_loss(
    input,
    target,
    p=1,
    margin=1.0,
    weight=None,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """Multi-class hinge loss.

    Sum over i != y of max(0, margin - x[y] + x[i])^p (times weight[y]), divided by C.

    Args:
        input: scores (N, C), or unbatched (C,).
        target: the class index of each sample, (N,) or ().
        p: 1 or 2.
        margin: the margin.
        weight: a weight per class, shape (C,).
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Returns:
        The loss.
    """
    reduction = F._reduction(reduction, size_average, reduce)
    _float("multi_margin_loss", input)
    _tensor("multi_margin_loss", "target", target)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    _classes_check("multi_margin_loss", input, target)
    x = input if input.dim() == 2 else input.unsqueeze(0)
    n, c = x.shape
    if (
        target.dtype not in (_rumus.int64, _rumus.int32)
        or target.numel() != n
        or (target.dim() > 1)
    ):
        raise RuntimeError(
            f"multi_margin_loss: inconsistent target size: {list(target.shape)} (expected {n} "
            f"int64 class indices) for input of size: {list(input.shape)}"
        )
    if weight is not None and (weight.dim() != 1 or weight.numel() != c):
        raise RuntimeError(
            f"multi_margin_loss: inconsistent weight size, expected {c} but got "
            f"{list(weight.shape)}"
        )
    y = target.reshape(n, 1).long()
    if n and bool(((y < 0) | (y >= c)).any().item()):
        raise IndexError(f"multi_margin_loss: target out of range for {c} classes")
    z = (x - x.gather(1, y) + margin).clamp_min(0.0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, y.reshape(-1)).unsqueeze(1)
    own = _rumus.arange(c, device=x.device).unsqueeze(0) == y
    loss = z.masked_fill(own, 0.0).sum(1) / c
    if input.dim() == 1:
        loss = loss.squeeze(0)
    return F._reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge loss over (target class, non-target class) pairs.

    For each sample the target classes are target's entries before the first -1; the loss
    sums max(0, 1 - (x[j] - x[i])) over target j and non-target i, divided by C.

    Args:
        input: scores (N, C), or unbatched (C,).
        target: int64 class indices of input's shape, padded with -1.
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Returns:
        The loss.
    """
    reduction = F._reduction(reduction, size_average, reduce)
    _float("multilabel_margin_loss", input)
    _tensor("multilabel_margin_loss", "target", target)
    _classes_check("multilabel_margin_loss", input, target)
    if tuple(target.shape) != tuple(input.shape) or target.dtype not in (
        _rumus.int64,
        _rumus.int32,
    ):
        raise RuntimeError(
            f"multilabel_margin_loss: inconsistent target size: {list(target.shape)} "
            f"({target.dtype}) for input of size: {list(input.shape)} (int64 expected)"
        )
    x = input if input.dim() == 2 else input.unsqueeze(0)
    t = (target if target.dim() == 2 else target.unsqueeze(0)).long()
    n, c = x.shape
    # the labels up to the first -1 count
    valid = (t == -1).long().cumsum(1) == 0
    safe = _rumus.where(valid, t, 0)
    if n and bool(((safe < 0) | (safe >= c)).any().item()):
        raise IndexError(f"multilabel_margin_loss: target out of range for {c} classes")
    is_target = _rumus.zeros((n, c), device=x.device).scatter_add(1, safe, valid.float()) > 0
    xj = x.gather(1, safe)  # (n, k): the target scores, duplicates counted as PyTorch does
    hinge = (1.0 - xj.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0.0)
    mask = valid.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = hinge.masked_fill(~mask, 0.0).sum((1, 2)) / c
    if input.dim() == 1:
        loss = loss.squeeze(0)
    return F._reduce(loss, reduction)


def multilabel_soft_margin_loss(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    """Mean over the classes of the binary logistic loss of each class.

    Args:
        input: scores (N, C).
        target: multi-hot targets (0 or 1) of input's shape.
        weight: a weight per class, shape (C,).
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Returns:
        The loss.
    """
    reduction = F._reduction(reduction, size_average, reduce)
    _float("multilabel_soft_margin_loss", input)
    _tensor("multilabel_soft_margin_loss", "target", target)
    if input.dim() == 0:
        raise RuntimeError("multilabel_soft_margin_loss: input must have a class dimension")
    loss = -(target * F.logsigmoid(input) + (1 - target) * F.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.dim() - 1) / input.size(-1)
    return F._reduce(loss, reduction)


def _same_ndim(op, a, p, n):
    if not a.dim() == p.dim() == n.dim():
        raise RuntimeError(
            f"{op}: The anchor, positive, and negative tensors are expected to have the same "
            f"number of dimensions, but got: anchor {a.dim()}D, positive {p.dim()}D, and "
            f"negative {n.dim()}D inputs"
        )


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin=1.0,
    p=2,
    eps=1e-6,
    swap=False,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """Triplet loss max(0, margin + d(a, p) - d(a, n)) with d the p-norm pairwise distance.

    Args:
        anchor: anchors (N, D), or unbatched (D,).
        positive: positive examples, shaped as anchor.
        negative: negative examples, shaped as anchor.
        margin: the margin.
        p: the norm of the distance.
        eps: added to the differences for numerical stability.
        swap: use min(d(a, n), d(p, n)) as the negative distance.
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Returns:
        The loss.
    """
    reduction = F._reduction(reduction, size_average, reduce)
    for name, t in (("anchor", anchor), ("positive", positive), ("negative", negative)):
        _float("triplet_margin_loss", t, name)
    _same_ndim("triplet_margin_loss", anchor, positive, negative)
    if anchor.dim() not in (1, 2):
        raise RuntimeError(
            f"triplet_margin_loss: expected 1D (unbatched) or 2D (batched) inputs, got anchor "
            f"of shape {list(anchor.shape)}"
        )
    d_pos = F.pairwise_distance(anchor, positive, p, eps)
    d_neg = F.pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(F.pairwise_distance(positive, negative, p, eps))
    return F._reduce((d_pos - d_neg + margin).clamp_min(0.0), reduction)


def triplet_margin_with_distance_loss(
    anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False, reduction="mean"
):
    """triplet_margin_loss with any distance function (pairwise_distance by default).

    Args:
        anchor: anchors.
        positive: positive examples.
        negative: negative examples.
        distance_function: maps two tensors to their distances (default: pairwise_distance).
        margin: the margin (> 0).
        swap: use min(d(a, n), d(p, n)) as the negative distance.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Returns:
        The loss.
    """
    reduction = F._reduction(reduction)
    if margin <= 0:
        raise ValueError(
            f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
            "instead"
        )
    for name, t in (("anchor", anchor), ("positive", positive), ("negative", negative)):
        if distance_function is None:
            _float("triplet_margin_with_distance_loss", t, name)
        else:
            _tensor("triplet_margin_with_distance_loss", name, t)
    _same_ndim("triplet_margin_with_distance_loss", anchor, positive, negative)
    dist = F.pairwise_distance if distance_function is None else distance_function
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(dist(positive, negative))
    return F._reduce((d_pos - d_neg + margin).clamp_min(0.0), reduction)


def hinge_embedding_loss(
    input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"
):
    """x where target is 1, max(0, margin - x) where target is -1.

    Args:
        input: the input (typically a distance).
        target: 1 or -1 for each element.
        margin: the margin.
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Returns:
        The loss.
    """
    reduction = F._reduction(reduction, size_average, reduce)
    _float("hinge_embedding_loss", input)
    _tensor("hinge_embedding_loss", "target", target)
    margin_term = _rumus.where(target != 1, (margin - input).clamp_min(0.0), 0.0)
    self_term = _rumus.where(target != -1, input, 0.0)
    return F._reduce(margin_term + self_term, reduction)


def poisson_nll_loss(
    input,
    target,
    log_input=True,
    full=False,
    size_average=None,
    eps=1e-8,
    reduce=None,
    reduction="mean",
):
    """Negative log-likelihood of target ~ Poisson(rate).

    exp(x) - t x for log rates, x - t log(x + eps) for rates; full adds Stirling's term
    for targets above 1.

    Args:
        input: the rate, or its log with log_input.
        target: the observed counts.
        log_input: whether input is log(rate).
        full: add Stirling's approximation of log(t!).
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        eps: keeps log(x + eps) finite when log_input is False.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Returns:
        The loss.
    """
    reduction = F._reduction(reduction, size_average, reduce)
    _float("poisson_nll_loss", input)
    _tensor("poisson_nll_loss", "target", target)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        big = target > 1
        t = _rumus.where(big, target, 2.0)  # finite logs where the term is dropped
        stirling = t * t.log() - t + 0.5 * (2 * math.pi * t).log()
        loss = loss + _rumus.where(big, stirling, 0.0)
    return F._reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Negative log-likelihood of a Gaussian target: 0.5 (log var + (x - t)^2 / var).

    Adds 0.5 log 2π when full. var has input's shape, or one fewer trailing dim (one
    variance per sample), or a trailing dim of 1; it is clamped at eps for the value while
    its gradient passes unclamped, as PyTorch's.

    Args:
        input: the predicted means.
        target: the observed values.
        var: the predicted variances (a tensor or a non-negative number).
        full: add the constant term.
        eps: the lower clamp of var.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Returns:
        The loss.
    """
    _float("gaussian_nll_loss", input)
    _tensor("gaussian_nll_loss", "target", target)
    if isinstance(var, numbers.Real):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = _rumus.full_like(input, float(var))
    _tensor("gaussian_nll_loss", "var", var)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (
            input.dim() == var.dim()
            and tuple(input.shape[:-1]) == tuple(var.shape[:-1])
            and var.size(-1) == 1
        ):
            raise ValueError(
                f"var is of incorrect size: {list(var.shape)} for input of size {list(input.shape)}"
            )
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any().item()):
        raise ValueError("var has negative entry/entries")
    with no_grad():
        lift = var.clamp_min(eps) - var
    var = var + lift
    loss = 0.5 * (var.log() + (input - target).square() / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return F._reduce(loss, reduction)
