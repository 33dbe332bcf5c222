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


def _cplx(d):
    return {"float32": "complex64", "float64": "complex128"}[d]


def _as_c(x):
    return x[..., 0] + 1j * x[..., 1]


def _pair_samples(m):
    """Real tensors whose last dim is a (real, imag) pair."""
    return [Sample(m(3, 4, 2)), Sample(m(2)), Sample(m(0, 2)), Sample(m(1, 3, 2))]


def _vc(f):
    return lambda x: f(rumus.view_as_complex(x))


def _via_complex(name, f, ref, out, covers, *, domain=U, grad=True, gg=True):
    """An op on complex tensors, reached through view_as_complex of a real input."""
    return OpInfo(
        name,
        [(f"{name} of view_as_complex", _vc(f))],
        lambda x: ref(_as_c(x)),
        _pair_samples,
        dtypes=PAIR,
        out=out,
        domain=domain,
        covers=covers,
        gpu=NO_GPU,
        grads=[Row(name, _vc(f), [domain(3, 2)], gg=gg, nc=False)] if grad else [],
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
        out=_cplx,
        gpu=NO_GPU,
        grads=[Row(name, getattr(rumus, name), [U(3, 4), domain_b(3, 4)], nc=True)],
    )


COMPLEX = [
    OpInfo(
        "view_as_complex",
        ["rumus.view_as_complex"],
        _as_c,
        _pair_samples,
        dtypes=PAIR,
        out=_cplx,
        gpu=NO_GPU,
        grads=[Row("view_as_complex", lambda x: rumus.view_as_complex(x) * (1 - 2j), [U(3, 2)], nc=False)],
        bad=lambda m: [
            ("last dim 3", lambda: rumus.view_as_complex(m(2, 3))),
            ("last dim not stride 1", lambda: rumus.view_as_complex(m(2, 2).t())),
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
    _via_complex(
        "sum_complex", lambda z: z.sum(-1), lambda z: z.sum(-1), _cplx, ["Tensor.sum"]
    ),
    _via_complex(
        "matmul_complex",
        lambda z: z @ z.mT if z.dim() >= 2 else z @ z,
        lambda z: z @ np.swapaxes(z, -1, -2) if z.ndim >= 2 else z @ z,
        _cplx,
        ["rumus.matmul"],
    ),
    _parts("complex", lambda a, b: a + 1j * b),
    _parts("polar", lambda a, b: a * np.exp(1j * b)),
    unary("angle", lambda x: np.angle(x), inplace=False, dtypes=ALL, out=to_float, domain=NZ, grad=False),
    unary("sgn", np_sign, inplace=False, out=same, domain=NZ, dtypes=ALL),
    unary("conj", lambda x: x.copy(), inplace=False, out=same, dtypes=ALL, grad=False),
    unary("conj_physical", lambda x: x.copy(), inplace=False, out=same, dtypes=ALL, grad=False),
    unary("resolve_conj", lambda x: x.copy(), inplace=False, out=same, dtypes=ALL, grad=False),
    *(
        OpInfo(
            name,
            [f"Tensor.{name}"],
            floated(lambda x, target=target: x.astype(target)),
            lambda m: [Sample(m(3, 4)), Sample(m()), Sample(m(0, 2)), Sample(m(3, 4, layout="transposed"))],
            dtypes=ALL,
            out=lambda d, target=target: target,
            domain=dom(U, lo=0.0, hi=5.0),
            gpu=NO_GPU,
            grads=[Row(name, lambda x, name=name: getattr(x, name)().abs(), [dom(U, lo=0.5, hi=2.0)(3, 4)], nc=False)],
        )
        for name, target in (("cfloat", "complex64"), ("cdouble", "complex128"))
    ),
]
