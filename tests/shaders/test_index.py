"""shaders/index.wgsl through wgpu-py against NumPy."""

import numpy as np
import pytest

from .conftest import groups_1d

F = "index.wgsl"
SENT = 99


def dtypes(gpu):
    return ["f32", "f16"] if gpu.has_f16 else ["f32"]


def npd(dtype):
    return np.float32 if dtype == "f32" else np.float16


def pad(x, before, after=3, fill=SENT):
    """x placed at element offset `before` in a larger buffer (a view)."""
    out = np.full(before + x.size + after, fill, dtype=x.dtype)
    out[before : before + x.size] = x.reshape(-1)
    return out


def flat_params(n, src_off, offs_off, out_off, lim=0xFFFFFFFF):
    return [n, src_off, offs_off, out_off, lim]


def along_params(n, k, inner, idx_off, small_off, big_off, st_outer, st_dim, st_inner=1):
    return [n, k, inner, idx_off, small_off, big_off, st_outer, st_dim, st_inner]


# ---- take / put ----


def test_take(gpu):
    rng = np.random.default_rng(0)
    for dtype in dtypes(gpu):
        src = rng.standard_normal(500).astype(npd(dtype))
        n = 1000  # several workgroups, not a multiple of 256; repeated offsets
        offs = rng.integers(-4, 496, n).astype(np.int32)  # relative to src_off = 4
        out = gpu.run(
            F,
            "take",
            [pad(src, 0), pad(offs, 2), np.zeros(n + 5, npd(dtype))],
            flat_params(n, 4, 2, 5),
            groups_1d(n),
            dtype=dtype,
        )[2]
        np.testing.assert_array_equal(out[5:], src[4 + offs])
        assert np.all(out[:5] == 0)


def test_take_x32_ints_and_bools(gpu):
    rng = np.random.default_rng(1)
    n = 1300
    for src in (
        rng.integers(-(2**31), 2**31, 300).astype(np.int32),
        rng.integers(0, 2, 300).astype(np.uint32),
    ):
        offs = rng.integers(0, 300, n).astype(np.int32)
        # A (2, 3) grid: the flat id must include gid.y.
        out = gpu.run(
            F, "take_x32", [src, offs, np.zeros(n, src.dtype)], flat_params(n, 0, 0, 0), (2, 3, 1)
        )[2]
        np.testing.assert_array_equal(out, src[offs])


def test_put(gpu):
    rng = np.random.default_rng(2)
    for dtype in dtypes(gpu):
        dst = rng.standard_normal(800).astype(npd(dtype))
        n = 600
        offs = rng.permutation(800)[:n].astype(np.int32)
        vals = rng.standard_normal(n).astype(npd(dtype))
        got = gpu.run(
            F,
            "put",
            [pad(vals, 3), pad(offs, 1), pad(dst, 6)],
            flat_params(n, 3, 1, 6),
            groups_1d(n),
            dtype=dtype,
        )[2]
        want = dst.copy()
        want[offs] = vals
        np.testing.assert_array_equal(got[6:-3], want)
        assert np.all(got[:6] == SENT) and np.all(got[-3:] == SENT)


def test_put_x32_and_repeated_offsets(gpu):
    rng = np.random.default_rng(3)
    dst = np.arange(50, dtype=np.int32)
    offs = np.array([3, 7, 3, 9, 7, 3], np.int32)
    vals = np.array([10, 20, 30, 40, 50, 60], np.int32)
    got = gpu.run(F, "put_x32", [vals, offs, dst], flat_params(6, 0, 0, 0), groups_1d(6))[2]
    # A repeated offset keeps one of its values (which one is unspecified).
    assert got[3] in (10, 30, 60) and got[7] in (20, 50) and got[9] == 40
    rest = np.setdiff1d(np.arange(50), offs)
    np.testing.assert_array_equal(got[rest], dst[rest])
    b = rng.integers(0, 2, 300).astype(np.uint32)
    o = rng.permutation(400)[:300].astype(np.int32)
    got = gpu.run(
        F, "put_x32", [b, o, np.full(400, 7, np.uint32)], flat_params(300, 0, 0, 0), groups_1d(300)
    )[2]
    want = np.full(400, 7, np.uint32)
    want[o] = b
    np.testing.assert_array_equal(got, want)


