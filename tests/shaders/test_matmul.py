"""shaders/matmul.wgsl through wgpu-py against NumPy (float64 references)."""

import numpy as np
import pytest

F = "matmul.wgsl"
TILE = 128  # the output tile documented in matmul.wgsl

NP = {"f32": np.float32, "f16": np.float16}


def dtypes(gpu):
    return ["f32", "f16"] if gpu.has_f16 else ["f32"]


def gather(buf, off, bs, rs, cs, batch, rows, cols):
    """The [batch, rows, cols] view of flat `buf` (float64)."""
    z, r, c = np.meshgrid(np.arange(batch), np.arange(rows), np.arange(cols), indexing="ij")
    return buf.astype(np.float64)[off + z * bs + r * rs + c * cs]


def layout(rng, rows, cols, batch, trans=False, bcast=False, off=0, dtype=np.float32):
    """A flat buffer holding a [batch, rows, cols] operand, and its (off, bs, rs, cs)."""
    rs, cs = (1, rows) if trans else (cols, 1)
    bs = 0 if bcast else rows * cols
    size = off + (1 if bcast else batch) * rows * cols
    buf = rng.standard_normal(size + 3).astype(dtype)  # slack after the end
    return buf, (off, bs, rs, cs)


def gemm(
    gpu,
    m,
    n,
    k,
    batch=1,
    entry="matmul",
    dtype="f32",
    a_trans=False,
    b_trans=False,
    a_bcast=False,
    b_bcast=False,
    a_off=0,
    b_off=0,
    c_off=0,
    alpha=1.0,
    beta=0.0,
    c_fill=None,
    seed=0,
):
    """Runs one dispatch; returns (C as computed, C expected) over the whole C buffer."""
    rng = np.random.default_rng(seed)
    t = NP[dtype]
    a, (ao, abs_, ars, acs) = layout(rng, m, k, batch, a_trans, a_bcast, a_off, t)
    b, (bo, bbs, brs, bcs) = layout(rng, k, n, batch, b_trans, b_bcast, b_off, t)
    c = rng.standard_normal(c_off + batch * m * n + 5).astype(t)
    if c_fill is not None:
        c[c_off : c_off + batch * m * n] = c_fill
    p = [
        m,
        n,
        k,
        batch,
        ao,
        abs_,
        ars,
        acs,
        bo,
        bbs,
        brs,
        bcs,
        c_off,
        m * n,
        float(alpha),
        float(beta),
    ]
    groups = (-(-n // TILE), -(-m // TILE), batch)
    got = gpu.run(F, entry, [a, b, c], p, groups, dtype=dtype)[2]
    want = c.astype(np.float64)
    prod = gather(a, ao, abs_, ars, acs, batch, m, k) @ gather(b, bo, bbs, brs, bcs, batch, k, n)
    old = want[c_off : c_off + batch * m * n].reshape(batch, m, n)
    new = alpha * prod + (beta * old if beta != 0 else 0)
    want[c_off : c_off + batch * m * n] = new.ravel()
    return got.astype(np.float64), want


def check(got, want, k, dtype):
    if dtype == "f16":
        np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2 * max(1.0, np.sqrt(k)))
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=3e-6 * max(k, 1))


SHAPES = [(1, 1, 1), (65, 33, 17), (130, 70, 129), (3, 130, 5), (64, 64, 64), (17, 1, 40)]


