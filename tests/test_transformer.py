"""MultiheadAttention and the Transformer layers: NumPy closed forms, masks, gradients,
PyTorch parity (same weights -> same outputs and gradients), init, state_dict keys and errors."""

import copy
import math
import pickle

import numpy as np
import pytest

import rumus
import rumus.nn as nn
from rumus.autograd import gradcheck

from conftest import ac, assert_close, leaf, tensor, to_np, val

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
        wq, wk, wv = W[:E], W[E:2 * E], W[2 * E:]
    else:
        wq, wk, wv = val(m.q_proj_weight), val(m.k_proj_weight), val(m.v_proj_weight)
    b = val(m.in_proj_bias) if m.in_proj_bias is not None else np.zeros(3 * E)

    def heads(x, w, bb):
        y = x @ w.T + bb
        return y.reshape(y.shape[0], y.shape[1], H, hd).transpose(0, 2, 1, 3)

    Q, K, V = heads(q, wq, b[:E]), heads(k, wk, b[E:2 * E]), heads(v, wv, b[2 * E:])
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
def test_mha_self_attention_numpy(need_weights):
    m = nn.MultiheadAttention(8, 2, dtype=f64)
    with rumus.no_grad():  # non-zero biases so that they are tested too
        m.in_proj_bias.copy_(tensor(rand(24, seed=5)))
        m.out_proj.bias.copy_(tensor(rand(8, seed=6)))
    x = rand(5, 3, 8)  # (L, N, E)
    t = tensor(x)
    out, w = m(t, t, t, need_weights=need_weights)
    ref, a = np_mha(x.transpose(1, 0, 2), x.transpose(1, 0, 2), x.transpose(1, 0, 2), m)
    assert_close(out, ref.transpose(1, 0, 2))
    if need_weights:
        assert_close(w, a.mean(1))
    else:
        assert w is None


def test_mha_cross_attention_masks_numpy():
    m = nn.MultiheadAttention(6, 3, batch_first=True, dtype=f64)
    q, kv = rand(2, 4, 6), rand(2, 5, 6, seed=1)
    causal = np.triu(np.ones((4, 5), bool), 1)
    kpm = np.array([[False] * 5, [False, False, False, True, True]])
    out, w = m(tensor(q), tensor(kv), tensor(kv), key_padding_mask=tensor(kpm), attn_mask=tensor(causal),
               average_attn_weights=False)
    mask = additive(causal)[None, None] + additive(kpm)[:, None, None, :]
    ref, a = np_mha(q, kv, kv, m, mask)
    assert_close(out, ref)
    assert_close(w, a)
    assert tuple(w.shape) == (2, 3, 4, 5)
    # Float masks are added; need_weights=False goes through scaled_dot_product_attention.
    fmask = rand(4, 5, seed=3)
    out2, none = m(tensor(q), tensor(kv), tensor(kv), attn_mask=tensor(fmask), need_weights=False)
    assert none is None
    assert_close(out2, np_mha(q, kv, kv, m, fmask)[0])


def test_mha_3d_mask_and_distinct_kv_numpy():
    m = nn.MultiheadAttention(4, 2, dtype=f64)
    q, k, v = rand(3, 2, 4), rand(5, 2, 4, seed=1), rand(5, 2, 4, seed=2)
    mask3 = rand(2 * 2, 3, 5, seed=4)  # (N * H, L, S), batch-major
    for need in (True, False):
        out, _ = m(tensor(q), tensor(k), tensor(v), attn_mask=tensor(mask3), need_weights=need)
        ref, _ = np_mha(*(a.transpose(1, 0, 2) for a in (q, k, v)), m, mask3.reshape(2, 2, 3, 5))
        assert_close(out, ref.transpose(1, 0, 2))


