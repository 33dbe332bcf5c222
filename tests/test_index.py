"""gather / scatter / index_select / masked_fill / nonzero / one_hot and
__getitem__ / __setitem__, all compared against NumPy reference code."""

import contextlib

import numpy as np
import pytest
import rumus
from conftest import to_np

# --------------------------------------------------------------------------
# devices: every test runs on the CPU and on the GPU. conftest's ``on_default_device`` fixture (used
# by every test below) makes the ``device`` fixture's device the default device, so every tensor a
# test creates (rumus.tensor / zeros / ones ...) lands on that device.
# --------------------------------------------------------------------------

pytestmark = pytest.mark.usefixtures("on_default_device")


@contextlib.contextmanager
def out_of_range(device, exc=RuntimeError):
    """CPU: the op raises `exc`. GPU: index values are checked on the device and
    a failure is raised (RuntimeError) at the next read of GPU data, such as
    synchronize()."""
    if device == "cpu":
        with pytest.raises(exc):
            yield
    else:
        with pytest.raises(RuntimeError, match="detected on the GPU"):
            yield
            rumus.gpu.synchronize()


# ---------------------------------------------------------------- helpers


def check(t, expected):
    expected = np.asarray(expected)
    assert tuple(t.shape) == expected.shape, (tuple(t.shape), expected.shape)
    got = to_np(t)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


def rnd(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) < 0.5
    return rng.integers(-20, 20, size=shape).astype(dtype)


def pair(shape, kind="contiguous", dtype=np.float32, seed=0):
    """(numpy array, rumus tensor) with equal values; kind picks the layout."""
    shape = tuple(shape)
    if kind == "contiguous":
        a = rnd(shape, dtype, seed)
        return a, rumus.tensor(a)
    if kind == "transposed":
        base = rnd(shape[::-1], dtype, seed)
        return base.transpose(), rumus.tensor(base).permute(*reversed(range(len(shape))))
    if kind == "strided":
        base = rnd(tuple(2 * s + 1 for s in shape), dtype, seed)
        idx = tuple(slice(1, None, 2) for _ in shape)
        return base[idx], rumus.tensor(base)[idx]
    raise AssertionError(kind)


KINDS = ["contiguous", "transposed", "strided"]


def np_gather(a, dim, idx):
    out = np.empty(idx.shape, a.dtype)
    for p in np.ndindex(*idx.shape):
        q = list(p)
        q[dim] = idx[p]
        out[p] = a[tuple(q)]
    return out


def np_scatter(a, dim, idx, src, add=False):
    out = a.copy()
    for p in np.ndindex(*idx.shape):
        q = list(p)
        q[dim] = idx[p]
        v = src[p] if isinstance(src, np.ndarray) else src
        if add:
            out[tuple(q)] += v
        else:
            out[tuple(q)] = v
    return out


def unique_index(idx_shape, dim, size, seed=0):
    """int64 index of idx_shape with values in [0, size) that never repeat
    along `dim` (so scatter has a well-defined result)."""
    rng = np.random.default_rng(seed)
    idx = np.empty(idx_shape, np.int64)
    other = [s for d, s in enumerate(idx_shape) if d != dim]
    for p in np.ndindex(*other):
        perm = rng.permutation(size)[: idx_shape[dim]]
        sl = list(p)
        sl.insert(dim, slice(None))
        idx[tuple(sl)] = perm
    return idx


# ------------------------------------------------------------------ gather


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_gather(kind, dim):
    a, t = pair((3, 4, 5), kind)
    rng = np.random.default_rng(dim + 10)
    idx_shape = [2, 3, 4]
    idx_shape[dim] = 6  # may exceed the input size along dim (repeats)
    size = a.shape[dim]
    idx = rng.integers(0, size, size=idx_shape)
    expected = np_gather(a, dim % 3, idx)
    check(t.gather(dim, rumus.tensor(idx)), expected)
    check(rumus.gather(t, dim, rumus.tensor(idx)), expected)


