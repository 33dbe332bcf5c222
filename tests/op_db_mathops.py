"""The op registry's entries for PyTorch's remaining elementwise math functions and legacy
norms (python/rumus/_mathops.py), checked against NumPy. The frexp tuple, gcd/lcm dtypes,
float_power_'s float64 rule and the norm variants against PyTorch: tests/test_mathops.py."""

import numpy as np
import rumus
from op_db import (
    ALL,
    DISTINCT,
    FLOATS,
    INTS,
    NZ,
    SPECIAL,
    ZERO,
    OpInfo,
    P,
    Row,
    Sample,
    U,
    binary,
    binary_samples,
    dom,
    to_bool,
    to_float,
    unary,
    unary_samples,
)

LINALG_FLOATS = ("float64", "float32")  # rumus.linalg's dtypes


def _aliased(name, alias):
    return [f"rumus.{name}_", f"rumus.{alias}", f"rumus.{alias}_"] + [
        f"Tensor.{alias}",
        f"Tensor.{alias}_",
    ]


def _with_special(samples):
    return lambda m: samples(m) + [Sample(m(3, 4, domain=SPECIAL))]


def _nan_pairs(m):
    return binary_samples(m, scalar=None) + [
        Sample(m(3, 4, domain=SPECIAL), m(3, 4, domain=SPECIAL))
    ]


def _heaviside_samples(m):
    return binary_samples(m, scalar=None) + [Sample(m(2, 3, domain=ZERO), m(3))]


def _float_power_ref(a, b):
    return np.power(np.asarray(a, np.float64), np.asarray(b, np.float64))


def _frexp_ref(x):
    mant, exp = np.frexp(x)
    return mant, exp.astype(np.int32)


def _np_vector_norm(x, p, axes, keepdim):
    a = np.abs(x)
    if p == np.inf:
        r = a.max(axis=axes, keepdims=keepdim)
    elif p == -np.inf:
        r = a.min(axis=axes, keepdims=keepdim)
    elif p == 0:
        r = (a != 0).sum(axis=axes, keepdims=keepdim).astype(x.dtype)
    else:
        r = (a**p).sum(axis=axes, keepdims=keepdim) ** (1.0 / p)
    return np.asarray(r)


def _norm_ref(x, p="fro", dim=None, keepdim=False, dtype=None):
    axes = None if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    return _np_vector_norm(x, 2 if p in ("fro", None) else p, axes, keepdim)


def _norm_samples(m):
    inf = float("inf")
    return [
        Sample(m(3, 4)),
        Sample(m()),
        Sample(m(3, 4), 1),
        Sample(m(3, 4), inf, dim=1),
        Sample(m(3, 4), -inf, 1),
        Sample(m(3, 4), 0),
        Sample(m(3, 4), "fro", dim=(0, 1), keepdim=True),
        Sample(m(2, 3, 4), 3, dim=(1, 2)),
        Sample(m(2, 3, 4), p=2, dim=-1, keepdim=True),
        Sample(m(0, 3), 2, dim=1),
        Sample(m(3, 4, layout="transposed"), 2.5),
    ]


def _dist_ref(a, b, p=2):
    d = np.asarray(a - b)
    return _np_vector_norm(d, p, None, False)


def _dist_samples(m):
    return [
        Sample(m(3, 4), m(3, 4)),
        Sample(m(3, 1), m(4), 1),
        Sample(m(3, 4), m(3, 4), float("inf")),
        Sample(m(2, 3), m(2, 3), 0),
        Sample(m(), m(2, 3), 3),
        Sample(m(0, 3), m(3)),
        Sample(m(3, 4, layout="transposed"), m(3, 4, layout="strided"), 1.5),
    ]


def _renorm_ref(x, p, dim, maxnorm):
    axes = tuple(d for d in range(x.ndim) if d != dim % x.ndim)
    norms = _np_vector_norm(x, p, axes, True)
    return x * np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)


def _renorm_samples(m):
    return [
        Sample(m(3, 4), 2, 0, 1.0),
        Sample(m(3, 4), 1, 1, 0.5),
        Sample(m(2, 3, 4), 3, -1, 1.5),
        Sample(m(3, 4), float("inf"), 0, 0.8),
        Sample(m(3, 4, layout="transposed"), 2, 1, 1.0),
        Sample(m(0, 3), 2, 1, 1.0),
    ]


