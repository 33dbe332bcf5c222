"""Same-dtype copies of strided layouts on the CPU: transposes (the tiled kernel, tiles of one
cache line per side) and other permutations (a plain move per element), for every element
size, odd shapes and power-of-two strides, checked bit for bit against NumPy."""

import numpy as np
import pytest
import rumus

DTYPES = ["bfloat16", "float16", "float32", "float64", "int64", "uint8", "bool", "complex64"]
SHAPES = [(1, 1), (3, 5), (17, 33), (64, 128), (31, 1025), (2048, 16)]


def make(shape, dtype, seed=0):
    """(rumus tensor, the NumPy array of its exact values: float64 for the half types)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if dtype == "bool":
        x = x > 0
    elif dtype.startswith(("int", "uint")):
        x = (x * 50).astype(dtype)
    elif dtype == "complex64":
        x = (x + 1j * rng.standard_normal(shape)).astype(np.complex64)
    else:
        x = x.astype(np.float32)
    t = rumus.tensor(x)
    if dtype in ("bfloat16", "float16", "float64"):
        t = t.to(getattr(rumus, dtype))
    ref = t.double().numpy() if dtype in ("bfloat16", "float16") else t.numpy()
    return t, ref


def values(t):
    return t.double().numpy() if t.dtype in (rumus.bfloat16, rumus.float16) else t.numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_transpose_contiguous(dtype, shape):
    t, ref = make(shape, dtype)
    out = t.t().contiguous()
    assert out.is_contiguous() and out.dtype == t.dtype
    np.testing.assert_array_equal(values(out), ref.T)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32", "float64", "uint8"])
def test_batched_and_sliced_transposes(dtype):
    t, ref = make((3, 40, 70), dtype, 1)
    np.testing.assert_array_equal(values(t.transpose(1, 2).contiguous()), ref.transpose(0, 2, 1))
    np.testing.assert_array_equal(values(t.permute(2, 0, 1).contiguous()), ref.transpose(2, 0, 1))
    # A transposed slice: unit stride on an inner dim, gaps between rows.
    s = t[:, 3:37, ::2].transpose(1, 2)
    np.testing.assert_array_equal(values(s.contiguous()), ref[:, 3:37, ::2].transpose(0, 2, 1))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "int64"])
def test_permuted_copies_keep_values(dtype):
    # The layout of a transformer's head split: the last dim stays unit-stride.
    t, ref = make((2, 5, 3, 4, 8), dtype, 2)
    p = t.permute(2, 0, 3, 1, 4)
    np.testing.assert_array_equal(values(p.contiguous()), ref.transpose(2, 0, 3, 1, 4))
    np.testing.assert_array_equal(
        values(p.reshape(3, 8, 40)), ref.transpose(2, 0, 3, 1, 4).reshape(3, 8, 40)
    )
    # Broadcast source into a fresh tensor (stride 0).
    e = t[:, :1].expand(2, 5, 3, 4, 8).contiguous()
    np.testing.assert_array_equal(values(e), np.broadcast_to(ref[:, :1], (2, 5, 3, 4, 8)))


def test_half_special_values_survive_the_copy():
    x = rumus.tensor([[np.inf, -np.inf], [np.nan, -0.0], [1e-40, 3.0]]).to(rumus.bfloat16)
    a = x.float().numpy()
    b = x.t().contiguous().float().numpy().T
    np.testing.assert_array_equal(a, b)  # NaN positions equal too
    np.testing.assert_array_equal(np.signbit(a), np.signbit(b))


def test_gradient_through_transposed_copy():
    t, ref = make((6, 9), "bfloat16", 3)
    t.requires_grad_(True)
    g, gref = make((9, 6), "bfloat16", 4)
    t.t().contiguous().backward(g)
    np.testing.assert_array_equal(values(t.grad), gref.T)
