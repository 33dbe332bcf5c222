"""The op registry's entries for complex numbers (rust/ops/complex/): the registry draws
real inputs, so complex operands are built from them with view_as_complex (a trailing
dim of 2 holds the real and imaginary parts) and results are compared with NumPy's
complex arithmetic. tests/test_complex.py has the complex-only cases (arithmetic,
casts, NumPy interop, Wirtinger gradients)."""

import numpy as np
import rumus
from op_db import ALL, NZ, OpInfo, Row, Sample, U, dom, floated, np_sign, same, to_float, unary

PAIR = ("float64", "float32")
NO_GPU = "complex tensors are CPU only (GPUs raise TypeError)"
# complex results: a rounding or two of each part
CTOL = {
    "float64": (1e-12, 1e-12),
    "float32": (2e-6, 2e-6),
    "complex128": (1e-12, 1e-12),
    "complex64": (2e-6, 2e-6),
}


def _cplx(d):
    return {"float32": "complex64", "float64": "complex128"}[d]


def _as_c(x):
    return x[..., 0] + 1j * x[..., 1]


def _pair_samples(m):
    """Real tensors whose last dim is a (real, imag) pair."""
    return [Sample(m(3, 4, 2)), Sample(m(2)), Sample(m(0, 2)), Sample(m(1, 3, 2))]


def _vc(f):
    return lambda x: f(rumus.view_as_complex(x))


def _via_complex(
    name, f, ref, out, covers, *, domain=U, grad=True, gg=True, samples=None, row=(3, 2)
):
    """An op on complex tensors, reached through view_as_complex of a real input."""
    return OpInfo(
        name,
        [(f"{name} of view_as_complex", _vc(f))],
        lambda x: ref(_as_c(x)),
        samples or _pair_samples,
        dtypes=PAIR,
        tol=CTOL,
        out=out,
        domain=domain,
        covers=covers,
        gpu=NO_GPU,
        grads=[Row(name, _vc(f), [domain(*row)], gg=gg, nc=False)] if grad else [],
    )


def _parts_samples(m):
    return [
        Sample(m(3, 4), m(3, 4)),
        Sample(m(3, 1), m(4)),
        Sample(m(), m(2, 3)),
        Sample(m(0, 3), m(3)),
        Sample(m(3, 4, layout="transposed"), m(3, 4)),
    ]


def _parts(name, ref, domain_b=U):
    return OpInfo(
        name,
        [f"rumus.{name}"],
        lambda a, b: np.asarray(ref(a, b)),
        _parts_samples,
        dtypes=PAIR,
        tol=CTOL,
        out=_cplx,
        gpu=NO_GPU,
        grads=[Row(name, getattr(rumus, name), [U(3, 4), domain_b(3, 4)], nc=True)],
    )


def _match(w, ref, tol):
    """Each reference eigenvalue has a distinct computed one within ``tol``."""
    left = list(np.asarray(w).reshape(-1))
    for r in np.asarray(ref).reshape(-1):
        k = int(np.argmin([abs(x - r) for x in left]))
        assert abs(left.pop(k) - r) <= tol * (1 + abs(r)), (w, ref)


def _eig_check(got, sample, dtype, np_args, np_kwargs):
    a = np_args[0].astype(np.float64)
    w, v = got if isinstance(got, tuple) else (got, None)
    assert w.dtype == getattr(rumus, _cplx(dtype)) and tuple(w.shape) == a.shape[:-1]
    tol = 1e-9 if dtype == "float64" else 1e-3
    if a.size == 0:
        return
    ref = np.linalg.eigvals(a)
    for wi, ri in zip(w.numpy().reshape(-1, a.shape[-1]), ref.reshape(-1, a.shape[-1])):
        _match(wi, ri, tol)
    if v is not None:
        vn, wn = v.numpy().astype(np.complex128), w.numpy().astype(np.complex128)
        np.testing.assert_allclose(a @ vn, vn * wn[..., None, :], rtol=tol, atol=tol * 10)
        np.testing.assert_allclose(np.linalg.norm(vn, axis=-2), 1.0, rtol=tol, atol=tol)


def _eig_samples(m):
    return [
        Sample(m(4, 4)),
        Sample(m(2, 3, 3)),
        Sample(m(1, 1)),
        Sample(m(0, 2, 2)),
        Sample(m(3, 0, 0)),
    ]


