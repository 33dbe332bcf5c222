"""The activation modules of issue 16 (RReLU, CELU, SELU, GLU, Hardswish, Hardsigmoid,
Hardshrink, Softshrink, Tanhshrink, LogSigmoid, Softmin, Softmax2d, Threshold, Softsign)
and the functional forms they call: values against NumPy, rrelu's random slopes,
in-place forms, reprs, PyTorch's module paths, and PyTorch parity when installed.
Gradients: the registry rows in tests/op_db_nn_more.py."""

import numpy as np
import pytest
import rumus
import rumus.nn as nn
import rumus.nn.functional as F
from conftest import dt, to_np
from rumus.autograd import gradcheck

X = np.array([[-3.0, -1.0, -0.4, 0.0, 0.3], [0.6, 1.2, 2.5, -2.0, 4.0]])
SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def elu(x, a=1.0):
    return np.where(x > 0, x, a * (np.exp(x) - 1))


# (module, NumPy reference)
CASES = [
    (lambda: nn.CELU(0.7), lambda x: np.maximum(x, 0) + np.minimum(0, 0.7 * np.expm1(x / 0.7))),
    (lambda: nn.SELU(), lambda x: SELU_S * elu(x, SELU_A)),
    (lambda: nn.Hardswish(), lambda x: x * np.clip(x + 3, 0, 6) / 6),
    (lambda: nn.Hardsigmoid(), lambda x: np.clip(x + 3, 0, 6) / 6),
    (lambda: nn.Hardshrink(), lambda x: np.where(np.abs(x) > 0.5, x, 0)),
    (lambda: nn.Hardshrink(1.5), lambda x: np.where(np.abs(x) > 1.5, x, 0)),
    (lambda: nn.Softshrink(), lambda x: np.sign(x) * np.maximum(np.abs(x) - 0.5, 0)),
    (lambda: nn.Softshrink(1.0), lambda x: np.sign(x) * np.maximum(np.abs(x) - 1.0, 0)),
    (lambda: nn.Tanhshrink(), lambda x: x - np.tanh(x)),
    (lambda: nn.LogSigmoid(), lambda x: np.log(sigmoid(x))),
    (lambda: nn.Softsign(), lambda x: x / (1 + np.abs(x))),
    (lambda: nn.Threshold(0.5, -7.0), lambda x: np.where(x > 0.5, x, -7.0)),
    (lambda: nn.Softmin(1), lambda x: softmax(-x, 1)),
    (lambda: nn.Softmin(0), lambda x: softmax(-x, 0)),
    (lambda: nn.GLU(), lambda x: x[:, :2] * sigmoid(x[:, 2:4]) if x.shape[1] == 4 else None),
    (lambda: nn.RReLU(0.1, 0.3).eval(), lambda x: np.where(x >= 0, x, 0.2 * x)),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_module_values(i, device):
    make, ref = CASES[i]
    x = X[:, :4] if isinstance(make(), nn.GLU) else X
    m = make()
    got = m(dt(x, device=device))
    tol = 1e-12 if device == "cpu" else 1e-5
    np.testing.assert_allclose(to_np(got), ref(x), rtol=tol, atol=tol)


def test_softmax2d(device):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 4, 5))
    m = nn.Softmax2d()
    np.testing.assert_allclose(to_np(m(dt(x, device=device))), softmax(x, 1), rtol=1e-5)
    np.testing.assert_allclose(to_np(m(dt(x[0], device=device))), softmax(x[0], 0), rtol=1e-5)
    with pytest.raises(ValueError, match=r"3D or 4D, got 2D"):
        m(dt(x[0, 0], device=device))


