"""The op registry's entries for issue 16's nn.functional additions
(python/rumus/nn/_functional_more.py and _loss_more.py): the shrink activations, rrelu,
the in-place spellings (F.relu_, F.elu_, ...), lp_pool*, local_response_norm,
channel_shuffle, embedding_bag, ctc_loss and the margin, triplet and likelihood losses.
Semantics the registry cannot express are in tests/test_activation_more.py,
tests/test_loss_more.py, tests/test_layers_more.py and tests/test_ctc.py."""

import numpy as np
import rumus
import rumus.nn.functional as F
from op_db import (
    ALL,
    AWAY,
    FLOATS,
    INTS,
    NN_TOL,
    NZ,
    Arg,
    Const,
    OpInfo,
    P,
    Row,
    Sample,
    U,
    dom,
    floated,
    nn_op,
    np_elu,
    np_leaky_relu,
    np_relu,
    unary_samples,
)
from test_ctc import alpha_nll
from test_layers_more import bag_ref, lp_pool_ref, lrn_ref
from test_loss_more import (
    gaussian_ref,
    hinge_ref,
    multi_margin_ref,
    multilabel_margin_ref,
    multilabel_soft_margin_ref,
    poisson_ref,
    red,
    triplet_ref,
)

SELU_A, SELU_S = 1.6732632423543772, 1.0507009873554805
SHRINK = dom(AWAY, points=[-1.0, -0.5, 0.5, 1.0])


def _act(name, ref, *, kwargs=(), domain=U, inplace=False, grads=(), extra=()):
    op = nn_op(
        name,
        floated(ref),
        lambda m: unary_samples(m, kwargs=kwargs),
        inplace=inplace,
        domain=domain,
        grads=list(grads),
        extra=extra,
    )
    fn = getattr(F, name)
    op.grads.insert(0, Row(f"F_{name}", lambda x: fn(x), [domain(3, 4)]))
    op.grads[0].op = op
    return op


def _inplace_spelling(name, ref, *, dtypes=FLOATS, domain=NZ, args=(), bugs=(), toplevel=False):
    """F.<name> (an in-place function) and, with ``toplevel``, rumus.<name> (torch has both):
    run on a clone, as the registry's in-place variants."""

    def in_place(fn, label):
        def call(x, *a):
            y = x.clone()
            out = fn(y, *a)
            assert out is y, f"{label} must return its input"
            return y

        return call

    call = in_place(getattr(F, name), f"F.{name}")
    variants = [(f"F.{name}", call, "inplace")]
    if toplevel:
        variants.append(
            (f"rumus.{name}", in_place(getattr(rumus, name), f"rumus.{name}"), "inplace")
        )

    def samples(m):
        return [
            Sample(m(3, 4), *args),
            Sample(m(), *args),
            Sample(m(0, 3), *args),
            Sample(m(4, 3, layout="transposed"), *args),
        ]

    return OpInfo(
        f"F.{name}",
        variants,
        floated(ref) if dtypes == FLOATS else ref,
        samples,
        dtypes=dtypes,
        domain=domain,
        covers=[label for label, *_ in variants],
        tol=NN_TOL,
        bugs=bugs,
        grads=[Row(f"F_{name}", lambda x: call(x, *args), [domain(3, 4)])],
    )


def _rrelu_train(x):
    rumus.manual_seed(7)  # the same slopes on every evaluation
    return F.rrelu(x, 0.1, 0.3, training=True)


# ------------------------------------------------------------ references


def _lp_ref(nd):
    def ref(x, norm_type, kernel_size, stride=None, ceil_mode=False):
        k = kernel_size if isinstance(kernel_size, tuple) else (kernel_size,) * nd
        s = k if stride is None else (stride if isinstance(stride, tuple) else (stride,) * nd)
        unbatched = x.ndim == nd + 1
        out = lp_pool_ref(x[None] if unbatched else x, norm_type, k, s, ceil_mode)
        return out[0] if unbatched else out

    return ref


