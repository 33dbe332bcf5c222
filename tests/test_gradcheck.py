"""Finite-difference checks of every differentiable rumus op.

The rows come from the op registry (tests/op_db.py: each entry's ``grads``, then GRAPH_ROWS).
Each row is run through ``gradcheck``, through ``gradgradcheck`` (unless its ``gg`` flag is
off), and once more through ``gradcheck`` with non-contiguous inputs (transposed for
ndim >= 2, strided for 1-D). The last part checks ``gradcheck`` itself with deliberately
wrong custom Functions.

Inputs are seeded float64, small, and kept away from the points where an
op is not differentiable (0 for abs/relu, ties for max, integers for floor).
"""

import warnings
import zlib

import numpy as np
import pytest
import rumus
from conftest import noncontig
from op_db import GRAD_ROWS, OP_DB, Const
from rumus.autograd import GradcheckError, gradcheck, gradgradcheck

f64 = rumus.float64
ROWS = GRAD_ROWS


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


def test_differentiable_entries_have_rows():
    # an entry marked differentiable gets gradchecked: the factories add a row, others list some
    missing = [op.name for op in OP_DB if op.grad and not op.grads]
    assert not missing, f"differentiable op_db entries without gradcheck rows: {missing}"


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
