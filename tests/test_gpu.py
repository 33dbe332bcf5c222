"""The GPU device itself: availability, device strings, transfers, dtypes on
the GPU, mixing devices, memory pool and transfer statistics. Op values on the
GPU are checked in each op family's tests through the ``device`` fixture."""

import gc
import os

import numpy as np
import pytest
import rumus
from conftest import assert_close, need_gpu

pytestmark = pytest.mark.usefixtures("gpu")


def test_adapter_facts():
    assert rumus.gpu.is_available()
    assert rumus.gpu.device_count() >= 1
    info = rumus.gpu.adapter_info()
    for key in ("name", "backend", "device_type", "vendor", "driver", "max_buffer_size"):
        assert key in info
    assert (
        isinstance(rumus.gpu.get_device_name(), str) and rumus.gpu.get_device_name() == info["name"]
    )
    assert info["max_storage_buffer_binding_size"] >= 128 << 20


@pytest.mark.parametrize(
    "spec", ["gpu", "gpu:0", "wgpu", rumus.device("gpu"), rumus.device("gpu", 0)]
)
def test_device_spellings(spec):
    t = rumus.ones(2, device=spec)
    assert t.device == rumus.device("gpu:0")
    assert str(t.device) == "gpu:0" and t.device.type == "gpu" and t.device.index == 0
    assert t.is_gpu and not t.is_cpu and not t.is_cuda


def test_other_gpu_index_raises():
    n = rumus.gpu.device_count()
    with pytest.raises(RuntimeError, match=f"gpu:{n} is not available"):
        rumus.zeros(2, device=f"gpu:{n}")
    with pytest.raises(RuntimeError, match=f"gpu:{n} is not available"):
        rumus.gpu.synchronize(f"gpu:{n}")


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32", "uint8", "bool"])
def test_round_trip_values(dtype):
    rng = np.random.default_rng(0)
    if dtype == "bool":
        a = rng.random((3, 5)) < 0.5
    elif dtype == "float32":
        a = rng.standard_normal((3, 5)).astype(np.float32)
        a[0, 0], a[0, 1], a[0, 2] = np.nan, np.inf, -0.0
    else:
        a = rng.integers(
            0 if dtype == "uint8" else -1000, 255 if dtype == "uint8" else 1000, (3, 5)
        ).astype(dtype)
    t = rumus.tensor(a).to("gpu")
    assert t.dtype == getattr(rumus, dtype) and t.shape == (3, 5)
    back = t.cpu()
    assert back.device == rumus.device("cpu")
    np.testing.assert_array_equal(back.numpy(), a)
    if dtype == "float32":
        assert np.signbit(back.numpy()[0, 2])


def test_views_move_only_their_elements():
    base = rumus.arange(24, dtype=rumus.float32).reshape(4, 6)
    for view, expected in [
        (base.T, np.arange(24).reshape(4, 6).T),
        (base[::2, 1::3], np.arange(24).reshape(4, 6)[::2, 1::3]),
    ]:
        g = view.to("gpu")
        assert g.is_contiguous()
        np.testing.assert_array_equal(g.cpu().numpy(), expected)
    # And GPU views coming back.
    g = rumus.arange(24, dtype=rumus.float32, device="gpu").reshape(4, 6)
    np.testing.assert_array_equal(g.T.cpu().numpy(), np.arange(24).reshape(4, 6).T)
    np.testing.assert_array_equal(g[1:, ::2].cpu().numpy(), np.arange(24).reshape(4, 6)[1:, ::2])


def test_unsupported_dtypes_raise():
    with pytest.raises(TypeError, match="float64"):
        rumus.zeros(3, dtype=rumus.float64).to("gpu")
    with pytest.raises(RuntimeError, match="32 bits"):
        rumus.tensor([2**40]).to("gpu")


def test_numpy_of_gpu_tensor_raises_like_pytorch():
    t = rumus.ones(3, device="gpu")
    with pytest.raises(TypeError, match=r"Tensor.cpu\(\)"):
        t.numpy()
    with pytest.raises(TypeError, match=r"Tensor.cpu\(\)"):
        np.asarray(t)
    np.testing.assert_array_equal(t.numpy(force=True), np.ones(3, np.float32))
    assert t.tolist() == [1.0, 1.0, 1.0]
    assert rumus.tensor(2.5, device="gpu").item() == 2.5
    assert float(rumus.tensor([3.0], device="gpu")) == 3.0
    assert "device='gpu:0'" in repr(t)


