"""rumus.autograd.functional: jacobian, hessian, vjp, jvp, vhp, hvp against analytic values
and finite differences, with PyTorch's tuple/tensor conventions and strict-mode errors."""

import numpy as np
import pytest
import rumus
from rumus.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp


def t64(a, requires_grad=False):
    return rumus.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def close(t, expected, tol=1e-6):
    np.testing.assert_allclose(t.detach().cpu().numpy(), expected, rtol=tol, atol=tol)


def fd_jacobian(f, x, eps=1e-6):
    """Central differences of f (numpy in, numpy out) at x."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(f(x))
    jac = np.zeros(y.shape + x.shape)
    for idx in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        jac[(...,) + idx] = (np.asarray(f(x + d)) - np.asarray(f(x - d))) / (2 * eps)
    return jac


def softmax_np(x):
    e = np.exp(x - x.max())
    return e / e.sum()


RNG = np.random.default_rng(0)


def test_jacobian_cube_is_diagonal():
    x = RNG.standard_normal(4)
    j = jacobian(lambda t: t**3, t64(x))
    close(j, np.diag(3 * x**2))
    assert not j.requires_grad


def test_jacobian_matmul_and_tuple_structure():
    a = RNG.standard_normal((2, 3))
    b = RNG.standard_normal((3, 4))
    ja, jb = jacobian(lambda x, y: x @ y, (t64(a), t64(b)))
    assert ja.shape == (2, 4, 2, 3) and jb.shape == (2, 4, 3, 4)
    # d(AB)_ij / dA_kl = delta_ik B_lj ; d(AB)_ij / dB_kl = A_ik delta_jl
    close(ja, np.einsum("ik,lj->ijkl", np.eye(2), b))
    close(jb, np.einsum("ik,jl->ijkl", a, np.eye(4)))
    (j,) = jacobian(lambda x: (x * 2,), (t64([1.0, 2.0]),))
    assert isinstance(j, tuple) and len(j) == 1
    close(j[0], 2 * np.eye(2))
    out = jacobian(lambda x: (x * 2, x.sum()), t64([1.0, 2.0]))
    assert isinstance(out, tuple) and len(out) == 2
    close(out[1], [1.0, 1.0])


def test_jacobian_softmax_analytic_and_fd():
    x = RNG.standard_normal(5)
    j = jacobian(lambda t: t.softmax(0), t64(x))
    s = softmax_np(x)
    close(j, np.diag(s) - np.outer(s, s))
    close(j, fd_jacobian(softmax_np, x), tol=1e-6)


def test_jacobian_vectorize_and_forward_mode_match():
    x = RNG.standard_normal(3)

    def f(t):
        return rumus.stack([t[0] * t[1], t.exp().sum(), rumus.sin(t[2])])

    ref = fd_jacobian(lambda v: np.array([v[0] * v[1], np.exp(v).sum(), np.sin(v[2])]), x)
    close(jacobian(f, t64(x)), ref, tol=1e-6)
    close(jacobian(f, t64(x), vectorize=True), ref, tol=1e-6)
    close(jacobian(f, t64(x), vectorize=True, strategy="forward-mode"), ref, tol=1e-6)


def test_jacobian_create_graph_differentiates_again():
    x = t64([1.0, 2.0], requires_grad=True)
    j = jacobian(lambda t: t**3, x, create_graph=True)
    assert j.requires_grad
    (g,) = rumus.autograd.grad(j.sum(), x)
    close(g, 6 * np.array([1.0, 2.0]))


def test_jacobian_independent_input_and_strict():
    x, y = t64([1.0, 2.0]), t64([3.0])
    jx, jy = jacobian(lambda a, b: a * 2, (x, y))
    close(jy, np.zeros((2, 1)))
    with pytest.raises(RuntimeError, match="independent of input 1"):
        jacobian(lambda a, b: a * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        jacobian(lambda a: rumus.ones(2, dtype=rumus.float64), x, strict=True)
    with pytest.raises(RuntimeError, match="not supported together"):
        jacobian(lambda a: a, x, strict=True, vectorize=True)
    with pytest.raises(ValueError, match="forward-mode"):
        jacobian(lambda a: a, x, strategy="sideways")
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        jacobian(lambda a: a, x, strategy="forward-mode")
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        jacobian(lambda a: a, [1.0])


def test_hessian_analytic_and_tuple():
    x = RNG.standard_normal(3)
    h = hessian(lambda t: (t**3).sum(), t64(x))
    close(h, np.diag(6 * x))
    a = RNG.standard_normal((3, 3))
    a = a + a.T
    h = hessian(lambda t: t @ t64(a) @ t, t64(x))
    close(h, 2 * a)
    (hxx, hxy), (hyx, hyy) = hessian(lambda p, q: (p * q).sum() + (p**2).sum(), (t64(x), t64(x)))
    close(hxx, 2 * np.eye(3))
    close(hxy, np.eye(3))
    close(hyx, np.eye(3))
    close(hyy, np.zeros((3, 3)))
    close(
        hessian(
            lambda t: (t**3).sum(), t64(x), vectorize=True, outer_jacobian_strategy="forward-mode"
        ),
        np.diag(6 * x),
    )
    with pytest.raises(RuntimeError, match="single element"):
        hessian(lambda t: t * 2, t64(x))


def test_hessian_logsumexp_against_fd():
    x = RNG.standard_normal(4)

    def grad_np(v):
        return softmax_np(v)

    h = hessian(lambda t: rumus.logsumexp(t, 0), t64(x))
    close(h, fd_jacobian(grad_np, x), tol=1e-6)


def test_vjp_and_jvp():
    x = RNG.standard_normal(3)
    v = RNG.standard_normal(3)
    out, g = vjp(lambda t: t**3, t64(x), t64(v))
    close(out, x**3)
    close(g, 3 * x**2 * v)
    out, g = jvp(lambda t: t**3, t64(x), t64(v))
    close(g, 3 * x**2 * v)
    a = RNG.standard_normal((2, 3))
    out, g = jvp(lambda t: t64(a) @ t, t64(x), t64(v))
    close(g, a @ v)
    out, g = vjp(lambda t: t64(a) @ t, t64(x), t64([1.0, -1.0]))
    close(g, a.T @ np.array([1.0, -1.0]))
    # tuples in, tuples out
    outs, gs = vjp(lambda p, q: (p * q, p.sum()), (t64(x), t64(v)), (t64(np.ones(3)), t64(2.0)))
    assert isinstance(outs, tuple) and isinstance(gs, tuple)
    close(gs[0], v + 2)
    close(gs[1], x)
    _, s = vjp(lambda t: (t**2).sum(), t64([3.0]))  # v may be None for a scalar output
    close(s, [6.0])
    with pytest.raises(RuntimeError, match="v can only be None"):
        vjp(lambda t: t * 2, t64(x))
    with pytest.raises(RuntimeError, match="v has invalid size"):
        vjp(lambda t: t * 2, t64(x), t64([1.0]))
    with pytest.raises(RuntimeError, match="v can only be None"):
        jvp(lambda t: t * 2, t64(x))


def test_vhp_hvp():
    x = RNG.standard_normal(3)
    v = RNG.standard_normal(3)
    a = RNG.standard_normal((3, 3))

    def f(t):
        return (t**3).sum() + t @ t64(a) @ t

    h = np.diag(6 * x) + a + a.T
    out, r = vhp(f, t64(x), t64(v))
    close(out, (x**3).sum() + x @ a @ x)
    close(r, v @ h)
    out, r = hvp(f, t64(x), t64(v))
    close(r, h @ v)
    with pytest.raises(RuntimeError, match="single Tensor"):
        hvp(lambda t: (t, t), t64(x), t64(v))


def test_create_graph_and_strict_on_products():
    x = t64([1.0, 2.0], requires_grad=True)
    _, g = vjp(lambda t: (t**3).sum(), x, create_graph=True)
    assert g.requires_grad
    (gg,) = rumus.autograd.grad(g.sum(), x)
    close(gg, 6 * np.array([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="independent of input"):
        vjp(lambda p, q: p.sum(), (t64([1.0]), t64([2.0])), strict=True)
    _, (gp, gq) = vjp(lambda p, q: p.sum(), (t64([1.0]), t64([2.0])))
    close(gq, [0.0])
    with pytest.raises(RuntimeError, match="twice differentiable"):
        hvp(lambda t: t.sum(), t64([1.0]), t64([1.0]), strict=True)


def test_jacobian_on_gpu(gpu):
    x = rumus.tensor([1.0, 2.0], device="gpu")
    j = jacobian(lambda t: t**3, x)
    assert j.device.type == "gpu"
    close(j, np.diag([3.0, 12.0]), tol=1e-5)


# ------------------------------------------------------------------ forward_ad


def test_forward_ad_tangents_match_jacobian_vector_products():
    import rumus.autograd.forward_ad as fwAD

    x = RNG.standard_normal(4)
    w = RNG.standard_normal((3, 4))
    t = RNG.standard_normal(4)
    with fwAD.dual_level():
        d = fwAD.make_dual(t64(x), t64(t))
        y = (t64(w) @ d).tanh()
        primal, tangent = fwAD.unpack_dual(y)
        close(primal, np.tanh(w @ x))
        close(tangent, (1 - np.tanh(w @ x) ** 2) * (w @ t))
        assert fwAD.unpack_dual(d).tangent is not None
        assert fwAD.unpack_dual(t64(x)).tangent is None  # depends on no dual
        z = d.sum()
    z.backward()  # the graph stays usable for reverse mode
    assert fwAD.unpack_dual(y).tangent is None  # no level open


def test_forward_ad_errors():
    import rumus.autograd.forward_ad as fwAD

    with pytest.raises(RuntimeError, match="dual level"):
        fwAD.make_dual(t64([1.0]), t64([1.0]))
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="different size"):
            fwAD.make_dual(t64([1.0, 2.0]), t64([1.0]))
        with pytest.raises(RuntimeError, match="Nested"):
            fwAD.enter_dual_level()


def test_grad_is_grads_batched_stacks_rows():
    x = t64([1.0, 2.0, 3.0], requires_grad=True)
    w = t64([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]])
    y = w @ (x**2)
    (rows,) = rumus.autograd.grad(y, x, rumus.eye(2, dtype=rumus.float64), is_grads_batched=True)
    close(rows, np.array([[1.0, 0, 2], [0, 1, 0]]) * (2 * np.array([1.0, 2, 3])))
    with pytest.raises(RuntimeError, match="first dimension of each grad_output"):
        rumus.autograd.grad(y, x, rumus.ones(3, dtype=rumus.float64), is_grads_batched=True)
    z = t64([1.0], requires_grad=True)
    (gz,) = rumus.autograd.grad(
        y, z, rumus.eye(2, dtype=rumus.float64), is_grads_batched=True, allow_unused=True
    )
    assert gz is None
