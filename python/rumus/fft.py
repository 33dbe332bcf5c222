"""rumus.fft: discrete Fourier transforms with PyTorch's ``torch.fft`` API.

The transforms run on the CPU through the rustfft and realfft crates (GPU tensors raise
TypeError for now). Real inputs of ``fft``-style functions are promoted to complex
(float64 to complex128, anything else to complex64); ``rfft``-style functions take real
inputs. Every transform is differentiable: each one-dimensional transform's backward is
again a transform (rust/ops/fft.rs).

``norm`` is one of ``"backward"`` (the default: no scaling forward, ``1/n`` on the
inverse), ``"ortho"`` (``1/sqrt(n)`` both ways) or ``"forward"`` (``1/n`` forward, none on
the inverse), as in PyTorch and NumPy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import rumus
from rumus import _rumus
from rumus._rumus import Tensor

__all__ = [
    "fft",
    "ifft",
    "rfft",
    "irfft",
    "hfft",
    "ihfft",
    "fft2",
    "ifft2",
    "rfft2",
    "irfft2",
    "fftn",
    "ifftn",
    "rfftn",
    "irfftn",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]

_NORMS = ("backward", "ortho", "forward")


def _scale(norm, n, forward):
    if norm is None:
        norm = "backward"
    if norm not in _NORMS:
        raise ValueError(f"Invalid normalization mode: {norm!r}")
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    return 1.0 / n if (norm == "forward") == forward else 1.0


def _check(x, op):
    if not isinstance(x, rumus.Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if x.device.type != "cpu":
        raise TypeError(
            f"rumus.fft.{op}: tensors on {x.device} are not supported yet (FFTs run on the CPU)"
        )


def _complex_in(x, op):
    _check(x, op)
    if x.is_complex():
        return x
    return x.to(rumus.complex128 if x.dtype == rumus.float64 else rumus.complex64)


def _real_in(x, op):
    _check(x, op)
    if x.is_complex():
        raise RuntimeError(f"{op} expects a real input tensor, but got {x.dtype}")
    return x if x.dtype in (rumus.float32, rumus.float64) else x.to(rumus.float32)


def _wrap(dim, ndim, op):
    nd = max(ndim, 1)
    if not -nd <= dim < nd:
        raise IndexError(
            f"{op}: Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], "
            f"but got {dim})"
        )
    return dim % nd


def _n(n, default, op):
    n = default if n is None else int(n)
    if n < 1:
        raise RuntimeError(f"{op}: Invalid number of data points ({n}) specified")
    return n


def _size(x, d):
    return x.shape[d] if x.dim() else 1


def _dims_and_sizes(x, s, dim, op):
    """PyTorch's rules for (s, dim) of the n-dimensional transforms."""
    if isinstance(dim, int):
        dim = (dim,)
    if s is not None and isinstance(s, int):
        s = (s,)
    if dim is None:
        dims = list(range(x.dim() - len(s), x.dim())) if s is not None else list(range(x.dim()))
        if s is not None and len(s) > x.dim():
            raise RuntimeError(
                f"{op}: Got shape with {len(s)} values but input tensor only has "
                f"{x.dim()} dimensions."
            )
    else:
        dims = [_wrap(d, x.dim(), op) for d in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"{op}: FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError(
                f"{op}: When given, dim and shape arguments must have the same length"
            )
    sizes = list(s) if s is not None else [None] * len(dims)
    return dims, sizes


