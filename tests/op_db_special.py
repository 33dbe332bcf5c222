"""The op registry's entries for the special functions (rust/backend/cpu/special.rs, the
special-function section of shaders/elementwise.wgsl, python/rumus/special.py), checked
against scipy.special. Tails, poles and identities are in tests/test_special.py."""

import math

import numpy as np
import rumus
import rumus.special as S
import scipy.special as sc
from op_db import (
    AWAY,
    FLOATS,
    OpInfo,
    P,
    Row,
    Sample,
    U,
    _check_random,
    dom,
    floated,
    to_float,
    unary,
)

# Inputs away from the poles of the gamma family at 0, -1, -2, ...
POLES = dom(AWAY, points=[-3.0, -2.0, -1.0, 0.0], lo=-3.5, hi=3.5, gap=0.2)


def _special(name, ref, *, domain=U, **kw):
    """A rumus.special function that is neither a rumus function nor a Tensor method."""
    fn = getattr(S, name)
    return unary(
        f"special.{name}",
        ref,
        fn=False,
        method=False,
        inplace=False,
        extra=[(f"special.{name}", fn)],
        covers=[f"special.{name}"],
        domain=domain,
        **kw,
    )


def _polygamma_samples(m):
    return [Sample(m(3, 4), n) for n in (0, 1, 2, 3)] + [
        Sample(m(), 1),
        Sample(m(0, 3), 2),
        Sample(m(3, 4, layout="transposed"), 1),
    ]


def _mvlgamma_samples(m):
    return [Sample(m(3, 4), p) for p in (1, 2, 3)] + [Sample(m(), 2), Sample(m(0, 2), 3)]


def _mvlgamma_ref(x, p):
    return sum(sc.gammaln(x - j / 2) for j in range(p)) + p * (p - 1) / 4 * math.log(math.pi)


SPECIAL_FNS = [
    unary("erfc", sc.erfc, extra=["special.erfc"]),
    unary("erfinv", sc.erfinv, domain=dom(U, lo=-0.9, hi=0.9), extra=["special.erfinv"]),
    unary("lgamma", sc.gammaln, domain=POLES, extra=["special.gammaln"]),
    unary("digamma", sc.digamma, domain=POLES, extra=["special.digamma", "special.psi"]),
    unary("i0", sc.i0, domain=dom(U, lo=-4.0, hi=4.0), extra=["special.i0"]),
    _special("i0e", sc.i0e, domain=dom(U, lo=-4.0, hi=4.0)),
    _special("i1", sc.i1, domain=dom(U, lo=-4.0, hi=4.0)),
    _special("i1e", sc.i1e, domain=dom(U, lo=-4.0, hi=4.0)),
    _special("ndtr", sc.ndtr),
    _special("ndtri", sc.ndtri, domain=dom(U, lo=0.05, hi=0.95)),
    _special("log_ndtr", sc.log_ndtr),
    _special("entr", sc.entr, domain=dom(U, lo=0.1, hi=3.0)),
    _special("expit", sc.expit),
    unary("sinc", np.sinc, domain=dom(U, lo=-2.5, hi=2.5), extra=["special.sinc"]),
    OpInfo(
        "special.xlog1py",
        [("special.xlog1py", S.xlog1py)],
        floated(sc.xlog1py),
        lambda m: [
            Sample(m(3, 4), m(3, 4)),
            Sample(m(3, 1), m(4)),
            Sample(m(), m(2, 3)),
            Sample(m(0, 3), m(3)),
        ],
        dtypes=FLOATS + ("int64", "int32", "uint8", "bool"),
        out=to_float,
        domain=dom(U, lo=-0.5, hi=2.0),
        covers=["special.xlog1py"],
        grads=[Row("xlog1py", S.xlog1py, [U(3, 4), U(3, 4, lo=-0.5, hi=2.0)])],
    ),
    OpInfo(
        "polygamma",
        [
            ("rumus.polygamma", lambda x, n: rumus.polygamma(n, x)),
            ("special.polygamma", lambda x, n: S.polygamma(n, x)),
            "Tensor.polygamma",
            "Tensor.polygamma_",
        ],
        floated(lambda x, n: sc.polygamma(n, x)),
        _polygamma_samples,
        dtypes=FLOATS + ("int64", "int32", "uint8", "bool"),
        out=to_float,
        domain=dom(P, lo=0.4, hi=3.0),
        covers=["rumus.polygamma", "special.polygamma"],
        grads=[
            Row("polygamma_1", lambda x: x.polygamma(1), [P(3, 4, lo=0.4, hi=3.0)]),
            Row("polygamma_2", lambda x: x.polygamma(2), [P(3, 4, lo=0.4, hi=3.0)]),
        ],
        bad=lambda m: [("polygamma n < 0", lambda: m.t(3).polygamma(-1))],
        mismatch=False,
    ),
    OpInfo(
        "poisson",
        ["rumus.poisson"],
        None,
        lambda m: [Sample(m(200)), Sample(m(2, 3)), Sample(m(0, 2)), Sample(m())],
        domain=dom(P, lo=0.0, hi=4.0),
        check=_check_random(0, 1e9, integral=True),
        grad=False,
        mismatch=False,
        bad=lambda m: [("poisson negative rate", lambda: rumus.poisson(m.t(3) - 10))],
    ),
    OpInfo(
        "binomial",
        [("rumus.binomial", lambda p: rumus.binomial(rumus.full_like(p, 5.0), p))],
        None,
        lambda m: [Sample(m(200)), Sample(m(2, 3)), Sample(m(0, 2))],
        domain=dom(U, lo=0.05, hi=0.95),
        check=_check_random(0, 6, integral=True),
        covers=["rumus.binomial"],
        grad=False,
        mismatch=False,
        bad=lambda m: [
            ("binomial prob > 1", lambda: rumus.binomial(m.t(3) * 0 + 2, m.t(3) + 5)),
            ("binomial shapes", lambda: rumus.binomial(m.t(3), m.t(4))),
        ],
    ),
    OpInfo(
        "mvlgamma",
        [
            "rumus.mvlgamma",
            ("special.multigammaln", S.multigammaln),
            "Tensor.mvlgamma",
            "Tensor.mvlgamma_",
        ],
        floated(_mvlgamma_ref),
        _mvlgamma_samples,
        covers=["special.multigammaln"],
        dtypes=FLOATS,
        out=to_float,
        domain=dom(P, lo=1.6, hi=4.0),
        grads=[Row("mvlgamma_3", lambda x: x.mvlgamma(3), [P(3, 4, lo=1.6, hi=4.0)])],
        bad=lambda m: [
            ("mvlgamma p < 1", lambda: m.t(3).mvlgamma(0)),
            ("mvlgamma input <= (p-1)/2", lambda: (m.t(3) * 0).mvlgamma(3)),
        ],
        mismatch=False,
    ),
]
