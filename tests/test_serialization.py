"""rumus.save / rumus.load (safetensors): round trips of every dtype and of
nested structures, interop with the safetensors package, every kind of
corrupt file, atomic writes, zero-copy memory-mapped loading."""

import collections
import errno
import io
import json
import math
import os
import pickle
import signal
import struct
import subprocess
import sys
import time

import numpy as np
import pytest
import rumus
from conftest import ALL_DTYPES, dtype_name, make, noncontig, tensor, to_np

NP_DTYPES = [d for d in ALL_DTYPES if d != "bfloat16"]


def _bits(t):
    """Exact content of a tensor: dtype name, shape and raw bits (nan-safe)."""
    a = to_np(t)
    if t.dtype == rumus.bfloat16:
        a = a.view(np.uint32)
    elif a.dtype.kind == "f":
        a = a.view(f"u{a.itemsize}")
    return dtype_name(t), a.shape, a.tolist()


def assert_same(got, expected):
    """Same structure, same types (tuple vs list, int vs float vs bool), same tensors."""
    assert type(got) is type(expected), f"{type(got)} != {type(expected)}"
    if isinstance(expected, rumus.Tensor):
        assert _bits(got) == _bits(expected)
        assert got.requires_grad == expected.requires_grad
    elif isinstance(expected, dict):
        assert list(got) == list(expected)
        assert [type(k) for k in got] == [type(k) for k in expected]
        for k in expected:
            assert_same(got[k], expected[k])
    elif isinstance(expected, (list, tuple)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_same(g, e)
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == expected
        if isinstance(expected, float):
            assert math.copysign(1, got) == math.copysign(1, expected)


def roundtrip(obj, tmp_path, **load_kw):
    """Save and load through a path and through a BytesIO; both must agree with obj."""
    path = tmp_path / "x.safetensors"
    rumus.save(obj, path)
    out = rumus.load(path, **load_kw)
    assert_same(out, obj)
    buf = io.BytesIO()
    rumus.save(obj, buf)
    assert buf.getvalue() == path.read_bytes()
    buf.seek(0)
    assert_same(rumus.load(buf), obj)
    return out


def header(raw):
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8 : 8 + n]), 8 + n


def raw_file(entries, data, metadata=None, pad=True):
    """Bytes of a safetensors file from a header dict and the data bytes."""
    h = dict(entries)
    if metadata is not None:
        h["__metadata__"] = metadata
    text = json.dumps(h).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def all_dtype_tensors(shape, rng):
    return {d: tensor(make(shape, d, rng), d) for d in ALL_DTYPES}


# -------------------------------------------------------------- round trips


@pytest.mark.parametrize("shape", [(3, 4), (), (0,), (2, 0, 3), (1,), (2, 3, 4)], ids=str)
def test_roundtrip_every_dtype(shape, tmp_path, rng):
    ts = all_dtype_tensors(shape, rng)
    out = roundtrip(ts, tmp_path)
    assert type(out) is dict and list(out) == ALL_DTYPES
    for d, t in out.items():
        assert t.dtype == getattr(rumus, d) and tuple(t.shape) == shape


def test_special_float_values_are_bit_exact(tmp_path):
    vals = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40, -3.5, 65504.0], np.float32)
    ts = {
        d: tensor(vals.astype(np.float64 if d == "float64" else np.float32), d)
        for d in ("float16", "bfloat16", "float32", "float64")
    }
    roundtrip(ts, tmp_path)
    # The stored bf16 bits are the top half of the float32 bits.
    raw = (tmp_path / "x.safetensors").read_bytes()
    h, start = header(raw)
    b, e = h["bfloat16"]["data_offsets"]
    stored = np.frombuffer(raw[start + b : start + e], "<u2")
    np.testing.assert_array_equal(
        stored, (to_np(ts["bfloat16"]).view(np.uint32) >> 16).astype(np.uint16)
    )


def test_extreme_int_values(tmp_path):
    ts = {
        "i64": rumus.tensor(np.array([-(2**63), 2**63 - 1, 0], np.int64)),
        "i32": rumus.tensor(np.array([-(2**31), 2**31 - 1], np.int32)),
        "u8": rumus.tensor(np.array([0, 255], np.uint8)),
    }
    roundtrip(ts, tmp_path)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_noncontiguous_inputs_are_saved_as_their_values(dtype, tmp_path, rng):
    a = make((3, 4), dtype, rng)
    views = {kind: t for kind, t, _ in noncontig(a, dtype)}
    assert not any(t.is_contiguous() for t in views.values())
    out = rumus.load(_saved(views, tmp_path))
    for kind, t in views.items():
        assert out[kind].is_contiguous()
        assert _bits(out[kind]) == _bits(t.contiguous())


def _saved(obj, tmp_path, name="x.safetensors"):
    path = tmp_path / name
    rumus.save(obj, path)
    return path


