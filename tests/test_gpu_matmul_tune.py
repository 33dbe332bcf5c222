"""GPU matmul variants (tile shapes, k-splits), their autotuning and its
on-disk cache, and linear's fused epilogue (bias, activation, residual)."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import rumus
from conftest import need_gpu

F = rumus.nn.functional
VARIANTS = ["128x128", "128x64", "64x128", "64x64"]


@pytest.fixture
def variant(monkeypatch):
    """Sets RUMUS_GPU_MATMUL_VARIANT (read by every GPU matmul) for the test."""
    need_gpu()

    def use(v):
        monkeypatch.setenv("RUMUS_GPU_MATMUL_VARIANT", v)

    return use


def gpu(a):
    return rumus.from_numpy(np.ascontiguousarray(a)).to("gpu")


@pytest.mark.parametrize("v", VARIANTS)
def test_variants_match_numpy(variant, v):
    variant(v)
    rng = np.random.default_rng(0)
    for (m, k, n), batch in [((67, 45, 70), ()), ((5, 12, 8), (3,)), ((130, 9, 66), (2,))]:
        a = rng.standard_normal((*batch, m, k)).astype(np.float32)
        b = rng.standard_normal((*batch, k, n)).astype(np.float32)
        want = a @ b
        np.testing.assert_allclose((gpu(a) @ gpu(b)).cpu().numpy(), want, rtol=1e-5, atol=1e-4)
        # Transposed views (read in place) and a broadcast batch.
        at, bt = gpu(np.swapaxes(a, -1, -2).copy()), gpu(np.swapaxes(b, -1, -2).copy())
        got = at.transpose(-1, -2) @ bt.transpose(-1, -2)
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-5, atol=1e-4)
    a = rng.standard_normal((4, 6, 10)).astype(np.float32)
    w = rng.standard_normal((10, 7)).astype(np.float32)
    np.testing.assert_allclose((gpu(a) @ gpu(w)).cpu().numpy(), a @ w, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("v", VARIANTS)
def test_variants_float16(variant, v):
    if not rumus.gpu.adapter_info().get("shader_f16", True):
        pytest.skip("no float16 kernels on this adapter")
    variant(v)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((33, 20)).astype(np.float16)
    b = rng.standard_normal((20, 68)).astype(np.float16)
    got = (gpu(a) @ gpu(b)).cpu().numpy()
    assert got.dtype == np.float16
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-2, atol=2e-2)


def test_variants_agree_with_each_other(variant):
    # Every tile sums k in the same order: the results are identical.
    rng = np.random.default_rng(2)
    a = gpu(rng.standard_normal((70, 36)).astype(np.float32))
    b = gpu(rng.standard_normal((36, 90)).astype(np.float32))
    outs = []
    for v in VARIANTS:
        variant(v)
        outs.append((a @ b).cpu().numpy())
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])


def test_split_k_variant(variant):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((20, 512)).astype(np.float32)
    b = rng.standard_normal((512, 30)).astype(np.float32)
    for v in ["128x128/s2", "64x64/s4"]:
        variant(v)
        got = (gpu(a) @ gpu(b)).cpu().numpy()
        np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-3)
    # A split the product does not allow (k not a multiple of 8·s) is ignored.
    variant("128x128/s16")
    np.testing.assert_allclose(
        (gpu(a[:, :500]) @ gpu(b[:500])).cpu().numpy(), a[:, :500] @ b[:500], rtol=1e-4, atol=1e-3
    )


# ------------------------------------------------------------------ autotune cache

SCRIPT = """
import numpy as np, rumus
a = rumus.ones(128, 128, device="gpu")
b = rumus.ones(128, 128, device="gpu") * 2
assert float((a @ b).cpu().numpy().max()) == 256.0
for c in rumus._rumus._gpu_matmul_choices():
    print("CHOICE", *c, sep="|")
