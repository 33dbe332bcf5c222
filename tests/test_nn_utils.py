"""nn.utils: gradient clipping by norm and by value, parameters <-> flat vector."""

import math

import numpy as np
import pytest
import rumus
from conftest import assert_close, make, skip_on_gpu, tensor, to_np, wide
from rumus import nn
from rumus.autograd import gradcheck
from rumus.nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)

SHAPES = [(3, 4), (5,), (2, 1, 3)]

# Every test runs on the CPU and on the GPU (``device`` fixture).


def dev_of(t):
    return t.device.type


def params_with_grads(scale=1.0, dtypes=("float32",) * 3, seed=0, device="cpu"):
    rng = np.random.default_rng(seed)
    params, grads = [], []
    for shape, dt in zip(SHAPES, dtypes):
        p = nn.Parameter(tensor(make(shape, dt, rng=rng), device=device))
        assert dev_of(p) == device
        g = make(shape, dt, rng=rng) * scale
        p.grad = tensor(g, device=device)
        params.append(p)
        grads.append(g.astype(np.float64))
    return params, grads


def np_norm(grads, p):
    flat = np.concatenate([g.ravel() for g in grads])
    if p == math.inf:
        return np.abs(flat).max()
    return (np.abs(flat) ** p).sum() ** (1 / p)


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, "inf"])
def test_clip_grad_norm_clips(norm_type, device):
    params, grads = params_with_grads(scale=10.0, device=device)
    p = float(norm_type)
    total = np_norm(grads, p)
    out = clip_grad_norm_(params, max_norm=1.5, norm_type=norm_type)
    assert out.shape == () and out.dtype == rumus.float32
    assert dev_of(out) == device and all(dev_of(prm.grad) == device for prm in params)
    assert out.item() == pytest.approx(total, rel=1e-5)
    coef = 1.5 / (total + 1e-6)
    for prm, g in zip(params, grads):
        np.testing.assert_allclose(to_np(prm.grad), g * coef, rtol=1e-5)
    assert np_norm([to_np(prm.grad).astype(np.float64) for prm in params], p) == pytest.approx(
        1.5, rel=1e-5
    )


def test_clip_grad_norm_leaves_small_grads_alone(device):
    params, grads = params_with_grads(scale=0.01, device=device)
    total = clip_grad_norm_(iter(params), max_norm=100)  # a generator is walked once
    assert total.item() == pytest.approx(np_norm(grads, 2), rel=1e-5)
    for prm, g in zip(params, grads):
        np.testing.assert_allclose(to_np(prm.grad), g, rtol=1e-6)  # coef clamped to 1


def test_clip_grad_norm_single_tensor_and_missing_grads(device):
    p = nn.Parameter(rumus.tensor([3.0, 4.0], device=device))
    p.grad = rumus.tensor([3.0, 4.0], device=device)
    assert clip_grad_norm_(p, 1.0).item() == pytest.approx(5.0)
    assert_close(p.grad, np.array([3.0, 4.0], np.float32) / (5.0 + 1e-6))
    q = nn.Parameter(rumus.ones(2, device=device))  # no grad: skipped
    p.grad = rumus.tensor([0.0, 2.0], device=device)
    assert clip_grad_norm_([q, p], 10.0).item() == pytest.approx(2.0)
    assert q.grad is None
    empty = clip_grad_norm_([q], 1.0)
    assert empty.item() == 0.0 and empty.shape == ()
    assert clip_grad_norm_([], 1.0).item() == 0.0


def test_clip_grad_norm_mixed_dtypes(device):
    skip_on_gpu(device, "float64")
    params, grads = params_with_grads(scale=5.0, dtypes=("float32", "float64", "float32"))
    total = clip_grad_norm_(params, 2.0)
    assert total.dtype == rumus.float64
    assert total.item() == pytest.approx(np_norm(grads, 2), rel=1e-5)
    assert params[0].grad.dtype == rumus.float32 and params[1].grad.dtype == rumus.float64
    np.testing.assert_allclose(
        to_np(params[1].grad), grads[1] * 2.0 / (total.item() + 1e-6), rtol=1e-5
    )


