"""``vmap``: run a function once on whole batches.

A batched value is a ``_BatchedTensor``: a real tensor whose dim 0 is the batch dim of one vmap
level, seen by the function as the tensor without that dim. While a vmap is active the public
functions of ``rumus`` and ``rumus.nn.functional`` are wrapped (as ``rumus.onnx`` does during
export); a call that receives a batched value goes to a batching rule, which calls the op ONCE
on the underlying tensors with dim arguments shifted past the batch dim. Methods and operators
of a batched value go to the same rules. Nested vmaps nest the wrappers: the value of a level-2
batched tensor is a level-1 batched tensor, so a rule's calls dispatch again one level down.

A native op without a rule raises NotImplementedError naming it; a Python function without a
rule runs as is (the ops it calls are batched)."""

import functools
import operator
import threading
import types

import rumus
import rumus.nn.functional as F
from rumus import Tensor

_STATE = threading.local()
_LOCK = threading.RLock()


def _levels():
    """The active vmap levels, outermost first: [(level, batch size, randomness)]."""
    if not hasattr(_STATE, "levels"):
        _STATE.levels = []
    return _STATE.levels


class _BatchedTensor:
    """A tensor batched at vmap ``level``: ``_value`` has the batch as dim 0."""

    __slots__ = ("_value", "_level")

    def __init__(self, value, level):
        self._value = value
        self._level = level

    # Metadata describes the per-sample (logical) tensor.
    @property
    def shape(self):
        return rumus.Size(tuple(self._value.shape)[1:])

    def size(self, dim=None):
        shape = self.shape
        return shape if dim is None else shape[_norm(dim, len(shape))]

    def dim(self):
        return self._value.dim() - 1

    ndim = property(dim)
    ndimension = dim

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __len__(self):
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    dtype = property(lambda self: self._value.dtype)
    device = property(lambda self: self._value.device)
    requires_grad = property(lambda self: self._value.requires_grad)
    is_floating_point = lambda self: self._value.is_floating_point()  # noqa: E731
    T = property(lambda self: _dispatch("permute", None, (self, list(range(self.dim()))[::-1]), {}))
    mT = property(lambda self: _dispatch("transpose", None, (self, -2, -1), {}))

    def __repr__(self):
        return f"BatchedTensor(lvl={self._level}, bdim=0, value={self._value!r})"

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        attr = _PATCH["tensor"].get(name) or getattr(Tensor, name, None)
        if attr is None:
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")
        if not callable(attr):
            raise NotImplementedError(f"vmap: no batching rule for Tensor.{name}")
        if name not in RULES and isinstance(attr, types.FunctionType):
            # a Python method: its ops are batched
            return lambda *a, **k: _composite(f"Tensor.{name}", attr, (self, *a), k)
        return functools.partial(_dispatch, name, None, self_first=self)

    def __setitem__(self, index, value):
        raise NotImplementedError(
            "vmap: no batching rule for Tensor.__setitem__ (in-place writes into a batched "
            "tensor); build the result with torch.where / cat instead"
        )

    __hash__ = object.__hash__
    __iter__ = None

    def __getitem__(self, index):
        return _dispatch("__getitem__", None, (self, index), {})

    def __bool__(self):
        raise RuntimeError(_READ.format("__bool__"))

    __float__ = __int__ = __index__ = __bool__


_READ = (
    "vmap: {} reads the values of a batched tensor into Python, which has a different value "
    "for every sample; keep the computation in tensor ops"
)


def _binop(name, rule, reverse=False):
    op = getattr(operator, name)

    def method(self, other):
        args = (other, self) if reverse else (self, other)
        return _apply_dispatch(rule, op, args, {})

    return method


for _n in "add sub mul truediv floordiv mod pow matmul and_ or_ xor".split():
    _dn = _n.rstrip("_")
    setattr(_BatchedTensor, f"__{_dn}__", _binop(_n, _dn))
    setattr(_BatchedTensor, f"__r{_dn}__", _binop(_n, _dn, True))
for _n in ["lt", "le", "gt", "ge", "eq", "ne"]:
    setattr(_BatchedTensor, f"__{_n}__", _binop(_n, _n))
for _n in ["neg", "pos", "abs", "invert"]:
    setattr(
        _BatchedTensor,
        f"__{_n}__",
        (lambda op: lambda self: _apply_dispatch(op.__name__, op, (self,), {}))(
            getattr(operator, _n)
        ),
    )


