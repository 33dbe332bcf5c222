"""The op registry's rumus.linalg entries (decompositions, solvers, norms), and the
top-level / Tensor spellings PyTorch has for some of them (det, inverse, cholesky...).

Outputs defined up to signs (Q and R of qr, eigenvectors, singular vectors) are compared
through sign-free quantities (products, absolute values) by callable variants, which name the
function they exercise in ``covers``. Gradient rows build well-conditioned inputs (A + n I),
symmetric ones for cholesky / eigh (the ops read one triangle), and keep eigenvalues and
singular values distinct.
"""

import math

import numpy as np
import rumus
import rumus.linalg as LA
from op_db import OpInfo, Row, Sample

F64_32 = ("float64", "float32")
TOLS = {"float32": (2e-4, 2e-4), "float64": (1e-9, 1e-10)}
HOST = "host decompositions: GPU results and gradients are covered by test_linalg_decomp.py"


def WELL(*shape):
    """Well-conditioned square matrices: uniform in [-1, 1) plus n I."""

    def gen(rng):
        x = rng.uniform(-1, 1, shape)
        if len(shape) >= 2 and shape[-1] == shape[-2]:
            x = x + shape[-1] * np.eye(shape[-1])
        return x

    return gen


def SPREAD(*shape):
    """Square matrices with well separated singular values / eigenvalues: Q diag(d) Qᵀ-like."""

    def gen(rng):
        n = shape[-1]
        q, _ = np.linalg.qr(rng.standard_normal(shape[:-2] + (n, n)))
        d = np.arange(1, n + 1) * 1.5 + rng.uniform(0, 0.2, shape[:-2] + (n,))
        return (q * d[..., None, :]) @ np.swapaxes(q, -1, -2) + rng.uniform(-0.1, 0.1, shape)

    return gen


def sym(x):
    return (x + x.mT) * 0.5


def spd_fn(x):
    n = x.shape[-1]
    return x @ x.mT + n * rumus.eye(n, dtype=x.dtype)


def la(name, ref, samples, grads=(), variants=None, domain=WELL, **kw):
    return OpInfo(
        name,
        variants or [f"linalg.{name}"],
        ref,
        samples,
        dtypes=kw.pop("dtypes", F64_32),
        domain=domain,
        tol=TOLS,
        grads=[
            Row(r.name, r.fn, r.specs, gg=r.gg, nc=r.nc, tol=r.tol, gpu=HOST)
            if not isinstance(r.gpu, str)
            else r
            for r in grads
        ],
        **kw,
    )


def _sq(m):
    return [
        Sample(m(3, 3)),
        Sample(m(2, 3, 3)),
        Sample(m(3, 3, layout="transposed")),
        Sample(m(0, 2, 2)),
    ]


def _np_inv(a):
    return np.linalg.inv(a) if a.size else a.copy()


def _np_det(a):
    return np.linalg.det(a) if a.size else np.ones(a.shape[:-2])


def _np_slogdet(a):
    if not a.size:
        return [np.ones(a.shape[:-2]), np.zeros(a.shape[:-2])]
    return list(np.linalg.slogdet(a))


def _np_solve(a, b, left=True):
    if not left:
        return np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    if b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1]):
        return np.linalg.solve(a, b[..., None])[..., 0]
    return np.linalg.solve(a, b)


def _np_chol(a, upper=False):
    a = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
    L = np.linalg.cholesky(a) if a.size else a.copy()
    return np.swapaxes(L, -1, -2) if upper else L


def _spd_samples(m):
    def spd(*shape, layout="contiguous"):
        x = m(*shape, layout=layout)
        x.values = x.values @ np.swapaxes(x.values, -1, -2) + shape[-1] * np.eye(shape[-1])
        return x

    return [
        Sample(spd(3, 3)),
        Sample(spd(2, 3, 3), upper=True),
        Sample(spd(0, 2, 2)),
    ]


def _np_tri(a, b, upper, left=True, unitriangular=False):
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = t - np.eye(t.shape[-1]) * np.diagonal(t, 0, -2, -1)[..., None] + np.eye(t.shape[-1])
    if not left:
        return b @ np.linalg.inv(t)
    return np.linalg.solve(t, b)


def _qr_fn(a, mode="reduced"):
    q, r = LA.qr(a, mode=mode)
    return (q @ r, r.abs()) if mode != "r" else r.abs()