def test_creation_on_the_gpu():
    for t in [
        rumus.zeros(2, 3, device="gpu"),
        rumus.ones(2, 3, device="gpu"),
        rumus.empty(2, 3, device="gpu"),
        rumus.full((2, 3), 7.0, device="gpu"),
        rumus.arange(6, device="gpu").reshape(2, 3),
        rumus.randn(2, 3, device="gpu"),
        rumus.rand(2, 3, device="gpu"),
        rumus.eye(2, 3, device="gpu"),
        rumus.linspace(0, 1, 6, device="gpu").reshape(2, 3),
        rumus.randint(0, 5, (2, 3), device="gpu"),
        rumus.tensor([[1, 2, 3], [4, 5, 6]], device="gpu"),
    ]:
        assert t.is_gpu and t.shape == (2, 3)
    np.testing.assert_array_equal(
        rumus.full((2, 2), 7, device="gpu").cpu().numpy(), np.full((2, 2), 7)
    )
    np.testing.assert_array_equal(
        rumus.eye(2, 3, device="gpu").cpu().numpy(), np.eye(2, 3, dtype=np.float32)
    )
    g = rumus.ones(4, device="gpu")
    for like in [
        rumus.zeros_like(g),
        rumus.ones_like(g),
        rumus.full_like(g, 2.0),
        rumus.empty_like(g),
        rumus.rand_like(g),
        rumus.randn_like(g),
    ]:
        assert like.is_gpu
    assert rumus.zeros_like(g, device="cpu").is_cpu
    x = rumus.ones(2, device="gpu", requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.is_gpu


def test_to_and_copy_forms():
    c = rumus.arange(4, dtype=rumus.float32)
    g = c.to("gpu")
    assert g.to("gpu") is g and g.gpu() is g and c.cpu() is c
    assert g.to("gpu", copy=True) is not g
    h = c.to("gpu", rumus.int64)
    assert h.is_gpu and h.dtype == rumus.int64
    assert c.to(g).is_gpu
    assert g.to(device="cpu", dtype=rumus.int32).dtype == rumus.int32
    # float64 is cast on the host side of the transfer, both ways.
    h64 = rumus.full((3,), 1.5, dtype=rumus.float64).to("gpu", rumus.float32)
    assert h64.is_gpu and h64.tolist() == [1.5] * 3
    assert h64.to("cpu", rumus.float64).dtype == rumus.float64
    dst = rumus.zeros(4, device="gpu")
    dst.copy_(c)
    np.testing.assert_array_equal(dst.cpu().numpy(), [0, 1, 2, 3])
    back = rumus.zeros(4)
    back.copy_(g * 2)
    np.testing.assert_array_equal(back.numpy(), [0, 2, 4, 6])


def test_mixing_devices_raises_but_0d_cpu_tensors_act_as_numbers():
    g = rumus.ones(3, device="gpu")
    with pytest.raises(RuntimeError, match="same device"):
        g + rumus.ones(3)
    with pytest.raises(RuntimeError, match="same device"):
        rumus.ones(3) * g
    with pytest.raises(RuntimeError, match="same device"):
        rumus.where(rumus.ones(3, dtype=rumus.bool), g, rumus.zeros(3))
    r = g * rumus.tensor(3.0)
    assert r.is_gpu and r.tolist() == [3.0, 3.0, 3.0]


MISMATCH = (
    "Expected all tensors to be on the same device, but found at least two devices, gpu:0 and cpu!"
)


def _mixed_device_calls():
    """Multi-operand ops with one CPU operand (not 0-d) among GPU ones."""
    g, c = rumus.ones(3, 4, device="gpu"), rumus.ones(3, 4)
    gi = rumus.tensor([[0, 1, 2, 0]], device="gpu")
    return {
        "where(cpu mask)": lambda: rumus.where(c > 0, g, g),
        "where(cpu y)": lambda: rumus.where(g > 0, g, c),
        "masked_fill(cpu mask)": lambda: g.masked_fill(c > 0, 1.0),
        "clamp(cpu bounds)": lambda: g.clamp(c, None),
        "index_put(cpu value)": lambda: g.clone().__setitem__(gi[0, :3], c[0]),
        "scatter(cpu src)": lambda: g.scatter(0, gi, c),
        "scatter_add(cpu src)": lambda: g.scatter_add(0, gi, c),
        "hypot": lambda: rumus.hypot(g, c),
        "xlogy": lambda: rumus.xlogy(g, c),
        "lerp": lambda: g.lerp(c, 0.5),
        "addcmul": lambda: g.addcmul(c, g),
        "addmm": lambda: g[:, :3].addmm(g[:, :3], c[:3, :3]),
        "kron": lambda: rumus.kron(g, c),
    }


@pytest.mark.parametrize("name", list(_mixed_device_calls()))
def test_mixing_devices_names_both_devices(name):
    """No internal error: PyTorch's RuntimeError naming the op's devices."""
    with pytest.raises(RuntimeError) as e:
        _mixed_device_calls()[name]()
        rumus.gpu.synchronize()
    assert MISMATCH in str(e.value) and "internal" not in str(e.value)


def test_0d_cpu_tensors_join_gpu_ops():
    g = rumus.arange(3.0, device="gpu")
    r = rumus.where(rumus.tensor(True), g, -g)
    assert r.is_gpu and r.tolist() == [0.0, 1.0, 2.0]
    t = g.clone()
    t[rumus.tensor([0, 2], device="gpu")] = rumus.tensor(7.0)
    assert t.tolist() == [7.0, 1.0, 7.0]


def test_ops_without_gpu_kernel_raise_not_implemented():
    g = rumus.zeros(3, dtype=rumus.uint8, device="gpu")
    idx = rumus.tensor([0, 2], device="gpu")
    with pytest.raises(NotImplementedError, match="GPU"):
        g.scatter_add(0, idx, rumus.ones(2, dtype=rumus.uint8, device="gpu"))


def test_empty_batched_matmul_on_gpu():
    # a zero-sized batch dim: an empty result, not a division by zero
    a, b = rumus.ones(1, device="gpu"), rumus.ones(0, 0, 1, 0, device="gpu")
    assert (a @ b).shape == (0, 0, 0) and rumus.matmul(a, b).device.type == "gpu"
    assert (rumus.ones(0, 2, 3, device="gpu") @ rumus.ones(3, 4, device="gpu")).shape == (0, 2, 4)


def test_autograd_across_devices():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    x = rumus.tensor(a, requires_grad=True)
    y = (x.to("gpu").exp() * 2 + x.gpu().sin()).cpu()
    y.backward(rumus.ones_like(y))
    assert x.grad.is_cpu
    assert_close(x.grad, 2 * np.exp(a) + np.cos(a), rtol=1e-5, atol=1e-6)
    xg = rumus.tensor(a, device="gpu", requires_grad=True)
    z = xg.tanh() * xg
    z.backward(rumus.ones_like(z))
    assert xg.grad.is_gpu
    t = np.tanh(a)
    assert_close(xg.grad, t + a * (1 - t * t), rtol=1e-5, atol=1e-6)


def test_memory_pool_reuses_buffers():
    rumus.gpu.synchronize()
    gc.collect()
    base = rumus.gpu.memory_allocated()
    t = rumus.zeros(1000, 1000, device="gpu")
    assert rumus.gpu.memory_allocated() >= base + 4_000_000
    assert rumus.gpu.max_memory_allocated() >= rumus.gpu.memory_allocated()
    del t
    assert rumus.gpu.memory_allocated() == base
    assert rumus.gpu.memory_reserved() >= 4_000_000
    u = rumus.ones(1000, 1000, device="gpu") * 2
    del u
    reserved = rumus.gpu.memory_reserved()
    for _ in range(20):
        u = rumus.ones(1000, 1000, device="gpu") * 2
        del u
    assert rumus.gpu.memory_reserved() == reserved
    rumus.gpu.empty_cache()
    assert rumus.gpu.memory_reserved() < reserved
    rumus.gpu.reset_peak_memory_stats()
    assert rumus.gpu.max_memory_allocated() == rumus.gpu.memory_allocated()


def test_transfer_stats_count_only_real_transfers():
    g = rumus.ones(256, device="gpu")
    rumus.gpu.synchronize()
    rumus.gpu.reset_transfer_stats()
    h = (g * 3 + 1).exp().sigmoid()
    rumus.gpu.synchronize()
    s = rumus.gpu.transfer_stats()
    assert s["to_host_bytes"] == 0 and s["to_host_copies"] == 0 and s["to_device_bytes"] == 0
    h.cpu()
    s = rumus.gpu.transfer_stats()
    assert s["to_host_bytes"] == 256 * 4 and s["to_host_copies"] == 1
    rumus.tensor(np.zeros(10, np.float32)).to("gpu")
    assert rumus.gpu.transfer_stats()["to_device_bytes"] == 40


def test_huge_allocation_is_an_error_not_a_crash():
    with pytest.raises(RuntimeError, match="GPU out of memory"):
        rumus.empty(1 << 40, device="gpu")


def test_many_dispatches_flush_in_batches():
    x = rumus.zeros(64, device="gpu")
    for _ in range(1000):
        x = x + 1
    assert x.tolist() == [1000.0] * 64


def _mlp(seed=0):
    rumus.manual_seed(seed)
    return rumus.nn.Sequential(rumus.nn.Linear(16, 32), rumus.nn.ReLU(), rumus.nn.Linear(32, 4))


def _batch(step, n=8):
    rng = np.random.default_rng(step)
    return rng.standard_normal((n, 16)).astype(np.float32), rng.integers(0, 4, n)


@pytest.mark.parametrize(
    "opt", ["sgd", "adam", "adamw", "rmsprop", "nadam", "radam", "adagrad", "adamax"]
)
def test_training_matches_cpu(opt):
    losses = {}
    for device in ("cpu", "gpu"):
        model = _mlp().to(device)
        make = {
            "sgd": lambda p: rumus.optim.SGD(
                p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3
            ),
            "adam": lambda p: rumus.optim.Adam(p, lr=1e-2, amsgrad=True),
            "adamw": lambda p: rumus.optim.AdamW(p, lr=1e-2),
            "rmsprop": lambda p: rumus.optim.RMSprop(p, lr=1e-2, momentum=0.5, centered=True),
            "nadam": lambda p: rumus.optim.NAdam(p, lr=1e-2),
            "radam": lambda p: rumus.optim.RAdam(p, lr=1e-2),
            "adagrad": lambda p: rumus.optim.Adagrad(p, lr=1e-1),
            "adamax": lambda p: rumus.optim.Adamax(p, lr=1e-2),
        }[opt]
        o = make(model.parameters())
        out = []
        for step in range(8):
            x, y = _batch(step)
            loss = rumus.nn.functional.cross_entropy(
                model(rumus.tensor(x, device=device)), rumus.tensor(y, device=device)
            )
            o.zero_grad()
            loss.backward()
            o.step()
            out.append(loss.item())
        losses[device] = out
        assert all(p.is_gpu == (device == "gpu") for p in model.parameters())
    np.testing.assert_allclose(losses["gpu"], losses["cpu"], rtol=2e-5, atol=1e-6)


def test_training_step_moves_nothing_to_host():
    model = _mlp().gpu()
    opt = rumus.optim.Adam(model.parameters(), lr=1e-3)
    batches = [tuple(rumus.tensor(a, device="gpu") for a in _batch(s)) for s in range(4)]

    def step(x, y):
        loss = rumus.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    step(*batches[0])
    rumus.gpu.synchronize()
    rumus.gpu.reset_transfer_stats()
    for x, y in batches[1:]:
        loss = step(x, y)
    rumus.gpu.synchronize()
    assert rumus.gpu.transfer_stats()["to_host_bytes"] == 0
    loss.item()
    assert rumus.gpu.transfer_stats()["to_host_bytes"] == 4


def test_memory_stays_flat_over_1000_steps():
    model = rumus.nn.Sequential(rumus.nn.Linear(8, 8), rumus.nn.Tanh(), rumus.nn.Linear(8, 1)).gpu()
    opt = rumus.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    x = rumus.randn(4, 8, device="gpu")
    y = rumus.randn(4, 1, device="gpu")
    reserved = []
    for i in range(1000):
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i in (10, 999):
            reserved.append(rumus.gpu.memory_reserved())
    assert reserved[0] == reserved[1]
    assert np.isfinite(loss.item())


def test_cnn_forward_backward_matches_cpu():
    rumus.manual_seed(0)
    net = rumus.nn.Sequential(
        rumus.nn.Conv2d(1, 4, 3, padding=1),
        rumus.nn.BatchNorm2d(4),
        rumus.nn.ReLU(),
        rumus.nn.MaxPool2d(2),
        rumus.nn.Conv2d(4, 6, 3, stride=2, padding=1),
        rumus.nn.AvgPool2d(2),
        rumus.nn.Flatten(),
        rumus.nn.LayerNorm(6),
        rumus.nn.Linear(6, 3),
        rumus.nn.LogSoftmax(dim=1),
    )
    import copy

    gnet = copy.deepcopy(net).gpu()
    x = np.random.default_rng(0).standard_normal((5, 1, 8, 8)).astype(np.float32)
    outs, grads = [], []
    for m, dev in ((net, "cpu"), (gnet, "gpu")):
        xt = rumus.tensor(x, device=dev, requires_grad=True)
        out = m(xt)
        out.sum().backward()
        outs.append(out.detach().cpu().numpy())
        grads.append([xt.grad.cpu().numpy()] + [p.grad.cpu().numpy() for p in m.parameters()])
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-4, atol=1e-5)
    for g, c in zip(grads[1], grads[0]):
        np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-4)