def _norm(dim, ndim):
    """``dim`` of a tensor of rank ``ndim`` as a non-negative index (0-d tensors take 0, -1)."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n


def _top(args, kwargs):
    """The highest vmap level among the batched values in args/kwargs (None if none)."""
    best = None
    stack = [args, kwargs]
    while stack:
        obj = stack.pop()
        if isinstance(obj, _BatchedTensor):
            best = obj._level if best is None else max(best, obj._level)
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.values())
    return best


def _size(level):
    for lvl, size, _ in _levels():
        if lvl == level:
            return size
    raise RuntimeError("vmap: a batched tensor escaped the vmap that made it")


def _randomness(level):
    for lvl, _, randomness in _levels():
        if lvl == level:
            return randomness
    return "error"


class _Ctx:
    """What a batching rule needs: the level, the batch size, and helpers to move between the
    per-sample view and the underlying tensors."""

    def __init__(self, level):
        self.level = level
        self.size = _size(level)

    def batched(self, t):
        return isinstance(t, _BatchedTensor) and t._level == self.level

    def rank(self, t):
        """Per-sample rank at this level."""
        return t._value.dim() - 1 if self.batched(t) else t.dim()

    def value(self, t, rank=None):
        """The underlying tensor, its batch dim at 0 (expanded if ``t`` is not batched here),
        padded with size-1 dims after the batch dim up to per-sample ``rank``."""
        if self.batched(t):
            v = t._value
        else:
            v = t.unsqueeze(0).expand(self.size, *t.shape)
        r = v.dim() - 1
        if rank is not None and rank > r:
            v = v.reshape(self.size, *([1] * (rank - r)), *v.shape[1:])
        return v

    def wrap(self, out):
        if isinstance(out, (Tensor, _BatchedTensor)):
            return _BatchedTensor(out, self.level)
        if isinstance(out, tuple):
            items = [self.wrap(o) for o in out]
            return type(out)(*items) if hasattr(out, "_fields") else tuple(items)
        if isinstance(out, list):
            return [self.wrap(o) for o in out]
        return out


def _is_tensor(x):
    return isinstance(x, (Tensor, _BatchedTensor))


# ---------------------------------------------------------------------------------------------
# Rules. Each takes (ctx, fn, args, kwargs), where fn(*args, **kwargs) runs the op on the
# underlying values (it dispatches again for lower levels), and returns the batched result.


def _elementwise(ctx, fn, args, kwargs):
    """Broadcasting ops: per-sample tensors right-align, so padding the batched ones to the
    common rank after their batch dim gives every batch row its own sample."""
    tensors = [a for a in (*args, *kwargs.values()) if _is_tensor(a)]
    rank = max(ctx.rank(t) for t in tensors)

    def conv(a):
        return ctx.value(a, rank) if ctx.batched(a) else a

    return ctx.wrap(fn(*map(conv, args), **{k: conv(v) for k, v in kwargs.items()}))


def _dim_arg(args, kwargs, pos, name="dim"):
    if name in kwargs:
        return kwargs[name], lambda v: (args, {**kwargs, name: v})
    if len(args) > pos:
        return args[pos], lambda v: ((*args[:pos], v, *args[pos + 1 :]), kwargs)
    return None, lambda v: (args, {**kwargs, name: v})


def _shift(dim, rank):
    if isinstance(dim, (list, tuple)):
        return type(dim)(_norm(d, rank) + 1 for d in dim)
    return _norm(dim, rank) + 1


def _reduction(ctx, fn, args, kwargs, pos=1):
    x = args[0]
    rank = ctx.rank(x)
    dim, put = _dim_arg(args, kwargs, pos)
    v = ctx.value(x)
    if dim is None:
        keep = kwargs.get("keepdim", False)
        a, k = put(1)
        out = fn(v.reshape(ctx.size, -1), *a[1:], **k)
        if keep:
            out = out.reshape(ctx.size, *([1] * rank))
        return ctx.wrap(out)
    a, k = put(_shift(dim, rank))
    return ctx.wrap(fn(v, *a[1:], **k))


def _dim_op(positions, names=("dim",), extra_rank=0, default=None):
    """Ops whose dim arguments (at ``positions`` / keyword ``names``) index the per-sample
    tensor (rank + ``extra_rank`` for ops like unsqueeze that index the result); ``default``:
    the dim an op uses when none is given (it must not land on the batch dim)."""

    def rule(ctx, fn, args, kwargs):
        x = args[0]
        rank = ctx.rank(x) + extra_rank
        for pos, name in zip(positions, names):
            dim, put = _dim_arg(args, kwargs, pos, name)
            if dim is None:
                dim = default
            if dim is not None:
                args, kwargs = put(_shift(dim, rank))
        return ctx.wrap(fn(ctx.value(x), *args[1:], **kwargs))

    return rule


def _shape_args(args):
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else args


def _reshape(ctx, fn, args, kwargs):
    shape = _shape_args(args[1:]) if len(args) > 1 else tuple(kwargs.pop("shape", ()))
    return ctx.wrap(fn(ctx.value(args[0]), (ctx.size, *shape), **kwargs))


def _expand(ctx, fn, args, kwargs):
    sizes = _shape_args(args[1:]) if len(args) > 1 else tuple(kwargs.pop("size"))
    v = ctx.value(args[0], len(sizes))
    return ctx.wrap(v.expand(ctx.size, *sizes))


def _permute(ctx, fn, args, kwargs):
    dims = _shape_args(args[1:]) if len(args) > 1 else tuple(kwargs.pop("dims"))
    rank = ctx.rank(args[0])
    return ctx.wrap(fn(ctx.value(args[0]), (0, *(_norm(d, rank) + 1 for d in dims))))


def _t(ctx, fn, args, kwargs):
    rank = ctx.rank(args[0])
    if rank > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {rank}D")
    v = ctx.value(args[0])
    return ctx.wrap(v.transpose(1, 2) if rank == 2 else v)


def _flatten(ctx, fn, args, kwargs):
    rank = ctx.rank(args[0])
    start, put = _dim_arg(args, kwargs, 1, "start_dim")
    args, kwargs = put(_norm(0 if start is None else start, rank) + 1)
    end, put = _dim_arg(args, kwargs, 2, "end_dim")
    args, kwargs = put(_norm(-1 if end is None else end, rank) + 1)
    if rank == 0:
        return ctx.wrap(ctx.value(args[0]).reshape(ctx.size, 1))
    return ctx.wrap(fn(ctx.value(args[0]), *args[1:], **kwargs))


def _getitem(ctx, fn, args, kwargs):
    x, index = args
    items = index if isinstance(index, tuple) else (index,)
    for it in items:
        if not (it is None or it is Ellipsis or isinstance(it, (int, slice))) or isinstance(
            it, bool
        ):
            raise NotImplementedError(
                "vmap: no batching rule for Tensor.__getitem__ with a "
                f"{type(it).__name__} index (only ints, slices, None and ... are batched)"
            )
    return ctx.wrap(ctx.value(x)[(slice(None), *items)])


def _matmul(ctx, fn, args, kwargs):
    a, b = args[0], args[1]
    ra, rb = ctx.rank(a), ctx.rank(b)
    if ra == 0 or rb == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D")
    va = ctx.value(a) if ctx.batched(a) else a
    vb = ctx.value(b) if ctx.batched(b) else b
    squeeze = []
    if ctx.batched(a) and ra == 1:
        va, ra = va.unsqueeze(1), 2  # row vector per sample
        squeeze.append(-2)
    if ctx.batched(b) and rb == 1:
        vb, rb = vb.unsqueeze(-1), 2  # column vector per sample
        squeeze.append(-1)
    # Batched operands must reach the same rank as the other operand's stack so the batch dim
    # lines up; unbatched ones broadcast from the right.
    rank = max(ra, rb)
    if ctx.batched(a):
        va = va.reshape(ctx.size, *([1] * (rank - ra)), *va.shape[1:])
    if ctx.batched(b):
        vb = vb.reshape(ctx.size, *([1] * (rank - rb)), *vb.shape[1:])
    if not ctx.batched(a) and ra == 1:
        out = (vb * va.unsqueeze(-1)).sum(-2)  # vector @ batched matrices
        for d in squeeze:
            out = out.squeeze(-1)
        return ctx.wrap(out)
    if not ctx.batched(b) and rb == 1:
        out = (va * vb).sum(-1)
        for d in squeeze:
            out = out.squeeze(-1)
        return ctx.wrap(out)
    out = va @ vb
    for d in sorted(squeeze):
        out = out.squeeze(d)
    return ctx.wrap(out)


def _mm(ctx, fn, args, kwargs):
    a, b = args[0], args[1]
    want = 3 if fn is _BMM else 2
    for t in (a, b):
        if ctx.rank(t) != want:
            raise RuntimeError(f"self must be a {want}D tensor")
    return _matmul(ctx, None, (a, b), {})


_BMM = object()


def _linear(ctx, fn, args, kwargs):
    x, w = args[0], args[1]
    b = args[2] if len(args) > 2 else kwargs.get("bias")
    out = rumus.matmul(x, w.transpose(-1, -2)) if ctx.rank(w) == 2 else rumus.matmul(x, w)
    return out if b is None else out + b


def _cat(stack):
    def rule(ctx, fn, args, kwargs):
        tensors = args[0]
        dim, put = _dim_arg(args, kwargs, 1)
        rank = max(ctx.rank(t) for t in tensors) + (1 if stack else 0)
        vals = [ctx.value(t) for t in tensors]
        args, kwargs = put(_norm(0 if dim is None else dim, rank) + 1)
        return ctx.wrap(fn(vals, *args[1:], **kwargs))

    return rule


def _mse_loss(ctx, fn, args, kwargs):
    x, y = args[0], args[1]
    reduction = kwargs.get("reduction", args[4] if len(args) > 4 else "mean")
    d = x - y
    loss = d * d
    if reduction == "none":
        return loss
    return loss.mean() if reduction == "mean" else loss.sum()


def _cross_entropy(ctx, fn, args, kwargs):
    names = ["input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction"]
    kw = dict(zip(names, args))
    kw.update(kwargs)
    if kw.pop("size_average", None) is not None or kw.pop("reduce", None) is not None:
        raise NotImplementedError(
            "vmap: no batching rule for F.cross_entropy with the deprecated size_average/reduce"
        )
    x, target = kw.pop("input"), kw.pop("target")
    reduction = kw.pop("reduction", "mean")
    weight = kw.get("weight")
    if isinstance(weight, _BatchedTensor):
        raise NotImplementedError("vmap: no batching rule for F.cross_entropy with batched weight")
    rank = ctx.rank(x)
    v, t = ctx.value(x), ctx.value(target)
    probs = t.is_floating_point()
    if rank == 1:  # one sample per batch row: the loss is per row already
        out = fn(v, t, reduction="none", **kw)
        if reduction == "mean" and not probs:  # a weighted mean of one term
            keep = (t != kw.get("ignore_index", -100)).to(out.dtype)
            w = keep if weight is None else weight[t.clamp(min=0)] * keep
            out = out / w
        return ctx.wrap(out)
    # (N, C, *d) per sample: fold the batch into N.
    n = v.shape[1]
    loss = fn(v.reshape(ctx.size * n, *v.shape[2:]), t.reshape(ctx.size * n, *t.shape[2:]),
              reduction="none", **kw)  # fmt: skip
    if reduction == "none":
        return ctx.wrap(loss.reshape(ctx.size, n, *loss.shape[1:]))
    loss = loss.reshape(ctx.size, -1)
    if reduction == "sum":
        return ctx.wrap(loss.sum(1))
    if probs:
        return ctx.wrap(loss.sum(1) / (loss.shape[1]))
    ignore = kw.get("ignore_index", -100)
    keep = (t != ignore).reshape(ctx.size, -1)
    if weight is not None:
        w = weight[t.clamp(min=0).reshape(-1)].reshape(ctx.size, -1) * keep.to(weight.dtype)
    else:
        w = keep.to(loss.dtype)
    return ctx.wrap(loss.sum(1) / w.sum(1))


def _unbatched_params(ctx, name, args, kwargs):
    for a in (*args[1:], *kwargs.values()):
        if ctx.batched(a):
            raise NotImplementedError(
                f"vmap: no batching rule for {name} with batched weights (only its input may "
                "be batched)"
            )


def _fold_batch(name, base_rank):
    """Ops that take a leading batch dim (convs, pools): per-sample inputs without it use the
    vmap batch as theirs; with it, the vmap batch folds into theirs and back."""

    def rule(ctx, fn, args, kwargs):
        _unbatched_params(ctx, name, args, kwargs)
        rank, v = ctx.rank(args[0]), ctx.value(args[0])
        if rank == base_rank - 1:
            return ctx.wrap(fn(v, *args[1:], **kwargs))
        if rank != base_rank:
            raise RuntimeError(
                f"{name}: expected a {base_rank - 1}D or {base_rank}D input per sample, got {rank}D"
            )
        out = fn(v.reshape(ctx.size * v.shape[1], *v.shape[2:]), *args[1:], **kwargs)
        if isinstance(out, tuple):  # (values, indices) of max pooling
            return type(out)(ctx.wrap(o.reshape(ctx.size, -1, *o.shape[1:])) for o in out)
        return ctx.wrap(out.reshape(ctx.size, -1, *out.shape[1:]))

    return rule


def _last_dims(name):
    """Ops acting on the trailing dims with unbatched parameters (layer_norm, embedding)."""

    def rule(ctx, fn, args, kwargs):
        _unbatched_params(ctx, name, args, kwargs)
        return ctx.wrap(fn(ctx.value(args[0]), *args[1:], **kwargs))

    return rule


def _random(ctx, fn, args, kwargs):
    mode = _randomness(ctx.level)
    if mode == "different":
        return ctx.wrap(fn(ctx.value(args[0]), *args[1:], **kwargs))
    if mode == "same":
        raise NotImplementedError("vmap: randomness='same' is not supported for random ops")
    raise RuntimeError(
        "vmap: called random operation while in randomness error mode. Please either use the "
        "'same' or 'different' randomness flags on vmap or perform the randomness operation "
        "out of vmap"
    )


def _dropout(ctx, fn, args, kwargs):
    training = kwargs.get("training", args[2] if len(args) > 2 else True)
    p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
    if not training or p == 0:
        return ctx.wrap(fn(ctx.value(args[0]), *args[1:], **kwargs))
    return _random(ctx, fn, args, kwargs)


def _read(name):
    def rule(ctx, fn, args, kwargs):
        raise RuntimeError(_READ.format(f"{name}()"))

    return rule


def _max_min(whole, ctx, fn, args, kwargs):
    """max(x) / max(x, dim) reduce; max(x, other) is elementwise."""
    other = args[1] if len(args) > 1 else kwargs.get("other")
    if _is_tensor(other):
        return _elementwise(ctx, fn, args, kwargs)
    if len(args) == 1 and "dim" not in kwargs:  # a value, not (values, indices)
        flat = ctx.value(args[0]).reshape(ctx.size, -1)
        return ctx.wrap(getattr(flat, whole)(1))
    return _reduction(ctx, fn, args, kwargs)


_UNARY = """abs neg negative exp exp2 expm1 log log2 log10 log1p sqrt rsqrt square sin cos tan
asin acos atan sinh cosh tanh asinh acosh atanh sigmoid relu relu_ erf erfc erfinv sign sgn
floor ceil round trunc frac reciprocal clamp clip clamp_min clamp_max nan_to_num logit
contiguous clone detach float double half bfloat16 int long bool to type_as abs_ exp_ neg_
sigmoid_ tanh_ zero_ fill_ mul_ add_ sub_ div_ clamp_ isnan isinf isfinite logical_not
bitwise_not pos invert deg2rad rad2deg xlogy hardshrink softshrink zeros_like ones_like full_like
empty_like requires_grad_ retain_grad""".split()
_BINARY = """add sub subtract mul multiply div divide true_divide floor_divide remainder fmod
pow float_power atan2 maximum minimum fmax fmin eq ne lt le gt ge greater less greater_equal
less_equal not_equal logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor where
lerp addcmul addcdiv hypot copysign truediv floordiv mod and or xor isclose""".split()
_F_UNARY = """relu relu6 gelu silu mish tanh sigmoid softplus elu selu celu leaky_relu hardtanh
hardsigmoid hardswish logsigmoid tanhshrink softsign threshold""".split()
_REDUCTIONS = """sum mean prod amax amin logsumexp std var argmax argmin all any
count_nonzero nansum nanmean""".split()
_DIM_OPS = "softmax log_softmax cumsum cumprod flip".split()

RULES = {}
for _n in _UNARY + _BINARY:
    RULES[_n] = _elementwise
for _n in _F_UNARY:
    RULES[f"F.{_n}"] = _elementwise
for _n in _REDUCTIONS:
    RULES[_n] = _reduction
for _n in _DIM_OPS:
    RULES[_n] = _dim_op([1])
    RULES[f"F.{_n}"] = _dim_op([1])
RULES.update(
    {
        "matmul": _matmul,
        "mm": _mm,
        "bmm": lambda ctx, fn, a, k: _mm(ctx, _BMM, a, k),
        "mv": _matmul,
        "dot": _matmul,
        "F.linear": _linear,
        "reshape": _reshape,
        "view": _reshape,
        "expand": _expand,
        "permute": _permute,
        "transpose": _dim_op([1, 2], ("dim0", "dim1")),
        "swapaxes": _dim_op([1, 2], ("axis0", "axis1")),
        "swapdims": _dim_op([1, 2], ("dim0", "dim1")),
        "movedim": _dim_op([1, 2], ("source", "destination")),
        "unsqueeze": _dim_op([1], extra_rank=1),
        "squeeze": lambda ctx, fn, a, k: (
            _dim_op([1])(ctx, fn, a, k)
            if len(a) > 1 or "dim" in k
            else ctx.wrap(ctx.value(a[0]).reshape(ctx.size, *[s for s in a[0].shape if s != 1]))
        ),
        "flatten": _flatten,
        "t": _t,
        "__getitem__": _getitem,
        "cat": _cat(False),
        "concat": _cat(False),
        "concatenate": _cat(False),
        "stack": _cat(True),
        "unbind": _dim_op([1], default=0),
        "split": _dim_op([2], default=0),
        "chunk": _dim_op([2], default=0),
        "linalg.vector_norm": lambda ctx, fn, a, k: _reduction(ctx, fn, a, k, pos=2),
        "max": functools.partial(_max_min, "amax"),
        "min": functools.partial(_max_min, "amin"),
        "F.mse_loss": _mse_loss,
        "F.layer_norm": _last_dims("F.layer_norm"),
        "F.embedding": _last_dims("F.embedding"),
        "F.one_hot": _last_dims("F.one_hot"),
        "F.cross_entropy": _cross_entropy,
        "F.dropout": _dropout,
        "rand_like": _random,
        "randn_like": _random,
        "bernoulli": _random,
        "item": _read("item"),
        "tolist": _read("tolist"),
        "numpy": _read("numpy"),
    }
)
# ops with a leading batch dim, and their input rank with it
_FOLD = {"conv1d": 3, "conv2d": 4, "conv3d": 5, "conv_transpose1d": 3, "conv_transpose2d": 4}
for _d in (1, 2, 3):
    for _p in ("max_pool", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool"):
        _FOLD[f"{_p}{_d}d"] = _d + 2
for _n, _r in _FOLD.items():
    RULES[f"F.{_n}"] = _fold_batch(f"F.{_n}", _r)
RULES["F.normalize"] = None  # Python composite: batched through the ops it calls


def _apply_dispatch(name, fn, args, kwargs):
    level = _top(args, kwargs)
    if level is None:
        return fn(*args, **kwargs)
    rule = RULES.get(name)
    if rule is None:
        raise NotImplementedError(f"vmap: no batching rule for {name}")
    ctx = _Ctx(level)
    return rule(ctx, fn, args, kwargs)


def _dispatch(name, fn, *args, self_first=None, **kwargs):
    """Method call ``Tensor.name(*args)`` where an argument is a batched tensor (the method
    of a batched tensor when ``self_first`` is given)."""
    if self_first is not None:
        args = (self_first, *args)
    else:  # called as _dispatch(name, None, args_tuple, kwargs_dict)
        args, kwargs = args[0], args[1]
    key = name
    if name not in RULES and name.endswith("_") and name[:-1] in RULES and name[:-1] in _UNARY:
        key = name[:-1]
    if key not in RULES:
        raise NotImplementedError(f"vmap: no batching rule for Tensor.{name}")

    def method(x, *a, **k):
        return getattr(x, name)(*a, **k)

    return _apply_dispatch(key, method, args, kwargs)


# ---------------------------------------------------------------------------------------------
# Wrapping the public functions while a vmap runs.


def _wrap(name, key, orig):
    native = not isinstance(orig, types.FunctionType)

    def wrapper(*args, **kwargs):
        if _top(args, kwargs) is None:
            return orig(*args, **kwargs)
        if key in RULES and RULES[key] is not None:
            mod, _, short = key.rpartition(".")
            current = getattr(_MODULES[mod] if mod else rumus, short if mod else key)
            return _apply_dispatch(key, current, args, kwargs)
        if not native:
            return _composite(name, orig, args, kwargs)
        raise NotImplementedError(f"vmap: no batching rule for {name}")

    try:
        functools.update_wrapper(wrapper, orig)
    except (AttributeError, TypeError):
        pass
    return wrapper


def _wrap_method(name, orig):
    """Tensor methods of plain tensors that get a batched argument: an operator hands over to
    the batched tensor's reflected operator; a method goes to its rule."""
    native = not isinstance(orig, types.FunctionType)
    dunder = name.startswith("__")

    def wrapper(*args, **kwargs):
        if _top(args, kwargs) is None:
            return orig(*args, **kwargs)
        if dunder:
            return NotImplemented
        if name in RULES or (name.endswith("_") and name[:-1] in _UNARY):
            return _dispatch(name, None, args, kwargs)
        if not native:
            return _composite(f"Tensor.{name}", orig, args, kwargs)
        raise NotImplementedError(f"vmap: no batching rule for Tensor.{name}")

    try:
        functools.update_wrapper(wrapper, orig)
    except (AttributeError, TypeError):
        pass
    return wrapper


