"""rumus.save / rumus.load of whole objects (the zip format): modules,
optimizers, NumPy data, namedtuples, shared storages and views, devices and
map_location, the weights-only unpickler and its allowlist, corrupt files,
atomic writes. The safetensors format has its tests in test_serialization.py."""

import collections
import errno
import io
import os
import pickle
import signal
import struct
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import rumus
import rumus.nn as nn
import rumus.nn.functional as F
from conftest import ALL_DTYPES, make, tensor, to_np
from rumus.serialization import (
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)

Point = collections.namedtuple("Point", "x y")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.bn = nn.BatchNorm1d(8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.bn(self.fc1(x))))


NET_GLOBALS = [Net, nn.Linear, nn.BatchNorm1d]


class Payload:
    """Unpickling this runs os.system: the classic malicious checkpoint."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class EvalPayload:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (eval, (f"open({self.marker!r}, 'w').close()",))


class Tagged:
    def __init__(self, tag):
        self.tag = tag


def zsave(obj, tmp_path, name="x.pt"):
    path = tmp_path / name
    rumus.save(obj, path)
    assert path.read_bytes()[:4] == b"PK\x03\x04", "expected the zip format"
    return path


def records(path):
    with zipfile.ZipFile(path) as zf:
        return {i.filename: i for i in zf.infolist()}


def data_records(path):
    return {k: v for k, v in records(path).items() if k.startswith("archive/data/")}


# -------------------------------------------------------------- modules and optimizers


def test_module_round_trip(tmp_path, rng):
    rumus.manual_seed(0)
    net = Net()
    net(tensor(make((16, 4), "float32", rng)))  # BatchNorm running stats move
    net.eval()
    path = zsave(net, tmp_path)
    with pytest.raises(pickle.UnpicklingError, match="test_pickle_checkpoint.Net") as info:
        rumus.load(path)
    assert "add_safe_globals([Net])" in str(info.value) and str(path) in str(info.value)
    with safe_globals(NET_GLOBALS):
        out = rumus.load(path)
    assert type(out) is Net and not out.training and type(out.fc1) is nn.Linear
    assert type(out.fc1.weight) is nn.Parameter and out.fc1.weight.requires_grad
    x = tensor(make((5, 4), "float32", rng))
    np.testing.assert_array_equal(to_np(out(x).detach()), to_np(net(x).detach()))
    assert out.bn.num_batches_tracked.item() == 1
    for (k, a), (k2, b) in zip(net.state_dict().items(), out.state_dict().items()):
        assert k == k2 and to_np(a).tolist() == to_np(b).tolist()
    # The loaded module trains.
    out.train()
    out(x).sum().backward()
    assert out.fc1.weight.grad is not None
    # Trusted file: no allowlist needed.
    assert type(rumus.load(path, weights_only=False)) is Net


def test_module_with_tied_weights_stays_tied(tmp_path):
    m = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 10, bias=False))
    m[1].weight = m[0].weight
    with safe_globals([nn.Sequential, nn.Embedding, nn.Linear]):
        out = rumus.load(zsave(m, tmp_path))
    assert out[1].weight is out[0].weight
    assert len(data_records(tmp_path / "x.pt")) == 1


def test_every_layer_pickles(tmp_path):
    layers = [
        nn.Conv2d(2, 3, 3, padding=1),
        nn.ConvTranspose1d(2, 2, 3),
        nn.LayerNorm(4),
        nn.GroupNorm(2, 4),
        nn.Embedding(5, 3, padding_idx=0),
        nn.MultiheadAttention(8, 2, batch_first=True),
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2),
        nn.Dropout(0.3),
        nn.PReLU(),
        nn.ModuleDict({"a": nn.ReLU()}),
        nn.ParameterList([nn.Parameter(rumus.ones(2))]),
        nn.CrossEntropyLoss(weight=rumus.ones(3), label_smoothing=0.1),
    ]
    out = rumus.load(zsave(layers, tmp_path), weights_only=False)
    for a, b in zip(layers, out):
        assert type(a) is type(b) and repr(a) == repr(b)
        sa, sb = a.state_dict(), b.state_dict()
        assert list(sa) == list(sb)
        for k in sa:
            np.testing.assert_array_equal(to_np(sa[k]), to_np(sb[k]))


def _train(model, opt, xs, ys):
    for x, y in zip(xs, ys):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()


@pytest.mark.parametrize("opt_name", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_optimizer_state_round_trip_continues_identically(opt_name, tmp_path, rng):
    rumus.manual_seed(0)
    model = Net()
    kw = {"lr": 0.1, "momentum": 0.9} if opt_name == "SGD" else {"lr": 1e-2}
    opt = getattr(rumus.optim, opt_name)(model.parameters(), **kw)
    xs = [tensor(make((8, 4), "float32", rng)) for _ in range(6)]
    ys = [rumus.tensor(rng.integers(0, 3, 8)) for _ in range(6)]
    _train(model, opt, xs[:3], ys[:3])
    path = zsave({"model": model, "optimizer": opt, "epoch": 3}, tmp_path)
    allowed = [*NET_GLOBALS, type(opt)]
    with safe_globals(allowed):
        ck = rumus.load(path)
    model2, opt2 = ck["model"], ck["optimizer"]
    assert ck["epoch"] == 3 and type(opt2) is type(opt)
    params2 = list(model2.parameters())
    # The optimizer refers to the loaded model's parameters, not to copies.
    assert all(p is q for p, q in zip(opt2.param_groups[0]["params"], params2))
    assert all(any(k is p for p in params2) for k in opt2.state)
    _train(model, opt, xs[3:], ys[3:])
    _train(model2, opt2, xs[3:], ys[3:])
    for p, q in zip(model.parameters(), model2.parameters()):
        np.testing.assert_array_equal(to_np(p.detach()), to_np(q.detach()))


def test_optimizer_state_dict_and_scheduler_in_one_file(tmp_path):
    model = nn.Linear(3, 2)
    opt = rumus.optim.SGD(model.parameters(), lr=0.5)
    sched = rumus.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    opt.step()
    sched.step()
    path = zsave({"sched": sched, "opt": opt}, tmp_path)
    out = rumus.load(path, weights_only=False)
    assert out["sched"].optimizer is out["opt"]
    assert out["opt"].param_groups[0]["lr"] == 0.25


# -------------------------------------------------------------- values


def test_mixed_dict_loads_without_allowlist(tmp_path, rng):
    obj = {
        "w": rumus.arange(6.0).reshape(2, 3),
        "step": 7,
        "lr": 1e-3,
        "name": "run",
        "arr": np.arange(12, dtype=np.int16).reshape(3, 4),
        "farr": np.asfortranarray(rng.standard_normal((3, 4))),
        "big_endian": np.arange(3, dtype=">f8"),
        "strings": np.array(["a", "bcd"]),
        "empty": np.zeros((0, 2), np.float32),
        "best": np.float64(0.25),
        "count": np.int64(-3),
        "flag": np.bool_(True),
        "set": {1, 2},
        "frozen": frozenset({"a"}),
        "bytes": b"\x00\xff",
        "complex": 1 + 2j,
        "odict": collections.OrderedDict(b=1, a=2),
        "default": collections.defaultdict(list, {"k": [1]}),
        "counter": collections.Counter("aab"),
        "dtype": rumus.bfloat16,
        "device": rumus.device("cpu"),
        "shape": rumus.ones(2, 3).shape,
        "slice": slice(1, None, 2),
    }
    out = rumus.load(zsave(obj, tmp_path))
    assert list(out) == list(obj)
    for k, v in obj.items():
        got = out[k]
        assert type(got) is type(v), k
        if isinstance(v, np.ndarray):
            assert got.dtype == v.dtype and got.shape == v.shape
            assert got.strides == v.strides or v.size == 0
            np.testing.assert_array_equal(got, v)
            assert got.flags.writeable
        elif isinstance(v, rumus.Tensor):
            assert to_np(got).tolist() == to_np(v).tolist()
        else:
            assert got == v, k
    assert out["default"]["new"] == []  # the factory came back


def test_namedtuples_need_their_class_allowlisted(tmp_path):
    obj = [Point(rumus.ones(2), 3), Point(x=[1], y=None)]
    path = zsave(obj, tmp_path)
    with pytest.raises(pickle.UnpicklingError, match="test_pickle_checkpoint.Point"):
        rumus.load(path)
    with safe_globals([Point]):
        out = rumus.load(path)
    assert [type(p) for p in out] == [Point, Point]
    assert to_np(out[0].x).tolist() == [1.0, 1.0] and out[0].y == 3 and out[1] == Point([1], None)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_dtype_round_trips_bit_exactly(dtype, tmp_path, rng):
    t = tensor(make((3, 5), dtype, rng), dtype)
    obj = Point(t, t[:, 1:4:2])
    with safe_globals([Point]):
        for mmap in (None, False):
            out = rumus.load(zsave(obj, tmp_path), mmap=mmap)
            assert out.x.dtype == t.dtype
            a, b = out.x, t
            if dtype == "bfloat16":
                a, b = a.float(), b.float()
            assert to_np(a).tobytes() == to_np(b).tobytes()
            assert out.y.stride() == (5, 2) and out.y.storage_offset() == 1


def test_requires_grad_parameters_and_non_leaves(tmp_path):
    w = rumus.ones(2, 2).requires_grad_()
    y = w * 2  # a non-leaf: saved as its values, loaded as a leaf
    p = nn.Parameter(rumus.arange(3.0), requires_grad=False)
    p.tag = "kept"  # attributes of a Parameter come back
    out = rumus.load(zsave([w, y, p, {0}], tmp_path))
    assert out[0].requires_grad and out[0].is_leaf
    assert (
        out[1].requires_grad and out[1].is_leaf and to_np(out[1].detach()).tolist() == [[2, 2]] * 2
    )
    assert type(out[2]) is nn.Parameter and not out[2].requires_grad and out[2].tag == "kept"


# -------------------------------------------------------------- shared storage and views


def test_shared_storage_is_stored_once_and_comes_back_shared(tmp_path):
    base = rumus.arange(24.0).reshape(4, 6)
    views = {
        "base": base,
        "same": base,
        "row": base[1],
        "col": base[:, 2],
        "t": base.t(),
        "step": base[::2, 1::3],
        "narrow": base.narrow(1, 2, 3),
        "expand": base[0:1, 0:1].expand(3, 5),
        "scalar": base[3, 5],
        "permuted": base.reshape(2, 2, 6).permute(2, 0, 1),
        "empty": base[:0],
        "set": {1},  # a set: the zip format
    }
    path = zsave(views, tmp_path)
    # One record for `base` (the empty view has an empty one of its own). Views are
    # cut out of the loaded storage with reshapes, which may read up to one row past
    # the last element: the record is padded with zeros for that.
    sizes = [r.file_size for r in data_records(path).values() if r.file_size]
    assert len(sizes) == 1 and 24 * 4 <= sizes[0] <= 24 * 4 + 6 * 4
    out = rumus.load(path)
    assert out["same"] is out["base"]
    for k, v in views.items():
        if isinstance(v, rumus.Tensor):
            got = out[k]
            assert tuple(got.shape) == tuple(v.shape), k
            np.testing.assert_array_equal(to_np(got), to_np(v))
            if v.numel() > 0:
                assert got.storage_offset() == v.storage_offset(), k
                assert [s for s, n in zip(got.stride(), got.shape) if n > 1] == [
                    s for s, n in zip(v.stride(), v.shape) if n > 1
                ], k
    # An in-place write through one is seen by every other.
    out["base"].mul_(-1)
    for k in ("row", "col", "t", "step", "narrow", "expand", "scalar", "permuted"):
        np.testing.assert_array_equal(to_np(out[k]), -to_np(views[k]), err_msg=k)


def test_tensor_used_in_several_places_is_one_object(tmp_path):
    t = rumus.ones(3)
    out = rumus.load(zsave({"a": t, "b": [t, (t,)], "s": {2}}, tmp_path))
    assert out["a"] is out["b"][0] is out["b"][1][0]


def test_a_slice_keeps_only_what_it_reaches(tmp_path):
    big = rumus.zeros(1000)
    path = zsave([big[:10], {1}], tmp_path)
    # Elements past the last one a saved tensor reaches are not written.
    assert [r.file_size for r in data_records(path).values()] == [40]


def test_records_are_aligned_for_zero_copy_mmap(tmp_path):
    path = zsave(
        {"a": rumus.ones(3), "b": rumus.ones(5).double(), "c": np.ones(3), "s": {1}}, tmp_path
    )
    raw = path.read_bytes()
    for info in data_records(path).values():
        n, m = struct.unpack("<HH", raw[info.header_offset + 26 : info.header_offset + 30])
        assert (info.header_offset + 30 + n + m) % 64 == 0


def _mapped_file(ptr):
    """The file mapped at address ptr in this process, or None."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if lo <= ptr < hi:
                return fields[5].strip() if len(fields) == 6 else None
    return None


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc/self/maps (Linux)")
def test_load_from_path_is_zero_copy(tmp_path):
    n = 1 << 20
    path = zsave({"big": rumus.arange(n, dtype=rumus.float32), "s": {1}}, tmp_path)
    big = rumus.load(path)["big"]
    assert _mapped_file(big.data_ptr()) == str(path)
    assert _mapped_file(rumus.load(path, mmap=False)["big"].data_ptr()) != str(path)
    big.add_(1.0)  # copy-on-write: the file doesn't change
    assert rumus.load(path, mmap=False)["big"][5].item() == 5.0
    assert big[5].item() == 6.0


