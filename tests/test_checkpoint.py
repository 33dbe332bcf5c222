"""rumus.utils.checkpoint (PyTorch's activation checkpointing): gradients
equal the plain run, activations are not kept by the forward, the function
is recomputed in backward with the same RNG stream, grad modes."""

import gc

import numpy as np
import pytest
import rumus
import rumus.autograd
from conftest import ac, leaf, tensor, to_np, val
from rumus.utils.checkpoint import checkpoint, checkpoint_sequential

agrad = rumus.autograd.grad
stb = rumus.autograd.saved_tensor_bytes


SIZES = (5, 7, 6, 3)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(4, SIZES[0]))
    T = rng.normal(size=(4, SIZES[-1]))
    P = []
    for i in range(3):
        P.append(rng.normal(size=(SIZES[i], SIZES[i + 1])) * 0.5)
        P.append(rng.normal(size=(SIZES[i + 1],)) * 0.1)
    return X, T, P


def _layers(ps):
    """Three tanh layers; the parameters are captured by the closures."""
    fs = []
    for i in range(3):
        W, b = ps[2 * i], ps[2 * i + 1]
        fs.append(lambda h, W=W, b=b: (h @ W + b).tanh())
    return fs


def _loss(out, T):
    r = out - tensor(T)
    return (r * r).sum()


def _run_mlp(mode, use_reentrant=False, x_requires_grad=True):
    X, T, P = _data()
    x = leaf(X) if x_requires_grad else tensor(X)
    ps = [leaf(p) for p in P]
    fs = _layers(ps)
    if mode == "plain":
        h = x
        for f in fs:
            h = f(h)
    elif mode == "per_layer":
        h = x
        for f in fs:
            h = checkpoint(f, h, use_reentrant=use_reentrant)
    elif mode == "sequential":
        h = checkpoint_sequential(fs + [lambda t: t.sin()], 2, x, use_reentrant=use_reentrant)
    else:
        raise AssertionError(mode)
    if mode != "sequential":
        h = h.sin()
    assert h.requires_grad
    loss = _loss(h, T)
    loss.backward()
    gx = val(x.grad) if x_requires_grad else None
    return val(loss), gx, [val(p.grad) for p in ps]


def _compare(a, b):
    la, gxa, gpa = a
    lb, gxb, gpb = b
    np.testing.assert_allclose(la, lb, rtol=1e-13)
    if gxa is not None or gxb is not None:
        np.testing.assert_allclose(gxa, gxb, rtol=1e-12, atol=1e-14)
    assert len(gpa) == len(gpb)
    for u, v in zip(gpa, gpb):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_per_layer_matches_plain(use_reentrant):
    _compare(_run_mlp("per_layer", use_reentrant), _run_mlp("plain"))


def test_checkpoint_sequential_matches_plain():
    _compare(_run_mlp("sequential"), _run_mlp("plain"))


def test_checkpoint_input_without_grad():
    plain = _run_mlp("plain", x_requires_grad=False)
    ck = _run_mlp("per_layer", x_requires_grad=False)
    _compare(ck, plain)
    assert all(np.abs(g).sum() > 0 for g in ck[2])


def test_plain_mlp_grads_against_numpy():
    # sanity of the reference: the plain run against a NumPy backward
    X, T, P = _data()
    hs = [X]
    for i in range(3):
        hs.append(np.tanh(hs[-1] @ P[2 * i] + P[2 * i + 1]))
    out = np.sin(hs[-1])
    d = 2 * (out - T) * np.cos(hs[-1])
    grads = [None] * 6
    for i in reversed(range(3)):
        dz = d * (1 - hs[i + 1] ** 2)
        grads[2 * i] = hs[i].T @ dz
        grads[2 * i + 1] = dz.sum(0)
        d = dz @ P[2 * i].T
    loss, gx, gps = _run_mlp("plain")
    np.testing.assert_allclose(gx, d, rtol=1e-10, atol=1e-12)
    for u, v in zip(gps, grads):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)


def test_autograd_grad_through_checkpoint():
    X, T, P = _data(1)

    def run(ck):
        x = leaf(X)
        ps = [leaf(p) for p in P]
        h = x
        for f in _layers(ps):
            h = checkpoint(f, h, use_reentrant=False) if ck else f(h)
        loss = _loss(h, T)
        gs = agrad(loss, [x, ps[0], ps[5]])
        assert x.grad is None and ps[0].grad is None
        return [val(g) for g in gs]

    for u, v in zip(run(True), run(False)):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-14)


def _segment(h):
    a = h.exp()
    b = a * h
    c = b.sin()
    d = c.tanh()
    e = d.sigmoid()
    return e * h


def test_checkpoint_does_not_keep_activations():
    rng = np.random.default_rng(3)
    A = rng.uniform(-1, 1, size=(64, 256)).astype(np.float32)
    nbytes = A.nbytes
    W = rng.normal(size=(64, 256)).astype(np.float32)

    gc.collect()
    base = stb()
    x = leaf(A, "float32")
    out = _segment(x)
    plain = stb() - base
    assert plain >= 4 * nbytes
    (out * tensor(W)).sum().backward()
    g_plain = val(x.grad)
    del out
    assert stb() == base

    x = leaf(A, "float32")
    out = checkpoint(_segment, x, use_reentrant=False)
    ck = stb() - base
    assert ck < plain
    assert 3 * ck <= plain, (ck, plain)
    (out * tensor(W)).sum().backward()
    np.testing.assert_allclose(val(x.grad), g_plain, rtol=1e-6, atol=1e-7)
    del out
    gc.collect()
    assert stb() == base


