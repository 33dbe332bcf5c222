"""Host reads of GPU tensors: the kept host copy (a second read of an unchanged
tensor transfers nothing), reads that leave unrelated queued work unsubmitted,
queue counters, the timestamp profile and the submissions of a training step."""

import numpy as np
import pytest
import rumus

pytestmark = pytest.mark.usefixtures("gpu")


def fresh():
    rumus.gpu.synchronize()
    rumus.gpu.reset_transfer_stats()
    rumus.gpu.reset_queue_stats()


def test_reading_the_same_loss_twice_downloads_once():
    x = rumus.tensor(np.arange(6, dtype=np.float32), device="gpu")
    loss = (x * x).sum()
    fresh()
    assert loss.item() == 55.0
    assert f"{loss.item():.1f}" == "55.0"  # logged twice
    s = rumus.gpu.transfer_stats()
    assert s["to_host_copies"] == 1 and s["to_host_bytes"] == 4
    assert s["to_host_cached"] == 1
    # Every reading form uses the kept copy.
    assert loss.tolist() == 55.0 and float(loss.cpu()) == 55.0
    assert float(loss.cpu().numpy()) == 55.0 and "55." in str(loss)
    assert rumus.gpu.transfer_stats()["to_host_copies"] == 1


def test_in_place_update_is_read_again():
    x = rumus.tensor([1.0, 2.0, 3.0], device="gpu")
    assert x.tolist() == [1.0, 2.0, 3.0]
    x.mul_(2)
    assert x.tolist() == [2.0, 4.0, 6.0]
    x.copy_(rumus.tensor([7.0, 8.0, 9.0], device="gpu"))
    assert x.tolist() == [7.0, 8.0, 9.0]
    x.copy_(rumus.tensor([5.0, 5.0, 5.0]))  # from the host
    assert x.tolist() == [5.0, 5.0, 5.0]
    x[1] = 0.0
    assert x.tolist() == [5.0, 0.0, 5.0]
    assert rumus.gpu.transfer_stats()["to_host_copies"] >= 5


def test_host_copy_is_not_shared_with_the_cpu_tensor():
    g = rumus.tensor([1.0, 2.0], device="gpu")
    c = g.cpu()
    c.add_(10)
    assert g.tolist() == [1.0, 2.0]
    assert c.tolist() == [11.0, 12.0]


def test_views_read_their_own_elements_from_the_kept_copy():
    g = rumus.arange(12, dtype=rumus.float32, device="gpu").reshape(3, 4)
    fresh()
    assert g.tolist() == np.arange(12).reshape(3, 4).tolist()
    assert g[1].tolist() == [4.0, 5.0, 6.0, 7.0]  # a window of the same buffer
    assert rumus.gpu.transfer_stats()["to_host_copies"] == 1
    # A strided view is made contiguous into a new buffer first: that one is read.
    assert g[:, 2].tolist() == [2.0, 6.0, 10.0]
    assert rumus.gpu.transfer_stats()["to_host_copies"] == 2


def test_optimizer_step_invalidates_parameters():
    lin = rumus.nn.Linear(3, 1).gpu()
    opt = rumus.optim.SGD(lin.parameters(), lr=0.5)
    before = lin.weight.tolist()
    lin(rumus.ones(2, 3, device="gpu")).sum().backward()
    opt.step()
    after = lin.weight.tolist()
    np.testing.assert_allclose(np.array(before) - 0.5 * 2.0, after, rtol=1e-6)


def test_a_read_leaves_unrelated_queued_work_unsubmitted():
    # Eager kernels, so that the chain below is queued work (fused, it would be pending).
    was = rumus._rumus._gpu_set_fusion(False)
    try:
        read_with_unrelated_work_queued()
    finally:
        rumus._rumus._gpu_set_fusion(was)


