"""The fused (flash) path of scaled_dot_product_attention against the composite path (the
scores materialized): values and gradients with no mask, causal, additive, boolean and
key-padding masks, odd and unequal lengths, head dims 8 and 64; float64 gradcheck of the CPU
kernel and gradgradcheck of its create_graph backward; dropout statistics and the dropout mask
shared by forward, backward and double backward (gradients against finite differences with one
seed); MultiheadAttention and TransformerEncoderLayer going through the kernel; GPU against CPU
(the dropout hash is the same on both), also at sizes and head dims straddling the GPU kernels'
tiles; the GPU peak memory growing linearly with the sequence length."""

import numpy as np
import pytest
import rumus
import rumus.nn as nn
import rumus.nn.functional as F
from conftest import need_gpu

FUSED = "ScaledDotProductFlashAttentionBackward0"


def uses_fused(out):
    """Whether the fused kernel's backward is in out's graph."""
    stack = [out.grad_fn]
    for _ in range(10_000):  # a walk of a small DAG, without dedup (node wrappers are fresh)
        if not stack:
            return False
        fn = stack.pop()
        if fn is not None:
            if fn.name() == FUSED:
                return True
            stack.extend(f for f, _ in fn.next_functions)
    return False


def composite(monkeypatch, *args, **kw):
    """The composite path's result, the fused routing switched off."""
    with monkeypatch.context() as m:
        m.setattr(F, "_fused_sdpa", lambda *a: None)
        return F.scaled_dot_product_attention(*args, **kw)


def _inputs(rng, b, h, length, source, e, ev, dtype="float64", device="cpu"):
    def t(*shape):
        x = rumus.tensor(rng.uniform(-1, 1, shape).astype(dtype), device=device)
        return x.requires_grad_()

    return t(b, h, length, e), t(b, h, source, e), t(b, h, source, ev)


def _mask(rng, kind, b, h, length, source, dtype="float64", device="cpu"):
    if kind in ("none", "causal"):
        return None
    if kind == "additive":
        m = rng.uniform(-2, 2, (1, h, length, source))
    elif kind == "bool":
        m = rng.random((b, 1, length, source)) < 0.7
        m[0, 0, 0] = False  # a row with every key masked: zero output
    else:  # additive key padding, broadcast over heads and rows
        m = np.where(np.arange(source) < max(1, source - 3), 0.0, -np.inf)
        m = np.broadcast_to(m, (b, 1, 1, source)).copy()
    return rumus.tensor(m if m.dtype == bool else m.astype(dtype), device=device)


def _both(monkeypatch, q, k, v, **kw):
    """Fused and composite outputs and gradients (q, k, v) for one output gradient."""
    res = []
    for fused in (True, False):
        for t in (q, k, v):
            t.grad = None
        if fused:
            out = F.scaled_dot_product_attention(q, k, v, **kw)
            assert out.grad_fn.name() == FUSED
        else:
            out = composite(monkeypatch, q, k, v, **kw)
        g = (
            rumus.ones(out.shape, dtype=out.dtype, device=out.device)
            * rumus.arange(out.size(-1), dtype=out.dtype, device=out.device).sin()
        )
        out.backward(g)
        res.append([out.detach().cpu().numpy()] + [t.grad.cpu().numpy() for t in (q, k, v)])
    return res


MASKS = ["none", "causal", "additive", "bool", "padding"]


@pytest.mark.parametrize("kind", MASKS)
@pytest.mark.parametrize("length,source", [(1, 1), (7, 7), (129, 129), (7, 129), (129, 7)])
def test_fused_matches_composite_cpu(kind, length, source, rng, monkeypatch):
    q, k, v = _inputs(rng, 2, 3, length, source, 8, 5)
    mask = _mask(rng, kind, 2, 3, length, source)
    fused, ref = _both(monkeypatch, q, k, v, attn_mask=mask, is_causal=kind == "causal")
    for a, b in zip(fused, ref):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["none", "causal", "bool"])
def test_fused_head_dim_64_float32(kind, rng, monkeypatch):
    q, k, v = _inputs(rng, 1, 2, 300, 260, 64, 64, dtype="float32")
    mask = _mask(rng, kind, 1, 2, 300, 260, dtype="float32")
    fused, ref = _both(monkeypatch, q, k, v, attn_mask=mask, is_causal=kind == "causal", scale=0.2)
    for a, b in zip(fused, ref):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("kind", MASKS)
