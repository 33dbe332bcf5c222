"""repeat, tile, repeat_interleave and meshgrid beyond their registry rows
(tests/op_db.py): the call forms, views, devices and error messages."""

import numpy as np
import pytest
import rumus
from conftest import to_np


def test_repeat_interleave_of_counts_alone(device):
    r = rumus.tensor([2, 0, 3], device=device)
    out = rumus.repeat_interleave(r)
    assert out.device.type == device and out.dtype == rumus.int64
    assert out.tolist() == [0, 0, 2, 2, 2]
    assert rumus.repeat_interleave(r, output_size=5).tolist() == [0, 0, 2, 2, 2]


def test_repeat_interleave_on_a_device(device):
    x = rumus.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    got = x.repeat_interleave(rumus.tensor([1, 2], device=device), dim=0)
    assert got.device.type == device
    np.testing.assert_array_equal(to_np(got), [[1, 2], [3, 4], [3, 4]])
    np.testing.assert_array_equal(to_np(x.repeat_interleave(2)), [1, 1, 2, 2, 3, 3, 4, 4])


def test_meshgrid_returns_views_and_takes_a_list(device):
    a = rumus.arange(3.0, device=device)
    b = rumus.arange(2.0, device=device)
    xs, ys = rumus.meshgrid([a, b], indexing="xy")
    assert xs.shape == ys.shape == (2, 3)
    assert xs.stride() == (0, 1)  # an expanded view, as in PyTorch
    np.testing.assert_array_equal(to_np(ys), [[0, 0, 0], [1, 1, 1]])
    ii, jj = rumus.meshgrid(a, b)
    assert ii.shape == (3, 2) and to_np(jj).tolist() == [[0, 1]] * 3


def test_repeat_matches_numpy_tile_and_gradient_sums_copies():
    x = rumus.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    y = x.repeat(2, 2)
    np.testing.assert_array_equal(to_np(y), np.tile(to_np(x.detach()), (2, 2)))
    y.sum().backward()
    assert x.grad.tolist() == [[4.0, 4.0, 4.0]]


@pytest.mark.parametrize(
    "call,exc,words",
    [
        (lambda: rumus.ones(2, 3).repeat(2), RuntimeError, "repeat dims"),
        (lambda: rumus.ones(3).repeat_interleave(rumus.tensor([1, 2])), RuntimeError, "same size"),
        (lambda: rumus.ones(3).repeat_interleave("2"), TypeError, "repeats"),
        (lambda: rumus.meshgrid(rumus.ones(2, 2)), RuntimeError, "0D or 1D"),
        (
            lambda: rumus.meshgrid(rumus.ones(2), rumus.ones(2, dtype=rumus.int64)),
            RuntimeError,
            "dtype",
        ),
    ],
)
def test_errors(call, exc, words):
    with pytest.raises(exc, match=words):
        call()
