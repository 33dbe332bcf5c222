"""matmul / mm / bmm / mv / dot / outer against NumPy."""

import re

import conftest
import numpy as np
import pytest
import rumus
from conftest import assert_close, make, skip_on_gpu, to_np, wide

TOL = {"float32": dict(rtol=1e-4, atol=1e-4), "float64": dict(rtol=1e-10, atol=1e-10)}


# --------------------------------------------------------------------------
# devices: every test runs on the CPU and on the GPU. conftest's ``on_default_device`` fixture (used
# by every test below) makes the ``device`` fixture's device the default device: rumus.tensor / ones
# / zeros and this file's ``tensor`` helper put their tensors on it.
# --------------------------------------------------------------------------

pytestmark = pytest.mark.usefixtures("on_default_device")


def tensor(a, dtype=None):
    """conftest.tensor on the current default device."""
    return conftest.tensor(a, dtype, rumus.get_default_device())


MATMUL_SHAPES = [
    ((4,), (4,)),
    ((3,), (3, 5)),
    ((2, 3), (3,)),
    ((2, 3), (3, 4)),
    ((1, 1), (1, 1)),
    ((7, 5), (5, 6)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)),
    ((3,), (2, 3, 4)),
    ((2, 3, 4), (4,)),
    ((1, 3, 4), (6, 4, 2)),
    ((2, 1, 2, 3), (1, 4, 3, 2)),
]
SHAPE_IDS = [f"{a}@{b}" for a, b in MATMUL_SHAPES]


def _ref(a, b, dtype):
    acc = np.int64 if dtype in ("int64", "int32") else np.float64
    return np.asarray(np.matmul(a.astype(acc), b.astype(acc))).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES, ids=SHAPE_IDS)
def test_matmul(sa, sb, dtype, rng, device):
    skip_on_gpu(device, dtype)
    a, b = make(sa, dtype, rng), make(sb, dtype, rng)
    exp = _ref(a, b, dtype)
    ta, tb = tensor(a), tensor(b)
    tol = TOL.get(dtype, {})
    assert_close(rumus.matmul(ta, tb), exp, **tol)
    assert_close(ta.matmul(tb), exp, **tol)
    assert_close(ta @ tb, exp, **tol)


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES, ids=SHAPE_IDS)
def test_matmul_float16(sa, sb, rng, device):
    skip_on_gpu(device, "float16")
    a, b = make(sa, "float16", rng, -1, 1), make(sb, "float16", rng, -1, 1)
    exp = np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
    assert_close(tensor(a) @ tensor(b), np.asarray(exp), rtol=2e-2, atol=2e-2)


def test_matmul_bfloat16(rng, device):
    skip_on_gpu(device, "bfloat16")
    a, b = make((3, 8), "float32", rng, -1, 1), make((8, 2), "float32", rng, -1, 1)
    ta, tb = tensor(a, "bfloat16"), tensor(b, "bfloat16")
    exp = to_np(ta).astype(np.float64) @ to_np(tb).astype(np.float64)
    assert_close(ta @ tb, exp, dtype="bfloat16", rtol=3e-2, atol=3e-2)


def test_matmul_int32(rng):
    a, b = make((3, 4), "int32", rng), make((4, 2), "int32", rng)
    assert_close(tensor(a) @ tensor(b), _ref(a, b, "int32"))


def _transposed(a, dtype=None):
    """A non-contiguous view with the values of 2-D+ array a (last two dims swapped)."""
    base = tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype)
    v = base.transpose(-1, -2)
    return v


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("which", ["a", "b", "both"])
def test_matmul_transposed_operands(which, dtype, rng, device):
    skip_on_gpu(device, dtype)
    for sa, sb in [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2))]:
        a, b = make(sa, dtype, rng), make(sb, dtype, rng)
        ta = _transposed(a) if which in ("a", "both") else tensor(a)
        tb = _transposed(b) if which in ("b", "both") else tensor(b)
        if which in ("a", "both"):
            assert not ta.is_contiguous()
        assert_close(ta @ tb, _ref(a, b, dtype), **TOL.get(dtype, {}))
    # the .T / .mT / t() spellings
    m = make((4, 3), dtype, rng)
    n = make((4, 5), dtype, rng)
    assert_close(tensor(m).T @ tensor(n), _ref(m.T, n, dtype), **TOL.get(dtype, {}))
    assert_close(tensor(m).t().matmul(tensor(n)), _ref(m.T, n, dtype), **TOL.get(dtype, {}))
    bm = make((2, 4, 3), dtype, rng)
    assert_close(
        tensor(bm).mT @ tensor(n), _ref(np.swapaxes(bm, -1, -2), n, dtype), **TOL.get(dtype, {})
    )


