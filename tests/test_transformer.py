"""MultiheadAttention and the Transformer layers: NumPy closed forms, masks, gradients,
PyTorch parity (same weights -> same outputs and gradients), init, state_dict keys and errors."""

import copy
import math
import pickle

import numpy as np
import pytest
import rumus
import rumus.nn as nn
from conftest import dac, dleaf, dt, fd, skip_f64_on_gpu, to_np, val
from rumus.autograd import gradcheck

# ------------------------------------------------------------------ devices
# Every test runs on the CPU and on the GPU (``device`` fixture). float64 is not on the GPU (by
# design): where a test uses float64 only as "a float", the GPU run uses float32 with the CPU's
# float32 tolerances.


f64 = rumus.float64


def rand(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).uniform(-1.5, 1.5, shape).astype(dtype)


def np_softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_mha(q, k, v, m, mask=None):
    """Batch-first (N, L, E) multi-head attention with module m's weights; mask additive,
    broadcastable to (N, H, L, S). Returns (output, per-head weights)."""
    E, H = m.embed_dim, m.num_heads
    hd = E // H
    if m._qkv_same_embed_dim:
        W = val(m.in_proj_weight)
        wq, wk, wv = W[:E], W[E : 2 * E], W[2 * E :]
    else:
        wq, wk, wv = val(m.q_proj_weight), val(m.k_proj_weight), val(m.v_proj_weight)
    b = val(m.in_proj_bias) if m.in_proj_bias is not None else np.zeros(3 * E)

    def heads(x, w, bb):
        y = x @ w.T + bb
        return y.reshape(y.shape[0], y.shape[1], H, hd).transpose(0, 2, 1, 3)

    Q, K, V = heads(q, wq, b[:E]), heads(k, wk, b[E : 2 * E]), heads(v, wv, b[2 * E :])
    s = Q @ K.transpose(0, 1, 3, 2) / math.sqrt(hd)
    if mask is not None:
        s = s + mask
    a = np_softmax(s)
    o = (a @ V).transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[1], E)
    bo = val(m.out_proj.bias) if m.out_proj.bias is not None else 0
    return o @ val(m.out_proj.weight).T + bo, a


def additive(bool_mask):
    return np.where(bool_mask, -np.inf, 0.0)


# ------------------------------------------------------------------ MultiheadAttention vs NumPy


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_self_attention_numpy(need_weights, device):
    m = nn.MultiheadAttention(8, 2, dtype=fd(device)).to(device)
    with rumus.no_grad():  # non-zero biases so that they are tested too
        m.in_proj_bias.copy_(dt(rand(24, seed=5), device=device))
        m.out_proj.bias.copy_(dt(rand(8, seed=6), device=device))
    x = rand(5, 3, 8)  # (L, N, E)
    t = dt(x, device=device)
    out, w = m(t, t, t, need_weights=need_weights)
    ref, a = np_mha(x.transpose(1, 0, 2), x.transpose(1, 0, 2), x.transpose(1, 0, 2), m)
    dac(out, ref.transpose(1, 0, 2), device=device)
    if need_weights:
        dac(w, a.mean(1), device=device)
    else:
        assert w is None


def test_mha_cross_attention_masks_numpy(device):
    m = nn.MultiheadAttention(6, 3, batch_first=True, dtype=fd(device)).to(device)
    q, kv = rand(2, 4, 6), rand(2, 5, 6, seed=1)
    causal = np.triu(np.ones((4, 5), bool), 1)
    kpm = np.array([[False] * 5, [False, False, False, True, True]])
    out, w = m(
        dt(q, device=device),
        dt(kv, device=device),
        dt(kv, device=device),
        key_padding_mask=dt(kpm, device=device),
        attn_mask=dt(causal, device=device),
        average_attn_weights=False,
    )
    mask = additive(causal)[None, None] + additive(kpm)[:, None, None, :]
    ref, a = np_mha(q, kv, kv, m, mask)
    dac(out, ref, device=device)
    dac(w, a, device=device)
    assert tuple(w.shape) == (2, 3, 4, 5)
    # Float masks are added; need_weights=False goes through scaled_dot_product_attention.
    fmask = rand(4, 5, seed=3)
    out2, none = m(
        dt(q, device=device),
        dt(kv, device=device),
        dt(kv, device=device),
        attn_mask=dt(fmask, device=device),
        need_weights=False,
    )
    assert none is None
    dac(out2, np_mha(q, kv, kv, m, fmask)[0], device=device)


