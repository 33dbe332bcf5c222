"""Automatic mixed precision: autocast's op policy, regions and cast cache, and
GradScaler with its fused inf/NaN check (rumus/amp, rust/optim/amp.rs)."""

import threading

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F
from conftest import need_gpu
from rumus import nn
from rumus.amp import GradScaler, autocast_mode

# (device, low dtype): PyTorch's defaults (bfloat16 on the CPU, float16 on the GPU),
# float16 on the CPU and bfloat16 on the GPU.
CASES = [("cpu", "bfloat16"), ("cpu", "float16"), ("gpu", "float16"), ("gpu", "bfloat16")]


@pytest.fixture(params=CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def case(request):
    dev, low = request.param
    if dev == "gpu":
        need_gpu()
    return dev, getattr(rumus, low)


def rand(rng, *shape, dev="cpu", requires_grad=False):
    t = rumus.tensor(rng.standard_normal(shape).astype(np.float32), device=dev)
    return t.requires_grad_() if requires_grad else t


def f32(t):
    return t.float().cpu().numpy()


# ---- the op policy ----


def test_lower_precision_ops(case, rng):
    dev, low = case
    a, b = rand(rng, 3, 4, dev=dev), rand(rng, 4, 5, dev=dev)
    x3, y3 = rand(rng, 2, 3, 4, dev=dev), rand(rng, 2, 4, 5, dev=dev)
    c = rand(rng, 3, 5, dev=dev)
    w = rand(rng, 5, 4, dev=dev)
    img, k = rand(rng, 1, 2, 5, 5, dev=dev), rand(rng, 3, 2, 3, 3, dev=dev)
    q = rand(rng, 1, 2, 3, 4, dev=dev)
    with rumus.autocast(dev, dtype=low):
        results = {
            "matmul": rumus.matmul(a, b),
            "@": a @ b,
            "Tensor.matmul": a.matmul(b),
            "mm": rumus.mm(a, b),
            "Tensor.mm": a.mm(b),
            "bmm": rumus.bmm(x3, y3),
            "addmm": rumus.addmm(c, a, b),
            "baddbmm": rumus.baddbmm(rumus.zeros(2, 3, 5, device=dev), x3, y3),
            "addbmm": rumus.addbmm(c, x3, y3),
            "linear": F.linear(a, w),
            "nn.Linear": nn.Linear(4, 5).to(dev)(a),
            "conv1d": F.conv1d(img[:, :, 0], k[:, :, 0]),
            "conv2d": F.conv2d(img, k),
            "conv_transpose2d": F.conv_transpose2d(img, k.transpose(0, 1)),
            "sdpa": F.scaled_dot_product_attention(q, q, q),
        }
    for name, r in results.items():
        assert r.dtype == low, name
    # Values: the float32 result up to the low dtype's rounding.
    tol = 0.1 if low == rumus.bfloat16 else 0.02
    np.testing.assert_allclose(f32(results["matmul"]), f32(a) @ f32(b), rtol=tol, atol=tol)
    np.testing.assert_allclose(f32(results["linear"]), f32(a) @ f32(w).T, rtol=tol, atol=tol)


def test_float32_ops(case, rng):
    dev, low = case
    x = rand(rng, 4, 3, dev=dev).to(low)
    target = rumus.tensor([0, 2, 1, 0], device=dev)
    with rumus.autocast(dev, dtype=low):
        for name, r in {
            "mse_loss": F.mse_loss(x, x * 0.5),
            "l1_loss": F.l1_loss(x, x * 0.5),
            "cross_entropy": F.cross_entropy(x, target),
            "nll_loss": F.nll_loss(x, target),
            "bce_with_logits": F.binary_cross_entropy_with_logits(x, (x > 0).to(low)),
            "kl_div": F.kl_div(x, x, reduction="sum"),
        }.items():
            assert r.dtype == rumus.float32, name
        if dev == "gpu":
            # The GPU keeps these in float32 too.
            gpu_only = {
                "softmax": F.softmax(x, -1),
                "Tensor.softmax": x.softmax(-1),
                "log_softmax": F.log_softmax(x, -1),
                "exp": x.exp(),
                "rumus.exp": rumus.exp(x),
                "log": x.abs().log(),
                "pow": x.pow(2),
                "**": x**2,
                "sum": x.sum(),
                "cumsum": x.cumsum(0),
                "layer_norm": F.layer_norm(x, (3,)),
                "softplus": F.softplus(x),
            }
            for name, r in gpu_only.items():
                assert r.dtype == rumus.float32, name
            # An explicit output dtype wins.
            assert x.sum(dtype=rumus.float16).dtype == rumus.float16
        else:
            # On the CPU PyTorch's lists leave these in the input's dtype.
            assert F.softmax(x, -1).dtype == low
            assert x.exp().dtype == low
            assert x.sum().dtype == low
        np.testing.assert_allclose(
            F.mse_loss(x, x * 0.5).item(), np.mean((f32(x) * 0.5) ** 2), rtol=1e-5
        )


GPU_FP32_UNARY = "acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan"


@pytest.mark.parametrize("name", GPU_FP32_UNARY.split())
def test_gpu_float32_unary_list(case, name):
    dev, low = case
    x = rumus.full((3,), 0.5, device=dev).to(low)
    with rumus.autocast(dev, dtype=low):
        for r in (getattr(rumus, name)(x), getattr(x, name)()):
            # The GPU runs them in float32; PyTorch's CPU list leaves them alone.
            assert r.dtype == (rumus.float32 if dev == "gpu" else low), name


def test_promotion_and_untouched_inputs(case, rng):
    dev, low = case
    a = rand(rng, 3, 3, dev=dev)
    with rumus.autocast(dev, dtype=low):
        h = a @ a  # low
        assert (h + a).dtype == rumus.float32  # binary ops promote
        assert rumus.cat([h, a]).dtype == rumus.float32
        assert rumus.stack([h, a]).dtype == rumus.float32
        assert rumus.concat([h, a]).dtype == rumus.float32
        assert rumus.addcmul(a, h, h).dtype == rumus.float32
        assert h.relu().dtype == low  # not on a list: runs on what it gets
        if dev == "cpu":
            d = a.double()
            assert (d @ d).dtype == rumus.float64  # float64 is never cast
        i = rumus.ones(2, 2, dtype=rumus.int64, device=dev)
        assert (i @ i).dtype == rumus.int64


def test_binary_cross_entropy_is_banned_on_gpu(gpu):
    p = rumus.full((3,), 0.5, device=gpu)
    with rumus.autocast(gpu):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(p, p)
    with rumus.autocast("cpu"):
        assert F.binary_cross_entropy(p.cpu().bfloat16(), p.cpu()).dtype == rumus.float32


# ---- regions ----


def test_state_nesting_and_disable():
    a = rumus.ones(2, 2)
    assert not rumus.is_autocast_enabled("cpu")
    assert rumus.get_autocast_dtype("cpu") == rumus.bfloat16
    assert rumus.get_autocast_dtype("gpu") == rumus.float16
    with rumus.autocast("cpu"):
        assert rumus.is_autocast_enabled("cpu") and not rumus.is_autocast_enabled("gpu")
        assert (a @ a).dtype == rumus.bfloat16
        with rumus.autocast("cpu", enabled=False):
            assert not rumus.is_autocast_enabled("cpu")
            assert (a @ a).dtype == rumus.float32
        with rumus.autocast("cpu", dtype=rumus.float16):
            assert rumus.get_autocast_dtype("cpu") == rumus.float16
            assert (a @ a).dtype == rumus.float16
        assert rumus.get_autocast_dtype("cpu") == rumus.bfloat16
        assert (a @ a).dtype == rumus.bfloat16
        with rumus.amp.autocast("gpu"):  # another device's region leaves the CPU's state
            assert (a @ a).dtype == rumus.bfloat16
    assert not rumus.is_autocast_enabled("cpu")
    assert (a @ a).dtype == rumus.float32


def test_outside_regions_the_original_callables_run():
    before = (rumus.Tensor.__dict__["matmul"], rumus.matmul, F.linear, F.softmax)
    with rumus.autocast("cpu"):
        assert rumus.Tensor.__dict__["matmul"] is not before[0]
    after = (rumus.Tensor.__dict__["matmul"], rumus.matmul, F.linear, F.softmax)
    assert all(x is y for x, y in zip(before, after))


def test_exception_inside_region_restores_state():
    with pytest.raises(ZeroDivisionError):
        with rumus.autocast("cpu"):
            1 / 0
    assert not rumus.is_autocast_enabled("cpu")
    assert (rumus.ones(2, 2) @ rumus.ones(2, 2)).dtype == rumus.float32


def test_decorator():
    @rumus.autocast("cpu")
    def f(x):
        assert rumus.is_autocast_enabled("cpu")
        return x @ x

    @rumus.amp.autocast("cpu", enabled=False)
    def g(x):
        return x @ x

    x = rumus.ones(2, 2)
    assert f(x).dtype == rumus.bfloat16
    assert f.__name__ == "f"
    with rumus.autocast("cpu"):
        assert g(x).dtype == rumus.float32
        assert rumus.is_autocast_enabled("cpu")
    assert not rumus.is_autocast_enabled("cpu")


def test_other_threads_are_unaffected():
    x = rumus.ones(2, 2)
    seen = []
    inside, done = threading.Event(), threading.Event()

    def other():
        inside.wait()
        seen.append((rumus.is_autocast_enabled("cpu"), (x @ x).dtype))
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with rumus.autocast("cpu"):
        inside.set()
        done.wait()
        assert (x @ x).dtype == rumus.bfloat16
    t.join()
    assert seen == [(False, rumus.float32)]


def test_set_autocast_enabled():
    x = rumus.ones(2, 2)
    rumus.set_autocast_enabled("cpu", True)
    try:
        assert rumus.is_autocast_enabled("cpu")
        assert (x @ x).dtype == rumus.bfloat16
        rumus.set_autocast_dtype("cpu", rumus.float16)
        assert (x @ x).dtype == rumus.float16
    finally:
        rumus.set_autocast_enabled("cpu", False)
        rumus.set_autocast_dtype("cpu", rumus.bfloat16)
    assert (x @ x).dtype == rumus.float32
    assert type(rumus.Tensor.__dict__["matmul"]).__name__ == "method_descriptor"  # unpatched


def test_bad_arguments():
    with pytest.raises(ValueError, match="device_type"):
        rumus.autocast("tpu")
    with pytest.raises(ValueError, match="float64"):
        rumus.autocast("cpu", dtype=rumus.float64)
    with pytest.raises(TypeError):
        rumus.autocast("cpu", dtype="bfloat16")
    with pytest.raises(ValueError, match="device"):
        GradScaler("tpu")


# ---- the cast cache and backward ----


def count_casts(monkeypatch):
    calls = []
    orig = autocast_mode._cast

    def counting(t, dtype):
        calls.append((tuple(t.shape), dtype))
        return orig(t, dtype)

    monkeypatch.setattr(autocast_mode, "_cast", counting)
    return calls


def test_parameters_are_cast_once_per_region(monkeypatch, rng):
    calls = count_casts(monkeypatch)
    lin = nn.Linear(4, 3)
    x = rand(rng, 2, 4)
    with rumus.autocast("cpu"):
        lin(x), lin(x), lin(x)
        # x is not a leaf that requires grad: cast at every call; weight and bias once.
        assert calls.count(((3, 4), rumus.bfloat16)) == 1
        assert calls.count(((3,), rumus.bfloat16)) == 1
        assert calls.count(((2, 4), rumus.bfloat16)) == 3
        with rumus.no_grad():
            lin.weight.mul_(2.0)  # a new version: cast again
        lin(x)
        assert calls.count(((3, 4), rumus.bfloat16)) == 2
    with rumus.autocast("cpu"):  # a new region: a new cache
        lin(x)
    assert calls.count(((3, 4), rumus.bfloat16)) == 3
    assert not autocast_mode._state.cache
    calls.clear()
    with rumus.autocast("cpu", cache_enabled=False):
        lin(x), lin(x)
    assert calls.count(((3, 4), rumus.bfloat16)) == 2


def test_backward_reaches_float32_parameters(case, rng):
    dev, low = case
    lin = nn.Linear(4, 3).to(dev)
    x = rand(rng, 5, 4, dev=dev)
    with rumus.autocast(dev, dtype=low):
        y = lin(x)
        loss = F.mse_loss(y, rumus.zeros(5, 3, device=dev))
    assert y.dtype == low and loss.dtype == rumus.float32
    loss.backward()
    assert lin.weight.grad.dtype == rumus.float32 and lin.bias.grad.dtype == rumus.float32
    # Against the float32 gradient: d/dW mean((xW^T + b)^2) = 2/15 (y^T x).
    w, b, xn = f32(lin.weight.detach()), f32(lin.bias.detach()), f32(x)
    yn = xn @ w.T + b
    tol = 0.05 if low == rumus.bfloat16 else 0.01
    np.testing.assert_allclose(f32(lin.weight.grad), 2 / 15 * yn.T @ xn, rtol=tol, atol=tol)


def test_custom_fwd_bwd():
    seen = {}

    class Square(rumus.autograd.Function):
        @staticmethod
        @rumus.amp.custom_fwd(device_type="cpu", cast_inputs=rumus.float32)
        def forward(ctx, x):
            seen["fwd"] = (x.dtype, rumus.is_autocast_enabled("cpu"))
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @rumus.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen["bwd"] = rumus.is_autocast_enabled("cpu")
            (x,) = ctx.saved_tensors
            return 2 * x * g

    class Plain(rumus.autograd.Function):
        @staticmethod
        @rumus.amp.custom_fwd(device_type="cpu")
        def forward(ctx, x):
            seen["plain"] = rumus.is_autocast_enabled("cpu")
            return x * 2

        @staticmethod
        @rumus.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen["plain_bwd"] = rumus.is_autocast_enabled("cpu")
            return g * 2

    x = rumus.tensor([1.0, 2.0]).bfloat16().requires_grad_()
    with rumus.autocast("cpu"):
        y = Square.apply(x)
        z = Plain.apply(x)
    assert seen["fwd"] == (rumus.float32, False)
    assert y.dtype == rumus.float32
    assert seen["plain"] is True
    y.sum().backward()
    z.float().sum().backward()
    assert seen["bwd"] is False and seen["plain_bwd"] is True
    np.testing.assert_allclose(f32(x.grad), [2 + 2, 4 + 2])


def test_cuda_amp_aliases():
    import rumus.cuda.amp as cuda_amp
    from rumus.cuda.amp import GradScaler as CudaScaler

    assert cuda_amp.autocast().device == "gpu"
    assert issubclass(CudaScaler, GradScaler)
    with rumus.autocast("cuda", enabled=False) as ac:
        assert ac.device == "gpu"


# ---- the fused check and unscale ----


@pytest.mark.parametrize("bad", [None, float("inf"), float("-inf"), float("nan")])
def test_fused_check_and_unscale(device, bad, rng):
    grads_np = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (5,), (2, 3)]]
    if bad is not None:
        grads_np[1][2] = bad
    grads = [rumus.tensor(g, device=device) for g in grads_np]
    # A strided gradient too: the transpose of a (4, 3) tensor.
    strided_np = rng.standard_normal((4, 3)).astype(np.float32)
    strided = rumus.tensor(strided_np, device=device).t()
    grads.append(strided)
    found = rumus.zeros(1, device=device)
    inv = rumus.tensor([0.25], device=device)
    rumus._rumus._amp_foreach_non_finite_check_and_unscale_(grads, found, inv)
    assert found.item() == (0.0 if bad is None else 1.0)
    for g, ref in zip(grads, [*grads_np, strided_np.T]):
        np.testing.assert_array_equal(g.cpu().numpy(), ref * np.float32(0.25))
    # found_inf is only ever set: a clean call afterwards leaves it at 1.
    rumus._rumus._amp_foreach_non_finite_check_and_unscale_(grads[:1], found, inv)
    assert found.item() == (0.0 if bad is None else 1.0)


