"""PyTorch's remaining elementwise math functions (deg2rad, rad2deg, copysign, fmax, fmin,
heaviside, gcd, lcm, float_power, signbit, ldexp, frexp) and the legacy norms (torch.norm,
torch.dist, torch.renorm), as compositions of engine ops.

Every function is built from ops with CPU and GPU kernels and a backward, so it runs on the
input's device and differentiates without new kernels. Where a function has branches, each
branch of a ``where`` sees its input clamped into its own range, so the branch not taken has a
finite gradient (a NaN there would leak through ``where``'s backward as 0 * NaN)."""

import math
from typing import NamedTuple

from . import _rumus
from ._rumus import Tensor

_FLOATS = ("float64", "float32", "float16", "bfloat16")

# The torch.return_types.frexp of PyTorch.
FrexpResult = NamedTuple("frexp", [("mantissa", Tensor), ("exponent", Tensor)])


def _name(t):
    return str(t.dtype).removeprefix("rumus.")


def _is_float(t):
    return _name(t) in _FLOATS


def _check(op, x, what="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{what}' must be Tensor, not {type(x).__name__}")


def _floated(op, x):
    """``x`` as the floating dtype of a float function: ints and bools give the default
    float dtype (float32 unless ``set_default_dtype`` changed it)."""
    _check(op, x)
    if _name(x).startswith("complex"):
        raise NotImplementedError(f"{op}(): not implemented for complex tensors")
    return x if _is_float(x) else x.to(_rumus.get_default_dtype())


def _work(x):
    """Half inputs compute in float32 (their result is cast back): the compositions round
    several times, which half precision cannot absorb."""
    return x.to(_rumus.float32) if _name(x) in ("float16", "bfloat16") else x


def _sign_of(x):
    """+1 / -1 by the sign of x, as a constant (no gradient), 1 for zeros and NaN."""
    return _rumus.where(x < 0, -1.0, 1.0).to(x.dtype).detach()


def _inplace(op, self, result):
    """Writes ``result`` into ``self`` under PyTorch's in-place casting rule."""
    if not _is_float(self) and _is_float(result):
        raise RuntimeError(
            f"{op}(): result type {_name(result).capitalize()} can't be cast to the desired "
            f"output type {_name(self).capitalize()}"
        )
    return self.copy_(result)


def deg2rad(input):
    """Degrees to radians.

    Args:
        input (Tensor): angles in degrees (integers give the default float dtype).

    Returns:
        Tensor: the angles in radians.
    """
    return _floated("deg2rad", input) * (math.pi / 180.0)


def rad2deg(input):
    """Radians to degrees.

    Args:
        input (Tensor): angles in radians (integers give the default float dtype).

    Returns:
        Tensor: the angles in degrees.
    """
    return _floated("rad2deg", input) * (180.0 / math.pi)


# ------------------------------------------------------------ sign and extremes


def signbit(input):
    """Whether the sign bit is set: True for negative numbers and -0.0.

    Args:
        input (Tensor): the input (any real dtype).

    Returns:
        Tensor: bool, elementwise. The sign of a NaN is not visible to the engine's ops:
        every NaN gives False.
    """
    _check("signbit", input)
    if _name(input).startswith("complex"):
        raise RuntimeError("signbit is not implemented for complex tensors.")
    if not _is_float(input):
        return input < 0
    # -0.0 is the zero whose reciprocal is -inf.
    return (input < 0) | ((input == 0) & (1.0 / input < 0))


def _other(op, input, other):
    if isinstance(other, Tensor):
        return other
    if isinstance(other, (bool, int, float)):
        return _rumus.tensor(other, device=input.device)
    raise TypeError(
        f"{op}(): argument 'other' must be Tensor or Number, not {type(other).__name__}"
    )


