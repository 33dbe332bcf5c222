"""DistributedDataParallel on N ranks against one process trained on the whole batch (run by
tests/test_distributed.py under mpirun, and alone as a world of one)."""

import numpy as np
import rumus
import rumus.distributed as dist
from numpy.testing import assert_allclose, assert_array_equal
from rumus import nn
from rumus.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
B = 4  # samples per rank


def make_model(seed):
    rumus.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3))


rng = np.random.default_rng(0)  # the same data on every rank; each takes its own rows
X = rng.standard_normal((20, n * B, 5)).astype(np.float32)
Y = rng.standard_normal((20, n * B, 3)).astype(np.float32)
mine = slice(rank * B, (rank + 1) * B)


def gather_params(model):
    flat = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
    every = [None] * n
    dist.all_gather_object(every, flat)
    return flat, every


# 1. different initial weights per rank, 20 SGD-momentum steps, tiny buckets (several per
#    backward): equal across ranks bitwise and to one process on the concatenated batch.
ddp = DDP(make_model(100 + rank), bucket_cap_mb=200 / 2**20)
assert len(ddp._buckets) > 2
# overlap: buckets are launched while backward still has gradients to compute
launched_at = []
launch = ddp._launch
ddp._launch = lambda bucket: (launched_at.append(sum(ddp._ready)), launch(bucket))
ref = make_model(100)  # rank 0's initial weights
opt = rumus.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
ref_opt = rumus.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
for step in range(20):
    opt.zero_grad()
    loss = nn.functional.mse_loss(
        ddp(rumus.from_numpy(X[step, mine])), rumus.from_numpy(Y[step, mine])
    )
    loss.backward()
    opt.step()
    ref_opt.zero_grad()
    nn.functional.mse_loss(ref(rumus.from_numpy(X[step])), rumus.from_numpy(Y[step])).backward()
    ref_opt.step()
assert launched_at[0] < len(ddp._params) and len(launched_at) == 20 * len(ddp._buckets)
flat, every = gather_params(ddp.module)
for other in every:
    assert_array_equal(other, flat)
ref_flat = np.concatenate([p.detach().numpy().ravel() for p in ref.parameters()])
assert_allclose(flat, ref_flat, atol=1e-5)
assert list(ddp.state_dict())[0] == "module.0.weight"
assert ddp.module is ddp._modules["module"]

# 2. no_sync: two local micro-batches, then a synced one, equal the summed big-batch grads.
ddp = DDP(make_model(7))
ref = make_model(7)
with ddp.no_sync():
    for k in range(2):
        nn.functional.mse_loss(
            ddp(rumus.from_numpy(X[k, mine])), rumus.from_numpy(Y[k, mine])
        ).backward()
local = [p.grad.numpy().copy() for p in ddp.parameters()]
nn.functional.mse_loss(ddp(rumus.from_numpy(X[2, mine])), rumus.from_numpy(Y[2, mine])).backward()
for k in range(3):
    nn.functional.mse_loss(ref(rumus.from_numpy(X[k])), rumus.from_numpy(Y[k])).backward()
for p, q in zip(ddp.parameters(), ref.parameters()):
    assert_allclose(p.grad.numpy(), q.grad.numpy(), atol=1e-6)
if n > 1:  # the no_sync grads were local only
    assert not all(np.allclose(a, p.grad.numpy()) for a, p in zip(local, ddp.parameters()))


# 3. find_unused_parameters: a branch only rank 0 uses, and one no rank uses.
class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 2)
        self.b = nn.Linear(3, 2)
        self.never = nn.Linear(3, 2)

    def forward(self, x, use_b):
        return self.a(x) + (self.b(x) if use_b else 0)


rumus.manual_seed(3)
ddp = DDP(Branchy(), find_unused_parameters=True)
for _ in range(2):
    ddp.zero_grad()
    x = rumus.ones(2, 3) * (rank + 1)
    ddp(x, use_b=rank == 0).sum().backward()
# a forward whose output is dropped (no backward) leaves nothing in flight
ddp(rumus.ones(2, 3), use_b=False)
ddp.zero_grad()
ddp(rumus.ones(2, 3) * (rank + 1), use_b=rank == 0).sum().backward()
assert ddp.module.never.weight.grad is None
# b's gradient: rank 0's (2 rows of x = 1) averaged with zeros from the others
assert_allclose(ddp.module.b.weight.grad.numpy(), np.full((2, 3), 2.0 / n))
assert_allclose(
    ddp.module.a.weight.grad.numpy(), np.full((2, 3), sum(2.0 * (r + 1) for r in range(n)) / n)
)

# without find_unused_parameters, an unused parameter stops the next iteration clearly
ddp = DDP(Branchy())
ddp(rumus.ones(2, 3), use_b=False).sum().backward()
try:
    ddp(rumus.ones(2, 3), use_b=False)
except RuntimeError as e:
    assert "find_unused_parameters=True" in str(e)
else:
    raise AssertionError("no RuntimeError")

# 4. buffers: rank 0's are broadcast at construction and before every forward.
bn = nn.BatchNorm1d(3)
with rumus.no_grad():
    bn.running_mean.fill_(float(rank))
ddp = DDP(bn)
assert_allclose(bn.running_mean.numpy(), 0.0)
with rumus.no_grad():
    bn.running_mean.fill_(float(rank + 5))
ddp.eval()
ddp(rumus.zeros(2, 3))
assert_allclose(bn.running_mean.numpy(), 5.0)


# 5. SyncBatchNorm: batch statistics over every rank's batch equal one process's BatchNorm
#    on the whole batch (forward, gradients, running statistics).
def bn_model():
    rumus.manual_seed(11)
    return nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6), nn.Tanh(), nn.Linear(6, 3))


ddp = DDP(nn.SyncBatchNorm.convert_sync_batchnorm(bn_model()))
assert isinstance(ddp.module[1], nn.SyncBatchNorm)
ref = bn_model()
opt = rumus.optim.SGD(ddp.parameters(), lr=0.1)
ref_opt = rumus.optim.SGD(ref.parameters(), lr=0.1)
for step in range(5):
    for model, o, rows in [(ddp, opt, mine), (ref, ref_opt, slice(None))]:
        o.zero_grad()
        out = model(rumus.from_numpy(X[step, rows]))
        nn.functional.mse_loss(out, rumus.from_numpy(Y[step, rows])).backward()
        o.step()
for (name, a), b in zip(ddp.module.state_dict().items(), ref.state_dict().values()):
    assert_allclose(a.numpy(), b.numpy(), atol=1e-5, err_msg=name)

# 6. a GPU model: gradients are staged through the host and come back on the GPU.
if rumus.gpu.is_available():
    ddp = DDP(make_model(21).to("gpu"))
    ref = make_model(21)
    x, y = rumus.from_numpy(X[0]), rumus.from_numpy(Y[0])
    nn.functional.mse_loss(ddp(x[mine].to("gpu")), y[mine].to("gpu")).backward()
    nn.functional.mse_loss(ref(x), y).backward()
    for p, q in zip(ddp.parameters(), ref.parameters()):
        assert p.grad.device.type == "gpu"
        assert_allclose(p.grad.cpu().numpy(), q.grad.numpy(), atol=1e-5)

dist.destroy_process_group()
print(f"rank {rank}: ddp OK")
