"""shaders/conv.wgsl (im2col, col2im) through wgpu-py against NumPy loops."""

import numpy as np
import pytest

from .conftest import groups_1d

F = "conv.wgsl"
NP = {"f32": np.float32, "f16": np.float16}


def dtypes(gpu):
    return ["f32"] + (["f16"] if gpu.has_f16 else [])


def geom(n, c, h, w, k, s=(1, 1), p=(0, 0), d=(1, 1), out=None):
    """The CPU's Geom of a 2-D window as a dict (depth 1); out overrides (OH, OW)
    (asymmetric 'same' padding)."""
    if out is None:
        out = tuple(
            (size + 2 * pp - dd * (kk - 1) - 1) // ss + 1
            for size, kk, ss, pp, dd in zip((h, w), k, s, p, d)
        )
    return dict(
        n=n,
        c=c,
        d=1,
        h=h,
        w=w,
        kd=1,
        kh=k[0],
        kw=k[1],
        sd=1,
        sh=s[0],
        sw=s[1],
        pd=0,
        ph=p[0],
        pw=p[1],
        dd=1,
        dh=d[0],
        dw=d[1],
        od=1,
        oh=out[0],
        ow=out[1],
    )


def geom3(n, c, size, k, s, p, d):
    """A 3-D window: size, kernel, stride, padding, dilation as (D, H, W) triples."""
    out = [
        (sz + 2 * pp - dd * (kk - 1) - 1) // ss + 1 for sz, kk, ss, pp, dd in zip(size, k, s, p, d)
    ]
    g = dict(n=n, c=c)
    for a, axis in enumerate("dhw"):
        g.update({axis: size[a], "k" + axis: k[a], "s" + axis: s[a], "p" + axis: p[a]})
        g.update({"d" + axis: d[a], "o" + axis: out[a]})
    return g


FIELDS = "n c d h w kd kh kw sd sh sw pd ph pw dd dh dw od oh ow".split()


def params(g, x_off=0, col_off=0):
    return [g[k] for k in FIELDS] + [x_off, col_off]


def _src(o, t, g, axis):
    """Input index along ``axis`` read by output ``o`` at tap ``t``, None in the padding."""
    i = o * g["s" + axis] - g["p" + axis] + t * g["d" + axis]
    return i if 0 <= i < g[axis] else None


def ref_im2col3(x, g):
    """im2col of a (N, C, D, H, W) input, by loops over taps and outputs."""
    n, c = x.shape[:2]
    col = np.zeros((c, g["kd"], g["kh"], g["kw"], n, g["od"], g["oh"], g["ow"]), x.dtype)
    for a, i, j in np.ndindex(g["kd"], g["kh"], g["kw"]):
        for z, y, xo in np.ndindex(g["od"], g["oh"], g["ow"]):
            src = (_src(z, a, g, "d"), _src(y, i, g, "h"), _src(xo, j, g, "w"))
            if None not in src:
                col[:, a, i, j, :, z, y, xo] = x[(slice(None), slice(None)) + src].T
    return col.reshape(c * g["kd"] * g["kh"] * g["kw"], n * g["od"] * g["oh"] * g["ow"])


def ref_col2im3(col, g):
    """The adjoint of ref_im2col3, in float64."""
    n, c = g["n"], g["c"]
    col = col.astype(np.float64).reshape(c, g["kd"], g["kh"], g["kw"], n, g["od"], g["oh"], g["ow"])
    out = np.zeros((n, c, g["d"], g["h"], g["w"]))
    for a, i, j in np.ndindex(g["kd"], g["kh"], g["kw"]):
        for z, y, xo in np.ndindex(g["od"], g["oh"], g["ow"]):
            src = (_src(z, a, g, "d"), _src(y, i, g, "h"), _src(xo, j, g, "w"))
            if None not in src:
                out[(slice(None), slice(None)) + src] += col[:, a, i, j, :, z, y, xo].T
    return out


def ref_im2col(x, g):
    n, c, h, w = x.shape
    col = np.zeros((c, g["kh"], g["kw"], n, g["oh"], g["ow"]), x.dtype)
    for i in range(g["kh"]):
        for j in range(g["kw"]):
            for y in range(g["oh"]):
                iy = y * g["sh"] - g["ph"] + i * g["dh"]
                if not 0 <= iy < h:
                    continue
                for xo in range(g["ow"]):
                    ix = xo * g["sw"] - g["pw"] + j * g["dw"]
                    if 0 <= ix < w:
                        col[:, i, j, :, y, xo] = x[:, :, iy, ix].T
    return col.reshape(c * g["kh"] * g["kw"], n * g["oh"] * g["ow"])


