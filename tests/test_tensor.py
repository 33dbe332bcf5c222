"""Tensor construction, NumPy interop (zero copy), conversions, attributes,
repr, and an operator smoke test."""

import gc

import numpy as np
import pytest
import rumus
from conftest import fd, skip_on_gpu, to_np, wide

# rumus dtype, numpy dtype (None: no numpy equivalent), itemsize, floating?
DTYPES = [
    (rumus.float32, np.float32, 4, True),
    (rumus.float64, np.float64, 8, True),
    (rumus.float16, np.float16, 2, True),
    (rumus.bfloat16, None, 2, True),
    (rumus.int64, np.int64, 8, False),
    (rumus.int32, np.int32, 4, False),
    (rumus.uint8, np.uint8, 1, False),
    (rumus.bool, np.bool_, 1, False),
]
NP_DTYPES = [(d, n) for d, n, _, _ in DTYPES if n is not None]


# --------------------------------------------------------------------------
# devices: tests that are not about host memory (from_numpy, numpy(),
# data_ptr(), which are CPU-only by design) run on the CPU and on the GPU
# (``device`` fixture). The GPU has no float64/float16/bfloat16 (by design).
# --------------------------------------------------------------------------


def on(device, t):
    """``t``, checked to live on ``device``."""
    assert t.device.type == device, t.device
    return t


def sample(npdt, shape=(2, 3), seed=0):
    rng = np.random.default_rng(seed)
    if npdt == np.bool_:
        return rng.random(shape) < 0.5
    if np.dtype(npdt).kind == "f":
        return rng.standard_normal(shape).astype(npdt)
    if npdt == np.uint8:
        return rng.integers(0, 256, size=shape).astype(npdt)
    return rng.integers(-1000, 1000, size=shape).astype(npdt)


# ------------------------------------------------------------ rumus.tensor


def test_tensor_dtype_inference_python_data(device):
    cases = [
        ([1.0, 2.0], rumus.float32, np.float32),
        ([1, 2], rumus.int64, np.int64),
        ([True, False], rumus.bool, np.bool_),
        ([1, 2.5], rumus.float32, np.float32),
        ([True, 2], rumus.int64, np.int64),
        ([[1, 2], [3, 4]], rumus.int64, np.int64),
        ([[[1.5]], [[2.5]]], rumus.float32, np.float32),
        (3.5, rumus.float32, np.float32),
        (7, rumus.int64, np.int64),
        (True, rumus.bool, np.bool_),
        ([], rumus.float32, np.float32),
        ([[], []], rumus.float32, np.float32),
        ((1, 2, 3), rumus.int64, np.int64),
    ]
    for data, dt, npdt in cases:
        t = on(device, rumus.tensor(data, device=device))
        assert t.dtype == dt, (data, t.dtype)
        expected = np.array(data, dtype=npdt)
        assert tuple(t.shape) == expected.shape, data
        np.testing.assert_array_equal(to_np(t), expected)


def test_tensor_dtype_kwarg(device):
    f = fd(device)
    t = on(device, rumus.tensor([1, 2], dtype=f, device=device))
    assert t.dtype == f
    np.testing.assert_array_equal(to_np(t), [1.0, 2.0])
    t = on(device, rumus.tensor([1.7, -1.7, 2.0], dtype=rumus.int64, device=device))
    np.testing.assert_array_equal(to_np(t), [1, -1, 2])
    t = on(device, rumus.tensor([0, 2, 0], dtype=rumus.bool, device=device))
    np.testing.assert_array_equal(to_np(t), [False, True, False])
    t = on(device, rumus.tensor(3, dtype=rumus.float16, device=device))
    assert t.dtype == rumus.float16 and t.shape == () and t.item() == 3.0
    t = on(device, rumus.tensor([1.5, 2.25], dtype=rumus.bfloat16, device=device))
    assert t.dtype == rumus.bfloat16
    np.testing.assert_array_equal(to_np(t), [1.5, 2.25])
    if device == "gpu":  # no float64 on the GPU (by design): it raises
        with pytest.raises(TypeError, match="float64"):
            rumus.tensor([1, 2], dtype=rumus.float64, device=device)
    assert on(device, rumus.tensor([1.0], requires_grad=True, device=device)).requires_grad


