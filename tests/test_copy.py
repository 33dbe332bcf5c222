"""dtype casts, .to(), the cast shorthands, contiguous(), clone(), copy_()."""

import numpy as np
import pytest
import rumus
from conftest import (
    ALL_DTYPES,
    assert_close,
    assert_same_data,
    make,
    noncontig,
    rdt,
    skip_on_gpu,
    tensor,
    to_np,
    wide,
)


def bf16_round(x):
    """Round to nearest even bfloat16, returned as float32 (NaN-free input)."""
    x = np.array(x, dtype=np.float32, order="C", copy=True)
    bits = x.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).reshape(x.shape)


FLOAT_VALS = [-2.7, -1.5, -0.0, 0.0, 0.4, 1.0, 2.5, 100.6, 127.9, -99.99, 0.001]
SRC_VALUES = {
    "float32": np.array(FLOAT_VALS, np.float32),
    "float64": np.array(FLOAT_VALS, np.float64),
    "float16": np.array(FLOAT_VALS, np.float16),
    "bfloat16": bf16_round(np.array(FLOAT_VALS, np.float32)),
    "int64": np.array([-5, -1, 0, 1, 2, 127, 300, -129, 2**33 + 7, 255, 256], np.int64),
    "int32": np.array([-5, -1, 0, 1, 2, 127, 300, -129, 70000, 255, 256], np.int32),
    "uint8": np.array([0, 1, 2, 127, 128, 255, 7, 200, 64, 3, 9], np.uint8),
    "bool": np.array([True, False, True, True, False, False, True, False, True, True, False]),
}


def fits_32_bits(a):
    return a[(a >= -(2**31)) & (a < 2**31)]


def _src(src, dst, device="cpu"):
    vals = SRC_VALUES[src]
    if src in ("float32", "float64", "float16", "bfloat16") and dst == "uint8":
        vals = np.abs(vals)  # negative float -> uint8 is undefined behaviour in C and torch
    if device == "gpu" and src == "int64":
        # int64 is held as 32 bits on the GPU (by design): 2**31 - 1, the largest
        # value it holds, stands in for 2**33 + 7
        vals = np.where(vals == 2**33 + 7, 2**31 - 1, vals)
    return vals


def _expected(vals, src, dst):
    """numpy reference for casting values (stored in src) to dst."""
    if dst == "bfloat16":
        return bf16_round(vals.astype(np.float32))
    return vals.astype(dst)


@pytest.mark.parametrize("dst", ALL_DTYPES)
@pytest.mark.parametrize("src", ALL_DTYPES)
def test_cast_matrix(src, dst, device):
    skip_on_gpu(device, src, dst)
    vals = _src(src, dst, device)
    t = tensor(vals, src, device)
    assert t.dtype == rdt(src)
    with np.errstate(all="ignore"):
        exp = _expected(vals, src, dst)
    r = t.to(rdt(dst))
    assert r.dtype == rdt(dst)
    assert_close(r, exp, dtype=dst)
    np.testing.assert_array_equal(to_np(t), vals.astype(np.float32) if src == "bfloat16" else vals)


@pytest.mark.parametrize(
    "src", ["float32", "float64", "float16", "int64", "int32", "uint8", "bool"]
)
def test_to_bfloat16_rounds_to_nearest_even(src, device):
    skip_on_gpu(device, "bfloat16")
    vals = _src(src, "bfloat16")
    with np.errstate(all="ignore"):
        exp = bf16_round(vals.astype(np.float32))
    got = tensor(vals).to(rumus.bfloat16).float()
    np.testing.assert_array_equal(to_np(got), exp)


def test_bfloat16_round_trip_loose(device, rng):
    skip_on_gpu(device, "bfloat16")
    a = make((5, 7), "float32", rng, -100, 100)
    back = tensor(a).bfloat16().float()
    assert back.dtype == rumus.float32
    np.testing.assert_allclose(to_np(back), a, rtol=1 / 128, atol=0)
    # ties go to even: 1 + 2**-8 is halfway between 1 and 1 + 2**-7
    ties = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8)], np.float32)
    np.testing.assert_array_equal(to_np(tensor(ties).bfloat16().float()), bf16_round(ties))


def test_bfloat16_numpy_raises(device):
    skip_on_gpu(device, "bfloat16")
    with pytest.raises(TypeError):
        rumus.ones(2).bfloat16().numpy()


