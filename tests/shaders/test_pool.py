"""shaders/pool.wgsl (max/avg pooling, sliding and adaptive, the avg adjoint)
through wgpu-py against NumPy loop references of rust/ops/pool.rs windows."""

import numpy as np
import pytest

from .conftest import groups_1d

F = "pool.wgsl"
NP = {"f32": np.float32, "f16": np.float16}


def dtypes(gpu):
    return ["f32"] + (["f16"] if gpu.has_f16 else [])


def sliding_out(size, k, s, p, d, ceil):
    """PyTorch's output size (ceil_mode keeps a last window starting inside
    input or left padding)."""
    num = size + 2 * p - (d * (k - 1) + 1)
    out = -(-num // s) + 1 if ceil else num // s + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1
    assert num >= 0 and out > 0
    return out


class Pool:
    """One pooling configuration: (H, W), windows per axis, params packing."""

    def __init__(
        self,
        h,
        w,
        k=(1, 1),
        s=None,
        p=(0, 0),
        d=(1, 1),
        ceil=False,
        adaptive=None,
        include_pad=True,
        divisor=None,
    ):
        self.h, self.w = h, w
        self.k, self.s, self.p, self.d = k, s or k, p, d
        self.adaptive, self.include_pad, self.divisor = adaptive, include_pad, divisor
        if adaptive:
            self.oh, self.ow = adaptive
        else:
            self.oh = sliding_out(h, k[0], self.s[0], p[0], d[0], ceil)
            self.ow = sliding_out(w, k[1], self.s[1], p[1], d[1], ceil)

    def axis(self, a):
        """(positions in range, divisor) per output along axis a, as
        regular_axis / adaptive_axis."""
        size, out = (self.h, self.oh) if a == 0 else (self.w, self.ow)
        res = []
        for o in range(out):
            if self.adaptive:
                start, end = o * size // out, -(-(o + 1) * size // out)
                pos, div = list(range(start, end)), end - start
            else:
                k, s, p, d = self.k[a], self.s[a], self.p[a], self.d[a]
                first = o * s - p
                pos = [first + t * d for t in range(k) if 0 <= first + t * d < size]
                end_pad = min(first + k, size + p)
                div = end_pad - first if self.include_pad else min(end_pad, size) - max(first, 0)
                div = max(div, 1)
            res.append((pos, div))
        return res

    def div(self, dy, dx):
        return self.divisor if self.divisor is not None else dy * dx

    def params(self, planes, x_off=0, o_off=0, idx_off=0):
        flags = bool(self.adaptive) | (self.include_pad << 1) | ((self.divisor is not None) << 2)
        return [
            planes,
            self.h,
            self.w,
            self.oh,
            self.ow,
            flags,
            *self.k,
            *self.s,
            *self.p,
            *self.d,
            float(self.divisor or 0.0),
            x_off,
            o_off,
            idx_off,
        ]


def ref_max(x, pool):
    planes = x.shape[0]
    val = np.zeros((planes, pool.oh, pool.ow), np.float64)
    idx = np.zeros((planes, pool.oh, pool.ow), np.int64)
    for oy, (ry, _) in enumerate(pool.axis(0)):
        for ox, (rx, _) in enumerate(pool.axis(1)):
            for pl in range(planes):
                best, at = -np.inf, -1
                for iy in ry:
                    for ix in rx:
                        v = float(x[pl, iy, ix])
                        if v > best or np.isnan(v) or at < 0:
                            best, at = v, iy * pool.w + ix
                val[pl, oy, ox], idx[pl, oy, ox] = best, at
    return val, idx


def ref_avg(x, pool):
    x = x.astype(np.float64)
    out = np.zeros((x.shape[0], pool.oh, pool.ow))
    for oy, (ry, dy) in enumerate(pool.axis(0)):
        for ox, (rx, dx) in enumerate(pool.axis(1)):
            out[:, oy, ox] = x[:, ry][:, :, rx].sum(axis=(1, 2)) / pool.div(dy, dx)
    return out


def ref_avg_adjoint(g, pool):
    g = g.astype(np.float64)
    out = np.zeros((g.shape[0], pool.h, pool.w))
    for oy, (ry, dy) in enumerate(pool.axis(0)):
        for ox, (rx, dx) in enumerate(pool.axis(1)):
            v = g[:, oy, ox] / pool.div(dy, dx)
            for iy in ry:
                for ix in rx:
                    out[:, iy, ix] += v
    return out


def run(gpu, entry, src, pool, planes, dtype, x_off=0, o_off=0, idx_off=0, groups=None):
    n_out = planes * (pool.h * pool.w if entry == "avg_pool_adjoint" else pool.oh * pool.ow)
    xa = np.concatenate([np.zeros(x_off, src.dtype), src.ravel()])
    out = np.full(o_off + n_out, 7, NP[dtype])  # every element must be written
    idx = np.full(idx_off + n_out, 99, np.int32) if entry == "max_pool" else None
    res = gpu.run(
        F,
        entry,
        [xa, out, idx],
        pool.params(planes, x_off, o_off, idx_off),
        groups or groups_1d(n_out),
        dtype=dtype,
    )
    shape = (planes, pool.h, pool.w) if entry == "avg_pool_adjoint" else (planes, pool.oh, pool.ow)
    o = res[1][o_off:].reshape(shape)
    return (o, res[2][idx_off:].reshape(shape)) if entry == "max_pool" else o


MAX = {
    "k3s2p1": dict(h=9, w=10, k=(3, 3), s=(2, 2), p=(1, 1)),
    "k2_tiles": dict(h=8, w=6, k=(2, 2)),
    "dilation2": dict(h=11, w=12, k=(3, 2), s=(1, 2), p=(2, 1), d=(2, 2)),
    "ceil_mode": dict(h=8, w=9, k=(3, 3), s=(2, 2), p=(1, 1), ceil=True),
    "ceil_mode_dilated": dict(h=10, w=7, k=(2, 3), s=(3, 2), p=(1, 0), d=(2, 1), ceil=True),
    "1d": dict(h=1, w=37, k=(1, 4), s=(1, 3), p=(0, 2), d=(1, 1), ceil=True),
    "adaptive_7x10_to_3x4": dict(h=7, w=10, adaptive=(3, 4)),
    "adaptive_upsample_5x3_to_7x8": dict(h=5, w=3, adaptive=(7, 8)),
    "adaptive_1d": dict(h=1, w=23, adaptive=(1, 5)),
}


@pytest.mark.parametrize("name", list(MAX))
def test_max_pool(gpu, name):
    pool = Pool(**MAX[name])
    planes = 6
    for dtype in dtypes(gpu):
        rng = np.random.default_rng(len(name))
        x = rng.standard_normal((planes, pool.h, pool.w)).astype(NP[dtype])
        val, idx = run(gpu, "max_pool", x, pool, planes, dtype)
        rv, ri = ref_max(x, pool)
        np.testing.assert_array_equal(val.astype(np.float64), rv)
        np.testing.assert_array_equal(idx, ri)


def test_max_pool_ties_nan_inf(gpu):
    """Ties keep the first element in window order; NaN wins (the last NaN);
    -inf windows still index."""
    pool = Pool(h=6, w=7, k=(3, 3), s=(2, 2), p=(1, 1), ceil=True)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, (4, 6, 7)).astype(np.float32)  # many ties
    x[1, 2, 3] = np.nan
    x[1, 3, 3] = np.nan
    x[2] = -np.inf
    x[3, :3, :3] = np.nan
    val, idx = run(gpu, "max_pool", x, pool, 4, "f32")
    rv, ri = ref_max(x, pool)
    np.testing.assert_array_equal(val, rv)
    np.testing.assert_array_equal(idx, ri)
    assert (idx[2] >= 0).all()


