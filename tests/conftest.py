"""Shared helpers for the rumus test suite.

Test files import the plain helpers directly (``from conftest import ...``);
pytest puts this directory on ``sys.path``.
"""

import contextlib
import os

import numpy as np
import pytest
import rumus

# ---- devices ----

# The suite runs the deterministic matmul tile heuristic and writes nothing to
# the user's cache; test_gpu_matmul_tune.py turns tuning on in its children.
os.environ.setdefault("RUMUS_GPU_AUTOTUNE", "0")

# CI sets this so that a missing GPU (a broken lavapipe install) fails the GPU
# tests instead of skipping them.
GPU_REQUIRED = os.environ.get("RUMUS_REQUIRE_GPU") == "1"


def need_gpu():
    """Skips the calling test without a GPU (fails it when CI requires one)."""
    if not rumus.gpu.is_available():
        why = rumus._rumus._gpu_unavailable_reason()
        if GPU_REQUIRED:
            pytest.fail(f"RUMUS_REQUIRE_GPU=1 but no GPU: {why}")
        pytest.skip(f"no GPU: {why}")


@pytest.fixture(params=["cpu", "gpu"])
def device(request):
    """Runs a test once per device; the GPU run skips without one."""
    if request.param == "gpu":
        need_gpu()
    return request.param


@pytest.fixture
def gpu():
    need_gpu()
    return "gpu"


@contextlib.contextmanager
def default_device(device):
    """Makes ``device`` the default device (where factories create tensors) inside the block."""
    prev = rumus.get_default_device()
    rumus.set_default_device(device)
    try:
        yield
    finally:
        rumus.set_default_device(prev)


@pytest.fixture
def on_default_device(device):
    """Runs a test with its ``device`` as the default device; a file opts in with
    ``pytestmark = pytest.mark.usefixtures("on_default_device")``."""
    with default_device(device):
        yield


# ---- dtypes, data and assertions ----

ALL_DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"]
FLOAT_DTYPES = ["float32", "float64"]
INT_DTYPES = ["int64", "int32", "uint8"]

# Default tolerances per result dtype (rtol, atol).
TOL = {
    "float64": (1e-10, 1e-12),
    "float32": (1e-5, 1e-6),
    "float16": (1e-2, 1e-3),
    "bfloat16": (2e-2, 1e-2),
}


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def rdt(name):
    """rumus dtype object for a dtype name."""
    return getattr(rumus, name)


def make(shape, dtype="float32", rng=None, low=None, high=None):
    """Random numpy array of ``shape``.

    Floats are uniform in [low, high) (default [-3, 3)); ints are uniform
    integers in [low, high) (default [-5, 6), or [0, 11) for uint8); bools are
    fair coins. ``dtype="bfloat16"`` gives float32 values (pass them through
    :func:`tensor`, which rounds them to bfloat16).
    """
    if rng is None:
        rng = np.random.default_rng(1234)
    shape = tuple(shape)
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        lo = -3.0 if low is None else low
        hi = 3.0 if high is None else high
        npdt = np.float32 if dtype == "bfloat16" else np.dtype(dtype)
        return np.asarray(rng.uniform(lo, hi, size=shape).astype(npdt))
    if dtype == "uint8":
        lo = 0 if low is None else low
        hi = 11 if high is None else high
    else:
        lo = -5 if low is None else low
        hi = 6 if high is None else high
    return np.asarray(rng.integers(lo, hi, size=shape).astype(np.dtype(dtype)))


def tensor(a, dtype=None, device="cpu"):
    """rumus tensor (a copy) from a numpy array; dtype name optional."""
    a = np.asarray(a)
    if dtype == "bfloat16":
        return rumus.tensor(a.astype(np.float32)).to(rumus.bfloat16).to(device)
    t = rumus.tensor(a)
    if dtype is not None and t.dtype != rdt(dtype):
        t = t.to(rdt(dtype))
    return t.to(device)


