"""``biject_to(constraint)`` and ``transform_to(constraint)``: transforms from
unconstrained reals onto a constraint's space, for optimizing constrained
parameters (``torch.distributions.constraint_registry``' API).

``biject_to`` gives bijections (usable inside TransformedDistribution);
``transform_to`` may give cheaper non-bijective maps (softmax for the simplex).
"""

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """Maps constraint types (or instances) to factories of transforms."""

    def __init__(self):
        self._registry = {}

    def register(self, constraint, factory=None):
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError(
                f"Expected constraint to be either a Constraint subclass or instance, "
                f"but got {constraint}"
            )
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(
                f"Cannot transform {type(constraint).__name__} constraints"
            ) from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _real(constraint):
    return transforms.identity_transform


def _independent_biject(constraint):
    base = biject_to(constraint.base_constraint)
    return transforms.IndependentTransform(base, constraint.reinterpreted_batch_ndims)


def _independent_transform(constraint):
    base = transform_to(constraint.base_constraint)
    return transforms.IndependentTransform(base, constraint.reinterpreted_batch_ndims)


def _greater_than(constraint):
    lb = constraint.lower_bound
    if isinstance(lb, (int, float)) and lb == 0:
        return transforms.ExpTransform()
    return transforms.ComposeTransform(
        [transforms.ExpTransform(), transforms.AffineTransform(constraint.lower_bound, 1)]
    )


def _less_than(constraint):
    return transforms.ComposeTransform(
        [transforms.ExpTransform(), transforms.AffineTransform(constraint.upper_bound, -1)]
    )


def _interval(constraint):
    lb, ub = constraint.lower_bound, constraint.upper_bound
    is_unit = isinstance(lb, (int, float)) and isinstance(ub, (int, float)) and (lb, ub) == (0, 1)
    if is_unit:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform(
        [transforms.SigmoidTransform(), transforms.AffineTransform(lb, ub - lb)]
    )


for _registry, _independent in (
    (biject_to, _independent_biject),
    (transform_to, _independent_transform),
):
    _registry.register(constraints._Real, _real)
    _registry.register(constraints._IndependentConstraint, _independent)
    _registry.register(constraints._GreaterThan, _greater_than)
    _registry.register(constraints._GreaterThanEq, _greater_than)
    _registry.register(constraints._LessThan, _less_than)
    _registry.register(constraints._Interval, _interval)
    _registry.register(constraints._HalfOpenInterval, _interval)

biject_to.register(constraints._Simplex, lambda c: transforms.StickBreakingTransform())
transform_to.register(constraints._Simplex, lambda c: transforms.SoftmaxTransform())
transform_to.register(constraints._LowerCholesky, lambda c: transforms.LowerCholeskyTransform())
transform_to.register(
    constraints._PositiveDefinite, lambda c: transforms.PositiveDefiniteTransform()
)
