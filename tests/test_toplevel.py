"""torch's top-level spellings of nn.functional ops (python/rumus/_toplevel.py): each call in
torch's argument order and keyword names gives what its F twin gives, and what torch gives on
the same input when torch is importable. Values of every op: the registry (tests/op_db*.py)."""

import zlib

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F


def arr(*shape, lo=-2.0, hi=2.0, k=0):
    """The same values on every call with the same arguments (``k`` tells inputs apart): the
    cases build their inputs once for rumus and once for torch."""
    rng = np.random.default_rng(zlib.crc32(repr((shape, lo, hi, k)).encode()))
    return rng.uniform(lo, hi, shape)


X3 = arr(2, 3, 5)
X4 = arr(2, 3, 4, 4)
X5 = arr(1, 2, 4, 4, 3)
W1, W2, W3 = arr(4, 3, 2), arr(4, 3, 3, 2), arr(4, 2, 2, 2, 2)
WT1, WT2, WT3 = arr(3, 2, 3), arr(3, 2, 2, 2), arr(2, 3, 2, 2, 2)
B4, C3, P3 = arr(4), arr(3), arr(3, lo=0.5, hi=2.0)
IDX = np.array([[1, 4, 1], [0, 2, 4]])
TAB = arr(5, 3)
Y4 = np.array([1.0, -1.0, -1.0, 1.0])
PROB = arr(3, 4, lo=0.1, hi=1.0)
COUNTS = np.arange(12.0).reshape(3, 4) % 4
CTC_LP = arr(6, 2, 4)
CTC_T = np.array([[1, 2, 2], [3, 1, 0]])


class Lib:
    """Builds a call's arguments for rumus or for torch from the same NumPy values."""

    def __init__(self, mod):
        self.mod = mod

    def __call__(self, a, dtype=None):
        if np.asarray(a).dtype.kind in "iu":
            return self.mod.tensor(np.asarray(a), dtype=self.mod.int64)
        return self.mod.tensor(np.asarray(a), dtype=dtype or self.mod.float64)


def _log_softmax(x):
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


