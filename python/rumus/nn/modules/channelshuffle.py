"""ChannelShuffle: interleave the channels of `groups` groups (ShuffleNet)."""

from .. import functional as F
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Interleaves the channels of ``groups`` groups: (N, g * k, *) -> (N, k * g, *).

    Args:
        groups (int): the number of groups g; the channel count must be divisible by it.
    """

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
