"""Creation functions, random numbers, seeding and in-place fills, on each
device (the ``device`` fixture: CPU and GPU)."""

import math

import numpy as np
import pytest
import rumus
from conftest import fd, skip_on_gpu, to_np, wide

N = 100_000


def check(t, expected, dtype=None, device=None):
    expected = np.asarray(expected)
    assert tuple(t.shape) == expected.shape, (tuple(t.shape), expected.shape)
    if dtype is not None:
        assert t.dtype == dtype, (t.dtype, dtype)
    if device is not None:
        assert t.device.type == device, (t.device, device)
    np.testing.assert_array_equal(to_np(t), expected)


ALL_DTYPES = [
    (rumus.float32, np.float32),
    (rumus.float64, np.float64),
    (rumus.float16, np.float16),
    (rumus.bfloat16, np.float32),
    (rumus.int64, np.int64),
    (rumus.int32, np.int32),
    (rumus.uint8, np.uint8),
    (rumus.bool, np.bool_),
]


# ------------------------------------------------------- zeros / ones / full


@pytest.mark.parametrize("fn,npfn", [(rumus.zeros, np.zeros), (rumus.ones, np.ones)])
def test_zeros_ones_size_forms(fn, npfn, device):
    def f(*size):
        return fn(*size, device=device)

    expected = npfn((2, 3), np.float32)
    check(f(2, 3), expected, rumus.float32, device)
    check(f((2, 3)), expected, rumus.float32, device)
    check(f([2, 3]), expected, rumus.float32, device)
    check(f(4), npfn(4, np.float32), device=device)
    check(f(()), npfn((), np.float32), device=device)
    check(f(1, 2, 1, 2, 1), npfn((1, 2, 1, 2, 1), np.float32), device=device)


@pytest.mark.parametrize("fn,npfn", [(rumus.zeros, np.zeros), (rumus.ones, np.ones)])
def test_zeros_ones_empty_sizes(fn, npfn, device):
    check(fn(0, device=device), npfn(0, np.float32), device=device)
    check(fn(2, 0, 3, device=device), npfn((2, 0, 3), np.float32), device=device)


@pytest.mark.parametrize("dt,npdt", ALL_DTYPES)
def test_zeros_ones_empty_dtypes(dt, npdt, device):
    skip_on_gpu(device, dt)
    check(rumus.zeros(2, 3, dtype=dt, device=device), np.zeros((2, 3), npdt), dt, device)
    check(rumus.ones((3,), dtype=dt, device=device), np.ones(3, npdt), dt, device)
    e = rumus.empty(2, 3, dtype=dt, device=device)
    assert e.shape == (2, 3) and e.dtype == dt
    assert e.is_contiguous()
    assert e.device.type == device
    e = rumus.empty((4,), dtype=dt, device=device)
    assert e.shape == (4,)


def test_empty_default(device):
    e = rumus.empty(3, 2, device=device)
    assert e.shape == (3, 2)
    assert e.dtype == rumus.float32
    assert e.stride() == (2, 1)
    assert e.device.type == device
    assert rumus.empty(0, device=device).numel() == 0


def test_full_keeps_the_sign_of_zero_and_fills_large_tensors(device):
    neg = rumus.full((3,), -0.0, device=device).cpu().numpy()
    assert np.signbit(neg).all() and (neg == 0).all()
    assert not np.signbit(rumus.full((3,), 0.0, device=device).cpu().numpy()).any()
    big = rumus.full((1 << 20,), 3.25, device=device).cpu().numpy()  # past the parallel cut
    assert (big == 3.25).all()
    nan = rumus.full((5,), float("nan"), device=device).cpu().numpy()
    assert np.isnan(nan).all()