def test_matmul_strided_and_expanded_operands(rng, device):
    dt = wide(device)  # float64 is just "a float" here: float32 on the GPU
    tol = TOL["float32"] if dt == "float32" else {}
    a = make((6, 4), dt, rng)
    b = make((4, 3), dt, rng)
    ta = tensor(a)[::2]  # (3, 4) with row stride 8
    assert_close(ta @ tensor(b), _ref(a[::2], b, dt), **tol)
    tb = tensor(make((4, 6), dt, rng))
    bb = to_np(tb)[:, 1::2]
    assert_close(ta @ tb[:, 1::2], _ref(a[::2], bb, dt), **tol)
    # expanded batch (stride 0)
    e = tensor(b).unsqueeze(0).expand(5, 4, 3)
    x = make((5, 2, 4), dt, rng)
    assert_close(tensor(x) @ e, _ref(x, np.broadcast_to(b, (5, 4, 3)), dt), **tol)
    assert_close(rumus.bmm(tensor(x), e), _ref(x, np.broadcast_to(b, (5, 4, 3)), dt), **tol)


@pytest.mark.parametrize(
    "sa,sb",
    [
        ((2, 0), (0, 3)),
        ((0, 3), (3, 4)),
        ((3, 4), (4, 0)),
        ((2, 0, 3), (2, 3, 4)),
        ((2, 3, 0), (2, 0, 4)),
        ((0,), (0,)),
        ((0,), (0, 3)),
        ((4, 0), (0,)),
    ],
    ids=str,
)
def test_matmul_zero_size(sa, sb):
    a, b = np.ones(sa, np.float32), np.ones(sb, np.float32)
    exp = np.matmul(a, b)
    r = tensor(a) @ tensor(b)
    assert_close(r, np.asarray(exp))
    if 0 not in exp.shape:
        assert np.all(to_np(r) == 0)


def _assert_names_shapes(excinfo, sa, sb):
    msg = str(excinfo.value)

    def pat(shape):
        return (
            r"\D".join(str(d) for d in shape)
            .join([r"(?<!\d)", r"(?!\d)"])
            .replace(r"\D", r"\D{1,3}")
        )

    assert re.search(pat(sa), msg) and re.search(pat(sb), msg), (
        f"message does not name the shapes: {msg!r}"
    )


@pytest.mark.parametrize(
    "sa,sb",
    [
        ((2, 3), (4, 5)),
        ((3,), (4,)),
        ((2, 3), (2,)),
        ((6,), (5, 2)),
        ((2, 3, 4), (2, 5, 6)),
        ((2, 3, 4), (3, 4, 2)),
    ],
    ids=str,
)
def test_matmul_shape_mismatch_raises(sa, sb):
    with pytest.raises(RuntimeError) as ei:
        rumus.ones(*sa) @ rumus.ones(*sb)
    if len(sa) == 2 and len(sb) == 2:
        _assert_names_shapes(ei, sa, sb)


def test_matmul_0d_raises():
    with pytest.raises(RuntimeError):
        rumus.matmul(rumus.tensor(2.0), rumus.ones(3))


def test_matmul_dtype_mismatch_raises(device):
    # the GPU has no float64: int64 is the other dtype there
    other = rumus.float64 if device == "cpu" else rumus.int64
    with pytest.raises(RuntimeError):
        rumus.ones(2, 3) @ rumus.ones(3, 2, dtype=other)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_mm(dtype, rng, device):
    skip_on_gpu(device, dtype)
    a, b = make((3, 5), dtype, rng), make((5, 4), dtype, rng)
    exp = _ref(a, b, dtype)
    assert_close(rumus.mm(tensor(a), tensor(b)), exp, **TOL.get(dtype, {}))
    assert_close(tensor(a).mm(tensor(b)), exp, **TOL.get(dtype, {}))
    assert_close(rumus.mm(_transposed(a), tensor(b)), exp, **TOL.get(dtype, {}))


def test_mm_errors():
    with pytest.raises(RuntimeError) as ei:
        rumus.mm(rumus.ones(2, 3), rumus.ones(4, 5))
    _assert_names_shapes(ei, (2, 3), (4, 5))
    with pytest.raises(RuntimeError):
        rumus.mm(rumus.ones(2, 3, 4), rumus.ones(4, 5))
    with pytest.raises(RuntimeError):
        rumus.mm(rumus.ones(3), rumus.ones(3, 5))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_bmm(dtype, rng, device):
    skip_on_gpu(device, dtype)
    a, b = make((3, 2, 5), dtype, rng), make((3, 5, 4), dtype, rng)
    exp = _ref(a, b, dtype)
    assert_close(rumus.bmm(tensor(a), tensor(b)), exp, **TOL.get(dtype, {}))
    assert_close(tensor(a).bmm(tensor(b)), exp, **TOL.get(dtype, {}))
    assert_close(rumus.bmm(_transposed(a), _transposed(b)), exp, **TOL.get(dtype, {}))
    # batch-strided view
    big = make((6, 2, 5), dtype, rng)
    assert_close(
        rumus.bmm(tensor(big)[::2], tensor(b)), _ref(big[::2], b, dtype), **TOL.get(dtype, {})
    )


