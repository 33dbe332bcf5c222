"""nn.Module, nn.Parameter and the containers: registration, traversal, modes, hooks,
dtype conversion, state_dict save/load (and every load error), repr, copy and pickle.

The test modules are defined here (a Linear-like ``Lin``), so nothing depends on the layers."""

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest
import rumus
from conftest import assert_close, make, tensor, to_np, wide
from rumus import nn


class Lin(nn.Module):
    """y = x W^T + b, like nn.Linear."""

    def __init__(self, i, o, bias=True, seed=0):
        super().__init__()
        self.in_features, self.out_features = i, o
        self.weight = nn.Parameter(tensor(make((o, i), rng=np.random.default_rng(seed))))
        if bias:
            self.bias = nn.Parameter(tensor(make((o,), rng=np.random.default_rng(seed + 100))))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        y = x @ self.weight.t()
        return y if self.bias is None else y + self.bias

    def extra_repr(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Relu(nn.Module):
    def forward(self, x):
        return x.relu()


class Net(nn.Module):
    def __init__(self, seed=0):
        super().__init__()
        self.fc1 = Lin(4, 3, seed=seed)
        self.act = Relu()
        self.fc2 = Lin(3, 2, seed=seed + 1)
        self.register_buffer("running", rumus.zeros(2))
        self.register_buffer("scratch", rumus.zeros(1), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) + self.running


def net_forward_np(net, x):
    h = np.maximum(x @ to_np(net.fc1.weight).T + to_np(net.fc1.bias), 0)
    return h @ to_np(net.fc2.weight).T + to_np(net.fc2.bias) + to_np(net.running)


NAMES = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]


# Tests that touch tensor data run on the CPU and on the GPU (``device``
# fixture); the test modules are built on the CPU and moved with .to(device).


def on(device, module):
    """``module`` moved to ``device`` (every parameter and buffer checked)."""
    module.to(device)
    for name, t in list(module.named_parameters()) + list(module.named_buffers()):
        if t is not None:
            assert t.device.type == device, name
    return module


def not_shared(a, b, device):
    """``a`` and ``b`` hold separate memory. CPU: different data_ptr(). GPU (no
    data_ptr()): a write to a detached ``a`` does not show in ``b`` (this
    overwrites ``a``'s values)."""
    if device == "cpu":
        assert a.data_ptr() != b.data_ptr()
        return
    before = to_np(b)
    with rumus.no_grad():
        a.detach().fill_(-42.0)
    np.testing.assert_array_equal(to_np(b), before)


def shared(a, b, device):
    """``a`` and ``b`` are the same memory (GPU: checked by a write through ``a``,
    which overwrites their values)."""
    if device == "cpu":
        assert a.data_ptr() == b.data_ptr()
        return
    with rumus.no_grad():
        a.detach().fill_(-42.0)
    assert (to_np(b) == -42).all(), "the two tensors do not share memory"


# ------------------------------------------------------------------ Parameter


def test_parameter_basics(device):
    data = rumus.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    p = nn.Parameter(data)
    assert isinstance(p, rumus.Tensor) and type(p) is nn.Parameter
    assert p.requires_grad and p.is_leaf and p.grad_fn is None and p.device.type == device
    assert not data.requires_grad
    if device == "cpu":
        assert (
            p.data_ptr() == data.data_ptr()
        )  # shares storage (on the GPU: the write below shows it)
    with rumus.no_grad():
        data[0, 0] = 9.0
    assert p[0, 0].item() == 9.0
    assert type(p * 2) is rumus.Tensor and type(p.detach()) is rumus.Tensor
    assert not nn.Parameter(data, requires_grad=False).requires_grad
    assert nn.Parameter(data, False).requires_grad is False
    empty = nn.Parameter()
    assert tuple(empty.shape) == (0,) and empty.requires_grad


def test_parameter_repr(device):
    p = nn.Parameter(rumus.tensor([1.0, 2.0], device=device))
    where = "" if device == "cpu" else "device='gpu:0', "
    assert repr(p) == f"Parameter containing:\ntensor([1., 2.], {where}requires_grad=True)"
    assert str(p) == repr(p)


def test_parameter_bad_input(device):
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        nn.Parameter([1.0, 2.0])
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(rumus.tensor([1, 2], device=device))


def test_parameter_from_non_leaf_is_a_new_leaf(device):
    x = rumus.tensor([1.0, 2.0], requires_grad=True, device=device)
    p = nn.Parameter(x * 3)
    assert p.is_leaf and p.grad_fn is None
    (p * p).sum().backward()
    assert_close(p.grad, np.array([6.0, 12.0], np.float32))
    assert x.grad is None


def test_parameter_deepcopy_and_pickle(device):
    dt = wide(device)
    p = nn.Parameter(
        rumus.tensor([1.0, 2.0], dtype=getattr(rumus, dt), device=device), requires_grad=False
    )
    for q in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert type(q) is nn.Parameter and q.requires_grad is False and q.device.type == device
        assert_close(q, np.array([1.0, 2.0], dt))
        not_shared(q, p, device)
    a, b = copy.deepcopy([p, p])
    assert a is b  # the memo keeps one copy of a shared parameter


# ------------------------------------------------------------------ registration and traversal


def test_registration_and_naming_order():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == NAMES
    assert [p for p in net.parameters()] == [
        net.fc1.weight,
        net.fc1.bias,
        net.fc2.weight,
        net.fc2.bias,
    ]
    assert all(type(p) is nn.Parameter for p in net.parameters())
    assert [n for n, _ in net.named_buffers()] == ["running", "scratch"]
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "fc2"]
    assert list(net.children()) == [net.fc1, net.act, net.fc2]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "act", "fc2"]
    assert list(net.modules())[0] is net
    assert [n for n, _ in net.named_parameters(prefix="model")] == ["model." + n for n in NAMES]
    assert list(net.named_parameters(recurse=False)) == []
    assert [n for n, _ in net.fc1.named_parameters(recurse=False)] == ["weight", "bias"]
    assert [n for n, _ in net.named_modules(prefix="m")] == ["m", "m.fc1", "m.act", "m.fc2"]
    assert "fc1" in net._modules and "fc1" not in net.__dict__


