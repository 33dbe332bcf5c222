"""shaders/optim.wgsl through wgpu-py against NumPy re-implementations of
PyTorch's update formulas (torch.optim, single-tensor forms).

Each test runs several optimizer steps. Every step is checked from the same
inputs the GPU saw (the GPU's previous outputs), so float16 rounding does not
compound; the step counter and NAdam's mu_product stay in their GPU buffers,
advanced by the `advance*` entries as the Rust side does.
"""

import numpy as np
import pytest

from .conftest import groups_1d

F = "optim.wgsl"

# Binding order of each update entry (before the params): grad, step scalars,
# then the written tensors (param, state s0..s2 in the rule's order).
ORDER = {
    "sgd": ["g", "p"],
    "sgd_momentum": ["g", "p", "s0"],
    "rmsprop": ["g", "p", "s0"],
    "rmsprop_momentum": ["g", "p", "s0", "s1"],
    "rmsprop_centered": ["g", "p", "s0", "s1"],
    "rmsprop_centered_momentum": ["g", "p", "s0", "s1", "s2"],
    "adam": ["g", "step", "p", "s0", "s1"],
    "adam_amsgrad": ["g", "step", "p", "s0", "s1", "s2"],
    "adagrad": ["g", "step", "p", "s0"],
    "adamax": ["g", "step", "p", "s0", "s1"],
    "nadam": ["g", "step", "mu", "p", "s0", "s1"],
    "radam": ["g", "step", "p", "s0", "s1"],
}
# Element offsets of each tensor in its buffer (views), padded with sentinels.
OFF = {"g": 1, "p": 2, "s0": 3, "s1": 0, "s2": 5, "step": 1, "mu": 2}
PAD = 7
SENTINEL = 12.5


def params(
    n,
    lr=0.0,
    beta1=0.0,
    beta2=0.0,
    eps=0.0,
    wd=0.0,
    extra=0.0,
    maximize=False,
    bit1=False,
    fresh=False,
):
    """The 18-word Opt struct; omb1/omb2 = 1 - beta computed in float64; eta_off (ASGD's
    eta scalar) unused by the rules tested here."""
    flags = int(maximize) | (int(bit1) << 1) | (int(fresh) << 2)
    return [
        n,
        OFF["g"],
        OFF["p"],
        OFF["s0"],
        OFF["s1"],
        OFF["s2"],
        OFF["step"],
        OFF["mu"],
        float(lr),
        float(beta1),
        float(beta2),
        float(1.0 - beta1),
        float(1.0 - beta2),
        float(eps),
        float(wd),
        float(extra),
        flags,
        0,
    ]


def embed(name, x, np_dtype):
    buf = np.full(x.size + PAD, SENTINEL, dtype=np_dtype)
    buf[OFF[name] : OFF[name] + x.size] = x
    return buf


def view(name, buf, n):
    return buf[OFF[name] : OFF[name] + n]


def check_pad(name, buf, n):
    rest = np.concatenate([buf[: OFF[name]], buf[OFF[name] + n :]])
    assert np.all(rest == SENTINEL), f"{name}: wrote outside its view"


def close(got, ref, dtype, what):
    got = got.astype(np.float64)
    scale = (
        max(1.0, float(np.max(np.abs(ref)))) if what == "p" else float(np.max(np.abs(ref))) or 1.0
    )
    if dtype == "f32":
        np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-6 * scale, err_msg=what)
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-2, atol=2e-3 * scale, err_msg=what)


# ---- PyTorch's update formulas (float64) ----


def ref_sgd(p, g, st, t, h):
    h = dict(dict(momentum=0.0, dampening=0.0, wd=0.0, nesterov=False, maximize=False), **h)
    lr, mom, damp, wd, nest, maxi = (
        h["lr"],
        h["momentum"],
        h["dampening"],
        h["wd"],
        h["nesterov"],
        h["maximize"],
    )
    d = -g if maxi else g.copy()
    if wd:
        d = d + wd * p
    if mom:
        buf = d.copy() if t == 1 else mom * st[0] + (1 - damp) * d
        st = [buf]
        d = d + mom * buf if nest else buf
    return p - lr * d, st


