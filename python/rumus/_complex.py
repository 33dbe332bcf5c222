"""rumus.real / rumus.imag: the functional spellings of the Tensor.real / Tensor.imag views."""


def real(input):
    """The real parts of a tensor: a view for complex tensors, ``input`` itself for real ones.

    Args:
        input (Tensor): the tensor.

    Returns:
        Tensor: the real parts (float32 for complex64, float64 for complex128).
    """
    return input.real


def imag(input):
    """The imaginary parts of a complex tensor, as a view sharing its memory.

    Args:
        input (Tensor): a complex tensor (real tensors raise RuntimeError, as in PyTorch).

    Returns:
        Tensor: the imaginary parts.
    """
    return input.imag
