"""FullyShardedDataParallel on N ranks against one process trained on the whole batch (run by
tests/test_distributed.py under mpirun, and alone as a world of one)."""

import functools

import numpy as np
import rumus
import rumus.distributed as dist
from numpy.testing import assert_allclose, assert_array_equal
from rumus import nn
from rumus.distributed.fsdp import FullStateDictConfig, ShardedStateDictConfig, StateDictType
from rumus.distributed.fsdp import FullyShardedDataParallel as FSDP
from rumus.distributed.fsdp import fully_sharded_data_parallel as fsdp_impl
from rumus.distributed.fsdp.wrap import ModuleWrapPolicy, size_based_auto_wrap_policy

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
B = 4  # samples per rank


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        return x + self.drop(self.norm(self.fc(x)).tanh())


def make_model():
    rumus.manual_seed(11)
    return nn.Sequential(
        nn.Linear(5, 16), Block(16), Block(16), nn.BatchNorm1d(16), nn.Linear(16, 3)
    )


rng = np.random.default_rng(0)
X = rng.standard_normal((20, n * B, 5)).astype(np.float32)
Y = rng.standard_normal((20, n * B, 3)).astype(np.float32)
mine = slice(rank * B, (rank + 1) * B)
ref = make_model()
ref_keys = list(ref.state_dict())
nbytes_model = sum(p.numel() * 4 for p in ref.parameters())
# the largest chain of units gathered together: the root's own (BatchNorm), a Block's own
# (LayerNorm) and the Linear unit inside it
largest_unit = sum(p.numel() * 4 for p in [*ref[1].parameters(), *ref[3].parameters()])

# 1. 20 AdamW steps (dropout on: each rank draws its own masks, so the reference runs the
#    per-rank batches with the same seeds) equal one process on the concatenated batch.
fsdp_impl.reset_peak_param_bytes()
before = fsdp_impl._param_bytes["current"]
model = FSDP(make_model(), auto_wrap_policy=ModuleWrapPolicy({Block, nn.Linear}))
units = FSDP.fsdp_modules(model)
assert len(units) == 7  # root (BatchNorm), Linear, 2x (Block (LayerNorm), its Linear), Linear
assert len(list(model.parameters())) == 7
assert model.module[1].fc.weight.numel() == 0  # freed outside forward
shard_bytes = sum(p.numel() * 4 for p in model.parameters())
assert shard_bytes <= nbytes_model / n + 7 * 4 * n, (shard_bytes, nbytes_model)
opt = rumus.optim.AdamW(model.parameters(), lr=0.01)
ref_opt = rumus.optim.AdamW(ref.parameters(), lr=0.01)
for step in range(20):
    opt.zero_grad()
    rumus.manual_seed(1000 * step + rank)
    loss = nn.functional.mse_loss(
        model(rumus.from_numpy(X[step, mine])), rumus.from_numpy(Y[step, mine])
    )
    loss.backward()
    opt.step()
    # the reference: the same per-rank dropout seeds, the gradient averaged over the ranks
    ref_opt.zero_grad()
    for r in range(n):
        rumus.manual_seed(1000 * step + r)
        part = slice(r * B, (r + 1) * B)
        out = ref(rumus.from_numpy(X[step, part]))
        (nn.functional.mse_loss(out, rumus.from_numpy(Y[step, part])) / n).backward()
    ref_opt.step()
    assert fsdp_impl._param_bytes["current"] - before == shard_bytes  # nothing gathered is left
# only the shards get gradients and optimizer state
assert all(p.grad is not None and p.grad.shape == p.shape for p in model.parameters())
assert sum(s["exp_avg"].numel() for s in opt.state.values()) * 4 == shard_bytes
peak = fsdp_impl._param_bytes["peak"] - before
assert peak <= shard_bytes + largest_unit + 3 * 4 * n, (peak, shard_bytes, largest_unit)
if n > 1:
    assert peak < nbytes_model, (peak, nbytes_model)