COMPLEX = [
    OpInfo(
        "view_as_complex",
        ["rumus.view_as_complex"],
        _as_c,
        _pair_samples,
        dtypes=PAIR,
        tol=CTOL,
        out=_cplx,
        gpu=NO_GPU,
        grads=[
            Row(
                "view_as_complex",
                lambda x: rumus.view_as_complex(x) * (1 - 2j),
                [U(3, 2)],
                nc=False,
            )
        ],
        bad=lambda m: [
            ("last dim 3", lambda: rumus.view_as_complex(m.t(2, 3))),
            ("last dim not stride 1", lambda: rumus.view_as_complex(m.t(2, 2).t())),
        ],
    ),
    _via_complex(
        "view_as_real",
        rumus.view_as_real,
        lambda z: np.stack([z.real, z.imag], -1),
        same,
        ["rumus.view_as_real"],
    ),
    _via_complex("real", rumus.real, np.real, same, ["rumus.real"]),
    _via_complex("imag", rumus.imag, np.imag, same, ["rumus.imag"]),
    _via_complex("conj_complex", rumus.conj, np.conj, _cplx, ["rumus.conj", "Tensor.conj"]),
    _via_complex(
        "conj_physical_complex",
        rumus.conj_physical,
        np.conj,
        _cplx,
        ["rumus.conj_physical", "Tensor.conj_physical"],
    ),
    _via_complex("abs_complex", rumus.abs, np.abs, same, [], domain=NZ),
    _via_complex("angle_complex", rumus.angle, np.angle, same, ["rumus.angle"], domain=NZ),
    _via_complex(
        "sgn_complex", rumus.sgn, lambda z: z / np.abs(z), _cplx, ["rumus.sgn"], domain=NZ
    ),
    _via_complex("exp_complex", rumus.exp, np.exp, _cplx, []),
    _via_complex("log_complex", rumus.log, np.log, _cplx, [], domain=NZ),
    _via_complex("sum_complex", lambda z: z.sum(-1), lambda z: z.sum(-1), _cplx, ["Tensor.sum"]),
    _via_complex(
        "matmul_complex",
        lambda z: z @ z.mT,
        lambda z: z @ np.swapaxes(z, -1, -2),
        _cplx,
        ["rumus.matmul"],
        samples=lambda m: [Sample(m(3, 4, 2)), Sample(m(2, 3, 4, 2)), Sample(m(0, 3, 2))],
        row=(2, 3, 2),
    ),
    _parts("complex", lambda a, b: a + 1j * b),
    _parts("polar", lambda a, b: a * np.exp(1j * b)),
    unary(
        "angle",
        lambda x: np.angle(x),
        inplace=False,
        dtypes=ALL,
        out=to_float,
        domain=NZ,
        grad=False,
    ),
    unary("sgn", np_sign, inplace=False, out=same, domain=NZ, dtypes=ALL),
    unary("conj", lambda x: x.copy(), inplace=False, out=same, dtypes=ALL, grad=False),
    unary("conj_physical", lambda x: x.copy(), inplace=False, out=same, dtypes=ALL, grad=False),
    unary("resolve_conj", lambda x: x.copy(), inplace=False, out=same, dtypes=ALL, grad=False),
    *(
        OpInfo(
            name,
            [f"Tensor.{name}"],
            floated(lambda x, target=target: x.astype(target)),
            lambda m: [
                Sample(m(3, 4)),
                Sample(m()),
                Sample(m(0, 2)),
                Sample(m(3, 4, layout="transposed")),
            ],
            dtypes=ALL,
            out=lambda d, target=target: target,
            domain=dom(U, lo=0.0, hi=5.0),
            gpu=NO_GPU,
            grads=[
                Row(
                    name,
                    lambda x, name=name: getattr(x, name)().abs(),
                    [dom(U, lo=0.5, hi=2.0)(3, 4)],
                    nc=False,
                    # finite differences through complex64 rounding need a larger step
                    tol=dict(eps=1e-3, atol=1e-3, rtol=1e-3) if name == "cfloat" else None,
                )
            ],
        )
        for name, target in (("cfloat", "complex64"), ("cdouble", "complex128"))
    ),
    *(
        OpInfo(
            f"linalg.{name}",
            [f"linalg.{name}"],
            samples=_eig_samples,
            dtypes=PAIR,
            check=_eig_check,
            grads=[
                Row(
                    f"linalg.{name}",
                    (lambda m: rumus.linalg.eigvals(m))
                    if name == "eigvals"
                    else (lambda m: rumus.linalg.eig(m)[1].abs()),
                    [U(3, 3)],
                    gg=name == "eigvals",
                )
            ],
            gpu="eig's complex results are CPU only",
            bad=lambda m, name=name: [
                ("non-square", lambda: getattr(rumus.linalg, name)(m.t(2, 3))),
                ("1-d", lambda: getattr(rumus.linalg, name)(m.t(3))),
            ],
        )
        for name in ("eig", "eigvals")
    ),
]