def test_float_to_int_truncates_toward_zero(device):
    a = np.array([-3.99, -2.5, -1.01, -0.99, -0.0, 0.5, 1.99, 2.5, 1e6 + 0.7], np.float64)
    for dst in ("int64", "int32"):
        if device == "cpu":  # float64 is not on the GPU (by design)
            assert_close(tensor(a).to(rdt(dst)), a.astype(dst))
        assert_close(
            tensor(a.astype(np.float32), device=device).to(rdt(dst)),
            a.astype(np.float32).astype(dst),
        )
    b = np.abs(a[:-1]).astype(wide(device))
    assert_close(tensor(b, device=device).byte(), b.astype(np.uint8))


def test_to_bool_is_nonzero(device):
    a = np.array([0.0, -0.0, 1e-30, -2.0, np.nan, np.inf], np.float32)
    assert_close(tensor(a, device=device).bool(), a.astype(bool))
    if device == "cpu":  # float64 is not on the GPU (by design)
        assert_close(tensor(a.astype(np.float64)).to(rumus.bool), a.astype(bool))
    i = np.array([0, 5, -3, 256], np.int64)
    assert_close(tensor(i, device=device).bool(), i != 0)
    u = np.array([0, 255, 1], np.uint8)
    assert_close(tensor(u, device=device).bool(), u != 0)


def test_int_wraparound_casts(device):
    i64 = np.array([2**33 + 7, -1, 300, -(2**40) - 3, 2**31], np.int64)
    if device == "gpu":  # int64 values beyond 32 bits are not on the GPU (by design)
        i64 = np.concatenate([fits_32_bits(i64), np.array([2**31 - 1, -(2**31), 65535], np.int64)])
    assert_close(tensor(i64, device=device).int(), i64.astype(np.int32))
    assert_close(tensor(i64, device=device).byte(), i64.astype(np.uint8))
    i32 = np.array([-1, 300, -129, 2**31 - 1], np.int32)
    assert_close(tensor(i32, device=device).byte(), i32.astype(np.uint8))
    assert_close(tensor(i32, device=device).long(), i32.astype(np.int64))


SHORTHANDS = [
    ("float", "float32"),
    ("double", "float64"),
    ("half", "float16"),
    ("bfloat16", "bfloat16"),
    ("long", "int64"),
    ("int", "int32"),
    ("bool", "bool"),
    ("byte", "uint8"),
]


@pytest.mark.parametrize("method,dst", SHORTHANDS, ids=[m for m, _ in SHORTHANDS])
def test_cast_shorthands(method, dst, device, rng):
    skip_on_gpu(device, dst)
    for src in ("float64", "int32", "bool"):
        vals = _src(src, dst)
        if device == "gpu" and src == "float64":
            vals = vals.astype(np.float32)  # float64 is not on the GPU (by design)
        r = getattr(tensor(vals, device=device), method)()
        with np.errstate(all="ignore"):
            assert_close(r, _expected(vals, src, dst), dtype=dst)


def test_to_forms(device, rng):
    a = make((2, 3), "float32", rng)
    t = tensor(a, device=device)
    if device == "cpu":  # float64 / float16 are not on the GPU (by design)
        assert_close(t.to(rumus.float64), a.astype(np.float64))
    assert_close(t.to(dtype=rumus.int64), a.astype(np.int64))
    assert_close(t.to("cpu"), a)
    assert t.to("cpu").is_cpu
    assert_close(t.to(device), a)
    if device == "cpu":
        assert_close(t.to(dtype=rumus.double), a.astype(np.float64))
        assert t.to(rumus.half).dtype == rumus.float16
    assert t.to(rumus.long).dtype == rumus.int64
    assert t.to(rumus.int).dtype == rumus.int32
    assert t.to(rumus.float).dtype == rumus.float32
    for dt in (rumus.long, rumus.int, rumus.float, rumus.uint8, rumus.bool):
        assert t.to(dt).device == t.device
    i = tensor(make((4,), "int32", rng), device=device)
    assert_close(t.type_as(i), a.astype(np.int32))
    assert_close(i.type_as(t), to_np(i).astype(np.float32))


def test_to_same_dtype_aliases(device, rng):
    # torch returns self when nothing changes
    t = tensor(make((3,), "float32", rng), device=device)
    r = t.to(rumus.float32)
    assert_same_data(r, t, device, 1.0)
    assert_same_data(t.float(), t, device, 2.0)
    assert_same_data(t.to(device), t, device, 3.0)


def test_cast_is_a_copy(device, rng):
    a = make((4,), "float32", rng)
    t = tensor(a, device=device)
    d = t.double() if device == "cpu" else t.int()  # float64 is not on the GPU (by design)
    d.fill_(0.0)
    np.testing.assert_array_equal(to_np(t), a)