def _composite(name, fn, args, kwargs):
    """A Python function without a rule runs as is (the ops it calls are batched); a native
    function it hands a batched tensor to directly has no rule: name the public op."""
    try:
        return fn(*args, **kwargs)
    except TypeError as e:
        if "_BatchedTensor" in str(e):
            raise NotImplementedError(f"vmap: no batching rule for {name}") from e
        raise


_MODULES = {"F": F, "linalg": rumus.linalg, "special": rumus.special}
_PATCH = {"depth": 0, "saved": [], "wrappers": {}, "tensor": {}}
# Operators of plain tensors that must give way to a batched operand's reflected operator.
_OPERATORS = {f"__{n}__" for n in ("add sub mul truediv floordiv mod pow matmul and or xor lt le "
              "gt ge eq ne").split()}  # fmt: skip


def _enter():
    _LOCK.acquire()
    if _PATCH["depth"] == 0:
        try:
            _patch()
        except BaseException:
            _PATCH["depth"] = 1
            _exit()
            raise
    _PATCH["depth"] += 1


_PLAN = []  # [(owner, name, original, wrapper)]: built once, rebuilt if an original changed


def _build_plan():
    plan = []
    for name, obj in list(Tensor.__dict__.items()):
        if name.startswith("__") and name not in _OPERATORS:
            continue
        if name.startswith("_") and not name.startswith("__"):
            continue
        if not callable(obj) or isinstance(obj, (type, staticmethod, classmethod)):
            continue
        plan.append((Tensor, name, obj, _wrap_method(name, obj)))
    mods = ((rumus, "rumus"), (F, "F"), (rumus.linalg, "linalg"), (rumus.special, "special"))
    for mod, prefix in mods:
        for name, obj in list(vars(mod).items()):
            if name.startswith("_") or not callable(obj) or isinstance(obj, type):
                continue
            if isinstance(obj, types.ModuleType):
                continue
            key = name if prefix == "rumus" else f"{prefix}.{name}"
            if prefix == "F" and key not in RULES and name in RULES:
                key = name  # F.softmax... share the Tensor rule
            plan.append((mod, name, obj, _wrap(f"{prefix}.{name}", key, obj)))
    from ._transforms import batched_autograd_grad

    ag = rumus.autograd
    plan.append((ag, "grad", ag.grad, batched_autograd_grad(ag.grad)))
    _PLAN[:] = plan


