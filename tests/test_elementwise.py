"""Elementwise ops against NumPy: values, dtypes, broadcasting, views,
scalars, type promotion, in-place semantics, errors."""

import math
import operator

import numpy as np
import pytest
import rumus
from conftest import (
    NOT_ON_GPU,
    assert_close,
    assert_same_data,
    make,
    noncontig,
    rdt,
    skip_on_gpu,
    tensor,
    to_np,
    wide,
)


def SQ():
    return np.errstate(all="ignore")


# --------------------------------------------------------------------------
# devices: every test runs on the CPU and on the GPU (``device`` fixture)
# --------------------------------------------------------------------------


def on_device(dtypes, device):
    """The dtypes of ``dtypes`` that ``device`` holds."""
    return [d for d in dtypes if device == "cpu" or d not in NOT_ON_GPU]


# --------------------------------------------------------------------------
# reference implementations (float64 in, float64 out)
# --------------------------------------------------------------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x):
    with SQ():
        return 1.0 / (1.0 + np.exp(-x))


def _gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def _elu(x, alpha=1.0):
    with SQ():
        return np.where(x > 0, x, alpha * np.expm1(x))


def _leaky(x, negative_slope=0.01):
    return np.where(x >= 0, x, negative_slope * x)


def _softplus(x, beta=1.0, threshold=20.0):
    with SQ():
        return np.where(x * beta > threshold, x, np.log1p(np.exp(beta * x)) / beta)


def _rsqrt(x):
    with SQ():
        return 1.0 / np.sqrt(x)


def _reciprocal(x):
    with SQ():
        return 1.0 / x


def _relu(x):
    return np.maximum(x, 0)


# --------------------------------------------------------------------------
# unary ops
# --------------------------------------------------------------------------

# name, reference, float domain (low, high), int domain (low, high)
FLOAT_UNARY = [
    ("exp", np.exp, (-3, 3), (-5, 6)),
    ("log", np.log, (0.1, 5), (1, 9)),
    ("log2", np.log2, (0.1, 5), (1, 9)),
    ("log10", np.log10, (0.1, 5), (1, 9)),
    ("log1p", np.log1p, (-0.9, 5), (0, 9)),
    ("expm1", np.expm1, (-3, 3), (-5, 6)),
    ("sqrt", np.sqrt, (0, 5), (0, 9)),
    ("rsqrt", _rsqrt, (0.1, 5), (1, 9)),
    ("sin", np.sin, (-4, 4), (-5, 6)),
    ("cos", np.cos, (-4, 4), (-5, 6)),
    ("tan", np.tan, (-1.3, 1.3), (-5, 6)),
    ("tanh", np.tanh, (-4, 4), (-5, 6)),
    ("sigmoid", _sigmoid, (-6, 6), (-5, 6)),
    ("reciprocal", _reciprocal, (0.2, 4), (1, 9)),
]

# dtype-preserving ops: name, reference, dtypes, domain
PRESERVING_UNARY = [
    ("neg", np.negative, ["float32", "float64", "int64", "int32"]),
    ("abs", np.abs, ["float32", "float64", "int64", "int32"]),
    ("sign", np.sign, ["float32", "float64", "int64", "int32"]),
    ("relu", _relu, ["float32", "float64", "int64", "int32"]),
    ("square", np.square, ["float32", "float64", "int64", "int32"]),
    ("floor", np.floor, ["float32", "float64", "int64"]),
    ("ceil", np.ceil, ["float32", "float64", "int64"]),
    ("round", np.round, ["float32", "float64", "int64"]),
    ("trunc", np.trunc, ["float32", "float64", "int64"]),
]

# activations: only the rumus.f(t, **kw) form is required; float only
ACTIVATIONS = [
    ("gelu", {}, _gelu),
    ("gelu", {"approximate": "none"}, _gelu),
    ("gelu", {"approximate": "tanh"}, _gelu_tanh),
    ("silu", {}, lambda x: x * _sigmoid(x)),
    ("elu", {}, _elu),
    ("elu", {"alpha": 0.5}, lambda x: _elu(x, 0.5)),
    ("leaky_relu", {}, _leaky),
    ("leaky_relu", {"negative_slope": 0.2}, lambda x: _leaky(x, 0.2)),
    ("softplus", {}, _softplus),
    ("softplus", {"beta": 2.0, "threshold": 1.0}, lambda x: _softplus(x, 2.0, 1.0)),
    ("softplus", {"beta": 0.5, "threshold": 3.0}, lambda x: _softplus(x, 0.5, 3.0)),
    ("relu", {}, _relu),
]


def _ref(fn, a, out_dtype):
    with SQ():
        return np.asarray(fn(a.astype(np.float64))).astype(out_dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn,dom,idom", FLOAT_UNARY, ids=[r[0] for r in FLOAT_UNARY])
def test_float_unary(name, fn, dom, idom, dtype, device, rng):
    skip_on_gpu(device, dtype)
    a = make((3, 5), dtype, rng, *dom)
    t = tensor(a, device=device)
    exp = _ref(fn, a, dtype)
    assert_close(getattr(rumus, name)(t), exp)
    assert_close(getattr(t, name)(), exp)
    np.testing.assert_array_equal(to_np(t), a)  # input untouched


@pytest.mark.parametrize("dtype", ["int64", "int32"])
@pytest.mark.parametrize("name,fn,dom,idom", FLOAT_UNARY, ids=[r[0] for r in FLOAT_UNARY])
def test_float_unary_int_promotes_to_float32(name, fn, dom, idom, dtype, device, rng):
    a = make((2, 6), dtype, rng, *idom)
    assert_close(getattr(rumus, name)(tensor(a, device=device)), _ref(fn, a, np.float32))


@pytest.mark.parametrize("dtype", ["uint8", "bool"])
@pytest.mark.parametrize(
    "name,fn", [("exp", np.exp), ("sqrt", np.sqrt), ("sigmoid", _sigmoid), ("sin", np.sin)]
)
def test_float_unary_uint8_bool_promote(name, fn, dtype, device, rng):
    a = make((7,), dtype, rng)
    assert_close(getattr(rumus, name)(tensor(a, device=device)), _ref(fn, a, np.float32))


@pytest.mark.parametrize("name,fn,dom,idom", FLOAT_UNARY, ids=[r[0] for r in FLOAT_UNARY])
def test_float_unary_noncontig(name, fn, dom, idom, device, rng):
    a = make((4, 3), "float32", rng, *dom)
    for kind, t, vals in noncontig(a, device=device):
        assert not t.is_contiguous(), kind
        assert_close(getattr(rumus, name)(t), _ref(fn, vals, np.float32))


@pytest.mark.parametrize("name,fn,dom,idom", FLOAT_UNARY, ids=[r[0] for r in FLOAT_UNARY])
def test_float_unary_0d(name, fn, dom, idom, device, rng):
    fd = wide(device)
    a0 = np.asarray(make((), fd, rng, *dom))
    r = getattr(rumus, name)(tensor(a0, device=device))
    assert r.shape == ()
    assert_close(r, _ref(fn, a0, np.dtype(fd)))


@pytest.mark.parametrize("name,fn,dom,idom", FLOAT_UNARY, ids=[r[0] for r in FLOAT_UNARY])
def test_float_unary_empty(name, fn, dom, idom, device):
    e = np.zeros((0, 3), np.float32)
    assert_close(getattr(rumus, name)(tensor(e, device=device)), e.copy())


# log1p / expm1 / tanh / sin / tan of tiny arguments: relative accuracy (no atol)
SMALL_ARG = [
    ("log1p", np.log1p),
    ("expm1", np.expm1),
    ("tanh", np.tanh),
    ("sin", np.sin),
    ("tan", np.tan),
]


@pytest.mark.parametrize("name,fn", SMALL_ARG, ids=[r[0] for r in SMALL_ARG])
def test_float_unary_small_arguments(name, fn, device):
    x = np.array([1e-30, 1e-8, 1e-5, 1e-4, 1e-3], np.float32)
    a = np.concatenate([x, -x])
    assert_close(
        getattr(rumus, name)(tensor(a, device=device)), _ref(fn, a, np.float32), rtol=1e-5, atol=0
    )


@pytest.mark.parametrize("name,fn,dtypes", PRESERVING_UNARY, ids=[r[0] for r in PRESERVING_UNARY])
def test_preserving_unary(name, fn, dtypes, device, rng):
    for dtype in dtypes:
        a = make((3, 4), dtype, rng)
        if dtype not in on_device(dtypes, device):
            continue  # float64: not on the GPU (by design)
        exp = np.asarray(fn(a)).astype(a.dtype)
        t = tensor(a, device=device)
        assert_close(getattr(rumus, name)(t), exp)
        assert_close(getattr(t, name)(), exp)


@pytest.mark.parametrize("name,fn,dtypes", PRESERVING_UNARY, ids=[r[0] for r in PRESERVING_UNARY])
def test_preserving_unary_noncontig_0d(name, fn, dtypes, device, rng):
    a = make((3, 4), wide(device), rng)
    for kind, t, vals in noncontig(a, device=device):
        assert_close(getattr(rumus, name)(t), fn(vals))
    a0 = np.asarray(np.float32(-1.75))
    assert_close(
        getattr(rumus, name)(tensor(a0, device=device)), np.asarray(fn(a0)).astype(np.float32)
    )


@pytest.mark.parametrize("name,fn,dtypes", PRESERVING_UNARY, ids=[r[0] for r in PRESERVING_UNARY])
def test_preserving_unary_empty(name, fn, dtypes, device):
    e = np.zeros((0, 3), np.int64)
    assert_close(getattr(rumus, name)(tensor(e, device=device)), e.copy())


def test_operator_neg_abs(device):
    a = make((2, 3), "float32", low=-2, high=2)
    t = tensor(a, device=device)
    assert_close(-t, -a)
    assert_close(abs(t), np.abs(a))
    ai = make((5,), "int64")
    assert_close(-tensor(ai, device=device), -ai)
    assert_close(abs(tensor(ai, device=device)), np.abs(ai))


def test_neg_bool_raises(device):
    with pytest.raises(RuntimeError):
        -rumus.tensor([True, False], device=device)


def test_round_half_to_even(device):
    a = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997, -0.51, 1e7 + 0.5], np.float64)
    if device == "cpu":  # float64 is not on the GPU (by design)
        assert_close(rumus.round(tensor(a)), np.round(a))
    a32 = a.astype(np.float32)
    assert_close(tensor(a32, device=device).round(), np.round(a32))