@pytest.mark.parametrize("dst", ["float64", "int32", "float16", "bfloat16", "bool"])
def test_cast_noncontig_0d(dst, device, rng):
    skip_on_gpu(device, dst)
    a = make((4, 3), "float32", rng, 0, 50)
    for kind, t, vals in noncontig(a, device=device):
        with np.errstate(all="ignore"):
            assert_close(t.to(rdt(dst)), _expected(vals, "float32", dst), dtype=dst)
    z = np.asarray(np.float32(7.25))
    r = tensor(z, device=device).to(rdt(dst))
    assert r.shape == ()
    assert_close(r, _expected(z, "float32", dst), dtype=dst)


@pytest.mark.parametrize("dst", ["float64", "int32", "float16", "bfloat16", "bool"])
def test_cast_empty(dst, device):
    skip_on_gpu(device, dst)
    e = np.zeros((0, 3), np.float32)
    assert_close(tensor(e, device=device).to(rdt(dst)), _expected(e, "float32", dst), dtype=dst)


# --------------------------------------------------------------------------
# contiguous / clone
# --------------------------------------------------------------------------


def _c_strides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(out))


def _views(rng, device="cpu"):
    a = make((4, 6), wide(device), rng)
    b = make((2, 3, 4), wide(device), rng)
    t, u = tensor(a, device=device), tensor(b, device=device)
    return [
        ("T", t.T, a.T),
        ("transpose", t.transpose(0, 1), a.T),
        ("step", t[::2], a[::2]),
        ("colstep", t[:, 1::3], a[:, 1::3]),
        ("narrow", t.narrow(1, 2, 3), a[:, 2:5]),
        ("permute", u.permute(2, 0, 1), b.transpose(2, 0, 1)),
        ("expand", t[:1].expand(3, 6), np.broadcast_to(a[:1], (3, 6))),
        ("unsqueeze-expand", u[:, :1, :].expand(2, 5, 4), np.broadcast_to(b[:, :1, :], (2, 5, 4))),
        ("mixed", u.permute(1, 2, 0)[::2, 1:], b.transpose(1, 2, 0)[::2, 1:]),
    ]


def test_contiguous_of_views(device, rng):
    for name, v, exp in _views(rng, device):
        assert not v.is_contiguous(), name
        c = v.contiguous()
        assert c.is_contiguous(), name
        assert c.stride() == _c_strides(exp.shape), name
        assert_close(c, np.ascontiguousarray(exp))
        assert not v.is_contiguous(), name  # the view itself is unchanged
        # it is a copy: writing into it does not touch the view
        before = to_np(v)
        c.fill_(-1.0)
        np.testing.assert_array_equal(to_np(v), before)


def test_contiguous_of_contiguous_is_self(device, rng):
    t = tensor(make((3, 4), "float32", rng), device=device)
    assert t.is_contiguous()
    e = rumus.zeros(0, 3, device=device)
    assert e.contiguous().shape == (0, 3)
    z = rumus.tensor(1.5, device=device)
    assert z.is_contiguous() and z.contiguous().item() == 1.5
    assert_same_data(t.contiguous(), t, device)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_clone_is_a_copy(dtype, device, rng):
    skip_on_gpu(device, dtype)
    a = make((3, 4), dtype, rng)
    t = tensor(a, dtype, device)
    exp = to_np(t)
    c = t.clone()
    assert c.dtype == t.dtype
    if (
        device == "cpu"
    ):  # data_ptr() raises NotImplementedError on the GPU; the fill_ below checks it
        assert c.data_ptr() != t.data_ptr()
    assert_close(c, exp, dtype=dtype)
    c.fill_(1)
    np.testing.assert_array_equal(to_np(t), exp)  # source untouched
    t.zero_()
    assert_close(c, np.ones_like(exp), dtype=dtype)  # clone untouched


def test_clone_of_views(device, rng):
    for name, v, exp in _views(rng, device):
        c = v.clone()
        assert_close(c, np.ascontiguousarray(exp))
        c.add_(1.0)
        assert_close(v, np.ascontiguousarray(exp))
    z = rumus.tensor(2.5, device=device)
    assert z.clone().shape == () and z.clone().item() == 2.5
    assert rumus.zeros(0, 3, device=device).clone().shape == (0, 3)


# --------------------------------------------------------------------------
# copy_
# --------------------------------------------------------------------------


def test_copy_same_shape_and_returns_self(device, rng):
    a = make((3, 4), "float32", rng)
    dst = rumus.zeros(3, 4, device=device)
    v0 = dst._version
    r = dst.copy_(tensor(a, device=device))
    assert dst._version > v0
    assert_close(dst, a)
    assert_same_data(r, dst, device)