def test_mha_kdim_vdim_numpy():
    m = nn.MultiheadAttention(4, 2, kdim=3, vdim=5, batch_first=True, dtype=f64)
    assert m.in_proj_weight is None and tuple(m.k_proj_weight.shape) == (4, 3)
    assert list(m.state_dict()) == ["q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias",
                                    "out_proj.weight", "out_proj.bias"]
    q, k, v = rand(2, 3, 4), rand(2, 6, 3, seed=1), rand(2, 6, 5, seed=2)
    out, w = m(tensor(q), tensor(k), tensor(v))
    ref, a = np_mha(q, k, v, m)
    assert_close(out, ref)
    assert_close(w, a.mean(1))


def test_mha_unbatched():
    m = nn.MultiheadAttention(4, 2, dtype=f64)
    x, y = rand(3, 4), rand(5, 4, seed=1)
    for need in (True, False):
        out, w = m(tensor(x), tensor(y), tensor(y), need_weights=need,
                   key_padding_mask=tensor(np.array([False, True, False, False, False])))
        ref, a = np_mha(x[None], y[None], y[None], m, additive(np.array([False, True, False, False, False])))
        assert_close(out, ref[0])
        if need:
            assert_close(w, a.mean(1)[0])
    t = tensor(x)
    _, w = m(t, t, t, average_attn_weights=False, attn_mask=tensor(np.zeros((2, 3, 3))))
    assert tuple(w.shape) == (2, 3, 3)


def test_mha_is_causal_uses_the_causal_mask():
    m = nn.MultiheadAttention(4, 2, batch_first=True, dtype=f64)
    x = tensor(rand(2, 5, 4))
    causal = nn.Transformer.generate_square_subsequent_mask(5, dtype=f64)
    ref = np_mha(val(x), val(x), val(x), m, val(causal))[0]
    for need in (True, False):
        out, _ = m(x, x, x, attn_mask=causal, is_causal=True, need_weights=need)
        assert_close(out, ref)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)


def test_mha_bias_kv_and_zero_attn_numpy():
    m = nn.MultiheadAttention(4, 2, add_bias_kv=True, add_zero_attn=True, batch_first=True, dtype=f64)
    assert list(m.state_dict()) == ["in_proj_weight", "in_proj_bias", "bias_k", "bias_v", "out_proj.weight",
                                    "out_proj.bias"]
    q = rand(2, 3, 4)
    kpm = np.array([[False, False, True], [False, False, False]])
    out, w = m(tensor(q), tensor(q), tensor(q), key_padding_mask=tensor(kpm), average_attn_weights=False)
    # Reference: bias_k / bias_v appended as one more (projected) key/value, then a zero key/value.
    E, H, hd = 4, 2, 2
    W, b = val(m.in_proj_weight), val(m.in_proj_bias)
    proj = lambda x, i: x @ W[i * E:(i + 1) * E].T + b[i * E:(i + 1) * E]  # noqa: E731
    Q, K, V = proj(q, 0), proj(q, 1), proj(q, 2)
    K = np.concatenate([K, np.broadcast_to(val(m.bias_k).reshape(1, 1, E), (2, 1, E)), np.zeros((2, 1, E))], 1)
    V = np.concatenate([V, np.broadcast_to(val(m.bias_v).reshape(1, 1, E), (2, 1, E)), np.zeros((2, 1, E))], 1)
    sp = lambda x: x.reshape(2, -1, H, hd).transpose(0, 2, 1, 3)  # noqa: E731
    s = sp(Q) @ sp(K).transpose(0, 1, 3, 2) / math.sqrt(hd)
    s = s + additive(np.concatenate([kpm, np.zeros((2, 2), bool)], 1))[:, None, None, :]
    a = np_softmax(s)
    o = (a @ sp(V)).transpose(0, 2, 1, 3).reshape(2, 3, E) @ val(m.out_proj.weight).T + val(m.out_proj.bias)
    assert_close(out, o)
    assert_close(w, a)
    out2, _ = m(tensor(q), tensor(q), tensor(q), key_padding_mask=tensor(kpm), need_weights=False)
    assert_close(out2, o)