# -------------------------------------------------------------- devices


def test_map_location(tmp_path, device):
    base = rumus.arange(12.0).reshape(3, 4).to(device)
    obj = Point(base, base)
    with safe_globals([Point]):
        path = zsave(obj, tmp_path)
        out = rumus.load(path)  # back where it was saved
        assert out.x.device.type == device and out.x is out.y
        assert rumus.load(path, map_location="cpu").x.device.type == "cpu"
        assert rumus.load(path, map_location=rumus.device("cpu")).x.device.type == "cpu"
        assert rumus.load(path, map_location={"gpu:0": "cpu"}).x.device.type == "cpu"
        seen = []

        def fn(storage, loc):
            seen.append((loc, storage.device.type, storage.dim()))
            return storage

        assert rumus.load(path, map_location=fn).x.device.type == "cpu"
        assert seen == [("cpu" if device == "cpu" else "gpu:0", "cpu", 1)]
        np.testing.assert_array_equal(to_np(out.x.cpu()), np.arange(12.0).reshape(3, 4))
        if device == "gpu":
            g = rumus.load(path, map_location="gpu")
            assert g.x.device.type == "gpu"
            g2 = rumus.load(path, map_location={"cpu": "gpu"})
            assert g2.x.device.type == "gpu"


def test_views_stay_views_when_mapped_to_the_gpu(tmp_path, gpu):
    base = rumus.arange(12.0).reshape(3, 4)
    with safe_globals([Point]):
        out = rumus.load(zsave(Point(base, base.t()[1:]), tmp_path), map_location="gpu")
    assert out.x.device.type == out.y.device.type == "gpu"
    out.x.add_(100.0)
    np.testing.assert_array_equal(to_np(out.y.cpu()), to_np(base.t()[1:]) + 100.0)


