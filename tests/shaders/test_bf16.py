"""shaders/bf16.wgsl and shaders/matmul_bf16.wgsl through wgpu-py against NumPy: bfloat16
packed two per u32 word, rounding to nearest even, strided and odd-offset halves."""

import numpy as np

from .conftest import CODES as C
from .conftest import groups_1d
from .test_elementwise import params


def bf16_bits(x):
    """float32 -> bfloat16 bits (round to nearest even; NaN stays NaN)."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    nan = (b & 0x7FFFFFFF) > 0x7F800000
    r = np.where(nan, (b >> 16) | 0x40, (b + 0x7FFF + ((b >> 16) & 1)) >> 16)
    return r.astype(np.uint16)


def widen(bits):
    return (np.asarray(bits, np.uint32) << 16).view(np.float32)


def pad(h):
    """16-bit halves as a word buffer (an odd count gets a zero half)."""
    h = np.asarray(h, np.uint16)
    return np.concatenate([h, np.zeros(len(h) % 2, np.uint16)]).view(np.uint32)


VALS = np.array(
    [0, -0.0, 1, 1 + 2**-8, 1 + 3 * 2**-8, -2.5, 3.4e38, 1e-40, np.inf, -np.inf, np.nan],
    np.float32,
)


def test_store16_float32_to_bfloat16(gpu):
    n = len(VALS)
    op = C["KIND_F32"] | (C["KIND_BF16"] << 4)
    out = np.full(n + 1, 0xFFFF, np.uint16)  # n + 1 halves: the last must survive
    got = gpu.run(
        "bf16.wgsl", "store16", [VALS, None, None, pad(out)], params(n, op), groups_1d(n)
    )[3]
    halves = got.view(np.uint16)
    np.testing.assert_array_equal(halves[:n], bf16_bits(VALS))
    assert halves[n] == 0xFFFF


def test_store16_strided_odd_offsets(gpu):
    # Every other half from offset 3: the halves between keep their bits.
    x = np.arange(1, 6, dtype=np.float32) * 1.3
    out = np.full(14, 0xABCD, np.uint16)
    op = C["KIND_F32"] | (C["KIND_BF16"] << 4)
    p = params(5, op, flags=0, shape=(5,), offs=(3, 0, 0, 0), strides=((2,), (1,), (), ()))
    got = gpu.run("bf16.wgsl", "store16", [x, None, None, pad(out)], p, groups_1d(5))[3]
    exp = out.copy()
    exp[3:13:2] = bf16_bits(x)
    np.testing.assert_array_equal(got.view(np.uint16), exp)


def test_store16_copy_keeps_nan_payloads_and_fill(gpu):
    src = np.array([0x7F81, 0xFFC1, 0x3F80, 0x0001, 0x8000], np.uint16)
    op = C["KIND_BF16"] | (C["KIND_BF16"] << 4)
    out = np.zeros(6, np.uint16)
    p = params(5, op, offs=(1, 0, 0, 0))
    got = gpu.run("bf16.wgsl", "store16", [pad(src), None, None, pad(out)], p, groups_1d(5))[3]
    np.testing.assert_array_equal(got.view(np.uint16)[1:6], src)
    # fill: a is the scalar s0 (float32 bits).
    p = params(
        5,
        C["KIND_F32"] | (C["KIND_BF16"] << 4),
        flags=1 | 2,
        s0=int(np.float32(0.1).view(np.uint32)),
    )
    got = gpu.run(
        "bf16.wgsl", "store16", [np.zeros(1, np.uint32), None, None, pad(out)], p, groups_1d(5)
    )[3]
    np.testing.assert_array_equal(got.view(np.uint16)[:5], bf16_bits(np.full(5, 0.1)))


def test_load16_to_word_kinds(gpu):
    bits = bf16_bits(np.array([1.5, -2.75, 0.0, 300.0, np.nan], np.float32))
    x = widen(bits)
    for kind, exp in [
        ("F32", x.view(np.uint32)),
        ("I32", np.array([1, -2, 0, 300, 0], np.int32).view(np.uint32)),
        ("BOOL", np.array([1, 1, 0, 1, 1], np.uint32)),
        ("U8", np.array([1, 254, 0, 44, 0], np.uint32)),
    ]:
        op = C["KIND_BF16"] | (C[f"KIND_{kind}"] << 4)
        out = np.zeros(5, np.uint32)
        got = gpu.run(
            "bf16.wgsl", "load16", [pad(bits), None, None, out], params(5, op), groups_1d(5)
        )[3]
        n = 4 if kind in ("I32", "U8") else 5  # NaN -> int is unspecified
        np.testing.assert_array_equal(got[:n], exp[:n], err_msg=kind)


def test_matmul_bf16_strided(gpu):
    rng = np.random.default_rng(0)
    m, k, n, batch = 37, 21, 70, 2
    a = bf16_bits(rng.standard_normal(1 + batch * m * k))  # offset 1, row-major
    b = bf16_bits(rng.standard_normal(batch * k * n + 3))  # transposed: rs 1, cs k
    c = np.full(batch * m * n + 2, 7.0, np.float32)
    p = [m, n, k, batch, 1, m * k, k, 1, 3, k * n, 1, k, 2, m * n, 0, 0]
    groups = (-(-n // 64), -(-m // 64), batch)
    got = gpu.run("matmul_bf16.wgsl", "matmul_bf16", [pad(a), pad(b), c], p, groups)[2]
    fa = widen(a)[1:].astype(np.float64).reshape(batch, m, k)
    fb = widen(b)[3:].astype(np.float64).reshape(batch, n, k).transpose(0, 2, 1)
    np.testing.assert_allclose(got[2:].reshape(batch, m, n), fa @ fb, rtol=1e-5, atol=1e-5)
    assert (got[:2] == 7.0).all()


def test_store16_contiguous_runs_keep_the_halves_around_them(gpu):
    # Whole words inside the run; the odd first and even last halves share a word.
    op = C["KIND_F32"] | (C["KIND_BF16"] << 4)
    for off, n in [(0, 4), (1, 4), (1, 5), (2, 3), (3, 1)]:
        x = np.arange(1, n + 1, dtype=np.float32) * 1.1
        out = np.full(10, 0xABCD, np.uint16)
        p = params(n, op, offs=(off, 0, 0, 0))
        got = gpu.run("bf16.wgsl", "store16", [x, None, None, pad(out)], p, groups_1d(n))[3]
        exp = out.copy()
        exp[off : off + n] = bf16_bits(x)
        np.testing.assert_array_equal(got.view(np.uint16), exp, err_msg=f"off {off} n {n}")
