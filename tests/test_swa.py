"""optim.swa_utils: AveragedModel, the averaging functions, SWALR, update_bn."""

import math

import numpy as np
import pytest
import rumus
from rumus import nn
from rumus.optim import swa_utils


def _np(t):
    return t.detach().cpu().numpy().copy()


def _model(device="cpu"):
    rumus.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)).to(device)


def _perturb(model, k):
    with rumus.no_grad():
        for i, p in enumerate(model.parameters()):
            p.add_(0.1 * (k + 1) * (i + 1))
        for b in model.buffers():
            if b.is_floating_point():
                b.add_(0.5 * (k + 1))


def _run(avg_model, model, n):
    snaps = []
    for k in range(n):
        _perturb(model, k)
        snaps.append(([_np(p) for p in model.parameters()], [_np(b) for b in model.buffers()]))
        avg_model.update_parameters(model)
    return snaps


def test_swa_running_mean(device):
    model = _model(device)
    swa = swa_utils.AveragedModel(model)
    assert swa.module is not model
    assert list(swa.state_dict())[0] == "n_averaged"  # own buffers before children
    assert swa.n_averaged.dtype == rumus.int64
    snaps = _run(swa, model, 4)
    assert swa.n_averaged.item() == 4
    for i, p in enumerate(swa.parameters()):
        np.testing.assert_allclose(_np(p), np.mean([s[0][i] for s in snaps], 0), rtol=1e-5)
    # Buffers follow the model (not averaged) without use_buffers.
    for i, b in enumerate(swa.module.buffers()):
        np.testing.assert_allclose(_np(b), snaps[-1][1][i])
    x = rumus.randn(5, 3, device=device)
    swa.eval()
    assert tuple(swa(x).shape) == (5, 2)


def test_use_buffers_averages_buffers():
    model = _model()
    swa = swa_utils.AveragedModel(model, use_buffers=True)
    snaps = _run(swa, model, 3)
    bufs = list(swa.module.buffers())
    for i, b in enumerate(bufs):
        if b.is_floating_point():
            np.testing.assert_allclose(_np(b), np.mean([s[1][i] for s in snaps], 0), rtol=1e-6)


@pytest.mark.parametrize("multi", [False, True])
def test_ema(multi):
    decay = 0.9
    model = _model()
    fn = swa_utils.get_ema_multi_avg_fn(decay) if multi else None
    avg = None if multi else swa_utils.get_ema_avg_fn(decay)
    ema = swa_utils.AveragedModel(model, multi_avg_fn=fn, avg_fn=avg)
    snaps = _run(ema, model, 4)
    for i, p in enumerate(ema.parameters()):
        expected = snaps[0][0][i]
        for s in snaps[1:]:
            expected = decay * expected + (1 - decay) * s[0][i]
        np.testing.assert_allclose(_np(p), expected, rtol=1e-5)


def test_avg_fns_values():
    a, b = rumus.tensor([1.0, 2.0]), rumus.tensor([3.0, 6.0])
    n = rumus.tensor(3)
    np.testing.assert_allclose(_np(swa_utils.get_swa_avg_fn()(a, b, n)), [1.5, 3.0])
    np.testing.assert_allclose(_np(swa_utils.get_ema_avg_fn(0.5)(a, b, n)), [2.0, 4.0])
    lst = [a.clone()]
    swa_utils.get_swa_multi_avg_fn()(lst, [b], n)
    np.testing.assert_allclose(_np(lst[0]), [1.5, 3.0])
    with pytest.raises(ValueError):
        swa_utils.AveragedModel(_model(), avg_fn=lambda *a: a[0], multi_avg_fn=lambda *a: None)


def test_update_bn():
    model = _model()
    rng = np.random.default_rng(0)
    data = [rng.normal(size=(8, 3)).astype(np.float32) for _ in range(3)]
    loader = [(rumus.tensor(d), rumus.zeros(8)) for d in data]
    bn = model[1]
    bn.momentum = 0.3
    model.eval()
    swa_utils.update_bn(loader, model)
    assert not model.training and bn.momentum == 0.3
    # The cumulative average of the per-batch statistics of the BN input.
    with rumus.no_grad():
        h = [_np(model[0](rumus.tensor(d))) for d in data]
    np.testing.assert_allclose(_np(bn.running_mean), np.mean([x.mean(0) for x in h], 0), rtol=1e-5)
    np.testing.assert_allclose(
        _np(bn.running_var), np.mean([x.var(0, ddof=1) for x in h], 0), rtol=1e-4
    )
    assert bn.num_batches_tracked.item() == 3
    swa_utils.update_bn([], nn.Linear(2, 2))  # no BatchNorm: nothing to do


def _lrs(sched, opt, n):
    out = []
    for _ in range(n):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_swalr(strategy):
    p = rumus.zeros(1, requires_grad=True)
    opt = rumus.optim.SGD([p], lr=1.0)
    sched = swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=4, anneal_strategy=strategy)
    got = _lrs(sched, opt, 7)
    anneal = (lambda t: (1 - math.cos(math.pi * t)) / 2) if strategy == "cos" else (lambda t: t)
    expected = [0.1 * anneal(t / 4) + 1.0 * (1 - anneal(t / 4)) for t in range(5)] + [0.1, 0.1]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert opt.param_groups[0]["swa_lr"] == 0.1


def test_swalr_zero_epochs_and_errors():
    p = rumus.zeros(1, requires_grad=True)
    opt = rumus.optim.SGD([p], lr=1.0)
    sched = swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=0)
    np.testing.assert_allclose(_lrs(sched, opt, 3), [0.05] * 3)
    with pytest.raises(ValueError, match="anneal_strategy"):
        swa_utils.SWALR(opt, swa_lr=0.1, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs"):
        swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr"):
        swa_utils.SWALR(opt, swa_lr=[0.1, 0.2])
