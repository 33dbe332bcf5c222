"""The harness itself: it runs shaders where rumus runs them."""

from .conftest import BACKENDS


def test_adapter_is_on_a_rumus_backend(gpu):
    # Never wgpu-py's OpenGL fallback: rumus has no GL backend, and Mesa's
    # llvmpipe on GL loses stores in the softmax row kernels (issue 14).
    assert gpu.adapter.info["backend_type"] in BACKENDS, gpu.adapter.info