def test_mha_gradcheck():
    m = nn.MultiheadAttention(4, 2, dtype=f64)
    q, k, v = leaf(rand(3, 2, 4)), leaf(rand(4, 2, 4, seed=1)), leaf(rand(4, 2, 4, seed=2))
    mask = tensor(rand(3, 4, seed=3))
    assert gradcheck(lambda q, k, v: m(q, k, v, attn_mask=mask)[0], (q, k, v))
    assert gradcheck(lambda q, k, v: m(q, k, v, need_weights=False)[0], (q, k, v))
    assert gradcheck(lambda x: m(x, x, x, need_weights=False)[0], (q,))


def test_mha_dropout_train_vs_eval():
    rumus.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True)
    x = tensor(rand(2, 6, 8, dtype=np.float32))
    a, wa = m(x, x, x)
    b, _ = m(x, x, x)
    assert not np.allclose(val(a), val(b))
    # Dropped weights are zero and the kept ones are scaled by 2: a row averaged over heads sums to 1 on average.
    m.eval()
    c, wc = m(x, x, x)
    d, _ = m(x, x, x)
    ac(c, val(d))
    ac(wc.sum(-1), np.ones((2, 6), np.float32), rtol=1e-5)
    ref = nn.MultiheadAttention(8, 2, batch_first=True)
    ref.load_state_dict(m.state_dict())
    ac(c, val(ref(x, x, x)[0]))


# ------------------------------------------------------------------ init, keys, repr, errors


def test_mha_default_init():
    rumus.manual_seed(0)
    E = 64
    m = nn.MultiheadAttention(E, 4, add_bias_kv=True)
    w = val(m.in_proj_weight)
    bound = math.sqrt(6 / (E + 3 * E))  # xavier_uniform_ on (3E, E)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound
    ac(m.in_proj_bias, np.zeros(3 * E, np.float32))
    ac(m.out_proj.bias, np.zeros(E, np.float32))
    ow = val(m.out_proj.weight)  # Linear's default: U(-1/sqrt(E), 1/sqrt(E))
    assert np.abs(ow).max() <= 1 / 8 and np.abs(ow).max() > 0.95 / 8
    bk = np.concatenate([val(m.bias_k).ravel(), val(m.bias_v).ravel()])  # xavier_normal_ on (1, 1, E)
    assert abs(bk.std() - math.sqrt(1 / E)) < 0.3 * math.sqrt(1 / E)


def test_mha_state_dict_and_repr():
    m = nn.MultiheadAttention(8, 2)
    assert [(k, tuple(v.shape)) for k, v in m.state_dict().items()] == [
        ("in_proj_weight", (24, 8)), ("in_proj_bias", (24,)), ("out_proj.weight", (8, 8)), ("out_proj.bias", (8,))]
    assert list(nn.MultiheadAttention(8, 2, bias=False).state_dict()) == ["in_proj_weight", "out_proj.weight"]
    assert repr(m) == ("MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, "
                       "out_features=8, bias=True)\n)")
    assert m.head_dim == 4 and m.batch_first is False and m._qkv_same_embed_dim


def test_mha_errors():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 2)
    m = nn.MultiheadAttention(4, 2)
    x = rumus.randn(3, 2, 4)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 4, but got 5"):
        m(rumus.randn(3, 2, 5), x, x)
    with pytest.raises(AssertionError, match="expected `key` and `value` to be 3-D but found 2-D and 3-D"):
        m(x, rumus.randn(3, 4), x)
    with pytest.raises(AssertionError, match="query should be unbatched 2D or batched 3D tensor"):
        m(rumus.randn(1, 3, 2, 4), x, x)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is .*\[3, 4\].*but should be \(3, 3\)"):
        m(x, x, x, attn_mask=rumus.zeros(3, 4))
    with pytest.raises(RuntimeError, match=r"The shape of the 3D attn_mask is .*but should be \(4, 3, 3\)"):
        m(x, x, x, attn_mask=rumus.zeros(2, 3, 3))
    with pytest.raises(AssertionError, match=r"expecting key_padding_mask shape of \(2, 3\)"):
        m(x, x, x, key_padding_mask=rumus.zeros(2, 4).bool())
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask are supported"):
        m(x, x, x, attn_mask=rumus.zeros(3, 3, dtype=rumus.int64))
    with pytest.raises(RuntimeError, match="key batch size 3 does not match query batch size 2"):
        m(x, rumus.randn(3, 3, 4), rumus.randn(3, 3, 4))