def _qr_ref(a, mode="reduced"):
    if mode == "r":
        return np.abs(np.linalg.qr(a, mode="r"))
    q, r = np.linalg.qr(a, mode=mode)
    return [q @ r, np.abs(r)]


def _eigh_fn(a, UPLO="L"):
    w, v = LA.eigh(a, UPLO=UPLO)
    return w, (v * w.unsqueeze(-2)) @ v.mT


def _eigh_ref(a, UPLO="L"):
    half = np.tril(a) if UPLO == "L" else np.triu(a)
    s = (
        half
        + np.swapaxes(half, -1, -2)
        - np.eye(a.shape[-1]) * np.diagonal(a, 0, -2, -1)[..., None]
    )
    return [np.linalg.eigvalsh(s), s]


def _eigvalsh_ref(a, UPLO="L"):
    return _eigh_ref(a, UPLO)[0]


def _svd_fn(a, full_matrices=True):
    u, s, vh = LA.svd(a, full_matrices=full_matrices)
    k = s.shape[-1]
    return u[..., :k] * s.unsqueeze(-2) @ vh[..., :k, :], s


def _svd_ref(a, full_matrices=True):
    return [a.copy(), np.linalg.svd(a, compute_uv=False)]


def _eigh_loss(a):
    w, v = LA.eigh(sym(a))
    # sign-free functions of the eigenvectors: squares of their entries
    return w, v * v


def _svd_loss(a):
    u, s, vh = LA.svd(a, full_matrices=False)
    return s, (u * u).sum(-1), vh * vh


def _qr_loss(a):
    q, r = LA.qr(a)
    return q @ r.mT, r * r


def _norm_samples(m):
    return [
        Sample(m(3, 4)),
        Sample(m(2, 3, 4), 1, dim=(0, 2)),
        Sample(m(3, 4, layout="transposed"), math.inf, keepdim=True, dim=(-2, -1)),
        Sample(m(2, 3, 4), "nuc"),
        Sample(m(2, 3, 4), -2, dim=(1, 2)),
    ]


def _np_norm(a, ord=None, dim=None, keepdim=False):
    if ord is None and dim is None:
        r = np.sqrt((a**2).sum())
        return r.reshape((1,) * a.ndim) if keepdim else r
    return np.linalg.norm(a, ord, axis=dim, keepdims=keepdim)


def _np_vector_norm(a, ord=2, dim=None, keepdim=False):
    axis = tuple(range(a.ndim)) if dim is None else dim
    x = np.abs(a)
    if ord == math.inf:
        return x.max(axis, keepdims=keepdim)
    if ord == 0:
        return (x != 0).sum(axis, keepdims=keepdim).astype(a.dtype)
    return (x**ord).sum(axis, keepdims=keepdim) ** (1.0 / ord)


def _np_matrix_norm(a, ord="fro", dim=(-2, -1), keepdim=False):
    return np.linalg.norm(a, ord, axis=dim, keepdims=keepdim)


def _np_rank(a, hermitian=False, atol=None, rtol=None):
    return np.linalg.matrix_rank(a, hermitian=hermitian).astype(np.int64)


def _np_pinv(a, hermitian=False):
    return np.linalg.pinv(a, hermitian=hermitian)


def _lstsq_fn(a, b):
    r = LA.lstsq(a, b)
    return r.solution, r.residuals, r.rank, r.singular_values


def _lstsq_ref(a, b):
    x, res, rank, sv = np.linalg.lstsq(a, b, rcond=None)
    return [x, res, np.asarray(rank, np.int64), sv]


def _expm_ref(a):
    w, v = np.linalg.eig(a)
    return (v @ (np.exp(w)[..., None] * np.linalg.inv(v))).real


def _lu_factor_fn(a):
    lu, piv = LA.lu_factor(a)
    return lu, piv.to(rumus.int64)


def _lu_factor_ref(a):
    n = a.shape[-1]
    out, pivs = [], []
    for x in a.reshape(-1, n, n):
        x = x.copy()
        piv = []
        for k in range(n):
            p = k + int(np.argmax(np.abs(x[k:, k])))
            piv.append(p + 1)
            x[[k, p]] = x[[p, k]]
            x[k + 1 :, k] /= x[k, k]
            x[k + 1 :, k + 1 :] -= np.outer(x[k + 1 :, k], x[k, k + 1 :])
        out.append(x)
        pivs.append(piv)
    return [np.array(out).reshape(a.shape), np.array(pivs, np.int64).reshape(a.shape[:-1])]


