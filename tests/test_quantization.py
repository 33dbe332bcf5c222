"""Quantized inference: the int8 GEMM (every CPU path and the GPU kernel) against an exact
integer reference, quantize_dynamic and the Q8 Linear on a digits MLP, quantized tensor
accessors, state_dict round trips through safetensors, GGML Q8_0 byte-exactness, bad input."""

import numpy as np
import pytest
import rumus
import rumus.nn as nn
from rumus import _rumus
from rumus.quantization import (
    Q8Tensor,
    dequantize,
    from_ggml_q8_0,
    quantize_dynamic,
    quantize_per_channel,
    quantize_per_tensor,
    quantize_q8,
    to_ggml_q8_0,
)

CPU_PATHS = ["avx512_vnni", "avx2", "scalar"]


@pytest.fixture(params=CPU_PATHS)
def cpu_path(request):
    """Forces one int8 GEMM path (skipped where the CPU lacks it), restoring auto after."""
    try:
        _rumus._qgemm_path(request.param)
    except RuntimeError:
        pytest.skip(f"this CPU has no {request.param}")
    yield request.param
    _rumus._qgemm_path("auto")


SHAPES = [(1, 1, 1), (3, 5, 7), (1, 130, 9), (7, 64, 4), (5, 200, 13), (2, 257, 1)]


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_int8_gemm_exact_cpu(cpu_path, m, k, n):
    rng = np.random.default_rng(m * 1000 + k + n)
    a = rng.integers(0, 128, (m, k), dtype=np.int32)
    w = rng.integers(-128, 128, (n, k), dtype=np.int32)
    w[0, : min(k, 3)] = -128  # extreme products: 2 * 127 * -128 fits int16 in vpmaddubsw
    a[0, : min(k, 3)] = 127
    out = _rumus._qgemm_s32(rumus.from_numpy(a), rumus.from_numpy(w))
    assert out.dtype == rumus.int32
    np.testing.assert_array_equal(out.numpy(), a.astype(np.int64) @ w.T.astype(np.int64))


@pytest.mark.parametrize("m,k,n", SHAPES[:4])
def test_int8_gemm_exact_gpu(gpu, m, k, n):
    rng = np.random.default_rng(k + n)
    a = rng.integers(0, 128, (m, k), dtype=np.int32)
    w = rng.integers(-128, 128, (n, k), dtype=np.int32)
    out = _rumus._qgemm_s32(rumus.from_numpy(a).to(gpu), rumus.from_numpy(w).to(gpu))
    assert out.device.type == "gpu"
    np.testing.assert_array_equal(out.cpu().numpy(), a.astype(np.int64) @ w.T.astype(np.int64))


def test_gemm_path_switch_errors():
    with pytest.raises(ValueError, match="unknown int8 GEMM path"):
        _rumus._qgemm_path("sse9")
    assert _rumus._qgemm_path("auto") in CPU_PATHS
    a = rumus.zeros(2, 3, dtype=rumus.int32)
    with pytest.raises(ValueError, match=r"\[0, 127\]"):
        _rumus._qgemm_s32(a - 1, a)
    with pytest.raises(ValueError, match=r"\[-128, 127\]"):
        _rumus._qgemm_s32(a, a + 200)
    with pytest.raises(TypeError, match="int32"):
        _rumus._qgemm_s32(a.float(), a)
    with pytest.raises(RuntimeError, match="differ in k"):
        _rumus._qgemm_s32(a, rumus.zeros(2, 4, dtype=rumus.int32))


def _reference_linear(x, lin):
    """NumPy model of DynamicQuantizedLinear: per-channel symmetric int8 weights, per-row
    asymmetric 7-bit activations, exact integer products."""
    w = lin.weight.detach().numpy().astype(np.float32)
    sw = np.maximum(np.abs(w).max(1) / 127.5, np.finfo(np.float32).eps).astype(np.float32)
    qw = np.clip(np.rint(w / sw[:, None]), -128, 127).astype(np.int64)
    lo, hi = np.minimum(x.min(1), 0), np.maximum(x.max(1), 0)
    sa = ((hi - lo) / 127).astype(np.float32)
    sa[sa == 0] = 1
    zp = np.clip(np.rint(-lo / sa), 0, 127)
    qa = np.clip(np.rint(x / sa[:, None]) + zp[:, None], 0, 127).astype(np.int64)
    acc = (qa - zp[:, None].astype(np.int64)) @ qw.T
    return acc * (sa[:, None] * sw[None, :]) + lin.bias.detach().numpy()


