"""Finite-difference checks of every differentiable rumus op.

One table (ROWS) lists the ops: a name, the function, and one spec per
input.  Each row is run through ``gradcheck``, through ``gradgradcheck``
(unless its ``gg`` flag is off), and once more through ``gradcheck`` with
non-contiguous inputs (transposed for ndim >= 2, strided for 1-D).  The
last part checks ``gradcheck`` itself with deliberately wrong custom
Functions.

Inputs are seeded float64, small, and kept away from the points where an
op is not differentiable (0 for abs/relu, ties for max, integers for floor).
"""

import warnings
import zlib

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F
from conftest import noncontig
from rumus.autograd import GradcheckError, gradcheck, gradgradcheck

f64 = rumus.float64


# ------------------------------------------------------------ input specs
# A spec is a callable rng -> numpy float array (a float64 input that requires
# grad) or a Const (passed to the function as is; numpy arrays become tensors).


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


def I(values):
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


# ---------------------------------------------------------------- the table


class Row:
    def __init__(self, name, fn, specs, gg=True, nc=True, tol=None):
        self.name = name
        self.fn = fn
        self.specs = specs  # list of specs, or a callable rng -> list of arrays/Consts
        self.gg = gg  # run gradgradcheck
        self.nc = nc  # run with non-contiguous inputs
        self.tol = tol or {}


def _setitem_slice(x, v):
    y = x * 1
    y[1:3] = v
    return y


def _setitem_bcast(x, v):
    y = x * 1
    y[1:3] = v  # v (5,) broadcast over two rows
    return y


def _setitem_int(x, v):
    y = x * 1
    y[0] = v
    return y


def _setitem_col_scalar_tensor(x, v):
    y = x * 1
    y[:, 1] = v  # v 0-d, broadcast over the column
    return y


def _setitem_python_scalar(x):
    y = x * 1
    y[:, 1::2] = 0.5
    return y


def _setitem_adv(x, v, idx):
    y = x * 1
    y[idx] = v
    return y


def _setitem_mask(x, v, mask):
    y = x * 1
    y[mask] = v
    return y


def _setitem_mask_scalar(x, mask):
    y = x * 1
    y[mask] = 0.0
    return y


def _setitem_twice(x, v):
    y = x.exp().clone()  # exp saves its output: write into a copy
    y[0, 1:3] = v
    y[1:, 0] = v[0] * 2
    return y.sin()


def _inplace(x, op):
    y = x.clone()
    op(y)
    return y


def _iadd_imul(x, b):
    y = x.clone()
    y += b
    y *= b
    y -= 1.0
    y /= 2.0
    return y


MASK34 = np.array([[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0]], bool)
MASK45 = np.array([[1, 0, 0, 1, 0], [0, 0, 1, 0, 0], [0, 1, 0, 0, 1], [0, 0, 0, 0, 1]], bool)

