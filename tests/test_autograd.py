"""Autograd engine semantics (PyTorch's), checked against closed forms and
NumPy: backward, accumulation, broadcasting, autograd.grad, grad modes,
detach, grad_fn graph structure, version counters and in-place ops,
higher-order derivatives, anomaly detection, memory of saved tensors."""

import gc
import os
import re
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest
import rumus
import rumus.autograd
from conftest import ac, make, tensor, val, wide

agrad = rumus.autograd.grad
stb = rumus.autograd.saved_tensor_bytes


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def unbroadcast(g, shape):
    """Sum ``g`` down to ``shape`` (NumPy reference for broadcast grads)."""
    g = np.asarray(g)
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] != 1:
            g = g.sum(axis=i, keepdims=True)
    return g


def nonleaf_grad(t):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return t.grad


def _sig(a):
    return 1.0 / (1.0 + np.exp(-a))


# --------------------------------------------------------------------------
# devices: every test runs on the CPU and on the GPU (``device`` fixture)
# --------------------------------------------------------------------------

F32_TOL = (1e-5, 1e-6)  # conftest.TOL["float32"]


class On:
    """A test's tensors on one device. On the CPU everything is exactly what
    the plain helpers give (float64). On the GPU the float64 data become
    float32: ``make`` rounds its values to float32 (kept as float64 arrays, so
    the NumPy references see exactly what the GPU gets), ``leaf``/``t`` cast
    float64 to float32, and ``ac``/``tol`` use at least float32 tolerances."""

    def __init__(self, device):
        self.device = device
        self.f = wide(device)
        self.gpu = device == "gpu"

    def r(self, a):
        """``a`` rounded to float32 on the GPU (float64 arrays only)."""
        a = np.asarray(a)
        if self.gpu and a.dtype == np.float64:
            return a.astype(np.float32).astype(np.float64)
        return a

    def make(self, shape, **kw):
        return self.r(make(shape, "float64", **kw))

    def leaf(self, a, dtype=None):
        t = tensor(np.asarray(a, dtype=dtype or self.f), device=self.device)
        t.requires_grad_()
        return t

    def t(self, a, dtype=None):
        a = np.asarray(a)
        if dtype is None and self.gpu and a.dtype == np.float64:
            dtype = "float32"
        return tensor(a, dtype, self.device)

    def tol(self, rtol=None, atol=None):
        """The CPU's tolerances, at least float32's on the GPU."""
        if self.gpu:
            rtol, atol = max(rtol or 0, F32_TOL[0]), max(atol or 0, F32_TOL[1])
        return {k: v for k, v in (("rtol", rtol), ("atol", atol)) if v is not None}

    def ac(self, t, expected, rtol=None, atol=None):
        if not self.gpu:
            return ac(t, expected, rtol=rtol, atol=atol)
        assert t is not None and t.device.type == "gpu", t
        expected = np.asarray(expected)
        if expected.dtype == np.float64:
            expected = expected.astype(np.float32)
        ac(t, expected, **self.tol(rtol, atol))

    def same_data(self, a, b):
        """``a`` and ``b`` share memory. CPU: equal data_ptr(). GPU (no
        data_ptr()): a write through a detached ``a`` shows in ``b`` (this
        overwrites their values; the caller must not need them afterwards)."""
        if not self.gpu:
            assert a.data_ptr() == b.data_ptr()
            return
        with rumus.no_grad():
            a.detach().fill_(-42.0)
        assert (val(b) == -42).all(), "the two tensors do not share memory"


# --------------------------------------------------------------------------
# basic backward
# --------------------------------------------------------------------------


def test_backward_scalar_square(device):
    D = On(device)
    a = D.make((5,))
    x = D.leaf(a)
    y = (x * x).sum()
    assert y.requires_grad and not y.is_leaf
    assert x.grad is None
    y.backward()
    D.ac(x.grad, 2 * a)


def test_backward_composite_expression(device):
    D = On(device)
    a = D.make((2, 3))
    x = D.leaf(a)
    (x.exp() * x.sin()).sum().backward()
    D.ac(x.grad, np.exp(a) * (np.sin(a) + np.cos(a)))


def test_backward_mean_and_zero_dim(device):
    D = On(device)
    a = D.make((4, 3))
    x = D.leaf(a)
    x.mean().backward()
    D.ac(x.grad, np.full((4, 3), 1.0 / 12.0))

    s = D.leaf(np.float64(2.5))
    assert tuple(s.shape) == ()
    y = s * s * s
    y.backward()
    D.ac(s.grad, np.array(3 * 2.5**2))


def test_backward_matmul_closed_form(device):
    D = On(device)
    A = D.make((3, 4))
    B = D.make((4, 2), rng=np.random.default_rng(3))
    W = D.make((3, 2), rng=np.random.default_rng(4))
    a, b = D.leaf(A), D.leaf(B)
    ((a @ b) * D.t(W)).sum().backward()
    D.ac(a.grad, W @ B.T)
    D.ac(b.grad, A.T @ W)


# --------------------------------------------------------------------------
# accumulation
# --------------------------------------------------------------------------


def test_grad_accumulates_across_two_backward_calls(device):
    D = On(device)
    a = D.make((4,))
    x = D.leaf(a)
    y = (x * x.exp()).sum()
    y.backward(retain_graph=True)
    g1 = val(x.grad)
    np.testing.assert_allclose(g1, np.exp(a) * (1 + a), **D.tol(rtol=1e-12))
    y.backward()
    D.ac(x.grad, 2 * np.exp(a) * (1 + a))


def test_grad_accumulates_across_graphs(device):
    D = On(device)
    a = D.make((4,))
    x = D.leaf(a)
    (x * 3.0).sum().backward()
    (x * x).sum().backward()
    D.ac(x.grad, 3.0 + 2 * a)


def test_retain_graph_three_times_then_error(device):
    D = On(device)
    a = D.make((3,))
    x = D.leaf(a)
    s = x.exp().sum()
    s.backward(retain_graph=True)
    s.backward(retain_graph=True)
    s.backward()
    D.ac(x.grad, 3 * np.exp(a))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        s.backward()


