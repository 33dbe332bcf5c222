"""Probability distributions with sampling, log densities and KL divergences,
following ``torch.distributions``."""

from . import constraint_registry, constraints, transforms
from .constraint_registry import biject_to, transform_to
from .continuous import Cauchy, Exponential, Laplace, Uniform
from .counts import Binomial, Multinomial, Poisson
from .discrete import (
    Bernoulli,
    Categorical,
    Geometric,
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)
from .distribution import Distribution
from .gamma import Beta, Chi2, Dirichlet, Gamma, StudentT
from .independent import Independent
from .kl import kl_divergence, register_kl
from .mixture_same_family import MixtureSameFamily
from .multivariate_normal import LowRankMultivariateNormal, MultivariateNormal
from .normal import HalfNormal, LogNormal, Normal
from .relaxed import (
    ExpRelaxedCategorical,
    LogitRelaxedBernoulli,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from .transformed_distribution import TransformedDistribution
from .transformed_families import Gumbel, LogisticNormal, Pareto
from .transforms import (
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from .von_mises import VonMises

__all__ = [
    "Beta",
    "Binomial",
    "Chi2",
    "Dirichlet",
    "Gamma",
    "Multinomial",
    "Poisson",
    "StudentT",
    "VonMises",
    "SoftplusTransform",
    "ReshapeTransform",
    "PositiveDefiniteTransform",
    "CumulativeDistributionTransform",
    "RelaxedOneHotCategorical",
    "RelaxedBernoulli",
    "LogitRelaxedBernoulli",
    "ExpRelaxedCategorical",
    "constraint_registry",
    "transform_to",
    "biject_to",
    "LowerCholeskyTransform",
    "OneHotCategoricalStraightThrough",
    "Pareto",
    "LogisticNormal",
    "Gumbel",
    "AbsTransform",
    "AffineTransform",
    "Bernoulli",
    "Categorical",
    "Cauchy",
    "ComposeTransform",
    "Distribution",
    "ExpTransform",
    "Exponential",
    "Geometric",
    "HalfNormal",
    "Independent",
    "IndependentTransform",
    "Laplace",
    "LogNormal",
    "LowRankMultivariateNormal",
    "MixtureSameFamily",
    "MultivariateNormal",
    "Normal",
    "OneHotCategorical",
    "PowerTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "TransformedDistribution",
    "Transform",
    "Uniform",
    "constraints",
    "identity_transform",
    "kl_divergence",
    "register_kl",
    "transforms",
]