def test_gather_dtypes_and_empty():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    idx = np.array([[0, 3], [1, 1], [2, 0]])
    check(rumus.tensor(a).gather(1, rumus.tensor(idx)), np_gather(a, 1, idx))
    b = a % 2 == 0
    check(rumus.tensor(b).gather(1, rumus.tensor(idx)), np_gather(b, 1, idx))
    e = np.zeros((3, 0), np.int64)
    r = rumus.tensor(a).gather(1, rumus.tensor(e))
    assert r.shape == (3, 0)
    # index transposed (non-contiguous)
    idxT = np.ascontiguousarray(idx.T)
    ti = rumus.tensor(idxT).t()
    check(rumus.tensor(a).gather(1, ti), np_gather(a, 1, idx))


def test_gather_out_of_range_index_is_runtime_error(device):
    # torch: TORCH_CHECK in ScatterGatherKernel -> RuntimeError (not IndexError)
    t = rumus.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    with out_of_range(device):
        t.gather(1, rumus.tensor([[0, 4]]))
    with out_of_range(device):
        t.gather(0, rumus.tensor([[3, 0]]))
    with out_of_range(device):
        t.gather(1, rumus.tensor([[-1, 0]]))


@pytest.mark.parametrize(
    "dim,index,exc",
    [
        (1, [[0.0, 1.0]], RuntimeError),  # float index: "gather(): Expected dtype int64 for index"
        (1, [0, 1], RuntimeError),  # index ndim != input ndim
        (1, [[0], [1], [2], [0]], RuntimeError),  # index larger than input in a non-gather dim
        (2, [[0, 1]], IndexError),  # dim out of range
        (-3, [[0, 1]], IndexError),
    ],
)
def test_gather_errors(dim, index, exc):
    t = rumus.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    with pytest.raises(exc):
        t.gather(dim, rumus.tensor(index))


# ------------------------------------------------------------------ scatter


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_src(kind, dim):
    a, t = pair((4, 5), kind)
    if dim == 0:
        idx = unique_index((3, 4), 0, 4, seed=1)
    else:
        idx = unique_index((3, 4), 1, 5, seed=2)
    src = rnd((3, 5), seed=3)  # larger than index along dim 1: allowed
    expected = np_scatter(a, dim % 2, idx, src)
    r = t.scatter(dim, rumus.tensor(idx), rumus.tensor(src))
    check(r, expected)
    check(rumus.scatter(t, dim, rumus.tensor(idx), rumus.tensor(src)), expected)
    # out of place: input unchanged
    check(t, a)


@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_value(dim):
    a = rnd((4, 5), seed=5)
    t = rumus.tensor(a)
    idx = unique_index((2, 3), dim, a.shape[dim], seed=6)
    expected = np_scatter(a, dim, idx, np.float32(2.5))
    check(t.scatter(dim, rumus.tensor(idx), 2.5), expected)
    ai = np.arange(20, dtype=np.int64).reshape(4, 5)
    expected = np_scatter(ai, dim, idx, -7)
    check(rumus.tensor(ai).scatter(dim, rumus.tensor(idx), -7), expected)


def test_scatter_inplace_and_version():
    a = rnd((3, 4), seed=7)
    t = rumus.tensor(a)
    idx = unique_index((2, 4), 0, 3, seed=8)
    src = rnd((2, 4), seed=9)
    v0 = t._version
    r = t.scatter_(0, rumus.tensor(idx), rumus.tensor(src))
    assert t._version > v0
    expected = np_scatter(a, 0, idx, src)
    check(t, expected)
    check(r, expected)
    v1 = t._version
    t.scatter_(1, rumus.tensor(unique_index((3, 2), 1, 4, seed=3)), 0.0)
    assert t._version > v1
    expected = np_scatter(expected, 1, unique_index((3, 2), 1, 4, seed=3), np.float32(0))
    check(t, expected)