def read_with_unrelated_work_queued():
    a = rumus.tensor([1.0, 2.0], device="gpu") * 3
    rumus.gpu.synchronize()
    b = rumus.ones(64, device="gpu")
    fresh()
    for _ in range(5):
        b = b * 1.5 + 1  # queued, not submitted
    assert a.tolist() == [3.0, 6.0]
    s = rumus.gpu.queue_stats()
    assert s["reads"] == 1 and s["read_flushes"] == 0
    # One submission: the read's own copy, not the queued batch.
    assert s["submits"] == 1 and s["dispatches"] >= 5
    expected = np.ones(64)
    for _ in range(5):
        expected = expected * 1.5 + 1
    np.testing.assert_allclose(b.cpu().numpy(), expected, rtol=1e-6)
    s = rumus.gpu.queue_stats()
    # This read needed the queued batch: its copy rode at the batch's end (one submit).
    assert s["reads"] == 2 and s["read_flushes"] == 1 and s["submits"] == 2


def test_reading_a_tensor_written_in_the_queued_batch_submits_it():
    a = rumus.ones(4, device="gpu")
    fresh()
    a.add_(1)
    assert a.tolist() == [2.0] * 4
    assert rumus.gpu.queue_stats()["read_flushes"] == 1


def test_device_side_errors_still_reach_the_host():
    x = rumus.arange(4, dtype=rumus.float32, device="gpu")
    idx = rumus.tensor([0, 9], device="gpu")
    with pytest.raises((IndexError, RuntimeError)):
        x[idx].tolist()
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]


def has_timestamps():
    try:
        with rumus.gpu.profile():
            pass
    except RuntimeError as e:
        if "timestamp" in str(e):
            return False
        raise
    return True


def test_profile_times_every_dispatch():
    if not has_timestamps():
        with pytest.raises(RuntimeError, match="timestamp queries"):
            with rumus.gpu.profile():
                pass
        return
    x = rumus.randn(32, 32, device="gpu")
    (x @ x).sum().item()  # compile first
    with rumus.gpu.profile() as prof:
        y = (x @ x).relu()
        z = y.sum()
    assert z.item() == pytest.approx(float((x.cpu() @ x.cpu()).relu().sum()), rel=1e-4)
    names = [n for n, _ in prof.events]
    assert len(names) == rumus.gpu.queue_stats()["dispatches"] or len(names) >= 3
    assert all(ms >= 0 for _, ms in prof.events)
    rows = prof.by_op()
    assert sum(r["count"] for r in rows) == len(prof.events)
    assert sum(r["percent"] for r in rows) == pytest.approx(100.0, abs=1e-6) or (
        prof.total_ms() == 0
    )
    assert {r["name"] for r in prof.by_op("shader")} <= {n.split(".")[0] for n in names}
    table = prof.table()
    assert "count" in table and "total" in table.splitlines()[-1]
    with pytest.raises(ValueError, match="group_by"):
        prof.by_op("op")


def test_profile_does_not_nest():
    if not has_timestamps():
        pytest.skip("the adapter has no timestamp queries")
    with rumus.gpu.profile():
        with pytest.raises(RuntimeError, match="already recording"):
            with rumus.gpu.profile():
                pass


def mlp_step_submits(steps, log):
    rumus.manual_seed(0)
    model = rumus.nn.Sequential(
        rumus.nn.Linear(8, 16), rumus.nn.ReLU(), rumus.nn.Linear(16, 1)
    ).gpu()
    opt = rumus.optim.Adam(model.parameters(), lr=1e-3)
    x = rumus.randn(4, 8, device="gpu")
    y = rumus.randn(4, 1, device="gpu")

    def step():
        opt.zero_grad()
        loss = rumus.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step()
    fresh()
    losses = []
    for _ in range(steps):
        loss = step()
        if log:
            losses.append(loss.item())
    if not log:
        losses.append(loss.item())
    return rumus.gpu.queue_stats(), losses


def test_training_steps_submit_only_when_read():
    # Three Adam steps (~60 dispatches each), then a read of the loss: forward, backward
    # and optimizer steps go in one batch, submitted with the read's copy at its end.
    s, _ = mlp_step_submits(3, log=False)
    assert s["read_flushes"] == 1 and s["reads"] == 1
    assert s["submits"] == 1, s


def test_logging_the_loss_every_step_submits_once_per_step():
    s, losses = mlp_step_submits(3, log=True)
    assert s["submits"] == 3 and s["read_flushes"] == 3, s
    # Each read sees its own step's loss (the parameters change every step).
    assert np.isfinite(losses).all() and len(set(losses)) == 3
