"""Runs WGSL files from shaders/ directly through wgpu-py (rumus only supplies
the source with its code constants), so a wrong result here is a shader bug,
not a dispatch bug in the Rust side.

`run(file, entry, buffers, params, groups, dtype)` follows the rumus shader ABI
(see shaders/README.md): every binding is in group 0, in binding order; the
params struct is the last binding, packed as 4-byte words.

tests/shaders is a package: test files import helpers with
``from .conftest import groups_1d`` (a bare ``conftest`` is tests/conftest.py).
"""

import os

import numpy as np
import pytest
import rumus

wgpu = pytest.importorskip("wgpu")

_REQUIRE = os.environ.get("RUMUS_REQUIRE_GPU") == "1"


def source(file, dtype="f32"):
    """The shader text rumus compiles for one dtype: its code constants
    (op codes, element kinds) prepended, and for float16 the first line
    `alias T = f32;` rewritten."""
    return rumus._rumus._gpu_shader_source(file.removesuffix(".wgsl"), dtype == "f16")


# Every code constant the shaders see (UNARY_EXP, BINARY_ADD, KIND_F32...),
# from the Rust enums that define them.
CODES = rumus._rumus._gpu_codes()


# The backends rumus drives (`wgpu::Backends::PRIMARY` in
# rust/backend/gpu/context.rs). wgpu-py alone would fall back to OpenGL when no
# Vulkan driver is installed (a fresh machine before .ci/run installs lavapipe),
# and on Mesa's llvmpipe OpenGL the softmax row kernels lose the stores of
# lanes that left a strided loop early (zeros in 8 softmax row cases); a
# shader bug is a bug on the backends rumus runs, so tests run there only.
BACKENDS = ("Vulkan", "Metal", "D3D12")
# Preference among adapter types, as rumus ranks them: discrete first, CPU last.
_RANK = {"DiscreteGPU": 3, "IntegratedGPU": 2, "Unknown": 1, "CPU": 0}


def pick_adapter():
    """The adapter rumus would use: Vulkan, Metal or DX12 only, the best type
    first, filtered by RUMUS_GPU_ADAPTER (a substring of the name, any case)."""
    found = wgpu.gpu.enumerate_adapters_sync()
    usable = [a for a in found if a.info["backend_type"] in BACKENDS]
    want = os.environ.get("RUMUS_GPU_ADAPTER")
    if want:
        usable = [a for a in usable if want.lower() in a.info["device"].lower()]
    if not usable:
        names = [f"{a.info['device']} ({a.info['backend_type']})" for a in found]
        raise RuntimeError(
            f"no Vulkan, Metal or DX12 adapter{f' matching {want!r}' if want else ''} among "
            f"{names} (on Linux without a GPU, install Mesa's lavapipe: mesa-vulkan-drivers)"
        )
    return max(usable, key=lambda a: _RANK.get(a.info["adapter_type"], 1))


class Harness:
    def __init__(self):
        self.adapter = pick_adapter()
        feats = [f for f in ("shader-f16",) if f in self.adapter.features]
        self.has_f16 = bool(feats)
        self.device = self.adapter.request_device_sync(required_features=feats)
        self._modules = {}

    def module(self, file, dtype):
        key = (file, dtype)
        if key not in self._modules:
            self._modules[key] = self.device.create_shader_module(code=source(file, dtype))
        return self._modules[key]

    def run(self, file, entry, buffers, params, groups, dtype="f32"):
        """buffers: list of NumPy arrays, one per binding before the params
        (all read_write storage here; the shader decides what it writes);
        None for a binding the entry point does not use (auto layouts hold
        only the used bindings, so unused ones must not be bound).
        params: list of Python ints/floats packed as u32/i32/f32 words, or a
        NumPy array of 4-byte words. groups: (x, y, z) workgroup counts.
        Returns the contents of every buffer after the dispatch."""
        dev = self.device
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        bufs = []
        for a in buffers:
            if a is None:
                bufs.append(None)
                continue
            a = np.ascontiguousarray(a)
            data = a.tobytes() if a.nbytes else b"\0\0\0\0"
            data += b"\0" * (-len(data) % 4)
            bufs.append(dev.create_buffer_with_data(data=data, usage=usage))
        words = pack(params)
        pbuf = dev.create_buffer_with_data(data=words.tobytes() or b"\0" * 4, usage=usage)
        pipeline = dev.create_compute_pipeline(
            layout="auto", compute={"module": self.module(file, dtype), "entry_point": entry}
        )
        layout = pipeline.get_bind_group_layout(0)
        entries = [
            {"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}}
            for i, b in enumerate(bufs + [pbuf])
            if b is not None
        ]
        bind = dev.create_bind_group(layout=layout, entries=entries)
        enc = dev.create_command_encoder()
        cp = enc.begin_compute_pass()
        cp.set_pipeline(pipeline)
        cp.set_bind_group(0, bind)
        cp.dispatch_workgroups(*groups)
        cp.end()
        dev.queue.submit([enc.finish()])
        out = []
        for a, b in zip(buffers, bufs):
            if b is None:
                out.append(None)
                continue
            raw = dev.queue.read_buffer(b)
            out.append(
                np.frombuffer(bytes(raw)[: np.asarray(a).nbytes], dtype=np.asarray(a).dtype)
                .reshape(np.shape(a))
                .copy()
            )
        return out


def pack(params):
    """Packs scalars as 4-byte words: Python floats and np.float32 as f32,
    ints as i32/u32 (by sign), NumPy arrays of 4-byte elements as-is."""
    if isinstance(params, np.ndarray):
        return params.view(np.uint32)
    words = []
    for v in params:
        if isinstance(v, (float, np.floating)):
            words.append(np.float32(v).view(np.uint32))
        elif isinstance(v, (bool, int, np.integer)):
            words.append(np.int64(v).astype(np.uint32) if v < 0 else np.uint32(v))
        else:
            raise TypeError(f"param {v!r} is not a number")
    return np.array(words, dtype=np.uint32)


_harness = None


@pytest.fixture(scope="session")
def gpu():
    global _harness
    if _harness is None:
        try:
            _harness = Harness()
        except Exception as e:  # no driver: skip, unless CI demands a GPU
            if _REQUIRE:
                raise
            pytest.skip(f"no wgpu adapter: {e}")
    return _harness


def groups_1d(n, wg=256):
    """Workgroup counts for n invocations of a 1-D kernel: at most 65,535 per
    dimension, the rest in y (shaders compute the flat id from both)."""
    g = max(1, -(-n // wg))
    x = min(g, 65535)
    return (x, -(-g // x), 1)
