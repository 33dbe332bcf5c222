"""Loss modules: thin wrappers that hold the options and call rumus.nn.functional."""

import warnings

from .. import functional as F
from .module import Module

__all__ = [
    "L1Loss",
    "MSELoss",
    "SmoothL1Loss",
    "HuberLoss",
    "NLLLoss",
    "CrossEntropyLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "KLDivLoss",
    "CosineEmbeddingLoss",
    "MarginRankingLoss",
    "CTCLoss",
    "MultiMarginLoss",
    "MultiLabelMarginLoss",
    "MultiLabelSoftMarginLoss",
    "TripletMarginLoss",
    "TripletMarginWithDistanceLoss",
    "HingeEmbeddingLoss",
    "PoissonNLLLoss",
    "GaussianNLLLoss",
]


def _legacy_reduction(size_average, reduce):
    """The reduction string for PyTorch's deprecated size_average/reduce flags (None means True)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "none" if not reduce else ("mean" if size_average else "sum")
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
        "instead."
    )
    return reduction


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    """A loss with an optional per-class `weight` tensor, kept as a buffer (it is in state_dict)."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """Mean (or sum) absolute error.

    Args:
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
    """

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean (or sum) squared error.

    Args:
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
    """

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Squared error / (2 beta) below beta, absolute error - beta / 2 above.

    Args:
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
        beta (float): the threshold between the quadratic and linear regimes.
    """

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Squared error / 2 below delta, delta * (absolute error - delta / 2) above.

    Args:
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
        delta (float): the threshold between the quadratic and linear regimes.
    """

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of class-index targets, given log-probabilities.

    Args:
        weight (Tensor, optional): a manual rescaling weight per class (or element).
        size_average: deprecated, use ``reduction``.
        ignore_index (int): targets with this value are ignored.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
    """

    def __init__(
        self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"
    ):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(
            input,
            target,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
        )


class CrossEntropyLoss(_WeightedLoss):
    """log_softmax + NLL for class-index targets, or soft cross entropy for class-probability
    targets.

    Args:
        weight (Tensor, optional): a manual rescaling weight per class (or element).
        size_average: deprecated, use ``reduction``.
        ignore_index (int): targets with this value are ignored.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
        label_smoothing (float): mixes the target with the uniform distribution by this amount.
    """

    def __init__(
        self,
        weight=None,
        size_average=None,
        ignore_index=-100,
        reduce=None,
        reduction="mean",
        label_smoothing=0.0,
    ):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(
            input,
            target,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities (logs clamped at -100).

    Args:
        weight (Tensor, optional): a manual rescaling weight per class (or element).
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
    """

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid + binary cross entropy in one stable step; pos_weight scales the positive term.

    Args:
        weight (Tensor, optional): a manual rescaling weight per class (or element).
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
        pos_weight (Tensor, optional): the weight of positive examples, per class.
    """

    def __init__(
        self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
    ):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, pos_weight=self.pos_weight, reduction=self.reduction
        )


class KLDivLoss(_Loss):
    """KL divergence of `target` from log-probabilities `input` (reduction 'batchmean' is the
    true KL).

    Args:
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
        log_target (bool): the target is given in log space.
    """

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CosineEmbeddingLoss(_Loss):
    """1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1.

    Args:
        margin (float): the margin.
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
    """

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(
            input1, input2, target, margin=self.margin, reduction=self.reduction
        )


class MarginRankingLoss(_Loss):
    """max(0, -target * (x1 - x2) + margin).

    Args:
        margin (float): the margin.
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
    """

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(
            input1, input2, target, margin=self.margin, reduction=self.reduction
        )


class CTCLoss(_Loss):
    """Connectionist temporal classification loss.

    -log p(target | log_probs) summed over every alignment; 'mean' divides each sample's
    loss by its target length first.

    Args:
        blank (int): the index of the blank label.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
        zero_infinity (bool): replace infinite losses (impossible alignments) and their
            gradients by zero.
    """

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(
            log_probs,
            targets,
            input_lengths,
            target_lengths,
            self.blank,
            self.reduction,
            self.zero_infinity,
        )


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss: sum over wrong classes of max(0, margin - x[y] + x[i])^p / C.

    Args:
        p (int): 1 or 2.
        margin (float): the margin.
        weight (Tensor, optional): a weight per class, shape (C,).
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
    """

    def __init__(
        self, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"
    ):
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(
                f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.dim()}D "
                "instead"
            )
        self.p = p
        self.margin = margin

    def forward(self, input, target):
        return F.multi_margin_loss(
            input,
            target,
            p=self.p,
            margin=self.margin,
            weight=self.weight,
            reduction=self.reduction,
        )


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss over (target class, non-target class) pairs.

    The targets of a sample are the class indices before its first -1.

    Args:
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
    """

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per-class logistic loss on multi-hot targets, averaged over the classes.

    Args:
        weight (Tensor, optional): a weight per class, shape (C,).
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
    """

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(
            input, target, weight=self.weight, reduction=self.reduction
        )


class TripletMarginLoss(_Loss):
    """max(0, margin + d(a, p) - d(a, n)) with the p-norm pairwise distance.

    Args:
        margin (float): the margin (> 0).
        p (float): the norm of the distance.
        eps (float): added to the differences for numerical stability.
        swap (bool): use min(d(a, n), d(p, n)) as the negative distance.
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
    """

    def __init__(
        self,
        margin=1.0,
        p=2.0,
        eps=1e-6,
        swap=False,
        size_average=None,
        reduce=None,
        reduction="mean",
    ):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(
                f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead"
            )
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(
            anchor,
            positive,
            negative,
            margin=self.margin,
            p=self.p,
            eps=self.eps,
            swap=self.swap,
            reduction=self.reduction,
        )


class TripletMarginWithDistanceLoss(_Loss):
    """TripletMarginLoss with any distance function (pairwise_distance by default).

    Args:
        distance_function (callable, optional): maps two tensors to their distances.
        margin (float): the margin (> 0).
        swap (bool): use min(d(a, n), d(p, n)) as the negative distance.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
    """

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(
                f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got "
                f"{margin} instead"
            )
        self.distance_function = distance_function
        self.margin = margin
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor,
            positive,
            negative,
            distance_function=self.distance_function,
            margin=self.margin,
            swap=self.swap,
            reduction=self.reduction,
        )


class HingeEmbeddingLoss(_Loss):
    """x for target 1, max(0, margin - x) for target -1.

    Args:
        margin (float): the margin.
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
    """

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of a Poisson target given its (log) rate.

    Args:
        log_input (bool): the input is log(rate) (loss exp(x) - y x) rather than the rate
            (loss x - y log(x + eps)).
        full (bool): add the Stirling approximation of log(y!).
        size_average: deprecated, use ``reduction``.
        reduce: deprecated, use ``reduction``.
        eps (float): keeps log(x + eps) finite when log_input is False.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
    """

    def __init__(
        self,
        log_input=True,
        full=False,
        size_average=None,
        eps=1e-8,
        reduce=None,
        reduction="mean",
    ):
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(
            log_input,
            target,
            log_input=self.log_input,
            full=self.full,
            eps=self.eps,
            reduction=self.reduction,
        )


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of a Gaussian target given its mean (input) and variance.

    Args:
        full (bool): add the constant 0.5 log(2π).
        eps (float): the variance is clamped to at least eps.
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
    """

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(
            input, target, var, full=self.full, eps=self.eps, reduction=self.reduction
        )
