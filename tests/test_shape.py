"""Shape and view ops: views share storage, value tests against NumPy,
error types for bad arguments (PyTorch semantics)."""

import numpy as np
import pytest
import rumus
from conftest import to_np

# --------------------------------------------------------------------------
# devices: every test runs on the CPU and on the GPU. conftest's ``on_default_device`` fixture (used
# by every test below) makes the ``device`` fixture's device the default device, so every tensor a
# test creates (rumus.tensor / arange / zeros ...) lands on that device.
# --------------------------------------------------------------------------

pytestmark = pytest.mark.usefixtures("on_default_device")


def on_cpu(t):
    return t.device.type == "cpu"


def assert_ptr(view, base, elem_offset=0):
    """``view`` starts ``elem_offset`` elements into ``base``'s memory. On the
    CPU this compares data_ptr(); on the GPU (where data_ptr() raises
    NotImplementedError) it compares storage offsets, and the callers check
    the sharing itself by writing through one and reading the other."""
    if on_cpu(view):
        assert view.data_ptr() == base.data_ptr() + elem_offset * base.element_size()
    else:
        assert view.storage_offset() - base.storage_offset() == elem_offset


# ---------------------------------------------------------------- helpers


def rnd(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-50, 50, size=shape).astype(dtype)


def pair(shape, kind="contiguous", dtype=np.float32, seed=0):
    """(numpy array, rumus tensor) holding the same values.

    kind: "contiguous", "transposed" (all dims reversed over a contiguous
    base) or "strided" (every other element along each dim of a bigger base).
    """
    shape = tuple(shape)
    if kind == "contiguous":
        a = rnd(shape, dtype, seed)
        return a, rumus.tensor(a)
    if kind == "transposed":
        base = rnd(shape[::-1], dtype, seed)
        t = rumus.tensor(base).permute(*reversed(range(len(shape))))
        return base.transpose(), t
    if kind == "strided":
        base = rnd(tuple(2 * s + 1 for s in shape), dtype, seed)
        idx = tuple(slice(1, None, 2) for _ in shape)
        return base[idx], rumus.tensor(base)[idx]
    raise AssertionError(kind)


KINDS = ["contiguous", "transposed", "strided"]


def check(t, expected):
    expected = np.asarray(expected)
    assert tuple(t.shape) == expected.shape, (tuple(t.shape), expected.shape)
    np.testing.assert_array_equal(to_np(t), expected)


def arange_t(*shape, dtype=rumus.float32):
    n = int(np.prod(shape)) if shape else 1
    return rumus.arange(n, dtype=dtype).reshape(*shape)


def assert_view_of(view, base):
    """`view` shares storage with contiguous `base` (storage_offset 0)."""
    off = view.storage_offset()
    assert_ptr(view, base, off)
    # writes through the view are visible in the base and vice versa
    before = to_np(base)
    if view.numel() == 0:
        return
    view.fill_(-777)
    after = to_np(base)
    assert (after == -777).sum() >= 1
    changed = after != before
    assert changed.sum() >= 1
    # base values outside the view unchanged, inside the view equal -777
    assert np.all(after[changed] == -777)
    np.testing.assert_array_equal(to_np(view), np.full(tuple(view.shape), -777, dtype=after.dtype))


# ------------------------------------------------------------ reshape / view


def test_reshape_minus_one_values_and_view():
    a = np.arange(24, dtype=np.float32)
    t = rumus.tensor(a)
    for shape in [(4, -1), (-1, 6), (2, 3, -1), (-1,), (1, -1, 1, 4), (24,)]:
        r = t.reshape(*shape)
        check(r, a.reshape(shape))
        r2 = t.reshape(shape)  # tuple form
        check(r2, a.reshape(shape))
    r = t.reshape(4, -1)
    assert r.stride() == (6, 1)
    assert_ptr(r, t)
    r[1, 2] = 1000.0
    assert t[8].item() == 1000.0


def test_reshape_non_contiguous_values():
    for kind in ["transposed", "strided"]:
        a, t = pair((3, 4, 2), kind)
        for shape in [(-1,), (4, -1), (2, 3, 4), (6, 4)]:
            check(t.reshape(*shape), a.reshape(shape))


def test_reshape_zero_size_and_scalar():
    t = rumus.zeros(0, 3)
    assert t.reshape(3, 0).shape == (3, 0)
    assert t.reshape(-1).shape == (0,)
    assert t.reshape(0, 5).shape == (0, 5)
    s = rumus.tensor(5.0)
    assert s.reshape(1, 1).shape == (1, 1)
    assert s.reshape(-1).shape == (1,)
    assert rumus.tensor([2.0]).reshape(()).shape == ()


