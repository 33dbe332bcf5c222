"""rumus.utils.checkpoint (PyTorch's activation checkpointing): gradients
equal the plain run, activations are not kept by the forward, the function
is recomputed in backward with the same RNG stream (CPU and GPU), grad modes,
the determinism check and its debug listing, is_checkpointing and BatchNorm's
running statistics."""

import gc
import threading

import numpy as np
import pytest
import rumus
import rumus.autograd
import rumus.nn.functional as F
from conftest import ac, dleaf, dnp, dt, fd, leaf, tensor, to_np, val
from rumus import nn
from rumus.utils.checkpoint import (
    CheckpointError,
    checkpoint,
    checkpoint_sequential,
    is_checkpointing,
    set_checkpoint_debug_enabled,
)

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
    r = out - dt(T, device=out.device.type)
    return (r * r).sum()


def _run_mlp(mode, use_reentrant=False, x_requires_grad=True, device="cpu"):
    """float64 on the CPU, float32 on the GPU."""
    X, T, P = _data()
    x = dleaf(X, device) if x_requires_grad else dt(X, device=device)
    ps = [dleaf(p, device) for p in P]
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


def _compare(a, b, device="cpu"):
    la, gxa, gpa = a
    lb, gxb, gpb = b
    np.testing.assert_allclose(la, lb, **dnp(device, 1e-13, 0.0))
    if gxa is not None or gxb is not None:
        np.testing.assert_allclose(gxa, gxb, **dnp(device, 1e-12, 1e-14))
    assert len(gpa) == len(gpb)
    for u, v in zip(gpa, gpb):
        np.testing.assert_allclose(u, v, **dnp(device, 1e-12, 1e-14))


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_per_layer_matches_plain(device, use_reentrant):
    ck = _run_mlp("per_layer", use_reentrant, device=device)
    plain = _run_mlp("plain", device=device)
    _compare(ck, plain, device)
    assert all(np.abs(g).sum() > 0 for g in ck[2])


def test_checkpoint_sequential_matches_plain(device):
    _compare(_run_mlp("sequential", device=device), _run_mlp("plain", device=device), device)


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


# ---- RNG replay on the GPU: random fills on the GPU draw their key from the default
# generator, so get_rng_state/set_rng_state cover both devices.


def _gpu_dropout_block(h):
    return F.dropout(h.tanh(), p=0.5, training=True) * h.exp()


def _gpu_dropout_run(device, ck, use_reentrant=False, preserve_rng_state=True):
    A = np.linspace(-1.0, 1.0, 64)
    W = np.cos(np.arange(64.0))
    rumus.manual_seed(4321)
    x = dleaf(A, device)
    if ck:
        out = checkpoint(
            _gpu_dropout_block,
            x,
            use_reentrant=use_reentrant,
            preserve_rng_state=preserve_rng_state,
        )
    else:
        out = _gpu_dropout_block(x)
    state_fwd = to_np(rumus.get_rng_state())
    (out * dt(W, device=device)).sum().backward()
    return val(out), val(x.grad), state_fwd, to_np(rumus.get_rng_state())


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_gpu_dropout_mask_replayed_in_recompute(gpu, use_reentrant):
    out_p, g_p, fwd_p, _ = _gpu_dropout_run(gpu, False)
    out_c, g_c, fwd_c, bwd_c = _gpu_dropout_run(gpu, True, use_reentrant)
    zeros = int((out_p == 0).sum())
    assert 10 < zeros < 54  # the mask really drops some entries
    np.testing.assert_array_equal(out_c, out_p)
    np.testing.assert_array_equal(g_c, g_p)
    np.testing.assert_array_equal(fwd_c, fwd_p)
    np.testing.assert_array_equal(bwd_c, fwd_c)  # the recompute restored the state
    # Without the replay the recompute draws another mask, and the gradient shows it.
    _, g_n, _, _ = _gpu_dropout_run(gpu, True, use_reentrant, preserve_rng_state=False)
    assert not np.array_equal(g_n, g_p)


# ---- determinism_check and debug


