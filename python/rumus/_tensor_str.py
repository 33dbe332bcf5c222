"""PyTorch-style repr of tensors, formatted through NumPy."""

import math
import sys

import numpy as np

from . import _rumus

_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}
_OPTS = dict(_PROFILES["default"], sci_mode=None)


def set_printoptions(
    precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None
):
    """Sets how tensors print, as ``torch.set_printoptions``.

    Args:
        precision (int, optional): digits after the point for floats (default 4).
        threshold (int, optional): element count above which a tensor prints summarized
            (default 1000).
        edgeitems (int, optional): items shown at each end of a summarized dim (default 3).
        linewidth (int, optional): characters per line (default 80).
        profile (str, optional): ``"default"``, ``"short"`` or ``"full"``: sets the four
            above first (an unknown name is ignored, as in PyTorch).
        sci_mode (bool, optional): True forces scientific notation, False disables it, None
            (what every call without it sets) lets the values decide.
    """
    if profile in _PROFILES:
        _OPTS.update(_PROFILES[profile])
    for name, value in (
        ("precision", precision),
        ("threshold", threshold),
        ("edgeitems", edgeitems),
        ("linewidth", linewidth),
    ):
        if value is not None:
            _OPTS[name] = value
    _OPTS["sci_mode"] = sci_mode


def _threshold():
    t = _OPTS["threshold"]
    return sys.maxsize if t == math.inf else int(t)


def _shown(arr):
    """The elements a summarized print shows (edges of each dim), without
    touching the rest: a huge (e.g. expanded) tensor is never materialized."""
    if arr.size <= _threshold():
        return arr
    e = _OPTS["edgeitems"]
    index = [np.r_[0:e, n - e : n] if n > 2 * e else np.arange(n) for n in arr.shape]
    return arr[np.ix_(*index)]


def _format(arr, prefix):
    opts = {}
    if arr.dtype.kind == "f":
        shown = _shown(arr).astype(np.float64)
        finite = shown[np.isfinite(shown)]
        integral = finite.size == 0 or bool(np.all(finite == np.round(finite)))
        # PyTorch's rule for scientific notation, over the nonzero finite magnitudes:
        # a maximum above 1e8, or (for non-integral values) a minimum below 1e-4 or a
        # spread above 1000 (NumPy applies the same tests when not suppressing).
        mag = np.abs(finite[finite != 0])
        big = mag.size > 0 and (
            mag.max() >= 1e8 or (not integral and (mag.min() < 1e-4 or mag.max() / mag.min() > 1e3))
        )
        p, sci = _OPTS["precision"], _OPTS["sci_mode"]
        opts = dict(
            precision=p,
            floatmode="maxprec" if integral else "fixed",
            suppress_small=not big if sci is None else not sci,
        )
        if sci:
            # right-aligned to the widest value shown, as NumPy aligns its own formats
            width = max((len(f"{v:.{p}e}") for v in shown.flat), default=0)
            opts["formatter"] = {"float_kind": lambda x: f"{x:.{p}e}".rjust(width)}
    # PyTorch writes an elided run inside a row as " ..." between separators.
    return np.array2string(
        arr,
        separator=", ",
        prefix=prefix,
        threshold=_threshold(),
        edgeitems=_OPTS["edgeitems"],
        max_line_width=_OPTS["linewidth"],
        **opts,
    ).replace(", ..., ", ",  ..., ")


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
    default = repr(_rumus.get_default_dtype()).split(".", 1)[1]
    if name not in (default, "int64", "bool") or (t.numel() == 0 and name != default):
        suffix.append(f"dtype={dtype!r}")
    if t.requires_grad:
        suffix.append("requires_grad=True")
    return prefix + body + "".join(", " + s for s in suffix) + ")"