def test_reshape_invalid():
    t = arange_t(2, 3)
    with pytest.raises(RuntimeError):
        t.reshape(4, -1)
    with pytest.raises(RuntimeError):
        t.reshape(-1, -1)
    with pytest.raises(RuntimeError):
        t.reshape(5)
    with pytest.raises(RuntimeError):
        t.view(7)


def test_view_shares_storage():
    t = arange_t(4, 6)
    v = t.view(2, 12)
    check(v, np.arange(24, dtype=np.float32).reshape(2, 12))
    assert_view_of(v, t)
    v2 = t.view(-1)
    assert v2.shape == (24,)
    assert_ptr(v2, t)
    v2[5] = -3.0
    assert t[0, 5].item() == -3.0


def test_view_incompatible_strides_raises():
    t = arange_t(3, 4)
    with pytest.raises(RuntimeError):
        t.T.view(12)
    with pytest.raises(RuntimeError):
        t.transpose(0, 1).view(-1)
    with pytest.raises(RuntimeError):
        t[:, :2].view(6)
    # reshape copies instead
    check(t.T.reshape(12), np.arange(12, dtype=np.float32).reshape(3, 4).T.reshape(12))


def test_view_compatible_non_contiguous():
    base = arange_t(4, 6)
    x = base[:, ::2]  # shape (4, 3), strides (6, 2)
    assert x.stride() == (6, 2)
    v = x.view(2, 2, 3)  # split dim 0: allowed by torch
    expected = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2].reshape(2, 2, 3)
    check(v, expected)
    assert v.stride() == (12, 6, 2)
    v[1, 1, 2] = -5.0
    assert base[3, 4].item() == -5.0


# --------------------------------------------------- permute / transpose / T


@pytest.mark.parametrize("kind", KINDS)
def test_permute_values(kind):
    a, t = pair((2, 3, 4), kind)
    for dims in [(0, 1, 2), (2, 0, 1), (1, 2, 0), (2, 1, 0), (-1, 0, -2)]:
        p = t.permute(*dims)
        check(p, np.transpose(a, [d % 3 for d in dims]))
        assert p.stride() == tuple(t.stride()[d] for d in dims)
        check(t.permute(dims), np.transpose(a, [d % 3 for d in dims]))


def test_permute_shares_storage():
    t = arange_t(2, 3, 4)
    p = t.permute(2, 0, 1)
    assert not p.is_contiguous()
    assert_ptr(p, t)
    p[3, 1, 2] = 99.0
    assert t[1, 2, 3].item() == 99.0
    t[0, 0, 1] = -1.0
    assert p[1, 0, 0].item() == -1.0
    assert_view_of(p[1], t)


def test_permute_errors():
    t = arange_t(2, 3, 4)
    with pytest.raises(RuntimeError):
        t.permute(0, 0, 1)
    with pytest.raises(RuntimeError):
        t.permute(0, 1)
    with pytest.raises(IndexError):
        t.permute(0, 1, 3)


@pytest.mark.parametrize("kind", KINDS)
def test_transpose_T_mT_t(kind):
    a, t = pair((2, 3, 4), kind)
    check(t.transpose(0, 2), np.swapaxes(a, 0, 2))
    check(t.transpose(-1, 0), np.swapaxes(a, -1, 0))
    check(t.transpose(1, 1), a)
    check(t.mT, np.swapaxes(a, -1, -2))
    a2, t2 = pair((3, 5), kind)
    check(t2.T, a2.T)
    check(t2.t(), a2.T)
    check(t2.mT, a2.T)
    a1, t1 = pair((4,), kind)
    check(t1.t(), a1)
    check(t1.T, a1)


def test_transpose_strides_and_sharing():
    t = arange_t(3, 4)
    tt = t.transpose(0, 1)
    assert tt.stride() == (1, 4)
    assert t.T.stride() == (1, 4)
    assert t.t().stride() == (1, 4)
    assert_ptr(tt, t)
    tt[2, 1] = 50.0
    assert t[1, 2].item() == 50.0
    t3 = arange_t(2, 3, 4)
    assert t3.T.shape == (4, 3, 2)
    assert t3.T.stride() == (1, 4, 12)
    assert t3.mT.stride() == (12, 1, 4)
    t3.mT[1, 3, 2] = -3.0
    assert t3[1, 2, 3].item() == -3.0


