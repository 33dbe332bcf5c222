"""rumus.linalg: PyTorch's torch.linalg on float32 and float64 tensors.

Decompositions (LU, Cholesky, QR, symmetric eigendecomposition, SVD) and the
solvers run in the Rust engine through the faer crate, batched over leading
dimensions. GPU tensors are decomposed on the host: the input is copied to
the CPU and the results come back on the GPU; matrix products (matmul,
multi_dot, matrix_power, the backward formulas) stay on the GPU.

Gradients follow PyTorch's formulas, written with tensor ops (so they run on
the tensors' device and differentiate again). As in PyTorch, the gradients of
eigh / svd need distinct eigenvalues / singular values, and the gradient of
``qr`` needs nrows >= ncols. Differences from PyTorch:

- the gradient of ``det`` at a singular matrix raises LinAlgError (PyTorch
  goes through an SVD there);
- the gradients of ``lu_factor`` / ``lu_factor_ex`` / ``lu`` are Python
  autograd Functions (PyTorch's formulas) and ``lu_solve`` differentiates
  through ``solve(P L U, B)``;
- ``svd(full_matrices=True)`` differentiates through the first min(m, n)
  columns of U / rows of Vh only;
- ``matrix_exp`` differentiates its Padé approximant (exact to rounding)
  rather than the block-matrix formula;
- ``eig`` / ``eigvals`` (complex results) are not available: rumus has no
  complex dtypes yet.
"""

# Annotations stay unevaluated, and typing names are imported with a leading underscore:
# this module's public names are its functions (tests/test_ops.py checks them).
from __future__ import annotations

import builtins as _builtins
import math as _math
from collections.abc import Sequence as _Sequence
from typing import NamedTuple as _NamedTuple

from . import _rumus
from ._rumus import Tensor as _Tensor

LinAlgError = _rumus.LinAlgError

__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "cond",
    "cross",
    "det",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "inv_ex",
    "lstsq",
    "lu",
    "lu_factor",
    "lu_factor_ex",
    "lu_solve",
    "matmul",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_ex",
    "solve_triangular",
    "svd",
    "svdvals",
    "vander",
    "vector_norm",
]

# Result types named after their functions, as PyTorch's torch.return_types.*; typed
# fields for type checkers.
SlogdetResult = _NamedTuple("slogdet", [("sign", _Tensor), ("logabsdet", _Tensor)])
InvExResult = _NamedTuple("inv_ex", [("inverse", _Tensor), ("info", _Tensor)])
CholeskyExResult = _NamedTuple("cholesky_ex", [("L", _Tensor), ("info", _Tensor)])
SolveExResult = _NamedTuple("solve_ex", [("result", _Tensor), ("info", _Tensor)])
QRResult = _NamedTuple("qr", [("Q", _Tensor), ("R", _Tensor)])
EighResult = _NamedTuple("eigh", [("eigenvalues", _Tensor), ("eigenvectors", _Tensor)])
EigResult = _NamedTuple("eig", [("eigenvalues", _Tensor), ("eigenvectors", _Tensor)])
SVDResult = _NamedTuple("svd", [("U", _Tensor), ("S", _Tensor), ("Vh", _Tensor)])
LUFactorResult = _NamedTuple("lu_factor", [("LU", _Tensor), ("pivots", _Tensor)])
LUFactorExResult = _NamedTuple(
    "lu_factor_ex", [("LU", _Tensor), ("pivots", _Tensor), ("info", _Tensor)]
)
LUResult = _NamedTuple("lu", [("P", _Tensor), ("L", _Tensor), ("U", _Tensor)])
LstsqResult = _NamedTuple(
    "lstsq",
    [
        ("solution", _Tensor),
        ("residuals", _Tensor),
        ("rank", _Tensor),
        ("singular_values", _Tensor),
    ],
)


def _tensor_module():
    import rumus

    return rumus


# ------------------------------------------------------------ decompositions and solvers


def det(A: _Tensor) -> _Tensor:
    """The determinant of square matrices.

    Args:
        A (Tensor): square matrices, of shape ``(*, n, n)``.

    Returns:
        Tensor: of shape ``(*)``.
    """
    return _rumus._linalg_det(A)


def slogdet(A: _Tensor) -> SlogdetResult:
    """The sign and log of the absolute determinant of square matrices.

    Args:
        A (Tensor): square matrices, of shape ``(*, n, n)``.

    Returns:
        tuple[Tensor, Tensor]: ``(sign, logabsdet)``; for a singular matrix sign is 0 and logabsdet
        -inf.
    """
    return SlogdetResult(*_rumus._linalg_slogdet(A))


