"""``torch.ao.quantization``: the same functions as :mod:`rumus.quantization`."""

from ...quantization import (
    dequantize,
    from_ggml_q8_0,
    quantize_dynamic,
    quantize_per_channel,
    quantize_per_tensor,
    quantize_q8,
    to_ggml_q8_0,
)

__all__ = [
    "quantize_dynamic",
    "quantize_q8",
    "dequantize",
    "to_ggml_q8_0",
    "from_ggml_q8_0",
    "quantize_per_tensor",
    "quantize_per_channel",
]
