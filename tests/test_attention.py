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
from conftest import ac, assert_close, leaf, tensor


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
    return (rng.uniform(-1, 1, b + (length, e)).astype(dtype), rng.uniform(-1, 1, b + (source, e)).astype(dtype),
            rng.uniform(-1, 1, b + (source, ev)).astype(dtype))


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
        "bool_key_padding": np.array([True, True, True, False, False]).reshape(1, 1, 1, source).repeat(2, 0),
        "float_2d": rng.uniform(-1, 1, (length, source)),
        "float_4d": rng.uniform(-1, 1, (2, 1, length, source)),
        "float_dead_row": fdead,
    }


@pytest.mark.parametrize("mask_kind", ["none", "bool_2d", "bool_4d_dead_row", "bool_key_padding", "float_2d",
                                       "float_4d", "float_dead_row"])
def test_sdpa_values_and_gradients(mask_kind, rng):
    q, k, v = _qkv(rng)
    mask = _masks(rng)[mask_kind]
    out, a = attention_ref(q, k, v, mask)
    ql, kl, vl = leaf(q), leaf(k), leaf(v)
    res = F.scaled_dot_product_attention(ql, kl, vl, None if mask is None else tensor(mask))
    ac(res, out)
    g = rng.uniform(-1, 1, out.shape)
    res.backward(tensor(g))
    for got, exp in zip((ql, kl, vl), attention_grad_ref(q, k, v, a, g, 1 / math.sqrt(6))):
        ac(got.grad, exp)


def test_sdpa_fully_masked_rows_are_zero(rng):
    q, k, v = _qkv(rng)
    mask = np.ones((4, 5), bool)
    mask[1] = False
    out = F.scaled_dot_product_attention(tensor(q), tensor(k), tensor(v), tensor(mask)).numpy()
    assert np.isfinite(out).all()
    np.testing.assert_array_equal(out[:, :, 1], 0.0)


@pytest.mark.parametrize("length,source", [(4, 4), (3, 5), (5, 3)])
def test_sdpa_causal(length, source, rng):
    q, k, v = _qkv(rng, length=length, source=source)
    ql, kl, vl = leaf(q), leaf(k), leaf(v)
    res = F.scaled_dot_product_attention(ql, kl, vl, is_causal=True, scale=0.3)
    out, a = attention_ref(q, k, v, is_causal=True, scale=0.3)
    ac(res, out)
    g = rng.uniform(-1, 1, out.shape)
    res.backward(tensor(g))
    for got, exp in zip((ql, kl, vl), attention_grad_ref(q, k, v, a, g, 0.3)):
        ac(got.grad, exp)


def test_sdpa_scale_unbatched_and_3d(rng):
    q, k, v = _qkv(rng, b=())
    assert_close(F.scaled_dot_product_attention(tensor(q), tensor(k), tensor(v), scale=2.0),
                 attention_ref(q, k, v, scale=2.0)[0])
    q, k, v = _qkv(rng, b=(3,))
    assert_close(F.scaled_dot_product_attention(tensor(q), tensor(k), tensor(v)), attention_ref(q, k, v)[0])


def test_sdpa_float32(rng):
    q, k, v = _qkv(rng, dtype="float32")
    mask = _masks(rng)["bool_2d"]
    out = F.scaled_dot_product_attention(tensor(q), tensor(k), tensor(v), tensor(mask))
    exp = attention_ref(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), mask)[0]
    assert_close(out, exp.astype(np.float32), rtol=1e-5, atol=1e-6)


def test_sdpa_noncontiguous(rng):
    q, k, v = _qkv(rng)
    # (B, H, L, E) views made by transposing (B, L, H, E) storage, as multi-head attention does
    qt = tensor(np.ascontiguousarray(q.transpose(0, 2, 1, 3))).transpose(1, 2)
    kt = tensor(np.ascontiguousarray(k.transpose(0, 2, 1, 3))).transpose(1, 2)
    assert not qt.is_contiguous()
    assert_close(F.scaled_dot_product_attention(qt, kt, tensor(v), is_causal=True),
                 attention_ref(q, k, v, is_causal=True)[0])


def test_sdpa_grouped_query_attention(rng):
    q = rng.uniform(-1, 1, (2, 4, 3, 6))
    k, v = rng.uniform(-1, 1, (2, 2, 5, 6)), rng.uniform(-1, 1, (2, 2, 5, 3))
    out = F.scaled_dot_product_attention(tensor(q), tensor(k), tensor(v), enable_gqa=True)
    # query heads 0, 1 read key/value head 0; heads 2, 3 read head 1
    assert_close(out, attention_ref(q, np.repeat(k, 2, 1), np.repeat(v, 2, 1))[0])