@pytest.mark.parametrize("m,n,k", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_general_shapes(gpu, m, n, k):
    for dtype in dtypes(gpu):
        check(*gemm(gpu, m, n, k, dtype=dtype), k, dtype)


def test_k_zero_scales_c(gpu):
    got, want = gemm(gpu, 5, 6, 0, alpha=2.0, beta=0.5)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("entry", ["matmul", "matmul_vec4"])
def test_batched(gpu, entry):
    for dtype in dtypes(gpu):
        # k, n multiples of 4 so both entries apply; m is not; > 1 tile in m and n.
        check(*gemm(gpu, 70, 132, 36, batch=3, entry=entry, dtype=dtype, seed=1), 36, dtype)


@pytest.mark.parametrize("a_trans,b_trans", [(True, False), (False, True), (True, True)])
def test_transposed_operands(gpu, a_trans, b_trans):
    for dtype in dtypes(gpu):
        got, want = gemm(
            gpu, 67, 70, 33, batch=2, dtype=dtype, a_trans=a_trans, b_trans=b_trans, seed=2
        )
        check(got, want, 33, dtype)
        # matmul_vec4 reads a transposed A along m and a transposed B along k.
        got, want = gemm(
            gpu,
            132,
            136,
            44,
            batch=2,
            entry="matmul_vec4",
            dtype=dtype,
            a_trans=a_trans,
            b_trans=b_trans,
            seed=2,
        )
        check(got, want, 44, dtype)


@pytest.mark.parametrize("entry", ["matmul", "matmul_vec4"])
def test_several_tiles(gpu, entry):
    # 2 x 3 tiles of 128 with ragged edges in m and n, K slices of 8 with a ragged last one.
    for dtype in dtypes(gpu):
        check(
            *gemm(gpu, 250, 260, 92, entry=entry, dtype=dtype, alpha=0.5, beta=2.0, seed=10),
            92,
            dtype,
        )
        check(
            *gemm(gpu, 250, 261, 93, entry="matmul", dtype=dtype, b_trans=True, seed=11), 93, dtype
        )


@pytest.mark.parametrize("entry", ["matmul", "matmul_vec4"])
def test_broadcast_batch(gpu, entry):
    for dtype in dtypes(gpu):
        check(
            *gemm(gpu, 33, 68, 20, batch=3, entry=entry, dtype=dtype, a_bcast=True, seed=3),
            20,
            dtype,
        )
        check(
            *gemm(gpu, 33, 68, 20, batch=3, entry=entry, dtype=dtype, b_bcast=True, seed=4),
            20,
            dtype,
        )


def test_offsets_general(gpu):
    for dtype in dtypes(gpu):
        got, want = gemm(
            gpu, 20, 30, 17, batch=2, dtype=dtype, a_off=3, b_off=5, c_off=7, b_trans=True, seed=5
        )
        check(got, want, 17, dtype)


def test_offsets_vec4(gpu):
    for dtype in dtypes(gpu):
        got, want = gemm(
            gpu,
            21,
            8,
            12,
            batch=2,
            entry="matmul_vec4",
            dtype=dtype,
            a_off=4,
            b_off=8,
            c_off=12,
            seed=6,
        )
        check(got, want, 12, dtype)


@pytest.mark.parametrize("entry", ["matmul", "matmul_vec4"])
def test_alpha_beta(gpu, entry):
    for dtype in dtypes(gpu):
        got, want = gemm(
            gpu, 66, 68, 24, batch=2, entry=entry, dtype=dtype, alpha=0.5, beta=-1.5, seed=7
        )
        check(got, want, 24, dtype)


@pytest.mark.parametrize("entry", ["matmul", "matmul_vec4"])
def test_beta_zero_ignores_nan_garbage(gpu, entry):
    for dtype in dtypes(gpu):
        got, want = gemm(
            gpu, 65, 72, 16, entry=entry, dtype=dtype, alpha=2.0, beta=0.0, c_fill=np.nan, seed=8
        )
        assert not np.isnan(got).any()
        check(got, want, 16, dtype)


def test_nonzero_beta_reads_c(gpu):
    # beta != 0 must combine with the old C (NaN there propagates).
    got, _ = gemm(gpu, 3, 4, 5, beta=1.0, c_fill=np.nan)
    assert np.isnan(got[: 3 * 4]).all()


def test_vec4_matches_general_on_large_k(gpu):
    # Several K slices with a ragged last one (k = 100 = 12 * 8 + 4).
    r1 = gemm(gpu, 100, 76, 100, entry="matmul", seed=9)
    r2 = gemm(gpu, 100, 76, 100, entry="matmul_vec4", seed=9)
    check(*r1, 100, "f32")
    check(*r2, 100, "f32")