@pytest.mark.parametrize("dt,npdt", NP_DTYPES)
def test_tensor_from_numpy_array_copies(dt, npdt, device):
    skip_on_gpu(device, dt)
    a = sample(npdt)
    t = on(device, rumus.tensor(a, device=device))
    assert t.dtype == dt
    np.testing.assert_array_equal(to_np(t), a)
    if device == "cpu":  # data_ptr() raises on GPU tensors (by design)
        assert t.data_ptr() != a.ctypes.data
    before = a.copy()
    if npdt == np.bool_:
        a[...] = ~a
    else:
        a += 1
    np.testing.assert_array_equal(to_np(t), before)


def test_tensor_from_non_contiguous_numpy(device):
    f, npf = fd(device), wide(device)
    a = np.arange(24, dtype=npf).reshape(4, 6)
    # (negative numpy strides are rejected by torch.tensor too, so not used here)
    for view in [a.T, a[:, ::2], a[1:, 2:5], a[::2, ::3].T]:
        t = on(device, rumus.tensor(view, device=device))
        assert t.dtype == f
        np.testing.assert_array_equal(to_np(t), view)
    # numpy scalars and 0-d arrays
    t = on(device, rumus.tensor(np.array(2.5, dtype=npf), device=device))
    assert t.shape == () and t.dtype == f
    assert t.item() == 2.5


def test_tensor_ragged_and_bad_data(device):
    for bad in [[[1, 2], [3]], [[1, 2], [3, 4, 5]], [[[1, 2]], [[3]]]]:
        with pytest.raises(ValueError):
            rumus.tensor(bad, device=device)
    with pytest.raises(TypeError):
        rumus.tensor("abc", device=device)
    with pytest.raises((TypeError, RuntimeError)):
        rumus.tensor({1: 2}, device=device)
    with pytest.raises((TypeError, RuntimeError)):
        rumus.tensor([1.0, None], device=device)


# ------------------------------------------------------------- from_numpy


@pytest.mark.parametrize("dt,npdt", NP_DTYPES)
def test_from_numpy_zero_copy_all_dtypes(dt, npdt):
    a = sample(npdt, (3, 4), seed=1)
    t = rumus.from_numpy(a)
    assert t.dtype == dt
    assert t.shape == (3, 4)
    assert t.data_ptr() == a.ctypes.data
    assert t.stride() == (4, 1)
    np.testing.assert_array_equal(to_np(t), a)
    # numpy -> tensor
    if npdt == np.bool_:
        new = not a[2, 3]
    else:
        new = a[2, 3] + 1 if a[2, 3] < 100 else a[2, 3] - 1
    a[2, 3] = new
    assert t[2, 3].item() == np.array(new, dtype=npdt).item()
    # tensor -> numpy
    t[0, 1] = 1
    assert a[0, 1] == 1
    t.zero_()
    assert not a.any()


def test_from_numpy_non_contiguous_positive_strides():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    v = a[:, ::2]
    t = rumus.from_numpy(v)
    assert t.shape == (4, 3)
    assert t.stride() == (6, 2)
    assert t.data_ptr() == v.ctypes.data
    np.testing.assert_array_equal(to_np(t), v)
    t[1, 1] = -1.0
    assert a[1, 2] == -1.0
    tt = rumus.from_numpy(a.T)
    assert tt.stride() == (1, 6)
    assert not tt.is_contiguous()
    np.testing.assert_array_equal(to_np(tt), a.T)
    off = rumus.from_numpy(a[1:, 3:])
    assert off.data_ptr() == a.ctypes.data + (6 + 3) * 4
    np.testing.assert_array_equal(to_np(off), a[1:, 3:])
    z = rumus.from_numpy(np.zeros((0, 3), np.float32))
    assert z.shape == (0, 3)
    s = rumus.from_numpy(np.array(5.0))
    assert s.shape == () and s.item() == 5.0


