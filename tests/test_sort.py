"""Sorting and selection (rust/ops/sort/): what the registry rows (tests/op_db.py) do not
pin down: NaN order, ties with stable=True, -0.0, long rows (the CPU radix path and the
GPU's global bitonic merge), PyTorch's tie rules for median and mode, the named tuples,
error messages, and GPU parity across the in-workgroup and multi-pass kernels."""

import numpy as np
import pytest
import rumus
from conftest import need_gpu, tensor, to_np

try:
    import torch
except ImportError:
    torch = None


def stable_order(x, descending=False):
    """Stable order of a 1-D array with NaN largest (descending: NaN first)."""
    nan = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
    if descending:
        key = (
            np.where(nan, -np.inf, -x.astype(np.float64))
            if x.dtype.kind == "f"
            else -x.astype(np.int64)
        )
        return np.lexsort((np.arange(len(x)), key, ~nan))
    key = np.where(nan, 0, x) if x.dtype.kind == "f" else x.astype(np.int64)
    return np.lexsort((np.arange(len(x)), key, nan))


def row_orders(x, descending=False):
    return np.stack([stable_order(r, descending) for r in x.reshape(-1, x.shape[-1])]).reshape(
        x.shape
    )


def with_ties_and_nans(rng, shape, dtype="float32"):
    x = rng.integers(-20, 20, shape).astype(dtype)
    if x.dtype.kind == "f":
        x[rng.random(shape) < 0.05] = np.nan
        x[rng.random(shape) < 0.05] = -0.0
        x[rng.random(shape) < 0.02] = np.inf
        x[rng.random(shape) < 0.02] = -np.inf
    return x


# ------------------------------------------------------------------ sort / argsort


def test_named_tuple_fields():
    x = rumus.tensor([[3.0, 1.0, 2.0]])
    r = x.sort()
    assert type(r).__name__ == "ValuesIndices"
    v, i = r
    assert r.values is not None and r.indices.dtype == rumus.int64
    np.testing.assert_array_equal(to_np(v), [[1, 2, 3]])
    np.testing.assert_array_equal(to_np(r.indices), [[1, 2, 0]])
    assert x.topk(1).values.item() == 3.0 and x.kthvalue(1).indices.item() == 1
    assert x.median(1).values.item() == 2.0 and x.mode(1).indices.shape == (1,)
    h = rumus.histogram(x, 3)
    assert type(h).__name__ == "Histogram" and h.bin_edges.shape == (4,) and h.hist.shape == (3,)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("descending", [False, True])
def test_nan_is_largest(dtype, descending):
    x = np.array([np.nan, 1.0, -np.inf, np.nan, -0.0, 0.0, np.inf, -2.0])
    v, i = tensor(x, dtype).sort(descending=descending, stable=True)
    order = stable_order(x, descending)
    np.testing.assert_array_equal(to_np(i), order)
    np.testing.assert_array_equal(to_np(v).astype(np.float64), x[order])


@pytest.mark.parametrize("n", [7, 300, 5000])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("descending", [False, True])
def test_stable_ties_long_rows(n, dtype, descending):
    rng = np.random.default_rng(n)
    x = with_ties_and_nans(rng, (3, n), "float64" if dtype == "bool" else dtype)
    if dtype == "uint8":
        x = np.abs(x).astype(np.uint8)
    if dtype == "bool":
        x = x > 0
    t = tensor(x, dtype)
    v, i = t.sort(dim=1, descending=descending, stable=True)
    order = row_orders(x, descending)
    np.testing.assert_array_equal(to_np(i), order)
    np.testing.assert_array_equal(to_np(v), np.take_along_axis(x, order, 1))
    np.testing.assert_array_equal(to_np(t.argsort(1, descending)), order)


def test_sort_matches_numpy_on_a_long_row():
    x = np.random.default_rng(0).standard_normal(1 << 16).astype(np.float32)
    v, i = rumus.from_numpy(x).sort()
    np.testing.assert_array_equal(to_np(v), np.sort(x))
    np.testing.assert_array_equal(x[to_np(i)], np.sort(x))


def test_sort_noncontiguous_and_dims():
    x = np.random.default_rng(1).standard_normal((4, 5, 6))
    t = tensor(x).permute(2, 0, 1)
    for d in range(3):
        v, i = t.sort(d)
        xp = x.transpose(2, 0, 1)
        np.testing.assert_array_equal(to_np(v), np.sort(xp, axis=d))
        np.testing.assert_array_equal(to_np(i), np.argsort(xp, axis=d, kind="stable"))
    assert rumus.msort(t).shape == (6, 4, 5)


