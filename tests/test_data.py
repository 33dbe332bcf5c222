"""rumus.utils.data: datasets, random_split, samplers, collation and the
DataLoader (batching, shuffling, worker threads and processes, iterable
datasets, errors, shutdown)."""

import collections
import gc
import multiprocessing
import os
import random
import threading
import time

import numpy as np
import pytest
import rumus
from conftest import assert_close, to_np
from rumus.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)


def gen(seed):
    return rumus.Generator().manual_seed(seed)


def np_batches(batches):
    """Nested structure of numpy arrays (tensors converted) for equality checks."""
    if isinstance(batches, rumus.Tensor):
        return to_np(batches)
    if isinstance(batches, dict):
        return {k: np_batches(v) for k, v in batches.items()}
    if isinstance(batches, (list, tuple)):
        return [np_batches(b) for b in batches]
    return batches


def assert_same(a, b):
    a, b = np_batches(a), np_batches(b)
    assert type(a) is type(b)
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    else:
        assert a == b


def worker_threads():
    return [t for t in threading.enumerate() if t.name.startswith("rumus DataLoader worker")]


# Module-level datasets: worker processes started with 'spawn' import them from here.


class Squares(Dataset):
    """Sample i: {'x': float32 [i, i*i], 'y': int i, 'name': 'si'}."""

    def __init__(self, n=23, delay=0.0):
        self.n = n
        self.delay = delay

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.delay:
            # later samples come back sooner, so workers finish out of order
            time.sleep(self.delay * ((self.n - i) % 4))
        return {"x": np.array([i, i * i], dtype=np.float32), "y": i, "name": f"s{i}"}


class Failing(Dataset):
    def __init__(self, bad=7, exc=ValueError):
        self.bad = bad
        self.exc = exc

    def __len__(self):
        return 12

    def __getitem__(self, i):
        if i == self.bad:
            raise self.exc(f"sample {i} is broken")
        return i