def test_full_dtype_inference(device):
    def full(*args, **kw):
        return rumus.full(*args, device=device, **kw)

    r = full((2, 3), 1.5)
    check(r, np.full((2, 3), 1.5, np.float32), rumus.float32, device)
    r = full((2,), 7)
    check(r, np.full(2, 7, np.int64), rumus.int64, device)
    r = full((2, 2), True)
    check(r, np.full((2, 2), True), rumus.bool, device)
    if device == "cpu":  # float64 is not on the GPU (by design)
        r = full((3,), 7, dtype=rumus.float64)
        check(r, np.full(3, 7.0, np.float64), rumus.float64)
    else:
        r = full((3,), 7, dtype=rumus.float32)
        check(r, np.full(3, 7.0, np.float32), rumus.float32, device)
    r = full([2], -2.0, dtype=rumus.int32)
    check(r, np.full(2, -2, np.int32), rumus.int32, device)
    r = full((), 3.25)
    check(r, np.array(3.25, np.float32), rumus.float32, device)
    r = full((2,), float("inf"))
    check(r, np.full(2, np.inf, np.float32))
    assert np.isnan(to_np(full((2,), float("nan")))).all()
    r = full((2,), 200, dtype=rumus.uint8)
    check(r, np.full(2, 200, np.uint8), rumus.uint8, device)


def test_like_functions(device):
    fdt, npf = fd(device), wide(device)
    base = rumus.tensor(np.arange(6, dtype=npf).reshape(2, 3), device=device)
    check(rumus.zeros_like(base), np.zeros((2, 3), npf), fdt, device)
    check(rumus.ones_like(base), np.ones((2, 3), npf), fdt, device)
    check(
        rumus.zeros_like(base, dtype=rumus.int32), np.zeros((2, 3), np.int32), rumus.int32, device
    )
    check(rumus.ones_like(base, dtype=rumus.bool), np.ones((2, 3), bool), rumus.bool, device)
    e = rumus.empty_like(base)
    assert e.shape == (2, 3) and e.dtype == fdt and e.device.type == device
    check(rumus.full_like(base, 3), np.full((2, 3), 3.0, npf), fdt, device)
    ib = rumus.tensor(np.arange(4, dtype=np.int64), device=device)
    check(rumus.full_like(ib, 2), np.full(4, 2, np.int64), rumus.int64, device)
    check(
        rumus.full_like(ib, 5, dtype=rumus.float32),
        np.full(4, 5.0, np.float32),
        rumus.float32,
        device,
    )
    r = rumus.rand_like(base)
    assert r.shape == (2, 3) and r.dtype == fdt and r.device.type == device
    v = to_np(r)
    assert ((v >= 0) & (v < 1)).all()
    r = rumus.randn_like(rumus.zeros(5, 4, device=device))
    assert r.shape == (5, 4) and r.dtype == rumus.float32 and r.device.type == device
    # like-functions on a non-contiguous tensor keep the shape
    tr = base.T
    check(rumus.zeros_like(tr), np.zeros((3, 2), npf), device=device)
    check(rumus.ones_like(tr[::2]), np.ones((2, 2), npf), device=device)


def test_like_functions_do_not_alias(device):
    base = rumus.zeros(3, device=device)
    o = rumus.ones_like(base)
    o.fill_(5.0)
    check(base, np.zeros(3, np.float32))
    if (
        device == "cpu"
    ):  # data_ptr() raises NotImplementedError on the GPU; the fill_ above checks it
        assert o.data_ptr() != base.data_ptr()


