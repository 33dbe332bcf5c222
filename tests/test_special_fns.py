"""rumus.special's Bessel, Airy, erfcx, zeta, incomplete-gamma and orthogonal-polynomial
functions (rust/ops/special_fns.rs): accuracy over wide ranges against scipy.special,
PyTorch's special values, dtypes and broadcasting, the GPU, gradients and bad input. The
generic registry tests are the entries in tests/op_db_special.py."""

import numpy as np
import pytest
import rumus
import rumus.special as S
import scipy.special as sc
from conftest import need_gpu, to_np

F64 = rumus.float64
WIDE = np.concatenate(
    [np.linspace(-30, 30, 1201), np.logspace(-8, 3, 200), -np.logspace(-8, 3, 200), [0.0]]
)
# the non-oscillating ones are also checked from 1e-300 to 1e300
HUGE = np.logspace(-300, 300, 401)

UNARY = {
    "bessel_j0": sc.j0,
    "bessel_j1": sc.j1,
    "bessel_y0": sc.y0,
    "bessel_y1": sc.y1,
    "modified_bessel_k0": sc.k0,
    "modified_bessel_k1": sc.k1,
    "scaled_modified_bessel_k0": sc.k0e,
    "scaled_modified_bessel_k1": sc.k1e,
    "spherical_bessel_j0": lambda x: sc.spherical_jn(0, x),
    "airy_ai": lambda x: sc.airy(x)[0],
    "erfcx": sc.erfcx,
}


def _f64(a):
    return rumus.tensor(np.asarray(a, np.float64), dtype=F64)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_accuracy_over_wide_ranges(name):
    xs = WIDE if "_j" in name or "_y" in name or name == "airy_ai" else np.append(WIDE, HUGE)
    got = to_np(getattr(S, name)(_f64(xs)))
    want = UNARY[name](xs)
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    # relative error, or absolute near the zeros of the oscillating functions; Ai's series
    # and asymptotic expansion meet near x = -7 with ~1e-10 absolute error
    floor = 1.0 if name == "airy_ai" else 1e-3
    err = np.abs(got[finite] - want[finite]) / np.maximum(np.abs(want[finite]), floor)
    assert err.max() < 1e-9, (name, xs[finite][err.argmax()], err.max())


def test_incomplete_gamma_and_zeta_accuracy():
    a, x = np.meshgrid(
        [0.1, 0.5, 1, 2.5, 7, 20, 100, 1000.0], [0.01, 0.5, 1, 3, 10, 30, 200, 1500.0]
    )
    for name, ref in (("gammainc", sc.gammainc), ("gammaincc", sc.gammaincc)):
        got = to_np(getattr(S, name)(_f64(a), _f64(x)))
        np.testing.assert_allclose(got, ref(a, x), rtol=1e-12, atol=1e-300, err_msg=name)
    np.testing.assert_allclose(
        to_np(S.gammainc(_f64(a), _f64(x)) + S.gammaincc(_f64(a), _f64(x))), 1
    )
    s, q = np.meshgrid([1.5, 2, 3.3, 10, 50], [0.1, 1, 2.5, 10, 1e5])
    np.testing.assert_allclose(to_np(S.zeta(_f64(s), _f64(q))), sc.zeta(s, q), rtol=1e-13)
    assert S.zeta(_f64([2.0]), 1.0).item() == pytest.approx(np.pi**2 / 6, rel=1e-15)
    # a huge exponent: the terms vanish at once (no walk up to q = 10 + x)
    assert S.zeta(_f64([1e300, 1e6]), 1.5).tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    "name,ref",
    [
        ("chebyshev_polynomial_t", sc.eval_chebyt),
        ("chebyshev_polynomial_u", sc.eval_chebyu),
        ("hermite_polynomial_h", sc.eval_hermite),
        ("hermite_polynomial_he", sc.eval_hermitenorm),
        ("laguerre_polynomial_l", sc.eval_laguerre),
        ("legendre_polynomial_p", sc.eval_legendre),
        ("shifted_chebyshev_polynomial_t", lambda n, x: sc.eval_chebyt(n, 2 * x - 1)),
    ],
)
def test_polynomials_low_and_high_degrees(name, ref):
    x = np.linspace(-1.2, 1.2, 49)
    if name.startswith("shifted"):
        x = (x + 1) / 2
    for n in (0, 1, 2, 5, 13, 64, 65, 200):  # above 64 the Chebyshev ones use cos/sin forms
        got = to_np(getattr(S, name)(_f64(x), n))
        want = ref(n, x)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max(), err_msg=n)


