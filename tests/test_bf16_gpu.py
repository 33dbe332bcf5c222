"""bfloat16 tensors on the GPU (shaders/bf16.wgsl, shaders/matmul_bf16.wgsl): storage packed
two per word, casts, ops against the CPU's bfloat16 path, gradients, autocast(bfloat16) on the
GPU, and the clear TypeError of ops without a bfloat16 GPU kernel."""

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F
from conftest import need_gpu
from rumus import nn

BF16 = rumus.bfloat16


@pytest.fixture(autouse=True)
def _gpu():
    need_gpu()


def bf16_round(x):
    """float32 -> bfloat16 (as float32) by bit operations: round to nearest even, NaN kept."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    nan = (b & 0x7FFFFFFF) > 0x7F800000
    r = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    r = np.where(nan, (b >> 16) | 0x40, r)
    return (r.astype(np.uint32) << 16).view(np.float32)


def f32(t):
    return t.float().cpu().numpy()


def same(got, exp):
    np.testing.assert_array_equal(f32(got) if isinstance(got, rumus.Tensor) else got, exp)


SPECIAL = np.array(
    [
        0.0,
        -0.0,
        1.0,
        -2.5,
        1 + 2.0**-8,  # halfway: to even (1.0)
        1 + 3 * 2.0**-8,  # halfway: to even (up)
        1 + 2.0**-8 + 2.0**-20,  # just above halfway: up
        3.4e38,  # rounds to inf
        -3.4e38,
        1e-40,  # float32 subnormal
        np.inf,
        -np.inf,
        np.nan,
        65504.0,
        1e-3,
    ],
    dtype=np.float32,
)


# ---- storage ----


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 257])
def test_round_trip_sizes(n):
    x = bf16_round(np.random.default_rng(n).standard_normal(n).astype(np.float32))
    t = rumus.tensor(x, dtype=BF16)
    g = t.to("gpu")
    assert g.dtype == BF16 and g.device.type == "gpu" and g.shape == (n,)
    same(g, x)
    same(g.cpu(), x)


def test_round_trip_views_and_offsets():
    x = bf16_round(np.arange(35, dtype=np.float32).reshape(5, 7) * 0.37 - 4)
    g = rumus.tensor(x, dtype=BF16, device="gpu")
    same(g[1:], x[1:])
    same(g[:, 1], x[:, 1])  # odd offset, stride 7
    same(g[2, 3:6], x[2, 3:6])  # odd offset, contiguous
    same(g.t(), x.T)
    same(g.t().contiguous(), x.T)
    same(g[:, ::2].reshape(-1), x[:, ::2].reshape(-1))
    same(g.flip(0), x[::-1])
    assert g.t().contiguous().is_contiguous()


def test_writes_keep_neighbours():
    # Each element shares a word with its neighbour: writes must leave it alone.
    g = rumus.zeros(9, dtype=BF16, device="gpu")
    g[1::2] = 5.0
    g[2:5].fill_(2.5)
    g[8] = -1.0
    exp = np.zeros(9, np.float32)
    exp[1::2] = 5
    exp[2:5] = 2.5
    exp[8] = -1
    same(g, exp)
    h = rumus.ones(3, 3, dtype=BF16, device="gpu")
    h[:, 1] = rumus.tensor([7.0, 8.0, 9.0], device="gpu")  # float32 -> bfloat16, strided
    same(h, np.array([[1, 7, 1], [1, 8, 1], [1, 9, 1]], np.float32))


def test_creation():
    d = {"dtype": BF16, "device": "gpu"}
    for t, exp in [
        (rumus.zeros(3, 2, **d), np.zeros((3, 2))),
        (rumus.ones(5, **d), np.ones(5)),
        (rumus.full((3,), 0.1, **d), bf16_round(np.full(3, 0.1, np.float32))),
        (rumus.arange(0, 5, **d), np.arange(5)),
        (rumus.zeros_like(rumus.ones(3, **d)), np.zeros(3)),
    ]:
        assert t.dtype == BF16 and t.device.type == "gpu"
        same(t, np.asarray(exp, np.float32))
    assert rumus.empty(4, **d).shape == (4,)
    for r in (rumus.rand(257, **d), rumus.randn(257, **d)):
        v = f32(r)
        assert r.dtype == BF16 and np.isfinite(v).all() and v.std() > 0.1
        np.testing.assert_array_equal(v, bf16_round(v))
    assert (f32(rumus.rand(257, **d)) < 1).all()


def test_printing():
    x = [1.5, -2.25, 3.0]
    g = rumus.tensor(x, dtype=BF16, device="gpu")
    c = rumus.tensor(x, dtype=BF16)
    assert "bfloat16" in repr(g) and "gpu" in repr(g)
    assert repr(g).split("]")[0] == repr(c).split("]")[0]
    assert g.tolist() == x and g[1].item() == -2.25


# ---- casts (shaders/bf16.wgsl) ----


def test_float32_to_bfloat16_rounds_to_nearest_even():
    g = rumus.tensor(SPECIAL, device="gpu").to(BF16)
    np.testing.assert_array_equal(f32(g), bf16_round(SPECIAL))
    # The CPU rounds the same way.
    np.testing.assert_array_equal(f32(rumus.tensor(SPECIAL).to(BF16)), bf16_round(SPECIAL))
    # Strided, odd-offset source and destination.
    x = np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32)
    dst = rumus.zeros(6, 5, dtype=BF16, device="gpu")
    dst[1:, 1::2] = rumus.tensor(x, device="gpu")[1:, 1::2]
    exp = np.zeros((6, 5), np.float32)
    exp[1:, 1::2] = bf16_round(x[1:, 1::2])
    same(dst, exp)


def test_bfloat16_to_other_dtypes_matches_cpu():
    vals = bf16_round(np.array([0.0, -0.0, 1.5, -2.5, 3.7, -7.9, 255.0, 300.0, np.nan, np.inf]))
    c = rumus.tensor(vals, dtype=BF16)
    g = c.to("gpu")
    same(g.float(), vals)
    np.testing.assert_array_equal(g.half().cpu().numpy(), c.half().numpy())
    np.testing.assert_array_equal(g.bool().cpu().numpy(), c.bool().numpy())
    finite = slice(0, 7)  # int casts of NaN / inf / out-of-range values are unspecified
    for dt in (rumus.int32, rumus.int64, rumus.uint8):
        np.testing.assert_array_equal(
            g[finite].to(dt).cpu().numpy(), c[finite].to(dt).numpy(), err_msg=str(dt)
        )


@pytest.mark.parametrize("src", ["float16", "int32", "int64", "uint8", "bool"])
def test_other_dtypes_to_bfloat16_matches_cpu(src):
    vals = np.array([0, 1, 3, 7, 100, 255, 1, 0, 2], dtype=np.float32)
    if src == "float16":
        vals = np.array([0.1, -2.5, 1e-4, 65504, -0.0, np.nan, np.inf, 3.3, 7.0], np.float32)
    c = rumus.tensor(vals).to(getattr(rumus, src))
    g = c.to("gpu").to(BF16)
    assert g.dtype == BF16 and g.device.type == "gpu"
    np.testing.assert_array_equal(f32(g), f32(c.to(BF16)))
    # and back
    np.testing.assert_array_equal(g.to(c.dtype).cpu().numpy(), c.to(BF16).to(c.dtype).numpy())


def test_scalar_operands_and_promotion():
    g = rumus.tensor([1.0, 2.0, 3.0], dtype=BF16, device="gpu")
    assert (g * 2).dtype == BF16
    assert (g + rumus.ones(3, device="gpu")).dtype == rumus.float32
    assert (g + rumus.ones(3, dtype=rumus.float16, device="gpu")).dtype == rumus.float32
    assert (g > 1.5).dtype == rumus.bool
    same(g * 2 + 0.5, [2.5, 4.5, 6.5])


# ---- ops against the CPU's bfloat16 path ----

ULP = 2.0**-7  # one bfloat16 step relative to the value


def close(got, exp, rtol=ULP, atol=1e-6):
    assert got.device.type == "gpu"
    assert got.dtype == exp.dtype, (got.dtype, exp.dtype)
    np.testing.assert_allclose(f32(got), f32(exp), rtol=rtol, atol=atol)


def pair(rng, *shape, positive=False):
    x = rng.standard_normal(shape).astype(np.float32)
    if positive:
        x = np.abs(x) + 0.1
    c = rumus.tensor(x).to(BF16)
    return c, c.to("gpu")


UNARY = "exp log sqrt tanh sigmoid relu abs neg sin cos floor reciprocal gelu silu".split()


@pytest.mark.parametrize("name", UNARY)
def test_unary(name, rng):
    c, g = pair(rng, 3, 5, positive=name in ("log", "sqrt", "reciprocal"))
    fn = getattr(F, name) if name in ("gelu", "silu", "relu") else getattr(rumus, name)
    close(fn(g), fn(c))
    close(fn(g.t()), fn(c.t()))  # strided


BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "atan2"]


@pytest.mark.parametrize("name", BINARY)
def test_binary(name, rng):
    (ca, ga), (cb, gb) = pair(rng, 4, 3, positive=True), pair(rng, 3, positive=True)
    fn = getattr(rumus, name)
    close(fn(ga, gb), fn(ca, cb))
    close(fn(ga[1:], gb), fn(ca[1:], cb))  # odd offsets, broadcast


def test_comparisons_where_and_inplace(rng):
    (ca, ga), (cb, gb) = pair(rng, 5), pair(rng, 5)
    np.testing.assert_array_equal((ga < gb).cpu().numpy(), (ca < cb).numpy())
    np.testing.assert_array_equal((ga == ga).cpu().numpy(), np.ones(5, bool))
    close(rumus.where(ga > 0, ga, gb), rumus.where(ca > 0, ca, cb))
    close(rumus.where(ga > 0, ga, 0.0), rumus.where(ca > 0, ca, 0.0))
    ga.mul_(2).add_(gb)
    ca.mul_(2).add_(cb)
    close(ga, ca)
    close(ga.clamp(-0.5, 0.5), ca.clamp(-0.5, 0.5))


@pytest.mark.parametrize(
    "name,kw",
    [
        ("sum", {}),
        ("sum", {"dim": 1}),
        ("mean", {"dim": 0}),
        ("amax", {"dim": 1}),
        ("amin", {}),
        ("prod", {"dim": 1}),
        ("cumsum", {"dim": 1}),
        ("softmax", {"dim": 1}),
        ("log_softmax", {"dim": 0}),
        ("logsumexp", {"dim": 1}),
        ("var", {"dim": 1}),
        ("std", {"dim": 0}),
    ],
)
def test_reductions(name, kw, rng):
    c, g = pair(rng, 4, 6)
    got, exp = getattr(g, name)(**kw), getattr(c, name)(**kw)
    close(got, exp, rtol=3 * ULP, atol=1e-2)


def test_arg_reductions(rng):
    c, g = pair(rng, 4, 6)
    for name in ("argmax", "argmin"):
        np.testing.assert_array_equal(
            getattr(g, name)(1).cpu().numpy(), getattr(c, name)(1).numpy()
        )
    v, i = g.max(1)
    close(v, c.max(1)[0])
    np.testing.assert_array_equal(i.cpu().numpy(), c.max(1)[1].numpy())


def test_shape_ops(rng):
    (ca, ga), (cb, gb) = pair(rng, 2, 3), pair(rng, 2, 3)
    same(rumus.cat([ga, gb], 1), f32(rumus.cat([ca, cb], 1)))
    same(rumus.stack([ga, gb.flip(1)]), f32(rumus.stack([ca, cb.flip(1)])))
    same(ga.permute(1, 0).reshape(6), f32(ca.permute(1, 0).reshape(6)))
    same(ga.expand(4, 2, 3), f32(ca.expand(4, 2, 3)))
    same(ga.unsqueeze(0).repeat(2, 1, 1), f32(ca.unsqueeze(0).repeat(2, 1, 1)))


# ---- the matmul family (packed GEMM) ----


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 5, 7), (17, 33, 65), (64, 16, 64)])
def test_mm_shapes(m, k, n, rng):
    (ca, ga), (cb, gb) = pair(rng, m, k), pair(rng, k, n)
    got = ga @ gb
    assert got.dtype == BF16 and got.device.type == "gpu"
    # float32 accumulation of exact bfloat16 products, then one rounding.
    exp = bf16_round(f32(ca).astype(np.float64) @ f32(cb).astype(np.float64))
    np.testing.assert_allclose(f32(got), exp, rtol=ULP, atol=1e-5)
    close(got, ca @ cb, rtol=2 * ULP, atol=1e-3)


def test_matmul_variants(rng):
    (ca, ga), (cb, gb) = pair(rng, 2, 3, 4), pair(rng, 2, 4, 5)
    (cc, gc), (cw, gw) = pair(rng, 3, 5), pair(rng, 5, 4)
    (cv, gv), (cs, gs) = pair(rng, 4), pair(rng, 9, 9)
    tol = {"rtol": 2 * ULP, "atol": 2e-2}
    close(rumus.bmm(ga, gb), rumus.bmm(ca, cb), **tol)
    close(ga @ gb[0], ca @ cb[0], **tol)  # broadcast batch
    close(ga.transpose(1, 2).transpose(1, 2) @ gb, ca @ cb, **tol)
    close(gb.transpose(1, 2) @ ga.transpose(1, 2), cb.transpose(1, 2) @ ca.transpose(1, 2), **tol)
    close(rumus.addmm(gc, ga[0], gb[0]), rumus.addmm(cc, ca[0], cb[0]), **tol)
    close(
        rumus.baddbmm(gc, ga, gb, beta=0.5, alpha=2.0),
        rumus.baddbmm(cc, ca, cb, beta=0.5, alpha=2.0),
        **tol,
    )
    close(F.linear(ga, gw, gc[0]), F.linear(ca, cw, cc[0]), **tol)
    close(ga @ gv, ca @ cv, **tol)  # matrix-vector
    close(gv @ gv, cv @ cv, **tol)  # dot
    close(gs[1:4, 1::2] @ gs[1::2, 2:5], cs[1:4, 1::2] @ cs[1::2, 2:5], **tol)  # odd offsets
    close(gs.flip(0)[:3, :5] @ gs[:5, :2], cs.flip(0)[:3, :5] @ cs[:5, :2], **tol)  # flipped


def test_conv_and_norms(rng):
    (cx, gx), (cw, gw) = pair(rng, 2, 3, 6, 6), pair(rng, 4, 3, 3, 3)
    tol = {"rtol": 4 * ULP, "atol": 5e-2}
    close(F.conv2d(gx, gw, padding=1), F.conv2d(cx, cw, padding=1), **tol)
    close(F.layer_norm(gx, (6,)), F.layer_norm(cx, (6,)), **tol)
    close(F.max_pool2d(gx, 2), F.max_pool2d(cx, 2), **tol)
    close(F.avg_pool2d(gx, 2), F.avg_pool2d(cx, 2), **tol)


# ---- gradients ----


def test_gradients_match_cpu(rng):
    (ca, ga), (cb, gb) = pair(rng, 3, 4), pair(rng, 4, 5)
    ca.requires_grad_()
    cb.requires_grad_()
    ga.requires_grad_()
    gb.requires_grad_()
    for a, b in ((ca, cb), (ga, gb)):
        ((a @ b).tanh() * 2 + a.sum()).sum().backward()
    for c, g in ((ca, ga), (cb, gb)):
        assert g.grad.dtype == BF16 and g.grad.device.type == "gpu"
        np.testing.assert_allclose(f32(g.grad), f32(c.grad), rtol=4 * ULP, atol=5e-2)


def test_gradients_into_float32_master_weights(rng):
    x = rumus.tensor(rng.standard_normal((4, 3)).astype(np.float32), device="gpu")
    w = rumus.tensor(rng.standard_normal((2, 3)).astype(np.float32), device="gpu")
    w.requires_grad_()
    y = F.linear(x.bfloat16(), w.bfloat16())
    assert y.dtype == BF16
    y.float().sum().backward()
    assert w.grad.dtype == rumus.float32
    exp = bf16_round(np.ones((4, 2), np.float32)).T @ bf16_round(f32(x))
    np.testing.assert_allclose(w.grad.cpu().numpy(), exp, rtol=2 * ULP, atol=1e-2)


# ---- errors ----


@pytest.mark.parametrize(
    "name",
    [
        "sort",
        "index_select",
        "gather",
        "topk",
        "scatter",
        "scatter_add",
        "index_put",
        "index_put_accumulate",
        "masked_select",
        "kthvalue",
        "embedding",
        "cross_entropy",
        "interpolate",
        "cumprod",
        "dropout_eval",
    ],
)
def test_every_op_is_right_or_raises_type_error(name, rng):
    """Ops without a bfloat16 GPU kernel raise TypeError naming dtype and device; the rest
    give the CPU's values (never a bfloat16 tensor's words read as float32)."""
    c, g = pair(rng, 6)
    ops = {
        "sort": lambda t, i: t.sort()[0],
        "index_select": lambda t, i: t.index_select(0, i),
        "gather": lambda t, i: t.gather(0, i),
        "topk": lambda t, i: t.topk(2)[0],
        "scatter": lambda t, i: t.scatter(0, i, t[:2]),
        "index_put": lambda t, i: t.index_put((i,), t[:2]),
        "masked_select": lambda t, i: t.masked_select(t > 0),
        "kthvalue": lambda t, i: t.kthvalue(2)[0],
        "scatter_add": lambda t, i: t.scatter_add(0, i, t[:2]),
        "index_put_accumulate": lambda t, i: t.index_put((i,), t[:2], accumulate=True),
        "embedding": lambda t, i: F.embedding(i, t.reshape(3, 2)),
        "cross_entropy": lambda t, i: F.cross_entropy(t.reshape(2, 3), i),
        "interpolate": lambda t, i: F.interpolate(t.reshape(1, 2, 3), scale_factor=2),
        "cumprod": lambda t, i: t.cumprod(0),
        "dropout_eval": lambda t, i: F.dropout(t, 0.5, training=False),
    }
    fn = ops[name]
    try:
        exp = fn(c, rumus.tensor([0, 2]))
    except (RuntimeError, NotImplementedError):  # the CPU has no bfloat16 kernel either
        with pytest.raises((RuntimeError, NotImplementedError, TypeError)):
            fn(g, rumus.tensor([0, 2], device="gpu"))
        return
    try:
        got = fn(g, rumus.tensor([0, 2], device="gpu"))
    except TypeError as e:
        assert "bfloat16" in str(e) and "gpu" in str(e), str(e)
        return
    close(got, exp, rtol=2 * ULP, atol=1e-6)


def test_float64_and_mixed_devices_still_raise():
    g = rumus.ones(3, dtype=BF16, device="gpu")
    with pytest.raises(TypeError, match="float64"):
        g.double()
    with pytest.raises(RuntimeError, match="device"):
        g + rumus.ones(3, dtype=BF16)


# ---- autocast(bfloat16) on the GPU ----


def test_autocast_policy_on_gpu(rng):
    a = rumus.tensor(rng.standard_normal((3, 4)).astype(np.float32), device="gpu")
    w = rumus.tensor(rng.standard_normal((5, 4)).astype(np.float32), device="gpu")
    with rumus.autocast("gpu", dtype=BF16):
        h = F.linear(a, w)
        assert h.dtype == BF16
        assert (a @ a.t()).dtype == BF16
        assert F.softmax(h, -1).dtype == rumus.float32
        assert h.exp().dtype == rumus.float32
        assert h.sum().dtype == rumus.float32
        assert F.cross_entropy(h, rumus.tensor([0, 1, 2], device="gpu")).dtype == rumus.float32
        assert h.relu().dtype == BF16
    np.testing.assert_allclose(f32(h), f32(a) @ f32(w).T, rtol=0.02, atol=0.05)


def test_autocast_digits_training_on_gpu():
    """A small digits MLP trained under GPU autocast(bfloat16) with float32 master weights."""
    datasets = pytest.importorskip("sklearn.datasets")
    x, y = datasets.load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    idx = np.random.default_rng(0).permutation(len(x))
    tr, te = idx[:1400], idx[1400:]
    rumus.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)).to("gpu")
    opt = rumus.optim.Adam(model.parameters(), lr=1e-2)
    scaler = rumus.amp.GradScaler("gpu")
    xt = rumus.tensor(x[tr], device="gpu")
    yt = rumus.tensor(y[tr].astype(np.int64), device="gpu")
    for _ in range(60):
        opt.zero_grad()
        with rumus.autocast("gpu", dtype=BF16):
            out = model(xt)
            loss = F.cross_entropy(out, yt)
        assert out.dtype == BF16 and loss.dtype == rumus.float32
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    assert all(
        p.dtype == rumus.float32 and p.grad.dtype == rumus.float32 for p in model.parameters()
    )
    with rumus.no_grad(), rumus.autocast("gpu", dtype=BF16):
        pred = model(rumus.tensor(x[te], device="gpu")).argmax(1).cpu().numpy()
    assert (pred == y[te]).mean() >= 0.97


# ---- the op registry on bfloat16 GPU tensors ----


def _registry():
    from op_db import OP_DB

    return [
        pytest.param(op, id=op.name)
        for op in OP_DB
        if "bfloat16" in op.dtypes and not op.gpu_reason("float32")
    ]


def _gpu_ok(v):
    """A sample value that can live on the GPU: no float64, no "cpu" device."""
    from op_db import Arg

    if isinstance(v, str):
        return v != "cpu"
    if isinstance(v, Arg):
        return v.dtype != "float64"
    if isinstance(v, rumus.dtype):
        return v != rumus.float64
    if isinstance(v, (list, tuple)):
        return all(_gpu_ok(x) for x in v)
    return True


@pytest.mark.parametrize("op", _registry())
def test_registry_ops_on_bfloat16_gpu_tensors(op):
    """Every registry op that takes bfloat16 on the CPU and runs on GPUs gives the CPU's
    bfloat16 results on bfloat16 GPU tensors, or raises TypeError naming bfloat16 and the
    device: never values read from packed words as if they were float32."""
    from op_db import ALLOWED, applicable, build, call, variant_label
    from test_ops import _same

    rumus.manual_seed(0)
    for sample in op.samples("bfloat16"):
        if not (_gpu_ok(list(sample.args)) and _gpu_ok(list(sample.kwargs.values()))):
            continue
        args, kwargs, _, _ = build(sample, "bfloat16")
        gargs, gkwargs, _, _ = build(sample, "bfloat16", device="gpu")
        if op.dtype_kw:
            gkwargs["device"] = "gpu"
        for v in applicable(op, sample):
            what = f"{op.name} {variant_label(v)} {sample} on the GPU"
            if op.check is not None:  # random: checked by test_ops on float16
                continue
            try:
                exp = call(v, args, kwargs)
            except ALLOWED:
                continue
            try:
                got = call(v, gargs, gkwargs)
            except TypeError as e:
                assert "bfloat16" in str(e) and "gpu" in str(e), f"{what}: {e}"
                continue
            try:
                _same(got, exp, op, what)
            except AssertionError as e:  # a known GPU bug of the entry (as in test_ops)
                if not any(b.kind == "gpu" and b.match in str(e) for b in op.bugs):
                    raise
