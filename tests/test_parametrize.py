"""nn.utils.parametrize, nn.utils.parametrizations (weight_norm, spectral_norm,
orthogonal) and the legacy nn.utils.weight_norm / spectral_norm."""

import copy

import numpy as np
import pytest
import rumus
from conftest import need_gpu
from rumus import nn
from rumus.nn.utils import parametrizations as P
from rumus.nn.utils import parametrize


def _np(t):
    return t.detach().cpu().numpy().copy()


def _seeded_linear(i, o, bias=True, dtype=rumus.float64):
    rumus.manual_seed(0)
    return nn.Linear(i, o, bias=bias).to(dtype=dtype)


# ---------------------------------------------------------------- parametrize


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).mT


class Scale(nn.Module):
    def forward(self, x):
        return 2 * x

    def right_inverse(self, x):
        return x / 2


def test_register_names_class_and_state_dict():
    m = _seeded_linear(3, 3)
    w = _np(m.weight).copy()
    weight_param = m.weight
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLinear"
    assert isinstance(m, nn.Linear)
    assert parametrize.type_before_parametrizations(m) is nn.Linear
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    # The original Parameter object is kept (PyTorch keeps it too).
    assert m.parametrizations.weight.original is weight_param
    np.testing.assert_allclose(_np(m.weight), np.triu(w) + np.triu(w, 1).T)
    assert "weight" not in dict(m.named_parameters())
    assert "parametrizations.weight.original" in dict(m.named_parameters())


def test_gradient_flows_to_original():
    m = _seeded_linear(3, 3, bias=False)
    parametrize.register_parametrization(m, "weight", Symmetric())
    x = rumus.tensor(np.arange(6.0).reshape(2, 3))
    m(x).sum().backward()
    g = _np(m.parametrizations.weight.original.grad)
    gw = np.tile(np.arange(6.0).reshape(2, 3).sum(0), (3, 1))  # d sum(x W^T) / dW
    np.testing.assert_allclose(g, np.triu(gw) + np.tril(gw, -1).T)


def test_chained_right_inverse_and_assignment():
    m = _seeded_linear(2, 2, bias=False)
    w = _np(m.weight).copy()
    parametrize.register_parametrization(m, "weight", Scale())
    parametrize.register_parametrization(m, "weight", Scale())
    # The first registration keeps the value (original = w / 2); the second is
    # appended to the chain without touching the original, as in PyTorch.
    np.testing.assert_allclose(_np(m.parametrizations.weight.original), w / 2)
    np.testing.assert_allclose(_np(m.weight), 2 * w)
    m.weight = rumus.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=rumus.float64)
    np.testing.assert_allclose(_np(m.parametrizations.weight.original), [[0.25, 0.5], [0.75, 1.0]])
    np.testing.assert_allclose(_np(m.weight), [[1.0, 2.0], [3.0, 4.0]])
    assert len(m.parametrizations.weight) == 2


def test_assignment_without_right_inverse_raises():
    m = _seeded_linear(2, 2)
    parametrize.register_parametrization(m, "weight", Symmetric())
    with pytest.raises(RuntimeError, match="right_inverse"):
        m.weight = rumus.zeros(2, 2, dtype=rumus.float64)


def test_shape_change_needs_unsafe():
    class First(nn.Module):
        def forward(self, x):
            return x[0]

    m = _seeded_linear(3, 2)
    with pytest.raises(ValueError, match="shape"):
        parametrize.register_parametrization(m, "weight", First())
    assert not parametrize.is_parametrized(m)
    parametrize.register_parametrization(m, "weight", First(), unsafe=True)
    assert tuple(m.weight.shape) == (3,)


def test_unknown_name_raises():
    with pytest.raises(ValueError, match="does not have a parameter"):
        parametrize.register_parametrization(nn.Linear(2, 2), "nope", Symmetric())
    with pytest.raises(ValueError, match="does not have a parametrization"):
        parametrize.remove_parametrizations(nn.Linear(2, 2), "weight")


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations(leave):
    m = _seeded_linear(3, 3)
    w = _np(m.weight).copy()
    parametrize.register_parametrization(m, "weight", Symmetric())
    sym = _np(m.weight).copy()
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=leave)
    assert type(m) is nn.Linear
    assert not hasattr(m, "parametrizations")
    assert list(m.state_dict()) == ["bias", "weight"]
    assert isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(_np(m.weight), sym if leave else w)


