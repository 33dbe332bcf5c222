"""Learning-rate schedulers: lr sequences against closed forms, against
torch.optim.lr_scheduler (when torch is installed), state_dict round trips,
composition and bad arguments."""

import math
import pickle
import warnings

import numpy as np
import pytest
import rumus
from rumus.optim import lr_scheduler as L


class FakeOpt:
    """The least an optimizer must offer a scheduler: param_groups (and defaults, step)."""

    def __init__(self, lrs=(0.1,), momentum=None, betas=None):
        self.defaults = {"lr": lrs[0]}
        self.param_groups = []
        for lr in lrs:
            g = {"params": [], "lr": lr}
            if momentum is not None:
                g["momentum"] = momentum
                self.defaults["momentum"] = momentum
            if betas is not None:
                g["betas"] = betas
                self.defaults["betas"] = betas
            self.param_groups.append(g)
        self.steps = 0

    def step(self):
        self.steps += 1


def run(sched, n, metrics=None):
    """lrs (one list per group) at epochs 0..n-1, stepping optimizer then scheduler."""
    out = [list(sched.get_last_lr())]
    for i in range(n - 1):
        sched.optimizer.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
        out.append(list(sched.get_last_lr()))
        assert out[-1] == [g["lr"] for g in sched.optimizer.param_groups]
    return np.array(out)


def close(got, expected):
    np.testing.assert_allclose(
        np.asarray(got, dtype=np.float64),
        np.asarray(expected, dtype=np.float64),
        rtol=1e-12,
        atol=1e-14,
    )


# --------------------------------------------------------------------------
# closed forms
# --------------------------------------------------------------------------

N = 40
E = np.arange(N)