# (id, name, args(t) -> (args, kwargs) in torch's spelling, the F call on rumus's arguments)
CASES = [
    ("softmax", "softmax", lambda t: ((t(X3), 1), {}), lambda x, d: F.softmax(x, d)),
    ("softmax_kw", "softmax", lambda t: ((), dict(input=t(X3), dim=-1)), None),
    (
        "softmax_dtype",
        "softmax",
        lambda t: ((t(X3, t.mod.float32), 0), dict(dtype=t.mod.float64)),
        lambda x, d, dtype: F.softmax(x, d, dtype=dtype),
    ),
    ("log_softmax", "log_softmax", lambda t: ((t(X3), 2), {}), lambda x, d: F.log_softmax(x, d)),
    ("log_softmax_kw", "log_softmax", lambda t: ((), dict(input=t(X3), dim=0, dtype=None)), None),
    ("dropout_eval", "dropout", lambda t: ((t(X3), 0.5, False), {}), lambda x, p, tr: x),
    ("dropout_p0_kw", "dropout", lambda t: ((), dict(input=t(X3), p=0.0, train=True)), None),
    (
        "layer_norm",
        "layer_norm",
        lambda t: ((t(X3), (5,), t(arr(5)), t(arr(5, k=1)), 1e-3, False), {}),
        lambda x, s, w, b, eps, c: F.layer_norm(x, s, w, b, eps),
    ),
    (
        "layer_norm_kw",
        "layer_norm",
        lambda t: ((), dict(input=t(X3), normalized_shape=[3, 5], eps=1e-5, cudnn_enable=True)),
        None,
    ),
    (
        "group_norm",
        "group_norm",
        lambda t: ((t(X4), 3, t(C3), t(C3), 1e-4, True), {}),
        lambda x, g, w, b, eps, c: F.group_norm(x, g, w, b, eps),
    ),
    (
        "group_norm_kw",
        "group_norm",
        lambda t: (
            (),
            dict(input=t(X4), num_groups=1, weight=None, bias=None, cudnn_enabled=False),
        ),
        None,
    ),
    (
        "batch_norm_eval",
        "batch_norm",
        lambda t: ((t(X4), t(C3), t(C3), t(C3), t(P3), False, 0.1, 1e-5, True), {}),
        lambda x, w, b, rm, rv, tr, mo, eps, c: F.batch_norm(x, rm, rv, w, b, tr, mo, eps),
    ),
    (
        "batch_norm_kw",
        "batch_norm",
        lambda t: (
            (),
            dict(
                input=t(X3),
                weight=None,
                bias=t(C3),
                running_mean=None,
                running_var=None,
                training=True,
                momentum=0.1,
                eps=1e-5,
                cudnn_enabled=True,
            ),
        ),
        None,
    ),
    (
        "instance_norm",
        "instance_norm",
        lambda t: ((t(X3), t(C3), None, None, None, True, 0.1, 1e-5, False), {}),
        lambda x, w, b, rm, rv, u, mo, eps, c: F.instance_norm(x, rm, rv, w, b, u, mo, eps),
    ),
    ("conv1d", "conv1d", lambda t: ((t(X3), t(W1), t(B4), 2, 1, 1, 1), {}), F.conv1d),
    (
        "conv2d",
        "conv2d",
        lambda t: ((t(X4), t(W2)), dict(bias=t(B4), stride=(2, 1), padding="valid", dilation=1)),
        F.conv2d,
    ),
    ("conv2d_same", "conv2d", lambda t: ((t(X4), t(W2), None, 1, "same"), {}), F.conv2d),
    ("conv3d", "conv3d", lambda t: ((t(X5), t(W3), None, 1, 1, 1, 1), {}), F.conv3d),
    (
        "conv_transpose1d",
        "conv_transpose1d",
        lambda t: ((t(X3), t(WT1), t(C3[:2]), 2, 1, 1, 1, 1), {}),
        F.conv_transpose1d,
    ),
    (
        "conv_transpose2d",
        "conv_transpose2d",
        lambda t: ((t(X4), t(WT2)), dict(stride=2, output_padding=1, dilation=1)),
        F.conv_transpose2d,
    ),
    (
        "conv_transpose3d",
        "conv_transpose3d",
        lambda t: ((t(X5), t(WT3), None, 1, 0, 0, 1, 2), {}),
        F.conv_transpose3d,
    ),
    ("avg_pool1d", "avg_pool1d", lambda t: ((t(X3), 3, 2, 1, True, False), {}), F.avg_pool1d),
    (
        "max_pool1d",
        "max_pool1d",
        lambda t: ((t(X3), 2, 1, 1, 2, True), {}),
        lambda *a: F.max_pool1d(*a),
    ),
    ("max_pool2d", "max_pool2d", lambda t: ((t(X4), 2), {}), lambda x, k: F.max_pool2d(x, k)),
    (
        "max_pool2d_kw",
        "max_pool2d",
        lambda t: ((), dict(input=t(X4), kernel_size=3, stride=[], padding=1, ceil_mode=True)),
        None,
    ),
    (
        "max_pool3d",
        "max_pool3d",
        lambda t: ((t(X5), 2, 1), {}),
        lambda x, k, s: F.max_pool3d(x, k, s),
    ),
    (
        "max_pool1d_with_indices",
        "max_pool1d_with_indices",
        lambda t: ((t(X3), 2), dict(stride=1, padding=1)),
        lambda x, k, stride, padding: F.max_pool1d(x, k, stride, padding, return_indices=True),
    ),
    (
        "adaptive_avg_pool1d",
        "adaptive_avg_pool1d",
        lambda t: ((t(X3), 3), {}),
        F.adaptive_avg_pool1d,
    ),
    (
        "adaptive_max_pool1d",
        "adaptive_max_pool1d",
        lambda t: ((), dict(input=t(X3), output_size=2)),
        lambda input, output_size: F.adaptive_max_pool1d(input, output_size, return_indices=True),
    ),
    (
        "embedding",
        "embedding",
        lambda t: ((t(TAB), t(IDX)), {}),
        lambda w, i: F.embedding(i, w),
    ),
    (
        "embedding_kw",
        "embedding",
        lambda t: ((), dict(weight=t(TAB), indices=t(IDX), padding_idx=1, scale_grad_by_freq=True)),
        lambda weight, indices, padding_idx, scale_grad_by_freq: F.embedding(
            indices, weight, padding_idx, scale_grad_by_freq=scale_grad_by_freq
        ),
    ),
    (
        "bilinear",
        "bilinear",
        lambda t: ((t(arr(2, 3)), t(arr(2, 2)), t(arr(4, 3, 2)), t(B4)), {}),
        F.bilinear,
    ),
    ("prelu", "prelu", lambda t: ((t(X3), t(C3)), {}), F.prelu),
    ("celu", "celu", lambda t: ((t(X3), 0.7), {}), lambda x, a: F.celu(x, a)),
    ("celu_kw", "celu", lambda t: ((), dict(input=t(X3), alpha=1.5)), None),
    ("selu", "selu", lambda t: ((t(X3),), {}), lambda x: F.selu(x)),
    ("threshold", "threshold", lambda t: ((t(X3), 0.5, -1.0), {}), F.threshold),
    ("threshold_kw", "threshold", lambda t: ((), dict(input=t(X3), threshold=0, value=2)), None),
    ("hardshrink", "hardshrink", lambda t: ((t(X3), 1.0), {}), F.hardshrink),
    ("rrelu_eval", "rrelu", lambda t: ((t(X3), 0.1, 0.3, False), {}), lambda *a: F.rrelu(*a)),
    ("rrelu_kw", "rrelu", lambda t: ((), dict(input=t(X3), lower=0.2, upper=0.4)), None),
    ("pixel_shuffle", "pixel_shuffle", lambda t: ((t(arr(1, 8, 2, 1)), 2), {}), F.pixel_shuffle),
    (
        "pixel_unshuffle",
        "pixel_unshuffle",
        lambda t: ((t(arr(1, 2, 2, 4)), 2), {}),
        F.pixel_unshuffle,
    ),
    ("channel_shuffle", "channel_shuffle", lambda t: ((t(arr(2, 6, 3)), 3), {}), F.channel_shuffle),
    (
        "rms_norm",
        "rms_norm",
        lambda t: ((t(X3), (5,), t(arr(5))), dict(eps=1e-3)),
        F.rms_norm,
    ),
    (
        "bce_with_logits",
        "binary_cross_entropy_with_logits",
        lambda t: ((t(arr(3, 4)), t(PROB), t(arr(3, 1, lo=0.5)), t(arr(4, lo=0.5)), 2), {}),
        lambda x, y, w, pw, r: F.binary_cross_entropy_with_logits(
            x, y, w, reduction="sum", pos_weight=pw
        ),
    ),
    (
        "bce_with_logits_default",
        "binary_cross_entropy_with_logits",
        lambda t: ((t(arr(3, 4)), t(PROB)), {}),
        lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="none"),
    ),
    (
        "cosine_embedding_loss",
        "cosine_embedding_loss",
        lambda t: ((t(arr(4, 3)), t(arr(4, 3, k=1)), t(Y4), 0.1, 0), {}),
        lambda a, b, y, m, r: F.cosine_embedding_loss(a, b, y, m, reduction="none"),
    ),
    (
        "hinge_embedding_loss",
        "hinge_embedding_loss",
        lambda t: ((), dict(input=t(arr(4)), target=t(Y4), margin=0.5, reduction=2)),
        lambda input, target, margin, reduction: F.hinge_embedding_loss(
            input, target, margin, reduction="sum"
        ),
    ),
    (
        "kl_div",
        "kl_div",
        lambda t: ((t(arr(3, 4)), t(PROB)), {}),
        lambda x, y: F.kl_div(x, y, reduction="none"),
    ),
    (
        "kl_div_mean",
        "kl_div",
        lambda t: ((t(arr(3, 4)), t(PROB), 1), {}),
        lambda x, y, r: F.kl_div(x, y, reduction="none").mean(),
    ),
    (
        "ctc_loss_mean",
        "ctc_loss",
        lambda t: ((t(_log_softmax(CTC_LP)), t(CTC_T), [6, 5], [3, 2], 0, 1), {}),
        lambda lp, tg, il, tl, b, r: F.ctc_loss(lp, tg, il, tl, b),
    ),
    (
        "kl_div_log_target",
        "kl_div",
        lambda t: ((t(arr(3, 4)), t(arr(3, 4, k=1)), 0), dict(log_target=True)),
        lambda x, y, r, log_target: F.kl_div(x, y, reduction="none", log_target=True),
    ),
    (
        "margin_ranking_loss",
        "margin_ranking_loss",
        lambda t: ((t(arr(4)), t(arr(4, k=1)), t(Y4), 0.2), {}),
        lambda a, b, y, m: F.margin_ranking_loss(a, b, y, m, reduction="none"),
    ),
    (
        "poisson_nll_loss",
        "poisson_nll_loss",
        lambda t: ((t(arr(3, 4, lo=0.5)), t(COUNTS), False, True, 1e-6, 2), {}),
        lambda x, y, li, full, eps, r: F.poisson_nll_loss(x, y, li, full, eps=eps, reduction="sum"),
    ),
    (
        "triplet_margin_loss",
        "triplet_margin_loss",
        lambda t: (
            (t(arr(4, 3)), t(arr(4, 3, k=1)), t(arr(4, 3, k=2)), 2.0, 1.0, 1e-6, True, 0),
            {},
        ),
        lambda a, p, n, m, pp, eps, sw, r: F.triplet_margin_loss(
            a, p, n, m, pp, eps, sw, reduction="none"
        ),
    ),
    (
        "ctc_loss",
        "ctc_loss",
        lambda t: ((t(_log_softmax(CTC_LP)), t(CTC_T), [6, 5], [3, 2]), {}),
        lambda *a: F.ctc_loss(*a, reduction="none"),
    ),
    (
        "ctc_loss_kw",
        "ctc_loss",
        lambda t: (
            (),
            dict(
                log_probs=t(_log_softmax(CTC_LP)),
                targets=t(CTC_T),
                input_lengths=t(np.array([6, 5])),
                target_lengths=t(np.array([3, 2])),
                blank=0,
                reduction=0,
                zero_infinity=True,
            ),
        ),
        lambda log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity: (
            F.ctc_loss(
                log_probs, targets, input_lengths, target_lengths, 0, "none", zero_infinity=True
            )
        ),
    ),
]