def test_fused_check_float16_on_gpu(gpu):
    g = [rumus.tensor([1.0, 2.0, 4.0], device=gpu).half(), rumus.ones(2, device=gpu).half()]
    found, inv = rumus.zeros(1, device=gpu), rumus.tensor([0.5], device=gpu)
    op = rumus._rumus._amp_foreach_non_finite_check_and_unscale_
    op(g, found, inv)
    assert found.item() == 0.0
    np.testing.assert_array_equal(g[0].float().cpu().numpy(), [0.5, 1.0, 2.0])
    g[1].fill_(float("inf"))
    op(g, found, inv)
    assert found.item() == 1.0


def test_fused_check_bad_input():
    op = rumus._rumus._amp_foreach_non_finite_check_and_unscale_
    g = [rumus.ones(3)]
    with pytest.raises(RuntimeError, match="found_inf"):
        op(g, rumus.zeros(2), rumus.ones(1))
    with pytest.raises(RuntimeError, match="inv_scale"):
        op(g, rumus.zeros(1), rumus.ones(1, dtype=rumus.float64))
    with pytest.raises(RuntimeError, match="gradients must be"):
        op([rumus.ones(3, dtype=rumus.int64)], rumus.zeros(1), rumus.ones(1))


# ---- GradScaler ----


