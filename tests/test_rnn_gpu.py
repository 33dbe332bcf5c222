"""Recurrent layers on the GPU (rust/ops/rnn_gpu.rs, shaders/rnn.wgsl: the fused gate
kernels forward and backward) against the CPU path: outputs, final states and the
gradients of the input, the initial states and every weight. Tiny sizes (lavapipe)."""

import numpy as np
import pytest
import rumus
from conftest import need_gpu
from rumus.nn.utils import rnn as rnn_utils
from test_rnn import make, states

TOL = dict(rtol=2e-4, atol=2e-5)

CASES = [
    ("RNN_TANH", dict(num_layers=2)),
    ("RNN_RELU", dict(bidirectional=True)),
    ("GRU", dict(num_layers=2, bidirectional=True)),
    ("GRU", dict(bias=False, batch_first=True)),
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(num_layers=2, bidirectional=True, proj_size=2)),
    ("LSTM", dict(bias=False, proj_size=3)),
]


def to_np(t):
    return t.to("cpu").detach().numpy()


def pair(mode, cfg):
    cpu = make(mode, 3, 4, **cfg)
    gpu = make(mode, 3, 4, **cfg)
    gpu.load_state_dict(cpu.state_dict())
    return cpu, gpu.to("gpu")


def leaves(arrays, device):
    return [None if a is None else rumus.from_numpy(a).to(device).requires_grad_() for a in arrays]


def run(m, x, h0, c0, mode):
    hx = h0 if mode != "LSTM" else (h0, c0)
    out, hn = m(x, hx)
    return out, (list(hn) if mode == "LSTM" else [hn])


@pytest.mark.parametrize("mode,cfg", CASES, ids=[f"{m}-{sorted(c)}" for m, c in CASES])
def test_outputs_and_gradients_match_cpu(mode, cfg):
    need_gpu()
    rng = np.random.default_rng(3)
    cpu, gpu = pair(mode, cfg)
    shape = (2, 5, 3) if cfg.get("batch_first") else (5, 2, 3)
    x = rng.standard_normal(shape).astype(np.float32)
    h0, c0 = states(mode, cpu, 2, rng, np.float32)
    res = {}
    for dev, m in (("cpu", cpu), ("gpu", gpu)):
        xs, hs, cs = leaves([x, h0, c0], dev)
        out, fin = run(m, xs, hs, cs, mode)
        w_out = rumus.from_numpy(np.linspace(-1, 1, out.numel(), dtype=np.float32)).to(dev)
        loss = (out * w_out.reshape(*out.shape)).sum()
        for k, f in enumerate(fin):
            loss = loss + f.pow(2).sum() * (0.5 + k)
        loss.backward()
        res[dev] = (
            [to_np(out)] + [to_np(f) for f in fin],
            [to_np(t.grad) for t in (xs, hs, cs) if t is not None],
            {n: to_np(p.grad) for n, p in m.named_parameters()},
        )
    for a, b in zip(res["gpu"][0] + res["gpu"][1], res["cpu"][0] + res["cpu"][1]):
        np.testing.assert_allclose(a, b, **TOL)
    for n, g in res["cpu"][2].items():
        np.testing.assert_allclose(res["gpu"][2][n], g, err_msg=n, **TOL)


@pytest.mark.parametrize("mode", ["RNN_TANH", "LSTM", "GRU"])
def test_packed_gradients_match_cpu(mode):
    need_gpu()
    rng = np.random.default_rng(5)
    cpu, gpu = pair(mode, dict(bidirectional=True))
    seqs = [rng.standard_normal((n, 3)).astype(np.float32) for n in (4, 3, 1)]
    res = {}
    for dev, m in (("cpu", cpu), ("gpu", gpu)):
        xs = leaves(seqs, dev)
        out, _ = m(rnn_utils.pack_sequence(xs))
        (out.data * out.data).sum().backward()
        res[dev] = [to_np(out.data)] + [to_np(t.grad) for t in xs] + [to_np(m.weight_hh_l0.grad)]
    for a, b in zip(res["gpu"], res["cpu"]):
        np.testing.assert_allclose(a, b, **TOL)


def test_saturated_gates_stay_finite():
    need_gpu()
    # Large pre-activations saturate the gates: the fused tanh/sigmoid give exact 0/±1.
    cpu, gpu = pair("LSTM", {})
    x = np.full((2, 1, 3), 40.0, np.float32)
    xs = leaves([x], "gpu")[0]
    out, _ = gpu(xs)
    out.sum().backward()
    np.testing.assert_allclose(to_np(out), cpu(rumus.from_numpy(x))[0].detach().numpy(), **TOL)
    assert np.isfinite(to_np(xs.grad)).all()


def test_double_backward_is_refused():
    need_gpu()
    _, gpu = pair("GRU", {})
    x = leaves([np.ones((2, 1, 3), np.float32)], "gpu")[0]
    out, _ = gpu(x)
    with pytest.raises(RuntimeError, match="GruCellGatesBackward0: double backward"):
        rumus.autograd.grad(out.sum(), x, create_graph=True)
