"""ZeroRedundancyOptimizer on N ranks against plain Adam in one process (run by
tests/test_distributed.py under mpirun, and alone as a world of one)."""

import numpy as np
import rumus
import rumus.distributed as dist
from numpy.testing import assert_allclose, assert_array_equal
from rumus import nn
from rumus.distributed.optim import ZeroRedundancyOptimizer

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()


def make_model():
    rumus.manual_seed(5)
    return nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 7), nn.Tanh(), nn.Linear(7, 2))


def flat(model):
    return np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])


rng = np.random.default_rng(1)
X = rng.standard_normal((20, 8, 6)).astype(np.float32)
Y = rng.standard_normal((20, 8, 2)).astype(np.float32)


def train(model, opt, steps):
    for step in steps:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(rumus.from_numpy(X[step])), rumus.from_numpy(Y[step]))
        loss.backward()
        opt.step()


for bucket_view in (False, True):
    model, ref = make_model(), make_model()
    # two parameter groups with different options; a scheduler changes lr through the wrapper
    params = list(model.parameters())
    zero = ZeroRedundancyOptimizer(
        [{"params": params[:4]}, {"params": params[4:], "lr": 0.02}],
        rumus.optim.Adam,
        parameters_as_bucket_view=bucket_view,
        lr=0.01,
        weight_decay=0.01,
    )
    rparams = list(ref.parameters())
    adam = rumus.optim.Adam(
        [{"params": rparams[:4]}, {"params": rparams[4:], "lr": 0.02}], lr=0.01, weight_decay=0.01
    )
    sched = rumus.optim.lr_scheduler.StepLR(zero, step_size=5, gamma=0.5)
    rsched = rumus.optim.lr_scheduler.StepLR(adam, step_size=5, gamma=0.5)
    for step in range(20):
        train(model, zero, [step])
        train(ref, adam, [step])
        sched.step()
        rsched.step()
    # each rank holds state for its shard only; the shards cover every parameter once
    mine = {id(p) for p in zero.optim.state}
    counts = [0] * n
    dist.all_gather_object(counts, len(mine))
    assert sum(counts) == len(params), counts
    if n > 1:
        assert len(mine) < len(params)
    every = [None] * n
    dist.all_gather_object(every, flat(model))
    for other in every:
        assert_array_equal(other, flat(model))
    assert_allclose(flat(model), flat(ref), atol=1e-6)

    # the consolidated state dict equals plain Adam's, on rank `to` only
    to = n - 1
    zero.consolidate_state_dict(to=to)
    if rank == to:
        sd, rsd = zero.state_dict(), adam.state_dict()
        assert [g["params"] for g in sd["param_groups"]] == [
            g["params"] for g in rsd["param_groups"]
        ]
        assert [g["lr"] for g in sd["param_groups"]] == [g["lr"] for g in rsd["param_groups"]]
        assert sorted(sd["state"]) == sorted(rsd["state"])
        for k, st in rsd["state"].items():
            for name, v in st.items():
                assert_allclose(sd["state"][k][name].numpy(), v.numpy(), atol=1e-6)
    else:
        try:
            zero.state_dict()
        except RuntimeError as e:
            assert "consolidate_state_dict" in str(e)
        else:
            raise AssertionError("state_dict() without consolidation must raise")

    # loading plain Adam's state into a fresh ZeRO continues exactly like plain Adam
    model2 = make_model()
    with rumus.no_grad():
        for p, q in zip(model2.parameters(), ref.parameters()):
            p.copy_(q)
    zero2 = ZeroRedundancyOptimizer(model2.parameters(), rumus.optim.Adam, lr=0.5)
    flat_ref_groups = adam.state_dict()
    one_group = {
        "state": flat_ref_groups["state"],
        "param_groups": [
            {
                **flat_ref_groups["param_groups"][0],
                "params": [i for g in flat_ref_groups["param_groups"] for i in g["params"]],
            }
        ],
    }
    zero2.load_state_dict(one_group)
    assert zero2.param_groups[0]["lr"] == flat_ref_groups["param_groups"][0]["lr"]
    assert all(
        id(p) in {id(q) for q in zero2.optim.state}
        for g in zero2.optim.param_groups
        for p in g["params"]
    )
    adam_one = rumus.optim.Adam(ref.parameters(), lr=0.5)
    adam_one.load_state_dict(one_group)
    train(model2, zero2, range(3))
    train(ref, adam_one, range(3))
    assert_allclose(flat(model2), flat(ref), atol=1e-6)

try:
    ZeroRedundancyOptimizer(make_model().parameters(), object, lr=0.1)
except TypeError as e:
    assert "optimizer_class" in str(e)
else:
    raise AssertionError("a non-optimizer class must raise")

dist.destroy_process_group()
print(f"rank {rank}: zero OK")