def test_scatter_into_view_writes_base():
    base = np.zeros((4, 6), np.float32)
    tb = rumus.tensor(base)
    view = tb[:, ::2]  # (4, 3) non-contiguous
    idx = unique_index((2, 3), 0, 4, seed=11)
    src = rnd((2, 3), seed=12)
    view.scatter_(0, rumus.tensor(idx), rumus.tensor(src))
    expected = base.copy()
    expected[:, ::2] = np_scatter(base[:, ::2], 0, idx, src)
    check(tb, expected)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_scatter_add(kind, dim):
    a, t = pair((3, 4, 2), kind)
    rng = np.random.default_rng(20 + dim)
    idx_shape = [3, 4, 2]
    idx_shape[dim] = 5  # more entries than the size: duplicates accumulate
    idx = rng.integers(0, a.shape[dim], size=idx_shape)
    src = rnd(idx_shape, seed=21)
    expected = np_scatter(a, dim, idx, src, add=True)
    r = t.scatter_add(dim, rumus.tensor(idx), rumus.tensor(src))
    np.testing.assert_allclose(to_np(r), expected, rtol=1e-5, atol=1e-5)
    r2 = rumus.scatter_add(t, dim, rumus.tensor(idx), rumus.tensor(src))
    np.testing.assert_allclose(to_np(r2), expected, rtol=1e-5, atol=1e-5)
    check(t, a)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_scatter_and_scatter_add_large_in_parallel_blocks(dim):
    # Big enough for the CPU's parallel split (blocks of index rows when dim != 0):
    # repeated positions within a row still add up exactly once each, and for
    # scatter the last write along the index order wins.
    rng = np.random.default_rng(7 + dim)
    shape = [64, 48, 40]
    idx_shape = list(shape)
    idx_shape[dim] = 30
    idx = rng.integers(0, shape[dim], size=idx_shape)
    src = rng.integers(-50, 50, size=idx_shape).astype(np.float32)  # sums stay exact
    base = rng.integers(-9, 9, size=shape).astype(np.float32)
    got = rumus.tensor(base).scatter_add(dim, rumus.tensor(idx), rumus.tensor(src))
    np.testing.assert_array_equal(to_np(got), np_scatter(base, dim, idx, src, add=True))
    t = rumus.tensor(base)
    if t.device.type != "cpu":
        return  # which repeated write wins is unspecified on GPUs (as in PyTorch CUDA)
    t.scatter_(dim, rumus.tensor(idx), rumus.tensor(src))
    np.testing.assert_array_equal(to_np(t), np_scatter(base, dim, idx, src))


def test_scatter_add_inplace_int_and_version():
    a = np.zeros(5, np.int64)
    t = rumus.tensor(a)
    idx = np.array([0, 1, 1, 4, 4, 4, 0])
    src = np.arange(1, 8, dtype=np.int64)
    v0 = t._version
    t.scatter_add_(0, rumus.tensor(idx), rumus.tensor(src))
    assert t._version > v0
    expected = a.copy()
    np.add.at(expected, idx, src)
    check(t, expected)


def test_scatter_out_of_range_index_is_runtime_error(device):
    # torch: TORCH_CHECK in ScatterGatherKernel -> RuntimeError (not IndexError)
    t = rumus.zeros(3, 4)
    with out_of_range(device):
        t.scatter(0, rumus.tensor([[3, 0]]), rumus.ones(1, 2))
    with out_of_range(device):
        t.scatter(1, rumus.tensor([[4]]), 1.0)
    with out_of_range(device):
        t.scatter_add(0, rumus.tensor([[5, 0]]), rumus.ones(1, 2))
    with out_of_range(device):
        t.scatter_(1, rumus.tensor([[-1]]), 1.0)