def _shuffle_ref(x, groups):
    n, c = x.shape[:2]
    return x.reshape(n, groups, c // groups, *x.shape[2:]).swapaxes(1, 2).reshape(x.shape)


def _bag_op_ref(
    idx,
    w,
    offsets=None,
    max_norm=None,
    norm_type=2,
    scale_grad_by_freq=False,
    mode="mean",
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=None,
):
    if idx.ndim == 2:
        offsets = np.arange(0, idx.size, idx.shape[1])
    return bag_ref(
        idx.reshape(-1),
        w,
        offsets,
        mode,
        None if per_sample_weights is None else per_sample_weights.reshape(-1),
        include_last_offset,
        padding_idx,
    )


def _ctc_ref(lp, targets, il, tl, blank=0, reduction="mean", zero_infinity=False):
    if lp.ndim == 2:
        return np.asarray(
            alpha_nll(lp, targets[:tl], blank) / (max(tl, 1) if reduction == "mean" else 1)
        )
    n = lp.shape[1]
    offs = np.concatenate([[0], np.cumsum(tl)])
    tg = [
        targets[i, : tl[i]] if targets.ndim == 2 else targets[offs[i] : offs[i + 1]]
        for i in range(n)
    ]
    nll = np.array([alpha_nll(lp[: il[i], i], tg[i], blank) for i in range(n)])
    if zero_infinity:
        nll[np.isinf(nll)] = 0
    if reduction == "mean":
        return np.asarray(np.mean(nll / np.maximum(tl, 1)))
    return np.asarray(red(nll, reduction))


def _loss_ref(ref, reduce_dims=None):
    def fn(*args, reduction="mean", **kw):
        return np.asarray(red(ref(*args, **kw), reduction))

    return fn


def _triplet_with_distance_ref(a, p, n, margin=1.0, swap=False, reduction="mean"):
    return np.asarray(red(triplet_ref(a, p, n, margin, swap=swap), reduction))


def _gaussian_op_ref(x, t, var, full=False, eps=1e-6, reduction="mean"):
    if var.shape != x.shape and var.shape == x.shape[:-1]:
        var = var[..., None]
    return np.asarray(red(gaussian_ref(x, t, var, full, eps), reduction))


# ------------------------------------------------------------ gradient inputs


def _margin_inputs(rng):
    """(4, 5) scores whose pairwise differences stay away from the margin 1 (no kinks)."""
    x = np.arange(20.0).reshape(4, 5) * 0.37 % 3.0
    x = x + rng.uniform(0, 0.05, x.shape)
    return [x]


def _triplet_inputs(rng):
    a = rng.normal(size=(4, 3))
    p = a + rng.normal(scale=0.2, size=(4, 3))
    n = a + rng.normal(scale=2.0, size=(4, 3))
    return [a, p, n]


def _hinge_inputs(rng):
    x = rng.uniform(0.1, 0.8, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4))
    return [x, Const(np.where(rng.uniform(size=(3, 4)) > 0.5, 1.0, -1.0))]


CTC_TARGETS = np.array([[1, 2, 2], [3, 1, 0], [2, 0, 0]], np.int64)


def _ctc_inputs(rng):
    return [rng.normal(size=(6, 3, 4))]


