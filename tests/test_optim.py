"""rumus.optim against NumPy re-implementations of PyTorch's update rules (and
against torch.optim when it is installed): every optimizer over a grid of
options, state layout, state_dict round trips and errors, param groups,
zero_grad, closures, constructor/hyperparameter errors and a small model.

Gradients are fixed sequences drawn from a NumPy RNG and assigned to
``p.grad`` directly, so every step is deterministic and independent of the
autograd engine.
"""

import copy
import re

import numpy as np
import pytest
import rumus
from conftest import F32_TOL, assert_close, leaf, noncontig, skip_on_gpu, tensor, val, wide

NAMES = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam"]
ADAMS = ("Adam", "AdamW")
BETAS = (0.9, 0.999)

# PyTorch's documented defaults (the keyword arguments every optimizer takes).
DEFAULTS = {
    "SGD": dict(lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False),
    "Adam": dict(lr=1e-3, betas=BETAS, eps=1e-8, weight_decay=0, amsgrad=False, maximize=False),
    "AdamW": dict(lr=1e-3, betas=BETAS, eps=1e-8, weight_decay=1e-2, amsgrad=False, maximize=False),
    "RMSprop": dict(
        lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False, maximize=False
    ),
    "Adagrad": dict(
        lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10, maximize=False
    ),
    "Adamax": dict(lr=2e-3, betas=BETAS, eps=1e-8, weight_decay=0, maximize=False),
    "NAdam": dict(
        lr=2e-3,
        betas=BETAS,
        eps=1e-8,
        weight_decay=0,
        momentum_decay=4e-3,
        decoupled_weight_decay=False,
        maximize=False,
    ),
    "RAdam": dict(
        lr=1e-3, betas=BETAS, eps=1e-8, weight_decay=0, decoupled_weight_decay=False, maximize=False
    ),
}

# The option grid: the defaults, each option alone, then several together.
CONFIGS = [
    ("SGD", {}),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.1, weight_decay=0.1)),
    ("SGD", dict(lr=0.1, maximize=True)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.2, maximize=True)),
    ("Adam", {}),
    ("Adam", dict(lr=0.05, amsgrad=True)),
    ("Adam", dict(lr=0.05, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.9), eps=1e-3)),
    ("Adam", dict(lr=0.05, maximize=True)),
    ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1, maximize=True)),
    # PyTorch's Adam also takes AdamW's decay (keyword-only, not in DEFAULTS).
    ("Adam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", {}),
    ("AdamW", dict(lr=0.05, weight_decay=0.3)),
    ("AdamW", dict(lr=0.05, weight_decay=0.0)),
    ("AdamW", dict(lr=0.05, amsgrad=True, weight_decay=0.3, maximize=True)),
    ("RMSprop", {}),
    ("RMSprop", dict(centered=True)),
    ("RMSprop", dict(momentum=0.9)),
    ("RMSprop", dict(lr=0.02, alpha=0.9, eps=1e-3, weight_decay=0.1)),
    ("RMSprop", dict(maximize=True)),
    ("RMSprop", dict(lr=0.02, centered=True, momentum=0.5, weight_decay=0.1, maximize=True)),
    ("Adagrad", {}),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5)),
    ("Adagrad", dict(lr=0.1, weight_decay=0.1, eps=1e-3)),
    (
        "Adagrad",
        dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.1, weight_decay=0.1, maximize=True),
    ),
    ("Adamax", {}),
    ("Adamax", dict(lr=0.05, weight_decay=0.1)),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.9), eps=1e-3)),
    ("Adamax", dict(lr=0.05, maximize=True)),
    ("NAdam", {}),
    ("NAdam", dict(lr=0.05, momentum_decay=0.1)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("NAdam", dict(lr=0.05, betas=(0.8, 0.9), eps=1e-3, maximize=True)),
    ("RAdam", {}),
    # beta2=0.99: the rectified branch (rho_t > 5) starts at step 6, as with 0.999.
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.99))),
    ("RAdam", dict(lr=0.05, weight_decay=0.1)),
    ("RAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.05, eps=1e-3, maximize=True)),
]
CONFIG_IDS = [
    name + "-" + (",".join(f"{k}={v}" for k, v in kw.items()) or "defaults") for name, kw in CONFIGS
]

# One config per optimizer with its stateful options on (round trips etc.).
RICH = {
    "SGD": dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1),
    "Adam": dict(lr=0.05, amsgrad=True, weight_decay=0.1),
    "AdamW": dict(lr=0.05, amsgrad=True),
    "RMSprop": dict(lr=0.02, centered=True, momentum=0.5, weight_decay=0.1),
    "Adagrad": dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.1),
    "Adamax": dict(lr=0.05, weight_decay=0.1),
    "NAdam": dict(lr=0.05, weight_decay=0.1),
    "RAdam": dict(lr=0.05, weight_decay=0.1),
}

SHAPES = [(5,), (3, 4), (2, 1, 3)]
STEPS = 12


def opt_cls(name):
    return getattr(rumus.optim, name)


# --------------------------------------------------------------------------
# devices: every test runs on the CPU and on the GPU (``device`` fixture)
# --------------------------------------------------------------------------


def dtol(device, **cpu):
    """The CPU's tolerances ``cpu`` on the CPU; float32 tolerances on the GPU
    (where the test runs in float32)."""
    return cpu if device == "cpu" else dict(F32_TOL)


def dleaf(a, dtype="float64", device="cpu"):
    """Leaf tensor on ``device`` that requires grad, holding ``a`` as ``dtype``."""
    t = tensor(np.asarray(a, dtype=dtype), device=device)
    t.requires_grad_()
    assert t.is_leaf and t.device.type == device
    return t


def dev_of(t):
    return t.device.type