def test_remove_sequence_original_needs_leave_parametrized():
    m = _seeded_linear(3, 2)
    P.weight_norm(m)
    with pytest.raises(ValueError, match="leave_parametrized"):
        parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    w = _np(m.weight).copy()
    parametrize.remove_parametrizations(m, "weight")
    np.testing.assert_allclose(_np(m.weight), w)
    assert isinstance(m.weight, nn.Parameter)


def test_cached_computes_once():
    calls = []

    class Count(nn.Module):
        def forward(self, x):
            calls.append(1)
            return x

    m = _seeded_linear(2, 2)
    parametrize.register_parametrization(m, "weight", Count())
    calls.clear()
    with parametrize.cached():
        a, b = m.weight, m.weight
        assert a is b
    assert len(calls) == 1
    m.weight
    assert len(calls) == 2


def test_state_dict_round_trip_and_deepcopy():
    m = _seeded_linear(3, 2)
    P.weight_norm(m)
    m2 = nn.Linear(3, 2).to(dtype=rumus.float64)
    P.weight_norm(m2)
    m2.load_state_dict(m.state_dict())
    np.testing.assert_allclose(_np(m2.weight), _np(m.weight))
    m3 = copy.deepcopy(m)
    assert type(m3).__name__ == "ParametrizedLinear"
    np.testing.assert_allclose(_np(m3.weight), _np(m.weight))
    assert m3.parametrizations.weight.original0 is not m.parametrizations.weight.original0


# ---------------------------------------------------------------- weight_norm


def _norm_except(v, dim):
    axes = tuple(d for d in range(v.ndim) if d != dim)
    return np.sqrt((v * v).sum(axis=axes, keepdims=True))


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_values_and_gradients(dim):
    m = _seeded_linear(4, 3)
    w = _np(m.weight).copy()
    P.weight_norm(m, dim=dim)
    g = _np(m.parametrizations.weight.original0)
    v = _np(m.parametrizations.weight.original1)
    expected_g = np.sqrt((w * w).sum()) if dim is None else _norm_except(w, dim)
    np.testing.assert_allclose(g, expected_g)
    np.testing.assert_allclose(v, w)
    np.testing.assert_allclose(_np(m.weight), w)  # g v / ||v|| == w at registration
    # Gradients through g and v, against finite differences.
    g_t = rumus.tensor(g * 1.3, requires_grad=True)
    v_t = rumus.tensor(v, requires_grad=True)
    fn = m.parametrizations.weight[0]
    assert rumus.autograd.gradcheck(lambda a, b: fn(a, b), (g_t, v_t))


def test_weight_norm_conv():
    rumus.manual_seed(0)
    c = nn.Conv2d(2, 3, 3).to(dtype=rumus.float64)
    w = _np(c.weight).copy()
    P.weight_norm(c)
    assert tuple(c.parametrizations.weight.original0.shape) == (3, 1, 1, 1)
    np.testing.assert_allclose(_np(c.parametrizations.weight.original0), _norm_except(w, 0))
    np.testing.assert_allclose(_np(c.weight), w)


# ---------------------------------------------------------------- spectral_norm


def test_spectral_norm_values_and_power_iteration():
    m = _seeded_linear(5, 4)
    w = _np(m.weight).copy()
    P.spectral_norm(m)
    assert list(m.state_dict()) == [
        "bias",
        "parametrizations.weight.original",
        "parametrizations.weight.0._u",
        "parametrizations.weight.0._v",
    ]
    sigma = np.linalg.svd(w, compute_uv=False)[0]
    # 15 warm-up iterations + 1 per access: sigma is close to exact.
    np.testing.assert_allclose(_np(m.weight), w / sigma, rtol=1e-4)
    # In eval mode u and v stay; weight = w / (u^T W v).
    m.eval()
    u, v = _np(m.parametrizations.weight[0]._u), _np(m.parametrizations.weight[0]._v)
    np.testing.assert_allclose(_np(m.weight), w / (u @ w @ v))
    np.testing.assert_array_equal(_np(m.parametrizations.weight[0]._u), u)
    # Training mode: each access runs one power-iteration step (u, then v).
    m.train()
    _ = m.weight
    u1 = w @ v
    u1 /= np.linalg.norm(u1)
    v1 = w.T @ u1
    v1 /= np.linalg.norm(v1)
    np.testing.assert_allclose(_np(m.parametrizations.weight[0]._u), u1, rtol=1e-10)
    np.testing.assert_allclose(_np(m.parametrizations.weight[0]._v), v1, rtol=1e-10)