def test_sign_of_zero_and_nan(device):
    a = np.array([0.0, -0.0, 3.0, -2.0, np.nan], np.float32)
    assert_close(rumus.sign(tensor(a, device=device)), np.sign(a))


SPECIAL_UNARY = [
    ("exp", np.exp),
    ("log", np.log),
    ("sqrt", np.sqrt),
    ("sigmoid", _sigmoid),
    ("tanh", np.tanh),
    ("log1p", np.log1p),
    ("reciprocal", _reciprocal),
]


@pytest.mark.parametrize("name,fn", SPECIAL_UNARY, ids=[r[0] for r in SPECIAL_UNARY])
def test_float_unary_special_values(name, fn, device):
    fd = wide(device)
    a = np.array([0.0, -1.0, np.inf, -np.inf, np.nan, 1e-30], fd)
    t = tensor(a, device=device)
    with SQ():
        # float64 on the CPU: _ref(fn, a, float64) is fn(a)
        assert_close(getattr(rumus, name)(t), _ref(fn, a, np.dtype(fd)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kw,fn", ACTIVATIONS, ids=[f"{r[0]}-{r[1]}" for r in ACTIVATIONS])
def test_activations(name, kw, fn, dtype, device, rng):
    skip_on_gpu(device, dtype)
    a = make((4, 5), dtype, rng, -5, 5)
    a[0, :3] = [0.0, 0.5, -0.5]
    assert_close(getattr(rumus, name)(tensor(a, device=device), **kw), _ref(fn, a, dtype))


@pytest.mark.parametrize("name,kw,fn", ACTIVATIONS, ids=[f"{r[0]}-{r[1]}" for r in ACTIVATIONS])
def test_activations_noncontig_0d(name, kw, fn, device, rng):
    a = make((3, 4), "float32", rng, -4, 4)
    for kind, t, vals in noncontig(a, device=device):
        assert_close(getattr(rumus, name)(t, **kw), _ref(fn, vals, np.float32))
    fd = np.dtype(wide(device))
    a0 = np.asarray(fd.type(-0.7))
    assert_close(getattr(rumus, name)(tensor(a0, device=device), **kw), _ref(fn, a0, fd))


@pytest.mark.parametrize("name,kw,fn", ACTIVATIONS, ids=[f"{r[0]}-{r[1]}" for r in ACTIVATIONS])
def test_activations_empty(name, kw, fn, device):
    e = np.zeros((2, 0), np.float32)
    assert_close(getattr(rumus, name)(tensor(e, device=device), **kw), e.copy())


def test_softplus_threshold_branches(device):
    # beta * x just above / below the threshold; large values stay linear (no overflow)
    a = np.array([19.9, 20.1, 25.0, 100.0, -100.0, 0.0], np.float32)
    assert_close(rumus.softplus(tensor(a, device=device)), _ref(_softplus, a, np.float32))
    assert_close(
        rumus.softplus(tensor(a, device=device), beta=2.0, threshold=10.0),
        _ref(lambda x: _softplus(x, 2.0, 10.0), a, np.float32),
    )


def test_relu_method_matches_function(device, rng):
    a = make((6,), "float32", rng)
    t = tensor(a, device=device)
    assert_close(t.relu(), _relu(a))
    assert_close(t.sigmoid(), _ref(_sigmoid, a, np.float32))


HALF_UNARY = [
    ("exp", np.exp),
    ("sqrt", np.sqrt),
    ("sigmoid", _sigmoid),
    ("tanh", np.tanh),
    ("relu", _relu),
    ("neg", np.negative),
    ("abs", np.abs),
    ("sin", np.sin),
]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name,fn", HALF_UNARY, ids=[r[0] for r in HALF_UNARY])
def test_half_unary(name, fn, dtype, device, rng):
    skip_on_gpu(device, dtype)
    a = make((3, 4), "float32", rng, 0 if name == "sqrt" else -2, 2)
    t = tensor(a, dtype)
    x = to_np(t).astype(np.float32)  # the values actually stored
    r = getattr(rumus, name)(t)
    assert_close(r, _ref(fn, x, np.float32), dtype=dtype)


# --------------------------------------------------------------------------
# binary arithmetic
# --------------------------------------------------------------------------


def _nonzero(a):
    if a.dtype.kind == "f":
        return np.where(np.abs(a) < 0.25, np.asarray(1.0, a.dtype), a)
    return np.where(a == 0, np.asarray(1, a.dtype), a)


def _float_out(a):
    return np.float32 if a.dtype.kind in "iub" else a.dtype


def _ref_bin(op):
    """Reference with torch's result dtype for same-dtype operands."""

    def f(a, b):
        with SQ():
            if op in ("div", "true_divide"):
                out = _float_out(a)
                return (a.astype(np.float64) / b.astype(np.float64)).astype(out)
            if a.dtype.kind == "f" and op not in ("floor_divide", "remainder", "fmod"):
                a64, b64 = a.astype(np.float64), b.astype(np.float64)
                return np.asarray(BIN_NP[op](a64, b64)).astype(a.dtype)
            return np.asarray(BIN_NP[op](a, b)).astype(a.dtype)

    return f


BIN_NP = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "floor_divide": np.floor_divide,
    "remainder": np.remainder,
    "fmod": np.fmod,
    "pow": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
}

BIN_OPERATOR = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "true_divide": operator.truediv,
    "floor_divide": operator.floordiv,
    "remainder": operator.mod,
    "pow": operator.pow,
}

NUM = ["float32", "float64", "int64", "int32", "uint8"]
SIGNED = ["float32", "float64", "int64", "int32"]

# name, dtypes, operand generator
BINARY = [
    ("add", NUM, "any"),
    ("sub", NUM, "any"),
    ("mul", NUM, "any"),
    ("div", NUM, "nonzero"),
    ("true_divide", NUM, "nonzero"),
    ("floor_divide", NUM, "nonzero"),
    ("remainder", NUM, "nonzero"),
    ("fmod", NUM, "nonzero"),
    ("pow", NUM, "pow"),
    ("maximum", NUM, "any"),
    ("minimum", NUM, "any"),
]
BIN_IDS = [r[0] for r in BINARY]


def _operands(kind, dtype, rng, sa, sb):
    if kind == "pow":
        if dtype in ("float32", "float64"):
            a = np.abs(make(sa, dtype, rng)) + np.asarray(0.25, dtype)
            b = make(sb, dtype, rng, -2, 2)
        else:
            a = make(sa, dtype, rng, 0 if dtype == "uint8" else -3, 4)
            b = make(sb, dtype, rng, 0, 4)
        return a, b
    a = make(sa, dtype, rng)
    b = make(sb, dtype, rng)
    if kind == "nonzero":  # both, so the operands can be swapped
        a, b = _nonzero(a), _nonzero(b)
    return a, b


@pytest.mark.parametrize("name,dtypes,kind", BINARY, ids=BIN_IDS)
def test_binary_values(name, dtypes, kind, device, rng):
    for dtype in dtypes:
        a, b = _operands(kind, dtype, rng, (3, 4), (3, 4))
        if dtype not in on_device(dtypes, device):
            continue  # float64: not on the GPU (by design)
        exp = _ref_bin(name)(a, b)
        ta, tb = tensor(a, device=device), tensor(b, device=device)
        assert_close(getattr(rumus, name)(ta, tb), exp)
        assert_close(getattr(ta, name)(tb), exp)
        if name in BIN_OPERATOR:
            assert_close(BIN_OPERATOR[name](ta, tb), exp)