def test_tensor_used_twice_in_one_expression(device):
    D = On(device)
    a = D.make((5,))
    x = D.leaf(a)
    (x * x).sum().backward()
    D.ac(x.grad, 2 * a)

    x = D.leaf(a)
    (x * x + x).sum().backward()
    D.ac(x.grad, 2 * a + 1)

    x = D.leaf(a)
    (x * x.sin() + x).sum().backward()
    D.ac(x.grad, np.sin(a) + a * np.cos(a) + 1)

    # a non-leaf used twice
    x = D.leaf(a)
    y = x * 2.0
    (y * y + y).sum().backward()
    D.ac(x.grad, (2 * (2 * a) + 1) * 2)


# --------------------------------------------------------------------------
# broadcasting
# --------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_broadcast_grads_have_input_shape(op, device):
    D = On(device)
    A = D.make((3, 1))
    B = D.make((4,), low=0.5, high=2.0)
    W = D.make((3, 4), rng=np.random.default_rng(7))
    a, b = D.leaf(A), D.leaf(B)
    out = getattr(a, op)(b)
    assert tuple(out.shape) == (3, 4)
    (out * D.t(W)).sum().backward()
    if op == "add":
        da, db = W, W
    elif op == "sub":
        da, db = W, -W
    elif op == "mul":
        da, db = W * B, W * A
    else:
        da, db = W / B, -W * A / B**2
    assert tuple(a.grad.shape) == (3, 1)
    assert tuple(b.grad.shape) == (4,)
    D.ac(a.grad, unbroadcast(da, (3, 1)))
    D.ac(b.grad, unbroadcast(db, (4,)))


def test_broadcast_grads_leading_dims_and_scalar(device):
    D = On(device)
    A = D.make((2, 1, 3))
    B = D.make((4, 1), rng=np.random.default_rng(8))
    S = D.r(np.float64(1.7))
    W = D.make((2, 4, 3), rng=np.random.default_rng(9))
    a, b, s = D.leaf(A), D.leaf(B), D.leaf(S)
    out = a * b * s
    assert tuple(out.shape) == (2, 4, 3)
    (out * D.t(W)).sum().backward()
    D.ac(a.grad, unbroadcast(W * B * S, (2, 1, 3)))
    D.ac(b.grad, unbroadcast(W * A * S, (4, 1)))
    D.ac(s.grad, np.array((W * A * B).sum()))


def test_expand_grad_sums(device):
    D = On(device)
    A = D.make((3, 1))
    W = D.make((3, 4), rng=np.random.default_rng(2))
    a = D.leaf(A)
    (a.expand(3, 4) * D.t(W)).sum().backward()
    D.ac(a.grad, W.sum(axis=1, keepdims=True))


# --------------------------------------------------------------------------
# backward(gradient=...) and errors
# --------------------------------------------------------------------------


def test_backward_with_gradient_for_nonscalar_output(device):
    D = On(device)
    A = D.make((2, 3))
    G = D.make((2, 3), rng=np.random.default_rng(11))
    x = D.leaf(A)
    y = x * x
    y.backward(gradient=D.t(G))
    D.ac(x.grad, 2 * A * G)

    x = D.leaf(A)
    (x.exp()).backward(D.t(G))  # positional
    D.ac(x.grad, np.exp(A) * G)


def test_nonscalar_backward_without_gradient_raises(device):
    D = On(device)
    x = D.leaf(D.make((2, 3)))
    with pytest.raises(
        RuntimeError, match="grad can be implicitly created only for scalar outputs"
    ):
        (x * 2.0).backward()
    with pytest.raises(
        RuntimeError, match="grad can be implicitly created only for scalar outputs"
    ):
        agrad(x * 2.0, x)
    assert x.grad is None


def test_backward_gradient_wrong_shape_raises(device):
    D = On(device)
    x = D.leaf(D.make((2, 3)))
    with pytest.raises(RuntimeError):
        (x * 2.0).backward(D.t(np.ones(3)))


def test_backward_on_tensor_not_requiring_grad_raises(device):
    D = On(device)
    t = D.t(D.make((3,)))
    with pytest.raises(RuntimeError, match="does not require grad"):
        t.sum().backward()
    x = D.leaf(D.make((3,)))
    with rumus.no_grad():
        y = (x * 2.0).sum()
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.backward()


def test_second_backward_without_retain_graph_raises(device):
    D = On(device)
    a = D.make((3,))
    x = D.leaf(a)
    s = x.exp().sum()
    s.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        s.backward()
    # the failed call did not touch the leaf's gradient
    D.ac(x.grad, np.exp(a))

    x = D.leaf(a)
    s = (x * x).sum()
    agrad(s, x)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        agrad(s, x)


@pytest.mark.parametrize("kind", ["add", "sub_reshape"])
def test_backward_twice_on_graph_that_saved_nothing(kind, device):
    # PyTorch accumulates again here when no node saved a tensor; rumus frees
    # every node, so the second call raises (issue 15) instead of doubling grads.
    D = On(device)
    A = D.make((2, 3))
    B = D.make((2, 3), rng=np.random.default_rng(5))
    a, b = D.leaf(A), D.leaf(B)
    s = (a + b).sum() if kind == "add" else (a - b).reshape(-1).sum()
    s.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        s.backward()
    D.ac(a.grad, np.full((2, 3), 1.0))
    t = (a + b).sum()
    t.backward(retain_graph=True)
    t.backward()
    D.ac(a.grad, np.full((2, 3), 3.0))


# --------------------------------------------------------------------------
# autograd.grad
# --------------------------------------------------------------------------


def test_grad_multiple_inputs_and_outputs(device):
    D = On(device)
    X = D.make((3,))
    Y = D.make((3,), rng=np.random.default_rng(1))
    x, y = D.leaf(X), D.leaf(Y)
    o1 = (x * y).sum()
    o2 = (x * x).sum()
    gx, gy = agrad([o1, o2], [x, y])
    D.ac(gx, Y + 2 * X)
    D.ac(gy, X)
    assert not gx.requires_grad
    assert x.grad is None and y.grad is None


def test_grad_single_tensor_returns_tuple(device):
    D = On(device)
    X = D.make((3,))
    x = D.leaf(X)
    res = agrad((x * x).sum(), x)
    assert isinstance(res, tuple) and len(res) == 1
    D.ac(res[0], 2 * X)