def test_sort_empty_and_0d():
    v, i = rumus.zeros(0, 3).sort(0)
    assert v.shape == (0, 3) and i.shape == (0, 3) and i.dtype == rumus.int64
    v, i = rumus.tensor(2.5).sort()
    assert v.shape == () and v.item() == 2.5 and i.item() == 0


# ------------------------------------------------------------------ topk / kthvalue


def test_topk_sets_and_order():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 2000)).astype(np.float32)
    v, i = rumus.from_numpy(x).topk(7, dim=1)
    np.testing.assert_array_equal(to_np(v), -np.sort(-x, axis=1)[:, :7])
    np.testing.assert_array_equal(np.take_along_axis(x, to_np(i), 1), to_np(v))
    v, i = rumus.from_numpy(x).topk(7, dim=1, largest=False, sorted=False)
    np.testing.assert_array_equal(np.sort(to_np(v), 1), np.sort(x, 1)[:, :7])


def test_topk_one_long_row():
    x = np.random.default_rng(3).standard_normal(1 << 18).astype(np.float32)
    v, i = rumus.from_numpy(x).topk(100)
    np.testing.assert_array_equal(to_np(v), np.sort(x)[::-1][:100])
    np.testing.assert_array_equal(x[to_np(i)], to_np(v))


def test_topk_nan_counts_as_largest():
    x = rumus.tensor([1.0, float("nan"), 3.0, 2.0])
    v, i = x.topk(2)
    assert np.isnan(v[0].item()) and i.tolist() == [1, 2]
    assert x.topk(2, largest=False).indices.tolist() == [0, 3]


def test_topk_errors_name_k_and_size():
    x = rumus.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"topk.*k = 5.*size 4"):
        x.topk(5)
    with pytest.raises(RuntimeError, match="topk"):
        x.topk(-1)
    with pytest.raises(IndexError):
        x.topk(1, dim=2)
    with pytest.raises(RuntimeError, match="kthvalue.*k = 0"):
        x.kthvalue(0)


def test_kthvalue_keepdim():
    x = np.random.default_rng(4).permutation(24).reshape(2, 3, 4).astype(np.float64)
    v, i = tensor(x).kthvalue(2, 1, keepdim=True)
    np.testing.assert_array_equal(to_np(v), np.sort(x, 1)[:, 1:2])
    np.testing.assert_array_equal(to_np(i), np.argsort(x, 1)[:, 1:2])


# ------------------------------------------------------------------ median / mode


def test_median_lower_of_two_middles():
    x = rumus.tensor([4.0, 1.0, 3.0, 2.0])
    assert x.median().item() == 2.0
    v, i = rumus.tensor([[4, 1, 3, 2], [1, 1, 2, 2]]).median(1)
    assert v.tolist() == [2, 1] and i.tolist() == [3, 1]  # position 1 of the stable order
    assert rumus.tensor([5]).median().item() == 5


def test_median_nan():
    nan = float("nan")
    x = rumus.tensor([[1.0, nan, 3.0, nan], [2.0, 0.0, 1.0, 5.0], [nan, nan, nan, nan]])
    v, i = x.median(1)
    assert np.isnan(v[0].item()) and i[0].item() == 1
    assert v[1].item() == 1.0 and i[1].item() == 2
    assert np.isnan(x.median().item())
    v, i = x.nanmedian(1)
    assert v[0].item() == 1.0 and i[0].item() == 0
    assert np.isnan(v[2].item())
    assert x.nanmedian().item() == 1.0
    assert np.isnan(rumus.tensor([]).median().item())


def test_mode_ties_pick_smallest_value():
    x = rumus.tensor([[3, 1, 3, 1, 2], [5, 5, 4, 4, 4]])
    v, i = x.mode(1)
    assert v.tolist() == [1, 4] and i.tolist() == [3, 4]
    assert rumus.tensor([True, False, True]).mode().values.item() is True


def test_selection_errors():
    with pytest.raises(IndexError, match="median"):
        rumus.zeros(3, 0).median(1)
    with pytest.raises(IndexError, match="mode"):
        rumus.zeros(0).mode()
    with pytest.raises(RuntimeError, match="Bool"):
        rumus.tensor([True]).topk(1)


# ------------------------------------------------------------------ gradients


def test_sort_grad_scatters_through_indices():
    x = rumus.tensor([[3.0, 1.0, 2.0]], requires_grad=True)
    v, _ = x.sort(descending=True)
    (v * rumus.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert x.grad.tolist() == [[1.0, 100.0, 10.0]]
    assert v.grad_fn.name() == "SortBackward0"


def test_median_grad_goes_to_one_element():
    x = rumus.tensor([4.0, 1.0, 3.0, 2.0], requires_grad=True)
    x.median().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 1.0]


