"""``export``: trace one forward pass, then write the recorded nodes as an ONNX graph."""

from __future__ import annotations

import contextlib
import enum
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import rumus

from . import (
    _rnn,  # noqa: F401 - registers the recurrent-layer exporter
    _shape_ops,  # noqa: F401 - registers the shape exporters
)
from ._ops import _BINARY, EXPORTERS, UnsupportedOperatorError
from ._trace import Tracer, _tensors, patched


class TrainingMode(enum.IntEnum):
    """Which mode the model is exported in (PyTorch's ``torch.onnx.TrainingMode``)."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


_DTYPES = {
    rumus.float32: 1,
    rumus.uint8: 2,
    rumus.int32: 6,
    rumus.int64: 7,
    rumus.bool: 9,
    rumus.float16: 10,
    rumus.float64: 11,
    rumus.bfloat16: 16,
}
_NP = {
    rumus.float32: np.float32,
    rumus.float64: np.float64,
    rumus.float16: np.float16,
    rumus.int64: np.int64,
    rumus.int32: np.int32,
    rumus.uint8: np.uint8,
    rumus.bool: np.bool_,
}
# Ops whose size arguments may change with the dynamic axes (their exporters call g.sizes).
_SIZED = {"reshape", "view", "expand"}
# Ops whose output is the broadcast of their inputs.
_ELEMENTWISE = {"masked_fill", "masked_fill_", "where", "rumus.where", *_BINARY}


def _scalars(obj, out):
    if isinstance(obj, rumus.Tensor):
        return out
    if isinstance(obj, (list, tuple)):
        for o in obj:
            _scalars(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _scalars(o, out)
    elif isinstance(obj, slice):
        _scalars([obj.start, obj.stop, obj.step], out)
    elif isinstance(obj, (int, float)):
        out.append(obj)
    return out


class Graph:
    """The ONNX graph under construction; exporters call ``v``, ``op``, ``ints``..."""

    def __init__(self, onnx, opset, tracer, params):
        self.onnx, self.opset = onnx, opset
        self.tracer, self.params = tracer, params
        self.nodes, self.inits, self.const_ids = [], {}, {}
        self.onnx_of = {}  # trace name -> ONNX value name
        self.count = 0
        self.twin = None
        self.current = None

    @property
    def current_outputs(self):
        return self.current.outputs

    @property
    def current_name(self):
        return self.current.name

    def _fresh(self, hint="t"):
        self.count += 1
        return f"/{hint}_{self.count}"

    def dtype(self, dt):
        return _DTYPES[dt]

    def const(self, array, hint="Constant"):
        name = self._fresh(hint)
        self.inits[name] = self.onnx.numpy_helper.from_array(np.asarray(array), name)
        return name

    def ints(self, values, scalar=False):
        return self.const(np.array(values if scalar else list(values), dtype=np.int64))

    def scalar(self, value, like=None, dtype=None):
        dt = dtype if dtype is not None else like.dtype
        return self.const(np.array(value, dtype=_NP[dt]))

    def v(self, x, like=None, dtype=None):
        """The value name of ``x``: a traced tensor, a parameter, or a folded constant; Python
        numbers become constants of ``dtype`` (or ``like``'s dtype)."""
        if not isinstance(x, rumus.Tensor):
            return self.scalar(x, like, dtype)
        name = self.onnx_of.get(self.current.snap.get(id(x)))
        if name is None:
            name = self.params.get(id(x))
            if name is not None and name not in self.inits:
                self.inits[name] = self._array(x, name)
        if name is None:
            name = self.const_ids.get(id(x))
            if name is None:
                name = self._twin_const(x)
            if name is None:
                name = self.const(self._np(x))
                self.const_ids[id(x)] = name
                self.tracer.keep.append(x)
        if dtype is not None and x.dtype != dtype:
            name = self.op("Cast", name, to=_DTYPES[dtype])
        return name

    def _np(self, x):
        x = x.detach().cpu()
        if x.dtype == rumus.bfloat16:
            raise UnsupportedOperatorError("rumus.onnx.export: bfloat16 constants")
        return np.ascontiguousarray(x.numpy())

    def _array(self, x, name):
        return self.onnx.numpy_helper.from_array(self._np(x), name)

    def _twin_const(self, x):
        """A constant whose shape changes with the dynamic axes is baked wrongly, unless it is
        one repeated value feeding an elementwise op that the other inputs already give its
        output shape (``zeros(mask.shape).masked_fill(mask, v)``): then a scalar does."""
        if self.twin is None:
            return None
        i = next((i for i, t in enumerate(self.current.inputs) if t is x), None)
        if i is None or tuple(self.twin.inputs[i].shape) == tuple(x.shape):
            return None
        others = [t for t in self.current.inputs if t is not x]
        flat = self._np(x).reshape(-1)
        if (
            self.current.name in _ELEMENTWISE
            and flat.size
            and (flat == flat[0]).all()
            and others
            and tuple(rumus.broadcast_shapes(*[t.shape for t in others]))
            == tuple(self.current.outputs[0].shape)
        ):
            return self.const(flat[:1].reshape(()))
        raise UnsupportedOperatorError(
            f"rumus.onnx.export: '{self.current.name}' uses a constant of shape "
            f"{tuple(x.shape)} built from a size that changes with the dynamic axes"
        )

    def op(self, op_type, *inputs, n=1, **attrs):
        outs = [self._fresh(op_type) for _ in range(n)]
        self.nodes.append(
            self.onnx.helper.make_node(
                op_type, list(inputs), outs, name=self._fresh(op_type + "_node"), **attrs
            )
        )
        return outs[0] if n == 1 else outs

    def reduce(self, op_type, v, axes, keepdim):
        """Reduce over ``axes``: an input since opset 13 for ReduceSum and 18 for the others."""
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.op(op_type, v, self.ints(axes), keepdims=int(bool(keepdim)))
        return self.op(op_type, v, axes=list(axes), keepdims=int(bool(keepdim)))

    def sizes(self, sizes, x, from_twin, expand=False):
        """The size list of a reshape/expand, with the sizes that follow a dynamic axis made
        relative: 0 (copy the input's dim) where the input has that size at that place in both
        runs, otherwise -1 (once) for a reshape or -1 (keep) for an expand."""
        if self.twin is None:
            return sizes
        other = from_twin(self.twin.args)
        if len(other) != len(sizes):
            raise UnsupportedOperatorError(
                f"rumus.onnx.export: '{self.current.name}' changes rank with the dynamic axes"
            )
        x2 = self.twin.args[0]
        out, free = [], 0
        for i, (a, b) in enumerate(zip(sizes, other)):
            if a == b:
                out.append(a)
            elif expand:
                out.append(-1)
            elif i < x.dim() and x.shape[i] == a and x2.shape[i] == b:
                out.append(0)
            else:
                out.append(-1)
                free += 1
        if free > 1 or (free and sizes.count(-1)):
            raise UnsupportedOperatorError(
                f"rumus.onnx.export: cannot express the sizes {sizes} of "
                f"'{self.current.name}' in terms of the dynamic axes"
            )
        return out

    def emit(self, node, twin):
        self.current, self.twin = node, twin
        if twin is not None and node.name not in _SIZED:
            a, b = _scalars((node.args, node.kwargs), []), _scalars((twin.args, twin.kwargs), [])
            if a != b:
                raise UnsupportedOperatorError(
                    f"rumus.onnx.export: '{node.name}' takes sizes {a} that change with the "
                    f"dynamic axes (another batch size gives {b})"
                )
        names = EXPORTERS[node.name](self, *node.args, **node.kwargs)
        if not isinstance(names, list):
            names = [names]
        if len(names) != len(node.outputs):
            raise UnsupportedOperatorError(
                f"rumus.onnx.export: exporter of '{node.name}' gave {len(names)} outputs for "
                f"{len(node.outputs)}"
            )
        for trace_name, name in zip(node.out_names, names):
            self.onnx_of[trace_name] = name


def _split_args(args):
    if isinstance(args, rumus.Tensor):
        args = (args,)
    if not isinstance(args, tuple):
        raise TypeError(
            f"rumus.onnx.export: args must be a Tensor or a tuple of Tensors, got "
            f"{type(args).__name__}"
        )
    kwargs = {}
    if args and isinstance(args[-1], dict):
        args, kwargs = args[:-1], args[-1]
    for i, a in enumerate([*args, *kwargs.values()]):
        if not isinstance(a, rumus.Tensor):
            raise TypeError(
                f"rumus.onnx.export: every model input must be a Tensor; input {i} is a "
                f"{type(a).__name__}"
            )
    return list(args), kwargs


def _axes(spec, name):
    if isinstance(spec, dict):
        return {int(k): str(v) for k, v in spec.items()}
    if isinstance(spec, (list, tuple)):
        return {int(k): f"{name}_dynamic_axes_{i + 1}" for i, k in enumerate(spec)}
    raise TypeError(f"rumus.onnx.export: dynamic_axes[{name!r}] must be a dict or a list")


def _trace(model, inputs, kwargs, params, fold):
    tracer = Tracer()
    run_inputs = []
    for i, x in enumerate([*inputs, *kwargs.values()]):
        if x.is_floating_point():
            x = x.detach().clone().requires_grad_().clone()  # non-leaf: in-place ops are fine
        else:
            x = x.detach().clone()
        tracer.mark(x, f"__input_{i}")
        run_inputs.append(x)
    if not fold:
        for t, name in params.items():
            tracer.names[t] = name
    n = len(run_inputs)
    with rumus.enable_grad(), patched(tracer):
        out = model(
            *run_inputs[: n - len(kwargs)], **dict(zip(kwargs, run_inputs[n - len(kwargs) :]))
        )
    return tracer, out


@contextlib.contextmanager
def _export_state(model, train):
    """The model in the export's mode, its parameters without requires_grad (only the inputs
    carry grad_fns, see _trace), and its state as it was afterwards (a training-mode export may
    update running statistics)."""
    if not isinstance(model, rumus.nn.Module):
        yield
        return
    was_training = model.training
    saved_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    grad_flags = [(p, p.requires_grad) for p in model.parameters()]
    try:
        model.train(train)
        for p, _ in grad_flags:
            p.requires_grad_(False)
        yield
    finally:
        model.train(was_training)
        for p, flag in grad_flags:
            p.requires_grad_(flag)
        with rumus.no_grad():
            for k, v in model.state_dict().items():
                v.copy_(saved_state[k])


def _trace_twin(model, inputs, kw, in_names, dynamic_axes, params, fold):
    """The second trace, with every dynamic axis one larger (see rumus.onnx's docstring)."""
    bigger = []
    for name, x in zip(in_names, [*inputs, *kw.values()]):
        for ax in _axes(dynamic_axes.get(name, {}), name):
            x = rumus.cat([x, x.narrow(ax, 0, 1)], ax)
        bigger.append(x)
    return _trace(model, bigger[: len(inputs)], dict(zip(kw, bigger[len(inputs) :])), params, fold)


def _needed(tracer, outs):
    """Which recorded nodes the outputs depend on (a BatchNorm's running-statistics update in
    training mode, for one, does not reach them)."""
    live = {tracer.names.get(id(t)) for t in outs}
    needed = [False] * len(tracer.nodes)
    for i in range(len(tracer.nodes) - 1, -1, -1):
        node = tracer.nodes[i]
        if live.intersection(node.out_names):
            needed[i] = True
            live.update(node.snap.values())
    return needed


def export(
    model: Any,
    args: Any,
    f: Any = None,
    *,
    kwargs: dict[str, Any] | None = None,
    export_params: bool = True,
    verbose: bool = False,
    training: TrainingMode = TrainingMode.EVAL,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    opset_version: int | None = None,
    do_constant_folding: bool = True,
    dynamic_axes: Mapping[str, Mapping[int, str] | Sequence[int]] | None = None,
    keep_initializers_as_inputs: bool | None = None,
) -> Any:
    """Exports ``model`` (an ``nn.Module`` or a callable) to ONNX by tracing ``model(*args)``.

    Parameters and buffers become initializers named by their ``state_dict`` keys;
    ``dynamic_axes={"input": {0: "batch"}}`` makes those input (and output) sizes symbolic.

    Args:
        model: the module or function to trace.
        args: the example inputs (a tensor or a tuple of them).
        f: a path or a binary file object to write the model to (None: only return it).
        kwargs: example keyword inputs.
        export_params: store the parameters as initializers (False: they become graph inputs).
        verbose: print the exported graph.
        training: the mode to trace in (TrainingMode.EVAL, TRAINING or PRESERVE).
        input_names: names of the graph inputs, in order.
        output_names: names of the graph outputs, in order.
        opset_version: the ONNX opset (>= 17; default 17).
        do_constant_folding: fold computations on constants into initializers.
        dynamic_axes: per input/output name, the axes whose sizes are symbolic.
        keep_initializers_as_inputs: also list the initializers as graph inputs.

    Returns:
        The ``onnx.ModelProto``.
    """
    try:
        import onnx
        import onnx.printer
    except ImportError as e:
        raise ImportError("rumus.onnx.export needs the 'onnx' package: pip install onnx") from e
    opset = 17 if opset_version is None else int(opset_version)
    if opset < 17:
        raise ValueError(f"rumus.onnx.export supports opset_version >= 17, got {opset}")
    if opset > onnx.defs.onnx_opset_version():
        raise ValueError(
            f"rumus.onnx.export: opset_version {opset} is newer than the installed onnx package "
            f"supports ({onnx.defs.onnx_opset_version()})"
        )
    inputs, kw = _split_args(args)
    if kwargs:
        kw = {**kw, **_split_args((dict(kwargs),))[1]}
    all_inputs = inputs + list(kw.values())
    input_names = list(input_names or [])
    output_names = list(output_names or [])
    if len(input_names) > len(all_inputs):
        raise ValueError(
            f"rumus.onnx.export: {len(input_names)} input_names given for "
            f"{len(all_inputs)} model inputs"
        )
    defaults = [f"input_{i}" for i in range(len(inputs))] + list(kw)
    in_names = input_names + defaults[len(input_names) :]
    dynamic_axes = dynamic_axes or {}
    is_module = isinstance(model, rumus.nn.Module)
    was_training = is_module and model.training
    mode = TrainingMode(training)
    train = mode == TrainingMode.TRAINING or (mode == TrainingMode.PRESERVE and was_training)
    if is_module and was_training and mode == TrainingMode.EVAL:
        warnings.warn(
            "You are exporting the model to ONNX while in training mode with 'training' parameter "
            "not specified. The model will default to inference mode export. If you wish to "
            "export a training amenable ONNX model, specify training=TrainingMode.TRAINING or "
            "training=TrainingMode.PRESERVE (to preserve the original model state) in "
            "rumus.onnx.export().",
            stacklevel=2,
        )
    params = {}
    if is_module:
        for key, t in model.state_dict(keep_vars=True).items():
            params.setdefault(id(t), key)
    if f is not None and not isinstance(f, (str, os.PathLike)) and not hasattr(f, "write"):
        raise TypeError(f"rumus.onnx.export: f must be a path or a file object, got {type(f)}")
    with _export_state(model, train):
        tracer, out = _trace(model, inputs, kw, params, do_constant_folding)
        twin = twin_out = None
        if dynamic_axes:
            twin, twin_out = _trace_twin(
                model, inputs, kw, in_names, dynamic_axes, params, do_constant_folding
            )
            if [n.name for n in twin.nodes] != [n.name for n in tracer.nodes]:
                raise UnsupportedOperatorError(
                    "rumus.onnx.export: the traced ops change with the size of the dynamic axes; "
                    "the model's control flow depends on them"
                )
    outs = _tensors(out, [])
    out_names = output_names + [f"output_{i}" for i in range(len(output_names), len(outs))]
    for key in set(dynamic_axes) - set(in_names) - set(out_names):
        warnings.warn(
            f"Provided key {key} for dynamic axes is not a valid input/output name",
            stacklevel=2,
        )
    if not outs:
        raise RuntimeError("rumus.onnx.export: the model returned no tensor")
    if len(output_names) > len(outs):
        raise ValueError(
            f"rumus.onnx.export: {len(output_names)} output_names given for {len(outs)} "
            "model outputs"
        )

    g = Graph(onnx, opset, tracer, params)
    g.onnx_of.update({f"__input_{i}": name for i, name in enumerate(in_names)})
    g.onnx_of.update({key: key for key in params.values()})
    needed = _needed(tracer, outs)
    for i, node in enumerate(tracer.nodes):
        if needed[i]:
            g.emit(node, twin.nodes[i] if twin is not None else None)
    if not do_constant_folding:  # traced parameters: those the graph reads
        read = {i for n in g.nodes for i in n.input}
        for key, t in model.state_dict(keep_vars=True).items() if is_module else ():
            if key in read and key not in g.inits:
                g.inits[key] = g._array(t, key)
    used_params = [name for name in params.values() if name in g.inits]

    def value_info(name, t, axes):
        shape = [axes.get(i, s) for i, s in enumerate(t.shape)]
        return onnx.helper.make_tensor_value_info(name, _DTYPES[t.dtype], shape)

    graph_inputs = [
        value_info(n, t, _axes(dynamic_axes.get(n, {}), n)) for n, t in zip(in_names, all_inputs)
    ]
    graph_outputs = []
    twin_outs = _tensors(twin_out, []) if twin is not None else None
    for i, (name, t) in enumerate(zip(out_names, outs)):
        vname = g.onnx_of.get(tracer.names.get(id(t)))
        if vname is None:
            via = f" (it was computed by '{t.grad_fn.name()}')" if t.grad_fn is not None else ""
            raise UnsupportedOperatorError(
                f"rumus.onnx.export: output {i} does not come from the inputs through ops the "
                f"exporter recorded{via}"
            )
        g.nodes.append(onnx.helper.make_node("Identity", [vname], [name]))
        axes = _axes(dynamic_axes.get(name, {}), name)
        if twin_outs is not None:
            for d, (a, b) in enumerate(zip(t.shape, twin_outs[i].shape)):
                if a != b:
                    axes.setdefault(d, f"{name}_dim_{d}")
        graph_outputs.append(value_info(name, t, axes))
    initializers = list(g.inits.values())
    if not export_params:
        keep = set(used_params)
        graph_inputs += [
            onnx.helper.make_tensor_value_info(k, g.inits[k].data_type, list(g.inits[k].dims))
            for k in used_params
        ]
        initializers = [t for t in initializers if t.name not in keep]
    elif keep_initializers_as_inputs:
        graph_inputs += [
            onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
            for t in initializers
        ]
    graph = onnx.helper.make_graph(
        g.nodes, type(model).__name__, graph_inputs, graph_outputs, initializers
    )
    proto = onnx.helper.make_model(
        graph,
        producer_name="rumus",
        producer_version=rumus.__version__,
        opset_imports=[onnx.helper.make_opsetid("", opset)],
    )
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(proto.SerializeToString())
    elif f is not None:
        f.write(proto.SerializeToString())
    return proto