def inv_ex(A: _Tensor, *, check_errors: bool = False) -> InvExResult:
    """The inverse and an error code, without raising by default.

    Args:
        A (Tensor): square matrices, of shape ``(*, n, n)``.
        check_errors (bool): raise LinAlgError when ``info`` is not 0.

    Returns:
        tuple[Tensor, Tensor]: ``(inverse, info)``; ``info`` is the 1-based index of a zero pivot (0
        when invertible).
    """
    return InvExResult(*_rumus._linalg_inv_ex(A, check_errors))


def inv(A: _Tensor) -> _Tensor:
    """The inverse of square matrices.

    Args:
        A (Tensor): square matrices, of shape ``(*, n, n)``.

    Returns:
        Tensor: of A's shape.

    Raises:
        LinAlgError: when a matrix is singular.
    """
    return _rumus._linalg_inv_ex(A, True)[0]


def cholesky_ex(A: _Tensor, *, upper: bool = False, check_errors: bool = False) -> CholeskyExResult:
    """The Cholesky factor and an error code, without raising by default.

    Args:
        A (Tensor): square matrices, of shape ``(*, n, n)``.
        upper (bool): return ``U = L^T`` instead of ``L``.
        check_errors (bool): raise LinAlgError when ``info`` is not 0.

    Returns:
        tuple[Tensor, Tensor]: ``(L, info)``; ``info`` is the order of the first leading minor that
        is not positive-definite (0 on success).
    """
    return CholeskyExResult(*_rumus._linalg_cholesky_ex(A, upper, check_errors))


def cholesky(A: _Tensor, *, upper: bool = False) -> _Tensor:
    """The Cholesky factor ``L`` of symmetric positive-definite matrices (``A = L L^T``).

    Args:
        A (Tensor): square matrices, of shape ``(*, n, n)``. Only the lower triangle is read.
        upper (bool): return ``U = L^T`` instead.

    Returns:
        Tensor: the triangular factor, of A's shape.

    Raises:
        LinAlgError: when a matrix is not positive-definite.
    """
    return _rumus._linalg_cholesky_ex(A, upper, True)[0]


def solve_ex(
    A: _Tensor, B: _Tensor, *, left: bool = True, check_errors: bool = False
) -> SolveExResult:
    """Solves ``A X = B`` and returns an error code, without raising by default.

    Args:
        A (Tensor): square matrices, of shape ``(*, n, n)``.
        B (Tensor): a matrix, or a (batch of) vector(s).
        left (bool): solve ``A X = B`` (True) or ``X A = B``.
        check_errors (bool): raise LinAlgError when ``info`` is not 0.

    Returns:
        tuple[Tensor, Tensor]: ``(result, info)``.
    """
    return SolveExResult(*_rumus._linalg_solve_ex(A, B, left, check_errors))


def solve(A: _Tensor, B: _Tensor, *, left: bool = True) -> _Tensor:
    """Solves ``A X = B`` (or ``X A = B``).

    Args:
        A (Tensor): square matrices, of shape ``(*, n, n)``.
        B (Tensor): a matrix, or a (batch of) vector(s).
        left (bool): solve ``A X = B`` (True) or ``X A = B``.

    Returns:
        Tensor: X.

    Raises:
        LinAlgError: when A is singular.
    """
    return _rumus._linalg_solve_ex(A, B, left, True)[0]


def solve_triangular(
    A: _Tensor, B: _Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False
) -> _Tensor:
    """Solves a triangular system ``A X = B`` (or ``X A = B``).

    Args:
        A (Tensor): triangular matrices, of shape ``(*, n, n)``.
        B (Tensor): right-hand sides.
        upper (bool): A is upper (True) or lower triangular.
        left (bool): solve ``A X = B`` (True) or ``X A = B``.
        unitriangular (bool): assume ones on the diagonal.

    Returns:
        Tensor: X.
    """
    return _rumus._linalg_solve_triangular(A, B, upper, left, unitriangular)


def qr(A: _Tensor, mode: str = "reduced") -> QRResult:
    """The QR decomposition ``A = Q R``.

    Args:
        A (Tensor): matrices, of shape ``(*, m, n)``.
        mode (str): ``'reduced'``, ``'complete'`` or ``'r'`` (Q empty).

    Returns:
        tuple[Tensor, Tensor]: ``(Q, R)``.
    """
    return QRResult(*_rumus._linalg_qr(A, mode))


def eigh(A: _Tensor, UPLO: str = "L") -> EighResult:
    """The eigenvalues and eigenvectors of symmetric matrices.

    Args:
        A (Tensor): square matrices, of shape ``(*, n, n)``.
        UPLO (str): ``'L'`` or ``'U'``: the triangle that is read.

    Returns:
        tuple[Tensor, Tensor]: ``(eigenvalues, eigenvectors)``: the eigenvalues ascending, of shape
        ``(*, n)``, and the eigenvectors as columns.
    """
    return EighResult(*_rumus._linalg_eigh(A, UPLO, True))