@pytest.mark.parametrize("name,dtypes,kind", BINARY, ids=BIN_IDS)
def test_binary_broadcast(name, dtypes, kind, device, rng):
    for dtype in ("float32", "int64"):
        a, b = _operands(kind, dtype, rng, (3, 1, 4), (2, 4))
        exp = _ref_bin(name)(*np.broadcast_arrays(a, b))
        assert exp.shape == (3, 2, 4)
        assert_close(getattr(rumus, name)(tensor(a, device=device), tensor(b, device=device)), exp)
        if kind == "pow" and dtype == "int64":
            continue  # a holds negative ints: int ** negative int is an error
        # and the other way round
        exp2 = _ref_bin(name)(*np.broadcast_arrays(b, a))
        assert_close(getattr(rumus, name)(tensor(b, device=device), tensor(a, device=device)), exp2)


@pytest.mark.parametrize("name,dtypes,kind", BINARY, ids=BIN_IDS)
def test_binary_noncontig(name, dtypes, kind, device, rng):
    a, b = _operands(kind, wide(device), rng, (4, 3), (4, 3))
    va, vb = noncontig(a, device=device), noncontig(b, device=device)
    for ka, ta, ea in va:
        for kb, tb, eb in vb:
            assert_close(getattr(rumus, name)(ta, tb), _ref_bin(name)(ea, eb))


@pytest.mark.parametrize("name,dtypes,kind", BINARY, ids=BIN_IDS)
def test_binary_0d(name, dtypes, kind, device, rng):
    def T(x):
        return tensor(x, device=device)

    a, b = _operands(kind, "float32", rng, (), ())
    a, b = np.asarray(a), np.asarray(b)
    r = getattr(rumus, name)(T(a), T(b))
    assert r.shape == ()
    assert_close(r, _ref_bin(name)(a, b))
    # 0-d with 1-d
    a1, _ = _operands(kind, "float32", rng, (5,), ())
    assert_close(getattr(rumus, name)(T(a1), T(b)), _ref_bin(name)(a1, np.broadcast_to(b, (5,))))


@pytest.mark.parametrize("name,dtypes,kind", BINARY, ids=BIN_IDS)
def test_binary_empty(name, dtypes, kind, device):

    def T(x):
        return tensor(x, device=device)

    e = np.zeros((0, 3), np.float32)
    row = np.ones((3,), np.float32)
    assert_close(getattr(rumus, name)(T(e), T(row)), np.zeros((0, 3), np.float32))
    assert_close(
        getattr(rumus, name)(T(e), T(np.ones((0, 1), np.float32))), np.zeros((0, 3), np.float32)
    )


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum"])
def test_half_binary(name, dtype, device, rng):
    skip_on_gpu(device, dtype)
    a = make((3, 4), "float32", rng)
    b = _nonzero(make((3, 4), "float32", rng))
    ta, tb = tensor(a, dtype), tensor(b, dtype)
    xa, xb = to_np(ta).astype(np.float32), to_np(tb).astype(np.float32)
    ref = {
        "add": np.add,
        "sub": np.subtract,
        "mul": np.multiply,
        "div": np.divide,
        "maximum": np.maximum,
    }[name](xa, xb)
    assert_close(getattr(rumus, name)(ta, tb), ref, dtype=dtype)


def test_add_sub_alpha(device, rng):
    fd = wide(device)
    a, b = make((2, 3), fd, rng), make((2, 3), fd, rng)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)  # a copy on the CPU (float64 already)
    assert_close(
        rumus.add(tensor(a, device=device), tensor(b, device=device), alpha=2.5),
        (a64 + 2.5 * b64).astype(fd),
    )
    assert_close(
        tensor(a, device=device).sub(tensor(b, device=device), alpha=3), (a64 - 3 * b64).astype(fd)
    )
    ai, bi = make((4,), "int64", rng), make((4,), "int64", rng)
    assert_close(
        rumus.add(tensor(ai, device=device), tensor(bi, device=device), alpha=2), ai + 2 * bi
    )
    with pytest.raises(RuntimeError):
        rumus.add(tensor(ai, device=device), tensor(bi, device=device), alpha=0.5)


def test_bool_add_mul_stay_bool(device, rng):
    a, b = make((6,), "bool", rng), make((6,), "bool", rng)
    ta, tb = tensor(a, device=device), tensor(b, device=device)
    assert_close(ta + tb, a | b)
    assert_close(ta * tb, a & b)
    assert_close(rumus.maximum(ta, tb), a | b)


def test_bool_sub_raises(device):
    with pytest.raises(RuntimeError):
        rumus.tensor([True, False], device=device) - rumus.tensor([True, True], device=device)


def test_broadcast_mismatch_raises(device):
    with pytest.raises(RuntimeError):
        rumus.ones(3, device=device) + rumus.ones(4, device=device)
    with pytest.raises(RuntimeError):
        rumus.ones(2, 3, device=device) * rumus.ones(3, 2, device=device)
    with pytest.raises(RuntimeError):
        rumus.maximum(rumus.ones(2, 3, device=device), rumus.ones(4, 1, 2, device=device))


def test_float_division_by_zero(device):
    a = np.array([1.0, -1.0, 0.0, 2.0], np.float32)
    b = np.array([0.0, 0.0, 0.0, -0.0], np.float32)
    with SQ():
        assert_close(tensor(a, device=device) / tensor(b, device=device), a / b)
        ai = np.array([1, -1, 0], np.int64)
        assert_close(tensor(ai, device=device) / 0, (ai / 0.0).astype(np.float32))


@pytest.mark.parametrize("name", ["floor_divide", "remainder"])
def test_integer_division_by_zero_raises(name, device):
    if device == "gpu":
        pytest.skip("the GPU does not check integer division by zero (by design)")
    with pytest.raises(RuntimeError):
        getattr(rumus, name)(rumus.tensor([1, 2]), rumus.tensor([1, 0]))


# --------------------------------------------------------------------------
# Python scalars on either side
# --------------------------------------------------------------------------

SCALAR_OPS = [
    ("+", operator.add),
    ("-", operator.sub),
    ("*", operator.mul),
    ("/", operator.truediv),
    ("//", operator.floordiv),
    ("%", operator.mod),
    ("**", operator.pow),
]


def _scalar_result_dtype(opname, tdtype, scalar):
    if tdtype in ("float32", "float64"):
        return tdtype
    if opname == "/" or isinstance(scalar, float):
        return "float32"
    return tdtype


def _scalar_ref(op, opname, x, s, out, reflected):
    if np.dtype(out).kind == "f":
        x = x.astype(np.float64)
        s = float(s)
    else:
        x = x.astype(np.int64)
    with SQ():
        r = op(s, x) if reflected else op(x, s)
    return np.asarray(r).astype(out)


@pytest.mark.parametrize("reflected", [False, True], ids=["t_op_s", "s_op_t"])
@pytest.mark.parametrize("scalar", [3, 2.5, -2], ids=["int", "float", "negint"])
@pytest.mark.parametrize("tdtype", NUM)
@pytest.mark.parametrize("opname,op", SCALAR_OPS, ids=[r[0] for r in SCALAR_OPS])
def test_python_scalar_operands(opname, op, tdtype, scalar, reflected, device, rng):
    skip_on_gpu(device, tdtype)
    if tdtype == "uint8" and scalar == -2:
        pytest.skip("negative scalar with uint8 wraps differently by design")
    if opname == "**" and not reflected and scalar == -2 and tdtype not in ("float32", "float64"):
        pytest.skip("integer to negative integer power is an error (tested elsewhere)")
    if tdtype in ("float32", "float64"):
        x = make((2, 5), tdtype, rng, 0.5, 3)
    else:
        x = make((2, 5), tdtype, rng, 1, 6)
    t = tensor(x, device=device)
    out = _scalar_result_dtype(opname, tdtype, scalar)
    r = op(scalar, t) if reflected else op(t, scalar)
    exp = _scalar_ref(op, opname, x, scalar, out, reflected)
    if opname == "**" and np.dtype(out).kind == "f":
        assert_close(r, exp, rtol=1e-4)
    else:
        assert_close(r, exp)


def test_scalar_on_0d_tensor(device):
    t = rumus.tensor(3, device=device)
    r = 2.5 * t
    assert r.shape == ()
    assert_close(r, np.asarray(7.5, np.float32))
    if device == "cpu":
        assert_close(10 - rumus.tensor(4.0, dtype=rumus.float64), np.asarray(6.0))
    else:  # float64 is not on the GPU (by design)
        assert_close(10 - rumus.tensor(4.0, device=device), np.asarray(6.0, np.float32))