def test_fused_gradcheck(kind, rng):
    q, k, v = _inputs(rng, 1, 2, 7, 5, 3, 4)
    mask = _mask(rng, kind, 1, 2, 7, 5)

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, mask, is_causal=kind == "causal")

    assert f(q, k, v).grad_fn.name() == FUSED
    assert rumus.autograd.gradcheck(f, (q, k, v))
    assert rumus.autograd.gradgradcheck(f, (q, k, v))


def test_fused_unbatched_and_3d_inputs(rng, monkeypatch):
    for shape in [(6,), (2, 6)]:
        q = rumus.tensor(rng.uniform(-1, 1, shape[:-1] + (5, 4)), requires_grad=True)
        k = rumus.tensor(rng.uniform(-1, 1, shape[:-1] + (6, 4)), requires_grad=True)
        v = rumus.tensor(rng.uniform(-1, 1, shape[:-1] + (6, 3)), requires_grad=True)
        m = rumus.tensor(rng.random((5, 6)) < 0.5)
        out = F.scaled_dot_product_attention(q, k, v, m)
        assert uses_fused(out)
        ref = composite(monkeypatch, q, k, v, m)
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10)


def test_fused_dropout_mean_and_seed(rng):
    # With value = ones every output element is the sum of the row's kept weights / (1 - p):
    # 1 on average, and the same seed drops the same weights.
    q, k, _ = _inputs(rng, 2, 4, 64, 96, 8, 8)
    v = rumus.ones(2, 4, 96, 16, dtype=rumus.float64)
    rumus.manual_seed(5)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
    assert out.grad_fn.name() == FUSED
    o = out.detach().numpy()
    assert abs(o.mean() - 1.0) < 0.02
    assert o.std() > 0.05  # something was dropped
    rumus.manual_seed(5)
    again = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3).detach().numpy()
    np.testing.assert_array_equal(o, again)
    other = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3).detach().numpy()
    assert not np.array_equal(o, other)


@pytest.mark.parametrize("causal", [False, True])
def test_fused_dropout_backward_uses_the_forward_mask(causal, rng):
    # gradcheck compares the analytic gradient (mask regenerated in backward) with finite
    # differences of forwards under the same seed: they agree only if both masks are equal.
    q, k, v = _inputs(rng, 1, 2, 6, 7, 3, 4)

    def f(q, k, v):
        rumus.manual_seed(11)
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.4, is_causal=causal)

    assert rumus.autograd.gradcheck(f, (q, k, v))
    # create_graph regenerates the same factors as a tensor
    assert rumus.autograd.gradgradcheck(f, (q, k, v))


def test_multihead_attention_key_padding_uses_fused(rng, monkeypatch):
    mha = nn.MultiheadAttention(16, 4, batch_first=True).double()
    x = rumus.tensor(rng.uniform(-1, 1, (3, 9, 16)), requires_grad=True)
    pad = rumus.tensor(np.arange(9)[None, :] >= np.array([[9], [5], [1]]))
    out, _ = mha(x, x, x, key_padding_mask=pad, need_weights=False)
    out.sum().backward()
    got, gx = out.detach().numpy(), x.grad.numpy()
    x.grad = None
    with monkeypatch.context() as m:
        m.setattr(F, "_fused_sdpa", lambda *a: None)
        ref, _ = mha(x, x, x, key_padding_mask=pad, need_weights=False)
    ref.sum().backward()
    np.testing.assert_allclose(got, ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gx, x.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_transformer_layer_uses_fused(rng):
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=True)
    x = rumus.tensor(rng.uniform(-1, 1, (2, 5, 16)).astype("float32"))
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    assert uses_fused(layer(x, src_mask=mask, is_causal=True))