@pytest.mark.parametrize("k,n", [(5, 3), (70, 33), (129, 17)])
def test_dynamic_linear_matches_reference(cpu_path, k, n):
    rumus.manual_seed(k)
    lin = nn.Linear(k, n)
    q = nn.quantized.dynamic.Linear.from_float(lin)
    x = np.random.default_rng(n).standard_normal((6, k)).astype(np.float32)
    x[1] = np.abs(x[1])  # an all-positive row (zero point 0)
    x[2] = 0  # an all-zero row
    got = q(rumus.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, _reference_linear(x, lin), rtol=1e-4, atol=1e-4)
    # ... and close to the float layer
    ref = lin(rumus.from_numpy(x)).detach().numpy()
    assert np.abs(got - ref).max() < 0.05 * np.abs(ref).max()


def test_dynamic_linear_batched_shapes(device):
    lin = nn.Linear(20, 6).to(device)
    q = quantize_dynamic(nn.Sequential(lin))[0]
    x = rumus.randn(2, 3, 20, device=device)
    y = q(x)
    assert tuple(y.shape) == (2, 3, 6) and y.dtype == rumus.float32 and y.device == x.device
    np.testing.assert_allclose(y.cpu().numpy(), lin(x).detach().cpu().numpy(), atol=0.05)
    assert tuple(q(rumus.randn(0, 20, device=device)).shape) == (0, 6)


def test_dynamic_linear_gpu_matches_cpu(gpu):
    rumus.manual_seed(1)
    lin = nn.Linear(45, 11)
    q = nn.quantized.dynamic.Linear.from_float(lin)
    x = rumus.randn(5, 45)
    np.testing.assert_allclose(
        q.to(gpu)(x.to(gpu)).cpu().numpy(), q.cpu()(x).numpy(), rtol=1e-4, atol=1e-4
    )


@pytest.fixture(scope="module")
def digits_mlp():
    """A float MLP trained briefly on sklearn's digits, with its test set."""
    datasets = pytest.importorskip("sklearn.datasets")
    x, y = datasets.load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    idx = np.random.default_rng(0).permutation(len(x))
    tr, te = idx[:1400], idx[1400:]
    rumus.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10)
    )
    opt = rumus.optim.Adam(model.parameters(), lr=3e-3)
    xt, yt = rumus.from_numpy(x[tr]), rumus.from_numpy(y[tr].astype(np.int64))
    for _ in range(60):
        opt.zero_grad()
        nn.functional.cross_entropy(model(xt), yt).backward()
        opt.step()
    model.eval()
    return model, x[te]


def _agreement(model, q, x, device):
    xt = rumus.from_numpy(x)
    with rumus.no_grad():
        ref = model(xt).argmax(1).numpy()
        got = q.to(device)(xt.to(device)).argmax(1).cpu().numpy()
    return (ref == got).mean()


@pytest.mark.parametrize("dtype", ["qint8", "q8"])
def test_digits_mlp_agreement(digits_mlp, device, dtype):
    model, x = digits_mlp
    q = quantize_dynamic(model, {nn.Linear}, dtype=getattr(rumus, dtype))
    assert q is not model and isinstance(model[0], nn.Linear)  # inplace=False copies
    kinds = {type(m).__name__ for m in q.modules()}
    assert ("DynamicLinear" if dtype == "qint8" else "Q8Linear") in kinds
    assert "Linear" not in kinds
    acc = _agreement(model, q, x, device)
    assert acc >= 0.99, f"{dtype} on {device}: {acc:.4f} of predictions agree"


def test_unsupported_modules_untouched():
    conv, lstm = nn.Conv2d(1, 2, 3), nn.LSTM(4, 5)
    model = nn.Sequential(conv, nn.ReLU(), nn.Sequential(nn.Linear(4, 3)), lstm)
    q = quantize_dynamic(model, {nn.Linear, nn.Conv2d}, inplace=True)
    assert q is model and q[0] is conv and q[3] is lstm
    assert isinstance(q[2][0], nn.quantized.dynamic.Linear)
    assert not q.training
    # names select submodules; an unselected Linear stays float
    m2 = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3))
    q2 = quantize_dynamic(m2, {"1"})
    assert isinstance(q2[0], nn.Linear) and isinstance(q2[1], nn.quantized.dynamic.Linear)


def test_rumus_quantization_aliases():
    import rumus.ao.quantization

    assert rumus.ao.quantization.quantize_dynamic is rumus.quantization.quantize_dynamic
    assert repr(rumus.qint8) == "rumus.qint8" and rumus.qint8.is_quantized