def test_grad_outputs(device):
    D = On(device)
    X = D.make((2, 3))
    Y = D.make((2, 3), rng=np.random.default_rng(1))
    G = D.make((2, 3), rng=np.random.default_rng(2))
    G2 = D.make((2, 3), rng=np.random.default_rng(3))
    x, y = D.leaf(X), D.leaf(Y)
    gx, gy = agrad(x * y, [x, y], grad_outputs=D.t(G))
    D.ac(gx, G * Y)
    D.ac(gy, G * X)

    x = D.leaf(X)
    (gx,) = agrad([x * 2.0, x.exp()], [x], grad_outputs=[D.t(G), D.t(G2)])
    D.ac(gx, 2 * G + np.exp(X) * G2)

    # None for a scalar output means ones
    x = D.leaf(X)
    (gx,) = agrad([(x * 2.0).sum(), x.exp()], [x], grad_outputs=[None, D.t(G2)])
    D.ac(gx, 2.0 + np.exp(X) * G2)


def test_grad_allow_unused(device):
    D = On(device)
    X = D.make((3,))
    x, z = D.leaf(X), D.leaf(X + 1)
    gx, gz = agrad((x * x).sum(), [x, z], allow_unused=True)
    D.ac(gx, 2 * X)
    assert gz is None

    with pytest.raises(
        RuntimeError,
        match="One of the differentiated Tensors appears to not have been used in the graph",
    ):
        agrad((x * x).sum(), [x, z])


def test_grad_does_not_touch_leaf_grads(device):
    D = On(device)
    X = D.make((3,))
    x = D.leaf(X)
    x.grad = D.t(np.full(3, 7.0))
    (g,) = agrad((x * x).sum(), x)
    D.ac(g, 2 * X)
    D.ac(x.grad, np.full(3, 7.0))

    y = D.leaf(X)
    agrad((y * x).sum(), [x])
    assert y.grad is None


def test_grad_wrt_nonleaf(device):
    D = On(device)
    X = D.make((3,))
    x = D.leaf(X)
    y = x * 2.0
    z = (y * y).sum()
    gy, gx = agrad(z, [y, x])
    D.ac(gy, 2 * (2 * X))
    D.ac(gx, 8 * X)


def test_create_graph_retains_graph_by_default(device):
    D = On(device)
    A = D.make((3,))
    x = D.leaf(A)
    y = (x**3).sum()
    (g,) = agrad(y, x, create_graph=True)  # retain_graph defaults to create_graph
    D.ac(g, 3 * A**2)
    y.backward()
    D.ac(x.grad, 3 * A**2)


def test_grad_setter_validates_shape_and_dtype(device):
    D = On(device)
    x = D.leaf(make((2,), "float32"), "float32")
    with pytest.raises(RuntimeError, match="size"):
        x.grad = D.t(np.ones(3, dtype=np.float32))
    # PyTorch: "assigned grad has data of a different type" (older) or
    # "attempting to assign a gradient with dtype ..." (2.x)
    with pytest.raises(RuntimeError, match="type"):  # (no float64 on the GPU: int32 there)
        x.grad = (
            D.t(np.ones(2, dtype=np.float64))
            if device == "cpu"
            else D.t(np.ones(2, dtype=np.int32))
        )
    assert x.grad is None
    x.grad = D.t(np.full(2, 4.0, dtype=np.float32))
    D.ac(x.grad, np.full(2, 4.0, dtype=np.float32))
    x.grad = None
    assert x.grad is None


# --------------------------------------------------------------------------
# backward(inputs=...), autograd.backward
# --------------------------------------------------------------------------


def test_backward_inputs_accumulates_only_listed(device):
    D = On(device)
    X = D.make((3,))
    Y = D.make((3,), rng=np.random.default_rng(1))
    x, y = D.leaf(X), D.leaf(Y)
    (x * y).sum().backward(inputs=[x])
    D.ac(x.grad, Y)
    assert y.grad is None

    (x * y).sum().backward(inputs=[y])
    D.ac(y.grad, X)
    D.ac(x.grad, Y)  # unchanged

    rumus.autograd.backward((x * y * 2.0).sum(), inputs=[x])
    D.ac(x.grad, 3 * Y)
    D.ac(y.grad, X)


def test_autograd_backward_function_multiple_tensors(device):
    D = On(device)
    X = D.make((2, 2))
    G = D.make((2, 2), rng=np.random.default_rng(3))
    x = D.leaf(X)
    rumus.autograd.backward([(x * 3.0).sum(), x * x], [None, D.t(G)])
    D.ac(x.grad, 3.0 + 2 * X * G)


# --------------------------------------------------------------------------
# retain_grad, is_leaf, requires_grad propagation
# --------------------------------------------------------------------------


def test_retain_grad_on_nonleaf(device):
    D = On(device)
    X = D.make((4,))
    x = D.leaf(X)
    y = x * 2.0
    w = x * 3.0
    assert not y.retains_grad
    y.retain_grad()
    assert y.retains_grad
    assert not x.retains_grad
    ((y * y).sum() + w.sum()).backward()
    D.ac(y.grad, 2 * (2 * X))
    D.ac(x.grad, 8 * X + 3.0)
    assert nonleaf_grad(w) is None


def test_is_leaf_and_requires_grad_propagation(device):
    D = On(device)
    A = D.make((3,))
    a = D.t(A)
    assert a.is_leaf and not a.requires_grad and a.grad_fn is None
    x = D.leaf(A)
    assert x.is_leaf and x.requires_grad and x.grad_fn is None

    b = a * 2.0
    assert b.is_leaf and not b.requires_grad and b.grad_fn is None
    c = a * x
    assert not c.is_leaf and c.requires_grad and c.grad_fn is not None
    d = c.detach()
    assert d.is_leaf and not d.requires_grad and d.grad_fn is None

    with rumus.no_grad():
        e = x * 2.0
    assert e.is_leaf and not e.requires_grad and e.grad_fn is None

    t = rumus.tensor([1.0, 2.0], requires_grad=True, device=device)
    assert t.is_leaf and t.requires_grad and t.device.type == device

    x.requires_grad = False
    assert not x.requires_grad
    x.requires_grad = True
    assert x.requires_grad


def test_requires_grad_setter_on_nonleaf_raises(device):
    D = On(device)
    x = D.leaf(D.make((3,)))
    y = x * 2.0
    with pytest.raises(RuntimeError):
        y.requires_grad = False


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_requires_grad_on_non_float_raises(dtype, device):
    D = On(device)
    t = D.t(make((3,), dtype))
    with pytest.raises(RuntimeError, match="only Tensors of floating point.*can require gradients"):
        t.requires_grad_()
    with pytest.raises(RuntimeError, match="only Tensors of floating point.*can require gradients"):
        t.requires_grad = True
    assert not t.requires_grad
    t.requires_grad_(False)  # allowed
    assert not t.requires_grad


