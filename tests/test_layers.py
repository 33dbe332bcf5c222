"""nn layers: forward values against NumPy, PyTorch parity (same weights, outputs and
gradients), default initialisation, state_dict keys, train/eval behaviour, reprs and errors.

MultiheadAttention and the Transformer layers are in test_transformer.py.
"""

import copy
import math
import re

import numpy as np
import pytest
import rumus
import rumus.nn as nn
from conftest import ac, assert_close, dac, dt, fd, leaf, skip_f64_on_gpu, to_np, val
from rumus.autograd import gradcheck

f64 = rumus.float64


# ------------------------------------------------------------------ devices
# Every test runs on the CPU and on the GPU (``device`` fixture). float64 is not on the GPU (by
# design): where a test uses float64 only as "a float", the GPU run uses float32 with the CPU's
# float32 tolerances. Modules are built on the CPU (same seeded draws on both devices) and moved
# with .to(device).


def held(a, device):
    """float64 data as ``device`` holds them: unchanged on the CPU, rounded to float32 on the GPU
    (still a float64 array), so that NumPy references see exactly the GPU run's inputs."""
    a = np.asarray(a)
    if device != "cpu" and a.dtype == np.float64:
        return a.astype(np.float32).astype(np.float64)
    return a


def rand(*shape, seed=0, lo=-2.0, hi=2.0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype)


def grads_of(module):
    return {name: val(p.grad) for name, p in module.named_parameters() if p.grad is not None}


# ------------------------------------------------------------------ NumPy references


def np_conv(x, w, b, stride, padding, dilation, groups):
    """N-d (1 or 2) cross-correlation with zero padding, by summing shifted slices."""
    nd = w.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    out_ch, cg = w.shape[:2]
    og = out_ch // groups
    sizes = [
        (x.shape[2 + i] - dilation[i] * (w.shape[2 + i] - 1) - 1) // stride[i] + 1
        for i in range(nd)
    ]
    out = np.zeros((x.shape[0], out_ch, *sizes))
    for g in range(groups):
        xs = x[:, g * cg : (g + 1) * cg]
        for k in np.ndindex(*w.shape[2:]):
            sl = tuple(
                slice(
                    k[i] * dilation[i],
                    k[i] * dilation[i] + stride[i] * (sizes[i] - 1) + 1,
                    stride[i],
                )
                for i in range(nd)
            )
            out[:, g * og : (g + 1) * og] += np.einsum(
                "nc...,oc->no...",
                xs[(slice(None), slice(None)) + sl],
                w[(slice(g * og, (g + 1) * og), slice(None)) + k],
            )
    if b is not None:
        out += b.reshape((1, -1) + (1,) * nd)
    return out


def np_conv_transpose(x, w, b, stride, padding, output_padding, groups, dilation):
    nd = w.ndim - 2
    cg, og = w.shape[0] // groups, w.shape[1]
    full = [
        (x.shape[2 + i] - 1) * stride[i]
        + dilation[i] * (w.shape[2 + i] - 1)
        + 1
        + output_padding[i]
        for i in range(nd)
    ]
    out = np.zeros((x.shape[0], og * groups, *full))
    for g in range(groups):
        xs = x[:, g * cg : (g + 1) * cg]
        for k in np.ndindex(*w.shape[2:]):
            sl = tuple(
                slice(
                    k[i] * dilation[i],
                    k[i] * dilation[i] + stride[i] * (x.shape[2 + i] - 1) + 1,
                    stride[i],
                )
                for i in range(nd)
            )
            out[(slice(None), slice(g * og, (g + 1) * og)) + sl] += np.einsum(
                "nc...,co->no...", xs, w[(slice(g * cg, (g + 1) * cg), slice(None)) + k]
            )
    sizes = [full[i] - 2 * padding[i] for i in range(nd)]
    out = out[
        (slice(None), slice(None))
        + tuple(slice(padding[i], padding[i] + sizes[i]) for i in range(nd))
    ]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * nd)
    return out


def np_pool2d(x, k, s, p, fn, pad_value):
    x = np.pad(x, [(0, 0), (0, 0), (p, p), (p, p)], constant_values=pad_value)
    ho, wo = (x.shape[2] - k) // s + 1, (x.shape[3] - k) // s + 1
    out = np.empty(x.shape[:2] + (ho, wo))
    for i in range(ho):
        for j in range(wo):
            out[:, :, i, j] = fn(x[:, :, i * s : i * s + k, j * s : j * s + k], axis=(2, 3))
    return out


# ------------------------------------------------------------ Linear, Bilinear, Identity, Flatten


def test_linear_forward_backward_numpy(device):
    x = rand(4, 5)
    m = nn.Linear(5, 3).to(device)
    w, b = val(m.weight), val(m.bias)
    xt = dt(x, device=device).requires_grad_()
    out = m(xt)
    assert_close(out, x @ w.T + b)
    g = rand(4, 3, seed=1)
    out.backward(dt(g, device=device))
    ac(m.weight.grad, g.T @ x)
    ac(m.bias.grad, g.sum(0))
    ac(xt.grad, g @ w)
    # Any number of leading dims.
    x3 = rand(2, 3, 5)
    assert_close(m(dt(x3, device=device)), x3 @ w.T + b, rtol=1e-5, atol=1e-6)


def test_linear_no_bias_and_attributes(device):
    m = nn.Linear(5, 3, bias=False).to(device)
    assert m.bias is None and m.in_features == 5 and m.out_features == 3
    assert list(m.state_dict()) == ["weight"]
    x = rand(2, 5)
    assert_close(m(dt(x, device=device)), x @ val(m.weight).T)
    assert repr(m) == "Linear(in_features=5, out_features=3, bias=False)"
    assert repr(nn.Linear(4, 2).to(device)) == "Linear(in_features=4, out_features=2, bias=True)"


def test_linear_factory_dtype_and_wrong_shape(device):
    m = nn.Linear(3, 2, dtype=fd(device), device=device)
    assert (
        m.weight.dtype == fd(device)
        and m.bias.dtype == fd(device)
        and isinstance(m.weight, nn.Parameter)
    )
    assert m.weight.device.type == device and m.bias.device.type == device
    with pytest.raises(
        RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(4x5 and 3x2\)"
    ):
        nn.Linear(3, 2).to(device)(rumus.randn(4, 5, device=device))


def check_uniform_init(t, bound):
    a = val(t).ravel()
    assert a.size >= 200  # enough draws for the checks below to be sharp
    assert np.all(np.abs(a) <= bound * (1 + 1e-6))
    assert a.max() > 0.9 * bound and a.min() < -0.9 * bound
    # std of U(-b, b) is b / sqrt(3); 5 sigma of the sample std's spread.
    std = bound / math.sqrt(3)
    assert abs(a.std() - std) < 5 * std / math.sqrt(2 * a.size)


def test_linear_default_init(device):
    rumus.manual_seed(0)
    m = nn.Linear(64, 512).to(device)
    check_uniform_init(m.weight, 1 / 8)
    check_uniform_init(m.bias, 1 / 8)
    w = val(m.weight).copy()
    m.reset_parameters()  # on the GPU: redraws into the GPU parameters in place
    assert m.weight.device.type == device
    check_uniform_init(m.weight, 1 / 8)
    assert not np.array_equal(w, val(m.weight))
    rumus.manual_seed(3)
    a = val(nn.Linear(6, 4).to(device).weight)
    rumus.manual_seed(3)
    np.testing.assert_array_equal(a, val(nn.Linear(6, 4).to(device).weight))


def test_bilinear_numpy_and_init(device):
    rumus.manual_seed(0)
    m = nn.Bilinear(16, 5, 300).to(device)
    check_uniform_init(m.weight, 1 / 4)
    check_uniform_init(m.bias, 1 / 4)
    m = nn.Bilinear(3, 4, 2).to(device)
    x1, x2 = rand(5, 3), rand(5, 4, seed=1)
    expected = np.einsum("ni,oij,nj->no", x1, val(m.weight), x2) + val(m.bias)
    assert_close(
        m(dt(x1, device=device), dt(x2, device=device)),
        expected.astype(np.float32),
        rtol=1e-5,
        atol=1e-5,
    )
    assert repr(m) == "Bilinear(in1_features=3, in2_features=4, out_features=2, bias=True)"
    assert list(nn.Bilinear(3, 4, 2, bias=False).to(device).state_dict()) == ["weight"]


