"""PyTorch's top-level spellings of nn.functional ops (``torch.softmax``, ``torch.conv2d``,
``torch.batch_norm``...), with torch's signatures: argument order, names and defaults of the
``torch.X`` function, which differ from ``F.X`` for some of them (``torch.embedding`` takes
the weight first, ``torch.batch_norm`` takes every argument positionally, the losses take
``reduction`` as an int). Each one delegates to its ``rumus.nn.functional`` twin, which
validates the input. Also torch's top-level spellings of Tensor methods (``torch.exp_``,
``torch.detach``) and its aliases (``torch.arccos``, ``torch.subtract``): the methods themselves.
"""

from . import _rumus
from ._rumus import Tensor
from .nn import functional as F

# torch's top-level functions that are Tensor methods here: the methods themselves, as
# rumus.exp is Tensor.exp (the in-place forms, detach, metadata queries).
broadcast_to = Tensor.broadcast_to
abs_ = Tensor.abs_
acos_ = Tensor.acos_
acosh_ = Tensor.acosh_
arccosh_ = Tensor.arccosh_
asinh_ = Tensor.asinh_
arcsinh_ = Tensor.arcsinh_
atanh_ = Tensor.atanh_
arctanh_ = Tensor.arctanh_
addmv_ = Tensor.addmv_
asin_ = Tensor.asin_
atan_ = Tensor.atan_
ceil_ = Tensor.ceil_
clamp_ = Tensor.clamp_
clamp_max_ = Tensor.clamp_max_
clamp_min_ = Tensor.clamp_min_
cos_ = Tensor.cos_
cosh_ = Tensor.cosh_
erf_ = Tensor.erf_
erfc_ = Tensor.erfc_
exp2_ = Tensor.exp2_
exp_ = Tensor.exp_
expm1_ = Tensor.expm1_
fill_ = Tensor.fill_
floor_ = Tensor.floor_
i0_ = Tensor.i0_
log10_ = Tensor.log10_
log1p_ = Tensor.log1p_
log2_ = Tensor.log2_
log_ = Tensor.log_
logit_ = Tensor.logit_
nan_to_num_ = Tensor.nan_to_num_
neg_ = Tensor.neg_
negative_ = Tensor.negative_
reciprocal_ = Tensor.reciprocal_
round_ = Tensor.round_
rsqrt_ = Tensor.rsqrt_
sigmoid_ = Tensor.sigmoid_
sin_ = Tensor.sin_
sinh_ = Tensor.sinh_
sqrt_ = Tensor.sqrt_
square_ = Tensor.square_
tan_ = Tensor.tan_
tanh_ = Tensor.tanh_
trunc_ = Tensor.trunc_
xlogy_ = Tensor.xlogy_
zero_ = Tensor.zero_
detach = Tensor.detach
detach_ = Tensor.detach_
is_conj = Tensor.is_conj
is_floating_point = Tensor.is_floating_point

# NumPy-style and older names torch keeps as aliases.
arccos = Tensor.acos
arcsin = Tensor.asin
arctan = Tensor.atan
arctan2 = Tensor.atan2
arccos_ = Tensor.acos_
arcsin_ = Tensor.asin_
arctan_ = Tensor.atan_
greater = Tensor.gt
greater_equal = Tensor.ge
less = Tensor.lt
less_equal = Tensor.le
not_equal = Tensor.ne
subtract = Tensor.sub
swapdims = Tensor.transpose
fix = Tensor.trunc
fix_ = Tensor.trunc_
clip_ = Tensor.clamp_

# Same signatures as torch's (up to how a default is spelled): the functions themselves.
conv1d = F.conv1d
conv2d = F.conv2d
conv3d = F.conv3d
conv_transpose1d = F.conv_transpose1d
conv_transpose2d = F.conv_transpose2d
conv_transpose3d = F.conv_transpose3d
avg_pool1d = F.avg_pool1d
adaptive_avg_pool1d = F.adaptive_avg_pool1d
bilinear = F.bilinear
prelu = F.prelu
pixel_shuffle = F.pixel_shuffle
pixel_unshuffle = F.pixel_unshuffle
channel_shuffle = F.channel_shuffle
hardshrink = F.hardshrink
rms_norm = F.rms_norm
relu_ = F.relu_
selu_ = F.selu_
celu_ = F.celu_
threshold_ = F.threshold_