def _changes_on_recompute(first, again):
    """A segment function that runs ``first`` on its first call, ``again`` afterwards."""
    calls = [0]

    def f(*args):
        calls[0] += 1
        return (first if calls[0] == 1 else again)(*args)

    f.calls = calls
    return f


_MISMATCH = (
    "rumus.utils.checkpoint: Recomputed values for the following tensors have different "
    "metadata than during the forward pass.\n"
)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_determinism_check_shape(use_reentrant):
    A = np.linspace(-1.0, 1.0, 5)
    f = _changes_on_recompute(lambda h: (h.sin(), h.exp()), lambda h: (h.sin(), h[:3].exp()))
    x = leaf(A)
    a, b = checkpoint(f, x, use_reentrant=use_reentrant)
    with pytest.raises(CheckpointError) as info:
        (a + b).sum().backward()
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert msg.startswith(_MISMATCH)
    assert "tensor at position 0" not in msg  # the first output matches
    assert (
        "tensor at position 1:\n"
        "saved metadata: {'shape': rumus.Size([5]), 'dtype': rumus.float64, "
        "'device': device(type='cpu')}\n"
        "recomputed metadata: {'shape': rumus.Size([3]), 'dtype': rumus.float64, "
        "'device': device(type='cpu')}"
    ) in msg
    assert "Pass debug=True" in msg
    assert x.grad is None
    assert not is_checkpointing()


def test_determinism_check_dtype_and_none():
    A = np.linspace(-1.0, 1.0, 6)
    first, again = (lambda h: h.sin()), (lambda h: h.sin().float())
    x = leaf(A)
    out = checkpoint(_changes_on_recompute(first, again), x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="tensor at position 0") as info:
        out.sum().backward()
    assert "'dtype': rumus.float64" in str(info.value)
    assert "recomputed metadata: {'shape': rumus.Size([6]), 'dtype': rumus.float32" in str(
        info.value
    )
    # "none" lets the mismatching recompute through: backward runs on the float32 graph.
    x = leaf(A)
    out = checkpoint(
        _changes_on_recompute(first, again), x, use_reentrant=False, determinism_check="none"
    )
    out.sum().backward()
    np.testing.assert_allclose(val(x.grad), np.cos(A), rtol=1e-6)


def test_determinism_check_number_of_outputs():
    x = leaf(np.linspace(0.0, 1.0, 4))
    f = _changes_on_recompute(lambda h: (h.sin(), h.cos()), lambda h: (h.sin(),))
    a, b = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError) as info:
        (a * b).sum().backward()
    assert str(info.value).startswith(
        "rumus.utils.checkpoint: A different number of tensors was produced during the "
        "original forward and recomputation.\n"
        "Number of tensors produced during forward: 2\n"
        "Number of tensors produced during recomputation: 1"
    )


def test_determinism_check_device(gpu):
    x = dleaf(np.linspace(-1.0, 1.0, 4), gpu)
    f = _changes_on_recompute(lambda h: h.sin(), lambda h: h.sin().cpu())
    out = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError) as info:
        out.sum().backward()
    msg = str(info.value)
    assert msg.startswith(_MISMATCH)
    assert "saved metadata: {'shape': rumus.Size([4]), 'dtype': rumus.float32, " in msg
    assert "'device': device(type='gpu', index=0)}\nrecomputed metadata:" in msg
    assert msg.split("recomputed metadata: ")[1].startswith(
        "{'shape': rumus.Size([4]), 'dtype': rumus.float32, 'device': device(type='cpu')}"
    )


@pytest.mark.parametrize("grad_mode", [True, False])
def test_determinism_check_invalid_value(grad_mode):
    calls = [0]

    def f(h):
        calls[0] += 1
        return h.sin()

    x = leaf(np.ones(3))
    with rumus.set_grad_enabled(grad_mode):
        with pytest.raises(ValueError) as info:
            checkpoint(f, x, use_reentrant=False, determinism_check="all")
    assert str(info.value) == "determinism_check should be one of ['default', 'none'], but got all"
    assert calls[0] == 0


def _op_sections(msg):
    """The two op lists of a debug error message."""
    head = "Operations executed during the original forward:\n"
    mid = "Operations executed during recomputation:\n"
    assert head in msg and mid in msg
    fwd, rec = msg.split(head)[1].split(mid)
    return [s.strip() for s in fwd.splitlines()], [s.strip() for s in rec.splitlines()]