NN_MORE = [
    _act(
        "hardshrink",
        lambda x, lambd=0.5: np.where(np.abs(x) > lambd, x, 0.0),
        kwargs=[dict(lambd=1.0)],
        domain=SHRINK,
        extra=["rumus.hardshrink"],
    ),
    _act(
        "softshrink",
        lambda x, lambd=0.5: np.sign(x) * np.maximum(np.abs(x) - lambd, 0.0),
        kwargs=[dict(lambd=1.0)],
        domain=SHRINK,
    ),
    _act("tanhshrink", lambda x: x - np.tanh(x)),
    _act(
        "rrelu",
        lambda x, lower=1 / 8, upper=1 / 3, training=False: np.where(
            x >= 0, x, x * (lower + upper) / 2
        ),
        kwargs=[dict(lower=0.1, upper=0.3)],
        domain=NZ,
        inplace=True,
        extra=["rumus.rrelu"],
        grads=[
            Row(
                "F_rrelu_training",
                _rrelu_train,
                [NZ(3, 4)],
                gpu="the GPU's random stream differs from the CPU's: parity cannot hold",
            )
        ],
    ),
    _inplace_spelling(
        "rrelu_",
        lambda x, lo=1 / 8, hi=1 / 3: np.where(x >= 0, x, x * (lo + hi) / 2),
        toplevel=True,
    ),
    _inplace_spelling("relu_", np_relu, dtypes=ALL, toplevel=True),
    _inplace_spelling("elu_", np_elu, args=(0.5,)),
    _inplace_spelling("celu_", lambda x, a=1.0: a * np_elu(x / a), args=(0.7,), toplevel=True),
    _inplace_spelling("selu_", lambda x: SELU_S * np_elu(x, SELU_A), toplevel=True),
    _inplace_spelling("leaky_relu_", np_leaky_relu, args=(0.2,)),
    _inplace_spelling(
        "hardtanh_",
        lambda x, lo=-1.0, hi=1.0: np.clip(x, lo, hi),
        args=(-0.5, 1.0),
        domain=dom(AWAY, points=[-0.5, 1.0]),
        dtypes=FLOATS + INTS,
    ),
    _inplace_spelling(
        "threshold_",
        lambda x, t, v: np.where(x > t, x, v),
        args=(0.5, -1.0),
        domain=dom(AWAY, points=[0.5]),
        dtypes=FLOATS + ("int64", "int32"),  # uint8: PyTorch raises, -1.0 overflows it
        toplevel=True,
    ),
    nn_op(
        "lp_pool1d",
        _lp_ref(1),
        lambda m: [
            Sample(m(2, 3, 7), 2, 3),
            Sample(m(3, 8), 3.0, 2, 2, True),
            Sample(m(1, 2, 6, layout="transposed"), 1, 2),
        ],
        domain=P,
        grads=[Row("F_lp_pool1d", lambda x: F.lp_pool1d(x, 2, 3, 2), [P(2, 2, 7)])],
    ),
    nn_op(
        "lp_pool2d",
        _lp_ref(2),
        lambda m: [
            Sample(m(1, 2, 5, 6), 2, (2, 3)),
            Sample(m(2, 5, 5), 1.5, 2, 2, True),
            Sample(m(0, 2, 4, 4), 2, 2),
        ],
        domain=P,
        grads=[Row("F_lp_pool2d", lambda x: F.lp_pool2d(x, 2, 2, 1), [P(1, 2, 4, 4)])],
    ),
    nn_op(
        "lp_pool3d",
        _lp_ref(3),
        lambda m: [
            Sample(m(1, 2, 4, 5, 4), 2, (2, 3, 2)),
            Sample(m(2, 3, 5, 4), 2, 2, (2, 1, 2), True),
        ],
        domain=P,
        grads=[Row("F_lp_pool3d", lambda x: F.lp_pool3d(x, 3, 2, 1), [P(1, 1, 3, 3, 3)])],
    ),
    nn_op(
        "local_response_norm",
        floated(lrn_ref),
        lambda m: [
            Sample(m(2, 5, 4), 3),
            Sample(m(1, 6, 2, 3), 2, alpha=0.5, beta=0.6, k=2.0),
            Sample(m(1, 4, 2, 2, 2), 5, 1.0),
            Sample(m(2, 4, 3, layout="transposed"), 3),
        ],
        grads=[
            Row("F_local_response_norm", lambda x: F.local_response_norm(x, 3, 0.5), [U(2, 4, 3)])
        ],
    ),
    nn_op(
        "channel_shuffle",
        _shuffle_ref,
        lambda m: [Sample(m(2, 6, 3), 2), Sample(m(1, 6, 2, 2), 3), Sample(m(0, 4, 2), 2)],
        dtypes=ALL,
        grads=[Row("F_channel_shuffle", lambda x: F.channel_shuffle(x, 2), [U(2, 4, 3)])],
        extra=["rumus.channel_shuffle"],
    ),
    nn_op(
        "native_channel_shuffle",
        _shuffle_ref,
        lambda m: [Sample(m(2, 6, 3), 3), Sample(m(1, 4, 2, 2, layout="transposed"), 2)],
        dtypes=ALL,
        grads=[
            Row("F_native_channel_shuffle", lambda x: F.native_channel_shuffle(x, 3), [U(2, 6, 3)])
        ],
    ),
    nn_op(
        "embedding_bag",
        _bag_op_ref,
        lambda m: [
            Sample(m.idx([1, 2, 4, 5, 4, 3, 2, 9]), m(10, 3), m.idx([0, 3, 3])),
            Sample(m.idx([1, 2, 4, 5, 4, 3, 2, 9]), m(10, 3), m.idx([0, 3, 3]), mode="max"),
            Sample(m.idx([[1, 2, 4], [5, 0, 0]]), m(10, 3), mode="sum", padding_idx=0),
            Sample(
                m.idx([1, 2, 4, 5]),
                m(6, 2),
                m.idx([0, 1, 4]),
                mode="sum",
                per_sample_weights=m(4),
                include_last_offset=True,
            ),
            Sample(m.idx([1, 2]), m(3, 5, layout="transposed"), m.idx([0])),
        ],
        mismatch=False,
        grads=[
            Row(
                "F_embedding_bag_mean",
                lambda w: F.embedding_bag(
                    rumus.tensor([1, 2, 4, 5, 4, 3]), w, rumus.tensor([0, 2, 2]), padding_idx=4
                ),
                [U(6, 3)],
            ),
            Row(
                "F_embedding_bag_sum_weighted",
                lambda w, p: F.embedding_bag(
                    rumus.tensor([[1, 2], [4, 1]]), w, mode="sum", per_sample_weights=p
                ),
                [U(6, 3), U(2, 2)],
            ),
            Row(
                "F_embedding_bag_max",
                lambda w: F.embedding_bag(rumus.tensor([[1, 2, 4], [0, 5, 3]]), w, mode="max"),
                lambda rng: [rng.permutation(18).reshape(6, 3) * 0.3],
            ),
        ],
        bad=lambda m: [
            (
                "embedding_bag index out of range",
                lambda: F.embedding_bag(rumus.tensor([[7]]), m.t(5, 3)),
            ),
            (
                "embedding_bag 1-D without offsets",
                lambda: F.embedding_bag(rumus.tensor([1]), m.t(5, 3)),
            ),
        ],
    ),
    nn_op(
        "ctc_loss",
        _ctc_ref,
        lambda m: [
            Sample(m(6, 3, 4), Arg(CTC_TARGETS, "int64"), [6, 5, 4], [3, 2, 1]),
            Sample(m(6, 3, 4), Arg(CTC_TARGETS, "int64"), [6, 5, 4], [3, 2, 1], reduction="sum"),
            Sample(
                m(5, 3, 4),
                m.idx([1, 2, 3, 3]),
                [5, 5, 2],
                [2, 2, 0],
                reduction="none",
            ),
            Sample(
                m(3, 2, 4),
                Arg(CTC_TARGETS[:2], "int64"),
                [3, 3],
                [3, 2],
                reduction="none",
                zero_infinity=True,
            ),
            Sample(m(5, 4), m.idx([1, 3]), 5, 2),
            Sample(
                m(6, 3, 4), m.idx([[1, 2, 2], [2, 1, 0], [2, 0, 0]]), [6, 5, 4], [3, 2, 1], blank=3
            ),
        ],
        mismatch=False,
        gg=False,
        grads=[
            Row(
                "F_ctc_loss",
                lambda x: F.ctc_loss(x, rumus.tensor(CTC_TARGETS), [6, 5, 4], [3, 2, 1]),
                _ctc_inputs,
                gg=False,
            ),
            Row(
                "F_ctc_loss_log_softmax_sum",
                lambda x: F.ctc_loss(
                    x.log_softmax(2),
                    rumus.tensor([1, 2, 2, 3, 1, 2]),
                    [6, 6, 3],
                    [3, 2, 1],
                    reduction="sum",
                ),
                _ctc_inputs,
                gg=False,
            ),
        ],
        bad=lambda m: [
            (
                "ctc_loss input_lengths > T",
                lambda: F.ctc_loss(m.t(3, 1, 4), rumus.tensor([[1]]), [4], [1]),
            ),
            (
                "ctc_loss target_lengths > S",
                lambda: F.ctc_loss(m.t(3, 1, 4), rumus.tensor([[1]]), [3], [2]),
            ),
        ],
    ),
    nn_op(
        "multi_margin_loss",
        _loss_ref(multi_margin_ref),
        lambda m: [
            Sample(m(4, 5), Arg(np.array([0, 3, 4, 1]), "int64")),
            Sample(m(4, 5), Arg(np.array([0, 3, 4, 1]), "int64"), p=2, margin=0.5, reduction="sum"),
            Sample(m(4, 5), Arg(np.array([0, 3, 4, 1]), "int64"), weight=m(5), reduction="none"),
            Sample(m(5), Arg(np.array(2), "int64")),
            Sample(m(5, 4, layout="transposed"), Arg(np.array([1, 0, 3, 2, 2]), "int64")),
        ],
        mismatch=False,
        grads=[
            Row(
                "F_multi_margin_loss",
                lambda x: F.multi_margin_loss(x, rumus.tensor([0, 3, 4, 1]), p=2),
                _margin_inputs,
            ),
            Row(
                "F_multi_margin_loss_weight",
                lambda x, w: F.multi_margin_loss(x, rumus.tensor([0, 3, 4, 1]), weight=w),
                lambda rng: _margin_inputs(rng) + [rng.uniform(0.5, 2, 5)],
            ),
        ],
    ),
    nn_op(
        "multilabel_margin_loss",
        _loss_ref(multilabel_margin_ref),
        lambda m: [
            Sample(m(3, 4), Arg(np.array([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 0, 0, 0]]), "int64")),
            Sample(m(4), Arg(np.array([2, 2, -1, 0]), "int64"), reduction="none"),
            Sample(m(2, 3), Arg(np.array([[0, -1, 2], [1, 0, -1]]), "int64"), reduction="sum"),
        ],
        mismatch=False,
        grads=[
            Row(
                "F_multilabel_margin_loss",
                lambda x: F.multilabel_margin_loss(
                    x,
                    rumus.tensor(
                        [[3, 0, -1, 1, 2], [1, 2, 4, 0, -1], [0, 0, 2, -1, 3], [4, -1, 0, 0, 0]]
                    ),
                ),
                _margin_inputs,
            )
        ],
    ),
    nn_op(
        "multilabel_soft_margin_loss",
        _loss_ref(multilabel_soft_margin_ref),
        lambda m: [
            Sample(m(3, 4), m(3, 4)),
            Sample(m(3, 4), m(3, 4), weight=m(4), reduction="none"),
            Sample(m(4), m(4), reduction="sum"),
        ],
        grads=[
            Row(
                "F_multilabel_soft_margin_loss",
                lambda x, t, w: F.multilabel_soft_margin_loss(x, t, w),
                [U(3, 4), U(3, 4), U(4)],
            )
        ],
    ),
    nn_op(
        "triplet_margin_loss",
        _loss_ref(triplet_ref),
        lambda m: [
            Sample(m(4, 3), m(4, 3), m(4, 3)),
            Sample(m(4, 3), m(4, 3), m(4, 3), margin=2.0, p=1, swap=True, reduction="none"),
            Sample(m(3), m(3), m(3), eps=1e-3, reduction="sum"),
        ],
        grads=[
            Row(
                "F_triplet_margin_loss",
                lambda a, p, n: F.triplet_margin_loss(a, p, n, margin=3.0, swap=True),
                _triplet_inputs,
            )
        ],
    ),
    nn_op(
        "triplet_margin_with_distance_loss",
        _triplet_with_distance_ref,
        lambda m: [
            Sample(m(4, 3), m(4, 3), m(4, 3)),
            Sample(m(4, 3), m(4, 3), m(4, 3), margin=2.0, swap=True, reduction="none"),
        ],
        grads=[
            Row(
                "F_triplet_margin_with_distance_loss",
                lambda a, p, n: F.triplet_margin_with_distance_loss(
                    a, p, n, distance_function=lambda x, y: (x - y).square().sum(-1), margin=5.0
                ),
                _triplet_inputs,
            )
        ],
    ),
    nn_op(
        "hinge_embedding_loss",
        _loss_ref(hinge_ref),
        lambda m: [
            Sample(m(3, 4), Arg(np.where(np.arange(12).reshape(3, 4) % 3, 1.0, -1.0))),
            Sample(
                m(3, 4),
                Arg(np.where(np.arange(12).reshape(3, 4) % 2, 1.0, -1.0)),
                margin=0.5,
                reduction="none",
            ),
            Sample(m(5), Arg(np.array([1.0, -1, -1, 1, 1])), reduction="sum"),
        ],
        grads=[
            Row("F_hinge_embedding_loss", lambda x, y: F.hinge_embedding_loss(x, y), _hinge_inputs)
        ],
    ),
    nn_op(
        "poisson_nll_loss",
        _loss_ref(poisson_ref),
        lambda m: [
            Sample(m(3, 4), Arg(np.arange(12.0).reshape(3, 4) % 4)),
            Sample(m(3, 4), Arg(np.arange(12.0).reshape(3, 4) % 4), full=True, reduction="none"),
            Sample(
                m(3, 4, domain=P),
                Arg(np.arange(12.0).reshape(3, 4) % 4),
                log_input=False,
                reduction="sum",
            ),
        ],
        grads=[
            Row(
                "F_poisson_nll_loss",
                lambda x, t: F.poisson_nll_loss(x, t, full=True),
                [U(3, 4), P(3, 4, lo=0.5, hi=3)],
            ),
            Row(
                "F_poisson_nll_loss_rate",
                lambda x, t: F.poisson_nll_loss(x, t, log_input=False),
                [P(3, 4), P(3, 4)],
            ),
        ],
    ),
    nn_op(
        "gaussian_nll_loss",
        _gaussian_op_ref,
        lambda m: [
            Sample(m(3, 4), m(3, 4), m(3, 4, domain=P)),
            Sample(m(3, 4), m(3, 4), m(3, 1, domain=P), full=True, reduction="none"),
            Sample(m(3, 4), m(3, 4), m(3, domain=P), eps=1e-2, reduction="sum"),
        ],
        grads=[
            Row(
                "F_gaussian_nll_loss",
                lambda x, t, v: F.gaussian_nll_loss(x, t, v, full=True),
                [U(3, 4), U(3, 4), P(3, 4)],
            ),
            Row(
                "F_gaussian_nll_loss_per_sample_var",
                lambda x, t, v: F.gaussian_nll_loss(x, t, v),
                [U(3, 4), U(3, 4), P(3)],
            ),
        ],
    ),
]