@pytest.mark.parametrize("bad", [[[3, 0]], [[-1, 0]], [[0, -4]]])
def test_scatter_out_of_range_raises(bad, device):
    t = rumus.zeros(3, 4)
    with out_of_range(device, (IndexError, RuntimeError)):
        t.scatter(0, rumus.tensor(bad), rumus.ones(1, 2))
    with out_of_range(device, (IndexError, RuntimeError)):
        t.scatter_add_(0, rumus.tensor(bad), rumus.ones(1, 2))
    with out_of_range(device, (IndexError, RuntimeError)):
        t.scatter_(0, rumus.tensor(bad), 2.0)


@pytest.mark.parametrize(
    "dim,index,src,exc",
    [
        (2, [[0]], 1.0, IndexError),  # dim out of range
        (0, [[0.0]], 1.0, RuntimeError),  # float index
        (0, [0], 1.0, RuntimeError),  # index ndim != self ndim
        (0, [[0, 1, 2]], "small", RuntimeError),  # src smaller than index
    ],
)
def test_scatter_errors(dim, index, src, exc):
    t = rumus.zeros(3, 4)
    if src == "small":
        src = rumus.ones(1, 2)
    with pytest.raises(exc):
        t.scatter(dim, rumus.tensor(index), src)


# ------------------------------------------------------------ index_select


@pytest.mark.parametrize("kind", KINDS)
def test_index_select(kind):
    a, t = pair((4, 5, 3), kind)
    for dim, idx in [
        (0, [3, 0, 0, 2]),
        (1, [4]),
        (2, [2, 1, 0, 1, 2]),
        (-1, [0, 0]),
        (1, []),
    ]:
        ia = np.array(idx, dtype=np.int64)
        expected = np.take(a, ia, axis=dim)
        check(t.index_select(dim, rumus.tensor(ia)), expected)
        check(rumus.index_select(t, dim, rumus.tensor(ia)), expected)
    # int32 index is accepted too
    ia = np.array([1, 3], dtype=np.int32)
    check(t.index_select(0, rumus.tensor(ia)), np.take(a, ia, axis=0))


def test_index_select_dtypes_and_copy():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    t = rumus.tensor(a)
    r = t.index_select(1, rumus.tensor([1, 3]))
    check(r, a[:, [1, 3]])
    r.fill_(0)
    check(t, a)
    b = a > 5
    check(rumus.tensor(b).index_select(0, rumus.tensor([2, 0])), b[[2, 0]])


def test_index_select_out_of_range_index(device):
    t = rumus.zeros(3, 4)
    with out_of_range(device, IndexError):
        t.index_select(0, rumus.tensor([3]))
    with out_of_range(device, IndexError):
        t.index_select(1, rumus.tensor([0, 4]))


def test_index_select_errors():
    t = rumus.zeros(3, 4)
    with pytest.raises(IndexError):
        t.index_select(2, rumus.tensor([0]))
    with pytest.raises((IndexError, RuntimeError)):
        t.index_select(0, rumus.tensor([[0, 1]]))  # index must be 1-D
    with pytest.raises((IndexError, RuntimeError, TypeError)):
        t.index_select(0, rumus.tensor([0.0]))


# ------------------------------------------------------------- masked_fill


@pytest.mark.parametrize("kind", KINDS)
def test_masked_fill(kind):
    a, t = pair((3, 4), kind)
    mask = a > 0.2
    check(t.masked_fill(rumus.tensor(mask), -1.5), np.where(mask, np.float32(-1.5), a))
    row = np.array([True, False, False, True])
    check(t.masked_fill(rumus.tensor(row), 9.0), np.where(row, np.float32(9.0), a))
    col = np.array([[False], [True], [False]])
    check(t.masked_fill(rumus.tensor(col), 0.0), np.where(col, np.float32(0.0), a))
    check(rumus.masked_fill(t, rumus.tensor(mask), 3.0), np.where(mask, np.float32(3.0), a))
    # 0-d tensor value
    check(t.masked_fill(rumus.tensor(mask), rumus.tensor(4.0)), np.where(mask, np.float32(4.0), a))
    check(t, a)


