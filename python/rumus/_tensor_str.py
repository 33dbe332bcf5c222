"""PyTorch-style repr of tensors, formatted through NumPy."""

import numpy as np

_DEFAULT_DTYPES = ("float32", "int64", "bool")
_THRESHOLD, _EDGE = 1000, 3


def _shown(arr):
    """The elements a summarized print shows (edges of each dim), without
    touching the rest: a huge (e.g. expanded) tensor is never materialized."""
    if arr.size <= _THRESHOLD:
        return arr
    index = [np.r_[0:_EDGE, n - _EDGE : n] if n > 2 * _EDGE else np.arange(n) for n in arr.shape]
    return arr[np.ix_(*index)]


def _format(arr, prefix):
    opts = {}
    if arr.dtype.kind == "f":
        shown = _shown(arr).astype(np.float64)
        finite = shown[np.isfinite(shown)]
        integral = finite.size == 0 or bool(np.all(finite == np.round(finite)))
        big = finite.size > 0 and (
            np.abs(finite).max() >= 1e8 or np.abs(finite[finite != 0]).min(initial=1) < 1e-4
        )
        opts = dict(
            precision=4, floatmode="maxprec" if integral else "fixed", suppress_small=not big
        )
    return np.array2string(
        arr,
        separator=", ",
        prefix=prefix,
        threshold=_THRESHOLD,
        edgeitems=_EDGE,
        max_line_width=80,
        **opts,
    )


def tensor_repr(t):
    dtype = t.dtype
    name = repr(dtype).split(".", 1)[1]
    host = t.detach().cpu()
    arr = (host.float() if name == "bfloat16" else host).numpy()
    prefix = "tensor("
    if t.numel() == 0 and t.ndim != 1:
        body = "[]"
        suffix = [f"size={tuple(t.shape)}"]
    else:
        body = _format(arr, prefix)
        suffix = []
    if t.is_gpu:
        suffix.append(f"device='{t.device}'")
    if name not in _DEFAULT_DTYPES or (t.numel() == 0 and name != "float32"):
        suffix.append(f"dtype={dtype!r}")
    if t.requires_grad:
        suffix.append("requires_grad=True")
    return prefix + body + "".join(", " + s for s in suffix) + ")"