def test_rrelu_training_slopes():
    rumus.manual_seed(0)
    x = rumus.tensor(-np.linspace(0.5, 3.0, 4000), requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slope = to_np(y) / to_np(x.detach())
    assert (slope >= 0.1).all() and (slope <= 0.3).all()
    assert abs(slope.mean() - 0.2) < 0.01 and slope.std() > 0.04  # U(0.1, 0.3): std 0.058
    y.sum().backward()
    np.testing.assert_allclose(to_np(x.grad), slope, rtol=1e-12)  # the gradient is the slope
    pos = rumus.tensor(np.linspace(0.1, 2.0, 50))
    np.testing.assert_array_equal(to_np(F.rrelu(pos, training=True)), to_np(pos))
    # the module samples only in training mode
    m = nn.RReLU(0.1, 0.3)
    assert m.training
    a, b = to_np(m(x.detach())), to_np(m(x.detach()))
    assert not np.array_equal(a, b)
    np.testing.assert_allclose(to_np(m.eval()(x.detach())), 0.2 * to_np(x.detach()))

    # gradcheck with a fixed draw
    def fn(t):
        rumus.manual_seed(3)
        return F.rrelu(t, training=True)

    assert gradcheck(fn, (rumus.tensor(X + 0.05, requires_grad=True),))  # off the kink at 0
    with pytest.raises(RuntimeError, match="Lower bound"):
        F.rrelu(x, 0.5, 0.1)


def test_inplace_forms():
    for fn, ref in [
        (lambda t: F.rrelu(t, 0.1, 0.3, inplace=True), lambda x: np.where(x >= 0, x, 0.2 * x)),
        (lambda t: F.rrelu_(t, 0.1, 0.3), lambda x: np.where(x >= 0, x, 0.2 * x)),
        (F.relu_, lambda x: np.maximum(x, 0)),
        (lambda t: F.elu_(t, 0.5), lambda x: elu(x, 0.5)),
        (F.selu_, lambda x: SELU_S * elu(x, SELU_A)),
        (lambda t: F.celu_(t, 2.0), lambda x: 2.0 * elu(x / 2.0)),
        (lambda t: F.leaky_relu_(t, 0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
        (lambda t: F.hardtanh_(t, -0.5, 1.0), lambda x: np.clip(x, -0.5, 1.0)),
        (lambda t: F.threshold_(t, 0.1, 9.0), lambda x: np.where(x > 0.1, x, 9.0)),
    ]:
        t = rumus.tensor(X)
        assert fn(t) is t
        np.testing.assert_allclose(to_np(t), ref(X), rtol=1e-12)
    for m in (
        nn.RReLU(inplace=True).eval(),
        nn.CELU(inplace=True),
        nn.SELU(inplace=True),
        nn.Hardswish(inplace=True),
        nn.Hardsigmoid(inplace=True),
        nn.Threshold(0.0, 1.0, inplace=True),
    ):
        t = rumus.tensor(X)
        want = to_np(
            type(m)(**{k: v for k, v in _kwargs(m).items() if k != "inplace"}).eval()(
                rumus.tensor(X)
            )
        )
        assert m(t) is t
        np.testing.assert_allclose(to_np(t), want, rtol=1e-12)


def _kwargs(m):
    keys = ("lower", "upper", "alpha", "threshold", "value")
    return {k: getattr(m, k) for k in keys if hasattr(m, k)}


def test_reprs():
    assert repr(nn.RReLU()) == "RReLU(lower=0.125, upper=0.3333333333333333)"
    assert repr(nn.RReLU(0.1, 0.2, True)) == "RReLU(lower=0.1, upper=0.2, inplace=True)"
    assert repr(nn.CELU(2.0)) == "CELU(alpha=2.0)"
    assert repr(nn.SELU(inplace=True)) == "SELU(inplace=True)"
    assert repr(nn.GLU()) == "GLU(dim=-1)"
    assert repr(nn.Hardshrink()) == "Hardshrink(0.5)"
    assert repr(nn.Softshrink(0.25)) == "Softshrink(0.25)"
    assert repr(nn.Threshold(0.1, 20)) == "Threshold(threshold=0.1, value=20)"
    assert repr(nn.Softmin(1)) == "Softmin(dim=1)"
    assert repr(nn.Softmax2d()) == "Softmax2d()"
    for cls in (nn.Tanhshrink, nn.LogSigmoid, nn.Softsign):
        assert repr(cls()) == f"{cls.__name__}()"
    # the existing ones keep PyTorch's signatures
    assert repr(nn.Softplus(2.0, 10.0)) == "Softplus(beta=2.0, threshold=10.0)"
    assert repr(nn.GELU("tanh")) == "GELU(approximate='tanh')"
    assert repr(nn.LeakyReLU(0.2, True)) == "LeakyReLU(negative_slope=0.2, inplace=True)"
    assert repr(nn.Hardtanh(-2.0, 2.0)) == "Hardtanh(min_val=-2.0, max_val=2.0)"
    assert repr(nn.PReLU(3)) == "PReLU(num_parameters=3)"


def test_hardtanh_deprecated_keywords():
    with pytest.warns(FutureWarning, match="min_value"):
        m = nn.Hardtanh(min_value=-0.5)
    with pytest.warns(FutureWarning, match="max_value"):
        m2 = nn.Hardtanh(max_value=0.5)
    assert (m.min_val, m.max_val, m2.min_val, m2.max_val) == (-0.5, 1.0, -1.0, 0.5)
    with pytest.raises(AssertionError, match="must be greater than min_val"):
        nn.Hardtanh(1.0, 0.0)


def test_softmin_implicit_dim_warns():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        out = nn.Softmin()(rumus.tensor(X))
    np.testing.assert_allclose(to_np(out), softmax(-X, 1), rtol=1e-12)


def test_bad_input():
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0"):
        F.softshrink(rumus.tensor(X), -1.0)
    for fn in (F.hardshrink, F.softshrink, F.tanhshrink, F.rrelu):
        with pytest.raises(RuntimeError, match="not implemented for"):
            fn(rumus.tensor([1, 2]))
        with pytest.raises(TypeError):
            fn([1.0, 2.0])
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        nn.GLU(0)(rumus.tensor(np.ones((3, 2))))


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("RReLU", {}),
        ("CELU", {"alpha": 0.5}),
        ("SELU", {}),
        ("GLU", {"dim": 0}),
        ("Hardswish", {}),
        ("Hardsigmoid", {}),
        ("Hardshrink", {"lambd": 0.3}),
        ("Softshrink", {"lambd": 0.3}),
        ("Tanhshrink", {}),
        ("LogSigmoid", {}),
        ("Softmin", {"dim": 1}),
        ("Softmax2d", {}),
        ("Threshold", {"threshold": 0.2, "value": -1.0}),
        ("Softsign", {}),
    ],
)
def test_parity_with_torch(name, kwargs):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).normal(size=(2, 4, 3, 2))
    rm = getattr(nn, name)(**kwargs).eval()
    tm = getattr(torch.nn, name)(**kwargs).eval()
    assert repr(rm) == repr(tm)
    rx = rumus.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    ry, ty = rm(rx), tm(tx)
    np.testing.assert_allclose(to_np(ry), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    ry.sum().backward()
    ty.sum().backward()
    # PyTorch's float64 hardsigmoid backward multiplies by 1/6 rounded to float32.
    rtol = 1e-7 if name == "Hardsigmoid" else 1e-10
    np.testing.assert_allclose(to_np(rx.grad), tx.grad.numpy(), rtol=rtol, atol=1e-12)
