"""DLPack exchange: Tensor.__dlpack__ / __dlpack_device__, rumus.from_dlpack and
rumus.utils.dlpack, with NumPy as the main partner (PyTorch and JAX when
installed). Raw capsules built with ctypes check the spec's corners: capsule
renaming, deleters run exactly once, refused capsules left to their producer."""

import ctypes
import gc
import weakref

import numpy as np
import pytest
import rumus
from rumus.utils import dlpack as rdl

NP_VERSION = tuple(int(p) for p in np.__version__.split(".")[:2])
# NumPy reads versioned capsules (and their read-only flag) from 2.1 on.
np_versioned = pytest.mark.skipif(NP_VERSION < (2, 1), reason="NumPy < 2.1 has no DLPack 1.x")

DTYPES = ["float32", "float64", "float16", "int64", "int32", "uint8", "bool"]


def capsule_name(cap):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return get_name(cap).decode()


def sample(dtype, shape=(3, 4)):
    a = np.arange(int(np.prod(shape))).reshape(shape) % 7 - 2
    return (a > 0) if dtype == "bool" else a.astype(dtype)


def collect():
    gc.collect()
    gc.collect()


# ------------------------------------------------------------------ shared memory


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_from_rumus_shares_memory(dtype):
    t = rumus.from_numpy(sample(dtype).copy()).clone()  # rumus-owned memory
    a = np.from_dlpack(t)
    assert a.dtype == np.dtype(dtype) and a.shape == (3, 4)
    np.testing.assert_array_equal(a, sample(dtype))
    if NP_VERSION >= (2, 1):
        assert a.flags.writeable
        a[1, 2] = 1
        assert t[1, 2].item() == 1
    t[0, 0] = 0
    assert a[0, 0] == 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_rumus_from_numpy_shares_memory(dtype):
    a = sample(dtype)
    t = rumus.from_dlpack(a)
    assert str(t.dtype) == f"rumus.{dtype}" and tuple(t.shape) == (3, 4)
    np.testing.assert_array_equal(t.numpy(), a)
    t[2, 3] = 1
    assert a[2, 3] == 1
    a[0, 1] = 0
    assert t[0, 1].item() == 0


def test_bfloat16_round_trip_through_rumus():
    t = rumus.randn(3, 5).bfloat16()
    u = rumus.from_dlpack(t)  # through __dlpack__, zero-copy
    assert u.dtype == rumus.bfloat16 and u.data_ptr() == t.data_ptr()
    assert rumus.equal(u, t)
    # NumPy has no bfloat16: it refuses the capsule, which frees it.
    with pytest.raises((BufferError, TypeError, RuntimeError), match="(?i)dtype"):
        np.from_dlpack(t)


def test_capsule_names_follow_max_version():
    t = rumus.ones(2)
    assert capsule_name(t.__dlpack__()) == "dltensor"
    assert capsule_name(t.__dlpack__(max_version=(0, 8))) == "dltensor"
    assert capsule_name(t.__dlpack__(max_version=(1, 0))) == "dltensor_versioned"
    assert capsule_name(t.__dlpack__(max_version=(1, 3))) == "dltensor_versioned"
    assert capsule_name(rdl.to_dlpack(t)) == "dltensor"
    assert t.__dlpack_device__() == (1, 0)


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_raw_capsule_is_consumed_once(max_version):
    t = rumus.arange(6.0).reshape(2, 3)
    cap = t.__dlpack__(max_version=max_version)
    u = rumus.from_dlpack(cap)
    assert capsule_name(cap).startswith("used_dltensor")
    assert u.data_ptr() == t.data_ptr()
    u[1, 1] = 40.0
    assert t[1, 1].item() == 40.0
    with pytest.raises(RuntimeError, match="already consumed"):
        rumus.from_dlpack(cap)
    del cap, t
    collect()
    assert u.sum().item() == 0 + 1 + 2 + 3 + 40 + 5


def test_numpy_capsules_and_to_dlpack():
    a = np.arange(5.0)
    for cap in (a.__dlpack__(), a.__dlpack__(max_version=(1, 0))):
        t = rumus.from_dlpack(cap)
        t[0] = 9.0
        assert a[0] == 9.0
        a[0] = 0.0
    t = rumus.tensor([1.0, 2.0])
    u = rdl.from_dlpack(rdl.to_dlpack(t))
    assert u.data_ptr() == t.data_ptr()
    assert rumus.from_dlpack is rdl.from_dlpack


# ------------------------------------------------------------------ lifetimes


def test_export_keeps_memory_until_consumer_dies():
    base = np.arange(12.0).reshape(3, 4)
    alive = weakref.ref(base)
    t = rumus.from_numpy(base)  # the storage borrows `base`
    view = t[1:, ::2]
    del base
    a = np.from_dlpack(view)
    del t, view
    collect()
    assert alive() is not None
    np.testing.assert_array_equal(a, [[4.0, 6.0], [8.0, 10.0]])
    del a
    collect()
    assert alive() is None


