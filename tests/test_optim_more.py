"""Adadelta, ASGD, Rprop (fused Rust/WGSL rules), SparseAdam and LBFGS against
NumPy transcriptions of PyTorch's update rules (and PyTorch when installed)."""

import copy

import numpy as np
import pytest
import rumus
from conftest import need_gpu

STEPS = 20
SHAPES = [(3, 4), (5,), ()]


# ---------------------------------------------------------------- references


def _f32(x):
    return float(np.float32(x))


class Ref:
    """One parameter's NumPy state under PyTorch's single-tensor update rule."""

    def __init__(self, name, kw, p):
        self.name, self.kw, self.p = name, kw, p.copy()
        self.step = 0
        z = np.zeros_like(p)
        if name == "Adadelta":
            self.state = {"square_avg": z.copy(), "acc_delta": z.copy()}
        elif name == "ASGD":
            self.state = {"eta": _f32(kw.get("lr", 1e-2)), "mu": 1.0, "ax": z.copy()}
        elif name == "Rprop":
            self.state = {"prev": z.copy(), "step_size": np.full_like(p, kw.get("lr", 1e-2))}
        elif name == "SparseAdam":
            self.state = {"exp_avg": z.copy(), "exp_avg_sq": z.copy()}

    def update(self, g):
        kw, p, s = self.kw, self.p, self.state
        g = -g if kw.get("maximize", False) else g
        self.step += 1
        if self.name == "Adadelta":
            lr, rho, eps = kw.get("lr", 1.0), kw.get("rho", 0.9), kw.get("eps", 1e-6)
            g = g + kw.get("weight_decay", 0) * p
            s["square_avg"] = rho * s["square_avg"] + (1 - rho) * g * g
            delta = np.sqrt(s["acc_delta"] + eps) / np.sqrt(s["square_avg"] + eps) * g
            s["acc_delta"] = rho * s["acc_delta"] + (1 - rho) * delta * delta
            self.p = p - lr * delta
        elif self.name == "ASGD":
            lr, lambd = kw.get("lr", 1e-2), kw.get("lambd", 1e-4)
            alpha, t0 = kw.get("alpha", 0.75), kw.get("t0", 1e6)
            g = g + kw.get("weight_decay", 0) * p
            eta, mu = s["eta"], s["mu"]
            p = p * (1 - lambd * eta) - eta * g
            s["ax"] = p.copy() if mu == 1 else s["ax"] + (p - s["ax"]) * mu
            # eta and mu are float32 tensors in PyTorch's state.
            s["eta"] = _f32(lr / (1 + lambd * lr * self.step) ** alpha)
            s["mu"] = _f32(1 / max(1, self.step - t0))
            self.p = p
        elif self.name == "Rprop":
            (em, ep), (lo, hi) = kw.get("etas", (0.5, 1.2)), kw.get("step_sizes", (1e-6, 50))
            prod = g * s["prev"]
            f = np.where(prod > 0, ep, np.where(prod < 0, em, 1.0))
            s["step_size"] = np.clip(s["step_size"] * f, lo, hi)
            g = np.where(f == em, 0.0, g)
            self.p = p - np.sign(g) * s["step_size"]
            s["prev"] = g
        elif self.name == "SparseAdam":
            lr, (b1, b2), eps = kw.get("lr", 1e-3), kw.get("betas", (0.9, 0.999)), 1e-8
            mask = g != 0
            m = np.where(mask, b1 * s["exp_avg"] + (1 - b1) * g, s["exp_avg"])
            v = np.where(mask, b2 * s["exp_avg_sq"] + (1 - b2) * g * g, s["exp_avg_sq"])
            s["exp_avg"], s["exp_avg_sq"] = m, v
            step_size = lr * np.sqrt(1 - b2**self.step) / (1 - b1**self.step)
            self.p = np.where(mask, p - step_size * m / (np.sqrt(v) + eps), p)


CONFIGS = [
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-4, "weight_decay": 0.1}),
    ("Adadelta", {"maximize": True}),
    ("ASGD", {}),
    ("ASGD", {"lr": 0.05, "lambd": 1e-2, "alpha": 0.6, "t0": 5, "weight_decay": 0.1}),
    ("ASGD", {"t0": 3, "maximize": True}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.1, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2)}),
    ("Rprop", {"maximize": True}),
    ("SparseAdam", {}),
    ("SparseAdam", {"lr": 0.1, "betas": (0.8, 0.9), "maximize": True}),
]
IDS = [f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)]


def _grads(rng, shape, sparse):
    g = rng.normal(size=shape)
    if sparse:  # SparseAdam: some entries exactly zero
        g = np.where(rng.random(size=shape) < 0.4, 0.0, g)
    if g.ndim and g.size > 2:
        g.flat[0] = 0.0  # Rprop: a zero gradient keeps the step size
    return g


