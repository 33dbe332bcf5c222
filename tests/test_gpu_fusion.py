"""Lazy elementwise fusion on the GPU (rust/backend/gpu/fusion.rs): fused
chains agree with the eager kernels (fusion off) and with NumPy, gradients
through fused chains match the CPU, materialization points (host reads,
in-place writes, views, reductions) see the right values, dispatch counts
prove chains run as one kernel, and every generated kernel validates with
naga."""

import contextlib
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F
from conftest import assert_close

pytestmark = pytest.mark.usefixtures("gpu")
_r = rumus._rumus


@contextlib.contextmanager
def fusion(on):
    prev = _r._gpu_set_fusion(on)
    try:
        yield
    finally:
        _r._gpu_set_fusion(prev)


def g(a):
    return rumus.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to("gpu")


def dispatches(fn):
    """(all dispatches, fused dispatches) that ``fn`` records, flushed."""
    rumus.gpu.synchronize()
    rumus.gpu.reset_kernel_stats()
    keep = fn()
    rumus.gpu.synchronize()
    s = rumus.gpu.kernel_stats()
    del keep
    return s["dispatches"], s["fused_dispatches"]


def gelu_chain(x):
    return 0.5 * x * (1 + rumus.erf(x * 0.7071067811865476))


# (name, shapes of the inputs, chain on rumus tensors, the same on NumPy float64)
CHAINS = [
    (
        "unary",
        [(5, 7)],
        lambda x: rumus.sigmoid(rumus.exp(rumus.tanh(x))),
        lambda x: 1 / (1 + np.exp(-np.exp(np.tanh(x)))),
    ),
    (
        "binary",
        [(3, 5), (3, 5)],
        lambda x, y: (x + y) * (x - y) / (y * y + 1),
        lambda x, y: (x + y) * (x - y) / (y * y + 1),
    ),
    (
        "scalar",
        [(1023,)],
        lambda x: 2.5 * x - 1.25 + x / 3 - (1 - x),
        lambda x: 2.5 * x - 1.25 + x / 3 - (1 - x),
    ),
    (
        "gelu",
        [(4099,)],
        gelu_chain,
        lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x * 0.7071067811865476)),
    ),
    (
        "bias_relu",
        [(6, 5), (5,)],
        lambda x, b: rumus.relu(x + b) * 2,
        lambda x, b: np.maximum(x + b, 0) * 2,
    ),
    (
        "row_scale",
        [(4, 3), (4, 1)],
        lambda x, s: (x * s).tanh() - s,
        lambda x, s: np.tanh(x * s) - s,
    ),
    (
        "channel",
        [(2, 3, 2, 2), (1, 3, 1, 1)],
        lambda x, c: (x - c) * c + x.abs(),
        lambda x, c: (x - c) * c + np.abs(x),
    ),
    (
        "args",
        [(3, 3)],
        lambda x: F.softplus(F.elu(F.leaky_relu(x, 0.2), 0.7), beta=2.0, threshold=5.0),
        lambda x: (lambda e: np.where(2 * e > 5, e, np.log1p(np.exp(2 * e)) / 2))(
            (lambda lr: np.where(lr > 0, lr, 0.7 * np.expm1(lr)))(np.where(x > 0, x, 0.2 * x))
        ),
    ),
    (
        "alpha",
        [(5,), (5,)],
        lambda x, y: rumus.sub(rumus.add(x, y, alpha=2), y * y, alpha=0.5),
        lambda x, y: x + 2 * y - 0.5 * y * y,
    ),
    (
        "zero_dim",
        [(3, 4), ()],
        lambda x, s: rumus.maximum(x * s, x) + s,
        lambda x, s: np.maximum(x * s, x) + s,
    ),
    (
        "views",
        [(9,), (9,)],
        lambda x, y: x[1:] * 2 + y[:-1] - x[::2].sum(),
        lambda x, y: x[1:] * 2 + y[:-1] - x[::2].sum(),
    ),
    (
        "transposed",
        [(3, 4), (4, 3)],
        lambda x, y: (x.t() + y).exp() * y,
        lambda x, y: np.exp(x.T + y) * y,
    ),
]