def test_transpose_errors():
    t = arange_t(3, 4)
    with pytest.raises(IndexError):
        t.transpose(0, 2)
    with pytest.raises(IndexError):
        t.transpose(-3, 0)
    with pytest.raises(RuntimeError):
        arange_t(2, 3, 4).t()
    with pytest.raises(RuntimeError):
        arange_t(4).mT


# ---------------------------------------------------------- flatten / unflatten


@pytest.mark.parametrize("kind", KINDS)
def test_flatten(kind):
    a, t = pair((2, 3, 4, 2), kind)
    check(t.flatten(), a.reshape(-1))
    check(t.flatten(1), a.reshape(2, -1))
    check(t.flatten(1, 2), a.reshape(2, 12, 2))
    check(t.flatten(-2, -1), a.reshape(2, 3, 8))
    check(t.flatten(0, 0), a)
    check(rumus.flatten(t, 0, 1), a.reshape(6, 4, 2))


def test_flatten_view_and_scalar():
    t = arange_t(2, 3, 4)
    f = t.flatten(1)
    assert_ptr(f, t)
    f[1, 5] = 123.0
    assert t[1, 1, 1].item() == 123.0
    assert rumus.tensor(3.0).flatten().shape == (1,)
    with pytest.raises(IndexError):
        t.flatten(3)
    with pytest.raises(RuntimeError):
        t.flatten(2, 1)


def test_unflatten():
    a = np.arange(24, dtype=np.float32).reshape(2, 12)
    t = rumus.tensor(a)
    check(t.unflatten(1, (3, 4)), a.reshape(2, 3, 4))
    check(t.unflatten(1, (-1, 2)), a.reshape(2, 6, 2))
    check(t.unflatten(-1, (2, 2, 3)), a.reshape(2, 2, 2, 3))
    check(t.unflatten(0, (1, 2)), a.reshape(1, 2, 12))
    u = t.unflatten(1, (3, 4))
    assert_ptr(u, t)
    u[1, 2, 3] = 7.5
    assert t[1, 11].item() == 7.5
    with pytest.raises(RuntimeError):
        t.unflatten(1, (5, 2))
    with pytest.raises(IndexError):
        t.unflatten(2, (3, 4))


# ------------------------------------------------------ squeeze / unsqueeze


def test_squeeze_unsqueeze_values():
    a = np.arange(6, dtype=np.float32).reshape(1, 2, 1, 3, 1)
    t = rumus.tensor(a)
    check(t.squeeze(), np.squeeze(a))
    check(t.squeeze(0), np.squeeze(a, 0))
    check(t.squeeze(-1), np.squeeze(a, -1))
    check(t.squeeze(1), a)  # size != 1 -> no-op
    check(t.squeeze(2), np.squeeze(a, 2))
    b = np.arange(6, dtype=np.float32).reshape(2, 3)
    u = rumus.tensor(b)
    for d in [0, 1, 2, -1, -2, -3]:
        check(u.unsqueeze(d), np.expand_dims(b, d))
    check(rumus.tensor(2.0).unsqueeze(0), np.array([2.0], dtype=np.float32))
    check(rumus.tensor([4.0]).squeeze(), np.array(4.0, dtype=np.float32))
    check(rumus.zeros(0, 1).squeeze(), np.zeros((0,), np.float32))


def test_squeeze_unsqueeze_strides_and_sharing():
    t = arange_t(2, 3)
    u = t.unsqueeze(1)
    assert u.shape == (2, 1, 3)
    assert u.stride()[0] == 3 and u.stride()[2] == 1
    assert_ptr(u, t)
    u[1, 0, 2] = 44.0
    assert t[1, 2].item() == 44.0
    s = u.squeeze(1)
    assert s.stride() == (3, 1)
    s.fill_(1.0)
    np.testing.assert_array_equal(to_np(t), np.ones((2, 3), np.float32))
    tr = arange_t(3, 1, 4).transpose(0, 2)  # (4, 1, 3) strides (1, 4, 4)
    sq = tr.squeeze()
    assert sq.shape == (4, 3)
    assert sq.stride() == (1, 4)


def test_squeeze_unsqueeze_errors():
    t = arange_t(2, 3)
    with pytest.raises(IndexError):
        t.unsqueeze(3)
    with pytest.raises(IndexError):
        t.unsqueeze(-4)
    with pytest.raises(IndexError):
        t.squeeze(2)
    with pytest.raises(IndexError):
        t.squeeze(-3)


# ------------------------------------------------------------------ expand