# the optimizer state under the original names: full (gathered) equals the reference's;
# sharded and full both load back into a fresh optimizer
names = [name for name, _ in ref.named_parameters()]
with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
    full_osd = FSDP.optim_state_dict(model, opt)
ref_osd = ref_opt.state_dict()
assert sorted(full_osd["param_groups"][0]["params"]) == sorted(names)
for i, name in enumerate(names):
    for k in ("exp_avg", "exp_avg_sq"):
        want = ref_osd["state"][i][k].numpy()
        assert_allclose(full_osd["state"][name][k].numpy(), want, atol=1e-5, err_msg=name)
with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
    sharded_osd = FSDP.optim_state_dict(model, opt)
assert isinstance(sharded_osd["state"]["1.fc.weight"]["exp_avg"], dist.ShardedTensor)
for osd in (full_osd, sharded_osd):
    fresh = rumus.optim.AdamW(model.parameters(), lr=0.5)
    FSDP.optim_state_dict_to_load(model, fresh, osd, load_directly=True)
    assert fresh.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    for p in model.parameters():
        for k in ("exp_avg", "exp_avg_sq", "step"):
            assert_array_equal(fresh.state[p][k].numpy(), opt.state[p][k].numpy())

# BatchNorm's running statistics: the per-rank statistics of the local batches differ from
# the reference's sequential updates, so compare parameters only.
with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
    full = model.state_dict()
assert list(full) == ref_keys, (list(full), ref_keys)
for k, v in ref.state_dict().items():
    if "running" not in k and "num_batches" not in k:
        assert_allclose(full[k].numpy(), v.numpy(), atol=1e-5, err_msg=k)

# every rank computes the same full parameters; the rank0_only dict exists only on rank 0
with FSDP.state_dict_type(
    model, StateDictType.FULL_STATE_DICT, FullStateDictConfig(rank0_only=True)
):
    only = model.state_dict()
assert (len(only) > 0) == (rank == 0)
every = [None] * n
dist.all_gather_object(every, full["4.weight"].numpy())
for other in every:
    assert_array_equal(other, full["4.weight"].numpy())

# eval forward (no grad) matches the reference
model.eval()
ref.eval()
with rumus.no_grad():
    ref.load_state_dict(full)
    x = rumus.from_numpy(X[0])
    assert_allclose(model(x).numpy(), ref(x).numpy(), atol=1e-5)
model.train()
ref.train()

# 2. load a full state dict; summon_full_params exposes and writes back the full parameters
model2 = FSDP(make_model(), auto_wrap_policy=ModuleWrapPolicy({Block}))
model2.load_state_dict(full)
with FSDP.summon_full_params(model2):
    assert_allclose(model2.module[1].fc.weight.numpy(), full["1.fc.weight"].numpy())
    with rumus.no_grad():
        model2.module[4].weight.add_(1.0)
assert_allclose(model2.state_dict()["4.weight"].numpy(), full["4.weight"].numpy() + 1.0)
try:
    model2.load_state_dict({"nope": rumus.ones(1)})
except RuntimeError as e:
    assert "missing keys" in str(e) and "nope" in str(e)
else:
    raise AssertionError("strict load must raise")

# 3. sharded state dict: each rank's pieces, which reassemble into the full tensors
with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT, ShardedStateDictConfig()):
    sharded = model.state_dict()
assert list(sharded) == ref_keys
pieces = {
    k: (v.offset, v.local_tensor().numpy().copy())
    for k, v in sharded.items()
    if isinstance(v, dist.ShardedTensor)
}
allp = [None] * n
dist.all_gather_object(allp, pieces)
for k, (_, _) in pieces.items():
    flat = np.zeros(full[k].numel(), np.float32)
    covered = 0
    for p in allp:
        off, arr = p[k]
        flat[off : off + arr.size] = arr
        covered += arr.size
    assert covered == full[k].numel(), k
    assert_array_equal(flat.reshape(full[k].shape), full[k].numpy())
