"""The built wheel works where no Rust toolchain exists: it installs into a
fresh venv (numpy from PyPI), imports, and trains. Slow (a release build when
dist/ has no wheel, and a network install), so it runs only with
RUMUS_TEST_WHEEL=1 (CI sets it)."""

import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    os.environ.get("RUMUS_TEST_WHEEL") != "1", reason="set RUMUS_TEST_WHEEL=1 to test the wheel"
)


def cargo_version():
    text = (ROOT / "Cargo.toml").read_text()
    return re.search(r'^version = "([^"]+)"', text, re.M).group(1)


def host_wheel():
    """dist/'s wheel for this machine, built (host target only) when missing."""
    arch = platform.machine().lower()

    def find():
        return sorted((ROOT / "dist").glob(f"rumus-{cargo_version()}-*{arch}*.whl"))

    if not find():
        subprocess.run(["bash", str(ROOT / "scripts/build_wheels.sh"), "--host"], check=True)
    wheels = find()
    assert len(wheels) == 1, f"expected one {arch} wheel in dist/, found {wheels}"
    return wheels[0]


def toolchain_free_env():
    """os.environ with no directory holding cargo or rustc on PATH, no dev venv,
    and nothing that would import the source tree instead of the wheel."""
    keep = []
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = Path(d)
        if not d or (p / "cargo").exists() or (p / "rustc").exists():
            continue
        if p.resolve() == Path(sys.executable).parent.resolve() or ".cargo" in p.parts:
            continue
        keep.append(d)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(keep)
    env.pop("CARGO_HOME", None)
    env.pop("RUSTUP_HOME", None)
    return env


def test_wheel_installs_and_trains_without_rust(tmp_path):
    wheel = host_wheel()
    env = toolchain_free_env()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    py = str(bindir / "python")
    env["PATH"] = os.pathsep.join([str(bindir), env["PATH"]])
    assert shutil.which("cargo", path=env["PATH"]) is None
    subprocess.run(
        [py, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        check=True,
        env=env,
        cwd=tmp_path,
    )
    # Checks the version, that no toolchain is visible, and that a small model trains.
    smoke = [py, str(ROOT / "scripts/smoke_wheel.py"), "--no-rust", "--version", cargo_version()]
    out = subprocess.run(smoke, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"^rumus version: ", out.stdout, re.M), out.stdout
