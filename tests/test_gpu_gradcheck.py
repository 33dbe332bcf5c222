"""The gradcheck rows of the op registry (tests/op_db.py) on the GPU.

Every row runs on the GPU in float32 under ``rumus.set_default_device("gpu")``
(so tensors a row builds land there too): its outputs and its input gradients
must match the float64 CPU results, whose gradients gradcheck verifies by
finite differences. The second derivative (for rows with ``gg``) is compared
the same way. A row whose entry (or the row itself) gives a reason it cannot run
on the GPU is skipped with that reason; any other NotImplementedError fails, so an
op that loses its GPU kernel is noticed.
"""

import numpy as np
import pytest
import rumus
from conftest import need_gpu
from op_db import GRAD_ROWS, Const
from test_gradcheck import _seed

ROWS = GRAD_ROWS

RTOL, ATOL = 2e-4, 2e-5


def _inputs(row, device, dtype):
    rng = np.random.default_rng(_seed(row.name))
    specs = (
        row.specs(rng) if callable(row.specs) else [s(rng) if callable(s) else s for s in row.specs]
    )
    out = []
    for s in specs:
        if isinstance(s, Const):
            v = s.value
            if isinstance(v, np.ndarray):
                v = rumus.tensor(
                    v.astype(np.float32) if v.dtype == np.float64 else v, device=device
                )
            out.append(v)
        else:
            out.append(rumus.tensor(np.asarray(s, dtype=dtype), device=device, requires_grad=True))
    return out


def _outputs(y):
    return [
        t
        for t in (y if isinstance(y, (tuple, list)) else (y,))
        if isinstance(t, rumus.Tensor) and t.is_floating_point()
    ]


def _run(row, device, dtype, order):
    """Outputs and gradients (first or second order) of a row on one device."""
    xs = _inputs(row, device, dtype)
    prev = rumus.get_default_device()
    rumus.set_default_device(device)
    try:
        rumus.manual_seed(0)
        ys = _outputs(row.fn(*xs))
        leaves = [x for x in xs if isinstance(x, rumus.Tensor) and x.requires_grad]
        rng = np.random.default_rng(1)
        gos = [
            rumus.tensor(rng.uniform(-1, 1, tuple(y.shape)).astype(dtype), device=device)
            for y in ys
        ]
        diff = [(y, g) for y, g in zip(ys, gos) if y.requires_grad]
        grads = rumus.autograd.grad(
            [y for y, _ in diff],
            leaves,
            [g for _, g in diff],
            allow_unused=True,
            create_graph=order == 2,
        )
        results = [y.detach().cpu().numpy() for y in ys]
        if order == 1:
            return results + [None if g is None else g.detach().cpu().numpy() for g in grads]
        # Second order: the gradient of sum(grad * v) with respect to the inputs.
        used = [(g, x) for g, x in zip(grads, leaves) if g is not None and g.requires_grad]
        if not used:
            return results
        s = sum((g * g.detach()).sum() for g, _ in used)
        gg = rumus.autograd.grad(s, leaves, allow_unused=True)
        return results + [None if g is None else g.detach().cpu().numpy() for g in gg]
    finally:
        rumus.set_default_device(prev)


def _params():
    out = []
    for row in ROWS:
        out.append(pytest.param(row, 1, id=f"grad-{row.name}"))
        if row.gg:
            out.append(pytest.param(row, 2, id=f"gradgrad-{row.name}"))
    return out


@pytest.mark.parametrize("row,order", _params())
def test_row_on_gpu(row, order):
    need_gpu()
    why = row.gpu_reason()
    if why:
        pytest.skip(why)
    ref = _run(row, "cpu", np.float64, order)
    got = _run(row, "gpu", np.float32, order)
    assert len(got) == len(ref)
    for i, (g, r) in enumerate(zip(got, ref)):
        if r is None:
            assert g is None or not np.any(g), f"result {i}: CPU gives no gradient, GPU does"
            continue
        assert g is not None, f"result {i}: GPU gives no gradient"
        scale = max(1.0, float(np.max(np.abs(r))) if r.size else 1.0)
        np.testing.assert_allclose(
            g.astype(np.float64), r, rtol=RTOL, atol=ATOL * scale, err_msg=f"{row.name} result {i}"
        )
