"""rumus.fft against numpy.fft (values) and finite differences (gradients)."""

import numpy as np
import pytest
import rumus
import rumus.fft as fft
from rumus.autograd import gradcheck

NORMS = (None, "ortho", "forward")


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def crnd(*shape, seed=0):
    return rnd(*shape, seed=seed) + 1j * rnd(*shape, seed=seed + 100)


def close(got, want, tol=1e-10):
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [None, 5, 8, 13])
def test_one_dim(norm, n):
    a, c = rnd(3, 8), crnd(3, 8)
    x, z = rumus.tensor(a, dtype=rumus.float64), rumus.tensor(c, dtype=rumus.complex128)
    close(fft.fft(z, n, norm=norm), np.fft.fft(c, n, norm=norm))
    close(fft.ifft(z, n, norm=norm), np.fft.ifft(c, n, norm=norm))
    close(fft.fft(x, n, dim=0, norm=norm), np.fft.fft(a, n, axis=0, norm=norm))
    close(fft.rfft(x, n, norm=norm), np.fft.rfft(a, n, norm=norm))
    close(fft.irfft(z, n, norm=norm), np.fft.irfft(c, n, norm=norm))
    close(fft.hfft(z, n, norm=norm), np.fft.hfft(c, n, norm=norm))
    close(fft.ihfft(x, n, norm=norm), np.fft.ihfft(a, n, norm=norm))


@pytest.mark.parametrize("norm", NORMS)
def test_n_dim(norm):
    a, c = rnd(4, 6, 5), crnd(4, 6, 5)
    x, z = rumus.tensor(a, dtype=rumus.float64), rumus.tensor(c, dtype=rumus.complex128)
    close(fft.fft2(z, norm=norm), np.fft.fft2(c, norm=norm))
    close(fft.ifft2(z, norm=norm), np.fft.ifft2(c, norm=norm))
    close(fft.fftn(z, norm=norm), np.fft.fftn(c, norm=norm))
    close(fft.ifftn(z, s=(3, 7), norm=norm), np.fft.ifftn(c, s=(3, 7), axes=(1, 2), norm=norm))
    close(fft.fftn(z, dim=(0, 2), norm=norm), np.fft.fftn(c, axes=(0, 2), norm=norm))
    close(fft.rfft2(x, norm=norm), np.fft.rfft2(a, norm=norm))
    close(fft.rfftn(x, norm=norm), np.fft.rfftn(a, norm=norm))
    close(fft.irfft2(z, norm=norm), np.fft.irfft2(c, norm=norm))
    close(
        fft.irfftn(z, s=(4, 6, 8), norm=norm),
        np.fft.irfftn(c, s=(4, 6, 8), axes=(0, 1, 2), norm=norm),
    )


@pytest.mark.parametrize("n", [None, 6, 11])
@pytest.mark.parametrize("dim", [0, 1])
def test_strided_lanes(dim, n):
    # Lanes along a dim with 2 x 37 columns after it: gathered in blocks, the last one partial.
    a, c = rnd(5, 9, 2, 37), crnd(5, 9, 2, 37)
    x, z = rumus.tensor(a, dtype=rumus.float64), rumus.tensor(c, dtype=rumus.complex128)
    for got, want in [
        (fft.fft(z, n, dim=dim), np.fft.fft(c, n, axis=dim)),
        (fft.ifft(z, n, dim=dim, norm="ortho"), np.fft.ifft(c, n, axis=dim, norm="ortho")),
        (fft.rfft(x, n, dim=dim), np.fft.rfft(a, n, axis=dim)),
        (fft.irfft(z, n, dim=dim), np.fft.irfft(c, n, axis=dim)),
    ]:
        assert got.is_contiguous()
        close(got, want)
    f32 = rumus.tensor(a, dtype=rumus.float32)
    close(fft.rfft2(f32, dim=(0, 2)), np.fft.rfft2(a, axes=(0, 2)), tol=1e-4)