def ref_col2im(col, g):
    """The adjoint of ref_im2col, in float64."""
    col = col.astype(np.float64).reshape(g["c"], g["kh"], g["kw"], g["n"], g["oh"], g["ow"])
    out = np.zeros((g["n"], g["c"], g["h"], g["w"]))
    for i in range(g["kh"]):
        for j in range(g["kw"]):
            for y in range(g["oh"]):
                iy = y * g["sh"] - g["ph"] + i * g["dh"]
                if not 0 <= iy < g["h"]:
                    continue
                for xo in range(g["ow"]):
                    ix = xo * g["sw"] - g["pw"] + j * g["dw"]
                    if 0 <= ix < g["w"]:
                        out[:, :, iy, ix] += col[:, i, j, :, y, xo].T
    return out


def rows_cols(g):
    return g["c"] * g["kd"] * g["kh"] * g["kw"], g["n"] * g["od"] * g["oh"] * g["ow"]


def im2col_groups(g, max_x=65535):
    rows, cols = rows_cols(g)
    tiles = -(-cols // 256)
    x = min(tiles, max_x)
    return (x, -(-rows // 8), -(-tiles // x))


def run_im2col(gpu, x, g, dtype, entry="im2col", x_off=0, col_off=0, groups=None):
    rows, cols = rows_cols(g)
    xa = np.concatenate([np.zeros(x_off, x.dtype), x.ravel()])
    out = np.full(col_off + rows * cols, 7, x.dtype)  # padding entries must be written as 0
    res = gpu.run(
        F, entry, [xa, out], params(g, x_off, col_off), groups or im2col_groups(g), dtype=dtype
    )[1]
    return res[col_off:].reshape(rows, cols)


def run_col2im(gpu, col, g, dtype, x_off=0, col_off=0, groups=None):
    n = g["n"] * g["c"] * g["d"] * g["h"] * g["w"]
    ca = np.concatenate([np.zeros(col_off, col.dtype), col.ravel()])
    out = np.full(x_off + n, 7, col.dtype)  # overwritten, not accumulated
    res = gpu.run(
        F, "col2im", [ca, out], params(g, x_off, col_off), groups or groups_1d(n), dtype=dtype
    )[1]
    shape = (
        (g["n"], g["c"], g["h"], g["w"])
        if g["d"] == 1
        else (g["n"], g["c"], g["d"], g["h"], g["w"])
    )
    return res[x_off:].reshape(shape)


GEOMS = {
    "3x3_pad1": geom(2, 3, 5, 6, (3, 3), p=(1, 1)),
    "stride2_pad1": geom(2, 2, 7, 9, (3, 3), s=(2, 2), p=(1, 1)),
    "dilation2": geom(1, 2, 9, 8, (3, 2), d=(2, 2), p=(2, 1)),
    "stride_dilation_mixed": geom(2, 3, 11, 10, (2, 3), s=(3, 2), p=(1, 1), d=(2, 3)),
    "1d": geom(3, 4, 1, 37, (1, 5), s=(1, 2), p=(0, 2), d=(1, 2)),
    "1x1": geom(2, 5, 4, 3, (1, 1)),
    "same_even_kernel": geom(1, 2, 6, 7, (4, 4), p=(1, 1), out=(6, 7)),  # padding after implied
    "kernel_stride_gt": geom(1, 1, 8, 8, (2, 2), s=(3, 3)),  # input positions no window reads
    "many_columns": geom(3, 2, 13, 15, (3, 3), p=(1, 1)),  # 585 columns: several x tiles
    "many_rows": geom(1, 7, 5, 5, (3, 3), p=(1, 1)),  # 63 rows: 8 y groups, last partial
}


@pytest.mark.parametrize("name", list(GEOMS))
def test_im2col(gpu, name):
    g = GEOMS[name]
    for dtype in dtypes(gpu):
        rng = np.random.default_rng(len(name))
        x = rng.standard_normal((g["n"], g["c"], g["h"], g["w"])).astype(NP[dtype])
        got = run_im2col(gpu, x, g, dtype)
        np.testing.assert_array_equal(got, ref_im2col(x, g))


@pytest.mark.parametrize("name", list(GEOMS))
def test_col2im(gpu, name):
    g = GEOMS[name]
    rows, cols = g["c"] * g["kh"] * g["kw"], g["n"] * g["oh"] * g["ow"]
    for dtype in dtypes(gpu):
        rng = np.random.default_rng(len(name) + 1)
        col = rng.standard_normal((rows, cols)).astype(NP[dtype])
        got = run_col2im(gpu, col, g, dtype)
        tol = dict(rtol=1e-6, atol=1e-6) if dtype == "f32" else dict(rtol=1e-3, atol=2e-3)
        np.testing.assert_allclose(got.astype(np.float64), ref_col2im(col, g), **tol)


def test_col2im_is_adjoint_of_im2col(gpu):
    """<im2col(x), c> = <x, col2im(c)> on the GPU pair."""
    g = GEOMS["stride_dilation_mixed"]
    rng = np.random.default_rng(1)
    x = rng.standard_normal((g["n"], g["c"], g["h"], g["w"])).astype(np.float32)
    col = rng.standard_normal((g["c"] * g["kh"] * g["kw"], g["n"] * g["oh"] * g["ow"])).astype(
        np.float32
    )
    lhs = np.sum(run_im2col(gpu, x, g, "f32").astype(np.float64) * col)
    rhs = np.sum(x.astype(np.float64) * run_col2im(gpu, col, g, "f32"))
    assert abs(lhs - rhs) < 1e-4 * max(1.0, abs(lhs))


def test_im2col_u32_words(gpu):
    """int32 / bool tensors: bit copies of 32-bit words, 0 in the padding."""
    g = GEOMS["stride2_pad1"]
    rng = np.random.default_rng(2)
    x = rng.integers(-(2**31), 2**31 - 1, (g["n"], g["c"], g["h"], g["w"]), dtype=np.int64).astype(
        np.int32
    )
    got = run_im2col(gpu, x, g, "f32", entry="im2col_u32")
    np.testing.assert_array_equal(got, ref_im2col(x, g))
    nanbits = np.full(
        (g["n"], g["c"], g["h"], g["w"]), 0x7FA00001, np.uint32
    )  # any word, NaN payloads included
    got = run_im2col(gpu, nanbits, g, "f32", entry="im2col_u32")
    np.testing.assert_array_equal(got, ref_im2col(nanbits, g))


def test_offsets_and_grid_spill(gpu):
    g = GEOMS["many_columns"]  # 585 columns = 3 tiles
    rng = np.random.default_rng(3)
    x = rng.standard_normal((g["n"], g["c"], g["h"], g["w"])).astype(np.float32)
    # tiles over x and z (2 x 2 = 4 tiles, the last past the end)
    got = run_im2col(gpu, x, g, "f32", x_off=5, col_off=3, groups=(2, 3, 2))
    np.testing.assert_array_equal(got, ref_im2col(x, g))
    col = rng.standard_normal((g["c"] * 9, g["n"] * g["oh"] * g["ow"])).astype(np.float32)
    n = x.size  # 1170 elements = 5 workgroups, here as 2 x 3
    got = run_col2im(gpu, col, g, "f32", x_off=2, col_off=9, groups=(2, 3, 1))
    assert n <= 6 * 256
    np.testing.assert_allclose(got, ref_col2im(col, g), rtol=1e-6, atol=1e-6)


GEOMS3 = {
    "3x3x3_pad1": geom3(2, 2, (4, 5, 3), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1)),
    "strided_dilated": geom3(1, 3, (7, 5, 6), (2, 3, 2), (2, 1, 3), (1, 0, 1), (3, 1, 2)),
    "depth_only": geom3(2, 1, (9, 2, 3), (4, 1, 1), (2, 1, 1), (2, 0, 0), (1, 1, 1)),
}


@pytest.mark.parametrize("name", list(GEOMS3))
def test_im2col_col2im_3d(gpu, name):
    g = GEOMS3[name]
    rng = np.random.default_rng(len(name))
    x = rng.standard_normal((g["n"], g["c"], g["d"], g["h"], g["w"])).astype(np.float32)
    np.testing.assert_array_equal(run_im2col(gpu, x, g, "f32"), ref_im2col3(x, g))
    col = rng.standard_normal(rows_cols(g)).astype(np.float32)
    np.testing.assert_allclose(
        run_col2im(gpu, col, g, "f32"), ref_col2im3(col, g), rtol=1e-6, atol=1e-6
    )