def _run(name, kw, device, dtype, rng):
    init = [rng.normal(size=s) for s in SHAPES]
    params = [rumus.tensor(a, dtype=dtype, device=device, requires_grad=True) for a in init]
    opt = getattr(rumus.optim, name)(params, **kw)
    refs = [Ref(name, kw, a.astype(dtype)) for a in init]
    for _ in range(STEPS):
        gs = [_grads(rng, s, name == "SparseAdam").astype(dtype) for s in SHAPES]
        for p, g in zip(params, gs):
            p.grad = rumus.tensor(g, dtype=dtype, device=device)
        opt.step()
        for r, g in zip(refs, gs):
            r.update(g)
    return opt, params, refs


def _tol(dtype):
    return dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("name,kw", CONFIGS, ids=IDS)
@pytest.mark.parametrize("dev_dtype", [("cpu", "float64"), ("cpu", "float32"), ("gpu", "float32")])
def test_matches_numpy(name, kw, dev_dtype, rng):
    device, dtype = dev_dtype
    if device == "gpu":
        need_gpu()
    opt, params, refs = _run(name, kw, device, dtype, rng)
    for i, (p, r) in enumerate(zip(params, refs)):
        np.testing.assert_allclose(p.detach().cpu().numpy(), r.p, **_tol(dtype), err_msg=f"{i}")
        st = opt.state[p]
        assert set(st) == set(r.state) | {"step"}
        step = st["step"]
        assert (step if isinstance(step, int) else step.item()) == STEPS
        for k, v in r.state.items():
            got = st[k]
            assert str(got.device).startswith(device), k
            np.testing.assert_allclose(got.cpu().numpy(), v, **_tol(dtype), err_msg=f"{i} {k}")


@pytest.mark.parametrize("name,kw", CONFIGS, ids=IDS)
def test_matches_torch(name, kw, rng):
    torch = pytest.importorskip("torch")
    init = [rng.normal(size=s) for s in SHAPES]
    grads = [[_grads(rng, s, name == "SparseAdam") for s in SHAPES] for _ in range(STEPS)]
    tparams = [torch.tensor(a, requires_grad=True) for a in init]
    params = [rumus.tensor(a, requires_grad=True) for a in init]
    topt = getattr(torch.optim, name)(tparams, **kw)
    opt = getattr(rumus.optim, name)(params, **kw)
    for gs in grads:
        for tp, p, g in zip(tparams, params, gs):
            # torch's SparseAdam takes the sparse form of the same gradient.
            tg = torch.from_numpy(g)
            tp.grad = tg.to_sparse() if name == "SparseAdam" and tg.dim() else tg
            p.grad = rumus.tensor(g)
        if name == "SparseAdam" and any(tp.grad.dim() == 0 for tp in tparams):
            for tp in tparams:
                if tp.grad.dim() == 0:
                    tp.grad = None
            for p in params:
                if p.dim() == 0:
                    p.grad = None
        topt.step()
        opt.step()
    for p, tp in zip(params, tparams):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-6, atol=1e-9)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sorted(sd["state"]) == sorted(tsd["state"])
    for k in sd["state"]:
        assert set(sd["state"][k]) == set(tsd["state"][k])
    group, tgroup = sd["param_groups"][0], tsd["param_groups"][0]
    for k in group:
        if k != "params":
            assert group[k] == tgroup[k], k


@pytest.mark.parametrize("name,kw", CONFIGS[::3], ids=IDS[::3])
def test_state_dict_round_trip(name, kw, rng, device):
    dtype = "float32"
    opt, params, refs = _run(name, kw, device, dtype, rng)
    sd = opt.state_dict()
    twins = [p.detach().clone().requires_grad_(True) for p in params]
    opt2 = getattr(rumus.optim, name)(twins, **kw)
    opt2.load_state_dict(copy.deepcopy(sd))
    gs = [_grads(rng, s, name == "SparseAdam").astype(dtype) for s in SHAPES]
    for a, b, g in zip(params, twins, gs):
        a.grad = rumus.tensor(g, device=device)
        b.grad = rumus.tensor(g, device=device)
    opt.step()
    opt2.step()
    for a, b in zip(params, twins):
        np.testing.assert_array_equal(a.detach().cpu().numpy(), b.detach().cpu().numpy())
    assert opt2.state_dict()["param_groups"] == opt.state_dict()["param_groups"]


