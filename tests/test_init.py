"""nn.init: gains, fan rules, the distributions' bounds and moments, structured inits, and
reproducibility through rumus.manual_seed and Generators."""

import math
import statistics
import warnings

import numpy as np
import pytest
import rumus
from conftest import fd, to_np
from rumus import nn
from rumus.nn import init

N = 40_000  # draws for moment checks: the standard error of a std estimate is ~0.4%


@pytest.fixture(autouse=True)
def seeded():
    rumus.manual_seed(1234)  # statistical checks see the same draws whatever ran before


def big(*shape, dtype=rumus.float32, device="cpu"):
    return rumus.empty(shape, dtype=dtype, device=device)


# --------------------------------------------------------------------------
# devices: tests that touch tensors run on the CPU and on the GPU (``device``
# fixture). The GPU has no float64: where a test uses float64 only as "a float"
# it gets float32 there (``wide``).
# --------------------------------------------------------------------------


def on(device, t):
    """``t`` checked to live on ``device``, as numpy."""
    assert t.device.type == device, t.device
    return to_np(t)


def phi(x):
    return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def Phi(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


@pytest.mark.parametrize(
    "name,param,expected",
    [
        ("linear", None, 1),
        ("conv1d", None, 1),
        ("conv2d", None, 1),
        ("conv_transpose2d", None, 1),
        ("sigmoid", None, 1),
        ("tanh", None, 5 / 3),
        ("relu", None, math.sqrt(2)),
        ("leaky_relu", None, math.sqrt(2 / (1 + 0.01**2))),
        ("leaky_relu", 0.2, math.sqrt(2 / 1.04)),
        ("leaky_relu", 1, 1.0),
        ("leaky_relu", math.sqrt(5), math.sqrt(2 / 6)),
        ("selu", None, 0.75),
    ],
)
def test_calculate_gain(name, param, expected):
    assert init.calculate_gain(name, param) == pytest.approx(expected, rel=1e-15)


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match="negative_slope a not a valid number"):
        init.calculate_gain("leaky_relu", "a")


@pytest.mark.parametrize(
    "shape,fans",
    [
        ((5, 3), (3, 5)),  # Linear: (out, in)
        ((8, 4, 3, 2), (24, 48)),  # Conv2d: (out, in, kh, kw), receptive field 6
        ((6, 2, 5), (10, 30)),  # Conv1d
        ((2, 3, 0), (0, 0)),
    ],
)
def test_fan_in_and_fan_out(shape, fans, device):
    assert init._calculate_fan_in_and_fan_out(rumus.empty(shape, device=device)) == fans


def test_fan_needs_two_dims(device):
    for shape in ((), (4,)):
        with pytest.raises(ValueError, match="fewer than 2 dimensions"):
            init._calculate_fan_in_and_fan_out(rumus.empty(shape, device=device))
    with pytest.raises(ValueError, match="Mode fan_avg not supported, please use one of"):
        init.kaiming_uniform_(rumus.empty(3, 3, device=device), mode="fan_avg")


def test_inits_run_without_history_and_return_the_tensor(device):
    p = nn.Parameter(rumus.zeros(20, 10, device=device))
    fns = [
        lambda t: init.uniform_(t, -1, 1),
        init.normal_,
        init.trunc_normal_,
        lambda t: init.constant_(t, 2.0),
        init.ones_,
        init.zeros_,
        init.eye_,
        init.xavier_uniform_,
        init.xavier_normal_,
        init.kaiming_uniform_,
        init.kaiming_normal_,
        init.orthogonal_,
        lambda t: init.sparse_(t, 0.5),
    ]
    for fn in fns:
        assert fn(p) is p
        assert p.is_leaf and p.requires_grad and p.grad_fn is None and type(p) is nn.Parameter
        assert p.device.type == device
    (p * 2).sum().backward()  # the parameter is still a usable leaf
    np.testing.assert_array_equal(on(device, p.grad), np.full((20, 10), 2.0, np.float32))