def test_take_and_put_through_a_window(gpu):
    # The indexed tensor bound as a window: its base offset may be negative and
    # elements at or past `lim` are skipped (another dispatch covers them).
    src = np.arange(10, dtype=np.float32) + 100
    offs = np.array([7, 2, 9, 5], np.int32)
    out = gpu.run(
        F,
        "take",
        [src, offs, np.full(4, -1.0, np.float32)],
        flat_params(4, -2, 0, 0, lim=6),
        groups_1d(4),
    )[2]
    np.testing.assert_array_equal(out, [105.0, 100.0, -1.0, 103.0])  # 9 - 2 = 7 >= lim: skipped
    vals = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    got = gpu.run(
        F,
        "put_add",
        [vals, offs, np.zeros(10, np.float32)],
        flat_params(4, 0, 0, -5, lim=3),
        groups_1d(4),
    )[2]
    np.testing.assert_array_equal(
        got, [4.0, 0, 1.0, 0, 0, 0, 0, 0, 0, 0]
    )  # 7-5=2 and 5-5=0 land; 2-5 < 0 and 9-5 >= 3 skip


def test_put_add_duplicates(gpu):
    rng = np.random.default_rng(4)
    n = 5000
    dst = rng.standard_normal(40).astype(np.float32)
    offs = rng.integers(0, 17, n).astype(np.int32)  # heavy contention on 17 slots
    vals = rng.standard_normal(n).astype(np.float32)
    got = gpu.run(
        F, "put_add", [pad(vals, 2), offs, pad(dst, 1)], flat_params(n, 2, 0, 1), groups_1d(n)
    )[2]
    want = dst.astype(np.float64)
    np.add.at(want, offs, vals.astype(np.float64))
    # Summation order differs: a few ulps of the partial sums' magnitude.
    np.testing.assert_allclose(got[1:-3], want, rtol=1e-5, atol=2e-5 * np.sqrt(n / 17))
    assert got[0] == SENT and np.all(got[-3:] == SENT)
    ints = rng.integers(-1000, 1000, n).astype(np.int32)
    got = gpu.run(
        F,
        "put_add_i32",
        [ints, offs, np.zeros(40, np.int32)],
        flat_params(n, 0, 0, 0),
        groups_1d(n),
    )[2]
    want = np.zeros(40, np.int64)
    np.add.at(want, offs, ints)
    np.testing.assert_array_equal(got, want)


# ---- index_select / gather / scatter ----


@pytest.mark.parametrize(
    "shape,dim", [((3, 7, 5), 1), ((40, 6), 0), ((6, 45), 1), ((2, 300, 3), 1)]
)
def test_index_select(gpu, shape, dim):
    rng = np.random.default_rng(5)
    outer, size, inner = int(np.prod(shape[:dim])), shape[dim], int(np.prod(shape[dim + 1 :]))
    k = 11 if size < 100 else 290
    idx = rng.integers(0, size, k).astype(np.int32)  # with repeats
    for dtype in dtypes(gpu):
        src = rng.standard_normal(shape).astype(npd(dtype))
        n = outer * k * inner
        out = gpu.run(
            F,
            "index_select",
            [pad(src, 4), pad(idx, 1), np.zeros(n + 2, npd(dtype))],
            along_params(n, k, inner, 1, 2, 4, size * inner, inner),
            groups_1d(n),
            dtype=dtype,
        )[2]
        np.testing.assert_array_equal(
            out[2:].reshape(shape[:dim] + (k,) + shape[dim + 1 :]), np.take(src, idx, axis=dim)
        )


def test_index_select_strided_and_x32(gpu):
    rng = np.random.default_rng(6)
    base = rng.integers(-100, 100, (9, 30)).astype(np.int32)  # storage of a [30, 9] transposed view
    idx = rng.integers(0, 30, 8).astype(np.int32)
    # view t = base.T: t[v, i] at v·1 + i·30; index_select(t, 0, idx).
    n = 8 * 9
    out = gpu.run(
        F,
        "index_select_x32",
        [base, idx, np.zeros(n, np.int32)],
        along_params(n, 8, 9, 0, 0, 0, 0, 1, 30),
        groups_1d(n),
    )[2]
    np.testing.assert_array_equal(out.reshape(8, 9), base.T[idx])