@pytest.mark.parametrize("kind", ["qint8", "q8"])
def test_state_dict_round_trip(tmp_path, kind):
    rumus.manual_seed(3)
    model = nn.Sequential(nn.Linear(40, 24), nn.ReLU(), nn.Linear(24, 5, bias=False))
    q = quantize_dynamic(model, dtype=getattr(rumus, kind))
    path = tmp_path / "q.safetensors"
    rumus.save(q.state_dict(), path)
    with open(path, "rb") as f:
        assert f.read(8) != b"PK\x03\x04"  # a safetensors file, not a zip archive
    fresh = quantize_dynamic(
        nn.Sequential(nn.Linear(40, 24), nn.ReLU(), nn.Linear(24, 5, bias=False)),
        dtype=getattr(rumus, kind),
    )
    fresh.load_state_dict(rumus.load(path))
    x = rumus.randn(3, 40)
    np.testing.assert_array_equal(fresh(x).numpy(), q(x).numpy())
    for k, v in q.state_dict().items():
        np.testing.assert_array_equal(fresh.state_dict()[k].numpy(), v.numpy())


def test_quantized_weight_accessors():
    rumus.manual_seed(4)
    lin = nn.Linear(70, 6)
    q = nn.quantized.dynamic.Linear.from_float(lin)
    w = q.weight()
    assert w.dtype is rumus.qint8 and tuple(w.shape) == (6, 70) and w.is_quantized
    assert w.qscheme() is rumus.per_channel_symmetric
    codes = w.int_repr().numpy()
    scales = w.q_per_channel_scales()
    assert scales.dtype == rumus.float64 and tuple(scales.shape) == (6,)
    wf = lin.weight.detach().numpy()
    np.testing.assert_allclose(scales.numpy(), np.abs(wf).max(1) / 127.5, rtol=1e-6)
    s32 = scales.numpy().astype(np.float32)[:, None]
    np.testing.assert_array_equal(codes, np.clip(np.rint(wf / s32), -128, 127))
    np.testing.assert_array_equal(w.q_per_channel_zero_points().numpy(), np.zeros(6))
    assert w.q_per_channel_axis() == 0
    np.testing.assert_allclose(w.dequantize().numpy(), wf, atol=scales.numpy().max() / 2 + 1e-7)
    with pytest.raises(RuntimeError, match="per tensor"):
        w.q_scale()
    # int8 bytes: a quarter of float32, plus the scales and zero points (rows of 64 codes)
    big = nn.quantized.dynamic.Linear.from_float(nn.Linear(256, 6)).weight()
    assert big.nbytes == 6 * 256 + 6 * 4 + 6 * 8


def test_quantize_per_tensor_and_channel():
    t = rumus.tensor([[-1.0, 0.0, 0.26], [2.0, 3.0, -0.5]])
    q = quantize_per_tensor(t, 0.1, 2, rumus.qint8)
    assert q.q_scale() == pytest.approx(0.1) and q.q_zero_point() == 2
    assert q.qscheme() is rumus.per_tensor_affine
    np.testing.assert_array_equal(q.int_repr().numpy(), [[-8, 2, 5], [22, 32, -3]])
    np.testing.assert_allclose(
        dequantize(q).numpy(), [[-1.0, 0.0, 0.3], [2.0, 3.0, -0.5]], atol=1e-6
    )
    with pytest.raises(RuntimeError, match="per channel"):
        q.q_per_channel_scales()
    qc = quantize_per_channel(t, rumus.tensor([0.01, 0.1]), rumus.tensor([0, 0]), 0, rumus.qint8)
    np.testing.assert_array_equal(qc.int_repr().numpy(), [[-100, 0, 26], [20, 30, -5]])
    with pytest.raises(ValueError, match="scale"):
        quantize_per_tensor(t, 0.0, 0, rumus.qint8)
    with pytest.raises(ValueError, match="qint8"):
        quantize_per_tensor(t, 0.1, 0, rumus.float32)
    with pytest.raises(NotImplementedError, match="axis"):
        quantize_per_channel(t, rumus.ones(3), rumus.zeros(3), 1, rumus.qint8)