def test_from_numpy_negative_strides_raises():
    a = np.arange(10, dtype=np.float32)
    with pytest.raises(ValueError):
        rumus.from_numpy(a[::-1])
    b = np.arange(12, dtype=np.int64).reshape(3, 4)
    with pytest.raises(ValueError):
        rumus.from_numpy(b[:, ::-2])


def test_from_numpy_unsupported_dtype_raises():
    for arr in [
        np.zeros(3, np.uint16),
        np.zeros(3, np.float16).view(np.int16),
        np.zeros(3, object),
        np.array(["a", "b"]),
    ]:
        with pytest.raises(TypeError):
            rumus.from_numpy(arr)
    with pytest.raises(TypeError):
        rumus.from_numpy([1, 2, 3])


def _tensor_over_dropped_array():
    a = np.arange(1000, dtype=np.float64) * 3.0
    t = rumus.from_numpy(a)
    return t  # `a` goes out of scope: only the tensor refers to it


def _churn_memory():
    junk = [np.full(1000, -12345.0) for _ in range(200)]
    del junk
    gc.collect()


def test_from_numpy_keeps_array_alive():
    t = _tensor_over_dropped_array()
    gc.collect()
    _churn_memory()
    assert t.tolist() == (np.arange(1000) * 3.0).tolist()
    t[5] = -1.0
    assert t[5].item() == -1.0
    # a view of the tensor keeps it alive in turn
    v = _tensor_over_dropped_array()[10::7]
    gc.collect()
    _churn_memory()
    np.testing.assert_array_equal(to_np(v), (np.arange(1000) * 3.0)[10::7])


def _numpy_over_dropped_tensor(transposed):
    t = rumus.arange(600, dtype=rumus.float64).reshape(20, 30)
    if transposed:
        t = t.T[::2]
    return t.numpy()


@pytest.mark.parametrize("transposed", [False, True])
def test_numpy_keeps_tensor_alive(transposed):
    n = _numpy_over_dropped_tensor(transposed)
    gc.collect()
    _churn_memory()
    expected = np.arange(600, dtype=np.float64).reshape(20, 30)
    if transposed:
        expected = expected.T[::2]
    np.testing.assert_array_equal(n, expected)


# ------------------------------------------------------------- t.numpy()


def test_numpy_shares_memory_contiguous():
    t = rumus.arange(12, dtype=rumus.float32).reshape(3, 4)
    n = t.numpy()
    assert isinstance(n, np.ndarray)
    assert n.dtype == np.float32
    assert n.shape == (3, 4)
    assert n.ctypes.data == t.data_ptr()
    n[1, 2] = 100.0
    assert t[1, 2].item() == 100.0
    t[0, 0] = -5.0
    assert n[0, 0] == -5.0
    n2 = t.numpy()
    assert np.shares_memory(n, n2)


