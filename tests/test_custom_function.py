"""rumus.autograd.Function (PyTorch's custom autograd functions): saved
tensors, needs_input_grad, non-tensor arguments, several outputs,
mark_non_differentiable, node names, version checks, errors raised by or
about backward, double backward, grad modes."""

import gc

import numpy as np
import pytest
import rumus
import rumus.autograd
from conftest import ac, leaf, make, tensor, wide
from rumus.autograd import Function

agrad = rumus.autograd.grad


# --------------------------------------------------------------------------
# devices: every test runs on the CPU and on the GPU (``device`` fixture)
# --------------------------------------------------------------------------

F32_TOL = (1e-5, 1e-6)  # conftest.TOL["float32"]


class On:
    """A test's tensors on one device. On the CPU everything is exactly what
    the plain helpers give (float64). On the GPU the float64 data become
    float32: ``make`` rounds its values to float32 (kept as float64 arrays, so
    the NumPy references see exactly what the GPU gets), ``leaf``/``t`` cast
    float64 to float32, and ``ac`` uses at least float32 tolerances."""

    def __init__(self, device):
        self.device = device
        self.f = wide(device)
        self.gpu = device == "gpu"

    def r(self, a):
        a = np.asarray(a)
        if self.gpu and a.dtype == np.float64:
            return a.astype(np.float32).astype(np.float64)
        return a

    def make(self, shape, dtype="float64", **kw):
        return self.r(make(shape, dtype, **kw))

    def leaf(self, a):
        a = np.asarray(a)
        if not self.gpu:
            return leaf(a)
        t = tensor(self.r(a), "float32", self.device)
        t.requires_grad_()
        return t

    def t(self, a, dtype=None):
        a = np.asarray(a)
        if dtype is None and self.gpu and a.dtype == np.float64:
            dtype = "float32"
        return tensor(a, dtype, self.device)

    def ac(self, t, expected, rtol=None, atol=None):
        if not self.gpu:
            return ac(t, expected, rtol=rtol, atol=atol)
        assert t is not None and t.device.type == "gpu", t
        expected = np.asarray(expected)
        if expected.dtype == np.float64:
            expected = expected.astype(np.float32)
        rtol, atol = max(rtol or 0, F32_TOL[0]), max(atol or 0, F32_TOL[1])
        ac(t, expected, rtol=rtol, atol=atol)


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


def test_custom_exp_values_grad_and_name(device):
    D = On(device)
    A = D.make((2, 3), "float64")
    W = D.make((2, 3), "float64", rng=np.random.default_rng(1))
    x = D.leaf(A)
    y = MyExp.apply(x)
    D.ac(y, np.exp(A))
    assert y.requires_grad and not y.is_leaf
    assert y.grad_fn is not None
    assert y.grad_fn.name() == "MyExpBackward"
    acc, idx = y.grad_fn.next_functions[0]
    assert acc.name() == "AccumulateGrad" and idx == 0
    (y * D.t(W)).sum().backward()
    D.ac(x.grad, W * np.exp(A))


def test_forward_runs_without_recording(device):
    D = On(device)
    MyExp.inside.clear()
    x = D.leaf(D.make((3,), "float64"))
    MyExp.apply(x)
    assert rumus.is_grad_enabled()
    (enabled, rg, gfn) = MyExp.inside[-1]
    assert not enabled
    assert not rg and gfn is None


def test_custom_function_in_bigger_graph(device):
    D = On(device)
    A = D.make((4,), "float64", low=-1, high=1)
    x = D.leaf(A)
    y = MyExp.apply(x.sin() * 2.0) * x
    y.sum().backward()
    e = np.exp(2 * np.sin(A))
    D.ac(x.grad, e * 2 * np.cos(A) * A + e)


@pytest.mark.parametrize("ra,rb", [(True, True), (True, False), (False, True)])
def test_needs_input_grad(ra, rb, device):
    D = On(device)
    A = D.make((3,), "float64")
    B = D.make((3,), "float64", rng=np.random.default_rng(2))
    a = D.leaf(A) if ra else D.t(A)
    b = D.leaf(B) if rb else D.t(B)
    MyMul.log.clear()
    out = MyMul.apply(a, b)
    D.ac(out, A * B)
    assert out.requires_grad
    assert out.grad_fn.name() == "MyMulBackward"
    out.sum().backward()
    assert MyMul.log == [("fwd", (ra, rb)), ("bwd", (ra, rb))]
    if ra:
        D.ac(a.grad, B)
    else:
        assert a.grad is None
    if rb:
        D.ac(b.grad, A)
    else:
        assert b.grad is None


