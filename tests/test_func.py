"""rumus.func: the differentiation transforms against explicit derivatives and finite
differences, functional_call, and vmap against the looped computation (and proof that the
batched function runs once)."""

import types

import numpy as np
import pytest
import rumus
import rumus.nn as nn
import rumus.nn.functional as F
from rumus.func import (
    functional_call,
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    vjp,
    vmap,
)

D = rumus.float64


def close(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(a.tolist()), np.asarray(b.tolist()), atol=tol, rtol=tol)


def fd_grad(f, x, eps=1e-6):
    """Central finite differences of scalar f at x (float64)."""
    flat = x.reshape(-1).tolist()
    out = []
    for i in range(len(flat)):
        hi, lo = list(flat), list(flat)
        hi[i] += eps
        lo[i] -= eps
        th = rumus.tensor(hi, dtype=D).reshape(x.shape)
        tl = rumus.tensor(lo, dtype=D).reshape(x.shape)
        out.append((f(th).item() - f(tl).item()) / (2 * eps))
    return rumus.tensor(out, dtype=D).reshape(x.shape)


def cubic(x):
    return (x.sin() * x * x).sum()


# -- differentiation transforms ---------------------------------------------------------------


def test_grad_matches_explicit_and_finite_differences():
    x = rumus.randn(2, 3, dtype=D)
    g = grad(cubic)(x)
    close(g, x.cos() * x * x + 2 * x * x.sin())
    close(g, fd_grad(cubic, x), 1e-5)
    assert not g.requires_grad


def test_grad_nests_to_second_and_third_derivatives():
    x = rumus.tensor(1.3, dtype=D)
    f = lambda t: t**4  # noqa: E731
    close(grad(grad(f))(x), 12 * x * x)
    close(grad(grad(grad(f)))(x), 24 * x)


def test_grad_argnums_pytrees_and_aux():
    x, y = rumus.randn(3, dtype=D), rumus.randn(3, dtype=D)

    def f(a, b):
        return (a * b.exp()).sum(), {"aux": a + 1}

    (ga, gb), aux = grad(f, argnums=(0, 1), has_aux=True)(x, y)
    close(ga, y.exp())
    close(gb, x * y.exp())
    close(aux["aux"], x + 1)

    params = {"w": rumus.randn(3, dtype=D), "b": [rumus.randn(1, dtype=D)]}
    g = grad(lambda p: (p["w"] * p["b"][0]).sum())(params)
    close(g["w"], params["b"][0].expand(3))
    close(g["b"][0], params["w"].sum().reshape(1))
    g, value = grad_and_value(cubic)(x)
    close(value, cubic(x))


def test_grad_errors():
    with pytest.raises(RuntimeError, match="scalar"):
        grad(lambda t: t * 2)(rumus.randn(3))
    with pytest.raises(RuntimeError, match="argnums"):
        grad(cubic, argnums=3)(rumus.randn(3))
    with pytest.raises(RuntimeError, match="tuple"):
        grad(cubic, has_aux=True)(rumus.randn(3))


def test_vjp_and_jvp():
    x = rumus.randn(4, dtype=D)
    out, fn = vjp(lambda t: t.tanh() * 3, x)
    close(out, x.tanh() * 3)
    v = rumus.randn(4, dtype=D)
    (g,) = fn(v)
    close(g, v * 3 * (1 - x.tanh() ** 2))
    with pytest.raises(RuntimeError, match="shape"):
        fn(rumus.randn(5, dtype=D))
    out, t = jvp(lambda a: a.exp() * a, (x,), (v,))
    close(out, x.exp() * x)
    close(t, v * (x.exp() * x + x.exp()))