def test_forward_values(device):
    net = on(device, Net())
    x = make((5, 4))
    assert_close(
        net(tensor(x, device=device)),
        net_forward_np(net, x).astype(np.float32),
        rtol=1e-5,
        atol=1e-5,
    )


def test_none_parameter_and_module_are_skipped():
    lin = Lin(3, 2, bias=False)
    assert lin.bias is None
    assert [n for n, _ in lin.named_parameters()] == ["weight"]
    assert list(lin.state_dict()) == ["weight"]
    net = Net()
    net.act = None
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "fc2"]
    assert "(act): None" in repr(net)


def test_shared_parameters_and_modules_deduplicated():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Lin(3, 3)
            self.b = Lin(3, 3, seed=5)
            self.b.weight = self.a.weight
            self.c = self.a  # the same module twice

    m = Tied()
    assert [n for n, _ in m.named_parameters()] == ["a.weight", "a.bias", "b.bias"]
    assert len(list(m.parameters())) == 3
    assert [n for n, _ in m.named_parameters(remove_duplicate=False)] == [
        "a.weight",
        "a.bias",
        "b.weight",
        "b.bias",
        "c.weight",
        "c.bias",
    ]
    assert [n for n, _ in m.named_modules()] == ["", "a", "b"]
    assert [n for n, _ in m.named_modules(remove_duplicate=False)] == ["", "a", "b", "c"]
    assert list(m.state_dict()) == [
        "a.weight",
        "a.bias",
        "b.weight",
        "b.bias",
        "c.weight",
        "c.bias",
    ]
    assert [n for n, _ in m.named_children()] == ["a", "b"]


def test_getattr_setattr_delattr():
    net = Net()
    assert isinstance(net.fc1, Lin) and isinstance(net.running, rumus.Tensor)
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        net.nope
    # a Parameter over a plain attribute moves it into _parameters
    net.extra = 3
    net.extra = nn.Parameter(rumus.ones(2))
    assert "extra" in net._parameters and "extra" not in net.__dict__
    # a buffer name stays a buffer on reassignment
    net.running = rumus.ones(2)
    assert "running" in net._buffers and "running" not in net.__dict__
    assert_close(net.running, np.ones(2, np.float32))
    net.running = None
    assert net.running is None and "running" in net._buffers
    # a module replaced by a Parameter
    net.act = nn.Parameter(rumus.zeros(1))
    assert "act" in net._parameters and "act" not in net._modules
    del net.act
    assert "act" not in net._parameters
    del net.running
    assert "running" not in net._buffers
    del net.fc1
    assert [n for n, _ in net.named_children()] == ["fc2"]
    net.plain = 1
    del net.plain
    with pytest.raises(AttributeError):
        net.plain


def test_setattr_errors():
    net = Net()
    with pytest.raises(
        TypeError,
        match=r"cannot assign 'rumus.Tensor' as parameter 'weight' "
        r"\(rumus.nn.Parameter or None expected\)",
    ):
        net.fc1.weight = rumus.ones(3, 4)
    with pytest.raises(
        TypeError,
        match=r"cannot assign 'rumus.Tensor' as child module 'fc1' "
        r"\(rumus.nn.Module or None expected\)",
    ):
        net.fc1 = rumus.ones(2)
    with pytest.raises(
        TypeError,
        match=r"cannot assign 'int' as buffer 'running' \(rumus.Tensor or None expected\)",
    ):
        net.running = 3

    class Early(nn.Module):
        def __init__(self, what):
            if what == "param":
                self.p = nn.Parameter(rumus.ones(1))
            elif what == "module":
                self.m = Relu()
            else:
                self.register_buffer("b", rumus.ones(1))
            super().__init__()

    with pytest.raises(
        AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"
    ):
        Early("param")
    with pytest.raises(
        AttributeError, match=r"cannot assign module before Module.__init__\(\) call"
    ):
        Early("module")
    with pytest.raises(
        AttributeError, match=r"cannot assign buffer before Module.__init__\(\) call"
    ):
        Early("buffer")


def test_register_errors():
    net = Net()
    with pytest.raises(KeyError, match=r'buffer name can.*t contain "\.", got: a\.b'):
        net.register_buffer("a.b", rumus.ones(1))
    with pytest.raises(KeyError, match='buffer name can.*t be empty string ""'):
        net.register_buffer("", rumus.ones(1))
    with pytest.raises(KeyError, match="attribute 'fc1' already exists"):
        net.register_buffer("fc1", rumus.ones(1))
    with pytest.raises(TypeError, match="buffer name should be a string. Got int"):
        net.register_buffer(1, rumus.ones(1))
    with pytest.raises(
        TypeError,
        match=r"cannot assign 'list' object to buffer 'x' \(rumus Tensor or None required\)",
    ):
        net.register_buffer("x", [1.0])
    with pytest.raises(
        TypeError,
        match=r"cannot assign 'rumus.Tensor' object to parameter 'w' "
        r"\(rumus.nn.Parameter or None required\)",
    ):
        net.register_parameter("w", rumus.ones(1))
    with pytest.raises(KeyError, match=r'parameter name can.*t contain "\."'):
        net.register_parameter("a.b", nn.Parameter(rumus.ones(1)))
    with pytest.raises(KeyError, match="attribute 'forward' already exists"):
        net.register_parameter("forward", nn.Parameter(rumus.ones(1)))
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        net.add_module("m", 3)
    with pytest.raises(KeyError, match=r'module name can.*t contain "\.", got: a\.b'):
        net.add_module("a.b", Relu())
    with pytest.raises(KeyError, match="attribute 'running' already exists"):
        net.add_module("running", Relu())
    net.register_module("extra", Relu())
    net.register_buffer("none_buf", None)
    assert net.extra is net._modules["extra"] and net.none_buf is None
    assert "none_buf" not in net.state_dict()


