"""Random (often invalid) input for every op family.

Each test draws random shapes (0-4 dims, sizes 0-4), dtypes (all 8),
layouts (contiguous, transposed, strided, offset, expanded), dims, indices
and op names, calls the op and accepts either success or one of the
exception types PyTorch uses for user mistakes: ValueError, TypeError,
IndexError, RuntimeError (and NotImplementedError).  Anything else fails,
in particular ``pyo3_runtime.PanicException`` (a BaseException subclass: a
Rust panic reached Python).  A successful result must be readable (shape
consistent with numel, tolist() works).
"""

import math
import warnings

import numpy as np
import pytest
import rumus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ALLOWED = (ValueError, TypeError, IndexError, RuntimeError, NotImplementedError)

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"]
# complex tensors are CPU only: every op must compute on them or raise an allowed error
DTYPES += ["complex64", "complex128"]
FLOATS = {"float32", "float64", "float16", "bfloat16"}

# --------------------------------------------------------------------------
# devices: every test runs on the CPU and on the GPU (``device`` fixture).
# On the GPU the drawn tensors use the GPU's dtypes (no float64/float16/
# bfloat16, by design: asking an op for one is still drawn and must raise an
# allowed exception) and int64 extremes are the 32-bit ones (int64 tensors on
# the GPU hold 32-bit values). GPU index checks report at the next read of GPU
# data, so ``call`` synchronizes after every op on the GPU: such an error is
# the op's (RuntimeError, allowed) and cannot leak into a later read.
# --------------------------------------------------------------------------

GPU_DTYPES = ["float32", "int64", "int32", "uint8", "bool"]
_DEV = ["cpu"]  # the device of the running test, set by the ``dev`` fixture


@pytest.fixture
def dev(device):
    _DEV[0] = device
    yield device
    if device == "gpu":
        try:
            rumus.gpu.synchronize()  # nothing pending leaks into the next test
        except RuntimeError:
            pass
    _DEV[0] = "cpu"


def gpu():
    return _DEV[0] == "gpu"


def dtype_names():
    return st.sampled_from(GPU_DTYPES if gpu() else DTYPES)


SETTINGS = settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


# ------------------------------------------------------------ call guard


def _fail(desc, e):
    name = f"{type(e).__module__}.{type(e).__name__}"
    kind = (
        "Rust panic reached Python" if "Panic" in type(e).__name__ else "unexpected exception type"
    )
    raise AssertionError(f"{kind}: {desc} raised {name}: {e}") from e


def touch(desc, out):
    """A returned value must be usable: read every element of tensors."""
    try:
        if isinstance(out, rumus.Tensor):
            shape = tuple(out.shape)
            assert all(isinstance(s, int) and s >= 0 for s in shape), shape
            assert out.numel() == math.prod(shape), (out.numel(), shape)
            assert len(out.stride()) == len(shape)
            lst = out.tolist()
            if shape:
                assert len(lst) == shape[0]
        elif isinstance(out, (tuple, list)):
            for o in out:
                touch(desc, o)
        elif isinstance(out, np.ndarray):
            out.copy()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - any failure to read a result is a bug
        _fail(desc + " (reading its result)", e)


def _pending_after_raise(desc, e):
    """An op that raised must leave no GPU error queued for a later read."""
    try:
        rumus.gpu.synchronize()
    except BaseException as e2:  # noqa: BLE001
        raise AssertionError(
            f"{desc} raised {type(e).__name__} ({e}) but left a GPU error pending, "
            f"reported by the next read: {type(e2).__name__}: {e2}"
        ) from e2


def call(desc, fn, *args, extra=(), **kwargs):
    """Run fn; allowed exceptions -> None, other exceptions -> test failure."""
    try:
        out = fn(*args, **kwargs)
        if gpu():
            rumus.gpu.synchronize()  # a GPU-side index error is reported here
    except (KeyboardInterrupt, SystemExit):
        raise
    except ALLOWED + tuple(extra) as e:
        if gpu():
            _pending_after_raise(desc, e)
        return None
    except BaseException as e:  # noqa: BLE001 - PanicException derives from BaseException
        _fail(desc, e)
        return None
    touch(desc, out)
    return out


# ------------------------------------------------------------ tensors