# --------------------------------------------------------------------------
# type promotion
# --------------------------------------------------------------------------

# (a, b, op, expected dtype). A tensor operand is (dtype, values); a 0-d one
# has a scalar for values. Plain Python numbers are weak scalars.
PROMOTION = [
    (("int64", [1, 2, 3]), 2.5, "+", "float32"),
    (("float32", [1.5, 2.0]), ("float64", 0.25), "+", "float32"),
    (("int32", [1, 2]), ("int64", [3, 4]), "+", "int64"),
    (("bool", [True, False]), ("bool", [True, True]), "+", "bool"),
    (("int64", [3, 4]), ("int64", [2, 8]), "/", "float32"),
    (("int32", [1, 2]), 5, "+", "int32"),
    (("uint8", [1, 2]), 1, "+", "uint8"),
    (("int64", [1, 2]), ("float64", 1.5), "+", "float64"),
    (("int32", [1, 2]), ("int64", 7), "+", "int32"),
    (("uint8", [1, 2]), ("int32", [3, 4]), "+", "int32"),
    (("bool", [True, False]), 1, "+", "int64"),
    (("bool", [True, False]), 1.5, "+", "float32"),
    (("float16", [1.0, 2.0]), 1.5, "+", "float16"),
    (("float16", [1.0, 2.0]), ("bfloat16", [0.5, 4.0]), "+", "float32"),
    (("int32", [1, 2]), ("float16", [0.5, 1.5]), "+", "float16"),
    (("uint8", [1, 2]), ("bool", [True, False]), "+", "uint8"),
    (("float32", [1.0, 2.0]), ("int64", [3, 4]), "+", "float32"),
    (("float64", 1.0), ("float32", 2.0), "+", "float64"),
    (("int32", 4), ("uint8", [1, 2]), "+", "uint8"),
    (("float32", [1.0, 2.0]), True, "+", "float32"),
    (("int64", [1, 2]), True, "*", "int64"),
    (("float32", 0.5), ("int64", [3, 4]), "+", "float32"),
    (("float64", [1.0, 2.0]), ("float16", [0.5, 1.5]), "+", "float64"),
    (("bool", [True, False]), ("float64", 0.5), "+", "float64"),
    (("int64", 3), 2.5, "+", "float32"),
    (("int32", [1, 2]), 2.5, "*", "float32"),
    (("bfloat16", [1.0, 2.0]), ("int64", [3, 4]), "+", "bfloat16"),
    (("int32", [7, 9]), ("int32", [2, 4]), "/", "float32"),
    (("uint8", [4, 5]), 2, "/", "float32"),
]


def _mk_operand(spec, device="cpu"):
    if isinstance(spec, tuple):
        dt, vals = spec
        return (
            tensor(np.array(vals, dtype=np.float32 if dt == "bfloat16" else dt), dt, device),
            np.array(vals, np.float64),
        )
    return spec, np.float64(spec)


@pytest.mark.parametrize("a,b,op,out", PROMOTION, ids=[f"{i}" for i in range(len(PROMOTION))])
def test_type_promotion(a, b, op, out, device):
    skip_on_gpu(device, *[s[0] for s in (a, b) if isinstance(s, tuple)], out)
    ta, na = _mk_operand(a, device)
    tb, nb = _mk_operand(b, device)
    fn = {"+": operator.add, "*": operator.mul, "/": operator.truediv}[op]
    exp = fn(na, nb)
    if out == "bool":
        exp = exp != 0
    shape = np.broadcast_shapes(np.shape(na), np.shape(nb))
    exp = np.broadcast_to(np.asarray(exp), shape)
    r = fn(ta, tb)
    npout = np.float32 if out == "bfloat16" else out
    assert_close(
        r,
        np.asarray(exp).astype(npout),
        dtype=out,
        rtol=1e-2 if out in ("float16", "bfloat16") else None,
    )
    # commutative ops: the other order promotes the same way
    if op in "+*":
        assert fn(tb, ta).dtype == rdt(out)


def test_promotion_function_forms(device):
    i = rumus.tensor([1, 2, 3], device=device)
    if device == "cpu":  # float64 is not on the GPU (by design)
        f = rumus.tensor([0.5, 1.5, 2.5], dtype=rumus.float64)
        assert rumus.add(i, f).dtype == rumus.float64
    else:
        assert rumus.add(i, rumus.tensor([0.5, 1.5, 2.5], device=device)).dtype == rumus.float32
    assert rumus.mul(i, 2.0).dtype == rumus.float32
    assert (
        rumus.maximum(i, rumus.tensor([1, 5, 0], dtype=rumus.int32, device=device)).dtype
        == rumus.int64
    )
    assert rumus.div(i, i).dtype == rumus.float32
    assert rumus.floor_divide(i, 2).dtype == rumus.int64
    assert rumus.remainder(i, 2.0).dtype == rumus.float32


# --------------------------------------------------------------------------
# comparisons, logical, bitwise
# --------------------------------------------------------------------------

CMP = [
    ("eq", "__eq__", np.equal),
    ("ne", "__ne__", np.not_equal),
    ("lt", "__lt__", np.less),
    ("le", "__le__", np.less_equal),
    ("gt", "__gt__", np.greater),
    ("ge", "__ge__", np.greater_equal),
]


@pytest.mark.parametrize("name,dunder,fn", CMP, ids=[r[0] for r in CMP])
def test_comparisons(name, dunder, fn, device, rng):
    for dtype in ("float32", "float64", "int64", "int32", "uint8", "bool"):
        a = make((3, 4), dtype, rng)
        b = make((3, 4), dtype, rng)
        b[0] = a[0]  # some ties
        if device == "gpu" and dtype in NOT_ON_GPU:
            continue  # float64: not on the GPU (by design)
        ta, tb = tensor(a, device=device), tensor(b, device=device)
        exp = fn(a, b)
        assert_close(getattr(rumus, name)(ta, tb), exp)
        assert_close(getattr(ta, name)(tb), exp)
        assert_close(getattr(ta, dunder)(tb), exp)
    # broadcasting + noncontig
    a = make((3, 1, 4), "float32", rng)
    b = make((2, 4), "float32", rng)
    assert_close(getattr(rumus, name)(tensor(a, device=device), tensor(b, device=device)), fn(a, b))
    x = make((4, 3), wide(device), rng)
    for kind, t, vals in noncontig(x, device=device):
        assert_close(getattr(rumus, name)(t, tensor(x, device=device)), fn(vals, x))


@pytest.mark.parametrize("name,dunder,fn", CMP, ids=[r[0] for r in CMP])
def test_comparisons_scalar_and_mixed(name, dunder, fn, device, rng):
    a = make((7,), "int64", rng)
    t = tensor(a, device=device)
    assert_close(getattr(t, dunder)(2), fn(a, 2))
    assert_close(getattr(t, dunder)(0.5), fn(a, 0.5))
    f = make((7,), "float32", rng)
    f[:3] = a[:3]
    assert_close(
        getattr(rumus, name)(t, tensor(f, device=device)),
        fn(a.astype(np.float64), f.astype(np.float64)),
    )
    # reflected: 1 < t  is  t > 1
    refl = {
        "lt": operator.lt,
        "le": operator.le,
        "gt": operator.gt,
        "ge": operator.ge,
        "eq": operator.eq,
        "ne": operator.ne,
    }[name]
    assert_close(refl(1, t), refl(1, a))
    # 0-d and empty
    assert_close(
        getattr(rumus, name)(rumus.tensor(1.5, device=device), rumus.tensor(2.5, device=device)),
        np.asarray(fn(1.5, 2.5)),
    )


@pytest.mark.parametrize("name,dunder,fn", CMP, ids=[r[0] for r in CMP])
def test_comparisons_empty(name, dunder, fn, device):
    assert_close(
        getattr(rumus, name)(rumus.zeros(0, 3, device=device), rumus.zeros(3, device=device)),
        np.zeros((0, 3), bool),
    )


def test_comparisons_nan(device):
    a = np.array([np.nan, 1.0, np.nan], np.float32)
    b = np.array([np.nan, np.nan, 1.0], np.float32)
    for name, dunder, fn in CMP:
        assert_close(
            getattr(rumus, name)(tensor(a, device=device), tensor(b, device=device)), fn(a, b)
        )


def test_comparison_float32_vs_float64_promotes(device):
    skip_on_gpu(device, "float64")
    a = np.array([0.1, 0.5], np.float32)
    b = np.array([0.1, 0.5], np.float64)
    assert_close(tensor(a) == tensor(b), a.astype(np.float64) == b)


def _tri(shape, dt, rng):
    """Values in {-1, 0, 1} ({0, 1} for uint8, {False, True} for bool) of dtype dt."""
    if dt == "bool":
        return make(shape, dt, rng)
    lo = 0 if dt == "uint8" else -1
    return rng.integers(lo, 2, size=shape).astype(dt)