def test_requires_grad_kwarg(device):
    d = device
    made = [
        rumus.zeros(2, requires_grad=True, device=d),
        rumus.ones(2, 3, requires_grad=True, device=d),
        rumus.empty(2, requires_grad=True, device=d),
        rumus.full((2,), 1.0, requires_grad=True, device=d),
        rumus.rand(3, requires_grad=True, device=d),
        rumus.randn(3, requires_grad=True, device=d),
        rumus.arange(3.0, requires_grad=True, device=d),
        rumus.linspace(0, 1, 3, requires_grad=True, device=d),
        rumus.eye(2, requires_grad=True, device=d),
    ]
    if device == "cpu":  # float64 is not on the GPU (by design)
        made.append(rumus.zeros(2, dtype=rumus.float64, requires_grad=True))
    for t in made:
        assert t.requires_grad is True
        assert t.device.type == device
    assert rumus.zeros(2, device=d).requires_grad is False
    assert rumus.zeros(2, requires_grad=False, device=d).requires_grad is False
    with pytest.raises(RuntimeError):
        rumus.zeros(2, dtype=rumus.int64, requires_grad=True, device=d)
    with pytest.raises(RuntimeError):
        rumus.arange(3, requires_grad=True, device=d)


def test_bad_sizes(device):
    for fn in [rumus.zeros, rumus.ones, rumus.empty, rumus.rand, rumus.randn]:
        with pytest.raises((ValueError, RuntimeError)):
            fn(-1, device=device)
        with pytest.raises((ValueError, RuntimeError)):
            fn(2, -3, device=device)
        with pytest.raises(TypeError):
            fn(2.5, device=device)
        with pytest.raises(TypeError):
            fn("3", device=device)
    with pytest.raises((ValueError, RuntimeError)):
        rumus.full((-1, 2), 1.0, device=device)


# ------------------------------------------------------------------ arange


def test_arange_int(device):
    for args in [(5,), (2, 10), (2, 10, 3), (10, 0, -2), (-5, 5, 3), (3, -4, -1), (7, 8)]:
        r = rumus.arange(*args, device=device)
        check(r, np.arange(*args, dtype=np.int64), rumus.int64, device)


def test_arange_empty(device):
    check(rumus.arange(0, 0, device=device), np.arange(0, 0, dtype=np.int64), rumus.int64, device)


def test_arange_float(device):
    for args in [
        (5.0,),
        (0, 1, 0.1),
        (1.0, -1.0, -0.25),
        (1, 2.5),
        (-3, 3, 0.7),
        (0.5, 4),
        (2, 3, 1e-2),
    ]:
        r = rumus.arange(*args, device=device)
        assert r.dtype == rumus.float32
        assert r.device.type == device
        expected = np.arange(*args, dtype=np.float64)
        assert tuple(r.shape) == expected.shape, args
        np.testing.assert_allclose(to_np(r), expected, rtol=1e-6, atol=1e-6)


def test_arange_dtype_kwarg_and_keywords(device):
    d = device
    if device == "cpu":  # float64 / float16 are not on the GPU (by design)
        check(
            rumus.arange(0, 5, dtype=rumus.float64),
            np.arange(0, 5, dtype=np.float64),
            rumus.float64,
        )
        check(rumus.arange(4, dtype=rumus.float16), np.arange(4, dtype=np.float16), rumus.float16)
    check(
        rumus.arange(4, dtype=rumus.int32, device=d), np.arange(4, dtype=np.int32), rumus.int32, d
    )
    check(
        rumus.arange(0, 5, dtype=rumus.float32, device=d),
        np.arange(0, 5, dtype=np.float32),
        rumus.float32,
        d,
    )
    check(rumus.arange(start=1, end=7, step=2, device=d), np.arange(1, 7, 2), rumus.int64, d)
    check(
        rumus.arange(1, 4, step=1, dtype=rumus.uint8, device=d),
        np.arange(1, 4, dtype=np.uint8),
        rumus.uint8,
        d,
    )


def test_arange_errors(device):
    with pytest.raises(RuntimeError):
        rumus.arange(0, 5, 0, device=device)
    with pytest.raises(RuntimeError):
        rumus.arange(5, 0, device=device)
    with pytest.raises(RuntimeError):
        rumus.arange(0, 10, -1, device=device)
    with pytest.raises(RuntimeError):
        rumus.arange(0.0, float("inf"), device=device)
    with pytest.raises(RuntimeError):
        rumus.arange(0.0, float("nan"), device=device)