def test_identity_flatten_unflatten(device):
    x = dt(rand(2, 3, 4), device=device)
    assert nn.Identity(54, unused="x")(x) is x
    assert repr(nn.Identity()) == "Identity()"
    assert tuple(nn.Flatten()(x).shape) == (2, 12)
    assert tuple(nn.Flatten(0, 1)(x).shape) == (6, 4)
    ac(nn.Flatten()(x), to_np(x).reshape(2, 12))
    u = nn.Unflatten(1, (2, 6))
    ac(u(nn.Flatten()(x)), to_np(x).reshape(2, 2, 6))
    assert tuple(nn.Unflatten(-1, (2, -1))(x).shape) == (2, 3, 2, 2)
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    assert repr(u) == "Unflatten(dim=1, unflattened_size=(2, 6))"
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints"):
        nn.Unflatten(1, 6)
    with pytest.raises(TypeError, match="element of type float at pos 1"):
        nn.Unflatten(1, (2, 3.0))


# ------------------------------------------------------------------ convolutions


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(stride=2, padding=1),
        dict(dilation=2, padding=2, groups=2),
        dict(padding="valid", bias=False),
    ],
)
def test_conv2d_numpy(kw, device):
    m = nn.Conv2d(4, 6, 3, **kw).to(device)
    x = rand(2, 4, 7, 6)
    pad = m.padding if m.padding != "valid" else (0, 0)
    expected = np_conv(
        x.astype(np.float64),
        val(m.weight).astype(np.float64),
        None if m.bias is None else val(m.bias),
        m.stride,
        pad,
        m.dilation,
        m.groups,
    )
    assert_close(m(dt(x, device=device)), expected.astype(np.float32), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize(
    "kernel, padding, dilation", [(3, 1, 1), (4, "same", 1), ((2, 3), "same", (2, 1))]
)
def test_conv2d_padding_modes_numpy(mode, kernel, padding, dilation, device):
    m = nn.Conv2d(
        2, 3, kernel, padding=padding, dilation=dilation, padding_mode=mode, dtype=fd(device)
    ).to(device)
    x = held(rand(2, 2, 6, 7, dtype=np.float64), device)
    if padding == "same":
        # Total padding d * (k - 1) per dim; the odd element goes on the right/bottom (PyTorch's
        # rule).
        tot = [d * (k - 1) for d, k in zip(m.dilation, m.kernel_size)]
        pads = [(t // 2, t - t // 2) for t in tot]
    else:
        pads = [(padding, padding)] * 2
    np_mode = {"zeros": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[
        mode
    ]
    xp = np.pad(x, [(0, 0), (0, 0)] + pads, mode=np_mode)
    expected = np_conv(xp, val(m.weight), val(m.bias), m.stride, (0, 0), m.dilation, 1)
    out = m(dt(x, device=device))
    dac(out, expected, device=device)
    if padding == "same":
        assert tuple(out.shape) == x.shape[:1] + (3,) + x.shape[2:]


def test_conv1d_numpy_and_unbatched(device):
    m = nn.Conv1d(4, 6, 3, stride=2, padding=1, dtype=fd(device)).to(device)
    x = held(rand(2, 4, 9, dtype=np.float64), device)
    expected = np_conv(x, val(m.weight), val(m.bias), m.stride, m.padding, m.dilation, 1)
    dac(m(dt(x, device=device)), expected, device=device)
    dac(m(dt(x[0], device=device)), expected[0], device=device)
    m = nn.Conv1d(4, 4, 4, padding="same", padding_mode="reflect", groups=2, dtype=fd(device)).to(
        device
    )
    xp = np.pad(x, [(0, 0), (0, 0), (1, 2)], mode="reflect")
    dac(
        m(dt(x, device=device)),
        np_conv(xp, val(m.weight), val(m.bias), (1,), (0,), (1,), 2),
        device=device,
    )


def test_conv_gradcheck_same_reflect(device):
    skip_f64_on_gpu(device, "float64 (which gradcheck needs)")
    m = nn.Conv2d(2, 2, (2, 3), padding="same", padding_mode="reflect", dtype=f64)
    x = leaf(rand(1, 2, 4, 5, dtype=np.float64))
    assert gradcheck(lambda x: m(x), (x,))


@pytest.mark.parametrize(
    "kw",
    [
        dict(stride=2, padding=1, output_padding=1),
        dict(stride=(2, 1), padding=(0, 1), groups=2, dilation=2),
        dict(bias=False),
    ],
)
def test_conv_transpose2d_numpy(kw, device):
    m = nn.ConvTranspose2d(4, 6, (3, 2), dtype=fd(device), **kw).to(device)
    assert tuple(m.weight.shape) == (4, 6 // m.groups, 3, 2)
    x = held(rand(2, 4, 3, 4, dtype=np.float64), device)
    expected = np_conv_transpose(
        x,
        val(m.weight),
        None if m.bias is None else val(m.bias),
        m.stride,
        m.padding,
        m.output_padding,
        m.groups,
        m.dilation,
    )
    dac(m(dt(x, device=device)), expected, device=device)


def test_conv_transpose_output_size(device):
    m = nn.ConvTranspose1d(3, 2, 3, stride=3, padding=1, dtype=fd(device)).to(device)
    x = held(rand(2, 3, 4, dtype=np.float64), device)
    # Valid lengths: (4 - 1) * 3 - 2 + 2 + 1 = 10 .. 12.
    for size in (10, 11, 12):
        out = m(dt(x, device=device), output_size=[size])
        assert tuple(out.shape) == (2, 2, size)
        expected = np_conv_transpose(
            x, val(m.weight), val(m.bias), m.stride, m.padding, (size - 10,), 1, (1,)
        )
        dac(out, expected, device=device)
    assert tuple(m(dt(x, device=device), output_size=(2, 2, 11)).shape) == (2, 2, 11)
    with pytest.raises(
        ValueError,
        match=r"requested an output size of \[13\], but valid sizes range from \[10\] "
        r"to \[12\]",
    ):
        m(dt(x, device=device), output_size=[13])
    with pytest.raises(ValueError, match="output_size must have 1 or 3 elements"):
        m(dt(x, device=device), output_size=[10, 10])
    m2 = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1).to(device)
    assert tuple(m2(rumus.randn(1, 3, 4, 5, device=device), output_size=(8, 10)).shape) == (
        1,
        2,
        8,
        10,
    )


def test_conv_default_init(device):
    rumus.manual_seed(0)
    m = nn.Conv2d(8, 256, 3).to(device)  # fan_in = 8 * 9
    check_uniform_init(m.weight, 1 / math.sqrt(72))
    check_uniform_init(m.bias, 1 / math.sqrt(72))
    m = nn.ConvTranspose2d(16, 512, 3, groups=2).to(
        device
    )  # weight (16, 256, 3, 3): fan_in from dim 1 = 256 * 9
    assert tuple(m.weight.shape) == (16, 256, 3, 3)
    check_uniform_init(m.weight, 1 / 48)
    check_uniform_init(m.bias, 1 / 48)
    m = nn.Conv1d(4, 128, 5, groups=2).to(device)  # weight (128, 2, 5)
    check_uniform_init(m.weight, 1 / math.sqrt(10))


def test_conv_repr_and_state_dict(device):
    assert repr(nn.Conv2d(3, 8, 3, padding=1).to(device)) == (
        "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"
    )
    assert repr(nn.Conv2d(3, 8, 3, stride=2, bias=False, padding_mode="reflect").to(device)) == (
        "Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), bias=False, padding_mode=reflect)"
    )
    assert repr(nn.Conv1d(4, 4, 3, padding="same", dilation=2, groups=2).to(device)) == (
        "Conv1d(4, 4, kernel_size=(3,), stride=(1,), padding=same, dilation=(2,), groups=2)"
    )
    assert repr(nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1).to(device)) == (
        "ConvTranspose2d(4, 2, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), "
        "output_padding=(1, 1))"
    )
    assert list(nn.Conv2d(3, 8, 3).to(device).state_dict()) == ["weight", "bias"]
    assert list(nn.ConvTranspose1d(3, 8, 3, bias=False).to(device).state_dict()) == ["weight"]


def test_conv_constructor_errors(device):
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2, device=device)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv1d(4, 3, 3, groups=2, device=device)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.Conv2d(4, 4, 3, groups=0, device=device)
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(4, 4, 3, padding="full", device=device)
    with pytest.raises(
        ValueError, match="padding='same' is not supported for strided convolutions"
    ):
        nn.Conv2d(4, 4, 3, stride=2, padding="same", device=device)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(4, 4, 3, padding_mode="mirror", device=device)
    with pytest.raises(
        ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'
    ):
        nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect", device=device)


# ------------------------------------------------------------------ pooling


def test_pool2d_numpy(device):
    x = rand(2, 3, 7, 6)
    ac(
        nn.MaxPool2d(3, 2, 1)(dt(x, device=device)),
        np_pool2d(x, 3, 2, 1, np.max, -np.inf).astype(np.float32),
    )
    ac(nn.AvgPool2d(2)(dt(x, device=device)), np_pool2d(x, 2, 2, 0, np.mean, 0).astype(np.float32))
    ac(
        nn.AvgPool2d(3, 2, 1)(dt(x, device=device)),
        np_pool2d(x, 3, 2, 1, np.mean, 0).astype(np.float32),
    )
    out, idx = nn.MaxPool2d(2, return_indices=True)(dt(x, device=device))
    flat = x.reshape(2, 3, -1)
    ac(out, np.take_along_axis(flat, to_np(idx).reshape(2, 3, -1), 2).reshape(out.shape))
    assert idx.dtype == rumus.int64


def test_pool1d_and_adaptive_numpy(device):
    x = rand(2, 3, 10)
    ac(nn.MaxPool1d(2)(dt(x, device=device)), x.reshape(2, 3, 5, 2).max(-1))
    ac(nn.AvgPool1d(5)(dt(x, device=device)), x.reshape(2, 3, 2, 5).mean(-1), rtol=1e-6)
    ac(nn.AdaptiveAvgPool1d(5)(dt(x, device=device)), x.reshape(2, 3, 5, 2).mean(-1), rtol=1e-6)
    ac(nn.AdaptiveMaxPool1d(2)(dt(x, device=device)), x.reshape(2, 3, 2, 5).max(-1))
    x2 = rand(2, 3, 4, 6)
    ac(nn.AdaptiveAvgPool2d(1)(dt(x2, device=device)), x2.mean((2, 3), keepdims=True), rtol=1e-6)
    ac(
        nn.AdaptiveAvgPool2d((2, 3))(dt(x2, device=device)),
        x2.reshape(2, 3, 2, 2, 3, 2).mean((3, 5)),
        rtol=1e-6,
    )
    ac(
        nn.AdaptiveMaxPool2d((2, 2))(dt(x2, device=device)),
        x2.reshape(2, 3, 2, 2, 2, 3).max((3, 5)),
    )


def test_pool_reprs(device):
    assert repr(nn.MaxPool2d(2).to(device)) == (
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    )
    assert repr(nn.MaxPool1d(3, 1, 1, ceil_mode=True).to(device)) == (
        "MaxPool1d(kernel_size=3, stride=1, padding=1, dilation=1, ceil_mode=True)"
    )
    assert (
        repr(nn.AvgPool1d(3).to(device)) == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    )
    assert repr(nn.AvgPool2d(3, 2, 1).to(device)) == "AvgPool2d(kernel_size=3, stride=2, padding=1)"
    assert repr(nn.AdaptiveAvgPool2d((5, 7)).to(device)) == "AdaptiveAvgPool2d(output_size=(5, 7))"
    assert repr(nn.AdaptiveMaxPool1d(4).to(device)) == "AdaptiveMaxPool1d(output_size=4)"


# ------------------------------------------------------------------ batch norm


def np_bn_train(x, axes, eps=1e-5):
    mean = x.mean(axes, keepdims=True)
    var = x.var(axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


@pytest.mark.parametrize(
    "cls, shape",
    [(nn.BatchNorm1d, (8, 3)), (nn.BatchNorm1d, (4, 3, 5)), (nn.BatchNorm2d, (4, 3, 2, 5))],
)
def test_batchnorm_train_eval_running_stats(cls, shape, device):
    m = cls(3, momentum=0.3, dtype=fd(device)).to(device)
    axes = (0,) + tuple(range(2, len(shape)))
    bshape = (1, 3) + (1,) * (len(shape) - 2)
    rm, rv = np.zeros(3), np.ones(3)
    with rumus.no_grad():
        m.weight.copy_(dt(np.array([1.0, 2.0, -0.5]), device=device))
        m.bias.copy_(dt(np.array([0.1, 0.0, 0.3]), device=device))
    w, b = val(m.weight).reshape(bshape), val(m.bias).reshape(bshape)
    for step in range(3):
        x = held(rand(*shape, seed=step, dtype=np.float64) * (step + 1) + step, device)
        out = m(dt(x, device=device))
        dac(out, np_bn_train(x, axes) * w + b, device=device)
        n = x.size // 3
        rm = 0.7 * rm + 0.3 * x.mean(axes)
        rv = 0.7 * rv + 0.3 * x.var(axes) * n / (n - 1)  # unbiased variance in the running stats
        dac(m.running_mean, rm, device=device)
        dac(m.running_var, rv, device=device)
        assert m.num_batches_tracked.item() == step + 1
    assert m.num_batches_tracked.dtype == rumus.int64
    m.eval()
    x = held(rand(*shape, seed=9, dtype=np.float64), device)
    out = m(dt(x, device=device))
    expected = (x - rm.reshape(bshape)) / np.sqrt(rv.reshape(bshape) + 1e-5) * w + b
    dac(out, expected, device=device)
    assert m.num_batches_tracked.item() == 3  # eval does not count batches


def test_batchnorm_cumulative_average_and_no_tracking(device):
    m = nn.BatchNorm1d(2, momentum=None, affine=False, dtype=fd(device)).to(device)
    xs = [held(rand(5, 2, seed=s, dtype=np.float64) + s, device) for s in range(4)]
    for x in xs:
        m(dt(x, device=device))
    dac(m.running_mean, np.mean([x.mean(0) for x in xs], 0), device=device)
    dac(m.running_var, np.mean([x.var(0, ddof=1) for x in xs], 0), device=device)
    assert list(m.state_dict()) == ["running_mean", "running_var", "num_batches_tracked"]
    m = nn.BatchNorm2d(2, track_running_stats=False, dtype=fd(device)).to(device)
    assert m.running_mean is None and m.running_var is None and m.num_batches_tracked is None
    assert list(m.state_dict()) == ["weight", "bias"]
    m.eval()
    x = held(rand(3, 2, 2, 2, dtype=np.float64), device)
    dac(
        m(dt(x, device=device)), np_bn_train(x, (0, 2, 3)), device=device
    )  # batch statistics in eval mode too


def test_batchnorm_defaults_repr_errors_and_old_checkpoints(device):
    m = nn.BatchNorm2d(3).to(device)
    ac(m.weight, np.ones(3, np.float32))
    ac(m.bias, np.zeros(3, np.float32))
    ac(m.running_mean, np.zeros(3, np.float32))
    ac(m.running_var, np.ones(3, np.float32))
    assert m.num_batches_tracked.item() == 0 and tuple(m.num_batches_tracked.shape) == ()
    assert list(m.state_dict()) == [
        "weight",
        "bias",
        "running_mean",
        "running_var",
        "num_batches_tracked",
    ]
    assert (
        repr(m) == "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, "
        "track_running_stats=True)"
    )
    assert repr(nn.BatchNorm1d(4, eps=1e-3, momentum=None, affine=False).to(device)) == (
        "BatchNorm1d(4, eps=0.001, momentum=None, affine=False, bias=False, "
        "track_running_stats=True)"
    )
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        m(rumus.randn(2, 3, 4, device=device))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3).to(device)(rumus.randn(2, 3, 4, 4, device=device))
    # A checkpoint without num_batches_tracked (PyTorch < 0.4.1, no version metadata) loads with 0.
    m(rumus.randn(2, 3, 2, 2, device=device))
    sd = {
        k: v
        for k, v in nn.BatchNorm2d(3).to(device).state_dict().items()
        if k != "num_batches_tracked"
    }
    m.load_state_dict(sd)
    assert m.num_batches_tracked.item() == 0
    m.reset_running_stats()
    ac(m.running_var, np.ones(3, np.float32))
    skip_f64_on_gpu(device, "Module.double() (float64; everything above passed)")
    m.double()  # only floating tensors change dtype
    assert m.running_mean.dtype == f64 and m.num_batches_tracked.dtype == rumus.int64


# ------------------------------------------------------------------ other norms


def test_layer_norm_group_norm_rms_norm_numpy(device):
    x = held(rand(3, 4, 5, dtype=np.float64), device)
    m = nn.LayerNorm(5, dtype=fd(device)).to(device)
    dac(m(dt(x, device=device)), np_bn_train(x, (-1,)), device=device)
    m = nn.LayerNorm([4, 5], elementwise_affine=False, eps=1e-3, dtype=fd(device)).to(device)
    assert m.weight is None and m.bias is None
    dac(m(dt(x, device=device)), np_bn_train(x, (1, 2), eps=1e-3), device=device)
    m = nn.LayerNorm(5, bias=False).to(device)
    assert m.bias is None and list(m.state_dict()) == ["weight"]
    assert (
        repr(nn.LayerNorm(4).to(device))
        == "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)"
    )

    g = nn.GroupNorm(2, 4, dtype=fd(device)).to(device)
    xg = held(rand(3, 4, 5, dtype=np.float64), device)
    expected = np_bn_train(xg.reshape(3, 2, 10), (2,)).reshape(3, 4, 5)
    dac(g(dt(xg, device=device)), expected, device=device)
    assert repr(g) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(3, 4, device=device)

    r = nn.RMSNorm(5, eps=1e-6, dtype=fd(device)).to(device)
    with rumus.no_grad():
        r.weight.copy_(dt(np.arange(1.0, 6.0), device=device))
    expected = x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-6) * np.arange(1.0, 6.0)
    dac(r(dt(x, device=device)), expected, device=device)
    ac(nn.RMSNorm([4, 5]).to(device).weight, np.ones((4, 5), np.float32))
    assert repr(nn.RMSNorm(4).to(device)) == "RMSNorm((4,), eps=None, elementwise_affine=True)"
    assert list(nn.RMSNorm(4, elementwise_affine=False).to(device).state_dict()) == []


def test_instance_norm_numpy(device):
    x = held(rand(2, 3, 6, dtype=np.float64), device)
    m = nn.InstanceNorm1d(3, dtype=fd(device)).to(device)
    assert list(m.state_dict()) == []
    dac(m(dt(x, device=device)), np_bn_train(x, (2,)), device=device)
    dac(m(dt(x[0], device=device)), np_bn_train(x, (2,))[0], device=device)  # unbatched (C, L)
    assert repr(nn.InstanceNorm2d(3).to(device)) == (
        "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, "
        "track_running_stats=False)"
    )
    m = nn.InstanceNorm2d(3, affine=True, track_running_stats=True, dtype=fd(device)).to(device)
    x2 = held(rand(2, 3, 4, 5, dtype=np.float64), device)
    dac(m(dt(x2, device=device)), np_bn_train(x2, (2, 3)), device=device)
    dac(m.running_mean, 0.1 * x2.mean((2, 3)).mean(0), device=device)
    m.eval()
    expected = (x2 - val(m.running_mean)[:, None, None]) / np.sqrt(
        val(m.running_var)[:, None, None] + 1e-5
    )
    dac(m(dt(x2, device=device)), expected, device=device)
    with pytest.raises(
        ValueError, match=r"expected input's size at dim=1 to match num_features \(3\), but got: 4"
    ):
        m(rumus.randn(2, 4, 3, 3, dtype=fd(device), device=device))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(3).to(device)(rumus.randn(2, 4, 5, device=device))
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        nn.InstanceNorm2d(3).to(device)(rumus.randn(3, 4, device=device))


# ------------------------------------------------------------------ embedding


def test_embedding_values_padding_and_grad(device):
    rumus.manual_seed(0)
    m = nn.Embedding(10, 3, padding_idx=2).to(device)
    w = val(m.weight)
    np.testing.assert_array_equal(w[2], 0)
    idx = np.array([[1, 2, 4], [2, 9, 1]])
    out = m(dt(idx, device=device))
    ac(out, w[idx])
    out.backward(dt(np.ones((2, 3, 3), np.float32), device=device))
    expected = np.zeros((10, 3), np.float32)
    np.add.at(expected, idx, 1.0)
    expected[2] = 0  # the padding row gets no gradient
    ac(m.weight.grad, expected)
    assert nn.Embedding(5, 2, padding_idx=-1).to(device).padding_idx == 4
    assert repr(m) == "Embedding(10, 3, padding_idx=2)"
    assert repr(nn.Embedding(5, 2, max_norm=1.0).to(device)) == "Embedding(5, 2, max_norm=1.0)"


def test_embedding_default_init_statistics(device):
    rumus.manual_seed(1)
    w = val(nn.Embedding(200, 50).to(device).weight)
    assert abs(w.mean()) < 5 / math.sqrt(w.size)
    assert abs(w.std() - 1) < 0.05


def test_embedding_from_pretrained(device):
    base = dt(rand(4, 3), device=device)
    m = nn.Embedding.from_pretrained(base)
    assert not m.weight.requires_grad
    ac(m(dt(np.array([3, 0]), device=device)), to_np(base)[[3, 0]])
    with rumus.no_grad():
        base[0].fill_(7.0)  # the weight shares the given tensor's storage
    ac(m.weight[0], np.full(3, 7.0, np.float32))
    m = nn.Embedding.from_pretrained(base, freeze=False, padding_idx=1)
    assert m.weight.requires_grad and m.padding_idx == 1
    with pytest.raises(
        AssertionError, match="Embeddings parameter is expected to be 2-dimensional"
    ):
        nn.Embedding.from_pretrained(rumus.randn(3, device=device))


def test_embedding_errors(device):
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(5, 2, padding_idx=5, device=device)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(5, 2, padding_idx=-6, device=device)
    with pytest.raises(AssertionError, match="Shape of weight does not match"):
        nn.Embedding(5, 2, _weight=rumus.randn(5, 3, device=device))
    with pytest.raises(NotImplementedError, match="sparse"):
        nn.Embedding(5, 2, sparse=True, device=device)


# ------------------------------------------------------------------ dropout


def test_dropout_train_eval(device):
    rumus.manual_seed(0)
    m = nn.Dropout(0.25)
    x = dt(np.ones((200, 100), np.float32), device=device)
    out = to_np(m(x))
    kept = out != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(out[kept], 1 / 0.75, rtol=1e-6)
    m.eval()
    ac(m(x), np.ones((200, 100), np.float32))
    m.train()
    assert (to_np(nn.Dropout(0.0)(x)) == 1).all()
    assert (to_np(nn.Dropout(1.0)(x)) == 0).all()
    assert repr(m) == "Dropout(p=0.25, inplace=False)"
    with pytest.raises(
        ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"
    ):
        nn.Dropout(1.5)
    with pytest.raises(
        ValueError, match="dropout probability has to be between 0 and 1, but got -0.1"
    ):
        nn.Dropout2d(-0.1)


def test_dropout2d_zeroes_whole_channels(device):
    rumus.manual_seed(0)
    m = nn.Dropout2d(0.5)
    out = to_np(m(dt(np.ones((8, 50, 3, 4), np.float32), device=device)))
    per_channel = out.reshape(8, 50, -1)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    assert 0.35 < (per_channel[..., 0] == 0).mean() < 0.65
    m.eval()
    assert (to_np(m(dt(np.ones((2, 3, 2, 2), np.float32), device=device))) == 1).all()


# ------------------------------------------------------------------ activations


def np_gelu(x):
    return x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


ACTIVATIONS = [
    (nn.ReLU(), lambda x: np.maximum(x, 0), "ReLU()"),
    (nn.ReLU6(), lambda x: np.clip(x, 0, 6), "ReLU6()"),
    (nn.LeakyReLU(0.2), lambda x: np.where(x >= 0, x, 0.2 * x), "LeakyReLU(negative_slope=0.2)"),
    (nn.ELU(0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x)), "ELU(alpha=0.5)"),
    (nn.GELU(), np_gelu, "GELU(approximate='none')"),
    (
        nn.GELU("tanh"),
        lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
        "GELU(approximate='tanh')",
    ),
    (nn.SiLU(), lambda x: x / (1 + np.exp(-x)), "SiLU()"),
    (nn.Mish(), lambda x: x * np.tanh(np.log1p(np.exp(x))), "Mish()"),
    (nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x)), "Sigmoid()"),
    (nn.Tanh(), np.tanh, "Tanh()"),
    (
        nn.Hardtanh(-0.5, 2.0),
        lambda x: np.clip(x, -0.5, 2.0),
        "Hardtanh(min_val=-0.5, max_val=2.0)",
    ),
    (
        nn.Softplus(2.0, 3.0),
        lambda x: np.where(2 * x > 3, x, np.log1p(np.exp(2 * x)) / 2),
        "Softplus(beta=2.0, threshold=3.0)",
    ),
    (nn.Softmax(dim=1), lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True), "Softmax(dim=1)"),
    (
        nn.LogSoftmax(dim=-1),
        lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True)),
        "LogSoftmax(dim=-1)",
    ),
    (nn.PReLU(), lambda x: np.where(x > 0, x, 0.25 * x), "PReLU(num_parameters=1)"),
]


