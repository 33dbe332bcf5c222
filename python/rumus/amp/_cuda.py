"""``torch.cuda.amp`` for ported scripts (``rumus.cuda.amp``): the same
autocast, GradScaler and custom_fwd/custom_bwd on rumus's GPU device."""

from .autocast_mode import autocast as _autocast
from .autocast_mode import custom_bwd as _custom_bwd
from .autocast_mode import custom_fwd as _custom_fwd
from .grad_scaler import GradScaler as _GradScaler

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_autocast):
    """``rumus.autocast("gpu", ...)`` (``torch.cuda.amp.autocast``)."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("gpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``rumus.amp.GradScaler("gpu", ...)`` (``torch.cuda.amp.GradScaler``)."""

    def __init__(
        self,
        init_scale=2.0**16,
        growth_factor=2.0,
        backoff_factor=0.5,
        growth_interval=2000,
        enabled=True,
    ):
        super().__init__("gpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``rumus.amp.custom_fwd(device_type="gpu", ...)``."""
    return _custom_fwd(fwd, device_type="gpu", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """``rumus.amp.custom_bwd(device_type="gpu")``."""
    return _custom_bwd(bwd, device_type="gpu")