# ------------------------------------------------------------------ unique


def test_unique_inverse_counts():
    x = rumus.tensor([[2, 1, 2], [3, 1, 1]])
    u, inv, c = rumus.unique(x, return_inverse=True, return_counts=True)
    assert u.tolist() == [1, 2, 3] and inv.tolist() == [[1, 0, 1], [2, 0, 0]]
    assert c.tolist() == [3, 2, 1]
    u, c = rumus.unique_consecutive(rumus.tensor([1, 1, 2, 2, 1]), return_counts=True)
    assert u.tolist() == [1, 2, 1] and c.tolist() == [2, 2, 1]
    u = rumus.tensor([[1, 2], [1, 2], [0, 5]]).unique(dim=0)
    assert u.tolist() == [[0, 5], [1, 2]]


def test_unique_nan_each_distinct_and_signed_zero_equal():
    nan = float("nan")
    u = rumus.tensor([nan, 0.0, -0.0, nan, 1.0]).unique()
    got = to_np(u)
    assert got.shape == (4,) and got[0] == 0.0 and got[1] == 1.0 and np.isnan(got[2:]).all()


# ------------------------------------------------------------------ binning


def test_searchsorted_sides_sorter_and_nan():
    seq = rumus.tensor([1.0, 2.0, 2.0, 3.0])
    v = rumus.tensor([2.0, 0.0, 5.0, float("nan")])
    assert rumus.searchsorted(seq, v).tolist() == [1, 0, 4, 4]
    assert rumus.searchsorted(seq, v, right=True).tolist() == [3, 0, 4, 4]
    assert rumus.searchsorted(seq, v, side="right").tolist() == [3, 0, 4, 4]
    assert rumus.searchsorted(seq, 2.5).item() == 3
    r = rumus.searchsorted(seq, v, out_int32=True)
    assert r.dtype == rumus.int32
    unsorted = rumus.tensor([3.0, 1.0, 2.0])
    sorter = unsorted.argsort()
    assert rumus.searchsorted(unsorted, rumus.tensor([2.5]), sorter=sorter).tolist() == [2]
    with pytest.raises(RuntimeError, match="opposites"):
        rumus.searchsorted(seq, v, side="left", right=True)
    with pytest.raises(RuntimeError, match=r"\[2, 2\].*\[3\]"):
        rumus.searchsorted(rumus.zeros(2, 2), rumus.zeros(3))


def test_bucketize():
    b = rumus.tensor([1, 3, 5, 7, 9])
    x = rumus.tensor([[3, 6, 9], [3, 6, 9]])
    assert rumus.bucketize(x, b).tolist() == [[1, 3, 4], [1, 3, 4]]
    assert rumus.bucketize(x, b, right=True).tolist() == [[2, 3, 5], [2, 3, 5]]


def test_bincount():
    x = rumus.tensor([0, 1, 1, 3])
    assert x.bincount().tolist() == [1, 2, 0, 1]
    assert x.bincount(minlength=6).tolist() == [1, 2, 0, 1, 0, 0]
    w = rumus.tensor([0.5, 1.0, 2.0, 4.0])
    assert x.bincount(w).dtype == rumus.float32
    assert x.bincount(w.double()).tolist() == [0.5, 3.0, 0.0, 4.0]
    assert x.bincount(rumus.tensor([1, 2, 3, 4])).dtype == rumus.float64
    with pytest.raises(RuntimeError, match="non-negative"):
        rumus.tensor([1, -1]).bincount()
    with pytest.raises(RuntimeError, match="non-negative"):
        rumus.tensor([1.0]).bincount()


def test_histc_and_histogram():
    x = rumus.tensor([1.0, 2.0, 1.0, 4.0, 2.5])
    assert x.histc(bins=4, min=0, max=3).tolist() == [0.0, 2.0, 1.0, 1.0]
    assert x.histc(bins=3).tolist() == [2.0, 2.0, 1.0]
    assert rumus.tensor([2.0, 2.0]).histc(bins=2).tolist() == [0.0, 2.0]
    h, e = rumus.histogram(x, 3, range=(0.0, 3.0), density=True)
    eh, ee = np.histogram(to_np(x), 3, range=(0.0, 3.0), density=True)
    np.testing.assert_allclose(to_np(h), eh, rtol=1e-6)
    np.testing.assert_allclose(to_np(e), ee, rtol=1e-6)
    with pytest.raises(RuntimeError, match="histc"):
        x.histc(bins=4, min=3, max=1)
    with pytest.raises(RuntimeError):
        rumus.tensor([1, 2]).histc()