def test_tensor_factory_int_requires_grad_raises(device):
    with pytest.raises(RuntimeError, match="only Tensors of floating point.*can require gradients"):
        rumus.tensor([1, 2], requires_grad=True, device=device)


# --------------------------------------------------------------------------
# grad modes
# --------------------------------------------------------------------------


def test_no_grad_and_nested_enable_grad(device):
    D = On(device)
    X = D.make((3,))
    x = D.leaf(X)
    assert rumus.is_grad_enabled()
    with rumus.no_grad():
        assert not rumus.is_grad_enabled()
        y = x * 2.0
        with rumus.enable_grad():
            assert rumus.is_grad_enabled()
            z = x * 2.0
        assert not rumus.is_grad_enabled()
    assert rumus.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn.name() == "MulBackward0"
    D.ac(y, 2 * X)
    z.sum().backward()
    D.ac(x.grad, np.full(3, 2.0))


def test_no_grad_and_enable_grad_decorators(device):
    D = On(device)
    x = D.leaf(D.make((3,)))

    @rumus.no_grad()
    def f(t):
        return t * 2.0, rumus.is_grad_enabled()

    @rumus.enable_grad()
    def g(t):
        return t * 2.0, rumus.is_grad_enabled()

    y, en = f(x)
    assert not en and not y.requires_grad and y.grad_fn is None
    assert rumus.is_grad_enabled()
    assert f.__name__ == "f"

    with rumus.no_grad():
        z, en = g(x)
        assert not rumus.is_grad_enabled()
    assert en and z.requires_grad and z.grad_fn is not None


def test_set_grad_enabled_context_manager_and_function(device):
    D = On(device)
    x = D.leaf(D.make((3,)))
    with rumus.set_grad_enabled(False):
        assert not rumus.is_grad_enabled()
        y = x * 2.0
    assert rumus.is_grad_enabled()
    assert not y.requires_grad

    with rumus.no_grad():
        with rumus.set_grad_enabled(True):
            assert rumus.is_grad_enabled()
            z = x * 2.0
        assert not rumus.is_grad_enabled()
    assert z.requires_grad

    try:
        rumus.set_grad_enabled(False)
        assert not rumus.is_grad_enabled()
        w = x * 2.0
        assert not w.requires_grad and w.grad_fn is None
        rumus.set_grad_enabled(True)
        assert rumus.is_grad_enabled()
        w = x * 2.0
        assert w.requires_grad
    finally:
        rumus.set_grad_enabled(True)


def test_set_grad_enabled_decorator(device):
    D = On(device)
    x = D.leaf(D.make((3,)))

    @rumus.set_grad_enabled(False)
    def f(t):
        return t * 2.0, rumus.is_grad_enabled()

    # decorating does not leave grad mode changed
    assert rumus.is_grad_enabled()
    y, en = f(x)
    assert not en and not y.requires_grad
    assert rumus.is_grad_enabled()


def test_inference_mode_context_and_decorator(device):
    D = On(device)
    X = D.make((3,))
    x = D.leaf(X)
    with rumus.inference_mode():
        assert not rumus.is_grad_enabled()
        y = x * 2.0
    assert rumus.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    D.ac(y, 2 * X)

    with rumus.inference_mode(False):
        assert rumus.is_grad_enabled()
        z = x * 2.0
    assert z.requires_grad

    @rumus.inference_mode()
    def f(t):
        return t.exp(), rumus.is_grad_enabled()

    w, en = f(x)
    assert not en and not w.requires_grad
    D.ac(w, np.exp(X))
    assert rumus.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = []
    with rumus.no_grad():
        th = threading.Thread(target=lambda: seen.append(rumus.is_grad_enabled()))
        th.start()
        th.join()
        assert not rumus.is_grad_enabled()
    assert seen == [True]


def test_grad_mode_restored_after_exception():
    with pytest.raises(ValueError):
        with rumus.no_grad():
            raise ValueError("x")
    assert rumus.is_grad_enabled()

    @rumus.no_grad()
    def f():
        raise ValueError("y")

    with pytest.raises(ValueError):
        f()
    assert rumus.is_grad_enabled()


# --------------------------------------------------------------------------
# detach
# --------------------------------------------------------------------------


def test_detach_shares_storage(device):
    D = On(device)
    A = D.make((4,))
    x = D.leaf(A)
    d = x.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    if device == "cpu":
        assert d.data_ptr() == x.data_ptr()
    # (on the GPU, which has no data_ptr(), the writes below show the sharing)
    d.mul_(2.0)
    np.testing.assert_array_equal(val(x), 2 * A)
    d[0] = 100.0
    assert val(x)[0] == 100.0
    assert x.requires_grad  # the original is untouched

    y = x * 3.0
    e = y.detach()
    e.add_(1.0)
    np.testing.assert_allclose(val(y)[1:], 6 * A[1:] + 1, **D.tol(rtol=1e-14))


def test_detach_shares_version_counter(device):
    D = On(device)
    # An in-place change through a detached alias of a saved tensor is caught.
    A = D.make((3,))
    x = D.leaf(A)
    h = x * 1.0
    y = h.sin()  # saves h
    v0 = h._version
    h.detach().add_(1.0)
    assert h._version > v0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_detach_in_place(device):
    D = On(device)
    A = D.make((3,))
    x = D.leaf(A)
    y = x * 2.0
    y.detach_()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    D.ac(y, 2 * A)
    z = (y * y).sum()
    assert not z.requires_grad


# --------------------------------------------------------------------------
# grad_fn names and graph structure
# --------------------------------------------------------------------------


def test_grad_fn_names(device):
    D = On(device)
    x = D.leaf(D.make((2, 3)))
    y = D.leaf(D.make((2, 3), rng=np.random.default_rng(1)))
    a = D.leaf(D.make((2, 3)))
    b = D.leaf(D.make((3, 4)))
    assert (x * y).grad_fn.name() == "MulBackward0"
    assert (x + y).grad_fn.name() == "AddBackward0"
    assert x.exp().grad_fn.name() == "ExpBackward0"
    assert x.sum().grad_fn.name() == "SumBackward0"
    assert (a @ b).grad_fn.name() == "MmBackward0"
    assert a.mm(b).grad_fn.name() == "MmBackward0"


