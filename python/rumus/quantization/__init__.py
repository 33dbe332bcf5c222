"""Quantization for inference (``torch.ao.quantization`` / ``torch.quantization``).

- :func:`quantize_dynamic`: swaps ``nn.Linear`` layers for
  :class:`rumus.nn.quantized.dynamic.Linear` (int8 weights per output channel,
  activations quantized per row at run time, int8 x int8 -> int32 GEMM with the scales
  and bias applied in the epilogue; AVX512-VNNI / AVX2 / scalar on the CPU,
  ``dot4I8Packed`` on GPUs), or with ``dtype=rumus.q8`` for
  :class:`rumus.nn.quantized.Q8Linear` (weights in the Q8 block format, dequantized on
  read: the format for memory-bound batch-1 inference).
- :func:`quantize_q8` / :func:`dequantize`: the Q8 block format (:class:`Q8Tensor`), with
  byte-exact conversion to and from GGML's ``Q8_0`` (:func:`to_ggml_q8_0`,
  :func:`from_ggml_q8_0`).
- :func:`quantize_per_tensor` / :func:`quantize_per_channel`: :class:`QuantizedTensor`
  (``int_repr``, ``q_scale``, ``q_per_channel_scales``...).
"""

import copy
from typing import Any, Optional

import numpy as np

import rumus

from ._tensors import (
    Q8Tensor,
    QDType,
    QScheme,
    QuantizedTensor,
    per_channel_affine,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
    q8,
    qint8,
    quantize_per_channel,
    quantize_per_tensor,
)

__all__ = [
    "quantize_dynamic",
    "quantize_q8",
    "dequantize",
    "to_ggml_q8_0",
    "from_ggml_q8_0",
    "quantize_per_tensor",
    "quantize_per_channel",
    "QuantizedTensor",
    "Q8Tensor",
    "QDType",
    "QScheme",
    "qint8",
    "q8",
    "per_tensor_affine",
    "per_channel_affine",
    "per_tensor_symmetric",
    "per_channel_symmetric",
]

_GGML_BLOCK = 32
_GGML_BLOCK_BYTES = 34


