"""Parametrizations built on nn.utils.parametrize (torch.nn.utils.parametrizations):
weight_norm, spectral_norm and orthogonal."""

from enum import Enum, auto

import numpy as np

from ... import _rumus, linalg
from ...autograd import no_grad
from .. import functional as F
from ..modules.conv import _ConvTransposeNd
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _mv(m, v):
    return (m @ v.unsqueeze(-1)).squeeze(-1)


def _norm_except_dim(v, dim):
    """The 2-norm of v over every dim but ``dim``, kept as size-1 dims
    (``dim=-1``: the norm of the whole tensor, 0-d)."""
    if dim == -1:
        return (v * v).sum().sqrt()
    dims = [d for d in range(v.dim()) if d != dim]
    return (v * v).sum(dims, keepdim=True).sqrt() if dims else v.abs()


def _weight_norm(v, g, dim):
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def _dim(self, weight):
        return self.dim + weight.dim() if self.dim < -1 else self.dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self._dim(weight_v))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self._dim(weight)), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrizes ``module.<name>`` as ``g * v / ||v||``.

    The originals are ``parametrizations.<name>.original0`` (g) and ``original1`` (v).
    A state_dict of the legacy ``nn.utils.weight_norm`` (``<name>_g``, ``<name>_v``)
    loads into it too.

    Args:
        module: the module holding the weight.
        name: the name of the weight.
        dim: the dimension kept by the norm (the norm is over every other dim); None: the
            whole tensor.

    Returns:
        ``module``.
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    # The Parametrized class belongs to this module alone: PyTorch's
    # load_state_dict pre-hook, as an override of its loader.
    cls = type(module)
    load = cls._load_from_state_dict

    def _load_from_state_dict(self, state_dict, prefix, *args):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)
        return load(self, state_dict, prefix, *args)

    cls._load_from_state_dict = _load_from_state_dict
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but "
                f"got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight.detach())
            h, w = weight_mat.shape
            u = _rumus.randn(h, dtype=weight.dtype, device=weight.device)
            v = _rumus.randn(w, dtype=weight.dtype, device=weight.device)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            # Start from good estimates of the singular vectors.
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    @no_grad()
    def _power_method(self, weight_mat, n_power_iterations):
        # u and v are updated in place: they are buffers, saved in the state_dict.
        for _ in range(n_power_iterations):
            self._u.copy_(F.normalize(_mv(weight_mat, self._v), dim=0, eps=self.eps))
            self._v.copy_(F.normalize(_mv(weight_mat.T, self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat.detach(), self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * _mv(weight_mat, v)).sum()
        return weight / sigma

    def right_inverse(self, value):
        return value


def _transposed_conv(module):
    return isinstance(module, _ConvTransposeNd)


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divides ``module.<name>`` by its largest singular value, estimated by power iteration.

    The weight is reshaped to a matrix with ``dim`` first; the vectors are buffers
    ``parametrizations.<name>.0._u`` and ``._v``.

    Args:
        module: the module holding the weight.
        name: the name of the weight.
        n_power_iterations: the power-iteration steps at each access in training mode.
        eps: added to norms for numerical stability.
        dim: the dimension moved first (default 1 for transposed convolutions, else 0).

    Returns:
        ``module``.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, _rumus.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if _transposed_conv(module) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps)
    )
    return module


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _householder_product(a, tau):
    """LAPACK's orgqr: the first k columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T,
    v_i = column i of a below the diagonal with a 1 on it. Tensor ops, so autograd flows."""
    n, k = a.shape[-2], a.shape[-1]
    eye = _rumus.eye(n, dtype=a.dtype, device=a.device)
    v = a.tril(-1) + eye[:, :k]
    q = eye.expand(*a.shape[:-2], n, n)
    for i in range(k):
        vi = v[..., :, i : i + 1]
        q = q - (q @ vi) * tau[..., i : i + 1].unsqueeze(-1) @ vi.mT
    return q[..., :k]


