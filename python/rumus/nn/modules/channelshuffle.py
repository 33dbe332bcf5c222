"""ChannelShuffle: interleave the channels of `groups` groups (ShuffleNet)."""

from .. import functional as F
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """(N, g * k, *) -> (N, k * g, *): the channels of the g groups interleaved."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