def ref_adam(p, g, st, t, h):
    lr, (b1, b2), eps, wd = h["lr"], h["betas"], h["eps"], h["wd"]
    g = -g if h["maximize"] else g
    if h["decoupled"]:
        p = p * (1 - lr * wd)
    elif wd:
        g = g + wd * p
    m = st[0] + (g - st[0]) * (1 - b1)
    v = st[1] * b2 + (1 - b2) * g * g
    bc1, bc2 = 1 - b1**t, 1 - b2**t
    if h["amsgrad"]:
        vm = np.maximum(st[2], v)
        denom = np.sqrt(vm) / np.sqrt(bc2) + eps
        st = [m, v, vm]
    else:
        denom = np.sqrt(v) / np.sqrt(bc2) + eps
        st = [m, v]
    return p - lr / bc1 * m / denom, st


def ref_rmsprop(p, g, st, t, h):
    lr, alpha, eps, wd, mom, centered = (
        h["lr"],
        h["alpha"],
        h["eps"],
        h["wd"],
        h["momentum"],
        h["centered"],
    )
    g = -g if h["maximize"] else g
    if wd:
        g = g + wd * p
    sq = alpha * st[0] + (1 - alpha) * g * g
    out = [sq]
    k = 1
    buf = None
    if mom > 0:
        buf = st[k]
        k += 1
    if centered:
        ga = st[k] + (g - st[k]) * (1 - alpha)
        avg = np.sqrt(sq - ga * ga) + eps
    else:
        avg = np.sqrt(sq) + eps
    if mom > 0:
        buf = mom * buf + g / avg
        out.append(buf)
        p = p - lr * buf
    else:
        p = p - lr * g / avg
    if centered:
        out.append(ga)
    return p, out


def ref_adagrad(p, g, st, t, h):
    g = -g if h["maximize"] else g
    if h["wd"]:
        g = g + h["wd"] * p
    clr = h["lr"] / (1 + (t - 1) * h["lr_decay"])
    s = st[0] + g * g
    return p - clr * g / (np.sqrt(s) + h["eps"]), [s]


def ref_adamax(p, g, st, t, h):
    lr, (b1, b2), eps, wd = h["lr"], h["betas"], h["eps"], h["wd"]
    g = -g if h["maximize"] else g
    if wd:
        g = g + wd * p
    m = st[0] + (g - st[0]) * (1 - b1)
    u = np.maximum(st[1] * b2, np.abs(g) + eps)
    return p - lr / (1 - b1**t) * m / u, [m, u]


def nadam_mu(b1, md, t):
    return b1 * (1 - 0.5 * 0.96 ** (t * md))


def ref_nadam(p, g, st, t, h, mu_product):
    """mu_product: the advanced product as stored (float32), as PyTorch uses it."""
    lr, (b1, b2), eps, wd, md = h["lr"], h["betas"], h["eps"], h["wd"], h["momentum_decay"]
    g = -g if h["maximize"] else g
    if h["decoupled"]:
        p = p * (1 - lr * wd)
    elif wd:
        g = g + wd * p
    mu, mu_next = nadam_mu(b1, md, t), nadam_mu(b1, md, t + 1)
    m = st[0] + (g - st[0]) * (1 - b1)
    v = st[1] * b2 + (1 - b2) * g * g
    denom = np.sqrt(v / (1 - b2**t)) + eps
    p = p - lr * (1 - mu) / (1 - mu_product) * g / denom
    p = p - lr * mu_next / (1 - mu_product * mu_next) * m / denom
    return p, [m, v]


def radam_rho(b2, t):
    rho_inf = 2 / (1 - b2) - 1
    return rho_inf, rho_inf - 2 * t * b2**t / (1 - b2**t)