class Stream(IterableDataset):
    """range(start, end), split between workers when ``shard``."""

    def __init__(self, start=0, end=20, shard=True):
        self.start, self.end, self.shard = start, end, shard

    def __len__(self):
        return self.end - self.start

    def __iter__(self):
        info = get_worker_info()
        lo, hi = self.start, self.end
        if self.shard and info is not None:
            per = -(-(hi - lo) // info.num_workers)
            lo = lo + info.id * per
            hi = min(hi, lo + per)
        return iter(range(lo, hi))


class WhoAmI(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return np.array([i, info.id, info.num_workers, os.getpid()])


class DiesAt(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        if i == 5:
            os._exit(3)
        return i


class Noise(Dataset):
    """Draws from rumus's, Python's and NumPy's global generators (reseeded in worker processes)."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return np.array([rumus.rand(1).item(), random.random(), np.random.rand()])


class NoLen(IterableDataset):
    def __iter__(self):
        return iter(range(3))


class Sleepy(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(0.6 if i == 1 else 0.0)
        return i


# --------------------------------------------------------------------------
# datasets and random_split
# --------------------------------------------------------------------------


def test_tensor_dataset():
    x = rumus.tensor(np.arange(12.0).reshape(6, 2))
    y = rumus.arange(6)
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    a, b = ds[4]
    assert_close(a, np.array([8.0, 9.0]))
    assert b.item() == 4
    with pytest.raises(ValueError, match="Size mismatch between tensors"):
        TensorDataset(x, rumus.arange(5))
    with pytest.raises(TypeError, match="expected Tensors"):
        TensorDataset(x, [1, 2])


def test_concat_dataset_and_add():
    a, b, c = Squares(3), Squares(0), Squares(4)
    ds = a + b + c
    assert isinstance(ds, ConcatDataset) and len(ds) == 7
    ds = ConcatDataset([a, b, c])
    assert ds.cumulative_sizes == [3, 3, 7]
    assert [ds[i]["y"] for i in range(7)] == [0, 1, 2, 0, 1, 2, 3]
    assert ds[-1]["y"] == 3 and ds[-7]["y"] == 0
    with pytest.raises(ValueError, match="absolute value of index"):
        ds[-8]
    with pytest.raises(IndexError, match="out of range"):
        ds[7]
    with pytest.raises(ValueError, match="should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="does not support IterableDataset"):
        ConcatDataset([a, Stream()])


def test_chain_subset_stack_datasets():
    chained = Stream(0, 3) + Stream(10, 12)
    assert isinstance(chained, ChainDataset)
    assert list(chained) == [0, 1, 2, 10, 11] and len(chained) == 5
    sub = Subset(Squares(10), [9, 2, 5])
    assert len(sub) == 3 and [sub[i]["y"] for i in range(3)] == [9, 2, 5]
    assert [s["y"] for s in sub.__getitems__([2, 0])] == [5, 9]
    st = StackDataset(Squares(4), [None] * 4)
    assert st[2][0]["y"] == 2 and st[2][1] is None and len(st) == 4
    kw = StackDataset(a=[1, 2], b=["x", "y"])
    assert kw[1] == {"a": 2, "b": "y"}
    with pytest.raises(ValueError, match="Size mismatch"):
        StackDataset([1, 2], [1])
    with pytest.raises(NotImplementedError):
        Dataset()[0]


def test_random_split_int_lengths():
    parts = random_split(range(30), [10, 15, 5], generator=gen(0))
    assert [len(p) for p in parts] == [10, 15, 5]
    items = [p[i] for p in parts for i in range(len(p))]
    assert sorted(items) == list(range(30))
    again = random_split(range(30), [10, 15, 5], generator=gen(0))
    assert [p.indices for p in again] == [p.indices for p in parts]
    assert random_split(range(30), [10, 15, 5], generator=gen(1))[0].indices != parts[0].indices


def test_random_split_fractions_remainder_rule():
    # floor(10 * f) = 3, 3, 3 -> the one left over goes to the first split
    assert [len(p) for p in random_split(range(10), [0.33, 0.33, 0.34], generator=gen(0))] == [
        4,
        3,
        3,
    ]
    # 11 * [0.25]*4 -> 2 each, 3 left over -> the first three get one more
    assert [len(p) for p in random_split(range(11), [0.25] * 4, generator=gen(0))] == [3, 3, 3, 2]
    with pytest.warns(UserWarning, match="Length of split at index") as record:
        parts = random_split(range(2), [0.9, 0.05, 0.05], generator=gen(0))
    assert [str(w.message)[:26] for w in record] == [
        "Length of split at index 1",
        "Length of split at index 2",
    ]
    assert [len(p) for p in parts] == [2, 0, 0]


def test_random_split_global_seed_and_errors():
    rumus.manual_seed(5)
    a = random_split(range(20), [0.5, 0.5])
    rumus.manual_seed(5)
    b = random_split(range(20), [0.5, 0.5])
    assert a[0].indices == b[0].indices and sorted(a[0].indices + a[1].indices) == list(range(20))
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(range(10), [1.5, -0.5])


# --------------------------------------------------------------------------
# samplers
# --------------------------------------------------------------------------


def test_sequential_and_random_sampler():
    assert list(SequentialSampler(range(5))) == [0, 1, 2, 3, 4]
    s = RandomSampler(range(10), generator=gen(3))
    first, second = list(s), list(s)
    assert (
        sorted(first) == list(range(10)) and sorted(second) == list(range(10)) and first != second
    )
    assert list(RandomSampler(range(10), generator=gen(3))) == first
    rumus.manual_seed(11)
    a = list(RandomSampler(range(10)))
    rumus.manual_seed(11)
    assert list(RandomSampler(range(10))) == a


def test_random_sampler_num_samples_and_replacement():
    s = RandomSampler(range(7), num_samples=17, generator=gen(0))
    idx = list(s)
    assert len(s) == 17 and len(idx) == 17
    # without replacement: whole permutations, then the start of one more
    assert (
        sorted(idx[:7]) == list(range(7))
        and sorted(idx[7:14]) == list(range(7))
        and len(set(idx[14:])) == 3
    )
    s = RandomSampler(range(5), replacement=True, num_samples=5000, generator=gen(1))
    idx = np.array(list(s))
    assert idx.min() == 0 and idx.max() == 4 and len(idx) == 5000
    assert np.all(np.abs(np.bincount(idx) / 5000 - 0.2) < 0.03)
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(
        ValueError, match="num_samples should be a positive integer value, but got num_samples=0"
    ):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler([])


def test_subset_random_sampler():
    idx = [3, 8, 20, 41]
    a = list(SubsetRandomSampler(idx, generator=gen(2)))
    assert sorted(a) == idx and list(SubsetRandomSampler(idx, generator=gen(2))) == a
    assert len(SubsetRandomSampler(idx)) == 4


def test_weighted_random_sampler_with_replacement():
    w = [1.0, 0.0, 3.0, 4.0]
    s = WeightedRandomSampler(w, 16000, generator=gen(0))
    idx = np.array(list(s))
    assert len(s) == 16000 and len(idx) == 16000
    freq = np.bincount(idx, minlength=4) / 16000
    np.testing.assert_allclose(freq, np.array(w) / 8, atol=0.015)
    assert freq[1] == 0
    assert list(WeightedRandomSampler(rumus.tensor(w), 16000, generator=gen(0))) == idx.tolist()
    again = list(WeightedRandomSampler(w, 200, generator=gen(7)))
    assert again == list(WeightedRandomSampler(w, 200, generator=gen(7)))


def test_weighted_random_sampler_without_replacement():
    w = rumus.tensor([5.0, 1.0, 0.0, 1.0, 1.0])
    s = WeightedRandomSampler(w, 4, replacement=False, generator=gen(0))
    idx = list(s)
    assert sorted(idx) == [0, 1, 3, 4]
    # the heavy item comes first far more often than uniformly (5/8 of the time)
    g = gen(1)
    firsts = [
        list(WeightedRandomSampler(w, 2, replacement=False, generator=g))[0] for _ in range(800)
    ]
    assert abs(firsts.count(0) / 800 - 5 / 8) < 0.06
    with pytest.raises(RuntimeError, match="cannot draw 5 samples without replacement from 4"):
        WeightedRandomSampler(w, 5, replacement=False)


def test_weighted_random_sampler_errors():
    with pytest.raises(
        ValueError, match="weights should be a 1d sequence but given weights have shape"
    ):
        WeightedRandomSampler([[1.0, 2.0]], 2)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        WeightedRandomSampler([1.0], 1, replacement="yes")
    with pytest.raises(RuntimeError, match="non-negative"):
        WeightedRandomSampler([1.0, -1.0], 1)


def test_batch_sampler():
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    assert len(BatchSampler(range(6), 3, False)) == 2
    with pytest.raises(
        ValueError, match="batch_size should be a positive integer value, but got batch_size=0"
    ):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 2, 0)


# --------------------------------------------------------------------------
# collation
# --------------------------------------------------------------------------


def test_default_collate_numbers_and_arrays():
    assert_close(default_collate([1.5, 2.0]), np.array([1.5, 2.0]))  # Python float -> float64
    assert_close(default_collate([1, 2]), np.array([1, 2], dtype=np.int64))
    assert_close(default_collate([True, False]), np.array([True, False]))
    assert_close(
        default_collate([np.float32(1), np.float32(2)]), np.array([1, 2], dtype=np.float32)
    )
    assert_close(default_collate([np.int32(3), np.int32(4)]), np.array([3, 4], dtype=np.int32))
    assert_close(default_collate([np.array(1.0), np.array(2.0)]), np.array([1.0, 2.0]))
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    assert_close(default_collate([a, a + 10]), np.stack([a, a + 10]))
    t = [rumus.tensor(np.full((2, 2), i, dtype=np.float32)) for i in range(3)]
    assert_close(
        default_collate(t), np.stack([np.full((2, 2), i, dtype=np.float32) for i in range(3)])
    )
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"a", b"b"]) == [b"a", b"b"]


Point = collections.namedtuple("Point", "x label")


def test_default_collate_nested():
    batch = [
        {"a": (1, "p", [0.5, np.float32(2)]), "b": Point(np.array([1, 2]), "q")},
        {"a": (2, "r", [1.5, np.float32(3)]), "b": Point(np.array([3, 4]), "s")},
    ]
    out = default_collate(batch)
    assert set(out) == {"a", "b"}
    a0, a1, a2 = out["a"]  # tuples become lists
    assert isinstance(out["a"], list)
    assert_close(a0, np.array([1, 2], dtype=np.int64))
    assert a1 == ("p", "r")
    assert_close(a2[0], np.array([0.5, 1.5]))
    assert_close(a2[1], np.array([2, 3], dtype=np.float32))
    assert isinstance(out["b"], Point)
    assert_close(out["b"].x, np.array([[1, 2], [3, 4]]))
    assert out["b"].label == ("q", "s")


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(
        TypeError, match="batch must contain tensors, numpy arrays, numbers, dicts or lists; found"
    ):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(RuntimeError):
        default_collate([rumus.zeros(2), rumus.zeros(3)])


def test_default_convert():
    out = default_convert(
        {"a": np.array([1.0, 2.0]), "b": (np.int64(3), "s", 4), "c": [np.array([True])]}
    )
    assert_close(out["a"], np.array([1.0, 2.0]))
    assert isinstance(out["b"], list)
    assert_close(out["b"][0], np.array(3, dtype=np.int64))
    assert out["b"][1:] == ["s", 4]
    assert_close(out["c"][0], np.array([True]))
    p = default_convert(Point(np.array([1, 2]), 3))
    assert isinstance(p, Point) and p.label == 3
    assert default_convert(2.5) == 2.5 and default_convert("x") == "x"
    text = np.array(["a"])
    assert default_convert(text) is text


# --------------------------------------------------------------------------
# DataLoader, single process
# --------------------------------------------------------------------------


def test_loader_batches_and_len():
    ds = Squares(10)
    for drop_last, sizes in [(False, [4, 4, 2]), (True, [4, 4])]:
        loader = DataLoader(ds, batch_size=4, drop_last=drop_last)
        batches = list(loader)
        assert len(loader) == len(sizes) and [len(b["y"]) for b in batches] == sizes
        ys = np.concatenate([to_np(b["y"]) for b in batches])
        assert_close(batches[0]["x"], np.array([[i, i * i] for i in range(4)], dtype=np.float32))
        np.testing.assert_array_equal(ys, np.arange(sum(sizes)))
        assert batches[0]["name"] == ["s0", "s1", "s2", "s3"]
    x = rumus.tensor(np.arange(10.0).reshape(5, 2))
    first = next(iter(DataLoader(TensorDataset(x, rumus.arange(5)), batch_size=2)))
    assert_close(first[0], np.arange(4.0).reshape(2, 2))


def test_loader_without_batching_and_custom_collate():
    loader = DataLoader(Squares(3), batch_size=None)
    items = list(loader)
    assert len(loader) == 3 and len(items) == 3
    assert_close(items[1]["x"], np.array([1, 1], dtype=np.float32))
    assert items[1]["y"] == 1 and items[1]["name"] == "s1"
    loader = DataLoader(Squares(5), batch_size=2, collate_fn=lambda b: [s["y"] for s in b])
    assert list(loader) == [[0, 1], [2, 3], [4]]


def test_loader_with_samplers():
    loader = DataLoader(range(10), batch_size=3, sampler=[9, 8, 1, 0])
    assert [b.tolist() for b in loader] == [[9, 8, 1], [0]]
    loader = DataLoader(range(10), batch_sampler=[[1, 2], [5], [7, 7, 7]])
    assert [b.tolist() for b in loader] == [[1, 2], [5], [7, 7, 7]] and len(loader) == 3
    loader = DataLoader(
        range(10), batch_size=4, sampler=SubsetRandomSampler([0, 2, 4, 6, 8], generator=gen(0))
    )
    got = sorted(sum((b.tolist() for b in loader), []))
    assert got == [0, 2, 4, 6, 8]
    part = random_split(Squares(10), [4, 6], generator=gen(0))[
        0
    ]  # a Subset: fetched with __getitems__
    batch = next(iter(DataLoader(part, batch_size=4)))
    assert batch["y"].tolist() == part.indices


def test_loader_shuffle_determinism():
    def epoch(loader):
        return sum((b.tolist() for b in loader), [])

    a = DataLoader(range(30), batch_size=4, shuffle=True, generator=gen(0))
    b = DataLoader(range(30), batch_size=4, shuffle=True, generator=gen(0))
    e1, e2 = epoch(a), epoch(a)
    assert sorted(e1) == list(range(30)) and sorted(e2) == list(range(30)) and e1 != e2
    assert epoch(b) == e1 and epoch(b) == e2
    assert epoch(DataLoader(range(30), batch_size=4, shuffle=True, generator=gen(1))) != e1
    rumus.manual_seed(3)
    g1 = epoch(DataLoader(range(30), batch_size=4, shuffle=True))
    rumus.manual_seed(3)
    assert epoch(DataLoader(range(30), batch_size=4, shuffle=True)) == g1
    assert epoch(DataLoader(range(30), batch_size=4)) == list(range(30))


def test_loader_argument_checks():
    ds = range(10)
    cases = [
        (dict(num_workers=-1), "num_workers option should be non-negative"),
        (dict(timeout=-1), "timeout option should be non-negative"),
        (
            dict(prefetch_factor=2),
            "prefetch_factor option could only be specified in multiprocessing",
        ),
        (
            dict(num_workers=1, prefetch_factor=0),
            "prefetch_factor option should be a positive integer",
        ),
        (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
        (dict(sampler=[0, 1], shuffle=True), "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
        (dict(batch_sampler=[[0]], shuffle=True), "batch_sampler option is mutually exclusive"),
        (dict(batch_sampler=[[0]], drop_last=True), "batch_sampler option is mutually exclusive"),
        (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching"),
        (dict(batch_size=0), "batch_size should be a positive integer value"),
        (
            dict(multiprocessing_context="spawn"),
            "multiprocessing_context can only be used with multi-process",
        ),
        (
            dict(num_workers=1, multiprocessing_context="nope"),
            "should specify a valid start method",
        ),
    ]
    for kw, msg in cases:
        with pytest.raises(ValueError, match=msg):
            DataLoader(ds, **kw)
    with pytest.raises(TypeError, match="should be a valid context object"):
        DataLoader(ds, num_workers=1, multiprocessing_context=3)
    for kw, what in [
        (dict(shuffle=True), "shuffle"),
        (dict(sampler=[0]), "sampler"),
        (dict(batch_sampler=[[0]]), "batch_sampler"),
    ]:
        with pytest.raises(
            ValueError, match=f"DataLoader with IterableDataset: expected unspecified {what}"
        ):
            DataLoader(Stream(), **kw)
    loader = DataLoader(ds)
    with pytest.raises(
        ValueError, match="batch_size attribute should not be set after DataLoader is initialized"
    ):
        loader.batch_size = 3
    loader.num_workers = 2  # not frozen, as in PyTorch
    with pytest.warns(UserWarning, match="pin_memory"):
        DataLoader(ds, pin_memory=True)


def test_iterable_dataset_single_process():
    assert [b.tolist() for b in DataLoader(Stream(0, 7), batch_size=3)] == [
        [0, 1, 2],
        [3, 4, 5],
        [6],
    ]
    assert [b.tolist() for b in DataLoader(Stream(0, 7), batch_size=3, drop_last=True)] == [
        [0, 1, 2],
        [3, 4, 5],
    ]
    assert [b for b in DataLoader(Stream(0, 3), batch_size=None)] == [0, 1, 2]
    assert len(DataLoader(Stream(0, 7), batch_size=3)) == 3
    assert len(DataLoader(Stream(0, 7), batch_size=3, drop_last=True)) == 2
    assert [b.tolist() for b in DataLoader(NoLen(), batch_size=2)] == [[0, 1], [2]]
    with pytest.raises(TypeError):
        len(DataLoader(NoLen()))
    assert get_worker_info() is None


# --------------------------------------------------------------------------
# DataLoader with worker threads
# --------------------------------------------------------------------------


@pytest.mark.parametrize("num_workers,prefetch", [(1, 1), (2, 2), (3, 1), (4, 3)])
def test_threads_match_single_process(num_workers, prefetch):
    ds = Squares(23, delay=0.001)
    ref = list(DataLoader(ds, batch_size=3))
    loader = DataLoader(ds, batch_size=3, num_workers=num_workers, prefetch_factor=prefetch)
    assert len(loader) == len(ref)
    assert_same(list(loader), ref)
    shuffled = list(DataLoader(ds, batch_size=4, shuffle=True, generator=gen(5), drop_last=True))
    assert_same(
        list(
            DataLoader(
                ds,
                batch_size=4,
                shuffle=True,
                generator=gen(5),
                drop_last=True,
                num_workers=num_workers,
                prefetch_factor=prefetch,
            )
        ),
        shuffled,
    )
    assert worker_threads() == []


def test_threads_out_of_order_delivery():
    ds = Squares(16, delay=0.002)
    got = list(
        DataLoader(
            ds,
            batch_size=2,
            num_workers=3,
            in_order=False,
            collate_fn=lambda b: [s["y"] for s in b],
        )
    )
    assert sorted(sum(got, [])) == list(range(16))


def test_thread_worker_info_and_init_fn():
    seen = []
    loader = DataLoader(WhoAmI(), batch_size=2, num_workers=2, worker_init_fn=seen.append)
    batches = [to_np(b) for b in loader]
    assert sorted(seen) == [0, 1]
    # batches go to workers round-robin, in order
    assert [b[0, 1] for b in batches] == [0, 1, 0, 1]
    assert all((b[:, 2] == 2).all() and (b[:, 3] == os.getpid()).all() for b in batches)
    info_box = []
    next(
        iter(
            DataLoader(
                range(2), num_workers=1, collate_fn=lambda b: info_box.append(get_worker_info())
            )
        )
    )
    info = info_box[0]
    assert info.id == 0 and info.num_workers == 1 and isinstance(info.seed, int)
    infos = {}
    list(
        DataLoader(
            range(6), num_workers=3, collate_fn=lambda b: infos.setdefault(b[0], get_worker_info())
        )
    )
    assert [infos[i].id for i in range(3)] == [0, 1, 2]
    assert infos[1].seed == infos[0].seed + 1 and infos[2].seed == infos[0].seed + 2
    with pytest.raises(RuntimeError, match="Cannot assign attributes to WorkerInfo"):
        info.id = 3


@pytest.mark.parametrize("exc", [ValueError, KeyError])
def test_thread_worker_exception_is_reraised(exc):
    loader = DataLoader(Failing(7, exc), batch_size=2, num_workers=2)
    it = iter(loader)
    assert [next(it).tolist() for _ in range(3)] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(
        exc, match=r"(?s)Caught \w+Error in DataLoader worker thread 1.*sample 7 is broken"
    ) as ei:
        next(it)
    # as in PyTorch, the iterator goes on after a failed batch
    assert [b.tolist() for b in it] == [[8, 9], [10, 11]]
    del ei, it  # the traceback holds the iterator
    assert worker_threads() == []


def test_worker_init_fn_error_is_reraised():
    def init(wid):
        raise OSError(f"cannot open shard {wid}")

    with pytest.raises(OSError, match="(?s)worker thread 0.*cannot open shard 0"):
        list(DataLoader(range(4), num_workers=2, worker_init_fn=init))


def test_early_exit_stops_thread_workers():
    loader = DataLoader(Squares(200), batch_size=2, num_workers=3, prefetch_factor=4)
    for i, _ in enumerate(loader):
        if i == 2:
            break
    gc.collect()
    assert worker_threads() == []
    it = iter(loader)
    next(it)
    assert len(worker_threads()) == 3
    del it
    assert worker_threads() == []


def test_timeout():
    loader = DataLoader(Sleepy(), num_workers=1, timeout=0.2)
    it = iter(loader)
    assert next(it).tolist() == [0]
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.2 seconds"):
        next(it)
    del it
    assert worker_threads() == []


@pytest.mark.parametrize("num_workers", [1, 2, 3])
def test_iterable_dataset_sharding_with_threads(num_workers):
    got = sum(
        (b.tolist() for b in DataLoader(Stream(0, 20), batch_size=3, num_workers=num_workers)), []
    )
    assert sorted(got) == list(range(20))
    # without sharding every worker yields the whole stream
    dup = sum(
        (
            b.tolist()
            for b in DataLoader(Stream(0, 5, shard=False), batch_size=2, num_workers=num_workers)
        ),
        [],
    )
    assert sorted(dup) == sorted(list(range(5)) * num_workers)
    dropped = list(DataLoader(Stream(0, 20), batch_size=3, num_workers=2, drop_last=True))
    assert all(len(b) == 3 for b in dropped)  # each worker drops its own short last batch
    assert sorted(sum((b.tolist() for b in dropped), [])) == [
        0,
        1,
        2,
        3,
        4,
        5,
        6,
        7,
        8,
        10,
        11,
        12,
        13,
        14,
        15,
        16,
        17,
        18,
    ]
    assert worker_threads() == []


def test_persistent_workers_keep_threads_between_epochs():
    ds = Squares(9)
    loader = DataLoader(
        ds, batch_size=2, num_workers=2, persistent_workers=True, shuffle=True, generator=gen(1)
    )
    # same prefetching, so the same draws from the generator even in a stopped epoch
    ref = DataLoader(ds, batch_size=2, shuffle=True, generator=gen(1), num_workers=2)
    it1 = iter(loader)
    assert_same(list(it1), list(ref))
    threads = worker_threads()
    assert len(threads) == 2
    # a second epoch on the same iterator, stopped early, then a third
    it2 = iter(loader)
    assert it2 is it1
    assert_same(next(it2), next(iter(ref)))
    assert_same(list(iter(loader)), list(ref))
    assert worker_threads() == threads
    it_stream = iter(DataLoader(Stream(0, 6), batch_size=2, num_workers=2, persistent_workers=True))
    del it_stream
    stream = DataLoader(Stream(0, 6), batch_size=2, num_workers=2, persistent_workers=True)
    for _ in range(2):
        assert sorted(sum((b.tolist() for b in stream), [])) == list(range(6))
    del loader, it1, it2, stream
    gc.collect()
    assert worker_threads() == []


# --------------------------------------------------------------------------
# DataLoader with worker processes (few and small: starting processes is slow)
# --------------------------------------------------------------------------


def test_spawn_processes_match_single_process():
    ds = Squares(11)
    loader = DataLoader(
        ds,
        batch_size=3,
        num_workers=2,
        multiprocessing_context="spawn",
        shuffle=True,
        generator=gen(4),
    )
    ref = list(DataLoader(ds, batch_size=3, shuffle=True, generator=gen(4)))
    assert_same(list(loader), ref)
    pairs = DataLoader(
        TensorDataset(rumus.arange(6), rumus.tensor(np.arange(6.0)).to(rumus.float64)),
        batch_size=4,
        num_workers=1,
        multiprocessing_context="spawn",
    )
    (a, b), (c, d) = list(pairs)
    assert_close(a, np.arange(4))
    assert_close(b, np.arange(4.0))
    assert_close(c, np.array([4, 5]))
    assert_close(d, np.array([4.0, 5.0]))


def test_fork_processes_info_sharding_and_errors():
    ctx = multiprocessing.get_context("fork")
    batches = [
        to_np(b)
        for b in DataLoader(WhoAmI(), batch_size=2, num_workers=2, multiprocessing_context=ctx)
    ]
    assert [b[0, 1] for b in batches] == [0, 1, 0, 1]
    pids = {b[0, 3] for b in batches}
    assert len(pids) == 2 and os.getpid() not in pids
    got = sum(
        (
            b.tolist()
            for b in DataLoader(
                Stream(0, 13), batch_size=2, num_workers=3, multiprocessing_context=ctx
            )
        ),
        [],
    )
    assert sorted(got) == list(range(13))
    loader = DataLoader(Failing(3), batch_size=2, num_workers=2, multiprocessing_context=ctx)
    with pytest.raises(
        ValueError, match=r"(?s)Caught ValueError in DataLoader worker process 1.*sample 3"
    ):
        list(loader)
    with pytest.raises(
        RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"
    ):
        list(DataLoader(DiesAt(), batch_size=2, num_workers=2, multiprocessing_context=ctx))
    # a batch that can't be pickled is reported, not lost in the queue
    unpicklable = DataLoader(
        range(2), num_workers=1, multiprocessing_context=ctx, collate_fn=lambda b: threading.Lock()
    )
    with pytest.raises(
        TypeError, match=r"(?s)worker process 0 \(sending its batch to the main process\).*pickle"
    ):
        list(unpicklable)


def test_fork_processes_seed_their_generators():
    def run():
        loader = DataLoader(
            Noise(), batch_size=2, num_workers=2, multiprocessing_context="fork", generator=gen(9)
        )
        return [to_np(b) for b in loader]

    first, again = run(), run()
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    # worker 0 made batch 0, worker 1 batch 1: different seeds, different draws from each generator
    assert np.all(first[0][0] != first[1][0])


def _big_op(q):
    # Elementwise, reduction, GEMM and convolution kernels that use the thread pool in the parent.
    a = (rumus.ones(1024, 1024) * 2).sum().item()
    b = (rumus.ones(512, 512) @ rumus.ones(512, 512)).sum().item()
    c = rumus.nn.functional.conv2d(rumus.ones(64, 8, 16, 16), rumus.ones(16, 8, 3, 3)).sum().item()
    q.put((a, b, c))


def test_forked_child_can_run_a_parallel_kernel():
    (rumus.ones(1024, 1024) * 2).sum()  # the parent's pool is up
    rumus.ones(512, 512) @ rumus.ones(512, 512)
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_big_op, args=(q,), daemon=True)
    p.start()
    try:
        assert q.get(timeout=10) == (2 * 1024 * 1024, 512.0**3, 64 * 16 * 14 * 14 * 72.0)
    finally:
        p.kill()
        p.join()
