"""Recurrent layers (rust/ops/rnn.rs, rumus.nn.modules.rnn) and rumus.nn.utils.rnn:
values against a float64 NumPy reference written here, gradients by finite
differences, PyTorch parity when PyTorch is installed, bad input, GPU parity."""

import numpy as np
import pytest
import rumus
import rumus.nn as nn
from conftest import need_gpu
from rumus.autograd import gradcheck
from rumus.nn.utils import rnn as rnn_utils

MODES = ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"]


# ---------------------------------------------------------------- reference
def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def ref_step(mode, x, h, c, w):
    """One step for one sequence: x (IN,), h (P,), c (H,) -> (h', c')."""
    w_ih, w_hh, b_ih, b_hh, w_hr = w
    gi = w_ih @ x + (0 if b_ih is None else b_ih)
    gh = w_hh @ h + (0 if b_hh is None else b_hh)
    if mode == "RNN_TANH":
        return np.tanh(gi + gh), None
    if mode == "RNN_RELU":
        return np.maximum(gi + gh, 0), None
    if mode == "LSTM":
        i, f, g, o = np.split(gi + gh, 4)
        c2 = _sig(f) * c + _sig(i) * np.tanh(g)
        h2 = _sig(o) * np.tanh(c2)
        return (h2 if w_hr is None else w_hr @ h2), c2
    xr, xz, xn = np.split(gi, 3)
    hr, hz, hn = np.split(gh, 3)
    r, z = _sig(xr + hr), _sig(xz + hz)
    n = np.tanh(xn + r * hn)
    return (1 - z) * n + z * h, None


def ref_rnn(mode, weights, seqs, h0, c0, num_layers, dirs):
    """Every sequence on its own: weights[k] = (w_ih, w_hh, b_ih, b_hh, w_hr) per
    layer-direction; seqs a list of (L_b, IN). Returns (outputs, h_n, c_n)."""
    outs, hn = [], np.zeros_like(h0)
    cn = None if c0 is None else np.zeros_like(c0)
    for b, xs in enumerate(seqs):
        inp = xs
        for layer in range(num_layers):
            res = []
            for d in range(dirs):
                k = layer * dirs + d
                h = h0[k, b]
                c = None if c0 is None else c0[k, b]
                ys = [None] * len(inp)
                steps = range(len(inp) - 1, -1, -1) if d else range(len(inp))
                for t in steps:
                    h, c = ref_step(mode, inp[t], h, c, weights[k])
                    ys[t] = h
                hn[k, b] = h
                if c0 is not None:
                    cn[k, b] = c
                res.append(np.stack(ys))
            inp = np.concatenate(res, 1)
        outs.append(inp)
    return outs, hn, cn


