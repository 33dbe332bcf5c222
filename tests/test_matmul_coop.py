"""float16 GPU matrix products with and without the tensor-core kernels
(backend/gpu/matmul_coop.rs; RUMUS_GPU_DISABLE_COOP=1 forces the portable
ones). On lavapipe (CI) there are no cooperative matrices, so both settings run
the portable kernel and must agree bit for bit; on a GPU with tensor cores the
two differ only in summation order, so both are checked against float64."""

import math

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F

FLAG = "RUMUS_GPU_DISABLE_COOP"


@pytest.fixture
def half_gpu(gpu):
    if not rumus.gpu.adapter_info()["shader_f16"]:
        pytest.skip("the adapter has no shader-f16")
    return gpu


def rnd(shape, seed):
    """(float16 GPU tensor, its exact values as float64)."""
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float16)
    return rumus.tensor(x).to("gpu"), x.astype(np.float64)


def close(got, ref, mag, k):
    """float16 output: one rounding, plus float32 sums (or float16 ones on
    adapters whose tensor cores accumulate in float16)."""
    info = rumus.gpu.adapter_info()
    acc = (
        2.0**-11
        if "f16" in (info["cooperative_matrix_kernel"] or "->f32").split("->")[1]
        else 2.0**-23
    )
    tol = 2.0**-11 * np.abs(ref) + (k + 2) * acc * mag + 1e-6
    assert got.shape == ref.shape
    excess = np.abs(got - ref) - tol
    assert np.all(excess <= 0), f"max excess {excess.max()}"


def products():
    """(name, rumus result, float64 reference, float64 |a| @ |b|, k) for odd shapes,
    transposed and batched operands and linear."""
    out = []
    for m, k, n in [(1, 1, 1), (7, 17, 33), (33, 40, 9), (130, 70, 129)]:
        a, a64 = rnd((m, k), 1)
        b, b64 = rnd((k, n), 2)
        out.append((f"mm {m}x{k}x{n}", a @ b, a64 @ b64, np.abs(a64) @ np.abs(b64), k))
    a, a64 = rnd((21, 19), 3)
    b, b64 = rnd((23, 21), 4)
    out.append(("a.T @ b.T", a.t() @ b.t(), a64.T @ b64.T, np.abs(a64.T) @ np.abs(b64.T), 21))
    a, a64 = rnd((3, 17, 33), 5)
    b, b64 = rnd((3, 33, 7), 6)
    out.append(("bmm", rumus.bmm(a, b), a64 @ b64, np.abs(a64) @ np.abs(b64), 33))
    a, a64 = rnd((2, 1, 9, 17), 7)
    b, b64 = rnd((4, 17, 5), 8)
    out.append(("broadcast", a @ b, a64 @ b64, np.abs(a64) @ np.abs(b64), 17))
    x, x64 = rnd((6, 24), 9)
    w, w64 = rnd((10, 24), 10)
    out.append(("linear", F.linear(x, w), x64 @ w64.T, np.abs(x64) @ np.abs(w64.T), 24))
    return [(name, r.cpu().double().numpy(), ref, mag, k) for name, r, ref, mag, k in out]


def test_adapter_info_lists_cooperative_matrices(half_gpu, monkeypatch):
    monkeypatch.delenv(FLAG, raising=False)
    info = rumus.gpu.adapter_info()
    assert isinstance(info["cooperative_matrix"], list)
    assert all(isinstance(s, str) and "->" in s for s in info["cooperative_matrix"])
    kernel = info["cooperative_matrix_kernel"]
    if not info["cooperative_matrix"]:
        assert kernel is None  # lavapipe: the portable kernels
    if kernel is not None:
        assert kernel.split(" ")[0] in {"16x16x16", "8x8x8"}
    monkeypatch.setenv(FLAG, "1")
    assert rumus.gpu.adapter_info()["cooperative_matrix_kernel"] is None
    monkeypatch.setenv(FLAG, "0")
    assert rumus.gpu.adapter_info()["cooperative_matrix_kernel"] == kernel