def test_expand_strides_zero_and_values():
    a = np.arange(3, dtype=np.float32).reshape(3, 1)
    t = rumus.tensor(a)
    e = t.expand(3, 4)
    assert e.shape == (3, 4)
    assert e.stride() == (1, 0)
    check(e, np.broadcast_to(a, (3, 4)))
    e2 = t.expand(2, 3, 4)
    assert e2.stride() == (0, 1, 0)
    check(e2, np.broadcast_to(a, (2, 3, 4)))
    e3 = t.expand(-1, 5)
    assert e3.shape == (3, 5)
    check(e3, np.broadcast_to(a, (3, 5)))
    e4 = t.expand((2, -1, 2))
    assert e4.shape == (2, 3, 2)
    assert e4.stride()[0] == 0
    assert not e.is_contiguous()
    # 0-d and size-0 expansions
    s = rumus.tensor(7.0)
    check(s.expand(2, 2), np.full((2, 2), 7.0, np.float32))
    assert s.expand(2, 2).stride() == (0, 0)
    assert rumus.zeros(1, 3).expand(0, 3).shape == (0, 3)


def test_expand_shares_storage():
    t = rumus.tensor([[1.0], [2.0], [3.0]])
    e = t.expand(3, 4)
    assert_ptr(e, t)
    t[1, 0] = 20.0
    np.testing.assert_array_equal(to_np(e)[1], np.full(4, 20.0, np.float32))
    ec = e.contiguous()
    assert ec.is_contiguous() and ec.stride() == (4, 1)
    check(ec, to_np(e))


def test_expand_as_and_errors():
    t = rumus.tensor([1.0, 2.0, 3.0])
    other = rumus.zeros(2, 3)
    e = t.expand_as(other)
    assert e.shape == (2, 3)
    assert e.stride() == (0, 1)
    check(e, np.broadcast_to(np.array([1, 2, 3], np.float32), (2, 3)))
    with pytest.raises(RuntimeError):
        t.expand(2, 4)
    with pytest.raises(RuntimeError):
        rumus.zeros(2, 3).expand(3)
    with pytest.raises(RuntimeError):
        t.expand_as(rumus.zeros(3, 2))
    with pytest.raises(RuntimeError):
        t.expand(-1, 3)  # -1 not allowed for a new leading dim


# ------------------------------------------------------------------ narrow


@pytest.mark.parametrize("kind", KINDS)
def test_narrow_values(kind):
    a, t = pair((4, 5), kind)
    check(t.narrow(0, 1, 2), a[1:3])
    check(t.narrow(1, 2, 3), a[:, 2:5])
    check(t.narrow(-1, 0, 0), a[:, 0:0])
    check(t.narrow(0, -2, 2), a[2:4])
    check(rumus.narrow(t, 1, 1, 1), a[:, 1:2])


def test_narrow_storage_offset_and_sharing():
    t = arange_t(4, 5)
    n = t.narrow(1, 2, 2)
    assert n.storage_offset() == 2
    assert n.stride() == (5, 1)
    assert_ptr(n, t, 2)
    n2 = t.narrow(0, 3, 1)
    assert n2.storage_offset() == 15
    assert_ptr(n2, t, 15)
    assert_view_of(n, t)
    # nested narrow: offsets accumulate (float64 on the CPU; the GPU has no
    # float64, so float32 there)
    t = arange_t(4, 5, dtype=rumus.float64 if on_cpu(t) else rumus.float32)
    nn_ = t.narrow(0, 1, 3).narrow(1, 1, 3)
    assert nn_.storage_offset() == 6
    if on_cpu(t):
        assert nn_.data_ptr() == t.data_ptr() + 6 * 8
    else:
        assert_ptr(nn_, t, 6)
    nn_[0, 0] = -1.0
    assert t[1, 1].item() == -1.0


def test_narrow_errors():
    t = arange_t(4, 5)
    with pytest.raises(IndexError):
        t.narrow(2, 0, 1)
    with pytest.raises(RuntimeError):
        t.narrow(0, 3, 2)
    with pytest.raises((IndexError, RuntimeError)):
        t.narrow(0, 6, 1)
    with pytest.raises(RuntimeError):
        t.narrow(0, 0, -1)


# ------------------------------------------------------------------ unbind


@pytest.mark.parametrize("kind", KINDS)
def test_unbind_values(kind):
    a, t = pair((3, 4, 2), kind)
    for d in [0, 1, 2, -1]:
        parts = t.unbind(d)
        assert len(parts) == a.shape[d]
        for i, p in enumerate(parts):
            check(p, np.take(a, i, axis=d))
    parts = rumus.unbind(t, 1)
    assert len(parts) == 4
    check(parts[2], a[:, 2])