def _patch():
    if not _PLAN or any(owner.__dict__.get(name) is not obj for owner, name, obj, _ in _PLAN):
        _build_plan()
    saved, tensor, wrappers = _PATCH["saved"], _PATCH["tensor"], _PATCH["wrappers"]
    for owner, name, obj, w in _PLAN:
        saved.append((owner, name, obj))
        if owner is Tensor:
            tensor[name] = obj
        else:
            wrappers.setdefault(id(obj), w)
        setattr(owner, name, w)


def _exit():
    try:
        _PATCH["depth"] -= 1
        if _PATCH["depth"] == 0:
            while _PATCH["saved"]:
                mod, name, obj = _PATCH["saved"].pop()
                setattr(mod, name, obj)
            _PATCH["wrappers"].clear()
            _PATCH["tensor"].clear()
    finally:
        _LOCK.release()


# ---------------------------------------------------------------------------------------------
# vmap itself.


def _flatten_tree(tree, dims, path, out, what):
    """Pairs every tensor leaf of ``tree`` with its in_dim, walking ``dims`` alongside."""
    if isinstance(dims, (list, tuple, dict)) and not isinstance(tree, type(dims)):
        if not (isinstance(dims, (list, tuple)) and isinstance(tree, (list, tuple))):
            raise ValueError(
                f"vmap: in_dims is not compatible with the structure of inputs: {what}{path} "
                f"is a {type(tree).__name__} but in_dims there is a {type(dims).__name__}"
            )
    if isinstance(tree, (list, tuple)):
        if isinstance(dims, (list, tuple)) and len(dims) != len(tree):
            raise ValueError(
                f"vmap: in_dims is not compatible with the structure of inputs: {what}{path} "
                f"has {len(tree)} entries but in_dims has {len(dims)}"
            )
        for i, t in enumerate(tree):
            d = dims[i] if isinstance(dims, (list, tuple)) else dims
            _flatten_tree(t, d, f"{path}[{i}]", out, what)
    elif isinstance(tree, dict):
        if isinstance(dims, dict) and set(dims) != set(tree):
            raise ValueError(
                f"vmap: in_dims is not compatible with the structure of inputs: the keys of "
                f"{what}{path} are {sorted(tree)} but in_dims has {sorted(dims)}"
            )
        for k, t in tree.items():
            d = dims[k] if isinstance(dims, dict) else dims
            _flatten_tree(t, d, f"{path}[{k!r}]", out, what)
    else:
        if dims is not None and not isinstance(dims, int) or isinstance(dims, bool):
            raise ValueError(
                f"vmap: in_dims must be an int, None or a pytree of them; got {dims!r} at "
                f"{what}{path}"
            )
        if dims is not None and not _is_tensor(tree):
            raise ValueError(
                f"vmap: Got in_dim={dims} for an input but the input is of type "
                f"{type(tree).__name__}. We cannot vmap over non-Tensor arguments, please use "
                "None as the respective in_dim"
            )
        out.append((f"{what}{path}", tree, dims))


