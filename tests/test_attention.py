"""scaled_dot_product_attention against a NumPy reference: scale, causal masks
(top-left aligned, L < S and L > S), boolean masks (keep where True) and float
masks (added), broadcast masks, fully masked rows (zeros, as PyTorch), grouped
query attention, unbatched inputs, attention dropout; gradients against the
closed form; PyTorch cross-checks when installed; bad input."""

import math

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F
from conftest import assert_close, dac, dleaf, dnp, dt, tensor, to_np

# ------------------------------------------------------------------ devices
# Every test runs on the CPU and on the GPU (``device`` fixture). float64 is not on the GPU (by
# design): where a test uses float64 only as "a float", the GPU run uses float32 with the CPU's
# float32 tolerances.


def attention_ref(q, k, v, mask=None, is_causal=False, scale=None):
    """Output and attention weights; rows with every key masked get zero weights."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if is_causal:
        mask = np.tril(np.ones(s.shape[-2:], bool))
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    s = np.broadcast_to(s, np.broadcast_shapes(s.shape, np.shape(mask) if mask is not None else ()))
    m = s.max(-1, keepdims=True)
    dead = np.isneginf(m)
    e = np.exp(s - np.where(dead, 0, m))
    a = np.where(dead, 0.0, e / np.where(dead, 1, e.sum(-1, keepdims=True)))
    return a @ v, a


def attention_grad_ref(q, k, v, a, g, scale):
    """Gradients of sum(g * attention(q, k, v)) given the weights a."""
    ga = g @ np.swapaxes(v, -1, -2)
    ds = a * (ga - (ga * a).sum(-1, keepdims=True))
    return ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale, np.swapaxes(a, -1, -2) @ g


def _qkv(rng, b=(2, 3), length=4, source=5, e=6, ev=3, dtype="float64"):
    return (
        rng.uniform(-1, 1, b + (length, e)).astype(dtype),
        rng.uniform(-1, 1, b + (source, e)).astype(dtype),
        rng.uniform(-1, 1, b + (source, ev)).astype(dtype),
    )


def _masks(rng, length=4, source=5):
    keep = rng.random((length, source)) < 0.6
    keep[:, 0] = True
    dead = rng.random((2, 1, length, source)) < 0.5
    dead[0, 0, 1] = False  # one row with every key masked
    fdead = np.where(rng.random((length, source)) < 0.4, -np.inf, 0.0)
    fdead[2] = -np.inf
    return {
        "none": None,
        "bool_2d": keep,
        "bool_4d_dead_row": dead,
        "bool_key_padding": np.array([True, True, True, False, False])
        .reshape(1, 1, 1, source)
        .repeat(2, 0),
        "float_2d": rng.uniform(-1, 1, (length, source)),
        "float_4d": rng.uniform(-1, 1, (2, 1, length, source)),
        "float_dead_row": fdead,
    }


@pytest.mark.parametrize(
    "mask_kind",
    [
        "none",
        "bool_2d",
        "bool_4d_dead_row",
        "bool_key_padding",
        "float_2d",
        "float_4d",
        "float_dead_row",
    ],
)
def test_sdpa_values_and_gradients(mask_kind, device, rng):
    q, k, v = _qkv(rng)
    mask = _masks(rng)[mask_kind]
    out, a = attention_ref(q, k, v, mask)
    ql, kl, vl = dleaf(q, device), dleaf(k, device), dleaf(v, device)
    res = F.scaled_dot_product_attention(
        ql, kl, vl, None if mask is None else dt(mask, device=device)
    )
    dac(res, out, device=device)
    g = rng.uniform(-1, 1, out.shape)
    res.backward(dt(g, device=device))
    for got, exp in zip((ql, kl, vl), attention_grad_ref(q, k, v, a, g, 1 / math.sqrt(6))):
        dac(got.grad, exp, device=device)


def test_sdpa_fully_masked_rows_are_zero(device, rng):
    q, k, v = _qkv(rng)
    mask = np.ones((4, 5), bool)
    mask[1] = False
    out = to_np(
        F.scaled_dot_product_attention(
            dt(q, device=device),
            dt(k, device=device),
            dt(v, device=device),
            dt(mask, device=device),
        )
    )
    assert np.isfinite(out).all()
    np.testing.assert_array_equal(out[:, :, 1], 0.0)


@pytest.mark.parametrize("length,source", [(4, 4), (3, 5), (5, 3)])
def test_sdpa_causal(length, source, device, rng):
    q, k, v = _qkv(rng, length=length, source=source)
    ql, kl, vl = dleaf(q, device), dleaf(k, device), dleaf(v, device)
    res = F.scaled_dot_product_attention(ql, kl, vl, is_causal=True, scale=0.3)
    out, a = attention_ref(q, k, v, is_causal=True, scale=0.3)
    dac(res, out, device=device)
    g = rng.uniform(-1, 1, out.shape)
    res.backward(dt(g, device=device))
    for got, exp in zip((ql, kl, vl), attention_grad_ref(q, k, v, a, g, 0.3)):
        dac(got.grad, exp, device=device)


def test_sdpa_scale_unbatched_and_3d(device, rng):
    q, k, v = _qkv(rng, b=())
    dac(
        F.scaled_dot_product_attention(
            dt(q, device=device), dt(k, device=device), dt(v, device=device), scale=2.0
        ),
        attention_ref(q, k, v, scale=2.0)[0],
        device=device,
    )
    q, k, v = _qkv(rng, b=(3,))
    dac(
        F.scaled_dot_product_attention(
            dt(q, device=device), dt(k, device=device), dt(v, device=device)
        ),
        attention_ref(q, k, v)[0],
        device=device,
    )


def test_sdpa_float32(device, rng):
    q, k, v = _qkv(rng, dtype="float32")
    mask = _masks(rng)["bool_2d"]
    out = F.scaled_dot_product_attention(
        tensor(q, device=device),
        tensor(k, device=device),
        tensor(v, device=device),
        tensor(mask, device=device),
    )
    exp = attention_ref(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), mask)[0]
    assert_close(out, exp.astype(np.float32), rtol=1e-5, atol=1e-6)


def test_sdpa_noncontiguous(device, rng):
    q, k, v = _qkv(rng)
    # (B, H, L, E) views made by transposing (B, L, H, E) storage, as multi-head attention does
    qt = dt(np.ascontiguousarray(q.transpose(0, 2, 1, 3)), device=device).transpose(1, 2)
    kt = dt(np.ascontiguousarray(k.transpose(0, 2, 1, 3)), device=device).transpose(1, 2)
    assert not qt.is_contiguous()
    dac(
        F.scaled_dot_product_attention(qt, kt, dt(v, device=device), is_causal=True),
        attention_ref(q, k, v, is_causal=True)[0],
        device=device,
    )


def test_sdpa_grouped_query_attention(device, rng):
    q = rng.uniform(-1, 1, (2, 4, 3, 6))
    k, v = rng.uniform(-1, 1, (2, 2, 5, 6)), rng.uniform(-1, 1, (2, 2, 5, 3))
    out = F.scaled_dot_product_attention(
        dt(q, device=device), dt(k, device=device), dt(v, device=device), enable_gqa=True
    )
    # query heads 0, 1 read key/value head 0; heads 2, 3 read head 1
    dac(out, attention_ref(q, np.repeat(k, 2, 1), np.repeat(v, 2, 1))[0], device=device)


def test_sdpa_dropout_drops_and_rescales_weights(device, rng):
    # with value = identity the output rows are the (dropped, rescaled) attention weights
    q, k, _ = _qkv(rng, b=(2,), length=30, source=8)
    v = np.broadcast_to(np.eye(8), (2, 8, 8)).copy()
    _, a = attention_ref(q, k, v)
    rumus.manual_seed(0)
    out = to_np(
        F.scaled_dot_product_attention(
            dt(q, device=device), dt(k, device=device), dt(v, device=device), dropout_p=0.25
        )
    )
    kept = out != 0
    np.testing.assert_allclose(out[kept], a[kept] / 0.75, **dnp(device, 1e-12, 0))
    assert 0.6 < kept.mean() < 0.9
    rumus.manual_seed(0)
    again = to_np(
        F.scaled_dot_product_attention(
            dt(q, device=device), dt(k, device=device), dt(v, device=device), dropout_p=0.25
        )
    )
    np.testing.assert_array_equal(out, again)


@pytest.mark.parametrize(
    "call,match",
    [
        (
            lambda d: F.scaled_dot_product_attention(
                rumus.zeros(2, 3, 4, device=d),
                rumus.zeros(2, 5, 4, device=d),
                rumus.zeros(2, 5, 6, device=d),
                rumus.ones(3, 5, dtype=rumus.bool, device=d),
                is_causal=True,
            ),
            r"Explicit attn_mask should not be set when is_causal=True",
        ),
        (
            lambda d: F.scaled_dot_product_attention(
                rumus.zeros(2, 3, 4, device=d),
                rumus.zeros(2, 5, 4, device=d),
                rumus.zeros(2, 5, 6, device=d),
                rumus.ones(3, 5, dtype=rumus.int64, device=d),
            ),
            r"attn_mask dtype to be bool or float",
        ),
        (
            lambda d: F.scaled_dot_product_attention(
                rumus.zeros(2, 3, 4, device=d),
                rumus.zeros(2, 5, 3, device=d),
                rumus.zeros(2, 5, 6, device=d),
            ),
            r"\[2, 3, 4\].*\[2, 5, 3\]",
        ),
        (
            lambda d: F.scaled_dot_product_attention(
                rumus.zeros(2, 3, 4, device=d),
                rumus.zeros(2, 5, 4, device=d),
                rumus.zeros(2, 4, 6, device=d),
            ),
            r"\[2, 5, 4\].*\[2, 4, 6\]",
        ),
        (
            lambda d: F.scaled_dot_product_attention(
                rumus.zeros(2, 3, 4, device=d).double(),
                rumus.zeros(2, 5, 4, device=d),
                rumus.zeros(2, 5, 6, device=d),
            ),
            r"same dtype",
        ),
        (
            lambda d: F.scaled_dot_product_attention(
                rumus.zeros(4, device=d), rumus.zeros(5, 4, device=d), rumus.zeros(5, 6, device=d)
            ),
            r"at least 2 dimensional",
        ),
        (
            lambda d: F.scaled_dot_product_attention(
                rumus.zeros(2, 3, 3, 4, device=d),
                rumus.zeros(2, 2, 5, 4, device=d),
                rumus.zeros(2, 2, 5, 4, device=d),
                enable_gqa=True,
            ),
            r"multiple",
        ),
    ],
)
def test_sdpa_bad_input(call, match, device):
    if device != "cpu" and match == r"same dtype":
        pytest.skip("float64 is not supported on the GPU (by design)")
    with pytest.raises(RuntimeError, match=match):
        call(device)


def test_sdpa_vs_torch(device, rng):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    cases = (("float64", dict(rtol=1e-10, atol=1e-12)), ("float32", dict(rtol=1e-5, atol=1e-6)))
    for dtype, tol in (
        cases if device == "cpu" else cases[1:]
    ):  # float64 is not on the GPU (by design)
        for mask_kind, mask in _masks(rng).items():
            for causal, scale in ((False, None), (False, 0.5), (True, None)):
                if causal and mask is not None:
                    continue
                q, k, v = _qkv(rng, dtype=dtype)
                rq, rk, rv = (rumus.tensor(a).to(device).requires_grad_() for a in (q, k, v))
                tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
                m = None if mask is None else (mask if mask.dtype == bool else mask.astype(dtype))
                out = F.scaled_dot_product_attention(
                    rq,
                    rk,
                    rv,
                    None if m is None else tensor(m, device=device),
                    is_causal=causal,
                    scale=scale,
                )
                ref = tf.scaled_dot_product_attention(
                    tq,
                    tk,
                    tv,
                    None if m is None else torch.tensor(m),
                    is_causal=causal,
                    scale=scale,
                )
                np.testing.assert_allclose(
                    to_np(out), ref.detach().numpy(), err_msg=mask_kind, **tol
                )
                g = rng.uniform(-1, 1, tuple(ref.shape)).astype(dtype)
                out.backward(tensor(g, device=device))
                ref.backward(torch.tensor(g))
                for r, t in ((rq, tq), (rk, tk), (rv, tv)):
                    np.testing.assert_allclose(
                        to_np(r.grad), t.grad.numpy(), err_msg=mask_kind, **tol
                    )
    q, k, v = (
        rng.uniform(-1, 1, (2, 4, 3, 6)),
        rng.uniform(-1, 1, (2, 2, 5, 6)),
        rng.uniform(-1, 1, (2, 2, 5, 3)),
    )
    if device != "cpu":  # float32 on both sides
        q, k, v = (a.astype(np.float32) for a in (q, k, v))
    np.testing.assert_allclose(
        to_np(
            F.scaled_dot_product_attention(
                dt(q, device=device), dt(k, device=device), dt(v, device=device), enable_gqa=True
            )
        ),
        tf.scaled_dot_product_attention(
            torch.tensor(q), torch.tensor(k), torch.tensor(v), enable_gqa=True
        ).numpy(),
        **dnp(device, 1e-10, 1e-12),
    )
