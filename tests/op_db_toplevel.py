"""The op registry's entries for torch's top-level spellings of nn.functional ops whose
signature differs from F's (python/rumus/_toplevel.py): torch.batch_norm's argument order,
torch.embedding's weight first, the losses' int reduction, the pools without
return_indices. Each entry borrows its F twin's reference (or check), dtypes, tolerances and
GPU support, and maps torch's arguments to F's with a function of torch's signature, so the
values are checked against the same NumPy reference, and against PyTorch's top-level function
when it is importable. Spellings that take F's arguments are variants of the F entries."""

import numpy as np
import rumus
from op_db import (
    ALL,
    DISTINCT,
    LOSSES,
    NN,
    NZ,
    Arg,
    I,
    OpInfo,
    P,
    Row,
    Sample,
    U,
    _cos_emb_inputs,
    _pair,
    _ranking_inputs,
    dom,
)
from op_db_nn_more import CTC_TARGETS, NN_MORE, _hinge_inputs, _triplet_inputs
from op_db_spatial import SPATIAL

_TWINS = {op.name: op for op in NN + LOSSES + NN_MORE + SPATIAL}
_REDUCTION = {0: "none", 1: "mean", 2: "sum"}
f64 = rumus.float64


def _twin(name, to_f, samples, grads, *, twin=None, **kw):
    """rumus.<name>, checked with the reference of F.<twin> on the arguments ``to_f`` (a
    function with torch's signature returning F's (args, kwargs)) makes of the sample's."""
    f = _TWINS[twin or name]

    def ref(*a, **k):
        fa, fk = to_f(*a, **k)
        return f.ref(*fa, **fk)

    def check(got, sample, dtype, a, k):
        fa, fk = to_f(*a, **k)
        return f.check(got, sample, dtype, list(fa), fk)

    opts = dict(dtypes=f.dtypes, out=f.out, domain=f.domain, tol=f.tol, gpu=f.gpu, gg=f.gg)
    opts.update(mismatch=f.mismatch, ref=f.ref and ref, check=f.check and check)
    opts.update(kw)
    return OpInfo(f"rumus.{name}", [f"rumus.{name}"], samples=samples, grads=grads, **opts)


# ------------------------------------------------------------ torch's signatures -> F's


def _dropout(input, p, train):
    return (input, p), dict(training=train)


def _batch_norm(
    input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled
):
    return (input, running_mean, running_var, weight, bias), dict(
        training=training, momentum=momentum, eps=eps
    )


def _instance_norm(
    input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled
):
    return (input, running_mean, running_var, weight, bias), dict(
        use_input_stats=use_input_stats, momentum=momentum, eps=eps
    )


def _embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return (indices, weight), dict(padding_idx=None if padding_idx < 0 else padding_idx)