# ------------------------------------------------------------------ Transformer layers


def np_layer_norm(x, w, b, eps=1e-5):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * w + b


def test_encoder_layer_numpy_post_and_pre_norm():
    for norm_first in (False, True):
        layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                           norm_first=norm_first, dtype=f64)
        x = rand(2, 5, 8)
        mask = additive(np.triu(np.ones((5, 5), bool), 1))
        out = layer(tensor(x), src_mask=tensor(mask))

        def sa(h):
            return np_mha(h, h, h, layer.self_attn, mask)[0]

        def ff(h):
            h = np.maximum(h @ val(layer.linear1.weight).T + val(layer.linear1.bias), 0)
            return h @ val(layer.linear2.weight).T + val(layer.linear2.bias)

        n1 = lambda h: np_layer_norm(h, val(layer.norm1.weight), val(layer.norm1.bias))  # noqa: E731
        n2 = lambda h: np_layer_norm(h, val(layer.norm2.weight), val(layer.norm2.bias))  # noqa: E731
        if norm_first:
            h = x + sa(n1(x))
            ref = h + ff(n2(h))
        else:
            h = n1(x + sa(x))
            ref = n2(h + ff(h))
        assert_close(out, ref)


def test_encoder_layer_state_dict_keys_and_activation():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    assert [(k, tuple(v.shape)) for k, v in layer.state_dict().items()] == [
        ("self_attn.in_proj_weight", (24, 8)), ("self_attn.in_proj_bias", (24,)),
        ("self_attn.out_proj.weight", (8, 8)), ("self_attn.out_proj.bias", (8,)),
        ("linear1.weight", (16, 8)), ("linear1.bias", (16,)), ("linear2.weight", (8, 16)), ("linear2.bias", (8,)),
        ("norm1.weight", (8,)), ("norm1.bias", (8,)), ("norm2.weight", (8,)), ("norm2.bias", (8,))]
    nobias = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, bias=False)
    assert list(nobias.state_dict()) == ["self_attn.in_proj_weight", "self_attn.out_proj.weight", "linear1.weight",
                                         "linear2.weight", "norm1.weight", "norm2.weight"]
    assert layer.activation is nn.functional.relu
    assert nn.TransformerEncoderLayer(8, 2, activation="gelu").activation is nn.functional.gelu
    mod = nn.TransformerEncoderLayer(8, 2, activation=nn.GELU())
    assert "activation.weight" not in mod.state_dict() and isinstance(mod.activation, nn.GELU)
    assert dict(mod.named_children())["activation"] is mod.activation
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    assert layer.dropout.p == 0.1 and layer.norm1.eps == 1e-5 and not layer.norm_first


def test_encoder_copies_layers_and_detects_causal_masks():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
    enc = nn.TransformerEncoder(layer, 3, norm=nn.LayerNorm(8))
    assert len(enc.layers) == 3 and enc.layers[0] is not layer and enc.layers[0] is not enc.layers[1]
    w0, w1 = enc.layers[0].linear1.weight, enc.layers[1].linear1.weight
    assert w0 is not w1
    ac(w0, val(w1))  # deep copies: equal values, separate storage
    with rumus.no_grad():
        w0.fill_(0.5)
    assert not np.allclose(val(w1), 0.5)
    keys = list(enc.state_dict())
    assert keys[0] == "layers.0.self_attn.in_proj_weight" and keys[-2:] == ["norm.weight", "norm.bias"]
    assert len(keys) == 3 * 12 + 2

    seen = []
    hook = enc.layers[0].register_forward_pre_hook(lambda mod, args, kwargs: seen.append(kwargs["is_causal"]),
                                                   with_kwargs=True)
    x = rumus.randn(5, 2, 8)
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    enc(x, mask=causal)
    enc(x, mask=causal != 0)  # the bool form of the causal mask counts too
    enc(x, mask=rumus.zeros(5, 5))
    enc(x, mask=causal, is_causal=False)
    enc(x)
    hook.remove()
    assert seen == [True, True, False, False, False]