def test_next_functions_structure(device):
    D = On(device)
    A = D.make((3,))
    x = D.leaf(A)
    c = D.t(D.make((3,), rng=np.random.default_rng(1)))
    z = x * c
    nf = z.grad_fn.next_functions
    assert isinstance(nf, tuple) and len(nf) == 2
    acc, idx = nf[0]
    assert acc.name() == "AccumulateGrad" and idx == 0
    assert nf[1] == (None, 0)
    v = acc.variable
    if device == "cpu":
        D.same_data(v, x)
    assert tuple(v.shape) == (3,) and v.requires_grad

    w = z.exp()
    s = w.sum()
    n1 = s.grad_fn
    assert n1.name() == "SumBackward0"
    n2, i2 = n1.next_functions[0]
    assert n2.name() == "ExpBackward0" and i2 == 0
    n3, i3 = n2.next_functions[0]
    assert n3.name() == "MulBackward0" and i3 == 0
    assert n3.next_functions[0][0].name() == "AccumulateGrad"
    if device == "gpu":  # last: the check overwrites x
        D.same_data(v, x)


def test_accumulate_grad_variable_is_the_leaf(device):
    D = On(device)
    x = D.leaf(D.make((3,)))
    z = x * 2.0
    acc = z.grad_fn.next_functions[0][0]
    # rumus hands out a new Python handle on the same tensor (not `is x`):
    # same data, and gradients written through it reach x.
    v = acc.variable
    if device == "cpu":
        D.same_data(v, x)
    assert v.requires_grad and v.is_leaf
    z.sum().backward()
    assert v.grad is not None and x.grad is not None
    np.testing.assert_allclose(val(x.grad), 2.0)
    if device == "gpu":  # last: the check overwrites x
        D.same_data(v, x)


# --------------------------------------------------------------------------
# version counters, in-place ops
# --------------------------------------------------------------------------


def test_modified_saved_output_raises_with_op_and_versions(device):
    D = On(device)
    x = D.leaf(D.make((3,)))
    y = x.exp()
    z = y * 2.0
    assert y._version == 0
    y.add_(1.0)
    assert y._version == 1
    with pytest.raises(RuntimeError) as ei:
        z.sum().backward()
    msg = str(ei.value)
    assert "modified by an inplace operation" in msg
    assert "ExpBackward0" in msg
    assert re.search(r"is at version 1\b", msg), msg
    assert re.search(r"expected version 0\b", msg), msg


def test_modified_saved_input_raises_versions_after_two_changes(device):
    D = On(device)
    x = D.leaf(D.make((3,)))
    h = x * 1.0
    y = h.sin()  # saves h
    h.add_(1.0)
    h.mul_(2.0)
    with pytest.raises(RuntimeError) as ei:
        y.sum().backward()
    msg = str(ei.value)
    assert "modified by an inplace operation" in msg
    assert re.search(r"is at version 2\b", msg), msg
    assert re.search(r"expected version 0\b", msg), msg


def test_modifying_unsaved_tensor_is_fine(device):
    D = On(device)
    A = D.make((3,))
    x = D.leaf(A)
    a = x * 2.0
    b = a + 1.0  # AddBackward saves nothing
    a.mul_(3.0)
    b.sum().backward()
    D.ac(x.grad, np.full(3, 2.0))
    D.ac(b, 2 * A + 1)


@pytest.mark.parametrize("name", ["add_", "mul_", "exp_", "zero_", "fill_", "iadd", "setitem"])
def test_inplace_on_leaf_requiring_grad_raises(name, device):
    D = On(device)
    A = D.make((3,))
    x = D.leaf(A)
    ops = {
        "add_": lambda t: t.add_(1.0),
        "mul_": lambda t: t.mul_(2.0),
        "exp_": lambda t: t.exp_(),
        "zero_": lambda t: t.zero_(),
        "fill_": lambda t: t.fill_(3.0),
        "iadd": lambda t: t.__iadd__(1.0),
        "setitem": lambda t: t.__setitem__(0, 5.0),
    }
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        ops[name](x)
    np.testing.assert_array_equal(val(x), A)
    assert x.is_leaf and x.requires_grad


def test_inplace_on_leaf_allowed_under_no_grad(device):
    D = On(device)
    A = D.make((3,))
    x = D.leaf(A)
    (x * x).sum().backward()
    v0 = x._version
    with rumus.no_grad():
        x.sub_(0.1 * x.grad)
    assert x._version > v0
    assert x.is_leaf and x.requires_grad and x.grad_fn is None
    np.testing.assert_allclose(val(x), 0.8 * A, **D.tol(rtol=1e-14))
    v1 = x._version
    with rumus.no_grad():
        x[0] = 5.0
        x.mul_(1.0)
    assert x._version >= v1 + 2
    B = val(x)
    assert B[0] == 5.0
    # the updated leaf keeps working in a new graph
    x.grad = None
    (x * x).sum().backward()
    D.ac(x.grad, 2 * B)


def test_inplace_mul_on_nonleaf(device):
    D = On(device)
    A = D.make((4,))
    x = D.leaf(A)
    y = x * 2.0
    y.mul_(3.0)
    assert not y.is_leaf and y.grad_fn is not None
    y.sum().backward()
    D.ac(x.grad, np.full(4, 6.0))
    D.ac(y, 6 * A)


@pytest.mark.parametrize("name", ["exp_", "tanh_", "sigmoid_", "sin_"])
def test_inplace_unary_on_nonleaf(name, device):
    D = On(device)
    A = D.make((4,), low=-1.5, high=1.5)
    x = D.leaf(A)
    y = x * 2.0
    getattr(y, name)()
    y.sum().backward()
    u = 2 * A
    d = {
        "exp_": np.exp(u),
        "tanh_": 1 - np.tanh(u) ** 2,
        "sigmoid_": _sig(u) * (1 - _sig(u)),
        "sin_": np.cos(u),
    }[name]
    D.ac(x.grad, 2 * d)


def test_inplace_iadd_on_nonleaf(device):
    D = On(device)
    A = D.make((4,))
    x = D.leaf(A)
    y = x * 2.0
    yid = id(y)
    y += 1.0
    assert id(y) == yid
    (y * y).sum().backward()
    D.ac(x.grad, 2 * (2 * A + 1) * 2)