@pytest.mark.parametrize("module, ref, text", ACTIVATIONS, ids=[a[2] for a in ACTIVATIONS])
def test_activation_numpy_and_repr(module, ref, text, device):
    if device != "cpu":
        module = copy.deepcopy(module).to(
            device
        )  # the shared instance (PReLU has a weight) stays on the CPU
    x = held(rand(3, 4, 5, lo=-4, hi=4, dtype=np.float64), device)
    out = module(dt(x, device=device))
    dac(out.double() if device == "cpu" else out, ref(x), rtol=1e-5, atol=1e-6, device=device)
    assert repr(module) == text


def test_activation_inplace_and_reprs(device):
    x = dt(np.array([-1.0, 2.0], np.float32), device=device)
    out = nn.ReLU(inplace=True)(x)
    ac(x, np.array([0.0, 2.0], np.float32))
    if device == "cpu":
        assert out.data_ptr() == x.data_ptr()
    else:  # data_ptr() raises NotImplementedError on the GPU: write through out, read x
        with rumus.no_grad():
            out.fill_(-42.0)
        assert (to_np(x) == -42).all(), "inplace ReLU's output does not share x's memory"
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.ReLU6(inplace=True)) == "ReLU6(inplace=True)"
    assert repr(nn.LeakyReLU(inplace=True)) == "LeakyReLU(negative_slope=0.01, inplace=True)"
    assert repr(nn.SiLU(True)) == "SiLU(inplace=True)"
    assert repr(nn.Softplus()) == "Softplus(beta=1.0, threshold=20.0)"
    assert repr(nn.Softmax()) == "Softmax(dim=None)"
    with pytest.raises(AssertionError, match="max_val"):
        nn.Hardtanh(1.0, 1.0)


