"""Exporter of nn.RNN / nn.LSTM / nn.GRU as ONNX's RNN / LSTM / GRU operators (one per layer,
not an unrolled loop), and of the cells' steps as the same operators over one time step.

The tracer records ``RNNBase._forward`` and ``RNNCellBase._step`` as one call each (the engine
runs a layer's time loop in one native call that the Python-level trace cannot see). The
weights are PyTorch's, rearranged into ONNX's layout: (num_directions, gates * hidden, in)
with the gate blocks reordered, and B = [b_ih, b_hh]. Without user states the initial_h /
initial_c inputs are left out: ONNX then starts from zeros, as PyTorch does, whatever the
batch size.
"""

import numpy as np

from ..nn.utils.rnn import PackedSequence
from ._ops import UnsupportedOperatorError, exporter

# Where ONNX's gate blocks sit among PyTorch's: LSTM (i, f, g, o) -> (i, o, f, c),
# GRU (r, z, n) -> (z, r, h).
_ORDER = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN_TANH": [0], "RNN_RELU": [0]}
_OP = {"LSTM": "LSTM", "GRU": "GRU", "RNN_TANH": "RNN", "RNN_RELU": "RNN"}


def _gates(g, p, order, fold):
    """``p``'s row blocks in ONNX's order: an array when folding constants, else a value."""
    n = len(order)
    if fold:
        blocks = np.split(g._np(p), n)
        return np.concatenate([blocks[i] for i in order])
    v = g.v(p)
    if order == list(range(n)):
        return v
    h = p.shape[0] // n
    parts = [g.op("Slice", v, g.ints([i * h]), g.ints([(i + 1) * h]), g.ints([0])) for i in order]
    return g.op("Concat", *parts, axis=0)


def _stack(g, per_dir, fold):
    """One tensor per direction -> stacked on a new leading axis."""
    if fold:
        return g.const(np.stack(per_dir))
    ups = [g.op("Unsqueeze", v, g.ints([0])) for v in per_dir]
    return ups[0] if len(ups) == 1 else g.op("Concat", *ups, axis=0)


def _weights(g, mod, mode, suffixes, fold):
    """W, R and B (or "" without bias) of the directions whose parameters end in ``suffixes``."""
    order = _ORDER[mode]
    ws, rs, bs = [], [], []
    for sfx in suffixes:
        ws.append(_gates(g, getattr(mod, "weight_ih" + sfx), order, fold))
        rs.append(_gates(g, getattr(mod, "weight_hh" + sfx), order, fold))
        if mod.bias:
            b_ih = _gates(g, getattr(mod, "bias_ih" + sfx), order, fold)
            b_hh = _gates(g, getattr(mod, "bias_hh" + sfx), order, fold)
            bs.append(np.concatenate([b_ih, b_hh]) if fold else g.op("Concat", b_ih, b_hh, axis=0))
    b = _stack(g, bs, fold) if bs else ""
    return _stack(g, ws, fold), _stack(g, rs, fold), b


def _attrs(mode, hidden_size, dirs):
    attrs = {"hidden_size": hidden_size, "direction": "bidirectional" if dirs == 2 else "forward"}
    if mode == "GRU":
        attrs["linear_before_reset"] = 1  # PyTorch applies r after W_hn h + b_hn
    elif mode != "LSTM":
        attrs["activations"] = ["Tanh" if mode == "RNN_TANH" else "Relu"] * dirs
    return attrs


def _inputs(x, w, r, b, h0, c0):
    """The ONNX op's inputs, sequence_lens left out, trailing missing ones dropped."""
    ins = [x, w, r, b, "", h0, c0]
    while ins[-1] in ("", None):
        ins.pop()
    return ["" if v is None else v for v in ins]


@exporter("nn.RNNBase._forward")
def _rnn_forward(g, mod, input, hx, cx, lstm):
    name = type(mod).__name__
    if isinstance(input, PackedSequence):
        raise UnsupportedOperatorError(
            f"rumus.onnx.export: {name} on a PackedSequence has no exporter; pass a padded "
            "tensor instead"
        )
    if mod.proj_size:
        raise UnsupportedOperatorError(
            f"rumus.onnx.export: {name} with proj_size={mod.proj_size} has no ONNX equivalent "
            "(ONNX's LSTM has no projection)"
        )
    lstm = mod.mode == "LSTM"
    dirs = 2 if mod.bidirectional else 1
    batched = input.dim() == 3
    fold = id(mod.weight_ih_l0) not in g.tracer.names  # parameters are traced when not folding
    x = g.v(input)
    if not batched:  # (seq, input) -> (seq, 1, input)
        x = g.op("Unsqueeze", x, g.ints([1]))
    elif mod.batch_first:
        x = g.op("Transpose", x, perm=[1, 0, 2])

    def state(s):
        if s is None:
            return None
        v = g.v(s)
        return v if batched else g.op("Unsqueeze", v, g.ints([1]))

    def layer_state(v, layer):
        if v is None:
            return None
        if mod.num_layers == 1:
            return v
        return g.op("Slice", v, g.ints([layer * dirs]), g.ints([(layer + 1) * dirs]), g.ints([0]))

    h0, c0 = state(hx), state(cx)
    attrs = _attrs(mod.mode, mod.hidden_size, dirs)
    hs, cs = [], []
    for layer in range(mod.num_layers):
        sfxs = [f"_l{layer}", f"_l{layer}_reverse"][:dirs]
        w, r, b = _weights(g, mod, mod.mode, sfxs, fold)
        ins = _inputs(x, w, r, b, layer_state(h0, layer), layer_state(c0, layer) if lstm else None)
        outs = g.op(_OP[mod.mode], *ins, n=3 if lstm else 2, **attrs)
        hs.append(outs[1])
        if lstm:
            cs.append(outs[2])
        # Y (seq, dirs, batch, hidden) -> (seq, batch, dirs * hidden): the next layer's input.
        x = g.op("Reshape", g.op("Transpose", outs[0], perm=[0, 2, 1, 3]), g.ints([0, 0, -1]))
        if mod.dropout and mod.training and layer < mod.num_layers - 1:
            x = g.op("Dropout", x, g.scalar(mod.dropout, input), g.const(np.array(True)))
    finals = [
        v[0] if len(v) == 1 else g.op("Concat", *v, axis=0) for v in ([hs, cs] if lstm else [hs])
    ]
    if not batched:
        x = g.op("Squeeze", x, g.ints([1]))
        finals = [g.op("Squeeze", v, g.ints([1])) for v in finals]
    elif mod.batch_first:
        x = g.op("Transpose", x, perm=[1, 0, 2])
    return [x, *finals]


@exporter("nn.RNNCellBase._step")
def _cell_step(g, mod, mode, input, states):
    """One step of RNNCell / LSTMCell / GRUCell: the ONNX op over a sequence of length 1."""
    lstm = mode == "LSTM"
    axes = g.ints([0] if input.dim() == 2 else [0, 1])  # (batch, n) or (n,) -> (1, batch, n)
    fold = id(mod.weight_ih) not in g.tracer.names
    x = g.op("Unsqueeze", g.v(input), axes)
    h0, c0 = [None if s is None else g.op("Unsqueeze", g.v(s), axes) for s in [*states, None][:2]]
    w, r, b = _weights(g, mod, mode, [""], fold)
    ins = _inputs(x, w, r, b, h0, c0 if lstm else None)
    outs = g.op(_OP[mode], *ins, n=3 if lstm else 2, **_attrs(mode, mod.hidden_size, 1))
    return [g.op("Squeeze", v, axes) for v in outs[1:]]