def test_masked_fill_dtypes():
    a = np.arange(-5, 7, dtype=np.int64).reshape(3, 4)
    mask = a % 3 == 0
    r = rumus.tensor(a).masked_fill(rumus.tensor(mask), 100)
    assert r.dtype == rumus.int64
    check(r, np.where(mask, 100, a))
    b = a > 0
    check(rumus.tensor(b).masked_fill(rumus.tensor(mask), True), np.where(mask, True, b))
    e = np.zeros((0, 4), np.float32)
    check(rumus.tensor(e).masked_fill(rumus.tensor(np.zeros((0, 4), bool)), 1.0), e)


def test_masked_fill_inplace_version_and_view():
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = rumus.tensor(base)
    v = t[:, 1:3]
    mask = np.array([[True, False], [False, True], [True, True]])
    v0 = t._version
    v.masked_fill_(rumus.tensor(mask), -2.0)
    assert t._version > v0
    expected = base.copy()
    expected[:, 1:3] = np.where(mask, np.float32(-2.0), base[:, 1:3])
    check(t, expected)


def test_masked_fill_errors():
    t = rumus.zeros(3, 4)
    with pytest.raises(RuntimeError):
        t.masked_fill(rumus.tensor([True, False, True]), 1.0)
    with pytest.raises(RuntimeError):
        t.masked_fill_(rumus.ones(1, 3, 4, dtype=rumus.bool), 1.0)  # in place can't grow
    with pytest.raises(RuntimeError):
        t.masked_fill(rumus.tensor([1, 0, 1, 0]), 1.0)  # non-bool mask


# ------------------------------------------------------------------ nonzero


@pytest.mark.parametrize("kind", KINDS)
def test_nonzero(kind):
    a, t = pair((3, 4, 2), kind)
    a = a.copy()
    mask = a > 0.3
    t = t.masked_fill(rumus.tensor(~mask), 0.0)
    a[~mask] = 0.0
    r = t.nonzero()
    assert r.dtype == rumus.int64
    check(r, np.argwhere(a))
    check(rumus.nonzero(t), np.argwhere(a))


def test_nonzero_dtypes_and_empty():
    for arr in [
        np.array([0, 3, 0, -1, 5], np.int64),
        np.array([[True, False], [False, True]]),
        np.array([0, 1, 2, 0], np.uint8),
        np.array([0.0, -0.0, np.nan, 1e-30], np.float32),
        np.zeros((2, 3), np.float32),
        np.zeros((0, 3), np.float32),
    ]:
        check(rumus.tensor(arr).nonzero(), np.argwhere(arr))


def test_nonzero_and_one_hot_stay_on_the_inputs_device(device):
    # As torch.nonzero on CUDA: the results live where the input does.
    a = np.array([[0.0, 1.5], [2.0, 0.0], [0.0, -1.0]], np.float32)
    t = rumus.tensor(a, device=device)
    for r in (t.nonzero(), rumus.nonzero(t)):
        assert r.device.type == t.device.type
        np.testing.assert_array_equal(to_np(r), np.argwhere(a))
    for got, want in zip(t.nonzero(as_tuple=True), np.nonzero(a)):
        assert got.device.type == t.device.type
        np.testing.assert_array_equal(to_np(got), want)
    for got, want in zip(rumus.where(t > 0), np.nonzero(a > 0)):
        assert got.device.type == t.device.type
        np.testing.assert_array_equal(to_np(got), want)
    hot = rumus.nn.functional.one_hot(rumus.tensor([0, 2, 1], device=device))
    assert hot.device.type == t.device.type
    np.testing.assert_array_equal(to_np(hot), np.eye(3, dtype=np.int64)[[0, 2, 1]])


# ------------------------------------------------------------------ one_hot


def np_one_hot(a, n):
    return np.eye(n, dtype=np.int64)[a]


