"""The op registry's entries for the special functions (rust/backend/cpu/special.rs, the
special-function section of shaders/elementwise.wgsl, python/rumus/special.py), checked
against scipy.special. Tails, poles and identities are in tests/test_special.py."""

import math

import numpy as np
import rumus
import rumus.special as S
import scipy.special as sc
from op_db import (
    ALL,
    AWAY,
    FLOATS,
    OpInfo,
    P,
    Row,
    Sample,
    U,
    _check_random,
    binary_samples,
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


def _degree(ref):
    """A polynomial's reference at a float degree: truncated, 0 below 0 (PyTorch's n)."""

    def fn(x, n):
        x, n = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(n, np.float64))
        out = np.zeros(x.shape)
        for i in np.ndindex(x.shape):
            k = int(np.trunc(n[i]))
            out[i] = ref(k, x[i]) if k >= 0 else 0.0
        return out

    return fn


def _shifted(ref):
    return lambda k, x: ref(k, 2 * x - 1)


def _chebyshev_vw(third):
    """V_n and W_n from their sums of U: V_n = U_n - U_(n-1), W_n = U_n + U_(n-1)."""

    def fn(k, x):
        prev = sc.eval_chebyu(k - 1, x) if k > 0 else 0.0
        return sc.eval_chebyu(k, x) + (-prev if third else prev)

    return fn


def _special_fn(name, ref, *, domain=U, grad=False, grads=(), **kw):
    """A rumus.special function of one tensor computed on the host (special_fns.rs)."""
    op = _special(name, ref, domain=domain, grad=grad, **kw)
    op.grads.extend(grads)
    return op


def _special_binary(name, ref, *, domain=U, dom_b=U, scalar=1.5, grads=(), **kw):
    """A rumus.special function of two operands (either may be a number)."""
    fn = getattr(S, name)
    return OpInfo(
        f"special.{name}",
        [(f"special.{name}", fn)],
        floated(ref),
        lambda m: binary_samples(m, scalar=scalar, dom_b=dom_b),
        dtypes=ALL,
        out=to_float,
        domain=domain,
        covers=[f"special.{name}"],
        grad=bool(grads),
        grads=list(grads),
        **kw,
    )


_POLYS = [
    ("chebyshev_polynomial_t", sc.eval_chebyt),
    ("chebyshev_polynomial_u", sc.eval_chebyu),
    ("chebyshev_polynomial_v", _chebyshev_vw(True)),
    ("chebyshev_polynomial_w", _chebyshev_vw(False)),
    ("hermite_polynomial_h", sc.eval_hermite),
    ("hermite_polynomial_he", sc.eval_hermitenorm),
    ("laguerre_polynomial_l", sc.eval_laguerre),
    ("legendre_polynomial_p", sc.eval_legendre),
]
_SHIFTED = [
    ("shifted_" + name, _shifted(ref)) for name, ref in _POLYS if name.startswith("chebyshev")
]
POSITIVE = dom(P, lo=0.3, hi=4.0)
DEGREES = dom(U, lo=0.0, hi=6.0)

SPECIAL_FNS = [
    _special_fn(
        "bessel_j0", sc.j0, grads=[Row("bessel_j0", S.bessel_j0, [U(3, 4, lo=-6.0, hi=6.0)])]
    ),
    _special_fn(
        "bessel_j1", sc.j1, grads=[Row("bessel_j1", S.bessel_j1, [U(3, 4, lo=-6.0, hi=6.0)])]
    ),
    _special_fn(
        "bessel_y0", sc.y0, domain=POSITIVE, grads=[Row("bessel_y0", S.bessel_y0, [POSITIVE(3, 4)])]
    ),
    _special_fn(
        "bessel_y1", sc.y1, domain=POSITIVE, grads=[Row("bessel_y1", S.bessel_y1, [POSITIVE(3, 4)])]
    ),
    _special_fn(
        "modified_bessel_k0",
        sc.k0,
        domain=POSITIVE,
        grads=[Row("modified_bessel_k0", S.modified_bessel_k0, [POSITIVE(3, 4)])],
    ),
    _special_fn(
        "modified_bessel_k1",
        sc.k1,
        domain=POSITIVE,
        grads=[Row("modified_bessel_k1", S.modified_bessel_k1, [POSITIVE(3, 4)])],
    ),
    _special_fn("scaled_modified_bessel_k0", sc.k0e, domain=POSITIVE),
    _special_fn("scaled_modified_bessel_k1", sc.k1e, domain=POSITIVE),
    _special_fn("modified_bessel_i0", sc.i0, domain=dom(U, lo=-4.0, hi=4.0), grad=True),
    _special_fn("modified_bessel_i1", sc.i1, domain=dom(U, lo=-4.0, hi=4.0), grad=True),
    _special_fn("spherical_bessel_j0", lambda x: sc.spherical_jn(0, x)),
    _special_fn("airy_ai", lambda x: sc.airy(x)[0], domain=dom(U, lo=-5.0, hi=3.0)),
    _special_fn("erfcx", sc.erfcx, grads=[Row("erfcx", S.erfcx, [U(3, 4, lo=-2.0, hi=4.0)])]),
    _special_binary(
        "zeta",
        sc.zeta,
        domain=dom(U, lo=1.5, hi=4.0),
        dom_b=POSITIVE,
        scalar=2.0,
        grads=[
            Row("zeta_q", lambda q: S.zeta(rumus.tensor(2.5, dtype=q.dtype), q), [POSITIVE(3, 4)])
        ],
    ),
    _special_binary(
        "gammainc",
        sc.gammainc,
        domain=POSITIVE,
        dom_b=POSITIVE,
        grads=[Row("gammainc_x", lambda x: S.gammainc(1.7, x), [POSITIVE(3, 4)])],
    ),
    _special_binary(
        "gammaincc",
        sc.gammaincc,
        domain=POSITIVE,
        dom_b=POSITIVE,
        grads=[Row("gammaincc_x", lambda x: S.gammaincc(0.6, x), [POSITIVE(3, 4)])],
    ),
    *[
        _special_binary(name, _degree(ref), domain=dom(U, lo=-1.2, hi=1.2), dom_b=DEGREES)
        for name, ref in _POLYS + _SHIFTED
    ],
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