def test_mha_3d_mask_and_distinct_kv_numpy(device):
    m = nn.MultiheadAttention(4, 2, dtype=fd(device)).to(device)
    q, k, v = rand(3, 2, 4), rand(5, 2, 4, seed=1), rand(5, 2, 4, seed=2)
    mask3 = rand(2 * 2, 3, 5, seed=4)  # (N * H, L, S), batch-major
    for need in (True, False):
        out, _ = m(
            dt(q, device=device),
            dt(k, device=device),
            dt(v, device=device),
            attn_mask=dt(mask3, device=device),
            need_weights=need,
        )
        ref, _ = np_mha(*(a.transpose(1, 0, 2) for a in (q, k, v)), m, mask3.reshape(2, 2, 3, 5))
        dac(out, ref.transpose(1, 0, 2), device=device)


def test_mha_kdim_vdim_numpy(device):
    m = nn.MultiheadAttention(4, 2, kdim=3, vdim=5, batch_first=True, dtype=fd(device)).to(device)
    assert m.in_proj_weight is None and tuple(m.k_proj_weight.shape) == (4, 3)
    assert list(m.state_dict()) == [
        "q_proj_weight",
        "k_proj_weight",
        "v_proj_weight",
        "in_proj_bias",
        "out_proj.weight",
        "out_proj.bias",
    ]
    q, k, v = rand(2, 3, 4), rand(2, 6, 3, seed=1), rand(2, 6, 5, seed=2)
    out, w = m(dt(q, device=device), dt(k, device=device), dt(v, device=device))
    ref, a = np_mha(q, k, v, m)
    dac(out, ref, device=device)
    dac(w, a.mean(1), device=device)


def test_mha_unbatched(device):
    m = nn.MultiheadAttention(4, 2, dtype=fd(device)).to(device)
    x, y = rand(3, 4), rand(5, 4, seed=1)
    for need in (True, False):
        out, w = m(
            dt(x, device=device),
            dt(y, device=device),
            dt(y, device=device),
            need_weights=need,
            key_padding_mask=dt(np.array([False, True, False, False, False]), device=device),
        )
        ref, a = np_mha(
            x[None], y[None], y[None], m, additive(np.array([False, True, False, False, False]))
        )
        dac(out, ref[0], device=device)
        if need:
            dac(w, a.mean(1)[0], device=device)
    t = dt(x, device=device)
    _, w = m(t, t, t, average_attn_weights=False, attn_mask=dt(np.zeros((2, 3, 3)), device=device))
    assert tuple(w.shape) == (2, 3, 3)


def test_mha_is_causal_uses_the_causal_mask(device):
    m = nn.MultiheadAttention(4, 2, batch_first=True, dtype=fd(device)).to(device)
    x = dt(rand(2, 5, 4), device=device)
    causal = nn.Transformer.generate_square_subsequent_mask(5, dtype=fd(device)).to(device)
    ref = np_mha(val(x), val(x), val(x), m, val(causal))[0]
    for need in (True, False):
        out, _ = m(x, x, x, attn_mask=causal, is_causal=True, need_weights=need)
        dac(out, ref, device=device)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)


def test_mha_bias_kv_and_zero_attn_numpy(device):
    m = nn.MultiheadAttention(
        4, 2, add_bias_kv=True, add_zero_attn=True, batch_first=True, dtype=fd(device)
    ).to(device)
    assert list(m.state_dict()) == [
        "in_proj_weight",
        "in_proj_bias",
        "bias_k",
        "bias_v",
        "out_proj.weight",
        "out_proj.bias",
    ]
    q = rand(2, 3, 4)
    kpm = np.array([[False, False, True], [False, False, False]])
    out, w = m(
        dt(q, device=device),
        dt(q, device=device),
        dt(q, device=device),
        key_padding_mask=dt(kpm, device=device),
        average_attn_weights=False,
    )
    # Reference: bias_k / bias_v appended as one more (projected) key/value, then a zero key/value.
    E, H, hd = 4, 2, 2
    W, b = val(m.in_proj_weight), val(m.in_proj_bias)
    proj = lambda x, i: x @ W[i * E : (i + 1) * E].T + b[i * E : (i + 1) * E]  # noqa: E731
    Q, K, V = proj(q, 0), proj(q, 1), proj(q, 2)
    K = np.concatenate(
        [K, np.broadcast_to(val(m.bias_k).reshape(1, 1, E), (2, 1, E)), np.zeros((2, 1, E))], 1
    )
    V = np.concatenate(
        [V, np.broadcast_to(val(m.bias_v).reshape(1, 1, E), (2, 1, E)), np.zeros((2, 1, E))], 1
    )
    sp = lambda x: x.reshape(2, -1, H, hd).transpose(0, 2, 1, 3)  # noqa: E731
    s = sp(Q) @ sp(K).transpose(0, 1, 3, 2) / math.sqrt(hd)
    s = s + additive(np.concatenate([kpm, np.zeros((2, 2), bool)], 1))[:, None, None, :]
    a = np_softmax(s)
    o = (a @ sp(V)).transpose(0, 2, 1, 3).reshape(2, 3, E) @ val(m.out_proj.weight).T + val(
        m.out_proj.bias
    )
    dac(out, o, device=device)
    dac(w, a, device=device)
    out2, _ = m(
        dt(q, device=device),
        dt(q, device=device),
        dt(q, device=device),
        key_padding_mask=dt(kpm, device=device),
        need_weights=False,
    )
    dac(out2, o, device=device)