def test_recomputation_runs():
    calls = [0]

    def f(h):
        calls[0] += 1
        return (h.exp() * h).sin()

    A = np.linspace(-1, 1, 6)
    x = leaf(A)
    f(x).sum().backward()
    assert calls[0] == 1
    g_plain = val(x.grad)

    calls[0] = 0
    x = leaf(A)
    out = checkpoint(f, x, use_reentrant=False)
    assert calls[0] == 1
    out.sum().backward()
    assert calls[0] == 2
    np.testing.assert_allclose(val(x.grad), g_plain, rtol=1e-13)


def _dropout_like(h):
    return (h * (rumus.rand_like(h) > 0.5) * 2.0 * h.exp()).tanh()


def _rng_run(ck):
    A = np.linspace(-1.0, 1.0, 64)
    W = np.cos(np.arange(64.0))
    rumus.manual_seed(1234)
    x = leaf(A)
    out = (
        checkpoint(_dropout_like, x, use_reentrant=False, preserve_rng_state=True)
        if ck
        else _dropout_like(x)
    )
    state_fwd = to_np(rumus.get_rng_state())
    (out * tensor(W)).sum().backward()
    state_bwd = to_np(rumus.get_rng_state())
    return val(out), val(x.grad), state_fwd, state_bwd


def test_rng_state_replayed_in_recompute():
    out_p, g_p, fwd_p, _ = _rng_run(False)
    out_c, g_c, fwd_c, bwd_c = _rng_run(True)
    zeros = int((g_p == 0).sum())
    assert 10 < zeros < 54  # the mask really drops some entries
    np.testing.assert_array_equal(out_c, out_p)
    np.testing.assert_array_equal(g_c, g_p)
    # forward consumed the same random numbers ...
    np.testing.assert_array_equal(fwd_c, fwd_p)
    # ... and the recompute in backward left the global state where it was
    np.testing.assert_array_equal(bwd_c, fwd_c)


def test_multiple_args_and_outputs():
    A = np.linspace(-1.0, 1.0, 5)
    B = np.linspace(0.5, 1.5, 5)

    def f(a, b, scale):
        return (a * b).sin() * scale, (a + b).exp()

    def run(ck):
        a, b = leaf(A), leaf(B)
        o1, o2 = checkpoint(f, a, b, 0.5, use_reentrant=False) if ck else f(a, b, 0.5)
        (o1 * 3.0 + o2).sum().backward()
        return val(o1), val(o2), val(a.grad), val(b.grad)

    for u, v in zip(run(True), run(False)):
        np.testing.assert_allclose(u, v, rtol=1e-13)
    _, _, ga, gb = run(True)
    np.testing.assert_allclose(ga, 1.5 * B * np.cos(A * B) + np.exp(A + B), rtol=1e-12)
    np.testing.assert_allclose(gb, 1.5 * A * np.cos(A * B) + np.exp(A + B), rtol=1e-12)


def test_checkpoint_under_no_grad_just_runs():
    calls = [0]

    def f(h):
        calls[0] += 1
        return (h.exp() * h).sin()

    A = np.linspace(-1, 1, 6)
    x = leaf(A)
    with rumus.no_grad():
        out = checkpoint(f, x, use_reentrant=False)
    assert calls[0] == 1
    assert not out.requires_grad and out.grad_fn is None
    ac(out, np.sin(np.exp(A) * A))


def test_rng_used_between_forward_and_backward():
    # the recompute replays the forward's random numbers and leaves the
    # global state as it was just before backward
    A = np.linspace(-1.0, 1.0, 64)
    rumus.manual_seed(77)
    x = leaf(A)
    _dropout_like(x).sum().backward()
    g_plain = val(x.grad)

    rumus.manual_seed(77)
    x = leaf(A)
    out = checkpoint(_dropout_like, x, use_reentrant=False)
    rumus.rand(7)  # consume random numbers before backward
    before = to_np(rumus.get_rng_state())
    out.sum().backward()
    np.testing.assert_array_equal(to_np(rumus.get_rng_state()), before)
    np.testing.assert_array_equal(val(x.grad), g_plain)


def test_nested_checkpoint():
    A = np.linspace(-1.0, 1.0, 8)

    def inner(u):
        return (u.exp() * u).sin()

    x = leaf(A)
    out = checkpoint(
        lambda h: checkpoint(inner, h, use_reentrant=False) * 2.0, x, use_reentrant=False
    )
    out.sum().backward()
    e = np.exp(A)
    np.testing.assert_allclose(val(x.grad), 2 * np.cos(e * A) * e * (1 + A), rtol=1e-12)


def test_double_backward_through_checkpoint():
    # non-reentrant checkpoint composes with higher-order autograd
    A = np.linspace(-1.0, 1.0, 5)
    Wn = np.array([0.3, -0.7, 1.1, 0.2, 0.9])
    x, w = leaf(A), leaf(Wn)
    out = checkpoint(lambda u: (u**3) * w, x, use_reentrant=False)
    (g,) = agrad(out.sum(), x, create_graph=True)
    np.testing.assert_allclose(val(g), 3 * A**2 * Wn, rtol=1e-12)
    assert g.requires_grad
    gx, gw = agrad(g.sum(), [x, w])
    np.testing.assert_allclose(val(gx), 6 * A * Wn, rtol=1e-12)
    np.testing.assert_allclose(val(gw), 3 * A**2, rtol=1e-12)