ROWS = [
    # ---- elementwise unary
    Row("neg", lambda x: x.neg(), [U(3, 4)]),
    Row("neg_op", lambda x: -x, [U(3, 4)]),
    Row("negative", lambda x: rumus.negative(x), [U(3, 4)]),
    Row("abs", lambda x: x.abs(), [NZ(3, 4)]),
    Row("abs_builtin", lambda x: abs(x), [NZ(3, 4)]),
    Row("square", lambda x: x.square(), [U(3, 4)]),
    Row("exp", lambda x: x.exp(), [U(3, 4)]),
    Row("exp2", lambda x: x.exp2(), [U(3, 4)]),
    Row("log", lambda x: x.log(), [P(3, 4)]),
    Row("log2", lambda x: x.log2(), [P(3, 4)]),
    Row("log10", lambda x: x.log10(), [P(3, 4)]),
    Row("log1p", lambda x: x.log1p(), [U(3, 4, lo=-0.5, hi=2.0)]),
    Row("expm1", lambda x: x.expm1(), [U(3, 4)]),
    Row("sqrt", lambda x: x.sqrt(), [P(3, 4)]),
    Row("rsqrt", lambda x: x.rsqrt(), [P(3, 4)]),
    Row("reciprocal", lambda x: x.reciprocal(), [NZ(3, 4, lo=0.5)]),
    Row("sin", lambda x: x.sin(), [U(3, 4)]),
    Row("cos", lambda x: x.cos(), [U(3, 4)]),
    Row("tan", lambda x: x.tan(), [U(3, 4, lo=-1.2, hi=1.2)]),
    Row("asin", lambda x: x.asin(), [U(3, 4, lo=-0.9, hi=0.9)]),
    Row("acos", lambda x: x.acos(), [U(3, 4, lo=-0.9, hi=0.9)]),
    Row("atan", lambda x: x.atan(), [U(3, 4)]),
    Row("sinh", lambda x: x.sinh(), [U(3, 4)]),
    Row("cosh", lambda x: x.cosh(), [U(3, 4)]),
    Row("tanh", lambda x: x.tanh(), [U(3, 4)]),
    Row("tanh_F", lambda x: F.tanh(x), [U(3, 4)]),
    Row("sigmoid", lambda x: x.sigmoid(), [U(3, 4, lo=-4, hi=4)]),
    Row("sigmoid_F", lambda x: F.sigmoid(x), [U(3, 4)]),
    Row("relu", lambda x: x.relu(), [NZ(3, 4)]),
    Row("relu_F", lambda x: F.relu(x), [NZ(3, 4)]),
    Row("gelu", lambda x: F.gelu(x), [U(3, 4, lo=-3, hi=3)]),
    Row("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), [U(3, 4, lo=-3, hi=3)]),
    Row("silu", lambda x: F.silu(x), [U(3, 4, lo=-3, hi=3)]),
    Row("mish", lambda x: F.mish(x), [U(3, 4, lo=-3, hi=3)]),
    Row("elu", lambda x: F.elu(x), [NZ(3, 4)]),
    Row("elu_alpha", lambda x: F.elu(x, alpha=0.5), [NZ(3, 4)]),
    Row("leaky_relu", lambda x: F.leaky_relu(x), [NZ(3, 4)]),
    Row("leaky_relu_slope", lambda x: F.leaky_relu(x, 0.2), [NZ(3, 4)]),
    Row("softplus", lambda x: F.softplus(x), [U(3, 4, lo=-3, hi=3)]),
    # beta * x > threshold switches to the identity: x away from 1.5
    Row(
        "softplus_beta_threshold",
        lambda x: F.softplus(x, beta=2.0, threshold=3.0),
        [AWAY(3, 4, points=[1.5], lo=-3, hi=3)],
    ),
    Row("erf", lambda x: x.erf(), [U(3, 4)]),
    Row("erf_fn", lambda x: rumus.erf(x), [U(3, 4)]),
    Row("sign", lambda x: x.sign(), [NZ(3, 4)]),
    Row("floor", lambda x: x.floor(), [FRAC(3, 4)]),
    Row("ceil", lambda x: x.ceil(), [FRAC(3, 4)]),
    Row("round", lambda x: x.round(), [FRAC(3, 4)]),
    Row("trunc", lambda x: x.trunc(), [FRAC(3, 4)]),
    Row("floor_plus_x", lambda x: x.floor() * 2 + x, [FRAC(3, 4)]),
    # ---- binary
    Row("add_bcast", lambda a, b: a + b, [U(3, 1), U(4)]),
    Row("add_fn", lambda a, b: rumus.add(a, b), [U(3, 4), U(4)]),
    Row("add_alpha", lambda a, b: a.add(b, alpha=2.5), [U(3, 4), U(4)]),
    Row("add_scalar", lambda x: x + 2.5, [U(3, 4)]),
    Row("radd_scalar", lambda x: 2.5 + x, [U(3, 4)]),
    Row("add_self", lambda x: x + x, [U(3, 4)]),
    Row("sub_bcast", lambda a, b: a - b, [U(3, 1), U(4)]),
    Row("sub_alpha", lambda a, b: a.sub(b, alpha=-1.5), [U(3, 4), U(1, 4)]),
    Row("sub_scalar", lambda x: x - 1.0, [U(3, 4)]),
    Row("rsub_scalar", lambda x: 3 - x, [U(3, 4)]),
    Row("mul_bcast", lambda a, b: a * b, [U(3, 1), U(4)]),
    Row("mul_fn", lambda a, b: rumus.mul(a, b), [U(3, 4), U(3, 4)]),
    Row("mul_scalar", lambda x: x * 3.0, [U(3, 4)]),
    Row("rmul_scalar", lambda x: 3 * x, [U(3, 4)]),
    Row("mul_self", lambda x: x * x, [U(3, 4)]),
    Row("div_bcast", lambda a, b: a / b, [U(3, 4), NZ(4, lo=0.5)]),
    Row("div_bcast_rev", lambda a, b: a / b, [U(4), NZ(3, 1, lo=0.5)]),
    Row("div_fn", lambda a, b: rumus.div(a, b), [U(3, 4), NZ(3, 4, lo=0.5)]),
    Row("true_divide", lambda a, b: a.true_divide(b), [U(3, 4), NZ(3, 4, lo=0.5)]),
    Row("div_scalar", lambda x: x / 2.0, [U(3, 4)]),
    Row("rdiv_scalar", lambda x: 2.0 / x, [NZ(3, 4, lo=0.5)]),
    Row("pow_tensor_tensor", lambda a, b: a**b, [P(3, 4), U(4)]),
    Row("pow_tensor_tensor_bcast", lambda a, b: a.pow(b), [P(3, 1), U(4)]),
    Row("pow_int", lambda x: x**3, [U(3, 4)]),
    Row("pow_2", lambda x: x.pow(2), [U(3, 4)]),
    Row("pow_float", lambda x: x**2.5, [P(3, 4)]),
    Row("pow_negative", lambda x: x**-1.5, [P(3, 4)]),
    Row("pow_zero", lambda x: x**0, [U(3, 4)]),
    Row("rpow_2", lambda x: 2**x, [U(3, 4)]),
    Row("rpow_half", lambda x: 0.5**x, [U(3, 4)]),
    Row("maximum", lambda a, b: a.maximum(b), [U(3, 4), U(4)]),
    Row("minimum", lambda a, b: rumus.minimum(a, b), [U(3, 1), U(4)]),
    Row("max_binary", lambda a, b: a.max(b), [U(3, 4), U(3, 4)]),
    Row("atan2", lambda a, b: a.atan2(b), [U(3, 1), U(4)]),
    Row("atan2_same", lambda a, b: rumus.atan2(a, b), [NZ(3, 4), NZ(3, 4)]),
    Row("remainder", lambda a, b: a.remainder(b), rem_inputs((3, 4), (3, 4))),
    Row("remainder_bcast", lambda a, b: a % b, rem_inputs((3, 4), (4,))),
    Row(
        "remainder_scalar",
        lambda x: x.remainder(1.5),
        [AWAY(3, 4, points=np.arange(-3, 4) * 1.5, lo=-4, hi=4)],
    ),
    Row("fmod", lambda a, b: a.fmod(b), rem_inputs((3, 4), (3, 4))),
    Row(
        "fmod_scalar",
        lambda x: x.fmod(1.5),
        [AWAY(3, 4, points=np.arange(-3, 4) * 1.5, lo=-4, hi=4)],
    ),
    # ---- where / masked_fill / clamp
    Row("where", lambda x, y, c: rumus.where(c, x, y), [U(3, 4), U(4), B(MASK34)]),
    Row("where_method", lambda x, y, c: x.where(c, y), [U(3, 4), U(3, 1), B(MASK34)]),
    Row("where_from_x", lambda x, y: rumus.where(x > 0, x, y), [NZ(3, 4), U(3, 4)]),
    Row("where_scalar", lambda x, c: rumus.where(c, x, 0.0), [U(3, 4), B(MASK34)]),
    Row("where_scalar_first", lambda x, c: rumus.where(c, 1.5, x), [U(3, 4), B(MASK34)]),
    Row("masked_fill", lambda x, m: x.masked_fill(m, 0.5), [U(3, 4), B(MASK34)]),
    Row(
        "masked_fill_bcast",
        lambda x, m: x.masked_fill(m, -1.0),
        [U(3, 4), B([True, False, True, False])],
    ),
    Row("masked_fill_tensor_value", lambda x, v, m: x.masked_fill(m, v), [U(3, 4), U(), B(MASK34)]),
    Row("clamp", lambda x: x.clamp(-0.5, 0.5), [AWAY(3, 4, points=[-0.5, 0.5])]),
    Row("clamp_kw", lambda x: x.clamp(min=-0.5, max=0.5), [AWAY(3, 4, points=[-0.5, 0.5])]),
    Row("clamp_min_only", lambda x: x.clamp(min=0.2), [AWAY(3, 4, points=[0.2])]),
    Row("clamp_max_only", lambda x: x.clamp(max=0.2), [AWAY(3, 4, points=[0.2])]),
    Row("clamp_min", lambda x: x.clamp_min(0.2), [AWAY(3, 4, points=[0.2])]),
    Row("clamp_max", lambda x: x.clamp_max(-0.2), [AWAY(3, 4, points=[-0.2])]),
    Row("clip", lambda x: rumus.clip(x, -1.0, 1.0), [AWAY(3, 4, points=[-1.0, 1.0])]),
    Row("clamp_tensor_bounds", lambda x, lo, hi: x.clamp(lo, hi), clamp_tensor_inputs),
    Row("clamp_tensor_min", lambda x, lo, hi: x.clamp(min=lo), clamp_tensor_inputs),
    Row("clamp_tensor_max", lambda x, lo, hi: x.clamp(max=hi), clamp_tensor_inputs),
    # ---- reductions
    Row("sum_all", lambda x: x.sum(), [U(3, 4)]),
    Row("sum_dim", lambda x: x.sum(1), [U(3, 4)]),
    Row("sum_dim_neg", lambda x: x.sum(dim=-2), [U(3, 4)]),
    Row("sum_keepdim", lambda x: x.sum(0, keepdim=True), [U(3, 4)]),
    Row("sum_dims", lambda x: x.sum((0, 2)), [U(2, 3, 2)]),
    Row("sum_fn", lambda x: rumus.sum(x, 1, keepdim=True), [U(3, 4)]),
    Row("mean_all", lambda x: x.mean(), [U(3, 4)]),
    Row("mean_dim", lambda x: x.mean(0), [U(3, 4)]),
    Row("mean_keepdim", lambda x: x.mean(-1, keepdim=True), [U(3, 4)]),
    Row("mean_dims", lambda x: x.mean((1, 2), keepdim=True), [U(2, 3, 2)]),
    Row("prod_all", lambda x: x.prod(), [NZ(3, 4, lo=0.5, hi=1.5)]),
    Row("prod_dim", lambda x: x.prod(1), [NZ(3, 4, lo=0.5, hi=1.5)]),
    Row("prod_keepdim", lambda x: x.prod(0, keepdim=True), [NZ(3, 4, lo=0.5, hi=1.5)]),
    Row("prod_all_one_zero", lambda x: x.prod(), [with_zeros(3, 4, zeros=[(1, 2)])]),
    Row("prod_all_two_zeros", lambda x: x.prod(), [with_zeros(3, 4, zeros=[(1, 2), (2, 0)])]),
    Row("prod_dim_one_zero", lambda x: x.prod(1), [with_zeros(3, 4, zeros=[(1, 2)])]),
    Row(
        "prod_dim_two_zeros",
        lambda x: x.prod(1),
        [with_zeros(3, 4, zeros=[(1, 2), (1, 0), (2, 3)])],
    ),
    Row("amax_dim", lambda x: x.amax(1), [DISTINCT(3, 4)]),
    Row("amax_keepdim", lambda x: x.amax(0, keepdim=True), [DISTINCT(3, 4)]),
    Row("amax_all", lambda x: x.amax((0, 1)), [DISTINCT(3, 4)]),
    Row("amin_dim", lambda x: x.amin(0), [DISTINCT(3, 4)]),
    Row("amin_all", lambda x: x.amin(), [DISTINCT(3, 4)]),
    Row("max_all", lambda x: x.max(), [DISTINCT(3, 4)]),
    Row("min_all", lambda x: x.min(), [DISTINCT(3, 4)]),
    Row("max_dim_values", lambda x: x.max(1).values, [DISTINCT(3, 4)]),
    Row("max_dim_tuple", lambda x: x.max(dim=0, keepdim=True), [DISTINCT(3, 4)]),
    Row("min_dim_values", lambda x: x.min(0)[0], [DISTINCT(3, 4)]),
    Row("min_dim_keepdim", lambda x: x.min(-1, keepdim=True).values, [DISTINCT(3, 4)]),
    Row("var_all", lambda x: x.var(), [U(3, 4)]),
    Row("var_dim", lambda x: x.var(1), [U(3, 4)]),
    Row("var_correction0", lambda x: x.var(1, correction=0), [U(3, 4)]),
    Row("var_correction2_keepdim", lambda x: x.var(0, keepdim=True, correction=2), [U(4, 3)]),
    Row("var_unbiased_false", lambda x: x.var(unbiased=False), [U(3, 4)]),
    Row("std_all", lambda x: x.std(), [U(3, 4)]),
    Row("std_dim", lambda x: x.std(0, keepdim=True), [U(3, 4)]),
    Row("std_correction0", lambda x: x.std(1, correction=0), [U(3, 4)]),
    Row("logsumexp", lambda x: x.logsumexp(1), [U(3, 4)]),
    Row("logsumexp_keepdim", lambda x: x.logsumexp(0, keepdim=True), [U(3, 4)]),
    Row("logsumexp_dims", lambda x: x.logsumexp((0, 1)), [U(3, 4)]),
    Row("cumsum0", lambda x: x.cumsum(0), [U(3, 4)]),
    Row("cumsum1", lambda x: x.cumsum(dim=1), [U(3, 4)]),
    Row("cumsum_1d", lambda x: rumus.cumsum(x, 0), [U(5)]),
    Row("cumprod1", lambda x: x.cumprod(1), [NZ(3, 4, lo=0.5, hi=1.5)]),
    Row("cumprod0", lambda x: x.cumprod(0), [NZ(3, 4, lo=0.5, hi=1.5)]),
    # cumprod through zeros (PyTorch's cumprod backward handles them)
    Row("cumprod_one_zero", lambda x: x.cumprod(1), [with_zeros(3, 4, zeros=[(1, 1)])]),
    Row(
        "cumprod_two_zeros",
        lambda x: x.cumprod(1),
        [with_zeros(3, 4, zeros=[(1, 1), (1, 3), (2, 0)])],
    ),
    Row("cumprod_zero_1d", lambda x: x.cumprod(0), [with_zeros(5, zeros=[(2,)])]),
    # ---- linalg
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
    Row("mm", lambda a, b: a.mm(b), [U(3, 4), U(4, 2)]),
    Row("bmm", lambda a, b: rumus.bmm(a, b), [U(2, 3, 2), U(2, 2, 3)]),
    Row("mv", lambda a, b: a.mv(b), [U(3, 4), U(4)]),
    Row("dot", lambda a, b: a.dot(b), [U(5), U(5)]),
    Row("outer", lambda a, b: a.outer(b), [U(3), U(4)]),
    # ---- views and shape ops
    Row("reshape", lambda x: x.reshape(4, 3), [U(3, 4)]),
    Row("reshape_flat", lambda x: x.reshape(-1), [U(3, 4)]),
    Row("reshape_as", lambda x, y: x.reshape_as(y), [U(3, 4), Const(rumus.zeros(2, 6))]),
    Row("view", lambda x: x.view(2, 6), [U(3, 4)], nc=False),
    Row("view_as", lambda x: x.view_as(rumus.zeros(6, 2)), [U(3, 4)], nc=False),
    Row("permute", lambda x: x.permute(1, 2, 0), [U(2, 3, 2)]),
    Row("transpose", lambda x: x.transpose(0, 1), [U(3, 4)]),
    Row("transpose_3d", lambda x: x.transpose(0, 2), [U(2, 3, 2)]),
    Row("swapaxes", lambda x: x.swapaxes(-1, 0), [U(2, 3, 2)]),
    Row("t", lambda x: x.t(), [U(3, 4)]),
    Row("mT", lambda x: x.mT, [U(2, 3, 2)]),
    Row("T", lambda x: x.T, [U(3, 4)]),
    Row("flatten", lambda x: x.flatten(), [U(2, 3, 2)]),
    Row("flatten_start", lambda x: x.flatten(1), [U(2, 3, 2)]),
    Row("unflatten", lambda x: x.unflatten(1, (2, 2)), [U(3, 4)]),
    Row("squeeze", lambda x: x.squeeze(), [U(3, 1, 4)]),
    Row("squeeze_dim", lambda x: x.squeeze(1), [U(3, 1, 4)]),
    Row("unsqueeze", lambda x: x.unsqueeze(0), [U(3, 4)]),
    Row("unsqueeze_neg", lambda x: x.unsqueeze(-1), [U(3, 4)]),
    Row("expand", lambda x: x.expand(3, 4), [U(3, 1)]),
    Row("expand_new_dims", lambda x: x.expand(2, 3, 4), [U(4)]),
    Row("expand_minus1", lambda x: x.expand(2, -1, 4), [U(3, 1)]),
    Row("expand_as", lambda x, y: x.expand_as(y), [U(3, 1), Const(rumus.zeros(3, 4))]),
    Row("broadcast_to", lambda x: x.broadcast_to((3, 4)), [U(4)]),
    Row("narrow", lambda x: x.narrow(1, 1, 2), [U(3, 4)]),
    Row("select", lambda x: x.select(0, 1), [U(3, 4)]),
    Row("select_neg", lambda x: x.select(-1, -1), [U(3, 4)]),
    Row("unbind", lambda x: x.unbind(0), [U(3, 4)]),
    Row("unbind_dim1", lambda x: rumus.unbind(x, 1), [U(3, 4)]),
    Row("movedim", lambda x: x.movedim(0, -1), [U(2, 3, 2)]),
    Row("moveaxis", lambda x: x.moveaxis(2, 0), [U(2, 3, 2)]),
    Row("split", lambda x: x.split(2, dim=1), [U(3, 5)]),
    Row("split_sections", lambda x: x.split([1, 3, 1], 1), [U(3, 5)]),
    Row("chunk", lambda x: x.chunk(2, 0), [U(3, 4)]),
    Row("cat", lambda a, b: rumus.cat([a, b], 1), [U(3, 2), U(3, 3)]),
    Row("cat3_dim0", lambda a, b, c: rumus.cat([a, b, c], 0), [U(1, 4), U(2, 4), U(1, 4)]),
    Row("cat_const", lambda a, b: rumus.cat([a, b], 0), [U(2, 3), Const(np.ones((1, 3)))]),
    Row("stack", lambda a, b: rumus.stack([a, b]), [U(3, 4), U(3, 4)]),
    Row("stack_last", lambda a, b: rumus.stack([a, b], -1), [U(3, 2), U(3, 2)]),
    Row("flip", lambda x: x.flip(0), [U(3, 4)]),
    Row("flip_both", lambda x: x.flip(0, 1), [U(3, 4)]),
    Row("roll", lambda x: x.roll(1, 0), [U(3, 4)]),
    Row("roll_multi", lambda x: x.roll((1, -2), (0, 1)), [U(3, 4)]),
    Row("roll_flat", lambda x: x.roll(5), [U(3, 4)]),
    Row("tril", lambda x: x.tril(), [U(4, 4)]),
    Row("tril_neg", lambda x: x.tril(-1), [U(3, 4)]),
    Row("triu", lambda x: x.triu(1), [U(4, 3)]),
    Row("triu_fn", lambda x: rumus.triu(x), [U(3, 4)]),
    # ---- indexing
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
    Row("getitem_int_tensor_pair", lambda x, i, j: x[i, j], [U(3, 4), I([0, 2, 0]), I([1, 3, 1])]),
    Row("getitem_bool_mask", lambda x, m: x[m], [U(3, 4), B(MASK34)]),
    Row("getitem_bool_rows", lambda x, m: x[m], [U(3, 4), B([True, False, True])]),
    Row("setitem_slice", _setitem_slice, [U(4, 5), U(2, 5)]),
    Row("setitem_bcast", _setitem_bcast, [U(4, 5), U(5)]),
    Row("setitem_int", _setitem_int, [U(4, 5), U(5)]),
    Row("setitem_col_0d_tensor", _setitem_col_scalar_tensor, [U(4, 5), U()]),
    Row("setitem_python_scalar", _setitem_python_scalar, [U(4, 5)]),
    Row("setitem_advanced", _setitem_adv, [U(4, 5), U(2, 5), I([2, 0])]),
    Row("setitem_bool_mask", _setitem_mask, [U(4, 5), U(int(MASK45.sum())), B(MASK45)]),
    Row("setitem_bool_mask_scalar", _setitem_mask_scalar, [U(4, 5), B(MASK45)]),
    Row("setitem_twice", _setitem_twice, [U(3, 4), U(2)]),
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
    Row(
        "scatter",
        lambda x, s, i: x.scatter(1, i, s),
        [U(3, 5), U(3, 2), I([[0, 3], [4, 1], [2, 0]])],
    ),
    Row(
        "scatter_value",
        lambda x, i: x.scatter(1, i, value=2.0),
        [U(3, 5), I([[0, 3], [4, 1], [2, 0]])],
    ),
    Row(
        "scatter_add",
        lambda x, s, i: x.scatter_add(1, i, s),
        [U(3, 5), U(3, 4), I([[0, 3, 0, 0], [4, 1, 1, 2], [2, 0, 4, 2]])],
    ),
    Row(
        "scatter_add_dim0",
        lambda x, s, i: rumus.scatter_add(x, 0, i, s),
        [U(3, 4), U(2, 4), I([[2, 0, 1, 2], [2, 0, 2, 1]])],
    ),
    Row("index_select", lambda x, i: x.index_select(0, i), [U(3, 4), I([2, 0, 2])]),
    Row("index_select_dim1", lambda x, i: rumus.index_select(x, 1, i), [U(3, 4), I([3, 0, 3, 1])]),
    # ---- in-place ops on a non-leaf (a clone of the input)
    Row("inplace_exp_", lambda x: _inplace(x, lambda y: y.exp_()), [U(3, 4)]),
    Row("inplace_sin_", lambda x: _inplace(x, lambda y: y.sin_()), [U(3, 4)]),
    Row("inplace_sigmoid_", lambda x: _inplace(x, lambda y: y.sigmoid_()), [U(3, 4)]),
    Row("inplace_tanh_", lambda x: _inplace(x, lambda y: y.tanh_()), [U(3, 4)]),
    Row("inplace_sqrt_", lambda x: _inplace(x, lambda y: y.sqrt_()), [P(3, 4)]),
    Row("inplace_log_", lambda x: _inplace(x, lambda y: y.log_()), [P(3, 4)]),
    Row(
        "inplace_reciprocal_", lambda x: _inplace(x, lambda y: y.reciprocal_()), [NZ(3, 4, lo=0.5)]
    ),
    Row("inplace_relu_", lambda x: _inplace(x, lambda y: y.relu_()), [NZ(3, 4)]),
    Row("inplace_abs_", lambda x: _inplace(x, lambda y: y.abs_()), [NZ(3, 4)]),
    Row("inplace_neg_", lambda x: _inplace(x, lambda y: y.neg_()), [U(3, 4)]),
    Row("inplace_square_", lambda x: _inplace(x, lambda y: y.square_()), [U(3, 4)]),
    Row("inplace_silu_", lambda x: _inplace(x, lambda y: y.silu_()), [U(3, 4)]),
    Row("inplace_mish_", lambda x: _inplace(x, lambda y: y.mish_()), [U(3, 4)]),
    Row("inplace_floor_", lambda x: _inplace(x, lambda y: y.floor_()), [FRAC(3, 4)]),
    Row("inplace_pow_", lambda x: _inplace(x, lambda y: y.pow_(3)), [U(3, 4)]),
    Row(
        "inplace_clamp_",
        lambda x: _inplace(x, lambda y: y.clamp_(-0.5, 0.5)),
        [AWAY(3, 4, points=[-0.5, 0.5])],
    ),
    Row("inplace_add_", lambda x, b: _inplace(x, lambda y: y.add_(b, alpha=2.0)), [U(3, 4), U(4)]),
    Row("inplace_sub_", lambda x, b: _inplace(x, lambda y: y.sub_(b)), [U(3, 4), U(3, 1)]),
    Row("inplace_mul_", lambda x, b: _inplace(x, lambda y: y.mul_(b)), [U(3, 4), U(4)]),
    Row("inplace_div_", lambda x, b: _inplace(x, lambda y: y.div_(b)), [U(3, 4), NZ(4, lo=0.5)]),
    Row("inplace_atan2_", lambda x, b: _inplace(x, lambda y: y.atan2_(b)), [U(3, 4), NZ(4)]),
    Row("inplace_iadd_imul", _iadd_imul, [U(3, 4), U(4)]),
    Row(
        "inplace_chain",
        lambda x, b: _inplace(x, lambda y: y.mul_(2.0).add_(b).exp_()),
        [U(3, 4), U(4)],
    ),
    Row(
        "inplace_masked_fill_",
        lambda x, m: _inplace(x, lambda y: y.masked_fill_(m, 0.5)),
        [U(3, 4), B(MASK34)],
    ),
    Row("inplace_copy_", lambda x, b: _inplace(x, lambda y: y.copy_(b)) * x, [U(3, 4), U(4)]),
    Row("inplace_fill_", lambda x: _inplace(x, lambda y: y.fill_(2.0)) + x.sum(), [U(3, 4)]),
    Row("inplace_zero_", lambda x: _inplace(x, lambda y: y.zero_()) * 3 + x, [U(3, 4)]),
    Row(
        "inplace_scatter_",
        lambda x, s, i: _inplace(x, lambda y: y.scatter_(1, i, s)),
        [U(3, 5), U(3, 2), I([[0, 3], [4, 1], [2, 0]])],
    ),
    Row(
        "inplace_scatter_add_",
        lambda x, s, i: _inplace(x, lambda y: y.scatter_add_(1, i, s)),
        [U(3, 5), U(3, 4), I([[0, 3, 0, 0], [4, 1, 1, 2], [2, 0, 4, 2]])],
    ),
    # ---- casts and copies
    Row(
        "cast_f32_f64",
        lambda x: x.float().double(),
        [U(3, 4)],
        tol=dict(eps=1e-3, atol=1e-4, rtol=1e-3),
    ),
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
    ),
    Row(
        "cast_type_as",
        lambda x, y: x.type_as(y).double() * 2,
        [U(3, 4), Const(rumus.zeros(1))],
        tol=dict(eps=1e-3, atol=1e-4, rtol=1e-3),
    ),
    Row("cast_double_noop", lambda x: x.double(), [U(3, 4)]),
    Row("clone", lambda x: x.clone(), [U(3, 4)]),
    Row("clone_fn", lambda x: rumus.clone(x) * 2, [U(3, 4)]),
    Row("contiguous", lambda x: x.t().contiguous(), [U(3, 4)]),
    # ---- composites (graph with shared inputs, several paths)
    Row("softmax_like", lambda x: (x - x.logsumexp(1, keepdim=True)).exp(), [U(3, 4)]),
    Row("mlp_like", lambda x, w, b: ((x @ w + b).tanh() @ w.t()).sum(1), [U(3, 4), U(4, 4), U(4)]),
    Row("shared_input_paths", lambda x: x.sin() * x.cos() + x.exp() / (1 + x * x), [U(3, 4)]),
    Row("two_outputs", lambda x, y: (x * y, (x - y).exp().sum()), [U(3, 4), U(4)]),
]