def test_chebyshev_third_and_fourth_kinds_and_the_edges():
    x = _f64([-1.0, -0.4, 0.2, 1.0])
    for n in range(6):
        u, u1 = S.chebyshev_polynomial_u(x, n), S.chebyshev_polynomial_u(x, n - 1)
        np.testing.assert_allclose(to_np(S.chebyshev_polynomial_v(x, n)), to_np(u - u1), atol=1e-12)
        np.testing.assert_allclose(to_np(S.chebyshev_polynomial_w(x, n)), to_np(u + u1), atol=1e-12)
    # closed forms at x = ±1 for any degree, the trigonometric ones inside
    assert S.chebyshev_polynomial_v(x, 101).tolist()[::3] == [-203.0, 1.0]
    assert S.chebyshev_polynomial_w(x, 101).tolist()[::3] == [-1.0, 203.0]
    assert S.chebyshev_polynomial_u(x, 1000).tolist()[::3] == [1001.0, 1001.0]


def test_pytorch_special_values():
    """PyTorch's results at the edges: poles, negative arguments, infinities, NaN, and the
    degree's truncation (checked against torch when it is installed)."""
    inf, nan = float("inf"), float("nan")
    table = [
        (S.bessel_y0, [0.0, -1.0, inf], [-inf, nan, nan]),
        (S.bessel_y1, [0.0, -1.0], [-inf, nan]),
        (S.bessel_j0, [inf, -inf, 0.0], [nan, nan, 1.0]),
        (S.modified_bessel_k0, [0.0, -1.0, inf], [inf, nan, 0.0]),
        (S.scaled_modified_bessel_k1, [0.0, -2.0], [inf, nan]),
        (S.airy_ai, [inf, -inf, 200.0], [nan, nan, 0.0]),
        (S.spherical_bessel_j0, [0.0, inf], [1.0, 0.0]),
        (S.erfcx, [-30.0, 1e30], [inf, 1 / (np.sqrt(np.pi) * 1e30)]),
    ]
    for fn, xs, want in table:
        np.testing.assert_allclose(to_np(fn(_f64(xs))), want, rtol=1e-14, err_msg=fn.__name__)
    # the degree truncates (-0.5 is 0) and its cases come before a NaN x
    x, n = _f64([nan, nan, 0.3, 0.3]), _f64([-1.0, 0.0, 2.7, -0.5])
    np.testing.assert_allclose(to_np(S.chebyshev_polynomial_t(x, n)), [0, 1, -0.82, 1], atol=1e-15)
    np.testing.assert_array_equal(
        to_np(
            S.zeta(_f64([2.0, 1.0, 0.5, 2.0, nan, 2.5]), _f64([1.0, 1.0, 1.0, -2.0, -1.0, -1.5]))
        ),
        [np.pi**2 / 6, inf, nan, inf, inf, nan],
    )
    np.testing.assert_array_equal(
        to_np(S.gammainc(_f64([0.0, 1.0, -1.0, 0.0, nan]), _f64([1.0, 0.0, 1.0, 0.0, 0.0]))),
        [1.0, 0.0, nan, nan, 0.0],
    )
    torch = pytest.importorskip("torch")
    xs = np.array(
        [-np.inf, -50, -3, -1, -1e-3, -0.0, 0.0, 1e-3, 0.5, 1, 2, 30, 700, np.inf, np.nan]
    )
    for name in sorted(UNARY):
        got = to_np(getattr(S, name)(_f64(xs)))
        want = getattr(torch.special, name)(torch.tensor(xs, dtype=torch.float64)).numpy()
        # PyTorch's J, Y and Ai are off by up to ~1e-8 in places (ours agree with scipy)
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-300, err_msg=name)