def _lu_fn(a):
    p, lower, u = LA.lu(a)
    return p @ lower @ u, lower.tril(-1).abs().amax() <= 1.0


def _lu_solve_fn(a, b):
    lu, piv = LA.lu_factor(a)
    return LA.lu_solve(lu, piv, b), LA.lu_solve(lu, piv, b, adjoint=True)


def _lu_solve_ref(a, b):
    return [np.linalg.solve(a, b), np.linalg.solve(np.swapaxes(a, -1, -2), b)]


def _ex_fn(fn):
    def run(*a, **k):
        r, info = fn(*a, **k)
        return r, info.to(rumus.int64)

    return run


def _ex_ref(ref):
    def run(a, *rest, **k):
        return [ref(a, *rest, **k), np.zeros(a.shape[:-2], np.int64)]

    return run


def _cond_ref(a, p=None):
    return np.linalg.cond(a, p)


def _mpow_ref(a, n):
    return np.linalg.matrix_power(a, n)


def _multi_dot_samples(m):
    return [
        Sample([m(3, 4), m(4, 2)]),
        Sample([m(4), m(4, 5), m(5, 2), m(2)]),
        Sample([m(2, 3), m(3, 4, layout="transposed"), m(4, 1)]),
    ]


def _np_multi_dot(ms):
    return np.linalg.multi_dot(ms)


def _vander_ref(x, N=None):
    return np.vander(x, N, increasing=True)


def _logdet_ref(a):
    sign, logabs = np.linalg.slogdet(a)
    return np.where(sign < 0, np.nan, logabs)


def _slogdet_fn(a):
    s, logabs = LA.slogdet(a)
    return s, logabs


