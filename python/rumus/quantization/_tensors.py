"""Quantized tensors: ``QuantizedTensor`` (int8 codes with per-tensor or per-channel
scales, PyTorch's ``torch.qint8``) and ``Q8Tensor`` (the Q8 block format).

rumus has no int8 dtype in its engine, so both keep their int8 codes packed in an int32
tensor, four codes per word in little-endian byte order: the same tensor is the CPU
kernels' byte array and the GPU kernels' packed words (``dot4I8Packed``,
``unpack4xI8``). They are small wrapper types, not ``rumus.Tensor`` subclasses:
inference kernels (``rumus.nn.quantized``) take them, and ``dequantize()`` gives a float
tensor for everything else.
"""

from typing import Any, Optional, Sequence

import numpy as np

import rumus
from rumus import _rumus

__all__ = [
    "QDType",
    "QScheme",
    "qint8",
    "q8",
    "per_tensor_affine",
    "per_channel_affine",
    "per_tensor_symmetric",
    "per_channel_symmetric",
    "QuantizedTensor",
    "Q8Tensor",
]

# Rows of packed int8 codes are padded to this many bytes (one 512-bit register), so the
# CPU kernels' SIMD loops need no tails (rust/backend/cpu/qgemm.rs, K_ALIGN).
K_ALIGN = 64


class QDType:
    """A quantized element type (``rumus.qint8``, ``rumus.q8``).

    Args:
        name (str): the name after ``rumus.``.
        itemsize (int): bytes per code.
    """

    def __init__(self, name: str, itemsize: int) -> None:
        self.name = name
        self.itemsize = itemsize
        self.is_quantized = True
        self.is_floating_point = False

    def __repr__(self) -> str:
        return f"rumus.{self.name}"

    def __reduce__(self):
        return (_qdtype, (self.name,))