def test_softmax_implicit_dim_warns(device):
    x = rand(2, 3)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        out = nn.Softmax()(dt(x, device=device))
    ac(out, np.exp(x) / np.exp(x).sum(1, keepdims=True))


def test_prelu_per_channel_values_and_grads(device):
    m = nn.PReLU(3, init=0.1, dtype=fd(device)).to(device)
    with rumus.no_grad():
        m.weight.copy_(dt(np.array([0.1, -0.2, 0.5]), device=device))
    x = held(rand(2, 3, 4, dtype=np.float64), device)
    a = held(np.array([0.1, -0.2, 0.5]), device).reshape(1, 3, 1)
    out = m(dt(x, device=device))
    dac(out, np.where(x > 0, x, a * x), device=device)
    out.sum().backward()
    dac(m.weight.grad, np.where(x > 0, 0, x).sum((0, 2)), device=device)
    with pytest.raises(RuntimeError, match="parameter numbers = 3 and channel size = 4"):
        m(rumus.randn(2, 4, dtype=fd(device), device=device))
    ac(nn.PReLU(3).to(device).weight, np.full(3, 0.25, np.float32))
    skip_f64_on_gpu(device, "float64 (which gradcheck needs; everything above passed)")
    xl = leaf(x)
    assert gradcheck(lambda t: m(t), (xl,))