def eig(A: _Tensor) -> EigResult:
    """The eigenvalues and eigenvectors of general square matrices (complex results).

    Runs on the CPU through faer. The gradient is PyTorch's; as there, it is only
    meaningful for functions of the eigenvectors that do not depend on their phase.

    Args:
        A (Tensor): float32/float64 square matrices, of shape ``(*, n, n)``.

    Returns:
        tuple[Tensor, Tensor]: ``(eigenvalues, eigenvectors)``: complex eigenvalues of shape
        ``(*, n)`` and unit-norm eigenvectors as the columns of ``(*, n, n)``.
    """
    if isinstance(A, _Tensor) and A.requires_grad and _rumus.is_grad_enabled():
        return EigResult(*_Eig.apply(A))
    return EigResult(*_rumus._linalg_eig(A, True))


def eigvals(A: _Tensor) -> _Tensor:
    """The eigenvalues of general square matrices, as a complex tensor.

    Args:
        A (Tensor): float32/float64 square matrices, of shape ``(*, n, n)``.

    Returns:
        Tensor: complex eigenvalues of shape ``(*, n)``.
    """
    if isinstance(A, _Tensor) and A.requires_grad and _rumus.is_grad_enabled():
        return _Eig.apply(A)[0]
    return _rumus._linalg_eig(A, False)[0]


def _complex_solve(A, B):
    """X with A X = B for complex A and B, through the real system [[Ar, -Ai], [Ai, Ar]]."""
    import rumus

    n = A.shape[-1]
    M = rumus.cat([rumus.cat([A.real, -A.imag], -1), rumus.cat([A.imag, A.real], -1)], -2)
    X = solve(M, rumus.cat([B.real, B.imag], -2))
    return rumus.complex(X[..., :n, :], X[..., n:, :])


def _eig_backward(L, V, gL, gV):
    """PyTorch's gradient of A = V diag(L) V^-1:
    V^-H (diag(gL) + (V^H gV - V^H V diag(Re diag(V^H gV))) / conj(E)) V^H,
    with E[i, j] = L[j] - L[i] off the diagonal."""
    import rumus

    n = L.shape[-1]
    eye = rumus.eye(n, dtype=L.real.dtype)
    Vh = V.conj().mT
    VhgV = Vh @ gV
    d = VhgV.real.diagonal(0, -2, -1).unsqueeze(-2)
    g = VhgV - Vh @ (V * d)
    Lc = L.conj()
    E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1) + eye
    g = g / E * (1 - eye) + gL.unsqueeze(-1) * eye
    return _complex_solve(Vh, g @ Vh)


def _eig_function():
    from .autograd import Function

    class Eig(Function):
        @staticmethod
        def forward(ctx, A):
            L, V = _rumus._linalg_eig(A.detach(), True)
            ctx.save_for_backward(L, V)
            ctx.real = not A.is_complex()
            return L, V

        @staticmethod
        def backward(ctx, gL, gV):
            L, V = ctx.saved_tensors
            g = _eig_backward(L, V, gL, gV)
            return g.real if ctx.real else g

    return Eig


class _LazyEig:
    """rumus.autograd imports this module: the Function class is made on first use."""

    cls = None

    @classmethod
    def apply(cls, A):
        if cls.cls is None:
            cls.cls = _eig_function()
        return cls.cls.apply(A)


_Eig = _LazyEig


def eigvalsh(A: _Tensor, UPLO: str = "L") -> _Tensor:
    """The eigenvalues of symmetric matrices, ascending.

    Args:
        A (Tensor): square matrices, of shape ``(*, n, n)``.
        UPLO (str): ``'L'`` or ``'U'``: the triangle that is read.

    Returns:
        Tensor: of shape ``(*, n)``.
    """
    return _rumus._linalg_eigh(A, UPLO, False)[0]


def svd(A: _Tensor, full_matrices: bool = True, *, driver: str | None = None) -> SVDResult:
    """The singular value decomposition ``A = U diag(S) Vh``.

    Args:
        A (Tensor): matrices, of shape ``(*, m, n)``.
        full_matrices (bool): return square U and Vh.
        driver (str, optional): accepted and ignored.

    Returns:
        tuple[Tensor, Tensor, Tensor]: ``(U, S, Vh)``, with S descending.
    """
    return SVDResult(*_rumus._linalg_svd(A, full_matrices, True))


def svdvals(A: _Tensor, *, driver: str | None = None) -> _Tensor:
    """The singular values of matrices, descending.

    Args:
        A (Tensor): matrices, of shape ``(*, m, n)``.
        driver (str, optional): accepted and ignored.

    Returns:
        Tensor: of shape ``(*, min(m, n))``.
    """
    return _rumus._linalg_svd(A, False, False)[1]


