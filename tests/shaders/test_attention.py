"""shaders/attention.wgsl (fused attention) through wgpu-py against NumPy: the forward's
output and logsumexp, then the three backward passes, with a causal flag and an additive
mask broadcast over heads; offsets into the inputs."""

import numpy as np
import pytest

from .conftest import CODES

F = "attention.wgsl"
NP = {"f32": np.float32, "f16": np.float16}
TOL = {"f32": dict(rtol=1e-4, atol=1e-5), "f16": dict(rtol=2e-2, atol=2e-2)}


def dtypes(gpu):
    return ["f32"] + (["f16"] if gpu.has_f16 else [])


def reference(q, k, v, mask, causal, scale, g):
    s = q @ np.swapaxes(k, -1, -2) * scale + mask
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    lse = np.log(np.exp(s - s.max(-1, keepdims=True)).sum(-1)) + s.max(-1)
    p = np.exp(s - lse[..., None])
    o = p @ v
    dp = g @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (g * o).sum(-1, keepdims=True)) * scale
    return o, lse, ds @ k, np.swapaxes(ds, -1, -2) @ q, np.swapaxes(p, -1, -2) @ g


@pytest.mark.parametrize("causal", [False, True])
def test_attention_forward_and_backward(gpu, causal):
    rng = np.random.default_rng(0)
    n, heads, length, source, d, dv, off = 2, 2, 70, 9, 8, 5, 3
    q, k, v = (
        rng.uniform(-1, 1, (n, length if i == 0 else source, (d, d, dv)[i])) for i in range(3)
    )
    g = rng.uniform(-1, 1, (n, length, dv))
    mask = rng.uniform(-1, 1, (1, length, source))  # shared by the (flattened) problems
    scale = 0.4
    o_ref, lse_ref, dq_ref, dk_ref, dv_ref = reference(q, k, v, mask, causal, scale, g)
    flags = CODES["ATTN_MASK"] | (CODES["ATTN_CAUSAL"] if causal else 0)
    # n, heads, l, s, d, dv, bc, flags, scale, rp, thresh, seed0, seed1, mask strides (b, h,
    # l, s), offsets q, k, v, mask, g, o, lse
    words = [n, heads, length, source, d, dv, 4, flags, scale, 1.0, 0, 0, 0, 0, 0, source, 1]
    words += [off, off, off, off, off, 0, 0]
    groups = (n * -(-length // 64), 1, 1)
    for dt in dtypes(gpu):
        t = NP[dt]

        def padded(a):
            return np.concatenate([np.zeros(off), a.ravel()]).astype(t)

        ins = [padded(q), padded(k), padded(v), padded(mask), padded(g)]
        o = np.zeros(n * length * dv, t)
        lse = np.zeros(n * length, t)
        fwd = ins[:4] + [None, o, lse, None, None, None]
        out = gpu.run(F, "attention_forward", fwd, words, groups, dt)
        np.testing.assert_allclose(out[5].reshape(o_ref.shape), o_ref, **TOL[dt])
        np.testing.assert_allclose(out[6].reshape(lse_ref.shape), lse_ref, **TOL[dt])
        o_t, lse_t = out[5], out[6]
        dd = np.zeros(n * length, np.float32)
        bufs = [None] * 4 + [ins[4], o_t, None, dd, None, None]
        dot = gpu.run(F, "attention_backward_dot", bufs, words, (1, 1, 1), dt)
        np.testing.assert_allclose(dot[7], (g * o_ref).sum(-1).ravel(), **TOL[dt])
        dk, dvv = np.zeros(n * source * d, t), np.zeros(n * source * dv, t)
        kv_groups = (n * -(-source // 64), 1, 1)
        bufs = ins + [None, lse_t, dot[7], dk, dvv]
        kv = gpu.run(F, "attention_backward_kv", bufs, words, kv_groups, dt)
        np.testing.assert_allclose(kv[8].reshape(dk_ref.shape), dk_ref, **TOL[dt])
        np.testing.assert_allclose(kv[9].reshape(dv_ref.shape), dv_ref, **TOL[dt])
        dq = np.zeros(n * length * d, t)
        bufs = ins + [None, lse_t, dot[7], dq, None]
        res = gpu.run(F, "attention_backward_q", bufs, words, groups, dt)
        np.testing.assert_allclose(res[8].reshape(dq_ref.shape), dq_ref, **TOL[dt])