def ref_radam(p, g, st, t, h):
    lr, (b1, b2), eps, wd = h["lr"], h["betas"], h["eps"], h["wd"]
    g = -g if h["maximize"] else g
    if h["decoupled"]:
        p = p * (1 - lr * wd)
    elif wd:
        g = g + wd * p
    m = st[0] + (g - st[0]) * (1 - b1)
    v = st[1] * b2 + (1 - b2) * g * g
    bc1, bc2 = 1 - b1**t, 1 - b2**t
    mhat = m / bc1
    rho_inf, rho_t = radam_rho(b2, t)
    if rho_t > 5:
        rect = np.sqrt(
            (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
        )
        p = p - mhat * lr * rect * np.sqrt(bc2) / (np.sqrt(v) + eps)
    else:
        p = p - mhat * lr
    return p, [m, v]


# ---- configurations: (rule, hyperparameters) -> entry, params, state count ----


def setup(rule, h, n):
    """(entry, advance entry or None, params words, number of state tensors,
    initial state value)."""
    if rule == "sgd":
        mom = h.get("momentum", 0.0)
        entry = "sgd_momentum" if mom else "sgd"
        q = dict(
            lr=h["lr"],
            beta1=mom,
            extra=h.get("dampening", 0.0),
            wd=h.get("wd", 0.0),
            maximize=h.get("maximize", False),
            bit1=h.get("nesterov", False),
        )
        return entry, None, q, int(bool(mom)), 0.0
    if rule in ("adam", "adamw"):
        entry = "adam_amsgrad" if h["amsgrad"] else "adam"
        b1, b2 = h["betas"]
        q = dict(
            lr=h["lr"],
            beta1=b1,
            beta2=b2,
            eps=h["eps"],
            wd=h["wd"],
            maximize=h["maximize"],
            bit1=h["decoupled"],
        )
        return entry, "advance", q, 2 + h["amsgrad"], 0.0
    if rule == "rmsprop":
        entry = (
            "rmsprop"
            + ("_centered" if h["centered"] else "")
            + ("_momentum" if h["momentum"] > 0 else "")
        )
        q = dict(
            lr=h["lr"],
            beta1=h["alpha"],
            eps=h["eps"],
            wd=h["wd"],
            extra=h["momentum"],
            maximize=h["maximize"],
        )
        return entry, "advance", q, 1 + (h["momentum"] > 0) + h["centered"], 0.0
    if rule == "adagrad":
        q = dict(lr=h["lr"], eps=h["eps"], wd=h["wd"], extra=h["lr_decay"], maximize=h["maximize"])
        return "adagrad", "advance", q, 1, h["init"]
    if rule == "adamax":
        b1, b2 = h["betas"]
        q = dict(lr=h["lr"], beta1=b1, beta2=b2, eps=h["eps"], wd=h["wd"], maximize=h["maximize"])
        return "adamax", "advance", q, 2, 0.0
    if rule == "nadam":
        b1, b2 = h["betas"]
        q = dict(
            lr=h["lr"],
            beta1=b1,
            beta2=b2,
            eps=h["eps"],
            wd=h["wd"],
            extra=h["momentum_decay"],
            maximize=h["maximize"],
            bit1=h["decoupled"],
        )
        return "nadam", "advance_nadam", q, 2, 0.0
    if rule == "radam":
        b1, b2 = h["betas"]
        q = dict(
            lr=h["lr"],
            beta1=b1,
            beta2=b2,
            eps=h["eps"],
            wd=h["wd"],
            maximize=h["maximize"],
            bit1=h["decoupled"],
        )
        return "radam", "advance", q, 2, 0.0
    raise ValueError(rule)


REF = {
    "sgd": ref_sgd,
    "adam": ref_adam,
    "adamw": ref_adam,
    "rmsprop": ref_rmsprop,
    "adagrad": ref_adagrad,
    "adamax": ref_adamax,
    "radam": ref_radam,
}

ADAM = dict(
    lr=1e-2, betas=(0.9, 0.999), eps=1e-8, wd=0.0, amsgrad=False, maximize=False, decoupled=False
)
RMS = dict(lr=1e-2, alpha=0.99, eps=1e-8, wd=0.0, momentum=0.0, centered=False, maximize=False)
NADAM = dict(
    lr=2e-2,
    betas=(0.9, 0.999),
    eps=1e-8,
    wd=0.0,
    momentum_decay=4e-3,
    decoupled=False,
    maximize=False,
)
RADAM = dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, wd=0.0, decoupled=False, maximize=False)