# ------------------------------------------------------ padding, pixel shuffle, upsample, fold


@pytest.mark.parametrize(
    "module, np_pad, text",
    [
        (
            nn.ZeroPad2d(1),
            lambda x: np.pad(x, [(0, 0)] * 2 + [(1, 1), (1, 1)]),
            "ZeroPad2d((1, 1, 1, 1))",
        ),
        (nn.ZeroPad1d((2, 0)), lambda x: np.pad(x, [(0, 0)] * 2 + [(2, 0)]), "ZeroPad1d((2, 0))"),
        (
            nn.ConstantPad1d(2, 3.5),
            lambda x: np.pad(x, [(0, 0)] * 2 + [(2, 2)], constant_values=3.5),
            "ConstantPad1d(padding=(2, 2), value=3.5)",
        ),
        (
            nn.ConstantPad2d((1, 0, 2, 1), -1.0),
            lambda x: np.pad(x, [(0, 0)] * 2 + [(2, 1), (1, 0)], constant_values=-1),
            "ConstantPad2d(padding=(1, 0, 2, 1), value=-1.0)",
        ),
        (
            nn.ReflectionPad1d((2, 1)),
            lambda x: np.pad(x, [(0, 0)] * 2 + [(2, 1)], mode="reflect"),
            "ReflectionPad1d((2, 1))",
        ),
        (
            nn.ReflectionPad2d(2),
            lambda x: np.pad(x, [(0, 0)] * 2 + [(2, 2)] * 2, mode="reflect"),
            "ReflectionPad2d((2, 2, 2, 2))",
        ),
        (
            nn.ReplicationPad1d(3),
            lambda x: np.pad(x, [(0, 0)] * 2 + [(3, 3)], mode="edge"),
            "ReplicationPad1d((3, 3))",
        ),
        (
            nn.ReplicationPad2d((0, 1, 2, 0)),
            lambda x: np.pad(x, [(0, 0)] * 2 + [(2, 0), (0, 1)], mode="edge"),
            "ReplicationPad2d((0, 1, 2, 0))",
        ),
        (
            nn.CircularPad1d(1),
            lambda x: np.pad(x, [(0, 0)] * 2 + [(1, 1)], mode="wrap"),
            "CircularPad1d((1, 1))",
        ),
        (
            nn.CircularPad2d((1, 2, 0, 1)),
            lambda x: np.pad(x, [(0, 0)] * 2 + [(0, 1), (1, 2)], mode="wrap"),
            "CircularPad2d((1, 2, 0, 1))",
        ),
    ],
)
def test_padding_layers(module, np_pad, text, device):
    x = rand(2, 3, 4, 5) if "2d" in text else rand(2, 3, 5)  # 1-d padding takes 2-D or 3-D input
    ac(module(dt(x, device=device)), np_pad(x))
    assert repr(module) == text


def test_pixel_shuffle_upsample_fold(device):
    x = rand(2, 8, 3, 4)
    expected = x.reshape(2, 2, 2, 2, 3, 4).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 8)
    ps = nn.PixelShuffle(2)
    ac(ps(dt(x, device=device)), expected)
    ac(nn.PixelUnshuffle(2)(dt(expected, device=device)), x)
    assert repr(ps) == "PixelShuffle(upscale_factor=2)"
    assert repr(nn.PixelUnshuffle(3)) == "PixelUnshuffle(downscale_factor=3)"

    up = nn.Upsample(scale_factor=2)
    ac(up(dt(x, device=device)), x.repeat(2, 2).repeat(2, 3))
    assert repr(up) == "Upsample(scale_factor=2.0, mode='nearest')"
    assert (
        repr(nn.Upsample(size=(5, 7), mode="bilinear")) == "Upsample(size=(5, 7), mode='bilinear')"
    )
    assert tuple(nn.Upsample(size=(5, 7), mode="bilinear")(dt(x, device=device)).shape) == (
        2,
        8,
        5,
        7,
    )
    # align_corners=True with a 2x2 input: the corners stay, the middle interpolates linearly.
    small = np.array([[[[0.0, 3.0], [6.0, 9.0]]]], np.float32)
    ac(
        nn.UpsamplingBilinear2d(size=(3, 3))(dt(small, device=device)),
        np.array([[[[0.0, 1.5, 3.0], [3.0, 4.5, 6.0], [6.0, 7.5, 9.0]]]], np.float32),
    )
    ac(
        nn.UpsamplingNearest2d(scale_factor=2)(dt(small, device=device)),
        small.repeat(2, 2).repeat(2, 3),
    )
    assert (
        repr(nn.UpsamplingNearest2d(scale_factor=2))
        == "UpsamplingNearest2d(scale_factor=2.0, mode='nearest')"
    )

    img = rand(2, 3, 4, 5)
    unfold = nn.Unfold(kernel_size=(2, 3), stride=1)
    cols = unfold(dt(img, device=device))
    expected = np.stack(
        [img[:, :, i : i + 2, j : j + 3].reshape(2, -1) for i in range(3) for j in range(3)], -1
    )
    ac(cols, expected)
    fold = nn.Fold(output_size=(4, 5), kernel_size=(2, 3))
    counts = np.zeros((4, 5), np.float32)
    for i in range(3):
        for j in range(3):
            counts[i : i + 2, j : j + 3] += 1
    ac(fold(cols), img * counts, rtol=1e-6)
    assert repr(unfold) == "Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=1)"
    assert (
        repr(fold)
        == "Fold(output_size=(4, 5), kernel_size=(2, 3), dilation=1, padding=0, stride=1)"
    )