LINALG_DECOMP = [
    la(
        "det",
        _np_det,
        _sq,
        [
            Row("linalg_det", LA.det, [WELL(3, 3)]),
            Row("linalg_det_batched", lambda a: a.det(), [WELL(2, 3, 3)]),
        ],
        variants=["linalg.det", "rumus.det", "Tensor.det"],
    ),
    la(
        "slogdet",
        _np_slogdet,
        _sq,
        [Row("linalg_slogdet", lambda a: LA.slogdet(a).logabsdet, [WELL(2, 3, 3)])],
        variants=["linalg.slogdet", "rumus.slogdet", "Tensor.slogdet"],
    ),
    la(
        "logdet",
        _logdet_ref,
        lambda m: [Sample(m(3, 3)), Sample(m(2, 3, 3))],
        [Row("logdet", lambda a: rumus.logdet(spd_fn(a)), [WELL(3, 3)])],
        variants=["rumus.logdet", "Tensor.logdet"],
    ),
    la(
        "inv",
        _np_inv,
        _sq,
        [Row("linalg_inv", LA.inv, [WELL(2, 3, 3)])],
        variants=["linalg.inv", "rumus.inverse", "Tensor.inverse"],
    ),
    la(
        "inv_ex",
        _ex_ref(_np_inv),
        _sq,
        [Row("linalg_inv_ex", lambda a: LA.inv_ex(a).inverse, [WELL(3, 3)], gg=False)],
        variants=[("linalg.inv_ex", _ex_fn(LA.inv_ex))],
        covers=["linalg.inv_ex"],
        out=lambda d: (d, "int64"),
    ),
    la(
        "solve",
        _np_solve,
        lambda m: [
            Sample(m(3, 3), m(3, 2, domain=lambda *s: lambda rng: rng.uniform(-2, 2, s))),
            Sample(m(2, 3, 3), m(3)),
            Sample(m(2, 3, 3), m(2, 3)),
            Sample(m(3, 3, layout="transposed"), m(4, 1, 3, 2), left=True),
            Sample(m(3, 3), m(2, 3), left=False),
        ],
        [
            Row("linalg_solve", LA.solve, [WELL(2, 3, 3), WELL(2, 3, 2)]),
            Row("linalg_solve_bcast", LA.solve, [WELL(2, 1, 3, 3), WELL(3, 3, 2)]),
            Row(
                "linalg_solve_left_false",
                lambda a, b: LA.solve(a, b, left=False),
                [WELL(3, 3), WELL(2, 3)],
            ),
        ],
    ),
    la(
        "solve_ex",
        _ex_ref(_np_solve),
        lambda m: [Sample(m(2, 3, 3), m(2, 3, 2))],
        variants=[("linalg.solve_ex", _ex_fn(LA.solve_ex))],
        covers=["linalg.solve_ex"],
        out=lambda d: (d, "int64"),
        grads=[
            Row(
                "linalg_solve_ex",
                lambda a, b: LA.solve_ex(a, b).result,
                [WELL(3, 3), WELL(3, 2)],
                gg=False,
            )
        ],
    ),
    la(
        "cholesky",
        _np_chol,
        _spd_samples,
        [
            Row("linalg_cholesky", lambda a: LA.cholesky(spd_fn(a)), [WELL(3, 3)]),
            Row(
                "linalg_cholesky_upper",
                lambda a: LA.cholesky(spd_fn(a), upper=True),
                [WELL(2, 3, 3)],
            ),
            Row("cholesky_method", lambda a: spd_fn(a).cholesky(), [WELL(3, 3)], gg=False),
        ],
        variants=["linalg.cholesky", "rumus.cholesky", "Tensor.cholesky"],
    ),
    la(
        "cholesky_ex",
        _ex_ref(_np_chol),
        _spd_samples,
        variants=[("linalg.cholesky_ex", _ex_fn(LA.cholesky_ex))],
        covers=["linalg.cholesky_ex"],
        out=lambda d: (d, "int64"),
        grad=False,
    ),
    la(
        "solve_triangular",
        _np_tri,
        lambda m: [
            Sample(m(3, 3), m(3, 2), upper=True),
            Sample(m(2, 3, 3), m(3, 4), upper=False),
            Sample(m(3, 3, layout="transposed"), m(2, 3), upper=True, left=False),
            Sample(m(3, 3), m(3, 2), upper=False, unitriangular=True),
        ],
        [
            Row(
                "solve_triangular_upper",
                lambda a, b: LA.solve_triangular(a, b, upper=True),
                [WELL(2, 3, 3), WELL(3, 2)],
            ),
            Row(
                "solve_triangular_lower_right",
                lambda a, b: LA.solve_triangular(a, b, upper=False, left=False),
                [WELL(3, 3), WELL(2, 3)],
            ),
            Row(
                "solve_triangular_unit",
                lambda a, b: LA.solve_triangular(a, b, upper=False, unitriangular=True),
                [WELL(3, 3), WELL(3, 2)],
            ),
        ],
    ),
    la(
        "qr",
        _qr_ref,
        lambda m: [
            Sample(m(4, 3)),
            Sample(m(2, 3, 4), mode="complete"),
            Sample(m(4, 3, layout="transposed"), mode="r"),
            Sample(m(4, 4), mode="complete"),
        ],
        [
            Row("linalg_qr", _qr_loss, [WELL(2, 4, 3)]),
            Row("linalg_qr_square", _qr_loss, [WELL(3, 3)], gg=False),
        ],
        variants=[("linalg.qr", _qr_fn)],
        covers=["linalg.qr"],
    ),
    la(
        "eigh",
        _eigh_ref,
        lambda m: [
            Sample(m(3, 3)),
            Sample(m(2, 3, 3), UPLO="U"),
            Sample(m(3, 3, layout="transposed")),
        ],
        [
            Row("linalg_eigh", _eigh_loss, [SPREAD(3, 3)]),
            Row("linalg_eigh_batched", _eigh_loss, [SPREAD(2, 3, 3)], gg=False),
        ],
        variants=[("linalg.eigh", _eigh_fn)],
        covers=["linalg.eigh"],
    ),
    la(
        "eigvalsh",
        _eigvalsh_ref,
        lambda m: [Sample(m(3, 3)), Sample(m(2, 3, 3), UPLO="U"), Sample(m(0, 2, 2))],
        [Row("linalg_eigvalsh", lambda a: LA.eigvalsh(sym(a)), [SPREAD(3, 3)])],
    ),
    la(
        "svd",
        _svd_ref,
        lambda m: [
            Sample(m(4, 3)),
            Sample(m(2, 3, 4), full_matrices=False),
            Sample(m(4, 3, layout="transposed")),
        ],
        [
            Row("linalg_svd_tall", _svd_loss, [SPREAD(4, 4)]),
            Row("linalg_svd_wide", lambda a: _svd_loss(a[..., :3, :]), [SPREAD(4, 4)], gg=False),
            Row(
                "linalg_svd_wide_t", lambda a: _svd_loss(a[..., :, :3]), [SPREAD(2, 4, 4)], gg=False
            ),
        ],
        variants=[("linalg.svd", _svd_fn)],
        covers=["linalg.svd"],
    ),
    la(
        "svdvals",
        lambda a: np.linalg.svd(a, compute_uv=False),
        lambda m: [Sample(m(4, 3)), Sample(m(2, 3, 4)), Sample(m(3, 3, layout="transposed"))],
        [
            Row("linalg_svdvals", LA.svdvals, [SPREAD(3, 3)]),
            Row("linalg_svdvals_wide", lambda a: LA.svdvals(a[:2]), [SPREAD(3, 3)]),
        ],
    ),
    la(
        "vector_norm",
        _np_vector_norm,
        lambda m: [
            Sample(m(3, 4)),
            Sample(m(2, 3, 4), 1, dim=(0, 2)),
            Sample(m(3, 4, layout="transposed"), math.inf, dim=-1, keepdim=True),
            Sample(m(2, 3), 3.5, dim=1),
            Sample(m(2, 3), 0),
            Sample(m(0, 3), 2, dim=1),
        ],
        [
            Row("vector_norm_2", lambda x: LA.vector_norm(x, dim=1), [WELL(3, 4)]),
            Row("vector_norm_p", lambda x: LA.vector_norm(x, 3.5), [WELL(3, 4)]),
            Row("vector_norm_inf", lambda x: LA.vector_norm(x, math.inf, dim=0), [WELL(3, 4)]),
        ],
        domain=lambda *s: lambda rng: rng.uniform(-2, 2, s),
    ),
    la(
        "matrix_norm",
        _np_matrix_norm,
        lambda m: [
            Sample(m(3, 4)),
            Sample(m(2, 3, 4), 1, dim=(0, 2)),
            Sample(m(3, 4, layout="transposed"), math.inf, keepdim=True),
            Sample(m(2, 3, 4), "nuc"),
            Sample(m(2, 3, 4), -2),
            Sample(m(3, 3), -1),
        ],
        [
            Row("matrix_norm_fro", LA.matrix_norm, [WELL(2, 3, 3)]),
            Row("matrix_norm_nuc", lambda a: LA.matrix_norm(a, "nuc"), [SPREAD(3, 3)]),
            Row("matrix_norm_2", lambda a: LA.matrix_norm(a, 2), [SPREAD(3, 3)]),
            Row("matrix_norm_1", lambda a: LA.matrix_norm(a, 1), [SPREAD(3, 3)]),
        ],
        domain=lambda *s: lambda rng: rng.uniform(-2, 2, s),
    ),
    la(
        "norm",
        _np_norm,
        lambda m: [
            Sample(m(3, 4)),
            Sample(m(3, 4), "nuc"),
            Sample(m(2, 3, 4), 1, dim=1),
            Sample(m(4), math.inf),
            Sample(m(2, 3, 4), 2, dim=(1, 2), keepdim=True),
        ],
        [Row("linalg_norm", lambda a: LA.norm(a, "fro"), [WELL(3, 3)])],
        domain=lambda *s: lambda rng: rng.uniform(-2, 2, s),
    ),
    la(
        "cond",
        _cond_ref,
        lambda m: [
            Sample(m(3, 3)),
            Sample(m(2, 3, 3), 1),
            Sample(m(3, 3), "fro"),
            Sample(m(3, 3), -2),
        ],
        [Row("linalg_cond", LA.cond, [SPREAD(3, 3)])],
        mismatch=False,
    ),
    la(
        "matrix_rank",
        _np_rank,
        lambda m: [Sample(m(3, 3)), Sample(m(2, 4, 3)), Sample(m(3, 3), hermitian=True)],
        out=lambda d: "int64",
        grad=False,
    ),
    la(
        "pinv",
        _np_pinv,
        lambda m: [Sample(m(4, 3)), Sample(m(2, 3, 4)), Sample(m(3, 3), hermitian=True)],
        [
            Row("linalg_pinv", LA.pinv, [SPREAD(3, 3)]),
            Row("linalg_pinv_tall", lambda a: LA.pinv(a[:, :2]), [SPREAD(3, 3)], gg=False),
        ],
    ),
    la(
        "lstsq",
        _lstsq_ref,
        lambda m: [Sample(m(5, 3), m(5, 2, domain=lambda *s: lambda rng: rng.uniform(-2, 2, s)))],
        [
            Row(
                "linalg_lstsq",
                lambda a, b: LA.lstsq(a[:, :2], b).solution,
                [SPREAD(3, 3), WELL(3, 2)],
                gg=False,
            )
        ],
        variants=[("linalg.lstsq", _lstsq_fn)],
        covers=["linalg.lstsq"],
        mismatch=False,
        out=lambda d: (d, d, "int64", d),
    ),
    la(
        "matrix_power",
        _mpow_ref,
        lambda m: [
            Sample(m(3, 3), 3),
            Sample(m(2, 3, 3), -2),
            Sample(m(3, 3), 0),
            Sample(m(3, 3, layout="transposed"), 1),
        ],
        [
            Row("matrix_power_3", lambda a: LA.matrix_power(a, 3), [WELL(3, 3)]),
            Row("matrix_power_neg", lambda a: a.matrix_power(-2), [WELL(3, 3)]),
        ],
        variants=["linalg.matrix_power", "rumus.matrix_power", "Tensor.matrix_power"],
        mismatch=False,
    ),
    la(
        "matrix_exp",
        _expm_ref,
        lambda m: [Sample(m(3, 3)), Sample(m(2, 3, 3, layout="transposed"))],
        [Row("matrix_exp", LA.matrix_exp, [lambda rng: rng.uniform(-1, 1, (3, 3))])],
        variants=["linalg.matrix_exp", "rumus.matrix_exp", "Tensor.matrix_exp"],
        domain=lambda *s: lambda rng: rng.uniform(-1, 1, s),
    ),
    la(
        "pinverse",
        lambda a: np.linalg.pinv(a),
        lambda m: [Sample(m(4, 3)), Sample(m(2, 3, 4))],
        [Row("pinverse", rumus.pinverse, [SPREAD(3, 3)], gg=False)],
        variants=["rumus.pinverse", "Tensor.pinverse"],
    ),
    la(
        "multi_dot",
        _np_multi_dot,
        _multi_dot_samples,
        [
            Row(
                "multi_dot",
                lambda a, b, c: LA.multi_dot([a, b, c]),
                [WELL(3, 4), WELL(4, 2), WELL(2)],
            )
        ],
        mismatch=False,
    ),
    la(
        "matmul_linalg",
        np.matmul,
        lambda m: [Sample(m(3, 4), m(4, 2))],
        variants=["linalg.matmul"],
        dtypes=("float64", "float32", "float16", "bfloat16", "int64", "int32", "uint8"),
        grad=False,
    ),
    la(
        "vander",
        _vander_ref,
        lambda m: [Sample(m(4)), Sample(m(3), N=5)],
        [Row("linalg_vander", LA.vander, [WELL(4)])],
        mismatch=False,
    ),
    la(
        "lu_factor",
        _lu_factor_ref,
        lambda m: [Sample(m(3, 3)), Sample(m(2, 4, 4, layout="transposed"))],
        variants=[("linalg.lu_factor", _lu_factor_fn)],
        covers=["linalg.lu_factor"],
        out=lambda d: (d, "int64"),
        grad=False,
    ),
    la(
        "lu_factor_ex",
        lambda a: _lu_factor_ref(a) + [np.zeros(a.shape[:-2], np.int64)],
        lambda m: [Sample(m(3, 3))],
        variants=[
            (
                "linalg.lu_factor_ex",
                lambda a: tuple(
                    t.to(rumus.int64) if i else t for i, t in enumerate(LA.lu_factor_ex(a))
                ),
            )
        ],
        covers=["linalg.lu_factor_ex"],
        out=lambda d: (d, "int64", "int64"),
        grad=False,
    ),
    la(
        "lu",
        lambda a: [a.copy(), np.asarray(True)],
        lambda m: [Sample(m(3, 3)), Sample(m(2, 4, 3)), Sample(m(3, 4, layout="transposed"))],
        variants=[("linalg.lu", _lu_fn)],
        covers=["linalg.lu"],
        out=lambda d: (d, "bool"),
        grad=False,
    ),
    la(
        "lu_solve",
        _lu_solve_ref,
        lambda m: [Sample(m(3, 3), m(3, 2)), Sample(m(2, 3, 3), m(2, 3, 1))],
        variants=[("linalg.lu_solve", _lu_solve_fn)],
        covers=["linalg.lu_solve"],
        grad=False,
    ),
]
