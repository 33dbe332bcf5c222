"""Running PyTorch code unchanged: the torch alias (rumus.compat, python -m
rumus.run), rumus.accelerator and the Python number protocol on tensors."""

import math
import os
import subprocess
import sys

import pytest
import rumus

SCRIPTS = os.path.join(os.path.dirname(__file__), "torch_scripts")


def py(*args, code=None, timeout=300):
    """Runs the project's interpreter in a subprocess: (returncode, stdout + stderr)."""
    cmd = [sys.executable, *(("-c", code) if code is not None else ()), *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return out.returncode, out.stdout + out.stderr


# ------------------------------------------------------------ the alias


@pytest.mark.parametrize("script", ["regression.py", "cnn.py", "language_model.py"])
def test_pytorch_scripts_run_unchanged(script, device):
    if script == "language_model.py" and device == "gpu":
        # Minutes on lavapipe; save/load on the GPU is covered by test_pickle_checkpoint.
        pytest.skip("language_model.py runs on the CPU only in the test suite")
    args = [device] if script == "cnn.py" else []
    rc, out = py("-m", "rumus.run", os.path.join(SCRIPTS, script), *args)
    assert rc == 0, out
    assert "OK" in out.splitlines(), out


def test_the_alias_is_off_unless_asked_for():
    rc, out = py(
        code="import importlib.util, rumus\n"
        "if importlib.util.find_spec('torch') is None:\n"
        "    print('no torch')\n"
        "else:\n"
        "    import torch\n"
        "    print('rumus' if torch is rumus else 'pytorch')\n"
    )
    assert rc == 0, out
    assert out.split()[-1] in ("no torch", "torch", "pytorch"), out


def test_install_in_process_maps_every_submodule():
    rc, out = py(
        code="import rumus, rumus.compat\n"
        "rumus.compat.install_torch_alias()\n"
        "import torch, torch.nn as nn, torch.nn.functional as F\n"
        "from torch.utils.data import DataLoader\n"
        "from torch.optim.lr_scheduler import StepLR\n"
        "assert torch is rumus and nn is rumus.nn and F is rumus.nn.functional\n"
        "assert DataLoader is rumus.utils.data.DataLoader\n"
        "assert StepLR is rumus.optim.lr_scheduler.StepLR\n"
        "assert nn.Linear.__module__.startswith('rumus')\n"
        "rumus.compat.remove_torch_alias()\n"
        "import sys\n"
        "assert 'torch' not in sys.modules and not rumus.compat.torch_alias_installed()\n"
        "print('mapped')\n"
    )
    assert rc == 0 and "mapped" in out, out


def test_a_module_rumus_lacks_names_both():
    rc, out = py(code="import rumus.compat\nrumus.compat.install_torch_alias()\nimport torch.fx\n")
    assert rc != 0
    assert "ModuleNotFoundError" in out and "'torch.fx'" in out and "'rumus.fx'" in out, out


def test_run_passes_argv_and_reports_usage(tmp_path):
    script = tmp_path / "show.py"
    script.write_text("import sys, torch\nprint(sys.argv, torch.__name__, __name__)\n")
    rc, out = py("-m", "rumus.run", str(script), "a", "--b")
    assert rc == 0, out
    assert f"['{script}', 'a', '--b'] rumus __main__" in out
    rc, out = py("-m", "rumus.run")
    assert rc == 2 and "usage" in out
    rc, out = py("-m", "rumus.run", str(tmp_path / "missing.py"))
    assert rc == 2 and "missing.py" in out


def test_run_module_form(tmp_path):
    (tmp_path / "trainmod.py").write_text(
        "import torch\nprint('module', torch.ones(2).sum().item())\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "rumus.run", "-m", "trainmod"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert out.returncode == 0, out.stderr
    assert "module 2.0" in out.stdout


# ------------------------------------------------------------ accelerator


def test_accelerator_api():
    acc = rumus.accelerator
    if not acc.is_available():
        assert acc.current_accelerator() is None and acc.device_count() == 0
        with pytest.raises(RuntimeError):
            acc.current_device_index()
        return
    dev = acc.current_accelerator()
    assert dev.type == "gpu" and acc.device_count() == 1 and acc.current_device_index() == 0
    x = rumus.ones(3).to(dev)
    assert x.device.type == "gpu"
    acc.set_device_index(0)
    acc.set_device_index("gpu:0")
    with acc.device_index(0):
        (x * 2).sum()
    acc.synchronize()
    n = acc.device_count()
    with pytest.raises(RuntimeError, match=f"gpu:{n} is not available"):
        acc.set_device_index(n)
    with pytest.raises(ValueError, match="cpu"):
        acc.set_device_index("cpu")


# ------------------------------------------------------------ number protocol


def test_format_one_element_tensors_as_their_value():
    t = rumus.tensor(1.2345)
    assert f"{t:+.2f}" == "+1.23" and "{:>8.3f}".format(t) == "   1.235"
    assert f"{rumus.tensor([[2.5]]):.1f}" == "2.5"
    assert f"{rumus.tensor(7):04d}" == "0007"
    assert f"{rumus.ones(2)}" == str(rumus.ones(2))
    with pytest.raises(TypeError, match=r"shape \(2,\)"):
        f"{rumus.ones(2):.2f}"


def test_round_index_complex_isclose():
    t = rumus.tensor([1.26, -2.5])
    assert round(t).tolist() == [1.0, -2.0]
    assert round(t, 1).tolist() == pytest.approx([1.3, -2.5])
    assert isinstance(round(rumus.tensor(2.7)), rumus.Tensor)
    assert [10, 20, 30][rumus.tensor(2)] == 30
    assert complex(rumus.tensor(1.5)) == 1.5 + 0j
    assert math.isclose(rumus.tensor(0.5), 0.5)


def test_data_assignment_writes_in_place(device):
    p = rumus.ones(3, device=device, requires_grad=True)
    p.data -= 0.5 * rumus.ones(3, device=device)
    p.data = p.data * 2
    assert p.tolist() == [1.0, 1.0, 1.0] and p.requires_grad and p.is_leaf
    with pytest.raises(RuntimeError, match="same shape"):
        p.data = rumus.zeros(4, device=device)
    with pytest.raises(TypeError):
        p.data = [1.0, 2.0, 3.0]
