"""rumus.autograd.Function (PyTorch's custom autograd functions): saved
tensors, needs_input_grad, non-tensor arguments, several outputs,
mark_non_differentiable, node names, version checks, errors raised by or
about backward, double backward, grad modes."""

import gc

import numpy as np
import pytest

import rumus
import rumus.autograd
from rumus.autograd import Function
from conftest import ac, leaf, make, tensor

agrad = rumus.autograd.grad


# --------------------------------------------------------------------------
# functions under test
# --------------------------------------------------------------------------

class MyExp(Function):
    inside = []

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        MyExp.inside.append((rumus.is_grad_enabled(), y.requires_grad, y.grad_fn))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        saved = ctx.saved_tensors
        assert isinstance(saved, tuple) and len(saved) == 1
        (y,) = saved
        return grad_out * y


class MyMul(Function):
    log = []

    @staticmethod
    def forward(ctx, a, b):
        MyMul.log.append(("fwd", tuple(ctx.needs_input_grad)))
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        MyMul.log.append(("bwd", tuple(ctx.needs_input_grad)))
        a, b = ctx.saved_tensors
        ga = g * b if ctx.needs_input_grad[0] else None
        gb = g * a if ctx.needs_input_grad[1] else None
        return ga, gb


class Scale(Function):
    log = []

    @staticmethod
    def forward(ctx, x, factor, mode):
        Scale.log.append(tuple(ctx.needs_input_grad))
        ctx.factor = factor
        ctx.mode = mode
        return x * factor if mode == "mul" else x / factor

    @staticmethod
    def backward(ctx, g):
        gx = g * ctx.factor if ctx.mode == "mul" else g / ctx.factor
        return gx, None, None


