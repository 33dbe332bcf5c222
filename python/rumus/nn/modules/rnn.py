"""Recurrent layers: RNN, LSTM, GRU and their cells (PyTorch's ``torch.nn.modules.rnn``).

Parameter names, shapes, gate orders and initialisation are PyTorch's, so state
dicts load either way. Each layer and direction is one call into Rust, which
runs the whole time loop (and, on the CPU, backward through time); this file
only stacks layers and directions, applies dropout between layers and handles
batch_first, unbatched input and PackedSequence.
"""

import math
import numbers
import warnings

import rumus
from rumus import _rumus

from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _state_dims_error(kind, nd, states, lstm):
    if lstm:
        dims = ", ".join(f"{s.dim()}-D" for s in states)
        return f"For {kind} input, hx and cx should also be {nd}-D but got ({dims}) tensors"
    return f"For {kind} input, hx should also be {nd}-D but got {states[0].dim()}-D tensor"


def _batch_sizes_list(batch_sizes):
    return [int(b) for b in batch_sizes.tolist()]


class RNNBase(Module):
    """The shared machinery of RNN, LSTM and GRU: multi-layer, optionally bidirectional.

    Args:
        mode: "RNN_TANH", "RNN_RELU", "LSTM" or "GRU".
        input_size: the number of features of the input x.
        hidden_size: the number of features of the hidden state h.
        num_layers: the number of stacked recurrent layers.
        bias: whether the layers have the biases b_ih and b_hh.
        batch_first: if True, input and output are (batch, seq, feature).
        dropout: the dropout probability applied to the outputs of every layer but the last.
        bidirectional: if True, each layer also runs backwards in time.
        proj_size: if > 0 (LSTM only), h is projected to this size.
        device: the device of the parameters.
        dtype: the dtype of the parameters.
    """

    def __init__(
        self,
        mode,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        proj_size=0,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if (
            not isinstance(dropout, numbers.Number)
            or isinstance(dropout, bool)
            or not 0 <= dropout <= 1
        ):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an "
                "element being zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}",
                stacklevel=2,
            )
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections"
            )
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gate_size = _GATES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(dirs):
                layer_input = input_size if layer == 0 else real_hidden * dirs
                sfx = "_reverse" if direction == 1 else ""
                shapes = [
                    (f"weight_ih_l{layer}{sfx}", (gate_size, layer_input)),
                    (f"weight_hh_l{layer}{sfx}", (gate_size, real_hidden)),
                ]
                if bias:
                    shapes += [
                        (f"bias_ih_l{layer}{sfx}", (gate_size,)),
                        (f"bias_hh_l{layer}{sfx}", (gate_size,)),
                    ]
                if proj_size > 0:
                    shapes.append((f"weight_hr_l{layer}{sfx}", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name, Parameter(rumus.empty(shape, device=device, dtype=dtype)))
                names = [n for n, _ in shapes]
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters, one list per layer and direction (weights, biases, projection)."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self):
        """A no-op kept for PyTorch scripts (rumus keeps no fused weight buffer)."""

    def reset_parameters(self):
        """Re-initializes every parameter from U(-1/√hidden_size, 1/√hidden_size)."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    # ------------------------------------------------------------ checks
    def check_input(self, input, batch_sizes):
        """Checks the input's dimensions, feature size and dtype.

        Args:
            input: the input tensor (or the data of a packed sequence).
            batch_sizes: the batch sizes of a packed sequence, or None.

        Raises:
            RuntimeError: on a wrong number of dimensions or feature size.
            ValueError: on a dtype that differs from the weights'.
        """
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                f"got {input.shape[-1]}"
            )
        w = self.weight_ih_l0
        if input.dtype != w.dtype:
            raise ValueError(f"input must have the type {w.dtype}, got type {input.dtype}")

    def get_expected_hidden_size(self, input, batch_sizes):
        """The shape the hidden state must have for this input.

        Args:
            input: the input tensor (or the data of a packed sequence).
            batch_sizes: the batch sizes of a packed sequence, or None.

        Returns:
            (num_layers * num_directions, batch, hidden_size or proj_size).
        """
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        dirs = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * dirs, mini_batch, real_hidden)

    def check_hidden_size(self, hx, expected, msg="Expected hidden size {}, got {}"):
        """Raises if hx does not have the expected shape.

        Args:
            hx: a hidden state.
            expected: the expected shape.
            msg: the error message, formatted with the expected and actual shapes.

        Raises:
            RuntimeError: if the shapes differ.
        """
        if tuple(hx.shape) != tuple(expected):
            raise RuntimeError(msg.format(tuple(expected), list(hx.shape)))

    def check_forward_args(self, input, hidden, batch_sizes):
        """Checks the input and the hidden state before a forward pass.

        Args:
            input: the input tensor (or the data of a packed sequence).
            hidden: the initial hidden state.
            batch_sizes: the batch sizes of a packed sequence, or None.
        """
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        """Reorders the batch dimension (dim 1) of a hidden state.

        Args:
            hx: a hidden state (num_layers * num_directions, batch, hidden).
            permutation: the batch indices, or None to return hx unchanged.

        Returns:
            The reordered hidden state.
        """
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    # ------------------------------------------------------------ the run
    def _run(self, data, batch_sizes, h0, c0):
        """Every layer and direction over packed rows: (output rows, h_n, c_n)."""
        dirs = 2 if self.bidirectional else 1
        x, hns, cns = data, [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                sfx = "_reverse" if d else ""
                get = lambda n: getattr(self, f"{n}_l{layer}{sfx}", None)  # noqa: E731
                res = _rumus._rnn_layer(
                    self.mode,
                    x,
                    get("weight_ih"),
                    get("weight_hh"),
                    get("bias_ih"),
                    get("bias_hh"),
                    get("weight_hr"),
                    h0[k],
                    None if c0 is None else c0[k],
                    batch_sizes,
                    d == 1,
                )
                outs.append(res[0])
                hns.append(res[1])
                if c0 is not None:
                    cns.append(res[2])
            x = outs[0] if dirs == 1 else rumus.cat(outs, 1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, rumus.stack(hns, 0), (rumus.stack(cns, 0) if c0 is not None else None)

    def _forward(self, input, hx, cx, lstm):
        """The shared forward; hx / cx are None or the user's states."""
        packed = isinstance(input, PackedSequence)
        if packed:
            data, bs_t, sorted_indices, unsorted_indices = input
            batch_sizes = _batch_sizes_list(bs_t)
            batched = True
        else:
            name = type(self).__name__
            if input.dim() not in (2, 3):
                raise ValueError(
                    f"{name}: Expected input to be 2D or 3D, got {input.dim()}D tensor instead"
                )
            batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not batched:
                input = input.unsqueeze(batch_dim)
                states = [s for s in (hx, cx) if s is not None]
                if any(s.dim() != 2 for s in states):
                    raise RuntimeError(_state_dims_error("unbatched 2-D", 2, states, lstm))
                hx = None if hx is None else hx.unsqueeze(1)
                cx = None if cx is None else cx.unsqueeze(1)
            else:
                states = [s for s in (hx, cx) if s is not None]
                if any(s.dim() != 3 for s in states):
                    raise RuntimeError(_state_dims_error("batched 3-D", 3, states, lstm))
            sorted_indices = unsorted_indices = None
            batch_sizes = None
            data = input
        self.check_input(data, batch_sizes if packed else None)
        expected = self.get_expected_hidden_size(data, batch_sizes if packed else None)
        dirs = 2 if self.bidirectional else 1
        like = self.weight_ih_l0
        if hx is None:
            hx = rumus.zeros(expected, dtype=like.dtype, device=like.device)
        else:
            hx = self.permute_hidden(hx, sorted_indices)
            msg = (
                "Expected hidden[0] size {}, got {}" if lstm else "Expected hidden size {}, got {}"
            )
            self.check_hidden_size(hx, expected, msg)
        if lstm:
            c_expected = (self.num_layers * dirs, expected[1], self.hidden_size)
            if cx is None:
                cx = rumus.zeros(c_expected, dtype=like.dtype, device=like.device)
            else:
                cx = self.permute_hidden(cx, sorted_indices)
                self.check_hidden_size(cx, c_expected, "Expected hidden[1] size {}, got {}")
        if packed:
            rows = data
        else:
            seq = data.transpose(0, 1) if self.batch_first else data
            steps, batch = seq.shape[0], seq.shape[1]
            rows = seq.reshape(steps * batch, self.input_size)
            batch_sizes = [batch] * steps
        out, h_n, c_n = self._run(rows, batch_sizes, hx, cx if lstm else None)
        if packed:
            output = PackedSequence(out, bs_t, sorted_indices, unsorted_indices)
            h_n = self.permute_hidden(h_n, unsorted_indices)
            c_n = None if c_n is None else self.permute_hidden(c_n, unsorted_indices)
        else:
            output = out.reshape(steps, batch, out.shape[-1])
            if self.batch_first:
                output = output.transpose(0, 1)
            if not batched:
                output = output.squeeze(batch_dim)
                h_n = h_n.squeeze(1)
                c_n = None if c_n is None else c_n.squeeze(1)
        return output, h_n, c_n

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu).

    Args:
        input_size: the number of features of the input x.
        hidden_size: the number of features of the hidden state h.
        num_layers: the number of stacked recurrent layers.
        nonlinearity: "tanh" or "relu".
        bias: whether the layers have the biases b_ih and b_hh.
        batch_first: if True, input and output are (batch, seq, feature).
        dropout: the dropout probability applied to the outputs of every layer but the last.
        bidirectional: if True, each layer also runs backwards in time.
        device: the device of the parameters.
        dtype: the dtype of the parameters.
    """

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        nonlinearity="tanh",
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        device=None,
        dtype=None,
    ):
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        self.nonlinearity = nonlinearity
        super().__init__(
            mode,
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            0,
            device,
            dtype,
        )

    def forward(self, input, hx=None):
        output, h_n, _ = self._forward(input, hx, None, False)
        return output, h_n


class LSTM(RNNBase):
    """Long short-term memory, gates (i, f, g, o), with an optional projection of h.

    Args:
        input_size: the number of features of the input x.
        hidden_size: the number of features of the hidden state h.
        num_layers: the number of stacked recurrent layers.
        bias: whether the layers have the biases b_ih and b_hh.
        batch_first: if True, input and output are (batch, seq, feature).
        dropout: the dropout probability applied to the outputs of every layer but the last.
        bidirectional: if True, each layer also runs backwards in time.
        proj_size: if > 0, h is projected to this size by weight_hr.
        device: the device of the parameters.
        dtype: the dtype of the parameters.
    """

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        proj_size=0,
        device=None,
        dtype=None,
    ):
        super().__init__(
            "LSTM",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            proj_size,
            device,
            dtype,
        )

    def forward(self, input, hx=None):
        if hx is None:
            h0 = c0 = None
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError("LSTM: hx must be a tuple (h_0, c_0) of two tensors")
            h0, c0 = hx
        output, h_n, c_n = self._forward(input, h0, c0, True)
        return output, (h_n, c_n)


class GRU(RNNBase):
    """Gated recurrent unit, gates (r, z, n) with n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).

    Args:
        input_size: the number of features of the input x.
        hidden_size: the number of features of the hidden state h.
        num_layers: the number of stacked recurrent layers.
        bias: whether the layers have the biases b_ih and b_hh.
        batch_first: if True, input and output are (batch, seq, feature).
        dropout: the dropout probability applied to the outputs of every layer but the last.
        bidirectional: if True, each layer also runs backwards in time.
        device: the device of the parameters.
        dtype: the dtype of the parameters.
    """

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        device=None,
        dtype=None,
    ):
        super().__init__(
            "GRU",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            0,
            device,
            dtype,
        )

    def forward(self, input, hx=None):
        output, h_n, _ = self._forward(input, hx, None, False)
        return output, h_n


class RNNCellBase(Module):
    """One time step: weight_ih (chunks * hidden, input), weight_hh (chunks * hidden, hidden).

    Args:
        input_size: the number of features of the input x.
        hidden_size: the number of features of the hidden state h.
        bias: whether the cell has the biases b_ih and b_hh.
        num_chunks: the number of gates (1 for RNN, 3 for GRU, 4 for LSTM).
        device: the device of the parameters.
        dtype: the dtype of the parameters.
    """

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        kw = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(rumus.empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(rumus.empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(rumus.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(rumus.empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-initializes every parameter from U(-1/√hidden_size, 1/√hidden_size)."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _step(self, mode, input, states):
        """Runs one step; `states` are the user's (None or tensors)."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for s in states:
            if s is not None and s.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {s.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
            states = [None if s is None else s.unsqueeze(0) for s in states]
        if input.shape[1] != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {input.shape[1]} expected "
                f"{self.input_size}"
            )
        batch = input.shape[0]
        full = []
        for i, s in enumerate(states):
            if s is None:
                s = rumus.zeros((batch, self.hidden_size), dtype=input.dtype, device=input.device)
            elif s.shape[0] != batch:
                raise RuntimeError(
                    f"Input batch size {batch} doesn't match hidden{i} batch size {s.shape[0]}"
                )
            elif s.shape[1] != self.hidden_size:
                raise RuntimeError(
                    f"hidden{i} has inconsistent hidden_size: got {s.shape[1]}, expected "
                    f"{self.hidden_size}"
                )
            full.append(s)
        res = _rumus._rnn_layer(
            mode,
            input,
            self.weight_ih,
            self.weight_hh,
            self.bias_ih,
            self.bias_hh,
            None,
            full[0],
            full[1] if len(full) > 1 else None,
            [batch],
            False,
        )
        out = res[1:]
        if not batched:
            out = [t.squeeze(0) for t in out]
        return out


class RNNCell(RNNCellBase):
    """An Elman RNN cell: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu).

    Args:
        input_size: the number of features of the input x.
        hidden_size: the number of features of the hidden state h.
        bias: whether the cell has the biases b_ih and b_hh.
        nonlinearity: "tanh" or "relu".
        device: the device of the parameters.
        dtype: the dtype of the parameters.
    """

    def __init__(
        self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None
    ):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return self._step(mode, input, [hx])[0]


class LSTMCell(RNNCellBase):
    """One LSTM step: returns (h', c').

    Args:
        input_size: the number of features of the input x.
        hidden_size: the number of features of the hidden state h.
        bias: whether the cell has the biases b_ih and b_hh.
        device: the device of the parameters.
        dtype: the dtype of the parameters.
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        h, c = (None, None) if hx is None else hx
        h_n, c_n = self._step("LSTM", input, [h, c])
        return h_n, c_n


class GRUCell(RNNCellBase):
    """One GRU step: returns h'.

    Args:
        input_size: the number of features of the input x.
        hidden_size: the number of features of the hidden state h.
        bias: whether the cell has the biases b_ih and b_hh.
        device: the device of the parameters.
        dtype: the dtype of the parameters.
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return self._step("GRU", input, [hx])[0]
