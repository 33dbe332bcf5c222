"""Training-mode batch_norm of float32 on the CPU as the fused op
(rust/backend/cpu/batch_norm.rs: two sweeps forward, two backward) against the
composite in float64: outputs, running statistics, gradients of input, weight and
bias, inputs of 2 to 5 dims, odd channel counts, strided views read in place
(a convolution's output), a large common offset and a second derivative."""

import numpy as np
import pytest
import rumus
import rumus.nn as nn
import rumus.nn.functional as F

TOL = dict(rtol=2e-4, atol=2e-4)


def _pair(a, requires_grad=True):
    ref = rumus.tensor(a, dtype=rumus.float64, requires_grad=requires_grad)
    f32 = rumus.tensor(a.astype(np.float32), requires_grad=requires_grad)
    return ref, f32


def _close(got, ref, what, **tol):
    np.testing.assert_allclose(
        got.detach().numpy().astype(np.float64), ref.detach().numpy(), err_msg=what, **(tol or TOL)
    )


@pytest.mark.parametrize(
    "shape", [(5, 3), (1, 17, 9), (4, 3, 7), (2, 5, 6, 7), (3, 1, 4, 5), (2, 3, 2, 3, 4)], ids=str
)
@pytest.mark.parametrize("affine", [True, False])
def test_cpu_fused_batch_norm_matches_float64(shape, affine, rng):
    c = shape[1]
    xr, xf = _pair(rng.normal(0.5, 2.0, shape))
    wr, wf = _pair(rng.uniform(0.5, 1.5, c)) if affine else (None, None)
    br, bf = _pair(rng.uniform(-1, 1, c)) if affine else (None, None)
    rm = [rumus.tensor(np.full(c, 0.2), dtype=dt) for dt in (rumus.float64, rumus.float32)]
    rv = [rumus.tensor(np.full(c, 1.5), dtype=dt) for dt in (rumus.float64, rumus.float32)]
    yr = F.batch_norm(xr, rm[0], rv[0], wr, br, training=True, momentum=0.3, eps=1e-3)
    yf = F.batch_norm(xf, rm[1], rv[1], wf, bf, training=True, momentum=0.3, eps=1e-3)
    assert yf.grad_fn.name() == "NativeBatchNormBackward0"
    assert yf.dtype == rumus.float32
    _close(yf, yr, "output")
    _close(rm[1], rm[0], "running_mean")
    _close(rv[1], rv[0], "running_var")
    g = rng.uniform(-1, 1, shape)
    yr.backward(rumus.tensor(g))
    yf.backward(rumus.tensor(g.astype(np.float32)))
    _close(xf.grad, xr.grad, "input gradient")
    if affine:
        _close(wf.grad, wr.grad, "weight gradient")
        _close(bf.grad, br.grad, "bias gradient")


@pytest.mark.parametrize(
    "view",
    [
        lambda t: t.permute(1, 0, 2, 3),  # (N, C, H, W) view of (C, N, H, W): read in place
        lambda t: t.transpose(2, 3),  # spatial dims not one run: copied first
        lambda t: t[:, ::2],  # every other channel
        lambda t: t.flip(0),  # negative stride
    ],
    ids=["channels-first", "spatial-transposed", "channel-step", "flipped"],
)
def test_cpu_fused_batch_norm_strided_inputs(view, rng):
    base = rng.normal(-0.3, 1.7, (6, 5, 4, 3))
    xr, xf = _pair(base)
    w = rng.uniform(0.5, 1.5, 64)
    outs = []
    for x, dt in ((xr, rumus.float64), (xf, rumus.float32)):
        v = view(x)
        c = v.shape[1]
        wt = rumus.tensor(w[:c], dtype=dt, requires_grad=True)
        y = F.batch_norm(v, None, None, wt, None, training=True)
        g = rumus.tensor(np.cos(np.arange(v.numel())).reshape(v.shape), dtype=dt)
        y.backward(g)
        outs.append((y, x.grad, wt.grad))
    for got, ref, what in zip(outs[1], outs[0], ("output", "input grad", "weight grad")):
        _close(got, ref, what)


def test_cpu_fused_batch_norm_after_conv(rng):
    """The conv output is a channels-first view; BN reads it without a copy."""
    x = rumus.tensor(rng.normal(0, 1, (3, 2, 6, 5)).astype(np.float32), requires_grad=True)
    conv = nn.Conv2d(2, 7, 3, padding=1)
    bn = nn.BatchNorm2d(7)
    bn(conv(x)).pow(2).sum().backward()
    x64 = x.detach().double().requires_grad_(True)
    conv64, bn64 = nn.Conv2d(2, 7, 3, padding=1).double(), nn.BatchNorm2d(7).double()
    conv64.load_state_dict({k: v.double() for k, v in conv.state_dict().items()})
    bn64(conv64(x64)).pow(2).sum().backward()
    _close(x.grad, x64.grad, "input grad", rtol=1e-3, atol=1e-3)
    _close(conv.weight.grad, conv64.weight.grad, "conv weight grad", rtol=1e-3, atol=1e-3)
    _close(bn.running_var, bn64.running_var, "running_var")


def test_cpu_fused_batch_norm_large_offset(rng):
    a = 1000.0 + rng.normal(0, 0.01, (4, 3, 8, 8))
    xr, xf = _pair(a, requires_grad=False)
    yr = F.batch_norm(xr, None, None, training=True)
    yf = F.batch_norm(xf, None, None, training=True)
    # float32 holds 1000 + x to ~6e-5: the normalized values to ~1e-2 of their unit scale
    _close(yf, yr, "output", rtol=0, atol=2e-2)


def test_cpu_fused_batch_norm_second_derivative(rng):
    """Under create_graph the backward is recorded ops: d/dx, d/dw of <dx, v>."""
    a, w0, g0, v0 = (
        rng.uniform(-1, 1, s) for s in ((3, 2, 4, 4), (2,), (3, 2, 4, 4), (3, 2, 4, 4))
    )
    out = []
    for dt in (rumus.float64, rumus.float32):
        x = rumus.tensor(a, dtype=dt, requires_grad=True)
        w = rumus.tensor(w0 + 1.5, dtype=dt, requires_grad=True)
        y = F.batch_norm(x, None, None, w, None, training=True)
        (dx,) = rumus.autograd.grad(y, x, rumus.tensor(g0, dtype=dt), create_graph=True)
        out.append(rumus.autograd.grad((dx * rumus.tensor(v0, dtype=dt)).sum(), [x, w]))
    for got, ref, what in zip(out[1], out[0], ("d/dx", "d/dw")):
        _close(got, ref, what, rtol=1e-3, atol=1e-3)


def test_cpu_fused_batch_norm_bad_input():
    with pytest.raises(RuntimeError, match="weight must be a \\(3,\\)"):
        rumus._rumus._batch_norm_train(rumus.zeros(2, 3), rumus.ones(4))
    with pytest.raises(RuntimeError, match="float32 \\(CPU or GPU\\)"):
        rumus._rumus._batch_norm_train(rumus.zeros(2, 3, dtype=rumus.float64))