# ---------------------------------------------------------------- linspace


LINSPACE = [(0, 1, 5), (-3, 7, 11), (2, 2, 3), (1, 0, 6), (0.5, 1.5, 2), (0, 1, 0), (-1.5, 100, 37)]


@pytest.mark.parametrize("start,end,steps", LINSPACE)
def test_linspace(start, end, steps, device):
    r = rumus.linspace(start, end, steps, device=device)
    assert r.dtype == rumus.float32
    assert r.device.type == device
    expected = np.linspace(start, end, steps)
    assert tuple(r.shape) == (steps,)
    np.testing.assert_allclose(to_np(r), expected, rtol=1e-6, atol=1e-5)
    if steps >= 1:
        assert to_np(r)[0] == np.float32(start)
    if steps >= 2:
        assert to_np(r)[-1] == np.float32(end)


def test_linspace_one_step_is_start(device):
    # torch.linspace(start, end, 1) == tensor([start])
    check(
        rumus.linspace(0, 1, 1, device=device), np.array([0.0], np.float32), rumus.float32, device
    )
    check(
        rumus.linspace(-2.5, 7, steps=1, device=device), np.array([-2.5], np.float32), device=device
    )


def test_linspace_dtype_and_errors(device):
    if device == "cpu":  # float64 is not on the GPU (by design)
        r = rumus.linspace(0, 1, steps=4, dtype=rumus.float64)
        assert r.dtype == rumus.float64
        np.testing.assert_allclose(to_np(r), np.linspace(0, 1, 4), rtol=1e-14)
    else:
        r = rumus.linspace(0, 1, steps=4, dtype=rumus.float32, device=device)
        assert r.dtype == rumus.float32 and r.device.type == device
        np.testing.assert_allclose(to_np(r), np.linspace(0, 1, 4), rtol=1e-6)
    with pytest.raises(RuntimeError):
        rumus.linspace(0, 1, -1, device=device)


# ---------------------------------------------------------------------- eye


def test_eye(device):
    def eye(*args, **kw):
        return rumus.eye(*args, device=device, **kw)

    check(eye(3), np.eye(3, dtype=np.float32), rumus.float32, device)
    check(eye(2, 4), np.eye(2, 4, dtype=np.float32), device=device)
    check(eye(4, 2), np.eye(4, 2, dtype=np.float32), device=device)
    check(eye(3, m=5), np.eye(3, 5, dtype=np.float32), device=device)
    check(eye(3, dtype=rumus.int64), np.eye(3, dtype=np.int64), rumus.int64, device)
    check(eye(2, dtype=rumus.bool), np.eye(2, dtype=bool), rumus.bool, device)
    check(eye(1), np.eye(1, dtype=np.float32), device=device)
    with pytest.raises(RuntimeError):
        eye(-1)
    with pytest.raises(RuntimeError):
        eye(2, -2)


def test_eye_empty(device):
    check(rumus.eye(0, device=device), np.eye(0, dtype=np.float32), device=device)
    check(rumus.eye(3, 0, device=device), np.eye(3, 0, dtype=np.float32), device=device)


# ------------------------------------------------------------- rand / randn


def test_rand_statistics(device):
    r = rumus.rand(N, device=device)
    assert r.device.type == device
    x = to_np(r)
    assert x.dtype == np.float32
    assert x.shape == (N,)
    assert (x >= 0).all() and (x < 1).all()
    assert abs(x.mean() - 0.5) < 0.01
    assert abs(x.std() - 1 / math.sqrt(12)) < 0.01
    assert abs((x < 0.25).mean() - 0.25) < 0.01
    assert len(np.unique(x)) > N * 0.9