CASES += [
    ("hstack", "hstack", lambda t: (([t(arr(3)), t(arr(2))],), {}), None),
    ("hstack_kw", "hstack", lambda t: ((), dict(tensors=[t(X3), t(X3)])), None),
    ("vstack", "vstack", lambda t: (([t(arr(3)), t(arr(2, 3))],), {}), None),
    ("row_stack", "row_stack", lambda t: (([t(arr(3)), t(arr(3, k=1))],), {}), None),
    ("dstack", "dstack", lambda t: (([t(arr(2, 3)), t(X3.reshape(2, 3, 5))],), {}), None),
    ("column_stack", "column_stack", lambda t: ((), dict(tensors=[t(arr(2)), t(arr(2, 3))])), None),
    ("atleast_1d", "atleast_1d", lambda t: ((t(np.array(1.5)),), {}), None),
    ("atleast_2d_many", "atleast_2d", lambda t: ((t(np.array(1.5)), t(arr(3))), {}), None),
    ("atleast_3d_list", "atleast_3d", lambda t: (([t(arr(3)), t(arr(2, 3))],), {}), None),
    ("fliplr", "fliplr", lambda t: ((), dict(input=t(X3))), None),
    ("flipud", "flipud", lambda t: ((t(X3),), {}), None),
    ("ravel", "ravel", lambda t: ((t(X3).transpose(0, 2),), {}), None),
]