def test_param_groups_and_errors():
    a = rumus.tensor([1.0, 2.0], requires_grad=True)
    b = rumus.tensor([3.0], requires_grad=True)
    opt = rumus.optim.Rprop([{"params": [a]}, {"params": [b], "lr": 0.5}])
    a.grad, b.grad = rumus.tensor([1.0, -1.0]), rumus.tensor([2.0])
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [0.99, 2.01])
    np.testing.assert_allclose(b.detach().numpy(), [2.5])
    with pytest.raises(ValueError, match="rho"):
        rumus.optim.Adadelta([a], rho=1.5)
    with pytest.raises(ValueError, match="eta values"):
        rumus.optim.Rprop([a], etas=(1.5, 1.2))
    with pytest.raises(ValueError, match="learning rate"):
        rumus.optim.ASGD([a], lr=-1)
    with pytest.raises(ValueError, match="epsilon"):
        rumus.optim.SparseAdam([a], eps=0)
    with pytest.raises(ValueError, match="parameter groups"):
        rumus.optim.LBFGS([{"params": [a]}, {"params": [b]}])
    with pytest.raises(RuntimeError, match="strong_wolfe"):
        rumus.optim.LBFGS([a], line_search_fn="armijo")


# ---------------------------------------------------------------- LBFGS


def _least_squares(rng, n=30, d=8, device="cpu", dtype=rumus.float64):
    A = rng.normal(size=(n, d))
    y = rng.normal(size=n)
    x = rumus.zeros(d, dtype=dtype, device=device, requires_grad=True)
    At, yt = (
        rumus.tensor(A, dtype=dtype, device=device),
        rumus.tensor(y, dtype=dtype, device=device),
    )
    return A, y, x, At, yt


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_least_squares(line_search, rng):
    A, y, x, At, yt = _least_squares(rng)
    opt = rumus.optim.LBFGS(
        [x],
        history_size=10,
        max_iter=100,
        line_search_fn=line_search,
        tolerance_grad=1e-10,
        tolerance_change=1e-14,
    )

    def closure():
        opt.zero_grad()
        loss = ((At @ x - yt) ** 2).sum()
        loss.backward()
        return loss

    first = opt.step(closure)
    assert isinstance(first, rumus.Tensor)
    expected = np.linalg.lstsq(A, y, rcond=None)[0]
    np.testing.assert_allclose(x.detach().numpy(), expected, rtol=1e-5, atol=1e-6)
    st = opt.state[x]
    assert st["n_iter"] <= 100 and st["func_evals"] >= st["n_iter"]
    assert {"d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad"} <= set(st)


def _rosenbrock(xy):
    return (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_rosenbrock(line_search):
    xy = rumus.tensor([-1.5, 2.0], dtype=rumus.float64, requires_grad=True)
    lr = 1 if line_search else 0.05
    opt = rumus.optim.LBFGS(
        [xy],
        lr=lr,
        max_iter=200 if line_search else 1000,
        max_eval=2000,
        line_search_fn=line_search,
        tolerance_grad=1e-10,
        tolerance_change=1e-14,
    )

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(xy)
        loss.backward()
        return loss

    for _ in range(5 if line_search else 20):
        opt.step(closure)
    np.testing.assert_allclose(xy.detach().numpy(), [1.0, 1.0], atol=1e-4)


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_matches_torch(line_search, rng):
    torch = pytest.importorskip("torch")
    start = [-1.2, 1.0]
    xy = rumus.tensor(start, dtype=rumus.float64, requires_grad=True)
    txy = torch.tensor(start, dtype=torch.float64, requires_grad=True)
    kw = dict(
        lr=1 if line_search else 0.01, max_iter=15, history_size=5, line_search_fn=line_search
    )
    opt, topt = rumus.optim.LBFGS([xy], **kw), torch.optim.LBFGS([txy], **kw)

    def closure(v, o):
        def f():
            o.zero_grad()
            loss = _rosenbrock(v)
            loss.backward()
            return loss

        return f

    for _ in range(3):
        opt.step(closure(xy, opt))
        topt.step(closure(txy, topt))
    np.testing.assert_allclose(xy.detach().numpy(), txy.detach().numpy(), rtol=1e-8)
    assert opt.state[xy]["func_evals"] == topt.state[txy]["func_evals"]
    assert opt.state[xy]["n_iter"] == topt.state[txy]["n_iter"]


def test_lbfgs_gpu(rng):
    need_gpu()
    A, y, x, At, yt = _least_squares(rng, device="gpu", dtype=rumus.float32)
    opt = rumus.optim.LBFGS([x], max_iter=50, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = ((At @ x - yt) ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    expected = np.linalg.lstsq(A, y, rcond=None)[0]
    np.testing.assert_allclose(x.detach().cpu().numpy(), expected, rtol=1e-3, atol=1e-3)


def test_lbfgs_converged_start_returns_at_once():
    x = rumus.tensor([1.0, 1.0], dtype=rumus.float64, requires_grad=True)
    opt = rumus.optim.LBFGS([x])
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = _rosenbrock(x)
        loss.backward()
        return loss

    opt.step(closure)
    assert len(calls) == 1