def test_one_hot_functional():
    import rumus.nn.functional as F

    a = np.array([[0, 2], [1, 4], [3, 3]], np.int64)
    t = rumus.tensor(a)
    r = F.one_hot(t)
    assert r.dtype == rumus.int64
    check(r, np_one_hot(a, 5))
    check(F.one_hot(t, num_classes=7), np_one_hot(a, 7))
    check(F.one_hot(t, 5), np_one_hot(a, 5))
    b = np.array([2, 0, 1], np.int64)
    check(F.one_hot(rumus.tensor(b), -1), np_one_hot(b, 3))
    check(F.one_hot(rumus.tensor(np.array(1, np.int64)), 3), np_one_hot(np.int64(1), 3))
    check(F.one_hot(rumus.tensor(np.zeros(0, np.int64)), 4), np.zeros((0, 4), np.int64))
    # non-contiguous input
    ta = rumus.tensor(np.ascontiguousarray(a.T)).t()
    check(F.one_hot(ta), np_one_hot(a, 5))


def test_one_hot_toplevel():
    a = np.array([1, 0, 3], np.int64)
    check(rumus.one_hot(rumus.tensor(a)), np_one_hot(a, 4))
    check(rumus.one_hot(rumus.tensor(a), num_classes=6), np_one_hot(a, 6))


def test_one_hot_errors():
    import rumus.nn.functional as F

    t = rumus.tensor([0, 3, 1])
    with pytest.raises(RuntimeError):
        F.one_hot(t, 3)  # class 3 out of range
    with pytest.raises(RuntimeError):
        F.one_hot(rumus.tensor([0, -1]), 3)
    with pytest.raises((RuntimeError, TypeError)):
        F.one_hot(rumus.tensor([0.0, 1.0]), 3)


# ------------------------------------------------------------------ getitem

A_SHAPE = (3, 4, 5)


def np_index_to_rumus(idx):
    if isinstance(idx, tuple):
        return tuple(np_index_to_rumus(i) for i in idx)
    if isinstance(idx, np.ndarray):
        return rumus.tensor(idx)
    return idx


BASIC = [
    0,
    1,
    -1,
    -3,
    (0, 2),
    (2, -1, 4),
    (-1, -2, -3),
    slice(None),
    slice(1, None),
    slice(None, 2),
    slice(None, None, 2),
    slice(0, 3, 2),
    slice(-2, None),
    slice(-10, 10),
    slice(5, 10),
    slice(2, 1),
    (slice(None), 1),
    (slice(None), slice(1, 3)),
    (slice(None), slice(None, None, 3), slice(1, None, 2)),
    (slice(1, None), slice(3, 0), 0),
    Ellipsis,
    (Ellipsis,),
    (Ellipsis, 0),
    (0, Ellipsis),
    (Ellipsis, slice(None, None, 2)),
    (1, Ellipsis, 2),
    (1, 2, 3, Ellipsis),
    None,
    (None,),
    (None, 0),
    (0, None, slice(1, 3)),
    (Ellipsis, None),
    (slice(None), None, 1, None),
    (None, Ellipsis, None),
    (),
    (0, slice(None, None, 2), -1),
    (1, slice(1, None, 2), Ellipsis, None),
    (slice(None, None, 4), slice(None, None, 5), slice(None, None, 6)),
]

# advanced indices with no repeated target element (usable for setitem too)
ADVANCED = [
    np.array([0, 2]),
    [0, 2],
    [-1, 0],
    np.array([2, 0], dtype=np.int32),
    np.array([[0], [-1]]),
    np.array([], dtype=np.int64),
    np.arange(60).reshape(A_SHAPE) % 3 == 0,  # same-shape bool mask
    np.array([True, False, True]),  # fewer-dims mask
    np.arange(12).reshape(3, 4) % 5 == 1,
    np.zeros(3, dtype=bool),
    (slice(None), np.array([True, False, True, True])),
    (slice(None), np.arange(20).reshape(4, 5) % 4 == 0),
    (np.arange(12).reshape(3, 4) % 2 == 0, slice(None, None, 2)),
    ([0, 2], [1, 3]),  # adjacent advanced
    (slice(None), [0, 1], [2, 3]),  # adjacent, after a slice
    ([0, 1], slice(None), [2, 3]),  # separated by a slice -> advanced dims first
    (np.array([[0], [1]]), slice(None), np.array([2, 3])),  # broadcast, separated
    (np.array([[0], [2]]), np.array([[1, 3]])),  # broadcast, adjacent
    (slice(None, None, 2), [1, 3]),
    (Ellipsis, [0, 4]),
    ([0, 1], Ellipsis),
    (None, [0, 2]),
    (0, [1, 2]),
    ([0, 2], 1),
    (slice(1, 3), [3, 0], slice(None, None, 2)),
    (Ellipsis, np.array([[4, 0], [1, 3]])),
]