@pytest.mark.parametrize("name,shapes,chain,ref", CHAINS, ids=[c[0] for c in CHAINS])
def test_fused_matches_eager_and_numpy(name, shapes, chain, ref):
    rng = np.random.default_rng(len(name))
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    with fusion(True):
        fused = chain(*[g(a) for a in args]).cpu().numpy()
    with fusion(False):
        eager = chain(*[g(a) for a in args]).cpu().numpy()
    np.testing.assert_allclose(fused, eager, rtol=2e-6, atol=2e-6)
    expect = ref(*[a.astype(np.float64) for a in args])
    np.testing.assert_allclose(fused, expect, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("n", [1, 3, 5, 1023, 4099])
@pytest.mark.parametrize("offset", [0, 1, 4])
def test_odd_sizes_and_offsets(n, offset):
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n + 8).astype(np.float32)
    b = rng.standard_normal(n + 8).astype(np.float32)
    x, y = g(a)[offset : offset + n], g(b)[3 : 3 + n]
    out = (x * y + x.sigmoid()) - 0.5
    xa, ya = a[offset : offset + n].astype(np.float64), b[3 : 3 + n].astype(np.float64)
    assert_close(out, xa * ya + 1 / (1 + np.exp(-xa)) - 0.5, rtol=1e-5, atol=1e-6, dtype="float32")


def test_chains_are_one_dispatch():
    rng = np.random.default_rng(0)
    x = g(rng.standard_normal((8, 16)))
    b = g(rng.standard_normal(16))
    r = g(rng.standard_normal((8, 16)))
    with fusion(True):
        assert dispatches(lambda: gelu_chain(x)) == (1, 1)
        assert dispatches(lambda: r + F.dropout(x + b, p=0.1)) == (1, 1)
    with fusion(False):
        assert dispatches(lambda: gelu_chain(x))[0] == 5
        eager, fused = dispatches(lambda: r + F.dropout(x + b, p=0.1))
        assert eager == 4 and fused == 0


def test_backward_chains_fuse_and_match_cpu():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 7)).astype(np.float32)
    bias = rng.standard_normal(7).astype(np.float32)
    counts, grads = {}, {}
    for mode in (True, False):
        with fusion(mode):
            x = g(a).requires_grad_()
            b = g(bias).requires_grad_()

            def step(x=x, b=b):
                y = gelu_chain(x + b) * rumus.tanh(x)
                y.sum().backward()
                return y

            counts[mode] = dispatches(step)
            grads[mode] = (x.grad.cpu().numpy(), b.grad.cpu().numpy())
    xc = rumus.from_numpy(a).requires_grad_()
    bc = rumus.from_numpy(bias).requires_grad_()
    (gelu_chain(xc + bc) * rumus.tanh(xc)).sum().backward()
    for mode in (True, False):
        np.testing.assert_allclose(grads[mode][0], xc.grad.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(grads[mode][1], bc.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grads[True][0], grads[False][0], rtol=2e-6, atol=2e-6)
    assert counts[True][0] < counts[False][0] and counts[True][1] >= 2


def test_dropout_fixed_seed_and_statistics():
    x = g(np.ones((64, 64)))
    outs = []
    for mode in (True, False):
        with fusion(mode):
            rumus.manual_seed(7)
            outs.append((F.dropout(x * 3, p=0.25) + 1).cpu().numpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    kept = outs[0] != 1
    assert abs(kept.mean() - 0.75) < 0.03
    np.testing.assert_allclose(outs[0][kept], 1 + 3 / 0.75, rtol=1e-6)


def test_inplace_writes_order_correctly():
    a = np.arange(6, dtype=np.float32)
    x = g(a)
    z = x * 2  # pending, reads x
    x.add_(1)  # must not change z
    w = z + x
    assert_close(w, a * 2 + a + 1)
    z2 = x * 3
    z2.mul_(2)  # in-place write of a pending result
    assert_close(z2 + 1, (a + 1) * 6 + 1)
    v = x.exp()
    v[0] = 5.0  # a write through a view of a pending result
    assert_close(v, np.concatenate([[5.0], np.exp(a[1:] + 1)]).astype(np.float32), rtol=1e-5)


def test_saved_tensor_version_check_still_raises():
    x = g(np.linspace(-1, 1, 5)).requires_grad_()
    y = x.exp()  # saves its output for backward
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_reductions_and_matmul_see_fused_values():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 4)).astype(np.float32)
    x = g(a)
    y = (x * 2).relu()
    assert_close(y.sum(), np.float32(np.maximum(a * 2, 0).sum()), rtol=1e-5)
    assert_close(y @ (x + 1), np.maximum(a * 2, 0) @ (a + 1), rtol=1e-4, atol=1e-5)
    assert float((x - x).abs().max().item()) == 0.0


