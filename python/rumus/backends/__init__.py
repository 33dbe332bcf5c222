"""``torch.backends`` for ported scripts: ``cudnn`` and ``mps`` report that
they are unavailable and accept their usual flags, which change nothing."""

from . import cudnn, mps

__all__ = ["cudnn", "mps"]
