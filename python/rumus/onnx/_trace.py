"""The recorder behind ``rumus.onnx.export``: while it is active, the public functions of
``rumus`` and ``rumus.nn.functional`` and the methods of ``Tensor`` are wrapped, and every call
that receives a traced tensor is written down (name, arguments, outputs).

Rules (see the package docstring for why the trace is taken at this level):

- a call whose name has an exporter (``_ops.EXPORTERS``) is recorded as one node and the calls
  it makes inside are not: ``F.linear`` is one node even if it is built from smaller ops;
- a Python function without an exporter is transparent: the calls it makes are traced instead
  (``F.scaled_dot_product_attention`` becomes MatMul/Softmax...);
- a native function or method without an exporter that gets a traced tensor and returns a
  tensor raises ``UnsupportedOperatorError`` naming it; calls that read data out of a traced
  tensor (``item``, ``tolist``, ``bool(t)``...) raise too: the graph would bake the values;
- inputs run with requires_grad (parameters without), so a tensor that reaches a recorded op
  with a ``grad_fn`` but no trace name came from an op the wrappers missed: that raises too,
  naming the op from its grad_fn, instead of being frozen into a wrong constant.
"""

import functools
import threading
import types

import rumus
import rumus.nn.functional as F
from rumus import Tensor

from ._ops import EXPORTERS, UnsupportedOperatorError

# Read a traced tensor's data into Python: the values would be frozen into the graph.
_DATA_READS = {
    "item",
    "tolist",
    "numpy",
    "__bool__",
    "__float__",
    "__int__",
    "__index__",
    "__array__",
    "equal",
    "allclose",
}
# Plumbing that never computes a tensor value from the data.
_SKIP = {
    "__init__",
    "__new__",
    "__repr__",
    "__str__",
    "__format__",
    "__hash__",
    "__getattribute__",
    "__getattr__",
    "__setattr__",
    "__delattr__",
    "__init_subclass__",
    "__subclasshook__",
    "__reduce__",
    "__reduce_ex__",
    "__deepcopy__",
    "__copy__",
    "__sizeof__",
    "__dir__",
    "__class__",
    "__len__",
    "__getstate__",
    "__setstate__",
    "__class_getitem__",
    "__torch_function__",
    "__dlpack__",
    "__dlpack_device__",
    "__array_priority__",
    "register_hook",
    "retain_grad",
    "requires_grad_",
    "backward",
    "size",
    "dim",
    "ndimension",
    "numel",
    "nelement",
    "stride",
    "storage_offset",
    "is_contiguous",
    "is_floating_point",
    "is_complex",
    "element_size",
    "data_ptr",
    "get_device",
    "type",
}
# Create a new constant from another tensor's shape (no data flows): the result is a constant.
_LIKE = {"zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like",
         "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor"}  # fmt: skip
_PROPERTIES = {"T": "_T", "mT": "_mT", "data": "detach"}
ACTIVE = False  # rumus.onnx.is_in_onnx_export()
_LOCK = threading.Lock()  # one export at a time: the wrappers are process-wide
# Results that may share memory with their input: an in-place write to one changes the others,
# which the graph (one value per write) cannot show.
_VIEWS = {
    "reshape", "view", "view_as", "reshape_as", "flatten", "unflatten", "permute", "transpose",
    "swapaxes", "swapdims", "t", "_T", "_mT", "movedim", "moveaxis", "squeeze", "unsqueeze",
    "expand", "expand_as", "narrow", "select", "split", "chunk", "unbind", "__getitem__",
    "detach", "detach_",
}  # fmt: skip


def _tensors(obj, out):
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors(o, out)
    return out


class Node:
    """One recorded call. ``snap`` holds the trace names its inputs had at call time (an
    in-place op later gives the same tensor a new name); ``out_names`` those of its outputs."""

    __slots__ = ("name", "args", "kwargs", "inputs", "outputs", "snap", "out_names")

    def __init__(self, name, args, kwargs, inputs, outputs, snap):
        self.name, self.args, self.kwargs = name, args, kwargs
        self.inputs, self.outputs, self.snap = inputs, outputs, snap
        self.out_names = []