# ------------------------------------------------------------------ PyTorch


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_against_pytorch():
    rng = np.random.default_rng(5)
    x = with_ties_and_nans(rng, (4, 50), "float32")
    t, tt = rumus.from_numpy(x), torch.from_numpy(x)
    for desc in (False, True):
        a, b = t.sort(1, desc, stable=True), tt.sort(dim=1, descending=desc, stable=True)
        np.testing.assert_array_equal(to_np(a.indices), b.indices.numpy())
    np.testing.assert_array_equal(to_np(t.nanmedian(1).values), tt.nanmedian(1).values.numpy())
    np.testing.assert_array_equal(to_np(t.median(1).values), tt.median(1).values.numpy())
    y = np.round(np.nan_to_num(x, posinf=3.0, neginf=-3.0) / 5)
    np.testing.assert_array_equal(
        to_np(rumus.from_numpy(y).mode(1).values), torch.from_numpy(y).mode(1).values.numpy()
    )


# ------------------------------------------------------------------ GPU parity


@pytest.mark.parametrize("n", [5, 300, 5000])
@pytest.mark.parametrize("dtype", ["float32", "int64", "float16"])
def test_gpu_sort_argsort_topk(n, dtype):
    need_gpu()
    if dtype == "float16" and not rumus.gpu.adapter_info().get("shader_f16"):
        pytest.skip("no shader-f16 on this adapter")
    rng = np.random.default_rng(n)
    rows = 3 if n < 5000 else 2
    x = with_ties_and_nans(rng, (rows, n), "float32" if dtype == "float16" else dtype)
    if dtype == "float16":
        x = x.astype(np.float16)
    c, g = tensor(x, dtype), tensor(x, dtype, "gpu")
    for desc in (False, True):
        cv, ci = c.sort(1, desc)
        gv, gi = g.sort(1, desc)
        assert gv.device.type == "gpu" and gi.dtype == rumus.int64
        np.testing.assert_array_equal(to_np(gi), to_np(ci))
        np.testing.assert_array_equal(to_np(gv), to_np(cv))
        np.testing.assert_array_equal(to_np(g.argsort(1, desc)), to_np(ci))
    k = min(n, 4)
    for largest in (True, False):
        cv, ci = c.topk(k, 1, largest)
        gv, gi = g.topk(k, 1, largest)
        np.testing.assert_array_equal(to_np(gi), to_np(ci))
        np.testing.assert_array_equal(to_np(gv), to_np(cv))
    # along dim 0 (a transposed, non-contiguous read)
    np.testing.assert_array_equal(to_np(g.t().sort(0).indices), to_np(c.t().sort(0).indices))


def test_gpu_selection_and_binning():
    need_gpu()
    rng = np.random.default_rng(6)
    x = with_ties_and_nans(rng, (4, 9), "float32")
    x[0, 3] = np.nan
    c, g = rumus.from_numpy(x), rumus.from_numpy(x).to("gpu")
    for name in ("median", "nanmedian"):
        (cv, ci), (gv, gi) = getattr(c, name)(1), getattr(g, name)(1)
        np.testing.assert_array_equal(to_np(gv), to_np(cv))
        np.testing.assert_array_equal(to_np(gi), to_np(ci))
        np.testing.assert_array_equal(to_np(getattr(g, name)()), to_np(getattr(c, name)()))
    cv, ci = c.kthvalue(3, 0, True)
    gv, gi = g.kthvalue(3, 0, True)
    np.testing.assert_array_equal(to_np(gv), to_np(cv))
    np.testing.assert_array_equal(to_np(gi), to_np(ci))
    seq = rumus.tensor([0.0, 1.0, 2.0, 5.0])
    for right in (False, True):
        np.testing.assert_array_equal(
            to_np(rumus.searchsorted(seq.to("gpu"), g, right=right)),
            to_np(rumus.searchsorted(seq, c, right=right)),
        )
    b = rumus.tensor([0, 2, 2, 7])
    assert b.to("gpu").bincount(minlength=9).tolist() == b.bincount(minlength=9).tolist()


def test_gpu_sort_grad():
    need_gpu()
    x = rumus.tensor([[3.0, 1.0, 2.0]], device="gpu", requires_grad=True)
    v, _ = x.sort(descending=True)
    (v * rumus.tensor([1.0, 10.0, 100.0], device="gpu")).sum().backward()
    assert x.grad.device.type == "gpu" and x.grad.tolist() == [[1.0, 100.0, 10.0]]


