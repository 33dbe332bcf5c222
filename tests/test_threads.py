"""rumus.set_num_threads / get_num_threads: torch's names, errors and effect
(run in a child process: the count is process-wide)."""

import subprocess
import sys

import pytest
import rumus


def _run(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_set_num_threads_changes_the_count_and_results_stay_right():
    code = (
        "import numpy as np, rumus\n"
        "import rumus.nn.functional as F\n"
        "rng = np.random.default_rng(0)\n"
        "a = rng.standard_normal((300, 200)).astype(np.float32)\n"
        "b = rng.standard_normal((200, 100)).astype(np.float32)\n"
        "x = rumus.from_numpy(rng.standard_normal((4, 3, 16, 16)).astype(np.float32))\n"
        "w = rumus.from_numpy(rng.standard_normal((5, 3, 3, 3)).astype(np.float32))\n"
        "ref = F.conv2d(x, w, padding=1).numpy()\n"
        "for n in (1, 3, 2, 1):\n"
        "    rumus.set_num_threads(n)\n"
        "    assert rumus.get_num_threads() == n\n"
        "    c = (rumus.from_numpy(a) @ rumus.from_numpy(b)).numpy()\n"
        "    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-3)\n"
        "    y = F.conv2d(x, w, padding=1).numpy()\n"
        "    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)\n"
        "    s = rumus.fft.rfft(rumus.from_numpy(a)).abs().numpy()\n"
        "    np.testing.assert_allclose(s, np.abs(np.fft.rfft(a)), rtol=1e-4, atol=1e-3)\n"
        "print('ok')\n"
    )
    assert _run(code).strip() == "ok"


@pytest.mark.parametrize(
    "bad, message",
    [
        (0, "expects a positive integer"),
        (-2, "expects a positive integer"),
        ("a", "expects an int, but got str"),
        (2.0, "expects an int, but got float"),
        (True, "expects an int, but got bool"),
        (None, "expects an int, but got NoneType"),
    ],
)
def test_set_num_threads_rejects_what_torch_rejects(bad, message):
    before = rumus.get_num_threads()
    with pytest.raises(RuntimeError, match=message):
        rumus.set_num_threads(bad)
    assert rumus.get_num_threads() == before