def test_unbind_views_and_errors():
    t = arange_t(3, 4)
    cols = t.unbind(1)
    for j, c in enumerate(cols):
        assert c.stride() == (4,)
        assert c.storage_offset() == j
        assert_ptr(c, t, j)
    cols[2].fill_(-9.0)
    np.testing.assert_array_equal(to_np(t)[:, 2], np.full(3, -9.0, np.float32))
    assert len(rumus.zeros(0, 3).unbind(0)) == 0
    with pytest.raises(IndexError):
        t.unbind(2)


# ------------------------------------------------------------------ movedim


@pytest.mark.parametrize("kind", KINDS)
def test_movedim(kind):
    a, t = pair((2, 3, 4, 5), kind)
    cases = [(0, -1), (-1, 0), (1, 2), ((0, 1), (2, 0)), ((0, 3), (3, 0)), ([1, 2], [-1, 0])]
    for src, dst in cases:
        m = t.movedim(src, dst)
        check(m, np.moveaxis(a, src, dst))
        check(rumus.movedim(t, src, dst), np.moveaxis(a, src, dst))


def test_movedim_view_and_errors():
    t = arange_t(2, 3, 4)
    m = t.movedim(0, 2)
    assert m.shape == (3, 4, 2)
    assert m.stride() == (4, 1, 12)
    assert_ptr(m, t)
    m[2, 3, 1] = 1234.0
    assert t[1, 2, 3].item() == 1234.0
    with pytest.raises(IndexError):
        t.movedim(0, 3)
    with pytest.raises(IndexError):
        t.movedim(-4, 0)
    with pytest.raises(RuntimeError):
        t.movedim((0, 0), (1, 2))
    with pytest.raises(RuntimeError):
        t.movedim((0, 1), (1,))


# ------------------------------------------------- writes through many views


def test_setitem_through_chained_views():
    t = arange_t(4, 6)
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    v = t.T.narrow(0, 1, 3).unsqueeze(0).squeeze(0)[::2]
    av = a.T[1:4][::2]
    check(v, av)
    v[1, 2] = 500.0
    av[1, 2] = 500.0
    check(t, a)
    v.fill_(3.0)
    av[...] = 3.0
    check(t, a)
    assert_ptr(v, t, v.storage_offset())


# ---------------------------------------------------------- cat / concat


@pytest.mark.parametrize("kind", KINDS)
def test_cat_values(kind):
    a1, t1 = pair((2, 3), kind, seed=1)
    a2, t2 = pair((4, 3), kind, seed=2)
    check(rumus.cat([t1, t2]), np.concatenate([a1, a2]))
    check(rumus.cat((t1, t2), dim=0), np.concatenate([a1, a2]))
    b1, u1 = pair((2, 3), kind, seed=3)
    b2, u2 = pair((2, 5), kind, seed=4)
    check(rumus.cat([u1, u2], dim=1), np.concatenate([b1, b2], axis=1))
    check(rumus.cat([u1, u2, u1], dim=-1), np.concatenate([b1, b2, b1], axis=-1))
    check(rumus.concat([u1, u2], dim=1), np.concatenate([b1, b2], axis=1))
    check(rumus.cat([t1]), a1)


def test_cat_3d_mixed_layouts_and_empty():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    ta = rumus.tensor(a)
    b = np.arange(12, dtype=np.float32).reshape(3, 4, 1).transpose(2, 0, 1) * -1
    tb = rumus.tensor(np.ascontiguousarray(b.transpose(1, 2, 0))).permute(2, 0, 1)
    check(rumus.cat([ta, tb], dim=0), np.concatenate([a, b], axis=0))
    e = np.zeros((0, 3, 4), np.float32)
    check(rumus.cat([rumus.tensor(e), ta, rumus.tensor(e)]), np.concatenate([e, a, e]))
    e1 = np.zeros((2, 0, 4), np.float32)
    check(rumus.cat([rumus.tensor(e1), ta], dim=1), np.concatenate([e1, a], axis=1))
    check(rumus.cat([rumus.tensor(e1), rumus.tensor(e1)], dim=1), np.zeros((2, 0, 4), np.float32))


def test_cat_dtypes():
    a = np.array([1, 2, 3], dtype=np.int64)
    b = np.array([4, 5], dtype=np.int64)
    r = rumus.cat([rumus.tensor(a), rumus.tensor(b)])
    assert r.dtype == rumus.int64
    check(r, np.concatenate([a, b]))
    m = np.array([True, False])
    r = rumus.cat([rumus.tensor(m), rumus.tensor(m[::-1].copy())])
    assert r.dtype == rumus.bool
    check(r, np.concatenate([m, m[::-1]]))
    # torch.cat promotes mixed dtypes
    r = rumus.cat([rumus.tensor(a), rumus.tensor([0.5, 1.5])])
    assert r.dtype == rumus.float32
    check(r, np.concatenate([a, [0.5, 1.5]]).astype(np.float32))