ADVANCED_GET_ONLY = [
    np.array([2, 0, 1, 0]),  # repeats
    [1, 1, 1],
    (np.array([0, 0, 2]), np.array([1, 1, 3])),
]

# a 0-d integer tensor index behaves like an int (torch turns it into select)
ZERO_D_INDEX = [np.array(1), (slice(None), np.array(-1, dtype=np.int32))]


def _id(x):
    return repr(x).replace("\n", "")[:60]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("idx", BASIC + ADVANCED + ADVANCED_GET_ONLY + ZERO_D_INDEX, ids=_id)
def test_getitem_matches_numpy(kind, idx):
    a, t = pair(A_SHAPE, kind)
    r = t[np_index_to_rumus(idx)]
    check(r, a[idx])


@pytest.mark.parametrize("idx", BASIC + ADVANCED, ids=_id)
def test_getitem_int_and_bool_dtypes(idx, device):
    # float64 here is just "another float": float32 on the GPU (no float64 there)
    for dtype in [np.int64, np.bool_, np.uint8, np.float64 if device == "cpu" else np.float32]:
        a = rnd(A_SHAPE, dtype, seed=3)
        t = rumus.tensor(a)
        check(t[np_index_to_rumus(idx)], a[idx])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("idx", BASIC, ids=_id)
def test_basic_index_is_view(kind, idx, device):
    a, t = pair(A_SHAPE, kind)
    v = t[idx]
    esize = t.element_size()
    if (
        device == "cpu"
    ):  # data_ptr() raises NotImplementedError on the GPU; the writes below check sharing
        assert v.data_ptr() - t.data_ptr() == (v.storage_offset() - t.storage_offset()) * esize
    a2 = a.copy()
    a2[idx] = -100.0
    v.fill_(-100.0)
    check(t, a2)
    # and writes to the base are visible in the view
    t.fill_(5.0)
    np.testing.assert_array_equal(to_np(v), np.full(tuple(v.shape), 5.0, np.float32))


@pytest.mark.parametrize("idx", ADVANCED + ADVANCED_GET_ONLY, ids=_id)
def test_advanced_index_is_copy(idx):
    a, t = pair(A_SHAPE, "contiguous")
    c = t[np_index_to_rumus(idx)]
    c.fill_(-100.0)
    check(t, a)


def test_getitem_scalar_tensor():
    s = rumus.tensor(3.5)
    check(s[()], np.array(3.5, np.float32))
    check(s[...], np.array(3.5, np.float32))
    check(s[None], np.array([3.5], np.float32))
    check(s[None, ..., None], np.array([[3.5]], np.float32))
    with pytest.raises(IndexError):
        s[0]


# ------------------------------------------------------------------ setitem


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("idx", BASIC + ADVANCED, ids=_id)
def test_setitem_scalar(kind, idx):
    a, t = pair(A_SHAPE, kind)
    a2 = a.copy()
    a2[idx] = 7.25
    v0 = t._version
    t[np_index_to_rumus(idx)] = 7.25
    check(t, a2)
    assert t._version > v0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("idx", BASIC + ADVANCED, ids=_id)
