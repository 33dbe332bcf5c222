"""Several GPUs in one process (gpu:0, gpu:1 ... each with its own wgpu device, queue,
caches and memory pool). With one physical adapter the tests expose it as two logical
devices with RUMUS_GPU_VIRTUAL_DEVICES=2, in a child process so the other tests keep
their single device."""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.usefixtures("gpu")

PRELUDE = """
import numpy as np
import rumus
assert rumus.gpu.device_count() >= 2, rumus.gpu.device_count()
"""


def _run(body, devices=2):
    env = {k: v for k, v in os.environ.items() if k != "RUMUS_GPU_ADAPTER"}
    env["RUMUS_GPU_VIRTUAL_DEVICES"] = str(devices)
    code = PRELUDE + textwrap.dedent(body) + "\nprint('OK')\n"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("OK"), done.stderr[-3000:]
    return done.stdout


def test_virtual_devices_enumerate():
    out = _run(
        """
        n = rumus.gpu.device_count()
        names = [rumus.gpu.get_device_name(i) for i in range(n)]
        assert names[0] == names[1]
        print(n)
        """,
        devices=3,
    )
    assert int(out.split()[0]) % 3 == 0


def test_two_devices_compute_independently():
    _run(
        """
        rng = np.random.default_rng(0)
        a, b = rng.standard_normal((2, 5, 7)).astype(np.float32)
        w = rng.standard_normal((7, 3)).astype(np.float32)
        x0 = rumus.tensor(a, device="gpu:0")
        x1 = rumus.tensor(b, device="gpu:1")
        assert str(x0.device) == "gpu:0" and str(x1.device) == "gpu:1"
        assert x1.device == rumus.device("gpu", 1) and x1.device.index == 1
        assert "device='gpu:1'" in repr(x1)
        w1 = rumus.tensor(w).to("gpu:1")
        y0 = (x0 * 2 + 1).relu().sum(1)
        y1 = (x1.exp() @ w1).softmax(-1)
        assert y0.device.index == 0 and y1.device.index == 1
        np.testing.assert_allclose(y0.cpu().numpy(), np.maximum(a * 2 + 1, 0).sum(1), rtol=1e-5)
        e = np.exp(b) @ w
        ref = np.exp(e - e.max(-1, keepdims=True))
        ref /= ref.sum(-1, keepdims=True)
        np.testing.assert_allclose(y1.cpu().numpy(), ref, rtol=1e-4, atol=1e-6)
        # creation functions, default device, in-place ops stay on their device
        z = rumus.zeros(3, 2, device="gpu:1")
        z.add_(1.5)
        assert z.device.index == 1 and float(z.sum()) == 9.0
        # moving between devices copies values (staged through the host)
        x01 = x0.to("gpu:1")
        assert x01.device.index == 1
        np.testing.assert_array_equal(x01.cpu().numpy(), a)
        np.testing.assert_array_equal((x01 + x1).cpu().numpy(), a + b)
        assert x1.to("gpu:1") is x1
        x10 = x1[:, 1:3].to(rumus.device("gpu", 0))
        np.testing.assert_array_equal(x10.cpu().numpy(), b[:, 1:3])
        # gradients flow back across the copy, to the source's device
        leaf = rumus.tensor(a, device="gpu:0", requires_grad=True)
        (leaf.to("gpu:1") * x1).sum().backward()
        assert leaf.grad.device.index == 0
        np.testing.assert_allclose(leaf.grad.cpu().numpy(), b, rtol=1e-6)
        """
    )


def test_cross_device_ops_raise():
    _run(
        """
        x0 = rumus.ones(4, device="gpu:0")
        x1 = rumus.ones(4, device="gpu:1")
        m1 = rumus.ones(4, 4, device="gpu:1")
        for f in (
            lambda: x0 + x1,
            lambda: x0.mul_(x1),
            lambda: rumus.where(x0 > 0, x0, x1),
            lambda: m1 @ x0,
            lambda: rumus.cat([x0, x1]),
            lambda: x1.copy_(x0) if False else rumus.stack([x1, x0]),
        ):
            try:
                f()
            except RuntimeError as e:
                msg = str(e)
                assert "Expected all tensors to be on the same device" in msg, msg
                assert "gpu:0" in msg and "gpu:1" in msg, msg
            else:
                raise AssertionError("no error")
        # copy_ between devices is a copy (as in PyTorch), and 0-d CPU tensors mix
        x1.copy_(x0 * 3)
        assert x1.device.index == 1 and x1.tolist() == [3.0] * 4
        assert (x1 + rumus.tensor(2.0)).tolist() == [5.0] * 4
        """
    )