# ATen's reduction enum, which torch's top-level losses take instead of a string. Left out, it
# is 0 (none): torch's Python binding passes 0 although its schema and stubs say 1 (mean), and
# ported scripts rely on what the binding does.
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(op, reduction):
    if isinstance(reduction, bool) or not isinstance(reduction, int):
        raise TypeError(
            f"{op}(): argument 'reduction' must be int (0: none, 1: mean, 2: sum), "
            f"not {type(reduction).__name__}"
        )
    if reduction not in _REDUCTIONS:
        raise ValueError(
            f"{op}(): reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction}"
        )
    return _REDUCTIONS[reduction]


def _pool_stride(stride):
    """torch's pooling functions default ``stride`` to ``[]``: the kernel size."""
    return None if stride is None or (isinstance(stride, (list, tuple)) and not stride) else stride


def softmax(input, dim, dtype=None):
    """Softmax along ``dim``; see :func:`rumus.nn.functional.softmax`.

    Args:
        input (Tensor): the input.
        dim (int): the dimension the probabilities sum to 1 along.
        dtype (rumus.dtype, optional): cast the input to this dtype first.

    Returns:
        Tensor: of the input's shape.
    """
    return F.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, dtype=None):
    """Log of the softmax along ``dim``; see :func:`rumus.nn.functional.log_softmax`.

    Args:
        input (Tensor): the input.
        dim (int): the dimension to normalise along.
        dtype (rumus.dtype, optional): cast the input to this dtype first.

    Returns:
        Tensor: of the input's shape.
    """
    return F.log_softmax(input, dim, dtype=dtype)