def test_unconsumed_capsule_frees_on_destruction():
    base = np.ones(4)
    alive = weakref.ref(base)
    t = rumus.from_numpy(base)
    del base
    caps = [t.__dlpack__(), t.__dlpack__(max_version=(1, 0))]
    del t
    collect()
    assert alive() is not None
    del caps
    collect()
    assert alive() is None


def test_import_keeps_producer_alive_until_tensor_dies():
    a = np.arange(10.0)
    alive = weakref.ref(a)
    t = rumus.from_dlpack(a)
    view = t[2:5]
    del a
    collect()
    assert alive() is not None
    assert t.sum().item() == 45.0
    del t
    collect()
    assert alive() is not None  # the view still reads the array's memory
    assert view.tolist() == [2.0, 3.0, 4.0]
    del view
    collect()
    assert alive() is None


def test_copied_import_releases_producer_at_once():
    a = np.arange(4)[::-1]  # negative stride: copied
    alive = weakref.ref(a.base)
    t = rumus.from_dlpack(a)
    del a
    collect()
    assert alive() is None
    assert t.tolist() == [3, 2, 1, 0]


# ------------------------------------------------------------------ layouts


def export_views():
    t = rumus.arange(24.0).reshape(2, 3, 4)
    return {
        "transpose": t.transpose(0, 2),
        "slice": t[:, 1:, ::2],
        "narrow": t.narrow(2, 1, 2),
        "expand": rumus.arange(3.0).reshape(3, 1).expand(3, 4),
        "select": t[1],
        "permute": t.permute(2, 0, 1),
    }


@pytest.mark.parametrize("name", list(export_views()))
def test_export_strided_views(name):
    v = export_views()[name]
    a = np.from_dlpack(v)
    np.testing.assert_array_equal(a, v.numpy())
    item = v.element_size()
    assert a.strides == tuple(s * item for s in v.stride())
    assert a.ctypes.data == v.data_ptr()
    # Round trip back into rumus: the same view of the same memory.
    u = rumus.from_dlpack(v)
    assert u.stride() == v.stride() and u.data_ptr() == v.data_ptr()


IMPORT_VIEWS = {
    "transpose": lambda a: a.T,
    "slice": lambda a: a[::2, 1:],
    "step": lambda a: a[:, ::3],
    "fortran": lambda a: np.asfortranarray(a),
    "offset": lambda a: a[1:, 2:],
    "column": lambda a: a[:, 3:4],
}


@pytest.mark.parametrize("name", list(IMPORT_VIEWS))
def test_import_strided_views_share_memory(name):
    base = np.arange(30.0).reshape(5, 6)
    a = IMPORT_VIEWS[name](base)
    t = rumus.from_dlpack(a)
    np.testing.assert_array_equal(t.numpy(), a)
    assert t.data_ptr() == a.ctypes.data
    t.mul_(-1.0)
    np.testing.assert_array_equal(a, -IMPORT_VIEWS[name](np.arange(30.0).reshape(5, 6)))


@np_versioned  # older NumPy refuses to export read-only arrays (the broadcast)
def test_import_negative_strides_and_broadcasts_copy():
    base = np.arange(12.0).reshape(3, 4)
    for a in (base[::-1], base[:, ::-2], np.broadcast_to(base[0], (3, 4))):
        t = rumus.from_dlpack(a)
        np.testing.assert_array_equal(t.numpy(), a)
        assert t.is_contiguous()
        t.zero_()  # a copy: the array keeps its values
        assert base.sum() == 66.0
        with pytest.raises(BufferError, match="copy=False"):
            rumus.from_dlpack(a, copy=False)


@pytest.mark.parametrize("device_of", [rumus.tensor, np.asarray])
def test_zero_d_and_empty(device_of):
    for a in (np.array(2.5), np.zeros((0, 3)), np.zeros((2, 0, 4), dtype=np.int64)):
        x = device_of(a)
        out = rumus.from_dlpack(x) if device_of is np.asarray else np.from_dlpack(x)
        assert tuple(out.shape) == a.shape
        np.testing.assert_array_equal(np.asarray(out), a)
    t = rumus.from_dlpack(np.array(7.0))
    t.fill_(3.0)
    assert t.item() == 3.0 and t.dim() == 0


# ------------------------------------------------------------------ copy, read-only