def test_spectral_norm_gradient_and_dims():
    m = _seeded_linear(4, 3, bias=False)
    P.spectral_norm(m)
    m.eval()
    sn = m.parametrizations.weight[0]
    w = rumus.tensor(_np(m.parametrizations.weight.original), requires_grad=True)
    assert rumus.autograd.gradcheck(lambda x: sn(x), (w,))
    rumus.manual_seed(0)
    ct = nn.ConvTranspose2d(2, 3, 2).to(dtype=rumus.float64)
    wct = _np(ct.weight).copy()
    P.spectral_norm(ct)  # dim 1 for transposed convolutions
    mat = np.moveaxis(wct, 1, 0).reshape(3, -1)
    np.testing.assert_allclose(
        _np(ct.weight), wct / np.linalg.svd(mat, compute_uv=False)[0], rtol=1e-4
    )
    with pytest.raises(IndexError, match="Dimension out of range"):
        P.spectral_norm(nn.Linear(2, 2), dim=2)
    with pytest.raises(ValueError, match="n_power_iterations"):
        P.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


# ---------------------------------------------------------------- orthogonal


@pytest.mark.parametrize(
    "shape,orth_map",
    [
        ((4, 4), None),
        ((5, 3), None),
        ((3, 5), None),
        ((4, 4), "cayley"),
        ((5, 3), "cayley"),
        ((5, 3), "matrix_exp"),
        ((4, 4), "householder"),
    ],
)
def test_orthogonal(shape, orth_map):
    m = _seeded_linear(shape[1], shape[0], bias=False)
    P.orthogonal(m, orthogonal_map=orth_map)
    expected_map = orth_map or ("matrix_exp" if shape[0] == shape[1] else "householder")
    assert m.parametrizations.weight[0].orthogonal_map.name == expected_map
    w = _np(m.weight)
    gram = w.T @ w if shape[0] >= shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-10)
    assert list(m.state_dict()) == [
        "parametrizations.weight.original",
        "parametrizations.weight.0.base",
    ]
    # Training moves along orthogonal matrices.
    opt = rumus.optim.SGD(m.parameters(), lr=0.1)
    x = rumus.tensor(np.random.default_rng(0).normal(size=(6, shape[1])))
    before = w.copy()
    for _ in range(3):
        opt.zero_grad()
        ((m(x) - 1.0) ** 2).sum().backward()
        opt.step()
    w = _np(m.weight)
    gram = w.T @ w if shape[0] >= shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-9)
    assert np.abs(w - before).max() > 1e-3


def test_orthogonal_assignment_and_no_trivialization():
    m = _seeded_linear(3, 3, bias=False)
    P.orthogonal(m)
    q = np.linalg.qr(np.random.default_rng(1).normal(size=(3, 3)))[0]
    m.weight = rumus.tensor(q)
    np.testing.assert_allclose(_np(m.weight), q, atol=1e-12)
    # Householder without trivialization: the weight becomes Q of W = QR (diag R > 0).
    m = _seeded_linear(3, 5, bias=False)
    w = _np(m.weight).copy()
    P.orthogonal(m, orthogonal_map="householder", use_trivialization=False)
    qq, rr = np.linalg.qr(w)
    np.testing.assert_allclose(_np(m.weight), qq * np.sign(np.diag(rr)), atol=1e-12)
    m = _seeded_linear(3, 3, bias=False)
    P.orthogonal(m, orthogonal_map="cayley", use_trivialization=False)
    with pytest.raises(NotImplementedError):
        m.weight = rumus.tensor(q)
    with pytest.raises(ValueError, match="orthogonal_map"):
        P.orthogonal(nn.Linear(2, 2), orthogonal_map="svd")
    with pytest.raises(ValueError, match="matrix"):
        P.orthogonal(nn.Linear(2, 2), "bias")


