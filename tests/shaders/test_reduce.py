"""shaders/reduce.wgsl through wgpu-py against NumPy (float64 references)."""

import numpy as np
import pytest

from .conftest import groups_1d

F = "reduce.wgsl"
NP = {"f32": np.float32, "f16": np.float16}
NS = [1, 7, 1000, 3000]
OUTER = 3
GARBAGE = 1234  # fills the out_off prefix and SLACK words after the output: must survive
SLACK = 7


def dtypes(gpu):
    return ["f32", "f16"] if gpu.has_f16 else ["f32"]


def rows_grid(outer):
    """The rows-form grid: a workgroup per row, spilling into y past 65,535."""
    x = min(max(outer, 1), 65535)
    return (x, -(-outer // x), 1)


def forms(n):
    """(entry suffix, inner) pairs to try: rows needs inner == 1; cols takes any."""
    return [("rows", 1), ("cols", 1), ("cols", 5)]


def reduce(
    gpu,
    entry,
    x,
    outer,
    n,
    inner,
    out_dtype,
    nouts=1,
    in_off=3,
    out_off=2,
    scale=1.0,
    dtype="f32",
    groups=None,
):
    """Runs `entry` on x ([outer, n, inner]) placed at in_off; returns the
    outputs ([outer, inner] each), after checking the prefix stayed intact."""
    xb = np.concatenate([np.zeros(in_off, x.dtype), x.ravel()])
    outs = [
        np.full(out_off + outer * inner + SLACK, GARBAGE, dt)
        for dt in ([out_dtype, np.int32] if nouts == 2 else [out_dtype])
    ]
    if groups is None:
        groups = rows_grid(outer) if entry.endswith("_rows") else groups_1d(outer * inner)
    got = gpu.run(
        F, entry, [xb] + outs, [outer, n, inner, in_off, out_off, float(scale)], groups, dtype=dtype
    )
    res = []
    for g in got[1:]:
        assert (g[:out_off] == GARBAGE).all() and (g[-SLACK:] == GARBAGE).all()
        res.append(g[out_off:-SLACK].reshape(outer, inner))
    return res


# ---- float reductions ----


def ref_float(op, x, scale):
    x = x.astype(np.float64)
    return {
        "sum": lambda: x.sum(1) * scale,
        "prod": lambda: x.prod(1),
        "amax": lambda: x.max(1),
        "amin": lambda: x.min(1),
    }[op]()


def data(op, rng, shape, t):
    if op == "prod":
        return rng.uniform(0.95, 1.05, shape).astype(t)
    return rng.standard_normal(shape).astype(t)


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("op", ["sum", "prod", "amax", "amin"])
def test_float_reduce(gpu, op, n):
    rng = np.random.default_rng(n)
    for dtype in dtypes(gpu):
        t = NP[dtype]
        for form, inner in forms(n):
            x = data(op, rng, (OUTER, n, inner), t)
            scale = 1.0 / n if op == "sum" and inner == 5 else 1.0  # mean through scale
            (got,) = reduce(gpu, f"{op}_{form}", x, OUTER, n, inner, t, scale=scale, dtype=dtype)
            want = ref_float(op, x, scale)
            got = got.astype(np.float64)
            if op in ("amax", "amin"):
                np.testing.assert_array_equal(got, want)
            elif op == "sum":
                mag = np.abs(x.astype(np.float64)).sum(1) * scale
                tol = 2e-3 if dtype == "f16" else 2e-6
                assert (
                    np.abs(got - want)
                    <= tol * mag + (1e-2 if dtype == "f16" else 1e-5) * np.abs(want)
                ).all(), (form, inner)
            else:
                rtol = 1e-2 if dtype == "f16" else 2e-7 * n + 1e-6
                np.testing.assert_allclose(got, want, rtol=rtol, err_msg=f"{form} inner={inner}")


@pytest.mark.parametrize("op", ["amax", "amin"])
def test_extreme_nan_propagates(gpu, op):
    for dtype in dtypes(gpu):
        t = NP[dtype]
        for form, inner in forms(300):
            x = np.random.default_rng(0).standard_normal((OUTER, 300, inner)).astype(t)
            x[0, 0] = np.nan  # first element
            x[1, 299] = np.nan  # last element (after the running extreme)
            x[1, 150] = np.inf if op == "amax" else -np.inf
            (got,) = reduce(gpu, f"{op}_{form}", x, OUTER, 300, inner, t, dtype=dtype)
            assert np.isnan(got[:2]).all()
            np.testing.assert_array_equal(got[2], ref_float(op, x, 1.0)[2])


def test_sum_infinities_and_mean_scale(gpu):
    x = np.ones((2, 10, 1), np.float32)
    x[0, 3] = np.inf
    (got,) = reduce(gpu, "sum_rows", x, 2, 10, 1, np.float32, scale=0.1)
    assert got[0, 0] == np.inf
    np.testing.assert_allclose(got[1, 0], 1.0, rtol=1e-6)


# ---- arg reductions ----


def ref_arg(x, is_max):
    """First index of the extreme, a NaN counting as the extreme (PyTorch)."""
    x = x.astype(np.float64)
    nan = np.isnan(x)
    filled = np.where(nan, 0.0, x)
    idx = np.argmax(filled, 1) if is_max else np.argmin(filled, 1)
    idx = np.where(nan.any(1), np.argmax(nan, 1), idx)
    vals = np.take_along_axis(x, idx[:, None, :], 1)[:, 0, :]
    return vals, idx


def arg_data(rng, n, inner, t):
    """Small integers (ties everywhere) with NaNs in a few (o, i) columns."""
    x = rng.integers(-4, 5, (OUTER, n, inner)).astype(t)
    if n > 1:
        x[1, n // 2, 0] = np.nan  # one NaN mid-row
        x[1, n - 1, 0] = np.nan  # and a later one: the first wins
        x[2, n - 1, inner - 1] = np.nan  # NaN only at the end
    else:
        x[1, 0, 0] = np.nan
    if inner > 1:
        x[0, :, 1] = np.nan  # all NaN: index 0
        x[0, :, 2] = -np.inf  # all equal: index 0
    return x


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("is_max", [True, False], ids=["max", "min"])
def test_arg_and_idx(gpu, is_max, n):
    rng = np.random.default_rng(100 + n)
    name = "max" if is_max else "min"
    for dtype in dtypes(gpu):
        t = NP[dtype]
        for form, inner in forms(n):
            x = arg_data(rng, n, inner, t)
            want_v, want_i = ref_arg(x, is_max)
            (idx,) = reduce(gpu, f"arg{name}_{form}", x, OUTER, n, inner, np.int32, dtype=dtype)
            np.testing.assert_array_equal(
                idx, want_i, err_msg=f"arg{name}_{form} inner={inner} {dtype}"
            )
            vals, idx2 = reduce(
                gpu, f"{name}_idx_{form}", x, OUTER, n, inner, t, nouts=2, dtype=dtype
            )
            np.testing.assert_array_equal(idx2, want_i)
            np.testing.assert_array_equal(vals.astype(np.float64), want_v)


def test_arg_first_of_ties_across_threads(gpu):
    # The extreme appears at indices held by different threads of the rows
    # tree (300 and 44 belong to lane 44; 45 to lane 45): the lowest must win.
    x = np.zeros((1, 600, 1), np.float32)
    x[0, [300, 45, 44, 599]] = 7.0
    (idx,) = reduce(gpu, "argmax_rows", x, 1, 600, 1, np.int32)
    assert idx[0, 0] == 44
    x[0, [500, 200]] = np.nan
    (idx,) = reduce(gpu, "argmin_rows", x, 1, 600, 1, np.int32)
    assert idx[0, 0] == 200


# ---- bool and int32 reductions ----


@pytest.mark.parametrize("n", NS)
def test_any_all(gpu, n):
    rng = np.random.default_rng(200 + n)
    for form, inner in forms(n):
        prob = rng.choice([0.0, 1.0, 0.002, 0.998, 0.5], (OUTER, 1, inner))
        x = (rng.random((OUTER, n, inner)) < prob).astype(np.uint32) * rng.choice(
            [1, 2, 0xFFFFFFFF], (OUTER, n, inner)
        ).astype(np.uint32)
        (a,) = reduce(gpu, f"any_{form}", x, OUTER, n, inner, np.uint32)
        np.testing.assert_array_equal(a, (x != 0).any(1).astype(np.uint32))
        (b,) = reduce(gpu, f"all_{form}", x, OUTER, n, inner, np.uint32)
        np.testing.assert_array_equal(b, (x != 0).all(1).astype(np.uint32))


@pytest.mark.parametrize("n", NS)
def test_sum_i32_wraps(gpu, n):
    rng = np.random.default_rng(300 + n)
    for form, inner in forms(n):
        x = rng.integers(-(2**31), 2**31, (OUTER, n, inner), dtype=np.int64).astype(np.int32)
        x[0] = rng.integers(-50, 50, (n, inner))  # small values: no wrap
        (got,) = reduce(gpu, f"sum_i32_{form}", x, OUTER, n, inner, np.int32)
        want = ((x.astype(np.int64).sum(1) + 2**31) % 2**32 - 2**31).astype(np.int32)
        np.testing.assert_array_equal(got, want)


def wrap32(v):
    return ((v + 2**31) % 2**32 - 2**31).astype(np.int32)


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("op", ["prod", "amax", "amin"])
def test_int_fold(gpu, op, n):
    rng = np.random.default_rng(600 + n)
    for form, inner in forms(n):
        x = rng.integers(-(2**31), 2**31, (OUTER, n, inner), dtype=np.int64)
        if op == "prod":
            x[0] = rng.choice([-1, 1, 1, 1], (n, inner))  # no wrap: exact signs
            x[1, n // 2] = 0  # a zero sticks
        x = x.astype(np.int32)
        (got,) = reduce(gpu, f"{op}_i32_{form}", x, OUTER, n, inner, np.int32)
        if op == "prod":
            want = np.ones((OUTER, inner), np.int64)
            for j in range(n):  # the low 32 bits of the product, step by step
                want = wrap32(want * x[:, j].astype(np.int64)).astype(np.int64)
        else:
            want = x.max(1) if op == "amax" else x.min(1)
        np.testing.assert_array_equal(got, want, err_msg=f"{form} inner={inner}")


def test_int_extremes_at_the_limits(gpu):
    lo, hi = -(2**31), 2**31 - 1
    x = np.array([[lo, lo, 0], [hi, 5, hi], [3, 3, 3]], np.int32).reshape(3, 3, 1)
    for form in ("rows", "cols"):
        (mx,) = reduce(gpu, f"amax_i32_{form}", x, 3, 3, 1, np.int32)
        (mn,) = reduce(gpu, f"amin_i32_{form}", x, 3, 3, 1, np.int32)
        np.testing.assert_array_equal(mx[:, 0], [0, hi, 3])
        np.testing.assert_array_equal(mn[:, 0], [lo, 5, 3])
        (ia,) = reduce(gpu, f"argmin_i32_{form}", x, 3, 3, 1, np.int32)
        np.testing.assert_array_equal(ia[:, 0], [0, 1, 0])  # first of the ties


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("is_max", [True, False], ids=["max", "min"])
def test_int_arg_and_idx(gpu, is_max, n):
    rng = np.random.default_rng(700 + n)
    name = "max" if is_max else "min"
    for form, inner in forms(n):
        # values beyond 2^24 (float32 would merge neighbours) with ties
        x = (rng.integers(-3, 4, (OUTER, n, inner)) + 2**30).astype(np.int32)
        want_i = x.argmax(1) if is_max else x.argmin(1)
        want_v = np.take_along_axis(x, want_i[:, None, :], 1)[:, 0, :]
        (idx,) = reduce(gpu, f"arg{name}_i32_{form}", x, OUTER, n, inner, np.int32)
        np.testing.assert_array_equal(idx, want_i, err_msg=f"{form} inner={inner}")
        vals, idx2 = reduce(gpu, f"{name}_idx_i32_{form}", x, OUTER, n, inner, np.int32, nouts=2)
        np.testing.assert_array_equal(idx2, want_i)
        np.testing.assert_array_equal(vals, want_v)


# ---- grids spilling into y ----


def test_rows_grid_split(gpu):
    # 5 rows over a 3 x 2 grid: row = wid.x + wid.y * 3; the 6th workgroup idles.
    x = np.random.default_rng(5).standard_normal((5, 40, 1)).astype(np.float32)
    (got,) = reduce(gpu, "amax_rows", x, 5, 40, 1, np.float32, groups=(3, 2, 1))
    np.testing.assert_array_equal(got, x.max(1))


def test_cols_grid_split(gpu):
    # 600 outputs over a 2 x 2 grid of 256-thread workgroups (flat id uses y).
    x = np.random.default_rng(6).integers(-9, 9, (120, 4, 5)).astype(np.int32)
    (got,) = reduce(gpu, "sum_i32_cols", x, 120, 4, 5, np.int32, groups=(2, 2, 1))
    np.testing.assert_array_equal(got, x.sum(1))


# ---- scans ----


def scan(gpu, entry, x, outer, n, inner, dtype, in_off=1, out_off=3):
    t = x.dtype
    xb = np.concatenate([np.zeros(in_off, t), x.ravel()])
    ob = np.full(out_off + x.size + SLACK, GARBAGE, t)
    got = gpu.run(
        F,
        entry,
        [xb, ob],
        [outer, n, inner, in_off, out_off, 1.0],
        groups_1d(outer * inner),
        dtype=dtype,
    )[1]
    assert (got[:out_off] == GARBAGE).all() and (got[-SLACK:] == GARBAGE).all()
    return got[out_off:-SLACK].reshape(outer, n, inner).astype(np.float64)


@pytest.mark.parametrize("n", NS)
def test_cumsum(gpu, n):
    rng = np.random.default_rng(400 + n)
    for dtype in dtypes(gpu):
        for inner in (1, 5):
            x = rng.standard_normal((OUTER, n, inner)).astype(NP[dtype])
            got = scan(gpu, "cumsum", x, OUTER, n, inner, dtype)
            x64 = x.astype(np.float64)
            want, mag = np.cumsum(x64, 1), np.cumsum(np.abs(x64), 1)
            tol = 2e-3 if dtype == "f16" else 2e-7 * max(n, 8)
            assert (np.abs(got - want) <= tol * mag + 1e-6).all(), (dtype, inner)


@pytest.mark.parametrize("n", NS)
def test_cumprod(gpu, n):
    rng = np.random.default_rng(500 + n)
    for dtype in dtypes(gpu):
        for inner in (1, 5):
            x = rng.uniform(0.95, 1.05, (OUTER, n, inner)).astype(NP[dtype])
            x[2, n // 2, 0] = 0.0  # zeros stick
            got = scan(gpu, "cumprod", x, OUTER, n, inner, dtype)
            want = np.cumprod(x.astype(np.float64), 1)
            rtol = 1e-2 if dtype == "f16" else 2e-7 * n + 1e-6
            np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-30)
            assert (got[2, n // 2 :, 0] == 0).all()


def test_cumsum_i32(gpu):
    rng = np.random.default_rng(5)
    x = rng.integers(-1000, 1000, (3, 7, 5)).astype(np.int32)
    y = np.full(3 * 7 * 5 + 2, 77, np.int32)
    got = gpu.run("reduce.wgsl", "cumsum_i32", [x, y], [3, 7, 5, 0, 1, 1.0], groups_1d(15))[1]
    np.testing.assert_array_equal(got[1:-1].reshape(3, 7, 5), np.cumsum(x, axis=1))
    assert got[0] == 77 and got[-1] == 77


def test_cumprod_i32_wraps(gpu):
    rng = np.random.default_rng(6)
    x = rng.integers(-7, 8, (3, 20, 5)).astype(np.int32)
    y = np.full(3 * 20 * 5 + 2, 77, np.int32)
    got = gpu.run("reduce.wgsl", "cumprod_i32", [x, y], [3, 20, 5, 0, 1, 1.0], groups_1d(15))[1]
    want = np.ones((3, 5), np.int64)
    for j in range(20):
        want = wrap32(want * x[:, j].astype(np.int64)).astype(np.int64)
        np.testing.assert_array_equal(got[1:-1].reshape(3, 20, 5)[:, j], want)
    assert got[0] == 77 and got[-1] == 77