def test_mha_gradcheck(device):
    skip_f64_on_gpu(device, "float64 (which gradcheck needs)")
    m = nn.MultiheadAttention(4, 2, dtype=fd(device)).to(device)
    q, k, v = (
        dleaf(rand(3, 2, 4), device=device),
        dleaf(rand(4, 2, 4, seed=1), device=device),
        dleaf(rand(4, 2, 4, seed=2), device=device),
    )
    mask = dt(rand(3, 4, seed=3), device=device)
    assert gradcheck(lambda q, k, v: m(q, k, v, attn_mask=mask)[0], (q, k, v))
    assert gradcheck(lambda q, k, v: m(q, k, v, need_weights=False)[0], (q, k, v))
    assert gradcheck(lambda x: m(x, x, x, need_weights=False)[0], (q,))


def test_mha_dropout_train_vs_eval(device):
    rumus.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True).to(device)
    x = dt(rand(2, 6, 8, dtype=np.float32), device=device)
    a, wa = m(x, x, x)
    b, _ = m(x, x, x)
    assert not np.allclose(val(a), val(b))
    # Dropped weights are zero and the kept ones are scaled by 2: a row averaged over heads sums to
    # 1 on average.
    m.eval()
    c, wc = m(x, x, x)
    d, _ = m(x, x, x)
    dac(c, val(d), device=device)
    dac(wc.sum(-1), np.ones((2, 6), np.float32), rtol=1e-5, device=device)
    ref = nn.MultiheadAttention(8, 2, batch_first=True).to(device)
    ref.load_state_dict(m.state_dict())
    dac(c, val(ref(x, x, x)[0]), device=device)


# ------------------------------------------------------------------ init, keys, repr, errors


def test_mha_default_init(device):
    rumus.manual_seed(0)
    E = 64
    m = nn.MultiheadAttention(E, 4, add_bias_kv=True).to(device)
    w = val(m.in_proj_weight)
    bound = math.sqrt(6 / (E + 3 * E))  # xavier_uniform_ on (3E, E)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound
    dac(m.in_proj_bias, np.zeros(3 * E, np.float32), device=device)
    dac(m.out_proj.bias, np.zeros(E, np.float32), device=device)
    ow = val(m.out_proj.weight)  # Linear's default: U(-1/sqrt(E), 1/sqrt(E))
    assert np.abs(ow).max() <= 1 / 8 and np.abs(ow).max() > 0.95 / 8
    bk = np.concatenate(
        [val(m.bias_k).ravel(), val(m.bias_v).ravel()]
    )  # xavier_normal_ on (1, 1, E)
    assert abs(bk.std() - math.sqrt(1 / E)) < 0.3 * math.sqrt(1 / E)


def test_mha_state_dict_and_repr(device):
    m = nn.MultiheadAttention(8, 2).to(device)
    assert [(k, tuple(v.shape)) for k, v in m.state_dict().items()] == [
        ("in_proj_weight", (24, 8)),
        ("in_proj_bias", (24,)),
        ("out_proj.weight", (8, 8)),
        ("out_proj.bias", (8,)),
    ]
    assert list(nn.MultiheadAttention(8, 2, bias=False).state_dict()) == [
        "in_proj_weight",
        "out_proj.weight",
    ]
    assert repr(m) == (
        "MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, "
        "out_features=8, bias=True)\n)"
    )
    assert m.head_dim == 4 and m.batch_first is False and m._qkv_same_embed_dim