def quantize_q8(t: Any, block_size: int = 32) -> Q8Tensor:
    """Quantizes ``t`` to the Q8 block format: along the last dim, blocks of ``block_size``
    values share a float16 scale ``d = max|x| / 127``; codes are ``round(x / d)`` in
    [-127, 127].

    Args:
        t (Tensor): the float tensor.
        block_size (int): values per block, a positive multiple of 4 (32, GGML's
            ``Q8_0``, by default).

    Returns:
        Q8Tensor: the blocks, on ``t``'s device.
    """
    if not isinstance(t, rumus.Tensor):
        raise TypeError(f"quantize_q8: expected a rumus.Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"quantize_q8: expected a floating point tensor, got {t.dtype}")
    if isinstance(block_size, bool) or not isinstance(block_size, int):
        raise TypeError(f"quantize_q8: block_size must be an int, got {type(block_size).__name__}")
    if block_size <= 0 or block_size % 4:
        raise ValueError(
            f"quantize_q8: block_size must be a positive multiple of 4, got {block_size}"
        )
    shape = tuple(t.shape)
    x = t.detach().cpu().to(rumus.float32).numpy().reshape(-1, shape[-1] if shape else 1)
    r, k = x.shape
    nb = -(-k // block_size)
    blocks = np.zeros((r, nb * block_size), np.float32)
    blocks[:, :k] = x
    blocks = blocks.reshape(-1, block_size)
    d = (np.abs(blocks).max(axis=1) / 127.0).astype(np.float16)
    df = d.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(df[:, None] > 0, np.rint(blocks / df[:, None]), 0.0)
    out = np.zeros((blocks.shape[0], 4 + block_size), np.uint8)
    out[:, :2] = d.view(np.uint8).reshape(-1, 2)
    out[:, 4:] = np.clip(q, -127, 127).astype(np.int8).view(np.uint8)
    words = rumus.from_numpy(out.reshape(-1).view("<i4").copy())
    return Q8Tensor(words.to(t.device), shape, block_size)


def dequantize(q: Any) -> Any:
    """The float32 values of a quantized tensor (``q.dequantize()``).

    Args:
        q (Q8Tensor or QuantizedTensor): the quantized tensor.

    Returns:
        Tensor: float32, same shape and device.
    """
    if not isinstance(q, (Q8Tensor, QuantizedTensor)):
        raise TypeError(f"dequantize: expected a quantized tensor, got {type(q).__name__}")
    return q.dequantize()


def to_ggml_q8_0(q: Q8Tensor) -> bytes:
    """The bytes of ``q`` in GGML's ``Q8_0`` layout: per block of 32 values a float16 scale
    then 32 int8 codes (34 bytes, the 2 header padding bytes dropped). Byte-exact with
    :func:`from_ggml_q8_0`.

    Args:
        q (Q8Tensor): a Q8 tensor with ``block_size=32``.

    Returns:
        bytes: ``blocks * 34`` bytes.
    """
    if not isinstance(q, Q8Tensor):
        raise TypeError(f"to_ggml_q8_0: expected a Q8Tensor, got {type(q).__name__}")
    if q.block_size != _GGML_BLOCK:
        raise ValueError(
            f"to_ggml_q8_0: GGML's Q8_0 has blocks of 32, got block_size={q.block_size}"
        )
    b = q._blocks()
    return np.concatenate([b[:, :2], b[:, 4:]], axis=1).tobytes()


def from_ggml_q8_0(data: Any, shape: Any) -> Q8Tensor:
    """A Q8 tensor (``block_size=32``) from GGML ``Q8_0`` bytes.

    Args:
        data (bytes-like): ``rows * ceil(shape[-1] / 32) * 34`` bytes.
        shape (sequence of int): the logical shape.

    Returns:
        Q8Tensor: on the CPU.
    """
    raw = np.frombuffer(memoryview(data), np.uint8)
    shape = tuple(int(s) for s in shape)
    k = shape[-1] if shape else 1
    rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    nb = rows * -(-k // _GGML_BLOCK)
    if raw.size != nb * _GGML_BLOCK_BYTES:
        raise ValueError(
            f"from_ggml_q8_0: shape {shape} needs {nb} blocks of {_GGML_BLOCK_BYTES} bytes "
            f"({nb * _GGML_BLOCK_BYTES} bytes), got {raw.size} bytes"
        )
    src = raw.reshape(nb, _GGML_BLOCK_BYTES)
    out = np.zeros((nb, 4 + _GGML_BLOCK), np.uint8)
    out[:, :2] = src[:, :2]
    out[:, 4:] = src[:, 2:]
    return Q8Tensor(rumus.from_numpy(out.reshape(-1).view("<i4").copy()), shape, _GGML_BLOCK)


def _swap_targets(qconfig_spec):
    """(module types, submodule names) that ``qconfig_spec`` selects."""
    types, names = set(), set()
    for key in qconfig_spec:
        if isinstance(key, str):
            names.add(key)
        elif isinstance(key, type):
            types.add(key)
        else:
            raise TypeError(
                f"quantize_dynamic: qconfig_spec keys must be module types or names, got {key!r}"
            )
    return types, names


def quantize_dynamic(
    model: Any,
    qconfig_spec: Optional[Any] = None,
    dtype: Any = qint8,
    mapping: Optional[dict] = None,
    inplace: bool = False,
) -> Any:
    """Converts ``model`` to a dynamically quantized one: each selected child module whose
    type has a quantized version (``nn.Linear``) is replaced; others are left untouched, as
    in PyTorch. The model is put in eval mode.

    Args:
        model (Module): the float model.
        qconfig_spec (set or dict, optional): module types or dotted submodule names to
            quantize (dict keys count; values are ignored). Default ``{nn.Linear}``.
        dtype (QDType): ``rumus.qint8`` (``nn.quantized.dynamic.Linear``) or ``rumus.q8``
            (``nn.quantized.Q8Linear``, blocks of 32).
        mapping (dict, optional): float module type -> quantized class (with a
            ``from_float``), replacing the default mapping.
        inplace (bool): convert ``model`` itself instead of a deep copy.

    Returns:
        Module: the quantized model.
    """
    from ..nn import Linear, Module
    from ..nn.quantized import Q8Linear
    from ..nn.quantized.dynamic import Linear as DynamicLinear

    if not isinstance(model, Module):
        raise TypeError(f"quantize_dynamic: expected an nn.Module, got {type(model).__name__}")
    if dtype is qint8:
        default = {Linear: DynamicLinear}
    elif dtype is q8:
        default = {Linear: Q8Linear}
    else:
        raise ValueError(
            f"Don't know how to quantize with default settings for {dtype!r}: "
            "rumus.quantization.quantize_dynamic supports rumus.qint8 and rumus.q8"
        )
    mapping = default if mapping is None else mapping
    types, names = _swap_targets({Linear} if qconfig_spec is None else qconfig_spec)
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()

    def convert(module, prefix):
        for name, child in list(module.named_children()):
            path = prefix + name
            selected = type(child) in types or path in names
            if selected and type(child) in mapping:
                setattr(module, name, mapping[type(child)].from_float(child))
            else:
                convert(child, path + ".")

    convert(model, "")
    return model