def test_rand_shapes_and_dtypes(device):
    assert rumus.rand(2, 3, device=device).shape == (2, 3)
    assert rumus.rand((2, 3), device=device).shape == (2, 3)
    assert rumus.rand(0, device=device).shape == (0,)
    if device == "gpu":  # float64 / float16 / bfloat16 are not on the GPU (by design)
        return
    x = rumus.rand(1000, dtype=rumus.float64)
    assert x.dtype == rumus.float64
    v = to_np(x)
    assert (v >= 0).all() and (v < 1).all()
    assert len(np.unique(v)) == 1000
    for dt in [rumus.float16, rumus.bfloat16]:
        v = to_np(rumus.rand(1000, dtype=dt)).astype(np.float64)
        assert (v >= 0).all() and (v <= 1).all()
        assert abs(v.mean() - 0.5) < 0.05


def test_randn_statistics(device):
    x = to_np(rumus.randn(N, device=device))
    assert x.dtype == np.float32
    assert abs(x.mean()) < 0.02
    assert abs(x.std() - 1.0) < 0.02
    # shape of the distribution, not just moments
    assert abs((np.abs(x) < 1).mean() - 0.6827) < 0.01
    assert abs((x > 2).mean() - 0.02275) < 0.005
    fdt, npf = fd(device), wide(device)  # float64 is not on the GPU (by design)
    x = to_np(rumus.randn(200, 500, dtype=fdt, device=device))
    assert x.dtype == npf
    assert abs(x.mean()) < 0.02
    assert abs(x.std() - 1.0) < 0.02


def test_successive_draws_differ(device):
    a = to_np(rumus.rand(100, device=device))
    b = to_np(rumus.rand(100, device=device))
    assert not np.array_equal(a, b)
    a = to_np(rumus.randn(100, device=device))
    b = to_np(rumus.randn(100, device=device))
    assert not np.array_equal(a, b)


# ----------------------------------------------------------------- randint


def test_randint_range_and_dtype(device):
    d = device
    r = rumus.randint(0, 10, (1000,), device=d)
    assert r.dtype == rumus.int64
    assert r.device.type == device
    v = to_np(r)
    assert v.min() >= 0 and v.max() < 10
    assert set(v.tolist()) == set(range(10))
    r = rumus.randint(5, (300,), device=d)  # high only
    v = to_np(r)
    assert set(v.tolist()) == set(range(5))
    r = rumus.randint(-3, 3, size=(20, 50), device=d)
    assert r.shape == (20, 50)
    v = to_np(r)
    assert set(v.ravel().tolist()) == set(range(-3, 3))
    r = rumus.randint(0, 4, (500,), dtype=rumus.int32, device=d)
    assert r.dtype == rumus.int32
    assert set(to_np(r).tolist()) == set(range(4))
    r = rumus.randint(2, 3, (5,), device=d)
    check(r, np.full(5, 2, np.int64), device=d)
    assert rumus.randint(0, 2, (0,), device=d).shape == (0,)
    if device == "cpu":  # int64 values beyond 32 bits are not on the GPU (by design)
        big = to_np(rumus.randint(0, 2**40, (1000,)))
        assert big.max() > 2**32  # full 64-bit range, not truncated to 32 bits
    # rough uniformity
    v = to_np(rumus.randint(0, 4, (N,), device=d))
    counts = np.bincount(v, minlength=4) / N
    assert np.all(np.abs(counts - 0.25) < 0.01)


def test_randint_keyword_arguments(device):
    d = device
    r = rumus.randint(low=2, high=3, size=(5,), device=d)
    check(r, np.full(5, 2, np.int64), rumus.int64, d)
    r = rumus.randint(high=4, size=(200,), device=d)
    assert set(to_np(r).tolist()) == set(range(4))
    r = rumus.randint(
        0, 3, size=(2, 2), generator=rumus.Generator().manual_seed(1), dtype=rumus.int32, device=d
    )
    assert r.shape == (2, 2) and r.dtype == rumus.int32 and r.device.type == device


