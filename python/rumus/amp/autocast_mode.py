"""Autocast: regions in which PyTorch's per-device op policy picks each op's
compute dtype (``torch.autocast``).

The policy's public callables (functions of rumus, rumus.nn.functional and
rumus.linalg, and Tensor methods) are replaced by casting wrappers only while
some region is open, in any thread; outside regions the originals run
untouched, so the hot paths pay nothing. The wrappers read the calling
thread's autocast state, so other threads are unaffected. Code that kept a
reference to an op from before the region (``from rumus import matmul``)
calls the original, uncast.

Casts are ordinary recorded ops, so backward runs in the dtypes the forward
chose and float32 leaves get float32 gradients.
"""

from __future__ import annotations

import functools
import threading

from .. import _rumus
from .._rumus import Tensor

__all__ = [
    "autocast",
    "custom_fwd",
    "custom_bwd",
    "is_autocast_available",
]

_DEVICES = ("cpu", "gpu")
_DEFAULT_DTYPE = {"cpu": _rumus.bfloat16, "gpu": _rumus.float16}
_LOW = (_rumus.float16, _rumus.bfloat16)


def _device_type(device_type):
    """'cuda' is accepted for ported scripts and means rumus's GPU device."""
    if not isinstance(device_type, str):
        raise TypeError(f"autocast: device_type must be a str, got {type(device_type).__name__}")
    dev = "gpu" if device_type == "cuda" else device_type
    if dev not in _DEVICES:
        raise ValueError(
            f"autocast: unsupported device_type {device_type!r}; rumus supports 'cpu' and 'gpu'"
        )
    return dev


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast supports ``device_type`` ('cpu', 'gpu', or 'cuda' meaning 'gpu')."""
    return (device_type == "cuda" or device_type in _DEVICES) and isinstance(device_type, str)


# ---- Thread-local state (PyTorch keeps it per thread too) ----


class _State(threading.local):
    def __init__(self):
        self.enabled = {d: False for d in _DEVICES}
        self.dtype = dict(_DEFAULT_DTYPE)
        self.cache_enabled = True
        self.nesting = 0
        # Casts of float32 leaf parameters for the outermost open region:
        # id -> (tensor, version, cast).
        self.cache = {}
        # Set while a policy op runs its original: ops it calls internally are not recast.
        self.inside = False


_state = _State()


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` in this thread (no argument: the GPU,
    as PyTorch's argument-less form answers for CUDA).

    Args:
        device_type (str, optional): "cpu" or "gpu".

    Returns:
        bool: whether autocast is enabled there.
    """
    return _state.enabled[_device_type("gpu" if device_type is None else device_type)]


def set_autocast_enabled(device_type, enabled=None):
    """Turns autocast on or off for a device in this thread (``set_autocast_enabled(flag)``
    alone means the GPU, as PyTorch's one-argument form means CUDA).

    Args:
        device_type (str or bool): "cpu" or "gpu"; or the flag, for the GPU.
        enabled (bool, optional): the flag.
    """
    if enabled is None:
        device_type, enabled = "gpu", device_type
    dev = _device_type(device_type)
    _state.enabled[dev] = bool(enabled)
    if enabled:
        _Patches.acquire_manual()
    elif _state.nesting == 0 and not any(_state.enabled.values()):
        _Patches.release_manual()


def get_autocast_dtype(device_type: str):
    """The low-precision dtype autocast uses on ``device_type`` in this thread.

    Args:
        device_type (str): "cpu" or "gpu".

    Returns:
        rumus.dtype: bfloat16 or float16.
    """
    return _state.dtype[_device_type(device_type)]


def set_autocast_dtype(device_type: str, dtype) -> None:
    """Sets the low-precision dtype autocast uses on a device type (this thread).

    Args:
        device_type (str): "cpu" or "gpu" ("cuda" is taken as "gpu").
        dtype (rumus.dtype): rumus.bfloat16 or rumus.float16.
    """
    dev = _device_type(device_type)
    _state.dtype[dev] = _check_dtype(dev, dtype)