def test_views_sharing_storage_are_saved_separately(tmp_path):
    base = rumus.arange(12.0).reshape(3, 4)
    obj = {"base": base, "row": base[1], "col": base[:, 2], "t": base.t(), "same": base}
    raw = _saved(obj, tmp_path).read_bytes()
    h, start = header(raw)
    assert {k: h[k]["data_offsets"][1] - h[k]["data_offsets"][0] for k in obj} == {
        "base": 48,
        "row": 16,
        "col": 12,
        "t": 48,
        "same": 48,
    }
    assert len(raw) == start + 48 + 16 + 12 + 48 + 48
    out = rumus.load(tmp_path / "x.safetensors")
    np.testing.assert_array_equal(to_np(out["col"]), [2.0, 6.0, 10.0])
    np.testing.assert_array_equal(to_np(out["t"]), to_np(base).T)
    out["base"].add_(100.0)  # loaded tensors are independent of each other
    np.testing.assert_array_equal(to_np(out["row"]), [4.0, 5.0, 6.0, 7.0])
    np.testing.assert_array_equal(to_np(out["same"]), to_np(base))


def test_flat_dict_is_plain_safetensors(tmp_path):
    ts = {"layer.weight": rumus.ones(2, 3), "layer.bias": rumus.zeros(3), "": rumus.tensor(1)}
    raw = _saved(ts, tmp_path).read_bytes()
    h, start = header(raw)
    assert "__metadata__" not in h and list(h) == list(ts)
    assert start % 8 == 0  # header padded with spaces: data 8-byte aligned
    assert raw[8:start].rstrip(b" ").endswith(b"}")
    ends = [h[k]["data_offsets"] for k in ts]
    assert ends == [[0, 24], [24, 36], [36, 44]] and len(raw) == start + 44
    assert h["layer.weight"] == {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}


def test_empty_dict_and_dict_without_tensors(tmp_path):
    roundtrip({}, tmp_path)
    roundtrip({"epoch": 3, "name": "run"}, tmp_path)
    roundtrip([], tmp_path)


def test_nested_structure(tmp_path):
    t = rumus.arange(6.0).reshape(2, 3)
    obj = {
        "tensor": t,
        "ints": {0: "zero", -1: None, 10**30: [1, 2]},
        "keys": {1.5: "float key", True: "bool key", None: "none key", "s": "str key"},
        "tuple": (1, 2.0, (3, [t.t()]), ()),
        "list": [None, True, False, "ünïcode ✓", "", [], {}, [[[]]]],
        "floats": [0.1, -0.0, float("inf"), float("-inf"), float("nan"), 1e308, 5e-324],
        "big": 2**100,
        "neg": -7,
        "one_float": 1.0,
        "odict": collections.OrderedDict([("b", 1), ("a", rumus.tensor([True, False]))]),
    }
    out = roundtrip(obj, tmp_path)
    assert type(out["odict"]) is collections.OrderedDict


@pytest.mark.parametrize(
    "obj",
    [
        rumus.arange(5),
        rumus.tensor(2.5, dtype=rumus.float64),
        [rumus.ones(2), 3],
        (rumus.zeros(0),),
        7,
        1.5,
        None,
        "text",
        True,
    ],
    ids=lambda o: type(o).__name__,
)
def test_non_dict_top_level(obj, tmp_path):
    roundtrip(obj, tmp_path)


def test_model_like_state_dict(tmp_path, rng):
    sd = collections.OrderedDict()
    for name, shape in [
        ("conv.weight", (4, 3, 3, 3)),
        ("conv.bias", (4,)),
        ("bn.weight", (4,)),
        ("bn.bias", (4,)),
        ("bn.running_mean", (4,)),
        ("bn.running_var", (4,)),
        ("fc.weight", (10, 36)),
        ("fc.bias", (10,)),
    ]:
        sd[name] = tensor(make(shape, "float32", rng))
    sd["bn.num_batches_tracked"] = rumus.tensor(17)
    out = roundtrip(sd, tmp_path)
    # The tensors keep the state dict's keys as their names in the file.
    h, _ = header((tmp_path / "x.safetensors").read_bytes())
    assert [k for k in h if k != "__metadata__"] == list(sd)
    assert out["bn.num_batches_tracked"].dtype == rumus.int64