def test_random_numbers_are_drawn_on_the_device():
    rumus.manual_seed(3)
    rumus.gpu.synchronize()
    rumus.gpu.reset_transfer_stats()
    a = rumus.randn(200_000, device="gpu")
    u = rumus.rand(200_000, device="gpu")
    rumus.gpu.synchronize()
    assert rumus.gpu.transfer_stats()["to_device_bytes"] == 0
    x, y = a.cpu().numpy(), u.cpu().numpy()
    assert abs(x.mean()) < 0.01 and abs(x.std() - 1) < 0.01
    assert y.min() >= 0 and y.max() < 1 and abs(y.mean() - 0.5) < 0.01
    rumus.manual_seed(3)
    np.testing.assert_array_equal(rumus.randn(200_000, device="gpu").cpu().numpy(), x)
    assert not np.array_equal(rumus.randn(200_000, device="gpu").cpu().numpy(), x)
    t = rumus.empty(1000, 3, device="gpu").normal_(2.0, 0.5)[:, 1]
    assert abs(t.cpu().numpy().mean() - 2.0) < 0.1


def test_dropout_on_the_gpu():
    x = rumus.ones(100_000, device="gpu", requires_grad=True)
    y = rumus.nn.functional.dropout(x, p=0.3, training=True)
    y.backward(rumus.ones_like(y))
    v, g = y.detach().cpu().numpy(), x.grad.cpu().numpy()
    kept = v != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(v[kept], 1 / 0.7, rtol=1e-6)
    np.testing.assert_array_equal(g, v)
    m = rumus.empty(1000, device="gpu", dtype=rumus.bool).bernoulli_(0.25)
    assert m.dtype == rumus.bool and abs(m.float().mean().item() - 0.25) < 0.06