def test_generate_square_subsequent_mask():
    m = nn.Transformer.generate_square_subsequent_mask(4)
    assert m.dtype == rumus.float32
    ac(m, np.triu(np.full((4, 4), -np.inf, np.float32), 1))
    assert nn.Transformer.generate_square_subsequent_mask(3, dtype=f64).dtype == f64


def test_transformer_errors_and_init():
    rumus.manual_seed(0)
    t = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32)
    for name, p in t.named_parameters():
        if p.dim() > 1:
            fan_out, fan_in = p.shape[0], p.shape[1]
            assert np.abs(val(p)).max() <= math.sqrt(6 / (fan_in + fan_out)) * (1 + 1e-6), name
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        t(rumus.randn(4, 2, 8), rumus.randn(3, 3, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        t(rumus.randn(4, 2, 8), rumus.randn(3, 2, 6))
    out = t(rumus.randn(4, 2, 8), rumus.randn(3, 2, 8))
    assert tuple(out.shape) == (3, 2, 8)


def test_encoder_layer_trains():
    rumus.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.1, batch_first=True)
    x, target = tensor(rand(4, 6, 8, dtype=np.float32)), tensor(rand(4, 6, 8, seed=1, dtype=np.float32))
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
    tmod.load_state_dict({k: torch.from_numpy(to_np(v).copy()) for k, v in rmod.state_dict().items()})
    assert list(tmod.state_dict()) == list(rmod.state_dict())
    return tmod


def _grad_check_params(rmod, tmod, rtol, atol):
    tg = {k: p.grad.numpy() for k, p in tmod.named_parameters() if p.grad is not None}
    rg = {k: p.grad for k, p in rmod.named_parameters() if p.grad is not None}
    assert sorted(tg) == sorted(rg)
    for k in tg:
        ac(rg[k], tg[k], rtol=rtol, atol=atol)


def _mask(torch, kind, shape, seed):
    if kind is None:
        return None, None
    if kind == "bool":
        a = np.random.default_rng(seed).random(shape) < 0.3
        a[..., 0] = False  # no fully masked rows
    else:
        a = rand(*shape, seed=seed)
    return tensor(a), torch.tensor(a)


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
def test_mha_parity_with_torch(case):
    torch = pytest.importorskip("torch")
    E, H, N, L, S = 6, 2, 3, 4, 5
    bf = case.get("batch_first", False)
    ctor = case.get("ctor", {})
    rumus.manual_seed(0)
    rm = nn.MultiheadAttention(E, H, batch_first=bf, dtype=f64, **ctor)
    tm = _twin(torch, rm, torch.nn.MultiheadAttention(E, H, batch_first=bf, dtype=torch.float64, **ctor))
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
        rq = tensor(q).requires_grad_()
        tq = torch.tensor(q, requires_grad=True)
        rargs, targs, rleaves, tleaves = (rq, rq, rq), (tq, tq, tq), [rq], [tq]
    else:
        rq, rk = tensor(q).requires_grad_(), tensor(k).requires_grad_()
        tq, tk = torch.tensor(q, requires_grad=True), torch.tensor(k, requires_grad=True)
        if inputs == "cross":
            rargs, targs, rleaves, tleaves = (rq, rk, rk), (tq, tk, tk), [rq, rk], [tq, tk]
        else:
            rv, tv = tensor(v).requires_grad_(), torch.tensor(v, requires_grad=True)
            rargs, targs, rleaves, tleaves = (rq, rk, rv), (tq, tk, tv), [rq, rk, rv], [tq, tk, tv]
    kw_r, kw_t = {}, {}
    attn = case.get("attn")
    if case.get("causal"):
        cm = np.triu(np.full((L, S), -np.inf), 1)
        kw_r.update(attn_mask=tensor(cm), is_causal=True)
        kw_t.update(attn_mask=torch.tensor(cm), is_causal=True)
    elif attn:
        nd3 = attn.endswith("3d")
        mshape = ((H if unbatched else N * H), L, S) if nd3 else (L, S)
        kw_r["attn_mask"], kw_t["attn_mask"] = _mask(torch, attn.replace("3d", ""), mshape, 3)
    if case.get("kpm"):
        kw_r["key_padding_mask"], kw_t["key_padding_mask"] = _mask(torch, case["kpm"], (S,) if unbatched else (N, S), 4)
    need = case.get("need_weights", True)
    avg = case.get("average", True)
    ro, rw = rm(*rargs, need_weights=need, average_attn_weights=avg, **kw_r)
    to, tw = tm(*targs, need_weights=need, average_attn_weights=avg, **kw_t)
    ac(ro, to.detach().numpy(), rtol=1e-9, atol=1e-10)
    if need:
        ac(rw, tw.detach().numpy(), rtol=1e-9, atol=1e-10)
    else:
        assert rw is None and tw is None
    g = rand(*ro.shape, seed=9)
    ro.backward(tensor(g))
    to.backward(torch.tensor(g))
    for a, b in zip(rleaves, tleaves):
        ac(a.grad, b.grad.numpy(), rtol=1e-9, atol=1e-10)
    _grad_check_params(rm, tm, 1e-9, 1e-10)


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


def _enc_masks(torch, case, L, N):
    r, t = {}, {}
    if case.get("mask") == "causal":
        m = np.triu(np.full((L, L), -np.inf), 1)
        r["mask"], t["mask"] = tensor(m), torch.tensor(m)
    elif case.get("mask") == "bool":
        m = np.random.default_rng(5).random((L, L)) < 0.3
        np.fill_diagonal(m, False)
        r["mask"], t["mask"] = tensor(m), torch.tensor(m)
    if case.get("kpm"):
        m = np.zeros((N, L), bool)
        m[0, -2:] = True
        r["src_key_padding_mask"], t["src_key_padding_mask"] = tensor(m), torch.tensor(m)
    if case.get("is_causal"):
        r["is_causal"] = t["is_causal"] = True
    return r, t


@pytest.mark.parametrize("case", ENC_CASES, ids=[str(c) for c in ENC_CASES])
def test_encoder_parity_with_torch(case):
    torch = pytest.importorskip("torch")
    d, H, L, N = 8, 2, 5, 3
    bf = case.get("batch_first", False)
    act = case.get("activation", "relu")

    def build(m):
        a = m.GELU() if act == "module" else act
        layer = m.TransformerEncoderLayer(d, H, dim_feedforward=16, dropout=0.0, activation=a, batch_first=bf,
                                          norm_first=case.get("norm_first", False), bias=case.get("bias", True))
        return m.TransformerEncoder(layer, 2, norm=m.LayerNorm(d), enable_nested_tensor=False)

    rumus.manual_seed(0)
    rm = build(nn).double()
    tm = _twin(torch, rm, build(torch.nn).double())
    shape = (L, d) if case.get("unbatched") else ((N, L, d) if bf else (L, N, d))
    x = rand(*shape)
    rx, tx = tensor(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    kr, kt = _enc_masks(torch, case, L, N)
    ro, to = rm(rx, **kr), tm(tx, **kt)
    ac(ro, to.detach().numpy(), rtol=1e-9, atol=1e-10)
    g = rand(*shape, seed=3)
    ro.backward(tensor(g))
    to.backward(torch.tensor(g))
    ac(rx.grad, tx.grad.numpy(), rtol=1e-8, atol=1e-10)
    _grad_check_params(rm, tm, 1e-8, 1e-10)


@pytest.mark.parametrize("case", [dict(), dict(norm_first=True, batch_first=True, kpm=True),
                                  dict(activation="gelu", causal=True)], ids=str)
def test_decoder_parity_with_torch(case):
    torch = pytest.importorskip("torch")
    d, H, T, S, N = 8, 2, 4, 5, 2
    bf = case.get("batch_first", False)

    def build(m):
        layer = m.TransformerDecoderLayer(d, H, dim_feedforward=16, dropout=0.0, batch_first=bf,
                                          activation=case.get("activation", "relu"),
                                          norm_first=case.get("norm_first", False))
        return m.TransformerDecoder(layer, 2, norm=m.LayerNorm(d))

    rumus.manual_seed(0)
    rm = build(nn).double()
    tm = _twin(torch, rm, build(torch.nn).double())
    assert "layers.0.multihead_attn.in_proj_weight" in rm.state_dict()
    assert "layers.1.norm3.bias" in rm.state_dict()
    tgt = rand(*((N, T, d) if bf else (T, N, d)))
    mem = rand(*((N, S, d) if bf else (S, N, d)), seed=1)
    rt, tt = tensor(tgt).requires_grad_(), torch.tensor(tgt, requires_grad=True)
    rmem, tmem = tensor(mem).requires_grad_(), torch.tensor(mem, requires_grad=True)
    kr, kt = {}, {}
    if case.get("causal"):
        m = np.triu(np.full((T, T), -np.inf), 1)
        kr["tgt_mask"], kt["tgt_mask"] = tensor(m), torch.tensor(m)
        kr["tgt_is_causal"] = kt["tgt_is_causal"] = True
    if case.get("kpm"):
        m = np.zeros((N, S), bool)
        m[1, -2:] = True
        kr["memory_key_padding_mask"], kt["memory_key_padding_mask"] = tensor(m), torch.tensor(m)
        m = np.zeros((N, T), bool)
        m[0, -1] = True
        kr["tgt_key_padding_mask"], kt["tgt_key_padding_mask"] = tensor(m), torch.tensor(m)
    ro, to = rm(rt, rmem, **kr), tm(tt, tmem, **kt)
    ac(ro, to.detach().numpy(), rtol=1e-9, atol=1e-10)
    g = rand(*ro.shape, seed=3)
    ro.backward(tensor(g))
    to.backward(torch.tensor(g))
    ac(rt.grad, tt.grad.numpy(), rtol=1e-8, atol=1e-10)
    ac(rmem.grad, tmem.grad.numpy(), rtol=1e-8, atol=1e-10)
    _grad_check_params(rm, tm, 1e-8, 1e-10)


def test_transformer_parity_with_torch():
    torch = pytest.importorskip("torch")
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16, dropout=0.0,
              batch_first=True)
    rumus.manual_seed(0)
    rm = nn.Transformer(**kw, dtype=f64)
    tm = _twin(torch, rm, torch.nn.Transformer(**kw, dtype=torch.float64))
    src, tgt = rand(2, 5, 8), rand(2, 4, 8, seed=1)
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=f64)
    ro = rm(tensor(src), tensor(tgt), tgt_mask=mask)
    to = tm(torch.tensor(src), torch.tensor(tgt), tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(
        4, dtype=torch.float64))
    ac(ro, to.detach().numpy(), rtol=1e-9, atol=1e-10)


