"""Static types: ``mypy --strict`` on the examples and on a fully annotated training script
(tests/typed_sample/), against rumus's stubs (python/rumus/*.pyi) and annotations. Also runs
that script, so the code the types describe is code that works. tests/test_stubs.py keeps
the stubs and the run-time names in step."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests" / "typed_sample" / "train_typed.py"


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


def test_typed_sample_trains():
    run = subprocess.run(
        [sys.executable, str(SAMPLE)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stdout + run.stderr
    acc = float(run.stdout.split("test accuracy ")[1].split(",")[0])
    assert acc > 0.9, run.stdout