@pytest.mark.parametrize(
    "src_shape,idx_shape,dim",
    [
        ((4, 6, 3), (4, 5, 3), 1),
        ((4, 6, 3), (2, 9, 3), 1),
        ((300, 4), (700, 4), 0),
        ((5, 260), (5, 300), 1),
    ],
)
def test_gather(gpu, src_shape, idx_shape, dim):
    rng = np.random.default_rng(7)
    outer = int(np.prod(idx_shape[:dim]))
    inner = int(np.prod(idx_shape[dim + 1 :]))
    size, k = src_shape[dim], idx_shape[dim]
    sinner = int(np.prod(src_shape[dim + 1 :]))
    assert sinner == inner
    index = rng.integers(0, size, idx_shape).astype(np.int32)
    n = index.size
    for dtype in dtypes(gpu):
        src = rng.standard_normal(src_shape).astype(npd(dtype))
        out = gpu.run(
            F,
            "gather",
            [pad(src, 1), pad(index, 3), np.zeros(n, npd(dtype))],
            along_params(n, k, inner, 3, 0, 1, size * inner, inner),
            groups_1d(n),
            dtype=dtype,
        )[2]
        want = np.take_along_axis(
            src[tuple(slice(0, s) if d < dim else slice(None) for d, s in enumerate(idx_shape))],
            index,
            axis=dim,
        )
        np.testing.assert_array_equal(out.reshape(idx_shape), want)
    src = rng.integers(-5, 5, src_shape).astype(np.int32)
    out = gpu.run(
        F,
        "gather_x32",
        [src, index, np.zeros(n, np.int32)],
        along_params(n, k, inner, 0, 0, 0, size * inner, inner),
        (2, 3, 1) if n <= 1536 else groups_1d(n),
    )[2]
    want = np.take_along_axis(
        src[tuple(slice(0, s) if d < dim else slice(None) for d, s in enumerate(idx_shape))],
        index,
        axis=dim,
    )
    np.testing.assert_array_equal(out.reshape(idx_shape), want)


def scatter_ref(dst, dim, index, vals, add):
    out = dst.astype(np.float64 if add and dst.dtype.kind == "f" else dst.dtype).copy()
    for pos in np.ndindex(*index.shape):
        tgt = list(pos)
        tgt[dim] = index[pos]
        if add:
            out[tuple(tgt)] += vals[pos]
        else:
            out[tuple(tgt)] = vals[pos]
    return out


def test_scatter_unique_targets(gpu):
    rng = np.random.default_rng(8)
    dst_shape, idx_shape, dim = (4, 10, 3), (4, 7, 3), 1
    # Along dim, each (o, i) column gets distinct targets so the result is defined.
    index = np.stack(
        [np.stack([rng.permutation(10)[:7] for _ in range(3)], axis=1) for _ in range(4)]
    ).astype(np.int32)
    assert index.shape == idx_shape
    n = index.size
    for dtype in dtypes(gpu):
        dst = rng.standard_normal(dst_shape).astype(npd(dtype))
        vals = rng.standard_normal(idx_shape).astype(npd(dtype))
        got = gpu.run(
            F,
            "scatter",
            [pad(vals, 2), pad(index, 1), pad(dst, 5)],
            along_params(n, 7, 3, 1, 2, 5, 30, 3),
            groups_1d(n),
            dtype=dtype,
        )[2]
        np.testing.assert_array_equal(
            got[5:-3].reshape(dst_shape), scatter_ref(dst, dim, index, vals, False)
        )
        assert np.all(got[:5] == SENT) and np.all(got[-3:] == SENT)
    dst = rng.integers(0, 2, dst_shape).astype(np.uint32)
    vals = rng.integers(0, 2, idx_shape).astype(np.uint32)
    got = gpu.run(
        F, "scatter_x32", [vals, index, dst], along_params(n, 7, 3, 0, 0, 0, 30, 3), groups_1d(n)
    )[2]
    np.testing.assert_array_equal(got.reshape(dst_shape), scatter_ref(dst, dim, index, vals, False))