def test_bmm_errors():
    with pytest.raises(RuntimeError):
        rumus.bmm(rumus.ones(2, 3), rumus.ones(3, 2))
    with pytest.raises(RuntimeError):
        rumus.bmm(rumus.ones(2, 2, 3), rumus.ones(3, 3, 2))  # batch sizes differ (no broadcasting)
    with pytest.raises(RuntimeError):
        rumus.bmm(rumus.ones(2, 2, 3), rumus.ones(2, 4, 2))
    with pytest.raises(RuntimeError):
        rumus.bmm(rumus.ones(1, 2, 2, 3), rumus.ones(1, 2, 3, 2))


def test_bmm_zero_size():
    assert_close(
        rumus.bmm(rumus.ones(2, 3, 0), rumus.ones(2, 0, 4)), np.zeros((2, 3, 4), np.float32)
    )
    assert_close(
        rumus.bmm(rumus.ones(0, 3, 2), rumus.ones(0, 2, 4)), np.zeros((0, 3, 4), np.float32)
    )


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_mv(dtype, rng, device):
    skip_on_gpu(device, dtype)
    a, v = make((4, 6), dtype, rng), make((6,), dtype, rng)
    exp = _ref(a, v, dtype)
    assert_close(rumus.mv(tensor(a), tensor(v)), exp, **TOL.get(dtype, {}))
    assert_close(tensor(a).mv(tensor(v)), exp, **TOL.get(dtype, {}))
    big_v = make((12,), dtype, rng)
    assert_close(
        rumus.mv(_transposed(a), tensor(big_v)[::2]),
        _ref(a, big_v[::2], dtype),
        **TOL.get(dtype, {}),
    )
    with pytest.raises(RuntimeError):
        rumus.mv(tensor(a), rumus.ones(5, dtype=rumus.int64 if dtype == "int64" else rumus.float32))
    with pytest.raises(RuntimeError):
        rumus.mv(tensor(v), tensor(v))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_dot(dtype, rng, device):
    skip_on_gpu(device, dtype)
    a, b = make((7,), dtype, rng), make((7,), dtype, rng)
    exp = _ref(a, b, dtype)
    r = rumus.dot(tensor(a), tensor(b))
    assert r.shape == ()
    assert_close(r, exp, **TOL.get(dtype, {}))
    assert_close(tensor(a).dot(tensor(b)), exp, **TOL.get(dtype, {}))
    big = make((14,), dtype, rng)
    assert_close(
        rumus.dot(tensor(big)[::2], tensor(b)), _ref(big[::2], b, dtype), **TOL.get(dtype, {})
    )
    assert_close(rumus.dot(rumus.ones(0), rumus.ones(0)), np.asarray(0.0, np.float32))


def test_dot_errors():
    with pytest.raises(RuntimeError):
        rumus.dot(rumus.ones(3), rumus.ones(4))
    with pytest.raises(RuntimeError):
        rumus.dot(rumus.ones(2, 3), rumus.ones(2, 3))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_outer(dtype, rng, device):
    skip_on_gpu(device, dtype)
    a, b = make((4,), dtype, rng), make((3,), dtype, rng)
    exp = np.outer(a, b).astype(dtype)
    assert_close(rumus.outer(tensor(a), tensor(b)), exp)
    assert_close(tensor(a).outer(tensor(b)), exp)
    big = make((8,), dtype, rng)
    assert_close(rumus.outer(tensor(big)[::2], tensor(b)), np.outer(big[::2], b).astype(dtype))
    assert_close(rumus.outer(rumus.ones(0), rumus.ones(3)), np.zeros((0, 3), np.float32))


def test_matmul_large_enough_for_blocking(rng, device):
    # big enough that a blocked / parallel GEMM path is taken, still fast
    a, b = make((67, 129), "float32", rng), make((129, 33), "float32", rng)
    assert_close(tensor(a) @ tensor(b), _ref(a, b, "float32"), rtol=1e-4, atol=1e-3)
    dt = wide(device)  # the GPU has no float64: the batched case in float32 there
    a64, b64 = make((3, 65, 40), dt, rng), make((40, 70), dt, rng)
    assert_close(
        tensor(a64) @ tensor(b64), _ref(a64, b64, dt), **(TOL["float32"] if dt == "float32" else {})
    )


@pytest.mark.parametrize("sa,sb", [((2, 3), (3, 4)), ((2, 3, 4), (4, 5)), ((5,), (5, 2))], ids=str)
def test_matmul_with_torch(sa, sb, rng, device):
    torch = pytest.importorskip("torch")
    dt = wide(device)  # float64 is just "a float" here: float32 on the GPU (torch on its CPU)
    a, b = make(sa, dt, rng), make(sb, dt, rng)
    exp = torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert_close(tensor(a) @ tensor(b), exp, **(TOL["float32"] if dt == "float32" else {}))