"""


def run_child(cache_dir, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("RUMUS_GPU_MATMUL")}
    full.pop("RUMUS_GPU_AUTOTUNE", None)
    full.update({"RUMUS_CACHE_DIR": str(cache_dir), **env})
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=full, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return [line.split("|")[1:] for line in out.stdout.splitlines() if line.startswith("CHOICE")]


def test_autotune_writes_then_reads_cache(tmp_path):
    need_gpu()
    first = run_child(tmp_path)
    assert len(first) == 1 and first[0][2] == "tuned", first
    cls, choice = first[0][0], first[0][1]
    data = json.loads((tmp_path / "gpu_matmul.json").read_text())
    (adapter,) = data
    assert rumus.gpu.get_device_name() in adapter
    assert data[adapter] == {cls: choice}
    # A second process takes the cached choice, even one it would not have picked.
    data[adapter][cls] = "64x128/s1" if choice != "64x128/s1" else "64x64/s1"
    (tmp_path / "gpu_matmul.json").write_text(json.dumps(data))
    second = run_child(tmp_path)
    assert second == [[cls, data[adapter][cls], "cached"]]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_autotune_ignores_corrupt_cache(tmp_path):
    need_gpu()
    (tmp_path / "gpu_matmul.json").write_text('{"not json')
    got = run_child(tmp_path)
    assert got[0][2] == "tuned"
    data = json.loads((tmp_path / "gpu_matmul.json").read_text())
    assert list(next(iter(data.values()))) == [got[0][0]]


def test_autotune_off_and_unwritable_cache_use_the_heuristic(tmp_path):
    need_gpu()
    off = run_child(tmp_path, RUMUS_GPU_AUTOTUNE="0")
    assert off[0][2] == "heuristic"
    assert not (tmp_path / "gpu_matmul.json").exists()
    blocker = tmp_path / "file"
    blocker.write_text("")
    bad = run_child(blocker)  # the cache "directory" is a file
    assert bad[0][1] == off[0][1] and bad[0][2].startswith("cache not writable")


def test_cache_dir_defaults(tmp_path):
    need_gpu()
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    full = {k: v for k, v in os.environ.items() if k != "RUMUS_CACHE_DIR"}
    full.update(env)
    full.pop("RUMUS_GPU_MATMUL_VARIANT", None)
    full.pop("RUMUS_GPU_AUTOTUNE", None)
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=full, capture_output=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "xdg" / "rumus" / "gpu_matmul.json").exists()


# ------------------------------------------------------------------ fused linear

ACTS = {
    "none": lambda x: x,
    "relu": lambda x: np.maximum(x, 0),
    "gelu": lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    "silu": lambda x: x / (1 + np.exp(-x)),
}


def test_linear_bias_fused_on_gpu():
    need_gpu()
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 12)).astype(np.float32)
    w = rng.standard_normal((7, 12)).astype(np.float32)
    b = rng.standard_normal(7).astype(np.float32)
    y = F.linear(gpu(x), gpu(w), gpu(b))
    assert y.shape == (2, 5, 7) and y.is_gpu
    np.testing.assert_allclose(y.cpu().numpy(), x @ w.T + b, rtol=1e-5, atol=1e-5)
    lin = rumus.nn.Linear(12, 7).to("gpu")
    np.testing.assert_allclose(
        lin(gpu(x)).detach().cpu().numpy(),
        x @ lin.weight.detach().cpu().numpy().T + lin.bias.detach().cpu().numpy(),
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_linear_act_values_and_grads(act, device):
    if device == "gpu":
        need_gpu()
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4, 9)).astype(np.float32)
    w = rng.standard_normal((6, 9)).astype(np.float32) * 0.5
    b = rng.standard_normal(6).astype(np.float32)
    r = rng.standard_normal((3, 4, 6)).astype(np.float32)
    z = x @ w.T + b
    want = ACTS[act](z.astype(np.float64)) + r

    def leaves(dev):
        return [rumus.from_numpy(a).to(dev).requires_grad_() for a in (x, w, b, r)]

    got_leaves = leaves(device)
    y = rumus._rumus._linear_act(*got_leaves[:3], act, got_leaves[3])
    np.testing.assert_allclose(y.detach().cpu().numpy(), want, rtol=1e-5, atol=1e-5)
    gy = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(rumus.from_numpy(gy).to(device))
    # Against the composition of the ordinary ops on the CPU.
    ref = leaves("cpu")
    fns = {"none": lambda t: t, "relu": F.relu, "gelu": F.gelu, "silu": F.silu}
    fns["gelu_tanh"] = lambda t: F.gelu(t, approximate="tanh")
    (fns[act](F.linear(*ref[:3])) + ref[3]).backward(rumus.from_numpy(gy))
    for got, exp in zip(got_leaves, ref):
        np.testing.assert_allclose(got.grad.cpu().numpy(), exp.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_linear_act_gradcheck_cpu():
    rng = np.random.default_rng(6)
    args = [
        rumus.from_numpy(rng.standard_normal(s)).requires_grad_() for s in [(3, 4), (5, 4), (5,)]
    ]
    res = rumus.from_numpy(rng.standard_normal((3, 5))).requires_grad_()
    for act in ACTS:
        assert rumus.autograd.gradcheck(
            lambda x, w, b, r, act=act: rumus._rumus._linear_act(x, w, b, act, r), (*args, res)
        )


def test_linear_act_without_bias_and_1d_input():
    need_gpu()
    rng = np.random.default_rng(7)
    x = rng.standard_normal(9).astype(np.float32)
    w = rng.standard_normal((6, 9)).astype(np.float32)
    y = rumus._rumus._linear_act(gpu(x), gpu(w), None, "relu")
    assert y.shape == (6,)
    np.testing.assert_allclose(y.cpu().numpy(), np.maximum(w @ x, 0), rtol=1e-5, atol=1e-5)


def test_linear_act_errors():
    x, w = rumus.ones(2, 3), rumus.ones(4, 3)
    with pytest.raises(ValueError, match="unknown activation 'tanh'"):
        rumus._rumus._linear_act(x, w, None, "tanh")
    with pytest.raises(RuntimeError, match="residual of shape"):
        rumus._rumus._linear_act(x, w, None, "relu", rumus.ones(2, 5))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        rumus._rumus._linear_act(x, rumus.ones(4, 2), None, "relu")


def test_transformer_ff_block_on_gpu_matches_cpu():
    need_gpu()
    # Both fused linears (bias + activation, bias + residual), forward and backward.
    rumus.manual_seed(0)
    for act, norm_first in [("relu", False), ("gelu", True)]:
        layer = rumus.nn.TransformerEncoderLayer(
            8, 2, 16, dropout=0.0, activation=act, norm_first=norm_first
        )
        x = rumus.randn(2, 3, 8)
        want = layer(x)
        want.sum().backward()
        grads = [p.grad.numpy().copy() for p in layer.parameters()]
        layer.zero_grad()
        layer.to("gpu")
        got = layer(x.to("gpu"))
        got.sum().backward()
        np.testing.assert_allclose(
            got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-4
        )
        for p, g in zip(layer.parameters(), grads):
            np.testing.assert_allclose(p.grad.cpu().numpy(), g, rtol=1e-3, atol=1e-4)
