"""einsum beyond the registry rows (tests/op_db.py): the call forms, label order,
promotion, larger random equations against NumPy, and the error messages."""

import numpy as np
import pytest
import rumus
from conftest import to_np


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_list_and_sublist_forms():
    a, b = rand(3, 4), rand(4, 5, seed=1)
    ta, tb = rumus.tensor(a), rumus.tensor(b)
    want = a @ b
    np.testing.assert_allclose(to_np(rumus.einsum("ij,jk->ik", [ta, tb])), want, rtol=1e-5)
    np.testing.assert_allclose(to_np(rumus.einsum("ij,jk->ik", (ta, tb))), want, rtol=1e-5)
    got = rumus.einsum(ta, [0, 1], tb, [1, 2], [0, 2])
    np.testing.assert_allclose(to_np(got), want, rtol=1e-5)
    # implicit output and an ellipsis in sublists
    np.testing.assert_allclose(to_np(rumus.einsum(ta, [0, 1], tb, [1, 2])), want, rtol=1e-5)
    c = rand(4, 3, seed=2)
    got = rumus.einsum(ta, [Ellipsis, 1], rumus.tensor(c), [1, Ellipsis])
    np.testing.assert_allclose(to_np(got), np.einsum("...j,j...", a, c), rtol=1e-5)


def test_implicit_output_is_alphabetical_upper_case_first():
    x = rand(2, 3, 4)
    got = rumus.einsum("bAa", rumus.tensor(x))
    assert got.shape == (3, 4, 2)
    np.testing.assert_array_equal(to_np(got), np.einsum("bAa", x))


def test_explicit_output_sums_the_ellipsis_away():
    x = rand(2, 3, 4)
    got = rumus.einsum("...i->i", rumus.tensor(x))
    np.testing.assert_allclose(to_np(got), x.sum((0, 1)), rtol=1e-5)


def test_mixed_dtypes_promote():
    a = rumus.tensor(rand(3, 4))
    b = rumus.tensor(rand(4, 2).astype(np.float64))
    out = rumus.einsum("ij,jk->ik", a, b)
    assert out.dtype == rumus.float64
    np.testing.assert_allclose(to_np(out), to_np(a).astype(np.float64) @ to_np(b), rtol=1e-6)


@pytest.mark.parametrize(
    "eq,shapes",
    [
        ("abc,cd,dbe->ae", [(3, 4, 5), (5, 6), (6, 4, 2)]),
        ("ijk,ikl->ijl", [(4, 8, 16), (4, 16, 8)]),
        ("i,i,i->", [(7,), (7,), (7,)]),
        ("ab,ab,ab->ab", [(3, 5), (3, 5), (1, 5)]),
        ("bqhd,bkhd->bhqk", [(2, 6, 3, 8), (2, 5, 3, 8)]),
        ("iij,jk->ik", [(3, 3, 4), (4, 2)]),
        ("...a,...a->...", [(2, 1, 4), (3, 4)]),
        ("ij->", [(5, 6)]),
    ],
)
def test_random_equations_against_numpy(eq, shapes):
    ops = [rand(*s, seed=i) for i, s in enumerate(shapes)]
    got = rumus.einsum(eq, *[rumus.tensor(o) for o in ops])
    want = np.einsum(eq, *[o.astype(np.float64) for o in ops])
    assert got.shape == want.shape
    np.testing.assert_allclose(to_np(got), want, rtol=1e-4, atol=1e-5)


def test_gradient_matches_the_matmul_gradient():
    a = rumus.tensor(rand(3, 4), requires_grad=True)
    b = rumus.tensor(rand(4, 2, seed=1), requires_grad=True)
    rumus.einsum("ij,jk->ik", a, b).sum().backward()
    ga, gb = a.grad, b.grad
    a.grad = b.grad = None
    (a @ b).sum().backward()
    np.testing.assert_allclose(to_np(ga), to_np(a.grad), rtol=1e-6)
    np.testing.assert_allclose(to_np(gb), to_np(b.grad), rtol=1e-6)


@pytest.mark.parametrize(
    "call,exc,words",
    [
        (lambda t: rumus.einsum("ij,jk", t), RuntimeError, "operands"),
        (lambda t: rumus.einsum("ij->k", t), RuntimeError, "output subscript k"),
        (lambda t: rumus.einsum("ij,jk->ik", t, rumus.ones(5, 2)), RuntimeError, "broadcast"),
        (lambda t: rumus.einsum("i#", t), RuntimeError, "[a-zA-Z]"),
        (lambda t: rumus.einsum(t, [0, 99]), ValueError, "[0, 52)"),
        (lambda t: rumus.einsum("ij"), TypeError, "operand"),
        (lambda t: rumus.einsum("ij", t > 0), TypeError, "bool"),
    ],
)
def test_errors_name_einsum(call, exc, words):
    with pytest.raises(exc, match="einsum") as e:
        call(rumus.ones(2, 3))
    assert words in str(e.value)