def test_get_submodule_parameter_buffer():
    outer = nn.Module()
    outer.net = Net()
    assert outer.get_submodule("") is outer
    assert outer.get_submodule("net.fc2") is outer.net.fc2
    assert outer.get_parameter("net.fc1.weight") is outer.net.fc1.weight
    assert outer.get_buffer("net.running") is outer.net.running
    with pytest.raises(AttributeError, match="Net has no attribute `fc9`"):
        outer.get_submodule("net.fc9")
    with pytest.raises(AttributeError, match="`running` is not an nn.Module"):
        outer.get_submodule("net.running")
    with pytest.raises(AttributeError, match="`running` is not an nn.Parameter"):
        outer.get_parameter("net.running")
    with pytest.raises(AttributeError, match="Lin has no attribute `w`"):
        outer.get_parameter("net.fc1.w")
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        outer.get_buffer("net.fc1.weight")


def test_dir_lists_members():
    net = Net()
    d = dir(net)
    for name in ("fc1", "act", "running", "scratch", "forward", "training", "state_dict"):
        assert name in d
    assert d == sorted(d)


def test_missing_forward():
    with pytest.raises(
        NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'
    ):
        nn.Module()(rumus.ones(1))

    class NoForward(nn.Module):
        pass

    with pytest.raises(
        NotImplementedError,
        match=r'Module \[NoForward\] is missing the required "forward" function',
    ):
        NoForward()(rumus.ones(1))


# ------------------------------------------------------------------ modes, grads, apply


def test_train_eval_propagation():
    net = Net()
    assert net.training and net.fc1.training
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    assert net.train() is net
    assert all(m.training for m in net.modules())
    net.fc1.train(False)
    assert net.training and not net.fc1.training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")


def test_requires_grad_and_zero_grad(device):
    net = on(device, Net())
    assert net.requires_grad_(False) is net
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_()
    x = make((5, 4))
    net(tensor(x, device=device)).sum().backward()
    grads = {n: to_np(p.grad) for n, p in net.named_parameters()}
    assert np.abs(grads["fc2.bias"] - 5.0).max() == 0  # d sum / d bias = batch size
    net.zero_grad(set_to_none=False)
    for p in net.parameters():
        assert_close(p.grad, np.zeros(tuple(p.shape), np.float32))
        assert p.grad.device.type == device
    net(tensor(x, device=device)).sum().backward()  # accumulates into the zeroed grads
    for n, p in net.named_parameters():
        np.testing.assert_allclose(to_np(p.grad), grads[n], rtol=1e-6)
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_apply_visits_children_first(device):
    net = on(device, Net())
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Lin", "Relu", "Lin", "Net"]

    def reset(m):
        if isinstance(m, Lin):
            with rumus.no_grad():
                m.weight.fill_(0.5)

    net.apply(reset)
    assert_close(net.fc2.weight, np.full((2, 3), 0.5, np.float32))


# ------------------------------------------------------------------ dtype / device conversion


def test_to_dtype_replaces_changed_parameters(device):
    if device == "gpu":
        pytest.skip(
            "float64 is not supported on the GPU (by design); see "
            "test_to_device_replaces_changed_parameters"
        )
    net = Net()
    net.register_buffer("steps", rumus.tensor(3))
    net(tensor(make((2, 4)))).sum().backward()
    before = {n: to_np(p) for n, p in net.named_parameters()}
    grad_before = to_np(net.fc1.weight.grad)
    assert net.to(rumus.float64) is net
    for n, p in net.named_parameters():
        assert (
            type(p) is nn.Parameter and p.dtype == rumus.float64 and p.requires_grad and p.is_leaf
        )
        np.testing.assert_array_equal(to_np(p), before[n].astype(np.float64))
    assert net.fc1.weight.grad.dtype == rumus.float64
    np.testing.assert_array_equal(to_np(net.fc1.weight.grad), grad_before.astype(np.float64))
    assert net.running.dtype == rumus.float64 and net.scratch.dtype == rumus.float64
    assert net.steps.dtype == rumus.int64  # integer buffers keep their dtype
    x = make((3, 4), "float64")
    assert_close(net(tensor(x)), net_forward_np(net, x))


def test_to_keeps_objects_when_nothing_changes(device):
    net = on(device, Net())
    params = list(net.parameters())
    running = net.running
    own = net.cpu if device == "cpu" else net.gpu
    for call in (
        lambda: net.to(rumus.float32),
        lambda: net.to(device),
        lambda: net.to(rumus.device(device)),
        lambda: net.float(),
        own,
        lambda: net.to(device=device, dtype=rumus.float32),
    ):
        assert call() is net
        assert all(a is b for a, b in zip(net.parameters(), params))
        assert net.running is running


def test_to_device_replaces_changed_parameters(device):
    """Moving to another device (CPU -> ``device`` -> CPU) makes new Parameter
    objects (as PyTorch does for dtype changes) carrying values, requires_grad
    and their gradients; tied parameters stay tied, integer buffers keep their
    dtype. To the same device it is a no-op."""
    net = Net()
    net.register_buffer("steps", rumus.tensor(3))
    net.fc2.bias.requires_grad_(False)
    net(tensor(make((2, 4)))).sum().backward()
    before = {n: to_np(p) for n, p in net.named_parameters()}
    grad_before = to_np(net.fc1.weight.grad)
    old = dict(net.named_parameters())
    assert net.to(device) is net
    for n, p in net.named_parameters():
        assert (
            type(p) is nn.Parameter
            and p.device.type == device
            and p.dtype == rumus.float32
            and p.is_leaf
        )
        assert p.requires_grad == (n != "fc2.bias")
        assert (p is old[n]) == (device == "cpu"), n
        np.testing.assert_array_equal(to_np(p), before[n])
    assert net.fc1.weight.grad.device.type == device
    np.testing.assert_array_equal(to_np(net.fc1.weight.grad), grad_before)
    assert net.running.device.type == device and net.scratch.device.type == device
    assert (
        net.steps.device.type == device and net.steps.dtype == rumus.int64 and net.steps.item() == 3
    )
    x = make((3, 4))
    assert_close(
        net(tensor(x, device=device)),
        net_forward_np(net, x).astype(np.float32),
        rtol=1e-5,
        atol=1e-5,
    )
    net.cpu()
    assert (
        all(p.device.type == "cpu" for p in net.parameters()) and net.running.device.type == "cpu"
    )
    np.testing.assert_array_equal(to_np(net.fc1.weight), before["fc1.weight"])