def lu_factor_ex(A: _Tensor, *, pivot: bool = True, check_errors: bool = False) -> LUFactorExResult:
    """The packed LU factorization and an error code, without raising by default.

    Args:
        A (Tensor): square matrices, of shape ``(*, n, n)``.
        pivot (bool): use partial pivoting (PyTorch's default).
        check_errors (bool): raise LinAlgError when ``info`` is not 0.

    Returns:
        tuple[Tensor, Tensor, Tensor]: ``(LU, pivots, info)``.
    """
    if _recording(A):
        f, p, info = _rumus._linalg_lu_factor_ex(A.detach(), pivot, check_errors)
        return LUFactorExResult(_LUFactor.apply(A, f, p), p, info)
    return LUFactorExResult(*_rumus._linalg_lu_factor_ex(A, pivot, check_errors))


def lu_factor(A: _Tensor, *, pivot: bool = True) -> LUFactorResult:
    """The packed LU factorization, for :func:`lu_solve`.

    Args:
        A (Tensor): square matrices, of shape ``(*, n, n)``.
        pivot (bool): use partial pivoting (PyTorch's default).

    Returns:
        tuple[Tensor, Tensor]: ``(LU, pivots)``: the factors in one matrix, and LAPACK's 1-based
        int32 row swaps.

    Raises:
        LinAlgError: when a matrix is singular.
    """
    f, p, _ = lu_factor_ex(A, pivot=pivot, check_errors=True)
    return LUFactorResult(f, p)


def lu_solve(
    LU: _Tensor, pivots: _Tensor, B: _Tensor, *, left: bool = True, adjoint: bool = False
) -> _Tensor:
    """Solves ``A X = B`` from the factors :func:`lu_factor` returned.

    Args:
        LU (Tensor): the packed factors, of shape ``(*, n, n)``.
        pivots (Tensor): the row swaps.
        B (Tensor): right-hand sides, of shape ``(*, n, k)``.
        left (bool): solve ``A X = B`` (True) or ``X A = B``.
        adjoint (bool): solve with ``A^T`` instead.

    Returns:
        Tensor: X.
    """
    if _recording(LU, B):
        # The derivative of (P L U)^-1 B in LU and B is that of solve on the rebuilt A.
        n = LU.shape[-1]
        eye = _eye_like(n, LU)
        P = _rumus._linalg_lu_solve(eye.expand(LU.shape), pivots, eye, True, False).mT
        A = P @ ((LU.tril(-1) + eye) @ LU.triu())
        return solve(A.mT if adjoint else A, B, left=left)
    return _rumus._linalg_lu_solve(LU, pivots, B, left, adjoint)


def lu(A: _Tensor, *, pivot: bool = True) -> LUResult:
    """The LU decomposition with partial pivoting, ``A = P L U``.

    Args:
        A (Tensor): matrices, of shape ``(*, m, n)``.
        pivot (bool): use partial pivoting (PyTorch's default).

    Returns:
        tuple[Tensor, Tensor, Tensor]: ``(P, L, U)``.
    """
    if _recording(A):
        P, L, U = _rumus._linalg_lu(A.detach(), pivot)
        L, U = _LU.apply(A, P, L, U)
        return LUResult(P, L, U)
    return LUResult(*_rumus._linalg_lu(A, pivot))


def _recording(*ts) -> bool:
    return _rumus.is_grad_enabled() and any(isinstance(t, _Tensor) and t.requires_grad for t in ts)


def _lu_backward(P, L, U, gL, gU):
    """PyTorch's gradient of A = P L U (L unit lower, U upper) for any shape:
    with phi = tril(L^H gL, -1) + triu(gU U^H) on the square k x k part,
    gA = P L^-H phi U^-H, plus the terms of U's extra columns (wide A) or
    L's extra rows (tall A)."""
    import rumus

    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    gL = rumus.zeros_like(L) if gL is None else gL
    gU = rumus.zeros_like(U) if gU is None else gU
    L1, U1 = L[..., :k, :], U[..., :, :k]
    phi_l = L1.mT @ gL[..., :k, :]
    phi_u = gU[..., :, :k] @ U1.mT
    if m < n:
        phi_l = phi_l - gU[..., :, k:] @ U[..., :, k:].mT
    if m > n:
        phi_u = phi_u - L[..., k:, :].mT @ gL[..., k:, :]
    phi = phi_l.tril(-1) + phi_u.triu()
    g = solve_triangular(L1.mT, phi, upper=True, unitriangular=True)
    g = solve_triangular(U1.mT, g, upper=False, left=False)
    if m < n:
        g = rumus.cat(
            [g, solve_triangular(L1.mT, gU[..., :, k:], upper=True, unitriangular=True)], -1
        )
    if m > n:
        g = rumus.cat([g, solve_triangular(U1.mT, gL[..., k:, :], upper=False, left=False)], -2)
    return P @ g