def copysign(input, other):
    """|input| with the sign of ``other`` (-0.0 counts as negative); the result is float.

    Args:
        input (Tensor): the magnitudes.
        other (Tensor or Number): the signs, broadcast with ``input``.

    Returns:
        Tensor: the promoted floating dtype of the two.
    """
    _check("copysign", input)
    if isinstance(other, Tensor):
        x = _floated("copysign", input.to(_rumus.promote_types(input.dtype, other.dtype)))
    else:  # a Python number does not raise the input's dtype, as in PyTorch
        x = _floated("copysign", input)
        other = _other("copysign", input, other)
    neg = signbit(other).detach()
    mag = x * _sign_of(x)  # |x|, whose gradient is +-1 (0 at 0, as PyTorch's)
    mag = _rumus.where(x == 0, mag * 0.0, mag)
    return _rumus.where(neg, -mag, mag)


def _nan_ignoring(op, pick, input, other):
    _check(op, input)
    _check(op, other, "other")
    out = pick(input, other)
    if not (_is_float(input) or _is_float(other)):
        return out
    # NaN only when both are NaN: the non-NaN one otherwise.
    out = _rumus.where(Tensor.isnan(other), input.to(out.dtype), out)
    return _rumus.where(Tensor.isnan(input), other.to(out.dtype), out)


def fmax(input, other):
    """The elementwise maximum, ignoring NaN: NaN only where both are NaN.

    Args:
        input (Tensor): the first operand.
        other (Tensor): the second one, broadcast with ``input``.

    Returns:
        Tensor: of the promoted dtype.
    """
    return _nan_ignoring("fmax", Tensor.maximum, input, other)


def fmin(input, other):
    """The elementwise minimum, ignoring NaN: NaN only where both are NaN.

    Args:
        input (Tensor): the first operand.
        other (Tensor): the second one, broadcast with ``input``.

    Returns:
        Tensor: of the promoted dtype.
    """
    return _nan_ignoring("fmin", Tensor.minimum, input, other)


def heaviside(input, values):
    """The Heaviside step: 0 below 0, ``values`` at 0, 1 above.

    Args:
        input (Tensor): the input.
        values (Tensor): the value at 0, of input's dtype, broadcast with it.

    Returns:
        Tensor: of input's dtype.
    """
    _check("heaviside", input)
    _check("heaviside", values, "values")
    if input.dtype != values.dtype:
        raise RuntimeError(
            "heaviside is not yet implemented for tensors with different dtypes "
            f"({input.dtype} and {values.dtype})"
        )
    step = (input > 0).to(input.dtype)
    return _rumus.where(input == 0, values, step).detach()


# ------------------------------------------------------------ integers


def _integral(op, input, other):
    _check(op, input)
    _check(op, other, "other")
    for t in (input, other):
        if _is_float(t) or _name(t) in ("bool",) or _name(t).startswith("complex"):
            raise RuntimeError(f"\"{op}_cpu\" not implemented for '{_name(t).capitalize()}'")
    out = _rumus.promote_types(input.dtype, other.dtype)
    return input.to(out), other.to(out)


def gcd(input, other):
    """The greatest common divisor (non-negative; gcd(0, 0) = 0).

    Args:
        input (Tensor): an integer tensor.
        other (Tensor): an integer tensor, broadcast with ``input``.

    Returns:
        Tensor: of the promoted integer dtype.
    """
    a, b = _integral("gcd", input, other)
    shape = _rumus.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    a, b = a.abs().expand(shape).contiguous(), b.abs().expand(shape).contiguous()
    # Euclid; 93 steps cover any int64 pair (Fibonacci bound), checked every 8.
    for step in range(96):
        zero = b == 0
        if step % 8 == 0 and bool(zero.all()):
            break
        r = a.remainder(_rumus.where(zero, 1, b).to(b.dtype))
        a, b = _rumus.where(zero, a, b), _rumus.where(zero, b, r)
    return a


def lcm(input, other):
    """The least common multiple (non-negative; 0 where either is 0).

    Args:
        input (Tensor): an integer tensor.
        other (Tensor): an integer tensor, broadcast with ``input``.

    Returns:
        Tensor: of the promoted integer dtype.
    """
    a, b = _integral("lcm", input, other)
    g = gcd(a, b)
    q = a.abs().floor_divide(_rumus.where(g == 0, 1, g).to(g.dtype))
    return (q * b.abs()).to(g.dtype)


# ------------------------------------------------------------ powers of two