def test_module_on_gpu_round_trip(tmp_path, gpu, rng):
    rumus.manual_seed(0)
    net = Net().to("gpu").eval()
    path = zsave(net, tmp_path)
    x = tensor(make((4, 4), "float32", rng))
    with safe_globals(NET_GLOBALS):
        on_gpu = rumus.load(path)
        on_cpu = rumus.load(path, map_location="cpu")
    assert on_gpu.fc1.weight.device.type == "gpu" and on_cpu.fc1.weight.device.type == "cpu"
    expected = to_np(net(x.to("gpu")).detach().cpu())
    np.testing.assert_allclose(to_np(on_gpu(x.to("gpu")).detach().cpu()), expected, rtol=1e-6)
    np.testing.assert_allclose(to_np(on_cpu(x).detach()), expected, rtol=1e-5, atol=1e-6)


def test_gpu_location_without_gpu_is_a_clear_error(tmp_path, monkeypatch):
    path = zsave(Point(rumus.ones(2), 0), tmp_path)
    with zipfile.ZipFile(path) as zf:
        body = zf.read("archive/data.pkl")
    assert body.count(b"cpu") == 1
    fake = tmp_path / "gpu.pt"  # as if saved from a GPU
    _rewrite_pickle(path, fake, body.replace(b"cpu", b"gpu"))  # same length: frames stay valid
    monkeypatch.setattr(rumus.serialization, "gpu_available", lambda: False)
    with safe_globals([Point]):
        with pytest.raises(RuntimeError, match="no GPU is available.*map_location='cpu'"):
            rumus.load(fake)
        assert rumus.load(fake, map_location="cpu").x.device.type == "cpu"