LOGICAL = [
    ("logical_and", np.logical_and),
    ("logical_or", np.logical_or),
    ("logical_xor", np.logical_xor),
]


@pytest.mark.parametrize("name,fn", LOGICAL, ids=[r[0] for r in LOGICAL])
def test_logical_binary(name, fn, device, rng):
    for da, db in [("bool", "bool"), ("float32", "int64"), ("int32", "uint8"), ("float64", "bool")]:
        a, b = _tri((3, 4), da, rng), _tri((4,), db, rng)
        if device == "gpu" and da in NOT_ON_GPU:
            continue  # float64: not on the GPU (by design)
        ta, tb = tensor(a, device=device), tensor(b, device=device)
        assert_close(getattr(rumus, name)(ta, tb), fn(a, b))
        assert_close(getattr(ta, name)(tb), fn(a, b))


def test_logical_not(device, rng):
    for dt in ("bool", "float32", "int64", "uint8"):
        a = _tri((2, 5), dt, rng)
        assert_close(rumus.logical_not(tensor(a, device=device)), np.logical_not(a))
        assert_close(tensor(a, device=device).logical_not(), np.logical_not(a))
    a = _tri((4, 3), wide(device), rng)
    for kind, t, vals in noncontig(a, device=device):
        assert_close(rumus.logical_not(t), np.logical_not(vals))


BITWISE = [
    ("bitwise_and", operator.and_, np.bitwise_and),
    ("bitwise_or", operator.or_, np.bitwise_or),
    ("bitwise_xor", operator.xor, np.bitwise_xor),
]


@pytest.mark.parametrize("name,op,fn", BITWISE, ids=[r[0] for r in BITWISE])
def test_bitwise_binary(name, op, fn, device, rng):
    for dt in ("int64", "int32", "uint8", "bool"):
        if dt == "bool":
            a, b = make((3, 4), dt, rng), make((4,), dt, rng)
        else:
            a = make((3, 4), dt, rng, 0 if dt == "uint8" else -100, 100)
            b = make((4,), dt, rng, 0 if dt == "uint8" else -100, 100)
        exp = fn(a, b)
        ta, tb = tensor(a, device=device), tensor(b, device=device)
        assert_close(getattr(rumus, name)(ta, tb), exp)
        assert_close(op(ta, tb), exp)
    ai = make((5,), "int64", rng, -50, 50)
    assert_close(tensor(ai, device=device) & 6, ai & 6)
    assert_close(6 | tensor(ai, device=device), ai | 6)
    assert_close(op(tensor(ai, device=device), 5), fn(ai, 5))


def test_bitwise_not(device, rng):
    for dt in ("int64", "int32", "uint8", "bool"):
        a = (
            make((6,), dt, rng, 0 if dt == "uint8" else -100, 100)
            if dt != "bool"
            else make((6,), dt, rng)
        )
        assert_close(~tensor(a, device=device), np.invert(a))
        assert_close(rumus.bitwise_not(tensor(a, device=device)), np.invert(a))


def test_bitwise_on_float_raises(device):
    t = rumus.tensor([1.0, 2.0], device=device)
    with pytest.raises((RuntimeError, TypeError)):
        t & t
    with pytest.raises((RuntimeError, TypeError)):
        ~t


