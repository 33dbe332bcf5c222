"""shaders/index.wgsl through wgpu-py against NumPy."""

import numpy as np

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


# ---- check_range ----


def test_check_range_raises_the_status_to_the_largest_failing_code(gpu):
    idx = np.array([99, 0, 3, 4, -1, 2], np.int32)  # element 0 lies before the offset
    for lo_hi_code, want in [((0, 5, 7), 7), ((0, 10, 7), 7), ((-1, 5, 3), 0)]:
        lo, hi, code = lo_hi_code
        status = np.array([2, 0], np.uint32)  # an earlier, smaller code stays below
        got = gpu.run(
            "index.wgsl", "check_range", [idx, status], [5, 1, lo, hi, code], groups_1d(5)
        )[1]
        assert got[0] == max(want, 2) and got[1] == 0