def test_optimizer_like_state_dict(tmp_path, rng):
    state = {
        i: {
            "step": rumus.tensor(float(5 + i)),
            "exp_avg": tensor(make((3, 2), "float32", rng)),
            "exp_avg_sq": tensor(make((3, 2), "float32", rng, low=0)),
        }
        for i in range(2)
    }
    sd = {
        "state": state,
        "param_groups": [
            {
                "lr": 1e-3,
                "betas": (0.9, 0.999),
                "eps": 1e-8,
                "weight_decay": 0,
                "amsgrad": False,
                "maximize": False,
                "foreach": None,
                "params": [0, 1],
            }
        ],
    }
    obj = {"model": collections.OrderedDict(w=rumus.ones(3, 2)), "optimizer": sd, "epoch": 3}
    out = roundtrip(obj, tmp_path)
    assert list(out["optimizer"]["state"]) == [0, 1]
    assert out["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    h, _ = header((tmp_path / "x.safetensors").read_bytes())
    assert "optimizer.state.1.exp_avg" in h and "model.w" in h


def test_generated_names_are_unique(tmp_path):
    a, b, c, d = (rumus.tensor([float(i)]) for i in range(4))
    obj = {"a.b": a, "a": {"b": b}, "a.b#1": c, "__metadata__": d}
    roundtrip(obj, tmp_path)
    h, _ = header((tmp_path / "x.safetensors").read_bytes())
    assert (
        len(h) == 5
        and "__metadata__" in h
        and isinstance(h["__metadata__"]["rumus.structure"], str)
    )


def test_requires_grad_is_kept(tmp_path):
    w = rumus.ones(2, 2).requires_grad_()
    y = (w * 2).sum()  # a non-leaf: saved as its values, loaded as a leaf
    out = roundtrip({"w": w, "b": rumus.zeros(2), "nested": [w]}, tmp_path)
    assert out["w"].requires_grad and out["w"].is_leaf and not out["b"].requires_grad
    # A dict of str -> Tensor with a grad-requiring tensor keeps its keys as names.
    h, _ = header((tmp_path / "x.safetensors").read_bytes())
    assert {"w", "b", "nested.0"} <= set(h)
    ly = rumus.load(_saved(y, tmp_path, "y"))
    assert ly.requires_grad and ly.is_leaf and ly.item() == 8.0
    out["w"].sum().backward()
    np.testing.assert_array_equal(to_np(out["w"].grad), np.ones((2, 2), np.float32))


def test_parameter_is_kept(tmp_path):
    Parameter = pytest.importorskip("rumus.nn.parameter").Parameter
    p = Parameter(rumus.arange(4.0))
    q = Parameter(rumus.ones(2), requires_grad=False)
    out = rumus.load(_saved({"p": p, "q": [q]}, tmp_path))
    assert type(out["p"]) is Parameter and out["p"].requires_grad
    assert type(out["q"][0]) is Parameter and not out["q"][0].requires_grad
    np.testing.assert_array_equal(to_np(out["p"].detach()), [0, 1, 2, 3])


def test_file_objects(tmp_path):
    obj = {"x": rumus.arange(3), "n": 1}
    path = tmp_path / "f.bin"
    with open(path, "wb") as f:
        rumus.save(obj, f)
    with open(path, "rb") as f:
        assert_same(rumus.load(f), obj)
    # A file object is read from its current position.
    buf = io.BytesIO()
    buf.write(b"prefix")
    rumus.save(obj, buf)
    buf.seek(6)
    assert_same(rumus.load(buf), obj)
    # str, bytes and PathLike paths.
    rumus.save(obj, str(path))
    assert_same(rumus.load(os.fsencode(str(path))), obj)


def test_loaded_tensors_are_writable_and_independent_of_the_source(tmp_path):
    buf = io.BytesIO()
    rumus.save({"x": rumus.zeros(4)}, buf)
    before = buf.getvalue()
    buf.seek(0)
    x = rumus.load(buf)["x"]
    x.add_(1.0)
    assert buf.getvalue() == before
    path = _saved({"x": rumus.zeros(4)}, tmp_path)
    before = path.read_bytes()
    for mmap in (None, False):
        x = rumus.load(path, mmap=mmap)["x"]
        x.add_(1.0)  # copy-on-write: the file doesn't change
        np.testing.assert_array_equal(to_np(x), np.ones(4, np.float32))
        assert path.read_bytes() == before


def test_load_options(tmp_path):
    path = _saved({"x": rumus.ones(2)}, tmp_path)
    for loc in (None, "cpu", rumus.device("cpu")):
        assert rumus.load(path, map_location=loc)["x"].device.type == "cpu"
    assert to_np(rumus.load(path, weights_only=False)["x"]).tolist() == [1.0, 1.0]
    assert to_np(rumus.load(path, mmap=True)["x"]).tolist() == [1.0, 1.0]
    seen = []
    out = rumus.load(path, map_location=lambda s, loc: seen.append(loc))  # None: the default
    assert seen == ["cpu"] and out["x"].device.type == "cpu"
    assert rumus.load(path, map_location={"gpu:0": "cpu"})["x"].device.type == "cpu"
    with pytest.raises(RuntimeError, match="device type"):
        rumus.load(path, map_location="nonsense")
    with pytest.raises(TypeError, match="map_location=3"):
        rumus.load(path, map_location=3)
    with pytest.raises(ValueError, match="mmap=True needs a file path"):
        rumus.load(io.BytesIO(path.read_bytes()), mmap=True)
    with pytest.raises(FileNotFoundError):
        rumus.load(tmp_path / "missing.safetensors")
    with pytest.raises(IsADirectoryError):
        rumus.load(tmp_path)
    with pytest.raises(FileNotFoundError):
        rumus.save({"x": rumus.ones(1)}, tmp_path / "missing" / "x.safetensors")


# -------------------------------------------------------------- other objects: the zip format


class Foo:
    def __init__(self, n=0):
        self.n = n

    def __repr__(self):
        return f"Foo({self.n})"


Pt = collections.namedtuple("Pt", "x y")


@pytest.mark.parametrize(
    "obj",
    [
        Foo(3),
        {"a": [1, Foo()]},
        {"opt": {0: {"step": np.float64(1.0)}}},
        {"s": {1, 2}},
        {"a": np.zeros(2)},
        {(1, 2): 5},
        Pt(1, 2),
    ],
    ids=["object", "nested", "numpy_scalar", "set", "ndarray", "tuple_key", "namedtuple"],
)
def test_other_objects_are_saved_as_zip_archives(obj, tmp_path):
    path = tmp_path / "x.pt"
    rumus.save(obj, path)
    assert path.read_bytes()[:4] == b"PK\x03\x04"
    out = rumus.load(path, weights_only=False)
    assert type(out) is type(obj)
    assert repr(out) == repr(obj)
    buf = io.BytesIO()
    rumus.save(obj, buf)
    assert buf.getvalue() == path.read_bytes()


def test_save_errors_leave_nothing(tmp_path):
    class MyTensor(rumus.Tensor):  # a local class: pickle can't name it
        pass

    with pytest.raises((AttributeError, pickle.PicklingError), match="MyTensor"):
        rumus.save({"t": MyTensor(rumus.ones(2))}, tmp_path / "bad")
    with pytest.raises((AttributeError, pickle.PicklingError), match="lambda"):
        rumus.save({"f": lambda: 0}, io.BytesIO())
    assert list(tmp_path.iterdir()) == []
    loop = [1]
    loop.append(loop)  # pickle keeps cycles
    rumus.save(loop, tmp_path / "loop")
    out = rumus.load(tmp_path / "loop")
    assert out[0] == 1 and out[1] is out
    with pytest.raises(TypeError, match="path or a writable binary file object"):
        rumus.save({}, 3)
    with pytest.raises(TypeError, match="path or a readable binary file object"):
        rumus.load(3)


# -------------------------------------------------------------- atomicity


def _run(code, *args):
    """Runs Python `code` in a fresh interpreter with `args` as sys.argv[1:]."""
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)], capture_output=True, check=True
    )