def test_inplace_mul_by_tensor_on_nonleaf(device):
    D = On(device)
    A = D.make((4,))
    Wn = D.make((4,), rng=np.random.default_rng(6))
    x, w = D.leaf(A), D.leaf(Wn)
    y = x * 2.0
    y.mul_(w)  # needs y's value from before the change for w's grad
    y.sum().backward()
    D.ac(x.grad, 2 * Wn)
    D.ac(w.grad, 2 * A)


def test_setitem_on_nonleaf_grads_for_both(device):
    D = On(device)
    A = D.make((5,))
    V = D.make((2,), rng=np.random.default_rng(2))
    Wn = D.make((5,), rng=np.random.default_rng(3))
    x, v = D.leaf(A), D.leaf(V)
    y = x * 2.0
    y[1:3] = v
    expected = 2 * A
    expected[1:3] = V
    D.ac(y, expected)
    (y * D.t(Wn)).sum().backward()
    gx = 2 * Wn
    gx[1:3] = 0.0
    D.ac(x.grad, gx)
    D.ac(v.grad, Wn[1:3])


def test_setitem_broadcast_scalar_tensor_on_nonleaf(device):
    D = On(device)
    A = D.make((5,))
    Wn = D.make((5,), rng=np.random.default_rng(3))
    x, s = D.leaf(A), D.leaf(np.float64(0.25))
    y = x * 2.0
    y[1:4] = s
    (y * D.t(Wn)).sum().backward()
    gx = 2 * Wn
    gx[1:4] = 0.0
    D.ac(x.grad, gx)
    D.ac(s.grad, np.array(Wn[1:4].sum()))


def test_clamp_inplace_on_nonleaf(device):
    D = On(device)
    A = D.r(np.array([-0.9, -0.3, 0.1, 0.4, 0.8, -0.6]))
    x = D.leaf(A)
    y = x * 2.0
    y.clamp_(-1.0, 1.0)
    D.ac(y, np.clip(2 * A, -1, 1))
    y.sum().backward()
    D.ac(x.grad, 2.0 * (np.abs(2 * A) < 1))


def test_masked_fill_inplace_on_nonleaf(device):
    D = On(device)
    A = D.make((6,))
    M = np.array([True, False, False, True, False, True])
    Wn = D.make((6,), rng=np.random.default_rng(4))
    x = D.leaf(A)
    y = x * 3.0
    y.masked_fill_(D.t(M), 0.5)
    D.ac(y, np.where(M, 0.5, 3 * A))
    (y * D.t(Wn)).sum().backward()
    D.ac(x.grad, np.where(M, 0.0, 3 * Wn))


@pytest.mark.parametrize("name", ["zero_", "fill_"])
def test_overwriting_inplace_on_nonleaf_stays_in_graph(name, device):
    D = On(device)
    # PyTorch: y keeps requires_grad (ZeroBackward0 / FillBackward0) and the
    # gradient reaching x is zero.
    x = D.leaf(D.make((4,)))
    y = x * 2.0
    if name == "zero_":
        y.zero_()
    else:
        y.fill_(3.0)
    assert y.requires_grad and not y.is_leaf and y.grad_fn is not None
    y.sum().backward()
    D.ac(x.grad, np.zeros(4))


def test_copy_inplace_on_nonleaf(device):
    D = On(device)
    A = D.make((4,))
    V = D.make((4,), rng=np.random.default_rng(8))
    x, v = D.leaf(A), D.leaf(V)
    y = x * 2.0
    y.copy_(v)
    assert y.requires_grad and not y.is_leaf
    D.ac(y, V)
    (y * y).sum().backward()
    D.ac(v.grad, 2 * V)
    # PyTorch: CopyBackwards sends zeros to the overwritten tensor's history
    D.ac(x.grad, np.zeros(4))


# --------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------


def test_leaf_grad_dtype_and_shape_float32(device):
    D = On(device)
    A = make((2, 3), "float32")
    x = D.leaf(A, "float32")
    y = (x * x.exp()).sum()
    assert y.dtype == rumus.float32
    y.backward()
    assert x.grad.dtype == rumus.float32
    assert tuple(x.grad.shape) == (2, 3)
    D.ac(x.grad, (np.exp(A.astype(np.float64)) * (1 + A)).astype(np.float32), rtol=1e-5, atol=1e-5)


def test_cast_float32_to_float64_in_the_middle(device):
    D = On(device)
    if D.gpu:
        pytest.skip("float64 is not supported on the GPU (by design)")
    A = make((4,), "float32")
    x = D.leaf(A, "float32")
    y = x.double()
    assert y.dtype == rumus.float64
    (y * y.exp()).sum().backward()
    assert x.grad.dtype == rumus.float32
    a = A.astype(np.float64)
    D.ac(x.grad, (np.exp(a) * (1 + a)).astype(np.float32), rtol=1e-6, atol=1e-6)

    B = D.make((4,))
    z = D.leaf(B)
    (z.to(rumus.float32) * 3.0).sum().backward()
    assert z.grad.dtype == rumus.float64
    D.ac(z.grad, np.full(4, 3.0))


def test_mixed_dtype_promotion_grads_keep_leaf_dtypes(device):
    D = On(device)
    if D.gpu:
        pytest.skip("float64 is not supported on the GPU (by design)")
    A = make((3,), "float32")
    B = D.make((3,), rng=np.random.default_rng(1))
    a, b = D.leaf(A, "float32"), D.leaf(B)
    out = a * b
    assert out.dtype == rumus.float64
    out.sum().backward()
    assert a.grad.dtype == rumus.float32 and b.grad.dtype == rumus.float64
    D.ac(a.grad, B.astype(np.float32))
    D.ac(b.grad, A.astype(np.float64))


# --------------------------------------------------------------------------
# higher-order derivatives
# --------------------------------------------------------------------------