def test_cosine_similarity_pairwise_distance(device):
    a, b = rand(4, 5), rand(4, 5, seed=1)
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    ac(
        nn.CosineSimilarity()(dt(a, device=device), dt(b, device=device)),
        cos.astype(np.float32),
        rtol=1e-5,
    )
    ac(
        nn.PairwiseDistance()(dt(a, device=device), dt(b, device=device)),
        np.linalg.norm(a - b + 1e-6, axis=1).astype(np.float32),
    )


# ------------------------------------------------------------------ losses


def test_losses_numpy(device):
    def T(a):
        return dt(a, device=device)

    x, y = rand(4, 3), rand(4, 3, seed=1)
    ac(nn.MSELoss()(T(x), T(y)), np.float32(((x - y) ** 2).mean()))
    ac(nn.MSELoss(reduction="sum")(T(x), T(y)), np.float32(((x - y) ** 2).sum()), rtol=1e-5)
    ac(nn.L1Loss(reduction="none")(T(x), T(y)), np.abs(x - y))
    d = np.abs(x - y)
    ac(
        nn.SmoothL1Loss(beta=0.5)(T(x), T(y)),
        np.float32(np.where(d < 0.5, 0.5 * d**2 / 0.5, d - 0.25).mean()),
    )
    ac(
        nn.HuberLoss(delta=0.5)(T(x), T(y)),
        np.float32(np.where(d < 0.5, 0.5 * d**2, 0.5 * (d - 0.25)).mean()),
    )

    logits, target = rand(5, 4), np.array([0, 3, 1, 1, 2])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    ac(nn.CrossEntropyLoss()(T(logits), T(target)), np.float32(-logp[np.arange(5), target].mean()))
    wts = np.array([1.0, 2.0, 0.5, 3.0], np.float32)
    ce = nn.CrossEntropyLoss(weight=T(wts), ignore_index=1)
    keep = target != 1
    expected = -(wts[target] * logp[np.arange(5), target])[keep].sum() / wts[target][keep].sum()
    ac(ce(T(logits), T(target)), np.float32(expected), rtol=1e-5)
    assert list(ce.state_dict()) == ["weight"] and ce.ignore_index == 1
    ac(
        nn.NLLLoss(reduction="sum")(T(logp), T(target)),
        np.float32(-logp[np.arange(5), target].sum()),
        rtol=1e-5,
    )
    smooth = nn.CrossEntropyLoss(label_smoothing=0.2)(T(logits), T(target))
    q = np.full((5, 4), 0.2 / 4)
    q[np.arange(5), target] += 0.8
    ac(smooth, np.float32(-(q * logp).sum(1).mean()), rtol=1e-5)

    p, t = rand(6, lo=0.05, hi=0.95), (rand(6, seed=3) > 0).astype(np.float32)
    ac(
        nn.BCELoss()(T(p), T(t)),
        np.float32(-(t * np.log(p) + (1 - t) * np.log(1 - p)).mean()),
        rtol=1e-5,
    )
    z, pw = rand(6), np.float32(3.0)
    bce = nn.BCEWithLogitsLoss(pos_weight=T(np.array([pw])))
    sig = 1 / (1 + np.exp(-z))
    ac(
        bce(T(z), T(t)),
        np.float32(-(pw * t * np.log(sig) + (1 - t) * np.log(1 - sig)).mean()),
        rtol=1e-5,
    )
    assert list(bce.state_dict()) == ["pos_weight"]

    lp, tp = logp, np.exp(rand(5, 4, seed=4)) / np.exp(rand(5, 4, seed=4)).sum(1, keepdims=True)
    ac(
        nn.KLDivLoss(reduction="batchmean")(T(lp), T(tp)),
        np.float32((tp * (np.log(tp) - lp)).sum() / 5),
        rtol=1e-5,
    )
    a, b, s = rand(4, 3), rand(4, 3, seed=5), np.array([1, -1, 1, -1], np.float32)
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    ac(
        nn.CosineEmbeddingLoss(margin=0.1)(T(a), T(b), T(s)),
        np.float32(np.where(s > 0, 1 - cos, np.maximum(0, cos - 0.1)).mean()),
        rtol=1e-5,
    )
    x1, x2 = rand(4), rand(4, seed=6)
    ac(
        nn.MarginRankingLoss(margin=0.5, reduction="sum")(T(x1), T(x2), T(s)),
        np.float32(np.maximum(0, -s * (x1 - x2) + 0.5).sum()),
        rtol=1e-5,
    )


def test_loss_legacy_reduction_and_repr(device):
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert nn.MSELoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert nn.L1Loss(reduce=False).reduction == "none"
    assert nn.CrossEntropyLoss().reduction == "mean"
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"
    assert list(nn.CrossEntropyLoss().state_dict()) == []
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        nn.MSELoss(reduction="avg")(rumus.randn(2, device=device), rumus.randn(2, device=device))


def test_loss_backward_through_model(device):
    rumus.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    x, y = dt(rand(6, 4), device=device), dt(np.array([0, 1, 2, 0, 1, 2]), device=device)
    loss = nn.CrossEntropyLoss()(model(x), y)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


# ------------------------------------------------------------------ whole models


def test_small_cnn_train_step_changes_loss(device):
    rumus.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Dropout(0.1),
        nn.Linear(4 * 4 * 4, 3),
    ).to(device)
    x, y = dt(rand(8, 1, 8, 8), device=device), dt(np.arange(8) % 3, device=device)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for _ in range(5):
        model.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        with rumus.no_grad():
            for p in model.parameters():
                p.sub_(0.1 * p.grad)
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert model[1].num_batches_tracked.item() == 5
    model.eval()
    a, b = model(x), model(x)
    ac(a, val(b))  # eval: no dropout, running stats


# ------------------------------------------------------------------ PyTorch parity


def _np_state(module):
    return {k: to_np(v) for k, v in module.state_dict().items()}


def _torch_twin(torch, rmod, tmod):
    """Give the torch module the rumus module's state (strict: the key sets must agree)."""
    tmod.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in _np_state(rmod).items()})
    assert list(tmod.state_dict()) == list(rmod.state_dict())
    for k, v in tmod.state_dict().items():
        assert tuple(v.shape) == tuple(rmod.state_dict()[k].shape), k
    return tmod


def _outputs(out):
    return list(out) if isinstance(out, tuple) else [out]


def check_parity(torch, rmod, tmod, inputs, rtol=1e-5, atol=1e-5, grads=True, device="cpu"):
    """Same state -> same forward outputs, input and parameter gradients, state after forward
    (rmod already on ``device``; torch runs on its CPU)."""
    _torch_twin(torch, rmod, tmod)
    rin = [
        dt(a, device=device).requires_grad_()
        if a.dtype.kind == "f" and grads
        else dt(a, device=device)
        for a in inputs
    ]
    tin = [torch.tensor(a, requires_grad=a.dtype.kind == "f" and grads) for a in inputs]
    routs, touts = _outputs(rmod(*rin)), _outputs(tmod(*tin))
    assert len(routs) == len(touts)
    for r, t in zip(routs, touts):
        ac(r, t.detach().numpy(), rtol=rtol, atol=atol)
    for k, v in tmod.state_dict().items():  # running statistics after a training forward
        ac(rmod.state_dict()[k], v.numpy(), rtol=rtol, atol=atol)
    if not grads or not routs[0].requires_grad:
        return
    g = rand(*routs[0].shape, seed=7)
    routs[0].backward(dt(g, device=device))
    touts[0].backward(torch.tensor(g))
    for r, t in zip(rin, tin):
        if t.grad is not None:
            ac(r.grad, t.grad.numpy(), rtol=rtol, atol=atol)
    tgrads = {k: p.grad.numpy() for k, p in tmod.named_parameters() if p.grad is not None}
    rgrads = grads_of(rmod)
    assert sorted(rgrads) == sorted(tgrads)
    for k in tgrads:
        ac(rmod.get_parameter(k).grad, tgrads[k], rtol=rtol, atol=atol)


