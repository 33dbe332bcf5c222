"""Flatten and Unflatten."""

from .module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flattens dims start_dim..end_dim into one (the batch dim 0 is kept by default).

    Args:
        start_dim (int): the first dimension to flatten.
        end_dim (int): the last dimension to flatten.
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dim `dim` into `unflattened_size` (a tuple or list of ints, one may be -1).

    Args:
        dim (int): the dimension to split.
        unflattened_size (Sequence[int]): the new sizes (one may be -1).
    """

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if not isinstance(dim, int):
            raise TypeError(f"invalid argument `dim`: expected an int, got {type(dim).__name__}")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(
                "unflattened_size must be tuple of ints, "
                f"but found type {type(unflattened_size).__name__}"
            )
        for i, s in enumerate(unflattened_size):
            if not isinstance(s, int):
                raise TypeError(
                    f"unflattened_size must be tuple of ints, but found element of type "
                    f"{type(s).__name__} at pos {i}"
                )
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