def _np(out):
    if isinstance(out, (tuple, list)):
        return [_np(o) for o in out]
    return out.detach().cpu().numpy()


def _close(got, exp):
    _close_np(_np(got), _np(exp))


def _close_np(got, exp):
    if isinstance(got, list):
        assert isinstance(exp, list) and len(got) == len(exp)
        for g, e in zip(got, exp, strict=True):
            _close_np(g, e)
        return
    assert got.shape == exp.shape
    np.testing.assert_allclose(got, exp, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("case", [c for c in CASES if c[3] is not None], ids=lambda c: c[0])
def test_matches_functional(case):
    _, name, build, twin = case
    args, kwargs = build(Lib(rumus))
    got = getattr(rumus, name)(*args, **kwargs)
    _close(got, twin(*args, **kwargs))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_matches_torch(case):
    torch = pytest.importorskip("torch")
    _, name, build, _ = case
    args, kwargs = build(Lib(rumus))
    targs, tkwargs = build(Lib(torch))
    _close(getattr(rumus, name)(*args, **kwargs), getattr(torch, name)(*targs, **tkwargs))


def test_same_functions_as_functional():
    # spellings whose signatures are F's are F's functions themselves: no wrapper cost
    for name in "conv1d conv2d conv3d conv_transpose2d avg_pool1d bilinear prelu relu_".split():
        assert getattr(rumus, name) is getattr(F, name)
    assert rumus.broadcast_to is rumus.Tensor.broadcast_to


def test_dropout_train_same_mask_as_functional():
    x = rumus.tensor(arr(6, 7))
    rumus.manual_seed(3)
    got = rumus.dropout(x, 0.4, True)
    rumus.manual_seed(3)
    np.testing.assert_array_equal(_np(got), _np(F.dropout(x, 0.4, True)))
    assert 0 < int((got == 0).sum().item()) < 42


def test_rrelu_train_same_as_functional():
    x = rumus.tensor(arr(6, 7))
    rumus.manual_seed(4)
    got = rumus.rrelu(x, 0.1, 0.3, True)
    rumus.manual_seed(4)
    np.testing.assert_array_equal(_np(got), _np(F.rrelu(x, 0.1, 0.3, True)))


def test_batch_norm_training_updates_running_stats():
    x = rumus.tensor(X4)
    stats = [rumus.zeros(3, dtype=rumus.float64), rumus.ones(3, dtype=rumus.float64)]
    twin = [s.clone() for s in stats]
    got = rumus.batch_norm(x, None, None, *stats, True, 0.3, 1e-5, True)
    exp = F.batch_norm(x, *twin, training=True, momentum=0.3)
    _close(got, exp)
    _close(stats, twin)
    np.testing.assert_allclose(_np(stats[0]), 0.3 * X4.mean((0, 2, 3)), rtol=1e-6)


@pytest.mark.parametrize(
    "name,args",
    [
        ("relu_", ()),
        ("selu_", ()),
        ("celu_", (0.7,)),
        ("threshold_", (0.5, -1.0)),
        ("rrelu_", (0.1, 0.3)),
    ],
)
def test_inplace_forms(name, args):
    x = rumus.tensor(X3)
    y = x.clone()
    assert getattr(rumus, name)(y, *args) is y
    twin = getattr(F, name.rstrip("_"))
    _close(y, twin(x, *args))


def test_embedding_padding_idx_gets_no_gradient():
    w = rumus.tensor(TAB).requires_grad_()
    rumus.embedding(w, rumus.tensor(IDX), 1).sum().backward()
    g = _np(w.grad)
    assert np.all(g[1] == 0) and np.all(g[4] == 2)
    w.grad = None
    rumus.embedding(w, rumus.tensor(IDX), -1).sum().backward()  # negative: no padding row
    assert np.all(_np(w.grad)[1] == 2)


def _raises(lib, exc, fn):
    with pytest.raises(exc):
        fn(lib)


BAD = [
    # torch's top-level softmax has no default dim
    ("softmax_no_dim", TypeError, lambda m: m.softmax(m.tensor([1.0, 2.0]))),
    ("softmax_dim_range", IndexError, lambda m: m.softmax(m.tensor([1.0, 2.0]), 3)),
    ("dropout_no_train", TypeError, lambda m: m.dropout(m.tensor([1.0]), 0.5)),
    ("batch_norm_positional", TypeError, lambda m: m.batch_norm(m.ones(2, 3), None, None)),
    ("kl_div_string_reduction", TypeError, lambda m: m.kl_div(m.ones(3), m.ones(3), "sum")),
    ("embedding_float_index", RuntimeError, lambda m: m.embedding(m.ones(5, 3), m.tensor([0.0]))),
    ("embedding_weight_str", TypeError, lambda m: m.embedding("w", m.tensor([0]))),
    ("conv2d_channels", RuntimeError, lambda m: m.conv2d(m.ones(1, 2, 4, 4), m.ones(3, 5, 2, 2))),
    ("max_pool2d_kernel", RuntimeError, lambda m: m.max_pool2d(m.ones(1, 1, 2, 2), 3)),
    ("fliplr_1d", RuntimeError, lambda m: m.fliplr(m.ones(3))),
    ("flipud_0d", RuntimeError, lambda m: m.flipud(m.tensor(1.0))),
    ("hstack_empty", RuntimeError, lambda m: m.hstack([])),
    ("vstack_str", TypeError, lambda m: m.vstack([m.ones(2), "x"])),
    ("layer_norm_shape", RuntimeError, lambda m: m.layer_norm(m.ones(2, 3), (4,))),
]


@pytest.mark.parametrize("case", BAD, ids=lambda c: c[0])
def test_bad_input(case):
    _, exc, fn = case
    _raises(rumus, exc, fn)


@pytest.mark.parametrize("case", BAD, ids=lambda c: c[0])
def test_bad_input_torch(case):
    torch = pytest.importorskip("torch")
    _, exc, fn = case
    _raises(torch, exc, fn)


def test_reduction_must_be_aten_enum():
    x = rumus.ones(3)
    with pytest.raises(ValueError, match="reduction"):
        rumus.hinge_embedding_loss(x, x, 1.0, 3)
    with pytest.raises(TypeError, match="reduction"):
        rumus.ctc_loss(x, x, [1], [1], 0, "mean")


def test_rrelu_generator_is_refused():
    with pytest.raises(NotImplementedError, match="generator"):
        rumus.rrelu(rumus.ones(3), generator=rumus.Generator())


@pytest.mark.parametrize(
    "name,args",
    [
        ("binary_cross_entropy_with_logits", (PROB, PROB)),
        ("kl_div", (PROB, PROB)),
        ("hinge_embedding_loss", (PROB, np.sign(PROB - 0.5))),
        ("margin_ranking_loss", (Y4, Y4[::-1].copy(), Y4)),
        ("cosine_embedding_loss", (PROB, PROB[::-1].copy(), np.ones(3))),
        ("triplet_margin_loss", (PROB, PROB + 1, PROB - 1)),
    ],
)
def test_losses_left_unreduced_by_default(name, args):
    # torch's top-level losses declare reduction=1 (mean) but their Python binding passes 0
    t = [rumus.tensor(a) for a in args]
    none, mean = getattr(rumus, name)(*t), getattr(rumus, name)(*t, reduction=1)
    assert none.dim() > 0 and mean.dim() == 0
    np.testing.assert_allclose(_np(mean), _np(none).mean(), rtol=1e-12)


METHOD_SPELLINGS = (
    "abs_ acos_ addmv_ asin_ atan_ ceil_ clamp_ clamp_max_ clamp_min_ cos_ cosh_ erf_ erfc_ exp2_ "
    "exp_ expm1_ fill_ floor_ i0_ log10_ log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ "
    "reciprocal_ round_ rsqrt_ sigmoid_ sin_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ xlogy_ zero_ "
    "broadcast_to detach detach_ is_conj is_floating_point"
).split()
ALIASES = {
    "arccos": "acos",
    "arcsin": "asin",
    "arctan": "atan",
    "arctan2": "atan2",
    "arccos_": "acos_",
    "arcsin_": "asin_",
    "arctan_": "atan_",
    "greater": "gt",
    "greater_equal": "ge",
    "less": "lt",
    "less_equal": "le",
    "not_equal": "ne",
    "subtract": "sub",
    "swapdims": "transpose",
    "fix": "trunc",
    "fix_": "trunc_",
    "clip_": "clamp_",
}


def test_method_spellings_are_the_methods():
    for name in METHOD_SPELLINGS:
        assert getattr(rumus, name) is getattr(rumus.Tensor, name), name
    for name, method in ALIASES.items():
        assert getattr(rumus, name) is getattr(rumus.Tensor, method), name


def test_method_spellings_exist_in_torch():
    torch = pytest.importorskip("torch")
    missing = [n for n in [*METHOD_SPELLINGS, *ALIASES] if not callable(getattr(torch, n, None))]
    assert not missing


def test_inplace_spelling_writes_its_input():
    x = rumus.tensor(X3)
    assert rumus.exp_(x) is x
    np.testing.assert_allclose(_np(x), np.exp(X3))
    assert rumus.clamp_(x, max=1.0) is x and float(x.max()) == 1.0
    assert rumus.zero_(x) is x and not bool(x.any())
    assert rumus.is_floating_point(x) and not rumus.is_floating_point(rumus.tensor([1]))
