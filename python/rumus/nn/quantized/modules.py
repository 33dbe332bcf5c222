"""Quantized Linear layers: the dynamically quantized int8 one and the Q8 block one.

Both are inference modules: their state lives in buffers (no parameters, no
gradients), so ``state_dict`` holds plain tensors that ``rumus.save`` writes as
safetensors. int8 codes travel packed four per int32 word (rumus has no int8 dtype;
``rumus.quantization._tensors`` explains).
"""

from typing import Any

import numpy as np

import rumus
from rumus import _rumus

from ...quantization._tensors import (
    K_ALIGN,
    Q8Tensor,
    QuantizedTensor,
    _per_channel_symmetric,
)
from ..modules.linear import Linear as _FloatLinear
from ..modules.module import Module

__all__ = ["DynamicLinear", "Q8Linear"]


def _check_features(cls, in_features, out_features):
    for name, v in (("in_features", in_features), ("out_features", out_features)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{cls}: {name} must be a positive int, got {v!r}")


def _as_2d(x, in_features, cls):
    if not isinstance(x, rumus.Tensor):
        raise TypeError(f"{cls}: expected a rumus.Tensor input, got {type(x).__name__}")
    if x.dim() == 0 or x.shape[-1] != in_features:
        raise RuntimeError(
            f"{cls}: input of shape {tuple(x.shape)} does not end in in_features={in_features}"
        )
    return x.reshape(-1, in_features)


def _float_bias(b):
    return None if b is None else b.to(rumus.float32)


class DynamicLinear(Module):
    """Dynamically quantized Linear (``torch.nn.quantized.dynamic.Linear``): int8 weights
    with a symmetric scale per output channel; each forward quantizes every input row to
    7-bit codes with its own scale and zero point, multiplies in int8 with int32
    accumulation (AVX512-VNNI ``vpdpbusd`` or AVX2 ``vpmaddubsw`` on the CPU,
    ``dot4I8Packed`` on GPUs) and applies the scales, the zero-point correction and the
    bias in the GEMM's epilogue. Input and output are float32.

    State (buffers, saved by ``state_dict``): ``_packed_weight`` (int32, four codes per
    word, rows padded to 64 codes), ``_weight_scale`` (float32), ``_bias`` (float32).

    Args:
        in_features (int): the size of each input sample.
        out_features (int): the size of each output sample.
        bias_ (bool): whether the layer has a bias (PyTorch's argument name).
        dtype (QDType): ``rumus.qint8``.
    """

    def __init__(
        self, in_features: int, out_features: int, bias_: bool = True, dtype: Any = None
    ) -> None:
        super().__init__()
        _check_features("DynamicQuantizedLinear", in_features, out_features)
        from ...quantization import qint8

        if dtype is not None and dtype is not qint8:
            raise ValueError(f"DynamicQuantizedLinear: only dtype=rumus.qint8, got {dtype!r}")
        self.in_features = in_features
        self.out_features = out_features
        kw = -(-in_features // K_ALIGN) * K_ALIGN // 4
        self.register_buffer("_packed_weight", rumus.zeros(out_features, kw, dtype=rumus.int32))
        self.register_buffer("_weight_scale", rumus.ones(out_features))
        self.register_buffer("_bias", rumus.zeros(out_features) if bias_ else None)
        self.register_buffer(
            "_weight_sum", rumus.zeros(out_features, dtype=rumus.int32), persistent=False
        )

    def _refresh_sum(self):
        codes = self._packed_weight.cpu().numpy().view(np.int8)
        s = codes.astype(np.int32).sum(axis=1, dtype=np.int32)
        self._weight_sum = rumus.from_numpy(s).to(self._packed_weight.device)

    @classmethod
    def from_float(cls, mod: Any) -> "DynamicLinear":
        """The quantized copy of a float ``nn.Linear``.

        Args:
            mod (nn.Linear): the float layer.

        Returns:
            DynamicLinear: on the layer's device.
        """
        if not isinstance(mod, _FloatLinear):
            raise TypeError(
                f"DynamicQuantizedLinear.from_float: expected nn.Linear, got {type(mod).__name__}"
            )
        q = cls(mod.in_features, mod.out_features, mod.bias is not None)
        q.set_weight_bias(_per_channel_symmetric(mod.weight.detach()), mod.bias)
        return q.to(mod.weight.device)

    def set_weight_bias(self, w: QuantizedTensor, b: Any) -> None:
        """Sets the quantized weight (per-channel along dim 0, zero points 0) and the bias.

        Args:
            w (QuantizedTensor): of shape ``(out_features, in_features)``.
            b (Tensor, optional): the float bias.
        """
        if not isinstance(w, QuantizedTensor) or w._zero_points.abs().sum().item() != 0:
            raise ValueError("set_weight_bias: expected a symmetric QuantizedTensor weight")
        if tuple(w.shape) != (self.out_features, self.in_features):
            raise RuntimeError(
                f"set_weight_bias: weight of shape {tuple(w.shape)}, expected "
                f"{(self.out_features, self.in_features)}"
            )
        scale = w._scales.to(rumus.float32)
        if scale.numel() == 1:
            scale = scale.expand(self.out_features).contiguous()
        self._packed_weight = w._packed.detach().to(self._device())
        self._weight_scale = scale.to(self._device())
        if b is not None:
            self._bias = b.detach().to(rumus.float32).to(self._device()).clone()
        self._refresh_sum()

    def _device(self) -> Any:
        return self._packed_weight.device

    def weight(self) -> QuantizedTensor:
        """The quantized weight (per-channel symmetric qint8), as PyTorch's ``weight()``."""
        zp = rumus.zeros(self.out_features, dtype=rumus.int64, device=self._device())
        return QuantizedTensor(
            self._packed_weight,
            (self.out_features, self.in_features),
            self._weight_scale,
            zp,
            True,
        )

    def bias(self) -> Any:
        """The float bias (or None), as PyTorch's ``bias()``."""
        return self._bias

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._refresh_sum()

    def forward(self, input: Any) -> Any:
        x = _as_2d(input, self.in_features, "DynamicQuantizedLinear")
        y = _rumus._qlinear(
            x,
            self._packed_weight,
            self._weight_scale.to(rumus.float32),
            self._weight_sum,
            _float_bias(self._bias),
        )
        return y.reshape(*input.shape[:-1], self.out_features)

    def _get_name(self):
        return "DynamicQuantizedLinear"

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            "dtype=rumus.qint8, qscheme=rumus.per_channel_symmetric"
        )


class Q8Linear(Module):
    """Linear layer whose weight is stored in the Q8 block format (blocks of ``block_size``
    int8 codes along each weight row, a float16 scale per block): about a quarter of the
    float32 bytes, dequantized on read by the CPU and GPU kernels (the format for
    memory-bound batch-1 inference). The input stays float. Made by
    :meth:`from_float` or ``quantize_dynamic(model, dtype=rumus.q8)``.

    State (buffers): ``_weight_q8`` (1-D int32 block data), ``_bias`` (float32).

    Args:
        in_features (int): the size of each input sample.
        out_features (int): the size of each output sample.
        bias (bool): whether the layer has a bias.
        block_size (int): codes per block, a positive multiple of 4.
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, block_size: int = 32
    ) -> None:
        super().__init__()
        _check_features("Q8Linear", in_features, out_features)
        if isinstance(block_size, bool) or not isinstance(block_size, int):
            raise TypeError(f"Q8Linear: block_size must be an int, got {block_size!r}")
        if block_size <= 0 or block_size % 4:
            raise ValueError(
                f"Q8Linear: block_size must be a positive multiple of 4, got {block_size}"
            )
        self.in_features = in_features
        self.out_features = out_features
        self.block_size = block_size
        words = out_features * -(-in_features // block_size) * (1 + block_size // 4)
        self.register_buffer("_weight_q8", rumus.zeros(words, dtype=rumus.int32))
        self.register_buffer("_bias", rumus.zeros(out_features) if bias else None)

    @classmethod
    def from_float(cls, mod: Any, block_size: int = 32) -> "Q8Linear":
        """The Q8 copy of a float ``nn.Linear``.

        Args:
            mod (nn.Linear): the float layer.
            block_size (int): codes per block.

        Returns:
            Q8Linear: on the layer's device.
        """
        if not isinstance(mod, _FloatLinear):
            raise TypeError(f"Q8Linear.from_float: expected nn.Linear, got {type(mod).__name__}")
        from ...quantization import quantize_q8

        q = cls(mod.in_features, mod.out_features, mod.bias is not None, block_size)
        q._weight_q8 = quantize_q8(mod.weight.detach(), block_size)._words
        if mod.bias is not None:
            q._bias = mod.bias.detach().to(rumus.float32).clone()
        return q.to(mod.weight.device)

    def weight(self) -> Q8Tensor:
        """The weight as a :class:`~rumus.quantization.Q8Tensor`."""
        return Q8Tensor(self._weight_q8, (self.out_features, self.in_features), self.block_size)

    def bias(self) -> Any:
        """The float bias (or None)."""
        return self._bias

    def forward(self, input: Any) -> Any:
        x = _as_2d(input, self.in_features, "Q8Linear")
        y = _rumus._q8_linear(
            x, self._weight_q8, self.out_features, self.block_size, _float_bias(self._bias)
        )
        return y.reshape(*input.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self._bias is not None}, block_size={self.block_size}"
        )