def test_needs_input_grad_nonleaf_input(device):
    D = On(device)
    A = D.make((3,), "float64")
    B = D.make((3,), "float64", rng=np.random.default_rng(2))
    x = D.leaf(A)
    MyMul.log.clear()
    out = MyMul.apply(x * 2.0, D.t(B))
    out.sum().backward()
    assert MyMul.log[-1] == ("bwd", (True, False))
    D.ac(x.grad, 2 * B)


@pytest.mark.parametrize("mode,factor", [("mul", 3.0), ("div", 4.0)])
def test_non_tensor_args(mode, factor, device):
    D = On(device)
    A = D.make((3,), "float64")
    x = D.leaf(A)
    Scale.log.clear()
    y = Scale.apply(x, factor, mode)
    assert Scale.log == [(True, False, False)]
    expected = A * factor if mode == "mul" else A / factor
    D.ac(y, expected)
    y.sum().backward()
    D.ac(x.grad, np.full(3, factor if mode == "mul" else 1.0 / factor))


def test_multiple_outputs(device):
    D = On(device)
    A = D.make((4,), "float64")
    W1 = D.make((4,), "float64", rng=np.random.default_rng(1))
    W2 = D.make((4,), "float64", rng=np.random.default_rng(2))
    x = D.leaf(A)
    s, c = SinCos.apply(x)
    D.ac(s, np.sin(A))
    D.ac(c, np.cos(A))
    assert s.requires_grad and c.requires_grad
    assert s.grad_fn.name() == "SinCosBackward" and c.grad_fn.name() == "SinCosBackward"
    (s * D.t(W1) + c * D.t(W2)).sum().backward()
    D.ac(x.grad, W1 * np.cos(A) - W2 * np.sin(A))


def test_multiple_outputs_only_one_used(device):
    D = On(device)
    # the unused output's gradient reaches backward as zeros (materialized)
    A = D.make((4,), "float64")
    x = D.leaf(A)
    s, c = SinCos.apply(x)
    s.sum().backward()
    D.ac(x.grad, np.cos(A))

    x = D.leaf(A)
    s, c = SinCos.apply(x)
    c.sum().backward()
    D.ac(x.grad, -np.sin(A))


def test_mark_non_differentiable_int_output(device):
    D = On(device)
    A = np.array([0.3, 2.5, -1.0, 1.7])
    x = D.leaf(A)
    m, i = MaxWithIndex.apply(x)
    assert i.dtype == rumus.int64
    assert not i.requires_grad and i.grad_fn is None
    assert int(i.item()) == 1
    assert m.requires_grad
    D.ac(m, np.array(2.5))
    m.backward()
    D.ac(x.grad, np.array([0.0, 1.0, 0.0, 0.0]))


def test_mark_non_differentiable_float_output(device):
    D = On(device)
    A = D.make((5,), "float64")
    x = D.leaf(A)
    y, mask = WithMask.apply(x)
    assert mask.dtype == getattr(rumus, D.f)
    assert not mask.requires_grad and mask.grad_fn is None
    assert y.requires_grad
    D.ac(mask, (A > 0).astype(np.float64))
    y.sum().backward()
    D.ac(x.grad, np.full(5, 2.0))


def test_saved_input_modified_in_place_raises(device):
    D = On(device)
    A = D.make((3,), "float64")
    B = D.make((3,), "float64", rng=np.random.default_rng(2))
    x = D.leaf(A)
    w = D.t(B)
    y = MyMul.apply(x, w)
    w.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_saved_output_modified_in_place_raises(device):
    D = On(device)
    x = D.leaf(D.make((3,), "float64"))
    y = MyExp.apply(x)
    z = y * 2.0
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_exception_in_backward_propagates_with_its_type(device):
    D = On(device)
    A = D.make((3,), "float64")
    x = D.leaf(A)
    y = Boom.apply(x)
    with pytest.raises(ValueError, match="boom"):
        y.sum().backward()
    # the engine still works afterwards
    x2 = D.leaf(A)
    (x2 * 2.0).sum().backward()
    D.ac(x2.grad, np.full(3, 2.0))