def sgd_setup(dev, values=(1.0, -2.0, 3.0), lr=0.1):
    p = rumus.tensor(list(values), device=dev).requires_grad_()
    q = rumus.tensor([0.5, 0.5], device=dev).requires_grad_()
    return p, q, rumus.optim.SGD([p, q], lr=lr)


def test_scaler_hand_computation(device):
    p, q, opt = sgd_setup(device)
    scaler = GradScaler(device, init_scale=8.0, growth_interval=2)
    assert scaler.get_scale() == 8.0 and scaler.is_enabled()
    loss = (p * p).sum() + q.sum()
    scaled = scaler.scale(loss)
    assert scaled.item() == pytest.approx(8.0 * loss.item())
    scaled.backward()
    np.testing.assert_allclose(p.grad.cpu().numpy(), 8.0 * 2 * np.array([1.0, -2.0, 3.0]))
    assert scaler.step(opt) is None  # SGD.step() returns None; the step ran:
    np.testing.assert_allclose(p.detach().cpu().numpy(), [0.8, -1.6, 2.4], rtol=1e-6)
    np.testing.assert_allclose(q.detach().cpu().numpy(), [0.4, 0.4], rtol=1e-6)
    scaler.update()
    assert scaler.get_scale() == 8.0 and scaler._get_growth_tracker() == 1
    # Second clean step: growth_interval reached, the scale doubles.
    opt.zero_grad()
    scaler.scale(q.sum()).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 16.0 and scaler._get_growth_tracker() == 0