HIGHER = [
    ("sin", lambda t: t.sin(), np.cos, lambda a: -np.sin(a), (-3, 3)),
    ("exp", lambda t: t.exp(), np.exp, np.exp, (-2, 2)),
    (
        "tanh",
        lambda t: t.tanh(),
        lambda a: 1 - np.tanh(a) ** 2,
        lambda a: -2 * np.tanh(a) * (1 - np.tanh(a) ** 2),
        (-2, 2),
    ),
    (
        "sigmoid",
        lambda t: t.sigmoid(),
        lambda a: _sig(a) * (1 - _sig(a)),
        lambda a: _sig(a) * (1 - _sig(a)) * (1 - 2 * _sig(a)),
        (-3, 3),
    ),
    ("cube", lambda t: t**3, lambda a: 3 * a**2, lambda a: 6 * a, (-2, 2)),
    ("log", lambda t: t.log(), lambda a: 1 / a, lambda a: -1 / a**2, (0.2, 3)),
]


@pytest.mark.parametrize("name,f,d1,d2,dom", HIGHER, ids=[h[0] for h in HIGHER])
def test_second_derivative(name, f, d1, d2, dom, device):
    D = On(device)
    A = D.make((6,), low=dom[0], high=dom[1])
    x = D.leaf(A)
    (g,) = agrad(f(x).sum(), x, create_graph=True)
    assert g.requires_grad
    D.ac(g, d1(A))
    (g2,) = agrad(g.sum(), x)
    D.ac(g2, d2(A), rtol=1e-9, atol=1e-12)


def test_second_derivative_via_backward_create_graph(device):
    D = On(device)
    A = D.make((5,))
    x = D.leaf(A)
    x.sin().sum().backward(create_graph=True)
    assert x.grad.requires_grad
    (g2,) = agrad(x.grad.sum(), x)
    D.ac(g2, -np.sin(A))


def test_third_derivative_of_x4(device):
    D = On(device)
    A = D.make((5,), low=-2, high=2)
    x = D.leaf(A)
    (g1,) = agrad((x**4).sum(), x, create_graph=True)
    (g2,) = agrad(g1.sum(), x, create_graph=True)
    (g3,) = agrad(g2.sum(), x)
    D.ac(g1, 4 * A**3)
    D.ac(g2, 12 * A**2)
    D.ac(g3, 24 * A)


def test_mixed_second_derivative(device):
    D = On(device)
    X = D.make((4,), low=-1.5, high=1.5)
    Y = D.make((4,), low=-1.5, high=1.5, rng=np.random.default_rng(1))
    x, y = D.leaf(X), D.leaf(Y)
    (gx,) = agrad((x * y).sin().sum(), x, create_graph=True)
    D.ac(gx, Y * np.cos(X * Y))
    gxy, gxx = agrad(gx.sum(), [y, x])
    D.ac(gxy, np.cos(X * Y) - X * Y * np.sin(X * Y))
    D.ac(gxx, -(Y**2) * np.sin(X * Y))


def test_hessian_vector_product_mlp_vs_finite_differences(device):
    """On the GPU (float32) the finite differences, which need float64, are
    taken on the CPU from the same (float32-rounded) values."""
    D = On(device)
    rng = np.random.default_rng(5)
    Xn = D.r(rng.normal(size=(6, 3)))
    Yn = D.r(rng.normal(size=(6, 1)))
    shapes = [(3, 4), (4,), (4, 1), (1,)]
    P = [D.r(rng.normal(size=s) * 0.7) for s in shapes]
    V = [D.r(rng.normal(size=s)) for s in shapes]
    X, Y = D.t(Xn), D.t(Yn)

    def loss_of(ps, X=X, Y=Y):
        W1, b1, W2, b2 = ps
        h = (X @ W1 + b1).tanh()
        out = h @ W2 + b2
        r = out - Y
        return (r * r).sum()

    def grad_at(Pv, D=D):
        ps = [D.leaf(p) for p in Pv]
        X_, Y_ = (X, Y) if D.device == device else (D.t(Xn), D.t(Yn))
        return [val(g) for g in agrad(loss_of(ps, X_, Y_), ps)]

    # first order against the NumPy closed form
    W1, b1, W2, b2 = P
    h = np.tanh(Xn @ W1 + b1)
    r = h @ W2 + b2 - Yn
    do = 2 * r
    dz = (do @ W2.T) * (1 - h**2)
    expected = [Xn.T @ dz, dz.sum(0), h.T @ do, do.sum(0)]
    for g, e in zip(grad_at(P), expected):
        np.testing.assert_allclose(g, e, **D.tol(rtol=1e-10, atol=1e-12))

    ps = [D.leaf(p) for p in P]
    gs = agrad(loss_of(ps), ps, create_graph=True)
    assert all(g.requires_grad for g in gs)
    terms = [(g * D.t(v)).sum() for g, v in zip(gs, V)]
    dot = terms[0]
    for t in terms[1:]:
        dot = dot + t
    hv = agrad(dot, ps)

    eps = 1e-5
    fd = On("cpu")  # finite differences in float64
    gp = grad_at([p + eps * v for p, v in zip(P, V)], fd)
    gm = grad_at([p - eps * v for p, v in zip(P, V)], fd)
    for h_, a, b, s in zip(hv, gp, gm, shapes):
        assert tuple(h_.shape) == s
        want = (a - b) / (2 * eps)
        tol = D.tol(rtol=1e-6, atol=1e-7)
        if D.gpu:
            # Entries of H·v are sums of terms as large as the largest entry
            # (~20 here); one that cancels to ~0.1 keeps their float32 rounding
            # error. Correctly rounded float32 on the CPU is already off by
            # 1.8e-7·max|H·v| (3.9e-6), and 1 - tanh² amplifies tanh's error
            # ~25-fold where tanh ~ 0.96: allow 1e-6·max|H·v| absolute.
            tol["atol"] = max(tol["atol"], 1e-6 * np.abs(want).max())
        np.testing.assert_allclose(val(h_), want, **tol)


# --------------------------------------------------------------------------
# anomaly detection
# --------------------------------------------------------------------------


def _div_graph(D):
    a = D.leaf(np.array([0.0, 1.0]))
    b = D.leaf(np.array([0.0, 2.0]))
    return a, b, (a / b).sum()


