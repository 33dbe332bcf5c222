"""The op registry's entries for torch's diagonal, gathering, splitting, rotating,
index-building and statistics compositions (python/rumus/_shapeops.py), checked against
NumPy (np.diag, np.take, np.take_along_axis, np.isin, np.array_split, np.rot90...)."""

import numpy as np
import rumus
from op_db import ALL, OpInfo, Row, Sample, U, to_bool


def _small_ints(*shape):
    """Integers in [-3, 3]: equal values are likely (isin)."""
    return lambda rng: rng.integers(-3, 4, shape).astype(np.float64)


def _diag_embed_ref(x, offset=0, dim1=-2, dim2=-1):
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n), x.dtype)
    i = np.arange(x.shape[-1])
    r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
    out[..., r, c] = x
    return np.moveaxis(out, (-2, -1), (dim1, dim2))


def _block_diag_ref(*xs):
    xs = [x.reshape(1, -1) if x.ndim < 2 else x for x in xs]
    out = np.zeros((sum(x.shape[0] for x in xs), sum(x.shape[1] for x in xs)), xs[0].dtype)
    r = c = 0
    for x in xs:
        out[r : r + x.shape[0], c : c + x.shape[1]] = x
        r, c = r + x.shape[0], c + x.shape[1]
    return out


def _take_along_ref(x, idx, dim=None):
    if dim is None:
        return np.take_along_axis(x.reshape(-1), idx.reshape(-1), 0)
    return np.take_along_axis(x, idx, dim)


SHAPEOPS = [
    OpInfo(
        "diag",
        ["rumus.diag", "Tensor.diag"],
        lambda x, diagonal=0: np.diag(x, diagonal).copy(),
        lambda m: [
            Sample(m(3)),
            Sample(m(3), 1),
            Sample(m(2), diagonal=-2),
            Sample(m(3, 4), -1),
            Sample(m(3, 4, layout="transposed"), 2),
            Sample(m(0)),
        ],
        dtypes=ALL,
        mismatch=False,
        grads=[
            Row("diag_1d", lambda x: rumus.diag(x, 1), [U(3)]),
            Row("diag_2d", lambda x: rumus.diag(x, -1), [U(3, 4)]),
        ],
    ),
    OpInfo(
        "diag_embed",
        ["rumus.diag_embed", "Tensor.diag_embed"],
        _diag_embed_ref,
        lambda m: [
            Sample(m(2, 3)),
            Sample(m(3), offset=1),
            Sample(m(2, 3), -1, 0, 2),
            Sample(m(3, 2, layout="transposed"), 2, dim1=-1, dim2=0),
        ],
        dtypes=ALL,
        mismatch=False,
        grads=[Row("diag_embed", lambda x: rumus.diag_embed(x, 1, 0, 2), [U(2, 3)])],
    ),
    OpInfo(
        "block_diag",
        ["rumus.block_diag"],
        _block_diag_ref,
        lambda m: [
            Sample(m(2, 2), m(3), m()),
            Sample(m(1, 3), m(2, 1, layout="transposed")),
            Sample(m(0, 2), m(2, 0)),
        ],
        dtypes=ALL,
        mismatch=False,
        grads=[Row("block_diag", lambda a, b: rumus.block_diag(a, b), [U(2, 3), U(2)])],
    ),
    OpInfo(
        "take",
        ["rumus.take", "Tensor.take"],
        lambda x, idx: np.take(x, idx),
        lambda m: [
            Sample(m(3, 4), m.idx([[0, -1], [5, 11]])),
            Sample(m(3, 4, layout="transposed"), m.idx([2, 7])),
            Sample(m(), m.idx([0, 0])),
            Sample(m(3), m.idx(np.zeros(0, np.int64))),
        ],
        dtypes=ALL,
        mismatch=False,
        grads=[Row("take", lambda x: rumus.take(x, rumus.tensor([[0, 5], [5, 1]])), [U(2, 3)])],
    ),
    OpInfo(
        "take_along_dim",
        ["rumus.take_along_dim", "Tensor.take_along_dim"],
        _take_along_ref,
        lambda m: [
            Sample(m(3, 4), m.idx([[0], [3], [1]]), 1),
            Sample(m(3, 4), m.idx([[2, 0, 1, 1]]), dim=0),
            Sample(m(3, 4, layout="transposed"), m.idx([1, 11])),
            Sample(m(2, 1), m.idx([[0, 1, 1]]), -2),
        ],
        dtypes=ALL,
        mismatch=False,
        grads=[
            Row(
                "take_along_dim",
                lambda x: rumus.take_along_dim(x, rumus.tensor([[2, 0], [1, 1]]), 1),
                [U(2, 3)],
            )
        ],
    ),
    OpInfo(
        "isin",
        ["rumus.isin"],
        lambda e, t, assume_unique=False, invert=False: np.isin(e, t, invert=invert),
        lambda m: [
            Sample(m(3, 4), m(5)),
            Sample(m(4), m(2, 2), invert=True),
            Sample(m(3), m(0)),
            Sample(m(), m(3), assume_unique=True),
            Sample(m(2, 3, layout="transposed"), m(4)),
        ],
        dtypes=ALL,
        out=to_bool,
        domain=_small_ints,
        mismatch=False,
        grad=False,
    ),
    OpInfo(
        "tensor_split",
        [("tensor_split[1]", lambda x, s, dim=0: rumus.tensor_split(x, s, dim)[1])],
        lambda x, s, dim=0: np.array_split(x, s, axis=dim)[1],
        lambda m: [
            Sample(m(7), 3),
            Sample(m(2, 5), 4, 1),
            Sample(m(6, 2, layout="transposed"), [1, 4]),
            Sample(m(5), [-1, 10]),
            Sample(m(2, 4), (0, 3), -1),
        ],
        dtypes=ALL,
        mismatch=False,
        torch_ref=lambda torch, x, s, dim=0: torch.tensor_split(x, s, dim)[1],
        covers=["rumus.tensor_split", "Tensor.tensor_split"],
        grads=[Row("tensor_split", lambda x: x.tensor_split([1, 3], 1), [U(2, 5)])],
    ),
    OpInfo(
        "rot90",
        ["rumus.rot90", "Tensor.rot90"],
        lambda x, k=1, dims=(0, 1): np.rot90(x, k, dims).copy(),
        lambda m: [
            Sample(m(2, 3)),
            Sample(m(2, 3, 2), 2, [1, 2]),
            Sample(m(2, 3), -1),
            Sample(m(2, 3, layout="transposed"), 3, (1, 0)),
            Sample(m(3, 2), k=4),
        ],
        dtypes=ALL,
        mismatch=False,
        grads=[Row("rot90", lambda x: rumus.rot90(x, 1, (1, 0)), [U(2, 3)])],
    ),
]
