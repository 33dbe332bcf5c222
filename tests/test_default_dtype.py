"""rumus.set_default_dtype / get_default_dtype as torch's: what follows the
default (Python floats and complex numbers, float factories, arange with a
float bound, int-to-float results, scalar promotion, new modules' weights)
and the errors. Run in child processes: the default is process-wide."""

import subprocess
import sys

import pytest
import rumus


def _run(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


PROBE = (
    "import rumus\n"
    "rumus.set_default_dtype(rumus.{d})\n"
    "print(rumus.get_default_dtype(), rumus.tensor(1.5).dtype, rumus.tensor([1.0, 2.0]).dtype,\n"
    "      rumus.tensor(1j).dtype, rumus.zeros(2).dtype, rumus.rand(2).dtype,\n"
    "      rumus.arange(0.0, 1.0, 0.5).dtype, rumus.arange(3).dtype,\n"
    "      rumus.tensor([1, 4]).sqrt().dtype, (rumus.tensor([1, 2]) * 2.5).dtype,\n"
    "      rumus.nn.Linear(2, 3).weight.dtype, rumus.full((2,), 0.5).dtype,\n"
    "      rumus.tensor([1.0], dtype=rumus.float32).dtype)\n"
)


@pytest.mark.parametrize(
    "d, real, cplx", [("float64", "float64", "complex128"), ("float16", "float16", "complex64")]
)
def test_the_default_follows_set_default_dtype(d, real, cplx):
    got = _run(PROBE.format(d=d))
    want = [real, real, real, cplx, real, real, real, "int64", real, real, real, real, "float32"]
    assert got == ["rumus." + w for w in want]


def test_float64_default_gives_float64_values():
    code = (
        "import rumus\n"
        "rumus.set_default_dtype(rumus.float64)\n"
        "x = rumus.tensor(0.1) + rumus.tensor(0.2)\n"
        "print(repr(x.item()))\n"
        "rumus.set_default_dtype(rumus.float32)\n"
        "print(rumus.tensor(0.1).dtype, rumus.get_default_dtype())\n"
    )
    out = _run(code)
    assert out[0] == repr(0.1 + 0.2) and out[1:] == ["rumus.float32", "rumus.float32"]


def test_default_is_float32():
    assert rumus.get_default_dtype() == rumus.float32


@pytest.mark.parametrize(
    "bad, exc",
    [
        (rumus.int64, TypeError),
        (rumus.complex64, TypeError),
        (rumus.bool, TypeError),
        (rumus.bfloat16, RuntimeError),
        ("not a dtype", TypeError),
        (None, TypeError),
    ],
)
def test_set_default_dtype_rejects_non_float_dtypes(bad, exc):
    with pytest.raises(exc):
        rumus.set_default_dtype(bad)
    assert rumus.get_default_dtype() == rumus.float32