def test_jacobians_and_hessian():
    x = rumus.randn(3, dtype=D)
    A = rumus.randn(2, 3, dtype=D)
    f = lambda t: (A @ t).sin()  # noqa: E731
    expected = (A @ x).cos().unsqueeze(1) * A
    close(jacrev(f)(x), expected)
    close(jacfwd(f)(x), expected)
    h = hessian(lambda t: (t**3).sum() + t[0] * t[1])(x)
    want = rumus.eye(3, dtype=D) * 6 * x
    want[0, 1] = 1
    want[1, 0] = 1
    close(h, want)
    ja, jb = jacrev(lambda a, b: a * b, argnums=(0, 1))(x, 2 * x)
    close(ja, rumus.eye(3, dtype=D) * 2 * x)
    close(jb, rumus.eye(3, dtype=D) * x)
    # jacrev of grad: the Hessian again, through nested reverse passes
    close(jacrev(grad(lambda t: (t**3).sum()))(x), rumus.eye(3, dtype=D) * 6 * x)


# -- functional_call ----------------------------------------------------------------------------


def test_functional_call_swaps_and_restores():
    m = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
    x = rumus.randn(4, 3)
    params = {k: v.detach() * 0 + 0.5 for k, v in m.named_parameters()}
    before = [p.clone() for p in m.parameters()]
    out = functional_call(m, params, (x,))
    h = F.relu(x @ rumus.full((2, 3), 0.5).T + 0.5)
    close(out, h @ rumus.full((1, 2), 0.5).T + 0.5, 1e-5)
    for a, b in zip(before, m.parameters()):
        close(a, b)
    # partial dicts swap only what they name; a raising call still restores
    out = functional_call(m, {"2.bias": rumus.tensor([100.0])}, x)
    close(out, m(x) + 100 - m[2].bias.detach(), 1e-4)

    class Boom(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(rumus.ones(1))

        def forward(self, x):
            raise ValueError("boom")

    b = Boom()
    with pytest.raises(ValueError, match="boom"):
        functional_call(b, {"w": rumus.zeros(1)}, (x,))
    assert b.w.tolist() == [1.0]


def test_functional_call_errors_and_strict():
    m = nn.Linear(2, 2)
    with pytest.raises(AttributeError, match="nope"):
        functional_call(m, {"nope": rumus.zeros(1)}, (rumus.randn(1, 2),))
    with pytest.raises(RuntimeError, match="Missing key"):
        functional_call(m, {"weight": rumus.zeros(2, 2)}, (rumus.randn(1, 2),), strict=True)
    with pytest.raises(ValueError, match="multiple"):
        functional_call(m, ({"weight": m.weight}, {"weight": m.weight}), (rumus.randn(1, 2),))


def test_functional_call_gradient_through_params():
    m = nn.Linear(3, 1)
    params = {k: v.detach() for k, v in m.named_parameters()}
    x, y = rumus.randn(5, 3), rumus.randn(5, 1)
    g = grad(lambda p: F.mse_loss(functional_call(m, p, (x,)), y))(params)
    m.zero_grad()
    F.mse_loss(m(x), y).backward()
    close(g["weight"], m.weight.grad, 1e-5)
    close(g["bias"], m.bias.grad, 1e-5)


# -- vmap ------------------------------------------------------------------------------------------


def looped(f, in_dims, *args):
    n = next(a.shape[d] for a, d in zip(args, in_dims) if d is not None)
    outs = [
        f(*[a if d is None else a.select(d, i) for a, d in zip(args, in_dims)]) for i in range(n)
    ]
    return rumus.stack(outs)


@pytest.mark.parametrize(
    "f",
    [
        lambda x, w: (x @ w).relu().sum(-1),
        lambda x, w: F.softmax(x @ w, dim=0),
        lambda x, w: F.log_softmax((x * 2).exp() @ w, -1),
        lambda x, w: x.T.reshape(-1)[1:4] + w.mean(),
        lambda x, w: x.unsqueeze(0).transpose(0, 2).squeeze(-1).sum(0),
        lambda x, w: rumus.cat([x, x * 2], dim=1).mean(dim=(0, 1), keepdim=True),
        lambda x, w: rumus.stack([x.sum(), w.sum()]),
        lambda x, w: F.gelu(F.linear(x, w.T, w[0])).amax(),
        lambda x, w: (x[:, None, :] - x[None]).pow(2).sum(-1).sqrt().flatten(),
        lambda x, w: rumus.matmul(w.T, x.T).permute(1, 0).tanh() * rumus.where(x > 0, x, -x),
        lambda x, w: (w[0] - x) * (w[0] < x) + w[1].mul(x) / (1 + w[2].exp()),
        lambda x, w: x.max(dim=1).values + x.view(3, 2, 2)[..., 0].std(dim=-1)[0],
    ],
)
def test_vmap_matches_loop(f):
    x = rumus.randn(6, 3, 4, dtype=D)
    w = rumus.randn(4, 4, dtype=D)
    close(vmap(f, in_dims=(0, None))(x, w), looped(f, (0, None), x, w))


def test_vmap_both_batched_in_dims_and_out_dims():
    a = rumus.randn(3, 5, 4, dtype=D)  # batch on dim 1
    b = rumus.randn(5, 4, 2, dtype=D)
    out = vmap(lambda x, y: x @ y, in_dims=(1, 0), out_dims=1)(a, b)
    want = looped(lambda x, y: x @ y, (1, 0), a, b)  # (5, 3, 2)
    close(out, want.movedim(0, 1))
    v = rumus.randn(5, 4, dtype=D)
    close(vmap(rumus.dot)(v, v), (v * v).sum(1))
    close(vmap(lambda m, x: m @ x, in_dims=(None, 0))(a[0], v), v @ a[0].T)


def test_vmap_pytrees_and_unbatched_outputs():
    x = rumus.randn(4, 3, dtype=D)
    out = vmap(lambda d: {"s": d["a"].sum(), "k": d["b"][0] * 2}, in_dims=({"a": 0, "b": [None]},))(
        {"a": x, "b": [rumus.ones(2, dtype=D)]}
    )
    close(out["s"], x.sum(1))
    close(out["k"], rumus.full((4, 2), 2.0, dtype=D))
    p, q = vmap(lambda t: (t.exp(), t.sum()), out_dims=(1, 0))(x)
    close(p, x.exp().T)
    close(q, x.sum(1))


def test_vmap_nested():
    x = rumus.randn(3, 4, 5, dtype=D)
    out = vmap(vmap(lambda t: (t * t).sum()))(x)
    close(out, (x * x).sum(-1))
    y = rumus.randn(4, 5, dtype=D)
    out = vmap(vmap(lambda a, b: a @ b, in_dims=(None, 0)), in_dims=(0, None))(x, y)
    close(out, rumus.einsum("ijk,lk->ilj", x, y))


def test_vmap_runs_the_op_once(monkeypatch):
    calls = []
    orig = rumus.Tensor.__matmul__
    real_exp = rumus.exp

    def counting_exp(*a, **k):
        calls.append(tuple(a[0].shape))
        return real_exp(*a, **k)

    monkeypatch.setattr(rumus, "exp", counting_exp)
    x = rumus.randn(8, 3)
    out = vmap(lambda t: rumus.exp(t) @ rumus.ones(3))(x)
    assert calls == [(8, 3)]  # one call on the whole batch, not 8
    close(out, orig(x.exp(), rumus.ones(3)), 1e-5)


def test_per_sample_gradients_of_an_mlp():
    rumus.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = rumus.randn(64, 5), rumus.randint(0, 3, (64,))

    def loss(p, xi, yi):
        logits = functional_call(model, p, (xi.unsqueeze(0),))
        return F.cross_entropy(logits, yi.unsqueeze(0))

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for name, g in per_sample.items():
        assert g.shape == (64, *params[name].shape)
    for i in range(64):
        gi = grad(loss)(params, x[i], y[i])
        for name in params:
            close(per_sample[name][i], gi[name], 1e-5)


def test_vmap_of_grad_of_batched_input_and_mse():
    x = rumus.randn(5, 3, dtype=D)
    close(vmap(grad(cubic))(x), x.cos() * x * x + 2 * x * x.sin())
    w = rumus.randn(3, dtype=D)
    t = rumus.randn(5, dtype=D)
    g = vmap(grad(lambda w, xi, ti: F.mse_loss(xi @ w, ti)), in_dims=(None, 0, 0))(w, x, t)
    close(g, 2 * ((x @ w) - t).unsqueeze(1) * x)


def test_vmap_errors():
    x = rumus.randn(4, 3)
    with pytest.raises(NotImplementedError, match="no batching rule for rumus.trace"):
        vmap(lambda t: rumus.trace(t.unsqueeze(0) * t.unsqueeze(1)))(x)
    with pytest.raises(NotImplementedError, match="no batching rule for Tensor.trace"):
        vmap(lambda t: (t.unsqueeze(0) * t.unsqueeze(1)).trace())(x)
    with pytest.raises(NotImplementedError, match="no batching rule for .*cholesky"):
        vmap(lambda t: rumus.cholesky(t.unsqueeze(0) * t.unsqueeze(1)))(x)
    with pytest.raises(ValueError, match="in_dim=2"):
        vmap(lambda t: t, in_dims=2)(x)
    with pytest.raises(ValueError, match="in_dims"):
        vmap(lambda a, b: a + b, in_dims=(0,))(x, x)
    with pytest.raises(ValueError, match="same size"):
        vmap(lambda a, b: a + b)(x, rumus.randn(5, 3))
    with pytest.raises(ValueError, match="at least one"):
        vmap(lambda a: a, in_dims=None)(x)
    with pytest.raises(ValueError, match="non-Tensor"):
        vmap(lambda a, n: a * n, in_dims=(0, 0))(x, 3)
    with pytest.raises(RuntimeError, match="item"):
        vmap(lambda t: t.sum().item())(x)
    with pytest.raises(RuntimeError, match="randomness"):
        vmap(lambda t: F.dropout(t, 0.5))(x)
    with pytest.raises(RuntimeError, match="randomness"):
        vmap(lambda t: t, randomness="sometimes")(x)
    # the wrappers are gone afterwards
    assert not isinstance(rumus.exp, types.FunctionType)


def test_vmap_chunk_size_and_randomness_different():
    x = rumus.randn(7, 3, dtype=D)
    close(vmap(lambda t: t.sum(), chunk_size=3)(x), x.sum(1))
    out = vmap(lambda t: F.dropout(t, 0.5), randomness="different")(rumus.ones(7, 100))
    assert out.shape == (7, 100)
    assert set(out.reshape(-1).tolist()) <= {0.0, 2.0}


def test_vmap_split_unbind_norm_and_python_methods():
    x = rumus.randn(4, 6, 2, dtype=D)
    for f in [
        lambda t: t.unbind()[1] * t.unbind(1)[0].sum(),
        lambda t: rumus.split(t, 2)[2] + t.chunk(3)[0],
        lambda t: rumus.linalg.vector_norm(t) + rumus.linalg.vector_norm(t, 1, dim=0).sum(),
        lambda t: t.max() - t.min(dim=-1).values.sum() + rumus.maximum(t, t * 2).sum(),
    ]:
        close(vmap(f)(x), looped(f, (0,), x))
    with pytest.raises(NotImplementedError, match="__setitem__"):

        def write(t):
            t[0] = 1
            return t

        vmap(write)(x)


def test_vjp_inside_vmap():
    x = rumus.randn(5, 3, dtype=D)
    v = rumus.randn(5, 3, dtype=D)
    out = vmap(lambda a, b: vjp(lambda t: t.sin() * t, a)[1](b)[0])(x, v)
    close(out, v * (x.cos() * x + x.sin()))


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"reduction": "sum"},
        {"reduction": "none"},
        {"ignore_index": 1},
        {"weight": rumus.tensor([0.2, 1.0, 3.0], dtype=D)},
        {"label_smoothing": 0.1},
    ],
)
def test_vmap_cross_entropy_per_sample(kw):
    logits = rumus.randn(6, 4, 3, dtype=D)
    target = rumus.tensor([[0, 1, 2, 1]] * 3 + [[2, 2, 0, 0]] * 3)

    def f(z, t):
        return F.cross_entropy(z, t, **kw)

    close(vmap(f)(logits, target), looped(f, (0, 0), logits, target))
    single = vmap(f)(logits[:, 0], target[:, 0])
    close(single, looped(f, (0, 0), logits[:, 0], target[:, 0]))