def test_copy_argument():
    a = np.arange(4.0)
    t = rumus.from_dlpack(a, copy=True)
    t[0] = 100.0
    assert a[0] == 0.0
    t = rumus.from_dlpack(a, copy=False)
    t[0] = 100.0
    assert a[0] == 100.0
    u = rumus.ones(3)
    cap = u.__dlpack__(max_version=(1, 0), copy=True)
    c = rumus.from_dlpack(cap)
    c.zero_()
    assert u.tolist() == [1.0, 1.0, 1.0]
    assert np.from_dlpack(u, copy=False).ctypes.data == u.data_ptr()


@np_versioned
def test_read_only_arrays_are_copied():
    a = np.arange(6.0)
    a.flags.writeable = False
    t = rumus.from_dlpack(a)
    np.testing.assert_array_equal(t.numpy(), a)
    assert t.data_ptr() != a.ctypes.data
    t.add_(1.0)  # writes the copy, never the read-only memory
    assert a[0] == 0.0
    with pytest.raises(BufferError, match="read-only"):
        rumus.from_dlpack(a, copy=False)


def test_bools_other_than_0_or_1_are_normalized():
    raw = np.array([0, 2, 1, 255], dtype=np.uint8)
    t = rumus.from_dlpack(raw.view(np.bool_))
    assert t.tolist() == [False, True, True, True]
    assert (~t).tolist() == [True, False, False, False]
    with pytest.raises(BufferError, match="0 or 1"):
        rumus.from_dlpack(raw.view(np.bool_), copy=False)


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint16", "uint32", "uint64"])
def test_unsupported_dtypes_name_the_dtype(dtype):
    a = np.zeros(3, dtype=dtype)
    alive = weakref.ref(a)
    with pytest.raises(TypeError, match=dtype):
        rumus.from_dlpack(a)
    del a
    collect()
    assert alive() is None  # the refused capsule was freed by its destructor


def test_bad_arguments():
    for bad in ([1, 2], 3.0, object(), "cpu"):
        with pytest.raises(TypeError, match="__dlpack__"):
            rumus.from_dlpack(bad)
    with pytest.raises(TypeError, match="must be Tensor"):
        rdl.to_dlpack(np.ones(2))
    t = rumus.ones(2)
    with pytest.raises(BufferError, match="cuda:0"):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="stream"):
        t.__dlpack__(stream=1)
    with pytest.raises(RuntimeError, match="require gradient"):
        rumus.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(RuntimeError, match="require gradient"):
        np.from_dlpack(rumus.ones(2, requires_grad=True))
    assert t.__dlpack__(stream=None, dl_device=(1, 0)) is not None


def test_legacy_producer_without_max_version():
    class Legacy:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, stream=None):
            return self.a.__dlpack__()

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    a = np.arange(3.0)
    t = rumus.from_dlpack(Legacy(a))
    t[1] = 7.0
    assert a[1] == 7.0


def test_non_host_producers():
    a = np.arange(3.0)

    class OnCuda:
        def __init__(self, can_copy):
            self.can_copy = can_copy

        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
            if not self.can_copy:
                raise BufferError("no host copy here")
            assert dl_device == (1, 0)
            return a.copy().__dlpack__(max_version=max_version)

    with pytest.raises(BufferError, match=r"\(2, 0\)"):
        rumus.from_dlpack(OnCuda(False))
    with pytest.raises(BufferError, match="copy=False"):
        rumus.from_dlpack(OnCuda(True), copy=False)
    assert rumus.from_dlpack(OnCuda(True)).tolist() == [0.0, 1.0, 2.0]


# ------------------------------------------------------------------ raw capsules (ctypes)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [
    ("major", ctypes.c_uint32),
    ("minor", ctypes.c_uint32),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", DELETER),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", DLTensor),
]


class RawProducer:
    """A versioned capsule over a NumPy buffer whose deleter counts its calls."""

    def __init__(self, device=(1, 0), dtype=(2, 64, 1), version=(1, 0), flags=0, strides=None):
        self.buf = np.arange(6.0)
        self.shape = (ctypes.c_int64 * 2)(2, 3)
        self.strides = None if strides is None else (ctypes.c_int64 * 2)(*strides)
        self.deleted = 0
        self.deleter = DELETER(self._delete)
        m = self.managed = DLManagedTensorVersioned()
        m.major, m.minor = version
        m.deleter, m.flags = self.deleter, flags
        m.dl_tensor.data = self.buf.ctypes.data
        m.dl_tensor.device = DLDevice(*device)
        m.dl_tensor.ndim = 2
        m.dl_tensor.dtype = DLDataType(*dtype)
        m.dl_tensor.shape = self.shape
        if self.strides is not None:
            m.dl_tensor.strides = self.strides

    def _delete(self, _):
        self.deleted += 1

    def capsule(self):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = (
            ctypes.py_object,
            [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p],
        )
        return new(ctypes.addressof(self.managed), b"dltensor_versioned", None)