# Writes past RLIMIT_FSIZE fail with EFBIG (SIGXFSZ ignored): a disk that fills up mid-save.
_SAVE_OVER_LIMIT = """
import resource, signal, sys, rumus
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.RLIM_INFINITY))
try:
    rumus.save({"x": rumus.zeros(1 << 20), "y": rumus.ones(3)}, sys.argv[1])
except OSError as e:
    print(e.errno)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs RLIMIT_FSIZE (POSIX)")
def test_failed_save_leaves_old_file_intact(tmp_path):
    path = _saved({"x": rumus.arange(4.0)}, tmp_path, "ckpt.safetensors")
    old = path.read_bytes()
    assert _run(_SAVE_OVER_LIMIT, path).stdout.split() == [str(errno.EFBIG).encode()]
    assert path.read_bytes() == old
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.safetensors"]
    # A failing first save creates nothing.
    assert _run(_SAVE_OVER_LIMIT, tmp_path / "new.safetensors").stdout.strip()
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.safetensors"]
    assert_same(rumus.load(path), {"x": rumus.arange(4.0)})


# Saves a 32 MiB checkpoint over and over until killed.
_SAVE_FOREVER = """
import sys, rumus
path, n, tag = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ckpt = {"w": rumus.arange(n, dtype=rumus.float32), "tag": rumus.tensor(tag)}
print("saving", flush=True)
while True:
    rumus.save(ckpt, path)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_save_killed_midway_keeps_a_loadable_checkpoint_and_no_temp_file(tmp_path):
    path, n = tmp_path / "ckpt.safetensors", 1 << 23
    rumus.save({"w": rumus.arange(n, dtype=rumus.float32), "tag": rumus.tensor(-1)}, path)
    for tag in range(3):
        child = subprocess.Popen(
            [sys.executable, "-c", _SAVE_FOREVER, str(path), str(n), str(tag)],
            stdout=subprocess.PIPE,
        )
        assert child.stdout.readline() == b"saving\n"
        time.sleep(0.05 * (tag + 1))  # a different point of a save each time
        child.kill()
        child.wait()
        child.stdout.close()
        out = rumus.load(path, mmap=False)
        assert out["tag"].item() in range(-1, tag + 1)
        assert out["w"].sum(dtype=rumus.float64).item() == n * (n - 1) / 2
    rumus.save({"w": rumus.ones(1), "tag": rumus.tensor(9)}, path)
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.safetensors"]
    assert rumus.load(path)["tag"].item() == 9


