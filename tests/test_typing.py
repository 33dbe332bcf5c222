"""Static types: ``mypy --strict`` on the examples and on tests/typed_sample/ (a fully
annotated training script, and ``assert_type`` checks of what Tensor methods return),
against rumus's stubs (python/rumus/*.pyi) and annotations. Both sample files also run, so
the types describe code that works and values of the types they claim. tests/test_stubs.py
keeps the stubs and the run-time names in step."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "tests" / "typed_sample"


def _have_mypy():
    try:
        import mypy  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("mypy is not installed: scripts/setup.sh installs it")
        pytest.skip("mypy is not installed (scripts/setup.sh installs it)")


def test_mypy_strict_passes_on_examples_and_typed_sample():
    _have_mypy()
    # pyproject.toml's [tool.mypy] holds the settings (strict, what is followed how).
    cmd = [sys.executable, "-m", "mypy", "--strict", "examples", "tests/typed_sample"]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{' '.join(cmd[2:])} failed:\n{run.stdout}{run.stderr}"


def _run(script):
    run = subprocess.run(
        [sys.executable, str(SAMPLES / script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def test_typed_sample_trains():
    out = _run("train_typed.py")
    acc = float(out.split("test accuracy ")[1].split(",")[0])
    assert acc > 0.9, out


def test_tensor_types_hold_at_run_time():
    pytest.importorskip("typing_extensions")  # assert_type; mypy installs it
    assert _run("tensor_types.py").strip() == "ok"