def test_vmap_of_vmap_of_grad():
    x = rumus.randn(3, 4, 2, dtype=D)
    w = rumus.randn(2, dtype=D)
    out = vmap(vmap(grad(lambda w, xi: ((xi * w).sum()) ** 2), in_dims=(None, 0)),
               in_dims=(None, 0))(w, x)  # fmt: skip
    close(out, 2 * (x * w).sum(-1, keepdim=True) * x)


def test_functional_call_tied_weights():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False)
            self.b = nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied()
    x = rumus.randn(3, 2)
    w = rumus.randn(2, 2)
    close(functional_call(m, {"a.weight": w}, (x,)), x @ w.T @ w.T, 1e-5)
    untied = functional_call(m, {"a.weight": w}, (x,), tie_weights=False)
    close(untied, x @ w.T @ m.a.weight.detach().T, 1e-5)


def test_vmap_conv_pool_layer_norm_embedding():
    x = rumus.randn(5, 2, 3, 6, 6, dtype=D)  # 5 samples of (N=2, C=3, 6, 6)
    w = rumus.randn(4, 3, 3, 3, dtype=D)
    ln = rumus.randn(4, dtype=D)

    def f(xi):
        h = F.max_pool2d(F.conv2d(xi, w, padding=1), 2)
        return F.layer_norm(h.movedim(-3, -1), (4,), ln, ln).sum((-3, -2))

    close(vmap(f)(x), looped(f, (0,), x))
    close(vmap(f)(x[:, 0]), looped(f, (0,), x[:, 0]))  # per-sample (C, H, W) inputs
    table = rumus.randn(10, 3, dtype=D)
    idx = rumus.randint(0, 10, (5, 4))
    close(vmap(lambda i: F.embedding(i, table))(idx), table[idx])
    with pytest.raises(NotImplementedError, match="batched weights"):
        vmap(lambda xi, wi: F.conv2d(xi, wi))(x, w.unsqueeze(0).expand(5, 4, 3, 3, 3))


