"""Exporters: one function per traced rumus op, writing ONNX nodes through a graph builder.

An exporter takes the builder ``g`` and the op's own arguments (the real tensors of the traced
run, so shapes and dtypes are known) and returns the ONNX value name of each tensor output.
"""

import math

import numpy as np

import rumus

EXPORTERS = {}


class UnsupportedOperatorError(RuntimeError):
    """The traced model called an op that has no ONNX exporter (or that cannot be traced)."""


def exporter(*names):
    def register(fn):
        for n in names:
            EXPORTERS[n] = fn
        return fn

    return register


def _dims(dims, nd):
    if dims is None:
        return list(range(nd))
    if isinstance(dims, int):
        dims = [dims]
    return [d % nd if nd else 0 for d in dims]


def _shape_args(args):
    """``view(2, 3)``, ``view((2, 3))`` and ``view([2, 3])`` -> [2, 3]."""
    if len(args) == 1 and isinstance(args[0], (list, tuple, rumus.Size)):
        return [int(a) for a in args[0]]
    return [int(a) for a in args]


def _pair(v, n):
    if v is None:
        return None
    if isinstance(v, int):
        return [v] * n
    return [int(a) for a in v]


# ----------------------------------------------------------------- elementwise


def _unary(onnx_op):
    def export(g, x, *args, **kwargs):
        return g.op(onnx_op, g.v(x))

    return export


for _name, _op in {
    "relu": "Relu",
    "relu_": "Relu",
    "sigmoid": "Sigmoid",
    "sigmoid_": "Sigmoid",
    "tanh": "Tanh",
    "tanh_": "Tanh",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "abs": "Abs",
    "__abs__": "Abs",
    "neg": "Neg",
    "__neg__": "Neg",
    "reciprocal": "Reciprocal",
    "sin": "Sin",
    "cos": "Cos",
    "erf": "Erf",
    "floor": "Floor",
    "ceil": "Ceil",
    "sign": "Sign",
    "logical_not": "Not",
    "__invert__": "Not",
}.items():
    EXPORTERS[_name] = _unary(_op)


@exporter("contiguous", "clone", "detach", "detach_")
def _same(g, x, *args, **kwargs):
    return g.v(x)  # the same value: no node


@exporter("rsqrt")
def _rsqrt(g, x):
    return g.op("Reciprocal", g.op("Sqrt", g.v(x)))


@exporter("square")
def _square(g, x):
    v = g.v(x)
    return g.op("Mul", v, v)


@exporter("silu", "silu_")
def _silu(g, x):
    v = g.v(x)
    return g.op("Mul", v, g.op("Sigmoid", v))


@exporter("mish", "mish_")
def _mish(g, x):
    v = g.v(x)
    return g.op("Mul", v, g.op("Tanh", g.op("Softplus", v)))


@exporter("gelu")
def _gelu(g, x, approximate="none"):
    v = g.v(x)
    half = g.scalar(0.5, x)
    if approximate == "tanh":
        cube = g.op("Mul", g.op("Mul", v, v), v)
        inner = g.op("Add", v, g.op("Mul", cube, g.scalar(0.044715, x)))
        t = g.op("Tanh", g.op("Mul", inner, g.scalar(math.sqrt(2.0 / math.pi), x)))
    else:
        t = g.op("Erf", g.op("Mul", v, g.scalar(1.0 / math.sqrt(2.0), x)))
    return g.op("Mul", g.op("Mul", v, half), g.op("Add", t, g.scalar(1.0, x)))


@exporter("_hardsigmoid")
def _hardsigmoid(g, x):
    return g.op("HardSigmoid", g.v(x), alpha=1.0 / 6.0, beta=0.5)


@exporter("_hardswish")
def _hardswish(g, x):
    v = g.v(x)
    return g.op("Mul", v, g.op("HardSigmoid", v, alpha=1.0 / 6.0, beta=0.5))


def _piecewise_loss(g, d, edge, huber):
    """0.5 z^2 below ``edge`` (over edge for smooth L1), z - 0.5 edge above (times edge
    for Huber), with z = |d|."""
    z = g.op("Abs", g.v(d))
    square = g.op("Mul", g.op("Mul", z, z), g.scalar(0.5, d))
    linear = g.op("Sub", z, g.scalar(0.5 * edge, d))
    if huber:
        linear = g.op("Mul", linear, g.scalar(edge, d))
    else:
        square = g.op("Div", square, g.scalar(edge, d))
    return g.op("Where", g.op("Less", z, g.scalar(edge, d)), square, linear)