def test_dropped_results_free_their_memory():
    x = g(np.ones(4096))
    rumus.gpu.synchronize()
    before = rumus.gpu.memory_allocated()
    for _ in range(5):
        y = x * 2 + 1
        del y
    rumus.gpu.synchronize()
    assert rumus.gpu.memory_allocated() == before


def test_generated_kernels_validate_with_naga():
    x = g(np.linspace(-2, 2, 12).reshape(3, 4))
    b = g(np.ones(4))
    _ = (F.gelu(x) * 2 + b).cpu(), (x.sin() - 1 / (x * x + 1)).cpu()
    sources = _r._gpu_fused_sources()
    assert sources
    for src in sources:
        used = _r._gpu_validate_wgsl(src, "fused")
        assert used == list(range(len(used)))
    with pytest.raises(ValueError):
        _r._gpu_validate_wgsl("fn broken( {", "fused")


def test_env_var_turns_fusion_off():
    code = (
        "import rumus, numpy as np\n"
        "x = rumus.from_numpy(np.ones(8, dtype=np.float32)).to('gpu')\n"
        "y = (x * 2 + 1).exp().cpu()\n"
        "assert not rumus._rumus._gpu_fusion_enabled()\n"
        "assert rumus.gpu.kernel_stats()['fused_dispatches'] == 0\n"
        "print(y.numpy()[0])\n"
    )
    env = dict(os.environ, RUMUS_GPU_FUSION="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert abs(float(out.stdout) - math.exp(3)) < 1e-4


def test_batch_norm_relu_is_one_pass():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 4, 2, 3)).astype(np.float32)
    w0 = (1 + rng.random(4)).astype(np.float32)
    b0 = rng.standard_normal(4).astype(np.float32)
    results, counts = {}, {}
    for mode in (True, False):
        with fusion(mode):
            x, w, b = (g(t).requires_grad_() for t in (a, w0, b0))
            rumus.gpu.synchronize()
            rumus.gpu.reset_kernel_stats()
            y = F.relu(F.batch_norm(x, None, None, w, b, training=True))
            rumus.gpu.synchronize()
            counts[mode] = rumus.gpu.kernel_stats()["dispatches"]
            (y * y).sum().backward()
            results[mode] = (y.detach().cpu().numpy(), x.grad.cpu().numpy(), w.grad.cpu().numpy())
    mean = a.mean(axis=(0, 2, 3), keepdims=True)
    var = a.var(axis=(0, 2, 3), keepdims=True)
    expect = (a - mean) / np.sqrt(var + 1e-5) * w0[:, None, None] + b0[:, None, None]
    np.testing.assert_allclose(results[True][0], np.maximum(expect, 0), rtol=1e-4, atol=1e-5)
    for f, e in zip(results[True], results[False]):
        np.testing.assert_allclose(f, e, rtol=1e-5, atol=1e-6)
    # statistics, then normalize + affine + ReLU in one kernel (eagerly: three)
    assert counts[True] == 2 and counts[False] == 3