class SinCos(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin(), x.cos()

    @staticmethod
    def backward(ctx, gs, gc_):
        (x,) = ctx.saved_tensors
        return gs * x.cos() - gc_ * x.sin()


class MaxWithIndex(Function):
    @staticmethod
    def forward(ctx, x):
        i = x.argmax()
        m = x.amax()
        ctx.mark_non_differentiable(i)
        ctx.idx = int(i.item())
        ctx.save_for_backward(x)
        return m, i

    @staticmethod
    def backward(ctx, gm, gi):
        (x,) = ctx.saved_tensors
        onehot = rumus.zeros_like(x)
        onehot[ctx.idx] = 1.0
        return onehot * gm


class WithMask(Function):
    @staticmethod
    def forward(ctx, x):
        y = x * 2.0
        mask = (x > 0).to(x.dtype)
        ctx.mark_non_differentiable(mask)
        return y, mask

    @staticmethod
    def backward(ctx, gy, gmask):
        return gy * 2.0


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3.0 * x * x


class Boom(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        raise ValueError("boom")


class TooFew(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a * b

    @staticmethod
    def backward(ctx, g):
        return (g,)


class TooMany(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, g):
        return g, g, g


class ExtraNone(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, g):
        return g, g * 2.0, None


class BadShape(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        return g[:2]


class BadExp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * 1.1


# --------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------

def test_custom_exp_values_grad_and_name():
    A = make((2, 3), "float64")
    W = make((2, 3), "float64", rng=np.random.default_rng(1))
    x = leaf(A)
    y = MyExp.apply(x)
    ac(y, np.exp(A))
    assert y.requires_grad and not y.is_leaf
    assert y.grad_fn is not None
    assert y.grad_fn.name() == "MyExpBackward"
    acc, idx = y.grad_fn.next_functions[0]
    assert acc.name() == "AccumulateGrad" and idx == 0
    (y * tensor(W)).sum().backward()
    ac(x.grad, W * np.exp(A))


def test_forward_runs_without_recording():
    MyExp.inside.clear()
    x = leaf(make((3,), "float64"))
    MyExp.apply(x)
    assert rumus.is_grad_enabled()
    (enabled, rg, gfn) = MyExp.inside[-1]
    assert not enabled
    assert not rg and gfn is None


def test_custom_function_in_bigger_graph():
    A = make((4,), "float64", low=-1, high=1)
    x = leaf(A)
    y = MyExp.apply(x.sin() * 2.0) * x
    y.sum().backward()
    e = np.exp(2 * np.sin(A))
    ac(x.grad, e * 2 * np.cos(A) * A + e)


@pytest.mark.parametrize("ra,rb", [(True, True), (True, False), (False, True)])
def test_needs_input_grad(ra, rb):
    A = make((3,), "float64")
    B = make((3,), "float64", rng=np.random.default_rng(2))
    a = leaf(A) if ra else tensor(A)
    b = leaf(B) if rb else tensor(B)
    MyMul.log.clear()
    out = MyMul.apply(a, b)
    ac(out, A * B)
    assert out.requires_grad
    assert out.grad_fn.name() == "MyMulBackward"
    out.sum().backward()
    assert MyMul.log == [("fwd", (ra, rb)), ("bwd", (ra, rb))]
    if ra:
        ac(a.grad, B)
    else:
        assert a.grad is None
    if rb:
        ac(b.grad, A)
    else:
        assert b.grad is None


def test_needs_input_grad_nonleaf_input():
    A = make((3,), "float64")
    B = make((3,), "float64", rng=np.random.default_rng(2))
    x = leaf(A)
    MyMul.log.clear()
    out = MyMul.apply(x * 2.0, tensor(B))
    out.sum().backward()
    assert MyMul.log[-1] == ("bwd", (True, False))
    ac(x.grad, 2 * B)


@pytest.mark.parametrize("mode,factor", [("mul", 3.0), ("div", 4.0)])
def test_non_tensor_args(mode, factor):
    A = make((3,), "float64")
    x = leaf(A)
    Scale.log.clear()
    y = Scale.apply(x, factor, mode)
    assert Scale.log == [(True, False, False)]
    expected = A * factor if mode == "mul" else A / factor
    ac(y, expected)
    y.sum().backward()
    ac(x.grad, np.full(3, factor if mode == "mul" else 1.0 / factor))


def test_multiple_outputs():
    A = make((4,), "float64")
    W1 = make((4,), "float64", rng=np.random.default_rng(1))
    W2 = make((4,), "float64", rng=np.random.default_rng(2))
    x = leaf(A)
    s, c = SinCos.apply(x)
    ac(s, np.sin(A))
    ac(c, np.cos(A))
    assert s.requires_grad and c.requires_grad
    assert s.grad_fn.name() == "SinCosBackward" and c.grad_fn.name() == "SinCosBackward"
    (s * tensor(W1) + c * tensor(W2)).sum().backward()
    ac(x.grad, W1 * np.cos(A) - W2 * np.sin(A))


def test_multiple_outputs_only_one_used():
    # the unused output's gradient reaches backward as zeros (materialized)
    A = make((4,), "float64")
    x = leaf(A)
    s, c = SinCos.apply(x)
    s.sum().backward()
    ac(x.grad, np.cos(A))

    x = leaf(A)
    s, c = SinCos.apply(x)
    c.sum().backward()
    ac(x.grad, -np.sin(A))


def test_mark_non_differentiable_int_output():
    A = np.array([0.3, 2.5, -1.0, 1.7])
    x = leaf(A)
    m, i = MaxWithIndex.apply(x)
    assert i.dtype == rumus.int64
    assert not i.requires_grad and i.grad_fn is None
    assert int(i.item()) == 1
    assert m.requires_grad
    ac(m, np.array(2.5))
    m.backward()
    ac(x.grad, np.array([0.0, 1.0, 0.0, 0.0]))


def test_mark_non_differentiable_float_output():
    A = make((5,), "float64")
    x = leaf(A)
    y, mask = WithMask.apply(x)
    assert mask.dtype == rumus.float64
    assert not mask.requires_grad and mask.grad_fn is None
    assert y.requires_grad
    ac(mask, (A > 0).astype(np.float64))
    y.sum().backward()
    ac(x.grad, np.full(5, 2.0))


def test_saved_input_modified_in_place_raises():
    A = make((3,), "float64")
    B = make((3,), "float64", rng=np.random.default_rng(2))
    x = leaf(A)
    w = tensor(B)
    y = MyMul.apply(x, w)
    w.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_saved_output_modified_in_place_raises():
    x = leaf(make((3,), "float64"))
    y = MyExp.apply(x)
    z = y * 2.0
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_exception_in_backward_propagates_with_its_type():
    A = make((3,), "float64")
    x = leaf(A)
    y = Boom.apply(x)
    with pytest.raises(ValueError, match="boom"):
        y.sum().backward()
    # the engine still works afterwards
    x2 = leaf(A)
    (x2 * 2.0).sum().backward()
    ac(x2.grad, np.full(3, 2.0))


def test_backward_returning_too_few_grads_raises():
    a, b = leaf(make((3,), "float64")), leaf(make((3,), "float64"))
    with pytest.raises(RuntimeError):
        TooFew.apply(a, b).sum().backward()


def test_backward_returning_too_many_grads_raises():
    a, b = leaf(make((3,), "float64")), leaf(make((3,), "float64"))
    with pytest.raises(RuntimeError):
        TooMany.apply(a, b).sum().backward()


def test_backward_extra_none_grads_are_ignored():
    a, b = leaf(make((3,), "float64")), leaf(make((3,), "float64"))
    ExtraNone.apply(a, b).sum().backward()
    ac(a.grad, np.full(3, 1.0))
    ac(b.grad, np.full(3, 2.0))


def test_backward_wrong_grad_shape_raises():
    x = leaf(make((3,), "float64"))
    with pytest.raises(RuntimeError):
        BadShape.apply(x).sum().backward()


def test_double_backward_through_custom_function():
    A = make((5,), "float64", low=-2, high=2)
    x = leaf(A)
    y = Cube.apply(x.sin()) * 2.0
    (g,) = agrad(y.sum(), x, create_graph=True)
    assert g.requires_grad
    s, c = np.sin(A), np.cos(A)
    ac(g, 6 * s ** 2 * c)
    (g2,) = agrad(g.sum(), x)
    ac(g2, 12 * s * c ** 2 - 6 * s ** 3, rtol=1e-9, atol=1e-12)


def test_under_no_grad_outputs_have_no_grad_fn():
    A = make((3,), "float64")
    x = leaf(A)
    with rumus.no_grad():
        y = MyExp.apply(x)
        s, c = SinCos.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    assert not s.requires_grad and s.grad_fn is None
    ac(y, np.exp(A))
    ac(c, np.cos(A))


def test_no_input_requires_grad():
    A = make((3,), "float64")
    y = MyExp.apply(tensor(A))
    assert not y.requires_grad and y.grad_fn is None
    ac(y, np.exp(A))


def test_backward_twice_frees_saved_tensors():
    A = make((3,), "float64")
    x = leaf(A)
    s = MyExp.apply(x).sum()
    s.backward(retain_graph=True)
    s.backward()
    ac(x.grad, 2 * np.exp(A))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        s.backward()


def test_saved_tensors_counted_and_freed():
    gc.collect()
    base = rumus.autograd.saved_tensor_bytes()
    x = leaf(make((50,), "float64"))
    y = MyExp.apply(x)
    assert rumus.autograd.saved_tensor_bytes() - base >= 400
    y.sum().backward()
    assert rumus.autograd.saved_tensor_bytes() == base
    y = MyExp.apply(x)
    del y
    gc.collect()
    assert rumus.autograd.saved_tensor_bytes() == base


def test_gradcheck_custom_functions():
    a = leaf(make((3,), "float64"))
    b = leaf(make((3,), "float64", rng=np.random.default_rng(4)))
    assert rumus.autograd.gradcheck(MyMul.apply, (a, b))
    assert rumus.autograd.gradcheck(lambda t: SinCos.apply(t), (a,))
    assert rumus.autograd.gradgradcheck(Cube.apply, (a,))
    assert rumus.autograd.gradcheck(BadExp.apply, (a,), raise_exception=False) is False
    with pytest.raises(RuntimeError):
        rumus.autograd.gradcheck(BadExp.apply, (a,))