CASES = [
    ("sgd", dict(lr=0.1)),
    ("sgd", dict(lr=0.1, wd=0.1, maximize=True)),
    ("sgd", dict(lr=0.1, momentum=0.9, dampening=0.1)),
    ("sgd", dict(lr=0.05, momentum=0.9, nesterov=True, wd=0.01)),
    ("sgd", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("adam", ADAM),
    ("adam", dict(ADAM, wd=0.1)),
    ("adam", dict(ADAM, amsgrad=True)),
    ("adam", dict(ADAM, betas=(0.0, 0.99), eps=1e-3)),
    ("adamw", dict(ADAM, wd=0.05, decoupled=True, amsgrad=True, maximize=True)),
    ("adamw", dict(ADAM, betas=(0.8, 0.9999), wd=0.01, decoupled=True)),
    ("rmsprop", RMS),
    ("rmsprop", dict(RMS, momentum=0.9)),
    ("rmsprop", dict(RMS, centered=True, alpha=0.9)),
    ("rmsprop", dict(RMS, centered=True, momentum=0.5, wd=0.1, maximize=True)),
    ("adagrad", dict(lr=0.1, lr_decay=0.01, wd=0.1, eps=1e-10, init=0.1, maximize=False)),
    ("adagrad", dict(lr=0.1, lr_decay=0.0, wd=0.0, eps=1e-10, init=0.0, maximize=True)),
    ("adamax", dict(lr=2e-2, betas=(0.9, 0.999), eps=1e-8, wd=0.0, maximize=False)),
    ("adamax", dict(lr=2e-2, betas=(0.5, 0.9), eps=1e-8, wd=0.1, maximize=True)),
    ("nadam", NADAM),
    ("nadam", dict(NADAM, wd=0.1)),
    ("nadam", dict(NADAM, wd=0.05, decoupled=True, maximize=True, momentum_decay=0.1)),
    ("radam", RADAM),
    ("radam", dict(RADAM, betas=(0.9, 0.9))),
    ("radam", dict(RADAM, betas=(0.8, 0.9999), wd=0.1, decoupled=True)),
    ("radam", dict(RADAM, wd=0.1, maximize=True)),
]


def dtypes(gpu):
    return ["f32", "f16"] if gpu.has_f16 else ["f32"]


def run_rule(gpu, rule, h, dtype, n=1000, steps=7, grid=None, seed=0):
    npd = np.float32 if dtype == "f32" else np.float16
    entry, adv, qd, nst, init = setup(rule, h, n)
    rng = np.random.default_rng(seed)
    p = rng.uniform(-1, 1, n).astype(npd)
    state = [np.full(n, init, npd) for _ in range(nst)]
    step_buf = embed("step", np.zeros(1, np.float32), np.float32)
    mu_buf = embed("mu", np.ones(1, np.float32), np.float32)
    mu_ref = np.float32(1.0)
    groups = grid or groups_1d(n)
    for t in range(1, steps + 1):
        g = (rng.choice([-1.0, 1.0], n) * rng.uniform(0.1, 1.0, n)).astype(npd)
        q = params(n, fresh=(t == 1), **qd)
        if adv == "advance":
            step_buf = gpu.run(F, "advance", [step_buf], q, (1, 1, 1))[0]
        elif adv == "advance_nadam":
            step_buf, mu_buf = gpu.run(F, "advance_nadam", [step_buf, mu_buf], q, (1, 1, 1))
            mu_ref = np.float32(
                np.float64(mu_ref) * nadam_mu(h["betas"][0], h["momentum_decay"], t)
            )
            assert view("mu", mu_buf, 1)[0] == pytest.approx(mu_ref, rel=2e-6)
            check_pad("mu", mu_buf, 1)
        if adv:
            assert view("step", step_buf, 1)[0] == t
            check_pad("step", step_buf, 1)
        bufs = {"g": embed("g", g, npd), "p": embed("p", p, npd), "step": step_buf, "mu": mu_buf}
        for k, s in enumerate(state):
            bufs[f"s{k}"] = embed(f"s{k}", s, npd)
        names = ORDER[entry]
        out = dict(zip(names, gpu.run(F, entry, [bufs[x] for x in names], q, groups, dtype=dtype)))
        for x in names:
            if x not in ("step", "mu"):
                check_pad(x, out[x], n if x != "step" else 1)

        def f64(a):
            return a.astype(np.float64)

        if rule == "nadam":
            p_ref, st_ref = ref_nadam(
                f64(p), f64(g), [f64(s) for s in state], t, h, float(view("mu", mu_buf, 1)[0])
            )
        else:
            p_ref, st_ref = REF[rule](f64(p), f64(g), [f64(s) for s in state], t, h)
        np.testing.assert_array_equal(view("g", out["g"], n), g)
        p = view("p", out["p"], n)
        close(p, p_ref, dtype, f"p at step {t}")
        state = [view(f"s{k}", out[f"s{k}"], n) for k in range(nst)]
        for k, (s, r) in enumerate(zip(state, st_ref)):
            close(s, r, dtype, f"state {k} at step {t}")
    return p


@pytest.mark.parametrize("rule,h", CASES, ids=[f"{r}{i}" for i, (r, _) in enumerate(CASES)])
def test_rule(gpu, rule, h):
    for dtype in dtypes(gpu):
        run_rule(gpu, rule, h, dtype, steps=8 if rule == "radam" else 6)


def test_multiple_workgroups_spill_into_y(gpu):
    # 1300 elements over a (2, 3) grid: the flat id must include gid.y.
    n = 1300
    run_rule(gpu, "adam", dict(ADAM, amsgrad=True), "f32", n=n, steps=3, grid=(2, 3, 1))
    run_rule(gpu, "sgd", dict(lr=0.1, momentum=0.9), "f32", n=n, steps=3, grid=(2, 3, 1))
    run_rule(gpu, "radam", RADAM, "f32", n=n, steps=7, grid=(2, 3, 1))


def test_radam_threshold_near_one():
    # The reformulated rho_t the shader uses (f32 in the shader) against the
    # direct float64 formula, where the rho_t > 5 decision is closest.
    for b2 in (0.9, 0.999, 0.9999, 0.99999):
        for t in range(1, 12):
            _, direct = radam_rho(b2, t)
            e = 1 - b2
            L = -np.log1p(-e)
            dd = (
                e * (1 / 6 + e * (1 / 12 + e * (19 / 360 + e * (3 / 80))))
                if e < 0.1
                else 2 / e - 1 - 2 / L
            )
            x = t * L
            ob = x / 2 - x * x / 12 + x**4 / 720 - x**6 / 30240 if x < 0.5 else 1 - x / np.expm1(x)
            assert dd + 2 / L * ob == pytest.approx(direct, abs=1e-6 + 1e-9 * 2 / e)


def test_nan_gradient_keeps_max_state(gpu):
    # Rust's f32::max ignores a NaN operand: amsgrad's max_exp_avg_sq and
    # Adamax's exp_inf keep their old (finite) values where the gradient is NaN.
    n = 300
    g = np.full(n, 0.5, np.float32)
    g[7] = np.nan
    for entry, names in (
        ("adam_amsgrad", ["g", "step", "p", "s0", "s1", "s2"]),
        ("adamax", ["g", "step", "p", "s0", "s1"]),
    ):
        bufs = {
            "g": embed("g", g, np.float32),
            "p": embed("p", np.ones(n, np.float32), np.float32),
            "step": embed("step", np.ones(1, np.float32), np.float32),
        }
        for k in range(3):
            bufs[f"s{k}"] = embed(f"s{k}", np.full(n, 0.25, np.float32), np.float32)
        q = params(n, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8)
        out = dict(zip(names, gpu.run(F, entry, [bufs[x] for x in names], q, groups_1d(n))))
        p = view("p", out["p"], n)
        assert np.isnan(p[7]) and np.all(np.isfinite(np.delete(p, 7)))
        last = names[-1]
        kept = view(last, out[last], n)
        want = 0.25 if entry == "adam_amsgrad" else np.float32(0.999) * np.float32(0.25)
        assert kept[7] == pytest.approx(want, rel=1e-6)