def _rewrite_pickle(src, dst, new_pickle):
    """Copies the archive `src` to `dst` with its data.pkl replaced."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = new_pickle if info.filename == "archive/data.pkl" else zin.read(info)
            zout.writestr(info.filename, data)


# -------------------------------------------------------------- weights-only safety


def _archive_with_pickle(tmp_path, payload_obj, name="evil.pt"):
    """A well-formed rumus archive whose data.pkl pickles `payload_obj` with plain pickle."""
    good = zsave([{1}], tmp_path, "good.pt")
    evil = tmp_path / name
    _rewrite_pickle(good, evil, pickle.dumps(payload_obj, protocol=2))
    return evil


@pytest.mark.parametrize(
    "cls, global_name", [(Payload, "posix.system"), (EvalPayload, "builtins.eval")]
)
def test_malicious_global_is_refused_and_nothing_runs(cls, global_name, tmp_path):
    if os.name != "posix" and cls is Payload:
        pytest.skip("os.system is posix.system on POSIX only")
    marker = tmp_path / "pwned"
    # rumus.save writes it (saving never calls the reduce function) ...
    path = zsave({"model": rumus.ones(2), "evil": cls(marker)}, tmp_path)
    for mmap in (None, False):
        with pytest.raises(pickle.UnpicklingError, match=f"unsupported global {global_name}"):
            rumus.load(path, mmap=mmap)
    assert not marker.exists()
    # ... and so does plain pickle.
    with pytest.raises(pickle.UnpicklingError, match=global_name):
        rumus.load(_archive_with_pickle(tmp_path, cls(marker)))
    assert not marker.exists()
    # The payload is real: a full (trusted) load runs it.
    rumus.load(path, weights_only=False)
    assert marker.exists()


def test_weights_only_imports_nothing(tmp_path, monkeypatch):
    marker = tmp_path / "imported"
    (tmp_path / "ckpt_side_effect_mod.py").write_text(
        f"open({str(marker)!r}, 'w').close()\ndef f():\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    raw = b"\x80\x02cckpt_side_effect_mod\nf\nq\x00."
    evil = tmp_path / "evil.pt"
    _rewrite_pickle(zsave([{1}], tmp_path), evil, raw)
    with pytest.raises(pickle.UnpicklingError, match="ckpt_side_effect_mod.f"):
        rumus.load(evil)
    assert not marker.exists() and "ckpt_side_effect_mod" not in sys.modules


# Hand-written pickles that try to reach code through allowlisted objects.
_EVIL_PICKLES = {
    # INST: protocol 0's "call a class": refused whatever the class.
    "inst": (b"(S'touch x'\nios\nsystem\n.", "opcode"),
    # BUILD (set an object's state) on a built-in container.
    "build_on_list": (b"\x80\x02]q\x00}q\x01b.", "setting the state of a builtins.list"),
    "append_to_set": (b"\x80\x02cbuiltins\nset\n)\x85Rq\x00K\x01a.", "appending into a set"),
    "ext": (b"\x80\x02\x82\x01.", "opcode"),
    "unknown_persid": (b"\x80\x02X\x03\x00\x00\x00abcQ.", "unknown persistent id"),
    "bad_storage": (
        b"\x80\x02(X\x07\x00\x00\x00storageX\x01\x00\x00\x009"
        b"X\x07\x00\x00\x00float32X\x03\x00\x00\x00cputQ.",
        "record 'archive/data/9' is missing",
    ),
}


@pytest.mark.parametrize("name", sorted(_EVIL_PICKLES))
def test_hand_written_pickles_are_refused(name, tmp_path):
    raw, match = _EVIL_PICKLES[name]
    evil = tmp_path / "evil.pt"
    _rewrite_pickle(zsave([{1}], tmp_path), evil, raw)
    with pytest.raises((pickle.UnpicklingError, RuntimeError), match=match) as info:
        rumus.load(evil)
    assert str(evil) in str(info.value)


def test_reduce_of_a_non_allowlisted_callable_is_refused(tmp_path):
    # getattr(list, "append") would hand out a callable that isn't allowlisted.
    raw = pickle.dumps(getattr, protocol=2)
    evil = tmp_path / "evil.pt"
    _rewrite_pickle(zsave([{1}], tmp_path), evil, raw)
    with pytest.raises(pickle.UnpicklingError, match="builtins.getattr"):
        rumus.load(evil)


def test_allowlisted_class_instance_is_not_callable_through_reduce(tmp_path):
    # REDUCE may only call allowlisted globals, not objects built from them.
    m = nn.ReLU()
    body = pickle.dumps(m, protocol=2)[:-1]  # the module on the stack, no STOP
    body += b"(K\x01tR."  # ... called with (1,)
    evil = tmp_path / "evil.pt"
    _rewrite_pickle(zsave([{1}], tmp_path), evil, body)
    with safe_globals([nn.ReLU]):
        with pytest.raises(pickle.UnpicklingError, match="a call of ReLU"):
            rumus.load(evil)


def test_safe_globals_api(tmp_path):
    path = zsave(Tagged(3), tmp_path)
    clear_safe_globals()
    assert get_safe_globals() == []
    with safe_globals([Tagged]):
        assert get_safe_globals() == [Tagged]
        assert rumus.load(path).tag == 3
    assert get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError, match="test_pickle_checkpoint.Tagged"):
        rumus.load(path)
    # Under another name (a class moved since the file was written).
    with safe_globals([(Tagged, "test_pickle_checkpoint.Tagged")]):
        assert rumus.load(path).tag == 3
    add_safe_globals([Tagged])
    try:
        assert rumus.load(path).tag == 3 and get_safe_globals() == [Tagged]
    finally:
        clear_safe_globals()
    with pytest.raises(TypeError):
        add_safe_globals(Tagged)
    with pytest.raises(TypeError):
        safe_globals([(Tagged, 3)])
    # The torch-style entry points.
    assert rumus.serialization.safe_globals is safe_globals
    with pytest.raises(TypeError, match="weights_only=False"):
        rumus.load(path, encoding="latin1")
    assert rumus.load(path, weights_only=False, encoding="latin1").tag == 3


# -------------------------------------------------------------- corrupt files


def test_truncated_archives_raise_clear_errors(tmp_path):
    path = zsave({"w": rumus.arange(64.0), "n": np.arange(4), "s": {1}}, tmp_path)
    raw = path.read_bytes()
    bad = tmp_path / "bad.pt"
    for cut in sorted({*range(0, len(raw), 37), len(raw) - 1, len(raw) - 22, 4}):
        bad.write_bytes(raw[:cut])
        for mmap in (None, False):
            with pytest.raises((RuntimeError, pickle.UnpicklingError, ValueError)) as info:
                rumus.load(bad, mmap=mmap)
            assert str(bad) in str(info.value), (cut, info.value)
        with pytest.raises((RuntimeError, pickle.UnpicklingError, ValueError)):
            rumus.load(io.BytesIO(raw[:cut]))


def test_corrupt_bytes_raise_clear_errors(tmp_path):
    path = zsave({"w": rumus.arange(64.0), "s": {1}}, tmp_path)
    raw = path.read_bytes()
    recs = records(path)
    bad = tmp_path / "bad.pt"
    # Every single flipped byte: an error naming the file, or a load (data bytes
    # under mmap aren't checked); never a crash.
    for i in range(0, len(raw), 7):
        flipped = bytearray(raw)
        flipped[i] ^= 0xFF
        bad.write_bytes(bytes(flipped))
        for mmap in (None, False):
            try:
                rumus.load(bad, mmap=mmap)
            except (RuntimeError, pickle.UnpicklingError, ValueError) as e:
                assert str(bad) in str(e), (i, e)
    # A flipped tensor byte is caught by the CRC when the file is read (mmap=False).
    data = recs["archive/data/0"]
    start = data.header_offset + 30 + len("archive/data/0")
    start += struct.unpack("<H", raw[data.header_offset + 28 : data.header_offset + 30])[0]
    flipped = bytearray(raw)
    flipped[start + 5] ^= 1
    bad.write_bytes(bytes(flipped))
    with pytest.raises(RuntimeError, match="record 'archive/data/0' is corrupt"):
        rumus.load(bad, mmap=False)


def test_foreign_and_malformed_archives(tmp_path):
    bad = tmp_path / "bad.pt"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("archive/data.pkl", pickle.dumps(1))
    with pytest.raises(RuntimeError, match="not a rumus checkpoint"):
        rumus.load(bad)
    good = zsave([{1}], tmp_path)
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(bad, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == "archive/rumus_version":
                data = b"99\n"
            zout.writestr(info.filename, data)
    with pytest.raises(RuntimeError, match="format version '99' is not supported"):
        rumus.load(bad)
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(bad, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info))
    with pytest.raises(RuntimeError, match="compressed"):
        rumus.load(bad)
    # A storage record whose size isn't a whole number of elements.
    path = zsave(Point(rumus.ones(3), 1), tmp_path)
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(bad, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            zout.writestr(info.filename, data[:-1] if info.filename == "archive/data/0" else data)
    with safe_globals([Point]):
        with pytest.raises(RuntimeError, match="not a whole number of float32 elements"):
            rumus.load(bad)


def test_view_past_its_storage_is_refused(tmp_path):
    path = zsave(Point(rumus.ones(3), 1), tmp_path)
    with zipfile.ZipFile(path) as zin:
        body = zin.read("archive/data.pkl")
    # The pickled shape (3,) becomes (4,): the view would read past the record.
    assert body.count(b"K\x03\x85") >= 1
    bad = tmp_path / "bad.pt"
    _rewrite_pickle(path, bad, body.replace(b"K\x03\x85", b"K\x04\x85", 1))
    with safe_globals([Point]):
        with pytest.raises(pickle.UnpicklingError, match="reads past the end of its storage"):
            rumus.load(bad)


# -------------------------------------------------------------- format choice and atomicity


def test_plain_containers_stay_safetensors(tmp_path):
    model = Net()
    opt = rumus.optim.Adam(model.parameters())
    ck = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 1}
    for obj in (model.state_dict(), ck, dict(model.state_dict())):
        path = tmp_path / "s.safetensors"
        rumus.save(obj, path)
        raw = path.read_bytes()
        n = struct.unpack("<Q", raw[:8])[0]
        header = raw[8 : 8 + n]
        assert header.startswith(b"{") and b"fc1.weight" in header
    st = pytest.importorskip("safetensors.numpy")
    rumus.save({k: v for k, v in model.state_dict().items()}, tmp_path / "f.safetensors")
    loaded = st.load_file(str(tmp_path / "f.safetensors"))
    np.testing.assert_array_equal(loaded["fc1.weight"], to_np(model.fc1.weight.detach()))


def test_file_objects(tmp_path):
    obj = Point(rumus.arange(5.0), {1})
    buf = io.BytesIO()
    buf.write(b"prefix")
    rumus.save(obj, buf)
    buf.seek(6)
    with safe_globals([Point]):
        out = rumus.load(buf)
        assert to_np(out.x).tolist() == [0, 1, 2, 3, 4] and out.y == {1}
        with pytest.raises(ValueError, match="mmap=True needs a file path"):
            rumus.load(io.BytesIO(b"PK\x03\x04"), mmap=True)


class _ShortWriter(io.RawIOBase):
    """A raw, unseekable file object taking at most 7 bytes per write."""

    def __init__(self):
        self.data = bytearray()

    def writable(self):
        return True

    def write(self, b):
        taken = bytes(b[:7])
        self.data += taken
        return len(taken)


def test_unseekable_stream_with_short_writes(tmp_path):
    obj = [rumus.arange(100.0), {1}]
    w = _ShortWriter()
    rumus.save(obj, w)
    assert bytes(w.data) == zsave(obj, tmp_path).read_bytes()


# Writes past RLIMIT_FSIZE fail with EFBIG (SIGXFSZ ignored): a disk that fills up mid-save.
_SAVE_OVER_LIMIT = """
import resource, signal, sys, rumus
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.RLIM_INFINITY))
try:
    rumus.save([rumus.zeros(1 << 20), {1}], sys.argv[1])