def test_detect_anomaly_names_nan_producing_node(device):
    D = On(device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with rumus.autograd.detect_anomaly():
            a, b, out = _div_graph(D)
            with pytest.raises(RuntimeError) as ei:
                out.backward()
    msg = str(ei.value)
    assert "DivBackward0" in msg, msg
    # PyTorch only checks for NaN; rumus documents NaN/inf
    assert re.search(r"\b(nan|inf)\b", msg.lower()), msg


def test_detect_anomaly_sqrt_backward(device):
    D = On(device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with rumus.autograd.detect_anomaly():
            x = D.leaf(np.array([0.0, 4.0]))
            out = (x.sqrt() * D.t(np.array([0.0, 1.0]))).sum()
            assert np.isfinite(val(out))
            with pytest.raises(RuntimeError) as ei:
                out.backward()
    msg = str(ei.value)
    assert "SqrtBackward0" in msg, msg
    assert "nan" in msg.lower(), msg


def test_without_anomaly_mode_nan_grads_do_not_raise(device):
    D = On(device)
    a, b, out = _div_graph(D)
    out.backward()
    ga, gb = val(a.grad), val(b.grad)
    assert np.isinf(ga[0]) and np.isnan(gb[0])
    np.testing.assert_allclose(ga[1], 0.5)
    np.testing.assert_allclose(gb[1], -0.25)


def test_detect_anomaly_finite_grads_fine_and_set_detect_anomaly(device):
    D = On(device)
    A = D.make((3,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with rumus.autograd.detect_anomaly():
            x = D.leaf(A)
            (x * x).sum().backward()
        D.ac(x.grad, 2 * A)
        try:
            rumus.autograd.set_detect_anomaly(True)
            a, b, out = _div_graph(D)
            with pytest.raises(RuntimeError, match="DivBackward0"):
                out.backward()
        finally:
            rumus.autograd.set_detect_anomaly(False)
    a, b, out = _div_graph(D)
    out.backward()  # no longer raises
    assert np.isnan(val(b.grad)[0])


# --------------------------------------------------------------------------
# memory
# --------------------------------------------------------------------------


def test_saved_tensor_bytes_freed_on_del(device):
    D = On(device)
    gc.collect()
    base = stb()
    assert isinstance(base, int)
    x = D.leaf(D.make((100,)))
    nbytes = 100 * (8 if device == "cpu" else 4)
    y = x.exp()  # saves its output: 800 bytes (400 in float32 on the GPU)
    assert stb() - base >= nbytes
    z = (y * x).sum()
    assert stb() - base >= nbytes
    del y
    assert stb() > base  # the graph is still alive through z
    del z
    assert stb() == base


def test_saved_tensor_bytes_freed_after_backward(device):
    D = On(device)
    gc.collect()
    base = stb()
    A = D.make((100,))
    x = D.leaf(A)
    z = (x.exp() * x).sum()
    assert stb() > base
    z.backward(retain_graph=True)
    assert stb() > base
    z.backward()
    assert stb() == base
    D.ac(x.grad, 2 * np.exp(A) * (1 + A))

    z = (x.sin() * x).sum()
    assert stb() > base
    agrad(z, x)
    assert stb() == base
    del z
    assert stb() == base


def test_training_loop_memory_is_stable(device):
    D = On(device)
    statm = "/proc/self/statm"
    if not os.path.exists(statm):
        pytest.skip("needs /proc/self/statm")
    page = os.sysconf("SC_PAGE_SIZE")

    def rss():
        with open(statm) as f:
            return int(f.read().split()[1]) * page

    rng = np.random.default_rng(0)
    X = D.t(rng.normal(size=(4, 8)).astype(np.float32))
    Y = D.t(rng.normal(size=(4, 1)).astype(np.float32))
    params = [
        D.leaf(rng.normal(size=(8, 16)) * 0.3, "float32"),
        D.leaf(np.zeros(16), "float32"),
        D.leaf(rng.normal(size=(16, 1)) * 0.3, "float32"),
        D.leaf(np.zeros(1), "float32"),
    ]
    W1, b1, W2, b2 = params
    gc.collect()
    base_saved = stb()

    def step():
        h = (X @ W1 + b1).tanh()
        out = h @ W2 + b2
        r = out - Y
        loss = (r * r).mean()
        loss.backward()
        with rumus.no_grad():
            for p in params:
                p.sub_(p.grad * 0.01)
        for p in params:
            p.grad = None
        return loss

    first = float(step().item())
    # Warm-up: allocator and driver caches fill once (on an H200 the Vulkan
    # driver's grow by ~54 MiB in the first few thousand steps, then stay flat).
    for _ in range(5_499):
        loss = step()
    loss.item()  # the queued work is submitted and finished
    gc.collect()
    r0 = rss()
    for _ in range(5_000):
        loss = step()
    loss.item()
    gc.collect()
    r1 = rss()
    assert r1 - r0 < 20 * 1024 * 1024, f"RSS grew by {(r1 - r0) / 2**20:.1f} MiB"
    assert float(loss.item()) < first
    assert loss.dtype == rumus.float32
    del loss
    assert stb() == base_saved
    assert all(p.grad is None and p.is_leaf for p in params)


def test_deep_graph_backward_and_delete(device):
    # a 200,000-node chain: backward and freeing the graph must not overflow
    # the stack (run in a child process, a crash would kill pytest)
    code = textwrap.dedent("""
        import rumus
        def chain(n):
            x = rumus.tensor([1.0, 2.0], requires_grad=True, device=DEVICE)
            y = x
            for i in range(n):
                y = y * 1.0 if i % 2 else y + 0.0
            return x, y
        x, y = chain(200_000)
        y.sum().backward()
        assert x.grad.tolist() == [1.0, 1.0], x.grad
        del y
        x, y = chain(200_000)
        del y
        print("DONE")
    """).replace("DEVICE", repr(device))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "DONE" in r.stdout, (
        r.returncode,
        r.stdout[-500:],
        r.stderr[-2000:],
    )


def test_leaf_reached_by_several_paths_gets_the_sum_and_gradients_stay_untouched(device):
    # The first gradient a leaf receives may be stored as .grad without a copy only
    # when nothing else can see it: here the same tensor flows down three paths.
    a = rumus.tensor([1.0, 2.0, 3.0], requires_grad=True, device=device)
    (a + a + a).mean().backward()
    np.testing.assert_allclose(val(a.grad), [1.0, 1.0, 1.0])
    g = rumus.tensor([1.0, 2.0, 3.0], device=device)
    b = rumus.tensor([1.0, 2.0, 3.0], requires_grad=True, device=device)
    (b + b + b).backward(g)
    np.testing.assert_allclose(val(b.grad), [3.0, 6.0, 9.0])
    np.testing.assert_allclose(val(g), [1.0, 2.0, 3.0])