def test_raw_capsule_deleter_runs_once_when_tensor_dies():
    p = RawProducer(strides=(1, 2))  # column-major over the buffer
    cap = p.capsule()
    t = rumus.from_dlpack(cap)
    assert capsule_name(cap) == "used_dltensor_versioned"
    assert t.tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]
    t[0, 1] = -1.0
    assert p.buf[2] == -1.0
    view = t.T
    del t, cap
    collect()
    assert p.deleted == 0
    del view
    collect()
    assert p.deleted == 1


def test_raw_capsule_null_strides_and_copy():
    p = RawProducer()
    t = rumus.from_dlpack(p.capsule(), copy=True)
    assert p.deleted == 1  # copied, so released at once
    assert t.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


@pytest.mark.parametrize(
    "kw, err, match",
    [
        ({"device": (2, 1)}, BufferError, "cuda:1"),
        ({"device": (7, 0)}, BufferError, "vulkan:0"),
        ({"version": (2, 0)}, BufferError, "version 2.0"),
        ({"dtype": (2, 32, 4)}, TypeError, "float32 x 4 lanes"),
        ({"dtype": (0, 16, 1)}, TypeError, "int16"),
        ({"dtype": (5, 32, 1)}, TypeError, "complex32"),
        ({"flags": 1, "version": (1, 1)}, None, None),
    ],
)
def test_raw_capsule_refusals_leave_it_to_the_producer(kw, err, match):
    p = RawProducer(**kw)
    cap = p.capsule()
    if err is None:  # read-only flag: copied, and released at once
        t = rumus.from_dlpack(cap)
        t.add_(1.0)
        assert p.buf.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        assert p.deleted == 1
        return
    with pytest.raises(err, match=match):
        rumus.from_dlpack(cap)
    assert capsule_name(cap) == "dltensor_versioned"  # not consumed
    assert p.deleted == 0


# ------------------------------------------------------------------ GPU tensors


def test_gpu_export_raises_without_copy(gpu):
    g = rumus.arange(6.0, device=gpu).reshape(2, 3)
    kind, index = g.__dlpack_device__()
    assert kind != 1 and index == 0
    for kw in ({}, {"max_version": (1, 0)}, {"copy": False}, {"copy": False, "dl_device": (1, 0)}):
        with pytest.raises(BufferError, match="gpu:0"):
            g.__dlpack__(**kw)
    with pytest.raises(BufferError, match="gpu:0"):
        rdl.to_dlpack(g)
    host = rumus.from_dlpack(g.__dlpack__(max_version=(1, 0), copy=True))
    assert host.device.type == "cpu" and host.tolist() == g.tolist()
    host = rumus.from_dlpack(g.T.__dlpack__(dl_device=(1, 0)))
    assert host.tolist() == g.T.tolist()
    if NP_VERSION >= (2, 1):
        np.testing.assert_array_equal(np.from_dlpack(g, device="cpu"), g.cpu().numpy())


def test_gpu_from_dlpack_stays_on_device(gpu):
    g = rumus.ones(3, device=gpu)
    same = rumus.from_dlpack(g)
    assert same.device.type == "gpu"
    same.mul_(2.0)
    assert g.tolist() == [2.0, 2.0, 2.0]
    assert rumus.from_dlpack(g, device="cpu").device.type == "cpu"
    to_gpu = rumus.from_dlpack(np.arange(3.0, dtype=np.float32), device=gpu)
    assert to_gpu.device.type == "gpu" and to_gpu.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(BufferError, match="copy=False"):
        rumus.from_dlpack(np.arange(3.0, dtype=np.float32), device=gpu, copy=False)


# ------------------------------------------------------------------ PyTorch and JAX


def test_torch_round_trip():
    torch = pytest.importorskip("torch")
    for dtype in DTYPES + ["bfloat16"]:
        src = torch.arange(12).reshape(3, 4) % 5
        src = (src > 1) if dtype == "bool" else src.to(getattr(torch, dtype))
        t = rumus.from_dlpack(src.t())
        assert str(t.dtype) == f"rumus.{dtype}"
        assert t.tolist() == src.t().tolist() and t.stride() == src.t().stride()
        back = torch.from_dlpack(t)
        assert back.dtype == src.dtype and back.data_ptr() == src.t().data_ptr()
    x = torch.zeros(4)
    rumus.from_dlpack(x)[1] = 3.0
    assert x[1].item() == 3.0
    r = rumus.zeros(4)
    torch.utils.dlpack.from_dlpack(rdl.to_dlpack(r))[2] = 5.0
    assert r[2].item() == 5.0


def test_jax_round_trip():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)
    t = rumus.from_dlpack(x)
    assert t.tolist() == x.tolist()
    back = jnp.from_dlpack(rumus.arange(6.0).reshape(3, 2).T)
    assert back.tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]