def test_float16_products_agree_with_the_flag_on_and_off(half_gpu, monkeypatch):
    monkeypatch.delenv(FLAG, raising=False)
    coop = products()
    monkeypatch.setenv(FLAG, "1")
    portable = products()
    tensor_cores = rumus.gpu.adapter_info()["cooperative_matrix"] != []
    for (name, got, ref, mag, k), (_, plain, _, _, _) in zip(coop, portable):
        close(got, ref, mag, k)
        close(plain, ref, mag, k)
        if not tensor_cores:
            np.testing.assert_array_equal(got, plain, err_msg=name)


@pytest.mark.parametrize("kernel", ["coop", "coop_direct"])
def test_whole_tile_products_in_every_layout(half_gpu, monkeypatch, kernel):
    """Whole 128 x 128 tiles, A and B each row- or column-major, and a batch:
    the shapes the direct kernel takes (forced through the autotuner's
    variant; where the adapter has no tensor cores the portable kernel runs)."""
    monkeypatch.delenv(FLAG, raising=False)
    monkeypatch.setenv("RUMUS_GPU_MATMUL_VARIANT", kernel)
    m, k, n = 256, 144, 384
    a, a64 = rnd((m, k), 13)
    b, b64 = rnd((k, n), 14)
    at, _ = rnd((k, m), 15)
    bt, _ = rnd((n, k), 16)
    at64, bt64 = at.cpu().double().numpy(), bt.cpu().double().numpy()
    for name, x, x64 in [("A", a, a64), ("A col-major", at.t(), at64.T)]:
        for bname, y, y64 in [("B", b, b64), ("B col-major", bt.t(), bt64.T)]:
            got = (x @ y).cpu().double().numpy()
            close(got, x64 @ y64, np.abs(x64) @ np.abs(y64), k)
            assert got.shape == (m, n), (name, bname)
    a, a64 = rnd((3, 128, 64), 17)
    b, b64 = rnd((3, 64, 128), 18)
    got = rumus.bmm(a, b).cpu().double().numpy()
    close(got, a64 @ b64, np.abs(a64) @ np.abs(b64), 64)


@pytest.mark.parametrize("kernel", ["coop", "coop_direct"])
@pytest.mark.parametrize("act", ["none", "relu", "gelu", "gelu_tanh", "silu"])
def test_linear_epilogue_after_tensor_cores(half_gpu, monkeypatch, kernel, act):
    """act(x @ w.T + b) + residual in float16: on tensor cores the epilogue runs as
    (fused) elementwise ops after the product, elsewhere inside the portable kernel."""
    monkeypatch.delenv(FLAG, raising=False)
    monkeypatch.setenv("RUMUS_GPU_MATMUL_VARIANT", kernel)
    x, x64 = rnd((256, 64), 19)
    w, w64 = rnd((128, 64), 20)
    b, b64 = rnd((128,), 21)
    r, r64 = rnd((256, 128), 22)
    got = rumus._rumus._linear_act(x, w, b, act, r).cpu().double().numpy()
    prod = x64 @ w64.T
    z = prod + b64
    sig = 1 / (1 + np.exp(-z))
    erf = np.vectorize(math.erf)
    tanh_gelu = 0.5 * z * (1 + np.tanh(0.7978845608028654 * (z + 0.044715 * z**3)))
    acts = {
        "none": z,
        "relu": np.maximum(z, 0),
        "gelu": 0.5 * z * (1 + erf(z / math.sqrt(2))),
        "gelu_tanh": tanh_gelu,
        "silu": z * sig,
    }
    a = acts[act]
    ref = a + r64
    # float16 roundings of the product and the bias sum (carried through an activation of
    # slope <= 1.2), of the activation and of the residual sum; the portable kernel rounds
    # once, the tensor-core route after each step.
    tol = 2.0**-11 * (1.2 * (np.abs(prod) + np.abs(z)) + np.abs(a) + np.abs(ref)) + 2.0**-20
    assert np.all(np.abs(got - ref) <= tol), np.max(np.abs(got - ref) - tol)


def test_autocast_float16_matmul_on_the_gpu(half_gpu, monkeypatch):
    monkeypatch.delenv(FLAG, raising=False)
    a, a64 = rnd((9, 31), 11)
    b, b64 = rnd((31, 12), 12)
    with rumus.autocast("gpu", dtype=rumus.float16):
        out = a.float() @ b.float()
    assert out.dtype == rumus.float16
    close(out.cpu().double().numpy(), a64 @ b64, np.abs(a64) @ np.abs(b64), 31)