@exporter("_smooth_l1")
def _smooth_l1(g, d, beta):
    return _piecewise_loss(g, d, beta, False)


@exporter("_huber")
def _huber(g, d, delta):
    return _piecewise_loss(g, d, delta, True)


@exporter("leaky_relu")
def _leaky_relu(g, x, negative_slope=0.01):
    return g.op("LeakyRelu", g.v(x), alpha=float(negative_slope))


@exporter("elu")
def _elu(g, x, alpha=1.0):
    return g.op("Elu", g.v(x), alpha=float(alpha))


@exporter("softplus")
def _softplus(g, x, beta=1.0, threshold=20.0):
    v = g.v(x)
    if beta != 1.0:
        v = g.op("Mul", v, g.scalar(beta, x))
    out = g.op("Softplus", v)
    if beta != 1.0:
        out = g.op("Div", out, g.scalar(beta, x))
    # Above the threshold PyTorch returns x itself.
    return g.op("Where", g.op("Greater", v, g.scalar(threshold, x)), g.v(x), out)


@exporter("clamp", "clip", "clamp_", "clip_")
def _clamp(g, x, min=None, max=None):
    v = g.v(x)
    if isinstance(min, rumus.Tensor) or isinstance(max, rumus.Tensor):
        if min is not None:
            v = g.op("Max", v, g.v(min, x))
        if max is not None:
            v = g.op("Min", v, g.v(max, x))
        return v
    lo = "" if min is None else g.scalar(min, x)
    hi = "" if max is None else g.scalar(max, x)
    return g.op("Clip", v, lo, hi)


@exporter("clamp_min")
def _clamp_min(g, x, min):
    return _clamp(g, x, min, None)


@exporter("clamp_max")
def _clamp_max(g, x, max):
    return _clamp(g, x, None, max)


def _softmax_like(onnx_op):
    def export(g, x, dim=None, _stacklevel=3, dtype=None):
        if isinstance(_stacklevel, rumus.dtype):
            dtype = _stacklevel  # Tensor.softmax(dim, dtype)
        v = g.v(x)
        if dtype is not None:
            v = g.op("Cast", v, to=g.dtype(dtype))
        nd = x.dim()
        if dim is None:
            dim = 0 if nd in (0, 1, 3) else 1
        return g.op(onnx_op, v, axis=_dims(dim, max(nd, 1))[0])

    return export


EXPORTERS["softmax"] = _softmax_like("Softmax")
EXPORTERS["log_softmax"] = _softmax_like("LogSoftmax")

_BINARY = {
    "add": "Add",
    "__add__": "Add",
    "__radd__": "Add",
    "add_": "Add",
    "__iadd__": "Add",
    "sub": "Sub",
    "__sub__": "Sub",
    "__rsub__": "Sub",
    "sub_": "Sub",
    "__isub__": "Sub",
    "mul": "Mul",
    "__mul__": "Mul",
    "__rmul__": "Mul",
    "mul_": "Mul",
    "__imul__": "Mul",
    "multiply": "Mul",
    "div": "Div",
    "divide": "Div",
    "true_divide": "Div",
    "__truediv__": "Div",
    "__rtruediv__": "Div",
    "div_": "Div",
    "__itruediv__": "Div",
    "pow": "Pow",
    "__pow__": "Pow",
    "__rpow__": "Pow",
    "maximum": "Max",
    "minimum": "Min",
    "eq": "Equal",
    "__eq__": "Equal",
    "lt": "Less",
    "__lt__": "Less",
    "le": "LessOrEqual",
    "__le__": "LessOrEqual",
    "gt": "Greater",
    "__gt__": "Greater",
    "ge": "GreaterOrEqual",
    "__ge__": "GreaterOrEqual",
    "ne": "Equal",
    "__ne__": "Equal",
    "logical_and": "And",
    "__and__": "And",
    "logical_or": "Or",
    "__or__": "Or",
    "logical_xor": "Xor",
    "__xor__": "Xor",
}