def np_values(shape, dtype, rng):
    n = math.prod(shape)
    if dtype.startswith("complex"):
        part = "float32" if dtype == "complex64" else "float64"
        v = np_values((n,), part, rng) + 1j * np_values((n,), part, rng)
        return v.astype(np.dtype(dtype)).reshape(shape)
    if dtype in FLOATS:
        v = rng.standard_normal(n) * rng.choice([1.0, 10.0, 1000.0])
        special = np.array(
            [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e-30, 65504.0, 1.0, -1.0, 0.5]
        )
        m = rng.random(n) < 0.2
        v[m] = rng.choice(special, size=int(m.sum()))
        npdt = np.float32 if dtype == "bfloat16" else np.dtype(dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            v = v.astype(npdt)
    elif dtype == "bool":
        v = rng.random(n) < 0.5
    else:
        info = np.iinfo(dtype)
        lo = 0 if dtype == "uint8" else -5
        v = rng.integers(lo, lo + 11, size=n)
        m = rng.random(n) < 0.1
        if gpu() and dtype == "int64":
            info = np.iinfo(np.int32)  # int64 on the GPU holds 32-bit values
        extremes = [int(info.min), int(info.max), 0, 1]
        v = v.astype(np.dtype(dtype))
        if m.any():
            v[m] = rng.choice(np.array(extremes, dtype=np.dtype(dtype)), size=int(m.sum()))
    return v.reshape(shape)


def from_np(a, dtype):
    if dtype == "bfloat16":
        return rumus.tensor(np.asarray(a, np.float32)).to(rumus.bfloat16)
    if gpu():
        return rumus.tensor(a, device="gpu")
    return rumus.tensor(a)


def make_tensor(shape, dtype, seed, layout):
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    nd = len(shape)
    if layout == "transposed" and nd >= 2:
        base = from_np(np_values(shape[::-1], dtype, rng), dtype)
        t = base.permute(*reversed(range(nd)))
    elif layout == "strided" and nd >= 1:
        big = (2 * shape[0] + 1,) + shape[1:]
        t = from_np(np_values(big, dtype, rng), dtype)[1::2]
    elif layout == "offset" and nd >= 1:
        big = (shape[0] + 2,) + shape[1:]
        t = from_np(np_values(big, dtype, rng), dtype)[2:]
    elif layout == "expanded" and nd >= 1:
        small = (1,) + shape[1:]
        t = from_np(np_values(small, dtype, rng), dtype).expand(*shape)
    else:
        t = from_np(np_values(shape, dtype, rng), dtype)
    assert tuple(t.shape) == shape
    return t


SIZES = st.integers(0, 4)
SHAPES = st.lists(SIZES, min_size=0, max_size=4).map(tuple)
DIM = st.integers(-6, 6)
LAYOUTS = st.sampled_from(
    ["contiguous", "contiguous", "transposed", "strided", "offset", "expanded"]
)
DTYPE_NAMES = st.sampled_from(DTYPES)
MAYBE_DTYPE = st.one_of(st.none(), DTYPE_NAMES.map(lambda n: getattr(rumus, n)))
SCALARS = st.sampled_from(
    [0, 1, -1, 2, 3, -7, 0.0, 1.5, -2.5, float("nan"), float("inf"), True, False]
)


def draw_tensor(data, shape=None, dtype=None, label="t"):
    if shape is None:
        shape = data.draw(SHAPES, label=label + ".shape")
    if dtype is None:
        dtype = data.draw(dtype_names(), label=label + ".dtype")
    seed = data.draw(st.integers(0, 2**32 - 1), label=label + ".seed")
    layout = data.draw(LAYOUTS, label=label + ".layout")
    return make_tensor(shape, dtype, seed, layout)


def related_shape(data, shape):
    """A shape that often broadcasts with `shape`, sometimes not."""
    how = data.draw(st.sampled_from(["same", "suffix", "ones", "random", "scalar"]))
    if how == "same":
        return tuple(shape)
    if how == "suffix":
        k = data.draw(st.integers(0, len(shape)))
        return tuple(shape[len(shape) - k :])
    if how == "ones":
        return tuple(1 if data.draw(st.booleans()) else s for s in shape)
    if how == "scalar":
        return ()
    return data.draw(SHAPES)


def draw_index_tensor(data, label="index"):
    shape = data.draw(st.lists(st.integers(0, 4), max_size=3).map(tuple), label=label + ".shape")
    dtype = data.draw(
        st.sampled_from(["int64"] * 5 + ["int32", "uint8", "bool", "float32"]),
        label=label + ".dtype",
    )
    device = {"device": "gpu"} if gpu() else {}
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = math.prod(shape)
    if dtype == "bool":
        v = rng.random(n) < 0.5
    elif dtype == "uint8":
        v = rng.integers(0, 7, size=n).astype(np.uint8)
    else:
        v = rng.integers(-6, 7, size=n).astype(np.dtype(dtype))
    return rumus.tensor(v.reshape(shape), **device)


def draw_operand(data, shape, label="other"):
    kind = data.draw(
        st.sampled_from(["tensor", "tensor", "tensor", "scalar", "zerod"]), label=label + ".kind"
    )
    if kind == "scalar":
        return data.draw(SCALARS, label=label)
    if kind == "zerod":
        return draw_tensor(data, shape=(), label=label)
    return draw_tensor(data, shape=related_shape(data, shape), label=label)


def dims_arg(data):
    return data.draw(
        st.one_of(st.none(), DIM, st.lists(DIM, max_size=4).map(tuple), st.lists(DIM, max_size=3)),
        label="dim",
    )


# ------------------------------------------------------------ families


UNARY = [
    "neg",
    "abs",
    "sign",
    "exp",
    "log",
    "log2",
    "log10",
    "log1p",
    "expm1",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sigmoid",
    "relu",
    "gelu",
    "silu",
    "leaky_relu",
    "elu",
    "softplus",
    "floor",
    "ceil",
    "round",
    "trunc",
    "reciprocal",
    "square",
    "logical_not",
    "bitwise_not",
    "isnan",
    "isinf",
    "isfinite",
    "clone",
    "logit",
    "nan_to_num",
]
UNARY_METHOD_ONLY = ["contiguous", "float", "long", "bool"]
UNARY_INPLACE = [
    "add_",
    "neg_",
    "abs_",
    "exp_",
    "log_",
    "sqrt_",
    "relu_",
    "sigmoid_",
    "tanh_",
    "floor_",
    "ceil_",
    "round_",
    "zero_",
    "uniform_",
    "normal_",
    "logit_",
    "nan_to_num_",
]


@SETTINGS
@given(st.data())
def test_unary_family(dev, data):
    t = draw_tensor(data)
    how = data.draw(
        st.sampled_from(["function", "method", "inplace", "operator", "kwargs"]), label="how"
    )
    if how == "function":
        name = data.draw(st.sampled_from(UNARY), label="op")
        call(f"rumus.{name}({t.dtype}{tuple(t.shape)})", getattr(rumus, name), t)
    elif how == "method":
        name = data.draw(st.sampled_from(UNARY + UNARY_METHOD_ONLY), label="op")
        call(f"t.{name}() on {t.dtype}{tuple(t.shape)}", getattr(t, name))
    elif how == "inplace":
        name = data.draw(st.sampled_from(UNARY_INPLACE), label="op")
        args = (1,) if name == "add_" else ()
        call(f"t.{name}() on {t.dtype}{tuple(t.shape)}", getattr(t, name), *args)
        touch("tensor after " + name, t)
    elif how == "operator":
        op = data.draw(st.sampled_from(["neg", "abs", "invert", "pos"]), label="op")
        fn = {"neg": lambda x: -x, "abs": abs, "invert": lambda x: ~x, "pos": lambda x: +x}[op]
        call(f"{op} on {t.dtype}", fn, t)
    else:
        which = data.draw(
            st.sampled_from(["gelu", "leaky_relu", "elu", "softplus", "clamp", "clip", "clamp_"])
        )
        if which == "gelu":
            approx = data.draw(st.sampled_from(["none", "tanh", "bogus", None, 1]))
            call(f"gelu(approximate={approx!r})", rumus.gelu, t, approximate=approx)
        elif which == "leaky_relu":
            call("leaky_relu", rumus.leaky_relu, t, data.draw(SCALARS))
        elif which == "elu":
            call("elu", rumus.elu, t, alpha=data.draw(SCALARS))
        elif which == "softplus":
            call(
                "softplus", rumus.softplus, t, beta=data.draw(SCALARS), threshold=data.draw(SCALARS)
            )
        else:
            bound = st.one_of(st.none(), SCALARS, st.just("tensor"))
            lo, hi = data.draw(bound, label="min"), data.draw(bound, label="max")
            if lo == "tensor":
                lo = draw_tensor(data, shape=related_shape(data, tuple(t.shape)), label="min")
            if hi == "tensor":
                hi = draw_tensor(data, shape=related_shape(data, tuple(t.shape)), label="max")
            call(f"{which}(min={lo!r}, max={hi!r}) on {t.dtype}", getattr(t, which), min=lo, max=hi)


BINARY = [
    "add",
    "sub",
    "mul",
    "div",
    "true_divide",
    "floor_divide",
    "remainder",
    "fmod",
    "pow",
    "maximum",
    "minimum",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "hypot",
    "logaddexp",
    "logaddexp2",
    "xlogy",
    "isclose",
    "allclose",
    "equal",
    "kron",
    "clamp_min",
    "clamp_max",
]
BINARY_INPLACE = [
    "add_",
    "sub_",
    "mul_",
    "div_",
    "pow_",
    "clamp_",
    "hypot_",
    "xlogy_",
    "clamp_min_",
    "clamp_max_",
]
OPERATORS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "**": lambda a, b: a**b,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _iop(sym):
    def f(a, b):
        if sym == "+":
            a += b
        elif sym == "-":
            a -= b
        elif sym == "*":
            a *= b
        elif sym == "/":
            a /= b
        elif sym == "//":
            a //= b
        elif sym == "%":
            a %= b
        elif sym == "**":
            a **= b
        elif sym == "&":
            a &= b
        elif sym == "|":
            a |= b
        elif sym == "^":
            a ^= b
        return a

    return f


@SETTINGS
@given(st.data())
def test_binary_family(dev, data):
    t = draw_tensor(data)
    other = draw_operand(data, tuple(t.shape))
    other_desc = f"{getattr(other, 'dtype', other)}{tuple(getattr(other, 'shape', ()))}"
    desc = f"{t.dtype}{tuple(t.shape)} and {other_desc}"
    how = data.draw(
        st.sampled_from(
            ["function", "method", "operator", "reflected", "inplace", "ioperator", "special"]
        ),
        label="how",
    )
    if how == "function":
        name = data.draw(st.sampled_from(BINARY), label="op")
        call(f"rumus.{name}({desc})", getattr(rumus, name), t, other)
    elif how == "method":
        name = data.draw(st.sampled_from(BINARY), label="op")
        call(f"t.{name}({desc})", getattr(t, name), other)
    elif how == "operator":
        sym = data.draw(st.sampled_from(sorted(OPERATORS)), label="op")
        call(f"t {sym} other ({desc})", OPERATORS[sym], t, other)
    elif how == "reflected":
        sym = data.draw(st.sampled_from(sorted(OPERATORS)), label="op")
        scalar = data.draw(SCALARS)
        call(f"{scalar!r} {sym} t ({t.dtype})", OPERATORS[sym], scalar, t)
    elif how == "inplace":
        name = data.draw(st.sampled_from(BINARY_INPLACE), label="op")
        if name == "clamp_":
            call(f"t.clamp_({desc})", t.clamp_, min=other)
        else:
            call(f"t.{name}({desc})", getattr(t, name), other)
        touch("tensor after " + name, t)
    elif how == "ioperator":
        sym = data.draw(
            st.sampled_from(["+", "-", "*", "/", "//", "%", "**", "&", "|", "^"]), label="op"
        )
        call(f"t {sym}= other ({desc})", _iop(sym), t, other)
        touch("tensor after in-place " + sym, t)
    else:
        which = data.draw(
            st.sampled_from(
                ["div_mode", "add_alpha", "where", "masked_fill", "max2", "addcmul", "addcdiv"]
                + ["lerp"]
            )
        )
        if which == "div_mode":
            mode = data.draw(st.sampled_from([None, "trunc", "floor", "bogus", 3]))
            call(f"div({desc}, rounding_mode={mode!r})", rumus.div, t, other, rounding_mode=mode)
        elif which == "add_alpha":
            alpha = data.draw(SCALARS)
            call(f"add({desc}, alpha={alpha!r})", rumus.add, t, other, alpha=alpha)
            call(f"sub({desc}, alpha={alpha!r})", rumus.sub, t, other, alpha=alpha)
        elif which == "where":
            cond = draw_tensor(data, shape=related_shape(data, tuple(t.shape)), label="cond")
            call(
                f"where(cond {cond.dtype}{tuple(cond.shape)}, {desc})", rumus.where, cond, t, other
            )
            call("where(cond, scalar, t)", rumus.where, cond, data.draw(SCALARS), t)
        elif which == "masked_fill":
            mask = draw_tensor(data, shape=related_shape(data, tuple(t.shape)), label="mask")
            value = (
                other if not isinstance(other, rumus.Tensor) or data.draw(st.booleans()) else 1.0
            )
            call(
                f"masked_fill(mask {mask.dtype}{tuple(mask.shape)}, {desc})",
                t.masked_fill,
                mask,
                value,
            )
            call("masked_fill_", t.masked_fill_, mask, value)
        elif which in ("addcmul", "addcdiv", "lerp"):
            third = draw_operand(data, tuple(t.shape))
            desc3 = f"{which}({desc}, {getattr(third, 'dtype', third)})"
            if which == "lerp":
                call(desc3, rumus.lerp, t, other, third)
                call(desc3 + " in place", t.lerp_, other, third)
            else:
                value = data.draw(SCALARS, label="value")
                call(desc3, getattr(rumus, which), t, other, third, value=value)
                call(desc3 + " in place", getattr(t, which + "_"), other, third, value=value)
            touch("tensor after " + which, t)
        else:
            call(f"rumus.max({desc})", rumus.max, t, other)
            call(f"rumus.min({desc})", rumus.min, t, other)


REDUCTIONS = [
    "sum",
    "mean",
    "prod",
    "amax",
    "amin",
    "max",
    "min",
    "argmax",
    "argmin",
    "var",
    "std",
    "logsumexp",
    "all",
    "any",
    "cumsum",
    "cumprod",
]


@SETTINGS
@given(st.data())
def test_reduction_family(dev, data):
    t = draw_tensor(data)
    name = data.draw(st.sampled_from(REDUCTIONS), label="op")
    fn = (
        getattr(t, name)
        if data.draw(st.booleans(), label="method")
        else (lambda *a, **k: getattr(rumus, name)(t, *a, **k))
    )
    keepdim = data.draw(st.booleans(), label="keepdim")
    desc = f"{name} on {t.dtype}{tuple(t.shape)}"
    form = data.draw(st.sampled_from(["noargs", "dim", "dimkw", "weird"]), label="form")
    if form == "noargs":
        call(desc + "()", fn)
    elif name in ("cumsum", "cumprod"):
        d = data.draw(DIM)
        call(f"{desc}({d})", fn, d)
        if form == "weird":
            call(f"{desc}(dim=(0,))", fn, dim=(0,))
    elif name in ("max", "min", "argmax", "argmin", "logsumexp"):
        d = data.draw(DIM) if name != "logsumexp" else dims_arg(data)
        if form == "dimkw":
            call(f"{desc}(dim={d}, keepdim={keepdim})", fn, dim=d, keepdim=keepdim)
        else:
            call(f"{desc}({d}, {keepdim})", fn, d, keepdim)
    else:
        d = dims_arg(data)
        kw = {"keepdim": keepdim}
        if form == "weird":
            if name == "sum":
                kw["dtype"] = data.draw(MAYBE_DTYPE)
            elif name in ("var", "std"):
                if data.draw(st.booleans()):
                    kw["correction"] = data.draw(st.sampled_from([0, 1, 2, 5, -1, 0.5]))
                else:
                    kw["unbiased"] = data.draw(st.booleans())
            else:
                d = data.draw(st.sampled_from([1.5, "a", [0.5], (None,)]))
        call(f"{desc}(dim={d!r}, **{kw!r})", fn, dim=d, **kw)


@SETTINGS
@given(st.data())
def test_matmul_family(dev, data):
    n, m, k, b = (data.draw(st.integers(0, 3), label=x) for x in "nmkb")
    name = data.draw(
        st.sampled_from(
            ["matmul", "@", "mm", "bmm", "mv", "dot", "outer", "addmm", "addmv", "baddbmm"]
            + ["addbmm", "tensordot", "cross"]
        ),
        label="op",
    )
    shapes = {
        "matmul": [(k,), (n, k), (b, n, k), (2, b, n, k)],
        "mm": [(n, k)],
        "bmm": [(b, n, k)],
        "mv": [(n, k)],
        "dot": [(k,)],
        "outer": [(n,)],
        "tensordot": [(n, k), (b, n, k), (k,)],
        "cross": [(n, 3), (3,), (b, 1, 3)],
    }
    for fused, plain in (("addmm", "mm"), ("addmv", "mv"), ("baddbmm", "bmm"), ("addbmm", "bmm")):
        shapes[fused] = shapes[plain]
    shapes["@"] = shapes["matmul"]
    sa = data.draw(st.sampled_from(shapes[name]), label="a.shape")
    right = {
        "matmul": [(k,), (k, m), (b, k, m), (1, k, m), (2, 1, k, m)],
        "mm": [(k, m)],
        "bmm": [(b, k, m)],
        "mv": [(k,)],
        "dot": [(k,)],
        "outer": [(m,)],
        "tensordot": [(k, m), (k,), (n, k, m)],
        "cross": [(n, 3), (3,), (1, m, 3)],
    }
    for fused, plain in (("addmm", "mm"), ("addmv", "mv"), ("baddbmm", "bmm"), ("addbmm", "bmm")):
        right[fused] = right[plain]
    right["@"] = right["matmul"]
    sb = data.draw(st.sampled_from(right[name]), label="b.shape")
    if data.draw(st.integers(0, 3), label="perturb") == 0:
        sa = data.draw(SHAPES, label="a.shape*")
    if data.draw(st.integers(0, 3), label="perturb") == 0:
        sb = data.draw(SHAPES, label="b.shape*")
    da = data.draw(
        st.sampled_from((GPU_DTYPES if gpu() else DTYPES) + ["float32"] * 4), label="a.dtype"
    )
    db = da if data.draw(st.integers(0, 3)) else data.draw(dtype_names(), label="b.dtype")
    a = draw_tensor(data, shape=sa, dtype=da, label="a")
    bt = draw_tensor(data, shape=sb, dtype=db, label="b")
    desc = f"{name}({a.dtype}{tuple(a.shape)}, {bt.dtype}{tuple(bt.shape)})"
    if name == "@":
        call(desc, lambda: a @ bt)
    elif name.startswith("add") or name == "baddbmm":
        x = draw_tensor(data, shape=data.draw(SHAPES, label="input.shape"), dtype=da, label="input")
        kw = {k: data.draw(SCALARS, label=k) for k in ("beta", "alpha") if data.draw(st.booleans())}
        inplace = data.draw(st.booleans(), label="inplace")
        fn = getattr(x, name + "_") if inplace else getattr(rumus, name)
        args = (a, bt) if inplace else (x, a, bt)
        call(
            f"{name}{'_' if inplace else ''}(input {tuple(x.shape)}, {desc}, {kw})", fn, *args, **kw
        )
    elif name == "tensordot":
        dims = data.draw(
            st.one_of(
                st.integers(-1, 3),
                st.tuples(st.lists(DIM, max_size=2), st.lists(DIM, max_size=2)),
            ),
            label="dims",
        )
        call(f"{desc}, dims={dims}", rumus.tensordot, a, bt, dims=dims)
    elif name == "cross":
        dim = data.draw(st.one_of(st.none(), DIM), label="dim")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # dim=None is deprecated
            call(f"{desc}, dim={dim}", rumus.cross, a, bt, dim=dim)
        call(f"linalg.{desc}", rumus.linalg.cross, a, bt)
    elif data.draw(st.booleans(), label="method"):
        call(desc, getattr(a, name), bt)
    else:
        call(desc, getattr(rumus, name), a, bt)


SHAPE_OPS = [
    "reshape",
    "view",
    "permute",
    "transpose",
    "flatten",
    "unflatten",
    "squeeze",
    "unsqueeze",
    "expand",
    "expand_as",
    "narrow",
    "unbind",
    "movedim",
    "flip",
    "roll",
    "tril",
    "triu",
    "split",
    "chunk",
    "T",
    "mT",
    "t",
    "contiguous",
    "select_via_index",
    "diff",
]


@SETTINGS
@given(st.data())
def test_shape_family(dev, data):
    t = draw_tensor(data)
    name = data.draw(st.sampled_from(SHAPE_OPS), label="op")
    desc = f"{name} on {t.dtype}{tuple(t.shape)} strides {t.stride()}"
    sizes = st.lists(st.integers(-2, 5), max_size=5)
    varargs = data.draw(st.booleans(), label="varargs")

    def sized(fn, s):
        return (
            call(f"{desc}({s})", fn, *s) if varargs else call(f"{desc}({tuple(s)})", fn, tuple(s))
        )

    if name in ("reshape", "view", "expand"):
        s = data.draw(sizes, label="sizes")
        r = sized(getattr(t, name), s)
        if r is not None and name != "expand":
            # successful views share storage: writing through them must not crash
            call("fill_ through " + name, r.fill_, 1)
            touch("base after write through view", t)
    elif name == "permute":
        s = data.draw(st.lists(DIM, max_size=5), label="dims")
        sized(t.permute, s)
    elif name == "transpose":
        call(desc, t.transpose, data.draw(DIM), data.draw(DIM))
    elif name == "flatten":
        call(desc, t.flatten, data.draw(DIM), data.draw(DIM))
    elif name == "unflatten":
        call(desc, t.unflatten, data.draw(DIM), tuple(data.draw(sizes)))
    elif name == "squeeze":
        d = data.draw(st.one_of(st.none(), DIM))
        call(desc, t.squeeze) if d is None else call(f"{desc}({d})", t.squeeze, d)
    elif name == "unsqueeze":
        call(desc, t.unsqueeze, data.draw(DIM))
    elif name == "expand_as":
        other = draw_tensor(data, shape=related_shape(data, tuple(t.shape)), label="other")
        call(desc, t.expand_as, other)
    elif name == "narrow":
        call(
            desc,
            t.narrow,
            data.draw(DIM),
            data.draw(st.integers(-6, 6)),
            data.draw(st.integers(-2, 6)),
        )
    elif name == "unbind":
        call(desc, t.unbind, data.draw(DIM))
    elif name == "movedim":
        if data.draw(st.booleans()):
            call(desc, t.movedim, data.draw(DIM), data.draw(DIM))
        else:
            call(
                desc,
                t.movedim,
                tuple(data.draw(st.lists(DIM, max_size=3))),
                tuple(data.draw(st.lists(DIM, max_size=3))),
            )
    elif name == "flip":
        call(desc, t.flip, tuple(data.draw(st.lists(DIM, max_size=4))))
    elif name == "roll":
        if data.draw(st.booleans()):
            call(desc, t.roll, data.draw(st.integers(-10, 10)))
        else:
            call(
                desc,
                t.roll,
                tuple(data.draw(st.lists(st.integers(-10, 10), max_size=3))),
                tuple(data.draw(st.lists(DIM, max_size=3))),
            )
    elif name in ("tril", "triu"):
        call(desc, getattr(t, name), data.draw(st.integers(-6, 6)))
    elif name == "split":
        d = data.draw(DIM)
        if data.draw(st.booleans()):
            call(desc, t.split, data.draw(st.integers(-2, 5)), d)
        else:
            call(desc, t.split, data.draw(st.lists(st.integers(-1, 4), max_size=4)), dim=d)
    elif name == "chunk":
        call(desc, t.chunk, data.draw(st.integers(-2, 6)), data.draw(DIM))
    elif name in ("T", "mT"):
        call(desc, getattr, t, name)
    elif name == "t":
        call(desc, t.t)
    elif name == "contiguous":
        call(desc, t.contiguous)
    elif name == "diff":
        ends = {}
        for k in ("prepend", "append"):
            if data.draw(st.booleans(), label=k):
                ends[k] = draw_tensor(data, shape=related_shape(data, tuple(t.shape)), label=k)
        n = data.draw(st.integers(-1, 4), label="n")
        call(f"{desc}(n={n}, {sorted(ends)})", t.diff, n=n, dim=data.draw(DIM), **ends)
    else:
        i = data.draw(st.integers(-6, 6), label="i")
        call(f"{desc}[{i}]", lambda: t[i])


@SETTINGS
@given(st.data())
def test_cat_stack_family(dev, data):
    count = data.draw(st.integers(0, 4), label="count")
    shape0 = data.draw(SHAPES, label="shape0")
    dtype0 = data.draw(dtype_names(), label="dtype0")
    ts = []
    for i in range(count):
        shape = shape0 if data.draw(st.integers(0, 2)) else data.draw(SHAPES)
        if shape and data.draw(st.booleans()):
            shape = (data.draw(SIZES),) + tuple(shape[1:])
        dtype = dtype0 if data.draw(st.integers(0, 3)) else data.draw(dtype_names())
        ts.append(draw_tensor(data, shape=shape, dtype=dtype, label=f"t{i}"))
    name = data.draw(st.sampled_from(["cat", "concat", "stack"]), label="op")
    d = data.draw(DIM, label="dim")
    desc = f"{name}([{', '.join(f'{x.dtype}{tuple(x.shape)}' for x in ts)}], dim={d})"
    seq = ts if data.draw(st.booleans()) else tuple(ts)
    if data.draw(st.booleans()):
        call(desc, getattr(rumus, name), seq, dim=d)
    else:
        call(desc, getattr(rumus, name), seq, d)


@SETTINGS
@given(st.data())
def test_index_ops_family(dev, data):
    t = draw_tensor(data)
    name = data.draw(
        st.sampled_from(
            [
                "gather",
                "scatter",
                "scatter_value",
                "scatter_add",
                "scatter_",
                "scatter_add_",
                "index_select",
                "masked_fill",
                "nonzero",
                "one_hot",
            ]
        ),
        label="op",
    )
    idx = draw_index_tensor(data)
    d = data.draw(DIM, label="dim")
    desc = f"{name}(dim={d}, index {idx.dtype}{tuple(idx.shape)}) on {t.dtype}{tuple(t.shape)}"
    if name == "gather":
        call(desc, t.gather, d, idx)
        call(desc, rumus.gather, t, d, idx)
    elif name in ("scatter", "scatter_add", "scatter_", "scatter_add_"):
        src = draw_tensor(data, shape=related_shape(data, tuple(idx.shape)), label="src")
        call(desc, getattr(t, name), d, idx, src)
        touch("tensor after " + name, t)
    elif name == "scatter_value":
        call(desc, t.scatter, d, idx, data.draw(SCALARS))
    elif name == "index_select":
        call(desc, t.index_select, d, idx)
    elif name == "masked_fill":
        call(desc, t.masked_fill, idx, data.draw(SCALARS))
    elif name == "nonzero":
        call(desc, t.nonzero)
    else:
        import rumus.nn.functional as F

        nc = data.draw(st.integers(-2, 8), label="num_classes")
        call(f"one_hot({t.dtype}{tuple(t.shape)}, {nc})", F.one_hot, t, nc)
        call(
            f"one_hot(index {idx.dtype}{tuple(idx.shape)}, {nc})",
            rumus.one_hot,
            idx,
            num_classes=nc,
        )


def draw_index_component(data, allow_tensor=True):
    kinds = ["int", "int", "slice", "slice", "none", "ellipsis", "list", "float", "bool", "str"]
    if allow_tensor:
        kinds += ["tensor", "tensor"]
    kind = data.draw(st.sampled_from(kinds), label="index.kind")
    if kind == "int":
        return data.draw(st.integers(-6, 6))
    if kind == "slice":
        bound = st.one_of(st.none(), st.integers(-6, 6))
        step = st.sampled_from([None, 1, 2, 3, -1, 0, -2])
        return slice(data.draw(bound), data.draw(bound), data.draw(step))
    if kind == "none":
        return None
    if kind == "ellipsis":
        return Ellipsis
    if kind == "list":
        return data.draw(st.lists(st.integers(-6, 6), max_size=3))
    if kind == "float":
        return 1.5
    if kind == "bool":
        return data.draw(st.booleans())
    if kind == "str":
        return "a"
    return draw_index_tensor(data)


def draw_index(data):
    if data.draw(st.integers(0, 3), label="bare") == 0:
        return draw_index_component(data)
    n = data.draw(st.integers(0, 5), label="index.len")
    return tuple(draw_index_component(data) for _ in range(n))


def _short(idx):
    return repr(idx).replace("\n", " ")[:200]


@SETTINGS
@given(st.data())
def test_getitem_family(dev, data):
    t = draw_tensor(data)
    idx = draw_index(data)
    desc = f"{t.dtype}{tuple(t.shape)}[{_short(idx)}]"
    r = call(desc, lambda: t[idx])
    if r is not None and data.draw(st.booleans()):
        call("fill_ on result of " + desc, r.fill_, 0)
        touch("base after writing into " + desc, t)


@SETTINGS
@given(st.data())
def test_setitem_family(dev, data):
    t = draw_tensor(data)
    idx = draw_index(data)
    if data.draw(st.booleans(), label="tensor value"):
        value = draw_tensor(data, label="value")
    else:
        value = data.draw(SCALARS, label="value")
    desc = (
        f"{t.dtype}{tuple(t.shape)}[{_short(idx)}] = {getattr(value, 'dtype', value)}"
        f"{tuple(getattr(value, 'shape', ()))}"
    )

    def do():
        t[idx] = value

    call(desc, do)
    touch("tensor after " + desc, t)


FILL = [
    0,
    1,
    -1,
    2.5,
    float("nan"),
    float("inf"),
    -float("inf"),
    True,
    False,
    255,
    256,
    -129,
    2**31,
    2**40,
    1e300,
    -1e-300,
]
ARANGE_VALUES = [-3, -1, 0, 1, 2, 5, 0.5, -2.5, 0.25, float("nan"), float("inf"), True]


@SETTINGS
@given(st.data())
def test_creation_family(dev, data):
    name = data.draw(
        st.sampled_from(
            [
                "zeros",
                "ones",
                "empty",
                "rand",
                "randn",
                "full",
                "randint",
                "randperm",
                "arange",
                "linspace",
                "eye",
                "like",
                "tensor",
            ]
        ),
        label="op",
    )
    size = data.draw(st.lists(st.integers(-3, 5), max_size=4), label="size")
    dtype = data.draw(MAYBE_DTYPE, label="dtype")
    rg = data.draw(st.booleans(), label="requires_grad")
    form = data.draw(st.sampled_from(["varargs", "tuple", "list"]), label="form")
    sz = {"varargs": tuple(size), "tuple": (tuple(size),), "list": (list(size),)}[form]
    desc = f"{name}({size}, dtype={dtype}, requires_grad={rg})"
    dv = {"device": "gpu"} if gpu() else {}  # (the CPU run passes no device, as before)
    if name in ("zeros", "ones", "empty", "rand", "randn"):
        call(desc, getattr(rumus, name), *sz, dtype=dtype, requires_grad=rg, **dv)
    elif name == "full":
        v = data.draw(st.sampled_from(FILL), label="fill")
        call(f"full({size}, {v!r}, dtype={dtype})", rumus.full, tuple(size), v, dtype=dtype, **dv)
    elif name == "randint":
        lo, hi = data.draw(st.integers(-5, 5)), data.draw(st.integers(-5, 5))
        call(
            f"randint({lo}, {hi}, {size})",
            rumus.randint,
            lo,
            hi,
            tuple(size),
            **({"dtype": dtype} if dtype is not None else {}),
            **dv,
        )
        call(f"randint({hi}, {size})", rumus.randint, hi, tuple(size), **dv)
    elif name == "randperm":
        n = data.draw(st.integers(-3, 20))
        call(f"randperm({n})", rumus.randperm, n, **dv)
    elif name == "arange":
        args = data.draw(
            st.lists(st.sampled_from(ARANGE_VALUES), min_size=1, max_size=3), label="args"
        )
        call(f"arange(*{args}, dtype={dtype})", rumus.arange, *args, dtype=dtype, **dv)
    elif name == "linspace":
        s, e = data.draw(st.sampled_from(ARANGE_VALUES)), data.draw(st.sampled_from(ARANGE_VALUES))
        steps = data.draw(st.integers(-3, 8))
        call(
            f"linspace({s}, {e}, {steps}, dtype={dtype})",
            rumus.linspace,
            s,
            e,
            steps,
            dtype=dtype,
            **dv,
        )
    elif name == "eye":
        n, m = data.draw(st.integers(-3, 5)), data.draw(st.one_of(st.none(), st.integers(-3, 5)))
        call(f"eye({n}, {m}, dtype={dtype})", rumus.eye, n, m, dtype=dtype, **dv)
    elif name == "like":
        t = draw_tensor(data)
        fn = data.draw(
            st.sampled_from(
                ["zeros_like", "ones_like", "empty_like", "rand_like", "randn_like", "full_like"]
            )
        )
        args = (data.draw(st.sampled_from(FILL)),) if fn == "full_like" else ()
        call(
            f"{fn}({t.dtype}{tuple(t.shape)}, {args}, dtype={dtype})",
            getattr(rumus, fn),
            t,
            *args,
            dtype=dtype,
        )
    else:
        leaves = st.one_of(
            st.integers(-5, 5),
            st.floats(allow_nan=True, allow_infinity=True, width=32),
            st.booleans(),
            st.none(),
            st.just("x"),
        )
        nested = st.recursive(leaves, lambda c: st.lists(c, max_size=3), max_leaves=12)
        obj = data.draw(nested, label="data")
        call(f"tensor({obj!r}, dtype={dtype})", rumus.tensor, obj, dtype=dtype, **dv)


CAST_METHODS = [
    "float",
    "double",
    "half",
    "bfloat16",
    "long",
    "int",
    "bool",
    "byte",
    "clone",
    "contiguous",
]


@SETTINGS
@given(st.data())
def test_cast_family(dev, data):
    t = draw_tensor(data)
    how = data.draw(
        st.sampled_from(
            ["to", "to_kw", "to_device", "method", "type_as", "copy_", "scalar", "numpy"]
        ),
        label="how",
    )
    desc = f"{how} on {t.dtype}{tuple(t.shape)} strides {t.stride()}"
    if how == "to":
        dt = data.draw(
            DTYPE_NAMES.map(lambda n: getattr(rumus, n))
        )  # (all 8: a GPU tensor .to(float64) must raise)
        call(f"{desc}.to({dt})", t.to, dt)
    elif how == "to_kw":
        dt = data.draw(
            DTYPE_NAMES.map(lambda n: getattr(rumus, n))
        )  # (all 8: a GPU tensor .to(float64) must raise)
        call(f"{desc}.to(dtype={dt})", t.to, dtype=dt)
    elif how == "to_device":
        devs = ["cpu", "bogus", "cpu:0", 3, None] + (["gpu", "gpu:0", "gpu:1"] if gpu() else [])
        dev = data.draw(st.sampled_from(devs))
        call(f"{desc}.to({dev!r})", t.to, dev)
    elif how == "method":
        m = data.draw(st.sampled_from(CAST_METHODS))
        call(f"{desc}.{m}()", getattr(t, m))
    elif how == "type_as":
        other = draw_tensor(data, label="other")
        call(f"{desc}.type_as({other.dtype})", t.type_as, other)
    elif how == "copy_":
        src = draw_operand(data, tuple(t.shape), label="src")
        call(
            f"{desc}.copy_({getattr(src, 'dtype', src)}{tuple(getattr(src, 'shape', ()))})",
            t.copy_,
            src,
        )
        touch("tensor after copy_", t)
    elif how == "scalar":
        m = data.draw(st.sampled_from(["item", "tolist", "float", "int", "bool", "len"]))
        fn = {
            "item": lambda: t.item(),
            "tolist": lambda: t.tolist(),
            "float": lambda: float(t),
            "int": lambda: int(t),
            "bool": lambda: bool(t),
            "len": lambda: len(t),
        }[m]
        # int(tensor(inf)) raises OverflowError in PyTorch too (Python's int(float('inf')))
        call(f"{desc} {m}()", fn, extra=(OverflowError,) if m == "int" else ())
    else:
        call(f"{desc}.numpy()", t.numpy)
        call(f"np.asarray({desc})", np.asarray, t)


# ------------------------------------------------------------ big ints


@pytest.mark.parametrize(
    "desc,thunk",
    [
        ("zeros(2**64)", lambda d: rumus.zeros(2**64, device=d)),
        ("zeros(2, 2**63)", lambda d: rumus.zeros(2, 2**63, device=d)),
        ("full((2,), 2**70)", lambda d: rumus.full((2,), 2**70, device=d)),
        ("tensor([2**64])", lambda d: rumus.tensor([2**64], device=d)),
        ("tensor(-2**70)", lambda d: rumus.tensor(-(2**70), device=d)),
        ("t + 2**70", lambda d: rumus.ones(3, dtype=rumus.int64, device=d) + 2**70),
        ("t[2**64]", lambda d: rumus.ones(3, device=d)[2**64]),
        ("t[2**64] = 1", lambda d: rumus.ones(3, device=d).__setitem__(2**64, 1.0)),
        ("t.reshape(2**64)", lambda d: rumus.ones(3, device=d).reshape(2**64)),
        ("t.sum(dim=2**64)", lambda d: rumus.ones(3, device=d).sum(dim=2**64)),
        ("arange(2**70)", lambda d: rumus.arange(2**70, device=d)),
        ("randint(0, 2**70, (2,))", lambda d: rumus.randint(0, 2**70, (2,), device=d)),
        ("t.fill_(2**70)", lambda d: rumus.ones(3, dtype=rumus.int64, device=d).fill_(2**70)),
    ],
)
def test_python_int_overflow(desc, thunk, dev):
    """Python ints beyond 64 bits: an allowed exception (PyTorch raises
    RuntimeError 'Overflow when unpacking long'), never a panic or an
    OverflowError escaping from the bindings."""
    call(desc, thunk, dev)


@pytest.mark.parametrize("op", ["scatter_add", "scatter_add_"])
@pytest.mark.parametrize("dtype", ["uint8", "bool"])
def test_raising_op_leaves_no_gpu_error_pending(dtype, op, dev):
    """An op that raises leaves nothing behind: the next read of unrelated
    data must not report the failed op's (out-of-range) index."""
    t = rumus.tensor(np.array([3, 1], dtype=dtype), device=dev)
    idx = rumus.tensor([5], device=dev)
    src = rumus.tensor(np.array([1], dtype=dtype), device=dev)
    with pytest.raises(
        ALLOWED
    ):  # CPU: RuntimeError (index 5 out of bounds); GPU: NotImplementedError
        getattr(t, op)(0, idx, src)
    if dev == "gpu":
        rumus.gpu.synchronize()
    other = rumus.tensor([1.0, 2.0], device=dev)
    assert (other * 2).tolist() == [2.0, 4.0]
    assert t.tolist() == np.array([3, 1], dtype=dtype).tolist()


FFT_OPS = [
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
    "fftn", "ifftn", "rfftn", "irfftn", "fftshift", "ifftshift",
]  # fmt: skip


@SETTINGS
@given(st.data())
def test_fft_family(dev, data):
    name = data.draw(st.sampled_from(FFT_OPS), label="op")
    x = draw_tensor(data, label="x")
    fn = getattr(rumus.fft, name)
    kw = {}
    if name.endswith("shift"):
        if data.draw(st.booleans()):
            kw["dim"] = data.draw(st.one_of(DIM, st.lists(DIM, max_size=3)), label="dim")
    elif name[-1] in "2n":
        if data.draw(st.booleans()):
            kw["s"] = data.draw(st.lists(st.integers(-1, 5), max_size=3), label="s")
        if data.draw(st.booleans()):
            kw["dim"] = data.draw(st.lists(DIM, max_size=3), label="dim")
    else:
        kw["n"] = data.draw(st.one_of(st.none(), st.integers(-1, 6)), label="n")
        kw["dim"] = data.draw(DIM, label="dim")
    if not name.endswith("shift") and data.draw(st.booleans()):
        kw["norm"] = data.draw(st.sampled_from(["ortho", "forward", "backward", "bad"]))
    call(f"fft.{name}({x.dtype}{tuple(x.shape)}, {kw})", fn, x, **kw)