def test_orthogonal_gradcheck_maps():
    for orth_map, shape in [("matrix_exp", (3, 3)), ("cayley", (4, 2)), ("householder", (4, 2))]:
        m = _seeded_linear(shape[1], shape[0], bias=False)
        P.orthogonal(m, orthogonal_map=orth_map)
        fn = m.parametrizations.weight[0]
        x = rumus.tensor(np.random.default_rng(2).normal(size=shape) * 0.3, requires_grad=True)
        assert rumus.autograd.gradcheck(lambda t: fn(t), (x,)), orth_map


# ---------------------------------------------------------------- legacy hooks


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_legacy_weight_norm():
    m = _seeded_linear(4, 3)
    w = _np(m.weight).copy()
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(m)
    assert list(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    np.testing.assert_allclose(_np(m.weight_g), _norm_except(w, 0))
    x = rumus.tensor(np.ones((2, 4)))
    m(x).sum().backward()
    assert m.weight_g.grad is not None and m.weight_v.grad is not None
    with pytest.raises(RuntimeError, match="two weight_norm"):
        nn.utils.weight_norm(m)
    with rumus.no_grad():
        m.weight_g.mul_(2)
    m(x)
    np.testing.assert_allclose(_np(m.weight), 2 * w)
    nn.utils.remove_weight_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(_np(m.weight), 2 * w)
    with pytest.raises(ValueError, match="not found"):
        nn.utils.remove_weight_norm(m)


def test_legacy_spectral_norm():
    m = _seeded_linear(5, 4)
    w = _np(m.weight).copy()
    nn.utils.spectral_norm(m)
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    u0 = _np(m.weight_u).copy()
    m(rumus.tensor(np.ones((1, 5))))
    # One step: v = normalize(W^T u), u = normalize(W v); weight = W / (u^T W v).
    v1 = w.T @ u0
    v1 /= np.linalg.norm(v1)
    u1 = w @ v1
    u1 /= np.linalg.norm(u1)
    np.testing.assert_allclose(_np(m.weight_u), u1, rtol=1e-10)
    np.testing.assert_allclose(_np(m.weight), w / (u1 @ w @ v1), rtol=1e-10)
    for _ in range(30):
        m(rumus.tensor(np.ones((1, 5))))
    sigma = np.linalg.svd(w, compute_uv=False)[0]
    np.testing.assert_allclose(_np(m.weight), w / sigma, rtol=1e-6)
    nn.utils.remove_spectral_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(_np(m.weight), w / sigma, rtol=1e-6)


def test_gpu_weight_norm_and_spectral_norm():
    need_gpu()
    m = _seeded_linear(4, 3, dtype=rumus.float32)
    w = _np(m.weight).copy()
    m = m.gpu()
    P.weight_norm(m)
    np.testing.assert_allclose(_np(m.weight), w, rtol=1e-5)
    m2 = _seeded_linear(4, 3, dtype=rumus.float32).gpu()
    P.spectral_norm(m2)
    np.testing.assert_allclose(_np(m2.weight), w / np.linalg.svd(w, compute_uv=False)[0], rtol=1e-3)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_weight_norm_loads_a_legacy_state_dict():
    legacy = _seeded_linear(4, 3)
    nn.utils.weight_norm(legacy)
    with rumus.no_grad():
        legacy.weight_g.mul_(1.5)
    legacy(rumus.tensor(np.ones((1, 4))))
    model = nn.Sequential(nn.Linear(4, 3).to(dtype=rumus.float64))
    P.weight_norm(model[0])
    model.load_state_dict({"0." + k: v for k, v in legacy.state_dict().items()})
    np.testing.assert_allclose(_np(model[0].weight), _np(legacy.weight))
    np.testing.assert_allclose(
        _np(model[0].parametrizations.weight.original0), _np(legacy.weight_g)
    )


def test_transfer_parametrizations_and_params():
    src = _seeded_linear(3, 3)
    parametrize.register_parametrization(src, "weight", Symmetric())
    dst = nn.Linear(3, 3).to(dtype=rumus.float64)
    parametrize.transfer_parametrizations_and_params(src, dst)
    assert parametrize.is_parametrized(dst, "weight")
    assert dst.parametrizations.weight.original is src.parametrizations.weight.original
    np.testing.assert_allclose(_np(dst.weight), _np(src.weight))
    assert parametrize.transfer_parametrizations_and_params(nn.Linear(2, 2), dst) is dst
