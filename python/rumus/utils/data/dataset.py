"""Datasets: the map-style and iterable base classes and the usual combinators."""

import bisect
import math
import warnings
from itertools import accumulate
from typing import Any

from ... import _rumus
from ..._rumus import Tensor

__all__ = [
    "Dataset",
    "IterableDataset",
    "TensorDataset",
    "StackDataset",
    "ConcatDataset",
    "ChainDataset",
    "Subset",
    "random_split",
]


class Dataset:
    """A map-style dataset: ``__getitem__(index)`` and usually ``__len__``.

    ``a + b`` concatenates two datasets into a :class:`ConcatDataset`."""

    def __getitem__(self, index: Any) -> Any:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: ``__iter__`` yields the samples.

    With ``num_workers > 0`` every worker iterates its own ``iter(dataset)``;
    use :func:`~rumus.utils.data.get_worker_info` in ``__iter__`` to give each
    worker its own share, or the samples are repeated once per worker.
    ``a + b`` chains two iterable datasets into a :class:`ChainDataset`."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample ``i`` is ``tuple(t[i] for t in tensors)``; all tensors share their first dimension.

    Args:
        *tensors (Tensor): tensors with the same first dimension.
    """

    def __init__(self, *tensors: Tensor) -> None:
        for t in tensors:
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset: expected Tensors, got {type(t).__name__}")
        if any(t.dim() == 0 for t in tensors):
            raise ValueError("TensorDataset: tensors must have at least one dimension")
        if any(t.shape[0] != tensors[0].shape[0] for t in tensors):
            sizes = [t.shape[0] for t in tensors]
            raise ValueError(f"Size mismatch between tensors: first dimensions are {sizes}")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class StackDataset(Dataset):
    """Zips datasets of equal length: ``StackDataset(a, b)[i] == (a[i], b[i])``,
    ``StackDataset(x=a, y=b)[i] == {"x": a[i], "y": b[i]}``.

    Args:
        *args (Dataset): datasets, zipped into tuples.
        **kwargs (Dataset): datasets, zipped into dicts.
    """

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError(
                "Supported either ``tuple``- (via ``args``) or"
                "``dict``- (via ``kwargs``) like input/output, but both types are given."
            )
        datasets = args or tuple(kwargs.values())
        if not datasets:
            raise ValueError("At least one dataset should be passed")
        self._length = len(datasets[0])
        if any(len(d) != self._length for d in datasets):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """The samples of several map-style datasets one after the other.

    Args:
        datasets (Iterable[Dataset]): the datasets.
    """

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        elif idx >= len(self):
            raise IndexError(f"index {idx} is out of range for ConcatDataset of length {len(self)}")
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """The samples of several iterable datasets one stream after the other.

    Args:
        datasets (Iterable[Dataset]): the datasets.
    """

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``.

    Args:
        dataset (Dataset): the dataset.
        indices (Sequence[int]): the indices of the samples.
    """

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        # Lets the DataLoader fetch a whole batch at once when the wrapped dataset can.
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Splits ``dataset`` into non-overlapping random :class:`Subset` s.

    ``lengths`` are sizes summing to ``len(dataset)``, or fractions summing to
    1: each split gets ``floor(len(dataset) * fraction)`` items and the
    remainder is dealt out one item at a time, round-robin from the first
    split. ``generator`` is a :class:`rumus.Generator`; ``None`` draws from the
    global generator (seeded by :func:`rumus.manual_seed`).

    Args:
        dataset (Dataset): the dataset.
        lengths (Sequence[int or float]): the lengths of the splits, or fractions summing to 1.
        generator (Generator, optional): the random generator.

    Returns:
        list[Subset]: the splits.
    """
    lengths = list(lengths)
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(int(math.floor(n * frac)))
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(
                    f"Length of split at index {i} is 0. This might result in an empty dataset."
                )
        lengths = sizes
    if any(not isinstance(size, int) or size < 0 for size in lengths):
        raise ValueError(
            "random_split: lengths must be non-negative ints or fractions summing to 1, got "
            f"{lengths}"
        )
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = _rumus.randperm(n, generator=generator).tolist()
    ends = list(accumulate(lengths))
    return [Subset(dataset, perm[end - size : end]) for end, size in zip(ends, lengths)]
