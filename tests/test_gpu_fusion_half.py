"""Lazy elementwise fusion of float16 GPU tensors (rust/backend/gpu/fusion.rs): float16 unary
and binary chains and float32 <-> float16 casts join one generated kernel, which computes in
float32 and rounds each float16 result where the eager kernel rounds it, so fused and eager
results agree (bit for bit where no arithmetic can be contracted differently), inlined float16
intermediates keep their rounding; odd sizes and offsets,
overflow to inf, autocast training gradients, dispatch counts and naga validation."""

import numpy as np
import pytest
import rumus
import rumus.nn as nn
import rumus.nn.functional as F
from test_gpu_fusion import dispatches, fusion

_r = rumus._rumus


@pytest.fixture(autouse=True)
def half_gpu(gpu):
    if not rumus.gpu.adapter_info()["shader_f16"]:
        pytest.skip("the adapter has no shader-f16")


def h(a):
    """A float16 GPU tensor of a's values."""
    return rumus.from_numpy(np.asarray(a, dtype=np.float16)).to("gpu")


def f(a):
    return rumus.from_numpy(np.asarray(a, dtype=np.float32)).to("gpu")


def both(fn, *arrays, make=h):
    """fn's result (as a float64 array) with fusion on and off."""
    out = []
    for mode in (True, False):
        with fusion(mode):
            r = fn(*[make(a) for a in arrays])
            assert r.dtype == rumus.float16 or r.dtype == rumus.float32
            out.append((r.dtype, r.cpu().double().numpy()))
    return out


CHAINS = [
    ("unary", [(5, 7)], lambda x: rumus.sigmoid(rumus.exp(rumus.tanh(x)))),
    ("binary", [(3, 5), (3, 5)], lambda x, y: (x + y) * (x - y) / (y * y + 1)),
    ("scalar", [(1023,)], lambda x: 2.5 * x - 1.25 + x / 3 - (1 - x)),
    ("gelu", [(4099,)], lambda x: F.gelu(x) * 1.5),
    ("bias_relu", [(6, 5), (5,)], lambda x, b: (x + b).relu() * 0.5),
    ("transposed", [(4, 6), (6, 4)], lambda x, y: (x.t() + y).exp() * y),
]


@pytest.mark.parametrize("name,shapes,chain", CHAINS, ids=[c[0] for c in CHAINS])
def test_half_chains_match_eager(name, shapes, chain):
    rng = np.random.default_rng(len(name))
    args = [rng.standard_normal(s) for s in shapes]
    (dt_on, fused), (dt_off, eager) = both(chain, *args)
    assert dt_on == dt_off == rumus.float16
    # The same rounding points; but a float32 intermediate the compiler evaluates differently
    # (an fma, a division's last bit) may round to the neighbouring float16, and that ulp of
    # an intermediate (of the inputs' and result's magnitude) carries through the chain.
    scale = max(np.abs(eager).max(), *(np.abs(a).max() for a in args))
    np.testing.assert_allclose(fused, eager, rtol=2.0**-10, atol=2.0**-9 * scale)
    # And the values: float32 math, float16 roundings (a few ulps of float16 over the chain).
    ref = chain(*[rumus.from_numpy(np.float16(a).astype(np.float32)) for a in args]).numpy()
    np.testing.assert_allclose(fused, ref, rtol=8e-3, atol=8e-3)


def test_inlined_half_intermediates_keep_their_rounding():
    """x.half().float() - x is the float16 rounding error of x: nonzero, and the same fused."""
    a = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    (_, fused), (_, eager) = both(lambda x: x.half().float() - x, a, make=f)
    np.testing.assert_array_equal(fused, eager)
    np.testing.assert_array_equal(fused, a.astype(np.float16).astype(np.float64) - a)
    assert np.abs(fused).max() > 0
    # float16 arithmetic rounds after each op: (x16 * 3) * 5 differs from x16 * 15.
    b = np.float16(np.linspace(-3, 3, 997))
    (_, two), _ = both(lambda x: (x * 3) * 5, b)
    want = (b.astype(np.float32) * 3).astype(np.float16).astype(np.float32) * 5
    np.testing.assert_array_equal(two, want.astype(np.float16).astype(np.float64))


@pytest.mark.parametrize("n", [1, 3, 5, 1023, 4099])
@pytest.mark.parametrize("offset", [0, 1, 2, 4])
def test_half_odd_sizes_and_offsets(n, offset):
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n + 8)
    b = rng.standard_normal(n + 8).astype(np.float32)

    def chain(x, y):
        xs = x[offset : offset + n]
        return (xs * y[3 : 3 + n].half() + xs.sigmoid()).float() - 0.5

    outs = []
    for mode in (True, False):
        with fusion(mode):
            outs.append(chain(h(a), f(b)).cpu().numpy())
    assert outs[0].dtype == np.float32 and outs[0].shape == (n,)
    np.testing.assert_allclose(outs[0], outs[1], rtol=2.0**-10, atol=2.0**-14)


def test_casts_overflow_and_specials_match_eager():
    a = np.array([1e5, -1e5, 65504, 65520, 1e-8, np.inf, -np.inf, np.nan, 0.0, -0.0], np.float32)
    (_, fused), (_, eager) = both(lambda x: x.half(), a, make=f)
    np.testing.assert_array_equal(fused, eager)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(fused, a.astype(np.float16).astype(np.float64))


def test_autocast_chains_are_fewer_dispatches():
    rng = np.random.default_rng(2)
    x = f(rng.standard_normal((8, 64)))
    b = f(rng.standard_normal(64))
    r = h(rng.standard_normal((8, 64)))

    def chain():
        return (F.gelu(x.half() + r) * 0.5 + r).float()

    def with_bias():
        # b.half() is read through a broadcast: it is materialized first (its own kernel).
        return (F.gelu(x.half() + b.half()) * 0.5 + r).float()

    with fusion(True):
        on = dispatches(chain), dispatches(with_bias)
    with fusion(False):
        off = dispatches(chain), dispatches(with_bias)
    assert on[0] == (1, 1)
    assert on[1][0] < off[1][0] and off[0][0] >= 5 and off[0][1] == 0


def test_autocast_training_gradients_match_unfused():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    grads = []
    for mode in (True, False):
        with fusion(mode):
            rumus.manual_seed(0)
            model = nn.Sequential(nn.Linear(32, 48), nn.GELU(), nn.Linear(48, 8)).to("gpu")
            with rumus.autocast("gpu", dtype=rumus.float16):
                out = model(f(x))
                loss = (out.float() ** 2).mean()
            loss.backward()
            grads.append([p.grad.cpu().numpy() for p in model.parameters()])
    for a, b in zip(*grads):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=1e-5 * np.abs(b).max())


def test_half_generated_kernels_validate_with_naga():
    x = h(np.linspace(-2, 2, 12).reshape(3, 4))
    y = f(np.ones(4))
    _ = (F.gelu(x) * 2 + y.half()).cpu(), (x.float().sin() - 1).half().cpu()
    sources = [s for s in _r._gpu_fused_sources() if "<f16>" in s]
    assert sources
    for src in sources:
        assert src.startswith("enable f16;")
        used = _r._gpu_validate_wgsl(src, "fused")
        assert used == list(range(len(used)))