class QScheme:
    """A quantization scheme (``rumus.per_channel_symmetric``...), as ``torch.qscheme``.

    Args:
        name (str): the name after ``rumus.``.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"rumus.{self.name}"


qint8 = QDType("qint8", 1)
q8 = QDType("q8", 1)
per_tensor_affine = QScheme("per_tensor_affine")
per_channel_affine = QScheme("per_channel_affine")
per_tensor_symmetric = QScheme("per_tensor_symmetric")
per_channel_symmetric = QScheme("per_channel_symmetric")


def _qdtype(name):
    return {"qint8": qint8, "q8": q8}[name]


def _rows(shape) -> tuple[int, int]:
    """(rows, row length) of a shape: the first dim, then everything else."""
    if len(shape) == 0:
        return 1, 1
    k = 1
    for s in shape[1:]:
        k *= s
    return shape[0], k


def _pack_codes(codes: np.ndarray, kp: int) -> np.ndarray:
    """int8 rows (r, k) as int32 words (r, kp // 4), zero-padded."""
    r, k = codes.shape
    buf = np.zeros((r, kp), np.int8)
    buf[:, :k] = codes
    return buf.view("<i4")


def _to_numpy(t) -> np.ndarray:
    return t.detach().cpu().numpy()


class QuantizedTensor:
    """int8 codes with float scales: ``x ≈ (q - zero_point) * scale``, per tensor or per
    channel along dim 0 (PyTorch's quantized ``qint8`` tensors, minimally). Made by
    :func:`rumus.quantization.quantize_per_tensor` / :func:`quantize_per_channel`.

    Args:
        packed (Tensor): int32 words, shape ``(rows, ceil(cols / 64) * 16)``.
        shape (sequence of int): the logical shape; rows is ``shape[0]``.
        scales (Tensor): float32 scales, shape ``(1,)`` or ``(rows,)``.
        zero_points (Tensor): int64 zero points, same shape as ``scales``.
        per_channel (bool): whether scales are per row (axis 0).
    """

    def __init__(
        self, packed: Any, shape: Sequence[int], scales: Any, zero_points: Any, per_channel: bool
    ) -> None:
        self._packed = packed
        self._shape = rumus.Size(shape)
        self._scales = scales
        self._zero_points = zero_points
        self._per_channel = per_channel

    @property
    def shape(self) -> Any:
        """rumus.Size: the logical shape."""
        return self._shape

    @property
    def dtype(self) -> QDType:
        """QDType: ``rumus.qint8``."""
        return qint8

    @property
    def device(self) -> Any:
        """device: where the codes live."""
        return self._packed.device

    @property
    def is_quantized(self) -> bool:
        """bool: always True."""
        return True

    @property
    def nbytes(self) -> int:
        """int: bytes held (packed codes, padding included, and scales)."""
        return self._packed.nbytes + self._scales.nbytes + self._zero_points.nbytes

    def size(self, dim: Optional[int] = None) -> Any:
        """The shape, or one of its sizes.

        Args:
            dim (int, optional): the dimension.
        """
        return self._shape if dim is None else self._shape[dim]

    def dim(self) -> int:
        """Number of dimensions."""
        return len(self._shape)

    def numel(self) -> int:
        """Number of elements."""
        r, k = _rows(self._shape)
        return r * k if len(self._shape) else 1

    def qscheme(self) -> QScheme:
        """The quantization scheme (symmetric when every zero point is 0)."""
        sym = not _to_numpy(self._zero_points).any()
        if self._per_channel:
            return per_channel_symmetric if sym else per_channel_affine
        return per_tensor_symmetric if sym else per_tensor_affine

    def _codes(self) -> np.ndarray:
        r, k = _rows(self._shape)
        return _to_numpy(self._packed).view(np.int8)[:, :k]

    def int_repr(self) -> Any:
        """The int8 codes as an int32 tensor of the same shape (rumus has no int8 dtype)."""
        c = self._codes().astype(np.int32).reshape(tuple(self._shape))
        return rumus.from_numpy(c).to(self.device)

    def q_scale(self) -> float:
        """The scale of a per-tensor quantized tensor."""
        if self._per_channel:
            raise RuntimeError(
                "Expected quantized tensor with per tensor quantization scheme, got "
                f"{self.qscheme()!r}: use q_per_channel_scales()"
            )
        return float(_to_numpy(self._scales)[0])

    def q_zero_point(self) -> int:
        """The zero point of a per-tensor quantized tensor."""
        if self._per_channel:
            raise RuntimeError(
                "Expected quantized tensor with per tensor quantization scheme, got "
                f"{self.qscheme()!r}: use q_per_channel_zero_points()"
            )
        return int(_to_numpy(self._zero_points)[0])

    def _check_per_channel(self, what):
        if not self._per_channel:
            raise RuntimeError(
                f"Expected quantized tensor with per channel quantization scheme for {what}, "
                f"got {self.qscheme()!r}"
            )

    def q_per_channel_scales(self) -> Any:
        """The per-channel scales (float64, as PyTorch)."""
        self._check_per_channel("q_per_channel_scales")
        return self._scales.to(rumus.float64)

    def q_per_channel_zero_points(self) -> Any:
        """The per-channel zero points (int64)."""
        self._check_per_channel("q_per_channel_zero_points")
        return self._zero_points.clone()

    def q_per_channel_axis(self) -> int:
        """The axis of per-channel scales: always 0."""
        self._check_per_channel("q_per_channel_axis")
        return 0

    def dequantize(self) -> Any:
        """The float32 values ``(q - zero_point) * scale``."""
        q = self._codes().astype(np.float32)
        s = _to_numpy(self._scales).astype(np.float32)[:, None]
        z = _to_numpy(self._zero_points).astype(np.float32)[:, None]
        out = ((q - z) * s).reshape(tuple(self._shape))
        return rumus.from_numpy(np.ascontiguousarray(out)).to(self.device)

    def to(self, device: Any) -> "QuantizedTensor":
        """A copy on ``device``.

        Args:
            device (str or device): the target device.
        """
        return QuantizedTensor(
            self._packed.to(device),
            self._shape,
            self._scales.to(device),
            self._zero_points.to(device),
            self._per_channel,
        )

    def cpu(self) -> "QuantizedTensor":
        """A copy on the CPU."""
        return self.to("cpu")

    def __repr__(self) -> str:
        head = f"QuantizedTensor(shape={tuple(self._shape)}, dtype=rumus.qint8, "
        return head + f"qscheme={self.qscheme()!r}, device={self.device})"


def _check_float(t, op):
    if not isinstance(t, rumus.Tensor):
        raise TypeError(f"{op}: expected a rumus.Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"{op}: expected a floating point tensor, got {t.dtype}")


def _quantize(x: np.ndarray, scales: np.ndarray, zps: np.ndarray) -> np.ndarray:
    """int8 codes of rows (r, k) with per-row scales and zero points."""
    q = np.rint(x / scales[:, None]) + zps[:, None]
    return np.clip(q, -128, 127).astype(np.int8)


def _make(t, scales, zps, per_channel):
    r, k = _rows(t.shape)
    x = _to_numpy(t).astype(np.float32).reshape(r, k)
    s = np.broadcast_to(np.asarray(scales, np.float32), (r,)) if per_channel else scales
    z = np.broadcast_to(np.asarray(zps, np.int64), (r,)) if per_channel else zps
    codes = _quantize(x, np.broadcast_to(s, (r,)), np.broadcast_to(z, (r,)))
    packed = _pack_codes(codes, -(-k // K_ALIGN) * K_ALIGN)
    dev = t.device
    return QuantizedTensor(
        rumus.from_numpy(np.ascontiguousarray(packed)).to(dev),
        t.shape,
        rumus.from_numpy(np.array(s, np.float32).reshape(-1)).to(dev),
        rumus.from_numpy(np.array(z, np.int64).reshape(-1)).to(dev),
        per_channel,
    )


def _check_qint8(dtype, op):
    if dtype is not qint8:
        raise ValueError(f"{op}: only dtype=rumus.qint8 is supported, got {dtype!r}")


def quantize_per_tensor(input: Any, scale: float, zero_point: int, dtype: Any) -> QuantizedTensor:
    """Quantizes ``input`` with one scale and zero point: ``q = clamp(round(x / scale) +
    zero_point, -128, 127)``.

    Args:
        input (Tensor): the float tensor.
        scale (float): the scale (> 0).
        zero_point (int): the zero point, in [-128, 127].
        dtype (QDType): ``rumus.qint8``.

    Returns:
        QuantizedTensor: the codes with their scale.
    """
    _check_float(input, "quantize_per_tensor")
    _check_qint8(dtype, "quantize_per_tensor")
    if not (scale > 0 and np.isfinite(scale)):
        raise ValueError(f"quantize_per_tensor: scale must be positive and finite, got {scale}")
    if not -128 <= int(zero_point) <= 127:
        raise ValueError(f"quantize_per_tensor: zero_point {zero_point} is outside [-128, 127]")
    return _make(input, np.float32(scale), np.int64(zero_point), False)


def quantize_per_channel(
    input: Any, scales: Any, zero_points: Any, axis: int, dtype: Any
) -> QuantizedTensor:
    """Quantizes ``input`` with a scale and zero point per slice along ``axis`` (only axis 0).

    Args:
        input (Tensor): the float tensor (at least 1-D).
        scales (Tensor): one scale per slice, shape ``(input.shape[axis],)``.
        zero_points (Tensor): one zero point per slice.
        axis (int): the channel dimension; only 0 is supported.
        dtype (QDType): ``rumus.qint8``.

    Returns:
        QuantizedTensor: the codes with their scales.
    """
    _check_float(input, "quantize_per_channel")
    _check_qint8(dtype, "quantize_per_channel")
    if input.dim() == 0:
        raise ValueError("quantize_per_channel: expected at least a 1-D tensor, got a 0-d one")
    if axis not in (0, -input.dim()):
        raise NotImplementedError(f"quantize_per_channel: only axis=0 is supported, got {axis}")
    s = _to_numpy(rumus.as_tensor(scales)).astype(np.float32).reshape(-1)
    z = _to_numpy(rumus.as_tensor(zero_points)).astype(np.int64).reshape(-1)
    if s.shape != (input.shape[0],) or z.shape != (input.shape[0],):
        raise RuntimeError(
            f"quantize_per_channel: expected {input.shape[0]} scales and zero points for "
            f"shape {tuple(input.shape)}, got {s.size} and {z.size}"
        )
    if not (np.all(s > 0) and np.all(np.isfinite(s))):
        raise ValueError("quantize_per_channel: scales must be positive and finite")
    return _make(input, s, z, True)


def _per_channel_symmetric(w) -> QuantizedTensor:
    """PyTorch's per-channel symmetric qint8 weight observer: scale = max|w| / 127.5 per row
    (at least float32 eps), zero point 0."""
    r, k = _rows(w.shape)
    x = _to_numpy(w).astype(np.float32).reshape(r, k)
    amax = np.abs(x).max(axis=1) if k else np.zeros(r, np.float32)
    s = np.maximum(amax / 127.5, np.finfo(np.float32).eps).astype(np.float32)
    return _make(w, s, np.zeros(r, np.int64), True)


class Q8Tensor:
    """A tensor in the Q8 block format: along the last dim, rows are cut into blocks of
    ``block_size`` int8 codes (the last one zero-padded), each led by a 4-byte header whose
    first two bytes are the block's float16 scale (the rest zero), so every block starts
    on a 4-byte boundary for the GPU; ``x ≈ code * scale``. Made by
    :func:`rumus.quantization.quantize_q8`.

    Args:
        words (Tensor): 1-D int32 data, ``rows * ceil(k / block_size) * (1 + block_size / 4)``
            words.
        shape (sequence of int): the logical shape (k is its last dim).
        block_size (int): codes per block, a positive multiple of 4.
    """

    def __init__(self, words: Any, shape: Sequence[int], block_size: int) -> None:
        self._words = words
        self._shape = rumus.Size(shape)
        self.block_size = block_size

    def _rk(self) -> tuple[int, int]:
        s = tuple(self._shape)
        if not s:
            return 1, 1
        k = s[-1]
        return (int(np.prod(s[:-1])) if len(s) > 1 else 1), k

    @property
    def shape(self) -> Any:
        """rumus.Size: the logical shape."""
        return self._shape

    @property
    def dtype(self) -> QDType:
        """QDType: ``rumus.q8``."""
        return q8

    @property
    def device(self) -> Any:
        """device: where the data lives."""
        return self._words.device

    @property
    def is_quantized(self) -> bool:
        """bool: always True."""
        return True

    @property
    def nbytes(self) -> int:
        """int: bytes of the block data (headers and padding included)."""
        return self._words.nbytes

    def size(self, dim: Optional[int] = None) -> Any:
        """The shape, or one of its sizes.

        Args:
            dim (int, optional): the dimension.
        """
        return self._shape if dim is None else self._shape[dim]

    def dim(self) -> int:
        """Number of dimensions."""
        return len(self._shape)

    def numel(self) -> int:
        """Number of elements."""
        r, k = self._rk()
        return r * k

    def _blocks(self) -> np.ndarray:
        """The data as (blocks, 4 + block_size) bytes."""
        return _to_numpy(self._words).view(np.uint8).reshape(-1, 4 + self.block_size)

    def q_per_block_scales(self) -> Any:
        """The float16 scales of the blocks, as float32, in block order."""
        return rumus.from_numpy(self._blocks()[:, :2].copy().view(np.float16).astype(np.float32))

    def int_repr(self) -> Any:
        """The int8 codes as an int32 tensor of the same shape (padding dropped)."""
        r, k = self._rk()
        codes = self._blocks()[:, 4:].view(np.int8).reshape(r, -1)[:, :k]
        return rumus.from_numpy(codes.astype(np.int32).reshape(tuple(self._shape))).to(self.device)

    def dequantize(self) -> Any:
        """The float32 values ``code * scale``, on the tensor's device (the GPU
        dequantizes in a kernel)."""
        r, k = self._rk()
        return _rumus._q8_dequantize(self._words, r, k, self.block_size).reshape(self._shape)

    def to(self, device: Any) -> "Q8Tensor":
        """A copy on ``device``.

        Args:
            device (str or device): the target device.
        """
        return Q8Tensor(self._words.to(device), self._shape, self.block_size)

    def cpu(self) -> "Q8Tensor":
        """A copy on the CPU."""
        return self.to("cpu")

    def __repr__(self) -> str:
        return (
            f"Q8Tensor(shape={tuple(self._shape)}, block_size={self.block_size}, "
            f"device={self.device})"
        )