def module_weights(m):
    dirs = 2 if m.bidirectional else 1
    ws = []
    for layer in range(m.num_layers):
        for d in range(dirs):
            sfx = "_reverse" if d else ""

            def get(n, layer=layer, sfx=sfx):
                p = getattr(m, f"{n}_l{layer}{sfx}", None)
                return None if p is None else p.detach().numpy().astype(np.float64)

            ws.append(
                tuple(get(n) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"))
            )
    return ws


def make(mode, *args, **kw):
    if mode.startswith("RNN"):
        return nn.RNN(*args, nonlinearity="relu" if mode == "RNN_RELU" else "tanh", **kw)
    return {"LSTM": nn.LSTM, "GRU": nn.GRU}[mode](*args, **kw)


def states(mode, m, batch, rng, dtype=np.float64):
    dirs = 2 if m.bidirectional else 1
    p = m.proj_size or m.hidden_size
    h0 = rng.standard_normal((m.num_layers * dirs, batch, p)).astype(dtype)
    c0 = rng.standard_normal((m.num_layers * dirs, batch, m.hidden_size)).astype(dtype)
    return h0, (c0 if mode == "LSTM" else None)


def call(mode, m, x, h0, c0):
    if mode == "LSTM":
        out, (h, c) = m(x, (rumus.from_numpy(h0), rumus.from_numpy(c0)))
        return out, h, c
    out, h = m(x, rumus.from_numpy(h0))
    return out, h, None


# ---------------------------------------------------------------- values
CONFIGS = [
    dict(num_layers=1),
    dict(num_layers=2, bidirectional=True),
    dict(num_layers=2, batch_first=True),
    dict(num_layers=1, bias=False, bidirectional=True),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_module_matches_numpy(mode, cfg):
    rng = np.random.default_rng(0)
    T, B, IN, H = 5, 3, 4, 6
    m = make(mode, IN, H, dtype=rumus.float64, **cfg).double()
    x = rng.standard_normal((B, T, IN) if cfg.get("batch_first") else (T, B, IN))
    h0, c0 = states(mode, m, B, rng)
    out, h, c = call(mode, m, rumus.from_numpy(x), h0, c0)
    xs = [x[b] for b in range(B)] if cfg.get("batch_first") else [x[:, b] for b in range(B)]
    dirs = 2 if m.bidirectional else 1
    routs, rh, rc = ref_rnn(mode, module_weights(m), xs, h0, c0, m.num_layers, dirs)
    want = np.stack(routs, 0 if cfg.get("batch_first") else 1)
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(h.detach().numpy(), rh, rtol=1e-10, atol=1e-10)
    if c is not None:
        np.testing.assert_allclose(c.detach().numpy(), rc, rtol=1e-10, atol=1e-10)


def test_lstm_proj_size_matches_numpy():
    rng = np.random.default_rng(1)
    T, B, IN, H, P = 4, 2, 3, 5, 2
    m = nn.LSTM(IN, H, num_layers=2, bidirectional=True, proj_size=P, dtype=rumus.float64)
    assert m.weight_hr_l0.shape == (P, H) and m.weight_hh_l1_reverse.shape == (4 * H, P)
    assert m.weight_ih_l1.shape == (4 * H, 2 * P)
    x = rng.standard_normal((T, B, IN))
    h0, c0 = states("LSTM", m, B, rng)
    out, (h, c) = m(rumus.from_numpy(x), (rumus.from_numpy(h0), rumus.from_numpy(c0)))
    assert out.shape == (T, B, 2 * P) and h.shape == (4, B, P) and c.shape == (4, B, H)
    routs, rh, rc = ref_rnn("LSTM", module_weights(m), [x[:, b] for b in range(B)], h0, c0, 2, 2)
    np.testing.assert_allclose(out.detach().numpy(), np.stack(routs, 1), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(h.detach().numpy(), rh, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(c.detach().numpy(), rc, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("mode", MODES)
def test_float32_close_to_float64(mode):
    rng = np.random.default_rng(2)
    m = make(mode, 8, 16, num_layers=2)
    x = rng.standard_normal((7, 4, 8)).astype(np.float32)
    h0, c0 = states(mode, m, 4, rng, np.float32)
    out, h, _ = call(mode, m, rumus.from_numpy(x), h0, c0)
    routs, rh, _ = ref_rnn(
        mode,
        module_weights(m),
        [x[:, b].astype(np.float64) for b in range(4)],
        h0.astype(np.float64),
        None if c0 is None else c0.astype(np.float64),
        2,
        1,
    )
    np.testing.assert_allclose(out.detach().numpy(), np.stack(routs, 1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h.detach().numpy(), rh, rtol=1e-4, atol=1e-5)


def test_float16_weights_compute_in_float32():
    rng = np.random.default_rng(13)
    m = nn.GRU(4, 6, num_layers=2)
    h = nn.GRU(4, 6, num_layers=2, dtype=rumus.float16)
    h.load_state_dict({k: v.to(rumus.float16) for k, v in m.state_dict().items()})
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    out16, h16 = h(rumus.from_numpy(x).to(rumus.float16))
    assert out16.dtype == rumus.float16 and h16.dtype == rumus.float16
    w = [
        tuple(None if a is None else a.astype(np.float16).astype(np.float64) for a in ws)
        for ws in module_weights(m)
    ]
    xs = [x[:, b].astype(np.float16).astype(np.float64) for b in range(2)]
    routs, _, _ = ref_rnn("GRU", w, xs, np.zeros((2, 2, 6)), None, 2, 1)
    np.testing.assert_allclose(out16.float().detach().numpy(), np.stack(routs, 1), atol=2e-3)


@pytest.mark.parametrize("mode", MODES)
def test_packed_unsorted_lengths_match_numpy(mode):
    rng = np.random.default_rng(3)
    IN, H, lengths = 3, 4, [2, 5, 1, 4]
    m = make(mode, IN, H, num_layers=2, bidirectional=True, dtype=rumus.float64)
    seqs = [rng.standard_normal((n, IN)) for n in lengths]
    packed = rnn_utils.pack_sequence([rumus.from_numpy(s) for s in seqs], enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [4, 3, 2, 2, 1]
    assert packed.sorted_indices.tolist() == [1, 3, 0, 2]
    assert packed.unsorted_indices.tolist() == [2, 0, 3, 1]
    h0, c0 = states(mode, m, len(lengths), rng)
    out, h, c = call(mode, m, packed, h0, c0)
    assert isinstance(out, rnn_utils.PackedSequence)
    assert out.sorted_indices.tolist() == [1, 3, 0, 2]
    routs, rh, rc = ref_rnn(mode, module_weights(m), seqs, h0, c0, 2, 2)
    padded, lens = rnn_utils.pad_packed_sequence(out, batch_first=True)
    assert lens.tolist() == lengths
    for b, n in enumerate(lengths):
        np.testing.assert_allclose(padded.detach().numpy()[b, :n], routs[b], rtol=1e-10, atol=1e-10)
        assert np.all(padded.detach().numpy()[b, n:] == 0)
    np.testing.assert_allclose(h.detach().numpy(), rh, rtol=1e-10, atol=1e-10)
    if c is not None:
        np.testing.assert_allclose(c.detach().numpy(), rc, rtol=1e-10, atol=1e-10)


def test_unbatched_input_and_default_states():
    rng = np.random.default_rng(4)
    m = nn.GRU(3, 4, num_layers=2, dtype=rumus.float64)
    x = rng.standard_normal((5, 3))
    out, h = m(rumus.from_numpy(x))
    assert out.shape == (5, 4) and h.shape == (2, 4)
    zeros = np.zeros((2, 1, 4))
    routs, rh, _ = ref_rnn("GRU", module_weights(m), [x], zeros, None, 2, 1)
    np.testing.assert_allclose(out.detach().numpy(), routs[0], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(h.detach().numpy(), rh[:, 0], rtol=1e-10, atol=1e-10)
    lstm = nn.LSTM(3, 4, batch_first=True, dtype=rumus.float64)
    out, (h, c) = lstm(rumus.from_numpy(x))
    assert out.shape == (5, 4) and h.shape == (1, 4) and c.shape == (1, 4)


@pytest.mark.parametrize("mode", ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"])
def test_cells_match_numpy(mode):
    rng = np.random.default_rng(5)
    IN, H, B = 3, 5, 4
    cls = {"LSTM": nn.LSTMCell, "GRU": nn.GRUCell}.get(mode, nn.RNNCell)
    kw = {"nonlinearity": "relu"} if mode == "RNN_RELU" else {}
    cell = cls(IN, H, dtype=rumus.float64, **kw)
    w = tuple(
        None if getattr(cell, n) is None else getattr(cell, n).detach().numpy()
        for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    ) + (None,)
    x, h0, c0 = (rng.standard_normal(s) for s in [(B, IN), (B, H), (B, H)])
    X, Hh, C = (rumus.from_numpy(a) for a in (x, h0, c0))
    got = cell(X, (Hh, C)) if mode == "LSTM" else cell(X, Hh)
    for b in range(B):
        rh, rc = ref_step(mode, x[b], h0[b], c0[b], w)
        if mode == "LSTM":
            np.testing.assert_allclose(got[0].detach().numpy()[b], rh, rtol=1e-12)
            np.testing.assert_allclose(got[1].detach().numpy()[b], rc, rtol=1e-12)
        else:
            np.testing.assert_allclose(got.detach().numpy()[b], rh, rtol=1e-12)
    # Unbatched input and a default zero state.
    one = cell(X[0])
    rh, _ = ref_step(mode, x[0], np.zeros(H), np.zeros(H), w)
    np.testing.assert_allclose((one[0] if mode == "LSTM" else one).detach().numpy(), rh, rtol=1e-12)


# ---------------------------------------------------------------- gradients
def _layer_fn(mode, bs, reverse, has_hr=False):
    def f(x, w_ih, w_hh, b_ih, b_hh, *rest):
        if has_hr:
            w_hr, rest = rest[0], rest[1:]
        else:
            w_hr = None
        h0 = rest[0]
        c0 = rest[1] if mode == "LSTM" else None
        return tuple(
            rumus._rumus._rnn_layer(mode, x, w_ih, w_hh, b_ih, b_hh, w_hr, h0, c0, bs, reverse)
        )

    return f


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("reverse", [False, True])
def test_layer_gradcheck(mode, reverse):
    rng = np.random.default_rng(6)
    g = {"LSTM": 4, "GRU": 3}.get(mode, 1)
    IN, H, bs = 3, 4, [3, 3, 2, 1]
    rows, B = sum(bs), bs[0]

    def t(*s):
        return rumus.from_numpy(rng.standard_normal(s) * 0.6).requires_grad_()

    ins = [t(rows, IN), t(g * H, IN), t(g * H, H), t(g * H), t(g * H), t(B, H)]
    if mode == "LSTM":
        ins.append(t(B, H))
    assert gradcheck(_layer_fn(mode, bs, reverse), ins, eps=1e-6, atol=1e-6)


def test_lstm_proj_gradcheck():
    rng = np.random.default_rng(7)
    IN, H, P, bs = 3, 4, 2, [2, 2, 1]

    def t(*s):
        return rumus.from_numpy(rng.standard_normal(s) * 0.6).requires_grad_()

    ins = [t(5, IN), t(4 * H, IN), t(4 * H, P), t(4 * H), t(4 * H), t(P, H), t(2, P), t(2, H)]
    assert gradcheck(_layer_fn("LSTM", bs, True, has_hr=True), ins, eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_module_gradcheck_bidirectional_packed(mode):
    rng = np.random.default_rng(8)
    m = make(mode, 2, 3, num_layers=2, bidirectional=True, dtype=rumus.float64)
    lengths = [2, 3, 1]
    x = rumus.from_numpy(rng.standard_normal((3, 3, 2))).requires_grad_()

    def f(x):
        packed = rnn_utils.pack_padded_sequence(x, lengths, enforce_sorted=False)
        out, hid = m(packed)
        padded, _ = rnn_utils.pad_packed_sequence(out)
        return (padded, *(hid if isinstance(hid, tuple) else (hid,)))

    # The input through packing, both directions, two layers and unpacking (the
    # weights are checked per layer above).
    assert gradcheck(f, [x], eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_weight_grads_match_numpy_differences(mode):
    rng = np.random.default_rng(9)
    m = make(mode, 2, 3, num_layers=2, bidirectional=True, dtype=rumus.float64)
    x = rng.standard_normal((4, 2, 2))
    h0, c0 = states(mode, m, 2, rng)
    proj = rng.standard_normal((4, 2, 6))
    out, h, c = call(mode, m, rumus.from_numpy(x), h0, c0)
    (out * rumus.from_numpy(proj)).sum().backward()

    def loss(ws):
        routs, _, _ = ref_rnn(mode, ws, [x[:, b] for b in range(2)], h0, c0, 2, 2)
        return float((np.stack(routs, 1) * proj).sum())

    ws = module_weights(m)
    names = ["weight_ih_l1_reverse", "weight_hh_l0", "bias_hh_l1"]
    where = {"weight_ih_l1_reverse": (3, 0), "weight_hh_l0": (0, 1), "bias_hh_l1": (2, 3)}
    for name in names:
        k, slot = where[name]
        grad = getattr(m, name).grad.detach().numpy()
        num = np.zeros_like(grad)
        for idx in np.ndindex(grad.shape):
            for sgn in (1, -1):
                w2 = [list(w) for w in ws]
                a = w2[k][slot].copy()
                a[idx] += sgn * 1e-6
                w2[k][slot] = a
                num[idx] += sgn * loss([tuple(w) for w in w2]) / 2e-6
        np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-7, err_msg=name)


def test_double_backward_is_refused():
    m = nn.GRU(2, 3, dtype=rumus.float64)
    x = rumus.randn(3, 1, 2, dtype=rumus.float64, requires_grad=True)
    out, _ = m(x)
    with pytest.raises(RuntimeError, match="double backward"):
        rumus.autograd.grad(out.sum(), x, create_graph=True)


def test_dropout_between_layers_only_in_training():
    m = nn.LSTM(4, 8, num_layers=3, dropout=0.5)
    x = rumus.randn(5, 2, 4)
    m.eval()
    a, _ = m(x)
    b, _ = m(x)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    m.train()
    c, _ = m(x)
    assert not np.allclose(a.detach().numpy(), c.detach().numpy())


# ---------------------------------------------------------------- module API
def test_state_dict_keys_and_init():
    m = nn.LSTM(10, 20, num_layers=2, bidirectional=True, proj_size=5)
    keys = list(m.state_dict().keys())
    want = []
    for layer in range(2):
        for sfx in ("", "_reverse"):
            want += [
                f"weight_ih_l{layer}{sfx}",
                f"weight_hh_l{layer}{sfx}",
                f"bias_ih_l{layer}{sfx}",
                f"bias_hh_l{layer}{sfx}",
                f"weight_hr_l{layer}{sfx}",
            ]
    assert keys == want
    bound = 1 / np.sqrt(20)
    for p in m.parameters():
        v = p.detach().numpy()
        assert v.min() >= -bound and v.max() <= bound and v.std() > bound / 4
    g = nn.GRU(3, 4, bias=False)
    assert list(g.state_dict()) == ["weight_ih_l0", "weight_hh_l0"]
    assert list(nn.LSTMCell(3, 4).state_dict()) == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    assert repr(m) == "LSTM(10, 20, proj_size=5, num_layers=2, bidirectional=True)"
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, nonlinearity=relu)"


def test_torch_module_path():
    from rumus.nn.modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell

    assert (RNN, LSTM, GRU) == (nn.RNN, nn.LSTM, nn.GRU)
    assert (RNNCell, LSTMCell, GRUCell) == (nn.RNNCell, nn.LSTMCell, nn.GRUCell)
    assert issubclass(LSTM, RNNBase)
    assert rumus.nn.utils.rnn.PackedSequence is rnn_utils.PackedSequence


def test_training_step_reduces_loss():
    rumus.manual_seed(0)
    m = nn.LSTM(3, 8, batch_first=True)
    head = nn.Linear(8, 1)
    opt = rumus.optim.SGD(list(m.parameters()) + list(head.parameters()), lr=0.1)
    x = rumus.randn(16, 6, 3)
    y = x.sum(dim=(1, 2)).reshape(16, 1) * 0.1
    losses = []
    for _ in range(30):
        opt.zero_grad()
        out, _ = m(x)
        loss = ((head(out[:, -1]) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.75


# ---------------------------------------------------------------- bad input
def test_bad_hidden_shapes():
    m = nn.GRU(4, 6, num_layers=2)
    x = rumus.randn(5, 3, 4)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(2, 3, 6\), got \[1, 3, 6\]"):
        m(x, rumus.zeros(1, 3, 6))
    with pytest.raises(RuntimeError, match="batched 3-D input, hx should also be 3-D"):
        m(x, rumus.zeros(3, 6))
    lstm = nn.LSTM(4, 6)
    with pytest.raises(
        RuntimeError, match=r"Expected hidden\[1\] size \(1, 3, 6\), got \[1, 3, 5\]"
    ):
        lstm(x, (rumus.zeros(1, 3, 6), rumus.zeros(1, 3, 5)))
    cell = nn.LSTMCell(4, 6)
    with pytest.raises(
        RuntimeError, match="hidden1 has inconsistent hidden_size: got 5, expected 6"
    ):
        cell(rumus.randn(3, 4), (rumus.zeros(3, 6), rumus.zeros(3, 5)))
    with pytest.raises(RuntimeError, match="Input batch size 3 doesn't match hidden0 batch size 2"):
        nn.GRUCell(4, 6)(rumus.randn(3, 4), rumus.zeros(2, 6))


def test_bad_input_size_and_dims():
    m = nn.RNN(4, 6)
    with pytest.raises(
        RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 4, got 5"
    ):
        m(rumus.randn(2, 3, 5))
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D, got 4D"):
        m(rumus.randn(2, 3, 4, 1))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 expected 4"):
        nn.RNNCell(4, 6)(rumus.randn(2, 5))
    with pytest.raises(ValueError, match="must have the type"):
        m(rumus.randn(2, 3, 4, dtype=rumus.float64))
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(4, 6, proj_size=6)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNN(4, 6, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.GRU(4, 6, dropout=1.5)
    with pytest.raises(RuntimeError, match=r"expected weight_hh of size \[12, 12\], got \[12, 4\]"):
        rumus._rumus._rnn_layer(
            "RNN_TANH",
            rumus.randn(4, 2),
            rumus.randn(12, 2),
            rumus.randn(12, 4),
            None,
            None,
            None,
            rumus.zeros(2, 12),
            None,
            [2, 2],
            False,
        )


def test_unsorted_lengths_with_enforce_sorted():
    x = rumus.randn(4, 3, 2)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        rnn_utils.pack_padded_sequence(x, [2, 4, 1])
    with pytest.raises(
        ValueError, match="Expected `len\\(lengths\\)` to be equal to batch_size, but got 2"
    ):
        rnn_utils.pack_padded_sequence(x, [2, 1])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        rnn_utils.pack_padded_sequence(x, [2, 1, 0])
    packed = rnn_utils.pack_padded_sequence(x, [4, 2, 1])
    with pytest.raises(ValueError, match="total_length=3 and max sequence length being 4"):
        rnn_utils.pad_packed_sequence(packed, total_length=3)


# ---------------------------------------------------------------- utils
def test_pad_sequence_sides_and_values():
    a, b = rumus.tensor([[1.0], [2.0], [3.0]]), rumus.tensor([[4.0]])
    out = rnn_utils.pad_sequence([a, b], padding_value=-1.0)
    assert out.shape == (3, 2, 1)
    assert out[:, :, 0].tolist() == [[1.0, 4.0], [2.0, -1.0], [3.0, -1.0]]
    out = rnn_utils.pad_sequence([a, b], batch_first=True, padding_side="left")
    assert out[:, :, 0].tolist() == [[1.0, 2.0, 3.0], [0.0, 0.0, 4.0]]
    with pytest.raises(ValueError, match="padding_side"):
        rnn_utils.pad_sequence([a, b], padding_side="middle")


def test_pack_pad_round_trip_and_gradient():
    rng = np.random.default_rng(10)
    x = rumus.from_numpy(rng.standard_normal((3, 4, 2))).requires_grad_()  # batch_first
    lengths = rumus.tensor([2, 4, 1])
    packed = rnn_utils.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 2, 1, 1]
    assert packed.data.shape == (7, 2)
    np.testing.assert_array_equal(
        packed.data.detach().numpy()[:3], x.detach().numpy()[[1, 0, 2], 0]
    )
    padded, lens = rnn_utils.pad_packed_sequence(packed, batch_first=True, total_length=5)
    assert padded.shape == (3, 5, 2) and lens.tolist() == [2, 4, 1]
    want = x.detach().numpy().copy()
    for b, n in enumerate([2, 4, 1]):
        want[b, n:] = 0
    np.testing.assert_array_equal(padded.detach().numpy()[:, :4], want)
    padded.sum().backward()
    mask = np.zeros((3, 4, 2))
    for b, n in enumerate([2, 4, 1]):
        mask[b, :n] = 1
    np.testing.assert_array_equal(x.grad.detach().numpy(), mask)
    seqs = rnn_utils.unpack_sequence(packed)
    assert [s.shape[0] for s in seqs] == [2, 4, 1]
    np.testing.assert_array_equal(seqs[1].detach().numpy(), x.detach().numpy()[1])
    un = rnn_utils.unpad_sequence(padded, lens, batch_first=True)
    assert [s.shape[0] for s in un] == [2, 4, 1]
    assert rnn_utils.invert_permutation(rumus.tensor([2, 0, 1])).tolist() == [1, 2, 0]


# ---------------------------------------------------------------- PyTorch
@pytest.mark.parametrize("mode", MODES)
def test_matches_pytorch(mode):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    kw = dict(num_layers=2, bidirectional=True, batch_first=True)
    if mode == "LSTM":
        kw["proj_size"] = 3
    tm = {"LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU}.get(mode)
    if tm is None:

        def tm(*a, **k):
            return torch.nn.RNN(*a, nonlinearity="relu" if mode == "RNN_RELU" else "tanh", **k)

    t = tm(4, 5, **kw).double()
    m = make(mode, 4, 5, dtype=rumus.float64, **kw)
    m.load_state_dict(
        {k: rumus.from_numpy(v.detach().numpy().copy()) for k, v in t.state_dict().items()}
    )
    assert list(m.state_dict()) == list(t.state_dict())
    x = rng.standard_normal((3, 6, 4))
    tx = torch.tensor(x, requires_grad=True)
    rx = rumus.from_numpy(x.copy()).requires_grad_()
    to, _ = t(tx)
    ro, _ = m(rx)
    np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-10)
    w = rng.standard_normal(to.shape)
    (to * torch.tensor(w)).sum().backward()
    (ro * rumus.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(
        rx.grad.detach().numpy(), tx.grad.detach().numpy(), rtol=1e-9, atol=1e-10
    )
    for name, p in t.named_parameters():
        np.testing.assert_allclose(
            getattr(m, name).grad.detach().numpy(),
            p.grad.detach().numpy(),
            rtol=1e-9,
            atol=1e-10,
            err_msg=name,
        )


# ---------------------------------------------------------------- GPU
@pytest.mark.parametrize("mode", MODES)
def test_gpu_parity(mode):
    need_gpu()
    rng = np.random.default_rng(12)
    m = make(mode, 3, 4, num_layers=2, bidirectional=True)
    g = make(mode, 3, 4, num_layers=2, bidirectional=True)
    g.load_state_dict(m.state_dict())
    g.to("gpu")
    x = rng.standard_normal((5, 2, 3)).astype(np.float32)
    cx = rumus.from_numpy(x).requires_grad_()
    gx = rumus.from_numpy(x).to("gpu").requires_grad_()
    co, _ = m(cx)
    go, _ = g(gx)
    np.testing.assert_allclose(
        go.to("cpu").detach().numpy(), co.detach().numpy(), rtol=1e-4, atol=1e-5
    )
    co.sum().backward()
    go.sum().backward()
    np.testing.assert_allclose(
        gx.grad.to("cpu").detach().numpy(), cx.grad.detach().numpy(), rtol=1e-4, atol=1e-5
    )
    np.testing.assert_allclose(
        g.weight_hh_l0.grad.to("cpu").detach().numpy(),
        m.weight_hh_l0.grad.detach().numpy(),
        rtol=1e-4,
        atol=1e-5,
    )
    packed = rnn_utils.pack_sequence(
        [rumus.from_numpy(x[:, 0]).to("gpu"), rumus.from_numpy(x[:3, 1]).to("gpu")]
    )
    po, _ = g(packed)
    cpacked = rnn_utils.pack_sequence([rumus.from_numpy(x[:, 0]), rumus.from_numpy(x[:3, 1])])
    cpo, _ = m(cpacked)
    np.testing.assert_allclose(
        po.data.to("cpu").detach().numpy(), cpo.data.detach().numpy(), rtol=1e-4, atol=1e-5
    )