def test_set_device_changes_default_any_time():
    _run(
        """
        assert rumus.gpu.current_device() == 0
        a = rumus.ones(2, device="gpu")
        rumus.gpu.set_device(1)
        assert rumus.gpu.current_device() == 1
        b = rumus.ones(2, device="gpu")
        c = rumus.ones(2).gpu()
        assert (a.device.index, b.device.index, c.device.index) == (0, 1, 1)
        assert a.gpu().device.index == 1
        assert a.gpu(0) is a and a.gpu("gpu:1").device.index == 1
        lin = rumus.nn.Linear(2, 2).gpu(0)
        assert lin.weight.device.index == 0
        try:
            a.gpu("cpu")
        except RuntimeError as e:
            assert "expected a GPU device" in str(e)
        else:
            raise AssertionError("no error")
        with rumus.accelerator.device_index(0):
            assert rumus.ones(1, device="gpu").device.index == 0
        assert rumus.gpu.current_device() == 1
        rumus.set_default_device("gpu:0")
        assert rumus.ones(1).device.index == 0
        rumus.set_default_device(None)
        n = rumus.gpu.device_count()
        try:
            rumus.ones(1, device=f"gpu:{n}")
        except RuntimeError as e:
            assert f"gpu:{n} is not available" in str(e)
        else:
            raise AssertionError("no error")
        """
    )


def test_memory_and_synchronize_per_device():
    _run(
        """
        g = rumus.gpu
        base0, base1 = g.memory_allocated(0), g.memory_allocated("gpu:1")
        x = rumus.empty(1 << 16, device="gpu:1")
        assert g.memory_allocated(1) >= base1 + (1 << 18)
        assert g.memory_allocated(0) == base0
        assert g.max_memory_allocated(rumus.device("gpu", 1)) >= g.memory_allocated(1)
        g.synchronize(1)
        g.synchronize("gpu:0")
        del x
        assert g.memory_allocated(1) == base1
        g.reset_peak_memory_stats(1)
        assert g.max_memory_allocated(1) == base1
        g.empty_cache(1)
        assert g.adapter_info(1)["name"] == g.get_device_name(1)
        """
    )


def test_training_on_gpu1_matches_cpu():
    _run(
        """
        import rumus.nn as nn
        rng = np.random.default_rng(0)
        X = rng.standard_normal((16, 4)).astype(np.float32)
        Y = rng.standard_normal((16, 1)).astype(np.float32)

        def train(device):
            rumus.manual_seed(0)
            model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
            sd = {k: v.clone() for k, v in model.state_dict().items()}
            model.to(device)
            opt = rumus.optim.Adam(model.parameters(), lr=0.01)
            x, y = rumus.tensor(X, device=device), rumus.tensor(Y, device=device)
            for _ in range(5):
                opt.zero_grad()
                loss = ((model(x) - y) ** 2).mean()
                loss.backward()
                opt.step()
            for p in model.parameters():
                assert str(p.device) == device and str(p.grad.device) == device
            return float(loss), model, sd

        l_cpu, m_cpu, _ = train("cpu")
        l_gpu, m_gpu, sd = train("gpu:1")
        assert abs(l_cpu - l_gpu) < 1e-4, (l_cpu, l_gpu)
        for a, b in zip(m_cpu.parameters(), m_gpu.parameters()):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().cpu().numpy(), atol=1e-4)
        # state_dict loads follow the module's device; map_location picks a GPU
        m_gpu.load_state_dict(sd)
        assert all(p.device.index == 1 for p in m_gpu.parameters())
        import io
        buf = io.BytesIO()
        rumus.save(m_gpu.state_dict(), buf)
        buf.seek(0)
        loaded = rumus.load(buf, map_location="gpu:0")
        assert all(v.device.index == 0 for v in loaded.values())
        m_gpu.to("gpu:0")
        assert all(p.device.index == 0 for p in m_gpu.parameters())
        """
    )


def test_fusion_graph_and_profile_on_gpu1():
    _run(
        """
        g = rumus.gpu
        x = rumus.arange(8, dtype=rumus.float32, device="gpu:1")
        y = ((x * 2).sin() + 1).relu()
        np.testing.assert_allclose(
            y.cpu().numpy(), np.maximum(np.sin(np.arange(8) * 2) + 1, 0), rtol=1e-5, atol=1e-6
        )
        g.set_device(1)
        static_in = rumus.zeros(8, device="gpu:1")
        out = (static_in * 3 + 1).exp()
        graph = g.GPUGraph()
        with g.graph(graph):
            out = (static_in * 3 + 1).exp()
        static_in.copy_(rumus.arange(8, dtype=rumus.float32))
        graph.replay()
        np.testing.assert_allclose(out.cpu().numpy(), np.exp(np.arange(8) * 3 + 1), rtol=1e-5)
        m = rumus.nn.functional.dropout(rumus.ones(64, device="gpu:1"), 0.5)
        assert m.device.index == 1 and set(m.cpu().numpy().tolist()) <= {0.0, 2.0}
        # gpu:0 works eagerly meanwhile, untouched by gpu:1's graph
        z = rumus.ones(4, device="gpu:0") * 2
        assert z.tolist() == [2.0] * 4
        try:
            with g.profile() as prof:
                (x * 2).exp().sum().item()
        except RuntimeError as e:
            assert "timestamp" in str(e)
        else:
            assert prof.events
        """
    )