def _lu_functions():
    from .autograd import Function

    class LU(Function):
        @staticmethod
        def forward(ctx, A, P, L, U):
            ctx.save_for_backward(P, L, U)
            return L, U

        @staticmethod
        def backward(ctx, gL, gU):
            P, L, U = ctx.saved_tensors
            return _lu_backward(P, L, U, gL, gU), None, None, None

    class LUFactor(Function):
        @staticmethod
        def forward(ctx, A, LU, pivots):
            ctx.save_for_backward(LU, pivots)
            return LU

        @staticmethod
        def backward(ctx, g):
            LU, pivots = ctx.saved_tensors
            eye = _eye_like(LU.shape[-1], LU)
            P = _rumus._linalg_lu_solve(eye.expand(LU.shape), pivots, eye, True, False).mT
            L, U = LU.tril(-1) + eye, LU.triu()
            return _lu_backward(P, L, U, g.tril(-1), g.triu()), None, None

    return LU, LUFactor


class _LazyFunction:
    """rumus.autograd imports this module: the Function classes are made on first use."""

    classes = None

    def __init__(self, index):
        self.index = index

    def apply(self, *args):
        if _LazyFunction.classes is None:
            _LazyFunction.classes = _lu_functions()
        return _LazyFunction.classes[self.index].apply(*args)


_LU = _LazyFunction(0)
_LUFactor = _LazyFunction(1)


# ------------------------------------------------------------ products


def matmul(input: _Tensor, other: _Tensor) -> _Tensor:
    """The matrix product, as :func:`rumus.matmul`.

    Args:
        input (Tensor): the first operand.
        other (Tensor): the second operand.

    Returns:
        Tensor: the product.
    """
    return _rumus.Tensor.matmul(input, other)


def multi_dot(tensors: _Sequence[_Tensor]) -> _Tensor:
    """The product of a chain of matrices, in the cheapest order.

    Args:
        tensors (Sequence[Tensor]): 2-d tensors; the first and last may be 1-d.

    Returns:
        Tensor: the product.
    """
    ts = list(tensors)
    for t in ts:
        _check_float("linalg.multi_dot", t)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        ok = t.dim() == 2 or (t.dim() == 1 and i in (0, len(ts) - 1))
        if not ok:
            raise RuntimeError(
                f"multi_dot(): tensor {i} must be 2D (1D allowed first or last) but got "
                f"{t.dim()}D (shape {list(t.shape)})"
            )
    first_vec, last_vec = ts[0].dim() == 1, ts[-1].dim() == 1
    if first_vec:
        ts[0] = ts[0].unsqueeze(0)
    if last_vec:
        ts[-1] = ts[-1].unsqueeze(1)
    n = len(ts)
    dims = [ts[0].shape[0]] + [t.shape[1] for t in ts]
    for i in range(n - 1):
        if ts[i].shape[1] != ts[i + 1].shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {list(ts[i].shape)} and "
                f"{list(ts[i + 1].shape)} cannot be multiplied"
            )
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = _math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def chain(i, j):
        if i == j:
            return ts[i]
        k = split[i][j]
        return chain(i, k) @ chain(k + 1, j)

    out = chain(0, n - 1)
    if first_vec:
        out = out.squeeze(0)
    if last_vec:
        out = out.squeeze(-1)
    return out


def _check_float(op, A):
    r = _tensor_module()
    if not isinstance(A, r.Tensor):
        raise TypeError(f"{op}(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.dtype not in (r.float32, r.float64):
        raise RuntimeError(
            f"{op}: Expected a floating point tensor as input (rumus.linalg runs in float32 and "
            f"float64). Got {A.dtype}"
        )


def _check_square(op, A):
    _check_float(op, A)
    if A.dim() < 2:
        raise RuntimeError(
            f"{op}: The input tensor A must have at least 2 dimensions (got shape {list(A.shape)})."
        )
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{op}: A must be batches of square matrices, but they are {A.shape[-2]} by "
            f"{A.shape[-1]} matrices (shape {list(A.shape)})"
        )


def _eye_like(n, A):
    r = _tensor_module()
    return r.eye(n, dtype=A.dtype, device=A.device)


def matrix_power(A: _Tensor, n: int) -> _Tensor:
    """The ``n``-th power of square matrices, by repeated squaring.

    Args:
        A (Tensor): square matrices, of shape ``(*, n, n)``.
        n (int): the exponent; negative powers go through the inverse.

    Returns:
        Tensor: of A's shape.
    """
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    _check_square("linalg.matrix_power", A)
    if n == 0:
        return _eye_like(A.shape[-1], A).expand(A.shape).clone()
    if n < 0:
        A, n = inv(A), -n
    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result


# Padé(13) coefficients (Higham 2005), and the 1-norm bounds for degrees 3..13.
_PADE13 = [
    64764752532480000.0,
    32382376266240000.0,
    7771770303897600.0,
    1187353796428800.0,
    129060195264000.0,
    10559470521600.0,
    670442572800.0,
    33522128640.0,
    1323241920.0,
    40840800.0,
    960960.0,
    16380.0,
    182.0,
    1.0,
]
_THETA13 = {"float64": 5.371920351148152, "float32": 3.925724783138660}


