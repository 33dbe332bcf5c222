"""Small Python types the engine returns: Size, the (values, indices) pair and the
(hist, bin_edges) pair."""

from collections import namedtuple


class Size(tuple):
    """Shape of a tensor: a tuple of ints, as torch.Size."""

    __slots__ = ()

    def __repr__(self):
        return f"rumus.Size({list(self)})"

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n


ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])
Histogram = namedtuple("Histogram", ["hist", "bin_edges"])