@pytest.mark.parametrize(
    "dst_shape,idx_shape,dim",
    [((4, 5, 3), (4, 9, 3), 1), ((6, 70), (6, 200), 1), ((3, 8), (2, 8), 0)],
)
def test_scatter_add_duplicates(gpu, dst_shape, idx_shape, dim):
    rng = np.random.default_rng(9)
    outer = int(np.prod(idx_shape[:dim]))
    inner = int(np.prod(idx_shape[dim + 1 :]))
    size, k = dst_shape[dim], idx_shape[dim]
    index = rng.integers(0, size, idx_shape).astype(np.int32)
    n = index.size
    dst = rng.standard_normal(dst_shape).astype(np.float32)
    vals = rng.standard_normal(idx_shape).astype(np.float32)
    got = gpu.run(
        F,
        "scatter_add",
        [vals, index, pad(dst, 2)],
        along_params(n, k, inner, 0, 0, 2, size * inner, inner),
        groups_1d(n),
    )[2]
    np.testing.assert_allclose(
        got[2:-3].reshape(dst_shape), scatter_ref(dst, dim, index, vals, True), rtol=1e-5, atol=1e-5
    )
    ints = rng.integers(-50, 50, idx_shape).astype(np.int32)
    d0 = rng.integers(-50, 50, dst_shape).astype(np.int32)
    got = gpu.run(
        F,
        "scatter_add_i32",
        [ints, index, d0],
        along_params(n, k, inner, 0, 0, 0, size * inner, inner),
        groups_1d(n),
    )[2]
    np.testing.assert_array_equal(got.reshape(dst_shape), scatter_ref(d0, dim, index, ints, True))


def test_embedding_backward_is_scatter_add_dim0(gpu):
    rng = np.random.default_rng(10)
    vocab, d, m = 13, 33, 400
    tokens = rng.integers(0, vocab, m).astype(np.int32)
    grad_out = rng.standard_normal((m, d)).astype(np.float32)
    index = np.repeat(tokens[:, None], d, axis=1)
    n = m * d
    got = gpu.run(
        F,
        "scatter_add",
        [grad_out, index, np.zeros((vocab, d), np.float32)],
        along_params(n, m, d, 0, 0, 0, vocab * d, d),
        groups_1d(n),
    )[2]
    want = np.zeros((vocab, d))
    np.add.at(want, tokens, grad_out.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


# ---- one_hot ----


def test_one_hot(gpu):
    rng = np.random.default_rng(11)
    rows, classes = 1000, 7
    idx = rng.integers(0, classes, rows).astype(np.int32)
    n = rows * classes
    out = gpu.run(
        F, "one_hot", [pad(idx, 3), np.full(n + 4, 5, np.int32)], [n, classes, 3, 4], groups_1d(n)
    )[1]
    np.testing.assert_array_equal(
        out[4:].reshape(rows, classes), np.eye(classes, dtype=np.int32)[idx]
    )
    assert np.all(out[:4] == 5)
    small = np.array([0, 2, 1], np.int32)
    out = gpu.run(F, "one_hot", [small, np.zeros(9, np.int32)], [9, 3, 0, 0], (2, 3, 1))[1]
    np.testing.assert_array_equal(out.reshape(3, 3), np.eye(3, dtype=np.int32)[small])


def test_check_range_raises_the_status_to_the_largest_failing_code(gpu):
    idx = np.array([99, 0, 3, 4, -1, 2], np.int32)  # element 0 lies before the offset
    for lo_hi_code, want in [((0, 5, 7), 7), ((0, 10, 7), 7), ((-1, 5, 3), 0)]:
        lo, hi, code = lo_hi_code
        status = np.array([2, 0], np.uint32)  # an earlier, smaller code stays below
        got = gpu.run(
            "index.wgsl", "check_range", [idx, status], [5, 1, lo, hi, code], groups_1d(5)
        )[1]
        assert got[0] == max(want, 2) and got[1] == 0