def test_mha_errors(device):
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 2)
    m = nn.MultiheadAttention(4, 2).to(device)
    x = rumus.randn(3, 2, 4, device=device)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 4, but got 5"):
        m(rumus.randn(3, 2, 5, device=device), x, x)
    with pytest.raises(
        AssertionError, match="expected `key` and `value` to be 3-D but found 2-D and 3-D"
    ):
        m(x, rumus.randn(3, 4, device=device), x)
    with pytest.raises(AssertionError, match="query should be unbatched 2D or batched 3D tensor"):
        m(rumus.randn(1, 3, 2, 4, device=device), x, x)
    with pytest.raises(
        RuntimeError, match=r"The shape of the 2D attn_mask is .*\[3, 4\].*but should be \(3, 3\)"
    ):
        m(x, x, x, attn_mask=rumus.zeros(3, 4, device=device))
    with pytest.raises(
        RuntimeError, match=r"The shape of the 3D attn_mask is .*but should be \(4, 3, 3\)"
    ):
        m(x, x, x, attn_mask=rumus.zeros(2, 3, 3, device=device))
    with pytest.raises(AssertionError, match=r"expecting key_padding_mask shape of \(2, 3\)"):
        m(x, x, x, key_padding_mask=rumus.zeros(2, 4, device=device).bool())
    with pytest.raises(
        AssertionError, match="only bool and floating types of attn_mask are supported"
    ):
        m(x, x, x, attn_mask=rumus.zeros(3, 3, dtype=rumus.int64, device=device))
    with pytest.raises(RuntimeError, match="key batch size 3 does not match query batch size 2"):
        m(x, rumus.randn(3, 3, 4, device=device), rumus.randn(3, 3, 4, device=device))


# ------------------------------------------------------------------ Transformer layers


def np_layer_norm(x, w, b, eps=1e-5):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * w + b


def test_encoder_layer_numpy_post_and_pre_norm(device):
    for norm_first in (False, True):
        layer = nn.TransformerEncoderLayer(
            8,
            2,
            dim_feedforward=16,
            dropout=0.0,
            batch_first=True,
            norm_first=norm_first,
            dtype=fd(device),
        ).to(device)
        x = rand(2, 5, 8)
        mask = additive(np.triu(np.ones((5, 5), bool), 1))
        out = layer(dt(x, device=device), src_mask=dt(mask, device=device))

        def sa(h):
            return np_mha(h, h, h, layer.self_attn, mask)[0]

        def ff(h):
            h = np.maximum(h @ val(layer.linear1.weight).T + val(layer.linear1.bias), 0)
            return h @ val(layer.linear2.weight).T + val(layer.linear2.bias)

        def n1(h):
            return np_layer_norm(h, val(layer.norm1.weight), val(layer.norm1.bias))

        def n2(h):
            return np_layer_norm(h, val(layer.norm2.weight), val(layer.norm2.bias))

        if norm_first:
            h = x + sa(n1(x))
            ref = h + ff(n2(h))
        else:
            h = n1(x + sa(x))
            ref = n2(h + ff(h))
        dac(out, ref, device=device)


def test_encoder_layer_state_dict_keys_and_activation(device):
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16).to(device)
    assert [(k, tuple(v.shape)) for k, v in layer.state_dict().items()] == [
        ("self_attn.in_proj_weight", (24, 8)),
        ("self_attn.in_proj_bias", (24,)),
        ("self_attn.out_proj.weight", (8, 8)),
        ("self_attn.out_proj.bias", (8,)),
        ("linear1.weight", (16, 8)),
        ("linear1.bias", (16,)),
        ("linear2.weight", (8, 16)),
        ("linear2.bias", (8,)),
        ("norm1.weight", (8,)),
        ("norm1.bias", (8,)),
        ("norm2.weight", (8,)),
        ("norm2.bias", (8,)),
    ]
    nobias = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, bias=False).to(device)
    assert list(nobias.state_dict()) == [
        "self_attn.in_proj_weight",
        "self_attn.out_proj.weight",
        "linear1.weight",
        "linear2.weight",
        "norm1.weight",
        "norm2.weight",
    ]
    assert layer.activation is nn.functional.relu
    assert nn.TransformerEncoderLayer(8, 2, activation="gelu").activation is nn.functional.gelu
    mod = nn.TransformerEncoderLayer(8, 2, activation=nn.GELU()).to(device)
    assert "activation.weight" not in mod.state_dict() and isinstance(mod.activation, nn.GELU)
    assert dict(mod.named_children())["activation"] is mod.activation
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    assert layer.dropout.p == 0.1 and layer.norm1.eps == 1e-5 and not layer.norm_first


