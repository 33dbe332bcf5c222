"""shaders/attention.wgsl (fused attention, tiled: blocks of 64 rows, tiles of 32) through
wgpu-py against NumPy: the forward's output and logsumexp, then the three backward passes,
with a causal flag (L != S too), additive masks broadcast over batch, heads or rows, rows with
every key masked, dropout (the mask regenerated from the CPU kernel's hash), sizes straddling
the tile edges, head dims that are not multiples of 4 or 16 and up to 128 with dv != d,
offsets into the inputs, and rows `pitch` elements longer than their columns with the batch
and head strides swapped (the layout of head-split views of a packed projection)."""

import numpy as np
import pytest

from .conftest import CODES, groups_1d

F = "attention.wgsl"
NP = {"f32": np.float32, "f16": np.float16}
TOL = {"f32": dict(rtol=1e-4, atol=2e-5), "f16": dict(rtol=2e-2, atol=2e-2)}
M32 = 0xFFFFFFFF


def dtypes(gpu):
    return ["f32"] + (["f16"] if gpu.has_f16 else [])


def mix(x):
    """The kernels' 32-bit hash, on uint64 arrays holding u32 values."""
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & M32
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & M32
    return x ^ (x >> 16)


def keep_factors(n, length, source, thresh, seed, rp):
    """(n, L, S) dropout factors: 0 where mix(row hash + j) < thresh, else rp."""
    s0, s1 = np.uint64(seed[0]), np.uint64(seed[1])
    prob = np.arange(n, dtype=np.uint64)[:, None]
    row = mix(mix(s0 ^ mix(s1 ^ prob)) ^ np.arange(length, dtype=np.uint64)[None, :])
    h = mix((row[..., None] + np.arange(source, dtype=np.uint64)) & M32)
    return np.where(h >= thresh, rp, 0.0)


def reference(q, k, v, mask, causal, scale, g, fac):
    s = q @ np.swapaxes(k, -1, -2) * scale + mask
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    mx = s.max(-1, keepdims=True)
    dead = np.isinf(mx) & (mx < 0)
    mx = np.where(dead, 0.0, mx)
    tot = np.exp(s - mx).sum(-1, keepdims=True)
    lse = np.where(dead, -np.inf, np.log(np.where(dead, 1.0, tot)) + mx)[..., 0]
    p = np.where(dead, 0.0, np.exp(s - np.where(dead, 0.0, lse[..., None])))
    pf = p * fac
    o = pf @ v
    dp = g @ np.swapaxes(v, -1, -2) * fac
    ds = p * (dp - (g * o).sum(-1, keepdims=True)) * scale
    return o, lse, ds @ k, np.swapaxes(ds, -1, -2) @ q, np.swapaxes(pf, -1, -2) @ g


