"""shaders/elementwise.wgsl through wgpu-py against NumPy."""

import math

import numpy as np
import pytest

from .conftest import CODES as C
from .conftest import groups_1d

F = "elementwise.wgsl"


def params(
    n, op=0, flags=1, s0=0, s1=0, alpha=0, shape=(), offs=(0, 0, 0, 0), strides=((), (), (), ())
):
    """Packs the Params struct: a flat contiguous run unless shape/strides are given."""
    words = np.zeros(8 + 8 + 4 + 32, dtype=np.uint32)
    shp = list(shape) or [n]
    words[:8] = [n, len(shp), op, flags, s0, s1, alpha, 0]
    words[8:16] = shp + [1] * (8 - len(shp))
    words[16:20] = offs
    for k, st in enumerate(strides):
        st = list(st) or [1]
        words[20 + 8 * k : 20 + 8 * k + len(st)] = np.array(st, dtype=np.int32).view(np.uint32)
    return words


def f32bits(v):
    return int(np.float32(v).view(np.uint32))


# Bindings each entry point uses (a, b, c); the others stay unbound.
USES = {
    "unary": "a",
    "binary": "ab",
    "compare": "ab",
    "classify": "a",
    "unary_i32": "a",
    "binary_i32": "ab",
    "compare_i32": "ab",
    "copy": "a",
    "fill": "",
    "where_": "abc",
    "copy_t": "a",
    "cast_to_t": "a",
    "cast_from_t": "a",
    "fill_t": "",
    "where_t": "abc",
}


def run(gpu, entry, a=None, b=None, c=None, out=None, p=None, dtype="f32"):
    bufs = []
    for name, x in zip("abc", (a, b, c)):
        bufs.append(
            None if name not in USES[entry] else (np.zeros(4, np.uint32) if x is None else x)
        )
    return gpu.run(F, entry, bufs + [out], p, groups_1d(out.size), dtype=dtype)[3]


def erf(x):
    return np.vectorize(math.erf)(x)


UNARY = [
    (C["UNARY_NEG"], lambda x: -x, (-3, 3)),
    (C["UNARY_ABS"], np.abs, (-3, 3)),
    (C["UNARY_SIGN"], np.sign, (-3, 3)),
    (C["UNARY_SQUARE"], np.square, (-3, 3)),
    (C["UNARY_RELU"], lambda x: np.maximum(x, 0), (-3, 3)),
    (C["UNARY_FLOOR"], np.floor, (-3, 3)),
    (C["UNARY_CEIL"], np.ceil, (-3, 3)),
    (C["UNARY_ROUND"], np.round, (-3, 3)),
    (C["UNARY_TRUNC"], np.trunc, (-3, 3)),
    (C["UNARY_EXP"], np.exp, (-5, 5)),
    (C["UNARY_EXP2"], np.exp2, (-5, 5)),
    (C["UNARY_LOG"], np.log, (0.1, 5)),
    (C["UNARY_LOG2"], np.log2, (0.1, 5)),
    (C["UNARY_LOG10"], np.log10, (0.1, 5)),
    (C["UNARY_LOG1P"], np.log1p, (-0.5, 5)),
    (C["UNARY_EXPM1"], np.expm1, (-3, 3)),
    (C["UNARY_SQRT"], np.sqrt, (0, 5)),
    (C["UNARY_RSQRT"], lambda x: 1 / np.sqrt(x), (0.1, 5)),
    (C["UNARY_RECIPROCAL"], lambda x: 1 / x, (0.5, 5)),
    (C["UNARY_SIN"], np.sin, (-3, 3)),
    (C["UNARY_COS"], np.cos, (-3, 3)),
    (C["UNARY_TAN"], np.tan, (-1, 1)),
    (C["UNARY_ASIN"], np.arcsin, (-0.9, 0.9)),
    (C["UNARY_ACOS"], np.arccos, (-0.9, 0.9)),
    (C["UNARY_ATAN"], np.arctan, (-3, 3)),
    (C["UNARY_SINH"], np.sinh, (-3, 3)),
    (C["UNARY_COSH"], np.cosh, (-3, 3)),
    (C["UNARY_TANH"], np.tanh, (-30, 30)),
    (C["UNARY_SIGMOID"], lambda x: 1 / (1 + np.exp(-x)), (-10, 10)),
    (C["UNARY_ERF"], erf, (-3, 3)),
    (C["UNARY_GELU"], lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))), (-3, 3)),
    (
        C["UNARY_GELU_TANH"],
        lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
        (-3, 3),
    ),
    (C["UNARY_SILU"], lambda x: x / (1 + np.exp(-x)), (-5, 5)),
    (C["UNARY_MISH"], lambda x: x * np.tanh(np.log1p(np.exp(x))), (-5, 5)),
]