def test_encoder_copies_layers_and_detects_causal_masks(device):
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0).to(device)
    enc = nn.TransformerEncoder(layer, 3, norm=nn.LayerNorm(8)).to(device)
    assert (
        len(enc.layers) == 3 and enc.layers[0] is not layer and enc.layers[0] is not enc.layers[1]
    )
    w0, w1 = enc.layers[0].linear1.weight, enc.layers[1].linear1.weight
    assert w0 is not w1
    dac(w0, val(w1), device=device)  # deep copies: equal values, separate storage
    with rumus.no_grad():
        w0.fill_(0.5)
    assert not np.allclose(val(w1), 0.5)
    keys = list(enc.state_dict())
    assert keys[0] == "layers.0.self_attn.in_proj_weight" and keys[-2:] == [
        "norm.weight",
        "norm.bias",
    ]
    assert len(keys) == 3 * 12 + 2

    seen = []
    hook = enc.layers[0].register_forward_pre_hook(
        lambda mod, args, kwargs: seen.append(kwargs["is_causal"]), with_kwargs=True
    )
    x = rumus.randn(5, 2, 8, device=device)
    causal = nn.Transformer.generate_square_subsequent_mask(5).to(device)
    enc(x, mask=causal)
    enc(x, mask=causal != 0)  # the bool form of the causal mask counts too
    enc(x, mask=rumus.zeros(5, 5, device=device))
    enc(x, mask=causal, is_causal=False)
    enc(x)
    hook.remove()
    assert seen == [True, True, False, False, False]


def test_generate_square_subsequent_mask(device):
    m = nn.Transformer.generate_square_subsequent_mask(4).to(device)
    assert m.dtype == rumus.float32
    dac(m, np.triu(np.full((4, 4), -np.inf, np.float32), 1), device=device)
    assert nn.Transformer.generate_square_subsequent_mask(3, dtype=f64).dtype == f64


def test_transformer_errors_and_init(device):
    rumus.manual_seed(0)
    t = nn.Transformer(
        d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32
    ).to(device)
    for name, p in t.named_parameters():
        if p.dim() > 1:
            fan_out, fan_in = p.shape[0], p.shape[1]
            assert np.abs(val(p)).max() <= math.sqrt(6 / (fan_in + fan_out)) * (1 + 1e-6), name
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        t(rumus.randn(4, 2, 8, device=device), rumus.randn(3, 3, 8, device=device))
    with pytest.raises(
        RuntimeError, match="the feature number of src and tgt must be equal to d_model"
    ):
        t(rumus.randn(4, 2, 8, device=device), rumus.randn(3, 2, 6, device=device))
    out = t(rumus.randn(4, 2, 8, device=device), rumus.randn(3, 2, 8, device=device))
    assert tuple(out.shape) == (3, 2, 8)


def test_encoder_layer_trains(device):
    rumus.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.1, batch_first=True).to(
        device
    )
    x, target = (
        dt(rand(4, 6, 8, dtype=np.float32), device=device),
        dt(rand(4, 6, 8, seed=1, dtype=np.float32), device=device),
    )
    losses = []
    for _ in range(10):
        layer.zero_grad()
        loss = ((layer(x) - target) ** 2).mean()
        loss.backward()
        assert all(p.grad is not None for p in layer.parameters())
        with rumus.no_grad():
            for p in layer.parameters():
                p.sub_(0.05 * p.grad)
        losses.append(loss.item())
    assert losses[-1] < losses[0]


# ------------------------------------------------------------------ PyTorch parity


def _twin(torch, rmod, tmod):
    tmod.load_state_dict(
        {k: torch.from_numpy(to_np(v).copy()) for k, v in rmod.state_dict().items()}
    )
    assert list(tmod.state_dict()) == list(rmod.state_dict())
    return tmod


def _grad_check_params(rmod, tmod, rtol, atol, device):
    tg = {k: p.grad.numpy() for k, p in tmod.named_parameters() if p.grad is not None}
    rg = {k: p.grad for k, p in rmod.named_parameters() if p.grad is not None}
    assert sorted(tg) == sorted(rg)
    for k in tg:
        dac(rg[k], tg[k], rtol=rtol, atol=atol, device=device)