def _binary(name, onnx_op):
    reflected = name.startswith("__r") and name not in ("__rshift__",)
    compare = onnx_op in ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual")

    def export(g, a, b, *, alpha=None, rounding_mode=None):
        out = g.current_outputs[0]
        if compare or onnx_op in ("And", "Or", "Xor"):
            dt = rumus.result_type(a, b) if onnx_op not in ("And", "Or", "Xor") else rumus.bool
        else:
            dt = out.dtype
        va, vb = g.v(a, dtype=dt), g.v(b, dtype=dt)
        if alpha is not None and alpha != 1:
            vb = g.op("Mul", vb, g.scalar(alpha, dtype=dt))
        if reflected:
            va, vb = vb, va
        res = g.op(onnx_op, va, vb)
        if rounding_mode == "trunc":
            raise UnsupportedOperatorError("rumus.onnx.export: div(rounding_mode='trunc')")
        if rounding_mode == "floor":
            res = g.op("Floor", res)
        return g.op("Not", res) if name in ("ne", "__ne__") else res

    return export


for _name, _op in _BINARY.items():
    EXPORTERS[_name] = _binary(_name, _op)


@exporter("rumus.where")
def _where_fn(g, condition, input=None, other=None):
    if input is None:
        raise UnsupportedOperatorError("rumus.onnx.export: where(condition) (nonzero)")
    dt = g.current_outputs[0].dtype
    return g.op("Where", g.v(condition), g.v(input, dtype=dt), g.v(other, dtype=dt))


@exporter("where")
def _where_method(g, x, condition, other):
    return _where_fn(g, condition, x, other)


@exporter("masked_fill", "masked_fill_")
def _masked_fill(g, x, mask, value):
    return g.op("Where", g.v(mask), g.v(value, dtype=x.dtype), g.v(x))


# ----------------------------------------------------------------- matmul and nn


@exporter("matmul", "__matmul__", "bmm", "mm")
def _matmul(g, a, b):
    return g.op("MatMul", g.v(a), g.v(b))


@exporter("__rmatmul__")
def _rmatmul(g, a, b):
    return g.op("MatMul", g.v(b), g.v(a))


@exporter("F.linear", "linear")
def _linear(g, input, weight, bias=None):
    if input.dim() == 2:
        args = [g.v(input), g.v(weight)] + ([g.v(bias)] if bias is not None else [])
        return g.op("Gemm", *args, transB=1)
    out = g.op("MatMul", g.v(input), g.op("Transpose", g.v(weight), perm=[1, 0]))
    return out if bias is None else g.op("Add", out, g.v(bias))