@pytest.mark.parametrize("op,fn,dom", UNARY, ids=[str(u[0]) for u in UNARY])
def test_unary(gpu, op, fn, dom):
    rng = np.random.default_rng(op)
    x = rng.uniform(*dom, 1000).astype(np.float32)
    if op == C["UNARY_ROUND"]:
        x[:4] = [0.5, 1.5, 2.5, -0.5]
    got = run(gpu, "unary", a=x, out=np.zeros_like(x), p=params(x.size, op))
    np.testing.assert_allclose(got, fn(x.astype(np.float64)), rtol=2e-6, atol=2e-6)


def test_unary_arguments_and_special_values(gpu):
    x = np.array([-2.0, -0.5, 0.0, 0.5, 30.0, np.nan], np.float32)
    leaky = run(
        gpu, "unary", a=x, out=np.zeros_like(x), p=params(6, C["UNARY_LEAKY_RELU"], s0=f32bits(0.1))
    )
    np.testing.assert_allclose(leaky, np.where(x < 0, 0.1 * x, x), equal_nan=True)
    elu = run(gpu, "unary", a=x, out=np.zeros_like(x), p=params(6, C["UNARY_ELU"], s0=f32bits(1.5)))
    np.testing.assert_allclose(
        elu, np.where(x <= 0, 1.5 * np.expm1(x), x), rtol=1e-6, equal_nan=True
    )
    sp = run(
        gpu,
        "unary",
        a=x,
        out=np.zeros_like(x),
        p=params(6, C["UNARY_SOFTPLUS"], s0=f32bits(2.0), s1=f32bits(20.0)),
    )
    np.testing.assert_allclose(
        sp, np.where(2 * x > 20, x, np.log1p(np.exp(2 * x)) / 2), rtol=1e-5, equal_nan=True
    )
    relu = run(gpu, "unary", a=x, out=np.zeros_like(x), p=params(6, C["UNARY_RELU"]))
    assert np.isnan(relu[-1])  # NaN propagates, as in PyTorch
    for op in (C["UNARY_ASIN"], C["UNARY_ACOS"]):
        assert np.isnan(run(gpu, "unary", a=x, out=np.zeros_like(x), p=params(6, op))[-1])
    y = np.array([1.0, np.nan, -np.inf, 0.0, np.nan, 2.0], np.float32)
    for op in (C["BINARY_MAXIMUM"], C["BINARY_MINIMUM"]):  # NaN on either side wins
        got = run(gpu, "binary", a=x, b=y, out=np.zeros_like(x), p=params(6, op))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(x) | np.isnan(y), err_msg=str(op))


@pytest.mark.parametrize(
    "op,fn",
    [(C["UNARY_SIN"], np.sin), (C["UNARY_COS"], np.cos), (C["UNARY_TAN"], np.tan)],
    ids=["sin", "cos", "tan"],
)
def test_trig_relative_accuracy(gpu, op, fn):
    """A few ulp relative, small arguments and those near multiples of pi/2
    included (drivers' builtins are only accurate in absolute terms)."""
    rng = np.random.default_rng(op)
    tiny = np.array([1e-30, 1e-8, 1e-5, 1e-3, -1e-5, 0.0], np.float32)
    near = (np.arange(-40, 41) * (np.pi / 2)).astype(np.float32)
    x = np.concatenate([tiny, near, rng.uniform(-10, 10, 500), rng.uniform(-9e4, 9e4, 200)]).astype(
        np.float32
    )
    got = run(gpu, "unary", a=x, out=np.zeros_like(x), p=params(x.size, op)).astype(np.float64)
    want = fn(x.astype(np.float64))
    # 2-4 ulp of the result (4 · 2^-23 relative).
    np.testing.assert_allclose(got, want, rtol=4 * 2.0**-23, atol=0)


