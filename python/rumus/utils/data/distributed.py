"""DistributedSampler (PyTorch's ``torch.utils.data.distributed``): each rank of a
data-parallel job reads its own disjoint share of the dataset."""

import math

from ... import _rumus
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Yields the indices of rank ``rank``'s share: the (shuffled, when ``shuffle``) indices
    are padded by repeating their start to a multiple of ``num_replicas`` (or cut down to one
    when ``drop_last``), and rank r takes every ``num_replicas``-th from position r. The
    permutation depends on ``seed + epoch``: call ``set_epoch`` at each epoch so that every
    rank draws the same new order.

    Args:
        dataset (Dataset): the dataset to split (its length is used).
        num_replicas (int, optional): the number of ranks (the world size when None).
        rank (int, optional): this rank (the process group's rank when None).
        shuffle (bool): shuffle the indices each epoch.
        seed (int): the shuffle's seed, the same on every rank.
        drop_last (bool): drop the tail so every rank gets the same count without padding.
    """

    def __init__(
        self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False
    ):
        if num_replicas is None or rank is None:
            from ... import distributed as dist

            if not dist.is_available() or not dist.is_initialized():
                raise RuntimeError(
                    "Requires distributed package to be available and the default process "
                    "group to be initialized (or pass num_replicas and rank)"
                )
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if isinstance(num_replicas, bool) or not isinstance(num_replicas, int) or num_replicas < 1:
            raise ValueError(f"num_replicas should be a positive integer, but got {num_replicas}")
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = _rumus.Generator().manual_seed(self.seed + self.epoch)
            indices = _rumus.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        assert len(indices) == self.total_size
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Sets the epoch, which seeds the shuffle (with ``seed``).

        Args:
            epoch (int): the epoch number.
        """
        self.epoch = epoch