def test_sdpa_dropout_drops_and_rescales_weights(rng):
    # with value = identity the output rows are the (dropped, rescaled) attention weights
    q, k, _ = _qkv(rng, b=(2,), length=30, source=8)
    v = np.broadcast_to(np.eye(8), (2, 8, 8)).copy()
    _, a = attention_ref(q, k, v)
    rumus.manual_seed(0)
    out = F.scaled_dot_product_attention(tensor(q), tensor(k), tensor(v), dropout_p=0.25).numpy()
    kept = out != 0
    np.testing.assert_allclose(out[kept], a[kept] / 0.75, rtol=1e-12)
    assert 0.6 < kept.mean() < 0.9
    rumus.manual_seed(0)
    again = F.scaled_dot_product_attention(tensor(q), tensor(k), tensor(v), dropout_p=0.25).numpy()
    np.testing.assert_array_equal(out, again)


@pytest.mark.parametrize("call,match", [
    (lambda: F.scaled_dot_product_attention(rumus.zeros(2, 3, 4), rumus.zeros(2, 5, 4), rumus.zeros(2, 5, 6),
                                            rumus.ones(3, 5, dtype=rumus.bool), is_causal=True),
     r"Explicit attn_mask should not be set when is_causal=True"),
    (lambda: F.scaled_dot_product_attention(rumus.zeros(2, 3, 4), rumus.zeros(2, 5, 4), rumus.zeros(2, 5, 6),
                                            rumus.ones(3, 5, dtype=rumus.int64)),
     r"attn_mask dtype to be bool or float"),
    (lambda: F.scaled_dot_product_attention(rumus.zeros(2, 3, 4), rumus.zeros(2, 5, 3), rumus.zeros(2, 5, 6)),
     r"\[2, 3, 4\].*\[2, 5, 3\]"),
    (lambda: F.scaled_dot_product_attention(rumus.zeros(2, 3, 4), rumus.zeros(2, 5, 4), rumus.zeros(2, 4, 6)),
     r"\[2, 5, 4\].*\[2, 4, 6\]"),
    (lambda: F.scaled_dot_product_attention(rumus.zeros(2, 3, 4).double(), rumus.zeros(2, 5, 4), rumus.zeros(2, 5, 6)),
     r"same dtype"),
    (lambda: F.scaled_dot_product_attention(rumus.zeros(4), rumus.zeros(5, 4), rumus.zeros(5, 6)),
     r"at least 2 dimensional"),
    (lambda: F.scaled_dot_product_attention(rumus.zeros(2, 3, 3, 4), rumus.zeros(2, 2, 5, 4), rumus.zeros(2, 2, 5, 4),
                                            enable_gqa=True), r"multiple"),
])
def test_sdpa_bad_input(call, match):
    with pytest.raises(RuntimeError, match=match):
        call()


def test_sdpa_vs_torch(rng):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    for dtype, tol in (("float64", dict(rtol=1e-10, atol=1e-12)), ("float32", dict(rtol=1e-5, atol=1e-6))):
        for mask_kind, mask in _masks(rng).items():
            for causal, scale in ((False, None), (False, 0.5), (True, None)):
                if causal and mask is not None:
                    continue
                q, k, v = _qkv(rng, dtype=dtype)
                rq, rk, rv = (rumus.tensor(a, requires_grad=True) for a in (q, k, v))
                tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
                m = None if mask is None else (mask if mask.dtype == bool else mask.astype(dtype))
                out = F.scaled_dot_product_attention(rq, rk, rv, None if m is None else rumus.tensor(m),
                                                     is_causal=causal, scale=scale)
                ref = tf.scaled_dot_product_attention(tq, tk, tv, None if m is None else torch.tensor(m),
                                                      is_causal=causal, scale=scale)
                np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), err_msg=mask_kind, **tol)
                g = rng.uniform(-1, 1, tuple(ref.shape)).astype(dtype)
                out.backward(rumus.tensor(g))
                ref.backward(torch.tensor(g))
                for r, t in ((rq, tq), (rk, tk), (rv, tv)):
                    np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), err_msg=mask_kind, **tol)
    q, k, v = rng.uniform(-1, 1, (2, 4, 3, 6)), rng.uniform(-1, 1, (2, 2, 5, 6)), rng.uniform(-1, 1, (2, 2, 5, 3))
    np.testing.assert_allclose(
        F.scaled_dot_product_attention(rumus.tensor(q), rumus.tensor(k), rumus.tensor(v), enable_gqa=True).numpy(),
        tf.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v), enable_gqa=True).numpy(),
        rtol=1e-10, atol=1e-12)
