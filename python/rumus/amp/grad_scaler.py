"""GradScaler (``torch.amp.GradScaler``): scales the loss so that float16
gradients do not underflow, unscales the gradients before the optimizer step,
skips steps whose gradients hold inf or NaN and adapts the scale.

The scale, the growth tracker and the inf flag stay on the gradients' device:
the check and unscale is one fused kernel call over all gradients
(``_amp_foreach_non_finite_check_and_unscale_``, rust/optim/amp.rs), and
``step()`` reads the flag back once.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum

from .. import _rumus
from .._rumus import Tensor

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _device(device):
    if device == "cuda":
        return "gpu"
    if device not in ("cpu", "gpu"):
        raise ValueError(f"GradScaler: unsupported device {device!r}; use 'cpu' or 'gpu'")
    return device


class GradScaler:
    """``scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()``:
    the loss is multiplied by the scale (2**16 at first); ``step`` unscales the
    gradients (unless ``unscale_`` already did), and skips ``optimizer.step()``
    when any gradient is inf or NaN; ``update`` then multiplies the scale by
    ``backoff_factor``, or by ``growth_factor`` after ``growth_interval``
    consecutive clean steps."""

    def __init__(
        self,
        device: str = "gpu",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self._device = _device(device)
        self._enabled = bool(enabled)
        if self._enabled and self._device == "gpu":
            from .. import gpu

            if not gpu.is_available():
                warnings.warn(
                    "GradScaler is enabled, but no GPU is available; disabling it.", stacklevel=2
                )
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise ValueError("The growth factor must be > 1.0.")
            if not 0.0 < backoff_factor < 1.0:
                raise ValueError("The backoff factor must be < 1.0.")
            self._init_scale = float(init_scale)
            self._scale = None
            self._growth_factor = float(growth_factor)
            self._backoff_factor = float(backoff_factor)
            self._growth_interval = int(growth_interval)
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier."
        if self._scale is None:
            raise RuntimeError(f"Attempted {funcname} but _scale is None.  {fix}")
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, device):
        self._scale = _rumus.full((1,), self._init_scale, dtype=_rumus.float32, device=device)
        self._growth_tracker = _rumus.full(
            (1,), self._init_growth_tracker, dtype=_rumus.int32, device=device
        )

    def scale(self, outputs):
        """``outputs`` (a tensor, or nested lists/tuples/iterables of tensors) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device)

        per_device = {}

        def apply(val):
            if isinstance(val, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(val.device)
                key = str(val.device)
                if key not in per_device:
                    per_device[key] = self._scale.to(device=val.device)
                return val * per_device[key]
            if isinstance(val, (list, tuple)):
                out = [apply(v) for v in val]
                return type(val)(out) if isinstance(val, tuple) else out
            if hasattr(val, "__iter__") and not isinstance(val, (str, bytes, dict)):
                return map(apply, val)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        # (device) -> gradients, each device's gradients in one fused call.
        per_device = defaultdict(list)
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                if not allow_fp16 and param.grad.dtype == _rumus.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                per_device[str(param.grad.device)].append(param.grad)
        out = {}
        for dev, grads in per_device.items():
            found = found_inf.to(device=grads[0].device)
            _rumus._amp_foreach_non_finite_check_and_unscale_(
                grads, found, inv_scale.to(device=grads[0].device)
            )
            out[dev] = found
        return out

    def unscale_(self, optimizer):
        """Divides the optimizer's gradients by the scale in place (once per step;
        for example before ``clip_grad_norm_``) and records whether any is inf/NaN."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.reciprocal()
        found_inf = _rumus.zeros((1,), dtype=_rumus.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` unless a gradient is inf/NaN (then
        skipped, returning None); unscales first unless ``unscale_`` was called."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        found = state["found_inf_per_device"]
        if not found:
            raise RuntimeError("No inf checks were recorded for this optimizer.")
        retval = None
        # The one read back of the step.
        if not sum(v.item() for v in found.values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Adapts the scale after a step (or sets it to ``new_scale``, a float or a
        one-element float32 tensor), and readies every optimizer for the next step."""
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                if new_scale.numel() != 1 or new_scale.dtype != _rumus.float32:
                    raise ValueError(
                        "new_scale should be a float or a 1-element float32 tensor, got "
                        f"dtype {new_scale.dtype} with {new_scale.numel()} elements"
                    )
                scale.copy_(new_scale.reshape(1))
            else:
                scale.fill_(float(new_scale))
        else:
            found_infs = [
                f.to(device=scale.device)
                for state in self._per_optimizer_states.values()
                for f in state["found_inf_per_device"].values()
            ]
            if not found_infs:
                raise RuntimeError("No inf checks were recorded prior to update.")
            found = found_infs[0]
            for f in found_infs[1:]:
                found = found + f
            self._update_scale_(found > 0)
        self._per_optimizer_states = defaultdict(_refresh_state)

    def _update_scale_(self, found):
        """PyTorch's _amp_update_scale_, in tensor ops on the scale's device (no sync)."""
        scale, tracker = self._scale, self._growth_tracker
        zero = _rumus.zeros_like(tracker)
        counted = _rumus.where(found, zero, tracker + 1)
        grow = counted >= self._growth_interval
        grown = scale * self._growth_factor
        # Growth that would overflow float32 keeps the scale, as in PyTorch.
        grow = grow & grown.isfinite()
        new = _rumus.where(found, scale * self._backoff_factor, _rumus.where(grow, grown, scale))
        scale.copy_(new)
        tracker.copy_(_rumus.where(grow, zero, counted))

    def _get_scale_async(self):
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return int(self._growth_tracker.item())

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """scale, growth_factor, backoff_factor, growth_interval, _growth_tracker
        (empty when disabled), as PyTorch saves them."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved "
                "from a disabled instance of GradScaler."
            )
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(self._init_growth_tracker)