def matrix_exp(A: _Tensor) -> _Tensor:
    """The matrix exponential, by scaling and squaring with a degree-13 Padé approximant.

    Args:
        A (Tensor): square matrices, of shape ``(*, n, n)``.

    Returns:
        Tensor: of A's shape.
    """
    _check_float("linalg.matrix_exp", A)
    _check_square("linalg.matrix_exp", A)
    n = A.shape[-1]
    if A.numel() == 0:
        return A.clone()
    # one scaling for the whole batch: the largest 1-norm decides it
    norm1 = _builtins.float(A.detach().abs().sum(-2).amax().item()) if n else 0.0
    theta = _THETA13["float64" if A.dtype == _tensor_module().float64 else "float32"]
    s = max(0, _math.ceil(_math.log2(norm1 / theta))) if norm1 > theta else 0
    X = A * (0.5**s) if s else A
    b = _PADE13
    eye = _eye_like(n, A)
    X2 = X @ X
    X4 = X2 @ X2
    X6 = X4 @ X2
    U = X @ (
        X6 @ (b[13] * X6 + b[11] * X4 + b[9] * X2) + b[7] * X6 + b[5] * X4 + b[3] * X2 + b[1] * eye
    )
    V = X6 @ (b[12] * X6 + b[10] * X4 + b[8] * X2) + b[6] * X6 + b[4] * X4 + b[2] * X2 + b[0] * eye
    R = solve(V - U, V + U)
    for _ in range(s):
        R = R @ R
    return R


def vander(x: _Tensor, *, N: int | None = None) -> _Tensor:
    """The Vandermonde matrix with increasing powers: ``out[..., i, j] = x[..., i] ** j``.

    Args:
        x (Tensor): of shape ``(*, n)``.
        N (int, optional): the number of columns (default n).

    Returns:
        Tensor: of shape ``(*, n, N)``.
    """
    _check_float("linalg.vander", x)
    if x.dim() < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    n = x.shape[-1] if N is None else N
    if n < 0:
        raise RuntimeError(f"N must be non-negative, got {n}")
    if n == 0:
        return x.unsqueeze(-1)[..., :0] * 0
    cols = [x.unsqueeze(-1) ** 0]
    for _ in range(1, n):
        cols.append(cols[-1] * x.unsqueeze(-1))
    return _tensor_module().cat(cols, -1)


# ------------------------------------------------------------ norms


def _dims(dim, ndim):
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    for d in dims:
        if not -max(ndim, 1) <= d < max(ndim, 1):
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-max(ndim, 1)}, "
                f"{max(ndim, 1) - 1}], but got {d})"
            )
    return tuple(d % ndim if ndim else d for d in dims)


def vector_norm(
    x: _Tensor,
    ord: float = 2,
    dim: int | _Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    dtype: _rumus.dtype | None = None,
) -> _Tensor:
    """The ``ord``-norm of the elements over ``dim``.

    Args:
        x (Tensor): the input.
        ord (float): the order (inf, -inf and 0 included).
        dim (int or tuple[int], optional): the dimensions (all by default).
        keepdim (bool): keep the reduced dimensions with size 1.
        dtype (dtype, optional): compute in this dtype.

    Returns:
        Tensor: the norms.
    """
    _check_float("linalg.vector_norm", x)
    if dtype is not None:
        x = x.to(dtype)
    dims = _dims(dim, x.dim())
    kw = {"keepdim": keepdim}
    if dims is not None:
        kw["dim"] = dims
    a = x.abs()
    if ord == _math.inf:
        if x.numel() == 0 and dims is None:
            raise RuntimeError(
                "linalg.vector_norm cannot compute the inf norm on an empty tensor because "
                "the operation does not have an identity"
            )
        return a.amax(**(kw if dims is not None else {"dim": tuple(range(x.dim())), **kw}))
    if ord == -_math.inf:
        return a.amin(**(kw if dims is not None else {"dim": tuple(range(x.dim())), **kw}))
    if ord == 0:
        return (x != 0).to(x.dtype).sum(**kw)
    if ord == 1:
        return a.sum(**kw)
    if ord == 2:
        # sqrt of a sum of squares; where the norm is 0 the gradient is 0 (as PyTorch's)
        sq = (x * x).sum(**kw)
        zero = sq == 0
        safe = _tensor_module().where(zero, sq + 1, sq)
        return _tensor_module().where(zero, sq * 0, safe.sqrt())
    return (a**ord).sum(**kw) ** (1.0 / ord)