def test_out_of_range_gpu_index_is_reported_once_at_the_next_read():
    t = rumus.arange(12.0, device="gpu").reshape(3, 4)
    bad = t.gather(1, rumus.tensor([[0, 9]], device="gpu"))
    with pytest.raises(
        RuntimeError,
        match=r"gather\(\).*out of bounds for dimension 1 with size 4.*detected on the GPU",
    ):
        bad.cpu()
    # Reported once: later work reads normally.
    assert t.gather(1, rumus.tensor([[0, 3]], device="gpu")).tolist() == [[0.0, 3.0]]
    rumus.gpu.synchronize()


def test_grad_on_another_device_is_refused():
    p = rumus.zeros(3, device="gpu", requires_grad=True)
    with pytest.raises(RuntimeError, match="different device"):
        p.grad = rumus.zeros(3)


def test_float16_on_the_gpu():
    if not rumus.gpu.adapter_info()["shader_f16"]:
        with pytest.raises(TypeError, match="shader-f16"):
            rumus.ones(2, dtype=rumus.float16, device="gpu")
        return
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 7)).astype(np.float16)
    g = rumus.from_numpy(a).to("gpu")
    assert g.dtype == rumus.float16 and g.is_gpu
    np.testing.assert_array_equal(g.cpu().numpy(), a)
    # Views starting at odd element offsets (half a 4-byte word) come back whole.
    np.testing.assert_array_equal(g[:, 1:].cpu().numpy(), a[:, 1:])
    np.testing.assert_array_equal(g[1:, 3].cpu().numpy(), a[1:, 3])
    np.testing.assert_array_equal(g.T.contiguous().cpu().numpy(), a.T)
    # Casts both ways, with float16's rounding and overflow to infinity.
    wide = np.array([70000.0, -1e6, 65504.0, 1 / 3, -2.75, 0.0], np.float32)
    with np.errstate(over="ignore"):
        expect = wide.astype(np.float16)
    np.testing.assert_array_equal(rumus.tensor(wide, device="gpu").half().cpu().numpy(), expect)
    np.testing.assert_array_equal(g.float().cpu().numpy(), a.astype(np.float32))
    np.testing.assert_array_equal(g.long().cpu().numpy(), np.trunc(a).astype(np.int64))
    np.testing.assert_array_equal(g.bool().cpu().numpy(), a != 0)
    np.testing.assert_array_equal(
        rumus.tensor([1, -3, 7], device="gpu").half().cpu().numpy(),
        np.array([1, -3, 7], np.float16),
    )
    z = rumus.zeros(2, 3, dtype=rumus.float16, device="gpu")
    z.fill_(2.5)
    np.testing.assert_array_equal(z.cpu().numpy(), np.full((2, 3), 2.5, np.float16))
    np.testing.assert_array_equal(
        rumus.where(g > 0, g, 0.5).cpu().numpy(), np.where(a > 0, a, np.float16(0.5))
    )
    # Ops keep float16 and compute in float32; gradients come back as float16.
    f = a.astype(np.float32)
    y = (g * 2 + 1).exp()
    assert y.dtype == rumus.float16
    np.testing.assert_allclose(y.cpu().numpy().astype(np.float32), np.exp(f * 2 + 1), rtol=2e-3)
    m = g @ g.T
    assert m.dtype == rumus.float16
    np.testing.assert_allclose(m.cpu().numpy().astype(np.float32), f @ f.T, rtol=1e-2, atol=1e-2)
    # Float16 kernels (float32 accumulation): the vec4 matmul, softmax, reductions.
    b = rng.standard_normal((8, 12)).astype(np.float16)
    c = rng.standard_normal((12, 16)).astype(np.float16)
    bc = rumus.from_numpy(b).to("gpu") @ rumus.from_numpy(c).to("gpu")
    assert bc.dtype == rumus.float16
    np.testing.assert_allclose(
        bc.cpu().numpy(), b.astype(np.float32) @ c.astype(np.float32), rtol=1e-2, atol=1e-2
    )
    sm = rumus.nn.functional.softmax(g, dim=1)
    assert sm.dtype == rumus.float16
    e = np.exp(f - f.max(1, keepdims=True))
    np.testing.assert_allclose(sm.cpu().numpy(), e / e.sum(1, keepdims=True), rtol=2e-3, atol=1e-3)
    for got, want in [
        (g.sum(1), f.sum(1)),
        (g.mean(), f.mean()),
        (g.max(0).values, f.max(0)),
        (g.amin(1), f.min(1)),
    ]:
        assert got.dtype == rumus.float16
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=2e-3, atol=2e-3)
    # Indexing reads and writes 2-byte elements.
    idx = rumus.tensor([4, 0, 33, 4], device="gpu")
    np.testing.assert_array_equal(g.flatten()[idx].cpu().numpy(), a.ravel()[[4, 0, 33, 4]])
    h = g.clone()
    h[1, 2:5] = 7.5
    ref = a.copy()
    ref[1, 2:5] = 7.5
    np.testing.assert_array_equal(h.cpu().numpy(), ref)
    # Convolution (im2col, matmul, col2im in the backward) and pooling, against float32 on the GPU.
    F = rumus.nn.functional
    img = rng.standard_normal((2, 3, 6, 6)).astype(np.float16)
    ker = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float16)
    for dt in (rumus.float16, rumus.float32):
        xi = rumus.from_numpy(img.astype(np.float32)).to("gpu").to(dt).requires_grad_()
        ki = rumus.from_numpy(ker.astype(np.float32)).to("gpu").to(dt)
        y = F.max_pool2d(F.conv2d(xi, ki, padding=1), 2) + F.avg_pool2d(
            F.conv2d(xi, ki, padding=1), 2
        )
        y.sum().backward()
        assert y.dtype == dt and xi.grad.dtype == dt
        if dt == rumus.float16:
            y16, g16 = y.detach().float().cpu().numpy(), xi.grad.float().cpu().numpy()
        else:
            np.testing.assert_allclose(y16, y.detach().cpu().numpy(), rtol=1e-2, atol=2e-2)
            np.testing.assert_allclose(g16, xi.grad.cpu().numpy(), rtol=1e-2, atol=2e-2)
    x = g.clone().requires_grad_()
    (x * x).sum().backward()
    assert x.grad.dtype == rumus.float16 and x.grad.is_gpu
    np.testing.assert_array_equal(x.grad.cpu().numpy(), 2 * a)
    r = rumus.randn(1000, dtype=rumus.float16, device="gpu")
    assert r.dtype == rumus.float16 and abs(float(r.float().mean())) < 0.15