def dtype_name(t):
    """'float32' etc. for a rumus tensor."""
    for name in ALL_DTYPES:
        if t.dtype == rdt(name):
            return name
    raise AssertionError(f"unknown dtype {t.dtype!r}")


def to_np(t):
    """Copy of a rumus tensor's values as numpy (bfloat16 -> float32)."""
    t = t.detach().cpu()
    if t.dtype == rumus.bfloat16:
        t = t.float()
    return np.array(t.numpy(), copy=True)


def assert_close(t, expected, rtol=None, atol=None, dtype=None):
    """Check dtype (name of ``expected``'s dtype unless ``dtype`` is given),
    shape and values of rumus tensor ``t`` against numpy ``expected``."""
    expected = np.asarray(expected)
    name = dtype if dtype is not None else expected.dtype.name
    assert isinstance(t, rumus.Tensor), f"expected a rumus.Tensor, got {type(t)}"
    assert t.dtype == rdt(name), f"dtype {t.dtype!r} != rumus.{name}"
    assert tuple(t.shape) == tuple(expected.shape), f"shape {tuple(t.shape)} != {expected.shape}"
    got = to_np(t)
    assert got.shape == expected.shape
    if name.startswith("complex"):  # the tolerances of the parts' dtype
        d_rtol, d_atol = TOL["float32" if name == "complex64" else "float64"]
        np.testing.assert_allclose(
            got.astype(np.complex128),
            expected.astype(np.complex128),
            rtol=d_rtol if rtol is None else rtol,
            atol=d_atol if atol is None else atol,
            equal_nan=True,
        )
    elif name in TOL:
        d_rtol, d_atol = TOL[name]
        rtol = d_rtol if rtol is None else rtol
        atol = d_atol if atol is None else atol
        np.testing.assert_allclose(
            got.astype(np.float64),
            expected.astype(np.float64),
            rtol=rtol,
            atol=atol,
            equal_nan=True,
        )
    else:
        np.testing.assert_array_equal(got, expected.astype(got.dtype))


def noncontig(a, dtype=None, device="cpu"):
    """Non-contiguous rumus views holding the values of numpy array ``a``.

    Returns a list of (kind, tensor, expected_numpy) where kind is one of
    'transposed' (ndim >= 2), 'strided' (t[::2] of a bigger tensor, ndim >= 1)
    and 'expanded' (a[:1] expanded along dim 0, ndim >= 1; expected values
    are the broadcast ones).
    """
    a = np.asarray(a)
    out = []
    if a.ndim >= 2:
        perm = tuple(reversed(range(a.ndim)))
        base = tensor(np.ascontiguousarray(a.transpose(perm)), dtype, device)
        out.append(("transposed", base.permute(*perm), a.copy()))
    if a.ndim >= 1:
        big = np.empty((2 * a.shape[0],) + a.shape[1:], dtype=a.dtype)
        big[::2] = a
        big[1::2] = a[::-1] if a.dtype != np.bool_ else ~a
        out.append(("strided", tensor(big, dtype, device)[::2], a.copy()))
        first = a[:1]
        out.append(
            (
                "expanded",
                tensor(np.ascontiguousarray(first), dtype, device).expand(*a.shape),
                np.ascontiguousarray(np.broadcast_to(first, a.shape)),
            )
        )
    return out


def leaf(a, dtype="float64"):
    """Leaf tensor that requires grad, holding ``a`` (default float64)."""
    t = tensor(np.asarray(a, dtype=dtype))
    t.requires_grad_()
    return t


def val(t):
    """NumPy copy of a tensor's values (detached first)."""
    return to_np(t.detach())


def ac(t, expected, rtol=None, atol=None):
    """assert_close on the detached tensor (dtype of ``expected`` checked)."""
    assert t is not None, "expected a tensor, got None"
    assert_close(t.detach(), np.asarray(expected), rtol=rtol, atol=atol)


