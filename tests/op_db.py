"""The op registry: one entry (OpInfo) per public rumus op, in the spirit of PyTorch's OpInfo.

tests/test_ops.py runs every entry through the generic tests: forward values against a
reference (NumPy, and PyTorch too when it is importable) for every sample and accepted dtype,
GPU parity, bad input, and a coverage test that fails when a public function of ``rumus`` or
``rumus.nn.functional`` or a public ``Tensor`` method has no entry (nor a place on its
EXCEPTIONS list). tests/test_gradcheck.py (gradcheck, gradgradcheck, non-contiguous inputs) and
tests/test_gpu_gradcheck.py (GPU gradients) run the entries' gradient rows (``grads``).

Adding an op
------------
Add one entry to OP_DB, in its family's section below. Most ops fit a factory::

    unary("erf", np_erf)                  # rumus.erf, Tensor.erf, Tensor.erf_ and a grad row
    binary("atan2", np.arctan2, out=to_float)
    reduction("amax", np_reduction(np.amax), domain=DISTINCT)
    nn_op("glu", glu_ref, samples)        # F.glu

else write ``OpInfo(name, variants, ref, samples, ...)`` with

- ``variants``: the spellings it covers, each tested: "rumus.X", "F.X", "Tensor.X",
  "Tensor.X_" and "rumus.X_" (in place, run on a clone of the first argument), "F.X:inplace"
  (``F.X(..., inplace=True)`` on a clone), ``(label, callable)`` for syntax (``x[i]``), or
  ``(label, callable, "inplace")`` for in-place syntax (the callable clones, ``x += y``);
  callables run on the samples without kwargs and name what they cover in ``covers``;
- ``ref``: a NumPy reference called with the sample's values (float64 for float inputs);
  ``torch_ref``: ``fn(torch, *args, **kwargs)`` where PyTorch spells the op differently
  from the first variant (False: no PyTorch comparison); ``check``: a property check
  instead of a reference, for random ops;
- ``samples(m)``: the calls, as ``Sample(*args, **kwargs)``. ``m(3, 4)`` is an input of the
  dtype under test drawn from the entry's ``domain``; ``m(3, 4, layout="transposed")``
  (or "strided", "expanded") a non-contiguous one; ``m.idx(...)`` / ``m.mask(...)`` fixed
  int64 / bool tensors; ``Sample(...).expect(rule)`` a result dtype other than ``out``.
  Cover 0-d, empty (a 0-sized dim), broadcast and non-contiguous inputs and the kwargs
  (dim=, keepdim=, ...), with few, tiny samples;
- ``dtypes`` it accepts (every other dtype must raise), ``out`` (result dtype from the
  input dtype), ``tol`` ({dtype: (rtol, atol)}), ``domain`` (an input spec below: P for
  log, NZ for abs, DISTINCT for max...); ``dtype_kw=True`` for factories that take dtype=;
- ``grads``: gradcheck rows (``Row``); unary and binary factories add one from the domain.
  ``grad=False`` for ops without a gradient, ``gg=False`` without a second derivative;
- ``gpu``: True, or why it has no GPU kernel (a string; a dict {dtype: reason} for single
  dtypes): its GPU parity test then checks that it still raises, and skips with the reason.
  Any other NotImplementedError on the GPU fails;
- ``bad(m)``: extra (description, thunk) calls that must raise, beside the generic ones
  (unaccepted dtypes, in-place results the input cannot hold, a string for a tensor,
  a second operand of an unrelated shape unless ``mismatch=False``, out-of-range dims);
- ``bugs``: known rumus bugs (``Bug``) that make a generic test fail: it xfails, strictly.

Then run ``pytest tests/test_ops.py tests/test_gradcheck.py -k NAME``.
"""

import functools
import math
import operator
import zlib

import numpy as np
import rumus
import rumus.nn.functional as F
from conftest import TOL, noncontig, tensor, to_np
from test_attention import attention_ref
from test_conv import conv_ref, conv_transpose_ref
from test_functional import interpolate_ref, pad_ref, unfold_ref
from test_loss import bce_logits_ref, bce_ref, ce_ref, cos_emb_ref, kl_ref
from test_pool import adaptive_ref, avg_pool_ref, max_pool_ref

FLOATS = ("float64", "float32", "float16", "bfloat16")
INTS = ("int64", "int32", "uint8")
ALL = FLOATS + INTS + ("bool",)
NUMERIC = FLOATS + INTS
INTEGRAL = INTS + ("bool",)
# the GPU parity dtypes (where the entry accepts them): the floats, and int64 for the integers
GPU_DTYPES = ("float32", "float16", "int64")
ALLOWED = (ValueError, TypeError, IndexError, RuntimeError, NotImplementedError)
f64 = rumus.float64


# ------------------------------------------------------------ input specs
# A spec is a callable rng -> numpy float array (a float64 input that requires
# grad) or a Const (passed to the function as is; numpy arrays become tensors).
# Specs are also the entries' input domains: spec(*shape)(rng) draws the values.


class Const:
    def __init__(self, value):
        self.value = value


def U(*shape, lo=-2.0, hi=2.0):
    """Uniform in [lo, hi)."""
    return lambda rng: rng.uniform(lo, hi, shape)


def P(*shape, lo=0.5, hi=2.0):
    """Positive."""
    return U(*shape, lo=lo, hi=hi)


def NZ(*shape, lo=0.3, hi=2.0):
    """|x| in [lo, hi) with random signs: away from 0."""
    return lambda rng: rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


def AWAY(*shape, points, lo=-2.0, hi=2.0, gap=0.15):
    """Uniform in [lo, hi), at least ``gap`` away from every point in ``points``."""

    def gen(rng):
        out = rng.uniform(lo, hi, shape)
        for _ in range(1000):
            bad = np.zeros(shape, bool)
            for p in points:
                bad |= np.abs(out - p) < gap
            if not bad.any():
                return out
            out[bad] = rng.uniform(lo, hi, int(bad.sum()))
        raise AssertionError("AWAY: no values found")

    return gen


def FRAC(*shape):
    """k + f with integer k in [-3, 3] and f in [0.15, 0.35] or [0.65, 0.85]:
    away from integers and half-integers (floor/ceil/round/trunc)."""

    def gen(rng):
        k = rng.integers(-3, 4, shape)
        f = rng.uniform(0.15, 0.35, shape) + rng.choice([0.0, 0.5], shape)
        return k + f

    return gen


def DISTINCT(*shape, step=0.3):
    """Pairwise distinct by at least ``step`` - 0.1 (max/min without ties)."""

    def gen(rng):
        n = int(np.prod(shape))
        vals = (rng.permutation(n) - n / 2) * step + rng.uniform(0, 0.1, n)
        return vals.reshape(shape)

    return gen


def dom(spec, **kw):
    """A spec with its bounds set: dom(U, lo=-0.9, hi=0.9)."""
    return functools.partial(spec, **kw)


def I(values):  # noqa: E743 - the table reads better with a one-letter name
    return Const(np.asarray(values, dtype=np.int64))


def B(values):
    return Const(np.asarray(values, dtype=bool))


def rem_inputs(shape_x, shape_y):
    """x, y with x / y at least 0.15 away from every integer: away from the
    jumps of remainder and fmod (and of floor / trunc of x / y)."""

    def gen(rng):
        y = rng.uniform(0.5, 2.0, shape_y) * rng.choice([-1.0, 1.0], shape_y)
        yb = np.broadcast_to(y, np.broadcast_shapes(shape_x, shape_y))
        q = rng.integers(-3, 4, yb.shape)
        f = rng.uniform(0.15, 0.85, yb.shape)
        x = (q + f) * yb
        return [x, y]

    return gen


def clamp_tensor_inputs(rng):
    """x (3, 4), lo (4,), hi (3, 1) with lo < hi and x at least 0.15 from both."""
    lo = rng.uniform(-1.5, -0.3, (4,))
    hi = rng.uniform(0.3, 1.5, (3, 1))
    x = rng.uniform(-2.0, 2.0, (3, 4))
    for _ in range(1000):
        bad = (np.abs(x - lo) < 0.15) | (np.abs(x - hi) < 0.15)
        if not bad.any():
            break
        x[bad] = rng.uniform(-2.0, 2.0, int(bad.sum()))
    return [x, lo, hi]


def with_zeros(*shape, zeros):
    """Uniform values in +-[0.5, 1.5) with exact zeros at the given positions."""

    def gen(rng):
        x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
        for z in zeros:
            x[z] = 0.0
        return x

    return gen


def pair_away(shape, points, lo=-2.0, hi=2.0, gap=0.15):
    """x, y with x - y at least ``gap`` away from every point (and y uniform)."""

    def gen(rng):
        y = rng.uniform(lo, hi, shape)
        d = AWAY(*shape, points=points, lo=lo, hi=hi, gap=gap)(rng)
        return [y + d, y]

    return gen


# ------------------------------------------------------------ gradcheck rows


class Row:
    """One gradcheck case: ``fn`` applied to inputs drawn from ``specs`` (a list of specs,
    or a callable rng -> list of arrays/Consts). ``gg``: run gradgradcheck too; ``nc``: run
    again with non-contiguous inputs; ``tol``: gradcheck's eps/atol/rtol; ``gpu``: True, or
    why the row itself cannot run on the GPU (its entry's ``gpu`` reason counts too)."""

    def __init__(self, name, fn, specs, gg=True, nc=True, tol=None, gpu=True):
        self.name = name
        self.fn = fn
        self.specs = specs
        self.gg = gg
        self.nc = nc
        self.tol = tol or {}
        self.gpu = gpu
        self.op = None  # the entry that holds the row (set by OpInfo)

    def gpu_reason(self):
        """Why the row does not run on the GPU, or None."""
        for why in (self.gpu, self.op.gpu if self.op is not None else True):
            if isinstance(why, str):
                return why
        return None


def _inplace(x, op):
    y = x.clone()
    op(y)
    return y


# ------------------------------------------------------------ samples


class Arg:
    """A tensor argument of a sample: its values, its dtype name (None: the dtype under
    test) and its layout ('contiguous', 'transposed', 'strided', 'expanded')."""

    def __init__(self, values, dtype=None, layout="contiguous", requires_grad=False):
        self.values = np.asarray(values)
        self.dtype = dtype
        self.layout = layout
        self.requires_grad = requires_grad


class Sample:
    def __init__(self, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs
        self.out = None  # result dtype rule of this sample, when it is not the entry's

    def expect(self, out):
        self.out = out
        return self

    def __repr__(self):
        def show(v):
            if isinstance(v, Arg):
                lay = "" if v.layout == "contiguous" else f" {v.layout}"
                return f"{v.dtype or 'T'}{list(v.values.shape)}{lay}"
            if isinstance(v, (list, tuple)) and any(isinstance(x, Arg) for x in v):
                return "[" + ", ".join(show(x) for x in v) + "]"
            return repr(v)

        parts = [show(a) for a in self.args] + [f"{k}={show(v)}" for k, v in self.kwargs.items()]
        return "(" + ", ".join(parts) + ")"


def cast_values(vals, dtype):
    """Float values drawn from a domain, as values of ``dtype``: ints are rounded (their
    absolute value for uint8), bools are the nonzero rounded values."""
    if dtype in FLOATS:
        return np.asarray(vals, dtype=np.float64)
    r = np.round(np.nan_to_num(np.asarray(vals, dtype=np.float64), posinf=7, neginf=-7))
    if dtype == "bool":
        return r != 0
    if dtype == "uint8":
        r = np.abs(r)
    return r.astype(dtype)


class Maker:
    """What a sample generator gets: ``m(*shape)`` draws an input of the dtype under test."""

    def __init__(self, dtype, rng, domain):
        self.dtype = dtype
        self.rng = rng
        self.domain = domain

    def __call__(self, *shape, layout="contiguous", domain=None, dtype=None):
        vals = (domain or self.domain)(*shape)(self.rng)
        return Arg(cast_values(vals, dtype or self.dtype), dtype, layout)

    def idx(self, values):
        return Arg(np.asarray(values, np.int64), "int64")

    def t(self, *shape, dtype=None):
        """A rumus tensor (for the ``bad`` calls) of the dtype under test."""
        return make_arg(self(*shape, dtype=dtype), dtype or self.dtype, "cpu")[0]

    def mask(self, values):
        return Arg(np.asarray(values, bool), "bool")

    def scalar(self, value=1.5):
        """A Python number of the dtype's kind (floats for float dtypes)."""
        if self.dtype in FLOATS:
            return float(value)
        return bool(value) if self.dtype == "bool" else int(math.ceil(abs(value)))

    @property
    def floating(self):
        return self.dtype in FLOATS


def make_arg(a, dtype, device):
    """The rumus tensor of Arg ``a`` (``dtype`` fills in a None dtype) and its values."""
    name = a.dtype or dtype
    if a.layout == "contiguous":
        t = tensor(a.values, name, device)
    else:
        views = {k: v for k, v, _ in noncontig(a.values, name, device)}
        assert a.layout in views, f"no {a.layout} view of shape {a.values.shape}"
        t = views[a.layout]
    vals = to_np(t)
    if vals.dtype.kind == "f":
        vals = vals.astype(np.float64)
    return t, vals


def build(sample, dtype, device="cpu"):
    """(args, kwargs) as rumus values and (np_args, np_kwargs) as NumPy values."""

    def conv(v):
        if isinstance(v, Arg):
            return make_arg(v, dtype, device)
        if isinstance(v, (list, tuple)) and any(isinstance(x, (Arg, list, tuple)) for x in v):
            pairs = [conv(x) for x in v]
            return type(v)(p[0] for p in pairs), type(v)(p[1] for p in pairs)
        return v, v

    args, np_args = zip(*[conv(a) for a in sample.args]) if sample.args else ((), ())
    kw = {k: conv(v) for k, v in sample.kwargs.items()}
    return (
        list(args),
        {k: v[0] for k, v in kw.items()},
        list(np_args),
        {k: v[1] for k, v in kw.items()},
    )


# ------------------------------------------------------------ result dtypes


def same(d):
    return d


def to_float(d):
    """Float ops: ints and bools give the default float dtype (float32)."""
    return d if d in FLOATS else "float32"


def to_bool(d):
    return "bool"


def to_int64(d):
    return "int64"


def int_to_int64(d):
    """Sums and products: ints and bools accumulate in int64."""
    return d if d in FLOATS else "int64"


def can_cast(src, dst):
    """PyTorch's in-place rule: a result of dtype ``src`` may be written into ``dst``."""
    if src in FLOATS and dst not in FLOATS:
        return False
    return not (src in INTS and dst == "bool")


# ------------------------------------------------------------ the entry


class OpInfo:
    """One op of the registry; the module docstring describes the arguments."""

    def __init__(
        self,
        name,
        variants,
        ref=None,
        samples=None,
        *,
        dtypes=FLOATS,
        out=same,
        domain=U,
        tol=None,
        grads=(),
        grad=True,
        gg=True,
        gpu=True,
        check=None,
        torch_ref=None,
        bad=None,
        mismatch=True,
        covers=(),
        dtype_kw=False,
        bugs=(),
    ):
        self.name = name
        self.variants = list(variants)
        self.ref = ref
        self.samples_fn = samples
        self.dtypes = tuple(dtypes)
        self.out = out
        self.domain = domain
        self.tol = tol or {}
        self.grads = list(grads)
        self.grad = grad
        self.gg = gg
        self.gpu = gpu
        self.check = check
        self.torch_ref = torch_ref
        self.bad = bad
        self.mismatch = mismatch  # a second tensor of an unrelated shape must raise
        self.covers = tuple(covers)  # public names exercised by its rows, not by a variant
        self.dtype_kw = dtype_kw  # creation op: dtype= the dtype under test (unless set)
        self.bugs = tuple(bugs)  # known rumus bugs (Bug): the tests they break xfail
        for r in self.grads:
            r.op = self

    def __repr__(self):
        return self.name

    def samples(self, dtype):
        rng = np.random.default_rng(zlib.crc32(f"{self.name}/{dtype}".encode()))
        out = list(self.samples_fn(Maker(dtype, rng, self.domain)))
        if self.dtype_kw:
            for s in out:
                s.kwargs.setdefault("dtype", getattr(rumus, dtype))
        return out

    def tols(self, dtype):
        return self.tol.get(dtype, TOL.get(dtype, (0, 0)))

    def gpu_reason(self, dtype):
        if isinstance(self.gpu, str):
            return self.gpu
        if isinstance(self.gpu, dict):
            return self.gpu.get(dtype)
        return None

    def names(self):
        """Public names the entry covers ('rumus.abs', 'Tensor.abs_', 'F.relu', ...)."""
        out = {v.split(":")[0] for v in self.variants if isinstance(v, str)}
        return out | set(self.covers)


class Bug:
    """A known rumus bug: the bad-input calls of one ``kind`` ('dtype', 'inplace', 'string',
    'dim', 'shape', 'extra') whose problem mentions ``match`` do not raise as PyTorch does, or
    (kind 'gpu') the GPU parity test fails with ``match`` in its message. The test xfails,
    strictly: a bug that no longer shows fails it (remove the Bug)."""

    def __init__(self, kind, reason, match=""):
        self.kind = kind
        self.reason = reason
        self.match = match

    def covers(self, kind, problem):
        return kind == self.kind and self.match in problem


# ------------------------------------------------------------ calling variants


def variant_label(v):
    return v if isinstance(v, str) else v[0]


def is_inplace(v):
    """In-place variants: "Tensor.X_", "F.X:inplace", and (label, fn, "inplace") tuples."""
    if not isinstance(v, str):
        return len(v) > 2 and v[2] == "inplace"
    return v.endswith(":inplace") or (v.startswith(("Tensor.", "rumus.")) and v.endswith("_"))


def call(v, args, kwargs):
    """Runs variant ``v``; in-place ones on a clone of the first argument, returning it."""
    if not isinstance(v, str):
        return v[1](*args, **kwargs)
    where, name = v.split(".", 1)
    if name.endswith(":inplace"):
        x = args[0].clone()
        out = getattr(F, name[: -len(":inplace")])(x, *args[1:], inplace=True, **kwargs)
        assert out is x, f"{v} must return its input"
        return x
    if where in ("Tensor", "rumus") and name.endswith("_") and not name.endswith("__"):
        x = args[0].clone()
        fn = getattr(x, name) if where == "Tensor" else functools.partial(getattr(rumus, name), x)
        out = fn(*args[1:], **kwargs)
        assert out is x, f"{v} must return its input"
        return x
    if where == "Tensor":
        return getattr(args[0], name)(*args[1:], **kwargs)
    modules = {"rumus": rumus, "F": F, "linalg": rumus.linalg, "special": rumus.special}
    return getattr(modules[where], name)(*args, **kwargs)


def applicable(op, sample):
    """The variants that take ``sample``: callables (operators) take no kwargs."""
    return [v for v in op.variants if isinstance(v, str) or not sample.kwargs]


def all_variants(op, **kw):
    """gradcheck function that runs every variant of ``op`` (with kwargs ``kw``): one output
    each."""

    def fn(*args):
        return tuple(call(v, args, kw) for v in op.variants if isinstance(v, str) or not kw)

    return fn


def _default_row(op, specs, name=None, gg=None, kw=None):
    """A gradcheck row running every variant of ``op`` (with kwargs ``kw``) on inputs drawn
    from ``specs``."""
    r = Row(name or op.name, all_variants(op, **(kw or {})), specs, gg=op.gg if gg is None else gg)
    r.op = op
    op.grads.insert(0, r)
    return op


# ------------------------------------------------------------ NumPy references


def floated(ref):
    """The reference of a float op: integer and bool inputs are computed as float64."""

    @functools.wraps(ref)
    def fn(*args, **kw):
        return ref(*[a.astype(np.float64) if isinstance(a, np.ndarray) else a for a in args], **kw)

    return fn


np_erf = np.vectorize(math.erf, otypes=[np.float64])


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_softplus(x, beta=1.0, threshold=20.0):
    bx = beta * x
    return np.where(bx > threshold, x, np.logaddexp(0, bx) / beta)


def np_gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + np_erf(x / math.sqrt(2)))


def np_elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def np_leaky_relu(x, negative_slope=0.01):
    return np.where(x > 0, x, x * negative_slope)


def np_log_softmax(x, axis):
    m = x.max(axis, keepdims=True) if x.size else 0
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def np_sign(x):
    return x.copy() if x.dtype == bool else np.sign(x)


def np_relu(x):
    return x.copy() if x.dtype == bool else np.maximum(x, 0).astype(x.dtype)


def np_round(x, decimals=0):
    return np.round(x, decimals)  # both round half to even


# ------------------------------------------------------------ factories


def unary_samples(m, kwargs=()):
    """A (3, 4) input, 0-d, empty, transposed, strided and expanded ones, and (3, 4) with
    each of ``kwargs``."""
    out = [
        Sample(m(3, 4)),
        Sample(m()),
        Sample(m(0, 3)),
        Sample(m(3, 4, layout="transposed")),
        Sample(m(4, 2, layout="strided")),
        Sample(m(2, 3, layout="expanded")),
    ]
    return out + [Sample(m(3, 4), **kw) for kw in kwargs]


def unary(
    name,
    ref,
    *,
    fn=True,
    method=True,
    inplace=True,
    extra=(),
    dtypes=ALL,
    out=to_float,
    domain=U,
    kwargs=(),
    grad=True,
    **kw,
):
    """An elementwise op of one tensor: rumus.X, Tensor.X, Tensor.X_ and ``extra`` variants
    (each optional), with the unary samples (plus one per dict in ``kwargs``) and a gradcheck
    row over every variant on a (3, 4) input drawn from ``domain``."""
    variants = (
        ([f"rumus.{name}"] if fn else [])
        + ([f"Tensor.{name}"] if method else [])
        + ([f"Tensor.{name}_"] if inplace else [])
        + list(extra)
    )
    if out is to_float:
        ref = floated(ref)
    op = OpInfo(
        name,
        variants,
        ref,
        functools.partial(unary_samples, kwargs=kwargs),
        dtypes=dtypes,
        out=out,
        domain=domain,
        grad=grad,
        **kw,
    )
    if not grad:
        return op
    for k in reversed(kwargs):
        _default_row(op, [domain(3, 4)], name=f"{name}_{'_'.join(k)}", kw=k)
    return _default_row(op, [domain(3, 4)])


def binary_samples(m, scalar=1.5, dom_b=None):
    """Same shapes, broadcasting ((3, 1) with (4,), 0-d with (3, 4)), empty, non-contiguous
    pairs and a Python scalar second operand."""
    b = functools.partial(m, domain=dom_b)
    out = [
        Sample(m(3, 4), b(3, 4)),
        Sample(m(3, 1), b(4)),
        Sample(m(), b(3, 4)),
        Sample(m(2, 3), b()),
        Sample(m(0, 3), b(3)),
        Sample(m(3, 4, layout="transposed"), b(3, 4, layout="strided")),
        Sample(m(2, 3, layout="expanded"), b(2, 3, layout="transposed")),
    ]
    if scalar is not None:
        out.append(Sample(m(3, 4), m.scalar(scalar)))
    return out


def binary(
    name,
    ref,
    *,
    fn=True,
    method=True,
    inplace=True,
    extra=(),
    dtypes=ALL,
    out=same,
    domain=U,
    dom_b=None,
    scalar=1.5,
    grad=True,
    grad_specs=None,
    samples=None,
    **kw,
):
    """An elementwise op of two tensors (the second may be a Python number), broadcasting:
    rumus.X, Tensor.X, Tensor.X_ and ``extra`` variants, the binary samples (or
    ``samples``) and a gradcheck row over every variant ((3, 4) with (4,), or
    ``grad_specs``)."""
    variants = (
        ([f"rumus.{name}"] if fn else [])
        + ([f"Tensor.{name}"] if method else [])
        + ([f"Tensor.{name}_"] if inplace else [])
        + list(extra)
    )
    if out is to_float:
        ref = floated(ref)
    op = OpInfo(
        name,
        variants,
        ref,
        samples or functools.partial(binary_samples, scalar=scalar, dom_b=dom_b),
        dtypes=dtypes,
        out=out,
        domain=domain,
        grad=grad,
        **kw,
    )
    if not grad:
        return op
    specs = grad_specs or [domain(3, 4), (dom_b or domain)(4)]
    return _default_row(op, specs)


def SPECIAL(*shape):
    """Uniform values with nan, inf and -inf among them (0 for the integer dtypes)."""

    def gen(rng):
        out = rng.uniform(-2, 2, shape)
        flat = out.reshape(-1)
        flat[rng.random(flat.size) < 0.4] = np.nan
        flat[rng.random(flat.size) < 0.2] = np.inf
        flat[rng.random(flat.size) < 0.2] = -np.inf
        return out

    return gen


def ZERO(*shape):
    """Zeros (atan2(0, 0), ...)."""
    return lambda rng: np.zeros(shape)


def _iop(a, b, sym):
    """``a <sym>= b`` on a clone of ``a`` (Python's augmented assignment)."""
    y = a.clone()
    y0 = y
    if sym == "+":
        y += b
    elif sym == "-":
        y -= b
    elif sym == "*":
        y *= b
    elif sym == "/":
        y /= b
    elif sym == "&":
        y &= b
    elif sym == "|":
        y |= b
    else:
        y ^= b
    assert y is y0, f"{sym}= must work in place"
    return y


def _square_out(d):
    return "int64" if d == "bool" else d


def _add_ref(a, b, alpha=1):
    return a + alpha * b if alpha != 1 else a + b


def _sub_ref(a, b, alpha=1):
    return a - alpha * b


def _div_ref(a, b, rounding_mode=None):
    if rounding_mode is None:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(a, np.float64) / np.asarray(b, np.float64)
    if np.asarray(a).dtype.kind == "f" or np.asarray(b).dtype.kind == "f":
        q = np.asarray(a, np.float64) / np.asarray(b, np.float64)
        return np.floor(q) if rounding_mode == "floor" else np.trunc(q)
    if rounding_mode == "floor":
        return np.floor_divide(a, b)
    q = np.abs(a.astype(np.int64)) // np.abs(np.asarray(b, np.int64))
    return q * np.sign(a.astype(np.int64)) * np.sign(np.asarray(b, np.int64))


def _div_samples(m):
    out = binary_samples(m, dom_b=dom(NZ, lo=0.6))
    if m.dtype == "bool":  # no rounding division of bools (as in PyTorch)
        return out
    return out + [
        Sample(m(3, 4), m(4, domain=dom(NZ, lo=0.6)), rounding_mode=r).expect(same)
        for r in ("trunc", "floor")
    ]