def _rebuild(tree, leaves):
    if isinstance(tree, (list, tuple)):
        items = [_rebuild(t, leaves) for t in tree]
        if hasattr(tree, "_fields"):
            return type(tree)(*items)
        return type(tree)(items)
    if isinstance(tree, dict):
        return {k: _rebuild(v, leaves) for k, v in tree.items()}
    return leaves.pop(0)


def _map_out(out, dims, fn, path="output"):
    if isinstance(out, (list, tuple)):
        if isinstance(dims, (list, tuple)) and len(dims) != len(out):
            raise ValueError(
                f"vmap: out_dims has {len(dims)} entries but the function returned {len(out)}"
            )
        items = [
            _map_out(o, dims[i] if isinstance(dims, (list, tuple)) else dims, fn, f"{path}[{i}]")
            for i, o in enumerate(out)
        ]
        return type(out)(*items) if hasattr(out, "_fields") else type(out)(items)
    if isinstance(out, dict):
        return {
            k: _map_out(v, dims[k] if isinstance(dims, dict) else dims, fn, f"{path}[{k!r}]")
            for k, v in out.items()
        }
    if dims is not None and not isinstance(dims, int) or isinstance(dims, bool):
        raise ValueError(
            f"vmap: out_dims is not compatible with the structure of the outputs: {path} is a "
            f"{type(out).__name__} but its out_dims is {dims!r} (an int or None is needed)"
        )
    return fn(out, dims, path)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Vectorises ``func`` over dim ``in_dims`` of its inputs: ``func`` runs once, on batched
    tensors; the results are stacked along ``out_dims``. See the module docstring."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. Got "
            f"{randomness}"
        )
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    if not callable(func):
        raise TypeError(f"vmap: Expected `func` to be a callable, got {type(func).__name__}")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        dims = in_dims
        if isinstance(dims, (list, tuple)):
            if not isinstance(dims, tuple) or len(dims) != len(args):
                raise ValueError(
                    f"vmap: in_dims is not compatible with the structure of `inputs`. in_dims "
                    f"has structure {type(dims).__name__} of length {len(dims)} but inputs has "
                    f"{len(args)} positional arguments; in_dims must be an int, None or a tuple "
                    "with one entry per positional argument"
                )
        elif dims is not None and not isinstance(dims, int) or isinstance(dims, bool):
            raise ValueError(f"vmap: in_dims must be an int, None or a tuple of them, got {dims!r}")
        leaves = []
        _flatten_tree(list(args), list(dims) if isinstance(dims, tuple) else dims, "", leaves,
                      "args")  # fmt: skip
        size = None
        for path, t, d in leaves:
            if d is None:
                continue
            nd = t.dim()
            if not -nd <= d < nd:
                raise ValueError(
                    f"vmap: Got in_dim={d} for the input {path} but it only has {nd} "
                    f"dimension(s); in_dim must be in [{-nd}, {nd - 1}]"
                )
            n = t.shape[d]
            if size is None:
                size = n
            elif n != size:
                raise ValueError(
                    "vmap: Expected all tensors to have the same size in the mapped dimension, "
                    f"got sizes {size} and {n} (at {path}, in_dim={d})"
                )
        if size is None:
            raise ValueError(
                "vmap: at least one input must be batched: in_dims has no int for any tensor input"
            )
        if chunk_size is not None and size > chunk_size:
            return _chunked(func, leaves, args, kwargs, size)
        return _run(func, leaves, args, kwargs, size)

    def _chunked(func, leaves, args, kwargs, size):
        outs = []
        for start in range(0, size, chunk_size):
            n = min(chunk_size, size - start)
            part = [(p, t if d is None else t.narrow(d, start, n), d) for p, t, d in leaves]
            outs.append(_run(func, part, args, kwargs, n))
        return _cat_outs(outs)

    def _cat_outs(outs):
        def join(items, dims):
            first = items[0]
            if isinstance(first, (list, tuple)):
                return type(first)(
                    join([it[i] for it in items], dims[i] if isinstance(dims, tuple) else dims)
                    for i in range(len(first))
                )
            if isinstance(first, dict):
                return {k: join([it[k] for it in items], dims) for k in first}
            return rumus.cat(items, dims)

        return join(outs, out_dims)

    def _run(func, leaves, args, kwargs, size):
        levels = _levels()
        level = (levels[-1][0] + 1) if levels else 1
        _enter()
        levels.append((level, size, randomness))
        try:
            flat = []
            for _, t, d in leaves:
                flat.append(t if d is None else _BatchedTensor(t.movedim(d, 0), level))
            new_args = _rebuild(list(args), flat)
            # vmap(rumus.exp) took the function before the wrappers existed: use its wrapper
            out = _PATCH["wrappers"].get(id(func), func)(*new_args, **kwargs)

            def unwrap(o, d, path):
                if isinstance(o, _BatchedTensor) and o._level == level:
                    v = o._value
                    if d is None:
                        raise ValueError(
                            f"vmap: out_dims is None for {path} but it is batched; it would "
                            "need to be the same for every sample"
                        )
                    return v.movedim(0, _norm(d, v.dim()))
                if not _is_tensor(o):
                    if d is None:
                        return o
                    raise ValueError(
                        f"vmap: `{func.__name__}` must only return Tensors, got type "
                        f"{type(o).__name__} for {path}; use out_dims=None for it"
                    )
                if d is None:
                    return o
                v = o.unsqueeze(0).expand(size, *o.shape)
                return v.movedim(0, _norm(d, v.dim()))

            return _map_out(out, out_dims, unwrap)
        finally:
            levels.pop()
            _exit()

    return wrapped