def test_float32_encoder_layer_parity_with_torch():
    """The benchmark's configuration (float32, batch_first=False) at a small size."""
    torch = pytest.importorskip("torch")
    rumus.manual_seed(0)
    rm = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0)
    tm = _twin(torch, rm, torch.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0))
    x = rand(16, 4, 32, dtype=np.float32)
    rx, tx = tensor(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    ro, to = rm(rx), tm(tx)
    ac(ro, to.detach().numpy(), rtol=1e-4, atol=1e-5)
    ro.sum().backward()
    to.sum().backward()
    ac(rx.grad, tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    _grad_check_params(rm, tm, 1e-4, 1e-4)


def test_deepcopy_of_mha_keeps_independent_weights():
    m = nn.MultiheadAttention(4, 2)
    c = copy.deepcopy(m)
    ac(c.in_proj_weight, val(m.in_proj_weight))
    with rumus.no_grad():
        c.in_proj_weight.zero_()
    assert np.abs(val(m.in_proj_weight)).sum() > 0


def test_pickled_encoder_gives_the_same_outputs():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, activation="gelu"), 2)
    enc.eval()
    clone = pickle.loads(pickle.dumps(enc))
    assert clone.layers[1].activation is nn.functional.gelu
    x = rumus.randn(4, 2, 8)
    ac(clone(x), val(enc(x)))