def matrix_norm(
    A: _Tensor,
    ord: float | str = "fro",
    dim: tuple[int, int] = (-2, -1),
    keepdim: bool = False,
    *,
    dtype: _rumus.dtype | None = None,
) -> _Tensor:
    """A matrix norm over the two dimensions ``dim``.

    Args:
        A (Tensor): the input.
        ord (str or float): ``'fro'``, ``'nuc'``, 1, -1, 2, -2, inf or -inf.
        dim (tuple[int, int]): the matrix dimensions.
        keepdim (bool): keep those dimensions with size 1.
        dtype (dtype, optional): compute in this dtype.

    Returns:
        Tensor: the norms.
    """
    _check_float("linalg.matrix_norm", A)
    if dtype is not None:
        A = A.to(dtype)
    if A.dim() < 2:
        raise RuntimeError(
            f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions (got "
            f"shape {list(A.shape)})."
        )
    d0, d1 = _dims(dim, A.dim())
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        B = A.movedim((d0, d1), (-2, -1))
        s = svdvals(B)
        out = s.sum(-1) if ord == "nuc" else (s.amax(-1) if ord == 2 else s.amin(-1))
        if keepdim:
            for d in sorted((d0, d1)):
                out = out.unsqueeze(d)
        return out
    if ord in (1, -1, _math.inf, -_math.inf):
        # 1: max column sum (sum over rows d0); inf: max row sum (sum over columns d1)
        over, then = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = A.abs().sum(over, keepdim=True)
        red = sums.amax(then, keepdim=True) if ord > 0 else sums.amin(then, keepdim=True)
        return red if keepdim else red.squeeze((d0, d1))
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(
    A: _Tensor,
    ord: float | str | None = None,
    dim: int | _Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    dtype: _rumus.dtype | None = None,
) -> _Tensor:
    """A vector norm over one dimension or a matrix norm over two.

    Args:
        A (Tensor): the input.
        ord (float or str, optional): the norm's order (see :func:`vector_norm` and
            :func:`matrix_norm`).
        dim (int or tuple[int, int], optional): the dimensions; with ``ord`` None and ``dim`` None,
            the 2-norm of all elements.
        keepdim (bool): keep the reduced dimensions with size 1.
        dtype (dtype, optional): compute in this dtype.

    Returns:
        Tensor: the norms.
    """
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.dim() == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    if A.dim() == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    raise RuntimeError(
        "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
        f"Got {A.dim()}D."
    )


def cond(A: _Tensor, p: float | str | None = None) -> _Tensor:
    """The condition number of matrices in the ``p``-norm.

    Args:
        A (Tensor): matrices, of shape ``(*, m, n)``.
        p (int, float, str or None): None or 2 (ratio of extreme singular values), -2, ``'fro'``,
            ``'nuc'``, 1, -1, inf or -inf (``norm(A) * norm(inv(A))``).

    Returns:
        Tensor: of shape ``(*)``.
    """
    _check_float("linalg.cond", A)
    if A.dim() < 2:
        raise RuntimeError(
            f"linalg.cond: The input tensor A must have at least 2 dimensions "
            f"(got shape {list(A.shape)})."
        )
    if p in (None, 2, -2):
        s = svdvals(A)
        return s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    _check_square("linalg.cond", A)
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


def _tol(A, s, atol, rtol, hermitian):
    """PyTorch's threshold: max(atol, rtol * σ_max); rtol defaults to eps * max(m, n) when
    atol is not given (or is 0), else 0."""
    r = _tensor_module()
    eps = 2.220446049250313e-16 if A.dtype == r.float64 else 1.1920928955078125e-07
    smax = s.abs().amax(-1, keepdim=True) if s.shape[-1] else s.sum(-1, keepdim=True)
    if rtol is None:
        rtol = (
            eps * max(A.shape[-2], A.shape[-1])
            if atol is None or (isinstance(atol, (int, float)) and atol == 0)
            else 0.0
        )
    atol = 0.0 if atol is None else atol
    if isinstance(atol, r.Tensor):
        atol = atol.unsqueeze(-1)
    if isinstance(rtol, r.Tensor):
        rtol = rtol.unsqueeze(-1)
    return r.maximum(smax * rtol, smax * 0 + atol)


def matrix_rank(
    A: _Tensor,
    *,
    atol: float | _Tensor | None = None,
    rtol: float | _Tensor | None = None,
    hermitian: bool = False,
    tol: float | _Tensor | None = None,
) -> _Tensor:
    """The number of singular values above the tolerance.

    Args:
        A (Tensor): matrices, of shape ``(*, m, n)``.
        atol (float or Tensor, optional): the absolute tolerance.
        rtol (float or Tensor, optional): the tolerance relative to the largest singular value.
        hermitian (bool): A is symmetric (use eigenvalue magnitudes).
        tol (float, optional): the deprecated absolute tolerance.

    Returns:
        Tensor: int64, of shape ``(*)``.
    """
    _check_float("linalg.matrix_rank", A)
    if A.dim() < 2:
        raise RuntimeError(
            f"linalg.matrix_rank: The input tensor A must have at least 2 dimensions "
            f"(got shape {list(A.shape)})."
        )
    if tol is not None:
        atol, rtol = tol, 0.0
    A = A.detach()
    s = eigvalsh(A).abs() if hermitian else svdvals(A)
    return (s > _tol(A, s, atol, rtol, hermitian)).sum(-1)


def pinv(
    A: _Tensor,
    *,
    atol: float | _Tensor | None = None,
    rtol: float | _Tensor | None = None,
    hermitian: bool = False,
) -> _Tensor:
    """The Moore-Penrose pseudo-inverse, from the SVD.

    Args:
        A (Tensor): matrices, of shape ``(*, m, n)``.
        atol (float or Tensor, optional): singular values at or under this are dropped.
        rtol (float or Tensor, optional): the same, relative to the largest.
        hermitian (bool): A is symmetric (use eigh).

    Returns:
        Tensor: of shape ``(*, n, m)``.
    """
    _check_float("linalg.pinv", A)
    if A.dim() < 2:
        raise RuntimeError(
            f"linalg.pinv: The input tensor A must have at least 2 dimensions "
            f"(got shape {list(A.shape)})."
        )
    r = _tensor_module()
    if hermitian:
        w, V = eigh(A)
        t = _tol(A, w.detach().abs(), atol, rtol, True)
        keep = w.detach().abs() > t
        winv = r.where(keep, 1 / r.where(keep, w, w * 0 + 1), w * 0)
        return (V * winv.unsqueeze(-2)) @ V.mT
    U, _, sinv, Vh, _ = _svd_inverse(A, atol, rtol)
    return (Vh.mT * sinv.unsqueeze(-2)) @ U.mT


def _svd_inverse(A, atol, rtol):
    """(U, S, 1/S where S is above the tolerance else 0, Vh, that mask) of A's thin SVD."""
    r = _tensor_module()
    U, S, Vh = svd(A, full_matrices=False)
    keep = S.detach() > _tol(A, S.detach(), atol, rtol, False)
    sinv = r.where(keep, 1 / r.where(keep, S, S * 0 + 1), S * 0)
    return U, S, sinv, Vh, keep


def lstsq(
    A: _Tensor, B: _Tensor, rcond: float | None = None, *, driver: str | None = None
) -> LstsqResult:
    """The least-squares solution of ``A X = B``.

    Args:
        A (Tensor): matrices, of shape ``(*, m, n)``.
        B (Tensor): right-hand sides, of shape ``(*, m, k)``.
        rcond (float, optional): singular values below ``rcond`` times the largest count as zero.
        driver (str, optional): accepted; the results are those of ``'gelsd'``.

    Returns:
        tuple: ``(solution, residuals, rank, singular_values)``; residuals are the squared residual
            norms when m > n and A has full rank, else empty.
    """
    _check_float("linalg.lstsq", A)
    if driver is not None and driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(
            "linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss), "
            f"but got {driver}"
        )
    if A.dim() < 2:
        raise RuntimeError(
            f"linalg.lstsq: input.dim() must be greater or equal to 2 (got shape {list(A.shape)})."
        )
    if A.dtype != B.dtype:
        raise RuntimeError(
            f"linalg.lstsq: Expected input and other to have the same dtype, but got input's "
            f"dtype {A.dtype} and other's dtype {B.dtype}"
        )
    vector = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError(
            f"linalg.lstsq: input.size(-2) should match other.size(-2) (shapes {list(A.shape)} "
            f"and {list(B.shape)})"
        )
    m, n = A.shape[-2], A.shape[-1]
    eps = 2.220446049250313e-16 if A.dtype == _tensor_module().float64 else 1.1920928955078125e-07
    rc = eps * max(m, n) if rcond is None or rcond < 0 else rcond
    # one SVD gives the solution, the rank and the singular values
    U, S, sinv, Vh, keep = _svd_inverse(A, None, rc)
    X = Vh.mT @ (sinv.unsqueeze(-1) * (U.mT @ Bm))
    s, rank = S.detach(), keep.sum(-1)
    full = bool((rank == min(m, n)).all().item()) if rank.numel() else True
    if m > n and full:
        res = ((A @ X - Bm) ** 2).sum(-2)
        if vector:
            res = res.squeeze(-1)
    else:
        res = _tensor_module().zeros(0, dtype=A.dtype, device=A.device)
    if vector:
        X = X.squeeze(-1)
    return LstsqResult(X, res, rank, s)


def cross(input: _Tensor, other: _Tensor, *, dim: int = -1) -> _Tensor:
    """The cross product of 3-vectors along ``dim``; the other dimensions broadcast.

    Args:
        input (Tensor): the first vectors.
        other (Tensor): the second vectors.
        dim (int): the dimension of size 3.

    Returns:
        Tensor: the broadcast shape.
    """
    return _rumus.Tensor.cross(input, other, dim=dim)