def _same(got, want):
    """A GPU result equals the CPU one: dtypes, shapes and values (NaN == NaN)."""
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert got.device.type == "gpu" and got.dtype == want.dtype
    np.testing.assert_array_equal(to_np(got), to_np(want))


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32", "uint8", "bool"])
def test_gpu_mode_unique(dtype):
    need_gpu()
    rng = np.random.default_rng(8)
    x = rng.integers(0, 5, (5, 300)).astype(dtype)  # rows longer than a sort block
    if dtype == "float32":
        x[1, ::7] = np.nan  # NaNs: one value for mode, each distinct for unique
        x[2, :40] = -0.0  # equal to 0.0
    c, g = tensor(x, dtype), tensor(x, dtype, "gpu")
    for d in (0, 1, -1):
        for keepdim in (False, True):
            _same(g.mode(d, keepdim), c.mode(d, keepdim))
    _same(g.t().mode(0), c.t().mode(0))
    kw = dict(return_inverse=True, return_counts=True)
    for name in ("unique", "unique_consecutive"):
        for args in ({}, kw, dict(dim=1, **kw), dict(dim=0)):
            _same(getattr(rumus, name)(g, **args), getattr(rumus, name)(c, **args))
        _same(getattr(rumus, name)(g[:, :0], **kw), getattr(rumus, name)(c[:, :0], **kw))


def test_gpu_searchsorted_binary_search():
    need_gpu()
    rng = np.random.default_rng(9)
    seq = np.sort(rng.integers(-(2**30), 2**30, 2000))  # beyond float32's exact integers
    vals = np.concatenate([seq[::3], seq[::5] + 1, rng.integers(-(2**31), 2**31 - 1, 500)])
    rows = np.sort(rng.standard_normal((6, 40)).astype(np.float32), 1)
    rows[0, -3:] = np.inf
    v2 = rng.standard_normal((6, 25)).astype(np.float32)
    v2[1, 0], v2[2, 0], v2[3, 0] = np.nan, -0.0, np.inf
    v2[4, :5] = rows[4, 10:15]  # exact hits: left and right differ
    for s, v in ((seq, vals), (rows, v2), (seq.astype("int32"), vals[:100].astype("int32"))):
        cs, cv = rumus.from_numpy(s), rumus.from_numpy(v)
        for right in (False, True):
            for out_int32 in (False, True):
                want = rumus.searchsorted(cs, cv, right=right, out_int32=out_int32)
                got = rumus.searchsorted(
                    cs.to("gpu"), cv.to("gpu"), right=right, out_int32=out_int32
                )
                _same(got, want)
    empty = rumus.searchsorted(
        rumus.tensor([], device="gpu"), rumus.tensor([1.0, 2.0], device="gpu")
    )
    assert empty.tolist() == [0, 0]


def test_gpu_histc_histogram():
    need_gpu()
    rng = np.random.default_rng(10)
    x = rng.standard_normal(3000).astype(np.float32)
    x[:4] = [-1.0, 1.0, 0.5, 2.0]  # on the edges of histc(8, -1, 1); 2.0 outside
    c, g = rumus.from_numpy(x), rumus.from_numpy(x).to("gpu")
    for args in ((8, -1.0, 1.0), (13, 0.0, 0.0), (4, 3.0, 3.0), (5, -0.25, 0.75)):
        _same(g.histc(*args), c.histc(*args))
    w = rumus.from_numpy(rng.random(3000).astype(np.float32))
    edges = rumus.tensor([-2.0, -0.5, 0.0, 0.5, 0.5001, 3.0])
    for kw in (
        dict(bins=10),
        dict(bins=6, range=(-1.0, 1.0)),
        dict(bins=7, density=True),
        dict(bins=4, weight=w),
        dict(bins=edges),
        dict(bins=edges, weight=w, density=True),
    ):
        kg = {k: v.to("gpu") if isinstance(v, rumus.Tensor) else v for k, v in kw.items()}
        (hc, ec), (hg, eg) = c.histogram(**kw), g.histogram(**kg)
        _same(eg, ec)
        assert hg.device.type == "gpu" and hg.dtype == hc.dtype
        np.testing.assert_allclose(to_np(hg), to_np(hc), rtol=1e-5, err_msg=str(kw))
    nan = g.clone()
    nan[7] = float("nan")
    with pytest.raises(RuntimeError, match="not finite"):
        nan.histc()
    with pytest.raises(RuntimeError, match="device"):
        g.histogram(3, weight=w)