def _mask(torch, kind, shape, seed, device):
    if kind is None:
        return None, None
    if kind == "bool":
        a = np.random.default_rng(seed).random(shape) < 0.3
        a[..., 0] = False  # no fully masked rows
    else:
        a = rand(*shape, seed=seed)
    return dt(a, device=device), torch.tensor(a)


MHA_CASES = [
    dict(),
    dict(batch_first=True),
    dict(need_weights=False),
    dict(average=False),
    dict(attn="bool"),
    dict(attn="float", need_weights=False, batch_first=True),
    dict(attn="bool3d", kpm="bool"),
    dict(attn="float3d", need_weights=False),
    dict(kpm="bool", need_weights=False),
    dict(kpm="float"),
    dict(inputs="cross"),
    dict(inputs="distinct", kpm="bool", need_weights=False),
    dict(unbatched=True, attn="bool"),
    dict(unbatched=True, need_weights=False, kpm="bool"),
    dict(ctor={"kdim": 3, "vdim": 5}, inputs="distinct"),
    dict(ctor={"bias": False}, need_weights=False),
    dict(ctor={"add_bias_kv": True}, kpm="bool"),
    dict(ctor={"add_zero_attn": True}, attn="float", need_weights=False),
    dict(ctor={"add_bias_kv": True, "add_zero_attn": True}, batch_first=True),
    dict(causal=True),
    dict(causal=True, need_weights=False),
]


@pytest.mark.parametrize("case", MHA_CASES, ids=[str(c) for c in MHA_CASES])
def test_mha_parity_with_torch(case, device):
    torch = pytest.importorskip("torch")
    E, H, N, L, S = 6, 2, 3, 4, 5
    bf = case.get("batch_first", False)
    ctor = case.get("ctor", {})
    rumus.manual_seed(0)
    rm = nn.MultiheadAttention(E, H, batch_first=bf, dtype=fd(device), **ctor).to(device)
    tm = _twin(
        torch, rm, torch.nn.MultiheadAttention(E, H, batch_first=bf, dtype=torch.float64, **ctor)
    )
    assert repr(rm) == repr(tm)
    unbatched = case.get("unbatched", False)
    inputs = case.get("inputs", "self")
    if inputs == "self":
        S = L
    kd, vd = ctor.get("kdim", E), ctor.get("vdim", E)

    def shape(n, d):
        return (n, d) if unbatched else ((N, n, d) if bf else (n, N, d))

    q = rand(*shape(L, E))
    k = rand(*shape(S, kd), seed=1)
    v = k if inputs == "cross" else rand(*shape(S, vd), seed=2)
    if inputs == "self":
        rq = dt(q, device=device).requires_grad_()
        tq = torch.tensor(q, requires_grad=True)
        rargs, targs, rleaves, tleaves = (rq, rq, rq), (tq, tq, tq), [rq], [tq]
    else:
        rq, rk = dt(q, device=device).requires_grad_(), dt(k, device=device).requires_grad_()
        tq, tk = torch.tensor(q, requires_grad=True), torch.tensor(k, requires_grad=True)
        if inputs == "cross":
            rargs, targs, rleaves, tleaves = (rq, rk, rk), (tq, tk, tk), [rq, rk], [tq, tk]
        else:
            rv, tv = dt(v, device=device).requires_grad_(), torch.tensor(v, requires_grad=True)
            rargs, targs, rleaves, tleaves = (rq, rk, rv), (tq, tk, tv), [rq, rk, rv], [tq, tk, tv]
    kw_r, kw_t = {}, {}
    attn = case.get("attn")
    if case.get("causal"):
        cm = np.triu(np.full((L, S), -np.inf), 1)
        kw_r.update(attn_mask=dt(cm, device=device), is_causal=True)
        kw_t.update(attn_mask=torch.tensor(cm), is_causal=True)
    elif attn:
        nd3 = attn.endswith("3d")
        mshape = ((H if unbatched else N * H), L, S) if nd3 else (L, S)
        kw_r["attn_mask"], kw_t["attn_mask"] = _mask(
            torch, attn.replace("3d", ""), mshape, 3, device
        )
    if case.get("kpm"):
        kw_r["key_padding_mask"], kw_t["key_padding_mask"] = _mask(
            torch, case["kpm"], (S,) if unbatched else (N, S), 4, device
        )
    need = case.get("need_weights", True)
    avg = case.get("average", True)
    ro, rw = rm(*rargs, need_weights=need, average_attn_weights=avg, **kw_r)
    to, tw = tm(*targs, need_weights=need, average_attn_weights=avg, **kw_t)
    dac(ro, to.detach().numpy(), rtol=1e-9, atol=1e-10, device=device)
    if need:
        dac(rw, tw.detach().numpy(), rtol=1e-9, atol=1e-10, device=device)
    else:
        assert rw is None and tw is None
    g = rand(*ro.shape, seed=9)
    ro.backward(dt(g, device=device))
    to.backward(torch.tensor(g))
    for a, b in zip(rleaves, tleaves):
        dac(a.grad, b.grad.numpy(), rtol=1e-9, atol=1e-10, device=device)
    _grad_check_params(rm, tm, 1e-9, 1e-10, device)


