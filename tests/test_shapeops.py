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


@pytest.mark.parametrize("fn", [rumus.tril_indices, rumus.triu_indices])
def test_tri_indices_dtype_device(fn):
    out = fn(3, 4, 1, dtype=rumus.int32, device="cpu")
    assert out.dtype == rumus.int32 and out.device.type == "cpu"
    assert fn(3, 4).dtype == rumus.int64


def test_cov_single_variable_is_0d():
    x = rumus.tensor([1.0, 2.0, 4.0])
    assert rumus.cov(x).dim() == 0
    np.testing.assert_allclose(float(rumus.cov(x)), np.cov([1.0, 2.0, 4.0]), rtol=1e-6)
    assert float(rumus.corrcoef(x)) == 1.0
    assert rumus.cov(rumus.tensor([[1, 2, 4]])).dtype == rumus.float32


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
    ("tril_indices negative", lambda: rumus.tril_indices(-1, 2), RuntimeError),
    (
        "triu_indices float",
        lambda: rumus.triu_indices(2, 2, dtype=rumus.float32),
        NotImplementedError,
    ),
    ("cartesian_prod 2-D", lambda: rumus.cartesian_prod(rumus.ones(2, 2)), RuntimeError),
    ("combinations 2-D", lambda: rumus.combinations(rumus.ones(2, 2)), RuntimeError),
    ("combinations r<0", lambda: rumus.combinations(rumus.ones(2), -1), RuntimeError),
    ("vander 2-D", lambda: rumus.vander(rumus.ones(2, 2)), RuntimeError),
    ("vander N<0", lambda: rumus.vander(rumus.ones(2), -1), RuntimeError),
    ("trapezoid x length", lambda: rumus.trapezoid(rumus.ones(3), rumus.ones(2)), RuntimeError),
    ("trapezoid x and dx", lambda: rumus.trapezoid(rumus.ones(3), rumus.ones(3), dx=2), TypeError),
    (
        "trapezoid bool",
        lambda: rumus.trapezoid(rumus.ones(3, dtype=rumus.bool)),
        NotImplementedError,
    ),
    ("cov 3-D", lambda: rumus.cov(rumus.ones(2, 2, 2)), RuntimeError),
    ("cov bool", lambda: rumus.cov(rumus.ones(2, 2, dtype=rumus.bool)), NotImplementedError),
    ("cov float fweights", lambda: rumus.cov(rumus.ones(3), fweights=rumus.ones(3)), RuntimeError),
    (
        "cov int aweights",
        lambda: rumus.cov(rumus.ones(3), aweights=rumus.tensor([1, 1, 1])),
        RuntimeError,
    ),
    (
        "cov negative fweights",
        lambda: rumus.cov(rumus.ones(3), fweights=rumus.tensor([1, -1, 1])),
        RuntimeError,
    ),
    (
        "cov fweights length",
        lambda: rumus.cov(rumus.ones(3), fweights=rumus.tensor([1, 1])),
        RuntimeError,
    ),
    ("quantile int", lambda: rumus.quantile(rumus.tensor([1, 2]), 0.5), RuntimeError),
    ("quantile q range", lambda: rumus.quantile(rumus.ones(3), 1.5), RuntimeError),
    (
        "quantile q dtype",
        lambda: rumus.quantile(rumus.ones(3), rumus.tensor([0.5], dtype=rumus.float64)),
        RuntimeError,
    ),
    ("quantile q 2-D", lambda: rumus.quantile(rumus.ones(3), rumus.ones(1, 1) / 2), RuntimeError),
    ("quantile empty", lambda: rumus.quantile(rumus.ones(0), 0.5), RuntimeError),
    (
        "quantile interpolation",
        lambda: rumus.quantile(rumus.ones(3), 0.5, interpolation="cubic"),
        ValueError,
    ),
    ("hann_window negative", lambda: rumus.hann_window(-1), RuntimeError),
    ("kaiser_window int dtype", lambda: rumus.kaiser_window(3, dtype=rumus.int64), RuntimeError),
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
    w, tw = rumus.tensor([1, 3, 2, 1]), torch.tensor([1, 3, 2, 1])
    aw = rumus.tensor([0.5, 1.0, 2.0, 1.5], dtype=rumus.float64)
    taw = torch.tensor([0.5, 1.0, 2.0, 1.5], dtype=torch.float64)
    for got, exp in [
        (rumus.tril_indices(4, 3, -1), torch.tril_indices(4, 3, -1)),
        (rumus.triu_indices(3, 5, 2), torch.triu_indices(3, 5, 2)),
        (rumus.cartesian_prod(r[0], r[1, :2]), torch.cartesian_prod(t[0], t[1, :2])),
        (rumus.combinations(r[0], 3), torch.combinations(t[0], 3)),
        (rumus.combinations(r[0], 2, True), torch.combinations(t[0], 2, True)),
        (rumus.vander(r[0], 3), torch.vander(t[0], 3)),
        (rumus.trapezoid(r, r[0]), torch.trapezoid(t, t[0])),
        (
            rumus.cumulative_trapezoid(r, dx=0.5, dim=0),
            torch.cumulative_trapezoid(t, dx=0.5, dim=0),
        ),
        (
            r.cov(correction=2, fweights=w, aweights=aw),
            t.cov(correction=2, fweights=tw, aweights=taw),
        ),
        (r.corrcoef(), t.corrcoef()),
    ]:
        np.testing.assert_allclose(_np(got), exp.numpy(), rtol=1e-10, atol=1e-12)
    for got, exp in zip(r.tensor_split([1, -1], 1), t.tensor_split([1, -1], 1)):
        np.testing.assert_allclose(_np(got).reshape(exp.shape), exp.numpy())


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_against_torch(name, interpolation):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((3, 5))
    x[1, 2] = x[2, :] = np.nan
    for q in (0.35, [0.0, 0.5, 0.9]):
        rq = rumus.tensor(q, dtype=rumus.float64) if isinstance(q, list) else q
        tq = torch.tensor(q, dtype=torch.float64) if isinstance(q, list) else q
        for dim, keepdim in [(None, False), (None, True), (1, False), (0, True)]:
            got = getattr(rumus, name)(
                rumus.tensor(x), rq, dim, keepdim, interpolation=interpolation
            )
            exp = getattr(torch, name)(
                torch.tensor(x), tq, dim, keepdim, interpolation=interpolation
            )
            assert tuple(got.shape) == tuple(exp.shape)
            np.testing.assert_allclose(_np(got).reshape(exp.shape), exp.numpy())


WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
def test_window_options(name):
    w = getattr(rumus, name)(4, requires_grad=True)
    assert w.requires_grad and w.dtype == rumus.float32 and w.is_leaf
    assert getattr(rumus, name)(4, False, dtype=rumus.float64).dtype == rumus.float64


@pytest.mark.parametrize("name", WINDOWS)
def test_window_against_torch(name):
    torch = pytest.importorskip("torch")
    for n in (0, 1, 2, 5, 8):
        for periodic in (True, False):
            got = getattr(rumus, name)(n, periodic, dtype=rumus.float64)
            exp = getattr(torch, name)(n, periodic, dtype=torch.float64)
            np.testing.assert_allclose(_np(got).reshape(exp.shape), exp.numpy(), atol=1e-12)
