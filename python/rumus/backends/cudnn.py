"""``torch.backends.cudnn`` on a machine without CUDA: unavailable; the flags
ported scripts set (``benchmark``, ``deterministic``, ``enabled``,
``allow_tf32``) are plain attributes with PyTorch's defaults and change nothing."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available():
    return False


def version():
    return None