except OSError as e:
    print(e.errno)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs RLIMIT_FSIZE (POSIX)")
def test_failed_save_leaves_old_file_intact(tmp_path):
    path = zsave([rumus.arange(4.0), {1}], tmp_path, "ckpt.pt")
    old = path.read_bytes()
    out = subprocess.run(
        [sys.executable, "-c", _SAVE_OVER_LIMIT, str(path)], capture_output=True, check=True
    )
    assert out.stdout.split() == [str(errno.EFBIG).encode()], out.stderr
    assert path.read_bytes() == old
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]


@pytest.mark.skipif(not hasattr(os, "kill"), reason="needs process ids to check")
def test_save_removes_temp_files_of_dead_processes_only(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".ckpt.pt.{dead.pid}.5eed.tmp"
    live = tmp_path / f".ckpt.pt.{os.getpid()}.5eed.tmp"
    for p in (stale, live):
        p.write_bytes(b"partial")
    zsave([{1}], tmp_path, "ckpt.pt")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["ckpt.pt", live.name])


def test_save_through_symlink_and_permissions(tmp_path):
    target = zsave([{1}], tmp_path, "real.pt")
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    assert target.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777
    link = tmp_path / "link.pt"
    link.symlink_to(target)
    rumus.save([{2}], link)
    assert link.is_symlink() and rumus.load(target) == [{2}]