def _geqrf(q):
    """LAPACK's geqrf in NumPy, per matrix: R on and above the diagonal,
    the reflectors' vectors below it, and their tau."""
    a = q.detach().cpu().numpy().astype(np.float64).copy()
    batch, (n, k) = a.shape[:-2], a.shape[-2:]
    a = a.reshape(-1, n, k)
    tau = np.zeros((a.shape[0], k))
    for b in range(a.shape[0]):
        for j in range(min(n, k)):
            x = a[b, j:, j].copy()
            xnorm = np.linalg.norm(x[1:])
            if xnorm == 0.0:
                continue
            beta = -np.copysign(np.hypot(x[0], xnorm), x[0])
            tau[b, j] = (beta - x[0]) / beta
            vec = np.concatenate([[1.0], x[1:] / (x[0] - beta)])
            a[b, j:, j + 1 :] -= tau[b, j] * np.outer(vec, vec @ a[b, j:, j + 1 :])
            a[b, j, j] = beta
            a[b, j + 1 :, j] = vec[1:]
    as_t = lambda x: _rumus.tensor(x, dtype=q.dtype, device=q.device)  # noqa: E731
    return as_t(a.reshape(*batch, n, k)), as_t(tau.reshape(*batch, k))


def _make_orthogonal(a):
    """The Q of a = QR with a non-negative diagonal of R."""
    q, r = linalg.qr(a)
    sign = r.diagonal(dim1=-2, dim2=-1).sign()
    return q * _rumus.where(sign == 0, _rumus.ones_like(sign), sign).unsqueeze(-2)


def _is_orthogonal(q):
    n, k = q.shape[-2], q.shape[-1]
    eye = _rumus.eye(k, dtype=q.dtype, device=q.device)
    eps = 10.0 * n * (1.1920928955078125e-07 if q.dtype == _rumus.float32 else 2.22e-16)
    return bool(((q.mT @ q) - eye).abs().max() <= eps)


class _Orthogonal(Module):
    base: _rumus.Tensor

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            # A skew-symmetric n x n matrix from the lower triangle of X.
            X = X.tril()
            if n != k:
                zeros = _rumus.zeros(*X.shape[:-2], n, n - k, dtype=X.dtype, device=X.device)
                X = _rumus.cat([X, zeros], dim=-1)
            A = X - X.mT
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = linalg.matrix_exp(A)
            else:
                # The Cayley retraction (I + A/2)(I - A/2)^{-1}, as a solve.
                eye = _rumus.eye(n, dtype=A.dtype, device=A.device)
                Q = linalg.solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            # The diagonal of X (±1) picks each column's sign; no gradient through it.
            Q = Q * X.diagonal(dim1=-2, dim2=-1).detach().sign().unsqueeze(-2)
        if self._buffers.get("base") is not None:
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    @no_grad()
    def right_inverse(self, Q):
        if tuple(Q.shape) != self.shape:
            raise ValueError(
                f"Expected a matrix or batch of matrices of shape {self.shape}. "
                f"Got a tensor of shape {tuple(Q.shape)}."
            )
        Q_init = Q
        n, k = Q.shape[-2], Q.shape[-1]
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if "base" not in self._buffers:
            if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
                raise NotImplementedError(
                    "It is not possible to assign to the matrix exponential or the Cayley "
                    "parametrizations when use_trivialization=False."
                )
            # Householder: Q's reflectors, with the signs of R's diagonal on the diagonal.
            A, tau = _geqrf(Q)
            d = A.diagonal(dim1=-2, dim2=-1).sign()
            d = _rumus.where(tau == 0.0, -d, d)
            A = A.tril(-1)
            idx = _rumus.arange(k, device=A.device)
            A[..., idx, idx] = d
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:
            # Complete Q to an n x n orthogonal matrix.
            N = _rumus.randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(_rumus.cat([Q, N], dim=-1))
        self.base = Q
        # -Id: with it, the forward maps return Q itself (householder(0) is -Id's sign flip).
        neg_id = _rumus.zeros_like(Q_init)
        idx = _rumus.arange(k, device=Q_init.device)
        neg_id[..., idx, idx] = -1.0
        return neg_id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Keeps ``module.<name>`` (a matrix or batch of matrices) orthogonal.

    With ``use_trivialization`` (the default) a buffer ``base`` holds the last assigned
    orthogonal matrix and the map starts from it.

    Args:
        module: the module holding the weight.
        name: the name of the weight.
        orthogonal_map: "matrix_exp" (the default for square matrices), "cayley" or
            "householder" (the default otherwise).
        use_trivialization: whether to keep the base buffer.

    Returns:
        ``module``.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, _rumus.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.dim() < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.dim()} dimensions."
        )
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError(
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
            f"Got: {orthogonal_map}"
        )
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