# ---------------------------------------------------------- nn.functional rows
# Inputs stay away from the kinks of each op (hinges, clamps, |x|, max ties).


def pair_away(shape, points, lo=-2.0, hi=2.0, gap=0.15):
    """x, y with x - y at least ``gap`` away from every point (and y uniform)."""

    def gen(rng):
        y = rng.uniform(lo, hi, shape)
        d = AWAY(*shape, points=points, lo=lo, hi=hi, gap=gap)(rng)
        return [y + d, y]

    return gen


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


NN_ROWS = [
    # ---- Rust kernels
    Row("F_linear", lambda x, w, b: F.linear(x, w, b), [U(2, 3), U(4, 3), U(4)]),
    Row("F_linear_1d_nobias", lambda x, w: F.linear(x, w), [U(3), U(2, 3)]),
    Row(
        "F_conv1d",
        lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2),
        [U(2, 2, 7), U(3, 2, 2), U(3)],
    ),
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
        "F_conv2d_same", lambda x, w: F.conv2d(x, w, padding="same"), [U(1, 1, 4, 4), U(2, 1, 2, 3)]
    ),
    Row(
        "F_conv_transpose1d",
        lambda x, w, b: F.conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1),
        [U(1, 2, 4), U(2, 3, 3), U(3)],
    ),
    Row(
        "F_conv_transpose2d",
        lambda x, w: F.conv_transpose2d(x, w, stride=2, output_padding=1, groups=2),
        [U(1, 4, 2, 3), U(4, 1, 2, 2)],
    ),
    Row("F_unfold", lambda x: F.unfold(x, (2, 3), padding=1, stride=(2, 1)), [U(1, 2, 3, 4)]),
    Row("F_fold", lambda x: F.fold(x, (3, 4), 2), [U(1, 8, 6)]),
    Row("F_max_pool1d", lambda x: F.max_pool1d(x, 3, 2, 1), [DISTINCT(1, 2, 7)]),
    Row("F_max_pool2d", lambda x: F.max_pool2d(x, 2), [DISTINCT(1, 2, 4, 4)]),
    Row(
        "F_max_pool2d_ceil_dilation",
        lambda x: F.max_pool2d(x, 2, 2, 1, (1, 2), True),
        [DISTINCT(1, 1, 5, 6)],
    ),
    Row("F_avg_pool1d", lambda x: F.avg_pool1d(x, 3, 2, 1, count_include_pad=False), [U(1, 2, 7)]),
    Row("F_avg_pool2d", lambda x: F.avg_pool2d(x, 2), [U(1, 2, 4, 4)]),
    Row(
        "F_avg_pool2d_ceil_divisor",
        lambda x: F.avg_pool2d(x, 3, 2, 1, True, True, 4),
        [U(1, 1, 5, 4)],
    ),
    Row("F_adaptive_avg_pool1d", lambda x: F.adaptive_avg_pool1d(x, 3), [U(1, 2, 5)]),
    Row("F_adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (2, 3)), [U(1, 2, 5, 4)]),
    Row("F_adaptive_max_pool1d", lambda x: F.adaptive_max_pool1d(x, 3), [DISTINCT(1, 2, 5)]),
    Row(
        "F_adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, (2, 3)), [DISTINCT(1, 2, 5, 4)]
    ),
    Row("F_softmax", lambda x: F.softmax(x, 1), [U(3, 4)]),
    Row("F_softmax_dim0", lambda x: F.softmax(x, dim=0), [U(3, 4)]),
    Row("F_log_softmax", lambda x: F.log_softmax(x, -1), [U(3, 4)]),
    Row("F_softmin", lambda x: F.softmin(x, 1), [U(3, 4)]),
    Row("F_layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w, b), [U(3, 4), U(4), U(4)]),
    Row("F_layer_norm_2d_shape", lambda x: F.layer_norm(x, (2, 3), eps=1e-3), [U(2, 2, 3)]),
    # ---- compositions
    Row(
        "F_bilinear",
        lambda a, b, w, c: F.bilinear(a, b, w, c),
        [U(2, 3), U(2, 2), U(4, 3, 2), U(4)],
    ),
    Row("F_batch_norm_train", _bn_train, [U(4, 3), U(3), U(3)]),
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
    ),
    Row("F_group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), [U(2, 4, 2), U(4), U(4)]),
    Row("F_instance_norm", lambda x, w: F.instance_norm(x, weight=w), [U(2, 2, 3), U(2)]),
    Row("F_rms_norm", lambda x, w: F.rms_norm(x, (4,), w), [U(3, 4), U(4)]),
    Row("F_relu6", lambda x: F.relu6(x), [AWAY(3, 4, points=[0.0, 6.0], lo=-2, hi=8)]),
    Row("F_hardtanh", lambda x: F.hardtanh(x, -0.5, 1.0), [AWAY(3, 4, points=[-0.5, 1.0])]),
    Row("F_selu", lambda x: F.selu(x), [NZ(3, 4)]),
    Row("F_celu", lambda x: F.celu(x, 0.7), [NZ(3, 4)]),
    Row("F_hardsigmoid", lambda x: F.hardsigmoid(x), [AWAY(3, 4, points=[-3.0, 3.0], lo=-4, hi=4)]),
    Row("F_hardswish", lambda x: F.hardswish(x), [AWAY(3, 4, points=[-3.0, 3.0], lo=-4, hi=4)]),
    Row("F_logsigmoid", lambda x: F.logsigmoid(x), [U(3, 4, lo=-4, hi=4)]),
    Row("F_softsign", lambda x: F.softsign(x), [NZ(3, 4)]),
    Row("F_threshold", lambda x: F.threshold(x, 0.5, -1.0), [AWAY(3, 4, points=[0.5])]),
    Row("F_prelu", lambda x, w: F.prelu(x, w), [NZ(2, 3, 2), U(3)]),
    Row("F_glu", lambda x: F.glu(x, 1), [U(2, 4)]),
    Row("F_elu_inplace", lambda x: F.elu(x * 1, inplace=True), [NZ(3, 4)]),
    Row("F_leaky_relu_inplace", lambda x: F.leaky_relu(x * 1, 0.2, True), [NZ(3, 4)]),
    Row("F_normalize", lambda x: F.normalize(x, dim=1), [U(3, 4)]),
    Row("F_normalize_p1", lambda x: F.normalize(x, p=1.0, dim=0), [NZ(3, 4)]),
    Row("F_cosine_similarity", lambda a, b: F.cosine_similarity(a, b, dim=-1), [U(3, 4), U(4)]),
    Row("F_pairwise_distance", lambda a, b: F.pairwise_distance(a, b), [U(3, 4), U(3, 4)]),
    Row("F_embedding", lambda w, i: F.embedding(i, w), [U(5, 3), I([[1, 4, 1], [0, 2, 4]])]),
    # the padding row's values reach the output but get no gradient: compare on the other positions
    Row(
        "F_embedding_padding_idx",
        lambda w, i: F.embedding(i, w, padding_idx=1) * (i != 1).unsqueeze(-1),
        [U(5, 3), I([[1, 4, 1], [0, 2, 4]])],
    ),
    Row("F_dropout", lambda x: _dropout_seeded(x, F.dropout, p=0.4), [U(4, 5)]),
    Row("F_dropout2d", lambda x: _dropout_seeded(x, F.dropout2d, p=0.5), [U(2, 3, 2, 2)]),
    Row("F_pad_constant", lambda x: F.pad(x, (1, 2, -1, 1), value=0.5), [U(2, 3, 4)]),
    Row("F_pad_reflect", lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"), [U(1, 3, 4)]),
    Row("F_pad_replicate", lambda x: F.pad(x, (2, 1), mode="replicate"), [U(2, 3)]),
    Row("F_pad_circular", lambda x: F.pad(x, (1, 3, 2, 0), mode="circular"), [U(1, 3, 4)]),
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
    Row("F_pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), [U(1, 8, 2, 1)]),
    Row("F_pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 2), [U(1, 2, 2, 4)]),
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
        [U(3, 2), U(4, 2), U(4, 2), B(np.array([[1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1]], bool))],
    ),
    Row(
        "F_sdpa_float_mask",
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m),
        [U(3, 2), U(4, 2), U(4, 2), U(3, 4)],
    ),
    # ---- losses
    Row("F_mse_loss", lambda x, y: F.mse_loss(x, y), [U(3, 4), U(3, 4)]),
    Row(
        "F_mse_loss_weight_none",
        lambda x, y, w: F.mse_loss(x, y, reduction="none", weight=w),
        [U(3, 4), U(3, 4), P(3, 4)],
    ),
    Row("F_l1_loss_sum", lambda x, y: F.l1_loss(x, y, reduction="sum"), pair_away((3, 4), [0.0])),
    Row(
        "F_smooth_l1_loss",
        lambda x, y: F.smooth_l1_loss(x, y, beta=0.5),
        pair_away((3, 4), [-0.5, 0.0, 0.5]),
    ),
    Row(
        "F_huber_loss",
        lambda x, y: F.huber_loss(x, y, delta=0.5),
        pair_away((3, 4), [-0.5, 0.0, 0.5]),
    ),
    Row("F_cross_entropy", lambda x: F.cross_entropy(x, rumus.tensor([1, 0, 3])), [U(3, 4)]),
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
    Row(
        "F_nll_loss",
        lambda x, w: F.nll_loss(x, rumus.tensor([1, 0, 3]), w, reduction="mean"),
        [U(3, 4), P(4)],
    ),
    Row(
        "F_binary_cross_entropy",
        lambda p, t, w: F.binary_cross_entropy(p, t, w),
        [U(3, 4, lo=0.1, hi=0.9), U(3, 4, lo=0, hi=1), P(4)],
    ),
    Row(
        "F_bce_with_logits",
        lambda x, t, pw: F.binary_cross_entropy_with_logits(x, t, pos_weight=pw),
        [U(3, 4), U(3, 4, lo=0, hi=1), P(4)],
    ),
    Row(
        "F_kl_div_batchmean", lambda x, t: F.kl_div(x, t, reduction="batchmean"), [U(3, 4), P(3, 4)]
    ),
    Row(
        "F_kl_div_log_target",
        lambda x, t: F.kl_div(x, t, reduction="sum", log_target=True),
        [U(3, 4), U(3, 4)],
    ),
    Row(
        "F_cosine_embedding_loss",
        lambda a, b, y: F.cosine_embedding_loss(a, b, y, margin=0.1),
        _cos_emb_inputs,
    ),
    Row(
        "F_margin_ranking_loss",
        lambda a, b, y: F.margin_ranking_loss(a, b, y, margin=0.2),
        _ranking_inputs,
    ),
]
ROWS += NN_ROWS


# --------------------------------------------------------------- runners


def _seed(name):
    return zlib.crc32(name.encode())


def _build(row, layout):
    """Inputs for ``row``; layout 'contiguous' or 'noncontig'."""
    rng = np.random.default_rng(_seed(row.name))
    specs = (
        row.specs(rng) if callable(row.specs) else [s(rng) if callable(s) else s for s in row.specs]
    )
    inputs = []
    n_noncontig = 0
    for s in specs:
        if isinstance(s, Const):
            v = s.value
            inputs.append(rumus.tensor(v) if isinstance(v, np.ndarray) else v)
            continue
        a = np.asarray(s, dtype=np.float64)
        if layout == "noncontig" and a.ndim >= 1:
            # transposed where that is not contiguous (no size-1 dims in the way), else strided
            views = [t for k, t, _ in noncontig(a, "float64") if k != "expanded"]
            t = next((t for t in views if not t.is_contiguous()), views[-1])
            if not t.is_contiguous():
                n_noncontig += 1
            t = t.requires_grad_()
        else:
            t = rumus.tensor(a, dtype=f64, requires_grad=True)
        inputs.append(t)
    return tuple(inputs), n_noncontig


def _has_noncontig(row):
    return _build(row, "noncontig")[1] > 0


def _params():
    out = []
    for row in ROWS:
        out.append(pytest.param(row, "gradcheck", id=f"gradcheck-{row.name}"))
        if row.gg:
            out.append(pytest.param(row, "gradgradcheck", id=f"gradgradcheck-{row.name}"))
        if row.nc and _has_noncontig(row):
            out.append(pytest.param(row, "noncontig", id=f"noncontig-{row.name}"))
    return out


def test_table_names_unique():
    names = [r.name for r in ROWS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("row,mode", _params())
def test_op(row, mode):
    inputs, n_nc = _build(row, "noncontig" if mode == "noncontig" else "contiguous")
    if mode == "noncontig":
        assert n_nc >= 1
    before = [t.detach().numpy().copy() if isinstance(t, rumus.Tensor) else None for t in inputs]
    with warnings.catch_warnings():
        # float32 rows: their grad_outputs are float32 too (tolerances are loosened)
        warnings.filterwarnings("ignore", "Input #.* is not a double precision", UserWarning)
        if mode == "gradgradcheck":
            assert gradgradcheck(row.fn, inputs, **row.tol) is True
        else:
            assert gradcheck(row.fn, inputs, **row.tol) is True
    # gradcheck leaves its inputs as it found them: same values, no .grad.
    for t, b in zip(inputs, before):
        if isinstance(t, rumus.Tensor):
            np.testing.assert_array_equal(t.detach().numpy(), b)
            if t.requires_grad:
                assert t.grad is None


# --------------------------------------------------- gradcheck's own tests


class DoubledExp(rumus.autograd.Function):
    """exp with a backward that returns twice the true gradient."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return 2 * g * y


class GoodExp(rumus.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class CubeDetachedBackward(rumus.autograd.Function):
    """x**3 whose first derivative is right but is built from a detached x,
    so its own derivative w.r.t. x (the second derivative) is missing."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        xd = x.detach()
        return g * 3 * xd * xd


class CubeGood(rumus.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x


class OffByOneAt12(rumus.autograd.Function):
    """Identity whose backward adds 1 to the gradient at [1, 2]."""

    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        bump = np.zeros(tuple(g.shape))
        bump[1, 2] = 1.0
        return g + rumus.tensor(bump, dtype=g.dtype)


def _x(shape=(3, 4), seed=0, low=-1.0, high=1.0):
    a = np.random.default_rng(seed).uniform(low, high, shape)
    return rumus.tensor(a, dtype=f64, requires_grad=True)


def test_gradcheck_error_is_runtime_error():
    assert issubclass(GradcheckError, RuntimeError)


def test_gradcheck_true_for_correct_ops():
    x = _x()
    assert gradcheck(lambda t: (t * t).exp().sum(1), (x,)) is True
    assert gradcheck(lambda t: t.sin(), x) is True  # a bare tensor is accepted too
    assert gradcheck(GoodExp.apply, (x,)) is True
    assert gradgradcheck(GoodExp.apply, (x,)) is True
    assert gradgradcheck(CubeGood.apply, (x,)) is True


def test_gradcheck_raises_for_wrong_backward():
    x = _x()
    with pytest.raises(
        GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"
    ):
        gradcheck(DoubledExp.apply, (x,))


def test_gradcheck_returns_false_without_raise():
    x = _x()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about here
        assert gradcheck(DoubledExp.apply, (x,), raise_exception=False) is False
    assert gradgradcheck(CubeDetachedBackward.apply, (x,), raise_exception=False) is False


def test_gradcheck_names_output_input_and_worst_element():
    x = _x(seed=1)
    y = _x(shape=(4,), seed=2)
    with pytest.raises(GradcheckError) as info:
        gradcheck(lambda a, b: (a * b, OffByOneAt12.apply(a)), (x, y))
    msg = str(info.value)
    assert "output 1 with respect to input 0" in msg
    assert "d input[(1, 2)]" in msg
    assert "analytical 1.0 vs numerical 0.0" in msg


def test_gradcheck_input_index_counts_all_inputs():
    w = rumus.tensor(np.ones((3, 4)), dtype=f64)  # no grad: not checked, but counted
    x = _x()
    with pytest.raises(GradcheckError, match="output 0 with respect to input 1"):
        gradcheck(lambda a, b: DoubledExp.apply(b) * a, (w, x))


def test_gradgradcheck_catches_wrong_second_derivative():
    x = _x()
    assert gradcheck(CubeDetachedBackward.apply, (x,)) is True  # first derivative is right
    with pytest.raises(GradcheckError):
        gradgradcheck(CubeDetachedBackward.apply, (x,))


def test_gradgradcheck_explicit_grad_outputs():
    x = _x()
    v = rumus.tensor(np.random.default_rng(5).uniform(-1, 1, (3, 4)), dtype=f64, requires_grad=True)
    assert gradgradcheck(lambda t: t.sin() * t, (x,), (v,)) is True
    assert gradgradcheck(lambda t: t.sin() * t, (x,), v) is True


def test_gradcheck_output_detached_by_mistake_fails():
    x = _x()
    # analytical d/dx = 1 (the detached half is invisible), numerical = 2
    with pytest.raises(GradcheckError):
        gradcheck(lambda t: (t * 1).detach() + t, (x,))
    # an output that does not require grad at all: analytical 0, numerical 2
    assert gradcheck(lambda t: t.detach() * 2, (x,), raise_exception=False) is False


def test_gradcheck_unused_input_and_constant_input():
    x = _x()
    y = _x(shape=(2,), seed=3)
    c = rumus.tensor(np.full((3, 4), 2.0), dtype=f64)
    assert gradcheck(lambda a, b: a.exp(), (x, y)) is True  # b unused: zero rows both ways
    assert gradcheck(lambda a, k, s: a * k * s, (x, c, 3.0)) is True  # non-tensors pass through


def test_gradcheck_skips_integer_outputs():
    x = rumus.tensor(np.arange(12.0).reshape(3, 4) * 0.37 % 1.0, dtype=f64, requires_grad=True)
    assert gradcheck(lambda t: t.max(1), (x,)) is True  # (values, int64 indices)
    assert gradcheck(lambda t: (t.argmax(1), t * 2), (x,)) is True


def test_gradcheck_requires_an_input_that_requires_grad():
    x = rumus.tensor(np.ones(3), dtype=f64)
    with pytest.raises(ValueError, match="at least one input"):
        gradcheck(lambda t: t * 2, (x,))


def test_gradcheck_warns_for_float32_input():
    x = rumus.tensor(np.linspace(-1, 1, 6), dtype=rumus.float32, requires_grad=True)
    with pytest.warns(UserWarning, match="not a double precision"):
        assert gradcheck(lambda t: t * 2, (x,), eps=1e-2, atol=1e-2, rtol=1e-2) is True


def test_gradcheck_rejects_overlapping_input():
    base = rumus.tensor(np.ones((1, 4)), dtype=f64)
    x = base.expand(3, 4).requires_grad_()
    with pytest.raises(RuntimeError, match="stride 0"):
        gradcheck(lambda t: t * 2, (x,))


def test_gradcheck_keeps_inputs_and_layout():
    a = np.random.default_rng(7).uniform(-1, 1, (4, 3))
    x = rumus.tensor(a, dtype=f64).t().requires_grad_()  # (3, 4), transposed layout
    strides = x.stride()
    assert gradcheck(lambda t: (t * t).sum(0), (x,)) is True
    assert x.stride() == strides
    np.testing.assert_array_equal(x.detach().numpy(), a.T)
    assert x.grad is None


def test_gradcheck_sees_the_perturbed_layout():
    # the function reads the input's strides: gradcheck must hand it the caller's layout
    a = np.random.default_rng(8).uniform(-1, 1, (4, 3))
    x = rumus.tensor(a, dtype=f64).t().requires_grad_()
    seen = []

    def fn(t):
        seen.append(t.is_contiguous())
        return t.exp()

    assert gradcheck(fn, (x,)) is True
    assert seen and not any(seen)


def test_gradcheck_numerical_jacobian_matches_closed_form():
    # a wrong backward is caught whichever value it is off by: compare against
    # the closed form d/dx sum(x**2 * w) = 2 x w computed with NumPy
    a = np.random.default_rng(9).uniform(-1, 1, (2, 3))
    w = np.random.default_rng(10).uniform(-1, 1, (2, 3))
    x = rumus.tensor(a, dtype=f64, requires_grad=True)
    wt = rumus.tensor(w, dtype=f64)
    assert gradcheck(lambda t: (t * t * wt).sum(), (x,)) is True
    (g,) = rumus.autograd.grad((x * x * wt).sum(), (x,))
    np.testing.assert_allclose(g.numpy(), 2 * a * w, rtol=1e-12, atol=1e-12)