def is_autocast_cache_enabled() -> bool:
    """Whether autocast regions cache the casts of leaf tensors (this thread).

    Returns:
        bool: the cache flag.
    """
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turns the autocast weight-cast cache on or off (this thread).

    Args:
        enabled (bool): cache the casts of leaf tensors inside regions.
    """
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drops the casts autocast cached in this thread (regions clear it on exit)."""
    _state.cache.clear()


def _check_dtype(dev, dtype):
    if not isinstance(dtype, _rumus.dtype):
        raise TypeError(f"autocast: dtype must be a rumus.dtype, got {type(dtype).__name__}")
    if dtype not in _LOW:
        raise ValueError(
            f"autocast: unsupported dtype {dtype} on '{dev}'; autocast supports rumus.bfloat16 "
            "and rumus.float16"
        )
    return dtype


# ---- The context manager / decorator ----


class autocast:
    """``with rumus.autocast("cpu"):`` (bfloat16 by default) or
    ``with rumus.autocast("gpu"):`` (float16): inside, ops on PyTorch's
    lower-precision list (matmul, linear, conv, bmm, addmm, baddbmm,
    scaled_dot_product_attention...) cast floating inputs to ``dtype``; ops on
    its float32 list (losses, norms, and on the GPU softmax, exp, log, pow,
    sum...) run in float32; others run on what they are given. Also a decorator.

    Args:
        device_type (str): "cpu" or "gpu" ("cuda" is taken as "gpu").
        dtype (rumus.dtype, optional): bfloat16 or float16 (bfloat16 on the CPU and
            float16 on the GPU by default).
        enabled (bool): False turns autocast off inside the region.
        cache_enabled (bool, optional): cache the casts of leaf tensors for the region.
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        self.device = _device_type(device_type)
        self.fast_dtype = _DEFAULT_DTYPE[self.device] if dtype is None else dtype
        self._enabled = bool(enabled)
        if self._enabled:
            _check_dtype(self.device, self.fast_dtype)
        self._cache_enabled = cache_enabled
        self._saved = []

    def __enter__(self):
        s = _state
        self._saved.append((s.enabled[self.device], s.dtype[self.device], s.cache_enabled))
        s.enabled[self.device] = self._enabled
        if self._enabled:
            s.dtype[self.device] = self.fast_dtype
        if self._cache_enabled is not None:
            s.cache_enabled = bool(self._cache_enabled)
        s.nesting += 1
        _Patches.acquire()
        return self

    def __exit__(self, *exc):
        s = _state
        s.nesting -= 1
        if s.nesting == 0:
            s.cache.clear()
        s.enabled[self.device], s.dtype[self.device], s.cache_enabled = self._saved.pop()
        _Patches.release()
        return False

    def __call__(self, func):
        args = (self.device, self.fast_dtype, self._enabled, self._cache_enabled)

        @functools.wraps(func)
        def decorated(*a, **k):
            with autocast(*args):
                return func(*a, **k)

        return decorated


# ---- Casting ----


def _cast(t, dtype):
    """One recorded cast (tests count calls through this name)."""
    return t.to(dtype)


def _cached_cast(t, dtype):
    s = _state
    cacheable = (
        s.cache_enabled
        and t.dtype == _rumus.float32
        and t.requires_grad
        and t.is_leaf
        and s.nesting > 0
    )
    if not cacheable:
        return _cast(t, dtype)
    hit = s.cache.get(id(t))
    if hit is not None and hit[0] is t and hit[1] == t._version and hit[2].dtype == dtype:
        return hit[2]
    out = _cast(t, dtype)
    s.cache[id(t)] = (t, t._version, out)
    return out


def _map(x, fn):
    if isinstance(x, Tensor):
        return fn(x)
    if isinstance(x, (list, tuple)) and any(isinstance(v, Tensor) for v in x):
        return type(x)(_map(v, fn) for v in x)
    return x


def _first_tensor(args, kwargs):
    for v in (*args, *kwargs.values()):
        if isinstance(v, Tensor):
            return v
        if isinstance(v, (list, tuple)):
            for w in v:
                if isinstance(w, Tensor):
                    return w
    return None


def _eligible(t, dev):
    # float64 is never cast, as in PyTorch; nor are tensors on another device.
    return t.is_floating_point() and t.dtype != _rumus.float64 and t.device.type == dev


def _wrap(orig, policy, devices):
    """The casting wrapper of one callable; `devices`: where the policy applies."""

    @functools.wraps(orig)
    def op(*args, **kwargs):
        s = _state
        if s.inside:
            return orig(*args, **kwargs)
        first = _first_tensor(args, kwargs)
        if first is None:
            return orig(*args, **kwargs)
        dev = first.device.type
        if dev not in devices or not s.enabled.get(dev, False):
            return orig(*args, **kwargs)
        if policy == "low":
            dtype = s.dtype[dev]

            def fn(t):
                return _cached_cast(t, dtype) if _eligible(t, dev) and t.dtype != dtype else t
        elif policy == "fp32_opt" and kwargs.get("dtype") is not None:
            fn = None  # an explicit output dtype wins, as in PyTorch
        elif policy in ("fp32", "fp32_opt"):

            def fn(t):
                return _cast(t, _rumus.float32) if _eligible(t, dev) and t.dtype in _LOW else t
        elif policy == "promote":
            wide = None
            for v in (*args, *kwargs.values()):
                for t in v if isinstance(v, (list, tuple)) else (v,):
                    if isinstance(t, Tensor) and _eligible(t, dev):
                        wide = t.dtype if wide is None else _rumus.promote_types(wide, t.dtype)

            def fn(t):
                return _cast(t, wide) if _eligible(t, dev) and t.dtype != wide else t
        else:  # "banned"
            raise RuntimeError(
                f"{orig.__name__} is unsafe to autocast: under autocast its inputs may be "
                "float16. Use binary_cross_entropy_with_logits (safe to autocast), or leave "
                "the region with autocast(enabled=False) and pass float32 inputs."
            )
        if fn is not None:
            args = tuple(_map(a, fn) for a in args)
            kwargs = {k: _map(v, fn) for k, v in kwargs.items()}
        s.inside = True
        try:
            return orig(*args, **kwargs)
        finally:
            s.inside = False

    return op


# PyTorch's policy (aten/src/ATen/autocast_mode.cpp), by the names rumus
# exposes: (policy, devices, names). Names rumus lacks are skipped.
_BOTH, _CPU, _GPU = ("cpu", "gpu"), ("cpu",), ("gpu",)
_POLICY = [
    (
        "low",
        _BOTH,
        "matmul mm bmm baddbmm addmm addbmm linear conv1d conv2d conv3d "
        "conv_transpose1d conv_transpose2d conv_transpose3d prelu scaled_dot_product_attention "
        "__matmul__ __rmatmul__",
    ),
    ("low", _GPU, "addmv mv einsum multi_dot"),
    (
        "fp32",
        _BOTH,
        "mse_loss cosine_embedding_loss nll_loss hinge_embedding_loss poisson_nll_loss "
        "smooth_l1_loss cross_entropy l1_loss huber_loss margin_ranking_loss soft_margin_loss "
        "triplet_margin_loss multi_margin_loss kl_div multilabel_margin_loss "
        "binary_cross_entropy_with_logits cdist",
    ),
    (
        "fp32",
        _GPU,
        "acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow "
        "__pow__ __rpow__ softplus layer_norm group_norm rms_norm cosine_similarity pdist "
        "logsumexp interpolate",
    ),
    ("fp32_opt", _GPU, "softmax log_softmax sum prod cumsum cumprod vector_norm matrix_norm"),
    ("fp32_opt", _CPU, "prod"),
    (
        "fp32",
        _CPU,
        "binary_cross_entropy ctc_loss trace avg_pool3d max_pool3d adaptive_avg_pool3d "
        "adaptive_max_pool3d grid_sample inverse cholesky cholesky_solve cholesky_inverse pinverse "
        "inv det slogdet solve lstsq qr svd svdvals eigh eigvalsh pinv matrix_exp cond lu "
        "lu_factor lu_solve solve_triangular",
    ),
    ("banned", _GPU, "binary_cross_entropy"),
    ("promote", _GPU, "addcdiv addcmul atan2 bilinear cross dot tensordot scatter_add"),
    ("promote", _CPU, "stack cat concat concatenate index_copy"),
]


class _Patches:
    """Installs the wrappers while any region is open (counted over all threads)."""

    _lock = threading.Lock()
    _count = 0
    _manual = False
    _table = None  # [(owner, name, original, wrapper)]

    @classmethod
    def _build(cls):
        import rumus

        from .. import linalg
        from ..nn import functional as F

        merged = {}  # name -> (policy, devices) per device
        for policy, devices, names in _POLICY:
            for name in names.split():
                for d in devices:
                    merged.setdefault(name, {})[d] = policy
        table = []
        for owner in (rumus, Tensor, F, linalg):
            for name, per_dev in merged.items():
                orig = (
                    owner.__dict__.get(name) if owner is not Tensor else Tensor.__dict__.get(name)
                )
                if orig is None or not callable(orig):
                    continue
                wrapper = _wrap_per_device(orig, per_dev)
                table.append((owner, name, orig, wrapper))
        cls._table = table

    @classmethod
    def _set(cls, on):
        if cls._table is None:
            cls._build()
        for owner, name, orig, wrapper in cls._table:
            setattr(owner, name, wrapper if on else orig)

    @classmethod
    def acquire(cls):
        with cls._lock:
            cls._count += 1
            if cls._count == 1 and not cls._manual:
                cls._set(True)

    @classmethod
    def acquire_manual(cls):
        with cls._lock:
            if not cls._manual and cls._count == 0:
                cls._set(True)
            cls._manual = True

    @classmethod
    def release_manual(cls):
        with cls._lock:
            if cls._manual and cls._count == 0:
                cls._set(False)
            cls._manual = False

    @classmethod
    def release(cls):
        with cls._lock:
            cls._count -= 1
            if cls._count == 0 and not cls._manual:
                cls._set(False)


def _wrap_per_device(orig, per_dev):
    """One wrapper per callable; devices with different policies dispatch to their own."""
    policies = {}
    for d, p in per_dev.items():
        policies.setdefault(p, []).append(d)
    wrappers = {d: _wrap(orig, p, tuple(ds)) for p, ds in policies.items() for d in ds}
    if len(set(map(id, wrappers.values()))) == 1:
        return next(iter(wrappers.values()))

    @functools.wraps(orig)
    def op(*args, **kwargs):
        first = _first_tensor(args, kwargs)
        w = wrappers.get(first.device.type) if first is not None else None
        return (w or orig)(*args, **kwargs)

    return op


# ---- custom autograd Functions ----


def _cast_inputs(x, device_type, dtype):
    def fn(t):
        return t.to(dtype) if _eligible(t, device_type) else t

    if isinstance(x, dict):
        return {k: _cast_inputs(v, device_type, dtype) for k, v in x.items()}
    return _map(x, fn) if not isinstance(x, tuple) else tuple(_map(v, fn) for v in x)


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for a custom ``Function.forward``: with ``cast_inputs``, inside an
    autocast region the floating inputs are cast to it and forward runs with
    autocast off; without, forward runs under the caller's autocast state, which
    backward (decorated with ``custom_bwd``) then reuses."""
    dev = _device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(dev)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(dev)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if is_autocast_enabled(dev):
            with autocast(dev, enabled=False):
                return fwd(
                    *_cast_inputs(args, dev, cast_inputs),
                    **_cast_inputs(kwargs, dev, cast_inputs),
                )
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorator for a custom ``Function.backward``: runs it under the autocast
    state its forward (decorated with ``custom_fwd``) ran in."""
    dev = _device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(dev, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