def test_clip_grad_norm_nonfinite(device):
    params, _ = params_with_grads(device=device)
    params[1].grad = rumus.tensor([1.0, float("nan"), 0.0, 0.0, 0.0], device=device)
    with pytest.raises(
        RuntimeError,
        match="The total norm of order 2.0 for gradients from `parameters` is non-finite",
    ):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    assert not np.isnan(to_np(params[0].grad)).any()  # nothing was scaled
    total = clip_grad_norm_(params, 1.0)  # PyTorch's default: scale by the nan norm anyway
    assert math.isnan(total.item()) and np.isnan(to_np(params[0].grad)).all()
    params[1].grad = rumus.tensor([1.0, float("inf"), 0.0, 0.0, 0.0], device=device)
    with pytest.raises(RuntimeError, match="order inf"):
        clip_grad_norm_(params, 1.0, norm_type="inf", error_if_nonfinite=True)


def test_total_norm_and_clip_with_norm(device):
    params, grads = params_with_grads(scale=3.0, device=device)
    total = get_total_norm([p.grad for p in params], norm_type=2)
    assert total.item() == pytest.approx(np_norm(grads, 2), rel=1e-5)
    clip_grads_with_norm_(params, 1.0, total)
    for prm, g in zip(params, grads):
        np.testing.assert_allclose(to_np(prm.grad), g / (total.item() + 1e-6), rtol=1e-5)
    assert get_total_norm([rumus.tensor([0.0, 2.0, 0.0], device=device)], norm_type=0).item() == 1.0


def test_clip_grad_norm_keeps_grad_out_of_the_graph(device):
    p = nn.Parameter(rumus.ones(3, device=device))
    (p * rumus.tensor([4.0, 0.0, 3.0], device=device)).sum().backward()
    total = clip_grad_norm_([p], 1.0)
    assert not total.requires_grad and not p.grad.requires_grad
    assert_close(p.grad, np.array([0.8, 0.0, 0.6], np.float32) * 5 / (5 + 1e-6))


def test_clip_grad_value(device):
    params, grads = params_with_grads(scale=2.0, device=device)
    params.append(nn.Parameter(rumus.ones(1, device=device)))  # no grad: skipped
    assert clip_grad_value_(params, 1.25) is None
    for prm, g in zip(params, grads):
        np.testing.assert_array_equal(to_np(prm.grad), np.clip(g, -1.25, 1.25).astype(np.float32))
    single = nn.Parameter(rumus.zeros(3, device=device))
    single.grad = rumus.tensor([-5.0, 0.5, 5.0], device=device)
    clip_grad_value_(single, 1)
    assert_close(single.grad, np.array([-1.0, 0.5, 1.0], np.float32))


def test_parameters_to_vector_values_and_gradient(device):
    """On the GPU (float32, no gradcheck) the gradient of a random upstream
    vector is that vector, split and reshaped (the op is a linear copy)."""
    rng = np.random.default_rng(3)
    dt = wide(device)
    arrays = [make(s, dt, rng=rng) for s in SHAPES]
    params = [nn.Parameter(tensor(a, device=device)) for a in arrays]
    vec = parameters_to_vector(params)
    assert_close(vec, np.concatenate([a.ravel() for a in arrays]))
    assert dev_of(vec) == device
    vec.square().sum().backward()
    for p, a in zip(params, arrays):
        assert_close(p.grad, 2 * a)
    leaves = [tensor(a, device=device).requires_grad_() for a in arrays]
    if device == "cpu":
        assert gradcheck(lambda *ts: parameters_to_vector(ts), leaves)
    else:
        up = make((sum(a.size for a in arrays),), dt, rng=rng)
        grads = rumus.autograd.grad(
            [parameters_to_vector(leaves)], leaves, [tensor(up, device=device)]
        )
        offset = 0
        for g, a in zip(grads, arrays):
            assert_close(g, up[offset : offset + a.size].reshape(a.shape))
            offset += a.size
    t = tensor(
        make((4, 3), dt), device=device
    ).t()  # non-contiguous parameters are flattened in row-major order
    assert_close(parameters_to_vector([t]), to_np(t).ravel())