def _max_pool(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return (input, kernel_size, stride or None, padding, dilation, ceil_mode), {}


def _max_pool_indices(*a, **k):
    fa, fk = _max_pool(*a, **k)
    return fa, dict(fk, return_indices=True)


def _adaptive_max_pool1d(input, output_size):
    return (input, output_size), dict(return_indices=True)


def _bce_logits(input, target, weight=None, pos_weight=None, reduction=0):
    return (input, target, weight), dict(reduction=_REDUCTION[reduction], pos_weight=pos_weight)


def _pair_loss(input1, input2, target, margin=0.0, reduction=0):
    return (input1, input2, target, margin), dict(reduction=_REDUCTION[reduction])


def _hinge(input, target, margin=1.0, reduction=0):
    return (input, target, margin), dict(reduction=_REDUCTION[reduction])


def _kl_div(input, target, reduction=0, *, log_target=False):
    return (input, target), dict(reduction=_REDUCTION[reduction], log_target=log_target)


def _poisson_nll(input, target, log_input, full, eps, reduction):
    return (input, target, log_input, full), dict(eps=eps, reduction=_REDUCTION[reduction])


def _triplet(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False, reduction=0):
    return (anchor, positive, negative), dict(
        margin=margin, p=p, eps=eps, swap=swap, reduction=_REDUCTION[reduction]
    )


def _ctc(
    log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0, zero_infinity=False
):
    return (log_probs, targets, input_lengths, target_lengths, blank), dict(
        reduction=_REDUCTION[reduction], zero_infinity=zero_infinity
    )


def _seeded_dropout(x):
    rumus.manual_seed(0)  # the same mask on every evaluation
    return rumus.dropout(x, 0.4, True)


def _bn_train(x, w, b):
    rm, rv = rumus.zeros(3, dtype=f64), rumus.ones(3, dtype=f64)
    return rumus.batch_norm(x, w, b, rm, rv, True, 0.1, 1e-3, False)


_ROWS_F64 = "the row builds float64 tensors, which GPUs do not have"
_Y4 = np.array([1.0, -1.0, -1.0, 1.0])
_Y6 = np.array([1.0, -1.0, 1.0, 1.0, -1.0, -1.0])
_HINGE_Y = np.where(np.arange(12).reshape(3, 4) % 3, 1.0, -1.0)
_COUNTS = np.arange(12.0).reshape(3, 4) % 4

TOPLEVEL = [
    _twin(
        "dropout",
        _dropout,
        lambda m: [
            Sample(m(4, 5), 0.25, True),
            Sample(m(4, 5), p=0.0, train=True),
            Sample(m(4, 5), 1.0, True),
            Sample(m(4, 5), 0.5, False),
            Sample(m(0, 3), 0.5, True),
            Sample(m(5, 4, layout="transposed"), 0.5, train=True),
        ],
        [
            Row(
                "rumus_dropout",
                _seeded_dropout,
                [U(4, 5)],
                gpu="the GPU draws its own random numbers (as PyTorch's CUDA does); GPU dropout "
                "is checked in test_gpu.py",
            )
        ],
    ),
    _twin(
        "batch_norm",
        _batch_norm,
        lambda m: [
            Sample(m(4, 3), m(3), m(3), None, None, True, 0.1, 1e-5, True),
            Sample(m(2, 2, 2, 2), None, None, None, None, True, 0.1, 1e-3, False),
            Sample(m(2, 3, 2), m(3), m(3), m(3), m(3, domain=P), False, 0.1, 1e-5, True),
            Sample(
                m(3, 2, layout="transposed"),
                weight=None,
                bias=None,
                running_mean=m(2),
                running_var=m(2, domain=P),
                training=False,
                momentum=0.2,
                eps=1e-5,
                cudnn_enabled=True,
            ),
        ],
        [Row("rumus_batch_norm_train", _bn_train, [U(4, 3), U(3), U(3)], gpu=_ROWS_F64)],
    ),
    _twin(
        "instance_norm",
        _instance_norm,
        lambda m: [
            Sample(m(2, 2, 3), m(2), None, None, None, True, 0.1, 1e-5, True),
            Sample(m(1, 3, 2, 2), None, m(3), None, None, True, 0.1, 1e-3, False),
            Sample(m(2, 3, 4, layout="transposed"), None, None, None, None, True, 0.1, 1e-5, True),
        ],
        [
            Row(
                "rumus_instance_norm",
                lambda x, w: rumus.instance_norm(x, w, None, None, None, True, 0.1, 1e-5, True),
                [U(2, 2, 3), U(2)],
            )
        ],
    ),
    _twin(
        "embedding",
        _embedding,
        lambda m: [
            Sample(m(5, 3), m.idx([[1, 4, 1], [0, 2, 4]])),
            Sample(m(5, 2), m.idx(3)),
            Sample(m(5, 3), m.idx([0, 1]), 1),
            Sample(weight=m(5, 3), indices=m.idx([0, 1]), padding_idx=-1, scale_grad_by_freq=True),
            Sample(m(5, 3), m.idx(np.zeros(0, np.int64))),
            Sample(m(3, 5, layout="transposed"), m.idx([2, 0])),
        ],
        [
            Row(
                "rumus_embedding",
                lambda w, i: rumus.embedding(w, i),
                [U(5, 3), I([[1, 4, 1], [0, 2, 4]])],
            )
        ],
        bad=lambda m: [
            ("embedding index out of range", lambda: rumus.embedding(m.t(5, 3), rumus.tensor([5]))),
            ("embedding float index", lambda: rumus.embedding(m.t(5, 3), rumus.tensor([0.0]))),
        ],
    ),
    _twin(
        "max_pool1d_with_indices",
        _max_pool_indices,
        lambda m: [
            Sample(m(1, 2, 7, domain=DISTINCT), 3, 2, 1),
            Sample(m(2, 7, domain=DISTINCT), 2, ceil_mode=True),
            Sample(m(1, 2, 7, domain=DISTINCT, layout="transposed"), 3, (), 0, 2),
        ],
        [
            Row(
                "rumus_max_pool1d_with_indices",
                lambda x: rumus.max_pool1d_with_indices(x, 3, 2, 1)[0],
                [DISTINCT(1, 2, 7)],
            )
        ],
        twin="max_pool1d",
        out=_pair,
    ),
    _twin(
        "max_pool2d",
        _max_pool,
        lambda m: [
            Sample(m(1, 2, 5, 4, domain=DISTINCT), 2),
            Sample(m(1, 2, 5, 4, domain=DISTINCT), 2, 2, 1, (1, 2), True),
            Sample(m(1, 2, 5, 4, domain=DISTINCT), 3, stride=1, padding=1),
            Sample(m(2, 4, 4, domain=DISTINCT), kernel_size=2, stride=[]),
            Sample(m(0, 2, 5, 4, domain=DISTINCT), 2),
        ],
        [Row("rumus_max_pool2d", lambda x: rumus.max_pool2d(x, 2), [DISTINCT(1, 2, 4, 4)])],
    ),
    _twin(
        "max_pool3d",
        _max_pool,
        lambda m: [
            Sample(m(1, 2, 4, 4, 3, domain=DISTINCT), 2),
            Sample(m(1, 2, 5, 4, 3, domain=DISTINCT), 3, 2, 1, (1, 2, 1), True),
            Sample(m(2, 3, 4, 4, domain=DISTINCT), 2, 1, padding=1),
        ],
        [Row("rumus_max_pool3d", lambda x: rumus.max_pool3d(x, 2), [DISTINCT(1, 2, 4, 4, 3)])],
    ),
    _twin(
        "adaptive_max_pool1d",
        _adaptive_max_pool1d,
        lambda m: [
            Sample(m(1, 2, 7, domain=DISTINCT), 3),
            Sample(m(2, 5, domain=DISTINCT), output_size=2),
            Sample(m(0, 2, 7, domain=DISTINCT), 3),
        ],
        [
            Row(
                "rumus_adaptive_max_pool1d",
                lambda x: rumus.adaptive_max_pool1d(x, 3)[0],
                [DISTINCT(1, 2, 5)],
            )
        ],
        out=_pair,
    ),
    _twin(
        "binary_cross_entropy_with_logits",
        _bce_logits,
        lambda m: [
            Sample(m(3, 4), m(3, 4, domain=dom(U, lo=0, hi=1))),
            Sample(m(3, 4), m(3, 4, domain=dom(U, lo=0, hi=1)), None, m(4, domain=P), 1),
            Sample(m(3, 4), m(3, 4, domain=dom(U, lo=0, hi=1)), m(3, 1, domain=P), reduction=2),
            Sample(m(0, 2), m(0, 2), reduction=0),
        ],
        [
            Row(
                "rumus_bce_with_logits",
                lambda x, t, pw: rumus.binary_cross_entropy_with_logits(x, t, None, pw),
                [U(3, 4), U(3, 4, lo=0, hi=1), P(4)],
            )
        ],
        bad=lambda m: [
            (
                "string reduction",
                lambda: rumus.binary_cross_entropy_with_logits(m.t(3), m.t(3), reduction="sum"),
            ),
            (
                "reduction 3",
                lambda: rumus.binary_cross_entropy_with_logits(m.t(3), m.t(3), None, None, 3),
            ),
        ],
    ),
    _twin(
        "cosine_embedding_loss",
        _pair_loss,
        lambda m: [
            # a uint8 target cannot hold the label -1: it is int64 there
            Sample(m(4, 3), m(4, 3), Arg(_Y4, "int64" if m.dtype == "uint8" else None), 0.1),
            Sample(
                m(4, 3), m(4, 3), Arg(_Y4, "int64" if m.dtype == "uint8" else None), reduction=0
            ),
            Sample(m(3), m(3), Arg(np.array(1.0)), 0.0, 2),
        ],
        [
            Row(
                "rumus_cosine_embedding_loss",
                lambda a, b, y: rumus.cosine_embedding_loss(a, b, y, 0.1),
                _cos_emb_inputs,
            )
        ],
    ),
    _twin(
        "margin_ranking_loss",
        _pair_loss,
        lambda m: [
            Sample(m(6), m(6), Arg(_Y6), 0.2, 1),
            Sample(m(6), m(6), Arg(_Y6), reduction=0),
            Sample(m(0), m(0), Arg(np.zeros(0)), 0.0, 2),
        ],
        [
            Row(
                "rumus_margin_ranking_loss",
                lambda a, b, y: rumus.margin_ranking_loss(a, b, y, 0.2),
                _ranking_inputs,
            )
        ],
    ),
    _twin(
        "hinge_embedding_loss",
        _hinge,
        lambda m: [
            Sample(m(3, 4), Arg(_HINGE_Y), reduction=1),
            Sample(m(3, 4), Arg(_HINGE_Y), 0.5, 0),
            Sample(m(5), Arg(np.array([1.0, -1, -1, 1, 1])), reduction=2),
        ],
        [
            Row(
                "rumus_hinge_embedding_loss",
                lambda x, y: rumus.hinge_embedding_loss(x, y),
                _hinge_inputs,
            )
        ],
    ),
    _twin(
        "kl_div",
        _kl_div,
        lambda m: [
            Sample(m(3, 4), m(3, 4, domain=P)),
            Sample(m(3, 4), m(3, 4), 2, log_target=True),
            Sample(m(3, 4), m(3, 4, domain=P), reduction=1),
        ],
        [Row("rumus_kl_div", lambda x, t: rumus.kl_div(x, t), [U(3, 4), P(3, 4)])],
    ),
    _twin(
        "poisson_nll_loss",
        _poisson_nll,
        lambda m: [
            Sample(m(3, 4), Arg(_COUNTS), True, False, 1e-8, 1),
            Sample(m(3, 4), Arg(_COUNTS), True, True, 1e-8, 0),
            Sample(
                m(3, 4, domain=P),
                Arg(_COUNTS),
                log_input=False,
                full=False,
                eps=1e-8,
                reduction=2,
            ),
        ],
        [
            Row(
                "rumus_poisson_nll_loss",
                lambda x, t: rumus.poisson_nll_loss(x, t, True, True, 1e-8, 1),
                [U(3, 4), P(3, 4, lo=0.5, hi=3)],
            )
        ],
    ),
    _twin(
        "triplet_margin_loss",
        _triplet,
        lambda m: [
            Sample(m(4, 3), m(4, 3), m(4, 3), reduction=1),
            Sample(m(4, 3), m(4, 3), m(4, 3), 2.0, 1.0, 1e-6, True, 0),
            Sample(m(3), m(3), m(3), eps=1e-3, reduction=2),
        ],
        [
            Row(
                "rumus_triplet_margin_loss",
                lambda a, p, n: rumus.triplet_margin_loss(a, p, n, 3.0, 2.0, 1e-6, True),
                _triplet_inputs,
            )
        ],
    ),
    _twin(
        "ctc_loss",
        _ctc,
        lambda m: [
            Sample(m(6, 3, 4), Arg(CTC_TARGETS, "int64"), [6, 5, 4], [3, 2, 1], 0, 1),
            Sample(m(6, 3, 4), Arg(CTC_TARGETS, "int64"), [6, 5, 4], [3, 2, 1], 0, 2),
            Sample(
                m(3, 2, 4),
                Arg(CTC_TARGETS[:2], "int64"),
                [3, 3],
                [3, 2],
                reduction=0,
                zero_infinity=True,
            ),
        ],
        [
            Row(
                "rumus_ctc_loss",
                lambda lp: rumus.ctc_loss(
                    lp.log_softmax(2), rumus.tensor(CTC_TARGETS), [6, 5, 4], [3, 2, 1]
                ),
                [NZ(6, 3, 4)],
                gg=False,
            )
        ],
    ),
]


def _at_least_ref(fn):
    """np.atleast_Nd's result as torch's: one array for one input, else a list."""
    return lambda *xs: fn(*xs) if len(xs) == 1 else [np.ascontiguousarray(x) for x in fn(*xs)]


def _stack_samples(m):
    return [
        Sample([m(3), m(2)]),
        Sample([m(2, 3), m(2, 1)]),
        Sample([m(), m()]),
        Sample([m(2, 2, 1), m(2, 2, 1, layout="transposed")]),
        Sample([m(0, 3), m(0, 3)]),
    ]


def _stack(name, ref, samples=_stack_samples, **kw):
    fn = getattr(rumus, name)
    return OpInfo(
        name,
        [f"rumus.{name}"],
        lambda ts: ref(ts),
        samples,
        dtypes=ALL,
        mismatch=False,
        grads=[Row(f"rumus_{name}", lambda a, b: fn([a, b]), [U(2, 3), U(2, 3)])],
        **kw,
    )


def _same_rows(m):
    return [
        Sample([m(3), m(3)]),
        Sample([m(2, 3), m(1, 3)]),
        Sample([m(), m()]),
        Sample([m(2, 3, layout="transposed"), m(2, 3)]),
    ]


def _at_least_op(n):
    name = f"atleast_{n}d"
    fn = getattr(rumus, name)
    return OpInfo(
        name,
        [f"rumus.{name}"],
        _at_least_ref(getattr(np, name)),
        lambda m: [
            Sample(m()),
            Sample(m(3)),
            Sample(m(2, 3)),
            Sample(m(2, 1, 2, layout="strided")),
            Sample(m(), m(3), m(2, 3)),
        ],
        dtypes=ALL,
        mismatch=False,
        grads=[Row(f"rumus_{name}", lambda x: fn(x), [U(3)])],
    )


SHAPES = [
    _stack("hstack", np.hstack),
    _stack("vstack", np.vstack, samples=_same_rows),
    _stack("row_stack", np.vstack, samples=_same_rows),
    _stack(
        "dstack",
        np.dstack,
        samples=lambda m: [
            Sample([m(3), m(3)]),
            Sample([m(2, 3), m(2, 3)]),
            Sample([m(), m()]),
            Sample([m(2, 3, 2, layout="transposed"), m(2, 3, 1)]),
        ],
    ),
    _stack(
        "column_stack",
        np.column_stack,
        samples=lambda m: [
            Sample([m(3), m(3, 2)]),
            Sample([m(), m(1)]),
            Sample([m(0), m(0, 2)]),
            Sample([m(2, 3, layout="transposed"), m(2)]),
        ],
    ),
    _at_least_op(1),
    _at_least_op(2),
    _at_least_op(3),
    OpInfo(
        "fliplr",
        ["rumus.fliplr"],
        lambda x: np.fliplr(x).copy(),
        lambda m: [Sample(m(3, 4)), Sample(m(2, 3, 2)), Sample(m(3, 4, layout="transposed"))],
        dtypes=ALL,
        grads=[Row("rumus_fliplr", lambda x: rumus.fliplr(x), [U(3, 4)])],
        bad=lambda m: [("fliplr of 1-d", lambda: rumus.fliplr(m.t(3)))],
    ),
    OpInfo(
        "flipud",
        ["rumus.flipud"],
        lambda x: np.flipud(x).copy(),
        lambda m: [
            Sample(m(3)),
            Sample(m(3, 4)),
            Sample(m(0, 2)),
            Sample(m(3, 4, layout="strided")),
        ],
        dtypes=ALL,
        grads=[Row("rumus_flipud", lambda x: rumus.flipud(x), [U(3, 4)])],
        bad=lambda m: [("flipud of 0-d", lambda: rumus.flipud(m.t()))],
    ),
    OpInfo(
        "ravel",
        ["rumus.ravel"],
        lambda x: np.ravel(x).copy(),
        lambda m: [
            Sample(m(3, 4)),
            Sample(m()),
            Sample(m(0, 2)),
            Sample(m(3, 4, layout="transposed")),
        ],
        dtypes=ALL,
        grads=[Row("rumus_ravel", lambda x: rumus.ravel(x), [U(3, 4)])],
    ),
]


# torch's top-level functions that are Tensor methods here: each spelling becomes a variant
# of the entry that tests the variant it equals, run on the same samples. The in-place ones
# (torch.exp_(x)) run on a clone, as Tensor.exp_ does.
SPELLINGS = {
    "abs_": "Tensor.abs_",
    "acos_": "Tensor.acos_",
    "addmv_": "Tensor.addmv_",
    "asin_": "Tensor.asin_",
    "atan_": "Tensor.atan_",
    "ceil_": "Tensor.ceil_",
    "clamp_": "Tensor.clamp_",
    "clamp_max_": "Tensor.clamp_max_",
    "clamp_min_": "Tensor.clamp_min_",
    "cos_": "Tensor.cos_",
    "cosh_": "Tensor.cosh_",
    "erf_": "Tensor.erf_",
    "erfc_": "Tensor.erfc_",
    "exp2_": "Tensor.exp2_",
    "exp_": "Tensor.exp_",
    "expm1_": "Tensor.expm1_",
    "fill_": "Tensor.fill_",
    "floor_": "Tensor.floor_",
    "i0_": "Tensor.i0_",
    "log10_": "Tensor.log10_",
    "log1p_": "Tensor.log1p_",
    "log2_": "Tensor.log2_",
    "log_": "Tensor.log_",
    "logit_": "Tensor.logit_",
    "nan_to_num_": "Tensor.nan_to_num_",
    "neg_": "Tensor.neg_",
    "negative_": "Tensor.negative_",
    "reciprocal_": "Tensor.reciprocal_",
    "round_": "Tensor.round_",
    "rsqrt_": "Tensor.rsqrt_",
    "sigmoid_": "Tensor.sigmoid_",
    "sin_": "Tensor.sin_",
    "sinh_": "Tensor.sinh_",
    "sqrt_": "Tensor.sqrt_",
    "square_": "Tensor.square_",
    "tan_": "Tensor.tan_",
    "tanh_": "Tensor.tanh_",
    "trunc_": "Tensor.trunc_",
    "xlogy_": "Tensor.xlogy_",
    "zero_": "Tensor.zero_",
    "arccos": "rumus.acos",
    "arcsin": "rumus.asin",
    "arctan": "rumus.atan",
    "arctan2": "rumus.atan2",
    "arccos_": "Tensor.acos_",
    "arcsin_": "Tensor.asin_",
    "arctan_": "Tensor.atan_",
    "greater": "rumus.gt",
    "greater_equal": "rumus.ge",
    "less": "rumus.lt",
    "less_equal": "rumus.le",
    "not_equal": "rumus.ne",
    "subtract": "rumus.sub",
    "swapdims": "Tensor.transpose",
    "fix": "rumus.trunc",
    "fix_": "Tensor.trunc_",
    "clip_": "Tensor.clamp_",
}


def add_spellings(ops):
    for name, twin in SPELLINGS.items():
        holders = [op for op in ops if twin in op.variants]
        assert len(holders) == 1, f"no single entry tests {twin}: {holders}"
        holders[0].variants.append(f"rumus.{name}")