@pytest.mark.skipif(not hasattr(os, "kill"), reason="needs process ids to check")
def test_save_removes_temp_files_of_dead_processes_only(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".ckpt.safetensors.{dead.pid}.5eed.tmp"
    live = [
        tmp_path / f".ckpt.safetensors.{os.getpid()}.5eed.tmp",  # this process may be saving
        tmp_path / f".ckpt.safetensors.{os.getppid()}.5eed.tmp",
        tmp_path / f".other.safetensors.{dead.pid}.5eed.tmp",  # another target's
    ]
    for p in [stale, *live]:
        p.write_bytes(b"partial")
    _saved({"x": rumus.ones(2)}, tmp_path, "ckpt.safetensors")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(["ckpt.safetensors", *(p.name for p in live)])


class _Writer(io.RawIOBase):
    """A raw file object taking at most `step` bytes per write, failing once it holds `limit`."""

    def __init__(self, step, limit=None):
        self.data, self.step, self.limit = bytearray(), step, limit

    def writable(self):
        return True

    def write(self, b):
        if self.limit is not None and len(self.data) >= self.limit:
            raise OSError("disk full (simulated)")
        taken = bytes(b[: self.step])
        self.data += taken
        return len(taken)


def test_file_object_short_writes_and_errors(tmp_path):
    obj = {"x": rumus.arange(1000.0), "n": 3}
    short = _Writer(step=7)
    rumus.save(obj, short)
    assert bytes(short.data) == _saved(obj, tmp_path).read_bytes()
    with pytest.raises(OSError, match="disk full"):
        rumus.save(obj, _Writer(step=100, limit=300))


def test_save_replaces_file_with_normal_permissions(tmp_path):
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    path = _saved({"x": rumus.ones(2)}, tmp_path, "a.safetensors")
    assert path.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777
    rumus.save({"x": rumus.zeros(3)}, path)
    assert to_np(rumus.load(path)["x"]).tolist() == [0.0, 0.0, 0.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.safetensors", "plain"]


@pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="needs symlinks")
def test_save_through_symlink_updates_its_target(tmp_path):
    target = _saved({"x": rumus.ones(1)}, tmp_path, "real.safetensors")
    link = tmp_path / "link.safetensors"
    link.symlink_to(target)
    rumus.save({"x": rumus.zeros(1)}, link)
    assert link.is_symlink()
    assert to_np(rumus.load(target)["x"]).tolist() == [0.0]


# -------------------------------------------------------------- zero copy


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
    n = 1 << 21  # 8 MiB of float32
    path = _saved({"small": rumus.ones(3), "big": rumus.arange(n, dtype=rumus.float32)}, tmp_path)
    out = rumus.load(path)
    big = out["big"]
    assert _mapped_file(big.data_ptr()) == str(path)  # the tensor's memory is the file's mapping
    assert _mapped_file(big.data_ptr() + 4 * n - 1) == str(path)
    assert big[n - 1].item() == n - 1 and big.sum(dtype=rumus.float64).item() == n * (n - 1) / 2
    del out
    # The mapping lives as long as the tensor.
    import gc

    gc.collect()
    assert big[12345].item() == 12345.0
    assert _mapped_file(rumus.load(path, mmap=False)["big"].data_ptr()) != str(path)


def test_misaligned_foreign_file_loads(tmp_path):
    # Unpadded header of odd length and odd offsets: rumus copies instead of viewing.
    data = np.array([7], np.uint8).tobytes() + np.array([1.5, -2.0], "<f8").tobytes()
    raw = raw_file(
        {
            "u": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
            "d": {"dtype": "F64", "shape": [2], "data_offsets": [1, 17]},
        },
        data,
        pad=False,
    )
    (tmp_path / "m").write_bytes(raw)
    out = rumus.load(tmp_path / "m")
    assert to_np(out["d"]).tolist() == [1.5, -2.0] and to_np(out["u"]).tolist() == [7]


# -------------------------------------------------------------- data changed after saving


def test_arbitrary_data_bytes_do_not_crash(tmp_path):
    path = _saved(
        {
            "b": rumus.tensor([True, False, True, False]),
            "f": rumus.zeros(2),
            "h": rumus.zeros(2).half(),
            "bf": rumus.zeros(2).bfloat16(),
        },
        tmp_path,
    )
    raw = bytearray(path.read_bytes())
    h, start = header(bytes(raw))
    s = start + h["b"]["data_offsets"][0]
    raw[s : s + 4] = bytes([2, 0, 255, 1])  # not 0/1: still bools, non-zero is True
    for k in ("f", "h", "bf"):
        b, e = h[k]["data_offsets"]
        raw[start + b : start + e] = b"\xff" * (e - b)  # NaN bit patterns
    path.write_bytes(bytes(raw))
    for load in (lambda: rumus.load(path), lambda: rumus.load(io.BytesIO(bytes(raw)))):
        out = load()
        assert to_np(out["b"]).tolist() == [True, False, True, True]
        assert to_np(out["b"].logical_not()).tolist() == [False, True, False, False]
        assert out["b"].sum().item() == 3
        for k in ("f", "h", "bf"):
            assert np.isnan(to_np(out[k])).all()


def test_file_changed_after_load(tmp_path):
    path = _saved({"x": rumus.arange(1024.0)}, tmp_path)
    x = rumus.load(path)["x"]
    # rumus.save replaces the file: the loaded tensor keeps the old values.
    rumus.save({"x": rumus.zeros(1024)}, path)
    assert x.sum().item() == 1023 * 1024 / 2
    # Rewriting the bytes in place (same size) doesn't crash either.
    y = rumus.load(path)["x"]
    raw = bytearray(path.read_bytes())
    raw[-4096:] = np.full(1024, 5.0, np.float32).tobytes()
    with open(path, "r+b") as f:
        f.write(bytes(raw))
    assert set(to_np(y).tolist()) <= {0.0, 5.0}


# -------------------------------------------------------------- corrupt files


GOOD = {
    "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
    "b": {"dtype": "I64", "shape": [], "data_offsets": [8, 16]},
}


def _entry(**kw):
    e = dict(GOOD["a"])
    e.update(kw)
    return e


CORRUPT = [
    (b"", "file too short \\(0 bytes\\)"),
    (b"\x08\x00\x00\x00", "file too short \\(4 bytes\\)"),
    (
        struct.pack("<Q", 1000) + b"{}      ",
        "header length 1000 is larger than the file \\(16 bytes\\)",
    ),
    (struct.pack("<Q", 2**64 - 1), "header length 18446744073709551615 is larger"),
    (struct.pack("<Q", 8) + b"{not js}", "header is not valid JSON"),
    (struct.pack("<Q", 8) + b"\xff\xfe{}    ", "header is not valid JSON"),
    (struct.pack("<Q", 0), "header is not valid JSON"),
    (struct.pack("<Q", 8) + b"[1, 2]  ", "header is not a JSON object \\(got an array\\)"),
    (struct.pack("<Q", 16) + b'{"a":1, "a":2}  ', "duplicate key 'a'"),
    (raw_file({"a": _entry(dtype="F17")}, bytes(8)), "tensor 'a': unknown variant `F17`"),
    (raw_file({"a": _entry(dtype=3)}, bytes(8)), "tensor 'a': invalid type: integer `3`"),
    (
        raw_file({"a": _entry(shape=[3])}, bytes(8)),
        "tensor 'a': data_offsets \\[0, 8\\] hold 8 bytes but shape \\[3\\] of F32 needs 12",
    ),
    (raw_file({"a": _entry(shape=[-2])}, bytes(8)), "tensor 'a': invalid value: integer `-2`"),
    (raw_file({"a": _entry(shape=[2.0])}, bytes(8)), "tensor 'a': invalid type: floating point"),
    (raw_file({"a": _entry(shape=[True, 2])}, bytes(8)), "tensor 'a': invalid type: boolean"),
    (raw_file({"a": _entry(shape=None)}, bytes(8)), "tensor 'a': invalid type: null"),
    (
        raw_file({"a": _entry(data_offsets=[8, 0])}, bytes(8)),
        "tensor 'a': data_offsets \\[8, 0\\] end before they begin",
    ),
    (raw_file({"a": _entry(data_offsets=[0])}, bytes(8)), "tensor 'a': invalid length 1"),
    (raw_file({"a": _entry(data_offsets=[0, 8, 16])}, bytes(8)), "tensor 'a': .*length"),
    (
        raw_file({"a": _entry(data_offsets=[8, 16])}, bytes(8)),
        "tensor 'a': data_offsets \\[8, 16\\] are out of range \\(the data section has 8 bytes\\)",
    ),
    (
        raw_file({"a": {"dtype": "F32", "shape": [2]}}, bytes(8)),
        "tensor 'a': missing field `data_offsets`",
    ),
    (raw_file({"a": [1, 2]}, bytes(8)), "tensor 'a': invalid type: integer `1`"),
    (raw_file({"a": "F32"}, bytes(8)), "tensor 'a': invalid type: string"),
    (
        raw_file(
            {"a": GOOD["a"], "b": {"dtype": "I64", "shape": [], "data_offsets": [4, 12]}}, bytes(16)
        ),
        "tensor 'b' at data_offsets \\[4, 12\\] overlaps the previous tensor",
    ),
    (
        raw_file(
            {"a": GOOD["a"], "b": {"dtype": "I64", "shape": [], "data_offsets": [12, 20]}},
            bytes(20),
        ),
        "tensor 'b' at data_offsets \\[12, 20\\] leaves a gap of 4 bytes",
    ),
    (
        raw_file({"b": {"dtype": "I64", "shape": [], "data_offsets": [8, 16]}}, bytes(16)),
        "tensor 'b' at data_offsets \\[8, 16\\] leaves a gap of 8 bytes",
    ),
    (raw_file(GOOD, bytes(16) + b"junk"), "4 bytes of trailing data after the last tensor"),
    (raw_file({}, b"x"), "1 bytes of trailing data"),
    (raw_file(GOOD, bytes(16), metadata={"k": 1}), "__metadata__ must be an object of str -> str"),
    (raw_file(GOOD, bytes(16), metadata=["x"]), "__metadata__ must be an object of str -> str"),
    (b"PK\x03\x04" + bytes(60), "truncated or corrupt zip archive"),
    (b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19.", "a bare pickle"),
    (b"\x80\x04\x95" + bytes(30), "a bare pickle"),
]


@pytest.mark.parametrize("raw, match", CORRUPT, ids=range(len(CORRUPT)))
def test_corrupt_files_raise(raw, match, tmp_path):
    with pytest.raises(RuntimeError, match=match):
        rumus.load(io.BytesIO(raw))
    path = tmp_path / "bad.safetensors"
    path.write_bytes(raw)
    for mmap in (None, False):
        with pytest.raises(RuntimeError, match=match) as info:
            rumus.load(path, mmap=mmap)
        assert str(path) in str(info.value)


def test_hand_written_file_loads():
    data = np.array([1, 2], "<f4").tobytes() + struct.pack("<q", -5)
    out = rumus.load(io.BytesIO(raw_file(GOOD, data)))
    assert to_np(out["a"]).tolist() == [1.0, 2.0] and out["b"].item() == -5 and out["b"].shape == ()
    # Fields the format doesn't define are ignored, as by the safetensors crate.
    out = rumus.load(io.BytesIO(raw_file({"a": _entry(extra=1), "b": GOOD["b"]}, data)))
    assert to_np(out["a"]).tolist() == [1.0, 2.0]


def test_duplicate_names_are_refused():
    # A valid header once the duplicate collapses, so only the duplicate check catches it.
    text = b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},' + (
        b'"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
    )
    raw = struct.pack("<Q", len(text)) + text + b"\x07"
    with pytest.raises(RuntimeError, match="duplicate key 'a'"):
        rumus.load(io.BytesIO(raw))


