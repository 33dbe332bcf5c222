"""float16/bfloat16 on the CPU: casts to and from float32 (vectorized,
rounded to nearest even) and elementwise ops computed in float32 chunk by
chunk; results must equal the float32 op rounded once to the half dtype."""

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F

BIG = (3, 50_001)  # several chunks of the chunked path, and a ragged end


def bf16_round(x):
    """float32 -> bfloat16 bits -> float32, round to nearest even (NumPy reference)."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint32) << 16
    out = r.view(np.float32)
    return np.where(np.isnan(x), np.float32(np.nan), out)


def values(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 3
    return x


def test_float32_to_bfloat16_rounds_to_nearest_even():
    x = values(BIG)
    # Ties: the low 16 bits exactly 0x8000, both parities of the kept bit.
    ties = np.array([0x3F808000, 0x3F818000, 0xBF808000, 0x7F7FFFFF], np.uint32).view(np.float32)
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40], np.float32)
    for arr in (x, ties, special):
        got = rumus.tensor(arr).to(rumus.bfloat16).float().numpy()
        np.testing.assert_array_equal(got, bf16_round(arr))
    got = rumus.tensor(np.array([-0.0], np.float32)).to(rumus.bfloat16).float().numpy()
    assert np.signbit(got[0])


def test_float16_casts_match_numpy():
    x = values(BIG, 1)
    h = rumus.tensor(x).to(rumus.float16)
    np.testing.assert_array_equal(h.numpy(), x.astype(np.float16))
    np.testing.assert_array_equal(h.float().numpy(), x.astype(np.float16).astype(np.float32))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_casts_of_strided_views(dtype):
    x = values((300, 70), 2)
    t = rumus.tensor(x)
    for view, ref in ((t.t(), x.T), (t[::3, 1::2], x[::3, 1::2])):
        h = view.to(getattr(rumus, dtype))
        back = h.t().float().t() if view.shape == ref.shape else None
        assert h.shape == ref.shape
        want = bf16_round(ref) if dtype == "bfloat16" else ref.astype(np.float16).astype(np.float32)
        np.testing.assert_array_equal(h.float().numpy(), want)
        np.testing.assert_array_equal(back.numpy(), want)


def rounded(t32, dtype):
    """The float32 result rounded to dtype, as float32 NumPy."""
    return t32.to(dtype).float().numpy()


@pytest.mark.parametrize("dtype", [rumus.bfloat16, rumus.float16])
@pytest.mark.parametrize(
    "op",
    [
        lambda a, b: a + b,
        lambda a, b: a * b,
        lambda a, b: rumus.add(a, b, alpha=0.5),
        lambda a, b: a / b,
        lambda a, b: a * 0.25,
        lambda a, b: 2.0 - a,
        lambda a, b: rumus.maximum(a, b),
        lambda a, b: F.relu(a),
        lambda a, b: rumus.exp(a),
        lambda a, b: F.gelu(a),
        lambda a, b: rumus.sigmoid(a),
        lambda a, b: rumus.tanh(b),
    ],
)
def test_elementwise_equals_float32_rounded_once(dtype, op):
    a32, b32 = rumus.tensor(values(BIG, 3)), rumus.tensor(values(BIG, 4))
    a, b = a32.to(dtype), b32.to(dtype)
    out = op(a, b)
    assert out.dtype == dtype and out.shape == BIG
    ref = rounded(op(a.float(), b.float()), dtype)
    np.testing.assert_array_equal(out.float().numpy(), ref)


def half_round(x, dtype):
    """float32 NumPy values rounded to dtype (nearest even), back as float32."""
    if dtype == rumus.float16:
        return np.asarray(x, np.float32).astype(np.float16).astype(np.float32)
    return bf16_round(x)


ARITH = [
    lambda a, b: a + b,
    lambda a, b: a - b,
    lambda a, b: a * b,
    lambda a, b: a / b,
    lambda a, b: a + 2.5,
    lambda a, b: 3.0 - a,
    lambda a, b: a * 0.1,
    lambda a, b: 1.0 / a,
    lambda a, b: a / 3.0,
]


@pytest.mark.parametrize("dtype", [rumus.bfloat16, rumus.float16])
@pytest.mark.parametrize("n", [1, 7, 8, 13, 16_387])
def test_arithmetic_of_any_length_and_special_values(dtype, n):
    """+ - * / of half tensors (and numbers) run in one fused pass, 8 lanes at a
    time with a ragged tail: each result is the float32 result of the half
    inputs rounded once (NumPy's float32 and its rounding as the reference), with
    infinities, NaNs, signed zeros, overflow past float16's range and values
    that round to subnormals among the inputs."""
    special = np.array(
        [np.nan, np.inf, -np.inf, 0.0, -0.0, 60000.0, 1e-6, 3e38, -1.5, 2.0, 1e-3, 0.0, 7.0],
        np.float32,
    )
    x, y = values(n, 9), values(n, 10)
    x[: min(n, 13)] = special[: min(n, 13)]
    y[: min(n, 13)] = special[::-1][: min(n, 13)]
    a, b = rumus.tensor(x).to(dtype), rumus.tensor(y).to(dtype)
    a32, b32 = a.float().numpy(), b.float().numpy()
    with np.errstate(all="ignore"):
        for op in ARITH:
            got = op(a, b)
            assert got.dtype == dtype and got.shape == (n,)
            np.testing.assert_array_equal(got.float().numpy(), half_round(op(a32, b32), dtype))
        for alpha in (-1.5, 0.5):
            got = rumus.add(a, b, alpha=alpha).float().numpy()
            want = a32 + np.float32(alpha) * b32
            np.testing.assert_array_equal(got, half_round(want, dtype))
            got = rumus.sub(a, b, alpha=alpha).float().numpy()
            want = a32 - np.float32(alpha) * b32
            np.testing.assert_array_equal(got, half_round(want, dtype))


def test_arithmetic_of_views_and_broadcasts_still_rounds_once():
    """Non-contiguous and broadcast half operands take the general path."""
    x = rumus.tensor(values((40, 30), 11)).to(rumus.float16)
    row = rumus.tensor(values((30,), 12)).to(rumus.float16)
    for got, want in ((x.t() * 2.0, x.float().t() * 2.0), (x + row, x.float() + row.float())):
        np.testing.assert_array_equal(got.float().numpy(), half_round(want.numpy(), rumus.float16))


def test_elementwise_half_comparisons_and_mixed_dtypes():
    a = rumus.tensor(values(BIG, 5)).to(rumus.bfloat16)
    b = rumus.tensor(values(BIG, 6)).to(rumus.bfloat16)
    np.testing.assert_array_equal((a < b).numpy(), a.float().numpy() < b.float().numpy())
    c = a + b.float()  # promotes to float32: not the chunked path
    assert c.dtype == rumus.float32
    np.testing.assert_allclose(c.numpy(), a.float().numpy() + b.float().numpy(), rtol=1e-6)


def test_elementwise_half_gradients_and_inplace():
    a = rumus.tensor(values(BIG, 7)).to(rumus.bfloat16).requires_grad_(True)
    b = rumus.tensor(values(BIG, 8)).to(rumus.bfloat16)
    (a * b).sum().backward()
    np.testing.assert_array_equal(a.grad.float().numpy(), b.float().numpy())
    c = b.clone()
    c.mul_(b)
    np.testing.assert_array_equal(c.float().numpy(), rounded(b.float() * b.float(), rumus.bfloat16))


@pytest.mark.parametrize("dtype", [rumus.bfloat16, rumus.float16])
def test_sum_and_mean_of_half_tensors(dtype):
    t = rumus.tensor(values(BIG, 9)).to(dtype)
    x = t.double().numpy()
    eps = 2.0**-8 if dtype == rumus.bfloat16 else 2.0**-11
    for got, ref in (
        (t.sum(), x.sum()),
        (t.mean(), x.mean()),
        (t.sum(dim=1), x.sum(1)),
        (t.mean(dim=0), x.mean(0)),
        (t[:, ::7].sum(dim=-1, keepdim=True), x[:, ::7].sum(-1, keepdims=True)),
    ):
        assert got.dtype == dtype
        np.testing.assert_allclose(got.double().numpy(), ref, rtol=eps, atol=1e-6)
    assert t.sum(dtype=rumus.float32).dtype == rumus.float32