def test_to_argument_forms():
    net = Net()
    net.to("cpu", rumus.float64)
    assert net.fc1.weight.dtype == rumus.float64
    net.to(dtype=rumus.float32)
    assert net.fc1.weight.dtype == rumus.float32
    net.to(rumus.ones(1, dtype=rumus.float64))
    assert net.fc2.bias.dtype == rumus.float64
    net.to(rumus.device("cpu"), rumus.float32, non_blocking=True)
    assert net.fc2.bias.dtype == rumus.float32
    with pytest.raises(
        TypeError,
        match="nn.Module.to only accepts floating point dtypes, but got desired dtype=rumus.int64",
    ):
        net.to(rumus.int64)
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        net.to("cpu", rumus.float32, 3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'dtyp'"):
        net.to(dtyp=rumus.float32)
    with pytest.raises(RuntimeError, match="device"):
        net.to("cuda")


def test_half_bfloat16_double_type(device):
    if device == "gpu":
        pytest.skip("float16/bfloat16/float64 are not supported on the GPU (by design)")
    net = Net()
    net.register_buffer("steps", rumus.tensor(3))
    ref = to_np(net.fc1.weight)
    net.half()
    assert all(p.dtype == rumus.float16 for p in net.parameters())
    net.float()
    assert all(p.dtype == rumus.float32 for p in net.parameters())
    np.testing.assert_allclose(to_np(net.fc1.weight), ref, rtol=1e-3)
    net.bfloat16()
    assert net.fc2.weight.dtype == rumus.bfloat16 and net.steps.dtype == rumus.int64
    net.double()
    assert net.fc2.weight.dtype == rumus.float64
    net.type(rumus.float32)  # type() casts every tensor, integer buffers too
    assert net.fc2.weight.dtype == rumus.float32 and net.steps.dtype == rumus.float32


def test_to_keeps_tied_parameters_tied(device):
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Lin(3, 3)
            self.b = Lin(3, 3, seed=5)
            self.b.weight = self.a.weight
            self.register_buffer("shared", rumus.zeros(2))
            self.a.register_buffer("shared", self.shared)

    if device == "cpu":
        m = Tied().double()
        assert m.a.weight is m.b.weight and m.a.weight.dtype == rumus.float64
        assert m.shared is m.a.shared and m.shared.dtype == rumus.float64
    else:  # no float64 on the GPU: the move to it replaces every tensor too
        m = on(device, Tied())
        assert m.a.weight is m.b.weight and m.shared is m.a.shared
    assert len(list(m.parameters())) == 3


# ------------------------------------------------------------------ state_dict


def test_state_dict_contents(device):
    net = on(device, Net())
    sd = net.state_dict()
    assert isinstance(sd, OrderedDict)
    assert (
        list(sd) == ["running"] + NAMES
    )  # own buffers first, then children; "scratch" is not persistent
    for k, v in sd.items():
        assert type(v) is rumus.Tensor and not v.requires_grad and v.device.type == device
    if device == "cpu":  # (on the GPU the fill below shows the sharing)
        assert sd["fc1.weight"].data_ptr() == net.fc1.weight.data_ptr()  # detached, not copied
    with rumus.no_grad():
        net.fc1.weight.fill_(2.0)
    assert_close(sd["fc1.weight"], np.full((3, 4), 2.0, np.float32))
    kv = net.state_dict(keep_vars=True)
    assert kv["fc1.weight"] is net.fc1.weight
    assert list(net.state_dict(prefix="model.")) == ["model.running"] + [
        "model." + n for n in NAMES
    ]
    dest = OrderedDict(old=1)
    assert net.state_dict(destination=dest) is dest and list(dest) == ["old", "running"] + NAMES
    assert dict(sd._metadata) == {
        "": {"version": 1},
        "fc1": {"version": 1},
        "act": {"version": 1},
        "fc2": {"version": 1},
    }


def test_state_dict_round_trip(device):
    src, dst = on(device, Net(seed=0)), on(device, Net(seed=7))
    with rumus.no_grad():
        src.running.fill_(0.25)
    x = tensor(make((4, 4)), device=device)
    assert not np.allclose(to_np(src(x)), to_np(dst(x)))
    params = list(dst.parameters())
    result = dst.load_state_dict(src.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    assert all(a is b for a, b in zip(dst.parameters(), params))  # copied in place
    for (n, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items()):
        np.testing.assert_array_equal(to_np(a), to_np(b))
        if device == "cpu":
            assert a.data_ptr() != b.data_ptr()
    np.testing.assert_array_equal(to_np(src(x)), to_np(dst(x)))
    assert all(
        p.requires_grad and p.grad_fn is None and p.device.type == device for p in dst.parameters()
    )
    if device == "gpu":  # last: overwrites src
        for (n, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items()):
            not_shared(a, b, device)


def test_load_state_dict_converts_dtype_and_accepts_plain_dict(device):
    """(GPU run: the float64 checkpoint is on the CPU, loaded into a GPU module.)"""
    net = on(device, Net())
    sd = {
        k: rumus.full(tuple(v.shape), 1.5, dtype=rumus.float64)
        for k, v in Net().state_dict().items()
    }
    net.load_state_dict(sd)
    assert net.fc1.weight.dtype == rumus.float32 and net.fc1.weight.device.type == device
    assert_close(net.fc1.weight, np.full((3, 4), 1.5, np.float32))


def _expected_error(*lines):
    return "Error(s) in loading state_dict for Net:\n\t" + "\n\t".join(lines)


def test_load_state_dict_missing_and_unexpected(device):
    net = on(device, Net())
    sd = net.state_dict()
    del sd["fc2.bias"], sd["running"]
    sd["fc3.weight"] = rumus.ones(1)
    sd["extra"] = rumus.ones(1)
    with pytest.raises(RuntimeError) as e:
        net.load_state_dict(sd)
    assert str(e.value) == _expected_error(
        'Missing key(s) in state_dict: "running", "fc2.bias". ',
        'Unexpected key(s) in state_dict: "fc3.weight", "extra". ',
    )
    keys = net.load_state_dict(sd, strict=False)
    assert keys.missing_keys == ["running", "fc2.bias"]
    assert keys.unexpected_keys == ["fc3.weight", "extra"]
    assert repr(keys) == (
        "_IncompatibleKeys(missing_keys=['running', 'fc2.bias'], "
        "unexpected_keys=['fc3.weight', 'extra'])"
    )
    # a key below a child that has no such member is unexpected too
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "fc1.gamma". '):
        net.load_state_dict({**net.state_dict(), "fc1.gamma": rumus.ones(1)})


def test_load_state_dict_size_mismatch_even_when_not_strict(device):
    net = on(device, Net())
    sd = net.state_dict()
    sd["fc1.weight"] = rumus.ones(5, 4)
    msg = _expected_error(
        "size mismatch for fc1.weight: copying a param with shape rumus.Size([5, 4]) from "
        "checkpoint, the shape in current model is rumus.Size([3, 4])."
    )
    for strict in (True, False):
        with pytest.raises(RuntimeError) as e:
            net.load_state_dict(sd, strict=strict)
        assert str(e.value) == msg


def test_load_state_dict_all_errors_together(device):
    net = on(device, Net())
    sd = net.state_dict()
    sd["fc1.weight"] = rumus.ones(3)
    sd["fc1.bias"] = [1.0, 2.0, 3.0]
    del sd["fc2.weight"]
    sd["bogus"] = rumus.ones(1)
    with pytest.raises(RuntimeError) as e:
        net.load_state_dict(sd)
    assert str(e.value) == _expected_error(
        'Missing key(s) in state_dict: "fc2.weight". ',
        'Unexpected key(s) in state_dict: "bogus". ',
        "size mismatch for fc1.weight: copying a param with shape rumus.Size([3]) from checkpoint, "
        "the shape in current model is rumus.Size([3, 4]).",
        'While copying the parameter named "fc1.bias", expected rumus.Tensor from checkpoint '
        "but received <class 'list'>",
    )


def test_load_state_dict_not_a_mapping():
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like, got <class 'list'>."):
        Net().load_state_dict([("fc1.weight", rumus.ones(3, 4))])


def test_load_state_dict_assign(device):
    net = on(device, Net())
    net.fc2.requires_grad_(False)
    sd = {k: v.clone() * 2 for k, v in on(device, Net(seed=3)).state_dict().items()}
    net.load_state_dict(sd, assign=True)
    for k, v in sd.items():
        got = net.get_parameter(k) if k != "running" else net.running
        assert got.device.type == device
        shared(got, v, device)
    assert type(net.fc1.weight) is nn.Parameter and net.fc1.weight.requires_grad
    assert not net.fc2.weight.requires_grad  # requires_grad comes from the module
    assert type(net.running) is rumus.Tensor


def test_load_from_state_dict_override_sees_version():
    class Counter(nn.Module):
        """Version 2 added the buffer "count"; older checkpoints get it filled in (like
        BatchNorm)."""

        _version = 2

        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(rumus.zeros(2))
            self.register_buffer("count", rumus.tensor(7))

        def _load_from_state_dict(
            self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors
        ):
            if local_metadata.get("version", 1) < 2 and prefix + "count" not in state_dict:
                state_dict[prefix + "count"] = rumus.tensor(0)
            super()._load_from_state_dict(
                state_dict, prefix, local_metadata, strict, missing, unexpected, errors
            )

    outer = nn.Module()
    outer.c = Counter()
    sd = outer.state_dict()
    assert sd._metadata["c"] == {"version": 2}
    del sd["c.count"]
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "c.count"'):
        outer.load_state_dict(sd)  # a version-2 checkpoint must have it
    sd._metadata["c"]["version"] = 1
    outer.load_state_dict(sd)
    assert outer.c.count.item() == 0


def test_extra_state_round_trip():
    class WithState(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(rumus.zeros(1))
            self.note = "a"

        def get_extra_state(self):
            return {"note": self.note}

        def set_extra_state(self, state):
            self.note = state["note"]

    m = WithState()
    m.note = "b"
    sd = m.state_dict()
    assert list(sd) == ["w", "_extra_state"] and sd["_extra_state"] == {"note": "b"}
    fresh = WithState()
    fresh.load_state_dict(sd)
    assert fresh.note == "b"
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "_extra_state"'):
        fresh.load_state_dict({"w": rumus.zeros(1)})
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "_extra_state"'):
        Lin(1, 1).load_state_dict({**Lin(1, 1).state_dict(), "_extra_state": 1})


# ------------------------------------------------------------------ hooks


def test_forward_hooks_order_and_removal(device):
    lin = on(device, Lin(2, 2))
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: calls.append("pre1"))
    h2 = lin.register_forward_pre_hook(lambda m, args: calls.append("pre0"), prepend=True)
    h3 = lin.register_forward_hook(lambda m, args, out: calls.append("post1"))
    h4 = lin.register_forward_hook(lambda m, args, out: calls.append("post0"), prepend=True)
    lin(rumus.ones(1, 2, device=device))
    assert calls == ["pre0", "pre1", "post0", "post1"]
    h2.remove()
    h4.remove()
    h4.remove()  # removing twice is harmless
    calls.clear()
    lin(rumus.ones(1, 2, device=device))
    assert calls == ["pre1", "post1"]
    with lin.register_forward_hook(lambda m, args, out: calls.append("ctx")):
        calls.clear()
        lin(rumus.ones(1, 2, device=device))
        assert calls == ["pre1", "post1", "ctx"]
    calls.clear()
    lin(rumus.ones(1, 2, device=device))
    assert calls == ["pre1", "post1"]
    h1.remove()
    h3.remove()
    assert not lin._forward_hooks and not lin._forward_pre_hooks


def test_forward_hooks_replace_args_and_output(device):
    lin = on(device, Lin(2, 2))
    x = make((3, 2))
    expected = x @ to_np(lin.weight).T + to_np(lin.bias)
    lin.register_forward_pre_hook(lambda m, args: args[0] * 2)  # a non-tuple is wrapped
    lin.register_forward_pre_hook(lambda m, args: (args[0] + 1,))
    seen = {}

    def post(m, args, out):
        seen["arg"] = to_np(args[0])
        return out * 10

    lin.register_forward_hook(post)
    lin.register_forward_hook(lambda m, args, out: None)  # None keeps the output
    out = lin(tensor(x, device=device))
    assert out.device.type == device
    np.testing.assert_allclose(seen["arg"], x * 2 + 1, rtol=1e-6)
    expected = ((x * 2 + 1) @ to_np(lin.weight).T + to_np(lin.bias)) * 10
    np.testing.assert_allclose(to_np(out), expected, rtol=1e-5, atol=1e-5)


def test_forward_hooks_with_kwargs(device):
    class Scale(nn.Module):
        def forward(self, x, *, factor=1.0):
            return x * factor

    m = Scale()
    seen = []

    def pre(mod, args, kwargs):
        return args, {**kwargs, "factor": 3.0}

    def post(mod, args, kwargs, out):
        seen.append(kwargs["factor"])
        return out + 1

    m.register_forward_pre_hook(pre, with_kwargs=True)
    m.register_forward_hook(post, with_kwargs=True)
    assert_close(
        m(rumus.tensor([1.0, 2.0], device=device), factor=5.0), np.array([4.0, 7.0], np.float32)
    )
    assert seen == [3.0]
    m.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple of"):
        m(rumus.ones(1))


def test_forward_hook_always_call():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Boom()
    calls = []
    m.register_forward_hook(lambda mod, args, out: calls.append(("always", out)), always_call=True)
    m.register_forward_hook(lambda mod, args, out: calls.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        m(rumus.ones(1))
    assert calls == [("always", None)]


# ------------------------------------------------------------------ repr


def test_repr_tree():
    net = Net()
    assert repr(net) == (
        "Net(\n"
        "  (fc1): Lin(in_features=4, out_features=3, bias=True)\n"
        "  (act): Relu()\n"
        "  (fc2): Lin(in_features=3, out_features=2, bias=True)\n"
        ")"
    )
    outer = nn.Sequential(OrderedDict(body=net, head=Lin(2, 1, bias=False)))
    assert repr(outer) == (
        "Sequential(\n"
        "  (body): Net(\n"
        "    (fc1): Lin(in_features=4, out_features=3, bias=True)\n"
        "    (act): Relu()\n"
        "    (fc2): Lin(in_features=3, out_features=2, bias=True)\n"
        "  )\n"
        "  (head): Lin(in_features=2, out_features=1, bias=False)\n"
        ")"
    )

    class Multi(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Relu()

        def extra_repr(self):
            return "a=1\nb=2"

    assert repr(Multi()) == "Multi(\n  a=1\n  b=2\n  (inner): Relu()\n)"
    assert repr(nn.Module()) == "Module()"


# ------------------------------------------------------------------ copy and pickle


def test_deepcopy_module(device):
    net = on(device, Net())
    net(tensor(make((2, 4)), device=device)).sum().backward()
    twin = copy.deepcopy(net)
    for (n, a), (m, b) in zip(net.named_parameters(), twin.named_parameters()):
        assert n == m and type(b) is nn.Parameter and b.requires_grad and b.device.type == device
        np.testing.assert_array_equal(to_np(a), to_np(b))
        assert a is not b
        if device == "cpu":  # (on the GPU the fill below shows it)
            assert a.data_ptr() != b.data_ptr()
    assert twin.scratch is not net.scratch and "scratch" in twin._non_persistent_buffers_set
    with rumus.no_grad():
        twin.fc1.weight.fill_(0.0)
    assert np.abs(to_np(net.fc1.weight)).sum() > 0
    x = tensor(make((3, 4)), device=device)
    np.testing.assert_array_equal(
        to_np(on(device, Net())(x)), to_np(copy.deepcopy(on(device, Net()))(x))
    )


def test_deepcopy_keeps_ties():
    m = nn.Module()
    m.a = Lin(2, 2)
    m.b = Lin(2, 2)
    m.b.weight = m.a.weight
    m.c = m.a
    twin = copy.deepcopy(m)
    assert twin.b.weight is twin.a.weight and twin.c is twin.a and twin.a is not m.a


def test_pickle_module(device):
    net = on(device, Net())
    net.eval()
    with rumus.no_grad():
        net.running.fill_(0.5)
    back = pickle.loads(pickle.dumps(net))
    assert type(back) is Net and not back.training and not back.fc1.training
    assert [n for n, _ in back.named_parameters()] == NAMES
    assert all(
        type(p) is nn.Parameter and p.requires_grad and p.device.type == device
        for p in back.parameters()
    )
    assert_close(back.running, np.full(2, 0.5, np.float32))
    assert "scratch" in back._buffers and "scratch" not in back.state_dict()
    x = tensor(make((3, 4)), device=device)
    np.testing.assert_array_equal(to_np(back(x)), to_np(net(x)))
    hooked = Lin(1, 1)
    hooked.register_forward_hook(print)  # picklable hooks travel with the module
    assert len(pickle.loads(pickle.dumps(hooked))._forward_hooks) == 1


# ------------------------------------------------------------------ containers


def test_sequential_indexing_and_forward(device):
    a, b, c = on(device, Lin(4, 3)), Relu(), on(device, Lin(3, 2, seed=1))
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and list(seq) == [a, b, c]
    assert seq[0] is a and seq[-1] is c
    sub = seq[1:]
    assert type(sub) is nn.Sequential and list(sub) == [b, c] and list(sub._modules) == ["1", "2"]
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    x = make((5, 4))
    h = np.maximum(x @ to_np(a.weight).T + to_np(a.bias), 0)
    assert_close(
        seq(tensor(x, device=device)),
        (h @ to_np(c.weight).T + to_np(c.bias)).astype(np.float32),
        rtol=1e-5,
        atol=1e-5,
    )
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]
    with pytest.raises(IndexError, match="index -4 is out of range"):
        seq[-4]
    seq[1] = Lin(3, 3)
    assert isinstance(seq[1], Lin)
    named = nn.Sequential(OrderedDict([("first", a), ("second", b)]))
    assert list(named._modules) == ["first", "second"] and named.second is b
    assert named[1] is b
    assert nn.Sequential()(rumus.ones(2, device=device)).shape == (2,)  # empty: identity


def test_sequential_mutation():
    a, b, c, d = Relu(), Lin(1, 1), Lin(1, 1), Relu()
    seq = nn.Sequential(a, b)
    assert seq.append(c) is seq and list(seq) == [a, b, c]
    seq.insert(0, d)
    assert list(seq) == [d, a, b, c] and list(seq._modules) == ["0", "1", "2", "3"]
    seq.insert(-1, Relu())
    assert isinstance(seq[3], Relu) and seq[4] is c
    with pytest.raises(IndexError, match="Index out of range: 9"):
        seq.insert(9, Relu())
    with pytest.raises(AssertionError, match="module should be of type"):
        seq.insert(0, 3)
    assert seq.pop(0) is d and seq.pop(-1) is c
    assert list(seq)[:2] == [a, b] and list(seq._modules) == ["0", "1", "2"]
    del seq[0]
    assert seq[0] is b and list(seq._modules) == ["0", "1"]
    del seq[:]
    assert len(seq) == 0
    seq.extend([a, b])
    assert list(seq) == [a, b]
    both = seq + nn.Sequential(c)
    assert list(both) == [a, b, c] and list(both._modules) == ["0", "1", "2"]
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential class"):
        seq + [c]
    seq += nn.Sequential(d)
    assert list(seq) == [a, b, d]
    tripled = nn.Sequential(a) * 3
    assert list(tripled) == [a, a, a]
    assert list(2 * nn.Sequential(b)) == [b, b]
    with pytest.raises(ValueError, match="Non-positive multiplication factor"):
        nn.Sequential(a) * 0
    with pytest.raises(TypeError, match="unsupported operand"):
        nn.Sequential(a) * 1.5


def test_module_list():
    mods = [Lin(2, 2, seed=i) for i in range(3)]
    ml = nn.ModuleList(mods)
    assert len(ml) == 3 and list(ml) == mods and ml[-1] is mods[2]
    assert [n for n, _ in ml.named_parameters()][:2] == ["0.weight", "0.bias"]
    assert type(ml[1:]) is nn.ModuleList and list(ml[1:]) == mods[1:]
    extra = Relu()
    assert ml.append(extra) is ml and ml[3] is extra
    ml.insert(1, Relu())
    assert (
        isinstance(ml[1], Relu)
        and ml[2] is mods[1]
        and list(ml._modules) == ["0", "1", "2", "3", "4"]
    )
    assert ml.pop(1) is not None and ml[1] is mods[1]
    del ml[0]
    assert list(ml) == [mods[1], mods[2], extra] and list(ml._modules) == ["0", "1", "2"]
    ml[0] = mods[0]
    assert ml[0] is mods[0]
    ml += [Relu()]
    assert len(ml) == 4
    assert len(ml + nn.ModuleList([Relu()])) == 5
    with pytest.raises(IndexError, match="index 10 is out of range"):
        ml[10]
    with pytest.raises(
        TypeError, match="ModuleList.extend should be called with an iterable, but got int"
    ):
        ml.extend(3)
    with pytest.raises(NotImplementedError, match=r"Module \[ModuleList\] is missing"):
        ml(rumus.ones(1))
    assert repr(nn.ModuleList()) == "ModuleList()"


def test_module_list_repr_compresses_runs():
    ml = nn.ModuleList([Lin(2, 2) for _ in range(3)] + [Relu(), Lin(2, 1)])
    assert repr(ml) == (
        "ModuleList(\n"
        "  (0-2): 3 x Lin(in_features=2, out_features=2, bias=True)\n"
        "  (3): Relu()\n"
        "  (4): Lin(in_features=2, out_features=1, bias=True)\n"
        ")"
    )


def test_module_dict():
    a, b = Lin(1, 1), Relu()
    md = nn.ModuleDict({"a": a, "b": b})
    assert list(md) == ["a", "b"] and md["a"] is a and "b" in md and len(md) == 2
    assert (
        list(md.keys()) == ["a", "b"]
        and list(md.values()) == [a, b]
        and list(md.items()) == [("a", a), ("b", b)]
    )
    md["c"] = Relu()
    md.update([("d", Relu()), ("a", b)])
    assert list(md) == ["a", "b", "c", "d"] and md["a"] is b
    assert md.pop("c") is not None and "c" not in md
    del md["d"]
    assert list(md) == ["a", "b"]
    md.update(nn.ModuleDict(OrderedDict(z=a)))
    assert md.z is a
    with pytest.raises(TypeError, match="ModuleDict.update should be called with an iterable"):
        md.update(3)
    with pytest.raises(
        ValueError, match="ModuleDict update sequence element #0 has length 1; 2 is required"
    ):
        md.update([("x",)])
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        md["q"] = 3
    md.clear()
    assert len(md) == 0
    assert repr(nn.ModuleDict({"r": Relu()})) == "ModuleDict(\n  (r): Relu()\n)"


def test_parameter_list():
    t = rumus.ones(2, 3)
    pl = nn.ParameterList([t, nn.Parameter(rumus.zeros(2, dtype=rumus.float64))])
    assert len(pl) == 2 and type(pl[0]) is nn.Parameter and pl[0].data_ptr() == t.data_ptr()
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pl.append(rumus.zeros(4))
    assert pl[-1].shape == (4,) and len(list(pl.parameters())) == 3
    pl[0] = rumus.full((1,), 2.0)
    assert type(pl[0]) is nn.Parameter and pl[0].item() == 2.0
    sub = pl[1:]
    assert type(sub) is nn.ParameterList and len(sub) == 2 and sub[0] is pl[1]
    assert repr(pl) == (
        "ParameterList(\n"
        "    (0): Parameter containing: [rumus.float32 of size 1]\n"
        "    (1): Parameter containing: [rumus.float64 of size 2]\n"
        "    (2): Parameter containing: [rumus.float32 of size 4]\n"
        ")"
    )
    with pytest.raises(
        TypeError, match="ParameterList.extend should be called with an iterable, but got Tensor"
    ):
        pl.extend(rumus.ones(2))
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        pl(rumus.ones(1))
    with pytest.raises(IndexError, match="index 5 is out of range"):
        pl[5]
    back = pickle.loads(pickle.dumps(pl))
    assert len(back) == 3 and type(back[1]) is nn.Parameter
    holder = nn.Module()
    holder.params = pl
    assert [n for n, _ in holder.named_parameters()] == ["params.0", "params.1", "params.2"]


def test_parameter_dict():
    pd = nn.ParameterDict({"b": rumus.ones(2), "a": nn.Parameter(rumus.zeros(3))})
    assert list(pd) == ["a", "b"]  # a plain dict is inserted in sorted key order, as in PyTorch
    assert type(pd["b"]) is nn.Parameter and len(pd) == 2 and "a" in pd
    assert [n for n, _ in pd.named_parameters()] == ["a", "b"]
    pd.update(OrderedDict([("z", rumus.ones(1)), ("c", rumus.ones(1))]))
    assert list(pd.keys()) == ["a", "b", "z", "c"]
    assert [k for k, _ in pd.items()] == list(pd) and len(list(pd.values())) == 4
    assert pd.get("nope") is None and pd.get("a") is pd["a"]
    assert pd.pop("z").shape == (1,) and "z" not in pd
    k, v = pd.popitem()
    assert k == "c" and "c" not in pd and not hasattr(pd, "c")
    assert pd.setdefault("d", rumus.ones(2)) is pd["d"]
    del pd["d"]
    assert list(pd) == ["a", "b"]
    assert list(reversed(pd)) == ["b", "a"]
    merged = pd | {"e": rumus.ones(1)}
    assert list(merged) == ["a", "b", "e"] and list(pd) == ["a", "b"]
    pd |= nn.ParameterDict({"f": rumus.ones(1)})
    assert list(pd) == ["a", "b", "f"]
    assert list(pd.copy()) == ["a", "b", "f"] and pd.copy()["a"] is pd["a"]
    assert list(pd.fromkeys(["x", "y"], rumus.ones(1))) == ["x", "y"]
    with pytest.raises(TypeError, match="it is not a string"):
        pd[1] = rumus.ones(1)
    with pytest.raises(RuntimeError, match="ParameterDict should not be called."):
        pd(rumus.ones(1))
    assert repr(nn.ParameterDict({"w": rumus.ones(2, 3)})) == (
        "ParameterDict(  (w): Parameter containing: [rumus.float32 of size 2x3])"
    )
    pd.clear()
    assert len(pd) == 0 and list(pd.parameters()) == []


def test_containers_state_dict_round_trip(device):
    def build(seed):
        m = nn.Module()
        m.seq = nn.Sequential(Lin(2, 3, seed=seed), Relu())
        m.heads = nn.ModuleDict({"x": Lin(3, 1, seed=seed + 1)})
        m.extra = nn.ParameterList([rumus.full((2,), float(seed))])
        return m

    src, dst = on(device, build(1)), on(device, build(2))
    assert list(src.state_dict()) == [
        "seq.0.weight",
        "seq.0.bias",
        "heads.x.weight",
        "heads.x.bias",
        "extra.0",
    ]
    dst.load_state_dict(src.state_dict())
    for a, b in zip(src.parameters(), dst.parameters()):
        np.testing.assert_array_equal(to_np(a), to_np(b))


# ------------------------------------------------------------------ cross-checks against PyTorch


def test_against_torch_naming_and_load_errors():
    torch = pytest.importorskip("torch")
    tnn = torch.nn

    class TNet(tnn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = tnn.Linear(4, 3)
            self.act = tnn.ReLU()
            self.fc2 = tnn.Linear(3, 2)
            self.register_buffer("running", torch.zeros(2))
            self.register_buffer("scratch", torch.zeros(1), persistent=False)

    tnet, net = TNet(), Net()
    assert list(tnet.state_dict()) == list(net.state_dict())
    assert [n for n, _ in tnet.named_modules()] == [n for n, _ in net.named_modules()]
    assert dict(tnet.state_dict()._metadata) == dict(net.state_dict()._metadata)

    def messages(model, lib, sd_edit):
        sd = model.state_dict()
        sd_edit(sd, lib)
        with pytest.raises(RuntimeError) as e:
            model.load_state_dict(sd)
        return str(e.value).replace("torch.Size", "Size").replace("rumus.Size", "Size")

    def edit(sd, lib):
        del sd["fc2.bias"]
        sd["fc1.weight"] = lib.ones(5, 4)
        sd["zzz"] = lib.ones(1)

    assert messages(tnet, torch, edit) == messages(net, rumus, edit).replace("Net:", "TNet:")
    tkeys = tnet.load_state_dict({"fc1.bias": torch.zeros(3), "x.y": torch.ones(1)}, strict=False)
    keys = net.load_state_dict({"fc1.bias": rumus.zeros(3), "x.y": rumus.ones(1)}, strict=False)
    assert tkeys.missing_keys == keys.missing_keys and tkeys.unexpected_keys == keys.unexpected_keys
