"""rumus.onnx.export of nn.RNN / nn.LSTM / nn.GRU: one ONNX RNN/LSTM/GRU node per layer, run in
onnxruntime at another batch size than the traced one, outputs and final states matching."""

import io

import numpy as np
import pytest
import rumus
import rumus.nn as nn
import rumus.onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

_KINDS = {
    "rnn_tanh": (nn.RNN, {}, "RNN"),
    "rnn_relu": (nn.RNN, {"nonlinearity": "relu"}, "RNN"),
    "lstm": (nn.LSTM, {}, "LSTM"),
    "gru": (nn.GRU, {}, "GRU"),
}


def _export(model, args, **kwargs):
    buf = io.BytesIO()
    rumus.onnx.export(model, args, buf, **kwargs)
    proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    return proto


def _run(proto, feeds):
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {k: v.numpy() for k, v in feeds.items()})


def _flat(out):
    """(output, h_n) or (output, (h_n, c_n)) -> [output, h_n(, c_n)]."""
    y, st = out
    return [y, *st] if isinstance(st, tuple) else [y, st]


def _compare(got, expected):
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-5, atol=1e-6)


def _rnn_nodes(proto):
    return [n.op_type for n in proto.graph.node if n.op_type in ("RNN", "LSTM", "GRU")]


def _seq(batch_first, batch, steps=5, size=3):
    return rumus.randn(batch, steps, size) if batch_first else rumus.randn(steps, batch, size)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("kind", list(_KINDS))
def test_default_states(kind, num_layers, bidirectional, batch_first):
    rumus.manual_seed(0)
    cls, kw, op = _KINDS[kind]
    model = cls(
        3, 4, num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first, **kw
    ).eval()
    ax = 0 if batch_first else 1
    proto = _export(
        model, (_seq(batch_first, 2),), input_names=["x"], dynamic_axes={"x": {ax: "batch"}}
    )
    assert _rnn_nodes(proto) == [op] * num_layers  # not unrolled
    node = next(n for n in proto.graph.node if n.op_type == op)
    assert len(node.input) <= 4  # no initial_h / initial_c: ONNX's zeros, any batch size
    x = _seq(batch_first, 3)
    with rumus.no_grad():
        expected = _flat(model(x))
    _compare(_run(proto, {"x": x}), expected)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("kind", list(_KINDS))
def test_user_states(kind, num_layers, bidirectional, batch_first):
    rumus.manual_seed(1)
    cls, kw, op = _KINDS[kind]
    model = cls(
        3, 4, num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first, **kw
    ).eval()
    lstm = kind == "lstm"
    layers = num_layers * (2 if bidirectional else 1)

    def inputs(batch):
        x = _seq(batch_first, batch)
        states = [rumus.randn(layers, batch, 4) for _ in range(2 if lstm else 1)]
        return x, states

    class Wrap(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = model

        def forward(self, x, h, c=None):
            return self.rnn(x, (h, c) if lstm else h)

    names = ["x", "h0", "c0"][: 3 if lstm else 2]
    dyn = {"x": {0 if batch_first else 1: "batch"}, **{n: {1: "batch"} for n in names[1:]}}
    x, states = inputs(2)
    wrap = Wrap().eval()
    proto = _export(wrap, (x, *states), input_names=names, dynamic_axes=dyn)
    assert _rnn_nodes(proto) == [op] * num_layers
    x, states = inputs(3)
    with rumus.no_grad():
        expected = _flat(wrap(x, *states))
    _compare(_run(proto, dict(zip(names, [x, *states]))), expected)


@pytest.mark.parametrize("kind", list(_KINDS))
def test_no_bias_unbatched_and_no_constant_folding(kind):
    rumus.manual_seed(2)
    cls, kw, op = _KINDS[kind]
    model = cls(3, 4, num_layers=2, bidirectional=True, bias=False, **kw).eval()
    x = rumus.randn(5, 3)  # unbatched (seq, input)
    for fold in (True, False):
        proto = _export(model, (x,), input_names=["x"], do_constant_folding=fold)
        assert _rnn_nodes(proto) == [op, op]
        inits = {t.name for t in proto.graph.initializer}
        # Without folding, the rearranged weights are computed in the graph from the parameters.
        assert ("weight_ih_l0" in inits) == (not fold)
        with rumus.no_grad():
            expected = _flat(model(x))
        _compare(_run(proto, {"x": x}), expected)


def test_rnn_inside_a_model():
    rumus.manual_seed(3)

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 6)
            self.lstm = nn.LSTM(6, 8, num_layers=2, batch_first=True, bidirectional=True)
            self.head = nn.Linear(16, 3)

        def forward(self, tokens):
            y, (h, _) = self.lstm(self.emb(tokens))
            return self.head(y), h.sum(0)

    model = Tagger().eval()
    proto = _export(
        model, (rumus.randint(0, 10, (2, 7)),), input_names=["t"], dynamic_axes={"t": [0, 1]}
    )
    tokens = rumus.randint(0, 10, (4, 9))  # other batch size and sequence length
    with rumus.no_grad():
        expected = model(tokens)
    _compare(_run(proto, {"t": tokens}), list(expected))