def assert_same_data(a, b, device, probe=-42.0):
    """``a`` and ``b`` are the same memory: equal data_ptr() on the CPU. On the GPU
    data_ptr() raises NotImplementedError, so write ``probe`` through ``a`` and read it
    back through ``b`` instead (this overwrites their values)."""
    if device == "cpu":
        assert a.data_ptr() == b.data_ptr()
    else:
        a.fill_(probe)
        assert (to_np(b) == probe).all(), "the two tensors do not share memory"


# ---- GPU runs of tests written for float64: float32 stands in on the GPU ----

F32_TOL = dict(rtol=1e-5, atol=1e-6)

# Dtypes the generic GPU tests skip: float64 (WGSL has none, by design) and bfloat16
# (packed two per word on GPUs; tests/test_bf16_gpu.py covers it, registry included).
NOT_ON_GPU = ("float64", "bfloat16")


def wide(device):
    """Name of the float dtype standing for "a float" on ``device``: float64 on the CPU,
    float32 on the GPU. For tests that use float64 but are not about float64."""
    return "float64" if device == "cpu" else "float32"


def fd(device):
    """rumus dtype of :func:`wide`."""
    return rdt(wide(device))


def float_dtypes(device):
    """The float dtypes a test loops over on ``device``."""
    return ("float64", "float32") if device == "cpu" else ("float32",)


def skip_on_gpu(device, *dtypes):
    """Skips the GPU run of a test that needs a dtype in NOT_ON_GPU; ``dtypes`` are names
    ("float64") or rumus dtypes (rumus.float64)."""
    if device == "gpu":
        for d in dtypes:
            name = d if isinstance(d, str) else str(d).removeprefix("rumus.")
            if name in NOT_ON_GPU:
                why = "see tests/test_bf16_gpu.py" if name == "bfloat16" else "by design"
                pytest.skip(f"{name} is not tested on the GPU here ({why})")


def skip_f64_on_gpu(device, what="float64"):
    """Skips the GPU run of a test about ``what``, a float64-only feature."""
    if device != "cpu":
        pytest.skip(f"{what} is not supported on the GPU (by design)")


def dt(a, dtype=None, device="cpu"):
    """tensor() on ``device``; float64 data become float32 on the GPU."""
    a = np.asarray(a)
    if device != "cpu" and a.dtype == np.float64 and dtype in (None, "float64"):
        return tensor(a, "float32", device=device)
    return tensor(a, dtype, device=device)


def dleaf(a, device="cpu"):
    """leaf() (float64) on the CPU; a float32 leaf on the GPU."""
    t = dt(np.asarray(a, dtype=np.float64), device=device)
    t.requires_grad_()
    return t


def dac(t, expected, rtol=None, atol=None, device="cpu"):
    """ac() on the CPU; on the GPU float64 expectations are checked as float32 with (at least) the
    float32 tolerances."""
    expected = np.asarray(expected)
    if device != "cpu" and expected.dtype == np.float64:
        expected = expected.astype(np.float32)
        rtol = max(rtol or 0.0, F32_TOL["rtol"])
        atol = max(atol or 0.0, F32_TOL["atol"])
    ac(t, expected, rtol=rtol, atol=atol)


def dnp(device, rtol, atol):
    """np.testing tolerances: as given on the CPU, at least float32's on the GPU."""
    if device == "cpu":
        return dict(rtol=rtol, atol=atol)
    return dict(rtol=max(rtol, F32_TOL["rtol"]), atol=max(atol, F32_TOL["atol"]))


# ---- NumPy references shared by several op families ----


def ntuple(v, n):
    """``v`` as an n-tuple: a tuple/list as is, a scalar repeated (PyTorch's _ntuple)."""
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def log_softmax_ref(x, axis):
    """Numerically stable log_softmax of ``x`` along ``axis``."""
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))