def test_matmul_split_k(gpu):
    # Few output tiles and a long k: the product runs as k slices plus a sum
    # (shapes chosen to take that path: 2 x 2 tiles, k = 1024 in 4 slices).
    rng = np.random.default_rng(3)
    a = rng.standard_normal((1024, 200)).astype(np.float32)
    b = rng.standard_normal((1024, 136)).astype(np.float32)
    ga = rumus.from_numpy(a).to("gpu").requires_grad_()
    gb = rumus.from_numpy(b).to("gpu")
    out = ga.T @ gb  # A read along m (a transposed view)
    assert tuple(out.shape) == (200, 136)
    np.testing.assert_allclose(out.detach().cpu().numpy(), a.T @ b, rtol=1e-4, atol=1e-3)
    out.sum().backward()
    np.testing.assert_allclose(
        ga.grad.cpu().numpy(),
        np.broadcast_to(b.sum(1, keepdims=True), a.shape),
        rtol=1e-4,
        atol=1e-3,
    )
    x = rumus.from_numpy(a.T.copy()).to("gpu").unsqueeze(0)  # batch dims of size 1 keep their shape
    y = x @ gb
    assert tuple(y.shape) == (1, 200, 136)
    np.testing.assert_allclose(y.cpu().numpy()[0], a.T @ b, rtol=1e-4, atol=1e-3)