def _strided_heads(layout, x, h, e):
    """q, k, v (B, H, rows, E) as views of the leaf x, laid out as `layout` says."""
    if layout == "batch_first":  # x (B, L, 3·H·E): MultiheadAttention's packed projection
        return x.unflatten(-1, (3, h, e)).permute(2, 0, 3, 1, 4).unbind(0)
    if layout == "seq_first":  # x (L, B, 3·H·E)
        return x.unflatten(-1, (3, h, e)).permute(2, 1, 3, 0, 4).unbind(0)
    if layout == "split":  # x (B, L, 3·H·E) split into three (B, L, H·E), as nanoGPT does
        return [t.unflatten(-1, (h, e)).transpose(1, 2) for t in x.split(h * e, dim=2)]
    if layout == "columns_strided":  # x (3, B, H, E, L): columns not contiguous (copied)
        return [t.transpose(-2, -1) for t in x.unbind(0)]
    # "broadcast": x (3, 1, H, L, E), the batch dim expanded (stride 0)
    return [t.expand(2, h, t.size(2), e) for t in x.unbind(0)]


def _leaf_shape(layout, b, h, n, e):
    return {
        "batch_first": (b, n, 3 * h * e),
        "seq_first": (n, b, 3 * h * e),
        "split": (b, n, 3 * h * e),
        "columns_strided": (3, b, h, e, n),
        "broadcast": (3, 1, h, n, e),
    }[layout]


@pytest.mark.parametrize("device", ["cpu", "gpu"])
@pytest.mark.parametrize(
    "layout", ["batch_first", "seq_first", "split", "columns_strided", "broadcast"]
)
@pytest.mark.parametrize("kind", ["none", "causal", "bool"])
def test_fused_strided_heads(device, layout, kind, rng, monkeypatch):
    """Head-split views go into the kernels as they are (no transposing copies); the output
    and the gradients match the composite path on contiguous copies."""
    if device == "gpu":
        need_gpu()
    b, h, n, e = 2, 3, 37, 8
    dtype = "float64" if device == "cpu" else "float32"
    data = rng.uniform(-1, 1, _leaf_shape(layout, b, h, n, e)).astype(dtype)
    mask = _mask(rng, kind, b, h, n, n, dtype=dtype, device=device)
    g = rng.uniform(-1, 1, (b, h, n, e)).astype(dtype)
    res = []
    for fused in (True, False):
        x = rumus.tensor(data, device=device if fused else "cpu", requires_grad=True)
        q, k, v = _strided_heads(layout, x, h, e)
        kw = dict(attn_mask=None if mask is None else mask.to(x.device))
        kw["is_causal"] = kind == "causal"
        if fused:
            out = F.scaled_dot_product_attention(q, k, v, **kw)
            assert out.grad_fn.name() == FUSED
            if layout == "batch_first":
                # (B, L, H, E) in memory, as its input: merging the heads back is a view.
                assert out.transpose(1, 2).is_contiguous()
        else:
            out = composite(monkeypatch, q.contiguous(), k.contiguous(), v.contiguous(), **kw)
        out.backward(rumus.tensor(g, device=x.device))
        res.append([out.detach().cpu().numpy(), x.grad.cpu().numpy()])
    tol = dict(rtol=1e-10, atol=1e-12) if device == "cpu" else dict(rtol=1e-4, atol=3e-5)
    for a, b_ in zip(*res):
        np.testing.assert_allclose(a, b_, **tol)


def test_unbind_gradient_keeps_the_packed_layout(rng):
    """MultiheadAttention's q, k, v are unbound from a permuted projection: the gradient of the
    permuted view is one tensor in the projection's memory order (so permuting it back is a
    view, not a copy), a missing piece's part is zero."""
    x = rumus.tensor(rng.uniform(-1, 1, (2, 5, 3, 4, 6)), requires_grad=True)
    p = x.permute(2, 0, 3, 1, 4)
    seen = []
    p.register_hook(lambda g: seen.append(g))
    q, k, v = p.unbind(0)
    assert q.grad_fn.name() == "UnbindBackward0"
    ((q * 1.0).sum() + (v * 3.0).sum()).backward()
    assert seen[0].permute(1, 3, 0, 2, 4).is_contiguous()
    want = np.zeros((2, 5, 3, 4, 6))
    want[:, :, 0], want[:, :, 2] = 1.0, 3.0
    np.testing.assert_array_equal(x.grad.numpy(), want)


# ---------------------------------------------------------------------------- GPU