def test_cat_result_is_copy():
    t1 = arange_t(2, 2)
    r = rumus.cat([t1, t1])
    r.fill_(0.0)
    check(t1, np.arange(4, dtype=np.float32).reshape(2, 2))


def test_cat_errors():
    with pytest.raises(RuntimeError):
        rumus.cat([rumus.zeros(2, 3), rumus.zeros(2, 4)], dim=0)
    with pytest.raises(RuntimeError):
        rumus.cat([rumus.zeros(2, 3), rumus.zeros(2, 3, 1)])
    with pytest.raises((ValueError, RuntimeError)):
        rumus.cat([])
    with pytest.raises(IndexError):
        rumus.cat([rumus.zeros(2, 3), rumus.zeros(2, 3)], dim=2)
    with pytest.raises(IndexError):
        rumus.cat([rumus.zeros(2, 3), rumus.zeros(2, 3)], dim=-3)


# ------------------------------------------------------------------ stack


@pytest.mark.parametrize("kind", KINDS)
def test_stack_values(kind):
    a1, t1 = pair((2, 3), kind, seed=1)
    a2, t2 = pair((2, 3), kind, seed=2)
    a3, t3 = pair((2, 3), kind, seed=3)
    for d in [0, 1, 2, -1, -2, -3]:
        check(rumus.stack([t1, t2, t3], dim=d), np.stack([a1, a2, a3], axis=d))
    check(rumus.stack((t1,)), a1[None])


def test_stack_empty_and_scalars():
    e = np.zeros((0, 2), np.float32)
    check(rumus.stack([rumus.tensor(e), rumus.tensor(e)], dim=1), np.stack([e, e], axis=1))
    s = [rumus.tensor(float(i)) for i in range(4)]
    check(rumus.stack(s), np.arange(4, dtype=np.float32))


def test_stack_errors():
    with pytest.raises(RuntimeError):
        rumus.stack([rumus.zeros(2, 3), rumus.zeros(3, 2)])
    with pytest.raises((ValueError, RuntimeError)):
        rumus.stack([])
    with pytest.raises(IndexError):
        rumus.stack([rumus.zeros(2, 3), rumus.zeros(2, 3)], dim=3)
    with pytest.raises(IndexError):
        rumus.stack([rumus.zeros(2, 3), rumus.zeros(2, 3)], dim=-4)


# ------------------------------------------------------------ split / chunk


def _split_sizes(n, size):
    out = []
    start = 0
    while start < n:
        out.append(min(size, n - start))
        start += size
    return out


def _check_pieces(pieces, a, sizes, dim):
    assert [p.shape[dim] for p in pieces] == list(sizes)
    bounds = np.cumsum(sizes)[:-1]
    expected = np.split(a, bounds, axis=dim)
    for p, e in zip(pieces, expected):
        check(p, e)


@pytest.mark.parametrize("kind", KINDS)
def test_split_int(kind):
    a, t = pair((5, 6), kind)
    for size, dim in [(2, 0), (1, 0), (5, 0), (7, 0), (4, 1), (3, -1)]:
        n = a.shape[dim]
        _check_pieces(t.split(size, dim=dim), a, _split_sizes(n, size), dim)
    _check_pieces(rumus.split(t, 2, dim=1), a, [2, 2, 2], 1)
    _check_pieces(t.split(2), a, [2, 2, 1], 0)


@pytest.mark.parametrize("kind", KINDS)
def test_split_sections(kind):
    a, t = pair((5, 6), kind)
    _check_pieces(t.split([1, 3, 1]), a, [1, 3, 1], 0)
    _check_pieces(t.split([6], dim=1), a, [6], 1)
    _check_pieces(t.split([0, 2, 4], dim=1), a, [0, 2, 4], 1)
    _check_pieces(t.split((3, 3), dim=-1), a, [3, 3], 1)
    with pytest.raises(RuntimeError):
        t.split([1, 2], dim=0)
    with pytest.raises(RuntimeError):
        t.split([3, 3], dim=0)


def test_split_views_and_errors():
    t = arange_t(6, 2)
    pieces = t.split(4)
    assert pieces[1].storage_offset() == 8
    assert_ptr(pieces[1], t, 8)
    pieces[1].fill_(-1.0)
    expected = np.arange(12, dtype=np.float32).reshape(6, 2)
    expected[4:] = -1.0
    check(t, expected)
    with pytest.raises(IndexError):
        t.split(2, dim=2)
    e = rumus.zeros(0, 3)
    pieces = e.split(2)
    assert len(pieces) == 1 and pieces[0].shape == (0, 3)