@pytest.mark.parametrize("dt", [rumus.complex64, rumus.complex128])
def test_complex_transposed_copy(dt):
    c = crnd(3, 40, 33)
    z = rumus.tensor(c, dtype=dt)
    for view, want in [
        (z.transpose(1, 2), c.transpose(0, 2, 1)),
        (z.permute(2, 0, 1), c.transpose(2, 0, 1)),
    ]:
        got = view.contiguous()
        assert got.is_contiguous()
        np.testing.assert_array_equal(got.numpy(), want.astype(got.numpy().dtype))


def test_dtypes_and_promotion():
    x = rumus.arange(8)
    assert fft.fft(x).dtype == rumus.complex64
    assert fft.rfft(x.float()).dtype == rumus.complex64
    assert fft.rfft(x.double()).dtype == rumus.complex128
    assert fft.irfft(fft.rfft(x.float())).dtype == rumus.float32
    close(fft.fft(x), np.fft.fft(np.arange(8)), tol=1e-5)
    # non-contiguous and 1-element inputs
    a = rnd(6, 4)
    t = rumus.tensor(a, dtype=rumus.float64).t()
    close(fft.fft(t), np.fft.fft(a.T))
    close(fft.rfft(rumus.ones(1, dtype=rumus.float64)), np.fft.rfft(np.ones(1)))


def test_freq_and_shift():
    for n in (1, 6, 7):
        close(fft.fftfreq(n, 0.5), np.fft.fftfreq(n, 0.5), tol=1e-6)
        close(fft.rfftfreq(n, 2.0), np.fft.rfftfreq(n, 2.0), tol=1e-6)
    a, c = rnd(5, 6), crnd(5, 6)
    close(fft.fftshift(rumus.tensor(a)), np.fft.fftshift(a), tol=1e-6)
    close(fft.ifftshift(rumus.tensor(a), dim=0), np.fft.ifftshift(a, axes=0), tol=1e-6)
    close(
        fft.fftshift(rumus.tensor(c, dtype=rumus.complex128), dim=(-1,)),
        np.fft.fftshift(c, axes=-1),
    )


def test_bad_input():
    x = rumus.ones(4)
    with pytest.raises(ValueError, match="normalization"):
        fft.fft(x, norm="bad")
    with pytest.raises(RuntimeError, match="data points"):
        fft.fft(x, n=0)
    with pytest.raises(IndexError):
        fft.fft(x, dim=2)
    with pytest.raises(RuntimeError, match="real input"):
        fft.rfft(x.to(rumus.complex64))
    with pytest.raises(RuntimeError):
        fft.fftn(x, s=(2, 2), dim=(0,))


def leaf(a):
    dt = rumus.complex128 if np.iscomplexobj(a) else rumus.float64
    return rumus.tensor(a, dtype=dt, requires_grad=True)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize(
    "fn",
    [
        lambda x, norm: fft.fft(x, norm=norm),
        lambda x, norm: fft.ifft(x, 7, norm=norm),
        lambda x, norm: fft.fft(x, 4, dim=0, norm=norm),
        lambda x, norm: fft.irfft(x, norm=norm),
        lambda x, norm: fft.irfft(x, 7, norm=norm),
        lambda x, norm: fft.irfft(x, 4, norm=norm),
        lambda x, norm: fft.hfft(x, 9, norm=norm),
        lambda x, norm: fft.fft2(x, norm=norm),
        lambda x, norm: fft.irfftn(x, norm=norm),
        lambda x, norm: fft.fftshift(x),
    ],
)
def test_gradcheck_complex_input(fn, norm):
    assert gradcheck(lambda x: fn(x, norm), (leaf(crnd(3, 5, seed=1)),))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize(
    "fn",
    [
        lambda x, norm: fft.fft(x, norm=norm),
        lambda x, norm: fft.rfft(x, norm=norm),
        lambda x, norm: fft.rfft(x, 8, norm=norm),
        lambda x, norm: fft.rfft(x, 3, dim=0, norm=norm),
        lambda x, norm: fft.ihfft(x, norm=norm),
        lambda x, norm: fft.rfft2(x, norm=norm),
        lambda x, norm: fft.irfft(fft.rfft(x, norm=norm), 5, norm=norm),
    ],
)
def test_gradcheck_real_input(fn, norm):
    assert gradcheck(lambda x: fn(x, norm), (leaf(rnd(3, 5, seed=2)),))