ENC_CASES = [
    dict(),
    dict(norm_first=True, batch_first=True),
    dict(activation="gelu", mask="causal"),
    dict(activation="module", kpm=True, batch_first=True),
    dict(mask="bool", kpm=True, norm_first=True),
    dict(mask="causal", is_causal=True),
    dict(bias=False),
    dict(unbatched=True, mask="causal"),
]


def _enc_masks(torch, case, L, N, device):
    r, t = {}, {}
    if case.get("mask") == "causal":
        m = np.triu(np.full((L, L), -np.inf), 1)
        r["mask"], t["mask"] = dt(m, device=device), torch.tensor(m)
    elif case.get("mask") == "bool":
        m = np.random.default_rng(5).random((L, L)) < 0.3
        np.fill_diagonal(m, False)
        r["mask"], t["mask"] = dt(m, device=device), torch.tensor(m)
    if case.get("kpm"):
        m = np.zeros((N, L), bool)
        m[0, -2:] = True
        r["src_key_padding_mask"], t["src_key_padding_mask"] = dt(m, device=device), torch.tensor(m)
    if case.get("is_causal"):
        r["is_causal"] = t["is_causal"] = True
    return r, t


@pytest.mark.parametrize("case", ENC_CASES, ids=[str(c) for c in ENC_CASES])
def test_encoder_parity_with_torch(case, device):
    torch = pytest.importorskip("torch")
    d, H, L, N = 8, 2, 5, 3
    bf = case.get("batch_first", False)
    act = case.get("activation", "relu")

    def build(m):
        a = m.GELU() if act == "module" else act
        layer = m.TransformerEncoderLayer(
            d,
            H,
            dim_feedforward=16,
            dropout=0.0,
            activation=a,
            batch_first=bf,
            norm_first=case.get("norm_first", False),
            bias=case.get("bias", True),
        )
        return m.TransformerEncoder(layer, 2, norm=m.LayerNorm(d), enable_nested_tensor=False)

    rumus.manual_seed(0)
    rm = (
        build(nn).double() if device == "cpu" else build(nn).to(device)
    )  # float64 is not on the GPU
    tm = _twin(torch, rm, build(torch.nn).double())
    shape = (L, d) if case.get("unbatched") else ((N, L, d) if bf else (L, N, d))
    x = rand(*shape)
    rx, tx = dt(x, device=device).requires_grad_(), torch.tensor(x, requires_grad=True)
    kr, kt = _enc_masks(torch, case, L, N, device)
    ro, to = rm(rx, **kr), tm(tx, **kt)
    dac(ro, to.detach().numpy(), rtol=1e-9, atol=1e-10, device=device)
    g = rand(*shape, seed=3)
    ro.backward(dt(g, device=device))
    to.backward(torch.tensor(g))
    dac(rx.grad, tx.grad.numpy(), rtol=1e-8, atol=1e-10, device=device)
    _grad_check_params(rm, tm, 1e-8, 1e-10, device)