def test_backward_returning_too_few_grads_raises(device):
    D = On(device)
    a, b = D.leaf(D.make((3,), "float64")), D.leaf(D.make((3,), "float64"))
    with pytest.raises(RuntimeError):
        TooFew.apply(a, b).sum().backward()


def test_backward_returning_too_many_grads_raises(device):
    D = On(device)
    a, b = D.leaf(D.make((3,), "float64")), D.leaf(D.make((3,), "float64"))
    with pytest.raises(RuntimeError):
        TooMany.apply(a, b).sum().backward()


def test_backward_extra_none_grads_are_ignored(device):
    D = On(device)
    a, b = D.leaf(D.make((3,), "float64")), D.leaf(D.make((3,), "float64"))
    ExtraNone.apply(a, b).sum().backward()
    D.ac(a.grad, np.full(3, 1.0))
    D.ac(b.grad, np.full(3, 2.0))


def test_backward_wrong_grad_shape_raises(device):
    D = On(device)
    x = D.leaf(D.make((3,), "float64"))
    with pytest.raises(RuntimeError):
        BadShape.apply(x).sum().backward()


def test_double_backward_through_custom_function(device):
    D = On(device)
    A = D.make((5,), "float64", low=-2, high=2)
    x = D.leaf(A)
    y = Cube.apply(x.sin()) * 2.0
    (g,) = agrad(y.sum(), x, create_graph=True)
    assert g.requires_grad
    s, c = np.sin(A), np.cos(A)
    D.ac(g, 6 * s**2 * c)
    (g2,) = agrad(g.sum(), x)
    D.ac(g2, 12 * s * c**2 - 6 * s**3, rtol=1e-9, atol=1e-12)


def test_under_no_grad_outputs_have_no_grad_fn(device):
    D = On(device)
    A = D.make((3,), "float64")
    x = D.leaf(A)
    with rumus.no_grad():
        y = MyExp.apply(x)
        s, c = SinCos.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    assert not s.requires_grad and s.grad_fn is None
    D.ac(y, np.exp(A))
    D.ac(c, np.cos(A))


def test_no_input_requires_grad(device):
    D = On(device)
    A = D.make((3,), "float64")
    y = MyExp.apply(D.t(A))
    assert not y.requires_grad and y.grad_fn is None
    D.ac(y, np.exp(A))


def test_backward_twice_frees_saved_tensors(device):
    D = On(device)
    A = D.make((3,), "float64")
    x = D.leaf(A)
    s = MyExp.apply(x).sum()
    s.backward(retain_graph=True)
    s.backward()
    D.ac(x.grad, 2 * np.exp(A))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        s.backward()


def test_saved_tensors_counted_and_freed(device):
    D = On(device)
    gc.collect()
    base = rumus.autograd.saved_tensor_bytes()
    x = D.leaf(D.make((50,), "float64"))
    y = MyExp.apply(x)
    assert rumus.autograd.saved_tensor_bytes() - base >= 50 * x.element_size()  # 400 on the CPU
    y.sum().backward()
    assert rumus.autograd.saved_tensor_bytes() == base
    y = MyExp.apply(x)
    del y
    gc.collect()
    assert rumus.autograd.saved_tensor_bytes() == base


def test_gradcheck_custom_functions(device):
    if device == "gpu":
        pytest.skip("gradcheck's finite differences need float64, which the GPU lacks (by design)")
    D = On(device)
    a = D.leaf(D.make((3,), "float64"))
    b = D.leaf(D.make((3,), "float64", rng=np.random.default_rng(4)))
    assert rumus.autograd.gradcheck(MyMul.apply, (a, b))
    assert rumus.autograd.gradcheck(lambda t: SinCos.apply(t), (a,))
    assert rumus.autograd.gradgradcheck(Cube.apply, (a,))
    assert rumus.autograd.gradcheck(BadExp.apply, (a,), raise_exception=False) is False
    with pytest.raises(RuntimeError):
        rumus.autograd.gradcheck(BadExp.apply, (a,))
