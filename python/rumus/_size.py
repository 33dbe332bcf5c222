"""Small Python types the engine returns: Size, the (values, indices) pair and the
(hist, bin_edges) pair."""

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ._rumus import Tensor


class Size(tuple[int, ...]):
    """Shape of a tensor: a tuple of ints, as torch.Size.

    Args:
        iterable (Iterable[int]): the sizes.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"rumus.Size({list(self)})"

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds (the product of the sizes).

        Returns:
            int: the product (1 for an empty shape).
        """
        n = 1
        for d in self:
            n *= d
        return n


class ValuesIndices(NamedTuple):
    """What max/min/median/mode/sort/topk/kthvalue/cummax return along a dim."""

    values: "Tensor"
    indices: "Tensor"


class Histogram(NamedTuple):
    hist: "Tensor"
    bin_edges: "Tensor"
