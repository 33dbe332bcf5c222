"""torch's shape and statistics compositions (python/rumus/_shapeops.py): what the registry
(tests/op_db_shapeops.py) cannot express: tuple results, index dtypes, scalar arguments and
the errors, against NumPy and against PyTorch when it is importable."""

import numpy as np
import pytest
import rumus


def _np(t):
    return np.asarray(t.tolist())


@pytest.mark.parametrize(
    "shape,split,dim",
    [((7,), 3, 0), ((2, 5), 4, 1), ((6, 2), [1, 4], 0), ((5,), [-1, 10], 0), ((3,), 5, 0)],
)
def test_tensor_split_parts(shape, split, dim):
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    got = rumus.tensor_split(rumus.tensor(x), split, dim)
    exp = np.array_split(x, split, axis=dim)
    assert isinstance(got, tuple) and len(got) == len(exp)
    for g, e in zip(got, exp):
        assert tuple(g.shape) == e.shape
        np.testing.assert_array_equal(_np(g).reshape(e.shape), e)


def test_tensor_split_tensor_argument():
    x = rumus.arange(7)
    assert [len(p) for p in x.tensor_split(rumus.tensor(3))] == [3, 2, 2]
    assert [len(p) for p in x.tensor_split(rumus.tensor([2, 5]))] == [2, 3, 2]


def test_isin_scalars_and_dtypes():
    x = rumus.tensor([1.0, 2.0, 3.0])
    assert rumus.isin(3, x).dim() == 0 and bool(rumus.isin(3, x))
    assert rumus.isin(x, 2).tolist() == [False, True, False]
    assert rumus.isin(rumus.tensor([1, 5]), x).tolist() == [True, False]
    assert rumus.isin(rumus.tensor([float("nan")]), rumus.tensor([float("nan")])).tolist() == [
        False
    ]


def test_block_diag_promotes():
    out = rumus.block_diag(rumus.tensor(1), rumus.tensor([2, 2], dtype=rumus.int32) * 2.0)
    assert out.dtype == rumus.float32 and tuple(out.shape) == (2, 3)
    assert tuple(rumus.block_diag().shape) == (1, 0)


BAD = [
    ("diag 3-D", lambda: rumus.diag(rumus.ones(2, 2, 2)), RuntimeError),
    ("diag_embed same dims", lambda: rumus.diag_embed(rumus.ones(3), 0, 0, 0), RuntimeError),
    ("diag_embed dim range", lambda: rumus.diag_embed(rumus.ones(3), 0, 0, 2), IndexError),
    ("block_diag 3-D", lambda: rumus.block_diag(rumus.ones(2, 2, 2)), RuntimeError),
    (
        "take int32 index",
        lambda: rumus.take(rumus.ones(3), rumus.tensor([0], dtype=rumus.int32)),
        RuntimeError,
    ),
    ("take out of range", lambda: rumus.take(rumus.ones(3), rumus.tensor([3])), IndexError),
    ("take string", lambda: rumus.take("abc", rumus.tensor([0])), TypeError),
    (
        "take_along_dim float index",
        lambda: rumus.take_along_dim(rumus.ones(3), rumus.tensor([0.0])),
        RuntimeError,
    ),
    (
        "take_along_dim ndim",
        lambda: rumus.take_along_dim(rumus.ones(3, 2), rumus.tensor([0]), 0),
        RuntimeError,
    ),
    ("isin two numbers", lambda: rumus.isin(1, 2), TypeError),
    ("tensor_split 0 sections", lambda: rumus.tensor_split(rumus.ones(3), 0), RuntimeError),
    ("tensor_split 0-d", lambda: rumus.tensor_split(rumus.tensor(1.0), 2), RuntimeError),
    (
        "tensor_split float tensor",
        lambda: rumus.tensor_split(rumus.ones(3), rumus.tensor(2.0)),
        RuntimeError,
    ),
    ("rot90 1-D", lambda: rumus.rot90(rumus.ones(2)), RuntimeError),
    ("rot90 same dims", lambda: rumus.rot90(rumus.ones(2, 2), 1, (0, 0)), RuntimeError),
    ("rot90 three dims", lambda: rumus.rot90(rumus.ones(2, 2, 2), 1, (0, 1, 2)), RuntimeError),
]


@pytest.mark.parametrize("what,fn,err", BAD, ids=[b[0] for b in BAD])
def test_bad_input(what, fn, err):
    with pytest.raises(err):
        fn()


def test_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4))
    r, t = rumus.tensor(x), torch.tensor(x)
    for got, exp in [
        (rumus.diag(r, 1), torch.diag(t, 1)),
        (rumus.diag(r[0], -1), torch.diag(t[0], -1)),
        (r.diag_embed(2, 0, 2), t.diag_embed(2, 0, 2)),
        (rumus.block_diag(r, r[0], r[0, 0]), torch.block_diag(t, t[0], t[0, 0])),
        (r.take(rumus.tensor([[0, -1]])), t.take(torch.tensor([[0, -1]]))),
        (
            r.take_along_dim(rumus.tensor([[1], [0], [3]]), 1),
            t.take_along_dim(torch.tensor([[1], [0], [3]]), 1),
        ),
        (r.take_along_dim(rumus.tensor([5, 1])), t.take_along_dim(torch.tensor([5, 1]))),
        (r.rot90(3, (1, 0)), t.rot90(3, (1, 0))),
        (
            rumus.isin(r.round(), r[0].round(), invert=True),
            torch.isin(t.round(), t[0].round(), invert=True),
        ),
    ]:
        np.testing.assert_allclose(_np(got), exp.numpy())
    for got, exp in zip(r.tensor_split([1, -1], 1), t.tensor_split([1, -1], 1)):
        np.testing.assert_allclose(_np(got).reshape(exp.shape), exp.numpy())