def run_case(
    gpu, dt, b, heads, length, source, d, dv, causal, mask_kind, drop, off=3, seed=0, pitch=0
):
    rng = np.random.default_rng(seed)
    n = b * heads
    q, k, v = (
        rng.uniform(-1, 1, (n, length if i == 0 else source, (d, d, dv)[i])) for i in range(3)
    )
    g = rng.uniform(-1, 1, (n, length, dv))
    # The mask's own array and its (batch, head, row, col) strides, 0 where broadcast.
    if mask_kind == "shared":
        m, strides = rng.uniform(-1, 1, (length, source)), [0, 0, source, 1]
    elif mask_kind == "heads":
        m, strides = rng.uniform(-2, 2, (heads, length, source)), [0, length * source, source, 1]
    elif mask_kind == "padding":  # per batch, keys only; batch 0 masks every key
        m = np.where(np.arange(source) < source - 2, 0.0, -np.inf)[None].repeat(b, 0)
        m[0] = -np.inf
        strides = [source, 0, 0, 1]
    elif mask_kind == "dead_rows":  # additive, shared; rows 1 and length-1 fully masked
        m = rng.uniform(-1, 1, (length, source))
        m[[1 % length, length - 1]] = -np.inf
        strides = [0, 0, source, 1]
    else:
        m, strides = np.zeros(1), [0, 0, 0, 0]
    idx = np.arange(n)
    full = np.stack(
        [
            m.ravel()[
                (idx[x] // heads) * strides[0]
                + (idx[x] % heads) * strides[1]
                + np.arange(length)[:, None] * strides[2]
                + np.arange(source)[None, :] * strides[3]
            ]
            for x in range(n)
        ]
    )
    scale = 0.4
    thresh, dseed, rp = 0, (0, 0), 1.0
    if drop:
        thresh, dseed, rp = int(drop * 2**32), (0x1234ABCD, 77), 1.0 / (1.0 - drop)
    fac = keep_factors(n, length, source, thresh, dseed, rp) if drop else np.ones(1)
    o_ref, lse_ref, dq_ref, dk_ref, dv_ref = reference(q, k, v, full, causal, scale, g, fac)
    flags = CODES["ATTN_CAUSAL"] if causal else 0
    flags |= CODES["ATTN_MASK"] if mask_kind else 0
    flags |= CODES["ATTN_DROPOUT"] if drop else 0
    t = NP[dt]
    tol = TOL[dt]

    def strided(a):
        """(n, rows, cols) as (heads, rows, b, cols + pitch) memory after `off` zeros, and its
        (offset, batch, head, row) strides."""
        rows, cols = a.shape[1:]
        mem = np.zeros((heads, rows, b, cols + pitch))
        mem[..., :cols] = a.reshape(b, heads, rows, cols).transpose(1, 2, 0, 3)
        st = [off, cols + pitch, rows * b * (cols + pitch), b * (cols + pitch)]
        return np.concatenate([np.zeros(off), mem.ravel()]).astype(t), st

    (qb, sq), (kb, sk), (vb, sv), (gb, sg) = (strided(x) for x in (q, k, v, g))
    # n, heads, l, s, d, dv, flags, scale, rp, thresh, seed0, seed1, mask strides (b, h, l, s),
    # mask and lse offsets, then (offset, batch, head, row strides) of q, k, v, g, o, ga, gb
    words = [n, heads, length, source, d, dv, flags, scale, rp, thresh, *dseed, *strides]
    words += [off, 0, *sq, *sk, *sv, *sg, 0, length * dv * heads, length * dv, dv]
    ga_words = {
        "dk": [0, source * d * heads, source * d, d],
        "dq": [0, length * d * heads, length * d, d],
    }
    groups = (n * -(-length // 64), 1, 1)

    ins = [qb, kb, vb, np.concatenate([np.zeros(off), m.ravel()]).astype(t), gb]
    o = np.zeros(n * length * dv, t)
    lse = np.zeros(n * length, t)
    fwd = ins + [o, lse, None, None, None]  # g is named (never read) by the forward
    out = gpu.run(F, "attention_forward", fwd, words + [0] * 8, groups, dt)
    np.testing.assert_allclose(out[5].reshape(o_ref.shape), o_ref, **tol)
    np.testing.assert_allclose(out[6].reshape(lse_ref.shape), lse_ref, **tol)
    o_t, lse_t = out[5], out[6]
    dd = np.zeros(n * length, np.float32)
    bufs = [None] * 4 + [ins[4], o_t, None, dd, None, None]
    dot = gpu.run(F, "attention_backward_dot", bufs, words + [0] * 8, groups_1d(n * length), dt)
    np.testing.assert_allclose(dot[7], (g * o_ref).sum(-1).ravel(), **tol)
    dk, dvv = np.zeros(n * source * d, t), np.zeros(n * source * dv, t)
    kv_groups = (n * -(-source // 64), 1, 1)
    bufs = ins + [None, lse_t, dot[7], dk, dvv]
    kv_words = words + ga_words["dk"] + [0, source * dv * heads, source * dv, dv]
    kv = gpu.run(F, "attention_backward_kv", bufs, kv_words, kv_groups, dt)
    np.testing.assert_allclose(kv[8].reshape(dk_ref.shape), dk_ref, **tol)
    np.testing.assert_allclose(kv[9].reshape(dv_ref.shape), dv_ref, **tol)
    dq = np.zeros(n * length * d, t)
    bufs = ins + [None, lse_t, dot[7], dq, None]
    res = gpu.run(F, "attention_backward_q", bufs, words + ga_words["dq"] + [0] * 4, groups, dt)
    np.testing.assert_allclose(res[8].reshape(dq_ref.shape), dq_ref, **tol)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_forward_and_backward(gpu, causal):
    for dt in dtypes(gpu):
        run_case(gpu, dt, 1, 2, 70, 9, 8, 5, causal, "shared", 0.0)


# (b, heads, L, S, d, dv, causal, mask, dropout): L and S on both sides of the 32 and 64
# tile edges, head dims 1, 3 (not a multiple of 4), 80 (not of 16), 128 (the largest).
CASES = [
    (1, 1, 1, 1, 1, 1, False, None, 0.0),
    (1, 1, 63, 65, 3, 80, True, None, 0.0),
    (1, 2, 65, 130, 80, 3, True, "heads", 0.0),
    (2, 1, 130, 63, 64, 64, False, "padding", 0.0),
    (1, 1, 33, 70, 128, 128, False, "dead_rows", 0.0),
    (1, 2, 97, 40, 16, 12, True, None, 0.3),
    (2, 1, 40, 97, 20, 24, False, "heads", 0.5),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_attention_tile_edges(gpu, case):
    run_case(gpu, "f32", *case, off=5, seed=1)


@pytest.mark.parametrize("case", CASES[1:4] + CASES[5:6], ids=lambda c: "-".join(map(str, c)))
def test_attention_strided_rows(gpu, case):
    run_case(gpu, "f32", *case, off=2, seed=2, pitch=3)