def test_scaler_skips_non_finite_steps(device):
    p, q, opt = sgd_setup(device)
    scaler = GradScaler(device, init_scale=1024.0, growth_interval=3)
    for bad in [float("inf"), float("nan")]:
        opt.zero_grad()
        scaler.scale((p * p).sum() + (q * bad).sum()).backward()
        before = p.detach().cpu().numpy().copy()
        assert scaler.step(opt) is None
        np.testing.assert_array_equal(p.detach().cpu().numpy(), before)  # skipped
        scaler.update()
    assert scaler.get_scale() == 256.0  # backed off twice
    # Growth after growth_interval clean steps, and the tracker resets on inf.
    for _ in range(3):
        opt.zero_grad()
        scaler.scale((p * p).sum()).backward()
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == 512.0
    opt.zero_grad()
    scaler.scale((p * p).sum()).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler._get_growth_tracker() == 1
    opt.zero_grad()
    scaler.scale((q * float("inf")).sum()).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler._get_growth_tracker() == 0 and scaler.get_scale() == 256.0
    scaler.update(new_scale=4.0)
    assert scaler.get_scale() == 4.0


def test_scaler_unscale_then_clip(device):
    p, q, opt = sgd_setup(device, values=(3.0, 4.0, 0.0), lr=1.0)
    scaler = GradScaler(device, init_scale=2.0**10)
    scaler.scale((p * p).sum() / 2).backward()  # grad p = p = (3, 4, 0): norm 5
    scaler.unscale_(opt)
    np.testing.assert_allclose(p.grad.cpu().numpy(), [3.0, 4.0, 0.0])
    norm = nn.utils.clip_grad_norm_([p], max_norm=1.0)
    assert norm.item() == pytest.approx(5.0)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)  # uses the clipped, already unscaled gradient
    np.testing.assert_allclose(p.detach().cpu().numpy(), [3 - 0.6, 4 - 0.8, 0.0], rtol=1e-5)
    with pytest.raises(RuntimeError, match="after step"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called since the last update"):
        scaler.step(opt)
    scaler.update()


def test_scaler_scale_structures_and_errors():
    scaler = GradScaler("cpu", init_scale=4.0)
    with pytest.raises(RuntimeError, match="_scale is None"):
        scaler.step(rumus.optim.SGD([rumus.ones(1, requires_grad=True)], lr=1.0))
    a, b = rumus.ones(2), rumus.full((1,), 2.0)
    out = scaler.scale([a, (b, a)])
    assert isinstance(out, list) and isinstance(out[1], tuple)
    np.testing.assert_array_equal(out[1][0].numpy(), [8.0])
    with pytest.raises(ValueError):
        scaler.scale(3.0)
    p = rumus.ones(2, dtype=rumus.float16, requires_grad=True)
    opt = rumus.optim.SGD([p], lr=1.0)
    scaler.scale(p.float().sum()).backward()
    with pytest.raises(ValueError, match="FP16"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="[Cc]losure"):
        scaler.step(opt, closure=lambda: 0.0)
    with pytest.raises(ValueError, match="growth factor"):
        GradScaler("cpu", growth_factor=0.5)


def test_scaler_state_dict_round_trip():
    p, q, opt = sgd_setup("cpu")
    s = GradScaler(
        "cpu", init_scale=32.0, growth_factor=4.0, backoff_factor=0.25, growth_interval=5
    )
    s.scale((p * p).sum()).backward()
    s.step(opt)
    s.update()
    sd = s.state_dict()
    assert sd == {
        "scale": 32.0,
        "growth_factor": 4.0,
        "backoff_factor": 0.25,
        "growth_interval": 5,
        "_growth_tracker": 1,
    }
    t = GradScaler("cpu")
    t.load_state_dict(sd)
    assert t.state_dict() == sd
    assert t.get_growth_factor() == 4.0 and t.get_backoff_factor() == 0.25
    assert t.get_growth_interval() == 5
    off = GradScaler("cpu", enabled=False)
    assert off.state_dict() == {} and off.get_scale() == 1.0 and not off.is_enabled()
    with pytest.raises(RuntimeError, match="empty"):
        t.load_state_dict({})


def test_disabled_scaler_is_transparent():
    p, q, opt = sgd_setup("cpu")
    scaler = GradScaler("cpu", enabled=False)
    loss = (p * p).sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(p.detach().numpy(), [0.8, -1.6, 2.4], rtol=1e-6)


# ---- training ----


@pytest.mark.parametrize("dev_low", [("cpu", "bfloat16"), ("gpu", "float16"), ("gpu", "bfloat16")])
def test_mixed_precision_training_converges(dev_low):
    dev, low = dev_low
    if dev == "gpu":
        need_gpu()
    rumus.manual_seed(0)
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((64, 8)).astype(np.float32)
    y_np = (x_np @ rng.standard_normal((8, 1)) + 0.5).astype(np.float32)
    x, y = rumus.tensor(x_np, device=dev), rumus.tensor(y_np, device=dev)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).to(dev)
    opt = rumus.optim.Adam(model.parameters(), lr=0.03)
    scaler = GradScaler(dev, init_scale=2.0**12)
    losses = []
    for _ in range(150):
        opt.zero_grad()
        with rumus.autocast(dev, dtype=getattr(rumus, low)):
            out = model(x)
            loss = F.mse_loss(out, y)
        assert out.dtype == getattr(rumus, low) and loss.dtype == rumus.float32
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert all(p.dtype == rumus.float32 for p in model.parameters())
    assert losses[-1] < 0.05 * losses[0], (losses[0], losses[-1])