@pytest.mark.parametrize("shape,bs", [((70,), 32), ((3, 40), 8), ((2, 3, 64), 32), ((5, 33), 4)])
def test_q8_quantize_dequantize(device, shape, bs):
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    q = quantize_q8(rumus.from_numpy(x).to(device), block_size=bs)
    assert isinstance(q, Q8Tensor) and q.dtype is rumus.q8 and q.device.type == device
    k = shape[-1]
    blocks = x.reshape(-1, k)
    pad = np.zeros((blocks.shape[0], -(-k // bs) * bs), np.float32)
    pad[:, :k] = blocks
    b = pad.reshape(-1, bs)
    d = (np.abs(b).max(1) / 127).astype(np.float16).astype(np.float32)
    codes = np.clip(np.rint(b / d[:, None]), -127, 127)
    want = (codes * d[:, None]).reshape(pad.shape)[:, :k].reshape(shape)
    np.testing.assert_array_equal(q.dequantize().cpu().numpy(), want)
    np.testing.assert_array_equal(
        q.int_repr().cpu().numpy(), codes.reshape(pad.shape)[:, :k].reshape(shape)
    )
    assert q.nbytes == b.shape[0] * (4 + bs)


def test_q8_ggml_byte_exact():
    rng = np.random.default_rng(7)
    nb = 12
    raw = bytearray(rng.integers(0, 256, nb * 34, dtype=np.uint8).tobytes())
    q = from_ggml_q8_0(bytes(raw), (3, 128))
    assert to_ggml_q8_0(q) == bytes(raw)
    # the GGML layout: float16 d then 32 int8 codes per block
    blk = np.frombuffer(bytes(raw[:34]), np.uint8)
    d = blk[:2].copy().view(np.float16).astype(np.float32)[0]
    codes = blk[2:].view(np.int8).astype(np.float32)
    if np.isfinite(d):
        np.testing.assert_array_equal(q.dequantize().numpy()[0, :32], codes * d)
    t = rumus.randn(4, 96)
    q2 = quantize_q8(t)
    back = from_ggml_q8_0(to_ggml_q8_0(q2), (4, 96))
    np.testing.assert_array_equal(back._words.numpy(), q2._words.numpy())
    assert len(to_ggml_q8_0(q2)) == 4 * 3 * 34


@pytest.mark.parametrize("k,bs,m", [(50, 16, 3), (96, 32, 1), (96, 32, 4), (96, 32, 6)])
def test_q8_linear_matches_dequantized(device, k, bs, m):
    # batch <= 4 with whole 32-blocks reads the Q8 bytes directly; else rows are dequantized
    rumus.manual_seed(5)
    lin = nn.Linear(k, 7)
    q = nn.quantized.Q8Linear.from_float(lin, block_size=bs).to(device)
    wq = q.weight().dequantize().cpu().numpy()
    assert wq.shape == (7, k)
    x = rumus.randn(m, k)
    want = x.numpy() @ wq.T + lin.bias.detach().numpy()
    np.testing.assert_allclose(q(x.to(device)).cpu().numpy(), want, rtol=1e-5, atol=1e-5)


def test_bad_input():
    with pytest.raises(ValueError, match="Don't know how to quantize"):
        quantize_dynamic(nn.Sequential(nn.Linear(2, 2)), dtype=rumus.float32)
    with pytest.raises(TypeError, match="nn.Module"):
        quantize_dynamic(rumus.zeros(2))
    with pytest.raises(ValueError, match="multiple of 4"):
        quantize_q8(rumus.zeros(8), block_size=6)
    with pytest.raises(TypeError, match="floating point"):
        quantize_q8(rumus.zeros(8, dtype=rumus.int64))
    with pytest.raises(ValueError, match="blocks of 32"):
        to_ggml_q8_0(quantize_q8(rumus.zeros(8), block_size=8))
    with pytest.raises(ValueError, match="bytes"):
        from_ggml_q8_0(b"\x00" * 33, (32,))
    q = nn.quantized.dynamic.Linear.from_float(nn.Linear(8, 3))
    with pytest.raises(RuntimeError, match="in_features=8"):
        q(rumus.zeros(2, 9))
    q8 = nn.quantized.Q8Linear.from_float(nn.Linear(8, 3))
    with pytest.raises(RuntimeError, match="in_features=8"):
        q8(rumus.zeros(2, 9))
    with pytest.raises(ValueError, match="in_features"):
        nn.quantized.dynamic.Linear(0, 3)
    with pytest.raises(RuntimeError, match="packed int32 weight"):
        _rumus._qlinear(
            rumus.zeros(2, 8),
            rumus.zeros(3, 4, dtype=rumus.int32),
            rumus.ones(3),
            rumus.zeros(3, dtype=rumus.int32),
        )
    with pytest.raises(RuntimeError, match="words"):
        _rumus._q8_linear(rumus.zeros(2, 8), rumus.zeros(5, dtype=rumus.int32), 3, 32)
    with pytest.raises(ValueError, match="block_size"):
        _rumus._q8_dequantize(rumus.zeros(5, dtype=rumus.int32), 1, 4, 3)