def test_randint_errors(device):
    with pytest.raises(RuntimeError):
        rumus.randint(3, 3, (2,), device=device)
    with pytest.raises(RuntimeError):
        rumus.randint(5, 1, (2,), device=device)
    with pytest.raises((ValueError, RuntimeError)):
        rumus.randint(0, 5, (-1,), device=device)


# ---------------------------------------------------------------- randperm


@pytest.mark.parametrize("n", [0, 1, 2, 10, 1000])
def test_randperm_is_permutation(n, device):
    r = rumus.randperm(n, device=device)
    assert r.dtype == rumus.int64
    assert r.shape == (n,)
    assert r.device.type == device
    np.testing.assert_array_equal(np.sort(to_np(r)), np.arange(n, dtype=np.int64))


def test_randperm_shuffles_and_errors(device):
    v = to_np(rumus.randperm(1000, device=device))
    assert not np.array_equal(v, np.arange(1000))
    with pytest.raises(RuntimeError):
        rumus.randperm(-1, device=device)


# ----------------------------------------------------------------- seeding


def _draws(**kw):
    return [
        to_np(rumus.rand(50, **kw)),
        to_np(rumus.randn(3, 7, **kw)),
        to_np(rumus.randint(0, 1000, (40,), **kw)),
        to_np(rumus.randperm(30, **kw)),
    ]


def _same(xs, ys):
    return all(np.array_equal(x, y) for x, y in zip(xs, ys))


def _all_differ(xs, ys):
    return all(not np.array_equal(x, y) for x, y in zip(xs, ys))


def test_manual_seed_reproducible(device):
    rumus.manual_seed(123)
    a = _draws(device=device)
    rumus.manual_seed(123)
    b = _draws(device=device)
    assert _same(a, b)
    rumus.manual_seed(124)
    c = _draws(device=device)
    assert _all_differ(a, c)
    rumus.manual_seed(0)
    d = _draws(device=device)
    assert _all_differ(a, d) and _all_differ(c, d)


def test_manual_seed_in_place_reproducible(device):
    rumus.manual_seed(7)
    a = to_np(rumus.empty(100, device=device).uniform_())
    b = to_np(rumus.empty(100, device=device).normal_())
    rumus.manual_seed(7)
    assert np.array_equal(a, to_np(rumus.empty(100, device=device).uniform_()))
    assert np.array_equal(b, to_np(rumus.empty(100, device=device).normal_()))


def test_generator_independent_of_global_seed(device):
    g1 = rumus.Generator().manual_seed(5)
    x = _draws(generator=g1, device=device)
    g2 = rumus.Generator()
    g2.manual_seed(5)
    rumus.manual_seed(0)
    rumus.rand(17, device=device)  # consume the global stream
    y = _draws(generator=g2, device=device)
    assert _same(x, y)
    # a generator's stream advances
    z = _draws(generator=g2, device=device)
    assert _all_differ(y, z)
    # different seeds give different numbers
    g3 = rumus.Generator().manual_seed(6)
    assert _all_differ(x, _draws(generator=g3, device=device))


def test_generator_does_not_touch_global_stream(device):
    rumus.manual_seed(1)
    a = to_np(rumus.rand(20, device=device))
    rumus.manual_seed(1)
    rumus.rand(30, generator=rumus.Generator().manual_seed(9), device=device)
    rumus.randn(30, generator=rumus.Generator().manual_seed(9), device=device)
    b = to_np(rumus.rand(20, device=device))
    assert np.array_equal(a, b)


# ------------------------------------------------------- in-place random