AVG = {
    "k3s2p1_include_pad": dict(h=9, w=10, k=(3, 3), s=(2, 2), p=(1, 1)),
    "k3s2p1_exclude_pad": dict(h=9, w=10, k=(3, 3), s=(2, 2), p=(1, 1), include_pad=False),
    "ceil_mode_include_pad": dict(h=8, w=9, k=(3, 2), s=(2, 2), p=(1, 1), ceil=True),
    "ceil_mode_exclude_pad": dict(
        h=8, w=9, k=(3, 2), s=(2, 2), p=(1, 1), ceil=True, include_pad=False
    ),
    "divisor_override": dict(h=7, w=7, k=(2, 3), s=(2, 1), p=(1, 1), ceil=True, divisor=5.0),
    "overlap_stride1": dict(h=5, w=6, k=(3, 3), s=(1, 1), p=(1, 1)),
    "1d": dict(h=1, w=29, k=(1, 4), s=(1, 3), p=(0, 2), ceil=True, include_pad=False),
    "adaptive_7x10_to_3x4": dict(h=7, w=10, adaptive=(3, 4)),
    "adaptive_upsample_5x3_to_7x8": dict(h=5, w=3, adaptive=(7, 8)),
    "adaptive_1d": dict(h=1, w=23, adaptive=(1, 5)),
    "dilation2": dict(h=10, w=9, k=(2, 3), s=(1, 2), p=(1, 1), d=(2, 2)),
}