P = pytest.param
PARITY = [
    P("Linear", (5, 3), {}, [(4, 5)], id="linear"),
    P("Linear", (5, 3), {"bias": False}, [(2, 3, 5)], id="linear-nobias-3d"),
    P("Bilinear", (3, 4, 2), {}, [(5, 3), (5, 4)], id="bilinear"),
    P("Flatten", (), {}, [(2, 3, 4)], id="flatten"),
    P("Unflatten", (1, (2, 3)), {}, [(4, 6)], id="unflatten"),
    P("Conv1d", (4, 6, 3), {}, [(2, 4, 9)], id="conv1d"),
    P(
        "Conv1d",
        (4, 6, 3),
        {"stride": 2, "padding": 1, "dilation": 2, "groups": 2},
        [(2, 4, 11)],
        id="conv1d-sdg",
    ),
    P(
        "Conv1d",
        (4, 2, 4),
        {"padding": "same", "padding_mode": "circular"},
        [(2, 4, 9)],
        id="conv1d-same-circ",
    ),
    P(
        "Conv1d",
        (4, 2, 3),
        {"padding": "valid", "bias": False},
        [(4, 9)],
        id="conv1d-valid-unbatched",
    ),
    P("Conv2d", (3, 4, 3), {}, [(2, 3, 7, 6)], id="conv2d"),
    P(
        "Conv2d",
        (4, 6, (3, 2)),
        {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2), "groups": 2},
        [(2, 4, 7, 8)],
        id="conv2d-sdg",
    ),
    P(
        "Conv2d",
        (3, 4, (4, 3)),
        {"padding": "same", "dilation": (1, 2)},
        [(2, 3, 6, 7)],
        id="conv2d-same",
    ),
    P(
        "Conv2d",
        (3, 4, 3),
        {"padding": 2, "padding_mode": "reflect"},
        [(2, 3, 6, 7)],
        id="conv2d-reflect",
    ),
    P(
        "Conv2d",
        (3, 4, 3),
        {"padding": (1, 2), "padding_mode": "replicate"},
        [(3, 6, 7)],
        id="conv2d-replicate",
    ),
    P(
        "Conv2d",
        (3, 4, 3),
        {"padding": 1, "padding_mode": "circular"},
        [(2, 3, 6, 7)],
        id="conv2d-circular",
    ),
    P(
        "ConvTranspose1d",
        (4, 3, 3),
        {"stride": 2, "padding": 1, "output_padding": 1},
        [(2, 4, 5)],
        id="convT1d",
    ),
    P(
        "ConvTranspose1d",
        (4, 6, 3),
        {"groups": 2, "dilation": 2, "bias": False},
        [(4, 5)],
        id="convT1d-gd",
    ),
    P(
        "ConvTranspose2d",
        (4, 6, (3, 2)),
        {"stride": (2, 1), "padding": 1, "groups": 2},
        [(2, 4, 4, 5)],
        id="convT2d",
    ),
    P("MaxPool1d", (3, 2, 1), {}, [(2, 3, 10)], id="maxpool1d"),
    P("MaxPool2d", (3, 2, 1), {"ceil_mode": True}, [(2, 3, 8, 7)], id="maxpool2d-ceil"),
    P(
        "MaxPool2d",
        (2,),
        {"return_indices": True, "dilation": 2},
        [(2, 3, 8, 7)],
        id="maxpool2d-idx",
    ),
    P("AvgPool1d", (3, 2, 1), {"count_include_pad": False}, [(2, 3, 10)], id="avgpool1d"),
    P("AvgPool2d", (3, 2, 1), {"ceil_mode": True}, [(2, 3, 8, 7)], id="avgpool2d-ceil"),
    P("AvgPool2d", (2,), {"divisor_override": 3}, [(2, 3, 8, 6)], id="avgpool2d-div"),
    P("AdaptiveAvgPool1d", (4,), {}, [(2, 3, 10)], id="aavg1d"),
    P("AdaptiveAvgPool2d", ((3, 4),), {}, [(2, 3, 7, 9)], id="aavg2d"),
    P("AdaptiveMaxPool1d", (4,), {"return_indices": True}, [(2, 3, 10)], id="amax1d"),
    P("AdaptiveMaxPool2d", ((3, 2),), {}, [(2, 3, 7, 5)], id="amax2d"),
    P("BatchNorm1d", (4,), {}, [(6, 4)], id="bn1d"),
    P("BatchNorm1d", (4,), {"momentum": None, "affine": False}, [(3, 4, 5)], id="bn1d-3d"),
    P("BatchNorm2d", (3,), {"eps": 1e-3, "momentum": 0.2}, [(4, 3, 5, 5)], id="bn2d"),
    P("BatchNorm2d", (3,), {"track_running_stats": False}, [(4, 3, 2, 2)], id="bn2d-notrack"),
    P("BatchNorm2d", (3,), {"bias": False}, [(4, 3, 2, 2)], id="bn2d-nobias"),
    P("InstanceNorm1d", (4,), {}, [(3, 4, 7)], id="in1d"),
    P(
        "InstanceNorm2d",
        (3,),
        {"affine": True, "track_running_stats": True},
        [(2, 3, 5, 4)],
        id="in2d",
    ),
    P("LayerNorm", ((5,),), {}, [(3, 4, 5)], id="ln"),
    P("LayerNorm", ([4, 5],), {"elementwise_affine": False}, [(3, 4, 5)], id="ln-noaffine"),
    P("LayerNorm", (5,), {"bias": False, "eps": 1e-3}, [(3, 5)], id="ln-nobias"),
    P("GroupNorm", (2, 4), {}, [(3, 4, 5)], id="gn"),
    P("GroupNorm", (3, 6), {"affine": False}, [(2, 6, 2, 3)], id="gn-noaffine"),
    P("GroupNorm", (2, 4), {"bias": False}, [(3, 4, 5)], id="gn-nobias"),
    P("RMSNorm", (5,), {}, [(3, 4, 5)], id="rms"),
    P("RMSNorm", ([4, 5],), {"eps": 1e-5}, [(3, 4, 5)], id="rms-2d"),
    P("ReLU", (), {}, [(3, 4)], id="relu"),
    P("ReLU6", (), {}, [(3, 4)], id="relu6"),
    P("LeakyReLU", (0.2,), {}, [(3, 4)], id="leaky"),
    P("ELU", (0.5,), {}, [(3, 4)], id="elu"),
    P("GELU", (), {}, [(3, 4)], id="gelu"),
    P("GELU", ("tanh",), {}, [(3, 4)], id="gelu-tanh"),
    P("SiLU", (), {}, [(3, 4)], id="silu"),
    P("Mish", (), {}, [(3, 4)], id="mish"),
    P("Sigmoid", (), {}, [(3, 4)], id="sigmoid"),
    P("Tanh", (), {}, [(3, 4)], id="tanh"),
    P("Hardtanh", (-0.5, 1.5), {}, [(3, 4)], id="hardtanh"),
    P("Softplus", (2.0, 1.0), {}, [(3, 4)], id="softplus"),
    P("Softmax", (1,), {}, [(3, 4, 2)], id="softmax"),
    P("LogSoftmax", (-1,), {}, [(3, 4)], id="logsoftmax"),
    P("PReLU", (), {}, [(3, 4)], id="prelu"),
    P("PReLU", (4,), {"init": 0.1}, [(2, 4, 3)], id="prelu-channels"),
    P("ZeroPad2d", ((1, 2, 0, 1),), {}, [(2, 3, 4, 5)], id="zeropad2d"),
    P("ConstantPad1d", (2, 1.5), {}, [(2, 3, 4)], id="constpad1d"),
    P("ReflectionPad2d", (2,), {}, [(2, 3, 4, 5)], id="reflpad2d"),
    P("ReplicationPad1d", ((1, 3),), {}, [(2, 3, 4)], id="reppad1d"),
    P("CircularPad2d", ((1, 0, 2, 1),), {}, [(2, 3, 4, 5)], id="circpad2d"),
    P("PixelShuffle", (2,), {}, [(2, 8, 3, 3)], id="pixelshuffle"),
    P("PixelUnshuffle", (2,), {}, [(2, 2, 4, 6)], id="pixelunshuffle"),
    P(
        "Upsample",
        (),
        {"scale_factor": 2, "mode": "nearest"},
        [(2, 3, 4, 5)],
        id="upsample-nearest",
    ),
    P("Upsample", (), {"size": (7, 9), "mode": "bilinear"}, [(2, 3, 4, 5)], id="upsample-bilinear"),
    P(
        "Upsample",
        (),
        {"scale_factor": 1.5, "mode": "bilinear", "align_corners": True},
        [(2, 3, 4, 5)],
        id="upsample-bilinear-ac",
    ),
    P("Upsample", (), {"size": 7, "mode": "linear"}, [(2, 3, 4)], id="upsample-linear"),
    P("Unfold", ((2, 3),), {"padding": 1, "stride": 2}, [(2, 3, 5, 6)], id="unfold"),
    P("Fold", ((4, 5), (2, 2)), {}, [(2, 12, 12)], id="fold"),
    P("CosineSimilarity", (), {}, [(4, 5), (4, 5)], id="cosine"),
    P("PairwiseDistance", (), {"p": 1.0}, [(4, 5), (4, 5)], id="pairwise"),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # PyTorch's own performance note
