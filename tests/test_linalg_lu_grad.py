"""Gradients of the LU family (lu, lu_factor, lu_factor_ex, lu_solve), by finite differences."""

import pytest
import rumus
from rumus.autograd import gradcheck, gradgradcheck


def _rand(*shape):
    return rumus.randn(*shape, dtype=rumus.float64, requires_grad=True)


@pytest.fixture(autouse=True)
def _seed():
    rumus.manual_seed(3)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3), (2, 3, 3), (1, 1)])
def test_lu_grad(shape):
    a = _rand(*shape)
    f = lambda a: tuple(rumus.linalg.lu(a)[1:])  # noqa: E731
    assert gradcheck(f, (a,))
    assert gradgradcheck(f, (a,))


@pytest.mark.parametrize("ex", [False, True])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
def test_lu_factor_grad(shape, ex):
    a = _rand(*shape)
    fn = rumus.linalg.lu_factor_ex if ex else rumus.linalg.lu_factor
    assert gradcheck(lambda a: fn(a)[0], (a,))
    assert gradgradcheck(lambda a: fn(a)[0], (a,))


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve_grad(left, adjoint):
    a = _rand(4, 4)
    b = _rand(4, 2) if left else _rand(2, 4)

    def f(a, b):
        return rumus.linalg.lu_solve(*rumus.linalg.lu_factor(a), b, left=left, adjoint=adjoint)

    assert gradcheck(f, (a, b))
    lu, piv = rumus.linalg.lu_factor(a.detach())
    lu.requires_grad_()
    assert gradgradcheck(
        lambda lu, b: rumus.linalg.lu_solve(lu, piv, b, left=left, adjoint=adjoint), (lu, b)
    )


def test_lu_solve_recorded_matches_unrecorded():
    a, b = _rand(3, 3), _rand(3, 2)
    lu, piv = rumus.linalg.lu_factor(a.detach())
    for adjoint in (False, True):
        x = rumus.linalg.lu_solve(lu, piv, b, adjoint=adjoint)
        with rumus.no_grad():
            y = rumus.linalg.lu_solve(lu, piv, b, adjoint=adjoint)
        assert x.requires_grad
        assert (x.detach() - y).abs().max().item() < 1e-12