def test_uniform_and_normal_moments(device):
    u = on(device, init.uniform_(big(N, device=device), -2.0, 4.0)).astype(np.float64)
    assert u.min() >= -2.0 and u.max() < 4.0
    assert u.mean() == pytest.approx(1.0, abs=0.03)
    assert u.std() == pytest.approx(6 / math.sqrt(12), rel=0.02)
    n = on(device, init.normal_(big(N, dtype=fd(device), device=device), mean=3.0, std=0.5))
    assert n.dtype == (np.float64 if device == "cpu" else np.float32)
    n = n.astype(np.float64)
    assert n.mean() == pytest.approx(3.0, abs=0.01)
    assert n.std() == pytest.approx(0.5, rel=0.02)


def test_constant_ones_zeros_eye(device):
    t = rumus.empty(3, 4, device=device)
    np.testing.assert_array_equal(
        on(device, init.constant_(t, 0.25)), np.full((3, 4), 0.25, np.float32)
    )
    np.testing.assert_array_equal(on(device, init.ones_(t)), np.ones((3, 4), np.float32))
    np.testing.assert_array_equal(on(device, init.zeros_(t)), np.zeros((3, 4), np.float32))
    np.testing.assert_array_equal(on(device, init.eye_(t)), np.eye(3, 4, dtype=np.float32))
    tall = rumus.empty(5, 2, dtype=fd(device), device=device)
    np.testing.assert_array_equal(on(device, init.eye_(tall)), np.eye(5, 2))
    base = rumus.zeros(4, 3, device=device)
    init.eye_(base.t())  # a transposed view is written through
    np.testing.assert_array_equal(on(device, base), np.eye(3, 4, dtype=np.float32).T)
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(rumus.empty(2, 2, 2, device=device))