def test_dtypes_scalars_and_broadcasting():
    x32 = rumus.tensor([[0.5], [1.5]])
    assert S.bessel_j0(x32).dtype == rumus.float32
    assert S.bessel_j0(rumus.tensor([1, 2])).dtype == rumus.float32  # ints give the default float
    assert S.erfcx(x32.to(rumus.float16)).dtype == rumus.float16
    t = S.chebyshev_polynomial_t(x32, rumus.tensor([0.0, 1.0, 2.0], dtype=F64))
    assert t.dtype == F64 and t.shape == (2, 3)
    np.testing.assert_allclose(to_np(t), [[1, 0.5, -0.5], [1, 1.5, 3.5]], rtol=1e-6)
    assert S.hermite_polynomial_h(x32, 2).dtype == rumus.float32  # a number does not promote
    assert S.gammainc(2.0, x32).shape == (2, 1)  # the number may come first
    assert S.zeta(3, rumus.tensor([1, 2])).dtype == rumus.float32
    np.testing.assert_allclose(
        to_np(S.zeta(3, rumus.tensor([1, 2]))), sc.zeta(3, [1, 2]), rtol=1e-6
    )
    assert S.airy_ai(rumus.tensor([])).shape == (0,)
    assert S.bessel_y1(rumus.tensor(2.0)).shape == ()


def test_gradients():
    x = _f64([0.3, 1.7, 4.0]).requires_grad_()
    for fn, d in (
        (S.bessel_j0, lambda v: -sc.j1(v)),
        (S.bessel_j1, lambda v: sc.jvp(1, v)),
        (S.bessel_y1, lambda v: sc.yvp(1, v)),
        (S.modified_bessel_k1, lambda v: sc.kvp(1, v)),
        (S.erfcx, lambda v: 2 * v * sc.erfcx(v) - 2 / np.sqrt(np.pi)),
    ):
        (g,) = rumus.autograd.grad(fn(x).sum(), x)
        np.testing.assert_allclose(to_np(g), d(to_np(x.detach())), rtol=1e-10, err_msg=fn.__name__)
    assert S.bessel_j1(x).grad_fn.name() == "SpecialBesselJ1Backward0"
    # J1'(0) = 1/2 (not 0/0)
    z = _f64([0.0]).requires_grad_()
    S.bessel_j1(z).backward()
    assert z.grad.item() == 0.5
    # second derivatives: the backward is made of the same ops
    assert rumus.autograd.gradgradcheck(S.bessel_j0, (x,))
    assert rumus.autograd.gradcheck(lambda q: S.zeta(_f64(2.5), q), (x,))
    assert rumus.autograd.gradcheck(lambda v: S.gammaincc(1.3, v), (x,))
    with pytest.raises(NotImplementedError, match="zeta"):
        S.zeta(x + 1.5, 2.0).sum().backward()
    with pytest.raises(NotImplementedError, match="gammainc"):
        S.gammainc(x, 2.0).sum().backward()
    # PyTorch's non-differentiable ones: their results do not require grad
    for fn in (S.airy_ai, S.spherical_bessel_j0, S.scaled_modified_bessel_k0):
        assert not fn(x).requires_grad
    assert not S.legendre_polynomial_p(x, 3).requires_grad


def test_bad_input():
    x = rumus.tensor([0.5, 1.5])
    with pytest.raises(TypeError, match="bessel_j0"):
        S.bessel_j0(0.5)
    with pytest.raises(TypeError, match="Tensor"):
        S.zeta(2.0, 1.0)
    with pytest.raises(TypeError, match="chebyshev_polynomial_t"):
        S.chebyshev_polynomial_t(x, "3")
    with pytest.raises(TypeError, match="complex"):
        S.erfcx(rumus.tensor([1 + 1j]))
    with pytest.raises(RuntimeError):
        S.gammainc(x, rumus.ones(3))


def test_gpu_matches_cpu():
    need_gpu()
    rng = np.random.default_rng(3)
    x = rumus.from_numpy(rng.uniform(0.1, 5, (3, 17)).astype(np.float32))
    g = x.to("gpu")
    for name in sorted(UNARY):
        out = getattr(S, name)(g)
        assert out.device.type == "gpu" and out.dtype == rumus.float32
        np.testing.assert_array_equal(to_np(out), to_np(getattr(S, name)(x)), err_msg=name)
    out = S.laguerre_polynomial_l(g, 4)
    assert out.device.type == "gpu"
    np.testing.assert_array_equal(to_np(out), to_np(S.laguerre_polynomial_l(x, 4)))
    gx = g.clone().requires_grad_()
    S.bessel_y0(gx).sum().backward()
    assert gx.grad.device.type == "gpu"
    np.testing.assert_allclose(to_np(gx.grad), -sc.y1(to_np(x)), rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="device"):
        S.zeta(g, x)