def tol(name, dtype):
    if dtype == "float32":
        return dict(rtol=1e-5, atol=1e-6)
    if name == "NAdam":
        # mu_product is a float32 0-d tensor (as in PyTorch), so the update
        # coefficients carry float32 rounding: up to ~3e-9 here, depending on
        # where an implementation rounds it.
        return dict(rtol=1e-7, atol=1e-8)
    return dict(rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------
# NumPy reference (float64) of PyTorch's single-tensor update rules
# --------------------------------------------------------------------------


def init_state(name, p, h):
    """The state PyTorch creates on a parameter's first step (SGD: lazily, on
    its first momentum update)."""
    if name == "SGD":
        return {}
    z = lambda: np.zeros_like(p)  # noqa: E731
    st = {"step": 0}
    if name in ADAMS + ("NAdam", "RAdam"):
        st.update(exp_avg=z(), exp_avg_sq=z())
    if name in ADAMS and h["amsgrad"]:
        st["max_exp_avg_sq"] = z()
    if name == "NAdam":
        st["mu_product"] = np.float32(1.0)
    if name == "Adamax":
        st.update(exp_avg=z(), exp_inf=z())
    if name == "RMSprop":
        st["square_avg"] = z()
        if h["momentum"] > 0:
            st["momentum_buffer"] = z()
        if h["centered"]:
            st["grad_avg"] = z()
    if name == "Adagrad":
        st["sum"] = np.full_like(p, h["initial_accumulator_value"])
    return st


def ref_update(name, p, g, st, h):
    """One step of optimizer ``name`` on float64 array ``p`` with gradient ``g``;
    updates ``st`` in place and returns the new parameter."""
    lr, wd = h["lr"], h["weight_decay"]
    if h["maximize"]:
        g = -g
    if "step" in st:
        st["step"] += 1
        t = st["step"]
    decoupled = name == "AdamW" or h.get("decoupled_weight_decay", False)
    if wd:
        if decoupled:
            p = p * (1 - lr * wd)
        else:
            g = g + wd * p
    if name == "SGD":
        mom = h["momentum"]
        if mom:
            buf = st.get("momentum_buffer")
            buf = g.copy() if buf is None else mom * buf + (1 - h["dampening"]) * g
            st["momentum_buffer"] = buf
            g = g + mom * buf if h["nesterov"] else buf
        return p - lr * g
    if name == "Adagrad":
        st["sum"] = st["sum"] + g * g
        return p - lr / (1 + (t - 1) * h["lr_decay"]) * g / (np.sqrt(st["sum"]) + h["eps"])
    if name == "RMSprop":
        a = h["alpha"]
        st["square_avg"] = a * st["square_avg"] + (1 - a) * g * g
        if h["centered"]:
            st["grad_avg"] = a * st["grad_avg"] + (1 - a) * g
            avg = np.sqrt(st["square_avg"] - st["grad_avg"] ** 2) + h["eps"]
        else:
            avg = np.sqrt(st["square_avg"]) + h["eps"]
        if h["momentum"] > 0:
            st["momentum_buffer"] = h["momentum"] * st["momentum_buffer"] + g / avg
            return p - lr * st["momentum_buffer"]
        return p - lr * g / avg
    b1, b2 = h["betas"]
    st["exp_avg"] = b1 * st["exp_avg"] + (1 - b1) * g
    m = st["exp_avg"]
    bc1, bc2 = 1 - b1**t, 1 - b2**t
    if name == "Adamax":
        st["exp_inf"] = np.maximum(b2 * st["exp_inf"], np.abs(g) + h["eps"])
        return p - lr / bc1 * m / st["exp_inf"]
    st["exp_avg_sq"] = b2 * st["exp_avg_sq"] + (1 - b2) * g * g
    v = st["exp_avg_sq"]
    if name in ADAMS:
        if h["amsgrad"]:
            st["max_exp_avg_sq"] = v = np.maximum(st["max_exp_avg_sq"], v)
        return p - lr / bc1 * m / (np.sqrt(v) / np.sqrt(bc2) + h["eps"])
    if name == "NAdam":
        md = h["momentum_decay"]
        mu = b1 * (1 - 0.5 * 0.96 ** (t * md))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * md))
        st["mu_product"] = np.float32(st["mu_product"] * np.float32(mu))
        mp = float(st["mu_product"])
        denom = np.sqrt(v / bc2) + h["eps"]
        return (
            p - lr * (1 - mu) / (1 - mp) * g / denom - lr * mu_next / (1 - mp * mu_next) * m / denom
        )
    # RAdam: rectified adaptive step once the SMA length rho_t exceeds 5.
    rho_inf = 2 / (1 - b2) - 1
    rho_t = rho_inf - 2 * t * b2**t / bc2
    if rho_t > 5:
        rect = np.sqrt(
            (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
        )
        return p - lr * m / bc1 * rect * np.sqrt(bc2) / (np.sqrt(v) + h["eps"])
    return p - lr * m / bc1


class Ref:
    """Param groups of float64 arrays stepped by :func:`ref_update`."""

    def __init__(self, name, groups):
        self.name = name
        self.groups = [
            ([np.array(a, np.float64) for a in arrays], {**DEFAULTS[name], **kw})
            for arrays, kw in groups
        ]
        self.state = [[None] * len(ps) for ps, _ in self.groups]

    def step(self, grads):
        """``grads``: per group, a list of arrays (None: no gradient, skipped)."""
        for (ps, h), sts, gs in zip(self.groups, self.state, grads):
            for i, g in enumerate(gs):
                if g is None:
                    continue
                if sts[i] is None:
                    sts[i] = init_state(self.name, ps[i], h)
                ps[i] = ref_update(self.name, ps[i], np.asarray(g, np.float64), sts[i], h)

    def flat(self):
        return [(p, st) for (ps, _), sts in zip(self.groups, self.state) for p, st in zip(ps, sts)]


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def arrays(shapes, dtype, rng):
    return [np.asarray(rng.uniform(-1, 1, s)).astype(dtype) for s in shapes]


def grad_seq(shapes, dtype, rng, steps=STEPS):
    return [
        [np.asarray(rng.standard_normal(s)).astype(dtype) for s in shapes] for _ in range(steps)
    ]


def set_grads(params, grads):
    """Gradients (numpy, None: no gradient) on each parameter's device."""
    for p, g in zip(params, grads):
        p.grad = None if g is None else tensor(g, device=dev_of(p))


def split(flat, sizes):
    out, i = [], 0
    for n in sizes:
        out.append(flat[i : i + n])
        i += n
    return out


def check_params(params, ref, dtype, name):
    for i, (t, (p, _)) in enumerate(zip(params, ref.flat())):
        try:
            assert_close(t.detach(), p.astype(dtype), **tol(name, dtype))
        except AssertionError as e:
            raise AssertionError(f"param {i}: {e}") from None


def check_state(opt, params, ref, dtype, name):
    for i, (t, (_, st_ref)) in enumerate(zip(params, ref.flat())):
        st = opt.state.get(t, {})
        if st_ref is None:
            assert not st or float(st["step"]) == 0, f"param {i} has no gradient but has state {st}"
            continue
        assert set(st) == set(st_ref), f"param {i}: state keys {sorted(st)} != {sorted(st_ref)}"
        for k, v in st_ref.items():
            assert dev_of(st[k]) == dev_of(t), (
                f"param {i}: state[{k!r}] on {st[k].device}, param on {t.device}"
            )
            if k == "step":
                assert (
                    isinstance(st[k], rumus.Tensor)
                    and st[k].dtype == rumus.float32
                    and tuple(st[k].shape) == ()
                )
                assert st[k].item() == v
            elif k == "mu_product":
                assert_close(st[k], np.asarray(v, np.float32), rtol=1e-6)
            else:
                try:
                    assert_close(st[k], v.astype(dtype), **tol(name, dtype))
                except AssertionError as e:
                    raise AssertionError(f"param {i}, state[{k!r}]: {e}") from None


def run(name, kw, dtype, rng, steps=STEPS, shapes=SHAPES, device="cpu"):
    """rumus optimizer and NumPy reference run side by side; params checked every step."""
    init = arrays(shapes, dtype, rng)
    params = [dleaf(a, dtype, device) for a in init]
    opt = opt_cls(name)(params, **kw)
    ref = Ref(name, [(init, kw)])
    for gs in grad_seq(shapes, dtype, rng, steps):
        set_grads(params, gs)
        assert opt.step() is None
        ref.step([gs])
        check_params(params, ref, dtype, name)
    return opt, params, ref


# --------------------------------------------------------------------------
# update rules
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_defaults(name, device):
    p = dleaf(np.zeros(3), wide(device), device)
    opt = opt_cls(name)([p])
    assert isinstance(opt, rumus.optim.Optimizer)
    assert len(opt.param_groups) == 1
    group = opt.param_groups[0]
    assert len(group["params"]) == 1 and group["params"][0] is p
    for k, v in DEFAULTS[name].items():
        got_d, got_g = opt.defaults[k], group[k]
        if k == "betas":
            got_d, got_g = tuple(got_d), tuple(got_g)
        assert got_d == v and got_g == v, f"{k}: defaults {got_d}, group {got_g}, expected {v}"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kw", CONFIGS, ids=CONFIG_IDS)
def test_matches_numpy(name, kw, dtype, rng, device):
    skip_on_gpu(device, dtype)
    opt, params, ref = run(name, kw, dtype, rng, device=device)
    check_state(opt, params, ref, dtype, name)
    for p in params:
        assert p.is_leaf and p.requires_grad and p.grad_fn is None


@pytest.mark.parametrize("name,kw", CONFIGS, ids=CONFIG_IDS)
def test_matches_torch(name, kw, rng, device):
    """On the GPU (no float64) rumus and torch (on its CPU) both run in float32."""
    torch = pytest.importorskip("torch")
    dt = wide(device)
    init = arrays(SHAPES, dt, rng)
    grads = grad_seq(SHAPES, dt, rng)
    tparams = [torch.tensor(a, requires_grad=True) for a in init]
    topt = getattr(torch.optim, name)(tparams, **kw)
    ref = Ref(name, [(init, kw)])
    params = [dleaf(a, dt, device) for a in init]
    opt = opt_cls(name)(params, **kw)
    for gs in grads:
        for tp, g in zip(tparams, gs):
            tp.grad = torch.from_numpy(g.copy())
        topt.step()
        ref.step([gs])
        set_grads(params, gs)
        opt.step()
    # The NumPy reference itself must agree with PyTorch.
    for tp, (p, _) in zip(tparams, ref.flat()):
        np.testing.assert_allclose(p, tp.detach().numpy(), **tol(name, dt))
    for i, (p, tp) in enumerate(zip(params, tparams)):
        np.testing.assert_allclose(
            val(p), tp.detach().numpy(), **tol(name, dt), err_msg=f"param {i}"
        )
        tst, st = topt.state[tp], opt.state.get(p, {})
        assert set(st) == set(tst)
        for k, tv in tst.items():
            got = st[k]
            assert got.dtype == getattr(rumus, str(tv.dtype).removeprefix("torch.")), k
            assert dev_of(got) == device, k
            np.testing.assert_allclose(
                val(got),
                tv.numpy(),
                rtol=1e-6 if k == "mu_product" else tol(name, dt)["rtol"],
                atol=tol(name, dt)["atol"],
                err_msg=f"param {i}, state[{k!r}]",
            )
    # Group options are PyTorch's names and values (rumus may lack torch-only
    # ones like foreach), so state_dicts mean the same thing in both.
    sd, tsd = opt.state_dict(), topt.state_dict()
    group, tgroup = sd["param_groups"][0], tsd["param_groups"][0]
    assert set(group) <= set(tgroup)
    for k in group:
        if k != "params":
            assert group[k] == tgroup[k], f"group[{k!r}]: {group[k]!r} != torch's {tgroup[k]!r}"
    assert sd["param_groups"][0]["params"] == tsd["param_groups"][0]["params"]
    assert sorted(sd["state"]) == sorted(tsd["state"])


@pytest.mark.parametrize("name", NAMES)
def test_two_param_groups(name, rng, device):
    kw = RICH[name]
    lr = kw["lr"]
    dt = wide(device)
    init = arrays(SHAPES, dt, rng)
    params = [dleaf(a, dt, device) for a in init]
    g1 = dict(lr=3 * lr, weight_decay=0.2)
    opt = opt_cls(name)([{"params": params[:2]}, {"params": params[2:], **g1}], **kw)
    assert [g["lr"] for g in opt.param_groups] == [lr, 3 * lr]
    assert opt.param_groups[1]["weight_decay"] == 0.2
    # Options a group does not set come from the constructor's arguments.
    for k in kw:
        if k not in g1:
            assert opt.param_groups[1][k] == kw[k], k
    ref = Ref(name, [(init[:2], kw), (init[2:], {**kw, **g1})])
    for gs in grad_seq(SHAPES, dt, rng):
        set_grads(params, gs)
        opt.step()
        ref.step(split(gs, [2, 1]))
        check_params(params, ref, dt, name)
    check_state(opt, params, ref, dt, name)


@pytest.mark.parametrize("name", NAMES)
def test_none_grad_is_skipped(name, rng, device):
    """A parameter without a gradient is left alone (no weight decay, no state);
    one with a gradient on every other step only counts those steps."""
    kw = {**RICH[name], "weight_decay": 0.1}
    dt = wide(device)
    init = arrays(SHAPES, dt, rng)
    params = [dleaf(a, dt, device) for a in init]
    opt = opt_cls(name)(params, **kw)
    ref = Ref(name, [(init, kw)])
    for i, (g0, _, g2) in enumerate(grad_seq(SHAPES, dt, rng)):
        gs = [g0, None, g2 if i % 2 == 0 else None]
        set_grads(params, gs)
        opt.step()
        ref.step([gs])
        check_params(params, ref, dt, name)
    np.testing.assert_array_equal(val(params[1]), init[1])
    check_state(opt, params, ref, dt, name)
    if name != "SGD":
        assert opt.state[params[2]]["step"].item() == STEPS // 2


@pytest.mark.parametrize("name", NAMES)
def test_scalar_and_empty_params(name, rng, device):
    run(name, RICH[name], wide(device), rng, steps=4, shapes=[(), (0,), (1,)], device=device)


@pytest.mark.parametrize("name", NAMES)
def test_noncontiguous_grad(name, rng, device):
    """Transposed, strided and expanded (stride 0) gradients."""
    kw = RICH[name]
    dt = wide(device)
    a = rng.uniform(-1, 1, (3, 4)).astype(dt)
    p = dleaf(a, dt, device)
    opt = opt_cls(name)([p], **kw)
    ref = Ref(name, [([a], kw)])
    for i, (g,) in enumerate(grad_seq([(3, 4)], dt, rng, steps=6)):
        _, p.grad, g = noncontig(g, device=device)[i % 3]
        assert not p.grad.is_contiguous()
        opt.step()
        ref.step([[g]])
        check_params([p], ref, dt, name)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", NAMES)
def test_large_params(name, dtype, rng, device):
    """Sizes past any parallel/vector chunking (and GPU workgroups), with odd tails."""
    skip_on_gpu(device, dtype)
    run(name, RICH[name], dtype, rng, steps=3, shapes=[(100_003,), (257, 129)], device=device)


@pytest.mark.parametrize("name", NAMES)
def test_mixed_dtypes_in_one_group(name, rng, device):
    skip_on_gpu(device, "float64")
    kw = RICH[name]
    a32, a64 = arrays([(7,)], "float32", rng)[0], arrays([(2, 3)], "float64", rng)[0]
    p32, p64 = leaf(a32, "float32"), leaf(a64)
    opt = opt_cls(name)([p32, p64], **kw)
    r32, r64 = Ref(name, [([a32], kw)]), Ref(name, [([a64], kw)])
    for _ in range(4):
        g32, g64 = rng.standard_normal(7).astype(np.float32), rng.standard_normal((2, 3))
        set_grads([p32, p64], [g32, g64])
        opt.step()
        r32.step([[g32]])
        r64.step([[g64]])
        check_params([p32], r32, "float32", name)
        check_params([p64], r64, "float64", name)
    check_state(opt, [p32], r32, "float32", name)
    check_state(opt, [p64], r64, "float64", name)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_half_params_raise_clearly(name, dtype, device):
    """The fused steps are float32/float64 only: half parameters raise (PyTorch
    would update them) instead of being silently mishandled."""
    skip_on_gpu(device, dtype)
    p = tensor(np.ones(4, np.float32), dtype).requires_grad_()
    opt = opt_cls(name)([p], lr=0.1)
    p.grad = tensor(np.ones(4, np.float32), dtype)
    with pytest.raises(RuntimeError, match="float32 or float64"):
        opt.step()
    np.testing.assert_array_equal(val(p), np.ones(4, np.float32))


def test_hyperparameters_as_ints_lists_and_numpy_scalars(rng, device):
    cases = [
        ("SGD", dict(lr=1, momentum=1, dampening=0)),
        ("Adam", dict(lr=np.float64(0.05), betas=[0.8, 0.9], eps=0)),
        ("RMSprop", dict(lr=np.float32(0.01), alpha=0, momentum=0)),
    ]
    for name, kw in cases:
        run(name, kw, wide(device), rng, steps=3, device=device)


@pytest.mark.parametrize("name", NAMES)
def test_noncontiguous_param(name, rng, device):
    """A transposed leaf parameter (PyTorch allows it) is updated in place
    through its strides; the storage it views sees the update."""
    kw = RICH[name]
    dt = wide(device)
    a = rng.uniform(-1, 1, (3, 4)).astype(dt)
    base = tensor(np.ascontiguousarray(a.T), device=device)
    p = base.t()
    p.requires_grad_()
    assert not p.is_contiguous() and p.is_leaf
    opt = opt_cls(name)([p], **kw)
    ref = Ref(name, [([a], kw)])
    for (g,) in grad_seq([(3, 4)], dt, rng, steps=5):
        p.grad = tensor(np.ascontiguousarray(g.T), device=device).t()
        opt.step()
        ref.step([[g]])
        check_params([p], ref, dt, name)
    np.testing.assert_allclose(val(base), ref.groups[0][0][0].T, **tol(name, dt))


@pytest.mark.parametrize("name", NAMES)
def test_update_is_in_place(name, rng, device):
    """Other references to the parameter (a detached alias) see each step."""
    p = dleaf(rng.uniform(-1, 1, (4,)), wide(device), device)
    alias = p.detach()
    opt = opt_cls(name)([p], **RICH[name])
    p.grad = tensor(rng.standard_normal(4), wide(device), device)
    before = val(p)
    opt.step()
    assert not np.allclose(val(p), before)
    np.testing.assert_array_equal(val(alias), val(p))


@pytest.mark.parametrize("name", NAMES)
def test_lr_and_options_changed_between_steps(name, rng, device):
    kw = RICH[name]
    dt = wide(device)
    init = arrays(SHAPES, dt, rng)
    params = [dleaf(a, dt, device) for a in init]
    opt = opt_cls(name)(params, **kw)
    ref = Ref(name, [(init, kw)])
    for i, gs in enumerate(grad_seq(SHAPES, dt, rng, steps=8)):
        if i == 3:
            for g in (opt.param_groups[0], ref.groups[0][1]):
                g["lr"] = kw["lr"] * 0.25
        if i == 5:
            for g in (opt.param_groups[0], ref.groups[0][1]):
                g["weight_decay"] = 0.3
                g["maximize"] = True
        set_grads(params, gs)
        opt.step()
        ref.step([gs])
        check_params(params, ref, dt, name)


@pytest.mark.parametrize("name", NAMES)
def test_lr_zero_leaves_params(name, rng, device):
    p = dleaf(rng.uniform(-1, 1, (6,)), wide(device), device)
    before = val(p)
    opt = opt_cls(name)([p], **{**RICH[name], "lr": 0.0, "weight_decay": 0.1})
    for _ in range(3):
        p.grad = tensor(rng.standard_normal(6), wide(device), device)
        opt.step()
    np.testing.assert_array_equal(val(p), before)


# --------------------------------------------------------------------------
# state_dict
# --------------------------------------------------------------------------


def two_group_opt(name, init, kw, device="cpu"):
    params = [dleaf(a, wide(device), device) for a in init]
    return opt_cls(name)(
        [{"params": params[:2]}, {"params": params[2:], "lr": 2 * kw["lr"]}], **kw
    ), params


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_format(name, rng, device):
    kw = RICH[name]
    init = arrays(SHAPES, wide(device), rng)
    opt, params = two_group_opt(name, init, kw, device)
    for gs in grad_seq(SHAPES, wide(device), rng, steps=3):
        set_grads(params, gs)
        opt.step()
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert [g["lr"] for g in sd["param_groups"]] == [kw["lr"], 2 * kw["lr"]]
    for g in sd["param_groups"]:
        for k in DEFAULTS[name]:
            assert k in g, k
    assert sorted(sd["state"]) == [0, 1, 2]
    for i, p in enumerate(params):
        assert set(sd["state"][i]) == set(opt.state[p])
        if name != "SGD":
            step = sd["state"][i]["step"]
            assert (
                isinstance(step, rumus.Tensor)
                and step.dtype == rumus.float32
                and tuple(step.shape) == ()
            )
            assert step.item() == 3
        for k, v in sd["state"][i].items():
            assert dev_of(v) == device, k
    # The optimizer's own groups keep the tensors; the state_dict holds indices.
    assert opt.param_groups[0]["params"][0] is params[0]


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_round_trip(name, rng, device):
    """An optimizer loaded from a state_dict (deep-copied as a checkpoint would
    be) continues exactly like the original."""
    kw = RICH[name]
    dt = wide(device)
    init = arrays(SHAPES, dt, rng)
    grads = grad_seq(SHAPES, dt, rng, steps=10)
    opt, params = two_group_opt(name, init, kw, device)
    for gs in grads[:5]:
        set_grads(params, gs)
        opt.step()
    sd = opt.state_dict()
    # A fresh optimizer with another lr: loading restores the saved options too.
    params2 = [dleaf(val(p), dt, device) for p in params]
    opt2 = opt_cls(name)([{"params": params2[:2]}, {"params": params2[2:]}], **{**kw, "lr": 123.0})
    opt2.load_state_dict(copy.deepcopy(sd))
    assert [g["lr"] for g in opt2.param_groups] == [kw["lr"], 2 * kw["lr"]]
    assert opt2.param_groups[0]["params"][0] is params2[0]
    # A third one loads the live state_dict. rumus copies the state on load;
    # PyTorch would alias state tensors whose dtype already matches (step
    # included), so two optimizers would advance each other's state.
    params3 = [dleaf(val(p), dt, device) for p in params]
    opt3 = opt_cls(name)([{"params": params3[:2]}, {"params": params3[2:]}], **kw)
    opt3.load_state_dict(sd)
    for o, ps in ((opt, params), (opt2, params2), (opt3, params3)):
        for gs in grads[5:]:
            set_grads(ps, gs)
            o.step()
    for p, p2, p3 in zip(params, params2, params3):
        np.testing.assert_array_equal(val(p2), val(p))
        np.testing.assert_array_equal(val(p3), val(p))
    for p, p3 in zip(params, params3):
        for k, v in opt.state[p].items():
            np.testing.assert_array_equal(val(opt3.state[p3][k]), val(v), err_msg=k)
            assert dev_of(opt3.state[p3][k]) == device, k


def test_adamw_state_dict_keeps_decoupled_decay(rng, device):
    """AdamW is Adam with decoupled_weight_decay=True (PyTorch's group says so),
    so its state_dict loaded into Adam keeps AdamW's decay."""
    dt = wide(device)
    init = arrays(SHAPES, dt, rng)
    grads = grad_seq(SHAPES, dt, rng, steps=6)
    params = [dleaf(a, dt, device) for a in init]
    opt = rumus.optim.AdamW(params, lr=0.05, weight_decay=0.3)
    for gs in grads[:3]:
        set_grads(params, gs)
        opt.step()
    params2 = [dleaf(val(p), dt, device) for p in params]
    opt2 = rumus.optim.Adam(params2)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    for o, ps in ((opt, params), (opt2, params2)):
        for gs in grads[3:]:
            set_grads(ps, gs)
            o.step()
    for p, p2 in zip(params, params2):
        np.testing.assert_allclose(val(p2), val(p), **dtol(device, rtol=1e-12, atol=1e-14))


def test_signatures_match_torch():
    import inspect

    torch = pytest.importorskip("torch")
    for name in NAMES:
        ours = [
            (p.name, p.kind, p.default)
            for p in inspect.signature(opt_cls(name)).parameters.values()
        ]
        theirs = [
            (p.name, p.kind, p.default)
            for p in inspect.signature(getattr(torch.optim, name)).parameters.values()
        ]
        assert ours == theirs, name


def test_state_dict_of_fresh_optimizer(device):
    p = dleaf(np.ones(3), wide(device), device)
    sd = rumus.optim.Adam([p], lr=0.1).state_dict()
    assert sd["state"] == {}
    assert sd["param_groups"][0]["params"] == [0] and sd["param_groups"][0]["lr"] == 0.1


def test_load_state_dict_casts_state_to_param_dtype(rng, device):
    """On the GPU run the float64 state comes from a CPU optimizer and is loaded
    for a float32 GPU parameter: cast and moved to the parameter's device (as
    PyTorch does), so that the next step runs."""
    p64 = leaf(rng.uniform(-1, 1, (4,)))
    opt = rumus.optim.Adam([p64], lr=0.1)
    p64.grad = tensor(rng.standard_normal(4))
    opt.step()
    p32 = dleaf(val(p64), "float32", device)
    opt32 = rumus.optim.Adam([p32], lr=0.1)
    opt32.load_state_dict(opt.state_dict())
    st = opt32.state[p32]
    assert st["exp_avg"].dtype == rumus.float32 and st["exp_avg_sq"].dtype == rumus.float32
    assert st["step"].dtype == rumus.float32 and st["step"].item() == 1
    np.testing.assert_allclose(val(st["exp_avg"]), val(opt.state[p64]["exp_avg"]), rtol=1e-6)
    assert all(dev_of(v) == device for v in st.values()), {k: v.device for k, v in st.items()}
    p32.grad = tensor(np.ones(4, np.float32), device=device)
    opt32.step()
    assert st["step"].item() == 2


def test_load_state_dict_errors(device):
    ps = [dleaf(np.ones(2), wide(device), device) for _ in range(3)]
    one_group = rumus.optim.SGD(ps, lr=0.1).state_dict()
    two_groups = rumus.optim.SGD([{"params": ps[:2]}, {"params": ps[2:]}], lr=0.1)
    with pytest.raises(
        ValueError, match="loaded state dict has a different number of parameter groups"
    ):
        two_groups.load_state_dict(one_group)
    other_split = rumus.optim.SGD([{"params": ps[:1]}, {"params": ps[1:]}], lr=0.1).state_dict()
    with pytest.raises(
        ValueError,
        match="loaded state dict contains a parameter group that doesn't match "
        "the size of optimizer's group",
    ):
        two_groups.load_state_dict(other_split)


def test_state_dict_loads_into_torch(device):
    """The format is PyTorch's: torch.optim accepts a rumus state_dict once its
    tensors are converted (float32 on the GPU run, torch on its CPU)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    dt = wide(device)
    init = arrays(SHAPES, dt, rng)
    grads = grad_seq(SHAPES, dt, rng, steps=6)
    params = [dleaf(a, dt, device) for a in init]
    opt = rumus.optim.Adam(params, lr=0.05, amsgrad=True)
    for gs in grads[:3]:
        set_grads(params, gs)
        opt.step()
    sd = opt.state_dict()
    tsd = {
        "state": {
            i: {k: torch.from_numpy(val(v).copy()) for k, v in s.items()}
            for i, s in sd["state"].items()
        },
        "param_groups": copy.deepcopy(sd["param_groups"]),
    }
    tparams = [torch.tensor(val(p), requires_grad=True) for p in params]
    topt = torch.optim.Adam(tparams, lr=0.05, amsgrad=True)
    topt.load_state_dict(tsd)
    for gs in grads[3:]:
        set_grads(params, gs)
        opt.step()
        for tp, g in zip(tparams, gs):
            tp.grad = torch.from_numpy(g.copy())
        topt.step()
    for p, tp in zip(params, tparams):
        np.testing.assert_allclose(
            val(p), tp.detach().numpy(), **dtol(device, rtol=1e-10, atol=1e-12)
        )


# --------------------------------------------------------------------------
# Optimizer base: zero_grad, param groups, closures, construction
# --------------------------------------------------------------------------


def test_zero_grad(device):
    dt = wide(device)
    a, b = dleaf(np.ones(3), dt, device), dleaf(np.ones((2, 2)), dt, device)
    opt = rumus.optim.SGD([a, b], lr=0.1)
    a.grad = tensor(np.full(3, 2.0), dt, device)
    opt.zero_grad()  # set_to_none=True by default
    assert a.grad is None and b.grad is None
    a.grad = tensor(np.full(3, 2.0), dt, device)
    opt.zero_grad(set_to_none=False)
    assert b.grad is None  # a missing grad is not created
    assert_close(a.grad, np.zeros(3, dt))
    assert not a.grad.requires_grad and dev_of(a.grad) == device
    # Zeroed in place: the grad accumulates from zero on the next backward.
    (a * tensor(np.array([1.0, 2.0, 3.0]), dt, device)).sum().backward()
    assert_close(a.grad, np.array([1.0, 2.0, 3.0], dt))
    opt.zero_grad(True)
    assert a.grad is None


def test_zero_grad_after_backward_with_graph(device):
    """zero_grad(set_to_none=False) on a grad produced with create_graph=True
    detaches it first (PyTorch does the same)."""
    x = dleaf(np.array([1.0, 2.0]), wide(device), device)
    opt = rumus.optim.SGD([x], lr=0.1)
    (x * x).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    opt.zero_grad(set_to_none=False)
    assert_close(x.grad, np.zeros(2, wide(device)))
    assert not x.grad.requires_grad and x.grad.grad_fn is None


def test_add_param_group(rng, device):
    dt = wide(device)
    a, b = dleaf(rng.uniform(-1, 1, 3), dt, device), dleaf(rng.uniform(-1, 1, 2), dt, device)
    a0, b0 = val(a), val(b)
    opt = rumus.optim.SGD([a], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": b, "lr": 0.5})  # a lone tensor is accepted
    assert len(opt.param_groups) == 2
    g = opt.param_groups[1]
    assert len(g["params"]) == 1 and g["params"][0] is b
    assert g["lr"] == 0.5 and g["momentum"] == 0.9 and g["nesterov"] is False
    a.grad, b.grad = tensor(np.ones(3), dt, device), tensor(np.ones(2), dt, device)
    opt.step()
    np.testing.assert_allclose(val(a), a0.astype(np.float64) - 0.1, **dtol(device, rtol=1e-12))
    np.testing.assert_allclose(val(b), b0.astype(np.float64) - 0.5, **dtol(device, rtol=1e-12))
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        rumus.optim.Adam([{"params": [a, b]}, {"params": [b]}])
    assert len(opt.param_groups) == 2
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([dleaf(np.ones(1), dt, device)])
    with pytest.raises(
        TypeError, match="optimizer parameters need to be organized in ordered collections"
    ):
        opt.add_param_group({"params": {dleaf(np.ones(1), dt, device)}})


def test_add_param_group_then_state_dict(rng, device):
    dt = wide(device)
    a, b = dleaf(rng.uniform(-1, 1, 3), dt, device), dleaf(rng.uniform(-1, 1, 2), dt, device)
    opt = rumus.optim.Adam([a], lr=0.1)
    opt.add_param_group({"params": [b], "lr": 0.01})
    a.grad, b.grad = tensor(np.ones(3), dt, device), tensor(np.ones(2), dt, device)
    opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sorted(sd["state"]) == [0, 1]


def test_constructor_errors(device):
    p = dleaf(np.ones(2), wide(device), device)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        rumus.optim.SGD([], lr=0.1)
    with pytest.raises(
        TypeError,
        match="params argument given to the optimizer should be an iterable of Tensors or dicts",
    ):
        rumus.optim.SGD(p, lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        rumus.optim.SGD([p, 3.0], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        rumus.optim.SGD([p * 2], lr=0.1)


def test_params_as_set_warns(device):
    """PyTorch warns (FutureWarning) but accepts a set in the constructor."""
    p = dleaf(np.ones(2), wide(device), device)
    with pytest.warns(
        FutureWarning, match="optimizer parameters need to be organized in ordered collections"
    ):
        opt = rumus.optim.SGD({p}, lr=0.1)
    assert opt.param_groups[0]["params"][0] is p


def test_duplicate_param_in_group_warns(device):
    p = dleaf(np.ones(2), wide(device), device)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        rumus.optim.SGD([p, p], lr=0.1)


def test_params_as_generator(rng, device):
    dt = wide(device)
    init = arrays(SHAPES, dt, rng)
    params = [dleaf(a, dt, device) for a in init]
    opt = rumus.optim.Adam((p for p in params), lr=0.05)
    assert isinstance(opt.param_groups[0]["params"], list)
    assert all(a is b for a, b in zip(opt.param_groups[0]["params"], params))
    assert len(opt.param_groups[0]["params"]) == 3
    # ...also inside a group dict, and as a tuple.
    opt2 = rumus.optim.SGD(
        [{"params": (p for p in params[:2])}, {"params": tuple(params[2:]), "lr": 1.0}], lr=0.1
    )
    assert [len(g["params"]) for g in opt2.param_groups] == [2, 1]
    ref = Ref("Adam", [(init, dict(lr=0.05))])
    for gs in grad_seq(SHAPES, dt, rng, steps=3):
        set_grads(params, gs)
        opt.step()
        ref.step([gs])
    check_params(params, ref, dt, "Adam")


def test_custom_optimizer_subclass(rng, device):
    """The base class serves user-written optimizers as in PyTorch: `required`
    defaults, param groups, arbitrary (non-tensor) state, state_dict."""
    from rumus.optim.optimizer import required

    class SignSGD(rumus.optim.Optimizer):
        def __init__(self, params, lr=required, scale=1.0):
            super().__init__(params, dict(lr=lr, scale=scale))

        @rumus.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        st = self.state[p]
                        st["n"] = st.get("n", 0) + 1
                        p.sub_(p.grad.sign() * (group["lr"] * group["scale"]))

    dt = wide(device)
    a = rng.uniform(-1, 1, 4).astype(dt)
    p = dleaf(a, dt, device)
    with pytest.raises(
        ValueError,
        match="parameter group didn't specify a value of required optimization parameter lr",
    ):
        SignSGD([p])
    opt = SignSGD([{"params": [p], "scale": 2.0}], lr=0.1)
    g = rng.standard_normal(4).astype(dt)
    p.grad = tensor(g, device=device)
    opt.step()
    opt.step()
    np.testing.assert_allclose(
        val(p), a.astype(np.float64) - 0.4 * np.sign(g), **dtol(device, rtol=1e-12)
    )
    sd = opt.state_dict()
    assert sd == {
        "state": {0: {"n": 2}},
        "param_groups": [{"lr": 0.1, "scale": 2.0, "params": [0]}],
    }
    opt2 = SignSGD([dleaf(a, dt, device)], lr=0.5)
    opt2.load_state_dict(sd)
    q = opt2.param_groups[0]["params"][0]
    assert opt2.state[q] == {"n": 2} and opt2.param_groups[0]["scale"] == 2.0
    text = repr(opt)
    assert text.startswith("SignSGD (") and "Parameter Group 0" in text and "lr: 0.1" in text


def msg(text):
    return re.escape(text)


INVALID = [
    ("SGD", dict(lr=-1), "Invalid learning rate: -1"),
    ("SGD", dict(lr=0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
    ("SGD", dict(lr=0.1, weight_decay=-1e-3), "Invalid weight_decay value: -0.001"),
    (
        "SGD",
        dict(lr=0.1, nesterov=True),
        "Nesterov momentum requires a momentum and zero dampening",
    ),
    (
        "SGD",
        dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
        "Nesterov momentum requires a momentum and zero dampening",
    ),
    ("RMSprop", dict(lr=-0.5), "Invalid learning rate: -0.5"),
    ("RMSprop", dict(eps=-1e-8), "Invalid epsilon value: -1e-08"),
    ("RMSprop", dict(momentum=-1), "Invalid momentum value: -1"),
    ("RMSprop", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("RMSprop", dict(alpha=-0.1), "Invalid alpha value: -0.1"),
    ("Adagrad", dict(lr=-1), "Invalid learning rate: -1"),
    ("Adagrad", dict(lr_decay=-1), "Invalid lr_decay value: -1"),
    ("Adagrad", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("Adagrad", dict(initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
    ("Adagrad", dict(eps=-1), "Invalid epsilon value: -1"),
    ("NAdam", dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
] + [
    case
    for name in ("Adam", "AdamW", "Adamax", "NAdam", "RAdam")
    for case in [
        (name, dict(lr=-1), "Invalid learning rate: -1"),
        (name, dict(eps=-1.0), "Invalid epsilon value: -1.0"),
        (name, dict(betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
        (name, dict(betas=(-0.1, 0.999)), "Invalid beta parameter at index 0: -0.1"),
        (name, dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
        (name, dict(betas=(0.9, -0.5)), "Invalid beta parameter at index 1: -0.5"),
        (name, dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ]
]


@pytest.mark.parametrize("name,kw,message", INVALID, ids=[f"{n}-{m}" for n, _, m in INVALID])
def test_invalid_hyperparameters(name, kw, message, device):
    with pytest.raises(ValueError, match=msg(message)):
        opt_cls(name)([dleaf(np.ones(2), wide(device), device)], **kw)


@pytest.mark.parametrize("name", NAMES)
def test_boundary_hyperparameters_are_valid(name, device):
    """lr=0, eps=0, beta=0 are allowed (PyTorch's checks are inclusive at 0)."""
    kw = dict(lr=0.0)
    if name not in ("SGD",):
        kw["eps"] = 0.0
    if "betas" in DEFAULTS[name]:
        kw["betas"] = (0.0, 0.0)
    opt_cls(name)([dleaf(np.ones(2), wide(device), device)], **kw)


@pytest.mark.parametrize("name", NAMES)
def test_closure(name, rng, device):
    """step(closure) evaluates the closure once with grad enabled (even inside
    no_grad), updates with the gradients it produced and returns its loss."""
    kw = RICH[name]
    dt = wide(device)
    a = rng.uniform(-1, 1, (4,)).astype(dt)
    p = dleaf(a, dt, device)
    opt = opt_cls(name)([p], **kw)
    ref = Ref(name, [([a], kw)])
    calls = []

    def closure():
        calls.append(rumus.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p * p).sum()
        loss.backward()
        return loss

    for i in range(3):
        before = val(p)
        if i == 2:
            with rumus.no_grad():
                loss = opt.step(closure)
        else:
            loss = opt.step(closure)
        assert isinstance(loss, rumus.Tensor)
        np.testing.assert_allclose(
            loss.item(), np.sum(before.astype(np.float64) ** 3), **dtol(device, rtol=1e-12)
        )
        ref.step([[3 * ref.groups[0][0][0] ** 2]])
        check_params([p], ref, dt, name)
    assert calls == [True, True, True]


# --------------------------------------------------------------------------
# training a small model
# --------------------------------------------------------------------------

TRAIN_LR = {
    "SGD": dict(lr=0.1, momentum=0.9),
    "Adam": dict(lr=0.03),
    "AdamW": dict(lr=0.03),
    "RMSprop": dict(lr=0.01),
    "Adagrad": dict(lr=0.3),
    "Adamax": dict(lr=0.05),
    "NAdam": dict(lr=0.03),
    "RAdam": dict(lr=0.03),
}


@pytest.mark.parametrize("name", NAMES)
def test_trains_small_mlp(name, device):
    """A 2-16-1 tanh MLP fitted to a smooth 2-D function with full-batch steps:
    the loss falls well below its start (float32, autograd grads)."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (64, 2)).astype(np.float32)
    y = (np.sin(2 * x[:, :1]) + x[:, 1:] ** 2).astype(np.float32)
    X, Y = tensor(x, device=device), tensor(y, device=device)
    params = [
        dleaf(rng.normal(0, 0.5, (2, 16)), "float32", device),
        dleaf(np.zeros(16), "float32", device),
        dleaf(rng.normal(0, 0.25, (16, 1)), "float32", device),
        dleaf(np.zeros(1), "float32", device),
    ]
    w1, b1, w2, b2 = params
    opt = opt_cls(name)(params, **TRAIN_LR[name])

    def loss_fn():
        return (((X @ w1 + b1).tanh() @ w2 + b2 - Y) ** 2).mean()

    first = loss_fn().item()
    for _ in range(150):
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()
    last = loss_fn().item()
    assert last < 0.1 * first, (first, last)
    assert all(p.dtype == rumus.float32 and p.is_leaf and dev_of(p) == device for p in params)