def _add_samples(m):
    out = binary_samples(m)
    return out + [Sample(m(3, 4), m(4), alpha=m.scalar(2.5))]


ELEMENTWISE = [
    unary(
        "abs",
        np.abs,
        out=same,
        domain=NZ,
        extra=[
            ("abs(x)", abs),
            "rumus.absolute",
            "Tensor.absolute",
            "Tensor.absolute_",
        ],
    ),
    unary(
        "neg",
        np.negative,
        out=same,
        dtypes=NUMERIC,
        extra=[("-x", lambda x: -x), "rumus.negative", "Tensor.negative", "Tensor.negative_"],
    ),
    unary("sign", np_sign, out=same, domain=NZ),
    unary("square", np.square, out=_square_out),
    unary("exp", np.exp),
    unary("exp2", np.exp2),
    unary("expm1", np.expm1),
    unary("log", np.log, domain=P),
    unary("log2", np.log2, domain=P),
    unary("log10", np.log10, domain=P),
    unary("log1p", np.log1p, domain=dom(U, lo=-0.5, hi=2.0)),
    unary("sqrt", np.sqrt, domain=P),
    unary("rsqrt", lambda x: 1 / np.sqrt(x), domain=P),
    unary("reciprocal", lambda x: 1 / x, domain=dom(NZ, lo=0.5)),
    unary("sin", np.sin),
    unary("cos", np.cos),
    unary("tan", np.tan, domain=dom(U, lo=-1.2, hi=1.2)),
    unary("asin", np.arcsin, domain=dom(U, lo=-0.9, hi=0.9)),
    unary("acos", np.arccos, domain=dom(U, lo=-0.9, hi=0.9)),
    unary("atan", np.arctan),
    unary("sinh", np.sinh),
    unary("cosh", np.cosh),
    unary("tanh", np.tanh, extra=["F.tanh"]),
    unary("sigmoid", np_sigmoid, domain=dom(U, lo=-4, hi=4), extra=["F.sigmoid"]),
    unary("erf", np_erf),
    unary(
        "floor",
        np.floor,
        out=same,
        dtypes=NUMERIC,
        domain=FRAC,
        grads=[Row("floor_plus_x", lambda x: x.floor() * 2 + x, [FRAC(3, 4)])],
    ),
    unary("ceil", np.ceil, out=same, dtypes=NUMERIC, domain=FRAC),
    unary("trunc", np.trunc, out=same, dtypes=NUMERIC, domain=FRAC),
    unary("round", np_round, out=same, dtypes=NUMERIC, domain=FRAC),
    unary("relu", np_relu, out=same, domain=NZ, extra=["F.relu", "F.relu:inplace"]),
    unary("silu", lambda x: x * np_sigmoid(x), extra=["F.silu", "F.silu:inplace"]),
    unary(
        "mish",
        lambda x: x * np.tanh(np_softplus(x)),
        extra=["F.mish", "F.mish:inplace"],
    ),
    unary(
        "gelu",
        np_gelu,
        inplace=False,
        extra=["F.gelu"],
        kwargs=[dict(approximate="tanh")],
        domain=dom(U, lo=-3, hi=3),
    ),
    unary(
        "elu",
        np_elu,
        inplace=False,
        extra=["F.elu", "F.elu:inplace"],
        kwargs=[dict(alpha=0.5)],
        domain=NZ,
    ),
    unary(
        "leaky_relu",
        np_leaky_relu,
        inplace=False,
        extra=["F.leaky_relu", "F.leaky_relu:inplace"],
        kwargs=[dict(negative_slope=0.2)],
        domain=NZ,
    ),
    unary(
        "softplus",
        np_softplus,
        inplace=False,
        extra=["F.softplus"],
        kwargs=[dict(beta=2.0, threshold=3.0)],
        domain=dom(AWAY, points=[1.5], lo=-3, hi=3),
    ),
    unary("isnan", np.isnan, inplace=False, out=to_bool, domain=SPECIAL, grad=False),
    unary("isinf", np.isinf, inplace=False, out=to_bool, domain=SPECIAL, grad=False),
    unary("isfinite", np.isfinite, inplace=False, out=to_bool, domain=SPECIAL, grad=False),
    unary("logical_not", np.logical_not, out=to_bool, grad=False),
    unary(
        "bitwise_not",
        np.invert,
        out=same,
        dtypes=INTEGRAL,
        grad=False,
        extra=[("~x", lambda x: ~x)],
    ),
    # ---- binary
    binary(
        "add",
        _add_ref,
        extra=[("a + b", lambda a, b: a + b), ("a += b", lambda a, b: _iop(a, b, "+"), "inplace")],
        samples=_add_samples,
        grads=[
            Row("add_scalar", lambda x: x + 2.5, [U(3, 4)]),
            Row("radd_scalar", lambda x: 2.5 + x, [U(3, 4)]),
            Row("add_self", lambda x: x + x, [U(3, 4)]),
            Row("add_alpha", lambda a, b: a.add(b, alpha=2.5), [U(3, 4), U(4)]),
        ],
    ),
    binary(
        "sub",
        _sub_ref,
        dtypes=NUMERIC,
        extra=[("a - b", lambda a, b: a - b), ("a -= b", lambda a, b: _iop(a, b, "-"), "inplace")],
        samples=_add_samples,
        grads=[
            Row("sub_alpha", lambda a, b: a.sub(b, alpha=-1.5), [U(3, 4), U(1, 4)]),
            Row("sub_scalar", lambda x: x - 1.0, [U(3, 4)]),
            Row("rsub_scalar", lambda x: 3 - x, [U(3, 4)]),
        ],
    ),
    binary(
        "mul",
        np.multiply,
        extra=[
            ("a * b", lambda a, b: a * b),
            ("a *= b", lambda a, b: _iop(a, b, "*"), "inplace"),
            "rumus.multiply",
            "Tensor.multiply",
            "Tensor.multiply_",
        ],
        grads=[
            Row("mul_scalar", lambda x: x * 3.0, [U(3, 4)]),
            Row("rmul_scalar", lambda x: 3 * x, [U(3, 4)]),
            Row("mul_self", lambda x: x * x, [U(3, 4)]),
        ],
    ),
    binary(
        "div",
        _div_ref,
        out=to_float,
        dom_b=dom(NZ, lo=0.6),
        samples=_div_samples,
        extra=[
            ("a / b", lambda a, b: a / b),
            ("a /= b", lambda a, b: _iop(a, b, "/"), "inplace"),
            "rumus.divide",
            "Tensor.divide",
        ],
        grads=[
            Row("div_bcast_rev", lambda a, b: a / b, [U(4), NZ(3, 1, lo=0.5)]),
            Row("div_scalar", lambda x: x / 2.0, [U(3, 4)]),
            Row("rdiv_scalar", lambda x: 2.0 / x, [NZ(3, 4, lo=0.5)]),
            Row(
                "div_rounding_mode",
                lambda a, b: a.div(b, rounding_mode="floor") + a,
                rem_inputs((3, 4), (4,)),
            ),
        ],
    ),
    binary(
        "true_divide",
        _div_ref,
        out=to_float,
        dom_b=dom(NZ, lo=0.6),
        grad_specs=[U(3, 4), NZ(3, 4, lo=0.5)],
    ),
    binary(
        "floor_divide",
        np.floor_divide,
        dtypes=NUMERIC,
        dom_b=dom(NZ, lo=0.6),
        grad=False,
        extra=[("a // b", lambda a, b: a // b)],
    ),
    binary(
        "remainder",
        np.remainder,
        dtypes=NUMERIC,
        dom_b=dom(NZ, lo=0.6),
        extra=[("a % b", lambda a, b: a % b)],
        grad_specs=rem_inputs((3, 4), (4,)),
        grads=[
            Row(
                "remainder_scalar",
                lambda x: x.remainder(1.5),
                [AWAY(3, 4, points=np.arange(-3, 4) * 1.5, lo=-4, hi=4)],
            ),
        ],
    ),
    binary(
        "fmod",
        np.fmod,
        dtypes=NUMERIC,
        dom_b=dom(NZ, lo=0.6),
        grad_specs=rem_inputs((3, 4), (3, 4)),
        grads=[
            Row(
                "fmod_scalar",
                lambda x: x.fmod(1.5),
                [AWAY(3, 4, points=np.arange(-3, 4) * 1.5, lo=-4, hi=4)],
            ),
        ],
    ),
    binary(
        "pow",
        np.power,
        dtypes=NUMERIC,
        domain=P,
        dom_b=dom(U, lo=0.0, hi=2.5),
        extra=[("a ** b", lambda a, b: a**b)],
        grad_specs=[P(3, 4), U(4)],
        grads=[
            Row("pow_tensor_tensor_bcast", lambda a, b: a.pow(b), [P(3, 1), U(4)]),
            Row("pow_int", lambda x: x**3, [U(3, 4)]),
            Row("pow_2", lambda x: x.pow(2), [U(3, 4)]),
            Row("pow_float", lambda x: x**2.5, [P(3, 4)]),
            Row("pow_negative", lambda x: x**-1.5, [P(3, 4)]),
            Row("pow_zero", lambda x: x**0, [U(3, 4)]),
            Row("rpow_2", lambda x: 2**x, [U(3, 4)]),
            Row("rpow_half", lambda x: 0.5**x, [U(3, 4)]),
        ],
    ),
    binary(
        "atan2",
        np.arctan2,
        out=to_float,
        samples=lambda m: binary_samples(m) + [Sample(m(2, domain=ZERO), m(2, domain=ZERO))],
        grads=[Row("atan2_same", lambda a, b: rumus.atan2(a, b), [NZ(3, 4), NZ(3, 4)])],
    ),
    binary(
        "maximum",
        np.maximum,
        inplace=False,
        scalar=None,
        grad_specs=[DISTINCT(3, 4), U(4, lo=5, hi=6)],
    ),
    binary("minimum", np.minimum, inplace=False, scalar=None, grad_specs=[U(3, 1), U(4)]),
]

COMPARE = (
    [
        binary(name, ref, out=to_bool, grad=False, extra=[(f"a {sym} b", getattr(operator, name))])
        for name, ref, sym in [
            ("eq", np.equal, "=="),
            ("ne", np.not_equal, "!="),
            ("lt", np.less, "<"),
            ("le", np.less_equal, "<="),
            ("gt", np.greater, ">"),
            ("ge", np.greater_equal, ">="),
        ]
    ]
    + [
        binary(f"logical_{name}", getattr(np, f"logical_{name}"), out=to_bool, grad=False)
        for name in ("and", "or", "xor")
    ]
    + [
        binary(
            f"bitwise_{name}",
            getattr(np, f"bitwise_{name}"),
            dtypes=INTEGRAL,
            grad=False,
            extra=[
                (f"a {sym} b", {"&": operator.and_, "|": operator.or_, "^": operator.xor}[sym]),
                (
                    f"a {sym}= b",
                    functools.partial(lambda a, b, sym: _iop(a, b, sym), sym=sym),
                    "inplace",
                ),
            ],
        )
        for name, sym in (("and", "&"), ("or", "|"), ("xor", "^"))
    ]
)


# ------------------------------------------------------------ where, clamp, masked_fill


def _clamp_ref(x, min=None, max=None):
    out = x if min is None else np.maximum(x, min)
    return out if max is None else np.minimum(out, max)


def _clamp_samples(m):
    lo, hi = m.scalar(-0.5), m.scalar(0.5)
    if m.dtype == "uint8":
        lo, hi = 2, 6
    out = [
        Sample(m(3, 4), lo, hi),
        Sample(m(3, 4), min=lo),
        Sample(m(3, 4), max=hi),
        Sample(m(), lo, hi),
        Sample(m(0, 3), lo, hi),
        Sample(m(3, 4, layout="transposed"), min=lo, max=hi),
        Sample(m(2, 3, layout="expanded"), lo, hi),
        Sample(m(3, 4), m(4), m(3, 1)),
        Sample(m(3, 4), min=m(4)),
    ]
    return out


def _clamp_one_ref(which):
    return lambda x, v: _clamp_ref(x, **{which: v})


def _clamp_one_samples(m):
    v = m.scalar(0.5) if m.dtype != "uint8" else 4
    return [
        Sample(m(3, 4), v),
        Sample(m(), v),
        Sample(m(0, 2), v),
        Sample(m(3, 4, layout="transposed"), v),
        Sample(m(3, 4), m(4)),
    ]


def _where_ref(c, x, y):
    return np.where(c, x, y)


def _where_samples(m):
    return [
        Sample(m.mask(MASK34), m(3, 4), m(4)),
        Sample(m.mask([True, False, True, False]), m(3, 4), m(3, 1)),
        Sample(m.mask(MASK34), m(3, 4), m()),
        Sample(m.mask(True), m(), m()),
        Sample(m.mask(np.zeros((0, 3), bool)), m(0, 3), m(3)),
        Sample(m.mask(MASK34.T.copy()), m(4, 3, layout="transposed"), m(4, 3, layout="strided")),
        Sample(m.mask(MASK34), m(3, 4), m.scalar(1.5)),
    ]


def _masked_fill_samples(m):
    v = m.scalar(0.5)
    return [
        Sample(m(3, 4), m.mask(MASK34), v),
        Sample(m(3, 4), m.mask([True, False, True, False]), v),
        Sample(m(3, 4), m.mask(MASK34), Arg(np.asarray(v))),
        Sample(m(), m.mask(True), v),
        Sample(m(0, 3), m.mask(np.zeros((0, 3), bool)), v),
        Sample(m(4, 3, layout="transposed"), m.mask(MASK34.T.copy()), v),
        Sample(m(3, 4, layout="expanded"), m.mask(MASK34), v),
    ]


MASK34 = np.array([[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0]], bool)
MASK45 = np.array([[1, 0, 0, 1, 0], [0, 0, 1, 0, 0], [0, 1, 0, 0, 1], [0, 0, 0, 0, 1]], bool)

TERNARY = [
    OpInfo(
        "clamp",
        ["rumus.clamp", "Tensor.clamp", "Tensor.clamp_", "rumus.clip", "Tensor.clip"],
        _clamp_ref,
        _clamp_samples,
        dtypes=ALL,
        grads=[
            Row("clamp", lambda x: x.clamp(-0.5, 0.5), [AWAY(3, 4, points=[-0.5, 0.5])]),
            Row("clamp_kw", lambda x: x.clamp(min=-0.5, max=0.5), [AWAY(3, 4, points=[-0.5, 0.5])]),
            Row("clamp_min_only", lambda x: x.clamp(min=0.2), [AWAY(3, 4, points=[0.2])]),
            Row("clamp_max_only", lambda x: x.clamp(max=0.2), [AWAY(3, 4, points=[0.2])]),
            Row("clip", lambda x: rumus.clip(x, -1.0, 1.0), [AWAY(3, 4, points=[-1.0, 1.0])]),
            Row(
                "inplace_clamp_",
                lambda x: _inplace(x, lambda y: y.clamp_(-0.5, 0.5)),
                [AWAY(3, 4, points=[-0.5, 0.5])],
            ),
            Row("clamp_tensor_bounds", lambda x, lo, hi: x.clamp(lo, hi), clamp_tensor_inputs),
            Row("clamp_tensor_min", lambda x, lo, hi: x.clamp(min=lo), clamp_tensor_inputs),
            Row("clamp_tensor_max", lambda x, lo, hi: x.clamp(max=hi), clamp_tensor_inputs),
        ],
    ),
    OpInfo(
        "clamp_min",
        ["rumus.clamp_min", "Tensor.clamp_min", "Tensor.clamp_min_"],
        _clamp_one_ref("min"),
        _clamp_one_samples,
        dtypes=ALL,
        grads=[
            Row("clamp_min", lambda x: x.clamp_min(0.2), [AWAY(3, 4, points=[0.2])]),
            Row(
                "inplace_clamp_min_",
                lambda x: _inplace(x, lambda y: y.clamp_min_(0.2)),
                [AWAY(3, 4, points=[0.2])],
            ),
        ],
    ),
    OpInfo(
        "clamp_max",
        ["rumus.clamp_max", "Tensor.clamp_max", "Tensor.clamp_max_"],
        _clamp_one_ref("max"),
        _clamp_one_samples,
        dtypes=ALL,
        grads=[
            Row("clamp_max", lambda x: rumus.clamp_max(x, -0.2), [AWAY(3, 4, points=[-0.2])]),
            Row(
                "inplace_clamp_max_",
                lambda x: _inplace(x, lambda y: y.clamp_max_(-0.2)),
                [AWAY(3, 4, points=[-0.2])],
            ),
        ],
    ),
    OpInfo(
        "where",
        ["rumus.where", ("x.where(c, y)", lambda c, x, y: x.where(c, y))],
        _where_ref,
        _where_samples,
        dtypes=ALL,
        covers=["Tensor.where"],
        grads=[
            Row("where", lambda x, y, c: rumus.where(c, x, y), [U(3, 4), U(4), B(MASK34)]),
            Row("where_method", lambda x, y, c: x.where(c, y), [U(3, 4), U(3, 1), B(MASK34)]),
            Row("where_from_x", lambda x, y: rumus.where(x > 0, x, y), [NZ(3, 4), U(3, 4)]),
            Row("where_scalar", lambda x, c: rumus.where(c, x, 0.0), [U(3, 4), B(MASK34)]),
            Row("where_scalar_first", lambda x, c: rumus.where(c, 1.5, x), [U(3, 4), B(MASK34)]),
        ],
    ),
    OpInfo(
        "where_cond",
        [("rumus.where(cond)", lambda c: rumus.where(c))],
        lambda c: tuple(np.nonzero(c)) if c.ndim else (np.zeros(int(bool(c)), np.int64),),
        lambda m: [Sample(m(3, 4)), Sample(m(0, 2)), Sample(m(4, 3, layout="transposed"))],
        dtypes=ALL,
        out=to_int64,
        grad=False,
    ),
    OpInfo(
        "masked_fill",
        ["rumus.masked_fill", "Tensor.masked_fill", "Tensor.masked_fill_"],
        lambda x, mask, v: np.where(mask, v, x),
        _masked_fill_samples,
        dtypes=ALL,
        grads=[
            Row("masked_fill", lambda x, m: x.masked_fill(m, 0.5), [U(3, 4), B(MASK34)]),
            Row(
                "masked_fill_bcast",
                lambda x, m: x.masked_fill(m, -1.0),
                [U(3, 4), B([True, False, True, False])],
            ),
            Row(
                "masked_fill_tensor_value",
                lambda x, v, m: x.masked_fill(m, v),
                [U(3, 4), U(), B(MASK34)],
            ),
            Row(
                "inplace_masked_fill_",
                lambda x, m: _inplace(x, lambda y: y.masked_fill_(m, 0.5)),
                [U(3, 4), B(MASK34)],
            ),
        ],
    ),
]


# ------------------------------------------------------------ reductions


def _axis(dim):
    return tuple(dim) if isinstance(dim, (list, tuple)) else dim


def _reduce(fn, x, dim, keepdim, **kw):
    """fn(x, axis=dim, keepdims=keepdim); a 0-d x reduces over its dim 0 (or -1) as PyTorch
    does, where NumPy has no axis."""
    axis = None if x.ndim == 0 else _axis(dim)
    return fn(x, axis=axis, keepdims=keepdim, **kw)


def np_reduction(fn):
    """A reference with PyTorch's (dim, keepdim) arguments from a NumPy one."""

    def ref(x, dim=None, keepdim=False, **kw):
        return _reduce(fn, x, dim, keepdim, **kw)

    return ref


def reduction_samples(m, dims=True, empty=True, full=True, extra=()):
    """Whole-tensor (when ``full``), dim=, negative dim with keepdim, several dims (when
    ``dims``), 0-d, non-contiguous and (when ``empty``) empty inputs."""
    out = [
        Sample(m(3, 4), dim=1),
        Sample(m(3, 4), dim=-2, keepdim=True),
        Sample(m(), dim=0),
        Sample(m(4, 3, layout="transposed"), dim=0),
        Sample(m(2, 3, layout="expanded"), dim=1),
        Sample(m(4, 2, layout="strided"), dim=-1),
    ]
    if full:
        out += [Sample(m(3, 4)), Sample(m())]
    if dims:
        out.append(Sample(m(2, 3, 2), dim=(0, 2)))
    if empty:
        out += [Sample(m(0, 3), dim=1), Sample(m(0, 3), dim=0)]
    return out + [Sample(m(3, 4), **kw) for kw in extra]


def reduction(name, ref, *, fn=True, dtypes=ALL, out=same, grad_kw=None, domain=U, **kw):
    """A reduction: rumus.X and Tensor.X with the reduction samples (``samples=`` replaces
    them) and a gradcheck row over both on a (3, 4) input (with ``grad_kw``)."""
    kw.setdefault("samples", functools.partial(reduction_samples))
    op = OpInfo(
        name,
        ([f"rumus.{name}"] if fn else []) + [f"Tensor.{name}"],
        ref,
        kw.pop("samples"),
        dtypes=dtypes,
        out=out,
        domain=domain,
        **kw,
    )
    if not op.grad:
        return op
    return _default_row(op, [domain(3, 4)], kw=grad_kw)


def _sum_ref(x, dim=None, keepdim=False, dtype=None):
    out = _reduce(np.sum, x, dim, keepdim)
    return out if x.dtype.kind == "f" else out.astype(np.int64)


def _var_ref(x, dim=None, keepdim=False, unbiased=True, correction=None, fn=np.var):
    ddof = correction if correction is not None else int(unbiased)
    return _reduce(fn, x, dim, keepdim, ddof=ddof)


def _max_ref(fn, arg):
    def ref(x, dim=None, keepdim=False, other=None):
        if isinstance(dim, np.ndarray):  # max(other)
            return (np.maximum if fn is np.max else np.minimum)(x, dim)
        if dim is None:
            return fn(x)
        idx = arg(x, axis=dim, keepdims=keepdim) if x.ndim else np.zeros((), np.int64)
        return fn(x, axis=dim, keepdims=keepdim), idx

    return ref


def _max_samples(m):
    pair = lambda d: (d, "int64")  # noqa: E731 - the (values, indices) result dtypes
    return [
        Sample(m(3, 4)),
        Sample(m()),
        Sample(m(3, 4), dim=1).expect(pair),
        Sample(m(3, 4), -2, True).expect(pair),
        Sample(m(), dim=0).expect(pair),
        Sample(m(4, 3, layout="transposed"), dim=0).expect(pair),
        Sample(m(0, 3), dim=1).expect(pair),
        Sample(m(3, 4), m(4)),
    ]


def _arg_ref(fn):
    def ref(x, dim=None, keepdim=False):
        if x.ndim == 0:
            return np.zeros((), np.int64)
        return fn(x, axis=dim, keepdims=keepdim)

    return ref


def _arg_samples(m):
    return [
        Sample(m(3, 4)),
        Sample(m(3, 4), dim=1),
        Sample(m(3, 4), dim=0, keepdim=True),
        Sample(m()),
        Sample(m(4, 3, layout="transposed"), dim=-1),
        Sample(m(0, 3), dim=1),
    ]


def _cum_ref(fn):
    def ref(x, dim):
        out = x.copy() if x.ndim == 0 else fn(x, axis=dim)
        return out if x.dtype.kind == "f" else out.astype(np.int64)

    return ref


def _dim_samples(m, empty=True):
    """Ops that take one required dim."""
    out = [
        Sample(m(3, 4), 1),
        Sample(m(3, 4), dim=0),
        Sample(m(2, 3, 2), dim=-1),
        Sample(m(), dim=0),
        Sample(m(4, 3, layout="transposed"), dim=1),
        Sample(m(2, 3, layout="expanded"), dim=0),
    ]
    return out + ([Sample(m(0, 3), dim=1)] if empty else [])


def _softmax_ref(log, neg=False):
    def ref(x, dim, dtype=None):
        x = -x if neg else x
        if x.ndim == 0:
            out = np.zeros_like(x)
        else:
            out = np_log_softmax(x, dim)
        return out if log else np.exp(out)

    return ref


def _softmax_samples(m):
    return _dim_samples(m) + [
        Sample(m(3, 4), dim=1, dtype=rumus.float64).expect(lambda d: "float64")
    ]


def _lse_ref(x, dim, keepdim=False):
    with np.errstate(divide="ignore"):
        if x.ndim == 0:
            return x.copy()
        mx = np.max(x, axis=_axis(dim), keepdims=True) if x.size else 0
        s = np.sum(np.exp(x - mx), axis=_axis(dim), keepdims=True)
        out = np.log(s) + mx
        return out if keepdim else np.squeeze(out, _axis(dim))


REDUCTIONS = [
    reduction(
        "sum",
        _sum_ref,
        out=int_to_int64,
        samples=lambda m: (
            reduction_samples(m)
            + [Sample(m(3, 4), dim=1, dtype=rumus.float64).expect(lambda d: "float64")]
        ),
        grads=[
            Row("sum_dim", lambda x: x.sum(1), [U(3, 4)]),
            Row("sum_dim_neg", lambda x: x.sum(dim=-2), [U(3, 4)]),
            Row("sum_keepdim", lambda x: x.sum(0, keepdim=True), [U(3, 4)]),
            Row("sum_dims", lambda x: x.sum((0, 2)), [U(2, 3, 2)]),
            Row("sum_fn", lambda x: rumus.sum(x, 1, keepdim=True), [U(3, 4)]),
        ],
    ),
    reduction(
        "mean",
        np_reduction(np.mean),
        dtypes=FLOATS,
        grads=[
            Row("mean_dim", lambda x: x.mean(0), [U(3, 4)]),
            Row("mean_keepdim", lambda x: x.mean(-1, keepdim=True), [U(3, 4)]),
            Row("mean_dims", lambda x: x.mean((1, 2), keepdim=True), [U(2, 3, 2)]),
        ],
    ),
    reduction(
        "prod",
        lambda x, dim=None, keepdim=False: _reduce(np.prod, x, dim, keepdim).astype(
            np.float64 if x.dtype.kind == "f" else np.int64
        ),
        out=int_to_int64,
        domain=dom(NZ, lo=0.5, hi=1.5),
        samples=functools.partial(reduction_samples, dims=False),
        grads=[
            Row("prod_dim", lambda x: x.prod(1), [NZ(3, 4, lo=0.5, hi=1.5)]),
            Row("prod_keepdim", lambda x: x.prod(0, keepdim=True), [NZ(3, 4, lo=0.5, hi=1.5)]),
            Row("prod_all_one_zero", lambda x: x.prod(), [with_zeros(3, 4, zeros=[(1, 2)])]),
            Row(
                "prod_all_two_zeros",
                lambda x: x.prod(),
                [with_zeros(3, 4, zeros=[(1, 2), (2, 0)])],
            ),
            Row("prod_dim_one_zero", lambda x: x.prod(1), [with_zeros(3, 4, zeros=[(1, 2)])]),
            Row(
                "prod_dim_two_zeros",
                lambda x: x.prod(1),
                [with_zeros(3, 4, zeros=[(1, 2), (1, 0), (2, 3)])],
            ),
        ],
    ),
    reduction(
        "amax",
        np_reduction(np.amax),
        domain=DISTINCT,
        samples=functools.partial(reduction_samples, empty=False),
        grads=[
            Row("amax_dim", lambda x: x.amax(1), [DISTINCT(3, 4)]),
            Row("amax_keepdim", lambda x: x.amax(0, keepdim=True), [DISTINCT(3, 4)]),
            Row("amax_all", lambda x: x.amax((0, 1)), [DISTINCT(3, 4)]),
        ],
    ),
    reduction(
        "amin",
        np_reduction(np.amin),
        domain=DISTINCT,
        samples=functools.partial(reduction_samples, empty=False),
        grads=[Row("amin_dim", lambda x: x.amin(0), [DISTINCT(3, 4)])],
    ),
    reduction(
        "max",
        _max_ref(np.max, np.argmax),
        domain=DISTINCT,
        samples=_max_samples,
        grads=[
            Row("max_dim_values", lambda x: x.max(1).values, [DISTINCT(3, 4)]),
            Row("max_dim_tuple", lambda x: x.max(dim=0, keepdim=True), [DISTINCT(3, 4)]),
            Row("max_binary", lambda a, b: a.max(b), [U(3, 4), U(3, 4)]),
        ],
    ),
    reduction(
        "min",
        _max_ref(np.min, np.argmin),
        domain=DISTINCT,
        samples=_max_samples,
        grads=[
            Row("min_dim_values", lambda x: x.min(0)[0], [DISTINCT(3, 4)]),
            Row("min_dim_keepdim", lambda x: x.min(-1, keepdim=True).values, [DISTINCT(3, 4)]),
        ],
    ),
    reduction(
        "argmax",
        _arg_ref(np.argmax),
        dtypes=NUMERIC,
        out=to_int64,
        domain=DISTINCT,
        samples=_arg_samples,
        grad=False,
    ),
    reduction(
        "argmin",
        _arg_ref(np.argmin),
        dtypes=NUMERIC,
        out=to_int64,
        domain=DISTINCT,
        samples=_arg_samples,
        grad=False,
    ),
    reduction("all", np_reduction(np.all), out=to_bool, grad=False),
    reduction("any", np_reduction(np.any), out=to_bool, grad=False),
    reduction(
        "var",
        _var_ref,
        dtypes=FLOATS,
        samples=functools.partial(
            reduction_samples,
            extra=[dict(dim=1, correction=0), dict(unbiased=False), dict(dim=0, correction=2)],
        ),
        grads=[
            Row("var_dim", lambda x: x.var(1), [U(3, 4)]),
            Row("var_correction0", lambda x: x.var(1, correction=0), [U(3, 4)]),
            Row(
                "var_correction2_keepdim",
                lambda x: x.var(0, keepdim=True, correction=2),
                [U(4, 3)],
            ),
            Row("var_unbiased_false", lambda x: x.var(unbiased=False), [U(3, 4)]),
        ],
    ),
    reduction(
        "std",
        functools.partial(_var_ref, fn=np.std),
        dtypes=FLOATS,
        samples=functools.partial(
            reduction_samples, extra=[dict(dim=1, correction=0), dict(unbiased=False)]
        ),
        grads=[
            Row("std_dim", lambda x: x.std(0, keepdim=True), [U(3, 4)]),
            Row("std_correction0", lambda x: x.std(1, correction=0), [U(3, 4)]),
        ],
    ),
    reduction(
        "logsumexp",
        floated(_lse_ref),
        out=to_float,
        samples=functools.partial(reduction_samples, full=False),
        grad_kw=dict(dim=1),
        grads=[
            Row("logsumexp_keepdim", lambda x: x.logsumexp(0, keepdim=True), [U(3, 4)]),
            Row("logsumexp_dims", lambda x: x.logsumexp((0, 1)), [U(3, 4)]),
        ],
    ),
    reduction(
        "cumsum",
        _cum_ref(np.cumsum),
        out=int_to_int64,
        samples=_dim_samples,
        grad_kw=dict(dim=1),
        grads=[
            Row("cumsum0", lambda x: x.cumsum(0), [U(3, 4)]),
            Row("cumsum_1d", lambda x: rumus.cumsum(x, 0), [U(5)]),
        ],
    ),
    reduction(
        "cumprod",
        _cum_ref(np.cumprod),
        out=int_to_int64,
        domain=dom(NZ, lo=0.5, hi=1.5),
        samples=_dim_samples,
        grad_kw=dict(dim=1),
        grads=[
            Row("cumprod0", lambda x: x.cumprod(0), [NZ(3, 4, lo=0.5, hi=1.5)]),
            Row("cumprod_one_zero", lambda x: x.cumprod(1), [with_zeros(3, 4, zeros=[(1, 1)])]),
            Row(
                "cumprod_two_zeros",
                lambda x: x.cumprod(1),
                [with_zeros(3, 4, zeros=[(1, 1), (1, 3), (2, 0)])],
            ),
            Row("cumprod_zero_1d", lambda x: x.cumprod(0), [with_zeros(5, zeros=[(2,)])]),
        ],
    ),
    OpInfo(
        "softmax",
        ["Tensor.softmax", "F.softmax", "rumus.softmax"],
        _softmax_ref(log=False),
        _softmax_samples,
        grads=[
            Row("F_softmax", lambda x: F.softmax(x, 1), [U(3, 4)]),
            Row("F_softmax_dim0", lambda x: F.softmax(x, dim=0), [U(3, 4)]),
        ],
    ),
    OpInfo(
        "log_softmax",
        ["Tensor.log_softmax", "F.log_softmax", "rumus.log_softmax"],
        _softmax_ref(log=True),
        _softmax_samples,
        grads=[Row("F_log_softmax", lambda x: F.log_softmax(x, -1), [U(3, 4)])],
    ),
    OpInfo(
        "softmin",
        ["F.softmin"],
        _softmax_ref(log=False, neg=True),
        _softmax_samples,
        grads=[Row("F_softmin", lambda x: F.softmin(x, 1), [U(3, 4)])],
    ),
]


# ------------------------------------------------------------ linalg


def _mm_samples(shapes):
    def gen(m):
        out = [Sample(m(*a), m(*b)) for a, b in shapes]
        a, b = shapes[0]
        if len(a) == 2:
            out.append(Sample(m(*a, layout="transposed"), m(*b)))
        if len(b) >= 1:
            out.append(Sample(m(*a), m(*b, layout="strided")))
        return out

    return gen


def linalg(name, shapes, grads, extra=()):
    return OpInfo(
        name,
        [f"rumus.{name}", f"Tensor.{name}", *extra],
        np.matmul if name != "outer" else np.outer,
        _mm_samples(shapes),
        dtypes=NUMERIC if name != "outer" else ALL,
        grads=grads,
        tol={"float16": (1e-2, 1e-2), "bfloat16": (2e-2, 5e-2)},
        mismatch=name != "outer",
    )


LINALG = [
    linalg(
        "matmul",
        [
            ((3, 4), (4, 2)),
            ((4,), (4,)),
            ((3, 4), (4,)),
            ((4,), (4, 3)),
            ((2, 3, 2), (2, 2, 3)),
            ((2, 1, 2, 3), (3, 3, 2)),
            ((2, 3, 2), (2,)),
            ((0, 3), (3, 2)),
            ((2, 0), (0, 3)),
        ],
        [
            Row("matmul_1d_1d", lambda a, b: a @ b, [U(4), U(4)]),
            Row("matmul_2d_1d", lambda a, b: a @ b, [U(3, 4), U(4)]),
            Row("matmul_1d_2d", lambda a, b: a @ b, [U(4), U(4, 3)]),
            Row("matmul_2d_2d", lambda a, b: a @ b, [U(3, 4), U(4, 2)]),
            Row("matmul_3d_3d", lambda a, b: a.matmul(b), [U(2, 3, 2), U(2, 2, 3)]),
            Row("matmul_3d_2d", lambda a, b: a @ b, [U(2, 3, 2), U(2, 3)]),
            Row("matmul_2d_3d", lambda a, b: a @ b, [U(3, 2), U(2, 2, 3)]),
            Row("matmul_3d_1d", lambda a, b: a @ b, [U(2, 3, 2), U(2)]),
            Row("matmul_1d_3d", lambda a, b: a @ b, [U(3), U(2, 3, 2)]),
            Row("matmul_bcast_batch", lambda a, b: a @ b, [U(2, 1, 2, 3), U(3, 3, 2)]),
            Row("matmul_self", lambda a: a @ a.t(), [U(3, 4)]),
        ],
        extra=[("a @ b", operator.matmul)],
    ),
    linalg(
        "mm",
        [((3, 4), (4, 2)), ((0, 3), (3, 2)), ((2, 0), (0, 3))],
        [Row("mm", lambda a, b: a.mm(b), [U(3, 4), U(4, 2)])],
    ),
    linalg(
        "bmm",
        [((2, 3, 4), (2, 4, 2)), ((0, 3, 4), (0, 4, 2))],
        [Row("bmm", lambda a, b: rumus.bmm(a, b), [U(2, 3, 2), U(2, 2, 3)])],
    ),
    linalg(
        "mv",
        [((3, 4), (4,)), ((0, 3), (3,))],
        [Row("mv", lambda a, b: a.mv(b), [U(3, 4), U(4)])],
    ),
    linalg(
        "dot",
        [((5,), (5,)), ((0,), (0,))],
        [Row("dot", lambda a, b: a.dot(b), [U(5), U(5)])],
    ),
    linalg(
        "outer",
        [((3,), (4,)), ((0,), (2,))],
        [Row("outer", lambda a, b: a.outer(b), [U(3), U(4)])],
    ),
]


def _einsum_samples(m):
    return [
        Sample("ij,jk->ik", m(3, 4), m(4, 2)),
        Sample("ij,jk->ik", m(3, 4, layout="transposed"), m(4, 2)),
        Sample("bij,bjk->bik", m(2, 3, 4), m(2, 4, 2)),
        Sample("bhqd,bhkd->bhqk", m(2, 2, 3, 4), m(2, 2, 5, 4)),
        Sample("...ij,...jk->...ik", m(2, 3, 4), m(4, 5)),
        Sample("bn,anm,bm->ba", m(2, 3), m(4, 3, 5), m(2, 5)),
        Sample("i,j->ij", m(3), m(4)),
        Sample("ij,ij->i", m(3, 4), m(3, 4, layout="strided")),
        Sample("ij,ij->", m(3, 4), m(3, 4)),
        Sample("ii->i", m(3, 3)),
        Sample("ii", m(3, 3)),
        Sample("iji->j", m(3, 2, 3)),
        Sample("ba", m(3, 4)),
        Sample("i j , j k", m(3, 4), m(4, 2)),
        Sample("->", m()),
        Sample("i,i->", m(0), m(0)),
        Sample("ij,jk->ik", m(0, 3), m(3, 2)),
        Sample("b...,b...->b...", m(2, 3, 1), m(2, 1, 4)),
    ]


EINSUM = [
    OpInfo(
        "einsum",
        ["rumus.einsum"],
        lambda eq, *ops: np.einsum(eq, *ops),
        _einsum_samples,
        dtypes=NUMERIC,
        tol={"float16": (1e-2, 1e-2), "bfloat16": (2e-2, 5e-2)},
        bad=lambda m: [
            ("einsum with too few operands", lambda: rumus.einsum("ij,jk", m.t(2, 2))),
            ("einsum with too many operands", lambda: rumus.einsum("ij", m.t(2, 2), m.t(2, 2))),
            ("einsum bad subscript", lambda: rumus.einsum("i1", m.t(2, 2))),
            ("einsum two ellipses", lambda: rumus.einsum("...i...", m.t(2, 2))),
            ("einsum stray dot", lambda: rumus.einsum("i.j", m.t(2, 2))),
            ("einsum rank mismatch", lambda: rumus.einsum("ijk", m.t(2, 2))),
            ("einsum repeated sizes differ", lambda: rumus.einsum("ii", m.t(2, 3))),
            ("einsum output label unknown", lambda: rumus.einsum("ij->k", m.t(2, 2))),
            ("einsum output label twice", lambda: rumus.einsum("ij->ii", m.t(2, 2))),
            ("einsum no operands", lambda: rumus.einsum("ij")),
            ("einsum equation not a string", lambda: rumus.einsum(3, m.t(2, 2))),
        ],
        grads=[
            Row("einsum_mm", lambda a, b: rumus.einsum("ij,jk->ik", a, b), [U(3, 4), U(4, 2)]),
            Row(
                "einsum_attention",
                lambda q, k: rumus.einsum("bhqd,bhkd->bhqk", q, k),
                [U(1, 2, 3, 4), U(1, 2, 2, 4)],
            ),
            Row("einsum_trace", lambda a: rumus.einsum("ii", a), [U(3, 3)]),
            Row("einsum_diag", lambda a: rumus.einsum("ii->i", a), [U(3, 3)]),
            Row(
                "einsum_ellipsis",
                lambda a, b: rumus.einsum("...ij,...jk->...ik", a, b),
                [U(2, 3, 4), U(4, 2)],
            ),
            Row(
                "einsum_bilinear",
                lambda x, w, y: rumus.einsum("bn,anm,bm->ba", x, w, y),
                [U(2, 3), U(2, 3, 2), U(2, 2)],
            ),
            Row("einsum_rowdot", lambda a, b: rumus.einsum("ij,ij->i", a, b), [U(3, 4), U(3, 4)]),
        ],
    ),
]


# ------------------------------------------------------------ shape ops and views


def shape_op(name, ref, samples, *, fn=True, method=True, extra=(), grads=(), **kw):
    """A shape op (any dtype, the input's dtype): rumus.X and/or Tensor.X."""
    variants = ([f"rumus.{name}"] if fn else []) + ([f"Tensor.{name}"] if method else [])
    return OpInfo(name, variants + list(extra), ref, samples, dtypes=ALL, grads=grads, **kw)


def _seq(ref):
    """A reference returning a list of arrays (split, chunk, unbind)."""
    return lambda *a, **k: [np.ascontiguousarray(x) for x in ref(*a, **k)]


def _split_ref(x, split_size_or_sections, dim=0):
    n = x.shape[dim]
    if isinstance(split_size_or_sections, int):
        s = split_size_or_sections
        cuts = list(range(s, n, s))
    else:
        cuts = list(np.cumsum(split_size_or_sections)[:-1])
    return np.split(x, cuts, axis=dim)


def _chunk_ref(x, chunks, dim=0):
    n = x.shape[dim]
    return _split_ref(x, -(-n // chunks) if n else 1, dim) if n else [x]


def _squeeze_ref(x, dim=None):
    if dim is None:
        return np.squeeze(x)
    dims = (dim,) if isinstance(dim, int) else dim
    dims = tuple(d % max(x.ndim, 1) for d in dims if x.ndim and x.shape[d] == 1)
    return np.squeeze(x, dims) if x.ndim else x


def _roll_ref(x, shifts, dims=None):
    return np.roll(x, shifts, axis=dims)


def _cat_ref(tensors, dim=0):
    return np.concatenate(tensors, axis=dim)


def _narrow_ref(x, dim, start, length):
    return np.take(x, range(start % x.shape[dim], start % x.shape[dim] + length), axis=dim)


def _select_ref(x, dim, index):
    return np.take(x, index, axis=dim)


def _tri(fn):
    return lambda x, diagonal=0: fn(x, diagonal) if x.size else x.copy()


SHAPE = [
    shape_op(
        "diagonal",
        lambda x, offset=0, dim1=0, dim2=1: np.diagonal(x, offset, dim1, dim2).copy(),
        lambda m: [
            Sample(m(3, 3)),
            Sample(m(3, 4), 1),
            Sample(m(4, 3), -2),
            Sample(m(3, 4), 5),
            Sample(m(2, 3, 4), 0, 2, 0),
            Sample(m(2, 3, 4), offset=-1, dim1=-1, dim2=1),
            Sample(m(0, 3)),
            Sample(m(3, 4, layout="transposed")),
        ],
        bad=lambda m: [
            ("diagonal of a 1-d tensor", lambda: rumus.diagonal(m.t(3))),
            ("diagonal with equal dims", lambda: m.t(3, 3).diagonal(0, 1, 1)),
        ],
        grads=[
            Row("diagonal", lambda x: x.diagonal(), [U(3, 3)]),
            Row("diagonal_offset", lambda x: x.diagonal(1, 2, 0), [U(3, 2, 4)]),
        ],
    ),
    OpInfo(
        "trace",
        ["rumus.trace", "Tensor.trace"],
        np.trace,
        lambda m: [
            Sample(m(3, 3)),
            Sample(m(3, 5)),
            Sample(m(0, 2)),
            Sample(m(4, 3, layout="transposed")),
        ],
        dtypes=NUMERIC,
        out=int_to_int64,
        bad=lambda m: [("trace of a 3-d tensor", lambda: rumus.trace(m.t(2, 2, 2)))],
        grads=[Row("trace", lambda x: x.trace(), [U(3, 4)])],
    ),
    shape_op(
        "reshape",
        lambda x, shape: np.reshape(x, shape),
        lambda m: [
            Sample(m(3, 4), (4, 3)),
            Sample(m(3, 4), (-1,)),
            Sample(m(), (1, 1)),
            Sample(m(1), ()),
            Sample(m(0, 3), (3, 0)),
            Sample(m(3, 4, layout="transposed"), (2, 6)),
            Sample(m(2, 3, layout="expanded"), (3, 2)),
        ],
        extra=[("x.reshape(*shape)", lambda x, s: x.reshape(*s) if s else x.reshape(s))],
        grads=[
            Row("reshape", lambda x: x.reshape(4, 3), [U(3, 4)]),
            Row("reshape_flat", lambda x: x.reshape(-1), [U(3, 4)]),
        ],
    ),
    shape_op(
        "view",
        lambda x, *shape: np.reshape(x, shape),
        lambda m: [
            Sample(m(3, 4), 2, 6),
            Sample(m(3, 4), -1),
            Sample(m(), 1),
            Sample(m(0, 3), 3, 0),
        ],
        fn=False,
        grads=[Row("view", lambda x: x.view(2, 6), [U(3, 4)], nc=False)],
    ),
    shape_op(
        "view_as",
        lambda x, other: np.reshape(x, other.shape),
        lambda m: [Sample(m(3, 4), m(6, 2)), Sample(m(0, 2), m(2, 0))],
        fn=False,
        mismatch=False,
        grads=[Row("view_as", lambda x: x.view_as(rumus.zeros(6, 2)), [U(3, 4)], nc=False)],
    ),
    shape_op(
        "reshape_as",
        lambda x, other: np.reshape(x, other.shape),
        lambda m: [Sample(m(3, 4), m(6, 2)), Sample(m(3, 4, layout="transposed"), m(12))],
        fn=False,
        grads=[
            Row("reshape_as", lambda x, y: x.reshape_as(y), [U(3, 4), Const(rumus.zeros(2, 6))])
        ],
    ),
    shape_op(
        "flatten",
        lambda x, start_dim=0, end_dim=-1: (
            np.reshape(
                x,
                x.shape[: start_dim % max(x.ndim, 1)]
                + (-1,)
                + x.shape[end_dim % max(x.ndim, 1) + 1 :],
            )
            if x.ndim
            else x.reshape(1)
        ),
        lambda m: [
            Sample(m(2, 3, 2)),
            Sample(m(2, 3, 2), 1),
            Sample(m(2, 3, 2), start_dim=0, end_dim=1),
            Sample(m()),
            Sample(m(0, 3)),
            Sample(m(3, 4, layout="transposed")),
        ],
        grads=[
            Row("flatten", lambda x: x.flatten(), [U(2, 3, 2)]),
            Row("flatten_start", lambda x: x.flatten(1), [U(2, 3, 2)]),
        ],
    ),
    shape_op(
        "unflatten",
        lambda x, dim, sizes: np.reshape(
            x, x.shape[: dim % x.ndim] + tuple(sizes) + x.shape[dim % x.ndim + 1 :]
        ),
        lambda m: [
            Sample(m(3, 4), 1, (2, 2)),
            Sample(m(3, 4), -1, (2, -1)),
            Sample(m(0, 4), 0, (0, 5)),
            Sample(m(3, 4, layout="transposed"), 0, (3, 1)),
        ],
        grads=[Row("unflatten", lambda x: x.unflatten(1, (2, 2)), [U(3, 4)])],
    ),
    shape_op(
        "permute",
        lambda x, dims: np.transpose(x, dims),
        lambda m: [
            Sample(m(2, 3, 2), (1, 2, 0)),
            Sample(m(3, 4), (-1, 0)),
            Sample(m(), ()),
            Sample(m(0, 3), (1, 0)),
            Sample(m(3, 4, layout="transposed"), (1, 0)),
        ],
        extra=[("x.permute(*dims)", lambda x, d: x.permute(*d))],
        grads=[Row("permute", lambda x: x.permute(1, 2, 0), [U(2, 3, 2)])],
    ),
    shape_op(
        "transpose",
        lambda x, d0, d1: np.swapaxes(x, d0, d1) if x.ndim else x.copy(),
        lambda m: [
            Sample(m(3, 4), 0, 1),
            Sample(m(2, 3, 2), -1, 0),
            Sample(m(), 0, -1),
            Sample(m(0, 3), 0, 1),
            Sample(m(3, 4, layout="strided"), 1, 0),
        ],
        extra=["rumus.swapaxes", "Tensor.swapaxes"],
        grads=[
            Row("transpose", lambda x: x.transpose(0, 1), [U(3, 4)]),
            Row("transpose_3d", lambda x: x.transpose(0, 2), [U(2, 3, 2)]),
            Row("swapaxes", lambda x: x.swapaxes(-1, 0), [U(2, 3, 2)]),
        ],
    ),
    shape_op(
        "t",
        lambda x: x.T.copy(),
        lambda m: [
            Sample(m(3, 4)),
            Sample(m(4)),
            Sample(m()),
            Sample(m(0, 3)),
            Sample(m(3, 4, layout="transposed")),
        ],
        extra=[("x.T", lambda x: x.T)],
        covers=["Tensor.T"],
        grads=[
            Row("t", lambda x: x.t(), [U(3, 4)]),
            Row("T", lambda x: x.T, [U(3, 4)]),
        ],
    ),
    OpInfo(
        "mT",
        [("x.mT", lambda x: x.mT)],
        lambda x: np.swapaxes(x, -1, -2),
        lambda m: [Sample(m(2, 3, 4)), Sample(m(3, 4)), Sample(m(0, 2, 3))],
        dtypes=ALL,
        covers=["Tensor.mT"],
        grads=[Row("mT", lambda x: x.mT, [U(2, 3, 2)])],
    ),
    shape_op(
        "movedim",
        lambda x, src, dst: np.moveaxis(x, src, dst),
        lambda m: [
            Sample(m(2, 3, 2), 0, -1),
            Sample(m(2, 3, 2), (0, 1), (2, 0)),
            Sample(m(0, 3), 1, 0),
            Sample(m(3, 4, layout="transposed"), 0, 1),
        ],
        extra=["rumus.moveaxis", "Tensor.moveaxis"],
        grads=[
            Row("movedim", lambda x: x.movedim(0, -1), [U(2, 3, 2)]),
            Row("moveaxis", lambda x: x.moveaxis(2, 0), [U(2, 3, 2)]),
        ],
    ),
    shape_op(
        "squeeze",
        _squeeze_ref,
        lambda m: [
            Sample(m(3, 1, 4)),
            Sample(m(3, 1, 4), 1),
            Sample(m(3, 1, 4), 0),
            Sample(m(1, 3, 1), dim=(0, 2)),
            Sample(m()),
            Sample(m(0, 1)),
            Sample(m(1, 3, layout="transposed"), 0),
        ],
        grads=[
            Row("squeeze", lambda x: x.squeeze(), [U(3, 1, 4)]),
            Row("squeeze_dim", lambda x: x.squeeze(1), [U(3, 1, 4)]),
        ],
    ),
    shape_op(
        "unsqueeze",
        lambda x, dim: np.expand_dims(x, dim),
        lambda m: [
            Sample(m(3, 4), 0),
            Sample(m(3, 4), -1),
            Sample(m(), 0),
            Sample(m(0, 3), 1),
            Sample(m(3, 4, layout="transposed"), 1),
        ],
        grads=[
            Row("unsqueeze", lambda x: x.unsqueeze(0), [U(3, 4)]),
            Row("unsqueeze_neg", lambda x: x.unsqueeze(-1), [U(3, 4)]),
        ],
    ),
    shape_op(
        "narrow",
        _narrow_ref,
        lambda m: [
            Sample(m(3, 4), 1, 1, 2),
            Sample(m(3, 4), 0, -2, 2),
            Sample(m(3, 4), 0, 1, 0),
            Sample(m(3, 4, layout="transposed"), -1, 0, 3),
        ],
        grads=[Row("narrow", lambda x: x.narrow(1, 1, 2), [U(3, 4)])],
    ),
    shape_op(
        "select",
        _select_ref,
        lambda m: [
            Sample(m(3, 4), 0, 1),
            Sample(m(3, 4), -1, -1),
            Sample(m(0, 4), 1, 2),
            Sample(m(3, 4, layout="transposed"), 1, 0),
        ],
        grads=[
            Row("select", lambda x: x.select(0, 1), [U(3, 4)]),
            Row("select_neg", lambda x: x.select(-1, -1), [U(3, 4)]),
        ],
    ),
    shape_op(
        "unbind",
        _seq(lambda x, dim=0: [np.take(x, i, axis=dim) for i in range(x.shape[dim])]),
        lambda m: [
            Sample(m(3, 4)),
            Sample(m(3, 4), 1),
            Sample(m(0, 2), dim=1),
            Sample(m(3, 4, layout="transposed"), -1),
        ],
        grads=[
            Row("unbind", lambda x: x.unbind(0), [U(3, 4)]),
            Row("unbind_dim1", lambda x: rumus.unbind(x, 1), [U(3, 4)]),
        ],
    ),
    shape_op(
        "split",
        _seq(_split_ref),
        lambda m: [
            Sample(m(3, 5), 2, dim=1),
            Sample(m(3, 5), [1, 3, 1], 1),
            Sample(m(4, 3), 2),
            Sample(m(0, 3), 2, 1),
            Sample(m(5, 3, layout="transposed"), 3),
        ],
        grads=[
            Row("split", lambda x: x.split(2, dim=1), [U(3, 5)]),
            Row("split_sections", lambda x: x.split([1, 3, 1], 1), [U(3, 5)]),
        ],
    ),
    shape_op(
        "chunk",
        _seq(_chunk_ref),
        lambda m: [
            Sample(m(3, 4), 2),
            Sample(m(3, 5), 2, 1),
            Sample(m(5, 2), 3, dim=0),
            Sample(m(3, 4, layout="transposed"), 4, -1),
        ],
        grads=[Row("chunk", lambda x: x.chunk(2, 0), [U(3, 4)])],
    ),
    OpInfo(
        "cat",
        ["rumus.cat", "rumus.concat", "rumus.concatenate"],
        _cat_ref,
        lambda m: [
            Sample([m(3, 2), m(3, 3)], 1),
            Sample([m(1, 4), m(2, 4), m(1, 4)]),
            Sample([m(3, 4, layout="transposed"), m(3, 4, layout="strided")], dim=-1),
            Sample([m(0, 3), m(2, 3)], 0),
            Sample([m(2)]),
        ],
        dtypes=ALL,
        mismatch=False,
        bad=lambda m: [
            ("cat of 2-d with 1-d", lambda: rumus.cat([m.t(2, 3), m.t(3)])),
            ("cat of an empty list", lambda: rumus.cat([])),
            ("cat of 0-d tensors", lambda: rumus.cat([m.t(), m.t()])),
            ("cat dim out of range", lambda: rumus.cat([m.t(2, 3), m.t(2, 3)], 2)),
        ],
        grads=[
            Row("cat", lambda a, b: rumus.cat([a, b], 1), [U(3, 2), U(3, 3)]),
            Row("cat3_dim0", lambda a, b, c: rumus.cat([a, b, c], 0), [U(1, 4), U(2, 4), U(1, 4)]),
            Row("cat_const", lambda a, b: rumus.cat([a, b], 0), [U(2, 3), Const(np.ones((1, 3)))]),
            Row("concat", lambda a, b: rumus.concat([a, b], -1), [U(2, 3), U(2, 1)]),
            Row("concatenate", lambda a, b: rumus.concatenate([a, b]), [U(2, 3), U(1, 3)]),
        ],
    ),
    OpInfo(
        "stack",
        ["rumus.stack"],
        lambda tensors, dim=0: np.stack(tensors, axis=dim),
        lambda m: [
            Sample([m(3, 4), m(3, 4)]),
            Sample([m(3, 2), m(3, 2), m(3, 2)], -1),
            Sample([m(), m()], dim=0),
            Sample([m(0, 2), m(0, 2)], 1),
            Sample([m(3, 4, layout="transposed"), m(3, 4, layout="expanded")], 1),
        ],
        dtypes=ALL,
        mismatch=False,
        bad=lambda m: [
            ("stack of different shapes", lambda: rumus.stack([m.t(2, 3), m.t(3, 2)])),
            ("stack of an empty list", lambda: rumus.stack([])),
            ("stack dim out of range", lambda: rumus.stack([m.t(2), m.t(2)], 3)),
        ],
        grads=[
            Row("stack", lambda a, b: rumus.stack([a, b]), [U(3, 4), U(3, 4)]),
            Row("stack_last", lambda a, b: rumus.stack([a, b], -1), [U(3, 2), U(3, 2)]),
        ],
    ),
    shape_op(
        "repeat",
        np.tile,
        lambda m: [
            Sample(m(2, 3), (2, 1)),
            Sample(m(3), (2, 2)),
            Sample(m(), (3,)),
            Sample(m(0, 2), (2, 2)),
            Sample(m(2, 3), (0, 1)),
            Sample(m(2, 3, layout="transposed"), (1, 2, 2)),
        ],
        fn=False,
        extra=[("x.repeat(*sizes)", lambda x, s: x.repeat(*s))],
        bad=lambda m: [
            ("repeat with fewer sizes than dims", lambda: m.t(2, 3).repeat(2)),
            ("repeat with a negative size", lambda: m.t(2, 3).repeat(2, -1)),
        ],
        grads=[
            Row("repeat", lambda x: x.repeat(2, 1, 3), [U(2, 3)]),
            Row("repeat_noncontig", lambda x: x.t().repeat(2, 2), [U(2, 3)]),
        ],
    ),
    shape_op(
        "tile",
        np.tile,
        lambda m: [
            Sample(m(2, 3), (2,)),
            Sample(m(2, 3), (2, 1, 2)),
            Sample(m(), (2,)),
            Sample(m(0, 3), (2, 2)),
            Sample(m(3, 2, layout="transposed"), (2, 2)),
        ],
        grads=[Row("tile", lambda x: x.tile(2, 2), [U(2, 3)])],
    ),
    shape_op(
        "repeat_interleave",
        lambda x, repeats, dim=None: np.repeat(x, repeats, axis=dim),
        lambda m: [
            Sample(m(2, 3), 2),
            Sample(m(2, 3), 2, dim=1),
            Sample(m(2, 3), m.idx([1, 0, 2]), dim=1),
            Sample(m(2, 3), m.idx([3]), dim=0),
            Sample(m(), 3),
            Sample(m(0, 2), 2, dim=0),
            Sample(m(3, 2, layout="transposed"), 2, dim=-1),
        ],
        mismatch=False,
        bad=lambda m: [
            ("repeat_interleave negative repeats", lambda: m.t(2, 3).repeat_interleave(-1)),
            (
                "repeat_interleave repeats of the wrong length",
                lambda: m.t(2, 3).repeat_interleave(rumus.tensor([1, 2]), dim=1),
            ),
            (
                "repeat_interleave float repeats",
                lambda: m.t(2, 3).repeat_interleave(rumus.tensor([1.0, 2.0, 1.0]), dim=1),
            ),
            (
                "repeat_interleave bad output_size",
                lambda: m.t(2).repeat_interleave(2, output_size=3),
            ),
        ],
        grads=[
            Row("repeat_interleave", lambda x: x.repeat_interleave(2, dim=1), [U(2, 3)]),
            Row(
                "repeat_interleave_tensor",
                lambda x: x.repeat_interleave(rumus.tensor([1, 0, 2]), dim=1),
                [U(2, 3)],
            ),
        ],
    ),
    OpInfo(
        "meshgrid",
        ["rumus.meshgrid"],
        _seq(lambda *xs, indexing="ij": np.meshgrid(*xs, indexing=indexing)),
        lambda m: [
            Sample(m(3), m(4)),
            Sample(m(3), m(4), indexing="ij"),
            Sample(m(3), m(4), indexing="xy"),
            Sample(m(2), m(3), m(4), indexing="xy"),
            Sample(m(), m(3)),
            Sample(m(0), m(2)),
            Sample(m(5)),
        ],
        dtypes=ALL,
        mismatch=False,
        bad=lambda m: [
            ("meshgrid of a 2-d tensor", lambda: rumus.meshgrid(m.t(2, 2), m.t(3))),
            ("meshgrid bad indexing", lambda: rumus.meshgrid(m.t(2), m.t(3), indexing="ji")),
            ("meshgrid of nothing", lambda: rumus.meshgrid()),
        ],
        grads=[Row("meshgrid", lambda a, b: rumus.meshgrid(a, b, indexing="xy"), [U(3), U(2)])],
    ),
    shape_op(
        "flip",
        lambda x, dims: np.flip(x, dims) if x.ndim else x.copy(),
        lambda m: [
            Sample(m(3, 4), (0,)),
            Sample(m(3, 4), (0, 1)),
            Sample(m(2, 3, 2), [-1]),
            Sample(m(), (0,)),
            Sample(m(0, 3), (1,)),
            Sample(m(3, 4, layout="transposed"), (1,)),
            Sample(m(3, 4), dims=[1]),
            Sample(m(2, 3, 2), dims=(0, 2)),
        ],
        extra=[("x.flip(*dims)", lambda x, d: x.flip(*d))],
        grads=[
            Row("flip", lambda x: x.flip(0), [U(3, 4)]),
            Row("flip_both", lambda x: x.flip(0, 1), [U(3, 4)]),
        ],
    ),
    shape_op(
        "roll",
        _roll_ref,
        lambda m: [
            Sample(m(3, 4), 1, 0),
            Sample(m(3, 4), (1, -2), (0, 1)),
            Sample(m(3, 4), 5),
            Sample(m(0, 3), 1, 1),
            Sample(m(3, 4, layout="transposed"), shifts=-1, dims=1),
        ],
        grads=[
            Row("roll", lambda x: x.roll(1, 0), [U(3, 4)]),
            Row("roll_multi", lambda x: x.roll((1, -2), (0, 1)), [U(3, 4)]),
            Row("roll_flat", lambda x: x.roll(5), [U(3, 4)]),
        ],
    ),
    shape_op(
        "tril",
        _tri(np.tril),
        lambda m: [
            Sample(m(4, 4)),
            Sample(m(3, 4), -1),
            Sample(m(2, 3, 4), diagonal=2),
            Sample(m(0, 3)),
            Sample(m(3, 4, layout="transposed"), 1),
        ],
        grads=[
            Row("tril", lambda x: x.tril(), [U(4, 4)]),
            Row("tril_neg", lambda x: x.tril(-1), [U(3, 4)]),
        ],
    ),
    shape_op(
        "triu",
        _tri(np.triu),
        lambda m: [
            Sample(m(4, 4)),
            Sample(m(3, 4), 1),
            Sample(m(2, 3, 4), diagonal=-1),
            Sample(m(3, 0)),
            Sample(m(3, 4, layout="strided"), -2),
        ],
        grads=[
            Row("triu", lambda x: x.triu(1), [U(4, 3)]),
            Row("triu_fn", lambda x: rumus.triu(x), [U(3, 4)]),
        ],
    ),
    shape_op(
        "expand",
        lambda x, *sizes: np.broadcast_to(
            x,
            tuple(s if s != -1 else x.shape[i - len(sizes) + x.ndim] for i, s in enumerate(sizes)),
        ).copy(),
        lambda m: [
            Sample(m(3, 1), 3, 4),
            Sample(m(4), 2, 3, 4),
            Sample(m(3, 1), 2, -1, 4),
            Sample(m(), 2),
            Sample(m(1, 0), 3, 0),
            Sample(m(1, 3, layout="transposed"), 2, 3),
        ],
        fn=False,
        grads=[
            Row("expand", lambda x: x.expand(3, 4), [U(3, 1)]),
            Row("expand_new_dims", lambda x: x.expand(2, 3, 4), [U(4)]),
            Row("expand_minus1", lambda x: x.expand(2, -1, 4), [U(3, 1)]),
        ],
    ),
    shape_op(
        "expand_as",
        lambda x, other: np.broadcast_to(x, other.shape).copy(),
        lambda m: [Sample(m(3, 1), m(3, 4)), Sample(m(4), m(2, 0, 4))],
        fn=False,
        grads=[Row("expand_as", lambda x, y: x.expand_as(y), [U(3, 1), Const(rumus.zeros(3, 4))])],
    ),
    shape_op(
        "broadcast_to",
        lambda x, shape: np.broadcast_to(x, shape).copy(),
        lambda m: [Sample(m(4), (3, 4)), Sample(m(), (2,)), Sample(m(3, 1), (3, 0))],
        grads=[Row("broadcast_to", lambda x: x.broadcast_to((3, 4)), [U(4)])],
    ),
    shape_op(
        "clone",
        lambda x: x.copy(),
        lambda m: [
            Sample(m(3, 4)),
            Sample(m()),
            Sample(m(0, 2)),
            Sample(m(3, 4, layout="transposed")),
            Sample(m(2, 3, layout="expanded")),
        ],
        grads=[
            Row("clone", lambda x: x.clone(), [U(3, 4)]),
            Row("clone_fn", lambda x: rumus.clone(x) * 2, [U(3, 4)]),
        ],
    ),
    shape_op(
        "contiguous",
        lambda x: x.copy(),
        lambda m: [Sample(m(3, 4)), Sample(m(3, 4, layout="transposed")), Sample(m(0, 2))],
        fn=False,
        grads=[Row("contiguous", lambda x: x.t().contiguous(), [U(3, 4)])],
    ),
]


# ------------------------------------------------------------ indexing


def _gather_ref(x, dim, index):
    if x.ndim == 0:
        return x.copy() if index.ndim == 0 else np.full(index.shape, x)
    sl = tuple(slice(0, n) if d != dim % x.ndim else slice(None) for d, n in enumerate(index.shape))
    return np.take_along_axis(x[sl], index, axis=dim)


def _scatter_ref(add):
    def ref(x, dim, index, src=None, value=None):
        out = x.copy()
        for pos in np.ndindex(*index.shape):
            dst = list(pos)
            dst[dim] = index[pos]
            v = value if src is None else src[pos]
            if add:
                out[tuple(dst)] += v
            else:
                out[tuple(dst)] = v
        return out

    return ref


IDX35 = [[0, 3], [4, 1], [2, 0]]  # distinct per row: scatter has one writer per element
IDX35_ADD = [[0, 3, 0, 0], [4, 1, 1, 2], [2, 0, 4, 2]]


def _scatter_samples(add):
    def gen(m):
        idx = IDX35_ADD if add else IDX35
        out = [
            Sample(m(3, 5), 1, m.idx(idx), m(3, len(idx[0]))),
            Sample(
                m(3, 4),
                0,
                m.idx([[2, 0, 1, 2], [1, 2, 0, 0]] if not add else [[2, 0, 1, 2], [2, 0, 2, 1]]),
                m(2, 4),
            ),
            Sample(m(3, 5, layout="transposed"), -1, m.idx(idx), m(3, 4, layout="strided")),
            Sample(m(3, 5), 1, m.idx(np.zeros((3, 0), np.int64)), m(3, 0)),
        ]
        if not add:
            out.append(Sample(m(3, 5), 1, m.idx(idx), value=m.scalar(2.0)))
        return out

    return gen


def _getitem_samples(m):
    return [
        Sample(m(3, 4), 1),
        Sample(m(3, 4), (1, 2)),
        Sample(m(3, 4), (-1, slice(1, None))),
        Sample(m(4, 5), slice(1, 3)),
        Sample(m(4, 5), slice(None, None, 2)),
        Sample(m(4, 5), (slice(None), slice(1, None, 2))),
        Sample(m(3, 4), (None, Ellipsis, 1)),
        Sample(m(3, 4), (Ellipsis, None)),
        Sample(m(), ()),
        Sample(m(0, 3), slice(None)),
        Sample(m(4, 3), m.idx([0, 2, 0])),
        Sample(m(3, 4), (slice(None), m.idx([3, 0, 3, 1]))),
        Sample(m(4, 3), m.idx([[0, 1], [1, 3]])),
        Sample(m(3, 4), (m.idx([0, 2, 0]), m.idx([1, 3, 1]))),
        Sample(m(3, 4), m.mask(MASK34)),
        Sample(m(3, 4), m.mask([True, False, True])),
        Sample(m(4, 3, layout="transposed"), (slice(1, 3), m.idx([2, 0]))),
    ]


def _setitem(x, index, value):
    y = x.clone()
    y[index] = value
    return y


def _setitem_ref(x, index, value):
    y = x.copy()
    y[index] = value
    return y


def _setitem_samples(m):
    return [
        Sample(m(4, 5), slice(1, 3), m(2, 5)),
        Sample(m(4, 5), slice(1, 3), m(5)),
        Sample(m(4, 5), 0, m(5)),
        Sample(m(4, 5), (slice(None), 1), m()),
        Sample(m(4, 5), (slice(None), slice(1, None, 2)), m.scalar(0.5)),
        Sample(m(4, 5), m.idx([2, 0]), m(2, 5)),
        Sample(m(4, 5), m.mask(MASK45), m(int(MASK45.sum()))),
        Sample(m(4, 5), m.mask(MASK45), m.scalar(0.5)),
        Sample(m(), (), m()),
        Sample(m(0, 3), slice(None), m.scalar(1.0)),
        Sample(m(5, 4, layout="transposed"), (1, slice(None)), m(4)),
    ]


def _setitem_twice(x, v):
    y = x.exp().clone()  # exp saves its output: write into a copy
    y[0, 1:3] = v
    y[1:, 0] = v[0] * 2
    return y.sin()


def _nonzero_ref(x, as_tuple=False):
    return tuple(np.nonzero(x)) if as_tuple else np.argwhere(x)


def _one_hot_ref(x, num_classes=-1):
    n = int(x.max()) + 1 if num_classes == -1 else num_classes
    return (x[..., None] == np.arange(n)).astype(np.int64)


INDEX = [
    OpInfo(
        "gather",
        ["rumus.gather", "Tensor.gather"],
        _gather_ref,
        lambda m: [
            Sample(m(3, 5), 1, m.idx([[0, 4, 0, 2], [1, 1, 3, 3], [4, 2, 0, 0]])),
            Sample(m(3, 4), 0, m.idx([[2, 0, 1, 2], [0, 0, 2, 1]])),
            Sample(m(3, 4), -1, m.idx(np.zeros((2, 0), np.int64))),
            Sample(m(4, 3, layout="transposed"), 1, m.idx([[0, 2], [1, 1]])),
            Sample(m(), 0, m.idx(0)),
        ],
        dtypes=ALL,
        grads=[
            Row(
                "gather",
                lambda x, i: x.gather(1, i),
                [U(3, 5), I([[0, 4, 0, 2], [1, 1, 3, 3], [4, 2, 0, 0]])],
            ),
            Row(
                "gather_dim0",
                lambda x, i: rumus.gather(x, 0, i),
                [U(3, 4), I([[2, 0, 1, 2], [0, 0, 2, 1]])],
            ),
        ],
        mismatch=False,
        bad=lambda m: [
            ("gather index out of range", lambda: m.t(3, 4).gather(1, rumus.tensor([[4]]))),
            ("gather float index", lambda: m.t(3, 4).gather(1, rumus.tensor([[0.0]]))),
            ("gather index of another rank", lambda: m.t(3, 4).gather(1, rumus.tensor([0]))),
        ],
    ),
    OpInfo(
        "scatter",
        ["rumus.scatter", "Tensor.scatter", "Tensor.scatter_"],
        _scatter_ref(add=False),
        _scatter_samples(add=False),
        dtypes=ALL,
        grads=[
            Row("scatter", lambda x, s, i: x.scatter(1, i, s), [U(3, 5), U(3, 2), I(IDX35)]),
            Row("scatter_value", lambda x, i: x.scatter(1, i, value=2.0), [U(3, 5), I(IDX35)]),
            Row(
                "inplace_scatter_",
                lambda x, s, i: _inplace(x, lambda y: y.scatter_(1, i, s)),
                [U(3, 5), U(3, 2), I(IDX35)],
            ),
        ],
        mismatch=False,
        bad=lambda m: [
            (
                "scatter index out of range",
                lambda: m.t(3, 4).scatter(1, rumus.tensor([[4]]), m.t(1, 1)),
            ),
            ("scatter float index", lambda: m.t(3, 4).scatter(1, rumus.tensor([[0.0]]), m.t(1, 1))),
        ],
    ),
    OpInfo(
        "scatter_add",
        ["rumus.scatter_add", "Tensor.scatter_add", "Tensor.scatter_add_"],
        _scatter_ref(add=True),
        _scatter_samples(add=True),
        dtypes=ALL,
        grads=[
            Row(
                "scatter_add",
                lambda x, s, i: x.scatter_add(1, i, s),
                [U(3, 5), U(3, 4), I(IDX35_ADD)],
            ),
            Row(
                "scatter_add_dim0",
                lambda x, s, i: rumus.scatter_add(x, 0, i, s),
                [U(3, 4), U(2, 4), I([[2, 0, 1, 2], [2, 0, 2, 1]])],
            ),
            Row(
                "inplace_scatter_add_",
                lambda x, s, i: _inplace(x, lambda y: y.scatter_add_(1, i, s)),
                [U(3, 5), U(3, 4), I(IDX35_ADD)],
            ),
        ],
        mismatch=False,
        bad=lambda m: [
            (
                "scatter_add index out of range",
                lambda: m.t(3, 4).scatter_add(0, rumus.tensor([[3]]), m.t(1, 1)),
            ),
        ],
    ),
    OpInfo(
        "index_select",
        ["rumus.index_select", "Tensor.index_select"],
        lambda x, dim, index: np.take(x, index, axis=dim) if x.ndim else x[None][index],
        lambda m: [
            Sample(m(3, 4), 0, m.idx([2, 0, 2])),
            Sample(m(3, 4), 1, m.idx([3, 0, 3, 1])),
            Sample(m(3, 4), -1, m.idx(np.zeros(0, np.int64))),
            Sample(m(4, 3, layout="transposed"), 0, m.idx([1])),
            Sample(m(0, 3), 1, m.idx([2, 2])),
        ],
        dtypes=ALL,
        grads=[
            Row("index_select", lambda x, i: x.index_select(0, i), [U(3, 4), I([2, 0, 2])]),
            Row(
                "index_select_dim1",
                lambda x, i: rumus.index_select(x, 1, i),
                [U(3, 4), I([3, 0, 3, 1])],
            ),
        ],
        mismatch=False,
        bad=lambda m: [
            (
                "index_select index out of range",
                lambda: m.t(3, 4).index_select(0, rumus.tensor([3])),
            ),
            ("index_select 2-d index", lambda: m.t(3, 4).index_select(0, rumus.tensor([[0]]))),
        ],
    ),
    OpInfo(
        "nonzero",
        ["rumus.nonzero", "Tensor.nonzero"],
        _nonzero_ref,
        lambda m: [
            Sample(m(3, 4)),
            Sample(m()),
            Sample(m(0, 3)),
            Sample(m(4, 3, layout="transposed")),
            Sample(m(2, 3), as_tuple=True),
        ],
        dtypes=ALL,
        out=to_int64,
        grad=False,
    ),
    OpInfo(
        "one_hot",
        ["rumus.one_hot", "F.one_hot"],
        _one_hot_ref,
        lambda m: [
            Sample(m.idx([0, 2, 1]), 4),
            Sample(m.idx([[0, 3], [1, 1]])),
            Sample(m.idx(2), num_classes=3),
            Sample(m.idx(np.zeros(0, np.int64)), 2),
        ],
        dtypes=("int64",),
        grad=False,
        bad=lambda m: [
            ("one_hot class out of range", lambda: rumus.one_hot(rumus.tensor([3]), 3)),
            ("one_hot negative class", lambda: rumus.one_hot(rumus.tensor([-1]), 3)),
        ],
    ),
    OpInfo(
        "getitem",
        [("x[index]", lambda x, i: x[i])],
        lambda x, i: np.array(x[i]),
        _getitem_samples,
        dtypes=ALL,
        mismatch=False,
        grads=[
            Row("getitem_int", lambda x: x[1], [U(3, 4)]),
            Row("getitem_int_int", lambda x: x[1, 2], [U(3, 4)]),
            Row("getitem_neg_int", lambda x: x[-1, 1:], [U(3, 4)]),
            Row("getitem_slice", lambda x: x[1:3], [U(4, 5)]),
            Row("getitem_step", lambda x: x[::2], [U(4, 5)]),
            Row("getitem_step_cols", lambda x: x[:, 1::2], [U(4, 5)]),
            Row("getitem_none_ellipsis", lambda x: x[None, ..., 1], [U(3, 4)]),
            Row("getitem_ellipsis_none", lambda x: x[..., None], [U(3, 4)]),
            Row("getitem_int_tensor", lambda x, i: x[i], [U(4, 3), I([0, 2, 0])]),
            Row("getitem_int_tensor_cols", lambda x, i: x[:, i], [U(3, 4), I([3, 0, 3, 1])]),
            Row("getitem_int_tensor_2d", lambda x, i: x[i], [U(4, 3), I([[0, 1], [1, 3]])]),
            Row(
                "getitem_int_tensor_pair",
                lambda x, i, j: x[i, j],
                [U(3, 4), I([0, 2, 0]), I([1, 3, 1])],
            ),
            Row("getitem_bool_mask", lambda x, m: x[m], [U(3, 4), B(MASK34)]),
            Row("getitem_bool_rows", lambda x, m: x[m], [U(3, 4), B([True, False, True])]),
        ],
        bad=lambda m: [
            ("index out of range", lambda: m.t(3, 4)[3]),
            ("too many indices", lambda: m.t(3, 4)[0, 0, 0]),
            ("float index tensor", lambda: m.t(3, 4)[rumus.tensor([0.5])]),
            ("mask of the wrong shape", lambda: m.t(3, 4)[rumus.tensor([True, False])]),
        ],
    ),
    OpInfo(
        "setitem",
        [("y[index] = v", _setitem)],
        _setitem_ref,
        _setitem_samples,
        dtypes=ALL,
        mismatch=False,
        grads=[
            Row("setitem_slice", lambda x, v: _setitem(x, slice(1, 3), v), [U(4, 5), U(2, 5)]),
            Row("setitem_bcast", lambda x, v: _setitem(x, slice(1, 3), v), [U(4, 5), U(5)]),
            Row("setitem_int", lambda x, v: _setitem(x, 0, v), [U(4, 5), U(5)]),
            Row(
                "setitem_col_0d_tensor",
                lambda x, v: _setitem(x, (slice(None), 1), v),
                [U(4, 5), U()],
            ),
            Row(
                "setitem_python_scalar",
                lambda x: _setitem(x, (slice(None), slice(1, None, 2)), 0.5),
                [U(4, 5)],
            ),
            Row(
                "setitem_advanced", lambda x, v, i: _setitem(x, i, v), [U(4, 5), U(2, 5), I([2, 0])]
            ),
            Row(
                "setitem_bool_mask",
                lambda x, v, m: _setitem(x, m, v),
                [U(4, 5), U(int(MASK45.sum())), B(MASK45)],
            ),
            Row("setitem_bool_mask_scalar", lambda x, m: _setitem(x, m, 0.0), [U(4, 5), B(MASK45)]),
            Row("setitem_twice", _setitem_twice, [U(3, 4), U(2)]),
        ],
        bad=lambda m: [
            ("value of the wrong shape", lambda: _setitem(m.t(4, 5), slice(1, 3), m.t(3, 5))),
            ("index out of range", lambda: _setitem(m.t(4, 5), 4, m.t(5))),
        ],
    ),
]


# ------------------------------------------------------------ creation, random, casts, fills

NP_DTYPE = {d: (np.float32 if d == "bfloat16" else np.dtype(d)) for d in ALL}


def _creation(name, ref, samples, dtypes=ALL, **kw):
    """A factory function of ``rumus``; the dtype under test is passed as dtype=."""
    return OpInfo(
        name, [f"rumus.{name}"], ref, samples, dtypes=dtypes, grad=False, dtype_kw=True, **kw
    )


def _size_ref(fill):
    def ref(*size, dtype=None, fill_value=None):
        shape = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
        return np.full(shape, fill if fill_value is None else fill_value)

    return ref


def _size_samples(m):
    return [Sample(2, 3), Sample((3,)), Sample([2, 0]), Sample(()), Sample(4)]


def _check_random(lo=None, hi=None, integral=False, mean=None):
    """Property check of a random op's result: shape, dtype, range, integrality, mean."""

    def check(got, sample, dtype, np_args, np_kwargs):
        shape = _shape_of(sample, np_args, np_kwargs)
        assert tuple(got.shape) == shape, (tuple(got.shape), shape)
        assert got.dtype == getattr(rumus, dtype), (got.dtype, dtype)
        v = to_np(got).astype(np.float64)
        if lo is not None:
            assert (v >= lo).all() and (v < hi).all(), v
        if integral:
            assert (v == np.round(v)).all(), v
        if mean is not None and v.size >= 100:
            assert abs(v.mean() - mean) < 0.3, v.mean()

    return check


def _shape_of(sample, np_args, np_kwargs):
    """The result shape of a random-op sample: its size argument, or its input's shape."""
    if "size" in np_kwargs:
        return tuple(np_kwargs["size"])
    arrays = [a for a in np_args if isinstance(a, np.ndarray)]
    if arrays:
        return arrays[0].shape
    ints = [a for a in np_args if isinstance(a, (tuple, list))]
    if ints:
        return tuple(ints[-1])
    return tuple(a for a in np_args if isinstance(a, int))


def _randint_check(got, sample, dtype, np_args, np_kwargs):
    ints = [a for a in np_args if isinstance(a, int)]
    low, high = (0, ints[0]) if len(ints) == 1 else ints
    _check_random(low, high, integral=True)(got, sample, dtype, np_args, np_kwargs)


def _randperm_check(got, sample, dtype, np_args, np_kwargs):
    n = np_args[0]
    assert tuple(got.shape) == (n,) and got.dtype == getattr(rumus, dtype)
    np.testing.assert_array_equal(np.sort(to_np(got).astype(np.int64)), np.arange(n))


def _empty_check(got, sample, dtype, np_args, np_kwargs):
    shape = np_args[0].shape if np_args and isinstance(np_args[0], np.ndarray) else None
    if shape is None:
        shape = tuple(_size_ref(0)(*np_args).shape)
    assert tuple(got.shape) == shape and got.dtype == getattr(rumus, dtype)


def _bernoulli_check(got, sample, dtype, np_args, np_kwargs):
    v = to_np(got)
    assert got.dtype == getattr(rumus, dtype) and v.shape == np_args[0].shape
    assert np.isin(v, [0, 1]).all(), v
    p = np_args[1] if len(np_args) > 1 else np_kwargs.get("p", 0.5)
    if p in (0.0, 1.0):
        assert (v == p).all()


CAST_TOL = {
    "float64": {},
    "float32": dict(eps=1e-3, atol=1e-3, rtol=1e-3),
    "float16": dict(eps=0.05, atol=0.05, rtol=0.05),
    "bfloat16": dict(eps=0.1, atol=0.1, rtol=0.1),
}


def _cast(name, target):
    return OpInfo(
        name,
        [f"Tensor.{name}"],
        lambda x: x.astype(NP_DTYPE[target]) if target != "bool" else x != 0,
        lambda m: [
            Sample(m(3, 4)),
            Sample(m()),
            Sample(m(0, 2)),
            Sample(m(3, 4, layout="transposed")),
        ],
        dtypes=ALL,
        out=lambda d: target,
        domain=dom(U, lo=0.0, hi=5.0),
        grad=target in FLOATS,
        gpu="float64 is not supported on GPUs (by design)" if target == "float64" else True,
        grads=[
            Row(
                f"cast_{name}",
                lambda x: getattr(x, name)().double(),
                [U(3, 4)],
                # finite differences of a rounding to ``target``: steps well above its spacing
                tol=CAST_TOL[target],
                gpu="the row builds float64 tensors, which GPUs do not have",
            )
        ]
        if target in FLOATS
        else [],
    )


def _to_samples(m):
    out = [Sample(m(3, 4), getattr(rumus, d)).expect(lambda _, d=d: d) for d in ALL]
    return out + [
        Sample(m(3, 4), dtype=rumus.float64).expect(lambda d: "float64"),
        Sample(m(3, 4), "cpu", rumus.int32).expect(lambda d: "int32"),
        Sample(m(3, 4), "cpu"),
        Sample(m(3, 4), m(2, dtype="int64")).expect(lambda d: "int64"),
        Sample(m(), rumus.float32).expect(lambda d: "float32"),
        Sample(m(0, 2), rumus.uint8).expect(lambda d: "uint8"),
        Sample(m(3, 4, layout="transposed"), rumus.float16).expect(lambda d: "float16"),
    ]


def _to_ref(x, *args, dtype=None, **kw):
    target = dtype
    for a in args:
        if isinstance(a, rumus.dtype):
            target = a
        elif isinstance(a, np.ndarray):
            target = getattr(rumus, a.dtype.name)
    if target is None:
        return x.copy()
    name = str(target).split(".")[-1]
    return x != 0 if name == "bool" else x.astype(NP_DTYPE[name])


CREATION = [
    _creation(
        "arange",
        lambda *a, dtype=None, **kw: np.arange(*a, **kw),
        lambda m: (
            [Sample(5), Sample(1, 7, 2), Sample(0, 0), Sample(2, -3, -2)]
            + ([Sample(0.0, 1.0, 0.25), Sample(-1.0, 1.0, 0.3)] if m.floating else [])
            + [
                Sample(5, dtype=None).expect(to_int64),
                Sample(0.0, 1.0, 0.5, dtype=None).expect(lambda d: "float32"),
            ]
        ),
        dtypes=NUMERIC,
    ),
    _creation(
        "linspace",
        lambda start, end, steps, dtype=None: np.linspace(start, end, steps),
        lambda m: (
            [Sample(0.0, 1.0, 5), Sample(-2, 3, 1), Sample(1.0, -1.0, steps=4), Sample(0, 1, 0)]
            + [Sample(0.0, 1.0, 3, dtype=None).expect(lambda d: "float32")]
        ),
        dtypes=NUMERIC,
    ),
    _creation(
        "eye",
        lambda n, m=None, dtype=None: np.eye(n, m),
        lambda m: [
            Sample(3),
            Sample(2, 4),
            Sample(0),
            Sample(3, m=1),
            Sample(2, dtype=None).expect(lambda d: "float32"),
        ],
    ),
    _creation(
        "zeros",
        _size_ref(0),
        lambda m: _size_samples(m) + [Sample(2, dtype=None).expect(lambda d: "float32")],
    ),
    _creation(
        "ones",
        _size_ref(1),
        lambda m: _size_samples(m) + [Sample(2, dtype=None).expect(lambda d: "float32")],
    ),
    _creation(
        "full",
        lambda size, fill_value, dtype=None: np.full(size, fill_value),
        lambda m: [
            Sample((2, 3), m.scalar(1.5)),
            Sample((), m.scalar(2.5)),
            Sample([0, 2], fill_value=m.scalar(1.0)),
            Sample((2,), 3, dtype=None).expect(to_int64),
            Sample((2,), 1.5, dtype=None).expect(lambda d: "float32"),
            Sample((2,), True, dtype=None).expect(to_bool),
        ],
    ),
    _creation(
        "empty",
        None,
        lambda m: _size_samples(m),
        check=_empty_check,
    ),
    OpInfo(
        "zeros_like",
        ["rumus.zeros_like"],
        lambda x, dtype=None: np.zeros(x.shape),
        lambda m: (
            [Sample(m(3, 4)), Sample(m()), Sample(m(0, 2)), Sample(m(3, 4, layout="transposed"))]
            + [Sample(m(2, 3), dtype=rumus.int32).expect(lambda d: "int32")]
        ),
        dtypes=ALL,
        grad=False,
    ),
    OpInfo(
        "ones_like",
        ["rumus.ones_like"],
        lambda x, dtype=None: np.ones(x.shape),
        lambda m: (
            [Sample(m(3, 4)), Sample(m()), Sample(m(0, 2)), Sample(m(3, 4, layout="expanded"))]
            + [Sample(m(2, 3), dtype=rumus.float64).expect(lambda d: "float64")]
        ),
        dtypes=ALL,
        grad=False,
    ),
    OpInfo(
        "full_like",
        ["rumus.full_like"],
        lambda x, v, dtype=None: np.full(x.shape, v),
        lambda m: [
            Sample(m(3, 4), m.scalar(2.5)),
            Sample(m(), m.scalar(1.0)),
            Sample(m(0, 2), m.scalar(1.0)),
            Sample(m(2, 3), 7, dtype=rumus.int64).expect(to_int64),
        ],
        dtypes=ALL,
        grad=False,
    ),
    OpInfo(
        "empty_like",
        ["rumus.empty_like"],
        None,
        lambda m: [Sample(m(3, 4)), Sample(m()), Sample(m(0, 2))],
        dtypes=ALL,
        grad=False,
        check=_empty_check,
    ),
    _creation(
        "rand",
        None,
        lambda m: [Sample(200), Sample(2, 3), Sample((0, 2)), Sample((3,))],
        dtypes=FLOATS,
        check=_check_random(0.0, 1.0, mean=0.5),
    ),
    _creation(
        "randn",
        None,
        lambda m: [Sample(200), Sample(2, 3), Sample((0, 2))],
        dtypes=FLOATS,
        check=_check_random(mean=0.0),
    ),
    OpInfo(
        "rand_like",
        ["rumus.rand_like"],
        None,
        lambda m: [Sample(m(200)), Sample(m(2, 3)), Sample(m(0, 2))],
        check=_check_random(0.0, 1.0, mean=0.5),
        grad=False,
    ),
    OpInfo(
        "randn_like",
        ["rumus.randn_like"],
        None,
        lambda m: [Sample(m(200)), Sample(m(2, 3)), Sample(m(0, 2))],
        check=_check_random(mean=0.0),
        grad=False,
    ),
    _creation(
        "randint",
        None,
        lambda m: [
            Sample(0, 5, (200,)),
            Sample(7, (2, 3)),
            Sample(-3 if m.dtype != "uint8" else 3, 6, size=(4,)),
            Sample(2, (0,)),
        ],
        dtypes=NUMERIC,
        check=_randint_check,
    ),
    _creation(
        "randperm",
        None,
        lambda m: [Sample(5), Sample(1), Sample(0)],
        dtypes=NUMERIC,
        check=_randperm_check,
    ),
    OpInfo(
        "uniform_",
        ["Tensor.uniform_"],
        None,
        lambda m: [Sample(m(200)), Sample(m(2, 3), -2.0, -1.0), Sample(m(0, 2))],
        check=lambda got, s, d, a, k: _check_random(*(a[1:] or (0.0, 1.0)), mean=None)(
            got, s, d, a, k
        ),
        grad=False,
    ),
    OpInfo(
        "normal_",
        ["Tensor.normal_"],
        None,
        lambda m: [Sample(m(200)), Sample(m(200), 3.0, 0.5), Sample(m(0, 2))],
        check=lambda got, s, d, a, k: _check_random(mean=a[1] if len(a) > 1 else 0.0)(
            got, s, d, a, k
        ),
        grad=False,
    ),
    OpInfo(
        "bernoulli_",
        ["Tensor.bernoulli_"],
        None,
        lambda m: [Sample(m(50)), Sample(m(2, 3), 0.0), Sample(m(2, 3), p=1.0), Sample(m(0, 2))],
        dtypes=ALL,
        check=_bernoulli_check,
        grad=False,
    ),
    OpInfo(
        "fill_",
        ["Tensor.fill_"],
        lambda x, v: np.full(x.shape, v),
        lambda m: [
            Sample(m(3, 4), m.scalar(2.5)),
            Sample(m(), m.scalar(1.0)),
            Sample(m(0, 2), m.scalar(1.0)),
            Sample(m(3, 4, layout="transposed"), Arg(np.asarray(m.scalar(1.5)))),
        ],
        dtypes=ALL,
        grads=[
            Row("inplace_fill_", lambda x: _inplace(x, lambda y: y.fill_(2.0)) + x.sum(), [U(3, 4)])
        ],
    ),
    OpInfo(
        "zero_",
        ["Tensor.zero_"],
        np.zeros_like,
        lambda m: [
            Sample(m(3, 4)),
            Sample(m()),
            Sample(m(0, 2)),
            Sample(m(3, 4, layout="strided")),
        ],
        dtypes=ALL,
        grads=[Row("inplace_zero_", lambda x: _inplace(x, lambda y: y.zero_()) * 3 + x, [U(3, 4)])],
    ),
    OpInfo(
        "copy_",
        ["Tensor.copy_"],
        lambda x, src: np.broadcast_to(src, x.shape).astype(x.dtype),
        lambda m: [
            Sample(m(3, 4), m(3, 4)),
            Sample(m(3, 4), m(4)),
            Sample(m(), m()),
            Sample(m(0, 2), m(2)),
            Sample(m(3, 4, layout="transposed"), m(3, 4, layout="strided")),
            Sample(m(2, 3), Arg(np.arange(6.0).reshape(2, 3), "float64")),
        ],
        dtypes=ALL,
        mismatch=True,
        grads=[
            Row(
                "inplace_copy_", lambda x, b: _inplace(x, lambda y: y.copy_(b)) * x, [U(3, 4), U(4)]
            )
        ],
    ),
    OpInfo(
        "to",
        ["Tensor.to"],
        _to_ref,
        _to_samples,
        dtypes=ALL,
        domain=dom(U, lo=0.0, hi=5.0),
        mismatch=False,
        grads=[
            Row(
                "cast_to_f32_output",
                lambda x: x.to(rumus.float32).exp(),
                [U(3, 4)],
                tol=dict(eps=1e-3, atol=1e-3, rtol=1e-3),
            ),
            Row(
                "cast_to_dtype_kw",
                lambda x: x.to(dtype=rumus.float32).to(f64),
                [U(3, 4)],
                tol=dict(eps=1e-3, atol=1e-4, rtol=1e-3),
                gpu="the row builds float64 tensors, which GPUs do not have",
            ),
        ],
    ),
    OpInfo(
        "type",
        ["Tensor.type"],
        _to_ref,
        lambda m: [
            Sample(m(3, 4), getattr(rumus, d)).expect(lambda _, d=d: d)
            for d in ("float64", "int32", "bool")
        ],
        dtypes=ALL,
        domain=dom(U, lo=0.0, hi=5.0),
        grad=False,
    ),
    OpInfo(
        "type_as",
        ["Tensor.type_as"],
        _to_ref,
        lambda m: [
            Sample(m(3, 4), Arg(np.zeros(2), "float64")).expect(lambda d: "float64"),
            Sample(m(3, 4), Arg(np.zeros(2, np.int32), "int32")).expect(lambda d: "int32"),
        ],
        dtypes=ALL,
        domain=dom(U, lo=0.0, hi=5.0),
        mismatch=False,
        grads=[
            Row(
                "cast_type_as",
                lambda x, y: x.type_as(y).double() * 2,
                [U(3, 4), Const(rumus.zeros(1))],
                tol=dict(eps=1e-3, atol=1e-4, rtol=1e-3),
                gpu="the row builds float64 tensors, which GPUs do not have",
            )
        ],
    ),
] + [
    _cast(name, target)
    for name, target in [
        ("float", "float32"),
        ("double", "float64"),
        ("half", "float16"),
        ("bfloat16", "bfloat16"),
        ("int", "int32"),
        ("long", "int64"),
        ("bool", "bool"),
        ("byte", "uint8"),
    ]
]


# ------------------------------------------------------------ composite math (issue 15)
# addmm and friends, lerp, addcmul / addcdiv, hypot, logaddexp, xlogy, logit, nan_to_num,
# isclose / allclose / equal, diff, cross, kron, tensordot.


def _xlogy_ref(x, y):
    x, y = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(y, np.float64))
    with np.errstate(all="ignore"):
        r = x * np.log(y)
    return np.where((x == 0) & ~np.isnan(y), 0.0, r)


def _xlogy_samples(m):
    out = binary_samples(m, dom_b=P)
    if m.floating:  # xlogy(0, y) = 0 for y = 0 and inf too; NaN y gives NaN
        out.append(Sample(Arg(np.zeros(4)), Arg(np.array([0.0, np.inf, np.nan, 2.0]))))
    return out


def _logaddexp_samples(m):
    out = binary_samples(m, scalar=None)
    big = [-np.inf, np.inf, 60000.0, -60000.0, 1.0]
    return out + [Sample(Arg(np.array(big)), Arg(np.array([-np.inf, np.inf, 59999.0, 5.0, 1.0])))]


def _logit_ref(x, eps=None):
    if eps is not None:
        x = np.clip(x, eps, 1 - eps)
    with np.errstate(all="ignore"):
        return np.log(x / (1 - x))


def NANS(*shape):
    """Uniform values with NaNs among them (no infinities)."""

    def gen(rng):
        out = rng.uniform(-2, 2, shape)
        out.reshape(-1)[rng.random(out.size) < 0.4] = np.nan
        return out

    return gen


def _nan_to_num_ref(x, nan=0.0, posinf=None, neginf=None):
    if x.dtype.kind != "f":
        return x.copy()
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _nan_to_num_samples(m):
    # default posinf / neginf (the dtype's finite max / min): tests/test_elementwise.py
    return [
        Sample(m(3, 4)),
        Sample(m()),
        Sample(m(0, 3)),
        Sample(m(3, 4, layout="transposed")),
        Sample(m(4, 2, layout="strided")),
        Sample(m(3, 4, domain=SPECIAL), nan=1.5, posinf=3.0, neginf=-3.0),
        Sample(m(3, 4, domain=SPECIAL), posinf=2.0, neginf=-2.0),
    ]


def _lerp_ref(a, b, w):
    return a + w * (b - a)


def _lerp_samples(m):
    w = functools.partial(m, domain=dom(U, lo=-0.5, hi=1.5))
    return [
        Sample(m(3, 4), m(3, 4), 0.3),
        Sample(m(3, 4), m(4), 0.75),
        Sample(m(3, 4), m(3, 4), w(3, 4)),
        Sample(m(3, 1), m(4), w(3, 4)),
        Sample(m(), m(), 1.0),
        Sample(m(0, 3), m(3), 0.5),
        Sample(m(3, 4, layout="transposed"), m(3, 4, layout="strided"), w(4)),
    ]


def _addc_ref(div):
    def ref(x, a, b, value=1):
        return x + value * (a / b if div else a * b)

    return ref


def _addc_samples(div):
    def gen(m):
        b = functools.partial(m, domain=dom(NZ, lo=0.5) if div else None)
        return [
            Sample(m(3, 4), m(3, 4), b(3, 4)),
            Sample(m(3, 4), m(4), b(3, 1), value=m.scalar(0.5)),
            Sample(m(), m(3, 4), b()),
            Sample(m(3, 1), m(3, 4), b(4)),
            Sample(m(0, 3), m(3), b(0, 3)),
            Sample(m(3, 4, layout="transposed"), m(3, 4, layout="strided"), b(4), value=2),
        ]

    return gen


def _isclose_ref(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    if a.dtype == bool:
        return np.equal(a, b)
    return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _isclose_samples(m):
    """b: a with some entries moved well outside the tolerances (and equal elsewhere)."""
    a = m(3, 4)
    bv = a.values.copy()
    if m.dtype == "bool":
        bv[MASK34] = ~bv[MASK34]
    else:
        bv[MASK34] += 1 if m.dtype in INTS else 0.25
    b = Arg(bv)
    sp = m(3, 4, domain=SPECIAL)
    out = [
        Sample(a, b),
        Sample(a, b, rtol=0.2, atol=0.1),
        Sample(m(3, 4), m(4)),
        Sample(m(), m()),
        Sample(m(0, 3), m(3)),
        Sample(m(3, 4, layout="transposed"), m(3, 4, layout="strided")),
    ]
    if m.floating:
        out += [
            Sample(sp, Arg(sp.values.copy())),
            Sample(sp, Arg(sp.values.copy()), equal_nan=True),
        ]
    return out


def _bool_result(fn, **kw):
    """A variant of an op returning a Python bool, as a 0-d bool tensor on the inputs'
    device (the registry compares tensors)."""

    def run(a, b):
        r = fn(a, b, **kw)
        assert type(r) is bool, f"expected a Python bool, got {type(r)}"
        return rumus.tensor(r, device=a.device)

    return run


def _whole_samples(m):
    a = m(3, 4)
    return [
        Sample(a, Arg(a.values.copy())),
        Sample(m(3, 4), m(3, 4)),
        Sample(m(), m()),
        Sample(m(0, 3), m(0, 3)),
        Sample(m(3, 4, layout="transposed"), m(3, 4, layout="strided")),
    ]


def _diff_ref(x, n=1, dim=-1, prepend=None, append=None):
    kw = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
    return np.diff(x, n=n, axis=dim, **kw)


def _diff_samples(m):
    return [
        Sample(m(3, 4)),
        Sample(m(3, 4), 2, 0),
        Sample(m(5), n=3),
        Sample(m(3, 4), prepend=m(3, 2), append=m(3, 1)),
        Sample(m(2, 3), n=2, dim=0, prepend=m()),
        Sample(m(0, 3), dim=1),
        Sample(m(3, 4, layout="transposed"), dim=0),
        Sample(m(3, 4), n=0),
        Sample(m(3, 2), n=3, dim=1),
    ]


def _cross_ref(a, b, dim=None):
    if dim is None:
        dim = next(i for i, s in enumerate(a.shape) if s == 3)
    return np.cross(a, b, axis=dim)


def _cross_samples(m):
    return [
        Sample(m(4, 3), m(4, 3)),
        Sample(m(2, 1, 3), m(1, 4, 3)),
        Sample(m(3), m(3)),
        Sample(m(0, 3), m(0, 3)),
        Sample(m(4, 3, layout="transposed"), m(4, 3, layout="strided")),
        Sample(m(3, 4), m(3, 4), dim=0),
        Sample(m(3, 3), m(3, 3), dim=-1),
    ]


def _linalg_cross(a, b):
    return rumus.linalg.cross(a, b)


def _kron_samples(m):
    return [
        Sample(m(2, 3), m(3, 2)),
        Sample(m(2), m(3)),
        Sample(m(2, 2), m(3)),
        Sample(m(), m(2)),
        Sample(m(0, 2), m(2, 2)),
        Sample(m(2, 3, layout="transposed"), m(2, 2)),
    ]


def _tensordot_ref(a, b, dims=2):
    return np.tensordot(a, b, axes=dims)


def _tensordot_samples(m):
    return [
        Sample(m(3, 4, 5), m(4, 5, 2)),
        Sample(m(3, 4), m(4, 2), dims=1),
        Sample(m(3, 4, 2), m(4, 3, 5), dims=([1, 0], [0, 1])),
        Sample(m(2), m(3), dims=0),
        Sample(m(0, 3), m(3, 2), dims=1),
        Sample(m(4, 3, layout="transposed"), m(3, 2, layout="strided"), dims=1),
    ]


def _addmm_ref(product):
    def ref(x, a, b, beta=1, alpha=1):
        return beta * x + alpha * product(a, b)

    return ref


def _scaled_product_samples(shapes):
    """(input, a, b) shapes: full, broadcast (with beta and alpha), 0-d input with
    beta=0, empty, non-contiguous."""

    def gen(m):
        (x, a, b), (xb, ab, bb), (ae, be, xe) = shapes
        return [
            Sample(m(*x), m(*a), m(*b)),
            Sample(m(*xb), m(*ab), m(*bb), beta=m.scalar(0.5), alpha=m.scalar(2.5)),
            Sample(m(), m(*a), m(*b), beta=0),
            Sample(m(*xe), m(*ae), m(*be)),
            Sample(m(*x, layout="transposed" if len(x) > 1 else "strided"), m(*a), m(*b)),
            Sample(
                m(*x),
                m(*a, layout="transposed" if len(a) > 1 else "strided"),
                m(*b, layout="strided"),
            ),
        ]

    return gen


MM_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (2e-2, 5e-2)}


def scaled_product(name, product, shapes, grad_specs):
    return OpInfo(
        name,
        [f"rumus.{name}", f"Tensor.{name}", f"Tensor.{name}_"],
        _addmm_ref(product),
        _scaled_product_samples(shapes),
        dtypes=NUMERIC,
        tol=MM_TOL,
        grads=[
            Row(name, lambda x, a, b: getattr(x, name)(a, b, beta=0.5, alpha=2.0), grad_specs),
            Row(
                f"inplace_{name}_",
                lambda x, a, b: _inplace(x, lambda y: getattr(y, f"{name}_")(a, b)),
                grad_specs,
            ),
        ],
    )


COMPOSITE = [
    binary("hypot", np.hypot, dtypes=FLOATS, scalar=None, domain=NZ),
    binary(
        "logaddexp",
        np.logaddexp,
        dtypes=FLOATS,
        inplace=False,
        samples=_logaddexp_samples,
    ),
    binary(
        "logaddexp2",
        np.logaddexp2,
        dtypes=FLOATS,
        inplace=False,
        samples=_logaddexp_samples,
    ),
    binary(
        "xlogy",
        _xlogy_ref,
        out=to_float,
        dom_b=P,
        samples=_xlogy_samples,
        grads=[
            Row("xlogy_scalar_first", lambda y: rumus.xlogy(2.5, y), [P(3, 4)]),
            Row("xlogy_scalar_second", lambda x: rumus.xlogy(x, 1.5), [U(3, 4)]),
            Row("xlogy_zero_x", lambda x, y: rumus.xlogy(x * 0, y), [U(3, 4), P(4)]),
        ],
    ),
    unary(
        "logit",
        _logit_ref,
        domain=dom(AWAY, points=[0.2, 0.8], lo=0.05, hi=0.95),
        kwargs=[dict(eps=0.2)],
    ),
    OpInfo(
        "nan_to_num",
        ["rumus.nan_to_num", "Tensor.nan_to_num", "Tensor.nan_to_num_"],
        _nan_to_num_ref,
        _nan_to_num_samples,
        dtypes=ALL,
        domain=NANS,
        grads=[
            Row("nan_to_num", lambda x: x.nan_to_num(), [U(3, 4)]),
            Row("nan_to_num_kw", lambda x: rumus.nan_to_num(x, nan=1.0, posinf=2.0), [U(3, 4)]),
            Row("inplace_nan_to_num_", lambda x: _inplace(x, lambda y: y.nan_to_num_()), [U(3, 4)]),
        ],
    ),
    OpInfo(
        "lerp",
        ["rumus.lerp", "Tensor.lerp", "Tensor.lerp_"],
        _lerp_ref,
        _lerp_samples,
        grads=[
            Row("lerp_scalar", lambda a, b: a.lerp(b, 0.3), [U(3, 4), U(4)]),
            Row("lerp_scalar_high", lambda a, b: rumus.lerp(a, b, 0.8), [U(3, 4), U(3, 4)]),
            Row("lerp_tensor", lambda a, b, w: a.lerp(b, w), [U(3, 4), U(3, 4), U(4, lo=-0.5)]),
            Row(
                "inplace_lerp_",
                lambda a, b: _inplace(a, lambda y: y.lerp_(b, 0.6)),
                [U(3, 4), U(4)],
            ),
        ],
    ),
    OpInfo(
        "addcmul",
        ["rumus.addcmul", "Tensor.addcmul", "Tensor.addcmul_"],
        _addc_ref(False),
        _addc_samples(False),
        dtypes=NUMERIC,
        grads=[
            Row("addcmul", lambda x, a, b: x.addcmul(a, b, value=0.5), [U(3, 4), U(4), U(3, 1)]),
            Row(
                "inplace_addcmul_",
                lambda x, a, b: _inplace(x, lambda y: y.addcmul_(a, b)),
                [U(3, 4), U(3, 4), U(4)],
            ),
        ],
    ),
    OpInfo(
        "addcdiv",
        ["rumus.addcdiv", "Tensor.addcdiv", "Tensor.addcdiv_"],
        _addc_ref(True),
        _addc_samples(True),
        grads=[
            Row(
                "addcdiv",
                lambda x, a, b: rumus.addcdiv(x, a, b, value=-2.0),
                [U(3, 4), U(4), NZ(3, 1)],
            ),
            Row(
                "inplace_addcdiv_",
                lambda x, a, b: _inplace(x, lambda y: y.addcdiv_(a, b)),
                [U(3, 4), U(3, 4), NZ(4)],
            ),
        ],
    ),
    OpInfo(
        "isclose",
        ["rumus.isclose", "Tensor.isclose"],
        _isclose_ref,
        _isclose_samples,
        dtypes=ALL,
        out=to_bool,
        grad=False,
    ),
    OpInfo(
        "allclose",
        [
            ("rumus.allclose", _bool_result(rumus.allclose)),
            ("Tensor.allclose", _bool_result(rumus.Tensor.allclose)),
        ],
        lambda a, b: np.asarray(bool(np.all(_isclose_ref(a, b)))),
        _whole_samples,
        dtypes=ALL,
        out=to_bool,
        grad=False,
        covers=["rumus.allclose", "Tensor.allclose"],
    ),
    OpInfo(
        "equal",
        [
            ("rumus.equal", _bool_result(rumus.equal)),
            ("Tensor.equal", _bool_result(rumus.Tensor.equal)),
        ],
        lambda a, b: np.asarray(a.shape == b.shape and bool(np.all(a == b))),
        _whole_samples,
        dtypes=ALL,
        out=to_bool,
        grad=False,
        mismatch=False,
        covers=["rumus.equal", "Tensor.equal"],
    ),
    shape_op(
        "diff",
        _diff_ref,
        _diff_samples,
        grads=[
            Row("diff", lambda x: x.diff(), [U(3, 4)]),
            Row(
                "diff_n2_prepend",
                lambda x, p: rumus.diff(x, n=2, dim=0, prepend=p),
                [U(3, 4), U(1, 4)],
            ),
        ],
    ),
    OpInfo(
        "cross",
        ["rumus.cross", "Tensor.cross", ("linalg.cross", _linalg_cross)],
        _cross_ref,
        _cross_samples,
        dtypes=NUMERIC,
        covers=["linalg.cross"],
        grads=[
            Row("cross", lambda a, b: a.cross(b, dim=1), [U(4, 3), U(4, 3)]),
            Row("linalg_cross_bcast", _linalg_cross, [U(2, 1, 3), U(1, 4, 3)]),
        ],
    ),
    OpInfo(
        "kron",
        ["rumus.kron", "Tensor.kron"],
        np.kron,
        _kron_samples,
        dtypes=ALL,
        mismatch=False,
        grads=[Row("kron", lambda a, b: a.kron(b), [U(2, 3), U(2, 2)])],
    ),
    OpInfo(
        "tensordot",
        ["rumus.tensordot"],
        _tensordot_ref,
        _tensordot_samples,
        dtypes=NUMERIC,
        tol=MM_TOL,
        grads=[
            Row(
                "tensordot",
                lambda a, b: rumus.tensordot(a, b, dims=([1, 0], [0, 1])),
                [U(3, 4, 2), U(4, 3, 2)],
            ),
            Row("tensordot_int", lambda a, b: rumus.tensordot(a, b), [U(2, 3, 4), U(3, 4)]),
        ],
    ),
    scaled_product(
        "addmm",
        np.matmul,
        [((3, 2), (3, 4), (4, 2)), ((2,), (3, 4), (4, 2)), ((0, 3), (3, 2), (0, 2))],
        [U(3, 2), U(3, 4), U(4, 2)],
    ),
    scaled_product(
        "addmv",
        np.matmul,
        [((3,), (3, 4), (4,)), ((1,), (3, 4), (4,)), ((0, 3), (3,), (0,))],
        [U(3), U(3, 4), U(4)],
    ),
    scaled_product(
        "baddbmm",
        np.matmul,
        [
            ((2, 3, 2), (2, 3, 4), (2, 4, 2)),
            ((3, 1), (2, 3, 4), (2, 4, 2)),
            ((0, 3, 4), (0, 4, 2), (0, 3, 2)),
        ],
        [U(2, 3, 2), U(2, 3, 4), U(2, 4, 2)],
    ),
    scaled_product(
        "addr",
        np.outer,
        [((3, 2), (3,), (2,)), ((2,), (3,), (2,)), ((0,), (3,), (0, 3))],
        [U(3, 2), U(3), U(2)],
    ),
    scaled_product(
        "addbmm",
        lambda a, b: (a @ b).sum(0),
        [
            ((3, 2), (2, 3, 4), (2, 4, 2)),
            ((2,), (2, 3, 4), (2, 4, 2)),
            ((0, 3, 4), (0, 4, 2), (3, 2)),
        ],
        [U(3, 2), U(2, 3, 4), U(2, 4, 2)],
    ),
]


# ------------------------------------------------------------ nn.functional
# References for the bigger ops live beside their family's tests (test_conv.py, test_pool.py,
# test_functional.py, test_loss.py, test_attention.py) and are imported at the top.

NN_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (3e-2, 3e-2), "float32": (1e-5, 1e-5)}


def nn_op(name, ref, samples, *, inplace=False, dtypes=FLOATS, tol=NN_TOL, bugs=(), extra=(), **kw):
    """A function of rumus.nn.functional (and its inplace=True form), and ``extra`` spellings
    (``"rumus.X"`` where torch's top-level one takes the same arguments)."""
    variants = [f"F.{name}"] + ([f"F.{name}:inplace"] if inplace else []) + list(extra)
    return OpInfo(name, variants, ref, samples, dtypes=dtypes, tol=tol, bugs=list(bugs), **kw)


def nn_unary(name, ref, *, kwargs=(), domain=U, inplace=True, grads=(), **kw):
    """An elementwise function of rumus.nn.functional: the unary samples and a gradcheck row."""
    op = nn_op(
        name,
        floated(ref),
        functools.partial(unary_samples, kwargs=kwargs),
        inplace=inplace,
        domain=domain,
        grads=grads,
        **kw,
    )
    return _default_row(op, [domain(3, 4)])


def _maxpool_ref(
    x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    vals, idx = max_pool_ref(x, kernel_size, stride, padding, dilation, ceil_mode)
    return (vals, idx) if return_indices else vals


def _avgpool_ref(
    x,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    return avg_pool_ref(
        x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    )


def _adaptive_max_ref(x, output_size, return_indices=False):
    vals, idx = adaptive_ref(x, output_size, "max")
    return (vals, idx) if return_indices else vals


def _fold_ref(cols, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """fold is unfold's adjoint: scatter-add every column entry to the pixel unfold read."""
    n, ck, _ = cols.shape
    k = np.prod(kernel_size if isinstance(kernel_size, tuple) else (kernel_size,) * 2)
    c = ck // k
    h, w = output_size if isinstance(output_size, tuple) else (output_size,) * 2
    pos = np.arange(h * w, dtype=np.float64).reshape(1, 1, h, w) + 1  # 0 marks padding
    src = unfold_ref(
        np.broadcast_to(pos, (1, c, h, w)).copy(), kernel_size, dilation, padding, stride
    )[0]
    out = np.zeros((n, c, h * w))
    for ci in range(c):
        rows = slice(ci * k, (ci + 1) * k)
        where = src[rows].astype(np.int64) - 1
        for b in range(n):
            np.add.at(out[b, ci], where[where >= 0], cols[b, rows][where >= 0])
    return out.reshape(n, c, h, w)


def _layer_norm_ref(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    out = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    out = out if weight is None else out * weight
    return out if bias is None else out + bias


def _rms_norm_ref(x, normalized_shape, weight=None, eps=None):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    eps = np.finfo(np.float64).eps if eps is None else eps  # finfo(float32) for float32 input
    out = x / np.sqrt((x * x).mean(axes, keepdims=True) + eps)
    return out if weight is None else out * weight


def _chan(v, ndim):
    return None if v is None else v.reshape((1, -1) + (1,) * (ndim - 2))


def _batch_norm_ref(
    x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5
):
    axes = (0,) + tuple(range(2, x.ndim))
    if training:
        mean, var = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
    else:
        mean, var = _chan(running_mean, x.ndim), _chan(running_var, x.ndim)
    out = (x - mean) / np.sqrt(var + eps)
    out = out if weight is None else out * _chan(weight, x.ndim)
    return out if bias is None else out + _chan(bias, x.ndim)


def _group_norm_ref(x, num_groups, weight=None, bias=None, eps=1e-5):
    n, c = x.shape[:2]
    g = x.reshape(n, num_groups, -1)
    g = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)
    out = g.reshape(x.shape)
    out = out if weight is None else out * _chan(weight, x.ndim)
    return out if bias is None else out + _chan(bias, x.ndim)


def _instance_norm_ref(
    x,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats=True,
    momentum=0.1,
    eps=1e-5,
):
    axes = tuple(range(2, x.ndim))
    out = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    out = out if weight is None else out * _chan(weight, x.ndim)
    return out if bias is None else out + _chan(bias, x.ndim)


def _normalize_ref(x, p=2.0, dim=1, eps=1e-12):
    norm = np.sum(np.abs(x) ** p, axis=dim, keepdims=True) ** (1 / p)
    return x / np.maximum(norm, eps)


def _cosine_similarity_ref(x1, x2, dim=1, eps=1e-8):
    x1, x2 = np.broadcast_arrays(x1, x2)
    n1 = np.maximum(np.sqrt((x1 * x1).sum(dim)), eps)
    n2 = np.maximum(np.sqrt((x2 * x2).sum(dim)), eps)
    return (x1 * x2).sum(dim) / (n1 * n2)


def _pairwise_distance_ref(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    d = np.abs(x1 - x2 + eps)
    return np.sum(d**p, axis=-1, keepdims=keepdim) ** (1 / p)


def _embedding_ref(idx, weight, padding_idx=None, **kw):
    return weight[idx]


def _glu_ref(x, dim=-1):
    a, b = np.split(x, 2, axis=dim)
    return a * np_sigmoid(b)


def _prelu_ref(x, weight):
    w = weight.reshape((-1,) + (1,) * (x.ndim - 2)) if x.ndim >= 2 and weight.size > 1 else weight
    return np.where(x >= 0, x, w * x)


def _pixel_shuffle_ref(x, r):
    *b, c, h, w = x.shape
    y = x.reshape(*b, c // (r * r), r, r, h, w)
    y = np.moveaxis(y, (-4, -3), (-3, -1))  # (..., c', h, r, w, r)
    return y.reshape(*b, c // (r * r), h * r, w * r)


def _pixel_unshuffle_ref(x, r):
    *b, c, h, w = x.shape
    y = x.reshape(*b, c, h // r, r, w // r, r)
    y = np.moveaxis(y, (-3, -1), (-4, -3))  # (..., c, r, r, h', w')
    return y.reshape(*b, c * r * r, h // r, w // r)


def _interp_ref(x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate_ref(x, size, scale_factor, mode, bool(align_corners))


def _sdpa_ref(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    return attention_ref(q, k, v, attn_mask, is_causal, scale)[0]


def _reduce_loss(loss, reduction="mean"):
    if reduction == "mean":
        return np.asarray(loss.mean())
    return np.asarray(loss.sum()) if reduction == "sum" else loss


def _pointwise_loss(fn):
    def ref(x, y, reduction="mean", weight=None, **kw):
        loss = fn(x - y, **kw)
        return _reduce_loss(loss if weight is None else loss * weight, reduction)

    return ref


def _huber(d, delta=1.0):
    a = np.abs(d)
    return np.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))


def _smooth_l1(d, beta=1.0):
    return _huber(d, beta) / beta if beta else np.abs(d)


def _loss_samples(m, extra=()):
    out = [
        Sample(m(3, 4), m(3, 4)),
        Sample(m(3, 4), m(3, 4), reduction="sum"),
        Sample(m(3, 4), m(3, 4), reduction="none"),
        Sample(m(), m()),
        Sample(m(4, 3, layout="transposed"), m(4, 3, layout="strided")),
        Sample(m(0, 2), m(0, 2), reduction="sum"),
    ]
    return out + [Sample(m(3, 4), m(3, 4), **kw) for kw in extra]


def _nll_ref(x, target, weight=None, ignore_index=-100, reduction="mean"):
    c = x.shape[1] if x.ndim > 1 else x.shape[0]
    w = np.ones(c) if weight is None else weight
    cls = np.moveaxis(x, 1, -1) if x.ndim > 1 else x
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    wt = w[safe] * valid
    loss = -np.take_along_axis(cls, safe[..., None], -1)[..., 0] * wt
    if reduction == "mean":
        return np.asarray(loss.sum() / wt.sum())
    return _reduce_loss(loss, reduction)


def _margin_ranking_ref(x1, x2, y, margin=0.0, reduction="mean"):
    return _reduce_loss(np.maximum(-y * (x1 - x2) + margin, 0), reduction)


def _cos_emb_ref(x1, x2, y, margin=0.0, reduction="mean"):
    if x1.dtype.kind in "iub":  # PyTorch computes the cosine of integer inputs in float
        x1, x2 = x1.astype(np.float64), x2.astype(np.float64)
    return _reduce_loss(cos_emb_ref(x1, x2, y, margin), reduction)


def _cos_emb_samples(m):
    def y(v):  # a uint8 target cannot hold the label -1: it is int64 there
        return Arg(np.array(v), "int64" if m.dtype == "uint8" else None)

    return [
        Sample(m(4, 3), m(4, 3), y([1.0, -1.0, -1.0, 1.0]), margin=0.1),
        Sample(m(4, 3), m(4, 3), y([1, -1, 1, -1]), reduction="none"),
        Sample(m(3), m(3), y(-1.0), 0.2, reduction="sum"),
    ]


def _kl_ref(x, t, reduction="mean", log_target=False):
    loss = kl_ref(x, t, log_target)
    if reduction == "batchmean":
        return np.asarray(loss.sum() / x.shape[0])
    return _reduce_loss(loss, reduction)


def _bce_ref(p, t, weight=None, reduction="mean"):
    return _reduce_loss(bce_ref(p, t, weight), reduction)


def _bce_logits_ref(x, t, weight=None, reduction="mean", pos_weight=None):
    return _reduce_loss(bce_logits_ref(x, t, weight, pos_weight), reduction)


def _dropout_check(got, sample, dtype, np_args, np_kwargs):
    """Every element is dropped (0) or kept and scaled by 1 / (1 - p); p=0 and eval keep all,
    p=1 drops all; the channel dropouts drop whole channels."""
    x = np_args[0]
    p = np_args[1] if len(np_args) > 1 else np_kwargs.get("p", 0.5)
    training = np_kwargs.get("training", True)
    v = to_np(got).astype(np.float64)
    assert got.dtype == getattr(rumus, dtype) and v.shape == x.shape
    rtol, atol = TOL[dtype]
    if not training or p == 0:
        np.testing.assert_allclose(v, x, rtol=rtol, atol=atol)
        return
    if p == 1:
        assert (v == 0).all()
        return
    kept = v != 0
    np.testing.assert_allclose(v[kept], x[kept] / (1 - p), rtol=rtol, atol=atol)


def _dropout_samples(m):
    return [
        Sample(m(4, 5)),
        Sample(m(4, 5), 0.25),
        Sample(m(4, 5), p=0.0),
        Sample(m(4, 5), p=1.0),
        Sample(m(4, 5), 0.5, training=False),
        Sample(m(0, 3)),
        Sample(m(5, 4, layout="transposed"), 0.5),
    ]


def _channel_dropout_samples(nd):
    def gen(m):
        shape = (2, 3, 4) if nd == 1 else (2, 3, 2, 2)
        return [
            Sample(m(*shape)),
            Sample(m(*shape), 0.3),
            Sample(m(*shape), p=1.0),
            Sample(m(*shape), training=False),
            Sample(m(*shape, layout="transposed"), 0.5),
        ] + ([Sample(m(*shape[1:]), 0.5)] if nd == 1 else [])  # dropout2d warns on 3-d input

    return gen


def _channel_dropout_check(nd):
    def check(got, sample, dtype, np_args, np_kwargs):
        _dropout_check(got, sample, dtype, np_args, np_kwargs)
        v = to_np(got).astype(np.float64)
        x = np_args[0]
        kept = (v != 0) | (x == 0)
        per_channel = kept.reshape(kept.shape[: kept.ndim - nd] + (-1,))
        assert (per_channel.all(-1) | ~per_channel.any(-1)).all(), "a channel kept in part"

    return check


def _dropout_seeded(x, fn, **kw):
    rumus.manual_seed(0)  # the same mask on every evaluation
    return fn(x, **kw)


def _bn_train(x, w, b):
    rm, rv = rumus.zeros(3, dtype=f64), rumus.ones(3, dtype=f64)
    return F.batch_norm(x, rm, rv, w, b, training=True, eps=1e-3)


def _ranking_inputs(rng):
    """input1, input2 with |input1 - input2| >= 0.3: the margin-0.2 hinge stays off its kink."""
    a = rng.uniform(-1, 1, 6)
    d = rng.uniform(0.3, 1.0, 6) * rng.choice([-1.0, 1.0], 6)
    return [a + d, a, Const(np.array([1.0, -1.0, 1.0, 1.0, -1.0, -1.0]))]


def _cos_emb_inputs(rng):
    x1, x2 = rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (4, 3))
    cos = (x1 * x2).sum(1) / np.sqrt((x1 * x1).sum(1) * (x2 * x2).sum(1))
    x2[np.abs(cos - 0.1) < 0.1] *= -1  # cos away from the margin 0.1 (sign flip moves it to -cos)
    return [x1, x2, Const(np.array([1.0, -1.0, -1.0, 1.0]))]


def _conv_samples(nd):
    def gen(m):
        sp = (7,) if nd == 1 else (4, 3)
        k = (2,) if nd == 1 else (3, 2)
        out = [
            Sample(m(2, 2, *sp), m(3, 2, *k), m(3)),
            Sample(
                m(1, 4, *sp),
                m(4, 2, *k),
                stride=2,
                padding=1,
                dilation=(2 if nd == 1 else (1, 2)),
                groups=2,
            ),
            Sample(m(1, 2, *sp), m(3, 2, *k), padding="same"),
            Sample(m(1, 2, *sp), m(3, 2, *k), None, 1, "valid"),
            Sample(m(0, 2, *sp), m(3, 2, *k)),
            Sample(m(2, 1, *sp, layout="transposed"), m(2, 1, *k, layout="strided")),
        ]
        return out

    return gen


def _conv_unbatched(nd):
    def ref(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1):
        kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
        if x.ndim == nd + 1:
            return conv_ref(x[None], w, bias, **kw)[0]
        return conv_ref(x, w, bias, **kw)

    return ref


def _convt_samples(nd):
    def gen(m):
        sp = (4,) if nd == 1 else (2, 3)
        k = (3,) if nd == 1 else (2, 2)
        return [
            Sample(m(1, 2, *sp), m(2, 3, *k), m(3)),
            Sample(m(1, 4, *sp), m(4, 1, *k), stride=2, padding=1, output_padding=1, groups=2),
            Sample(m(2, 2, *sp), m(2, 1, *k), dilation=2),
            Sample(m(0, 2, *sp), m(2, 3, *k)),
            Sample(m(1, 2, *sp, layout="transposed"), m(2, 3, *k)),
        ]

    return gen


def _pool_samples(nd, kinds):
    def gen(m):
        shape = (1, 2, 7) if nd == 1 else (1, 2, 5, 4)
        out = [Sample(m(*shape, domain=DISTINCT), *a, **k) for a, k in kinds]
        out.append(Sample(m(*shape, domain=DISTINCT, layout="transposed"), *kinds[0][0]))
        out.append(Sample(m(0, *shape[1:], domain=DISTINCT), *kinds[0][0]))
        return out

    return gen


def _unbatched_pool(ref):
    """Adds an unbatched (C, ...) input to a pooling reference that takes (N, C, ...)."""

    def fn(x, *a, nd, **k):
        if x.ndim == nd + 1:
            out = ref(x[None], *a, **k)
            return tuple(o[0] for o in out) if isinstance(out, tuple) else out[0]
        return ref(x, *a, **k)

    return fn


def _pair(d):
    return (d, "int64")


NN = [
    nn_op(
        "linear",
        lambda input, weight, bias=None: input @ weight.T + (0 if bias is None else bias),
        lambda m: [
            Sample(m(2, 3), m(4, 3), m(4)),
            Sample(m(3), m(2, 3)),
            Sample(m(2, 2, 3), m(4, 3), bias=m(4)),
            Sample(m(0, 3), m(4, 3), m(4)),
            Sample(m(3, 2, layout="transposed"), m(3, 2, layout="transposed")),
        ],
        dtypes=NUMERIC,
        grads=[
            Row("F_linear", lambda x, w, b: F.linear(x, w, b), [U(2, 3), U(4, 3), U(4)]),
            Row("F_linear_1d_nobias", lambda x, w: F.linear(x, w), [U(3), U(2, 3)]),
        ],
    ),
    nn_op(
        "bilinear",
        lambda a, b, w, bias=None: (
            np.einsum("...i,oij,...j->...o", a, w, b) + (0 if bias is None else bias)
        ),
        lambda m: [
            Sample(m(2, 3), m(2, 2), m(4, 3, 2), m(4)),
            Sample(m(3), m(2), m(1, 3, 2)),
            Sample(m(0, 3), m(0, 2), m(4, 3, 2), m(4)),
        ],
        grads=[
            Row(
                "F_bilinear",
                lambda a, b, w, c: F.bilinear(a, b, w, c),
                [U(2, 3), U(2, 2), U(4, 3, 2), U(4)],
            )
        ],
        dtypes=FLOATS + INTS,
        extra=["rumus.bilinear"],
    ),
    nn_op(
        "conv1d",
        _conv_unbatched(1),
        _conv_samples(1),
        grads=[
            Row(
                "F_conv1d",
                lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2),
                [U(2, 2, 7), U(3, 2, 2), U(3)],
            )
        ],
        extra=["rumus.conv1d"],
    ),
    nn_op(
        "conv2d",
        _conv_unbatched(2),
        _conv_samples(2),
        grads=[
            Row(
                "F_conv2d",
                lambda x, w, b: F.conv2d(x, w, b, padding=1),
                [U(1, 2, 4, 3), U(2, 2, 3, 2), U(2)],
            ),
            Row(
                "F_conv2d_stride_groups",
                lambda x, w: F.conv2d(x, w, stride=(2, 1), dilation=(1, 2), groups=2),
                [U(1, 4, 5, 5), U(4, 2, 2, 2)],
            ),
            Row(
                "F_conv2d_same",
                lambda x, w: F.conv2d(x, w, padding="same"),
                [U(1, 1, 4, 4), U(2, 1, 2, 3)],
            ),
        ],
        extra=["rumus.conv2d"],
    ),
    nn_op(
        "conv_transpose1d",
        conv_transpose_ref,
        _convt_samples(1),
        grads=[
            Row(
                "F_conv_transpose1d",
                lambda x, w, b: F.conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1),
                [U(1, 2, 4), U(2, 3, 3), U(3)],
            )
        ],
        extra=["rumus.conv_transpose1d"],
    ),
    nn_op(
        "conv_transpose2d",
        conv_transpose_ref,
        _convt_samples(2),
        grads=[
            Row(
                "F_conv_transpose2d",
                lambda x, w: F.conv_transpose2d(x, w, stride=2, output_padding=1, groups=2),
                [U(1, 4, 2, 3), U(4, 1, 2, 2)],
            )
        ],
        extra=["rumus.conv_transpose2d"],
    ),
    nn_op(
        "unfold",
        lambda x, *a, **k: (
            unfold_ref(x, *a, **k)
            if len(x)
            else unfold_ref(np.zeros((1,) + x.shape[1:]), *a, **k)[:0]
        ),
        lambda m: [
            Sample(m(2, 3, 5, 4), 2),
            Sample(m(1, 2, 6, 5), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
            Sample(m(0, 2, 3, 3), 2),
            Sample(m(1, 2, 4, 3, layout="transposed"), kernel_size=3, padding=1),
        ],
        dtypes=ALL,
        grads=[
            Row(
                "F_unfold",
                lambda x: F.unfold(x, (2, 3), padding=1, stride=(2, 1)),
                [U(1, 2, 3, 4)],
            )
        ],
    ),
    nn_op(
        "fold",
        _fold_ref,
        lambda m: [
            Sample(m(1, 8, 6), (3, 4), 2),
            Sample(m(2, 4, 15), (4, 3), (2, 1), padding=(1, 0), stride=(1, 1)),
            Sample(m(1, 2, 4), (3, 3), 1, dilation=1, padding=0, stride=2),
            Sample(m(0, 4, 4), (3, 3), 2),
        ],
        dtypes=ALL,
        grads=[Row("F_fold", lambda x: F.fold(x, (3, 4), 2), [U(1, 8, 6)])],
    ),
    nn_op(
        "max_pool1d",
        functools.partial(_unbatched_pool(_maxpool_ref), nd=1),
        _pool_samples(1, [((3, 2, 1), {}), ((2,), dict(ceil_mode=True)), ((3,), dict(dilation=2))]),
        grads=[Row("F_max_pool1d", lambda x: F.max_pool1d(x, 3, 2, 1), [DISTINCT(1, 2, 7)])],
        extra=["rumus.max_pool1d"],
    ),
    nn_op(
        "max_pool2d",
        functools.partial(_unbatched_pool(_maxpool_ref), nd=2),
        lambda m: (
            _pool_samples(
                2,
                [((2,), {}), ((2, 2, 1, (1, 2), True), {}), ((3,), dict(stride=1, padding=1))],
            )(m)
            + [
                Sample(m(1, 2, 4, 4, domain=DISTINCT), 2, return_indices=True).expect(_pair),
                Sample(m(2, 4, 4, domain=DISTINCT), 2),
            ]
        ),
        grads=[
            Row("F_max_pool2d", lambda x: F.max_pool2d(x, 2), [DISTINCT(1, 2, 4, 4)]),
            Row(
                "F_max_pool2d_ceil_dilation",
                lambda x: F.max_pool2d(x, 2, 2, 1, (1, 2), True),
                [DISTINCT(1, 1, 5, 6)],
            ),
        ],
    ),
    nn_op(
        "avg_pool1d",
        functools.partial(_unbatched_pool(_avgpool_ref), nd=1),
        _pool_samples(
            1, [((3, 2, 1), dict(count_include_pad=False)), ((2,), {}), ((3, 2, 1, True), {})]
        ),
        grads=[
            Row(
                "F_avg_pool1d",
                lambda x: F.avg_pool1d(x, 3, 2, 1, count_include_pad=False),
                [U(1, 2, 7)],
            )
        ],
        extra=["rumus.avg_pool1d"],
    ),
    nn_op(
        "avg_pool2d",
        functools.partial(_unbatched_pool(_avgpool_ref), nd=2),
        _pool_samples(2, [((2,), {}), ((3, 2, 1, True, True, 4), {}), ((2, 1), dict(padding=1))]),
        grads=[
            Row("F_avg_pool2d", lambda x: F.avg_pool2d(x, 2), [U(1, 2, 4, 4)]),
            Row(
                "F_avg_pool2d_ceil_divisor",
                lambda x: F.avg_pool2d(x, 3, 2, 1, True, True, 4),
                [U(1, 1, 5, 4)],
            ),
        ],
    ),
    nn_op(
        "adaptive_avg_pool1d",
        functools.partial(_unbatched_pool(lambda x, s: adaptive_ref(x, s, "avg")), nd=1),
        _pool_samples(1, [((3,), {}), ((7,), {}), ((2,), {})]),
        grads=[Row("F_adaptive_avg_pool1d", lambda x: F.adaptive_avg_pool1d(x, 3), [U(1, 2, 5)])],
        extra=["rumus.adaptive_avg_pool1d"],
    ),
    nn_op(
        "adaptive_avg_pool2d",
        functools.partial(_unbatched_pool(lambda x, s: adaptive_ref(x, s, "avg")), nd=2),
        _pool_samples(2, [(((2, 3),), {}), ((1,), {}), (((None, 3),), {})]),
        grads=[
            Row(
                "F_adaptive_avg_pool2d",
                lambda x: F.adaptive_avg_pool2d(x, (2, 3)),
                [U(1, 2, 5, 4)],
            )
        ],
    ),
    nn_op(
        "adaptive_max_pool1d",
        functools.partial(_unbatched_pool(_adaptive_max_ref), nd=1),
        lambda m: (
            _pool_samples(1, [((3,), {}), ((2,), {})])(m)
            + [Sample(m(1, 2, 5, domain=DISTINCT), 2, return_indices=True).expect(_pair)]
        ),
        grads=[
            Row("F_adaptive_max_pool1d", lambda x: F.adaptive_max_pool1d(x, 3), [DISTINCT(1, 2, 5)])
        ],
    ),
    nn_op(
        "adaptive_max_pool2d",
        functools.partial(_unbatched_pool(_adaptive_max_ref), nd=2),
        lambda m: (
            _pool_samples(2, [(((2, 3),), {}), ((1,), {})])(m)
            + [Sample(m(1, 2, 5, 4, domain=DISTINCT), 2, return_indices=True).expect(_pair)]
        ),
        grads=[
            Row(
                "F_adaptive_max_pool2d",
                lambda x: F.adaptive_max_pool2d(x, (2, 3)),
                [DISTINCT(1, 2, 5, 4)],
            )
        ],
    ),
    nn_op(
        "layer_norm",
        _layer_norm_ref,
        lambda m: [
            Sample(m(3, 4), (4,), m(4), m(4)),
            Sample(m(2, 2, 3), (2, 3), eps=1e-3),
            Sample(m(4), [4], weight=m(4)),
            Sample(m(0, 4), (4,)),
            Sample(m(4, 3, layout="transposed"), (3,), m(3, layout="strided"), m(3)),
        ],
        grads=[
            Row(
                "F_layer_norm",
                lambda x, w, b: F.layer_norm(x, (4,), w, b),
                [U(3, 4), U(4), U(4)],
            ),
            Row("F_layer_norm_2d_shape", lambda x: F.layer_norm(x, (2, 3), eps=1e-3), [U(2, 2, 3)]),
        ],
        tol={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2), "float32": (1e-4, 1e-5)},
        extra=["rumus.layer_norm"],
    ),
    nn_op(
        "rms_norm",
        _rms_norm_ref,
        lambda m: [
            Sample(m(3, 4), (4,), m(4)),
            Sample(m(2, 2, 3), (2, 3), eps=1e-3),
            Sample(m(0, 4), [4]),
            Sample(m(4, 3, layout="transposed"), (3,)),
        ],
        grads=[Row("F_rms_norm", lambda x, w: F.rms_norm(x, (4,), w), [U(3, 4), U(4)])],
        tol={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2), "float32": (1e-4, 1e-5)},
        extra=["rumus.rms_norm"],
    ),
    nn_op(
        "batch_norm",
        _batch_norm_ref,
        lambda m: [
            Sample(m(4, 3), None, None, m(3), m(3), training=True),
            Sample(m(2, 2, 2, 2), None, None, training=True, eps=1e-3),
            Sample(m(2, 3, 2), m(3), m(3, domain=P), m(3), m(3)),
            Sample(m(3, 2, layout="transposed"), m(2), m(2, domain=P)),
        ],
        grads=[
            Row(
                "F_batch_norm_train",
                _bn_train,
                [U(4, 3), U(3), U(3)],
                gpu="the row builds float64 tensors, which GPUs do not have",
            ),
            Row(
                "F_batch_norm_train_4d",
                lambda x: F.batch_norm(x, None, None, training=True),
                [U(2, 2, 2, 2)],
            ),
            Row(
                "F_batch_norm_eval",
                lambda x, w, b: F.batch_norm(
                    x,
                    rumus.tensor([0.1, -0.2, 0.3], dtype=f64),
                    rumus.tensor([1.5, 0.5, 2.0], dtype=f64),
                    w,
                    b,
                ),
                [U(2, 3, 2), U(3), U(3)],
                gpu="the row builds float64 tensors, which GPUs do not have",
            ),
        ],
        tol={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2), "float32": (1e-4, 1e-5)},
        mismatch=False,
    ),
    nn_op(
        "group_norm",
        _group_norm_ref,
        lambda m: [
            Sample(m(2, 4, 2), 2, m(4), m(4)),
            Sample(m(1, 6, 2, 2), 3, eps=1e-3),
            Sample(m(3, 2, 3, layout="expanded"), 1),
        ],
        grads=[
            Row(
                "F_group_norm",
                lambda x, w, b: F.group_norm(x, 2, w, b),
                [U(2, 4, 2), U(4), U(4)],
            )
        ],
        tol={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2), "float32": (1e-4, 1e-5)},
        extra=["rumus.group_norm"],
    ),
    nn_op(
        "instance_norm",
        _instance_norm_ref,
        lambda m: [
            Sample(m(2, 2, 3), weight=m(2)),
            Sample(m(1, 3, 2, 2), bias=m(3), eps=1e-3),
            Sample(m(2, 3, 4, layout="transposed")),
        ],
        grads=[
            Row("F_instance_norm", lambda x, w: F.instance_norm(x, weight=w), [U(2, 2, 3), U(2)])
        ],
        tol={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2), "float32": (1e-4, 1e-5)},
    ),
    nn_unary(
        "relu6",
        lambda x: np.clip(x, 0, 6),
        domain=dom(AWAY, points=[0.0, 6.0], lo=-2, hi=8),
        dtypes=FLOATS + INTS,
    ),
    nn_unary(
        "hardtanh",
        lambda x, min_val=-1.0, max_val=1.0: np.clip(x, min_val, max_val),
        kwargs=[dict(min_val=-0.5, max_val=1.0)],
        domain=dom(AWAY, points=[-1.0, 1.0]),
        grads=[
            Row("F_hardtanh", lambda x: F.hardtanh(x, -0.5, 1.0), [AWAY(3, 4, points=[-0.5, 1.0])])
        ],
        dtypes=FLOATS + INTS,
    ),
    nn_unary(
        "selu",
        lambda x: 1.0507009873554805 * np_elu(x, 1.6732632423543772),
        domain=NZ,
        extra=["rumus.selu"],
    ),
    nn_unary(
        "celu",
        lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0) / alpha)),
        kwargs=[dict(alpha=0.7)],
        domain=NZ,
        grads=[Row("F_celu", lambda x: F.celu(x, 0.7), [NZ(3, 4)])],
        extra=["rumus.celu"],
    ),
    nn_unary(
        "hardsigmoid",
        lambda x: np.clip(x / 6 + 0.5, 0, 1),
        domain=dom(AWAY, points=[-3.0, 3.0], lo=-4, hi=4),
    ),
    nn_unary(
        "hardswish",
        lambda x: x * np.clip(x + 3, 0, 6) / 6,
        domain=dom(AWAY, points=[-3.0, 3.0], lo=-4, hi=4),
    ),
    nn_unary(
        "logsigmoid",
        lambda x: -np.logaddexp(0, -x),
        inplace=False,
        domain=dom(U, lo=-4, hi=4),
    ),
    nn_unary(
        "softsign",
        lambda x: x / (1 + np.abs(x)),
        inplace=False,
        domain=NZ,
        dtypes=FLOATS + INTS,
        out=to_float,
    ),
    nn_op(
        "threshold",
        floated(lambda x, threshold, value: np.where(x > threshold, x, value)),
        lambda m: [
            Sample(m(3, 4), 0.5, -1.0),
            Sample(m(), 0.5, 2.0),
            Sample(m(0, 3), 0.5, 2.0),
            Sample(m(4, 3, layout="transposed"), threshold=-0.5, value=0.0),
        ],
        inplace=True,
        domain=dom(AWAY, points=[0.5, -0.5]),
        grads=[Row("F_threshold", lambda x: F.threshold(x, 0.5, -1.0), [AWAY(3, 4, points=[0.5])])],
        dtypes=FLOATS + ("int64", "int32"),  # uint8: PyTorch raises, -1.0 overflows it
        extra=["rumus.threshold"],
    ),
    nn_op(
        "glu",
        _glu_ref,
        lambda m: [
            Sample(m(2, 4)),
            Sample(m(4, 3), 0),
            Sample(m(2, 3, 2), dim=-1),
            Sample(m(0, 2)),
            Sample(m(4, 2, layout="transposed"), dim=1),
        ],
        grads=[Row("F_glu", lambda x: F.glu(x, 1), [U(2, 4)])],
    ),
    nn_op(
        "prelu",
        _prelu_ref,
        lambda m: [
            Sample(m(2, 3, 2), m(3)),
            Sample(m(3, 4), m(1)),
            Sample(m(4), m(1)),
            Sample(m(0, 3), m(3)),
            Sample(m(3, 4, layout="transposed"), m(4)),
        ],
        domain=NZ,
        grads=[Row("F_prelu", lambda x, w: F.prelu(x, w), [NZ(2, 3, 2), U(3)])],
        extra=["rumus.prelu"],
    ),
    nn_op(
        "normalize",
        _normalize_ref,
        lambda m: [
            Sample(m(3, 4)),
            Sample(m(3, 4), p=1.0, dim=0),
            Sample(m(2, 3, 2), 3.0, -1),
            Sample(m(0, 3), dim=1),
            Sample(m(4, 3, layout="transposed"), eps=0.5),
        ],
        grads=[
            Row("F_normalize", lambda x: F.normalize(x, dim=1), [U(3, 4)]),
            Row("F_normalize_p1", lambda x: F.normalize(x, p=1.0, dim=0), [NZ(3, 4)]),
        ],
    ),
    nn_op(
        "cosine_similarity",
        _cosine_similarity_ref,
        lambda m: [
            Sample(m(3, 4), m(3, 4)),
            Sample(m(3, 4), m(4), dim=-1),
            Sample(m(2, 3), m(2, 3), 0, 1e-3),
            Sample(m(0, 3), m(0, 3), dim=1),
        ],
        grads=[
            Row(
                "F_cosine_similarity",
                lambda a, b: F.cosine_similarity(a, b, dim=-1),
                [U(3, 4), U(4)],
            )
        ],
    ),
    nn_op(
        "pairwise_distance",
        _pairwise_distance_ref,
        lambda m: [
            Sample(m(3, 4), m(3, 4)),
            Sample(m(3, 4), m(4), p=1.0),
            Sample(m(3, 4), m(3, 4), 3.0, keepdim=True),
            Sample(m(0, 3), m(0, 3)),
        ],
        grads=[
            Row("F_pairwise_distance", lambda a, b: F.pairwise_distance(a, b), [U(3, 4), U(3, 4)])
        ],
        dtypes=FLOATS + INTS,
        out=to_float,
    ),
    nn_op(
        "embedding",
        _embedding_ref,
        lambda m: [
            Sample(m.idx([[1, 4, 1], [0, 2, 4]]), m(5, 3)),
            Sample(m.idx(3), m(5, 2)),
            Sample(m.idx([0, 1]), m(5, 3), padding_idx=1),
            Sample(m.idx(np.zeros(0, np.int64)), m(5, 3)),
            Sample(m.idx([2, 0]), m(3, 5, layout="transposed")),
        ],
        dtypes=ALL,
        mismatch=False,
        grads=[
            Row(
                "F_embedding", lambda w, i: F.embedding(i, w), [U(5, 3), I([[1, 4, 1], [0, 2, 4]])]
            ),
            # the padding row's values reach the output but get no gradient: compare elsewhere
            Row(
                "F_embedding_padding_idx",
                lambda w, i: F.embedding(i, w, padding_idx=1) * (i != 1).unsqueeze(-1),
                [U(5, 3), I([[1, 4, 1], [0, 2, 4]])],
            ),
        ],
        bad=lambda m: [
            ("embedding index out of range", lambda: F.embedding(rumus.tensor([5]), m.t(5, 3))),
            ("embedding float index", lambda: F.embedding(rumus.tensor([0.0]), m.t(5, 3))),
        ],
    ),
    nn_op(
        "dropout",
        None,
        _dropout_samples,
        inplace=True,
        check=_dropout_check,
        grads=[
            Row(
                "F_dropout",
                lambda x: _dropout_seeded(x, F.dropout, p=0.4),
                [U(4, 5)],
                gpu="the GPU draws its own random numbers (as PyTorch's CUDA does); GPU dropout "
                "is checked in test_gpu.py",
            )
        ],
    ),
    nn_op(
        "dropout1d",
        None,
        _channel_dropout_samples(1),
        inplace=True,
        check=_channel_dropout_check(1),
        grads=[
            Row(
                "F_dropout1d",
                lambda x: _dropout_seeded(x, F.dropout1d, p=0.5),
                [U(2, 3, 4)],
                gpu="the GPU draws its own random numbers (as PyTorch's CUDA does); GPU dropout "
                "is checked in test_gpu.py",
            )
        ],
    ),
    nn_op(
        "dropout2d",
        None,
        _channel_dropout_samples(2),
        inplace=True,
        check=_channel_dropout_check(2),
        grads=[
            Row(
                "F_dropout2d",
                lambda x: _dropout_seeded(x, F.dropout2d, p=0.5),
                [U(2, 3, 2, 2)],
                gpu="the GPU draws its own random numbers (as PyTorch's CUDA does); GPU dropout "
                "is checked in test_gpu.py",
            )
        ],
    ),
    nn_op(
        "pad",
        pad_ref,
        lambda m: [
            Sample(m(2, 3, 4), (1, 2, -1, 1), value=0.5),
            Sample(m(2, 3), (1, 2)),
            Sample(m(1, 3, 4), (2, 1, 1, 2), mode="reflect"),
            Sample(m(2, 3), (2, 1), "replicate"),
            Sample(m(1, 3, 4), (1, 3, 2, 0), mode="circular"),
            Sample(m(0, 3), (1, 1)),
            Sample(m(4, 3, layout="transposed"), (0, 1, 1, 0), value=-1.0),
        ],
        dtypes=ALL,
        grads=[
            Row("F_pad_constant", lambda x: F.pad(x, (1, 2, -1, 1), value=0.5), [U(2, 3, 4)]),
            Row("F_pad_reflect", lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"), [U(1, 3, 4)]),
            Row("F_pad_replicate", lambda x: F.pad(x, (2, 1), mode="replicate"), [U(2, 3)]),
            Row(
                "F_pad_circular",
                lambda x: F.pad(x, (1, 3, 2, 0), mode="circular"),
                [U(1, 3, 4)],
            ),
        ],
    ),
    nn_op(
        "interpolate",
        _interp_ref,
        # linear first: the dtype check uses the first sample, and PyTorch's nearest takes uint8
        lambda m: [
            Sample(m(1, 2, 4), scale_factor=1.7, mode="linear"),
            Sample(m(1, 2, 3, 2), size=(5, 3)),
            Sample(m(1, 1, 3, 3), size=(4, 5), mode="bilinear", align_corners=True),
            Sample(m(1, 1, 3, 4), size=(5, 3), mode="bicubic"),
            Sample(m(1, 2, 5), 3, mode="nearest-exact"),
            Sample(m(0, 1, 3, 3), size=(2, 2), mode="bilinear"),
            Sample(m(1, 2, 4, 3, layout="transposed"), scale_factor=2),
        ],
        grads=[
            Row("F_interpolate_nearest", lambda x: F.interpolate(x, size=(5, 3)), [U(1, 2, 3, 2)]),
            Row(
                "F_interpolate_linear",
                lambda x: F.interpolate(x, scale_factor=1.7, mode="linear"),
                [U(1, 2, 4)],
            ),
            Row(
                "F_interpolate_bilinear_ac",
                lambda x: F.interpolate(x, size=(4, 5), mode="bilinear", align_corners=True),
                [U(1, 1, 3, 3)],
            ),
            Row(
                "F_interpolate_bicubic",
                lambda x: F.interpolate(x, size=(5, 3), mode="bicubic"),
                [U(1, 1, 3, 4)],
            ),
        ],
    ),
    nn_op(
        "pixel_shuffle",
        _pixel_shuffle_ref,
        lambda m: [
            Sample(m(1, 8, 2, 1), 2),
            Sample(m(9, 1, 2), 3),
            Sample(m(0, 4, 1, 1), 2),
            Sample(m(1, 4, 2, 3, layout="transposed"), 2),
        ],
        dtypes=ALL,
        grads=[Row("F_pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), [U(1, 8, 2, 1)])],
        extra=["rumus.pixel_shuffle"],
    ),
    nn_op(
        "pixel_unshuffle",
        _pixel_unshuffle_ref,
        lambda m: [
            Sample(m(1, 2, 2, 4), 2),
            Sample(m(1, 3, 3), 3),
            Sample(m(0, 1, 2, 2), 2),
            Sample(m(1, 2, 4, 2, layout="transposed"), 2),
        ],
        dtypes=ALL,
        # PyTorch 2.11 returns an empty batch unchanged, (0, 1, 2, 2) for (0, 4, 1, 1)
        torch_ref=lambda torch, x, f: (
            torch.nn.functional.pixel_unshuffle(x, f) if x.numel() else None
        ),
        grads=[Row("F_pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 2), [U(1, 2, 2, 4)])],
        extra=["rumus.pixel_unshuffle"],
    ),
    nn_op(
        "scaled_dot_product_attention",
        _sdpa_ref,
        lambda m: [
            Sample(m(2, 3, 4), m(2, 4, 4), m(2, 4, 2)),
            Sample(m(1, 4, 3), m(1, 3, 3), m(1, 3, 2), is_causal=True, scale=0.7),
            Sample(m(3, 2), m(4, 2), m(4, 2), m.mask([[1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1]])),
            Sample(m(3, 2), m(4, 2), m(4, 2), m(3, 4)),
            Sample(m(0, 2, 3), m(0, 2, 3), m(0, 2, 3)),
            Sample(m(3, 2, layout="transposed"), m(4, 2, layout="strided"), m(4, 2)),
        ],
        grads=[
            Row(
                "F_sdpa",
                lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
                [U(2, 3, 4), U(2, 4, 4), U(2, 4, 2)],
            ),
            Row(
                "F_sdpa_causal_scale",
                lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.7),
                [U(1, 4, 3), U(1, 3, 3), U(1, 3, 2)],
            ),
            Row(
                "F_sdpa_bool_mask",
                lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m),
                [
                    U(3, 2),
                    U(4, 2),
                    U(4, 2),
                    B(np.array([[1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1]], bool)),
                ],
            ),
            Row(
                "F_sdpa_float_mask",
                lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m),
                [U(3, 2), U(4, 2), U(4, 2), U(3, 4)],
            ),
        ],
    ),
]


LOSSES = [
    nn_op(
        "mse_loss",
        _pointwise_loss(np.square),
        lambda m: (
            _loss_samples(m)
            + [Sample(m(3, 4), m(3, 4), reduction="none", weight=m(3, 4, domain=P))]
        ),
        # PyTorch's mse_loss has no weight=: weigh its unreduced loss
        torch_ref=lambda torch, x, y, reduction="mean", weight=None: (
            torch.nn.functional.mse_loss(x, y, reduction=reduction)
            if weight is None
            else torch.nn.functional.mse_loss(x, y, reduction="none") * weight
        ),
        grads=[
            Row("F_mse_loss", lambda x, y: F.mse_loss(x, y), [U(3, 4), U(3, 4)]),
            Row(
                "F_mse_loss_weight_none",
                lambda x, y, w: F.mse_loss(x, y, reduction="none", weight=w),
                [U(3, 4), U(3, 4), P(3, 4)],
            ),
        ],
    ),
    nn_op(
        "l1_loss",
        _pointwise_loss(np.abs),
        _loss_samples,
        grads=[
            Row(
                "F_l1_loss_sum",
                lambda x, y: F.l1_loss(x, y, reduction="sum"),
                pair_away((3, 4), [0.0]),
            )
        ],
    ),
    nn_op(
        "smooth_l1_loss",
        _pointwise_loss(_smooth_l1),
        functools.partial(_loss_samples, extra=[dict(beta=0.5)]),
        grads=[
            Row(
                "F_smooth_l1_loss",
                lambda x, y: F.smooth_l1_loss(x, y, beta=0.5),
                pair_away((3, 4), [-0.5, 0.0, 0.5]),
            )
        ],
    ),
    nn_op(
        "huber_loss",
        _pointwise_loss(_huber),
        functools.partial(_loss_samples, extra=[dict(delta=0.5)]),
        grads=[
            Row(
                "F_huber_loss",
                lambda x, y: F.huber_loss(x, y, delta=0.5),
                pair_away((3, 4), [-0.5, 0.0, 0.5]),
            )
        ],
    ),
    nn_op(
        "cross_entropy",
        ce_ref,
        lambda m: [
            Sample(m(3, 4), m.idx([1, 0, 3])),
            Sample(
                m(4, 5), m.idx([1, 2, 3, 2]), m(5, domain=P), ignore_index=2, label_smoothing=0.2
            ),
            Sample(m(2, 3, 2), m.idx([[0, 2], [1, 1]]), reduction="none"),
            Sample(m(3, 4), m(3, 4, domain=P), label_smoothing=0.1),
            Sample(m(4), m.idx(2), reduction="sum"),
            Sample(m(4, 3, layout="transposed"), m.idx([0, 1, 2, 0])),
        ],
        mismatch=False,
        grads=[
            Row(
                "F_cross_entropy",
                lambda x: F.cross_entropy(x, rumus.tensor([1, 0, 3])),
                [U(3, 4)],
            ),
            Row(
                "F_cross_entropy_weight_ignore_smooth",
                lambda x, w: F.cross_entropy(
                    x, rumus.tensor([1, 2, 3, 2]), w, ignore_index=2, label_smoothing=0.2
                ),
                [U(4, 5), P(5)],
            ),
            Row(
                "F_cross_entropy_nd_none",
                lambda x: F.cross_entropy(x, rumus.tensor([[0, 2], [1, 1]]), reduction="none"),
                [U(2, 3, 2)],
            ),
            Row(
                "F_cross_entropy_probs",
                lambda x, p: F.cross_entropy(x, p, label_smoothing=0.1),
                [U(3, 4), P(3, 4)],
            ),
        ],
        bad=lambda m: [
            (
                "cross_entropy target out of range",
                lambda: F.cross_entropy(m.t(3, 4), rumus.tensor([0, 1, 4])),
            ),
            (
                "cross_entropy target of the wrong length",
                lambda: F.cross_entropy(m.t(3, 4), rumus.tensor([0, 1])),
            ),
        ],
    ),
    nn_op(
        "nll_loss",
        _nll_ref,
        lambda m: [
            Sample(m(3, 4), m.idx([1, 0, 3])),
            Sample(m(3, 4), m.idx([1, 0, 3]), m(4, domain=P), reduction="sum"),
            Sample(m(2, 3, 2), m.idx([[0, 2], [1, 1]]), reduction="none", ignore_index=1),
            Sample(m(4, 3, layout="transposed"), m.idx([0, 1, 2, 0])),
        ],
        mismatch=False,
        grads=[
            Row(
                "F_nll_loss",
                lambda x, w: F.nll_loss(x, rumus.tensor([1, 0, 3]), w, reduction="mean"),
                [U(3, 4), P(4)],
            )
        ],
    ),
    nn_op(
        "binary_cross_entropy",
        _bce_ref,
        lambda m: [
            Sample(m(3, 4, domain=dom(U, lo=0.05, hi=0.95)), m(3, 4, domain=dom(U, lo=0, hi=1))),
            Sample(
                m(3, 4, domain=dom(U, lo=0.05, hi=0.95)),
                m(3, 4, domain=dom(U, lo=0, hi=1)),
                m(4, domain=P),
                reduction="none",
            ),
            Sample(m(0, 2), m(0, 2), reduction="sum"),
        ],
        grads=[
            Row(
                "F_binary_cross_entropy",
                lambda p, t, w: F.binary_cross_entropy(p, t, w),
                [U(3, 4, lo=0.1, hi=0.9), U(3, 4, lo=0, hi=1), P(4)],
            )
        ],
    ),
    nn_op(
        "binary_cross_entropy_with_logits",
        _bce_logits_ref,
        lambda m: [
            Sample(m(3, 4), m(3, 4, domain=dom(U, lo=0, hi=1))),
            Sample(m(3, 4), m(3, 4, domain=dom(U, lo=0, hi=1)), pos_weight=m(4, domain=P)),
            Sample(m(3, 4), m(3, 4, domain=dom(U, lo=0, hi=1)), m(3, 1, domain=P), reduction="sum"),
            Sample(m(0, 2), m(0, 2), reduction="none"),
        ],
        grads=[
            Row(
                "F_bce_with_logits",
                lambda x, t, pw: F.binary_cross_entropy_with_logits(x, t, pos_weight=pw),
                [U(3, 4), U(3, 4, lo=0, hi=1), P(4)],
            )
        ],
    ),
    nn_op(
        "kl_div",
        _kl_ref,
        lambda m: [
            Sample(m(3, 4), m(3, 4, domain=P), reduction="batchmean"),
            Sample(m(3, 4), m(3, 4), reduction="sum", log_target=True),
            Sample(m(3, 4), m(3, 4, domain=P), reduction="none"),
        ],
        grads=[
            Row(
                "F_kl_div_batchmean",
                lambda x, t: F.kl_div(x, t, reduction="batchmean"),
                [U(3, 4), P(3, 4)],
            ),
            Row(
                "F_kl_div_log_target",
                lambda x, t: F.kl_div(x, t, reduction="sum", log_target=True),
                [U(3, 4), U(3, 4)],
            ),
        ],
    ),
    nn_op(
        "cosine_embedding_loss",
        _cos_emb_ref,
        _cos_emb_samples,
        mismatch=False,
        grads=[
            Row(
                "F_cosine_embedding_loss",
                lambda a, b, y: F.cosine_embedding_loss(a, b, y, margin=0.1),
                _cos_emb_inputs,
            )
        ],
        dtypes=ALL,
        out=to_float,
    ),
    nn_op(
        "margin_ranking_loss",
        _margin_ranking_ref,
        lambda m: [
            Sample(m(6), m(6), Arg(np.array([1.0, -1.0, 1.0, 1.0, -1.0, -1.0])), margin=0.2),
            Sample(m(6), m(6), Arg(np.array([1.0, -1.0, 1.0, 1.0, -1.0, -1.0])), reduction="none"),
            Sample(m(0), m(0), Arg(np.zeros(0)), reduction="sum"),
        ],
        grads=[
            Row(
                "F_margin_ranking_loss",
                lambda a, b, y: F.margin_ranking_loss(a, b, y, margin=0.2),
                _ranking_inputs,
            )
        ],
        dtypes=FLOATS + INTS,
        out=to_float,
    ),
]


# ------------------------------------------------------------ sorting and selection
# References with PyTorch's order: NaN above +inf, ties in index order (rumus sorts stably).


def _sort_key(v, desc):
    nan = v != v
    if desc:
        return (0 if nan else 1, 0 if nan else -v)
    return (1 if nan else 0, 0 if nan else v)


def _order(x, dim=-1, descending=False):
    """Stable argsort along ``dim`` with NaN largest (descending: NaN first)."""
    if x.ndim == 0:
        return np.zeros((), np.int64)
    m = np.moveaxis(x, dim, -1)
    out = np.empty(m.shape, np.int64)
    for idx in np.ndindex(m.shape[:-1]):
        row = [v.item() for v in m[idx]]
        out[idx] = sorted(range(len(row)), key=lambda i: _sort_key(row[i], descending))
    return np.moveaxis(out, -1, dim)


def _take(x, idx, dim):
    return x.copy() if x.ndim == 0 else np.take_along_axis(x, idx, axis=dim)


def _sort_ref(x, dim=-1, descending=False, stable=False):
    idx = _order(x, dim, descending)
    return _take(x, idx, dim), idx


def _argsort_ref(x, dim=-1, descending=False, stable=False):
    return _order(x, dim, descending)


def _topk_ref(x, k, dim=-1, largest=True, sorted=True):
    idx = _order(x, dim, largest)
    idx = idx if x.ndim == 0 else np.take(idx, range(k), axis=dim)
    return _take(x, idx, dim), idx


def _pick(x, dim, keepdim, pos):
    """Values and indices at position ``pos(row)`` of each row's stable ascending order."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    order = _order(x, dim)
    m, o = np.moveaxis(x, dim, -1), np.moveaxis(order, dim, -1)
    vals = np.empty(m.shape[:-1], x.dtype)
    idx = np.empty(m.shape[:-1], np.int64)
    for i in np.ndindex(m.shape[:-1]):
        j = o[i][pos(m[i])]
        vals[i], idx[i] = m[i][j], j
    if keepdim:
        vals, idx = np.expand_dims(vals, dim), np.expand_dims(idx, dim)
    return vals, idx


def _nan_count(row):
    return int(np.sum(row != row))


def _median_pos(row):
    n, nan = len(row), _nan_count(row)
    return n - nan if nan else (n - 1) // 2


def _nanmedian_pos(row):
    return max(len(row) - _nan_count(row) - 1, 0) // 2


def _median_ref(pos):
    def ref(x, dim=None, keepdim=False):
        if dim is None:
            flat = x.reshape(-1)
            return np.asarray(np.nan if flat.size == 0 else _pick(flat, 0, False, pos)[0])
        return _pick(x, dim, keepdim, pos)

    return ref


def _kthvalue_ref(x, k, dim=-1, keepdim=False):
    return _pick(x, dim, keepdim, lambda row: k - 1)


def _mode_ref(x, dim=-1, keepdim=False):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    m = np.moveaxis(x, dim, -1)
    vals = np.empty(m.shape[:-1], x.dtype)
    idx = np.empty(m.shape[:-1], np.int64)
    for i in np.ndindex(m.shape[:-1]):
        row = list(m[i])
        best = min(set(row), key=lambda v: (-row.count(v), v))
        vals[i], idx[i] = best, len(row) - 1 - row[::-1].index(best)
    if keepdim:
        vals, idx = np.expand_dims(vals, dim), np.expand_dims(idx, dim)
    return vals, idx


def _sort_samples(m):
    return [
        Sample(m(3, 4)),
        Sample(m(3, 4), 0),
        Sample(m(3, 4), dim=1, descending=True),
        Sample(m(2, 3, 2), dim=1, descending=True, stable=True),
        Sample(m(3, 5), stable=True),
        Sample(m()),
        Sample(m(), dim=0, descending=True),
        Sample(m(0, 3), dim=1),
        Sample(m(0, 3), dim=0),
        Sample(m(4, 3, layout="transposed"), dim=1),
        Sample(m(4, 2, layout="strided"), dim=0, descending=True),
        Sample(m(2, 3, layout="expanded"), dim=0),
    ]


def _pair(d):
    return (d, "int64")


def _sel_samples(m, k=None):
    """Reductions along one dim returning (values, indices); ``k`` first when given."""
    kk = () if k is None else (k,)
    return [
        Sample(m(3, 4), *kk).expect(_pair),
        Sample(m(3, 5), *kk, dim=1, keepdim=True).expect(_pair),
        Sample(m(4, 3), *kk, dim=0).expect(_pair),
        Sample(m(2, 3, 4), *kk, dim=-2).expect(_pair),
        Sample(m(), *(() if k is None else (1,)), dim=0).expect(_pair),
        Sample(m(4, 3, layout="transposed"), *kk, dim=0, keepdim=True).expect(_pair),
        Sample(m(3, 0), *kk, dim=0).expect(_pair),
    ]


def _median_samples(m):
    empty = [Sample(m(0, 2))] if m.floating else []  # NaN; an empty integer input raises
    return [Sample(m(3, 4)), Sample(m(5)), Sample(m())] + empty + _sel_samples(m)[1:]


def _nan_rows(*shape):
    """Uniform values with NaNs in some rows (for the NaN-aware medians)."""

    def gen(rng):
        x = rng.uniform(-2, 2, shape)
        x[1, 0] = x[1, 2] = np.nan
        x[2, :] = np.nan
        return x

    return gen


def _unique_ref(x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    vals, inv, counts = np.unique(x, return_inverse=True, return_counts=True, axis=dim)
    inv = inv.reshape(x.shape) if dim is None else inv.reshape(-1)
    out = [vals] + ([inv] if return_inverse else []) + ([counts] if return_counts else [])
    return out[0] if len(out) == 1 else tuple(out)


def _unique_consecutive_ref(x, return_inverse=False, return_counts=False, dim=None):
    items = x.reshape(-1) if dim is None else np.moveaxis(x, dim, 0)
    keep, inv = [], []
    for i in range(len(items)):
        if i == 0 or not np.array_equal(items[i], items[i - 1]):
            keep.append(i)
        inv.append(len(keep) - 1)
    counts = np.diff(keep + [len(items)]).astype(np.int64)
    vals = items[keep] if dim is None else np.moveaxis(items[keep], 0, dim)
    inv = np.asarray(inv, np.int64).reshape(x.shape if dim is None else -1)
    out = [vals] + ([inv] if return_inverse else []) + ([counts] if return_counts else [])
    return out[0] if len(out) == 1 else tuple(out)


def _SMALL_INTS(*shape):
    """Integers in [-2, 2] (as floats): many repeats."""
    return lambda rng: rng.integers(-2, 3, shape).astype(np.float64)


def _unique_samples(m, consecutive=False):
    idx = ("int64",)
    ints = _SMALL_INTS
    s = [
        Sample(m(12, domain=ints)),
        Sample(m(3, 4, domain=ints), return_counts=True).expect(lambda d: (d,) + idx),
        Sample(m(3, 4, domain=ints), return_inverse=True, return_counts=True).expect(
            lambda d: (d,) + idx * 2
        ),
        Sample(m(0, 3)),
        Sample(m()),
        Sample(m(4, 3, layout="transposed", domain=ints), return_inverse=True).expect(
            lambda d: (d,) + idx
        ),
    ]
    rows = Arg(np.repeat(m(2, 3, domain=ints).values, 2, axis=0))
    s.append(Sample(rows, dim=0, return_counts=True).expect(lambda d: (d,) + idx))
    s.append(Sample(m(3, 2, domain=ints), dim=1, return_inverse=True).expect(lambda d: (d,) + idx))
    if not consecutive:
        s.append(Sample(m(3, 4, domain=ints), sorted=False))
    return s


def _searchsorted_ref(seq, values, out_int32=False, right=False, side=None, sorter=None):
    side = side or ("right" if right else "left")
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter, -1)
    if seq.ndim == 1:
        out = np.searchsorted(seq, values, side=side)
    else:
        out = np.stack(
            [np.searchsorted(seq[i], values[i], side=side) for i in np.ndindex(seq.shape[:-1])]
        ).reshape(values.shape)
    return np.asarray(out, np.int32 if out_int32 else np.int64)


def _sorted_arg(m, *shape):
    return Arg(np.sort(m(*shape).values, axis=-1))


def _searchsorted_samples(m):
    seq = _sorted_arg(m, 6)
    vals = m(6).values
    return [
        Sample(seq, m(3, 4)),
        Sample(seq, m(3, 4), right=True),
        Sample(seq, m(5), side="right"),
        Sample(seq, m(4), out_int32=True).expect(lambda d: "int32"),
        Sample(_sorted_arg(m, 2, 5), m(2, 3)),
        Sample(_sorted_arg(m, 2, 5), m(2, 3), side="left"),
        Sample(seq, m()),
        Sample(seq, m(0, 2)),
        Sample(seq, m(4, 3, layout="transposed")),
        Sample(Arg(vals), m(4), sorter=Arg(np.argsort(vals, kind="stable"), "int64")),
    ]


def _bucketize_ref(x, boundaries, out_int32=False, right=False):
    out = np.searchsorted(boundaries, x, side="right" if right else "left")
    return np.asarray(out, np.int32 if out_int32 else np.int64)


def _bincount_ref(x, weights=None, minlength=0):
    out = np.bincount(x.reshape(-1), weights, minlength)
    return out if weights is None else out.astype(np.float64)


def _histc_ref(x, bins=100, min=0, max=0):
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    return np.histogram(x, bins, range=(lo, hi))[0].astype(np.float64)


def _histogram_ref(x, bins, range=None, weight=None, density=False):
    if range is None and not isinstance(bins, np.ndarray) and x.size:
        lo, hi = float(x.min()), float(x.max())
        range = (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)
    h, e = np.histogram(x, bins, range=range, weights=weight, density=density)
    return h.astype(np.float64), e


SORTING = [
    OpInfo(
        "sort",
        ["rumus.sort", "Tensor.sort"],
        _sort_ref,
        _sort_samples,
        dtypes=ALL,
        out=_pair,
        grads=[
            Row("sort_values", lambda x: x.sort(1).values, [DISTINCT(3, 4)]),
            Row("sort_desc_dim0", lambda x: rumus.sort(x, 0, descending=True)[0], [DISTINCT(3, 4)]),
        ],
    ),
    OpInfo(
        "argsort",
        ["rumus.argsort", "Tensor.argsort"],
        _argsort_ref,
        _sort_samples,
        dtypes=ALL,
        out=to_int64,
        grad=False,
    ),
    OpInfo(
        "msort",
        ["rumus.msort", "Tensor.msort"],
        lambda x: np.sort(x, axis=0) if x.ndim else x.copy(),
        lambda m: [
            Sample(m(4, 3)),
            Sample(m(5)),
            Sample(m()),
            Sample(m(0, 2)),
            Sample(m(3, 4, layout="transposed")),
        ],
        dtypes=ALL,
        grads=[Row("msort", lambda x: x.msort(), [DISTINCT(4, 3)])],
    ),
    OpInfo(
        "topk",
        ["rumus.topk", "Tensor.topk"],
        _topk_ref,
        lambda m: [
            Sample(m(3, 5), 2),
            Sample(m(3, 5), 3, largest=False),
            Sample(m(4, 3), 4, dim=0),
            Sample(m(2, 3, 4), 2, dim=1, sorted=True),
            Sample(m(3, 4), 0),
            Sample(m(3, 4), 4),
            Sample(m(), 1),
            Sample(m(0, 3), 2),
            Sample(m(5, 4, layout="transposed"), 2, dim=0, largest=False),
        ],
        dtypes=NUMERIC,
        out=_pair,
        domain=DISTINCT,
        grads=[
            Row("topk_values", lambda x: x.topk(2).values, [DISTINCT(3, 5)]),
            Row("topk_smallest_dim0", lambda x: rumus.topk(x, 2, 0, False)[0], [DISTINCT(4, 3)]),
        ],
        bad=lambda m: [
            ("topk k > size", lambda: m.t(3, 4).topk(5)),
            ("topk k < 0", lambda: m.t(3, 4).topk(-1)),
        ],
    ),
    OpInfo(
        "kthvalue",
        ["rumus.kthvalue", "Tensor.kthvalue"],
        _kthvalue_ref,
        lambda m: _sel_samples(m, k=2) + [Sample(m(3, 4), 4, dim=1).expect(_pair)],
        dtypes=NUMERIC,
        out=_pair,
        domain=DISTINCT,
        grads=[
            Row("kthvalue", lambda x: x.kthvalue(2).values, [DISTINCT(3, 4)]),
            Row("kthvalue_keepdim", lambda x: x.kthvalue(3, 0, True)[0], [DISTINCT(4, 3)]),
        ],
        bad=lambda m: [
            ("kthvalue k > size", lambda: m.t(3, 4).kthvalue(5)),
            ("kthvalue k = 0", lambda: m.t(3, 4).kthvalue(0)),
            ("kthvalue of an empty dim", lambda: m.t(3, 0).kthvalue(1)),
        ],
    ),
    OpInfo(
        "median",
        ["rumus.median", "Tensor.median"],
        _median_ref(_median_pos),
        lambda m: (
            _median_samples(m)
            + (
                [
                    Sample(m(4, 3, domain=_nan_rows), dim=1).expect(_pair),
                    Sample(m(4, 3, domain=_nan_rows)),
                ]
                if m.floating
                else []
            )
        ),
        dtypes=NUMERIC,
        domain=DISTINCT,
        grads=[
            Row("median", lambda x: x.median(), [DISTINCT(3, 4)]),
            Row("median_dim", lambda x: x.median(1).values, [DISTINCT(3, 4)]),
            Row("median_keepdim", lambda x: rumus.median(x, 0, True)[0], [DISTINCT(4, 3)]),
        ],
        bad=lambda m: [("median of an empty dim", lambda: m.t(3, 0).median(1))],
    ),
    OpInfo(
        "nanmedian",
        ["rumus.nanmedian", "Tensor.nanmedian"],
        _median_ref(_nanmedian_pos),
        lambda m: (
            _median_samples(m)
            + (
                [
                    Sample(m(4, 3, domain=_nan_rows), dim=1).expect(_pair),
                    Sample(m(4, 3, domain=_nan_rows), dim=0, keepdim=True).expect(_pair),
                    Sample(m(4, 3, domain=_nan_rows)),
                ]
                if m.floating
                else []
            )
        ),
        dtypes=NUMERIC,
        domain=DISTINCT,
        grads=[
            Row("nanmedian", lambda x: x.nanmedian(), [DISTINCT(3, 4)]),
            Row("nanmedian_dim", lambda x: x.nanmedian(0).values, [DISTINCT(4, 3)]),
        ],
    ),
    OpInfo(
        "mode",
        ["rumus.mode", "Tensor.mode"],
        _mode_ref,
        lambda m: _sel_samples(m) + [Sample(m(3, 6, domain=_SMALL_INTS), dim=1).expect(_pair)],
        dtypes=ALL,
        out=_pair,
        domain=DISTINCT,
        grads=[Row("mode", lambda x: x.mode(1).values, [DISTINCT(3, 4)])],
        bad=lambda m: [("mode of an empty dim", lambda: m.t(3, 0).mode(1))],
    ),
    OpInfo(
        "unique",
        ["rumus.unique", "Tensor.unique"],
        _unique_ref,
        _unique_samples,
        dtypes=ALL,
        grad=False,
    ),
    OpInfo(
        "unique_consecutive",
        ["rumus.unique_consecutive", "Tensor.unique_consecutive"],
        _unique_consecutive_ref,
        functools.partial(_unique_samples, consecutive=True),
        dtypes=ALL,
        grad=False,
    ),
    OpInfo(
        "searchsorted",
        ["rumus.searchsorted"],
        _searchsorted_ref,
        _searchsorted_samples,
        dtypes=NUMERIC,
        out=to_int64,
        grad=False,
        mismatch=False,
        bad=lambda m: [
            (
                "searchsorted side and right disagree",
                lambda: rumus.searchsorted(m.t(5), m.t(3), side="left", right=True),
            ),
            ("searchsorted bad side", lambda: rumus.searchsorted(m.t(5), m.t(3), side="up")),
            ("searchsorted 0-d boundaries", lambda: rumus.searchsorted(m.t(), m.t(3))),
            ("searchsorted leading dims differ", lambda: rumus.searchsorted(m.t(2, 5), m.t(3, 4))),
        ],
    ),
    OpInfo(
        "bucketize",
        ["rumus.bucketize"],
        _bucketize_ref,
        lambda m: [
            Sample(m(3, 4), _sorted_arg(m, 5)),
            Sample(m(3, 4), _sorted_arg(m, 5), right=True),
            Sample(m(), _sorted_arg(m, 3)),
            Sample(m(6), _sorted_arg(m, 4), out_int32=True).expect(lambda d: "int32"),
            Sample(m(4, 3, layout="transposed"), _sorted_arg(m, 5)),
        ],
        dtypes=NUMERIC,
        out=to_int64,
        grad=False,
        mismatch=False,
        bad=lambda m: [("bucketize 2-d boundaries", lambda: rumus.bucketize(m.t(3), m.t(2, 2)))],
    ),
    OpInfo(
        "bincount",
        ["rumus.bincount", "Tensor.bincount"],
        _bincount_ref,
        lambda m: [
            Sample(m(10)),
            Sample(m(6), minlength=9),
            Sample(m(0)),
            Sample(m(0), minlength=3),
            Sample(m(5), Arg(np.linspace(0.5, 2.5, 5), "float64")).expect(lambda d: "float64"),
            Sample(m(5), Arg(np.linspace(0.5, 2.5, 5), "float32")).expect(lambda d: "float32"),
            Sample(m(8, layout="strided")),
        ],
        dtypes=INTS,
        out=to_int64,
        domain=dom(U, lo=0, hi=6),
        grad=False,
        mismatch=False,
        bad=lambda m: [
            ("bincount of a 2-d input", lambda: m.t(2, 3).bincount()),
            ("bincount negative minlength", lambda: m.t(3).bincount(minlength=-1)),
            ("bincount weights of another length", lambda: m.t(3).bincount(m.t(4))),
            ("bincount of negatives", lambda: rumus.tensor([1, -2, 3]).bincount()),
        ],
    ),
    OpInfo(
        "histc",
        ["rumus.histc", "Tensor.histc"],
        _histc_ref,
        lambda m: [
            Sample(m(3, 4), bins=4, min=-2, max=2),
            Sample(m(12), bins=5),
            Sample(m(3, 4), 8, -1, 1),
            Sample(m(0)),
            Sample(m(), bins=3),
            Sample(m(4, 3, layout="transposed"), bins=4, min=-2, max=2),
        ],
        dtypes=FLOATS,
        grad=False,
        bad=lambda m: [
            ("histc bins=0", lambda: m.t(3).histc(0)),
            ("histc min > max", lambda: m.t(3).histc(4, 2, 1)),
        ],
    ),
    OpInfo(
        "histogram",
        ["rumus.histogram", "Tensor.histogram"],
        _histogram_ref,
        lambda m: [
            Sample(m(3, 4), 4),
            Sample(m(12), 5, range=(-2.0, 2.0)),
            Sample(m(12), 4, range=(-1.0, 1.0), density=True),
            Sample(m(10), Arg(np.array([-2.0, -0.5, 0.0, 1.5, 2.0]))),
            Sample(m(6), 3, weight=m(6)),
            Sample(m(0), 2),
        ],
        dtypes=FLOATS,
        out=lambda d: (d, d),
        grad=False,
        mismatch=False,
        bad=lambda m: [
            ("histogram bins=0", lambda: m.t(3).histogram(0)),
            ("histogram reversed range", lambda: m.t(3).histogram(4, range=(1.0, 0.0))),
        ],
    ),
]

from op_db_complex import COMPLEX  # noqa: E402 - it builds on the helpers above
from op_db_composite import MORE  # noqa: E402 - it builds on the helpers above
from op_db_linalg import LINALG_DECOMP  # noqa: E402 - it builds on the helpers above
from op_db_mathops import MATHOPS  # noqa: E402 - it builds on the helpers above
from op_db_nn_more import NN_MORE  # noqa: E402 - it builds on the helpers above
from op_db_shapeops import SHAPEOPS  # noqa: E402 - it builds on the helpers above
from op_db_spatial import SPATIAL  # noqa: E402 - it builds on the helpers above
from op_db_special import SPECIAL_FNS  # noqa: E402 - it builds on the helpers above
from op_db_toplevel import SHAPES, TOPLEVEL, add_spellings  # noqa: E402 - uses the entries above

OP_DB = (
    ELEMENTWISE
    + COMPARE
    + TERNARY
    + REDUCTIONS
    + SORTING
    + LINALG
    + LINALG_DECOMP
    + EINSUM
    + SHAPE
    + INDEX
    + CREATION
    + COMPOSITE
    + NN
    + LOSSES
    + MORE
    + SPATIAL
    + NN_MORE
    + SPECIAL_FNS
    + COMPLEX
    + TOPLEVEL
    + SHAPES
    + SHAPEOPS
    + MATHOPS
)
add_spellings(OP_DB)


def _iadd_imul(x, b):
    y = x.clone()
    y += b
    y *= b
    y -= 1.0
    y /= 2.0
    return y


# Gradient rows of the autograd graph rather than of one op: shared inputs, several paths,
# several outputs, chains of in-place ops.
GRAPH_ROWS = [
    Row("softmax_like", lambda x: (x - x.logsumexp(1, keepdim=True)).exp(), [U(3, 4)]),
    Row("mlp_like", lambda x, w, b: ((x @ w + b).tanh() @ w.t()).sum(1), [U(3, 4), U(4, 4), U(4)]),
    Row("shared_input_paths", lambda x: x.sin() * x.cos() + x.exp() / (1 + x * x), [U(3, 4)]),
    Row("two_outputs", lambda x, y: (x * y, (x - y).exp().sum()), [U(3, 4), U(4)]),
    Row("inplace_iadd_imul", _iadd_imul, [U(3, 4), U(4)]),
    Row(
        "inplace_chain",
        lambda x, b: _inplace(x, lambda y: y.mul_(2.0).add_(b).exp_()),
        [U(3, 4), U(4)],
    ),
]

# Every gradcheck row: the entries' (in registry order), then the graph rows.
GRAD_ROWS = [r for op in OP_DB for r in op.grads] + GRAPH_ROWS
