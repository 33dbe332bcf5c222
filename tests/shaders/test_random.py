"""shaders/random.wgsl through wgpu-py: Philox4x32-10 bits against a NumPy
implementation (and Random123's known-answer vectors), then statistics,
determinism, stream separation and bounds of every entry point."""

import math

import numpy as np

from .conftest import groups_1d

F = "random.wgsl"
M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox_ref(ctr, key):
    """Philox4x32-10 over arrays: ctr (4, m) and key (2,) of uint64 holding u32 values."""
    c = [np.asarray(x, dtype=np.uint64) & MASK for x in ctr]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for _ in range(10):
        p0 = np.uint64(M0) * c[0]
        p1 = np.uint64(M1) * c[2]
        c = [
            ((p1 >> np.uint64(32)) ^ c[1] ^ k0) & MASK,
            p1 & MASK,
            ((p0 >> np.uint64(32)) ^ c[3] ^ k1) & MASK,
            p0 & MASK,
        ]
        k0, k1 = (k0 + np.uint64(W0)) & MASK, (k1 + np.uint64(W1)) & MASK
    return np.stack(c)


def words_ref(n, seed, offset):
    """The u32 words the shader uses for elements 0..n-1."""
    blocks = np.arange(-(-n // 4), dtype=np.uint64)
    ctr = [
        blocks,
        np.zeros_like(blocks),
        np.full_like(blocks, offset & MASK),
        np.full_like(blocks, offset >> 32),
    ]
    w = philox_ref(ctr, (seed & MASK, seed >> 32))
    return w.T.reshape(-1)[:n].astype(np.uint64)


def rng_params(n, seed, offset, a, b, out_off=0, block0=0, cut=0.0):
    return [n, out_off, seed & MASK, seed >> 32, offset & MASK, offset >> 32, a, b, block0, cut]


def uniform_cut(hi, dtype):
    """The least f32 that rounds to hi or above in dtype (rust/backend/gpu/random.rs
    computes it for rumus)."""
    if dtype == "f32":
        return float(hi)
    h = np.float16(hi)
    top = h if float(h) < hi else np.nextafter(h, np.float16(-np.inf))
    nxt = np.nextafter(top, np.float16(np.inf))
    mid = np.float32((float(top) + float(nxt)) / 2)  # exact; a tie rounds to the even neighbour
    return mid if int(nxt.view(np.uint16)) % 2 == 0 else np.nextafter(mid, np.float32(np.inf))


def grid(n):
    return groups_1d(-(-n // 4))


def run(gpu, entry, n, seed=1, offset=0, a=0.0, b=1.0, dtype="f32", out_off=0, groups=None):
    npd = np.float32 if dtype == "f32" else np.float16
    out = np.full(n + out_off + 3, 77, dtype=npd)
    cut = uniform_cut(b, dtype) if entry == "uniform" else 0.0
    got = gpu.run(
        F,
        entry,
        [out],
        rng_params(n, seed, offset, a, b, out_off, cut=cut),
        groups or grid(n),
        dtype=dtype,
    )[0]
    assert np.all(got[:out_off] == 77) and np.all(got[out_off + n :] == 77), (
        "wrote outside the view"
    )
    return got[out_off : out_off + n]


def dtypes(gpu):
    return ["f32", "f16"] if gpu.has_f16 else ["f32"]


def test_reference_known_answers():
    # Random123's kat_vectors for philox4x32_10.
    kat = [
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((MASK,) * 4, (MASK, MASK), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        (
            (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
            (0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
        ),
    ]
    for ctr, key, want in kat:
        got = philox_ref([np.array([c], np.uint64) for c in ctr], key)[:, 0]
        assert [int(x) for x in got] == list(want)


def test_bits_match_reference(gpu):
    # uniform on [0, 1) returns (w >> 8) / 2^24 exactly, exposing 24 bits of
    # each word.
    for seed, offset in (
        (0, 0),
        (0x123456789ABCDEF0, 0xFEDCBA9876543210 & ((1 << 64) - 1)),
        (5, 1 << 40),
    ):
        n = 1003
        w = words_ref(n, seed, offset)
        got = run(gpu, "uniform", n, seed, offset, 0.0, 1.0)
        np.testing.assert_array_equal(
            (got.astype(np.float64) * 2**24).astype(np.uint64), w >> np.uint64(8)
        )


N = 100_003  # not a multiple of 4 or of 1024 (elements per workgroup)


def test_uniform_statistics(gpu):
    for dtype in dtypes(gpu):
        x = run(gpu, "uniform", N, seed=42, offset=7, a=-2.0, b=3.0, dtype=dtype).astype(np.float64)
        assert x.min() >= -2.0 and x.max() < 3.0
        sd = 5 / math.sqrt(12)
        assert abs(x.mean() - 0.5) < 5 * sd / math.sqrt(N)
        assert abs(x.var() - sd**2) < 0.02 * sd**2
        counts, _ = np.histogram(x, bins=20, range=(-2, 3))
        expect = N / 20
        assert np.all(np.abs(counts - expect) < 5 * math.sqrt(expect))


def test_uniform_never_returns_hi(gpu):
    # A narrow float16 range where many values round up to hi before the fix-up.
    for dtype in dtypes(gpu):
        x = run(gpu, "uniform", 4000, seed=3, a=1.0, b=1.0078125, dtype=dtype)
        assert np.all(x >= 1.0) and np.all(x < 1.0078125)


def normal_cdf(z):
    return 0.5 * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))


def test_normal_statistics(gpu):
    for dtype in dtypes(gpu):
        x = run(gpu, "normal", N, seed=9, offset=123, a=1.5, b=2.0, dtype=dtype).astype(np.float64)
        z = (x - 1.5) / 2.0
        assert abs(z.mean()) < 5 / math.sqrt(N)
        assert abs(z.var() - 1) < 5 * math.sqrt(2 / N)
        assert abs(np.mean(z**3)) < 5 * math.sqrt(15 / N)  # skewness
        assert abs(np.mean(z**4) - 3) < 5 * math.sqrt(96 / N)  # kurtosis
        # Kolmogorov-Smirnov against N(0, 1) (float16 rounding adds ~1e-3).
        zs = np.sort(z)
        cdf = normal_cdf(zs)
        ks = max(np.max(np.arange(1, N + 1) / N - cdf), np.max(cdf - np.arange(N) / N))
        assert ks < 1.95 / math.sqrt(N) + (0.002 if dtype == "f16" else 0)
        assert np.all(np.isfinite(z)) and np.abs(z).max() < 6


def test_normal_matches_box_muller_reference(gpu):
    n = 1001
    w = words_ref(n + 3, 11, 5)
    got = run(gpu, "normal", n, seed=11, offset=5, a=0.0, b=1.0).astype(np.float64)
    w = w.reshape(-1, 2)
    u1 = ((w[:, 0] >> np.uint64(8)) + np.uint64(1)).astype(np.float64) / 2**24
    th = math.pi * (2 * (w[:, 1] >> np.uint64(8)).astype(np.float64) / 2**24 - 1)
    r = np.sqrt(-2 * np.log(u1))
    z = np.stack([r * np.cos(th), r * np.sin(th)], axis=1).reshape(-1)[:n]
    # WGSL allows sin/cos an absolute error of 2^-11 (times r <= 5.8).
    np.testing.assert_allclose(got, z, atol=3e-3)


def test_bernoulli_mask(gpu):
    for dtype in dtypes(gpu):
        for keep in (0.0, 0.3, 0.9, 1.0):
            x = run(
                gpu, "bernoulli_mask", N, seed=5, offset=1, a=keep, b=1 / 0.7, dtype=dtype
            ).astype(np.float64)
            scale = float(np.float32(1 / 0.7).astype(np.float16 if dtype == "f16" else np.float32))
            assert set(np.unique(x)) <= {0.0, scale}
            frac = np.mean(x != 0)
            assert abs(frac - keep) < 5 * math.sqrt(max(keep * (1 - keep), 1e-12) / N) + 1e-12
    # Exactly the words below keep·2^24 are kept.
    n = 1000
    w = words_ref(n, 8, 2)
    x = run(gpu, "bernoulli_mask", n, seed=8, offset=2, a=0.25, b=2.0)
    np.testing.assert_array_equal(
        x, np.where((w >> np.uint64(8)) < 2**22, 2.0, 0.0).astype(np.float32)
    )


def test_determinism_and_streams(gpu):
    n = 5000
    a = run(gpu, "uniform", n, seed=1, offset=100)
    assert np.array_equal(a, run(gpu, "uniform", n, seed=1, offset=100))
    # The next offset (advanced by 1 or by the n values used) is a fresh stream:
    # no value in common beyond chance, and not a shifted copy either.
    for other in (
        run(gpu, "uniform", n, seed=1, offset=101),
        run(gpu, "uniform", n, seed=1, offset=100 + n),
        run(gpu, "uniform", n, seed=2, offset=100),
        run(gpu, "uniform", n, seed=1 + (1 << 32), offset=100),
        run(gpu, "uniform", n, seed=1, offset=100 + (1 << 32)),
    ):
        assert len(np.intersect1d(a, other)) < 10
        assert abs(np.corrcoef(a, other)[0, 1]) < 0.06
    # Within one dispatch the four words of a block and neighbouring blocks are independent.
    assert abs(np.corrcoef(a[:-1], a[1:])[0, 1]) < 0.06
    assert abs(np.corrcoef(a[:-4], a[4:])[0, 1]) < 0.06
    # A prefix is independent of n, and a view offset only moves where it lands.
    assert np.array_equal(run(gpu, "uniform", 37, seed=1, offset=100), a[:37])
    assert np.array_equal(run(gpu, "uniform", 37, seed=1, offset=100, out_off=5), a[:37])
    x = run(gpu, "normal", n, seed=1, offset=100)
    assert np.array_equal(x, run(gpu, "normal", n, seed=1, offset=100))
    # A dispatch starting at block0 draws the tail of the whole fill (how large fills are split).
    for entry, whole in (("uniform", a), ("normal", x)):
        tail = gpu.run(
            F,
            entry,
            [np.zeros(n - 400, np.float32)],
            rng_params(n - 400, 1, 100, 0.0, 1.0, block0=100, cut=1.0),
            grid(n - 400),
        )[0]
        assert np.array_equal(tail, whole[400:])


def test_grid_spills_into_y(gpu):
    # 5000 elements = 1250 blocks over a (2, 3) grid of 256-wide workgroups.
    n = 5000
    a = run(gpu, "uniform", n, seed=4, offset=9)
    b = run(gpu, "uniform", n, seed=4, offset=9, groups=(2, 3, 1))
    assert np.array_equal(a, b)
