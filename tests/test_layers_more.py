"""Layers of issue 16: LPPool1d/2d/3d, LocalResponseNorm, ChannelShuffle, EmbeddingBag
(and their functional forms) against NumPy references, on every device; PixelUnshuffle;
and the masks of TransformerDecoderLayer / TransformerDecoder / Transformer (tgt_mask,
memory_mask, key padding masks, is_causal, norm_first). Gradients: the registry rows in
tests/op_db_nn_more.py."""

import itertools

import numpy as np
import pytest
import rumus
import rumus.nn as nn
import rumus.nn.functional as F
from conftest import dt, to_np

RNG = np.random.default_rng(0)


def tol(device):
    return dict(rtol=1e-10, atol=1e-12) if device == "cpu" else dict(rtol=2e-5, atol=1e-5)


# ------------------------------------------------------------ LPPool


def _n_out(length, k, s, ceil):
    if not ceil:
        return (length - k) // s + 1
    n = -(-(length - k) // s) + 1
    return n - 1 if (n - 1) * s >= length else n


def lp_pool_ref(x, p, k, s, ceil=False):
    """(window mean of x^p, over the part of the window inside the input, times the full
    window size)^(1/p): PyTorch's definition (the plain p-norm for full windows)."""
    nd = len(k)
    sp = x.shape[-nd:]
    outs = [_n_out(sp[i], k[i], s[i], ceil) for i in range(nd)]
    out = np.zeros(x.shape[:-nd] + tuple(outs))
    for idx in itertools.product(*map(range, outs)):
        sl = tuple(slice(i * s[d], min(i * s[d] + k[d], sp[d])) for d, i in enumerate(idx))
        win = x[(...,) + sl] ** p
        out[(...,) + idx] = win.mean(tuple(range(-nd, 0))) * np.prod(k)
    return out ** (1 / p)


@pytest.mark.parametrize(
    "nd, shape, p, k, s, ceil",
    [
        (1, (2, 3, 9), 2, (3,), (2,), False),
        (1, (3, 8), 3, (2,), (2,), True),
        (2, (2, 2, 6, 7), 2, (2, 3), (2, 2), False),
        (2, (1, 2, 5, 5), 1.5, (2, 2), (2, 2), True),
        (3, (1, 2, 4, 5, 6), 2, (2, 2, 3), (2, 1, 3), False),
        (3, (2, 3, 5, 4, 5), 2, (2, 3, 2), (2, 2, 2), True),
        (3, (2, 4, 4, 4), 1, (2, 2, 2), (2, 2, 2), False),
    ],
)
def test_lp_pool(nd, shape, p, k, s, ceil, device):
    x = RNG.uniform(0.1, 2.0, shape)
    want = lp_pool_ref(x, p, k, s, ceil)
    fn = getattr(F, f"lp_pool{nd}d")
    kk = k[0] if nd == 1 else k
    got = fn(dt(x, device=device), p, kk, s, ceil)
    np.testing.assert_allclose(to_np(got), want, **tol(device))
    m = getattr(nn, f"LPPool{nd}d")(p, kk, s, ceil)
    np.testing.assert_allclose(to_np(m(dt(x, device=device))), want, **tol(device))


def test_lp_pool_defaults_and_repr():
    x = RNG.uniform(0.1, 2.0, (1, 2, 6, 6))
    got = nn.LPPool2d(2, 3)(rumus.tensor(x))  # stride defaults to the kernel size
    np.testing.assert_allclose(to_np(got), lp_pool_ref(x, 2, (3, 3), (3, 3)), rtol=1e-12)
    assert (
        repr(nn.LPPool1d(2, 3))
        == "LPPool1d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)"
    )
    with pytest.raises(RuntimeError, match=r"expected 2D or 3D input.*\[4\]"):
        F.lp_pool1d(rumus.ones(4), 2, 2)
    with pytest.raises(RuntimeError, match="not implemented for"):
        F.lp_pool2d(rumus.ones(1, 2, 4, 4, dtype=rumus.int64), 2, 2)


# ------------------------------------------------------------ LocalResponseNorm


def lrn_ref(x, size, alpha=1e-4, beta=0.75, k=1.0):
    c = x.shape[1]
    sq = x * x
    div = np.zeros_like(x)
    for i in range(c):
        lo, hi = max(0, i - size // 2), min(c, i + (size - 1) // 2 + 1)
        div[:, i] = sq[:, lo:hi].sum(1)
    return x / (k + alpha / size * div) ** beta


@pytest.mark.parametrize(
    "shape, size, kw",
    [
        ((2, 5, 4), 3, {}),
        ((2, 6, 3, 4), 2, {"alpha": 0.5, "beta": 0.6, "k": 2.0}),
        ((1, 4, 2, 3, 2), 5, {"alpha": 1.0}),
        ((2, 3, 0), 3, {}),
    ],
)
def test_local_response_norm(shape, size, kw, device):
    x = RNG.normal(size=shape)
    got = F.local_response_norm(dt(x, device=device), size, **kw)
    np.testing.assert_allclose(to_np(got), lrn_ref(x, size, **kw), **tol(device))
    m = nn.LocalResponseNorm(size, **kw)
    np.testing.assert_allclose(
        to_np(m(dt(x, device=device))), lrn_ref(x, size, **kw), **tol(device)
    )


def test_local_response_norm_repr_and_errors():
    assert repr(nn.LocalResponseNorm(2)) == "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)"
    with pytest.raises(ValueError, match=r"Expected 3D or higher dimensionality input \(got 2"):
        F.local_response_norm(rumus.ones(2, 3), 2)


# ------------------------------------------------------------ ChannelShuffle


@pytest.mark.parametrize("shape, g", [((2, 6, 3), 2), ((1, 6, 2, 2), 3), ((2, 4, 1, 2, 2), 4)])
def test_channel_shuffle(shape, g, device):
    x = RNG.normal(size=shape)
    n, c = shape[:2]
    want = x.reshape(n, g, c // g, *shape[2:]).swapaxes(1, 2).reshape(shape)
    for fn in (F.channel_shuffle, F.native_channel_shuffle, lambda t, g: nn.ChannelShuffle(g)(t)):
        np.testing.assert_array_equal(
            to_np(fn(dt(x, device=device), g)), want.astype(to_np(dt(x, device=device)).dtype)
        )
    ints = np.arange(np.prod(shape)).reshape(shape)
    got = F.channel_shuffle(rumus.tensor(ints), g)
    np.testing.assert_array_equal(
        to_np(got), ints.reshape(n, g, c // g, *shape[2:]).swapaxes(1, 2).reshape(shape)
    )


def test_channel_shuffle_errors_and_repr():
    assert repr(nn.ChannelShuffle(3)) == "ChannelShuffle(groups=3)"
    x = rumus.ones(2, 6, 3)
    with pytest.raises(RuntimeError, match="must be positive"):
        F.channel_shuffle(x, 0)
    with pytest.raises(RuntimeError, match="Got 6 channels and 4 groups"):
        F.channel_shuffle(x, 4)
    with pytest.raises(RuntimeError, match="at least 3 dimensions"):
        F.channel_shuffle(rumus.ones(2, 6), 2)


def test_pixel_unshuffle_inverts_pixel_shuffle():
    x = rumus.tensor(RNG.normal(size=(2, 3, 4, 6)))
    m = nn.PixelUnshuffle(2)
    y = m(x)
    assert y.shape == (2, 12, 2, 3)
    np.testing.assert_array_equal(to_np(nn.PixelShuffle(2)(y)), to_np(x))
    assert repr(m) == "PixelUnshuffle(downscale_factor=2)"


# ------------------------------------------------------------ EmbeddingBag


def bag_ref(idx, w, offsets, mode, psw=None, include_last=False, padding_idx=None):
    ends = list(offsets[1:]) + ([] if include_last else [len(idx)])
    starts = list(offsets[: len(ends)])
    out = np.zeros((len(starts), w.shape[1]))
    for b, (s, e) in enumerate(zip(starts, ends)):
        sel = [i for i in range(s, e) if idx[i] != padding_idx]
        if not sel:
            continue
        rows = w[idx[sel]]
        if psw is not None:
            rows = rows * psw[sel][:, None]
        out[b] = {"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0)}[mode]
    return out


IDX = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 0])
OFF = np.array([0, 3, 3, 7])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_1d(mode, device):
    w = RNG.normal(size=(10, 3))
    rw = dt(w, device=device)
    idx, off = dt(IDX, device=device), dt(OFF, device=device)
    got = F.embedding_bag(idx, rw, off, mode=mode)
    np.testing.assert_allclose(to_np(got), bag_ref(IDX, w, OFF, mode), **tol(device))
    # include_last_offset: the last offset closes the last bag
    off2 = np.array([0, 3, 3, 7, 9])
    got = F.embedding_bag(idx, rw, dt(off2, device=device), mode=mode, include_last_offset=True)
    np.testing.assert_allclose(
        to_np(got), bag_ref(IDX, w, off2, mode, include_last=True), **tol(device)
    )
    # padding_idx entries are skipped (bag 3 holds 9, 0, 0: only 9 counts)
    got = F.embedding_bag(idx, rw, off, mode=mode, padding_idx=0)
    np.testing.assert_allclose(to_np(got), bag_ref(IDX, w, OFF, mode, padding_idx=0), **tol(device))
    got = F.embedding_bag(
        dt(IDX[8:], device=device), rw, dt(np.array([0]), device=device), mode=mode, padding_idx=0
    )
    np.testing.assert_allclose(to_np(got), np.zeros((1, 3)), **tol(device))


def test_embedding_bag_2d_and_per_sample_weights(device):
    w = RNG.normal(size=(10, 3))
    idx2 = IDX.reshape(2, 5)
    for mode in ("sum", "mean", "max"):
        got = F.embedding_bag(dt(idx2, device=device), dt(w, device=device), mode=mode)
        want = bag_ref(IDX, w, np.array([0, 5]), mode)
        np.testing.assert_allclose(to_np(got), want, **tol(device))
    psw = RNG.uniform(size=IDX.shape)
    got = F.embedding_bag(
        dt(IDX, device=device),
        dt(w, device=device),
        dt(OFF, device=device),
        mode="sum",
        per_sample_weights=dt(psw, device=device),
    )
    np.testing.assert_allclose(to_np(got), bag_ref(IDX, w, OFF, "sum", psw), **tol(device))


def test_embedding_bag_gradients():
    w = rumus.tensor(RNG.normal(size=(10, 3)), requires_grad=True)
    psw = rumus.tensor(RNG.uniform(size=IDX.shape), requires_grad=True)
    idx, off = rumus.tensor(IDX), rumus.tensor(OFF)
    g = RNG.normal(size=(4, 3))
    for mode in ("sum", "mean"):
        w.grad = None
        (F.embedding_bag(idx, w, off, mode=mode, padding_idx=0) * rumus.tensor(g)).sum().backward()
        want = np.zeros((10, 3))
        for b, (s, e) in enumerate(zip(OFF, list(OFF[1:]) + [len(IDX)])):
            sel = [i for i in range(s, e) if IDX[i] != 0]
            for i in sel:
                want[IDX[i]] += g[b] / (len(sel) if mode == "mean" else 1)
        np.testing.assert_allclose(to_np(w.grad), want, rtol=1e-12)
    assert rumus.autograd.gradcheck(
        lambda w, p: F.embedding_bag(idx, w, off, mode="sum", per_sample_weights=p), (w, psw)
    )
    assert rumus.autograd.gradcheck(lambda w: F.embedding_bag(idx, w, off, mode="max"), (w,))


def test_embedding_bag_module():
    m = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2)
    assert repr(m) == "EmbeddingBag(10, 3, mode=sum, padding_idx=2)"
    assert (to_np(m.weight)[2] == 0).all()
    w = to_np(m.weight)
    got = m(rumus.tensor(IDX), rumus.tensor(OFF))
    np.testing.assert_allclose(to_np(got), bag_ref(IDX, w, OFF, "sum", padding_idx=2), rtol=1e-6)
    pre = rumus.tensor(RNG.normal(size=(10, 3)))
    m = nn.EmbeddingBag.from_pretrained(pre, mode="max")
    assert not m.weight.requires_grad and m.mode == "max"
    assert nn.EmbeddingBag.from_pretrained(pre, freeze=False).weight.requires_grad
    got = m(rumus.tensor(IDX.reshape(2, 5)))
    np.testing.assert_allclose(to_np(got), bag_ref(IDX, to_np(pre), np.array([0, 5]), "max"))
    assert isinstance(m, nn.modules.sparse.EmbeddingBag)


def test_embedding_bag_errors():
    w = rumus.ones(10, 3)
    idx, off = rumus.tensor(IDX), rumus.tensor(OFF)
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(idx, w)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(idx.reshape(2, 5), w, off)
    with pytest.raises(ValueError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(idx, w, rumus.tensor([1, 3]))
    with pytest.raises(ValueError, match=r"offsets must lie in \[0, 10\]"):
        F.embedding_bag(idx, w, rumus.tensor([0, 11]))
    with pytest.raises(ValueError, match="non-decreasing"):
        F.embedding_bag(idx, w, rumus.tensor([0, 5, 3]))
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        F.embedding_bag(idx, w, off, mode="mean", per_sample_weights=rumus.ones(10))
    with pytest.raises(ValueError, match=r"per_sample_weights \(\[3\]\)"):
        F.embedding_bag(idx, w, off, mode="sum", per_sample_weights=rumus.ones(3))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(idx, w, off, mode="min")
    with pytest.raises(ValueError, match="input has to be 1D or 2D"):
        F.embedding_bag(idx.reshape(1, 2, 5), w)
    with pytest.raises(RuntimeError, match="Long, Int"):
        F.embedding_bag(idx.float(), w, off)
    with pytest.raises(IndexError):
        F.embedding_bag(rumus.tensor([1, 12]), w, rumus.tensor([0]))
    with pytest.raises(NotImplementedError, match="sparse"):
        nn.EmbeddingBag(4, 2, sparse=True)


def test_embedding_bag_parity_with_torch():
    torch = pytest.importorskip("torch")
    w = RNG.normal(size=(10, 3))
    for mode, kw in itertools.product(("sum", "mean", "max"), ({}, {"padding_idx": 4})):
        rw, tw = rumus.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
        ro = F.embedding_bag(rumus.tensor(IDX), rw, rumus.tensor(OFF), mode=mode, **kw)
        to = torch.nn.functional.embedding_bag(
            torch.tensor(IDX), tw, torch.tensor(OFF), mode=mode, **kw
        )
        np.testing.assert_allclose(to_np(ro), to.detach().numpy(), rtol=1e-12)
        ro.sum().backward()
        to.sum().backward()
        np.testing.assert_allclose(to_np(rw.grad), tw.grad.numpy(), rtol=1e-12)


# ------------------------------------------------------------ Transformer decoder masks

D, H, T, S, N = 8, 2, 4, 5, 2


def _decoder_layer(norm_first):
    rumus.manual_seed(0)
    return nn.TransformerDecoderLayer(
        D, H, dim_feedforward=16, dropout=0.0, norm_first=norm_first, dtype=rumus.float64
    ).eval()


def _inputs():
    return rumus.tensor(RNG.normal(size=(T, N, D))), rumus.tensor(RNG.normal(size=(S, N, D)))


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_is_its_sublayers_composed(norm_first):
    layer = _decoder_layer(norm_first)
    tgt, mem = _inputs()
    mask = nn.Transformer.generate_square_subsequent_mask(T, dtype=rumus.float64)

    def sa(x):
        return layer.self_attn(x, x, x, attn_mask=mask, need_weights=False)[0]

    def ca(x):
        return layer.multihead_attn(x, mem, mem, need_weights=False)[0]

    def ff(x):
        return layer.linear2(layer.activation(layer.linear1(x)))

    x = tgt
    if norm_first:
        x = x + sa(layer.norm1(x))
        x = x + ca(layer.norm2(x))
        x = x + ff(layer.norm3(x))
    else:
        x = layer.norm1(x + sa(x))
        x = layer.norm2(x + ca(x))
        x = layer.norm3(x + ff(x))
    got = layer(tgt, mem, tgt_mask=mask)
    np.testing.assert_allclose(to_np(got), to_np(x), rtol=1e-12, atol=1e-12)
    got = layer(tgt, mem, tgt_mask=mask, tgt_is_causal=True)
    np.testing.assert_allclose(to_np(got), to_np(x), rtol=1e-12, atol=1e-12)


def _changed(a, b):
    return np.abs(to_np(a) - to_np(b)).max(-1) > 1e-9  # per (position, batch)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_masks_hide_what_they_mask(norm_first):
    layer = _decoder_layer(norm_first)
    dec = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(D, dtype=rumus.float64)).eval()
    tgt, mem = _inputs()
    tn, mn = to_np(tgt).copy(), to_np(mem).copy()
    tn2 = tn.copy()
    # (random perturbations: a constant shift would vanish in the layer norms)
    tn2[-1] += RNG.normal(size=(N, D))  # perturb the last target position
    mn2 = mn.copy()
    mn2[-2:, 1] += RNG.normal(size=(2, D))  # perturb the last two memory positions of batch 1
    causal = nn.Transformer.generate_square_subsequent_mask(T, dtype=rumus.float64)
    bool_causal = rumus.tensor(np.triu(np.ones((T, T), bool), 1))
    for mask, kw in ((causal, {}), (bool_causal, {}), (causal, {"tgt_is_causal": True})):
        a = dec(tgt, mem, tgt_mask=mask, **kw)
        b = dec(rumus.tensor(tn2), mem, tgt_mask=mask, **kw)
        ch = _changed(a, b)
        assert not ch[:-1].any() and ch[-1].all()  # only the last position sees the change
    # without a mask every position sees it
    assert _changed(dec(tgt, mem), dec(rumus.tensor(tn2), mem)).all()
    # memory_key_padding_mask: padded memory positions are invisible
    kpm = rumus.tensor(np.array([[False] * S, [False] * (S - 2) + [True] * 2]))
    a = dec(tgt, mem, memory_key_padding_mask=kpm)
    b = dec(tgt, rumus.tensor(mn2), memory_key_padding_mask=kpm)
    np.testing.assert_allclose(to_np(a), to_np(b), rtol=1e-12, atol=1e-12)
    assert _changed(dec(tgt, mem), dec(tgt, rumus.tensor(mn2)))[:, 1].all()
    # a memory_mask blocking those columns for every query acts the same for batch 1
    mm = rumus.tensor(np.array([[False] * (S - 2) + [True] * 2] * T))
    a = dec(tgt, mem, memory_mask=mm)
    b = dec(tgt, rumus.tensor(mn2), memory_mask=mm)
    np.testing.assert_allclose(to_np(a), to_np(b), rtol=1e-12, atol=1e-12)
    # tgt_key_padding_mask: a padded target position does not reach the others
    tkpm = rumus.tensor(np.array([[False] * T, [False] * (T - 1) + [True]]))
    a = dec(tgt, mem, tgt_key_padding_mask=tkpm)
    b = dec(rumus.tensor(tn2), mem, tgt_key_padding_mask=tkpm)
    ch = _changed(a, b)
    assert not ch[:-1, 1].any() and ch[:-1, 0].all()


def test_transformer_with_all_masks():
    rumus.manual_seed(1)
    model = nn.Transformer(
        D, H, 1, 2, 16, dropout=0.0, batch_first=True, norm_first=True, dtype=rumus.float64
    ).eval()
    src = rumus.tensor(RNG.normal(size=(N, S, D)))
    tgt = rumus.tensor(RNG.normal(size=(N, T, D)))
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(T, dtype=rumus.float64)
    skpm = rumus.tensor(np.array([[False] * S, [False] * (S - 1) + [True]]))
    out = model(
        src,
        tgt,
        tgt_mask=tgt_mask,
        src_key_padding_mask=skpm,
        memory_key_padding_mask=skpm,
        tgt_is_causal=True,
    )
    assert out.shape == (N, T, D)
    src2 = to_np(src).copy()
    src2[1, -1] += RNG.normal(size=D)  # a padded source position changes nothing
    out2 = model(
        rumus.tensor(src2),
        tgt,
        tgt_mask=tgt_mask,
        src_key_padding_mask=skpm,
        memory_key_padding_mask=skpm,
    )
    np.testing.assert_allclose(to_np(out), to_np(out2), rtol=1e-12, atol=1e-12)
    m = nn.Transformer.generate_square_subsequent_mask(3)
    np.testing.assert_array_equal(to_np(m), np.triu(np.full((3, 3), -np.inf), 1))
    with pytest.raises(RuntimeError, match="batch number of src and tgt must be equal"):
        model(src, tgt[:1])
    with pytest.raises(RuntimeError, match="d_model"):
        model(src[..., :4], tgt)
