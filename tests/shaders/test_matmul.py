"""shaders/matmul.wgsl through wgpu-py against NumPy (float64 references)."""

import math

import numpy as np
import pytest

F = "matmul.wgsl"
# Every entry point: matmul[_<tm>x<tn>][_vec4] (the unsuffixed tile is 128 x 128).
TILES = ["", "_128x64", "_64x128", "_64x64"]
ENTRIES = [f"matmul{t}{v}" for t in TILES for v in ("", "_vec4")]
ACTS = {"none": 0, "relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4}


def tile(entry):
    """The (rows, columns) output tile of an entry point."""
    dims = [p for p in entry.split("_") if "x" in p]
    return tuple(map(int, dims[0].split("x"))) if dims else (128, 128)


def activation(x, name):
    if name == "relu":
        return np.maximum(x, 0)
    if name == "gelu":
        return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    if name == "gelu_tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    if name == "silu":
        return x / (1 + np.exp(-x))
    return x


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
    bias=False,
    act="none",
    residual=False,
):
    """Runs one dispatch; returns (C as computed, C expected) over the whole C buffer.
    bias: add a bias (one per column, at offset 2); act: the activation; residual:
    add a residual laid out like C (at offset 3) last."""
    rng = np.random.default_rng(seed)
    t = NP[dtype]
    a, (ao, abs_, ars, acs) = layout(rng, m, k, batch, a_trans, a_bcast, a_off, t)
    b, (bo, bbs, brs, bcs) = layout(rng, k, n, batch, b_trans, b_bcast, b_off, t)
    c = rng.standard_normal(c_off + batch * m * n + 5).astype(t)
    if c_fill is not None:
        c[c_off : c_off + batch * m * n] = c_fill
    bias_buf = rng.standard_normal(n + 2).astype(t)
    res_buf = rng.standard_normal(batch * m * n + 3).astype(t)
    epi = int(bias) | int(residual) << 1 | ACTS[act] << 2
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
        2,
        3,
        m * n,
        epi,
    ]
    tm, tn = tile(entry)
    groups = (-(-n // tn), -(-m // tm), batch)
    got = gpu.run(F, entry, [a, b, c, bias_buf, res_buf], p, groups, dtype=dtype)[2]
    want = c.astype(np.float64)
    prod = gather(a, ao, abs_, ars, acs, batch, m, k) @ gather(b, bo, bbs, brs, bcs, batch, k, n)
    old = want[c_off : c_off + batch * m * n].reshape(batch, m, n)
    new = alpha * prod + (beta * old if beta != 0 else 0)
    if bias:
        new = new + bias_buf[2:].astype(np.float64)
    new = activation(new, act)
    if residual:
        new = new + res_buf[3:].astype(np.float64).reshape(batch, m, n)
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


@pytest.mark.parametrize("entry", ENTRIES[2:])
def test_smaller_tiles(gpu, entry):
    # Ragged edges over several tiles, a ragged last K slice, transposed and
    # broadcast operands, offsets, a batch (one pipeline per entry: lavapipe is slow).
    v4 = entry.endswith("_vec4")
    for dtype in dtypes(gpu):
        check(*gemm(gpu, 130, 136, 44, batch=2, entry=entry, dtype=dtype, seed=14), 44, dtype)
        for a_trans, b_trans in [(True, False), (False, True)]:
            got, want = gemm(
                gpu,
                68,
                72,
                36,
                batch=2,
                entry=entry,
                dtype=dtype,
                a_trans=a_trans,
                b_trans=b_trans,
                a_bcast=b_trans,
                a_off=4 if v4 else 3,
                c_off=8 if v4 else 5,
                seed=15,
            )
            check(got, want, 36, dtype)
        if not v4:
            check(
                *gemm(gpu, 65, 67, 17, entry=entry, dtype=dtype, b_trans=True, seed=16), 17, dtype
            )


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


@pytest.mark.parametrize("entry", ["matmul_vec4", "matmul_64x64"])
@pytest.mark.parametrize("act", list(ACTS))
def test_epilogue(gpu, entry, act):
    # bias, activation and residual after alpha / beta, on ragged tiles.
    for dtype in dtypes(gpu)[:1] if act != "gelu" else dtypes(gpu):
        got, want = gemm(
            gpu,
            70,
            68,
            20,
            batch=2,
            entry=entry,
            dtype=dtype,
            alpha=0.5,
            beta=1.5,
            bias=True,
            act=act,
            residual=True,
            seed=12,
        )
        check(got, want, 20, dtype)


def test_epilogue_parts_alone(gpu):
    for kw in ({"bias": True}, {"residual": True}, {"act": "gelu"}):
        check(*gemm(gpu, 9, 12, 7, entry="matmul_64x64", seed=13, **kw), 7, "f32")