def _chunk_sizes(n, chunks):
    size = -(-n // chunks)  # ceil
    if n == 0:
        return None
    return _split_sizes(n, size)


@pytest.mark.parametrize("kind", KINDS)
def test_chunk(kind):
    a, t = pair((6, 5), kind)
    for chunks, dim in [(1, 0), (2, 0), (3, 0), (4, 0), (6, 0), (8, 0), (2, 1), (3, -1), (5, 1)]:
        n = a.shape[dim]
        sizes = _chunk_sizes(n, chunks)
        pieces = t.chunk(chunks, dim=dim)
        _check_pieces(pieces, a, sizes, dim % 2)
        pieces2 = rumus.chunk(t, chunks, dim)
        assert len(pieces2) == len(sizes)
    # torch: 6 elements in 4 chunks -> 3 chunks of 2
    assert len(t.chunk(4)) == 3
    with pytest.raises(RuntimeError):
        t.chunk(0)
    with pytest.raises(IndexError):
        t.chunk(2, dim=2)


def test_split_chunk_unbind_return_tuples():
    # torch returns tuples (not lists) from split / chunk / unbind
    t = arange_t(4, 2)
    assert type(t.split(2)) is tuple
    assert type(t.split([1, 3])) is tuple
    assert type(t.chunk(2)) is tuple
    assert type(t.unbind(0)) is tuple
    assert type(rumus.split(t, 2)) is tuple
    assert type(rumus.chunk(t, 2)) is tuple
    assert type(rumus.unbind(t, 1)) is tuple
    assert rumus.zeros(0, 3).unbind(0) == ()


# ------------------------------------------------------------------ flip


@pytest.mark.parametrize("kind", KINDS)
def test_flip(kind):
    a, t = pair((3, 4, 2), kind)
    for dims in [(0,), (1,), (-1,), (0, 2), (0, 1, 2), [2, 0], ()]:
        check(t.flip(dims), np.flip(a, axis=tuple(dims)) if dims else a)
        check(rumus.flip(t, dims), np.flip(a, axis=tuple(dims)) if dims else a)
    check(t.flip(0, 1), np.flip(a, axis=(0, 1)))


def test_flip_dims_keyword_and_sequences():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = rumus.tensor(a)
    check(rumus.flip(t, dims=[1]), np.flip(a, 1))
    check(rumus.flip(t, dims=(0, 2)), np.flip(a, (0, 2)))
    check(rumus.flip(t, [2]), np.flip(a, 2))
    check(t.flip(dims=[-1]), np.flip(a, -1))
    check(t.flip([0, 1]), np.flip(a, (0, 1)))
    check(t.flip(2), np.flip(a, 2))
    with pytest.raises(TypeError, match="multiple values for argument 'dims'"):
        t.flip(0, dims=[1])
    with pytest.raises(TypeError, match="missing 1 required argument: 'dims'"):
        rumus.flip(t)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        t.flip(dims=[1, -2])


def test_diff_kwargs_and_errors():
    a = np.array([[1, 3, 6, 10], [0, -1, 4, 2]], np.float32)
    t = rumus.tensor(a)
    check(t.diff(), np.diff(a))
    check(rumus.diff(t, n=2, dim=0, prepend=rumus.tensor(0.0)), np.diff(a, 2, 0, prepend=0.0))
    p, q = np.ones((2, 1), np.float32), np.full((2, 2), 5, np.float32)
    check(t.diff(prepend=rumus.tensor(p), append=rumus.tensor(q)), np.diff(a, prepend=p, append=q))
    check(t.diff(n=0), a)
    check(t.diff(n=7), np.zeros((2, 0), np.float32))
    b = np.array([True, True, False, True])
    check(rumus.tensor(b).diff(), np.diff(b))
    i = np.array([3, 1, 2], np.int64)
    check(rumus.tensor(i).diff(), np.diff(i))
    with pytest.raises(RuntimeError, match="order must be non-negative but got -1"):
        t.diff(n=-1)
    with pytest.raises(RuntimeError, match="at least one-dimensional"):
        rumus.tensor(1.0).diff()
    with pytest.raises(IndexError):
        t.diff(dim=2)
    with pytest.raises(RuntimeError):
        t.diff(prepend=rumus.ones(3, 3))


def test_flip_empty_scalar_copy_and_errors():
    e = np.zeros((0, 3), np.float32)
    check(rumus.tensor(e).flip(0), e)
    check(rumus.tensor(2.5).flip(()), np.array(2.5, np.float32))
    t = arange_t(2, 3)
    f = t.flip(1)
    f.fill_(0.0)  # torch.flip returns a copy (unlike numpy)
    check(t, np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(IndexError):
        t.flip(2)
    with pytest.raises(RuntimeError):
        t.flip((0, 0))


# ------------------------------------------------------------------ roll


@pytest.mark.parametrize("kind", KINDS)
def test_roll_with_dims(kind):
    a, t = pair((3, 4, 5), kind)
    cases = [
        (1, 0),
        (-1, 0),
        (2, 1),
        (-3, -1),
        (7, 2),
        (-11, 1),
        (0, 0),
        ((1, 2), (0, 2)),
        ((-2, 3), (2, 1)),
        ((5, -6), (1, 2)),
    ]
    for shifts, dims in cases:
        check(t.roll(shifts, dims), np.roll(a, shifts, axis=dims))
        check(rumus.roll(t, shifts, dims=dims), np.roll(a, shifts, axis=dims))


@pytest.mark.parametrize("kind", KINDS)
def test_roll_without_dims(kind):
    a, t = pair((3, 4), kind)
    for shift in [0, 1, 5, -1, -7, 12, 25, -25]:
        check(t.roll(shift), np.roll(a, shift))
        check(rumus.roll(t, shift), np.roll(a, shift))


def test_roll_empty_and_errors():
    e = np.zeros((0, 3), np.float32)
    check(rumus.tensor(e).roll(2, 1), e)
    check(rumus.tensor(e).roll(1), e)
    t = arange_t(3, 4)
    with pytest.raises(IndexError):
        t.roll(1, 2)
    with pytest.raises(RuntimeError):
        t.roll((1, 2), (0,))


# ------------------------------------------------------------ tril / triu


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (1, 1), (2, 3, 4), (2, 2, 4, 3)])
def test_tril_triu(kind, shape):
    a, t = pair(shape, kind)
    for k in [-5, -2, -1, 0, 1, 2, 5]:
        check(t.tril(k), np.tril(a, k))
        check(t.triu(k), np.triu(a, k))
        check(rumus.tril(t, k), np.tril(a, k))
        check(rumus.triu(t, diagonal=k), np.triu(a, k))
    check(t.tril(), np.tril(a))
    check(t.triu(), np.triu(a))