def _c2c(x, d, n, norm, forward):
    kind = "c2c" if forward else "c2c_inv"
    return _rumus._fft_transform(kind, x, d, n, n, _scale(norm, n, forward))


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The one-dimensional discrete Fourier transform.

    Args:
        input (Tensor): the signal; real inputs are promoted to complex.
        n (int, optional): the signal length: the input is zero-padded or cut to ``n``.
        dim (int): the dimension to transform.
        norm (str, optional): ``"backward"`` (default), ``"ortho"`` or ``"forward"``.

    Returns:
        Tensor: the complex spectrum.
    """
    x = _complex_in(input, "fft")
    d = _wrap(dim, x.dim(), "fft")
    return _c2c(x, d, _n(n, _size(x, d), "fft"), norm, True)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`fft`.

    Args:
        input (Tensor): the spectrum; real inputs are promoted to complex.
        n (int, optional): the signal length: the input is zero-padded or cut to ``n``.
        dim (int): the dimension to transform.
        norm (str, optional): ``"backward"`` (default: ``1/n``), ``"ortho"``, ``"forward"``.

    Returns:
        Tensor: the complex signal.
    """
    x = _complex_in(input, "ifft")
    d = _wrap(dim, x.dim(), "ifft")
    return _c2c(x, d, _n(n, _size(x, d), "ifft"), norm, False)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The Fourier transform of a real signal: its ``n // 2 + 1`` non-negative frequencies.

    Args:
        input (Tensor): the real signal.
        n (int, optional): the signal length: the input is zero-padded or cut to ``n``.
        dim (int): the dimension to transform.
        norm (str, optional): ``"backward"`` (default), ``"ortho"`` or ``"forward"``.

    Returns:
        Tensor: the complex half spectrum.
    """
    x = _real_in(input, "rfft")
    d = _wrap(dim, x.dim(), "rfft")
    n = _n(n, _size(x, d), "rfft")
    return _rumus._fft_transform("r2c", x, d, n, n // 2 + 1, _scale(norm, n, True))


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`rfft`: a real signal from its half spectrum.

    Args:
        input (Tensor): the half spectrum (real inputs are promoted to complex).
        n (int, optional): the output length (default ``2 * (input.size(dim) - 1)``).
        dim (int): the dimension to transform.
        norm (str, optional): ``"backward"`` (default: ``1/n``), ``"ortho"``, ``"forward"``.

    Returns:
        Tensor: the real signal.
    """
    x = _complex_in(input, "irfft")
    d = _wrap(dim, x.dim(), "irfft")
    n = _n(n, 2 * (_size(x, d) - 1), "irfft")
    return _rumus._fft_transform("c2r", x, d, n, n, _scale(norm, n, False))


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The Fourier transform of a Hermitian-symmetric signal given by its first half: real output.

    Args:
        input (Tensor): the first half of the signal (real inputs are promoted to complex).
        n (int, optional): the output length (default ``2 * (input.size(dim) - 1)``).
        dim (int): the dimension to transform.
        norm (str, optional): ``"backward"`` (default: unscaled), ``"ortho"``, ``"forward"``.

    Returns:
        Tensor: the real spectrum.
    """
    x = _complex_in(input, "hfft")
    d = _wrap(dim, x.dim(), "hfft")
    n = _n(n, 2 * (_size(x, d) - 1), "hfft")
    return _rumus._fft_transform("c2r", x.conj(), d, n, n, _scale(norm, n, True))


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`hfft`: the half of a Hermitian spectrum from a real signal.

    Args:
        input (Tensor): the real signal.
        n (int, optional): the signal length: the input is zero-padded or cut to ``n``.
        dim (int): the dimension to transform.
        norm (str, optional): ``"backward"`` (default: ``1/n``), ``"ortho"``, ``"forward"``.

    Returns:
        Tensor: the complex half spectrum.
    """
    x = _real_in(input, "ihfft")
    d = _wrap(dim, x.dim(), "ihfft")
    n = _n(n, _size(x, d), "ihfft")
    return _rumus._fft_transform("r2c", x, d, n, n // 2 + 1, _scale(norm, n, False)).conj()


def _cnd(input, s, dim, norm, forward, op):
    x = _complex_in(input, op)
    dims, sizes = _dims_and_sizes(x, s, dim, op)
    for d, n in zip(dims, sizes):
        x = _c2c(x, d, _n(n, _size(x, d), op), norm, forward)
    return x


def fftn(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: int | Sequence[int] | None = None,
    norm: str | None = None,
) -> Tensor:
    """The n-dimensional discrete Fourier transform.

    Args:
        input (Tensor): the signal; real inputs are promoted to complex.
        s (Sequence[int], optional): the signal size in each transformed dimension.
        dim (Sequence[int], optional): the dimensions (all, or the last ``len(s)``, by default).
        norm (str, optional): ``"backward"`` (default), ``"ortho"`` or ``"forward"``.

    Returns:
        Tensor: the complex spectrum.
    """
    return _cnd(input, s, dim, norm, True, "fftn")


def ifftn(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: int | Sequence[int] | None = None,
    norm: str | None = None,
) -> Tensor:
    """The inverse of :func:`fftn`.

    Args:
        input (Tensor): the spectrum; real inputs are promoted to complex.
        s (Sequence[int], optional): the signal size in each transformed dimension.
        dim (Sequence[int], optional): the dimensions (all, or the last ``len(s)``, by default).
        norm (str, optional): ``"backward"`` (default), ``"ortho"`` or ``"forward"``.

    Returns:
        Tensor: the complex signal.
    """
    return _cnd(input, s, dim, norm, False, "ifftn")


def fft2(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: Sequence[int] = (-2, -1),
    norm: str | None = None,
) -> Tensor:
    """The two-dimensional discrete Fourier transform (:func:`fftn` over two dims).

    Args:
        input (Tensor): the signal; real inputs are promoted to complex.
        s (Sequence[int], optional): the signal size in each transformed dimension.
        dim (Sequence[int]): the two dimensions.
        norm (str, optional): ``"backward"`` (default), ``"ortho"`` or ``"forward"``.

    Returns:
        Tensor: the complex spectrum.
    """
    return _cnd(input, s, dim, norm, True, "fft2")


def ifft2(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: Sequence[int] = (-2, -1),
    norm: str | None = None,
) -> Tensor:
    """The inverse of :func:`fft2`.

    Args:
        input (Tensor): the spectrum; real inputs are promoted to complex.
        s (Sequence[int], optional): the signal size in each transformed dimension.
        dim (Sequence[int]): the two dimensions.
        norm (str, optional): ``"backward"`` (default), ``"ortho"`` or ``"forward"``.

    Returns:
        Tensor: the complex signal.
    """
    return _cnd(input, s, dim, norm, False, "ifft2")


def _rnd(input, s, dim, norm, op):
    x = _real_in(input, op)
    dims, sizes = _dims_and_sizes(x, s, dim, op)
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")
    d, n = dims[-1], _n(sizes[-1], _size(x, dims[-1]), op)
    x = _rumus._fft_transform("r2c", x, d, n, n // 2 + 1, _scale(norm, n, True))
    for d, n in zip(dims[:-1], sizes[:-1]):
        x = _c2c(x, d, _n(n, _size(x, d), op), norm, True)
    return x


def rfftn(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: int | Sequence[int] | None = None,
    norm: str | None = None,
) -> Tensor:
    """The n-dimensional Fourier transform of a real signal (half spectrum in the last dim).

    Args:
        input (Tensor): the real signal.
        s (Sequence[int], optional): the signal size in each transformed dimension.
        dim (Sequence[int], optional): the dimensions (all, or the last ``len(s)``, by default).
        norm (str, optional): ``"backward"`` (default), ``"ortho"`` or ``"forward"``.

    Returns:
        Tensor: the complex spectrum.
    """
    return _rnd(input, s, dim, norm, "rfftn")


def rfft2(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: Sequence[int] = (-2, -1),
    norm: str | None = None,
) -> Tensor:
    """The two-dimensional Fourier transform of a real signal (:func:`rfftn` over two dims).

    Args:
        input (Tensor): the real signal.
        s (Sequence[int], optional): the signal size in each transformed dimension.
        dim (Sequence[int]): the two dimensions.
        norm (str, optional): ``"backward"`` (default), ``"ortho"`` or ``"forward"``.

    Returns:
        Tensor: the complex spectrum.
    """
    return _rnd(input, s, dim, norm, "rfft2")


def _irnd(input, s, dim, norm, op):
    x = _complex_in(input, op)
    dims, sizes = _dims_and_sizes(x, s, dim, op)
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")
    for d, n in zip(dims[:-1], sizes[:-1]):
        x = _c2c(x, d, _n(n, _size(x, d), op), norm, False)
    d = dims[-1]
    n = _n(sizes[-1], 2 * (_size(x, d) - 1), op)
    return _rumus._fft_transform("c2r", x, d, n, n, _scale(norm, n, False))


def irfftn(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: int | Sequence[int] | None = None,
    norm: str | None = None,
) -> Tensor:
    """The inverse of :func:`rfftn`: a real signal from its n-dimensional half spectrum.

    Args:
        input (Tensor): the spectrum (real inputs are promoted to complex).
        s (Sequence[int], optional): the output size in each transformed dimension.
        dim (Sequence[int], optional): the dimensions (all, or the last ``len(s)``, by default).
        norm (str, optional): ``"backward"`` (default), ``"ortho"`` or ``"forward"``.

    Returns:
        Tensor: the real signal.
    """
    return _irnd(input, s, dim, norm, "irfftn")


def irfft2(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: Sequence[int] = (-2, -1),
    norm: str | None = None,
) -> Tensor:
    """The inverse of :func:`rfft2`.

    Args:
        input (Tensor): the spectrum (real inputs are promoted to complex).
        s (Sequence[int], optional): the output size in each transformed dimension.
        dim (Sequence[int]): the two dimensions.
        norm (str, optional): ``"backward"`` (default), ``"ortho"`` or ``"forward"``.

    Returns:
        Tensor: the real signal.
    """
    return _irnd(input, s, dim, norm, "irfft2")


def fftfreq(
    n: int,
    d: float = 1.0,
    *,
    dtype: rumus.dtype | None = None,
    device: rumus.device | str | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """The sample frequencies of :func:`fft` for a signal of length ``n``.

    Args:
        n (int): the signal length.
        d (float): the sample spacing.
        dtype (rumus.dtype, optional): the result dtype (the default float dtype).
        device (rumus.device, optional): the result device.
        requires_grad (bool): whether the result requires grad.

    Returns:
        Tensor: ``[0, 1, ..., (n-1)//2, -(n//2), ..., -1] / (d * n)``.
    """
    k = rumus.cat([rumus.arange((n - 1) // 2 + 1), rumus.arange(-(n // 2), 0)])
    return _freq(k, n, d, dtype, device, requires_grad)


def rfftfreq(
    n: int,
    d: float = 1.0,
    *,
    dtype: rumus.dtype | None = None,
    device: rumus.device | str | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """The sample frequencies of :func:`rfft` for a signal of length ``n``.

    Args:
        n (int): the signal length.
        d (float): the sample spacing.
        dtype (rumus.dtype, optional): the result dtype (the default float dtype).
        device (rumus.device, optional): the result device.
        requires_grad (bool): whether the result requires grad.

    Returns:
        Tensor: ``[0, 1, ..., n//2] / (d * n)``.
    """
    return _freq(rumus.arange(n // 2 + 1), n, d, dtype, device, requires_grad)


def _freq(k, n, d, dtype, device, requires_grad):
    out = (k.to(rumus.float64) / (d * n)).to(dtype or rumus.float32)
    if device is not None:
        out = out.to(device)
    return out.requires_grad_() if requires_grad else out


def _shift(input, dim, sign):
    _check(input, "fftshift")
    if dim is None:
        dims = list(range(input.dim()))
    elif isinstance(dim, int):
        dims = [_wrap(dim, input.dim(), "fftshift")]
    else:
        dims = [_wrap(d, input.dim(), "fftshift") for d in dim]
    if not dims or input.dim() == 0:
        return input.clone()
    shifts = [sign * (input.shape[d] // 2) for d in dims]
    if input.is_complex():
        # roll has no complex kernel: roll the (real, imag) view instead.
        r = rumus.view_as_real(input).roll(shifts, dims)
        return rumus.view_as_complex(r)
    return input.roll(shifts, dims)


def fftshift(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Moves the zero-frequency term to the centre (``roll`` by ``n // 2``).

    Args:
        input (Tensor): a spectrum in :func:`fft` order.
        dim (int or Sequence[int], optional): the dimensions (all by default).

    Returns:
        Tensor: the shifted spectrum.
    """
    return _shift(input, dim, 1)


def ifftshift(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`fftshift`.

    Args:
        input (Tensor): a centred spectrum.
        dim (int or Sequence[int], optional): the dimensions (all by default).

    Returns:
        Tensor: the spectrum in :func:`fft` order.
    """
    return _shift(input, dim, -1)