@pytest.mark.parametrize("name, args, kwargs, shapes", PARITY)
def test_parity_with_torch(name, args, kwargs, shapes, device):
    torch = pytest.importorskip("torch")
    rumus.manual_seed(0)
    rmod = getattr(nn, name)(*args, **kwargs).to(device)
    try:
        tmod = getattr(torch.nn, name)(*args, **kwargs)
    except TypeError as e:  # e.g. bias= on the norm layers, new in later torch
        if "unexpected keyword argument" not in str(e):
            raise
        pytest.skip(f"torch {torch.__version__}: {e}")
    rrepr, trepr = repr(rmod), repr(tmod)
    if "bias=" in rrepr and "bias=" not in trepr:
        # Older torch leaves bias= out of the norm layers' repr; rumus follows the newer one.
        rrepr = re.sub(r", bias=(True|False)", "", rrepr)
    assert rrepr == trepr
    inputs = [rand(*s, seed=i) for i, s in enumerate(shapes)]
    check_parity(torch, rmod, tmod, inputs, rtol=1e-4, atol=1e-5, device=device)
    rmod.eval()
    tmod.eval()
    check_parity(torch, rmod, tmod, inputs, rtol=1e-4, atol=1e-5, grads=False, device=device)


@pytest.mark.parametrize(
    "kwargs",
    [{"padding_idx": 3}, {"max_norm": 1.0, "norm_type": 1.5}, {"scale_grad_by_freq": True}],
    ids=str,
)
def test_embedding_parity_with_torch(kwargs, device):
    torch = pytest.importorskip("torch")
    rmod, tmod = nn.Embedding(10, 4, **kwargs).to(device), torch.nn.Embedding(10, 4, **kwargs)
    assert repr(rmod) == repr(tmod)
    check_parity(torch, rmod, tmod, [np.array([[1, 3, 5], [3, 9, 1]])], device=device)


LOSSES = [
    P("MSELoss", {}, "reg", id="mse"),
    P("L1Loss", {"reduction": "sum"}, "reg", id="l1"),
    P("SmoothL1Loss", {"beta": 0.5}, "reg", id="smoothl1"),
    P("HuberLoss", {"delta": 0.7, "reduction": "none"}, "reg", id="huber"),
    P("CrossEntropyLoss", {}, "cls", id="ce"),
    P(
        "CrossEntropyLoss",
        {"weight": [1.0, 2.0, 0.5, 3.0], "ignore_index": 1, "label_smoothing": 0.1},
        "cls",
        id="ce-weight-ignore-smooth",
    ),
    P("CrossEntropyLoss", {"reduction": "sum"}, "cls2d", id="ce-2d"),
    P("CrossEntropyLoss", {}, "soft", id="ce-probs"),
    P("NLLLoss", {"weight": [1.0, 2.0, 0.5, 3.0]}, "cls", id="nll"),
    P("BCELoss", {"weight": [1.0, 0.5, 2.0]}, "prob", id="bce"),
    P("BCEWithLogitsLoss", {"pos_weight": [1.0, 3.0, 0.5]}, "bin", id="bcelogits"),
    P("KLDivLoss", {"reduction": "batchmean"}, "kl", id="kl"),
    P("KLDivLoss", {"reduction": "sum", "log_target": True}, "kllog", id="kl-logtarget"),
    P("CosineEmbeddingLoss", {"margin": 0.2}, "pair", id="cosemb"),
    P("MarginRankingLoss", {"margin": 0.3}, "rank", id="ranking"),
]


def _loss_inputs(kind):
    rng = np.random.default_rng(3)
    f = lambda *s: rng.uniform(-2, 2, s).astype(np.float32)  # noqa: E731
    if kind == "reg":
        return [f(4, 3), f(4, 3)], 1
    if kind == "cls":
        return [f(5, 4), np.array([0, 3, 1, 1, 2])], 1
    if kind == "cls2d":
        return [f(2, 4, 3, 2), rng.integers(0, 4, (2, 3, 2))], 1
    if kind == "soft":
        p = np.exp(f(5, 4))
        return [f(5, 4), (p / p.sum(1, keepdims=True)).astype(np.float32)], 1
    if kind == "prob":
        return [
            rng.uniform(0.05, 0.95, (4, 3)).astype(np.float32),
            (f(4, 3) > 0).astype(np.float32),
        ], 1
    if kind == "bin":
        return [f(4, 3), (f(4, 3) > 0).astype(np.float32)], 1
    if kind in ("kl", "kllog"):
        lp = f(5, 4)
        lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))
        t = np.exp(f(5, 4))
        t = (t / t.sum(1, keepdims=True)).astype(np.float32)
        return [lp, np.log(t) if kind == "kllog" else t], 1
    if kind == "pair":
        return [f(4, 5), f(4, 5), np.array([1, -1, -1, 1], np.float32)], 2
    return [f(6), f(6), np.sign(f(6)).astype(np.float32)], 2  # rank


@pytest.mark.parametrize("name, kwargs, kind", LOSSES)
def test_loss_parity_with_torch(name, kwargs, kind, device):
    torch = pytest.importorskip("torch")
    inputs, n_grad = _loss_inputs(kind)
    rkw = {
        k: dt(np.array(v, np.float32), device=device) if isinstance(v, list) else v
        for k, v in kwargs.items()
    }
    tkw = {k: torch.tensor(v) if isinstance(v, list) else v for k, v in kwargs.items()}
    rmod, tmod = getattr(nn, name)(**rkw), getattr(torch.nn, name)(**tkw)
    assert list(rmod.state_dict()) == list(tmod.state_dict())
    rin = [dt(a, device=device) for a in inputs]
    tin = [torch.tensor(a) for a in inputs]
    for t in rin[:n_grad]:
        t.requires_grad_()
    for t in tin[:n_grad]:
        t.requires_grad_()
    r, t = rmod(*rin), tmod(*tin)
    ac(r, t.detach().numpy(), rtol=1e-5, atol=1e-6)
    r.sum().backward()
    t.sum().backward()
    for a, b in zip(rin[:n_grad], tin[:n_grad]):
        ac(a.grad, b.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_default_init_bounds_match_torch(device):
    """PyTorch's fan rule for each layer gives the bound that rumus's default draws fill."""
    torch = pytest.importorskip("torch")
    fan_in = lambda w: torch.nn.init._calculate_fan_in_and_fan_out(w)[0]  # noqa: E731
    for make, bound_of in (
        (lambda m: m.Linear(30, 400), fan_in),
        (lambda m: m.Conv2d(6, 256, 3, groups=2), fan_in),
        (lambda m: m.ConvTranspose2d(6, 256, 3, groups=2), fan_in),
        (lambda m: m.Bilinear(9, 4, 200), lambda w: w.size(1)),
    ):
        r, t = make(nn).to(device), make(torch.nn)
        bound = 1 / math.sqrt(bound_of(t.weight))
        for name, tp in t.named_parameters():
            rp = val(r.get_parameter(name))
            assert rp.shape == tuple(tp.shape)
            assert np.abs(tp.detach().numpy()).max() <= bound
            assert bound * 0.9 < np.abs(rp).max() <= bound, name


def test_torch_state_dict_loads_into_rumus_model(device):
    torch = pytest.importorskip("torch")

    def build(m):
        return m.Sequential(
            m.Conv2d(1, 4, 3, padding=1),
            m.BatchNorm2d(4),
            m.ReLU(),
            m.MaxPool2d(2),
            m.Flatten(),
            m.Linear(4 * 3 * 3, 5),
            m.LayerNorm(5),
            m.Linear(5, 2),
        )

    torch.manual_seed(0)
    tmodel = build(torch.nn)
    tmodel(torch.randn(8, 1, 6, 6))  # move the BN running stats away from their defaults
    tmodel.eval()
    rmodel = build(nn).to(device)
    result = rmodel.load_state_dict(
        {k: dt(v.numpy(), device=device) for k, v in tmodel.state_dict().items()}
    )
    assert result.missing_keys == [] and result.unexpected_keys == []
    rmodel.eval()
    x = rand(3, 1, 6, 6)
    ac(rmodel(dt(x, device=device)), tmodel(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    assert rmodel[1].num_batches_tracked.item() == 1