def test_transform_aux_and_tuple_outputs():
    x = rumus.randn(3, dtype=D)
    v = rumus.randn(3, dtype=D)
    out, t, aux = jvp(lambda a: (a.exp(), a * 2), (x,), (v,), has_aux=True)
    close(t, v * x.exp())
    close(aux, x * 2)
    jac, aux = jacrev(lambda a: (a.sin(), a.sum()), has_aux=True)(x)
    close(jac, rumus.eye(3, dtype=D) * x.cos())
    close(aux, x.sum())
    ja, jb = jacfwd(lambda a: (a * 3, a.sum()))(x)
    close(ja, rumus.eye(3, dtype=D) * 3)
    close(jb, rumus.ones(3, dtype=D))
    with pytest.raises(NotImplementedError, match="jacrev"):
        vmap(jacrev(lambda a: a.sin()))(rumus.randn(2, 3))


def test_vmap_negative_dims_and_operators():
    x = rumus.randn(3, 4, 5, dtype=D)
    out = vmap(lambda t: t * 2, in_dims=-1, out_dims=-1)(x)
    close(out, x * 2)
    out = vmap(lambda t: t.sum(-1), in_dims=1, out_dims=-1)(x)
    close(out, x.sum(-1))
    m = rumus.randn(4, 5) > 0
    close(vmap(lambda a, b: (a & ~b) | (a ^ b))(m, m.flip(0)), (m & ~m.flip(0)) | (m ^ m.flip(0)))
    with pytest.raises(ValueError, match="out_dims"):
        vmap(lambda t: t.sum(), out_dims=(0, 1))(x)


def test_autograd_grad_inside_vmap():
    x = rumus.randn(6, 3, dtype=D)

    def f(t):
        t = t.detach().requires_grad_()
        (g,) = rumus.autograd.grad((t.sin() * t).sum(), t)
        return g

    close(vmap(f)(x), x.cos() * x + x.sin())
    w = rumus.randn(3, dtype=D, requires_grad=True)
    with pytest.raises(NotImplementedError, match="rumus.func.grad"):
        vmap(lambda t: rumus.autograd.grad((t * w).sum(), w))(x)
    # outside vmap, unchanged
    (g,) = rumus.autograd.grad((w * w).sum(), w)
    close(g, 2 * w)