BINARY = [
    (C["BINARY_ADD"], lambda a, b: a + 2 * b),
    (C["BINARY_SUB"], lambda a, b: a - 2 * b),
    (C["BINARY_MUL"], np.multiply),
    (C["BINARY_DIV"], np.divide),
    (C["BINARY_DIV_TRUNC"], lambda a, b: np.trunc(a / b)),
    (C["BINARY_FLOOR_DIV"], lambda a, b: np.floor(a / b)),
    (C["BINARY_REM"], np.remainder),
    (C["BINARY_FMOD"], np.fmod),
    (C["BINARY_POW"], np.power),
    (C["BINARY_MAXIMUM"], np.maximum),
    (C["BINARY_MINIMUM"], np.minimum),
    (C["BINARY_ATAN2"], np.arctan2),
]


@pytest.mark.parametrize("op,fn", BINARY, ids=[str(b[0]) for b in BINARY])
def test_binary_broadcast(gpu, op, fn):
    rng = np.random.default_rng(op)
    a = rng.uniform(-3, 3, (5, 1)).astype(np.float32)
    b = rng.uniform(0.5, 3, (1, 7)).astype(np.float32) * rng.choice([-1, 1], (1, 7)).astype(
        np.float32
    )
    if op == C["BINARY_POW"]:
        a = np.abs(a) + 0.1
    out = np.zeros((5, 7), np.float32)
    p = params(
        35, op, flags=0, alpha=f32bits(2.0), shape=(5, 7), strides=((7, 1), (1, 0), (0, 1), ())
    )
    got = run(gpu, "binary", a=a, b=b, out=out, p=p)
    np.testing.assert_allclose(
        got, fn(a.astype(np.float64), b.astype(np.float64)), rtol=3e-6, atol=3e-6
    )


def test_pow_negative_base_and_scalar_operand(gpu):
    a = np.array([-2.0, -2.0, -8.0, 0.0, 0.0, 3.0], np.float32)
    b = np.array([2.0, 3.0, 1 / 3, -1.0, 0.0, 0.5], np.float32)
    got = run(gpu, "binary", a=a, b=b, out=np.zeros(6, np.float32), p=params(6, C["BINARY_POW"]))
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(got, np.power(a, b), rtol=1e-6, equal_nan=True)
    # b as the scalar s1 (flag bit 2): a - 0.5
    got = run(
        gpu,
        "binary",
        a=a,
        out=np.zeros(6, np.float32),
        p=params(6, C["BINARY_SUB"], flags=1 | 4, s1=f32bits(0.5), alpha=f32bits(1.0)),
    )
    np.testing.assert_allclose(got, a - 0.5)


def test_compare_and_classify(gpu):
    a = np.array([1.0, 2.0, np.nan, 3.0, 0.0, np.inf], np.float32)
    b = np.array([1.0, 3.0, 1.0, 2.0, 0.0, 1.0], np.float32)
    for name, fn in zip(
        ["EQ", "NE", "LT", "LE", "GT", "GE", "LOGICAL_AND", "LOGICAL_OR", "LOGICAL_XOR"],
        [
            np.equal,
            np.not_equal,
            np.less,
            np.less_equal,
            np.greater,
            np.greater_equal,
            np.logical_and,
            np.logical_or,
            np.logical_xor,
        ],
    ):
        op = C["BINARY_" + name]
        got = run(gpu, "compare", a=a, b=b, out=np.zeros(6, np.uint32), p=params(6, op))
        np.testing.assert_array_equal(got, fn(a, b).astype(np.uint32), err_msg=name)
    for name, fn in [
        ("IS_NAN", np.isnan),
        ("IS_INF", np.isinf),
        ("IS_FINITE", np.isfinite),
        ("LOGICAL_NOT", lambda x: x == 0),
    ]:
        op = C["UNARY_" + name]
        got = run(gpu, "classify", a=a, out=np.zeros(6, np.uint32), p=params(6, op))
        np.testing.assert_array_equal(got, fn(a).astype(np.uint32))