def test_vector_to_parameters(device):
    params = [nn.Parameter(rumus.zeros(s, device=device)) for s in SHAPES]
    ids = [id(p) for p in params]
    n = sum(p.numel() for p in params)
    vec = rumus.arange(float(n), device=device)
    vector_to_parameters(vec, iter(params))
    offset = 0
    for p, s in zip(params, SHAPES):
        size = int(np.prod(s))
        assert_close(p, np.arange(offset, offset + size, dtype=np.float32).reshape(s))
        offset += size
        assert p.requires_grad and p.is_leaf and dev_of(p) == device
    assert [id(p) for p in params] == ids
    np.testing.assert_array_equal(to_np(parameters_to_vector(params)), to_np(vec))  # round trip
    with rumus.no_grad():
        vec.fill_(0.0)
    assert params[0].sum().item() > 0  # copied, not aliased (see the docstring)


def test_vector_to_parameters_errors(device):
    params = [nn.Parameter(rumus.zeros(2, 2, device=device))]
    with pytest.raises(TypeError, match="expected rumus.Tensor, but got: list"):
        vector_to_parameters([1.0, 2.0, 3.0, 4.0], params)
    with pytest.raises(RuntimeError, match="at least 4 elements, got shape \\[3\\]"):
        vector_to_parameters(rumus.zeros(3, device=device), params)
    with pytest.raises(RuntimeError, match="1-D vector"):
        vector_to_parameters(rumus.zeros(2, 2, device=device), params)
    if device == "cpu":
        with pytest.raises(
            TypeError, match="vec has dtype rumus.float64 but a parameter has dtype rumus.float32"
        ):
            vector_to_parameters(rumus.zeros(4, dtype=rumus.float64), params)
    else:  # no float64 on the GPU: another dtype mismatch
        with pytest.raises(
            TypeError, match="vec has dtype rumus.int32 but a parameter has dtype rumus.float32"
        ):
            vector_to_parameters(rumus.zeros(4, dtype=rumus.int32, device=device), params)


def test_against_torch(device):
    torch = pytest.importorskip("torch")
    for norm_type in (2.0, 1.0, 0.5, math.inf):
        params, grads = params_with_grads(scale=4.0, seed=7, device=device)
        tparams = [torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.float32)) for g in grads]
        for tp, g in zip(tparams, grads):
            tp.grad = torch.tensor(g, dtype=torch.float32)
        t_total = torch.nn.utils.clip_grad_norm_(tparams, 0.7, norm_type=norm_type)
        total = clip_grad_norm_(params, 0.7, norm_type=norm_type)
        assert total.item() == pytest.approx(t_total.item(), rel=1e-5)
        for p, tp in zip(params, tparams):
            np.testing.assert_allclose(to_np(p.grad), tp.grad.numpy(), rtol=1e-5, atol=1e-7)
    params, grads = params_with_grads(scale=4.0, seed=8, device=device)
    tparams = [torch.nn.Parameter(torch.zeros(g.shape)) for g in grads]
    for tp, g in zip(tparams, grads):
        tp.grad = torch.tensor(g, dtype=torch.float32)
    torch.nn.utils.clip_grad_value_(tparams, 0.9)
    clip_grad_value_(params, 0.9)
    for p, tp in zip(params, tparams):
        np.testing.assert_array_equal(to_np(p.grad), tp.grad.numpy())
