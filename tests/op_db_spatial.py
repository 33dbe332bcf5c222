"""The op registry's entries for issue 16's spatial ops: conv3d / conv_transpose3d (the
im2col + GEMM path with a depth axis), the 3-D pools and max_unpool1d/2d/3d
(python/rumus/nn/_pooling3d.py), grid_sample and affine_grid (python/rumus/nn/_sample.py).
Semantics the registry cannot express (indices, ties, padding modes, modules) are in
tests/test_conv3d.py, tests/test_pool3d.py and tests/test_sample.py."""

import functools

import numpy as np
import rumus.nn.functional as F
from op_db import (
    DISTINCT,
    I,
    Row,
    Sample,
    U,
    _adaptive_max_ref,
    _avgpool_ref,
    _maxpool_ref,
    _pair,
    _unbatched_pool,
    dom,
    nn_op,
)
from test_conv import conv_ref, conv_transpose_ref
from test_pool import adaptive_ref
from test_sample import affine_grid_ref, grid_sample_ref


def _conv3d_ref(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1):
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    if x.ndim == 4:
        return conv_ref(x[None], w, bias, **kw)[0]
    return conv_ref(x, w, bias, **kw)


def _convt3d_ref(x, w, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    args = (stride, padding, output_padding, groups, dilation)
    if x.ndim == 4:
        return conv_transpose_ref(x[None], w, bias, *args)[0]
    return conv_transpose_ref(x, w, bias, *args)


def _pool3d_samples(kinds, extra=()):
    def gen(m):
        shape = (1, 2, 4, 5, 4)
        out = [Sample(m(*shape, domain=DISTINCT), *a, **k) for a, k in kinds]
        out.append(Sample(m(*shape, domain=DISTINCT, layout="transposed"), *kinds[0][0]))
        out.append(Sample(m(0, *shape[1:], domain=DISTINCT), *kinds[0][0]))
        out.append(Sample(m(*shape[1:], domain=DISTINCT), *kinds[0][0]))
        return out + [e(m) for e in extra]

    return gen


def _unpool_ref(x, idx, kernel_size, stride=None, padding=0, output_size=None):
    nsp = x.ndim - 2
    k = (kernel_size,) * nsp if np.isscalar(kernel_size) else tuple(kernel_size)
    s = k if stride is None else ((stride,) * nsp if np.isscalar(stride) else tuple(stride))
    p = (padding,) * nsp if np.isscalar(padding) else tuple(padding)
    if output_size is not None and len(output_size) == nsp + 2:
        output_size = output_size[2:]
    sp = output_size or [(i - 1) * ss - 2 * pp + kk for i, ss, pp, kk in zip(x.shape[2:], s, p, k)]
    n, c = x.shape[:2]
    out = np.zeros((n, c, int(np.prod(sp))))
    for a in range(n):
        for b in range(c):
            out[a, b, idx[a, b].reshape(-1)] = x[a, b].reshape(-1)
    return out.reshape(n, c, *sp)


_grid = dom(U, lo=-1.2, hi=1.2)  # grid points, some outside [-1, 1]


SPATIAL = [
    nn_op(
        "conv3d",
        _conv3d_ref,
        lambda m: [
            Sample(m(2, 2, 3, 4, 3), m(3, 2, 2, 3, 2), m(3)),
            Sample(
                m(1, 4, 4, 3, 5),
                m(4, 2, 2, 2, 3),
                stride=(2, 1, 2),
                padding=1,
                dilation=(1, 1, 2),
                groups=2,
            ),
            Sample(m(1, 2, 3, 4, 3), m(3, 2, 2, 3, 2), padding="same"),
            Sample(m(2, 3, 4, 3), m(3, 2, 2, 3, 2), None, 1, "valid"),
            Sample(m(0, 2, 3, 4, 3), m(3, 2, 2, 3, 2)),
            Sample(m(2, 1, 3, 4, 3, layout="transposed"), m(2, 1, 2, 2, 2, layout="strided")),
        ],
        grads=[
            Row(
                "F_conv3d",
                lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=1),
                [U(1, 2, 3, 4, 3), U(2, 2, 2, 2, 2), U(2)],
            ),
            Row(
                "F_conv3d_groups_same",
                lambda x, w: F.conv3d(x, w, padding="same", dilation=(1, 2, 1), groups=2),
                [U(1, 2, 3, 4, 3), U(2, 1, 2, 2, 2)],
            ),
        ],
        extra=["rumus.conv3d"],
    ),
    nn_op(
        "conv_transpose3d",
        _convt3d_ref,
        lambda m: [
            Sample(m(1, 2, 2, 3, 2), m(2, 3, 2, 2, 2), m(3)),
            Sample(
                m(1, 4, 2, 2, 3),
                m(4, 1, 2, 3, 2),
                stride=2,
                padding=1,
                output_padding=(1, 0, 1),
                groups=2,
            ),
            Sample(m(2, 2, 2, 2), m(2, 3, 2, 2, 2), dilation=2),
            Sample(m(0, 2, 2, 3, 2), m(2, 3, 2, 2, 2)),
            Sample(m(1, 2, 2, 3, 2, layout="transposed"), m(2, 3, 2, 2, 2)),
        ],
        grads=[
            Row(
                "F_conv_transpose3d",
                lambda x, w, b: F.conv_transpose3d(x, w, b, stride=2, padding=1, output_padding=1),
                [U(1, 2, 2, 3, 2), U(2, 2, 2, 2, 2), U(2)],
            )
        ],
        extra=["rumus.conv_transpose3d"],
    ),
    nn_op(
        "max_pool3d",
        functools.partial(_unbatched_pool(_maxpool_ref), nd=3),
        _pool3d_samples(
            [((2,), {}), ((3, 2, 1, (1, 2, 1), True), {}), ((2, 1), dict(padding=1))],
            [
                lambda m: Sample(m(1, 2, 3, 4, 4, domain=DISTINCT), 2, return_indices=True).expect(
                    _pair
                )
            ],
        ),
        grads=[
            Row("F_max_pool3d", lambda x: F.max_pool3d(x, 2), [DISTINCT(1, 2, 4, 4, 3)]),
            Row(
                "F_max_pool3d_ceil_dilation",
                lambda x: F.max_pool3d(x, 2, 2, 1, (2, 1, 1), True),
                [DISTINCT(1, 1, 5, 4, 3)],
            ),
        ],
    ),
    nn_op(
        "avg_pool3d",
        functools.partial(_unbatched_pool(_avgpool_ref), nd=3),
        _pool3d_samples(
            [
                ((2,), {}),
                ((3, 2, 1, True, False), {}),
                ((2, 1), dict(padding=1, divisor_override=3)),
            ]
        ),
        grads=[
            Row("F_avg_pool3d", lambda x: F.avg_pool3d(x, 2, 1), [U(1, 2, 3, 3, 4)]),
            Row(
                "F_avg_pool3d_ceil_divisor",
                lambda x: F.avg_pool3d(x, 3, 2, 1, True, True, 4),
                [U(1, 1, 4, 5, 3)],
            ),
        ],
    ),
    nn_op(
        "adaptive_avg_pool3d",
        functools.partial(_unbatched_pool(lambda x, s: adaptive_ref(x, s, "avg")), nd=3),
        _pool3d_samples([(((2, 3, 2),), {}), ((1,), {}), (((None, 3, None),), {})]),
        grads=[
            Row(
                "F_adaptive_avg_pool3d",
                lambda x: F.adaptive_avg_pool3d(x, (2, 3, 2)),
                [U(1, 2, 3, 4, 3)],
            )
        ],
    ),
    nn_op(
        "adaptive_max_pool3d",
        functools.partial(_unbatched_pool(_adaptive_max_ref), nd=3),
        _pool3d_samples(
            [(((2, 3, 2),), {}), ((1,), {})],
            [
                lambda m: Sample(m(1, 2, 3, 4, 4, domain=DISTINCT), 2, return_indices=True).expect(
                    _pair
                )
            ],
        ),
        grads=[
            Row(
                "F_adaptive_max_pool3d",
                lambda x: F.adaptive_max_pool3d(x, (2, 3, 2)),
                [DISTINCT(1, 2, 3, 4, 3)],
            )
        ],
    ),
    nn_op(
        "max_unpool1d",
        _unpool_ref,
        lambda m: [
            Sample(m(1, 2, 2), m.idx([[[1, 2], [0, 3]]]), 2),
            Sample(m(1, 1, 2), m.idx([[[0, 4]]]), 3, 2, output_size=[5]),
        ],
        grads=[
            Row("F_max_unpool1d", lambda x, i: F.max_unpool1d(x, i, 2), [U(1, 1, 2), I([[[1, 2]]])])
        ],
    ),
    nn_op(
        "max_unpool2d",
        _unpool_ref,
        lambda m: [
            Sample(m(1, 2, 1, 2), m.idx([[[[5, 2]], [[0, 7]]]]), 2),
            Sample(m(1, 1, 2, 2), m.idx([[[[0, 3], [12, 15]]]]), 2, output_size=(1, 1, 4, 4)),
        ],
        grads=[
            Row(
                "F_max_unpool2d",
                lambda x, i: F.max_unpool2d(x, i, 2),
                [U(1, 1, 1, 2), I([[[[5, 2]]]])],
            )
        ],
    ),
    nn_op(
        "max_unpool3d",
        _unpool_ref,
        lambda m: [
            Sample(m(1, 2, 1, 1, 2), m.idx([[[[[5, 14]]], [[[0, 3]]]]]), 2),
        ],
        grads=[
            Row(
                "F_max_unpool3d",
                lambda x, i: F.max_unpool3d(x, i, 2),
                [U(1, 1, 1, 1, 2), I([[[[[5, 14]]]]])],
            )
        ],
    ),
    nn_op(
        "grid_sample",
        grid_sample_ref,
        lambda m: [
            Sample(m(1, 2, 3, 4), m(1, 2, 3, 2, domain=_grid)),
            Sample(m(2, 1, 3, 3), m(2, 2, 2, 2, domain=_grid), "nearest", "border", True),
            Sample(m(1, 2, 3, 4), m(1, 2, 2, 2, domain=_grid), "bicubic", "reflection"),
            Sample(m(1, 1, 2, 3, 2), m(1, 2, 1, 2, 3, domain=_grid), "bilinear", "zeros", True),
            Sample(m(0, 2, 3, 4), m(0, 2, 3, 2, domain=_grid)),
        ],
        tol={"float16": (3e-2, 3e-2), "bfloat16": (1e-1, 1e-1), "float32": (1e-5, 1e-5)},
        grads=[
            Row(
                "F_grid_sample",
                lambda x, g: F.grid_sample(x, g, padding_mode="border"),
                [U(1, 2, 3, 4), dom(U, lo=-0.8, hi=0.8)(1, 2, 2, 2)],
                gg=False,
            )
        ],
    ),
    nn_op(
        "affine_grid",
        affine_grid_ref,
        lambda m: [
            Sample(m(2, 2, 3), [2, 1, 3, 4]),
            Sample(m(1, 2, 3), [1, 3, 1, 5], align_corners=True),
            Sample(m(1, 3, 4), [1, 1, 2, 3, 2]),
        ],
        grads=[Row("F_affine_grid", lambda t: F.affine_grid(t, [1, 1, 3, 2]), [U(1, 2, 3)])],
    ),
]
