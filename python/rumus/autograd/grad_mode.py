"""Grad mode switches, usable as context managers and as decorators (as in PyTorch).
Grad mode is per thread; the flag itself lives in the Rust core."""

import functools
from typing import Any, Callable, Literal, TypeVar

from .. import _rumus

# A decorated function keeps its own type.
_F = TypeVar("_F", bound=Callable[..., Any])


class _Mode:
    """Base: a context manager that is also a function decorator."""

    def __call__(self, func: _F) -> _F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__(*self._args):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    _args: tuple[Any, ...] = ()

    def __enter__(self) -> "_Mode":
        self._prev = _rumus.is_grad_enabled()
        self._apply()
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        _rumus._set_grad_enabled(self._prev)
        return False


class no_grad(_Mode):
    """Ops run inside record no graph (``with rumus.no_grad():`` or ``@rumus.no_grad()``)."""

    def _apply(self):
        _rumus._set_grad_enabled(False)


class enable_grad(_Mode):
    """Turns recording back on, e.g. inside ``no_grad``."""

    def _apply(self):
        _rumus._set_grad_enabled(True)


class inference_mode(_Mode):
    """``inference_mode()`` is ``no_grad()`` in rumus (there are no inference-only tensors);
    ``inference_mode(False)`` changes nothing.

    Args:
        mode (bool): True to disable recording (False does nothing).
    """

    def __init__(self, mode: bool = True) -> None:
        self._args = (mode,)
        self.mode = mode

    def _apply(self):
        if self.mode:
            _rumus._set_grad_enabled(False)


class set_grad_enabled(_Mode):
    """Sets grad mode now (as a call) or for a ``with`` block / decorated function.

    Args:
        mode (bool): True to record operations, False not to.
    """

    def __init__(self, mode: bool) -> None:
        self._args = (mode,)
        self.mode = bool(mode)
        self._prev = _rumus.is_grad_enabled()
        _rumus._set_grad_enabled(self.mode)

    def __call__(self, func: _F) -> _F:
        # Used as a decorator: undo the immediate switch made by __init__.
        _rumus._set_grad_enabled(self._prev)
        return super().__call__(func)

    def __enter__(self) -> "set_grad_enabled":
        return self

    def _apply(self):
        _rumus._set_grad_enabled(self.mode)


class set_detect_anomaly:
    """Turns anomaly detection on or off; as a context manager, restores it on exit.

    Args:
        mode (bool): True to enable.
        check_nan (bool): raise on NaN and inf produced by a backward function.
    """

    def __init__(self, mode, check_nan=True):
        self._prev = _rumus.is_anomaly_enabled()
        _rumus._set_anomaly_enabled(bool(mode) and check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _rumus._set_anomaly_enabled(self._prev)
        return False


class detect_anomaly(set_detect_anomaly):
    """Backward raises at the first node whose backward produced NaN or inf, naming it.

    Args:
        check_nan (bool): raise on NaN and inf produced by a backward function.
    """

    def __init__(self, check_nan=True):
        super().__init__(True, check_nan)

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with detect_anomaly():
                return func(*args, **kwargs)

        _rumus._set_anomaly_enabled(self._prev)
        return wrapper