MATHOPS = [
    unary(
        "acosh",
        np.arccosh,
        domain=dom(U, lo=1.2, hi=4.0),
        extra=_aliased("acosh", "arccosh"),
    ),
    unary("asinh", np.arcsinh, domain=dom(U, lo=-4.0, hi=4.0), extra=_aliased("asinh", "arcsinh")),
    unary(
        "atanh",
        np.arctanh,
        domain=dom(U, lo=-0.9, hi=0.9),
        extra=_aliased("atanh", "arctanh"),
        tol={"float16": (2e-2, 2e-3)},
    ),
    unary("deg2rad", np.deg2rad, domain=dom(U, lo=-200.0, hi=200.0), extra=["rumus.deg2rad_"]),
    unary("rad2deg", np.rad2deg, extra=["rumus.rad2deg_"], tol={"bfloat16": (2e-2, 0.1)}),
    OpInfo(
        "signbit",
        ["rumus.signbit", "Tensor.signbit"],
        lambda x: np.signbit(np.asarray(x, np.float64)),
        _with_special(unary_samples),
        dtypes=ALL,
        out=to_bool,
        grad=False,
    ),
    binary("copysign", np.copysign, out=to_float, domain=NZ),
    binary(
        "fmax",
        np.fmax,
        inplace=False,
        scalar=None,
        samples=_nan_pairs,
        grad_specs=[DISTINCT(3, 4), U(4, lo=5, hi=6)],
    ),
    binary(
        "fmin",
        np.fmin,
        inplace=False,
        scalar=None,
        samples=_nan_pairs,
        grad_specs=[DISTINCT(3, 4), U(4, lo=5, hi=6)],
    ),
    binary(
        "heaviside",
        np.heaviside,
        fn=True,
        scalar=None,
        samples=_heaviside_samples,
        grad=False,
    ),
    binary(
        "gcd",
        np.gcd,
        dtypes=INTS,
        domain=dom(U, lo=-12.0, hi=12.0),
        scalar=None,
        extra=["rumus.gcd_"],
        grad=False,
    ),
    binary(
        "lcm",
        np.lcm,
        dtypes=INTS,
        domain=dom(U, lo=-12.0, hi=12.0),
        scalar=None,
        extra=["rumus.lcm_"],
        grad=False,
    ),
    binary(
        "float_power",
        _float_power_ref,
        inplace=False,  # float_power_ needs a float64 self: tests/test_mathops.py
        out=lambda d: "float64",
        domain=P,
        dom_b=U,
        covers=["Tensor.float_power_"],
        gpu="float64 has no GPU kernels",
    ),
    binary(
        "ldexp",
        lambda a, b: a * np.exp2(b),
        out=to_float,
        scalar=None,
        extra=["rumus.ldexp_"],
    ),
    OpInfo(
        "frexp",
        ["rumus.frexp", "Tensor.frexp"],
        _frexp_ref,
        _with_special(unary_samples),
        dtypes=FLOATS,
        out=lambda d: (d, "int32"),
        domain=dom(U, lo=-40.0, hi=40.0),
        grads=[
            Row("frexp_mantissa", lambda x: rumus.frexp(x).mantissa, [U(3, 4, lo=0.55, hi=0.95)])
        ],
    ),
    OpInfo(
        "rumus.norm",
        ["rumus.norm", "Tensor.norm"],
        _norm_ref,
        _norm_samples,
        dtypes=LINALG_FLOATS,
        domain=NZ,
        grads=[
            Row("legacy_norm", lambda x: rumus.norm(x), [U(3, 4)]),
            Row("legacy_norm_p3_dim", lambda x: x.norm(3, dim=1), [NZ(3, 4)]),
            Row("legacy_norm_fro_keepdim", lambda x: x.norm("fro", (0, 1), True), [U(2, 3, 4)]),
        ],
        bad=lambda m: [("norm p='abc'", lambda: rumus.norm(m.t(3, 4), "abc"))],
    ),
    OpInfo(
        "dist",
        ["rumus.dist", "Tensor.dist"],
        _dist_ref,
        _dist_samples,
        dtypes=LINALG_FLOATS,
        domain=NZ,
        grads=[
            Row("dist", lambda a, b: rumus.dist(a, b), [U(3, 4), U(4, lo=3.0, hi=4.0)]),
            Row("dist_p3", lambda a, b: a.dist(b, 3), [U(3, 4), U(3, 4, lo=3.0, hi=4.0)]),
        ],
    ),
    OpInfo(
        "renorm",
        ["rumus.renorm", "Tensor.renorm", "Tensor.renorm_"],
        _renorm_ref,
        _renorm_samples,
        dtypes=LINALG_FLOATS,
        mismatch=False,
        grads=[
            Row("renorm", lambda x: rumus.renorm(x, 2, 0, 1.0), [U(3, 4)]),
            Row("renorm_p1_dim1", lambda x: x.renorm(1, 1, 1.5), [U(3, 4)]),
        ],
        bad=lambda m: [
            ("renorm p=0", lambda: rumus.renorm(m.t(3, 4), 0, 0, 1.0)),
            ("renorm maxnorm<0", lambda: rumus.renorm(m.t(3, 4), 2, 0, -1.0)),
            ("renorm 1-d", lambda: rumus.renorm(m.t(4), 2, 0, 1.0)),
            ("renorm dim=2", lambda: rumus.renorm(m.t(3, 4), 2, 2, 1.0)),
        ],
    ),
]