_SIN_THEN_SLICED_COS = (lambda h: h.sin(), lambda h: (h * 2.0)[:3].cos())


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_debug_lists_forward_and_recompute_ops(use_reentrant):
    x = leaf(np.linspace(-1.0, 1.0, 5))
    out = checkpoint(
        _changes_on_recompute(*_SIN_THEN_SLICED_COS), x, use_reentrant=use_reentrant, debug=True
    )
    with pytest.raises(CheckpointError) as info:
        out.sum().backward()
    msg = str(info.value)
    assert msg.startswith(_MISMATCH)
    assert "Pass debug=True" not in msg
    assert _op_sections(msg) == (
        ["SinBackward0"],
        ["MulBackward0", "SliceBackward0", "CosBackward0"],
    )


def test_debug_ops_stop_at_the_segment_inputs():
    # Under create_graph the recompute reads the real inputs: their history is not listed.
    x = leaf(np.linspace(-1.0, 1.0, 5))
    h = x.exp()
    out = checkpoint(
        _changes_on_recompute(*_SIN_THEN_SLICED_COS), h, use_reentrant=False, debug=True
    )
    with pytest.raises(CheckpointError) as info:
        agrad(out.sum(), x, create_graph=True)
    assert _op_sections(str(info.value))[1] == ["MulBackward0", "SliceBackward0", "CosBackward0"]


def test_set_checkpoint_debug_enabled_overrides_argument():
    def error(debug):
        x = leaf(np.linspace(-1.0, 1.0, 5))
        out = checkpoint(
            _changes_on_recompute(*_SIN_THEN_SLICED_COS), x, use_reentrant=False, debug=debug
        )
        with pytest.raises(CheckpointError) as info:
            out.sum().backward()
        return "Operations executed during recomputation" in str(info.value)

    with set_checkpoint_debug_enabled(True):
        assert error(debug=False)
    with set_checkpoint_debug_enabled(False):
        assert not error(debug=True)
        with set_checkpoint_debug_enabled(None):  # defers to the argument
            assert error(debug=True)
            assert not error(debug=False)
        assert not error(debug=True)
    assert error(debug=True) and not error(debug=False)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_debug_with_deterministic_recompute_matches_plain(use_reentrant):
    ck = _run_mlp("plain")
    X, T, P = _data()
    x = leaf(X)
    ps = [leaf(p) for p in P]
    h = x
    for f in _layers(ps):
        h = checkpoint(f, h, use_reentrant=use_reentrant, debug=True)
    loss = _loss(h.sin(), T)
    loss.backward()
    _compare((val(loss), val(x.grad), [val(p.grad) for p in ps]), ck)


# ---- is_checkpointing


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_is_checkpointing_only_during_recompute(use_reentrant):
    seen = []

    def f(h):
        seen.append(is_checkpointing())
        return h.sin() * h

    x = leaf(np.linspace(-1.0, 1.0, 4))
    assert not is_checkpointing()
    out = checkpoint(f, x, use_reentrant=use_reentrant)
    assert seen == [False]  # the original forward is not a recompute
    assert not is_checkpointing()
    out.sum().backward()
    assert seen == [False, True]
    assert not is_checkpointing()


def test_is_checkpointing_nested():
    seen = []

    def inner(u):
        seen.append(("inner", is_checkpointing()))
        return u.exp() * u

    def outer(h):
        seen.append(("outer", is_checkpointing()))
        return checkpoint(inner, h, use_reentrant=False).sin()

    A = np.linspace(-1.0, 1.0, 4)
    x = leaf(A)
    checkpoint(outer, x, use_reentrant=False).sum().backward()
    assert seen == [
        ("outer", False),
        ("inner", False),
        # backward: the outer recompute runs the inner segment's forward, then its recompute
        ("outer", True),
        ("inner", True),
        ("inner", True),
    ]
    assert not is_checkpointing()
    e = np.exp(A)
    np.testing.assert_allclose(val(x.grad), np.cos(e * A) * e * (1 + A), rtol=1e-12)


