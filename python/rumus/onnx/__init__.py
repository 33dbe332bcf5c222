"""rumus.onnx: exporting models to ONNX (PyTorch's ``torch.onnx.export``).

How the graph is recorded. ``export`` runs the model once and records the ops that actually
ran (a trace, not the Python source): while it runs, the public functions of ``rumus`` and
``rumus.nn.functional`` and the methods of ``Tensor`` are wrapped (only then: the hot paths
are untouched outside an export), and each call that receives a traced tensor is written down
with its arguments. The ops are recorded at the level of PyTorch's API, where the exporters
below have the arguments that ONNX operators want (a conv's stride and padding, a softmax's
dim); a Rust-level tape would see the same ops but would need every binding to expose its
attributes, and the autograd graph misses ops that need no gradient. Python functions without
an exporter of their own (``F.scaled_dot_product_attention``, ``F.hardswish``...) are traced
through, so they export as the ops they are made of. A recurrent layer (nn.RNN, nn.LSTM,
nn.GRU) runs its time loop in one native call, so its module forward is recorded as one call
and becomes ONNX's RNN/LSTM/GRU ops, one per layer (a cell's step likewise, ``_rnn.py``).
Three guards keep a graph
from being silently wrong: a native op without an exporter raises ``UnsupportedOperatorError``
naming it; reading a traced tensor's values into Python (``item``, ``bool(t)``...) raises; and
inputs run with ``requires_grad`` so that a tensor the wrappers missed shows up by its
``grad_fn``. An in-place write to a tensor that has traced views (or is one) raises too: the
graph gives each write a new value and could not update the aliases.

Dynamic axes: the model is traced a second time with the dynamic axes one larger; sizes of a
reshape or expand that differ between the two runs are written relative to the input (0 or -1),
and any other op whose arguments change with them raises instead of baking a size.

Parameters and buffers become initializers named by their ``state_dict`` keys; with
``do_constant_folding`` (the default), ops that read only parameters and constants (a
BatchNorm's folded scale, a slice of MultiheadAttention's packed weight) are computed at export
and stored as constants.

Not exported: ops without an exporter (sorting, scatter, random ops other than dropout,
boolean-mask indexing...), the running-statistics updates of a training-mode BatchNorm (dead
code for the outputs, so left out), data-dependent Python control flow (the trace
follows the branch the example input took; a dynamic-axes export notices when the second run
takes another one).
"""

from ._export import TrainingMode, export
from ._ops import UnsupportedOperatorError

__all__ = ["export", "TrainingMode", "UnsupportedOperatorError", "is_in_onnx_export"]


def is_in_onnx_export() -> bool:
    """True while ``export`` is tracing a model."""
    from . import _trace

    return _trace.ACTIVE
