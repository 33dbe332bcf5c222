"""``torch.backends.mps``: Apple's Metal backend of PyTorch. rumus reaches
Metal GPUs through wgpu (the ``"gpu"`` device), so this reports False."""


def is_available():
    return False


def is_built():
    return False