def _conv_pads(padding, weight, dilation, n):
    if isinstance(padding, str):
        if padding == "valid":
            return [0] * (2 * n)
        k = list(weight.shape[2:])
        total = [d * (kk - 1) for d, kk in zip(dilation, k)]
        return [t // 2 for t in total] + [t - t // 2 for t in total]
    p = _pair(padding, n) or [0] * n
    return p + p


def _conv(n):
    def export(g, input, weight, bias=None, stride=None, padding=None, dilation=None, groups=1):
        dil = _pair(dilation, n) or [1] * n
        args = [g.v(input), g.v(weight)] + ([g.v(bias)] if bias is not None else [])
        return g.op(
            "Conv",
            *args,
            kernel_shape=list(weight.shape[2:]),
            strides=_pair(stride, n) or [1] * n,
            pads=_conv_pads(padding if padding is not None else 0, weight, dil, n),
            dilations=dil,
            group=int(groups),
        )

    return export


def _conv_transpose(n):
    def export(
        g,
        input,
        weight,
        bias=None,
        stride=None,
        padding=None,
        output_padding=None,
        groups=1,
        dilation=None,
    ):
        p = _pair(padding, n) or [0] * n
        args = [g.v(input), g.v(weight)] + ([g.v(bias)] if bias is not None else [])
        return g.op(
            "ConvTranspose",
            *args,
            kernel_shape=list(weight.shape[2:]),
            strides=_pair(stride, n) or [1] * n,
            pads=p + p,
            output_padding=_pair(output_padding, n) or [0] * n,
            dilations=_pair(dilation, n) or [1] * n,
            group=int(groups),
        )

    return export


for _n in (1, 2, 3):
    EXPORTERS[f"F.conv{_n}d"] = _conv(_n)
    EXPORTERS[f"F.conv_transpose{_n}d"] = _conv_transpose(_n)


def _pool_attrs(n, kernel_size, stride, padding, ceil_mode):
    k = _pair(kernel_size, n)
    s = _pair(stride, n) if stride not in (None, [], ()) else k
    p = _pair(padding, n) or [0] * n
    return {"kernel_shape": k, "strides": s, "pads": p + p, "ceil_mode": int(bool(ceil_mode))}


def _max_pool(n):
    def export(
        g,
        input,
        kernel_size,
        stride=None,
        padding=0,
        dilation=1,
        ceil_mode=False,
        return_indices=False,
    ):
        if return_indices:
            raise UnsupportedOperatorError(
                f"rumus.onnx.export: max_pool{n}d(return_indices=True) has no exporter"
            )
        attrs = _pool_attrs(n, kernel_size, stride, padding, ceil_mode)
        return g.op("MaxPool", g.v(input), dilations=_pair(dilation, n) or [1] * n, **attrs)

    return export


def _avg_pool(n):
    def export(
        g,
        input,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode=False,
        count_include_pad=True,
        divisor_override=None,
    ):
        if divisor_override is not None:
            raise UnsupportedOperatorError(
                f"rumus.onnx.export: avg_pool{n}d(divisor_override=...) has no exporter"
            )
        attrs = _pool_attrs(n, kernel_size, stride, padding, ceil_mode)
        return g.op(
            "AveragePool", g.v(input), count_include_pad=int(bool(count_include_pad)), **attrs
        )

    return export


def _adaptive(n, kind):
    def export(g, input, output_size, return_indices=False):
        if return_indices:
            raise UnsupportedOperatorError(
                f"rumus.onnx.export: adaptive_max_pool{n}d(return_indices=True) has no exporter"
            )
        insize = list(input.shape[-n:])
        out = [i if o is None else int(o) for o, i in zip(_pair(output_size, n), insize)]
        if all(o == 1 for o in out):
            return g.op(f"Global{kind}Pool", g.v(input))
        if any(i % o for i, o in zip(insize, out)):
            raise UnsupportedOperatorError(
                f"rumus.onnx.export: adaptive_{kind.lower()}_pool{n}d from {insize} to {out} "
                "(sizes that do not divide evenly) has no exporter"
            )
        k = [i // o for i, o in zip(insize, out)]
        return g.op(f"{kind}Pool", g.v(input), kernel_shape=k, strides=k)

    return export


for _n in (1, 2):
    EXPORTERS[f"F.max_pool{_n}d"] = _max_pool(_n)
    EXPORTERS[f"F.avg_pool{_n}d"] = _avg_pool(_n)
    EXPORTERS[f"F.adaptive_avg_pool{_n}d"] = _adaptive(_n, "Average")
    EXPORTERS[f"F.adaptive_max_pool{_n}d"] = _adaptive(_n, "Max")


@exporter("F.layer_norm")
def _layer_norm(g, input, normalized_shape, weight=None, bias=None, eps=1e-5):
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    if weight is None:
        weight = rumus.ones(shape, dtype=input.dtype)
    args = [g.v(input), g.v(weight)] + ([g.v(bias)] if bias is not None else [])
    return g.op("LayerNormalization", *args, axis=-len(shape), epsilon=float(eps))


@exporter("F.batch_norm")
def _batch_norm(
    g,
    input,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training=False,
    momentum=0.1,
    eps=1e-5,
):
    c = input.shape[1]
    if weight is None:
        weight = rumus.ones(c, dtype=input.dtype)
    if bias is None:
        bias = rumus.zeros(c, dtype=input.dtype)
    args = [g.v(t) for t in (input, weight, bias, running_mean, running_var)]
    return g.op("BatchNormalization", *args, epsilon=float(eps))


def _batch_stats(args, kwargs):
    training = kwargs.get("training", args[5] if len(args) > 5 else False)
    return training or (args[1] if len(args) > 1 else kwargs.get("running_mean")) is None


# With batch statistics, F.batch_norm is traced through (mean, var...); the running statistics
# it updates are not part of the exported graph.
_batch_norm.transparent_if = _batch_stats


@exporter("F.group_norm")
def _group_norm(g, input, num_groups, weight=None, bias=None, eps=1e-5):
    nd = input.dim()
    x = g.op("Reshape", g.v(input), g.ints([0, num_groups, -1]))
    mean = g.reduce("ReduceMean", x, [-1], True)
    d = g.op("Sub", x, mean)
    var = g.reduce("ReduceMean", g.op("Mul", d, d), [-1], True)
    y = g.op("Div", d, g.op("Sqrt", g.op("Add", var, g.scalar(eps, input))))
    y = g.op("Reshape", y, g.op("Shape", g.v(input)))
    bshape = [-1] + [1] * (nd - 2)
    if weight is not None:
        y = g.op("Mul", y, g.op("Reshape", g.v(weight), g.ints(bshape)))
    if bias is not None:
        y = g.op("Add", y, g.op("Reshape", g.v(bias), g.ints(bshape)))
    return y


@exporter("F.embedding")
def _embedding(g, input, weight, padding_idx=None, max_norm=None, *args, **kwargs):
    if max_norm is not None:
        raise UnsupportedOperatorError("rumus.onnx.export: embedding(max_norm=...) renormalizes")
    return g.op("Gather", g.v(weight), g.v(input), axis=0)


@exporter("F.pad")
def _pad(g, input, pad, mode="constant", value=None):
    if mode != "constant":
        raise UnsupportedOperatorError(f"rumus.onnx.export: pad(mode={mode!r}) has no exporter")
    nd, pad = input.dim(), [int(p) for p in pad]
    begins, ends = [0] * nd, [0] * nd
    for i in range(len(pad) // 2):
        begins[nd - 1 - i], ends[nd - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return g.op("Pad", g.v(input), g.ints(begins + ends), g.scalar(value or 0.0, input))


@exporter("F.dropout", "F.dropout1d", "F.dropout2d", "F.dropout3d", "F.alpha_dropout")
def _dropout(g, input, p=0.5, training=True, inplace=False):
    if not training or p == 0.0:
        return g.v(input)
    if g.current_name != "F.dropout":
        raise UnsupportedOperatorError(
            f"rumus.onnx.export: {g.current_name} in training mode has no exporter"
        )
    ratio = g.scalar(float(p), input)
    return g.op("Dropout", g.v(input), ratio, g.const(np.array(True)))


# ----------------------------------------------------------------- reductions


def _reduction(onnx_op):
    def export(g, x, dim=None, keepdim=False, *, dtype=None):
        v = g.v(x)
        if dtype is not None:
            v = g.op("Cast", v, to=g.dtype(dtype))
        elif onnx_op == "ReduceSum" and not (x.is_floating_point() or x.dtype == rumus.int64):
            v = g.op("Cast", v, to=g.dtype(rumus.int64))  # bool/int sums are int64
        if x.dim() == 0:
            return g.op("Identity", v)
        return g.reduce(onnx_op, v, _dims(dim, x.dim()), keepdim)

    return export


EXPORTERS["sum"] = _reduction("ReduceSum")
EXPORTERS["mean"] = _reduction("ReduceMean")
EXPORTERS["amax"] = _reduction("ReduceMax")
EXPORTERS["amin"] = _reduction("ReduceMin")
EXPORTERS["prod"] = _reduction("ReduceProd")
EXPORTERS["logsumexp"] = _reduction("ReduceLogSumExp")


def _max_min(reduce_op, arg_op, pair_op):
    def export(g, x, dim=None, keepdim=False):
        if isinstance(dim, rumus.Tensor):
            return g.op(pair_op, g.v(x), g.v(dim))
        if dim is None:
            return g.reduce(reduce_op, g.v(x), _dims(None, x.dim()), False)
        d = _dims(dim, x.dim())[0]
        values = g.reduce(reduce_op, g.v(x), [d], keepdim)
        indices = g.op(arg_op, g.v(x), axis=d, keepdims=int(bool(keepdim)))
        return [values, indices]

    return export


EXPORTERS["max"] = _max_min("ReduceMax", "ArgMax", "Max")
EXPORTERS["min"] = _max_min("ReduceMin", "ArgMin", "Min")


def _arg(onnx_op):
    def export(g, x, dim=None, keepdim=False):
        v = g.v(x)
        if dim is None:
            v, dim, keepdim = g.op("Reshape", v, g.ints([-1])), 0, False
        return g.op(onnx_op, v, axis=_dims(dim, x.dim())[0], keepdims=int(bool(keepdim)))

    return export


def _all_any(onnx_op):
    def export(g, x, dim=None, keepdim=False):
        v = g.op("Cast", g.v(x), to=g.dtype(rumus.int32))
        if x.dim():
            v = g.reduce(onnx_op, v, _dims(dim, x.dim()), keepdim)
        return g.op("Cast", v, to=g.dtype(rumus.bool))

    return export


EXPORTERS["all"] = _all_any("ReduceMin")
EXPORTERS["any"] = _all_any("ReduceMax")
EXPORTERS["argmax"] = _arg("ArgMax")
EXPORTERS["argmin"] = _arg("ArgMin")


@exporter("var", "std")
def _var(g, x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    dims = _dims(dim, x.dim())
    v = g.v(x)
    d = g.op("Sub", v, g.reduce("ReduceMean", v, dims, True))
    sq = g.reduce("ReduceMean", g.op("Mul", d, d), dims, keepdim)
    n = math.prod(x.shape[i] for i in dims)
    if correction:
        sq = g.op("Mul", sq, g.scalar(n / max(n - correction, 0), x))
    return g.op("Sqrt", sq) if g.current_name == "std" else sq


@exporter("log1p")
def _log1p(g, x):
    return g.op("Log", g.op("Add", g.v(x), g.scalar(1.0, x)))


@exporter("expm1")
def _expm1(g, x):
    return g.op("Sub", g.op("Exp", g.v(x)), g.scalar(1.0, x))


@exporter("exp2")
def _exp2(g, x):
    return g.op("Pow", g.scalar(2.0, x), g.v(x))


@exporter("floor_divide", "__floordiv__", "__rfloordiv__")
def _floor_divide(g, a, b):
    out = g.current_outputs[0]
    if g.current_name == "__rfloordiv__":
        a, b = b, a
    work = out.dtype if out.is_floating_point() else rumus.float64
    res = g.op("Floor", g.op("Div", g.v(a, dtype=work), g.v(b, dtype=work)))
    return res if work == out.dtype else g.op("Cast", res, to=g.dtype(out.dtype))


@exporter("tril", "triu")
def _trilu(g, x, diagonal=0):
    upper = int(g.current_name == "triu")
    return g.op("Trilu", g.v(x), g.ints(int(diagonal), scalar=True), upper=upper)


@exporter("cumsum")
def _cumsum(g, x, dim, *, dtype=None):
    v = g.v(x)
    out = g.current_outputs[0]
    if out.dtype != x.dtype:
        v = g.op("Cast", v, to=g.dtype(out.dtype))
    return g.op("CumSum", v, g.ints(_dims(dim, max(x.dim(), 1))[0], scalar=True))


def _addmm_like(g, input, a, b, *, beta=1, alpha=1):
    prod = g.op("MatMul", g.v(a), g.v(b))
    if alpha != 1:
        prod = g.op("Mul", prod, g.scalar(alpha, a))
    base = g.v(input)
    if beta != 1:
        base = g.op("Mul", base, g.scalar(beta, a))
    return g.op("Add", base, prod) if beta != 0 else prod


for _name in ("addmm", "baddbmm", "addbmm", "addmv"):
    EXPORTERS[_name] = _addmm_like


def _addbmm(g, input, a, b, *, beta=1, alpha=1):
    total = g.reduce("ReduceSum", g.op("MatMul", g.v(a), g.v(b)), [0], False)
    if alpha != 1:
        total = g.op("Mul", total, g.scalar(alpha, a))
    base = g.v(input)
    if beta != 1:
        base = g.op("Mul", base, g.scalar(beta, a))
    return g.op("Add", base, total) if beta != 0 else total


EXPORTERS["addbmm"] = _addbmm


@exporter("rumus.einsum")
def _einsum(g, equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return g.op("Einsum", *[g.v(t) for t in operands], equation=equation.replace(" ", ""))