def dropout(input, p, train):
    """Zeroes each element with probability ``p`` and scales the others by ``1 / (1 - p)``.

    Args:
        input (Tensor): the input.
        p (float): the probability of zeroing an element.
        train (bool): apply dropout (False returns the input unchanged).

    Returns:
        Tensor: of the input's shape.
    """
    return F.dropout(input, p, train)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    """Layer normalisation over the trailing ``normalized_shape`` dimensions.

    Args:
        input (Tensor): of shape ``(*, *normalized_shape)``.
        normalized_shape (int or tuple of ints): the trailing dimensions to normalise.
        weight (Tensor, optional): elementwise scale, of shape ``normalized_shape``.
        bias (Tensor, optional): elementwise shift, of shape ``normalized_shape``.
        eps (float): added to the variance.
        cudnn_enable (bool): a CUDA backend switch, ignored.

    Returns:
        Tensor: of the input's shape.
    """
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    """Group normalisation over groups of channels.

    Args:
        input (Tensor): of shape ``(N, C, *)``.
        num_groups (int): how many groups the ``C`` channels form.
        weight (Tensor, optional): per-channel scale, of shape ``(C,)``.
        bias (Tensor, optional): per-channel shift, of shape ``(C,)``.
        eps (float): added to the variance.
        cudnn_enabled (bool): a CUDA backend switch, ignored.

    Returns:
        Tensor: of the input's shape.
    """
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(
    input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled
):
    """Batch normalisation, in torch's top-level argument order (all positional).

    Args:
        input (Tensor): of shape ``(N, C, *)``.
        weight (Tensor or None): per-channel scale, of shape ``(C,)``.
        bias (Tensor or None): per-channel shift, of shape ``(C,)``.
        running_mean (Tensor or None): running mean, updated in place when training.
        running_var (Tensor or None): running variance, updated in place when training.
        training (bool): normalise with the batch statistics (else the running ones).
        momentum (float): the weight of the batch statistics in the running update.
        eps (float): added to the variance.
        cudnn_enabled (bool): a CUDA backend switch, ignored.

    Returns:
        Tensor: of the input's shape.
    """
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(
    input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled
):
    """Instance normalisation, in torch's top-level argument order (all positional).

    Args:
        input (Tensor): of shape ``(N, C, *)``.
        weight (Tensor or None): per-channel scale, of shape ``(C,)``.
        bias (Tensor or None): per-channel shift, of shape ``(C,)``.
        running_mean (Tensor or None): running mean, updated in place with the input's stats.
        running_var (Tensor or None): running variance, updated likewise.
        use_input_stats (bool): normalise with each instance's statistics (else the running ones).
        momentum (float): the weight of the new statistics in the running update.
        eps (float): added to the variance.
        cudnn_enabled (bool): a CUDA backend switch, ignored.

    Returns:
        Tensor: of the input's shape.
    """
    return F.instance_norm(
        input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """1-d max pooling; see :func:`rumus.nn.functional.max_pool1d`.

    Args:
        input (Tensor): of shape ``(N, C, L)`` or ``(C, L)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple): the window step (empty: ``kernel_size``).
        padding (int or tuple): implicit ``-inf`` padding on both sides.
        dilation (int or tuple): the spacing of the window's elements.
        ceil_mode (bool): round the output length up instead of down.

    Returns:
        Tensor: the pooled values.
    """
    return F.max_pool1d(input, kernel_size, _pool_stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """1-d max pooling that also returns where each maximum was.

    Args:
        input (Tensor): of shape ``(N, C, L)`` or ``(C, L)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple): the window step (empty: ``kernel_size``).
        padding (int or tuple): implicit ``-inf`` padding on both sides.
        dilation (int or tuple): the spacing of the window's elements.
        ceil_mode (bool): round the output length up instead of down.

    Returns:
        tuple[Tensor, Tensor]: the pooled values and their int64 positions along ``L``.
    """
    return F.max_pool1d(
        input, kernel_size, _pool_stride(stride), padding, dilation, ceil_mode, return_indices=True
    )


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """2-d max pooling; see :func:`rumus.nn.functional.max_pool2d`.

    Args:
        input (Tensor): of shape ``(N, C, H, W)`` or ``(C, H, W)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple): the window step (empty: ``kernel_size``).
        padding (int or tuple): implicit ``-inf`` padding on both sides.
        dilation (int or tuple): the spacing of the window's elements.
        ceil_mode (bool): round the output size up instead of down.

    Returns:
        Tensor: the pooled values.
    """
    return F.max_pool2d(input, kernel_size, _pool_stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """3-d max pooling; see :func:`rumus.nn.functional.max_pool3d`.

    Args:
        input (Tensor): of shape ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple): the window step (empty: ``kernel_size``).
        padding (int or tuple): implicit ``-inf`` padding on both sides.
        dilation (int or tuple): the spacing of the window's elements.
        ceil_mode (bool): round the output size up instead of down.

    Returns:
        Tensor: the pooled values.
    """
    return F.max_pool3d(input, kernel_size, _pool_stride(stride), padding, dilation, ceil_mode)


def adaptive_max_pool1d(input, output_size):
    """1-d adaptive max pooling: the values and their positions, as torch's top-level one.

    Args:
        input (Tensor): of shape ``(N, C, L)`` or ``(C, L)``.
        output_size (int or tuple): the output length.

    Returns:
        tuple[Tensor, Tensor]: the pooled values and their int64 positions along ``L``.
    """
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` picked by ``indices`` (torch's order: the weight first).

    Args:
        weight (Tensor): the table, of shape ``(num_embeddings, embedding_dim)``.
        indices (Tensor): int64 or int32 row numbers, any shape.
        padding_idx (int): the row that gets no gradient (negative: none).
        scale_grad_by_freq (bool): divide each row's gradient by its count in ``indices``.
        sparse (bool): sparse gradients (rumus computes them dense).

    Returns:
        Tensor: of shape ``(*indices.shape, embedding_dim)``.
    """
    return F.embedding(
        indices,
        weight,
        padding_idx=None if padding_idx < 0 else padding_idx,
        scale_grad_by_freq=scale_grad_by_freq,
        sparse=sparse,
    )


def celu(input, alpha=1.0):
    """CELU: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Args:
        input (Tensor): the input.
        alpha (float): the negative saturation value's magnitude.

    Returns:
        Tensor: of the input's shape.
    """
    return F.celu(input, alpha)


def selu(input):
    """SELU: ``scale * elu(x, alpha)`` with the self-normalising constants.

    Args:
        input (Tensor): the input.

    Returns:
        Tensor: of the input's shape.
    """
    return F.selu(input)


def threshold(input, threshold, value):
    """``x`` where ``x > threshold``, else ``value``.

    Args:
        input (Tensor): the input.
        threshold (float): the threshold.
        value (float): what replaces the elements at or below it.

    Returns:
        Tensor: of the input's shape.
    """
    return F.threshold(input, threshold, value)


def _no_generator(op, generator):
    if generator is not None:
        raise NotImplementedError(
            f"rumus.{op}: generator= is not supported; seed with rumus.manual_seed instead"
        )


def rrelu(input, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    """Randomized leaky ReLU; see :func:`rumus.nn.functional.rrelu`.

    Args:
        input (Tensor): the input.
        lower (float): the lower bound of the random negative slope.
        upper (float): the upper bound of the random negative slope.
        training (bool): draw slopes (else use ``(lower + upper) / 2``).
        generator (Generator, optional): not supported; must be None.

    Returns:
        Tensor: of the input's shape.
    """
    _no_generator("rrelu", generator)
    return F.rrelu(input, lower, upper, training)


def rrelu_(input, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    """In-place :func:`rrelu`.

    Args:
        input (Tensor): the input, overwritten.
        lower (float): the lower bound of the random negative slope.
        upper (float): the upper bound of the random negative slope.
        training (bool): draw slopes (else use ``(lower + upper) / 2``).
        generator (Generator, optional): not supported; must be None.

    Returns:
        Tensor: ``input``.
    """
    _no_generator("rrelu_", generator)
    return F.rrelu_(input, lower, upper, training)


# ------------------------------------------------------------------ losses (int reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    """Binary cross entropy on logits; see
    :func:`rumus.nn.functional.binary_cross_entropy_with_logits`.

    Args:
        input (Tensor): the logits.
        target (Tensor): the targets in [0, 1], of the input's shape.
        weight (Tensor, optional): per-element weights, broadcast to the input.
        pos_weight (Tensor, optional): the weight of positive examples, per class.
        reduction (int): 0 none (the default), 1 mean, 2 sum.

    Returns:
        Tensor: the loss.
    """
    return F.binary_cross_entropy_with_logits(
        input,
        target,
        weight,
        reduction=_reduction("binary_cross_entropy_with_logits", reduction),
        pos_weight=pos_weight,
    )


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """Cosine embedding loss; see :func:`rumus.nn.functional.cosine_embedding_loss`.

    Args:
        input1 (Tensor): of shape ``(N, D)`` or ``(D,)``.
        input2 (Tensor): of the same shape.
        target (Tensor): 1 or -1 per pair.
        margin (float): for the dissimilar pairs.
        reduction (int): 0 none (the default), 1 mean, 2 sum.

    Returns:
        Tensor: the loss.
    """
    r = _reduction("cosine_embedding_loss", reduction)
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=r)


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """Hinge embedding loss; see :func:`rumus.nn.functional.hinge_embedding_loss`.

    Args:
        input (Tensor): the distances.
        target (Tensor): 1 or -1, of the input's shape.
        margin (float): for the -1 targets.
        reduction (int): 0 none (the default), 1 mean, 2 sum.

    Returns:
        Tensor: the loss.
    """
    r = _reduction("hinge_embedding_loss", reduction)
    return F.hinge_embedding_loss(input, target, margin, reduction=r)


def kl_div(input, target, reduction=0, *, log_target=False):
    """Kullback-Leibler divergence; see :func:`rumus.nn.functional.kl_div`.

    Args:
        input (Tensor): log-probabilities.
        target (Tensor): probabilities (log-probabilities with ``log_target``).
        reduction (int): 0 none (the default), 1 mean over elements, 2 sum.
        log_target (bool): ``target`` holds log-probabilities.

    Returns:
        Tensor: the loss.
    """
    r = _reduction("kl_div", reduction)
    if r == "mean":  # the elementwise mean, without F.kl_div's warning about it (torch's has none)
        return F.kl_div(input, target, reduction="none", log_target=log_target).mean()
    return F.kl_div(input, target, reduction=r, log_target=log_target)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """Margin ranking loss; see :func:`rumus.nn.functional.margin_ranking_loss`.

    Args:
        input1 (Tensor): the first scores.
        input2 (Tensor): the second scores.
        target (Tensor): 1 where ``input1`` should rank higher, -1 where lower.
        margin (float): the required gap.
        reduction (int): 0 none (the default), 1 mean, 2 sum.

    Returns:
        Tensor: the loss.
    """
    r = _reduction("margin_ranking_loss", reduction)
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=r)


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """Poisson negative log-likelihood; see :func:`rumus.nn.functional.poisson_nll_loss`.

    Args:
        input (Tensor): the predicted rates (their logs with ``log_input``).
        target (Tensor): the observed counts.
        log_input (bool): ``input`` holds log-rates.
        full (bool): add the Stirling term.
        eps (float): keeps ``log(input)`` finite when not ``log_input``.
        reduction (int): 0 none (the default), 1 mean, 2 sum.

    Returns:
        Tensor: the loss.
    """
    r = _reduction("poisson_nll_loss", reduction)
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=r)


def triplet_margin_loss(
    anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False, reduction=0
):
    """Triplet margin loss; see :func:`rumus.nn.functional.triplet_margin_loss`.

    Args:
        anchor (Tensor): of shape ``(N, D)`` or ``(D,)``.
        positive (Tensor): of the same shape.
        negative (Tensor): of the same shape.
        margin (float): the required gap between the distances.
        p (float): the norm of the distances.
        eps (float): added to the differences.
        swap (bool): use the smaller of the anchor/positive-to-negative distances.
        reduction (int): 0 none (the default), 1 mean, 2 sum.

    Returns:
        Tensor: the loss.
    """
    r = _reduction("triplet_margin_loss", reduction)
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=r)


def ctc_loss(
    log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0, zero_infinity=False
):
    """Connectionist temporal classification loss; see :func:`rumus.nn.functional.ctc_loss`.

    Args:
        log_probs (Tensor): of shape ``(T, N, C)`` or ``(T, C)``, log-probabilities.
        targets (Tensor): the target sequences, padded ``(N, S)`` or concatenated.
        input_lengths (Tensor or list of int): the length of each input.
        target_lengths (Tensor or list of int): the length of each target.
        blank (int): the blank label.
        reduction (int): 0 none (the default), 1 mean (over target lengths, then the
            batch), 2 sum.
        zero_infinity (bool): zero infinite losses and their gradients.

    Returns:
        Tensor: the loss.
    """
    r = _reduction("ctc_loss", reduction)
    return F.ctc_loss(
        log_probs, targets, input_lengths, target_lengths, blank, r, zero_infinity=zero_infinity
    )


# ------------------------------------------------------------------ stacking and flipping


def _at_least(op, t, n):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): expected Tensors, got {type(t).__name__}")
    d = t.dim()
    if d >= n:
        return t
    if n == 3 and d == 2:
        return t.unsqueeze(-1)
    if n == 3 and d == 1:
        return t.unsqueeze(0).unsqueeze(-1)
    return t.reshape((1,) * (n - d) + tuple(t.shape))


def _non_empty(op, tensors):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return tensors


def _at_least_all(op, tensors, n):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(_at_least(op, t, n) for t in tensors[0])
    out = tuple(_at_least(op, t, n) for t in tensors)
    return out[0] if len(out) == 1 else out


def atleast_1d(*tensors):
    """Views of the inputs with at least one dimension (a 0-d tensor becomes shape ``(1,)``).

    Args:
        *tensors (Tensor or sequence of Tensor): one tensor, several, or one list of them.

    Returns:
        Tensor or tuple[Tensor, ...]: a tensor for one tensor argument, else a tuple.
    """
    return _at_least_all("atleast_1d", tensors, 1)


def atleast_2d(*tensors):
    """Views of the inputs with at least two dimensions (shape ``(n,)`` becomes ``(1, n)``).

    Args:
        *tensors (Tensor or sequence of Tensor): one tensor, several, or one list of them.

    Returns:
        Tensor or tuple[Tensor, ...]: a tensor for one tensor argument, else a tuple.
    """
    return _at_least_all("atleast_2d", tensors, 2)


def atleast_3d(*tensors):
    """Views of the inputs with at least three dimensions (``(n,)`` becomes ``(1, n, 1)``,
    ``(m, n)`` becomes ``(m, n, 1)``).

    Args:
        *tensors (Tensor or sequence of Tensor): one tensor, several, or one list of them.

    Returns:
        Tensor or tuple[Tensor, ...]: a tensor for one tensor argument, else a tuple.
    """
    return _at_least_all("atleast_3d", tensors, 3)


def hstack(tensors):
    """Concatenates horizontally: along dim 0 for 1-D tensors, else along dim 1.

    Args:
        tensors (sequence of Tensor): the tensors (0-d ones count as shape ``(1,)``).

    Returns:
        Tensor: the concatenation.
    """
    ts = [_at_least("hstack", t, 1) for t in _non_empty("hstack", tensors)]
    return _rumus.cat(ts, 0 if ts[0].dim() == 1 else 1)


def vstack(tensors):
    """Concatenates vertically (along dim 0), 0-d and 1-D tensors first made 2-D rows.

    Args:
        tensors (sequence of Tensor): the tensors.

    Returns:
        Tensor: the concatenation.
    """
    return _rumus.cat([_at_least("vstack", t, 2) for t in _non_empty("vstack", tensors)], 0)


row_stack = vstack


def dstack(tensors):
    """Concatenates depth-wise (along dim 2), the tensors first made at least 3-D.

    Args:
        tensors (sequence of Tensor): the tensors.

    Returns:
        Tensor: the concatenation.
    """
    return _rumus.cat([_at_least("dstack", t, 3) for t in _non_empty("dstack", tensors)], 2)


def column_stack(tensors):
    """Concatenates along dim 1, 0-d and 1-D tensors first made columns ``(n, 1)``.

    Args:
        tensors (sequence of Tensor): the tensors.

    Returns:
        Tensor: the concatenation.
    """
    ts = [_at_least("column_stack", t, 0) for t in _non_empty("column_stack", tensors)]
    return _rumus.cat([t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in ts], 1)


def fliplr(input):
    """Reverses the order of the columns (dim 1).

    Args:
        input (Tensor): at least 2-D.

    Returns:
        Tensor: a copy with dim 1 reversed.
    """
    if _at_least("fliplr", input, 0).dim() < 2:
        raise RuntimeError(f"fliplr: input must be >= 2-d, got shape {tuple(input.shape)}")
    return input.flip(1)


def flipud(input):
    """Reverses the order of the rows (dim 0).

    Args:
        input (Tensor): at least 1-D.

    Returns:
        Tensor: a copy with dim 0 reversed.
    """
    if _at_least("flipud", input, 0).dim() < 1:
        raise RuntimeError("flipud: input must be >= 1-d, got a 0-d tensor")
    return input.flip(0)


def ravel(input):
    """The elements as a 1-D tensor (a view when the layout allows, else a copy).

    Args:
        input (Tensor): the input.

    Returns:
        Tensor: of shape ``(input.numel(),)``.
    """
    return _at_least("ravel", input, 0).reshape(-1)
