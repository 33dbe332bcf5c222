"""Training-mode batch_norm on the GPU as the fused op (rust/ops/batch_norm.rs,
shaders/batch_norm.wgsl: two sweeps forward, two backward) against the CPU's
composite in float64: output, running statistics, the gradients of input, weight
and bias, a second derivative, inputs of 2 to 5 dims, with and without affine, and
a large common offset (the one-sweep variance must not cancel)."""

import numpy as np
import pytest
import rumus
import rumus.nn as nn
import rumus.nn.functional as F

TOL = dict(rtol=2e-4, atol=2e-4)


def _both(a, requires_grad=True):
    cpu = rumus.tensor(a, dtype=rumus.float64, requires_grad=requires_grad)
    gpu = rumus.tensor(a.astype(np.float32), device="gpu", requires_grad=requires_grad)
    return cpu, gpu


def _close(g, c, what, **tol):
    np.testing.assert_allclose(
        g.detach().cpu().numpy().astype(np.float64),
        c.detach().numpy(),
        err_msg=what,
        **(tol or TOL),
    )


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 7), (2, 5, 6, 7), (2, 3, 2, 3, 4)])
@pytest.mark.parametrize("affine", [True, False])
def test_fused_batch_norm_matches_cpu(shape, affine, gpu, rng):
    c = shape[1]
    xc, xg = _both(rng.normal(0.5, 2.0, shape))
    wc, wg = _both(rng.uniform(0.5, 1.5, c)) if affine else (None, None)
    bc, bg = _both(rng.uniform(-1, 1, c)) if affine else (None, None)
    rm = [
        rumus.tensor(np.full(c, 0.2), dtype=dt, device=d)
        for dt, d in ((rumus.float64, "cpu"), (rumus.float32, "gpu"))
    ]
    rv = [
        rumus.tensor(np.full(c, 1.5), dtype=dt, device=d)
        for dt, d in ((rumus.float64, "cpu"), (rumus.float32, "gpu"))
    ]
    yc = F.batch_norm(xc, rm[0], rv[0], wc, bc, training=True, momentum=0.3, eps=1e-3)
    yg = F.batch_norm(xg, rm[1], rv[1], wg, bg, training=True, momentum=0.3, eps=1e-3)
    assert yg.grad_fn.name() == "NativeBatchNormBackward0"
    _close(yg, yc, "output")
    _close(rm[1], rm[0], "running_mean")
    _close(rv[1], rv[0], "running_var")
    g = rng.uniform(-1, 1, shape)
    yc.backward(rumus.tensor(g))
    yg.backward(rumus.tensor(g.astype(np.float32), device="gpu"))
    _close(xg.grad, xc.grad, "input gradient")
    if affine:
        _close(wg.grad, wc.grad, "weight gradient")
        _close(bg.grad, bc.grad, "bias gradient")


def test_fused_batch_norm_large_offset(gpu, rng):
    a = 1000.0 + rng.normal(0, 0.01, (4, 3, 8, 8))
    xc, xg = _both(a, requires_grad=False)
    yc = F.batch_norm(xc, None, None, training=True)
    yg = F.batch_norm(xg, None, None, training=True)
    # float32 holds 1000 + x to ~6e-5: the normalized values to ~1e-2 of their unit scale
    _close(yg, yc, "output", rtol=0, atol=2e-2)


def test_fused_batch_norm_second_derivative(gpu, rng):
    """d/dx and d/dw of <dx, v> with dx = d<y, g>/dx, under create_graph."""
    out = []
    a, w0, g0, v0 = (
        rng.uniform(-1, 1, s) for s in ((3, 2, 4, 4), (2,), (3, 2, 4, 4), (3, 2, 4, 4))
    )
    for dev, dt in (("cpu", rumus.float64), ("gpu", rumus.float32)):
        x = rumus.tensor(a, dtype=dt, device=dev, requires_grad=True)
        w = rumus.tensor(w0 + 1.5, dtype=dt, device=dev, requires_grad=True)
        y = F.batch_norm(x, None, None, w, None, training=True)
        (dx,) = rumus.autograd.grad(y, x, rumus.tensor(g0, dtype=dt, device=dev), create_graph=True)
        out.append(rumus.autograd.grad((dx * rumus.tensor(v0, dtype=dt, device=dev)).sum(), [x, w]))
    for c, gp, what in zip(out[0], out[1], ("d/dx", "d/dw")):
        _close(gp, c, what, rtol=1e-3, atol=1e-3)


def test_batchnorm2d_module_trains_on_gpu(gpu, rng):
    rumus.manual_seed(0)
    cpu = nn.BatchNorm2d(3).double()
    dev = nn.BatchNorm2d(3).to("gpu")
    a = rng.normal(1.0, 3.0, (4, 3, 5, 5))
    for _ in range(2):
        xc, xg = _both(a)
        cpu(xc).pow(2).sum().backward()
        dev(xg).pow(2).sum().backward()
    _close(dev.weight.grad, cpu.weight.grad, "weight grad")
    _close(dev.running_var, cpu.running_var, "running_var")
    assert int(dev.num_batches_tracked.item()) == 2


def test_fused_batch_norm_bad_input(gpu):
    x = rumus.zeros(2, 3, 4, device="gpu")
    with pytest.raises(RuntimeError, match="weight must be a \\(3,\\)"):
        rumus._rumus._batch_norm_train(x, rumus.ones(4, device="gpu"))
    with pytest.raises(RuntimeError, match="float32 \\(CPU or GPU\\)"):
        rumus._rumus._batch_norm_train(rumus.zeros(2, 3, dtype=rumus.float64))
