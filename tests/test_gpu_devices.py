"""Several GPUs: adapters numbered gpu:0 ... gpu:N-1 in a stable order (set_device,
"gpu:<i>", integer indices, RUMUS_GPU_ADAPTER=<index>), and the errors for an index that
does not exist. Run where a GPU exists (lavapipe: one adapter); test_gpu_multi.py uses
several devices in one process."""

import os
import subprocess
import sys

import pytest
import rumus

pytestmark = pytest.mark.usefixtures("gpu")


def test_enumeration():
    n = rumus.gpu.device_count()
    assert n >= 1
    names = [rumus.gpu.get_device_name(i) for i in range(n)]
    assert names == rumus._rumus._gpu_adapter_names()  # stable: the same on every call
    k = rumus.gpu.current_device()
    assert 0 <= k < n
    assert rumus.gpu.get_device_name() == names[k] == rumus.gpu.adapter_info()["name"]
    assert rumus.gpu.get_device_name(f"gpu:{k}") == names[k]
    assert rumus.gpu.get_device_name(rumus.device("gpu", k)) == names[k]
    assert rumus.accelerator.device_count() == n
    assert rumus.accelerator.current_device_index() == k


def test_current_index_spellings():
    k = rumus.gpu.current_device()
    rumus.gpu.set_device(k)  # the running GPU again: allowed
    for spec in (k, f"gpu:{k}", rumus.device("gpu", k), "gpu"):
        t = rumus.ones(2, device=spec)
        assert t.device == rumus.device("gpu", k) and str(t.device) == f"gpu:{k}"
    assert rumus.ones(2).to(k).device.index == k
    assert rumus.ones(2).to(f"gpu:{k}").is_gpu


def test_missing_index_is_a_clear_error():
    n = rumus.gpu.device_count()
    for call in (
        lambda: rumus.zeros(2, device=f"gpu:{n}"),
        lambda: rumus.ones(2).to(n),
        lambda: rumus.gpu.set_device(n),
        lambda: rumus.gpu.get_device_name(n),
        lambda: rumus.gpu.synchronize(f"gpu:{n}"),
    ):
        with pytest.raises(RuntimeError, match=f"gpu:{n} is not available: {n} .*adapter"):
            call()
    with pytest.raises(RuntimeError, match="must not be negative"):
        rumus.zeros(2, device="gpu:-1")


def test_switching_after_start_is_allowed():
    n = rumus.gpu.device_count()
    if n < 2:
        pytest.skip("needs two GPU adapters (test_gpu_multi.py covers it on one)")
    rumus.ones(1, device="gpu")
    k = rumus.gpu.current_device()
    other = (k + 1) % n
    try:
        rumus.gpu.set_device(other)
        assert rumus.ones(1, device="gpu").device.index == other
    finally:
        rumus.gpu.set_device(k)


def _child(code, **env):
    run_env = {k: v for k, v in os.environ.items() if k != "RUMUS_GPU_ADAPTER"}
    run_env.update(env)
    return subprocess.run(
        [sys.executable, "-c", code], env=run_env, capture_output=True, text=True, timeout=120
    )


def test_adapter_by_index_from_the_environment():
    n = rumus.gpu.device_count()
    code = (
        "import rumus; t = rumus.ones(2, device='gpu'); print(t.device, rumus.gpu.current_device())"
    )
    done = _child(code, RUMUS_GPU_ADAPTER=str(n - 1))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [f"gpu:{n - 1}", str(n - 1)]
    done = _child(code, RUMUS_GPU_ADAPTER=str(n))
    assert done.returncode != 0
    assert f"RUMUS_GPU_ADAPTER={n} is not an adapter index" in done.stderr
    # set_device beats the environment; the local rank is only a proposal (modulo N)
    code = (
        "import rumus; rumus._rumus._gpu_set_device(7, False); rumus.gpu.set_device(0); "
        "print(rumus.ones(1, device='gpu').device)"
    )
    done = _child(code, RUMUS_GPU_ADAPTER=str(n - 1))
    assert done.returncode == 0 and done.stdout.strip() == "gpu:0", done.stderr
    code = f"import rumus; rumus._rumus._gpu_set_device({2 * n}, False); "
    done = _child(code + "print(rumus.gpu.current_device())")
    assert done.returncode == 0 and done.stdout.strip() == "0", done.stderr