def tol(dtype):
    return dict(rtol=1e-6, atol=1e-6) if dtype == "f32" else dict(rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("name", list(AVG))
def test_avg_pool(gpu, name):
    pool = Pool(**AVG[name])
    planes = 5
    for dtype in dtypes(gpu):
        rng = np.random.default_rng(len(name))
        x = rng.standard_normal((planes, pool.h, pool.w)).astype(NP[dtype])
        got = run(gpu, "avg_pool", x, pool, planes, dtype)
        np.testing.assert_allclose(got.astype(np.float64), ref_avg(x, pool), **tol(dtype))


@pytest.mark.parametrize("name", list(AVG))
def test_avg_pool_adjoint(gpu, name):
    pool = Pool(**AVG[name])
    planes = 5
    for dtype in dtypes(gpu):
        rng = np.random.default_rng(len(name) + 1)
        g = rng.standard_normal((planes, pool.oh, pool.ow)).astype(NP[dtype])
        got = run(gpu, "avg_pool_adjoint", g, pool, planes, dtype)
        np.testing.assert_allclose(got.astype(np.float64), ref_avg_adjoint(g, pool), **tol(dtype))


def test_avg_adjoint_is_adjoint(gpu):
    """<avg(x), g> = <x, avg_adjoint(g)> on the GPU pair."""
    pool = Pool(**AVG["ceil_mode_exclude_pad"])
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, pool.h, pool.w)).astype(np.float32)
    g = rng.standard_normal((3, pool.oh, pool.ow)).astype(np.float32)
    lhs = np.sum(run(gpu, "avg_pool", x, pool, 3, "f32").astype(np.float64) * g)
    rhs = np.sum(x.astype(np.float64) * run(gpu, "avg_pool_adjoint", g, pool, 3, "f32"))
    assert abs(lhs - rhs) < 1e-5 * max(1.0, abs(lhs))


def test_many_workgroups_offsets_and_spill(gpu):
    """Outputs over several workgroups (not a multiple of 256), offsets, a grid spilling into y."""
    pool = Pool(h=13, w=14, k=(3, 3), s=(2, 2), p=(1, 1), ceil=True)  # 7 x 7 outputs
    planes = 11  # 539 outputs, 2002 inputs
    rng = np.random.default_rng(6)
    x = rng.standard_normal((planes, pool.h, pool.w)).astype(np.float32)
    val, idx = run(
        gpu, "max_pool", x, pool, planes, "f32", x_off=3, o_off=2, idx_off=5, groups=(2, 2, 1)
    )
    rv, ri = ref_max(x, pool)
    np.testing.assert_array_equal(val, rv)
    np.testing.assert_array_equal(idx, ri)
    got = run(gpu, "avg_pool", x, pool, planes, "f32", x_off=1, o_off=4, groups=(1, 3, 1))
    np.testing.assert_allclose(got, ref_avg(x, pool), rtol=1e-6, atol=1e-6)
    g = rng.standard_normal((planes, pool.oh, pool.ow)).astype(np.float32)
    got = run(gpu, "avg_pool_adjoint", g, pool, planes, "f32", x_off=2, o_off=3, groups=(3, 3, 1))
    np.testing.assert_allclose(got, ref_avg_adjoint(g, pool), rtol=1e-6, atol=1e-6)