def test_copy_broadcast(device, rng):
    fd = wide(device)
    row = make((4,), fd, rng)
    dst = rumus.zeros(3, 4, dtype=rdt(fd), device=device)
    dst.copy_(tensor(row, device=device))
    assert_close(dst, np.broadcast_to(row, (3, 4)).copy())
    col = make((3, 1), fd, rng)
    dst.copy_(tensor(col, device=device))
    assert_close(dst, np.broadcast_to(col, (3, 4)).copy())
    dst.copy_(rumus.tensor(2.5, dtype=rdt(fd), device=device))
    assert_close(dst, np.full((3, 4), 2.5, fd))


@pytest.mark.parametrize("dst_dtype", ALL_DTYPES)
@pytest.mark.parametrize("src_dtype", ["float64", "float32", "int64", "bool"])
def test_copy_with_cast(src_dtype, dst_dtype, device):
    skip_on_gpu(device, src_dtype, dst_dtype)
    vals = _src(src_dtype, dst_dtype, device).reshape(1, -1)
    dst = rumus.zeros(2, vals.shape[1], dtype=rdt(dst_dtype), device=device)
    dst.copy_(tensor(vals, device=device))  # broadcast (1, n) -> (2, n) and cast
    with np.errstate(all="ignore"):
        exp = np.broadcast_to(_expected(vals, src_dtype, dst_dtype), dst.shape).copy()
    assert_close(dst, exp, dtype=dst_dtype)


def test_copy_into_views_writes_base(device, rng):
    a = make((4, 6), "float32", rng)
    base = tensor(a, device=device)
    v0 = base._version
    # cast float64 -> float32 (int32 -> float32 on the GPU, which has no float64)
    src = make((6, 2), "float64" if device == "cpu" else "int32", rng)
    base[::2].T.copy_(tensor(src, device=device))  # view of shape (6, 2)
    exp = a.copy()
    exp[::2] = src.T.astype(np.float32)
    assert_close(base, exp)
    assert base._version > v0
    base[:, 3].copy_(rumus.tensor(-1.0, device=device))
    exp[:, 3] = -1
    assert_close(base, exp)


def test_copy_from_noncontig_source(device, rng):
    # a float64 source is cast; the GPU has no float64 (by design): int32 there
    a = make((3, 5), "float64", rng) if device == "cpu" else make((3, 5), "int32", rng, -100, 100)
    for kind, t, vals in noncontig(a, device=device):
        dst = rumus.empty(3, 5, dtype=rumus.float32, device=device)
        dst.copy_(t)
        assert_close(dst, vals.astype(np.float32))


def test_copy_bad_shape_raises(device):
    def z(*shape):
        return rumus.zeros(*shape, device=device)

    def o(*shape):
        return rumus.ones(*shape, device=device)

    with pytest.raises(RuntimeError):
        z(2, 3).copy_(o(4, 3))
    with pytest.raises(RuntimeError):
        z(2, 3).copy_(o(2, 2))
    with pytest.raises(RuntimeError):
        z(3).copy_(o(2, 3))


def test_copy_0d_and_empty(device):
    z = rumus.tensor(0.0, device=device)
    z.copy_(rumus.tensor(3, device=device))
    assert z.dtype == rumus.float32 and z.item() == 3.0
    e = rumus.zeros(0, 3, device=device)
    e.copy_(rumus.ones(3, device=device))
    assert e.shape == (0, 3)


def test_casts_with_torch(device, rng):
    torch = pytest.importorskip("torch")
    a = np.array(FLOAT_VALS, np.float32)
    tt = torch.from_numpy(a)
    if device == "cpu":  # bfloat16 / float16 are not on the GPU (by design)
        np.testing.assert_array_equal(
            to_np(tensor(a).to(rumus.bfloat16).float()), tt.to(torch.bfloat16).float().numpy()
        )
        np.testing.assert_array_equal(
            to_np(tensor(a).to(rumus.float16)), tt.to(torch.float16).numpy()
        )
    np.testing.assert_array_equal(
        to_np(tensor(a, device=device).to(rumus.int32)), tt.to(torch.int32).numpy()
    )


def test_copy_into_itself_is_a_no_op(device):
    x = rumus.tensor([1.0, 2.0, 3.0], device=device)
    v = x._version
    assert x.copy_(x) is x
    np.testing.assert_array_equal(x.cpu().numpy(), [1.0, 2.0, 3.0])
    assert x._version > v  # still an in-place write, as in PyTorch