def test_tensors_keep_the_header_order(tmp_path):
    # Empty tensors all sit at one offset: only the header says their order.
    ts = {k: rumus.zeros(0, dtype=d) for k, d in [("z", rumus.int64), ("a", rumus.uint8)]}
    ts["m"] = rumus.ones(1)
    assert list(rumus.load(_saved(ts, tmp_path))) == ["z", "a", "m"]


@pytest.mark.parametrize("st_dtype", ["I8", "I16", "U16", "U32", "U64", "F8_E4M3", "F8_E5M2"])
def test_dtypes_rumus_lacks(st_dtype):
    size = {"I8": 1, "I16": 2, "U16": 2, "U32": 4, "U64": 8, "F8_E4M3": 1, "F8_E5M2": 1}[st_dtype]
    raw = raw_file(
        {"q": {"dtype": st_dtype, "shape": [2], "data_offsets": [0, 2 * size]}}, bytes(2 * size)
    )
    with pytest.raises(
        RuntimeError, match=f"tensor 'q' has dtype {st_dtype}, which rumus doesn't support"
    ):
        rumus.load(io.BytesIO(raw))


def _with_structure(structure, extra_meta=None):
    meta = {"rumus.structure": structure if isinstance(structure, str) else json.dumps(structure)}
    meta.update(extra_meta or {})
    return raw_file(
        {"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, bytes(4), metadata=meta
    )


@pytest.mark.parametrize(
    "structure, match",
    [
        ("{oops", "rumus.structure metadata is not valid JSON"),
        ([1], "expected an object with version and root"),
        ({"version": 2, "root": None}, "version 2 is not supported"),
        (
            {"version": 1, "root": {"set": [1]}},
            "unknown rumus.structure metadata: {'set': \\[1\\]}",
        ),
        ({"version": 1, "root": {"tensor": "nope"}}, "no tensor named 'nope'"),
        ({"version": 1, "root": {"tensor": "t", "requires_grad": "yes"}}, "tensor node"),
        ({"version": 1, "root": {"tensor": "t", "device": "gpu"}}, "tensor node"),
        ({"version": 1, "root": {"dict": [[1]]}}, "is not a \\[key, value\\] pair"),
        ({"version": 1, "root": {"dict": [[[1], 2]]}}, "\\[1\\] is not a leaf value"),
        ({"version": 1, "root": {"list": 5}}, "is not a leaf value"),
        ({"version": 1, "root": {"float": "x"}}, "is not a leaf value"),
        ({"version": 1, "root": [1, 2]}, "is not a leaf value"),
        ({"version": 1, "root": 1.5}, "1.5 is not a leaf value"),
    ],
    ids=range(13),
)
def test_bad_structure_metadata(structure, match):
    with pytest.raises(RuntimeError, match=match):
        rumus.load(io.BytesIO(_with_structure(structure)))


def test_unknown_rumus_metadata_and_foreign_metadata():
    with pytest.raises(RuntimeError, match="unknown rumus metadata \\['rumus.future'\\]"):
        rumus.load(io.BytesIO(_with_structure({"version": 1, "root": None}, {"rumus.future": "1"})))
    # Metadata of other writers is ignored.
    raw = raw_file(
        {"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}},
        bytes(4),
        metadata={"format": "pt"},
    )
    assert list(rumus.load(io.BytesIO(raw))) == ["t"]


# ------------------------------------------------ interop with the safetensors package


def test_interop_safetensors_numpy(tmp_path, rng):
    st_numpy = pytest.importorskip("safetensors.numpy")
    arrays = {d: make((2, 3), d, rng) for d in NP_DTYPES}
    arrays["empty"] = np.zeros((0, 4), np.float32)
    arrays["scalar"] = np.array(2.5, np.float64)
    st_numpy.save_file(arrays, tmp_path / "np.safetensors")
    out = rumus.load(tmp_path / "np.safetensors")
    assert set(out) == set(arrays)
    for k, a in arrays.items():
        got = to_np(out[k])
        assert got.dtype == a.dtype and got.shape == a.shape
        np.testing.assert_array_equal(got, a)
    # And back: rumus writes, safetensors.numpy reads (bf16 aside: NumPy has no bf16).
    ts = {k: tensor(a) for k, a in arrays.items()}
    rumus.save(ts, tmp_path / "r.safetensors")
    back = st_numpy.load_file(tmp_path / "r.safetensors")
    for k, a in arrays.items():
        assert back[k].dtype == a.dtype
        np.testing.assert_array_equal(back[k], a)


def test_interop_structured_file_is_readable_by_safetensors(tmp_path):
    safetensors = pytest.importorskip("safetensors")
    obj = {
        "model": collections.OrderedDict(w=rumus.ones(2, 2)),
        "opt": {"state": {0: {"m": rumus.zeros(2)}}},
        "epoch": 4,
    }
    rumus.save(obj, tmp_path / "s.safetensors")
    with safetensors.safe_open(tmp_path / "s.safetensors", "np") as f:
        assert sorted(f.keys()) == ["model.w", "opt.state.0.m"]
        np.testing.assert_array_equal(f.get_tensor("model.w"), np.ones((2, 2), np.float32))
        assert "rumus.structure" in f.metadata()


def test_interop_safetensors_torch(tmp_path):
    torch = pytest.importorskip("torch")
    st_torch = pytest.importorskip("safetensors.torch")
    g = torch.Generator().manual_seed(0)
    tts = {
        "f32": torch.randn(3, 4, generator=g),
        "f64": torch.randn(2, dtype=torch.float64, generator=g),
        "f16": torch.randn(5, generator=g).half(),
        "bf16": torch.randn(2, 3, generator=g).bfloat16(),
        "i64": torch.arange(-3, 3),
        "i32": torch.arange(4, dtype=torch.int32),
        "u8": torch.arange(250, 256, dtype=torch.uint8),
        "b": torch.tensor([True, False]),
        "scalar": torch.tensor(1.25),
        "empty": torch.zeros(0, 2, dtype=torch.bfloat16),
    }
    st_torch.save_file(tts, tmp_path / "t.safetensors", metadata={"format": "pt"})
    out = rumus.load(tmp_path / "t.safetensors")
    for k, t in tts.items():
        assert str(out[k].dtype).removeprefix("rumus.") == str(t.dtype).removeprefix("torch.")
        assert _bits(out[k])[2] == _torch_bits(t)
    rumus.save(out, tmp_path / "r.safetensors")
    back = st_torch.load_file(tmp_path / "r.safetensors")
    for k, t in tts.items():
        assert back[k].dtype == t.dtype and torch.equal(back[k], t)
    # A structured file's tensors load in safetensors.torch too.
    rumus.save({"w": [out["bf16"]], "n": 3}, tmp_path / "s.safetensors")
    assert torch.equal(st_torch.load_file(tmp_path / "s.safetensors")["w.0"], tts["bf16"])


def _torch_bits(t):
    if t.dtype.is_floating_point:
        import torch

        if t.dtype == torch.bfloat16:
            return (t.float().numpy().view(np.uint32)).tolist()
        a = t.numpy()
        return a.view(f"u{a.itemsize}").tolist()
    return t.numpy().tolist()


def test_torch_checkpoints_are_refused(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"a": torch.ones(2)}, tmp_path / "zip.pt")
    torch.save({"a": torch.ones(2)}, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="a zip archive but not a rumus checkpoint"):
        rumus.load(tmp_path / "zip.pt")
    with pytest.raises(RuntimeError, match="a bare pickle"):
        rumus.load(tmp_path / "legacy.pt")
