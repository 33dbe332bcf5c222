"""Routing of F.scaled_dot_product_attention to the fused (flash) kernel.

The fused kernel (rust/ops/attention.rs) never allocates the (..., L, S) scores: the forward
keeps the output and the row logsumexp, the backward recomputes the scores block by block.
It takes what the composite path takes, except (those go to the composite path):
- query/key/value whose batch dims differ (broadcast between them) or have more than 2;
- dtypes other than float32/float64 on the CPU and float32 on the GPU, and GPU head dims above
  128; float16/bfloat16 (autocast's attention) run the float32 kernel on float32 copies and cast
  its output back, on both devices: the composite path's (..., L, S) scores, softmax and head
  transposes cost far more than those casts;
- an attn_mask that requires grad (the kernel gives no mask gradient), that is neither bool
  nor of the query's dtype, or that does not broadcast to (..., L, S);
- empty tensors and dropout_p == 1;
- while rumus.onnx traces (the composite path is what the exporter records as ONNX ops).
"""

import math
import sys

from .. import _rumus
from ..autograd import is_grad_enabled

# The GPU kernel holds a row of q/k/v in registers of this many floats.
_GPU_MAX_HEAD_DIM = 128
# No size threshold on the CPU: measured against the composite path (benches/bench_attention.py,
# 2 cores), the fused kernel is as fast on tiny problems (2x4x32x16 forward) and faster from
# there on, by 1.4-2x on forward + backward at 16x8x256x64 and more with is_causal.


def _as4d(t):
    return t if t.dim() == 4 else t.reshape((1,) * (4 - t.dim()) + tuple(t.shape))


_HALF = (_rumus.bfloat16, _rumus.float16)


def _half_via_float32(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """The float32 kernel for float16/bfloat16 q/k/v (and a mask of their dtype), cast back."""
    dt = query.dtype
    if key.dtype != dt or value.dtype != dt:
        return None
    if attn_mask is not None and attn_mask.dtype == dt:
        attn_mask = attn_mask.float()
    f = _rumus.float32
    out = fused_sdpa(query.to(f), key.to(f), value.to(f), attn_mask, dropout_p, is_causal, scale)
    return None if out is None else out.to(dt)


def fused_sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """The fused attention, or None where it does not apply (see the module docstring)."""
    tracer = sys.modules.get("rumus.onnx._trace")
    if tracer is not None and tracer.ACTIVE:
        return None
    nd = query.dim()
    if not (2 <= nd <= 4 and key.dim() == nd and value.dim() == nd):
        return None
    lead = tuple(query.shape[:-2])
    if tuple(key.shape[:-2]) != lead or tuple(value.shape[:-2]) != lead:
        return None
    length, source, e, ev = query.size(-2), key.size(-2), query.size(-1), value.size(-1)
    if 0 in (length, source, e, ev) or 0 in lead or dropout_p >= 1.0:
        return None
    gpu = query.device.type != "cpu"
    if gpu and max(e, ev) > _GPU_MAX_HEAD_DIM:
        return None
    if query.dtype in _HALF:
        return _half_via_float32(query, key, value, attn_mask, dropout_p, is_causal, scale)
    if query.dtype not in ((_rumus.float32,) if gpu else (_rumus.float32, _rumus.float64)):
        return None
    q4 = _as4d(query)
    shape4 = tuple(q4.shape[:3]) + (source,)
    mask = None
    if attn_mask is not None:
        if attn_mask.dim() > nd or attn_mask.device != query.device:
            return None
        if attn_mask.requires_grad and is_grad_enabled():
            return None
        m4 = _as4d(attn_mask)
        if any(a not in (1, b) for a, b in zip(m4.shape, shape4)):
            return None
        if m4.dtype == _rumus.bool:
            mask = _rumus.zeros(tuple(m4.shape), dtype=query.dtype, device=query.device)
            mask = mask.masked_fill(~m4, -math.inf)
        elif m4.dtype == query.dtype:
            mask = m4.detach()
        else:
            return None
    out = _rumus._flash_attention(
        q4,
        _as4d(key),
        _as4d(value),
        mask,
        float(dropout_p),
        bool(is_causal),
        float(scale),
    )
    return out if nd == 4 else out.reshape(lead + (length, ev))