def test_uniform_inplace(device):
    t = rumus.empty(N, device=device)
    v0 = t._version
    r = t.uniform_(-2, 3)
    assert t._version > v0
    x = to_np(t)
    np.testing.assert_array_equal(to_np(r), x)
    assert (x >= -2).all() and (x < 3).all()
    assert abs(x.mean() - 0.5) < 0.03
    assert abs(x.std() - 5 / math.sqrt(12)) < 0.03
    fdt = fd(device)  # float64 is not on the GPU (by design)
    x = to_np(rumus.zeros(N, dtype=fdt, device=device).uniform_())
    assert (x >= 0).all() and (x < 1).all()
    assert abs(x.mean() - 0.5) < 0.01


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_uniform_half_stays_below_hi(device, dtype):
    # A range of a few half-precision values: many draws round up to hi when stored.
    t = rumus.empty(4000, dtype=getattr(rumus, dtype), device=device).uniform_(
        1.0, 1.0078125 if dtype == "float16" else 1.0625
    )
    x = to_np(t.float())
    hi = 1.0078125 if dtype == "float16" else 1.0625
    assert (x >= 1.0).all() and (x < hi).all()
    assert len(np.unique(x)) >= 4


def test_normal_inplace(device):
    t = rumus.zeros(N, device=device)
    v0 = t._version
    t.normal_(mean=2.0, std=3.0)
    assert t._version > v0
    x = to_np(t)
    assert abs(x.mean() - 2.0) < 0.05
    assert abs(x.std() - 3.0) < 0.05
    fdt = fd(device)  # float64 is not on the GPU (by design)
    x = to_np(rumus.zeros(N, dtype=fdt, device=device).normal_())
    assert abs(x.mean()) < 0.02 and abs(x.std() - 1) < 0.02
    x = to_np(rumus.zeros(1000, device=device).normal_(-1.0, 0.0))
    np.testing.assert_array_equal(x, np.full(1000, -1.0, np.float32))


def test_random_inplace_on_view_only_touches_view(device):
    base = rumus.zeros(50, 6, device=device)
    v = base[:, ::2]
    v.uniform_(1, 2)
    b = to_np(base)
    assert (b[:, 1::2] == 0).all()
    assert (b[:, ::2] >= 1).all() and (b[:, ::2] < 2).all()
    base = rumus.zeros(6, 50, device=device)
    base.T[10:20].normal_()
    b = to_np(base)
    assert (b[:, :10] == 0).all() and (b[:, 20:] == 0).all()
    assert (b[:, 10:20] != 0).all()


# ------------------------------------------------------------ fill_ / zero_


@pytest.mark.parametrize("dt,npdt", ALL_DTYPES)
def test_fill_and_zero(dt, npdt, device):
    skip_on_gpu(device, dt)
    t = rumus.ones(3, 4, dtype=dt, device=device)
    v0 = t._version
    value = True if dt == rumus.bool else 5
    r = t.fill_(value)
    assert t._version > v0
    check(t, np.full((3, 4), value, npdt), dt, device)
    check(r, np.full((3, 4), value, npdt))
    v1 = t._version
    t.zero_()
    assert t._version > v1
    check(t, np.zeros((3, 4), npdt), dt, device)


def test_fill_casts_and_tensor_value(device):
    t = rumus.zeros(3, dtype=rumus.int64, device=device)
    t.fill_(2.9)
    check(t, np.full(3, 2, np.int64))
    f = rumus.zeros(2, 2, device=device)
    f.fill_(rumus.tensor(1.25, device=device))
    check(f, np.full((2, 2), 1.25, np.float32))
    f.fill_(-7)
    check(f, np.full((2, 2), -7.0, np.float32))
    with pytest.raises(RuntimeError):
        f.fill_(rumus.tensor([1.0, 2.0], device=device))  # only 0-d tensors


def test_fill_zero_on_views(device):
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = rumus.tensor(a, device=device)
    t[1:3, ::2].fill_(-1.0)
    a[1:3, ::2] = -1.0
    check(t, a)
    t.T[2].zero_()
    a.T[2] = 0
    check(t, a)
    s = rumus.tensor(3.0, device=device)
    s.fill_(4.0)
    check(s, np.array(4.0, np.float32), device=device)