@pytest.mark.parametrize(
    "make,ref",
    [
        (lambda t: t.T, lambda a: a.T),
        (lambda t: t[:, ::2], lambda a: a[:, ::2]),
        (lambda t: t[1:, 1:], lambda a: a[1:, 1:]),
        (lambda t: t[::2, 1::3], lambda a: a[::2, 1::3]),
        (lambda t: t.permute(1, 0)[1:3], lambda a: a.T[1:3]),
        (lambda t: t[2], lambda a: a[2]),
        (lambda t: t.unsqueeze(1), lambda a: a[:, None]),
    ],
)
def test_numpy_shares_memory_non_contiguous(make, ref):
    a = np.arange(20, dtype=np.float32).reshape(4, 5)
    t = rumus.tensor(a)
    base = t.numpy()
    v = make(t)
    nv = v.numpy()
    expected = ref(a)
    assert nv.shape == expected.shape
    np.testing.assert_array_equal(nv, expected)
    if nv.size:
        assert np.shares_memory(nv, base)
        assert nv.ctypes.data == v.data_ptr()
    es = v.element_size()
    assert tuple(s // es for s in nv.strides) == tuple(v.stride()) or nv.size <= 1
    # writes through numpy land in the tensor (and its base)
    nv[...] = -1.0
    ref(a)[...] = -1.0
    np.testing.assert_array_equal(to_np(t), a)


def test_numpy_of_expanded_and_empty_and_scalar():
    t = rumus.tensor([1.0, 2.0, 3.0]).expand(2, 3)
    n = t.numpy()
    assert n.strides == (0, 4)
    np.testing.assert_array_equal(n, [[1, 2, 3], [1, 2, 3]])
    e = rumus.zeros(0, 3).numpy()
    assert e.shape == (0, 3) and e.dtype == np.float32
    s = rumus.tensor(2.5).numpy()
    assert s.shape == () and s == 2.5


@pytest.mark.parametrize("dt,npdt", NP_DTYPES)
def test_numpy_dtype_mapping(dt, npdt):
    t = rumus.zeros(2, 2, dtype=dt)
    n = t.numpy()
    assert n.dtype == np.dtype(npdt)
    assert np.asarray(t).dtype == np.dtype(npdt)
    a = sample(npdt, (5,), seed=4)
    np.testing.assert_array_equal(rumus.tensor(a).numpy(), a)


@pytest.mark.parametrize("dt", [rumus.float32, rumus.int64, rumus.int32, rumus.uint8, rumus.bool])
def test_gpu_tensor_has_no_host_memory(dt, gpu):
    # numpy(), np.asarray() and data_ptr() raise on GPU tensors (by design);
    # .cpu() gives a host copy
    t = rumus.ones(2, 3, dtype=dt, device=gpu)
    with pytest.raises(TypeError, match="Tensor.cpu"):
        t.numpy()
    with pytest.raises(TypeError, match="Tensor.cpu"):
        np.asarray(t)
    with pytest.raises(NotImplementedError):
        t.data_ptr()
    assert (t.cpu().numpy() == 1).all()


def test_bfloat16_numpy_raises():
    t = rumus.tensor([1.0, 2.0]).bfloat16()
    with pytest.raises(TypeError):
        t.numpy()
    np.testing.assert_array_equal(t.float().numpy(), [1.0, 2.0])


def test_asarray_zero_copy():
    t = rumus.arange(12, dtype=rumus.float64).reshape(3, 4)
    n = np.asarray(t)
    assert n.ctypes.data == t.data_ptr()
    assert n.dtype == np.float64 and n.shape == (3, 4)
    n[2, 3] = 99.0
    assert t[2, 3].item() == 99.0
    v = t[1:, ::2]
    nv = np.asarray(v)
    assert nv.ctypes.data == v.data_ptr()
    assert nv.strides == (32, 16)
    np.testing.assert_array_equal(nv, np.asarray(t)[1:, ::2])
    it = rumus.tensor([[1, 2], [3, 4]], dtype=rumus.int32).t()
    ni = np.asarray(it)
    assert ni.dtype == np.int32
    np.testing.assert_array_equal(ni, [[1, 3], [2, 4]])
    assert hasattr(t, "__array_interface__")


def test_as_tensor():
    a = np.arange(6, dtype=np.float32)
    t = rumus.as_tensor(a)
    assert t.data_ptr() == a.ctypes.data
    t[0] = 10.0
    assert a[0] == 10.0
    c = rumus.as_tensor(a, dtype=rumus.float64)
    assert c.dtype == rumus.float64
    c[1] = -1.0
    assert a[1] == 1.0
    from_list = rumus.as_tensor([1, 2, 3])
    assert from_list.dtype == rumus.int64
    np.testing.assert_array_equal(to_np(from_list), [1, 2, 3])


# -------------------------------------------------- tolist / item / casts


@pytest.mark.parametrize("dt,npdt", NP_DTYPES)
def test_tolist(dt, npdt, device):
    skip_on_gpu(device, dt)
    a = sample(npdt, (2, 3), seed=2)
    t = on(device, rumus.tensor(a, device=device))
    assert t.tolist() == a.tolist()
    assert t.T.tolist() == a.T.tolist()
    assert t[1].tolist() == a[1].tolist()
    assert t[1, 2].tolist() == a[1, 2].item()
    pytype = {"f": float, "i": int, "u": int, "b": bool}[np.dtype(npdt).kind]
    assert type(t.tolist()[0][0]) is pytype
    assert on(device, rumus.zeros(0, 2, dtype=dt, device=device)).tolist() == []


def test_tolist_bfloat16():
    t = rumus.tensor([1.5, -2.0, 0.25]).bfloat16()
    assert t.tolist() == [1.5, -2.0, 0.25]


def test_item_and_python_scalars(device):
    def T(*a, **k):
        return on(device, rumus.tensor(*a, device=device, **k))

    t = T(2.75)
    assert t.item() == 2.75 and type(t.item()) is float
    assert float(t) == 2.75
    assert int(t) == 2
    assert int(T(-2.75)) == -2
    assert bool(t) is True
    assert bool(T(0.0)) is False
    i = T([[7]])
    assert i.item() == 7 and type(i.item()) is int
    assert int(i) == 7 and float(i) == 7.0
    b = T([True])
    assert b.item() is True
    assert T(3, dtype=rumus.uint8).item() == 3
    if device == "cpu":  # the GPU holds int64 as 32 bits and has no float64 (by design)
        assert T(2**40).item() == 2**40
        f64 = T(np.array([0.1]))
        assert f64.item() == 0.1
    else:
        assert T(-(2**31)).item() == -(2**31) and T(2**31 - 1).item() == 2**31 - 1
    f32 = T([0.1])
    assert f32.item() == float(np.float32(0.1))
    with pytest.raises(RuntimeError):
        T([1.0, 2.0]).item()
    with pytest.raises(RuntimeError):
        rumus.zeros(0, device=device).item()
    with pytest.raises(RuntimeError):
        bool(T([1.0, 2.0]))
    with pytest.raises((ValueError, RuntimeError, TypeError)):
        float(T([1.0, 2.0]))


# ----------------------------------------------------------- attributes


def test_basic_attributes(device):
    t = rumus.zeros(2, 3, 4, device=device)
    assert t.shape == (2, 3, 4)
    assert isinstance(t.shape, tuple)
    assert isinstance(t.shape, rumus.Size)
    assert t.size() == (2, 3, 4)
    assert isinstance(t.size(), rumus.Size)
    assert t.size(1) == 3 and t.size(-1) == 4
    assert t.ndim == 3 and t.dim() == 3
    assert t.numel() == 24
    assert len(t) == 2
    assert t.stride() == (12, 4, 1)
    assert isinstance(t.stride(), tuple)
    assert t.stride(0) == 12 and t.stride(-1) == 1
    assert t.is_contiguous()
    assert t.storage_offset() == 0
    assert t.dtype == rumus.float32
    assert t.is_floating_point()
    assert t.requires_grad is False
    assert isinstance(t._version, int)
    name = "cpu" if device == "cpu" else "gpu:0"
    assert str(t.device) == name and t.device.type == device
    assert t.device == rumus.device(name)
    with pytest.raises(IndexError):
        t.size(3)
    with pytest.raises(IndexError):
        t.stride(-4)


def test_attributes_of_views(device):
    t = on(device, rumus.zeros(4, 5, device=device))
    v = t[1:, ::2]
    assert v.shape == (3, 3)
    assert v.stride() == (5, 2)
    assert v.storage_offset() == 5
    assert not v.is_contiguous()
    assert v.numel() == 9
    assert t.T.is_contiguous() is False
    assert t[1].is_contiguous()
    s = on(device, rumus.tensor(1.0, device=device))
    assert s.shape == () and s.ndim == 0 and s.numel() == 1 and s.stride() == ()
    with pytest.raises(TypeError):
        len(s)
    e = on(device, rumus.zeros(0, 3, device=device))
    assert e.numel() == 0 and len(e) == 0


@pytest.mark.parametrize("dt,npdt,size,is_float", DTYPES)
def test_dtype_attributes(dt, npdt, size, is_float, device):
    skip_on_gpu(device, dt)
    t = on(device, rumus.zeros(3, dtype=dt, device=device))
    assert t.element_size() == size
    assert dt.itemsize == size
    if npdt is not None:
        assert size == np.dtype(npdt).itemsize
    assert dt.is_floating_point is is_float
    assert t.is_floating_point() is is_float
    names = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"]
    assert repr(dt) == "rumus." + names[[d for d, *_ in DTYPES].index(dt)]


def test_dtype_reprs_and_aliases():
    assert repr(rumus.float32) == "rumus.float32"
    assert repr(rumus.int64) == "rumus.int64"
    assert repr(rumus.bfloat16) == "rumus.bfloat16"
    assert rumus.float == rumus.float32
    assert rumus.double == rumus.float64
    assert rumus.half == rumus.float16
    assert rumus.long == rumus.int64
    assert rumus.int == rumus.int32
    assert rumus.float32 != rumus.float64
    assert repr(rumus.float) == "rumus.float32"


# ------------------------------------------------------------------ repr


@pytest.mark.parametrize(
    "make,expected",
    [
        (lambda: rumus.tensor([1.0, 2.0, 3.0]), "tensor([1., 2., 3.])"),
        (lambda: rumus.tensor([1.5, 2.0]), "tensor([1.5000, 2.0000])"),
        (lambda: rumus.tensor([-1.5, 2.0]), "tensor([-1.5000,  2.0000])"),
        (lambda: rumus.tensor([1, 2, 3]), "tensor([1, 2, 3])"),
        (lambda: rumus.tensor([-1, 10]), "tensor([-1, 10])"),
        (lambda: rumus.tensor([1, 2], dtype=rumus.int32), "tensor([1, 2], dtype=rumus.int32)"),
        (
            lambda: rumus.tensor([1.0, 2.0], dtype=rumus.float64),
            "tensor([1., 2.], dtype=rumus.float64)",
        ),
        (lambda: rumus.tensor([True, False]), "tensor([ True, False])"),
        (lambda: rumus.tensor(3.0), "tensor(3.)"),
        (lambda: rumus.tensor(7), "tensor(7)"),
        (lambda: rumus.tensor([[1.0, 2.0], [3.0, 4.0]]), "tensor([[1., 2.],\n        [3., 4.]])"),
        (lambda: rumus.tensor([[1, 2], [3, 4]]), "tensor([[1, 2],\n        [3, 4]])"),
        (lambda: rumus.tensor([]), "tensor([])"),
        (
            lambda: rumus.tensor([1.0, 2.0], requires_grad=True),
            "tensor([1., 2.], requires_grad=True)",
        ),
    ],
)
def test_repr(make, expected, device):
    t = make()
    if device == "gpu":
        skip_on_gpu(device, t.dtype)
        req = t.requires_grad
        t = t.detach().to(device).requires_grad_(req)
        # like torch: the device goes before dtype= and requires_grad=
        cut = min(
            i
            for i in (
                expected.find(", dtype="),
                expected.find(", requires_grad"),
                len(expected) - 1,
            )
            if i >= 0
        )
        expected = expected[:cut] + ", device='gpu:0'" + expected[cut:]
    assert repr(t) == expected
    assert str(t) == expected


def test_repr_of_view_matches_contiguous(device):
    t = on(device, rumus.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device))
    dev = "" if device == "cpu" else ", device='gpu:0'"
    assert repr(t.T) == repr(t.T.contiguous())
    assert repr(t[:, ::2]) == "tensor([[1., 3.],\n        [4., 6.]]" + dev + ")"