class Tracer:
    """Maps traced tensors (by id; every one is kept alive so ids stay unique) to value names
    and collects the recorded nodes."""

    def __init__(self):
        self.names = {}
        self.keep = []
        self.nodes = []
        self.depth = 0
        self.count = 0
        self.family = {}  # id -> set of ids of traced tensors that may share its memory
        self.thread = threading.get_ident()  # other threads' calls pass straight through

    def mark(self, t, name=None):
        if name is None:
            self.count += 1
            name = f"v{self.count}"
        self.names[id(t)] = name
        self.keep.append(t)
        return name

    def traced(self, qual, args, kwargs):
        found = False
        for t in _tensors((args, kwargs), []):
            if id(t) in self.names:
                found = True
            elif t.grad_fn is not None:
                raise UnsupportedOperatorError(
                    f"rumus.onnx.export: a tensor reaching '{qual}' was computed by "
                    f"'{t.grad_fn.name()}', which the exporter did not record"
                )
        return found

    def call(self, qual, key, orig, native, args, kwargs):
        if self.depth or threading.get_ident() != self.thread:
            return orig(*args, **kwargs)
        if not self.traced(qual, args, kwargs):
            return orig(*args, **kwargs)
        short = qual.rsplit(".", 1)[-1]
        if short in _DATA_READS:
            raise UnsupportedOperatorError(
                f"rumus.onnx.export: {qual}() reads the values of a traced tensor into Python; "
                "the exported graph would freeze them. Keep the computation in tensor ops."
            )
        exporter = EXPORTERS.get(key) or (EXPORTERS.get(short) if native else None)
        if exporter is None and native and short.endswith("_") and not short.endswith("__"):
            key = short[:-1]  # exp_: exp's exporter; the tensor then names the new value
            exporter = EXPORTERS.get(key)
        transparent = getattr(exporter, "transparent_if", None)
        if transparent is not None and transparent(args, kwargs):
            exporter = None
        if exporter is None and not native:
            return orig(*args, **kwargs)  # a Python composite: trace the ops it calls
        self.depth += 1
        try:
            out = orig(*args, **kwargs)
        finally:
            self.depth -= 1
        if out is NotImplemented:
            return out
        outs = _tensors(out, [])
        if exporter is None:
            if (not outs or short in _LIKE) and not _writes(short):
                return out
            raise UnsupportedOperatorError(
                f"rumus.onnx.export: no ONNX exporter for operator '{qual}'"
            )
        inputs = _tensors((args, kwargs), [])
        self._check_alias(qual, key, inputs, outs)
        snap = {id(t): self.names[id(t)] for t in inputs if id(t) in self.names}
        node = Node(key if key in EXPORTERS else short, args, kwargs, inputs, outs, snap)
        self.nodes.append(node)
        node.out_names = [self.mark(t) for t in outs]
        self.keep.append((args, kwargs))
        return out

    def _check_alias(self, qual, key, inputs, outs):
        if key in _VIEWS and inputs:
            fam = self.family.setdefault(id(inputs[0]), {id(inputs[0])})
            for t in outs:
                fam.add(id(t))
                self.family[id(t)] = fam
        elif _writes(qual.rsplit(".", 1)[-1]) and len(self.family.get(id(inputs[0]), ())) > 1:
            raise UnsupportedOperatorError(
                f"rumus.onnx.export: in-place '{qual}' writes to a tensor that shares memory with "
                "another traced tensor (a view), which the exported graph cannot follow; use the "
                "out-of-place op"
            )


_AUGMENTED = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul"} | {
    "and", "or", "xor", "lshift", "rshift"
}  # fmt: skip


def _writes(name):
    """In-place ops: ``add_``, ``__iadd__``, ``__setitem__``."""
    if name.startswith("__"):
        return name == "__setitem__" or (name.startswith("__i") and name[3:-2] in _AUGMENTED)
    return name.endswith("_")


def _wrap(tracer, qual, key, orig, native):
    def wrapper(*args, **kwargs):
        return tracer.call(qual, key, orig, native, args, kwargs)

    try:
        functools.update_wrapper(wrapper, orig)
    except (AttributeError, TypeError):
        pass
    return wrapper


def _native(obj):
    return not isinstance(obj, (types.FunctionType, types.MethodType))


def _is_op(obj):
    return callable(obj) and not isinstance(obj, type) and not isinstance(obj, types.ModuleType)


class patched:
    """Context manager: the wrappers are in place inside, the original objects after."""

    def __init__(self, tracer):
        self.tracer = tracer
        self.saved = []

    def _set(self, owner, name, new):
        self.saved.append((owner, name, owner.__dict__[name]))
        setattr(owner, name, new)

    def __enter__(self):
        global ACTIVE
        _LOCK.acquire()
        tr = self.tracer
        methods = dict(Tensor.__dict__)
        try:
            for name, obj in methods.items():
                if name in _SKIP:
                    continue
                if name in _PROPERTIES:
                    w = _wrap(tr, f"Tensor.{name}", _PROPERTIES[name], obj.__get__, True)
                    self._set(Tensor, name, property(w, getattr(obj, "__set__", None)))
                elif _is_op(obj) and not isinstance(obj, (staticmethod, classmethod)):
                    self._set(Tensor, name, _wrap(tr, f"Tensor.{name}", name, obj, _native(obj)))
            for mod, prefix in ((rumus, "rumus"), (F, "F")):
                for name, obj in list(vars(mod).items()):
                    if name.startswith("_") or name in _SKIP or not _is_op(obj):
                        continue
                    if methods.get(name) is obj:
                        key = name  # rumus.exp is Tensor.exp
                    else:
                        key = f"{prefix}.{name}"
                    self._set(mod, name, _wrap(tr, f"{prefix}.{name}", key, obj, _native(obj)))
            # A recurrent layer runs each layer's time loop in one native call the wrappers
            # cannot see: record the module's forward as one node (ONNX has RNN/LSTM/GRU ops).
            from rumus.nn.modules.rnn import RNNBase, RNNCellBase

            for cls, name in ((RNNBase, "_forward"), (RNNCellBase, "_step")):
                key = f"nn.{cls.__name__}.{name}"
                self._set(cls, name, _wrap(tr, key, key, cls.__dict__[name], False))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        ACTIVE = True
        return self

    def __exit__(self, *exc):
        global ACTIVE
        ACTIVE = False
        try:
            while self.saved:
                owner, name, obj = self.saved.pop()
                setattr(owner, name, obj)
        finally:
            _LOCK.release()
        return False