def float_power(input, exponent):
    """input ** exponent computed in float64.

    Args:
        input (Tensor or Number): the base.
        exponent (Tensor or Number): the exponent, broadcast with the base.

    Returns:
        Tensor: float64.
    """
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("float_power(): one of input and exponent must be a Tensor")
    for t in (input, exponent):
        if isinstance(t, Tensor) and _name(t).startswith("complex"):
            raise NotImplementedError("float_power(): not implemented for complex tensors")
    if isinstance(exponent, Tensor):
        exponent = exponent.to(_rumus.float64)
    elif not isinstance(exponent, (bool, int, float)):
        raise TypeError(
            f"float_power(): exponent must be Tensor or Number, not {type(exponent).__name__}"
        )
    if not isinstance(input, Tensor):
        base = _rumus.tensor(float(input), dtype=_rumus.float64, device=exponent.device)
        return base.pow(exponent)
    return input.to(_rumus.float64).pow(
        float(exponent) if not isinstance(exponent, Tensor) else exponent
    )


def ldexp(input, other):
    """input * 2 ** other.

    Args:
        input (Tensor): the mantissas.
        other (Tensor): the exponents, broadcast with ``input``.

    Returns:
        Tensor: of the promoted floating dtype.
    """
    _check("ldexp", input)
    _check("ldexp", other, "other")
    out = _rumus.promote_types(input.dtype, other.dtype)
    if out not in (_rumus.float64, _rumus.float32, _rumus.float16, _rumus.bfloat16):
        out = _rumus.float32
    return input.to(out) * Tensor.exp2(other.to(out))


def frexp(input):
    """Splits input into mantissa * 2 ** exponent with 0.5 <= |mantissa| < 1.

    Args:
        input (Tensor): a floating tensor.

    Returns:
        tuple[Tensor, Tensor]: ``(mantissa, exponent)``: the mantissa of input's dtype and
        the int32 exponent (0 for zeros, inf and NaN, whose mantissa is the input).
    """
    _check("frexp", input)
    if not _is_float(input):
        raise RuntimeError(
            "torch.frexp() only supports floating-point dtypes, "
            f"but got {_name(input).capitalize()}"
        )
    x = _work(input)  # float32 holds every half exponent and mantissa exactly
    a = x.abs().detach()
    finite = Tensor.isfinite(a) & (a != 0)
    e = _rumus.where(finite, Tensor.floor(Tensor.log2(_rumus.where(finite, a, 1.0))) + 1.0, 0.0)
    # log2 may round across a power of two: one correction step either way.
    h = Tensor.floor(e * 0.5)  # 2^-e in two halves: subnormal exponents overflow in one
    m = x * Tensor.exp2(-h) * Tensor.exp2(h - e)
    up = finite & (m.abs().detach() >= 1.0)
    down = finite & (m.abs().detach() < 0.5)
    e = e + up.to(e.dtype) - down.to(e.dtype)
    m = _rumus.where(up, m * 0.5, _rumus.where(down, m * 2.0, m))
    return FrexpResult(m.to(input.dtype), e.to(_rumus.int32))


# ------------------------------------------------------------ legacy norms