def test_training_mode_dropout_between_layers():
    model = nn.GRU(3, 4, num_layers=3, dropout=0.5)
    proto = _export(model, (rumus.randn(5, 2, 3),), training=rumus.onnx.TrainingMode.TRAINING)
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("GRU") == 3 and ops.count("Dropout") == 2  # not after the last layer
    model.eval()
    proto = _export(model, (rumus.randn(5, 2, 3),))
    assert "Dropout" not in {n.op_type for n in proto.graph.node}


def test_proj_size_raises():
    model = nn.LSTM(3, 4, proj_size=2).eval()
    with pytest.raises(rumus.onnx.UnsupportedOperatorError, match="proj_size"):
        _export(model, (rumus.randn(5, 2, 3),))


def test_packed_sequence_raises():
    from rumus.nn.utils.rnn import pack_padded_sequence

    class Packed(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(3, 4)

        def forward(self, x):
            return self.gru(pack_padded_sequence(x, [5, 3]))[1]

    with pytest.raises(rumus.onnx.UnsupportedOperatorError, match="PackedSequence"):
        _export(Packed().eval(), (rumus.randn(5, 2, 3),))


_CELLS = {
    "rnn_tanh": (nn.RNNCell, {}, "RNN"),
    "rnn_relu": (nn.RNNCell, {"nonlinearity": "relu"}, "RNN"),
    "lstm": (nn.LSTMCell, {}, "LSTM"),
    "gru": (nn.GRUCell, {}, "GRU"),
}


@pytest.mark.parametrize("with_state", [False, True])
@pytest.mark.parametrize("kind", list(_CELLS))
def test_cells(kind, with_state):
    rumus.manual_seed(4)
    cls, kw, op = _CELLS[kind]
    cell = cls(3, 4, **kw).eval()
    lstm = kind == "lstm"

    class Loop(nn.Module):
        """A user's time loop over the cell: one ONNX node per step."""

        def __init__(self):
            super().__init__()
            self.cell = cell

        def forward(self, x, *state):
            s = (tuple(state) if lstm else state[0]) if state else None
            for t in range(x.shape[0]):
                s = self.cell(x[t], s)
            return s

    def inputs(batch):
        x = rumus.randn(3, batch, 3)
        states = [rumus.randn(batch, 4) for _ in range(2 if lstm else 1)] if with_state else []
        return [x, *states]

    names = ["x", "h0", "c0"][: len(inputs(1))]
    dyn = {"x": {1: "batch"}, **{n: {0: "batch"} for n in names[1:]}}
    model = Loop().eval()
    proto = _export(model, tuple(inputs(2)), input_names=names, dynamic_axes=dyn)
    assert _rnn_nodes(proto) == [op] * 3
    feeds = inputs(5)
    with rumus.no_grad():
        expected = model(*feeds)
    _compare(_run(proto, dict(zip(names, feeds))), list(expected) if lstm else [expected])


@pytest.mark.parametrize("kind", list(_CELLS))
def test_cell_unbatched_no_bias_no_folding(kind):
    rumus.manual_seed(5)
    cls, kw, _ = _CELLS[kind]
    cell = cls(3, 4, bias=False, **kw).eval()
    x = rumus.randn(3)
    proto = _export(cell, (x,), input_names=["x"], do_constant_folding=False)
    assert "weight_ih" in {t.name for t in proto.graph.initializer}
    with rumus.no_grad():
        expected = cell(x)
    _compare(_run(proto, {"x": x}), list(expected) if kind == "lstm" else [expected])