def test_tril_triu_large_batched_views_and_gradient():
    """Enough rows for several threads; batch dims that fold into one stride, that do not
    (permuted), and that broadcast (stride 0); the gradient is the same triangle of the
    output gradient."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 5, 40, 300)).astype(np.float32)
    t = rumus.tensor(a)
    views = [
        (t, a),
        (t.permute(1, 0, 2, 3), a.transpose(1, 0, 2, 3)),
        (t.transpose(-1, -2), a.swapaxes(-1, -2)),
        (t[0, :1].expand(4, 40, 300), np.broadcast_to(a[0, :1], (4, 40, 300))),
    ]
    for v, e in views:
        for k in (-7, 0, 3, 250):
            check(v.tril(k), np.tril(e, k))
            check(v.triu(k), np.triu(e, k))
    check(t.half().tril(2), np.tril(a.astype(np.float16), 2))
    check(t.bool().triu(1), np.triu(a.astype(bool), 1))
    x = rumus.tensor(a, requires_grad=True)
    g = rng.standard_normal(a.shape).astype(np.float32)
    x.triu(-2).backward(rumus.tensor(g))
    check(x.grad, np.triu(g, -2))


def test_tril_triu_int_empty_and_errors():
    a = np.arange(1, 13, dtype=np.int64).reshape(3, 4)
    t = rumus.tensor(a)
    r = t.tril(1)
    assert r.dtype == rumus.int64
    check(r, np.tril(a, 1))
    check(t.triu(-1), np.triu(a, -1))
    b = np.ones((3, 3), dtype=bool)
    check(rumus.tensor(b).triu(), np.triu(b))
    for shape in [(0, 3), (3, 0), (2, 0, 0)]:
        e = np.zeros(shape, np.float32)
        check(rumus.tensor(e).tril(), np.tril(e))
        check(rumus.tensor(e).triu(1), np.triu(e, 1))
    with pytest.raises(RuntimeError):
        rumus.tensor([1.0, 2.0]).tril()
    with pytest.raises(RuntimeError):
        rumus.tensor(1.0).triu()
    # result is a new tensor, the input is unchanged
    t.tril().fill_(0)
    check(t, a)