def test_int_kernels(gpu):
    a = np.array([-7, -3, 0, 5, 9, 2], np.int32)
    b = np.array([2, -2, 3, -4, 3, 5], np.int32)
    expect = {
        C["BINARY_ADD"]: a + b,
        C["BINARY_SUB"]: a - b,
        C["BINARY_MUL"]: a * b,
        C["BINARY_DIV_TRUNC"]: np.trunc(a / b).astype(np.int32),
        C["BINARY_FLOOR_DIV"]: a // b,
        C["BINARY_REM"]: np.remainder(a, b),
        C["BINARY_FMOD"]: np.fmod(a, b),
        C["BINARY_MAXIMUM"]: np.maximum(a, b),
        C["BINARY_MINIMUM"]: np.minimum(a, b),
        C["BINARY_BIT_AND"]: a & b,
        C["BINARY_BIT_OR"]: a | b,
        C["BINARY_BIT_XOR"]: a ^ b,
    }
    for op, want in expect.items():
        got = run(gpu, "binary_i32", a=a, b=b, out=np.zeros(6, np.int32), p=params(6, op, alpha=1))
        np.testing.assert_array_equal(got, want, err_msg=str(op))
    # Every sign combination, large magnitudes, i32 min / -1 (wraps) and a zero divisor (0).
    rng = np.random.default_rng(0)
    ra = np.concatenate(
        [rng.integers(-(1 << 31), 1 << 31, 200), [-(1 << 31), -(1 << 31), 7, -7]]
    ).astype(np.int32)
    rb = np.concatenate(
        [rng.integers(-50, 50, 100), rng.integers(-(1 << 31), 1 << 31, 100), [-1, 3, 0, 0]]
    ).astype(np.int32)
    wide, bw = ra.astype(np.int64), np.where(rb == 0, 1, rb).astype(np.int64)
    trunc = np.sign(wide) * np.sign(bw) * (np.abs(wide) // np.abs(bw))
    expect = {
        C["BINARY_DIV_TRUNC"]: trunc,
        C["BINARY_FLOOR_DIV"]: wide // bw,
        C["BINARY_REM"]: np.remainder(wide, bw),
        C["BINARY_FMOD"]: wide - bw * trunc,
    }
    for op, want in expect.items():
        got = run(
            gpu,
            "binary_i32",
            a=ra,
            b=rb,
            out=np.zeros(ra.size, np.int32),
            p=params(ra.size, op, alpha=1),
        )
        np.testing.assert_array_equal(
            got, np.where(rb == 0, 0, want).astype(np.int32), err_msg=str(op)
        )
    got = run(
        gpu,
        "binary_i32",
        a=np.abs(a),
        b=np.array([0, 1, 2, 3, 2, 1], np.int32),
        out=np.zeros(6, np.int32),
        p=params(6, C["BINARY_POW"], alpha=1),
    )
    np.testing.assert_array_equal(got, np.abs(a) ** np.array([0, 1, 2, 3, 2, 1]))
    for op, fn in [
        (C["UNARY_NEG"], np.negative),
        (C["UNARY_ABS"], np.abs),
        (C["UNARY_SIGN"], np.sign),
        (C["UNARY_SQUARE"], np.square),
        (C["UNARY_RELU"], lambda x: np.maximum(x, 0)),
        (C["UNARY_BITWISE_NOT"], np.invert),
    ]:
        got = run(gpu, "unary_i32", a=a, out=np.zeros(6, np.int32), p=params(6, op))
        np.testing.assert_array_equal(got, fn(a))
    got = run(gpu, "compare_i32", a=a, b=b, out=np.zeros(6, np.uint32), p=params(6, C["BINARY_LT"]))
    np.testing.assert_array_equal(got, (a < b).astype(np.uint32))


def test_copy_casts_and_strides(gpu):
    x = np.array([1.7, -2.5, 0.0, np.nan, 300.0, -0.0], np.float32)
    words = x.view(np.uint32)
    # float -> int32 truncates, -> bool is != 0 (NaN is true), -> uint8 wraps.
    got = run(
        gpu,
        "copy",
        a=words,
        out=np.zeros(6, np.uint32),
        p=params(6, C["KIND_F32"] | (C["KIND_I32"] << 4)),
    )
    np.testing.assert_array_equal(got.view(np.int32)[[0, 1, 2, 4]], [1, -2, 0, 300])
    got = run(
        gpu,
        "copy",
        a=words,
        out=np.zeros(6, np.uint32),
        p=params(6, C["KIND_F32"] | (C["KIND_BOOL"] << 4)),
    )
    np.testing.assert_array_equal(got, [1, 1, 0, 1, 1, 0])
    got = run(
        gpu,
        "copy",
        a=words,
        out=np.zeros(6, np.uint32),
        p=params(6, C["KIND_F32"] | (C["KIND_U8"] << 4)),
    )
    np.testing.assert_array_equal(got[[0, 2, 4]], [1, 0, 300 % 256])
    ints = np.array([-3, 0, 7], np.int32)
    got = run(
        gpu,
        "copy",
        a=ints.view(np.uint32),
        out=np.zeros(3, np.uint32),
        p=params(3, C["KIND_I32"] | (C["KIND_F32"] << 4)),
    )
    np.testing.assert_array_equal(got.view(np.float32), [-3.0, 0.0, 7.0])
    # A transposed, offset source into a contiguous destination.
    src = np.arange(40, dtype=np.float32)
    p = params(12, 0, flags=0, shape=(3, 4), offs=(0, 5, 0, 0), strides=((4, 1), (1, 3), (), ()))
    got = run(gpu, "copy", a=src.view(np.uint32), out=np.zeros(12, np.uint32), p=p).view(np.float32)
    np.testing.assert_array_equal(got.reshape(3, 4), src[5 : 5 + 12].reshape(4, 3).T)


def test_fill_and_where(gpu):
    out = np.zeros(300, np.uint32)
    got = run(gpu, "fill", out=out, p=params(300, s0=f32bits(2.5)))
    np.testing.assert_array_equal(got.view(np.float32), np.full(300, 2.5, np.float32))
    c = np.array([1, 0, 1, 0], np.uint32)
    a = np.array([1.0, 2.0, 3.0, 4.0], np.float32).view(np.uint32)
    got = run(
        gpu,
        "where_",
        a=a,
        b=np.zeros(4, np.uint32),
        c=c,
        out=np.zeros(4, np.uint32),
        p=params(4, flags=1 | 4, s1=f32bits(-1.0)),
    )
    np.testing.assert_array_equal(got.view(np.float32), [1.0, -1.0, 3.0, -1.0])


def test_many_workgroups_spill_into_y(gpu):
    n = 256 * 65535 + 300  # more than 65,535 workgroups of 256
    x = np.ones(n, np.float32)
    got = run(gpu, "unary", a=x, out=np.zeros_like(x), p=params(n, C["UNARY_NEG"]))
    assert groups_1d(n)[1] == 2
    assert got[0] == -1.0 and got[-1] == -1.0 and np.all(got == -1.0)


def need_f16(gpu):
    if not gpu.has_f16:
        pytest.skip("the adapter has no shader-f16")


def test_float16_copy_and_fill(gpu):
    need_f16(gpu)
    # A transposed source starting at an odd element (half a word) into a contiguous destination.
    src = np.arange(40, dtype=np.float16) / 4
    p = params(12, 0, flags=0, shape=(3, 4), offs=(0, 5, 0, 0), strides=((4, 1), (1, 3), (), ()))
    got = run(gpu, "copy_t", a=src, out=np.zeros(12, np.float16), p=p, dtype="f16")
    np.testing.assert_array_equal(got.reshape(3, 4), src[5 : 5 + 12].reshape(4, 3).T)
    # An odd count: the last element shares its word with one the kernel must not touch.
    out = np.full(302, -1.0, np.float16)
    got = run(gpu, "fill_t", out=out, p=params(301, s0=f32bits(1 / 3)), dtype="f16")
    np.testing.assert_array_equal(got[:301], np.full(301, 1 / 3, np.float16))
    assert got[301] == -1.0


def test_float16_casts(gpu):
    need_f16(gpu)
    # To float16 (op = the source's kind): float32 rounds to nearest, overflows to inf.
    wide = np.array([70000.0, -1e6, 65504.0, 1 / 3, -2.75, np.nan], np.float32)
    got = run(
        gpu,
        "cast_to_t",
        a=wide.view(np.uint32),
        out=np.zeros(6, np.float16),
        p=params(6, C["KIND_F32"]),
        dtype="f16",
    )
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, wide.astype(np.float16))
    ints = np.array([-3, 0, 2049], np.int32)
    got = run(
        gpu,
        "cast_to_t",
        a=ints.view(np.uint32),
        out=np.zeros(3, np.float16),
        p=params(3, C["KIND_I32"]),
        dtype="f16",
    )
    np.testing.assert_array_equal(got, ints.astype(np.float16))
    words = np.array([1, 0, 255], np.uint32)  # bool and uint8 words
    got = run(
        gpu,
        "cast_to_t",
        a=words,
        out=np.zeros(3, np.float16),
        p=params(3, C["KIND_U8"]),
        dtype="f16",
    )
    np.testing.assert_array_equal(got, [1.0, 0.0, 255.0])
    # From float16 (op = the destination's kind).
    x = np.array([1.7, -2.5, 0.0, np.nan, 300.0, -0.0], np.float16)
    got = run(
        gpu, "cast_from_t", a=x, out=np.zeros(6, np.uint32), p=params(6, C["KIND_F32"]), dtype="f16"
    )
    np.testing.assert_array_equal(got.view(np.float32), x.astype(np.float32))
    got = run(
        gpu, "cast_from_t", a=x, out=np.zeros(6, np.uint32), p=params(6, C["KIND_I32"]), dtype="f16"
    )
    np.testing.assert_array_equal(got.view(np.int32)[[0, 1, 2, 4]], [1, -2, 0, 300])
    got = run(
        gpu,
        "cast_from_t",
        a=x,
        out=np.zeros(6, np.uint32),
        p=params(6, C["KIND_BOOL"]),
        dtype="f16",
    )
    np.testing.assert_array_equal(got, [1, 1, 0, 1, 1, 0])  # != 0, NaN is true
    got = run(
        gpu, "cast_from_t", a=x, out=np.zeros(6, np.uint32), p=params(6, C["KIND_U8"]), dtype="f16"
    )
    np.testing.assert_array_equal(got[[0, 2, 4]], [1, 0, 300 % 256])


def test_float16_where(gpu):
    need_f16(gpu)
    c = np.array([1, 0, 1, 0, 1], np.uint32)
    a = np.array([1.5, 2.0, 3.0, 4.0, 65504.0], np.float16)
    b = np.array([-1.0, -2.0, -3.0, -4.0, -5.0], np.float16)
    got = run(gpu, "where_t", a=a, b=b, c=c, out=np.zeros(5, np.float16), p=params(5), dtype="f16")
    np.testing.assert_array_equal(got, np.where(c != 0, a, b))
    # b a scalar (float32 bits, rounded to float16 on the store).
    got = run(
        gpu,
        "where_t",
        a=a,
        b=np.zeros(2, np.float16),
        c=c,
        out=np.zeros(5, np.float16),
        p=params(5, flags=1 | 4, s1=f32bits(0.1)),
        dtype="f16",
    )
    np.testing.assert_array_equal(got, np.where(c != 0, a, np.float16(0.1)))
