"""Samplers: iterables of dataset indices (or of index lists, for BatchSampler)."""

import numpy as np

from ... import _rumus
from ..._rumus import Tensor

__all__ = [
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "BatchSampler",
]

# RandomSampler with replacement draws its indices in chunks of this many.
_CHUNK = 32


def _fresh_generator():
    """A generator seeded from the global one, so that ``rumus.manual_seed`` fixes the order."""
    seed = _rumus.randint(-(2**63), 2**63 - 1, ()).item()
    return _rumus.Generator().manual_seed(seed)


def _check_positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value}")


def _check_bool(name, value, exc=TypeError):
    if not isinstance(value, bool):
        raise exc(f"{name} should be a boolean value, but got {name}={value}")


class Sampler:
    """Base class: subclasses implement ``__iter__`` (and ``__len__`` when they can).

    Args:
        data_source (Sized, optional): accepted for compatibility.
    """

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``.

    Args:
        data_source (Sized): the dataset.
    """

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Random indices into ``data_source``: a permutation (repeated while
    ``num_samples`` exceeds the dataset length) or, with ``replacement=True``,
    ``num_samples`` independent uniform draws.

    ``generator`` is a :class:`rumus.Generator`; without one every ``iter``
    seeds a fresh generator from the global one.

    Args:
        data_source (Sized): the dataset.
        replacement (bool): draw with replacement.
        num_samples (int, optional): the number of indices per epoch.
        generator (Generator, optional): the random generator.
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        _check_bool("replacement", replacement)
        _check_positive_int("num_samples", self.num_samples)

    @property
    def num_samples(self):
        """The number of indices drawn per epoch (the dataset's length unless given)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        g = self.generator if self.generator is not None else _fresh_generator()
        if self.replacement:
            for start in range(0, self.num_samples, _CHUNK):
                count = min(_CHUNK, self.num_samples - start)
                yield from _rumus.randint(0, n, (count,), generator=g).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from _rumus.randperm(n, generator=g).tolist()
        yield from _rumus.randperm(n, generator=g).tolist()[: self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The elements of ``indices`` in a random order (no replacement).

    Args:
        indices (Sequence[int]): the indices to permute.
        generator (Generator, optional): the random generator.
    """

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _rumus.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probability proportional to
    ``weights`` (with or without replacement).

    Args:
        weights (Sequence[float] or Tensor): the (unnormalized) weight of each index.
        num_samples (int): the number of indices per epoch.
        replacement (bool): draw with replacement.
        generator (Generator, optional): the random generator.
    """

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _check_positive_int("num_samples", num_samples)
        _check_bool("replacement", replacement)
        w = np.asarray(
            weights.detach().double().numpy() if isinstance(weights, Tensor) else weights,
            dtype=np.float64,
        )
        if w.ndim != 1:
            raise ValueError(
                f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}"
            )
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise RuntimeError("WeightedRandomSampler: weights must be finite and non-negative")
        if w.sum() <= 0:
            raise RuntimeError("WeightedRandomSampler: the weights must not all be zero")
        if not replacement and num_samples > np.count_nonzero(w):
            raise RuntimeError(
                f"WeightedRandomSampler: cannot draw {num_samples} samples without replacement "
                f"from {np.count_nonzero(w)} non-zero weights"
            )
        self.weights = _rumus.tensor(w, dtype=_rumus.float64)
        self._w = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        u = _rumus.rand(
            self.num_samples if self.replacement else len(self._w),
            generator=self.generator,
            dtype=_rumus.float64,
        ).numpy()
        if self.replacement:
            # Inverse CDF; u < 1 and the last bin with weight > 0 catches rounding at the top.
            cdf = np.cumsum(self._w)
            idx = np.searchsorted(cdf, u * cdf[-1], side="right")
            idx = np.minimum(idx, np.flatnonzero(self._w)[-1])
        else:
            # Exponential race: the k smallest -log(u)/w are a weighted draw without replacement.
            with np.errstate(divide="ignore"):
                keys = -np.log1p(-u) / self._w
            idx = np.argsort(keys, kind="stable")[: self.num_samples]
        return iter(idx.tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``; the last,
    shorter list is dropped when ``drop_last``.

    Args:
        sampler (Sampler or Iterable): yields indices.
        batch_size (int): the size of each batch.
        drop_last (bool): drop the last incomplete batch.
    """

    def __init__(self, sampler, batch_size, drop_last):
        _check_positive_int("batch_size", batch_size)
        _check_bool("drop_last", drop_last, ValueError)
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
