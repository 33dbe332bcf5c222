"""rumus.gpu.graph capture and GPUGraph.replay (like torch.cuda.graph): a captured
training step replayed with new data matches eager steps; captured memory is the
graph's; host reads during capture raise."""

import numpy as np
import pytest
import rumus

pytestmark = pytest.mark.usefixtures("gpu")


def make(seed=0):
    rumus.manual_seed(seed)
    return rumus.nn.Sequential(rumus.nn.Linear(5, 7), rumus.nn.Tanh(), rumus.nn.Linear(7, 2)).gpu()


def batches(n):
    rng = np.random.default_rng(1)
    return [
        (
            rng.standard_normal((4, 5)).astype(np.float32),
            rng.standard_normal((4, 2)).astype(np.float32),
        )
        for _ in range(n)
    ]


def test_captured_training_step_matches_eager_steps():
    data = batches(5)
    F = rumus.nn.functional

    eager = make()
    opt_e = rumus.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    eager_losses = []
    for x, y in data:
        opt_e.zero_grad()
        loss = F.mse_loss(eager(rumus.tensor(x, device="gpu")), rumus.tensor(y, device="gpu"))
        loss.backward()
        opt_e.step()
        eager_losses.append(loss.item())

    model = make()
    opt = rumus.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    static_x = rumus.zeros(4, 5, device="gpu")
    static_y = rumus.zeros(4, 2, device="gpu")

    def step():
        loss = F.mse_loss(model(static_x), static_y)
        loss.backward()
        opt.step()
        return loss

    # Warm-up step run eagerly: creates the momentum buffers.
    static_x.copy_(rumus.tensor(data[0][0]))
    static_y.copy_(rumus.tensor(data[0][1]))
    opt.zero_grad()
    losses = [step().item()]

    g = rumus.gpu.GPUGraph()
    opt.zero_grad(set_to_none=True)
    with rumus.gpu.graph(g):
        static_loss = step()
    assert len(g) > 0
    for x, y in data[1:]:
        static_x.copy_(rumus.tensor(x))
        static_y.copy_(rumus.tensor(y))
        g.replay()
        losses.append(static_loss.item())
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5, atol=1e-6)
    for p, q in zip(model.parameters(), eager.parameters()):
        np.testing.assert_allclose(
            p.detach().cpu().numpy(), q.detach().cpu().numpy(), rtol=1e-5, atol=1e-6
        )


def test_capture_runs_nothing_until_replay():
    x = rumus.ones(3, device="gpu")
    g = rumus.gpu.GPUGraph()
    with rumus.gpu.graph(g):
        x.mul_(2)
    assert x.tolist() == [1.0, 1.0, 1.0]
    g.replay()
    assert x.tolist() == [2.0, 2.0, 2.0]
    g.replay()
    g.replay()
    assert x.tolist() == [8.0, 8.0, 8.0]


def test_tensors_made_during_capture_keep_their_memory():
    x = rumus.arange(4, dtype=rumus.float32, device="gpu")
    g = rumus.gpu.GPUGraph()
    with rumus.gpu.graph(g):
        tmp = x * 2
        out = tmp + 1
    del tmp
    # New tensors after capture never take the graph's memory.
    others = [rumus.full((4,), 5.0, device="gpu") for _ in range(4)]
    g.replay()
    assert out.tolist() == [1.0, 3.0, 5.0, 7.0]
    assert all(o.tolist() == [5.0] * 4 for o in others)
    x.copy_(rumus.tensor([1.0, 1.0, 1.0, 1.0]))
    g.replay()
    assert out.tolist() == [3.0] * 4


def test_host_reads_during_capture_raise():
    x = rumus.ones(2, device="gpu")
    g = rumus.gpu.GPUGraph()
    with pytest.raises(RuntimeError, match="graph capture"):
        with rumus.gpu.graph(g):
            (x + 1).sum().item()
    with pytest.raises(RuntimeError, match="graph capture"):
        with rumus.gpu.graph(rumus.gpu.GPUGraph()):
            rumus.gpu.synchronize()
    # The capture closed: reads work again.
    assert (x + 1).tolist() == [2.0, 2.0]


def test_graph_misuse():
    g = rumus.gpu.GPUGraph()
    with pytest.raises(RuntimeError, match="holds no capture"):
        g.replay()
    with pytest.raises(TypeError, match="GPUGraph"):
        with rumus.gpu.graph(object()):
            pass
    with pytest.raises(NotImplementedError):
        with rumus.gpu.graph(g, stream=1):
            pass
    with rumus.gpu.graph(g):
        with pytest.raises(RuntimeError, match="already recording"):
            rumus.gpu.GPUGraph().capture_begin()
    with pytest.raises(RuntimeError, match="reset"):
        g.capture_begin()
    g.reset()
    assert len(g) == 0