def test_is_checkpointing_is_thread_local():
    seen = []

    def f(h):
        other = []
        t = threading.Thread(target=lambda: other.append(is_checkpointing()))
        t.start()
        t.join()
        seen.append((is_checkpointing(), other[0]))
        return h.sin()

    x = leaf(np.linspace(-1.0, 1.0, 4))
    checkpoint(f, x, use_reentrant=False).sum().backward()
    assert seen == [(False, False), (True, False)]


def test_is_checkpointing_reset_after_failed_recompute():
    def boom(h):
        raise ValueError("recompute failed")

    x = leaf(np.linspace(-1.0, 1.0, 4))
    out = checkpoint(_changes_on_recompute(lambda h: h.sin(), boom), x, use_reentrant=False)
    with pytest.raises(ValueError, match="recompute failed"):
        out.sum().backward()
    assert not is_checkpointing()


# ---- BatchNorm: the recompute does not update the running statistics a second time


def _bn_block(device, dims, momentum):
    rumus.manual_seed(11)
    if dims == 1:
        block = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6, momentum=momentum), nn.Tanh())
        head = nn.Linear(6, 2)
    else:
        block = nn.Sequential(
            nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3, momentum=momentum), nn.Tanh()
        )
        head = nn.Flatten()
    return block.to(fd(device)).to(device), head.to(fd(device)).to(device)


def _bn_run(device, dims, mode, momentum=0.1, use_reentrant=False, steps=2):
    block, head = _bn_block(device, dims, momentum)
    rng = np.random.default_rng(dims)
    shape = (5, 4) if dims == 1 else (2, 2, 4, 4)
    inputs = []
    for _ in range(steps):
        X = rng.normal(size=shape) * 2.0 + 0.5
        inputs.append(X)
        x = dleaf(X, device)
        if mode == "plain":
            h = block(x)
        elif mode == "checkpoint":
            h = checkpoint(block, x, use_reentrant=use_reentrant)
        else:  # nested: the block's recompute also runs inside an outer recompute
            h = checkpoint(
                lambda u: checkpoint(block, u, use_reentrant=use_reentrant) * 2.0,
                x,
                use_reentrant=use_reentrant,
            )
        out = head(h) if mode != "nested" else head(h * 0.5)
        (out * out).sum().backward()
    bn = block[1]
    stats = [to_np(bn.running_mean), to_np(bn.running_var), int(bn.num_batches_tracked.item())]
    grads = [val(p.grad) for p in list(block.parameters()) + list(head.parameters())]
    return stats, grads, block, inputs


@pytest.mark.parametrize("mode", ["checkpoint", "nested"])
@pytest.mark.parametrize("use_reentrant", [False, True])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_running_stats_unchanged_by_checkpoint(device, mode, use_reentrant, momentum):
    dims = 2 if mode == "nested" else 1
    plain, g_plain, _, _ = _bn_run(device, dims, "plain", momentum)
    ck, g_ck, _, _ = _bn_run(device, dims, mode, momentum, use_reentrant)
    assert ck[2] == plain[2] == 2
    np.testing.assert_array_equal(ck[0], plain[0])  # bit for bit
    np.testing.assert_array_equal(ck[1], plain[1])
    assert len(g_ck) == len(g_plain)
    for u, v in zip(g_ck, g_plain):
        assert np.abs(v).sum() > 0
        np.testing.assert_allclose(u, v, **dnp(device, 1e-12, 1e-14))


def test_batchnorm_running_stats_values_under_checkpoint():
    # momentum=None: the running stats are the plain average of the per-batch statistics
    stats, _, block, inputs = _bn_run("cpu", 1, "checkpoint", momentum=None)
    lin = block[0]
    Wn, bn_ = to_np(lin.weight), to_np(lin.bias)
    zs = [X @ Wn.T + bn_ for X in inputs]
    np.testing.assert_allclose(stats[0], np.mean([z.mean(0) for z in zs], 0), rtol=1e-12)
    np.testing.assert_allclose(stats[1], np.mean([z.var(0, ddof=1) for z in zs], 0), rtol=1e-12)
    assert stats[2] == 2