def test_isnan_isinf_isfinite(device):
    a = np.array([[0.0, np.nan, np.inf], [-np.inf, -1.5, 1e38]], np.float32)
    for name, fn in [("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)]:
        assert_close(getattr(rumus, name)(tensor(a, device=device)), fn(a))
        assert_close(getattr(tensor(a, device=device), name)(), fn(a))
        assert_close(getattr(rumus, name)(tensor(a, device=device).T), fn(a.T))
        ai = np.array([1, -2, 3], np.int64)
        assert_close(getattr(rumus, name)(tensor(ai, device=device)), fn(ai))


def test_nan_propagation_maximum_minimum(device):
    a = np.array([np.nan, 1.0, 2.0], np.float32)
    b = np.array([0.0, np.nan, 1.0], np.float32)
    ta, tb = tensor(a, device=device), tensor(b, device=device)
    assert_close(rumus.maximum(ta, tb), np.maximum(a, b))
    assert_close(rumus.minimum(ta, tb), np.minimum(a, b))


# --------------------------------------------------------------------------
# where / masked_fill / clamp
# --------------------------------------------------------------------------


def test_where_tensors_broadcast(device, rng):
    def T(x):
        return tensor(x, device=device)

    c = make((3, 1), "bool", rng)
    c[0, 0], c[1, 0] = True, False
    x = make((1, 4), "float32", rng)
    y = make((3, 4), "float32", rng)
    assert_close(rumus.where(T(c), T(x), T(y)), np.where(c, x, y))
    # non-contiguous operands
    c2 = make((4, 3), "bool", rng)
    x2 = make((4, 3), wide(device), rng)
    for (kc, tc, ec), (kx, tx, ex) in zip(
        noncontig(c2, device=device), noncontig(x2, device=device)
    ):
        assert_close(rumus.where(tc, tx, T(x2)), np.where(ec, ex, x2))


def test_where_scalars_and_promotion(device, rng):
    def T(x):
        return tensor(x, device=device)

    c = make((2, 5), "bool", rng)
    x = make((2, 5), "float32", rng)
    i = make((2, 5), "int64", rng)
    tc = T(c)
    assert_close(rumus.where(tc, T(x), 0.0), np.where(c, x, 0).astype(np.float32))
    assert_close(rumus.where(tc, 1.0, T(x)), np.where(c, 1, x).astype(np.float32))
    assert_close(rumus.where(tc, T(i), 2.5), np.where(c, i, 2.5).astype(np.float32))
    assert_close(rumus.where(tc, T(i), -1), np.where(c, i, -1).astype(np.int64))
    if device == "cpu":  # float64 is not on the GPU (by design)
        assert_close(
            rumus.where(tc, T(x), T(x.astype(np.float64))), np.where(c, x, x.astype(np.float64))
        )
    assert_close(rumus.where(tc, 1.0, 0.0), np.where(c, 1.0, 0.0).astype(np.float32))
    assert_close(T(x).where(tc, T(i)), np.where(c, x, i).astype(np.float32))


def test_where_shape_mismatch_raises(device):
    with pytest.raises(RuntimeError):
        rumus.where(
            rumus.ones(3, device=device).bool(),
            rumus.ones(4, device=device),
            rumus.zeros(4, device=device),
        )


def test_masked_fill(device, rng):
    def T(x):
        return tensor(x, device=device)

    a = make((3, 4), "float32", rng)
    m = make((3, 4), "bool", rng)
    t = T(a)
    assert_close(t.masked_fill(T(m), -1.5), np.where(m, np.float32(-1.5), a))
    assert_close(rumus.masked_fill(t, T(m), 7.0), np.where(m, np.float32(7), a))
    np.testing.assert_array_equal(to_np(t), a)  # out-of-place leaves the input alone
    # mask broadcast + 0-d tensor value
    mb = make((1, 4), "bool", rng)
    assert_close(
        t.masked_fill(T(mb), rumus.tensor(2.0, device=device)), np.where(mb, np.float32(2), a)
    )
    # int tensor, int value
    ai = make((3, 4), "int64", rng)
    assert_close(T(ai).masked_fill(T(m), 9), np.where(m, 9, ai))
    # non-contiguous
    for kind, tv, vals in noncontig(a, device=device):
        assert_close(tv.masked_fill(T(m), 0.0), np.where(m, np.float32(0), vals))


def test_masked_fill_inplace(device, rng):
    def T(x):
        return tensor(x, device=device)

    a = make((3, 4), "float32", rng)
    m = make((4,), "bool", rng)
    m[0] = True
    t = T(a)
    v0 = t._version
    r = t.masked_fill_(T(m), 3.0)
    assert t._version > v0
    assert_close(t, np.where(m, np.float32(3), a))
    assert_close(r, np.where(m, np.float32(3), a))
    # through a view
    base = T(a)
    base[:, 1:].masked_fill_(T(np.ones((3, 3), bool)), 0.0)
    exp = a.copy()
    exp[:, 1:] = 0
    assert_close(base, exp)


def test_masked_fill_non_bool_mask_raises(device):
    with pytest.raises(RuntimeError):
        rumus.ones(3, device=device).masked_fill(rumus.tensor([1, 0, 1], device=device), 0.0)


def test_clamp_scalars(device, rng):
    a = make((3, 5), "float32", rng)
    t = tensor(a, device=device)
    assert_close(t.clamp(-1.0, 1.0), np.clip(a, -1, 1))
    assert_close(rumus.clamp(t, min=-0.5), np.maximum(a, np.float32(-0.5)))
    assert_close(rumus.clamp(t, max=0.25), np.minimum(a, np.float32(0.25)))
    assert_close(t.clip(-2.0, 0.5), np.clip(a, -2, 0.5))
    assert_close(rumus.clip(t, min=0.0), np.maximum(a, 0))
    ai = make((3, 5), "int64", rng)
    assert_close(tensor(ai, device=device).clamp(-2, 3), np.clip(ai, -2, 3))
    for kind, tv, vals in noncontig(a, device=device):
        assert_close(tv.clamp(-1.0, 1.0), np.clip(vals, -1, 1))
    assert_close(rumus.tensor(5.0, device=device).clamp(max=1.0), np.asarray(1.0, np.float32))


def test_clamp_inplace_on_a_view_and_nan_bound(device, rng):
    fd = wide(device)
    a = make((4, 6), fd, rng)
    base = tensor(a, device=device)
    view = base.t()  # clamp_ writes through a non-contiguous view
    view.clamp_(-0.5, 0.25)
    assert_close(base, np.clip(a, -0.5, 0.25))
    assert np.isnan(to_np(tensor(a, device=device).clamp(min=float("nan")))).all()


def test_clamp_empty(device):
    assert_close(rumus.zeros(0, 2, device=device).clamp(0.0, 1.0), np.zeros((0, 2), np.float32))


def test_clamp_tensor_bounds(device, rng):
    fd = wide(device)
    a = make((3, 4), fd, rng)
    lo = make((4,), fd, rng, -2, 0)
    hi = make((3, 1), fd, rng, 0, 2)
    t = tensor(a, device=device)
    tlo, thi = tensor(lo, device=device), tensor(hi, device=device)
    assert_close(t.clamp(min=tlo, max=thi), np.minimum(np.maximum(a, lo), hi))
    assert_close(rumus.clamp(t, min=tlo), np.maximum(a, lo))
    assert_close(rumus.clamp(t, max=thi), np.minimum(a, hi))


def test_clamp_min_greater_than_max_gives_max(device, rng):
    a = make((6,), "float32", rng)
    assert_close(
        tensor(a, device=device).clamp(1.0, -1.0),
        np.minimum(np.maximum(a, 1), -1).astype(np.float32),
    )


def test_clamp_propagates_nan(device):
    a = np.array([np.nan, 5.0, -5.0], np.float32)
    assert_close(tensor(a, device=device).clamp(-1.0, 1.0), np.clip(a, -1, 1))


def test_clamp_without_bounds_raises(device):
    with pytest.raises(RuntimeError):
        rumus.ones(3, device=device).clamp()


# --------------------------------------------------------------------------
# div rounding modes, floor_divide / remainder / fmod sign semantics, pow
# --------------------------------------------------------------------------

SIGN_A = [7, -7, 7, -7, 6, -6, 0, 1, -1]
SIGN_B = [2, 2, -2, -2, 3, -3, 5, -5, 5]


def _trunc_div_int(a, b):
    q = np.abs(a) // np.abs(b)
    return (q * np.sign(a) * np.sign(b)).astype(a.dtype)


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_div_rounding_modes_int(dtype, device):
    a, b = np.array(SIGN_A, dtype), np.array(SIGN_B, dtype)
    ta, tb = tensor(a, device=device), tensor(b, device=device)
    assert_close(rumus.div(ta, tb), (a / b).astype(np.float32))
    assert_close(rumus.div(ta, tb, rounding_mode=None), (a / b).astype(np.float32))
    assert_close(rumus.div(ta, tb, rounding_mode="trunc"), _trunc_div_int(a, b))
    assert_close(ta.div(tb, rounding_mode="floor"), np.floor_divide(a, b))
    assert_close(rumus.div(ta, 2, rounding_mode="floor"), np.floor_divide(a, 2))
    assert_close(rumus.div(ta, -2, rounding_mode="trunc"), _trunc_div_int(a, np.full_like(a, -2)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_div_rounding_modes_float(dtype, device, rng):
    skip_on_gpu(device, dtype)
    a = np.concatenate(
        [np.array(SIGN_A, dtype) + np.asarray(0.5, dtype), make((8,), dtype, rng, -10, 10)]
    )
    b = np.concatenate([np.array(SIGN_B, dtype), _nonzero(make((8,), dtype, rng))])
    ta, tb = tensor(a, device=device), tensor(b, device=device)
    assert_close(rumus.div(ta, tb, rounding_mode="trunc"), np.trunc(a / b))
    assert_close(rumus.div(ta, tb, rounding_mode="floor"), np.floor_divide(a, b))
    assert_close(ta.div(tb), a / b)


def test_div_bad_rounding_mode_raises(device):
    with pytest.raises((RuntimeError, ValueError)):
        rumus.div(rumus.ones(2, device=device), rumus.ones(2, device=device), rounding_mode="ceil")


@pytest.mark.parametrize("dtype", ["int64", "int32", "float32", "float64"])
def test_floor_divide_remainder_fmod_signs(dtype, device):
    skip_on_gpu(device, dtype)
    a, b = np.array(SIGN_A, dtype), np.array(SIGN_B, dtype)
    if dtype.startswith("float"):
        a = a + np.asarray(0.25, dtype)
    ta, tb = tensor(a, device=device), tensor(b, device=device)
    assert_close(ta // tb, np.floor_divide(a, b))
    assert_close(rumus.floor_divide(ta, tb), np.floor_divide(a, b))
    assert_close(ta % tb, np.remainder(a, b))
    assert_close(rumus.remainder(ta, tb), np.remainder(a, b))
    assert_close(rumus.fmod(ta, tb), np.fmod(a, b))
    assert_close(ta.fmod(tb), np.fmod(a, b))
    # scalar on either side
    assert_close(ta // -3, np.floor_divide(a, np.asarray(-3, dtype)))
    assert_close(ta % -3, np.remainder(a, np.asarray(-3, dtype)))
    assert_close(-13 // tb, np.floor_divide(np.asarray(-13, dtype), b))
    assert_close(-13 % tb, np.remainder(np.asarray(-13, dtype), b))
    assert_close(rumus.fmod(ta, -3), np.fmod(a, np.asarray(-3, dtype)))


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_integer_division_of_any_magnitude(dtype, rng):
    """floor_divide, remainder and truncating division take float64 division
    where the operands are small enough for it to be exact and the integer
    division elsewhere: operands of every magnitude and both signs, around
    2^51 and at the type's limits, with tensor and scalar divisors."""
    info = np.iinfo(dtype)
    n, bits = 4099, info.bits - 1
    a = rng.integers(info.min, info.max, n, dtype=dtype) >> rng.integers(0, bits, n).astype(dtype)
    b = rng.integers(info.min, info.max, n, dtype=dtype) >> rng.integers(0, bits, n).astype(dtype)
    b[b == 0] = 1
    edges = [info.max, info.min + 1, 1, -1, 0, 3, -3, 2**31 - 1]
    if dtype == "int64":
        edges += [2**51, 2**51 - 1, -(2**51), -(2**51) - 1, 2**53 + 1, 3 * 2**50 + 7]
    e = np.array(edges, dtype)
    a[: len(e)], b[: len(e)] = e, e[::-1]
    b[b == 0] = 7
    a[len(e) : 2 * len(e)], b[len(e) : 2 * len(e)] = e, np.where(e == 0, 5, 1)
    ta, tb = rumus.tensor(a), rumus.tensor(b)
    q, r = np.floor_divide(a, b), np.remainder(a, b)
    trunc = q + ((r != 0) & ((a < 0) != (b < 0)))
    np.testing.assert_array_equal((ta // tb).numpy(), q)
    np.testing.assert_array_equal((ta % tb).numpy(), r)
    np.testing.assert_array_equal(rumus.div(ta, tb, rounding_mode="trunc").numpy(), trunc)
    for d in (7, -3, 2**20 + 1):
        np.testing.assert_array_equal((ta // d).numpy(), np.floor_divide(a, np.asarray(d, dtype)))
        np.testing.assert_array_equal((ta % d).numpy(), np.remainder(a, np.asarray(d, dtype)))


def _float32_bits(rng, n):
    """float32 values from random bits (every exponent, subnormals, inf, NaN) and
    pairs of close magnitudes, as two arrays."""
    a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    b = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    close = (rng.uniform(-1e3, 1e3, n) * b.astype(np.float64)).astype(np.float32)
    return np.concatenate([a, close, a * 0, -np.abs(a)]), np.concatenate([b, b, b, b])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_float32_fmod_family_bitwise(rng):
    # The vectorized float32 fmod/remainder/floor_divide against NumPy, bit for bit
    # (signed zeros included): large quotients, zeros, infinities and NaN take libm.
    a, b = _float32_bits(rng, 5000)
    refs = {"fmod": np.fmod, "remainder": np.remainder, "floor_divide": np.floor_divide}
    for name, ref in refs.items():
        fn = getattr(rumus, name)
        want = ref(a, b)
        got = {
            "contiguous": to_np(fn(rumus.tensor(a), rumus.tensor(b))),
            "strided": to_np(fn(rumus.tensor(np.repeat(a, 2))[::2], rumus.tensor(b))),
            "in place": to_np(rumus.tensor(a).__getattribute__(name + "_")(rumus.tensor(b))),
        }
        for how, g in got.items():
            np.testing.assert_array_equal(g, want, err_msg=f"{name}, {how}")
            assert (np.signbit(g) == np.signbit(want))[~np.isnan(want)].all(), (name, how)
        scalar = to_np(fn(rumus.tensor(a), 2.5))
        np.testing.assert_array_equal(scalar, ref(a, np.float32(2.5)), err_msg=name)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_float32_tan_keeps_relative_accuracy(rng):
    # Near tan's poles and roots (floats nearest to multiples of pi/2) and far out.
    x = np.concatenate(
        [
            (np.arange(1, 3000) * (np.pi / 2)).astype(np.float32),
            rng.uniform(-1e4, 1e4, 5000).astype(np.float32),
            np.float32([0.0, 1e-30, 1e5, 3e6, 1e30, np.inf, -np.inf, np.nan]),
        ]
    )
    x = np.concatenate([x, -x])
    want = np.tan(x.astype(np.float64))
    got = to_np(rumus.tan(rumus.tensor(x))).astype(np.float64)
    ok = np.isfinite(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1.2e-7, atol=0)
    assert np.isnan(got[~ok]).all()
    assert np.signbit(to_np(rumus.tan(rumus.tensor(np.float32([-0.0])))))[0]


def test_pow_variants(device, rng):
    def T(x):
        return tensor(x, device=device)

    f = np.abs(make((2, 4), "float32", rng)) + np.float32(0.5)
    tf = T(f)
    f64 = f.astype(np.float64)
    assert_close(tf**2, (f64**2).astype(np.float32))
    assert_close(tf**0.5, np.sqrt(f64).astype(np.float32))
    assert_close(tf**-1, (1 / f64).astype(np.float32))
    assert_close(tf**0, np.ones_like(f))
    assert_close(tf.pow(3), (f64**3).astype(np.float32), rtol=1e-5)
    assert_close(rumus.pow(tf, -2.5), (f64**-2.5).astype(np.float32), rtol=1e-5)
    assert_close(2**tf, (2.0**f64).astype(np.float32), rtol=1e-5)
    i = make((2, 4), "int64", rng, -3, 4)
    ti = T(i)
    assert_close(ti**2, i**2)
    assert_close(ti**3, i**3)
    assert_close(ti.pow(0), np.ones_like(i))
    assert_close(
        T(np.abs(i)) ** 2.5, (np.abs(i).astype(np.float64) ** 2.5).astype(np.float32), rtol=1e-5
    )
    e = make((2, 4), "int64", rng, 0, 5)
    te = T(e)
    assert_close(2**te, 2**e)
    assert_close(2.0**te, (2.0**e).astype(np.float32))
    assert_close(ti**te, i**e)
    # float tensor ** int tensor promotes to float32
    assert_close(tf**te, (f64**e).astype(np.float32), rtol=1e-5)
    # int32 with int exponent stays int32
    i32 = i.astype(np.int32)
    assert_close(T(i32) ** 2, i32**2)


def test_pow_int_negative_exponent_raises(device):
    with pytest.raises(RuntimeError):
        rumus.tensor([1, 2, 3], device=device) ** -1


def test_pow_special_values(device):
    fd = wide(device)
    a = np.array([0.0, 0.0, -2.0, -2.0, 1.0, np.inf], fd)
    b = np.array([0.0, -1.0, 2.0, 0.5, np.nan, -1.0], fd)
    with SQ():
        # float64 on the CPU: this is np.power(a, b)
        exp = np.power(a.astype(np.float64), b.astype(np.float64)).astype(fd)
        assert_close(rumus.pow(tensor(a, device=device), tensor(b, device=device)), exp)


# --------------------------------------------------------------------------
# in place
# --------------------------------------------------------------------------

INPLACE_OPERATORS = [
    ("+=", operator.iadd, np.add),
    ("-=", operator.isub, np.subtract),
    ("*=", operator.imul, np.multiply),
    ("/=", operator.itruediv, np.divide),
    ("//=", operator.ifloordiv, np.floor_divide),
    ("%=", operator.imod, np.remainder),
    ("**=", operator.ipow, np.power),
]


@pytest.mark.parametrize("name,iop,fn", INPLACE_OPERATORS, ids=[r[0] for r in INPLACE_OPERATORS])
def test_inplace_operators(name, iop, fn, device, rng):
    a = np.abs(make((3, 4), "float32", rng)) + np.float32(0.5)
    b = np.abs(make((4,), "float32", rng)) + np.float32(0.5)
    t = tensor(a, device=device)
    alias = t
    v0 = t._version
    if device == "cpu":
        ptr = t.data_ptr()
    else:
        probe = t[:]  # a view of the same memory
    t = iop(t, tensor(b, device=device))
    assert t is alias, "in-place operator must return the same tensor object"
    if device == "cpu":
        assert t.data_ptr() == ptr
    else:  # data_ptr() raises NotImplementedError on the GPU: the view must see the result
        assert_close(probe, fn(a, b).astype(np.float32), rtol=1e-5)
    assert t._version > v0
    assert_close(alias, fn(a, b).astype(np.float32), rtol=1e-5)
    # with a python scalar
    v1 = t._version
    t = iop(t, 2)
    assert t is alias and t._version > v1
    assert_close(alias, fn(fn(a, b), np.float32(2)).astype(np.float32), rtol=1e-5)


@pytest.mark.parametrize(
    "name,iop,fn",
    [r for r in INPLACE_OPERATORS if r[0] != "/="],
    ids=[r[0] for r in INPLACE_OPERATORS if r[0] != "/="],
)
def test_inplace_operators_int(name, iop, fn, device, rng):
    a = make((2, 5), "int64", rng, 1, 6)
    b = make((5,), "int32", rng, 1, 4)
    t = tensor(a, device=device)
    alias = t
    v0 = t._version
    t = iop(t, tensor(b, device=device))
    assert t is alias and t._version > v0
    assert_close(alias, fn(a, b.astype(np.int64)))


BITWISE_INPLACE = [
    ("&=", operator.iand, np.bitwise_and),
    ("|=", operator.ior, np.bitwise_or),
    ("^=", operator.ixor, np.bitwise_xor),
]


@pytest.mark.parametrize("name,iop,fn", BITWISE_INPLACE, ids=[r[0] for r in BITWISE_INPLACE])
def test_inplace_bitwise(name, iop, fn, device, rng):
    for dt in ("int64", "bool"):
        a = make((6,), dt, rng, -20, 20) if dt != "bool" else make((6,), dt, rng)
        b = make((6,), dt, rng, -20, 20) if dt != "bool" else make((6,), dt, rng)
        t = tensor(a, device=device)
        alias, v0 = t, t._version
        t = iop(t, tensor(b, device=device))
        assert t is alias and t._version > v0
        assert_close(alias, fn(a, b))


INPLACE_METHODS = [
    ("add_", (1.5,), lambda x: x + 1.5),
    ("sub_", (0.5,), lambda x: x - 0.5),
    ("mul_", (3.0,), lambda x: x * 3),
    ("div_", (4.0,), lambda x: x / 4),
    ("neg_", (), np.negative),
    ("abs_", (), np.abs),
    ("exp_", (), np.exp),
    ("log_", (), np.log),
    ("sqrt_", (), np.sqrt),
    ("relu_", (), _relu),
    ("sigmoid_", (), _sigmoid),
    ("tanh_", (), np.tanh),
    ("clamp_", (-1.0, 1.0), lambda x: np.clip(x, -1, 1)),
    ("pow_", (2,), np.square),
    ("floor_", (), np.floor),
    ("ceil_", (), np.ceil),
    ("round_", (), np.round),
]


@pytest.mark.parametrize("name,args,fn", INPLACE_METHODS, ids=[r[0] for r in INPLACE_METHODS])
def test_inplace_methods(name, args, fn, device, rng):
    positive = name in ("log_", "sqrt_")
    a = make((3, 4), "float32", rng, 0.1 if positive else -3, 3)
    exp = _ref(fn, a, np.float32)
    t = tensor(a, device=device)
    v0 = t._version
    r = getattr(t, name)(*args)
    assert t._version > v0
    assert_close(t, exp)
    assert_close(r, exp)
    assert_same_data(r, t, device)
    # through a strided view: the base sees it, the skipped rows are untouched
    big = make((6, 4), "float32", rng, 0.1 if positive else -3, 3)
    base = tensor(big, device=device)
    bv = base._version
    getattr(base[::2], name)(*args)
    expected = big.copy()
    expected[::2] = _ref(fn, big[::2], np.float32)
    assert_close(base, expected)
    assert base._version > bv, "a write through a view bumps the shared version counter"
    # through a transposed view
    base2 = tensor(big, device=device)
    getattr(base2.T, name)(*args)
    assert_close(base2, _ref(fn, big, np.float32))


def test_inplace_tensor_other_through_view(device, rng):
    fd = wide(device)
    a = make((4, 6), fd, rng)
    b = make((4,), fd, rng)
    base = tensor(a, device=device)
    v = base.T  # (6, 4), non-contiguous
    v += tensor(b, device=device)
    exp = a + b[:, None]
    assert_close(base, exp)
    base[1:3].add_(tensor(b[:1], device=device), alpha=2.0)
    exp[1:3] += 2 * b[0]
    assert_close(base, exp)
    n = base[:, 1::2]
    c = make((3,), fd, rng)
    n.mul_(tensor(c, device=device))
    exp[:, 1::2] *= c
    assert_close(base, exp)


def test_inplace_legal_casts(device, rng):
    i32 = make((4,), "int32", rng)
    t = tensor(i32, device=device)
    t += tensor(np.array([1, 2, 3, 4], np.int64), device=device)
    assert_close(t, i32 + np.array([1, 2, 3, 4], np.int32))
    f = make((4,), "float32", rng)
    d = make((4,), "float64", rng)
    if device == "cpu":  # float64 is not on the GPU (by design)
        t = tensor(f)
        t += tensor(d)
        assert_close(t, (f.astype(np.float64) + d).astype(np.float32))
    t = tensor(f, device=device)
    t *= tensor(np.array([1, 2, 3, 4], np.int64), device=device)
    assert_close(t, f * np.array([1, 2, 3, 4], np.float32))
    u = np.array([250, 3], np.uint8)
    t = tensor(u, device=device)
    t += 10
    assert_close(t, (u.astype(np.int64) + 10).astype(np.uint8))


def _t(values, device, dtype=None):
    return rumus.tensor(values, dtype=dtype, device=device)


# each case takes the device
ILLEGAL_INPLACE = [
    ("int /= 2", lambda d: _iop(_t([1, 2], d), operator.itruediv, 2)),
    ("int.div_(2)", lambda d: _t([1, 2], d).div_(2)),
    ("int += 1.5", lambda d: _iop(_t([1, 2], d), operator.iadd, 1.5)),
    ("int += float tensor", lambda d: _iop(_t([1, 2], d), operator.iadd, _t([0.5, 1.0], d))),
    ("int32 *= 0.5", lambda d: _iop(_t([1, 2], d, rumus.int32), operator.imul, 0.5)),
    ("bool += 1", lambda d: _iop(_t([True, False], d), operator.iadd, 1)),
    ("bool += int tensor", lambda d: _iop(_t([True, False], d), operator.iadd, _t([1, 2], d))),
    ("int.exp_()", lambda d: _t([1, 2], d).exp_()),
    ("int.sqrt_()", lambda d: _t([1, 2], d).sqrt_()),
    ("uint8 **= 0.5", lambda d: _iop(_t([1, 2], d, rumus.uint8), operator.ipow, 0.5)),
    ("int.add_(float tensor)", lambda d: _t([1, 2], d).add_(_t([1.0, 2.0], d))),
]


def _iop(t, op, other):
    return op(t, other)


@pytest.mark.parametrize("case,fn", ILLEGAL_INPLACE, ids=[r[0] for r in ILLEGAL_INPLACE])
def test_inplace_illegal_cast_raises(case, fn, device):
    with pytest.raises(RuntimeError):
        fn(device)


def test_inplace_illegal_cast_leaves_tensor_unchanged(device):
    t = rumus.tensor([1, 2, 3], device=device)
    with pytest.raises(RuntimeError):
        t /= 2
    assert t.dtype == rumus.int64
    assert t.tolist() == [1, 2, 3]


def test_inplace_self_broadcast_raises(device):
    t = rumus.ones(3, device=device)
    with pytest.raises(RuntimeError):
        t += rumus.ones(2, 3, device=device)
    with pytest.raises(RuntimeError):
        rumus.ones(3, 1, device=device).mul_(rumus.ones(3, 4, device=device))


def test_inplace_on_expanded_view_raises(device):
    t = rumus.ones(1, 3, device=device).expand(4, 3)
    with pytest.raises(RuntimeError):
        t.add_(1.0)


def test_inplace_0d_and_empty(device):
    t = rumus.tensor(2.0, device=device)
    v0 = t._version
    t += 1.5
    assert t._version > v0
    assert_close(t, np.asarray(3.5, np.float32))
    e = rumus.zeros(0, 3, device=device)
    e.mul_(2.0)
    assert tuple(e.shape) == (0, 3)


def test_atan2_of_signed_zeros_and_infinities(device):
    # WGSL leaves these to the driver; rumus gives C's values on every device.
    inf = float("inf")
    y = np.array([0.0, -0.0, 0.0, -0.0, inf, -inf, inf, -inf], np.float32)
    x = np.array([0.0, 0.0, -0.0, -0.0, inf, inf, -inf, -inf], np.float32)
    got = rumus.atan2(rumus.tensor(y, device=device), rumus.tensor(x, device=device))
    want = np.arctan2(y, x)
    np.testing.assert_allclose(to_np(got), want, rtol=1e-6)
    np.testing.assert_array_equal(np.signbit(to_np(got)), np.signbit(want))


def test_relu_keeps_nan(device):
    x = rumus.tensor([float("nan"), -1.0, 0.0, 2.0], device=device)
    r = rumus.nn.functional.relu(x).cpu().numpy()
    assert math.isnan(r[0]) and r[1:].tolist() == [0.0, 0.0, 2.0]


@pytest.mark.parametrize("dtype", [rumus.float32, rumus.float64])
def test_relu_gradient_selects_the_incoming_gradient(dtype, rng):
    """ReLU's backward passes g where the output is positive and 0 elsewhere (a select, as
    PyTorch's threshold_backward: an inf or NaN gradient at a dead unit gives 0, not NaN), for a
    broadcast gradient too; differentiated again it still works (recorded ops)."""
    xs = rng.standard_normal((3, 40)).astype(rumus.tensor(0.0, dtype=dtype).numpy().dtype)
    xs[0, :4] = [0.0, -0.0, np.nan, 1e-30]
    x = rumus.tensor(xs, requires_grad=True)
    g = rng.standard_normal((3, 40))
    g[1, :3] = [np.inf, -np.inf, np.nan]
    rumus.nn.functional.relu(x).backward(rumus.tensor(g, dtype=dtype))
    np.testing.assert_array_equal(x.grad.numpy(), np.where(xs > 0, g, 0.0).astype(xs.dtype))
    x.grad = None
    rumus.nn.functional.relu(x).sum().backward()  # an expanded gradient of ones
    np.testing.assert_array_equal(x.grad.numpy(), (xs > 0).astype(xs.dtype))
    x64 = rumus.tensor(rng.standard_normal(7), dtype=rumus.float64, requires_grad=True)
    assert rumus.autograd.gradgradcheck(lambda t: rumus.nn.functional.relu(t) * t, (x64,))


# float32 on the CPU computes these on vectors (rust/backend/cpu/vmath.rs): checked over wide
# ranges against float64 NumPy, with the vector blocks and their tails, in place and on views.
VECTOR_MATH = {
    "sin": (np.sin, np.linspace(-9000, 9000, 4099)),
    "cos": (np.cos, np.linspace(-9000, 9000, 4099)),
    "erf": (np.vectorize(math.erf), np.linspace(-6, 6, 4099)),
    "expm1": (np.expm1, np.linspace(-90, 88, 4099)),
    "log1p": (np.log1p, np.linspace(-0.999, 1e4, 4099)),
}


@pytest.mark.parametrize("name", list(VECTOR_MATH))
def test_float32_vector_math(name):
    ref_fn, x = VECTOR_MATH[name]
    x = np.concatenate([x, [0.0, 1e-30, 3e-8, 0.5, 1.0]]).astype(np.float32)
    if name in ("sin", "cos"):  # large arguments take the exact (libm) path
        x = np.concatenate([x, [1e5, -3e7, 1e38, np.inf, -np.inf, np.nan]]).astype(np.float32)
    with np.errstate(invalid="ignore"):
        ref = ref_fn(x.astype(np.float64))
    for got in (
        getattr(rumus.tensor(x), name)(),
        getattr(rumus.tensor(x), name + "_")(),
        getattr(rumus.tensor(np.repeat(x, 2))[::2], name)(),
    ):
        np.testing.assert_allclose(got.numpy(), ref, rtol=3e-7 * 4, atol=1e-37)
    assert math.copysign(1, getattr(rumus.tensor([-0.0]), name)().item()) == (
        1 if name == "cos" else -1
    )