# ---- tensors beyond one binding's size limit (run in chunks of windows) ----


@pytest.fixture(scope="module")
def big():
    """A float32 tensor just over the adapter's binding limit, as (NumPy, GPU);
    a multiple of 8 elements so that it reshapes to (-1, 8)."""
    need_gpu()
    limit = rumus.gpu.adapter_info()["max_storage_buffer_binding_size"]
    n = (limit // 32 + 4096) * 8
    if n * 4 > 600 << 20:
        pytest.skip(f"the binding limit ({limit} bytes) needs a tensor over 600 MB")
    x = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    a = rumus.from_numpy(x).to("gpu")
    assert a.element_size() * a.numel() > limit
    yield x, a
    del a
    gc.collect()
    rumus.gpu.empty_cache()


def test_large_round_trip_and_elementwise(big):
    x, a = big
    np.testing.assert_array_equal(a.cpu().numpy(), x)
    y = (a * 2).relu() + a
    np.testing.assert_array_equal(y.cpu().numpy(), np.maximum(x * 2, 0) + x)
    a.mul_(1.0)
    assert a.is_gpu


def test_large_views_and_casts(big):
    x, a = big
    np.testing.assert_array_equal(a[1::2].contiguous().cpu().numpy(), x[1::2])
    if rumus.gpu.adapter_info()["shader_f16"]:
        h = a.to(rumus.float16)
        np.testing.assert_array_equal(
            h.to(rumus.float32).cpu().numpy(), x.astype(np.float16).astype(np.float32)
        )


def test_large_reductions(big):
    x, a = big
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(a.sum().item(), x64.sum(), rtol=1e-5, atol=1e-2)
    np.testing.assert_allclose(a.mean().item(), x64.mean(), rtol=1e-5, atol=1e-8)
    assert a.max().item() == x.max()
    m, xm = a.reshape(-1, 8), x.reshape(-1, 8)
    np.testing.assert_allclose(m.sum(1).cpu().numpy(), xm.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        m.sum(0).cpu().numpy(), x64.reshape(-1, 8).sum(0), rtol=1e-5, atol=1e-2
    )
    v, i = m.max(1)
    np.testing.assert_array_equal(v.cpu().numpy(), xm.max(1))
    np.testing.assert_array_equal(i.cpu().numpy(), xm.argmax(1))


def test_large_matmul(big):
    x, a = big
    w = np.random.default_rng(1).standard_normal((8, 4), dtype=np.float32)
    got = (a.reshape(-1, 8) @ rumus.from_numpy(w).to("gpu")).cpu().numpy()
    np.testing.assert_allclose(got, x.reshape(-1, 8) @ w, rtol=1e-4, atol=1e-4)


def test_large_unsupported_op_raises(big):
    _, a = big
    with pytest.raises(NotImplementedError, match="binding limit"):
        a.cumsum(0)  # a scan along one row longer than a binding


def test_large_indexing(big):
    x, a = big
    n = x.size
    idx = rumus.tensor([0, 5, n - 1, n // 2, 5], device="gpu")
    np.testing.assert_array_equal(a[idx].cpu().numpy(), x[[0, 5, n - 1, n // 2, 5]])
    b = a.clone()
    b[idx] = 7.0
    got = b.cpu().numpy()
    assert (got[[0, 5, n - 1, n // 2]] == 7.0).all() and got[1] == x[1] and got[n - 2] == x[n - 2]
    del b, got
    # max-pool's backward scatters into a tensor of the input's size.
    planes = n // 64
    p = a[: planes * 64].reshape(planes, 8, 8).clone().requires_grad_()
    rumus.nn.functional.max_pool2d(p, 2).sum().backward()
    g = p.grad.cpu().numpy().reshape(planes, 4, 2, 4, 2)
    xm = x[: planes * 64].reshape(planes, 4, 2, 4, 2)
    np.testing.assert_array_equal(g.sum((2, 4)), np.ones((planes, 4, 4), np.float32))
    assert (g[xm == xm.max((2, 4), keepdims=True)] == 1).all()
    del p, g, xm


def test_large_pooling(big):
    x, a = big
    planes = x.size // 64
    xm = x[: planes * 64].reshape(planes, 4, 2, 4, 2)
    v = a[: planes * 64].reshape(planes, 8, 8)
    np.testing.assert_array_equal(
        rumus.nn.functional.max_pool2d(v, 2).cpu().numpy(), xm.max((2, 4))
    )
    p = v.clone().requires_grad_()
    y = rumus.nn.functional.avg_pool2d(p, 2)
    np.testing.assert_allclose(y.detach().cpu().numpy(), xm.mean((2, 4)), rtol=1e-5, atol=1e-6)
    y.sum().backward()
    np.testing.assert_array_equal(p.grad.cpu().numpy(), np.full((planes, 8, 8), 0.25, np.float32))
    del p, y


def test_large_layer_norm(big):
    x, a = big
    m = 1024  # long rows: the kernels give each row a workgroup
    rows = x.size // m
    x = x[: rows * m]
    rng = np.random.default_rng(2)
    w, b = rng.standard_normal(m).astype(np.float32), rng.standard_normal(m).astype(np.float32)
    p = a[: rows * m].clone().requires_grad_()
    gw, gb = (rumus.from_numpy(v).to("gpu").requires_grad_() for v in (w, b))
    y = rumus.nn.functional.layer_norm(p.reshape(rows, m), (m,), gw, gb)
    xm = x.reshape(rows, m).astype(np.float64)
    rs = 1 / np.sqrt(xm.var(1, keepdims=True) + 1e-5)
    xh = (xm - xm.mean(1, keepdims=True)) * rs
    np.testing.assert_allclose(y.detach().cpu().numpy(), xh * w + b, rtol=1e-4, atol=1e-4)
    y.sum().backward()
    # d/dw sum(y) = the column sums of x-hat over all rows, d/db = the row count.
    np.testing.assert_allclose(gw.grad.cpu().numpy(), xh.sum(0), rtol=1e-4, atol=0.05)
    np.testing.assert_allclose(gb.grad.cpu().numpy(), np.full(m, rows), rtol=1e-5)
    gx = rs * (w - w.mean() - xh * (w * xh).mean(1, keepdims=True))
    np.testing.assert_allclose(p.grad.cpu().numpy().reshape(rows, m), gx, rtol=1e-3, atol=1e-4)
    del p, y, xm, xh, rs, gx
    gc.collect()
    rumus.gpu.empty_cache()


def test_large_softmax_and_optimizer_step(big):
    x, a = big
    w = np.arange(8, dtype=np.float32) / 8
    p = a.clone().requires_grad_()
    s = rumus.nn.functional.softmax(p.reshape(-1, 8), dim=1)
    xm = x.reshape(-1, 8).astype(np.float64)
    e = np.exp(xm - xm.max(1, keepdims=True))
    sm = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(s.detach().cpu().numpy(), sm, rtol=1e-5, atol=1e-6)
    (s * rumus.from_numpy(w).to("gpu")).sum().backward()
    np.testing.assert_allclose(
        p.grad.cpu().numpy().reshape(-1, 8),
        sm * (w - (sm * w).sum(1, keepdims=True)),
        rtol=1e-4,
        atol=1e-6,
    )
    del s, e, sm, xm
    # Adam's first step: p - lr * g / (|g| + eps), chunk by chunk.
    g = p.grad.cpu().numpy().astype(np.float64)
    rumus.optim.Adam([p], lr=0.1).step()
    np.testing.assert_allclose(
        p.detach().cpu().numpy(), x - 0.1 * g / (np.abs(g) + 1e-8), rtol=1e-5, atol=1e-6
    )
    del p, g
    gc.collect()
    rumus.gpu.empty_cache()


def test_large_conv2d_columns():
    # The im2col columns of the batch exceed one binding (the input does not):
    # the convolution runs over chunks of images; gradients match the CPU's.
    need_gpu()
    limit = rumus.gpu.adapter_info()["max_storage_buffer_binding_size"]
    n = limit // (16 * 9 * 32 * 32 * 4) + 2
    if n * 16 * 9 * 32 * 32 * 4 > 1200 << 20:
        pytest.skip(f"the binding limit ({limit} bytes) needs columns over 1.2 GB")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((n, 16, 32, 32)).astype(np.float32)
    w = (rng.standard_normal((4, 16, 3, 3)) * 0.1).astype(np.float32)
    outs = []
    for dev in ("cpu", "gpu"):
        xt, wt = (rumus.from_numpy(v).to(dev).requires_grad_() for v in (x, w))
        y = rumus.nn.functional.conv2d(xt, wt, padding=1)
        (y * y).sum().backward()
        outs.append([t.detach().cpu().numpy() for t in (y, xt.grad, wt.grad)])
    for c, g in zip(*outs):
        np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-3 * np.abs(c).max())
    del outs
    gc.collect()
    rumus.gpu.empty_cache()


def test_large_random_fill(big):
    n = big[0].size
    rumus.manual_seed(7)
    u = rumus.rand(n, device="gpu").cpu().numpy()
    assert (
        u.min() >= 0
        and u.max() < 1
        and abs(u.mean() - 0.5) < 1e-3
        and abs(u.std() - 12**-0.5) < 1e-3
    )
    # The same seed gives the same numbers; a prefix does not depend on the size,
    # and later chunks continue the stream instead of repeating it.
    rumus.manual_seed(7)
    np.testing.assert_array_equal(rumus.rand(1000, device="gpu").cpu().numpy(), u[:1000])
    half = n // 2 // 4 * 4
    assert len(np.intersect1d(u[:1000], u[half : half + 1000])) < 10
    rumus.manual_seed(7)
    z = rumus.randn(n, device="gpu").cpu().numpy()
    assert abs(z.mean()) < 1e-3 and abs(z.std() - 1) < 1e-3
    del u, z
    rumus.gpu.empty_cache()


def test_kernels_with_wgpu_runtime_checks_give_the_same_results():
    """RUMUS_GPU_SHADER_CHECKS=1 builds every kernel with wgpu's injected
    checks (the default leaves them out): a matmul, a reduction, softmax and a
    fused chain agree with NumPy either way."""
    import subprocess
    import sys

    code = (
        "import rumus, numpy as np\n"
        "rng = np.random.default_rng(0)\n"
        "a = rng.standard_normal((33, 70)).astype(np.float32)\n"
        "b = rng.standard_normal((70, 21)).astype(np.float32)\n"
        "x, y = rumus.from_numpy(a).to('gpu'), rumus.from_numpy(b).to('gpu')\n"
        "out = [(x @ y).cpu().numpy(), x.sum(1).cpu().numpy(),\n"
        "       x.softmax(1).cpu().numpy(), (x.exp() * 2 - 1).cpu().numpy()]\n"
        "ref = [a @ b, a.sum(1), np.exp(a) / np.exp(a).sum(1, keepdims=True), np.exp(a) * 2 - 1]\n"
        "for o, r in zip(out, ref):\n"
        "    np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-4)\n"
        "print('ok')\n"
    )
    for flag in ("0", "1"):
        env = dict(os.environ, RUMUS_GPU_SHADER_CHECKS=flag)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
