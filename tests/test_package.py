"""rumus.__version__, the ``python -m rumus`` environment report, and what
``import rumus`` does (no GPU start, heavy submodules loaded on first use)."""

import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import rumus
from conftest import GPU_REQUIRED

ROOT = Path(__file__).resolve().parents[1]


def cargo_version():
    text = (ROOT / "Cargo.toml").read_text()
    return re.search(r'^version = "([^"]+)"', text, re.M).group(1)


def test_version_is_cargo_tomls():
    assert rumus.__version__ == rumus._rumus.__version__ == cargo_version()
    # pyproject.toml takes the version from Cargo.toml rather than repeating it.
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^dynamic = \["version"\]', pyproject, re.M)
    assert not re.search(r"^version\s*=", pyproject, re.M)


def report():
    # A fresh process (the report may create the GPU context; this one's state stays as is).
    out = subprocess.run(
        [sys.executable, "-m", "rumus"], check=True, capture_output=True, text=True, timeout=300
    ).stdout
    return dict(line.split(": ", 1) for line in out.splitlines())


@pytest.fixture(scope="module")
def env_report():
    return report()


def test_report_versions_and_threads(env_report):
    r = env_report
    assert r["rumus version"] == cargo_version()
    assert r["Python version"].startswith(platform.python_version() + " (")
    assert r["Python platform"] == platform.platform()
    assert r["NumPy version"] == np.__version__
    assert r["Threads"] == str(rumus.get_num_threads())


@pytest.mark.skipif(not Path("/proc/cpuinfo").exists(), reason="compares with /proc/cpuinfo")
def test_report_cpu_features_match_cpuinfo(env_report):
    flags = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith(("flags", "Features")):
            flags = set(line.split(":", 1)[1].split())
            break
    shown = set(env_report["CPU features"].split())
    if platform.machine() in ("x86_64", "AMD64"):
        pairs = {"avx2": "AVX2", "fma": "FMA", "avx512f": "AVX-512F", "avx512_vnni": "AVX512-VNNI"}
        for flag, name in pairs.items():
            assert (flag in flags) == (name in shown), (flag, shown)
        want = (
            "AVX-512" if "avx512f" in flags else "AVX2+FMA" if {"avx2", "fma"} <= flags else "SSE2"
        )
        assert env_report["CPU kernels"] == want
    elif platform.machine() == "aarch64":
        assert "NEON" in shown and env_report["CPU kernels"] == "NEON"


def test_report_gpu(env_report):
    gpu = env_report["GPU"]
    if not rumus.gpu.is_available():
        if GPU_REQUIRED:
            pytest.fail(f"RUMUS_REQUIRE_GPU=1 but no GPU: {gpu}")
        assert gpu.startswith("none (")
        return
    info = rumus.gpu.adapter_info()
    assert gpu == f"{info['name']} ({info['device_type']})"
    assert env_report["GPU backend"] == info["backend"]
    assert f"max_buffer_size={info['max_buffer_size']}" in env_report["GPU limits"]


def test_report_without_gpu_says_none():
    # An adapter filter that matches nothing: the report must say so, not crash.
    env = dict(os.environ, RUMUS_GPU_ADAPTER="no-such-adapter-xyz")
    out = subprocess.run(
        [sys.executable, "-m", "rumus"], check=True, capture_output=True, text=True, env=env
    ).stdout
    assert re.search(r"^GPU: none \(.*no-such-adapter-xyz", out, re.M), out


def test_import_does_not_create_the_gpu_context():
    probe = "import rumus; print(rumus._rumus._gpu_initialized())"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "False"


def test_lazy_submodules_load_on_first_use():
    probe = """
import sys
import rumus
assert "rumus.distributions" not in sys.modules and "rumus.compat" not in sys.modules
assert "distributions" in dir(rumus) and "distributions" in rumus.__all__
d = rumus.distributions.Normal(rumus.tensor(0.0), rumus.tensor(1.0))
import rumus.distributions as D
from rumus import compat
from rumus.distributions import Normal
assert D is rumus.distributions and Normal is D.Normal and isinstance(d, Normal)
assert compat is sys.modules["rumus.compat"]
try:
    rumus.no_such_name
except AttributeError as e:
    assert "no_such_name" in str(e)
else:
    raise AssertionError("no AttributeError")
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
