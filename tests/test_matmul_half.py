"""bfloat16 and float16 matrix products on the CPU (native kernels: AVX512-BF16
for bfloat16 where the CPU has it, F16C-widened AVX-512 for float16), checked
against a float64 product of the same (already rounded) inputs: the only
error allowed is the one rounding of the output plus float32 summation."""

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F

# Unit roundoff of the output dtype; the sums are float32 (k * 2^-24 relative
# to the sum of |terms|).
EPS = {"bfloat16": 2.0**-8, "float16": 2.0**-11}
SIZES = [1, 7, 17, 33, 257]


def rnd(shape, dtype, seed=0):
    """(rumus tensor in dtype, its exact values as float64)."""
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    t = rumus.tensor(x).to(getattr(rumus, dtype))
    return t, t.double().numpy()


def check(out, a64, b64, dtype, op=np.matmul):
    """out (dtype) equals op(a64, b64) up to one rounding and float32 sums."""
    assert out.dtype == getattr(rumus, dtype)
    got = out.detach().double().numpy()
    ref = op(a64, b64)
    mag = op(np.abs(a64), np.abs(b64))
    k = a64.shape[-1] if a64.ndim else 1
    tol = EPS[dtype] * np.abs(ref) + (k + 2) * 2.0**-23 * mag + 1e-30
    err = np.abs(got - ref)
    assert got.shape == ref.shape
    assert np.all(err <= tol), f"max excess {np.max(err - tol)} ({dtype})"


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("m", SIZES)
@pytest.mark.parametrize("k", SIZES)
def test_mm_odd_shapes(dtype, m, k):
    for n in (1, 33):
        a, a64 = rnd((m, k), dtype, 1)
        b, b64 = rnd((k, n), dtype, 2)
        check(a @ b, a64, b64, dtype)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_mm_large_multiblock(dtype):
    # Several parallel output blocks and k chunks (k > 256) with ragged edges.
    a, a64 = rnd((203, 611), dtype, 3)
    b, b64 = rnd((611, 301), dtype, 4)
    check(rumus.mm(a, b), a64, b64, dtype)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_bmm_and_broadcast_batch(dtype):
    a, a64 = rnd((3, 17, 33), dtype, 5)
    b, b64 = rnd((3, 33, 7), dtype, 6)
    check(rumus.bmm(a, b), a64, b64, dtype)
    c, c64 = rnd((2, 1, 9, 17), dtype, 7)
    d, d64 = rnd((4, 17, 5), dtype, 8)
    check(rumus.matmul(c, d), c64, d64, dtype)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_transposed_and_strided_operands(dtype):
    a, a64 = rnd((33, 40), dtype, 9)
    b, b64 = rnd((57, 33), dtype, 10)
    check(a.t() @ b.t(), a64.T, b64.T, dtype)  # both column-major
    c, c64 = rnd((20, 33), dtype, 11)
    check(c[::2, ::3] @ a[::3, ::2], c64[::2, ::3], a64[::3, ::2], dtype)
    # k = 2048 with a column-major right operand (x @ w.T of a wide layer).
    x, x64 = rnd((20, 2048), dtype, 12)
    w, w64 = rnd((24, 2048), dtype, 13)
    check(x @ w.t(), x64, w64.T, dtype)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_vector_cases_and_empty(dtype):
    a, a64 = rnd((17, 9), dtype, 14)
    v, v64 = rnd((9,), dtype, 15)
    check(a @ v, a64, v64, dtype)
    check(v @ a.t(), v64, a64.T, dtype)
    z = rumus.zeros(4, 0, dtype=getattr(rumus, dtype)) @ rumus.zeros(
        0, 3, dtype=getattr(rumus, dtype)
    )
    assert z.shape == (4, 3) and not z.double().numpy().any()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_linear_addmm_baddbmm(dtype):
    x, x64 = rnd((5, 33), dtype, 16)
    w, w64 = rnd((17, 33), dtype, 17)
    y = F.linear(x, w)
    check(y, x64, w64.T, dtype)
    inp, i64 = rnd((5, 17), dtype, 18)
    out = rumus.addmm(inp, x, w.t())
    # The sum with the input is one more rounding in dtype.
    ref = x64 @ w64.T
    got = out.double().numpy()
    tol = 2 * EPS[dtype] * (np.abs(ref) + np.abs(i64) + np.abs(x64) @ np.abs(w64.T))
    assert out.dtype == getattr(rumus, dtype) and np.all(np.abs(got - ref - i64) <= tol)
    b1, b164 = rnd((2, 7, 9), dtype, 19)
    b2, b264 = rnd((2, 9, 3), dtype, 20)
    out = rumus.baddbmm(rumus.zeros(2, 7, 3, dtype=getattr(rumus, dtype)), b1, b2)
    check(out, b164, b264, dtype)


def test_conv2d_bfloat16_matches_float64():
    x, x64 = rnd((2, 3, 9, 9), "bfloat16", 21)
    w, w64 = rnd((4, 3, 3, 3), "bfloat16", 22)
    y = F.conv2d(x, w, padding=1)
    ref = F.conv2d(rumus.tensor(x64), rumus.tensor(w64), padding=1).numpy()
    mag = F.conv2d(rumus.tensor(np.abs(x64)), rumus.tensor(np.abs(w64)), padding=1).numpy()
    assert y.dtype == rumus.bfloat16
    err = np.abs(y.double().numpy() - ref)
    assert np.all(err <= EPS["bfloat16"] * np.abs(ref) + 2.0**-18 * mag)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_gradients_through_matmul(dtype):
    a, a64 = rnd((17, 33), dtype, 23)
    b, b64 = rnd((33, 7), dtype, 24)
    g, g64 = rnd((17, 7), dtype, 25)
    a.requires_grad_(True)
    b.requires_grad_(True)
    (a @ b).backward(g)
    assert a.grad.dtype == getattr(rumus, dtype) and b.grad.dtype == getattr(rumus, dtype)
    check(a.grad, g64, b64.T, dtype)
    check(b.grad, a64.T, g64, dtype)


def test_autocast_bfloat16_linear_uses_native_kernel_result():
    x, x64 = rnd((8, 33), "float32", 26)
    lin = rumus.nn.Linear(33, 17, bias=False)
    with rumus.autocast("cpu", dtype=rumus.bfloat16):
        y = lin(x)
    assert y.dtype == rumus.bfloat16
    xb = x.to(rumus.bfloat16).double().numpy()
    wb = lin.weight.detach().to(rumus.bfloat16).double().numpy()
    check(y, xb, wb.T, "bfloat16")


def test_bfloat16_special_values():
    a = rumus.tensor([[float("inf"), 1.0], [float("nan"), 2.0]]).to(rumus.bfloat16)
    b = rumus.tensor([[1.0], [1.0]]).to(rumus.bfloat16)
    out = (a @ b).float().numpy()
    assert out[0, 0] == np.inf and np.isnan(out[1, 0])
    # Sums beyond bfloat16's range overflow to inf when rounded.
    big = rumus.full((1, 4), 2.0**126, dtype=rumus.bfloat16)
    assert (big @ rumus.ones(4, 1, dtype=rumus.bfloat16)).float().item() == np.inf