def test_setitem_broadcast_tensor(kind, idx):
    a, t = pair(A_SHAPE, kind)
    target_shape = a[idx].shape
    if len(target_shape) == 0:
        val = np.array(-3.0, np.float32)
    else:
        val = (np.arange(target_shape[-1], dtype=np.float32) + 1) * -10
    a2 = a.copy()
    a2[idx] = val
    v0 = t._version
    t[np_index_to_rumus(idx)] = rumus.tensor(val)
    check(t, a2)
    assert t._version > v0


@pytest.mark.parametrize("idx", BASIC + ADVANCED, ids=_id)
def test_setitem_full_shape_tensor_other_dtype(idx):
    a, t = pair(A_SHAPE, "contiguous")
    target_shape = a[idx].shape
    val = np.random.default_rng(4).integers(-9, 9, size=target_shape).astype(np.int64)
    a2 = a.copy()
    a2[idx] = val
    t[np_index_to_rumus(idx)] = rumus.tensor(val)  # int64 -> float32 cast
    check(t, a2)


@pytest.mark.parametrize("idx", BASIC + ADVANCED, ids=_id)
def test_setitem_int_tensor(idx):
    a = np.arange(60, dtype=np.int64).reshape(A_SHAPE)
    t = rumus.tensor(a)
    a2 = a.copy()
    a2[idx] = -1
    t[np_index_to_rumus(idx)] = -1
    check(t, a2)
    b = a % 2 == 0
    tb = rumus.tensor(b)
    b2 = b.copy()
    b2[idx] = True
    tb[np_index_to_rumus(idx)] = True
    check(tb, b2)


def test_setitem_float_into_int_truncates():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    t = rumus.tensor(a)
    t[0] = 2.75
    t[1, 1:] = rumus.tensor([-1.5, 9.9])
    a[0] = 2
    a[1, 1:] = [-1, 9]
    check(t, a)


def test_setitem_through_view_bumps_shared_version_and_base():
    t = rumus.zeros(3, 4)
    v = t[1]
    v0 = t._version
    v[2] = 5.0
    assert t[1, 2].item() == 5.0
    assert t._version > v0  # views share the version counter (autograd relies on it)
    assert v._version == t._version


def test_setitem_broadcast_mismatch_raises():
    t = rumus.zeros(3, 4)
    with pytest.raises(RuntimeError):
        t[0] = rumus.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError):
        t[[0, 1]] = rumus.ones(3, 4)
    with pytest.raises(RuntimeError):
        t[rumus.tensor([True, False, True])] = rumus.ones(3, 4)


# ------------------------------------------------------------------ errors


def test_out_of_range_int_index():
    t = rumus.zeros(*A_SHAPE)
    for idx in [3, -4, (0, 4), (0, -5), (0, 0, 5), (Ellipsis, 5), (slice(None), 4)]:
        with pytest.raises(IndexError):
            t[idx]
        with pytest.raises(IndexError):
            t[idx] = 1.0
    with pytest.raises(IndexError):
        t[0, 0, 0, 0]  # too many indices
    with pytest.raises(IndexError):
        t[..., 0, ...]  # two ellipses


def test_out_of_range_advanced_index():
    t = rumus.zeros(*A_SHAPE)
    for idx in [[0, 3], rumus.tensor([0, -4]), (slice(None), [4]), (0, rumus.tensor([5]))]:
        with pytest.raises(IndexError):
            t[idx]
        with pytest.raises(IndexError):
            t[idx] = 1.0
    with pytest.raises(IndexError):
        t[rumus.tensor([True, False])]  # mask shape mismatch
    with pytest.raises(IndexError):
        t[rumus.ones(3, 5, dtype=rumus.bool)]


def test_negative_or_zero_step():
    t = rumus.zeros(*A_SHAPE)
    for idx in [slice(None, None, -1), (slice(None), slice(None, None, -2)), slice(2, 0, -1)]:
        with pytest.raises(ValueError):
            t[idx]
        with pytest.raises(ValueError):
            t[idx] = 1.0
    with pytest.raises(ValueError):
        t[::0]