@pytest.mark.parametrize(
    "shape,groups", [((4, 2, 3), 1), ((4, 2, 3, 3), 2), ((3, 5, 3, 2), 1), ((6, 1, 1, 3, 3), 3)]
)
def test_dirac(shape, groups, device):
    w = on(device, init.dirac_(rumus.full(shape, 7.0, device=device), groups))
    expected = np.zeros(shape, np.float32)
    per = shape[0] // groups
    centre = tuple(s // 2 for s in shape[2:])
    for g in range(groups):
        for d in range(min(per, shape[1])):
            expected[(g * per + d, d) + centre] = 1
    np.testing.assert_array_equal(w, expected)
    assert w.sum() == groups * min(per, shape[1])


def test_dirac_is_identity_convolution(device):
    # conv1d with a dirac kernel (padding 1) returns its input, computed here with NumPy.
    w = on(device, init.dirac_(rumus.empty(3, 3, 3, device=device)))
    x = np.random.default_rng(0).normal(size=(3, 8)).astype(np.float32)
    xp = np.pad(x, ((0, 0), (1, 1)))
    out = np.stack(
        [sum(np.convolve(xp[i], w[o, i][::-1], "valid") for i in range(3)) for o in range(3)]
    )
    np.testing.assert_allclose(out, x, rtol=1e-6)


def test_dirac_errors(device):
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        init.dirac_(rumus.empty(2, 2, device=device))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(rumus.empty(5, 2, 3, device=device), groups=2)


def test_xavier(device):
    w = rumus.empty(200, 100, device=device)  # fan_in 100, fan_out 200
    a = 2.0 * math.sqrt(6 / 300)
    v = on(device, init.xavier_uniform_(w, gain=2.0)).astype(np.float64)
    assert np.abs(v).max() <= a and np.abs(v).max() > 0.99 * a
    assert v.std() == pytest.approx(a / math.sqrt(3), rel=0.02)
    conv = rumus.empty(64, 32, 5, 5, device=device)  # fan_in 800, fan_out 1600
    v = on(device, init.xavier_normal_(conv)).astype(np.float64)
    assert v.std() == pytest.approx(math.sqrt(2 / 2400), rel=0.02)
    assert abs(v.mean()) < 0.003


def test_kaiming(device):
    w = rumus.empty(400, 100, device=device)
    # PyTorch's Linear default: a = sqrt(5) gives bound 1 / sqrt(fan_in)
    v = on(device, init.kaiming_uniform_(w, a=math.sqrt(5))).astype(np.float64)
    assert np.abs(v).max() <= 0.1 and np.abs(v).max() > 0.099
    v = on(device, init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu")).astype(np.float64)
    bound = math.sqrt(2) * math.sqrt(3 / 400)
    assert np.abs(v).max() <= bound and np.abs(v).max() > 0.99 * bound
    v = on(device, init.kaiming_normal_(w, nonlinearity="relu")).astype(np.float64)
    assert v.std() == pytest.approx(math.sqrt(2 / 100), rel=0.02)
    conv = rumus.empty(32, 4, 3, 3, device=device)  # fan_in 36
    v = on(device, init.kaiming_normal_(conv, a=0.2, mode="FAN_IN")).astype(np.float64)
    assert v.std() == pytest.approx(math.sqrt(2 / 1.04) / 6, rel=0.05)


def test_kaiming_zero_element_is_noop(device):
    t = rumus.empty(0, 3, device=device)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert init.kaiming_uniform_(t) is t
    with pytest.warns(UserWarning, match="no-op"):
        init.kaiming_normal_(t)


def truncnorm_moments(mean, std, a, b):
    al, be = (a - mean) / std, (b - mean) / std
    z = Phi(be) - Phi(al)
    d = (phi(al) - phi(be)) / z
    m = mean + std * d
    var = std**2 * (1 + (al * phi(al) - be * phi(be)) / z - d * d)
    return m, math.sqrt(var)


@pytest.mark.filterwarnings("ignore:mean is more than 2 std")
@pytest.mark.parametrize(
    "mean,std,a,b",
    [
        (0.0, 1.0, -2.0, 2.0),  # the default
        (0.0, 0.02, -2.0, 2.0),  # ViT-style: bounds far outside, a plain normal
        (1.0, 2.0, 0.0, 5.0),  # asymmetric
        (0.0, 1.0, 2.5, 4.0),  # upper tail only: sampled mirrored
        (0.0, 1.0, -5.0, -3.0),  # lower tail only
        (0.0, 1.0, 1.0, 1.2),  # narrow
    ],
)
def test_trunc_normal_moments_and_cdf(mean, std, a, b, device):
    v = on(device, init.trunc_normal_(big(N, dtype=fd(device), device=device), mean, std, a, b))
    v = v.astype(np.float64)
    assert v.min() >= a and v.max() <= b
    m, s = truncnorm_moments(mean, std, a, b)
    assert v.mean() == pytest.approx(m, abs=4 * s / math.sqrt(N))
    assert v.std() == pytest.approx(s, rel=0.03)
    # Kolmogorov-Smirnov distance to the truncated CDF
    al, be = Phi((a - mean) / std), Phi((b - mean) / std)
    xs = np.sort(v)[:: N // 200]
    cdf = np.array([(Phi((x - mean) / std) - al) / (be - al) for x in xs])
    emp = (np.arange(len(xs)) * (N // 200) + 1) / N
    assert np.abs(cdf - emp).max() < 0.015


def test_trunc_normal_float32_and_warning(device):
    v = on(device, init.trunc_normal_(big(100, 100, device=device), std=0.5, a=-1.0, b=1.0))
    assert v.dtype == np.float32 and v.min() >= -1.0 and v.max() <= 1.0
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        init.trunc_normal_(big(10, device=device), mean=10.0, std=1.0, a=-1.0, b=1.0)
    with pytest.raises(ValueError, match="expected a <= b"):
        init.trunc_normal_(big(10, device=device), a=1.0, b=-1.0)


def test_normal_quantile_accuracy():
    p = np.array([1e-300, 1e-12, 1e-5, 0.001, 0.02425, 0.1, 0.3, 0.5, 0.7, 0.97, 0.999, 1 - 1e-9])
    expected = np.array([statistics.NormalDist().inv_cdf(x) for x in p])
    np.testing.assert_allclose(init._ndtri(p), expected, rtol=2e-9, atol=1e-9)


@pytest.mark.parametrize(
    "shape,gain", [((3, 5), 1.0), ((5, 3), 1.0), ((6, 2, 3), 2.0), ((4, 4), 0.5)]
)
def test_orthogonal(shape, gain, device):
    w = on(device, init.orthogonal_(rumus.empty(shape, dtype=fd(device), device=device), gain=gain))
    w = w.astype(np.float64).reshape(shape[0], -1)
    rows, cols = w.shape
    gram = w @ w.T if rows <= cols else w.T @ w
    # float32 on the GPU: the float32 bound of test_orthogonal_float32_and_errors
    atol = 1e-12 if device == "cpu" else 1e-6
    np.testing.assert_allclose(gram, gain**2 * np.eye(min(rows, cols)), atol=atol)


def test_orthogonal_float32_and_errors(device):
    w = on(device, init.orthogonal_(rumus.empty(8, 8, device=device))).astype(np.float64)
    np.testing.assert_allclose(w @ w.T, np.eye(8), atol=1e-6)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(rumus.empty(3, device=device))
    e = rumus.empty(0, 3, device=device)
    assert init.orthogonal_(e) is e


def test_sparse(device):
    w = on(
        device, init.sparse_(rumus.empty(100, 40, device=device), sparsity=0.25, std=0.5)
    ).astype(np.float64)
    zeros = (w == 0).sum(axis=0)
    np.testing.assert_array_equal(zeros, np.full(40, 25))
    assert w[w != 0].std() == pytest.approx(0.5, rel=0.06)
    w = on(device, init.sparse_(rumus.empty(7, 3, device=device), sparsity=0.3))
    np.testing.assert_array_equal((w == 0).sum(axis=0), np.full(3, 3))  # ceil(2.1)
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.sparse_(rumus.empty(2, 2, 2, device=device), 0.5)


RANDOM_INITS = {
    "uniform_": lambda t, g: init.uniform_(t, generator=g),
    "normal_": lambda t, g: init.normal_(t, generator=g),
    "trunc_normal_": lambda t, g: init.trunc_normal_(t, generator=g),
    "xavier_uniform_": lambda t, g: init.xavier_uniform_(t, generator=g),
    "xavier_normal_": lambda t, g: init.xavier_normal_(t, generator=g),
    "kaiming_uniform_": lambda t, g: init.kaiming_uniform_(t, generator=g),
    "kaiming_normal_": lambda t, g: init.kaiming_normal_(t, generator=g),
    "orthogonal_": lambda t, g: init.orthogonal_(t, generator=g),
    "sparse_": lambda t, g: init.sparse_(t, 0.5, generator=g),
}


@pytest.mark.parametrize("name", sorted(RANDOM_INITS))
def test_reproducible(name, device):
    fn = RANDOM_INITS[name]

    def draw(generator=None):
        return on(device, fn(rumus.empty(6, 5, device=device), generator))

    rumus.manual_seed(11)
    a = draw()
    rumus.manual_seed(11)
    b = draw()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, draw())  # the default generator moved on
    g1, g2 = rumus.Generator().manual_seed(5), rumus.Generator().manual_seed(5)
    rumus.manual_seed(3)
    ref = rumus.rand(4, device=device)
    rumus.manual_seed(3)
    c = draw(g1)
    np.testing.assert_array_equal(c, draw(g2))
    np.testing.assert_array_equal(
        on(device, rumus.rand(4, device=device)), to_np(ref)
    )  # a generator leaves the default alone
    assert not np.array_equal(c, draw(rumus.Generator().manual_seed(6)))


def test_against_torch(device):
    torch = pytest.importorskip("torch")
    for name, param in [
        ("tanh", None),
        ("relu", None),
        ("leaky_relu", 0.3),
        ("selu", None),
        ("conv3d", None),
    ]:
        assert init.calculate_gain(name, param) == pytest.approx(
            torch.nn.init.calculate_gain(name, param)
        )
    for shape in [(5, 3), (8, 4, 3, 2), (6, 2, 5), (2, 3, 4, 5, 6)]:
        assert init._calculate_fan_in_and_fan_out(
            rumus.empty(shape, device=device)
        ) == torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    for shape, groups in [((4, 2, 3, 3), 2), ((6, 4, 3, 3, 3), 1)]:
        np.testing.assert_array_equal(
            on(device, init.dirac_(rumus.empty(shape, device=device), groups)),
            torch.nn.init.dirac_(torch.empty(shape), groups).numpy(),
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.nn.init.trunc_normal_(
            torch.empty(N, dtype=torch.float64), 1.0, 2.0, 0.0, 5.0
        ).numpy()
    r = on(device, init.trunc_normal_(big(N, dtype=fd(device), device=device), 1.0, 2.0, 0.0, 5.0))
    r = r.astype(np.float64)
    assert r.mean() == pytest.approx(t.mean(), abs=0.04) and r.std() == pytest.approx(
        t.std(), rel=0.03
    )