# ----------------------------------------------------------- operators


def _pair(seed, shape=(3, 4), positive=False, device="cpu"):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    if positive:
        a = np.abs(a) + 0.5
    return a, rumus.tensor(a, device=device)


def close(t, expected, rtol=1e-5, atol=1e-6):
    expected = np.asarray(expected)
    assert t.device.type == _DEVICE[0], t.device
    assert tuple(t.shape) == expected.shape
    np.testing.assert_allclose(to_np(t), expected, rtol=rtol, atol=atol)


_DEVICE = ["cpu"]  # the device close() expects, set by the operator tests


@pytest.fixture
def op_device(device):
    _DEVICE[0] = device
    yield device
    _DEVICE[0] = "cpu"


def test_operator_smoke_float(op_device):
    device = op_device
    a, t = _pair(0, device=device)
    b, u = _pair(1, positive=True, device=device)
    close(t + u, a + b)
    close(t - u, a - b)
    close(t * u, a * b)
    close(t / u, a / b)
    close(u**2, b**2)
    close(u**u, b**b)
    close(-t, -a)
    close(abs(t), np.abs(a))
    close(t + 1, a + 1)
    close(t * 2.5, a * 2.5)
    # reflected forms
    close(1 + t, 1 + a)
    close(2 - t, 2 - a)
    close(3 * t, 3 * a)
    close(2 / u, 2 / b)
    close(2**t, 2**a)
    close(1.5 - u, 1.5 - b)
    close(7 // u, 7 // b)
    close(7 % u, 7 % b)
    close(t // u, a // b)
    close(t % u, np.mod(a, b))
    m, tm = _pair(2, (4, 2), device=device)
    close(t @ tm, a @ m, rtol=1e-5, atol=1e-5)
    for op in ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]:
        r = on(device, getattr(t, op)(u))
        assert r.dtype == rumus.bool
        np.testing.assert_array_equal(to_np(r), getattr(a, op)(b))
    r = on(device, 0.0 < t)  # reflected comparison
    np.testing.assert_array_equal(to_np(r), 0.0 < a)
    # broadcasting
    close(t + rumus.tensor(b[0], device=device), a + b[0])
    close(rumus.tensor(b[:, :1], device=device) * t, b[:, :1] * a)


def test_operator_smoke_int_and_bool(device):
    def T(x):
        return on(device, rumus.tensor(x, device=device))

    a = np.array([-7, -3, 0, 2, 5, 9], dtype=np.int64)
    b = np.array([2, -3, 4, 3, -2, 5], dtype=np.int64)
    t, u = T(a), T(b)
    for got, exp in [
        (t + u, a + b),
        (t - u, a - b),
        (t * u, a * b),
        (t // u, a // b),
        (t % u, a % b),
        (~t, ~a),
        (t & u, a & b),
        (t | u, a | b),
        (t ^ u, a ^ b),
        (t & 6, a & 6),
        (6 & t, 6 & a),
        (3 | t, 3 | a),
        (5 ^ t, 5 ^ a),
        (10 - t, 10 - a),
        (-t, -a),
        (abs(t), np.abs(a)),
        (t**2, a**2),
        (2 ** T([0, 1, 5]), 2 ** np.array([0, 1, 5])),
        (17 // u, 17 // b),
        (17 % u, 17 % b),
    ]:
        assert got.dtype == rumus.int64 and got.device.type == device
        np.testing.assert_array_equal(to_np(got), exp)
    r = on(device, t / u)
    assert r.dtype == rumus.float32
    np.testing.assert_allclose(to_np(r), (a / b).astype(np.float32), rtol=1e-6)
    r = on(device, t + 2.5)
    assert r.dtype == rumus.float32
    np.testing.assert_allclose(to_np(r), a + 2.5)
    p = np.array([True, False, True, False])
    q = np.array([True, True, False, False])
    tp, tq = T(p), T(q)
    for got, exp in [(~tp, ~p), (tp & tq, p & q), (tp | tq, p | q), (tp ^ tq, p ^ q)]:
        assert got.dtype == rumus.bool and got.device.type == device
        np.testing.assert_array_equal(to_np(got), exp)


def test_inplace_operators_bump_version_keep_identity(op_device):
    device = op_device
    a, t = _pair(3, device=device)
    ident = t
    ptr = t.data_ptr() if device == "cpu" else None  # data_ptr() raises on the GPU (by design)
    for op, npop in [
        ("__iadd__", np.add),
        ("__isub__", np.subtract),
        ("__imul__", np.multiply),
        ("__itruediv__", np.true_divide),
    ]:
        v0 = t._version
        t = getattr(t, op)(2.0)
        a = npop(a, np.float32(2.0))
        assert t is ident
        assert t._version > v0
        if device == "cpu":
            assert t.data_ptr() == ptr
        close(t, a)
    ti = on(device, rumus.tensor([5, 6, 7], device=device))
    ti += 2
    np.testing.assert_array_equal(to_np(ti), [7, 8, 9])
    with pytest.raises(RuntimeError):
        ti /= 2
    with pytest.raises(RuntimeError):
        ti += 1.5
