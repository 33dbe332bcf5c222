"""MultivariateNormal and LowRankMultivariateNormal."""

import math

import rumus

from . import constraints
from .distribution import Distribution
from .utils import lazy_property, standard_normal

__all__ = ["LowRankMultivariateNormal", "MultivariateNormal"]


def _batch_mv(bmat, bvec):
    return bmat.matmul(bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """``x^T (L L^T)^{-1} x`` for lower-triangular ``L``, broadcasting batches."""
    n = bx.shape[-1]
    batch = rumus.broadcast_shapes(tuple(bL.shape[:-2]), tuple(bx.shape[:-1]))
    L = bL.expand(tuple(batch) + (n, n))
    x = bx.expand(tuple(batch) + (n,))
    m = rumus.linalg.solve_triangular(L, x.unsqueeze(-1), upper=False).squeeze(-1)
    return m.pow(2).sum(-1)


def _precision_to_scale_tril(P):
    # P = U U^T with U = flip(chol(flip(P))) upper; cov = U^-T U^-1, so the
    # lower Cholesky factor of the covariance is (U^T)^-1.
    Lf = rumus.linalg.cholesky(rumus.flip(P, (-2, -1)))
    L_inv = rumus.flip(Lf, (-2, -1)).mT
    eye = rumus.eye(P.shape[-1], dtype=P.dtype, device=P.device).expand(tuple(P.shape))
    return rumus.linalg.solve_triangular(L_inv, eye, upper=False)


def _diag(m):
    return m.diagonal(0, -2, -1)


class MultivariateNormal(Distribution):
    """Multivariate normal with mean ``loc`` and exactly one of
    ``covariance_matrix``, ``precision_matrix`` or ``scale_tril`` (the lower
    Cholesky factor of the covariance).

    Args:
        loc (Tensor): the mean, of shape ``batch_shape + (n,)``.
        covariance_matrix (Tensor, optional): positive-definite covariance.
        precision_matrix (Tensor, optional): positive-definite inverse covariance.
        scale_tril (Tensor, optional): lower-triangular Cholesky factor of the covariance.
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc,
        covariance_matrix=None,
        precision_matrix=None,
        scale_tril=None,
        validate_args=None,
    ):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (
            precision_matrix is not None
        ) != 1:
            raise ValueError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril "
                "may be specified."
            )
        given = (
            scale_tril
            if scale_tril is not None
            else covariance_matrix
            if covariance_matrix is not None
            else precision_matrix
        )
        name = (
            "scale_tril"
            if scale_tril is not None
            else "covariance_matrix"
            if covariance_matrix is not None
            else "precision_matrix"
        )
        if given.dim() < 2:
            raise ValueError(
                f"{name} matrix must be at least two-dimensional, with optional "
                "leading batch dimensions"
            )
        batch_shape = rumus.broadcast_shapes(tuple(given.shape[:-2]), tuple(loc.shape[:-1]))
        mshape = tuple(batch_shape) + tuple(given.shape[-2:])
        setattr(self, name, given.expand(mshape))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        event_shape = self.loc.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = rumus.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = rumus.Size(list(batch_shape))
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        cov_shape = loc_shape + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _mshape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) + tuple(self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._mshape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return L.matmul(L.mT).expand(self._mshape())

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        eye = rumus.eye(L.shape[-1], dtype=L.dtype, device=L.device).expand(tuple(L.shape))
        L_inv = rumus.linalg.solve_triangular(L, eye, upper=False)
        return L_inv.mT.matmul(L_inv).expand(self._mshape())

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return (
            self._unbroadcasted_scale_tril.pow(2)
            .sum(-1)
            .expand(tuple(self._batch_shape) + tuple(self._event_shape))
        )

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, self.loc)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = _diag(self._unbroadcasted_scale_tril).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - half_log_det

    def entropy(self):
        half_log_det = _diag(self._unbroadcasted_scale_tril).log().sum(-1)
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        if len(self._batch_shape) == 0:
            return H
        return H.expand(tuple(self._batch_shape))


class LowRankMultivariateNormal(Distribution):
    """Multivariate normal with covariance ``cov_factor @ cov_factor.mT +
    diag(cov_diag)``; ``cov_factor`` is (..., n, r), ``cov_diag`` (..., n).

    Args:
        loc (Tensor): the mean, of shape ``batch_shape + (n,)``.
        cov_factor (Tensor): the low-rank factor, of shape ``batch_shape + (n, rank)``.
        cov_diag (Tensor): the diagonal part, of shape ``batch_shape + (n,)``.
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        n = loc.shape[-1]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional")
        if cov_factor.shape[-2] != n:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {n} x m")
        if cov_diag.shape[-1:] != (n,) and tuple(cov_diag.shape[-1:]) != (n,):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {(n,)}")
        batch_shape = tuple(
            rumus.broadcast_shapes(
                tuple(loc.shape[:-1]), tuple(cov_factor.shape[:-2]), tuple(cov_diag.shape[:-1])
            )
        )
        self.loc = loc.expand(batch_shape + (n,))
        self.cov_factor = cov_factor.expand(batch_shape + tuple(cov_factor.shape[-2:]))
        self.cov_diag = cov_diag.expand(batch_shape + (n,))
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = self._capacitance(cov_factor, cov_diag)
        super().__init__(batch_shape, (n,), validate_args=validate_args)

    @staticmethod
    def _capacitance(W, D):
        # chol(I + W^T D^-1 W)
        r = W.shape[-1]
        Wt_Dinv = W.mT / D.unsqueeze(-2)
        K = Wt_Dinv.matmul(W)
        eye = rumus.eye(r, dtype=W.dtype, device=W.device)
        return rumus.linalg.cholesky(K + eye)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = rumus.Size(list(batch_shape))
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        W = self._unbroadcasted_cov_factor
        v = W.pow(2).sum(-1) + self._unbroadcasted_cov_diag
        return v.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def covariance_matrix(self):
        W = self._unbroadcasted_cov_factor
        D = self._unbroadcasted_cov_diag
        n = D.shape[-1]
        eye = rumus.eye(n, dtype=D.dtype, device=D.device)
        cov = W.matmul(W.mT) + eye * D.unsqueeze(-1)
        shape = tuple(self._batch_shape) + (n, n)
        return cov.expand(shape)

    @lazy_property
    def scale_tril(self):
        return rumus.linalg.cholesky(self.covariance_matrix)

    @lazy_property
    def precision_matrix(self):
        return rumus.linalg.inv(self.covariance_matrix)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        r = self._unbroadcasted_cov_factor.shape[-1]
        eps_W = standard_normal(tuple(shape[:-1]) + (r,), self.loc)
        eps_D = standard_normal(shape, self.loc)
        return (
            self.loc
            + _batch_mv(self._unbroadcasted_cov_factor, eps_W)
            + self._unbroadcasted_cov_diag.sqrt() * eps_D
        )

    def _log_det(self):
        return 2 * _diag(self._capacitance_tril).log().sum(-1) + (
            self._unbroadcasted_cov_diag.log().sum(-1)
        )

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        W = self._unbroadcasted_cov_factor
        D = self._unbroadcasted_cov_diag
        # Woodbury: x^T S^-1 x = x^T D^-1 x - |C^-1 W^T D^-1 x|^2
        Wt_Dinv = W.mT / D.unsqueeze(-2)
        term1 = (diff.pow(2) / D).sum(-1)
        Wt_Dinv_x = _batch_mv(Wt_Dinv, diff)
        term2 = _batch_mahalanobis(self._capacitance_tril, Wt_Dinv_x)
        M = term1 - term2
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + self._log_det() + M)

    def entropy(self):
        n = self._event_shape[0]
        H = 0.5 * (n * (1.0 + math.log(2 * math.pi)) + self._log_det())
        if len(self._batch_shape) == 0:
            return H
        return H.expand(tuple(self._batch_shape))