model3 = FSDP(make_model(), auto_wrap_policy=ModuleWrapPolicy({Block, nn.Linear}))
with FSDP.state_dict_type(model3, StateDictType.SHARDED_STATE_DICT):
    model3.load_state_dict(sharded)
assert_allclose(model3.state_dict()["1.fc.weight"].numpy(), full["1.fc.weight"].numpy())

# 4. size-based policy, and wrapping with no policy (one unit)
sized = FSDP(
    make_model(),
    auto_wrap_policy=functools.partial(size_based_auto_wrap_policy, min_num_params=200),
)
assert len(FSDP.fsdp_modules(sized)) == 3, FSDP.fsdp_modules(
    sized
)  # root + the 2 blocks' Linear (272 each)
one = FSDP(make_model())
assert len(list(one.parameters())) == 1
plain = make_model()
for m in (sized, one, plain):
    m.eval()
x = rumus.from_numpy(X[1])
for m in (sized, one):
    assert_allclose(m(x).detach().numpy(), plain(x).detach().numpy(), atol=1e-6)
# and their gradients (train mode, dropout seeded alike) match the plain model's
for m in (sized, one, plain):
    m.train()
    m.zero_grad()
    rumus.manual_seed(5)
    nn.functional.mse_loss(m(x), rumus.from_numpy(Y[1])).backward()
with FSDP.state_dict_type(sized, StateDictType.SHARDED_STATE_DICT):
    sd = sized.state_dict()
lo = sd["1.fc.weight"].offset
g = plain[1].fc.weight.grad.numpy().ravel()[lo : lo + sd["1.fc.weight"].local_tensor().numel()]
# the reduce-scatter averages: every rank ran the same batch, so the shard grads equal the
# plain model's
unit = sized.module[1].fc  # the blocks (304 parameters) minus their Linear (272) are < 200
assert_allclose(unit._flat_param.grad.numpy()[: g.size], g, atol=1e-5)

try:
    FSDP(nn.Linear(2, 2), sharding_strategy="FULL_SHARD")
except TypeError as e:
    assert "ShardingStrategy" in str(e)
else:
    raise AssertionError("a sharding strategy that is not a ShardingStrategy must raise")

# 5. a GPU model: shards, gathers and gradients stay on the GPU (staged through the host)
if rumus.gpu.is_available():
    rumus.manual_seed(2)
    cpu_model = nn.Sequential(nn.Linear(5, 6), nn.Tanh(), nn.Linear(6, 3))
    gpu_model = FSDP(
        nn.Sequential(nn.Linear(5, 6), nn.Tanh(), nn.Linear(6, 3)),
        auto_wrap_policy=ModuleWrapPolicy({nn.Linear}),
    )
    gpu_model.load_state_dict(cpu_model.state_dict())
    gpu_model = gpu_model.to("gpu")
    assert all(p.device.type == "gpu" for p in gpu_model.parameters())
    x, y = rumus.from_numpy(X[0]), rumus.from_numpy(Y[0])
    nn.functional.mse_loss(gpu_model(x[mine].to("gpu")), y[mine].to("gpu")).backward()
    nn.functional.mse_loss(cpu_model(x), y).backward()
    assert all(p.grad.device.type == "gpu" for p in gpu_model.parameters())
    unit = gpu_model.module[0]
    with FSDP.state_dict_type(gpu_model, StateDictType.SHARDED_STATE_DICT):
        piece = gpu_model.state_dict()["0.weight"]
    g = cpu_model[0].weight.grad.numpy().ravel()
    got = unit._flat_param.grad.cpu().numpy()[: piece.local_tensor().numel()]
    assert_allclose(got, g[piece.offset : piece.offset + got.size], atol=1e-5)

dist.destroy_process_group()
print(f"rank {rank}: fsdp OK")