def test_step_lr():
    got = run(L.StepLR(FakeOpt((0.1, 0.02)), step_size=3, gamma=0.5), N)
    close(got, np.stack([0.1 * 0.5 ** (E // 3), 0.02 * 0.5 ** (E // 3)], 1))


def test_multistep_lr_with_repeated_milestone():
    got = run(L.MultiStepLR(FakeOpt(), milestones=[5, 12, 12, 30], gamma=0.3), N)
    k = (E >= 5).astype(int) + 2 * (E >= 12) + (E >= 30)
    close(got[:, 0], 0.1 * 0.3**k)


def test_exponential_lr():
    close(run(L.ExponentialLR(FakeOpt(), gamma=0.93), N)[:, 0], 0.1 * 0.93**E)


def test_constant_lr():
    close(
        run(L.ConstantLR(FakeOpt(), factor=0.25, total_iters=7), N)[:, 0],
        np.where(E < 7, 0.025, 0.1),
    )


def test_linear_lr():
    got = run(L.LinearLR(FakeOpt(), start_factor=0.2, end_factor=0.9, total_iters=10), N)
    close(got[:, 0], 0.1 * (0.2 + 0.7 * np.minimum(E, 10) / 10))


def test_polynomial_lr():
    got = run(L.PolynomialLR(FakeOpt(), total_iters=12, power=2.0), N)
    close(got[:, 0], 0.1 * (1 - np.minimum(E, 12) / 12) ** 2)


@pytest.mark.parametrize("T_max,eta_min", [(10, 0.0), (7, 0.01)])
def test_cosine_annealing_lr_follows_closed_form_across_periods(T_max, eta_min):
    got = run(L.CosineAnnealingLR(FakeOpt((0.1, 0.5)), T_max=T_max, eta_min=eta_min), N)
    for j, base in enumerate((0.1, 0.5)):
        close(got[:, j], eta_min + (base - eta_min) * (1 + np.cos(np.pi * E / T_max)) / 2)


def test_lambda_and_multiplicative_lr():
    got = run(L.LambdaLR(FakeOpt((0.1, 0.2)), [lambda e: 0.9**e, lambda e: 1 / (e + 1)]), N)
    close(got, np.stack([0.1 * 0.9**E, 0.2 / (E + 1)], 1))
    got = run(L.MultiplicativeLR(FakeOpt(), lambda e: 0.95), N)
    close(got[:, 0], 0.1 * 0.95**E)


@pytest.mark.parametrize("T_0,T_mult", [(5, 1), (3, 2), (2, 3)])
def test_cosine_warm_restarts(T_0, T_mult):
    got = run(L.CosineAnnealingWarmRestarts(FakeOpt(), T_0=T_0, T_mult=T_mult, eta_min=0.001), N)
    exp, T_i, T_cur = [], T_0, 0
    for _ in range(N):
        exp.append(0.001 + (0.1 - 0.001) * (1 + math.cos(math.pi * T_cur / T_i)) / 2)
        T_cur += 1
        if T_cur >= T_i:
            T_cur, T_i = 0, T_i * T_mult
    close(got[:, 0], exp)


def test_cosine_warm_restarts_fractional_epochs():
    s = L.CosineAnnealingWarmRestarts(FakeOpt(), T_0=2, T_mult=2, eta_min=0.0)
    # periods: [0, 2), [2, 6), [6, 14)
    for epoch, t_cur, t_i in [
        (0.5, 0.5, 2),
        (1.75, 1.75, 2),
        (2.0, 0.0, 4),
        (5.5, 3.5, 4),
        (9.25, 3.25, 8),
    ]:
        s.step(epoch)
        assert s.T_i == t_i and s.T_cur == pytest.approx(t_cur)
        assert s.last_epoch == math.floor(epoch)
        close(s.get_last_lr(), [0.1 * (1 + math.cos(math.pi * t_cur / t_i)) / 2])
    with pytest.raises(ValueError, match="non-negative epoch"):
        s.step(-1)


def _one_cycle_expected(total, max_lr, pct, div, final_div, three_phase, strategy):
    init, lo = max_lr / div, max_lr / div / final_div

    def anneal(a, b, p):
        return (
            b + (a - b) / 2 * (math.cos(math.pi * p) + 1) if strategy == "cos" else a + (b - a) * p
        )

    if three_phase:
        phases = [
            (pct * total - 1, init, max_lr, 0.95, 0.85),
            (2 * pct * total - 2, max_lr, init, 0.85, 0.95),
            (total - 1, init, lo, 0.95, 0.95),
        ]
    else:
        phases = [(pct * total - 1, init, max_lr, 0.95, 0.85), (total - 1, max_lr, lo, 0.85, 0.95)]
    lrs, moms = [], []
    for step in range(total):
        start = 0.0
        for i, (end, a, b, ma, mb) in enumerate(phases):
            if step <= end or i == len(phases) - 1:
                p = (step - start) / (end - start)
                lrs.append(anneal(a, b, p))
                moms.append(anneal(ma, mb, p))
                break
            start = end
    return np.array(lrs), np.array(moms)


@pytest.mark.parametrize("three_phase", [False, True])
@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_one_cycle_lr_and_momentum(three_phase, strategy):
    opt = FakeOpt(momentum=0.9)
    s = L.OneCycleLR(
        opt,
        max_lr=1.0,
        total_steps=N,
        pct_start=0.25,
        anneal_strategy=strategy,
        three_phase=three_phase,
    )
    lrs, moms = [], []
    for _ in range(N):
        lrs.append(opt.param_groups[0]["lr"])
        moms.append(opt.param_groups[0]["momentum"])
        opt.step()
        if len(lrs) < N:
            s.step()
    exp_lr, exp_m = _one_cycle_expected(N, 1.0, 0.25, 25.0, 1e4, three_phase, strategy)
    close(lrs, exp_lr)
    close(moms, exp_m)
    assert lrs[0] == pytest.approx(0.04) and lrs[-1] == pytest.approx(0.04 / 1e4)
    s.step()  # the step after the last one is still allowed (epoch == total_steps)
    with pytest.raises(ValueError, match="Tried to step 41 times"):
        s.step()


def test_one_cycle_cycles_beta1_of_adam_like_optimizers():
    opt = FakeOpt(betas=(0.9, 0.999))
    s = L.OneCycleLR(
        opt, max_lr=[0.5], epochs=4, steps_per_epoch=5, base_momentum=0.8, max_momentum=0.9
    )
    assert s.total_steps == 20
    assert opt.param_groups[0]["betas"] == (0.9, 0.999)
    for _ in range(5):
        opt.step()
        s.step()
    # phase 1 ends at step 0.3 * 20 - 1 = 5: lr at max_lr, beta1 at base_momentum
    assert opt.param_groups[0]["betas"] == (pytest.approx(0.8), 0.999)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.5)
    opt.step()
    s.step()
    b1, b2 = opt.param_groups[0]["betas"]
    assert b2 == 0.999
    assert b1 == pytest.approx(0.9 + (0.8 - 0.9) / 2 * (math.cos(math.pi / 14) + 1))


def test_cyclic_lr_triangular2():
    opt = FakeOpt(momentum=0.9)
    s = L.CyclicLR(
        opt, base_lr=0.01, max_lr=0.1, step_size_up=4, step_size_down=2, mode="triangular2"
    )
    got = run(s, N)[:, 0]
    exp = []
    for e in range(N):
        cycle = math.floor(1 + e / 6)
        x = 1 + e / 6 - cycle
        scale = x / (4 / 6) if x <= 4 / 6 else (x - 1) / (4 / 6 - 1)
        exp.append(0.01 + 0.09 * scale / 2 ** (cycle - 1))
    close(got, exp)


def test_reduce_lr_on_plateau_min_rel_with_cooldown():
    opt = FakeOpt((1.0, 0.5))
    s = L.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2, cooldown=1, min_lr=[0.0, 0.2])
    metrics = [10, 9, 9, 9, 9, 9, 9, 9, 8.9999, 5, 5, 5, 5, 5, 5]
    lrs = []
    for m in metrics:
        s.step(m)
        lrs.append(s.get_last_lr())
    # best=9 at step 1; bad epochs 2,3,4 -> reduce at 4 (3 > patience 2); cooldown swallows 5;
    # bad 6,7,8 (8.9999 is no relative improvement on 9) -> reduce at 8, the second group
    # stops at min_lr 0.2; 9 improves; cooldown 9; bad 10,11,12 -> reduce at 12.
    exp = [[1.0, 0.5]] * 4 + [[0.5, 0.25]] * 4 + [[0.25, 0.2]] * 4 + [[0.125, 0.2]] * 3
    close(lrs, exp)


def test_reduce_lr_on_plateau_max_abs_and_eps():
    opt = FakeOpt((1e-8,))
    s = L.ReduceLROnPlateau(
        opt, mode="max", threshold=0.5, threshold_mode="abs", patience=0, factor=0.5
    )
    s.step(1.0)
    s.step(1.4)  # not better than 1.0 + 0.5 -> reduce, but the change 5e-9 is below eps=1e-8
    assert s.get_last_lr() == [1e-8]
    opt.param_groups[0]["lr"] = 1.0
    s.step(1.45)
    assert s.get_last_lr() == [0.5] and s.best == 1.0
    s.step(1.6)
    assert s.get_last_lr() == [0.5] and s.best == 1.6


# --------------------------------------------------------------------------
# composition, base class behaviour, state_dict
# --------------------------------------------------------------------------


def test_initial_lr_and_base_lrs():
    opt = FakeOpt((0.1, 0.3))
    s = L.StepLR(opt, 2)
    assert s.base_lrs == [0.1, 0.3] and [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.3]
    assert s.last_epoch == 0
    with pytest.raises(KeyError, match=r"param 'initial_lr' is not specified in param_groups\[0\]"):
        L.StepLR(FakeOpt(), 2, last_epoch=3)


def test_resume_with_last_epoch_uses_the_closed_form_start():
    opt = FakeOpt()
    for g in opt.param_groups:
        g["initial_lr"] = 0.1
    s = L.CosineAnnealingLR(opt, T_max=10, last_epoch=3)
    close(s.get_last_lr(), [0.05 * (1 + math.cos(math.pi * 4 / 10))])


def test_chained_step_and_exponential():
    opt = FakeOpt()
    a, b = L.StepLR(opt, 4, gamma=0.5), L.ExponentialLR(opt, gamma=0.9)
    got = run(L.ChainedScheduler([a, b]), N)[:, 0]
    close(got, 0.1 * 0.5 ** (E // 4) * 0.9**E)


def test_sequential_warmup_then_cosine():
    opt = FakeOpt()
    warm = L.LinearLR(opt, start_factor=0.1, total_iters=5)
    cos = L.CosineAnnealingLR(opt, T_max=20)
    got = run(L.SequentialLR(opt, [warm, cos], milestones=[5]), N)[:, 0]
    exp = np.where(E < 5, 0.1 * (0.1 + 0.9 * E / 5), 0.05 * (1 + np.cos(np.pi * (E - 5) / 20)))
    close(got, exp)


def test_get_lr_outside_step_warns():
    s = L.StepLR(FakeOpt(), 2)
    with pytest.warns(UserWarning, match="get_last_lr"):
        s.get_lr()


def test_step_before_optimizer_step_warns():
    opt = FakeOpt()
    s = L.StepLR(opt, 2)
    with pytest.warns(UserWarning, match=r"before `optimizer.step\(\)`"):
        s.step()
    opt2 = FakeOpt()
    s2 = L.StepLR(opt2, 2)
    opt2.step()
    assert opt2.steps == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s2.step()


def test_step_with_epoch_uses_closed_form():
    s = L.StepLR(FakeOpt(), step_size=3, gamma=0.5)
    s.optimizer.step()
    with pytest.warns(UserWarning, match="epoch parameter"):
        s.step(7)
    close(s.get_last_lr(), [0.1 * 0.25])


def test_tensor_lr_is_updated_in_place():
    opt = FakeOpt()
    lr = rumus.tensor(0.1, dtype=rumus.float64)
    opt.param_groups[0]["lr"] = lr
    s = L.ExponentialLR(opt, gamma=0.5)
    opt.step()
    s.step()
    assert opt.param_groups[0]["lr"] is lr and lr.item() == pytest.approx(0.05)
    assert (
        opt.param_groups[0]["initial_lr"] is not lr
        and opt.param_groups[0]["initial_lr"].item() == 0.1
    )


class Halve:
    """A picklable callable whose state travels in LambdaLR's state_dict."""

    def __init__(self, base):
        self.base = base

    def __call__(self, epoch):
        return self.base**epoch


def _factories():
    return {
        "step": lambda o: L.StepLR(o, 3, 0.5),
        "multistep": lambda o: L.MultiStepLR(o, [4, 9], 0.2),
        "exp": lambda o: L.ExponentialLR(o, 0.9),
        "cos": lambda o: L.CosineAnnealingLR(o, 6, 0.01),
        "warm": lambda o: L.CosineAnnealingWarmRestarts(o, 3, 2),
        "linear": lambda o: L.LinearLR(o, 0.5, total_iters=8),
        "lambda_obj": lambda o: L.LambdaLR(o, Halve(0.8)),
        "onecycle": lambda o: L.OneCycleLR(o, 1.0, total_steps=30),
        "cyclic": lambda o: L.CyclicLR(o, 0.01, 0.1, step_size_up=3),
        "sequential": lambda o: L.SequentialLR(
            o, [L.ConstantLR(o, 0.5, 4), L.ExponentialLR(o, 0.8)], [4]
        ),
        "plateau": lambda o: L.ReduceLROnPlateau(o, patience=1),
    }


@pytest.mark.parametrize("name", list(_factories()))
def test_state_dict_round_trip(name):
    make = _factories()[name]
    metrics = [1.0, 0.9, 0.95, 0.97, 0.99, 0.8, 0.85, 0.9, 0.95, 0.96, 0.97, 0.98] * 3

    def stepper(s):
        def step(i):
            s.optimizer.step()
            if name == "plateau":
                s.step(metrics[i])
            else:
                s.step()

        return step

    ref_opt = FakeOpt(momentum=0.9)
    ref = make(ref_opt)
    step = stepper(ref)
    for i in range(10):
        step(i)
    state = pickle.loads(pickle.dumps(ref.state_dict()))
    opt_state = [dict(g) for g in ref_opt.param_groups]
    if name == "lambda_obj":
        ref.lr_lambdas[0].base = 0.7  # saved state must restore the callable's attributes
        state_copy = dict(state)
        ref.load_state_dict(state_copy)
        assert ref.lr_lambdas[0].base == 0.8 and "lr_lambdas" in state_copy

    new_opt = FakeOpt(momentum=0.9)
    new = make(new_opt)
    new.load_state_dict(state)
    for g, saved in zip(new_opt.param_groups, opt_state):
        g.update(saved)  # the optimizer's own state_dict restores its groups
    step_new = stepper(new)
    for i in range(10, 25):
        step(i)
        step_new(i)
        assert new.get_last_lr() == ref.get_last_lr()
        assert [g["lr"] for g in new_opt.param_groups] == [g["lr"] for g in ref_opt.param_groups]
    assert "optimizer" not in state


def test_lambda_state_dict_skips_plain_functions():
    s = L.LambdaLR(FakeOpt((0.1, 0.2)), [lambda e: 1.0, Halve(0.5)])
    state = s.state_dict()
    assert state["lr_lambdas"] == [None, {"base": 0.5}]


# --------------------------------------------------------------------------
# bad arguments
# --------------------------------------------------------------------------


def test_bad_arguments():
    opt = FakeOpt()
    with pytest.raises(TypeError, match="not an Optimizer"):
        L.StepLR(object(), 2)
    with pytest.raises(ValueError, match="between 0 and 1"):
        L.ConstantLR(opt, factor=1.5)
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        L.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Ending multiplicative factor"):
        L.LinearLR(opt, end_factor=1.5)
    with pytest.raises(ValueError, match="Expected positive integer T_0"):
        L.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="T_mult >= 1"):
        L.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=0)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        L.LambdaLR(opt, [lambda e: 1, lambda e: 1])
    with pytest.raises(ValueError, match="either total_steps OR"):
        L.OneCycleLR(FakeOpt(momentum=0.9), 1.0)
    with pytest.raises(ValueError, match="positive integer total_steps"):
        L.OneCycleLR(FakeOpt(momentum=0.9), 1.0, total_steps=0)
    with pytest.raises(ValueError, match="pct_start"):
        L.OneCycleLR(FakeOpt(momentum=0.9), 1.0, total_steps=10, pct_start=1.5)
    with pytest.raises(ValueError, match="anneal_strategy"):
        L.OneCycleLR(FakeOpt(momentum=0.9), 1.0, total_steps=10, anneal_strategy="exp")
    with pytest.raises(ValueError, match="momentum or beta1"):
        L.OneCycleLR(FakeOpt(), 1.0, total_steps=10)
    with pytest.raises(ValueError, match="max_lr must have the same length"):
        L.OneCycleLR(FakeOpt(momentum=0.9), [1.0, 2.0], total_steps=10)
    with pytest.raises(ValueError, match="mode is invalid"):
        L.CyclicLR(FakeOpt(momentum=0.9), 0.1, 1.0, mode="square")
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        L.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown"):
        L.ReduceLROnPlateau(opt, mode="avg")
    with pytest.raises(ValueError, match="threshold mode x is unknown"):
        L.ReduceLROnPlateau(opt, threshold_mode="x")
    with pytest.raises(ValueError, match="expected 1 min_lrs, got 2"):
        L.ReduceLROnPlateau(opt, min_lr=[0, 0])
    other = FakeOpt()
    with pytest.raises(ValueError, match="same optimizer"):
        L.SequentialLR(opt, [L.StepLR(opt, 2), L.StepLR(other, 2)], milestones=[3])
    with pytest.raises(ValueError, match="one more than the number of milestone"):
        L.SequentialLR(opt, [L.StepLR(opt, 2), L.StepLR(opt, 2)], milestones=[3, 4])
    with pytest.raises(ValueError, match="at least one scheduler"):
        L.SequentialLR(opt, [], milestones=[])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        L.ChainedScheduler([L.StepLR(opt, 2), L.ReduceLROnPlateau(opt)])


# --------------------------------------------------------------------------
# with rumus.optim and against PyTorch
# --------------------------------------------------------------------------


@pytest.mark.skipif(
    not (hasattr(rumus.optim, "SGD") and hasattr(rumus._rumus, "_optimizer_step")),
    reason="rumus.optim.SGD (and its Rust step) not available yet",
)
def test_with_rumus_sgd_changes_the_update():
    w = rumus.tensor([1.0], dtype=rumus.float64)
    w.requires_grad_()
    opt = rumus.optim.SGD([w], lr=0.5)
    s = L.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        opt.zero_grad()
        (w * 2.0).sum().backward()  # gradient 2
        opt.step()
        s.step()
    # w = 1 - 2 * (0.5 + 0.25 + 0.125)
    assert w.item() == pytest.approx(1 - 2 * 0.875)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.0625)


@pytest.mark.skipif(
    not (hasattr(rumus.optim, "Adam") and hasattr(rumus._rumus, "_optimizer_step")),
    reason="rumus.optim.Adam (and its Rust step) not available yet",
)
def test_one_cycle_with_rumus_adam_cycles_beta1():
    w = rumus.tensor([1.0, -2.0])
    w.requires_grad_()
    opt = rumus.optim.Adam([w], lr=0.1)
    s = L.OneCycleLR(opt, max_lr=0.5, total_steps=10)
    exp_lr, exp_m = _one_cycle_expected(10, 0.5, 0.3, 25.0, 1e4, False, "cos")
    for i in range(10):
        close([opt.param_groups[0]["lr"], opt.param_groups[0]["betas"][0]], [exp_lr[i], exp_m[i]])
        assert opt.param_groups[0]["betas"][1] == 0.999
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
        s.step()


def _torch_pair(torch, kind):
    p = torch.nn.Parameter(torch.zeros(1))
    if kind == "adam":
        return torch.optim.Adam([p], lr=0.1), FakeOpt(betas=(0.9, 0.999))
    return torch.optim.SGD([p], lr=0.1, momentum=0.9), FakeOpt(momentum=0.9)


TORCH_CONFIGS = {
    "step": ("sgd", lambda M, o: M.StepLR(o, 4, gamma=0.7)),
    "multistep": ("sgd", lambda M, o: M.MultiStepLR(o, [3, 10, 10, 25], gamma=0.5)),
    "exp": ("sgd", lambda M, o: M.ExponentialLR(o, 0.95)),
    "constant": ("sgd", lambda M, o: M.ConstantLR(o, 0.3, 6)),
    "linear": ("sgd", lambda M, o: M.LinearLR(o, 0.05, 0.8, 12)),
    "poly": ("sgd", lambda M, o: M.PolynomialLR(o, 20, 1.5)),
    "cos": ("sgd", lambda M, o: M.CosineAnnealingLR(o, 9, 0.003)),
    "warm_mult1": ("sgd", lambda M, o: M.CosineAnnealingWarmRestarts(o, 7, 1, 0.001)),
    "warm_mult2": ("sgd", lambda M, o: M.CosineAnnealingWarmRestarts(o, 3, 2)),
    "lambda": ("sgd", lambda M, o: M.LambdaLR(o, lambda e: 1 / (1 + 0.3 * e))),
    "mult": ("sgd", lambda M, o: M.MultiplicativeLR(o, lambda e: 0.97 if e % 2 else 1.0)),
    "onecycle_cos": ("sgd", lambda M, o: M.OneCycleLR(o, 0.8, total_steps=45)),
    "onecycle_lin3": (
        "sgd",
        lambda M, o: M.OneCycleLR(
            o, 0.8, total_steps=45, anneal_strategy="linear", three_phase=True, pct_start=0.2
        ),
    ),
    "onecycle_adam": ("adam", lambda M, o: M.OneCycleLR(o, 0.01, epochs=5, steps_per_epoch=9)),
    "cyclic_tri": ("sgd", lambda M, o: M.CyclicLR(o, 0.01, 0.2, step_size_up=5)),
    "cyclic_exp": (
        "sgd",
        lambda M, o: M.CyclicLR(
            o, 0.01, 0.2, step_size_up=3, step_size_down=6, mode="exp_range", gamma=0.97
        ),
    ),
    "cyclic_adam": (
        "adam",
        lambda M, o: M.CyclicLR(o, 0.001, 0.01, step_size_up=4, mode="triangular2"),
    ),
    "sequential": (
        "sgd",
        lambda M, o: M.SequentialLR(
            o,
            [M.LinearLR(o, 0.1, total_iters=5), M.StepLR(o, 3, 0.5), M.CosineAnnealingLR(o, 8)],
            milestones=[5, 14],
        ),
    ),
    "chained": (
        "sgd",
        lambda M, o: M.ChainedScheduler([M.ConstantLR(o, 0.5, 7), M.ExponentialLR(o, 0.9)]),
    ),
}


@pytest.mark.parametrize("name", list(TORCH_CONFIGS))
def test_matches_torch(name):
    torch = pytest.importorskip("torch")
    kind, make = TORCH_CONFIGS[name]
    topt, fopt = _torch_pair(torch, kind)
    ts, rs = make(torch.optim.lr_scheduler, topt), make(L, fopt)
    for _ in range(45):
        close(rs.get_last_lr(), ts.get_last_lr())
        tg, fg = topt.param_groups[0], fopt.param_groups[0]
        if "momentum" in fg:
            close([fg["momentum"]], [tg["momentum"]])
        if "betas" in fg:
            close(fg["betas"], tg["betas"])
        topt.step()
        fopt.step()
        if name.startswith("onecycle") and ts.last_epoch + 1 > ts.total_steps:
            break
        ts.step()
        rs.step()


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(mode="max", threshold_mode="abs", threshold=0.05, patience=2),
        dict(factor=0.3, patience=1, cooldown=2, min_lr=0.004),
    ],
)
def test_plateau_matches_torch(kw):
    torch = pytest.importorskip("torch")
    topt, fopt = _torch_pair(torch, "sgd")
    ts, rs = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kw), L.ReduceLROnPlateau(fopt, **kw)
    rng = np.random.default_rng(0)
    for m in np.cumsum(rng.normal(0, 1, 60)):
        ts.step(float(m))
        rs.step(float(m))
        close(rs.get_last_lr(), ts.get_last_lr())
        assert rs.num_bad_epochs == ts.num_bad_epochs and rs.cooldown_counter == ts.cooldown_counter


def test_warm_restarts_fractional_epochs_match_torch():
    torch = pytest.importorskip("torch")
    topt, fopt = _torch_pair(torch, "sgd")
    ts = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(topt, 2, 3, 0.01)
    rs = L.CosineAnnealingWarmRestarts(fopt, 2, 3, 0.01)
    for epoch in np.arange(0, 30, 0.35):
        ts.step(float(epoch))
        rs.step(float(epoch))
        close(rs.get_last_lr(), ts.get_last_lr())