def _all_dims(x):
    return tuple(range(x.dim()))


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """PyTorch's legacy norm: a vector norm, or a matrix norm for ``p='nuc'``.

    Args:
        input (Tensor): a floating tensor.
        p (float or str): the order; ``'fro'`` (the 2-norm over ``dim``, at most 2 dims),
            ``'nuc'`` (the nuclear norm over 2 dims), or a number (a vector norm, inf included).
        dim (int or tuple[int], optional): the dimensions (all by default).
        keepdim (bool): keep the reduced dimensions with size 1.
        dtype (dtype, optional): compute and return in this dtype.

    Returns:
        Tensor: the norms.
    """
    from . import linalg

    _check("norm", input)
    if isinstance(dim, int):
        dim = (dim,)
    elif dim is not None:
        dim = tuple(dim)
    if p is None:
        p = 2
    if isinstance(p, str):
        if p == "fro":
            if dim is not None and len(dim) > 2:
                raise RuntimeError(f"norm(): 'fro' expects at most 2 dimensions, got {len(dim)}")
            return linalg.vector_norm(input, 2, dim, keepdim, dtype=dtype)
        if p == "nuc":
            if dim is None:
                dim = _all_dims(input)
            if len(dim) != 2:
                raise RuntimeError(
                    f"norm(): 'nuc' needs 2 dimensions, got dim={dim} for an input of shape "
                    f"{tuple(input.shape)}"
                )
            return linalg.matrix_norm(input, "nuc", dim, keepdim, dtype=dtype)
        raise RuntimeError(f"norm(): only valid string values are 'fro' and 'nuc', found {p}")
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"norm(): p must be a number or a string, not {type(p).__name__}")
    return linalg.vector_norm(input, p, dim, keepdim, dtype=dtype)


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), over all elements.

    Args:
        input (Tensor): a floating tensor.
        other (Tensor): a tensor broadcast with ``input``.
        p (float): the order (inf, -inf and 0 included).

    Returns:
        Tensor: 0-d.
    """
    from . import linalg

    _check("dist", input)
    _check("dist", other, "other")
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"dist(): argument 'p' must be a Number, not {type(p).__name__}")
    return linalg.vector_norm(input - other, p)


def renorm(input, p, dim, maxnorm):
    """Scales each slice along ``dim`` whose p-norm exceeds ``maxnorm`` to norm ``maxnorm``.

    Args:
        input (Tensor): a floating tensor of at least 2 dimensions.
        p (float): the order of the norm (positive).
        dim (int): the dimension whose slices are renormalised.
        maxnorm (float): the largest norm a slice may keep.

    Returns:
        Tensor: of input's shape and dtype.
    """
    from . import linalg

    _check("renorm", input)
    if not _is_float(input):
        raise RuntimeError(f"\"renorm\" not implemented for '{_name(input).capitalize()}'")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not p > 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported (p={p})")
    if not isinstance(maxnorm, (int, float)) or maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    n = input.dim()
    if n < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {n} dimensions")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"renorm(): dim must be an int, not {type(dim).__name__}")
    if not -n <= dim < n:
        raise IndexError(
            f"renorm(): Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
            f"but got {dim})"
        )
    others = tuple(d for d in range(n) if d != dim % n)
    norms = linalg.vector_norm(input, p, others, keepdim=True)
    scale = _rumus.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0).to(input.dtype)
    return input * scale


# ------------------------------------------------------------ in-place forms


def _make_inplace(name, fn):
    def method(self, *args, **kwargs):
        # On a clone: the graph of the composition must not save self, which copy_ bumps.
        return _inplace(name, self, fn(self.clone(), *args, **kwargs))

    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    method.__doc__ = f"In-place :func:`{fn.__name__}`: writes the result into self.\n\n" + (
        "Args:\n        *args: the arguments of the out-of-place form after ``input``.\n"
        "        **kwargs: its keyword arguments.\n\n"
        "    Returns:\n        Tensor: self."
    )
    return method


def _float_power_(self, exponent):
    if self.dtype != _rumus.float64:
        raise RuntimeError(
            "the base given to float_power_ has dtype "
            f"{_name(self).capitalize()} but the operation's result requires dtype Double"
        )
    return self.copy_(float_power(self.clone(), exponent))


_float_power_.__doc__ = """In-place float_power: self must be float64.

    Args:
        exponent (Tensor or Number): the exponent.

    Returns:
        Tensor: self.
    """

FUNCTIONS = (
    "deg2rad rad2deg copysign fmax fmin heaviside "
    "gcd lcm float_power signbit ldexp frexp norm dist renorm"
).split()
METHODS = FUNCTIONS
INPLACE = "deg2rad rad2deg gcd lcm ldexp".split()
INPLACE_METHODS = INPLACE + "copysign heaviside renorm".split()


def install(namespace):
    g = globals()
    for name in METHODS:
        setattr(Tensor, name, g[name])
    for name in INPLACE_METHODS:
        setattr(Tensor, name + "_", _make_inplace(name + "_", g[name]))
    Tensor.float_power_ = _float_power_
    for name in FUNCTIONS:
        namespace[name] = g[name]
    for name in INPLACE:
        namespace[name + "_"] = getattr(Tensor, name + "_")