@pytest.mark.parametrize(
    "case",
    [
        dict(),
        dict(norm_first=True, batch_first=True, kpm=True),
        dict(activation="gelu", causal=True),
    ],
    ids=str,
)
def test_decoder_parity_with_torch(case, device):
    torch = pytest.importorskip("torch")
    d, H, T, S, N = 8, 2, 4, 5, 2
    bf = case.get("batch_first", False)

    def build(m):
        layer = m.TransformerDecoderLayer(
            d,
            H,
            dim_feedforward=16,
            dropout=0.0,
            batch_first=bf,
            activation=case.get("activation", "relu"),
            norm_first=case.get("norm_first", False),
        )
        return m.TransformerDecoder(layer, 2, norm=m.LayerNorm(d))

    rumus.manual_seed(0)
    rm = (
        build(nn).double() if device == "cpu" else build(nn).to(device)
    )  # float64 is not on the GPU
    tm = _twin(torch, rm, build(torch.nn).double())
    assert "layers.0.multihead_attn.in_proj_weight" in rm.state_dict()
    assert "layers.1.norm3.bias" in rm.state_dict()
    tgt = rand(*((N, T, d) if bf else (T, N, d)))
    mem = rand(*((N, S, d) if bf else (S, N, d)), seed=1)
    rt, tt = dt(tgt, device=device).requires_grad_(), torch.tensor(tgt, requires_grad=True)
    rmem, tmem = dt(mem, device=device).requires_grad_(), torch.tensor(mem, requires_grad=True)
    kr, kt = {}, {}
    if case.get("causal"):
        m = np.triu(np.full((T, T), -np.inf), 1)
        kr["tgt_mask"], kt["tgt_mask"] = dt(m, device=device), torch.tensor(m)
        kr["tgt_is_causal"] = kt["tgt_is_causal"] = True
    if case.get("kpm"):
        m = np.zeros((N, S), bool)
        m[1, -2:] = True
        kr["memory_key_padding_mask"], kt["memory_key_padding_mask"] = (
            dt(m, device=device),
            torch.tensor(m),
        )
        m = np.zeros((N, T), bool)
        m[0, -1] = True
        kr["tgt_key_padding_mask"], kt["tgt_key_padding_mask"] = (
            dt(m, device=device),
            torch.tensor(m),
        )
    ro, to = rm(rt, rmem, **kr), tm(tt, tmem, **kt)
    dac(ro, to.detach().numpy(), rtol=1e-9, atol=1e-10, device=device)
    g = rand(*ro.shape, seed=3)
    ro.backward(dt(g, device=device))
    to.backward(torch.tensor(g))
    dac(rt.grad, tt.grad.numpy(), rtol=1e-8, atol=1e-10, device=device)
    dac(rmem.grad, tmem.grad.numpy(), rtol=1e-8, atol=1e-10, device=device)
    _grad_check_params(rm, tm, 1e-8, 1e-10, device)


def test_transformer_parity_with_torch(device):
    torch = pytest.importorskip("torch")
    kw = dict(
        d_model=8,
        nhead=2,
        num_encoder_layers=2,
        num_decoder_layers=1,
        dim_feedforward=16,
        dropout=0.0,
        batch_first=True,
    )
    rumus.manual_seed(0)
    rm = nn.Transformer(**kw, dtype=fd(device)).to(device)
    tm = _twin(torch, rm, torch.nn.Transformer(**kw, dtype=torch.float64))
    src, tgt = rand(2, 5, 8), rand(2, 4, 8, seed=1)
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=fd(device)).to(device)
    ro = rm(dt(src, device=device), dt(tgt, device=device), tgt_mask=mask)
    to = tm(
        torch.tensor(src),
        torch.tensor(tgt),
        tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64),
    )
    dac(ro, to.detach().numpy(), rtol=1e-9, atol=1e-10, device=device)


def test_float32_encoder_layer_parity_with_torch(device):
    """The benchmark's configuration (float32, batch_first=False) at a small size."""
    torch = pytest.importorskip("torch")
    rumus.manual_seed(0)
    rm = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0).to(device)
    tm = _twin(torch, rm, torch.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0))
    x = rand(16, 4, 32, dtype=np.float32)
    rx, tx = dt(x, device=device).requires_grad_(), torch.tensor(x, requires_grad=True)
    ro, to = rm(rx), tm(tx)
    dac(ro, to.detach().numpy(), rtol=1e-4, atol=1e-5, device=device)
    ro.sum().backward()
    to.sum().backward()
    dac(rx.grad, tx.grad.numpy(), rtol=1e-4, atol=1e-5, device=device)
    _grad_check_params(rm, tm, 1e-4, 1e-4, device)


def test_deepcopy_of_mha_keeps_independent_weights(device):
    m = nn.MultiheadAttention(4, 2).to(device)
    c = copy.deepcopy(m)
    dac(c.in_proj_weight, val(m.in_proj_weight), device=device)
    with rumus.no_grad():
        c.in_proj_weight.zero_()
    assert np.abs(val(m.in_proj_weight)).sum() > 0


def test_pickled_encoder_gives_the_same_outputs(device):
    enc = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, activation="gelu"), 2
    ).to(device)
    enc.eval()
    clone = pickle.loads(pickle.dumps(enc))
    assert clone.layers[1].activation is nn.functional.gelu
    x = rumus.randn(4, 2, 8, device=device)
    dac(clone(x), val(enc(x)), device=device)