@pytest.mark.parametrize("kind", MASKS)
@pytest.mark.parametrize("length,source,e", [(7, 7, 8), (129, 7, 8), (7, 129, 64), (70, 70, 64)])
def test_fused_gpu_matches_cpu(kind, length, source, e, rng):
    need_gpu()
    args = _inputs(rng, 2, 2, length, source, e, e, dtype="float32")
    mask = _mask(rng, kind, 2, 2, length, source, dtype="float32")
    res = []
    for dev in ("cpu", "gpu"):
        q, k, v = (t.detach().to(dev).requires_grad_() for t in args)
        m = None if mask is None else mask.to(dev)
        out = F.scaled_dot_product_attention(q, k, v, m, is_causal=kind == "causal")
        assert out.grad_fn.name() == FUSED
        out.backward(rumus.ones(out.shape, device=dev) * 0.5)
        res.append([out.detach().cpu().numpy()] + [t.grad.cpu().numpy() for t in (q, k, v)])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_fused_gpu_dropout_matches_cpu(rng):
    need_gpu()
    args = _inputs(rng, 1, 2, 33, 40, 8, 8, dtype="float32")
    res = []
    for dev in ("cpu", "gpu"):
        q, k, v = (t.detach().to(dev).requires_grad_() for t in args)
        rumus.manual_seed(3)
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=True)
        out.backward(rumus.ones(out.shape, device=dev))
        res.append([out.detach().cpu().numpy()] + [t.grad.cpu().numpy() for t in (q, k, v)])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


# Sizes straddling the GPU kernels' tiles (blocks of 64 rows, tiles of 32), head dims that are
# not multiples of 4 or 16 and up to 128, dv != d, causal with L != S, every mask kind.
GPU_EDGES = [
    (1, 2, 1, 65, 3, 80, "none"),
    (1, 1, 63, 130, 80, 3, "causal"),
    (1, 1, 130, 63, 20, 12, "causal"),
    (2, 1, 65, 63, 128, 128, "additive"),
    (2, 2, 33, 65, 64, 32, "bool"),
    (2, 1, 130, 33, 16, 64, "padding"),
]


@pytest.mark.parametrize("b,h,length,source,e,ev,kind", GPU_EDGES)
@pytest.mark.parametrize("dropout", [0.0, 0.25])
def test_fused_gpu_tile_edges_match_cpu(b, h, length, source, e, ev, kind, dropout, rng):
    need_gpu()
    args = _inputs(rng, b, h, length, source, e, ev, dtype="float32")
    mask = _mask(rng, kind, b, h, length, source, dtype="float32")
    g = rng.uniform(-1, 1, (b, h, length, ev)).astype("float32")
    res = []
    for dev in ("cpu", "gpu"):
        q, k, v = (t.detach().to(dev).requires_grad_() for t in args)
        m = None if mask is None else mask.to(dev)
        rumus.manual_seed(5)
        out = F.scaled_dot_product_attention(
            q, k, v, m, dropout_p=dropout, is_causal=kind == "causal"
        )
        assert out.grad_fn.name() == FUSED
        out.backward(rumus.tensor(g, device=dev))
        res.append([out.detach().cpu().numpy()] + [t.grad.cpu().numpy() for t in (q, k, v)])
    for a, b_ in zip(*res):
        np.testing.assert_allclose(a, b_, rtol=1e-4, atol=3e-5)


def _peak(length):
    """Extra GPU bytes at the peak of one sdpa forward + backward at this sequence length."""
    rng = np.random.default_rng(0)
    q, k, v = (
        rumus.tensor(
            rng.uniform(-1, 1, (1, 2, length, 16)).astype("float32"), device="gpu"
        ).requires_grad_()
        for _ in range(3)
    )
    rumus.gpu.synchronize()
    base = rumus.gpu.memory_allocated()
    rumus.gpu.reset_peak_memory_stats()
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    out.sum().backward()
    rumus.gpu.synchronize()
    return rumus.gpu.max_memory_allocated() - base


def test_fused_gpu_peak_memory_grows_linearly():
    need_gpu()
    peaks = [_peak(n) for n in (256, 512, 1024)]
    for a, b in zip(peaks, peaks[1:]):
        assert b <= 2.3 * a, peaks
