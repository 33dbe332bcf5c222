"""FSDP's sharding strategies, mixed precision, CPU offload and no_sync on N ranks against one
process trained on the whole batch (run by tests/test_distributed.py under mpirun)."""

import numpy as np
import rumus
import rumus.distributed as dist
from numpy.testing import assert_allclose
from rumus import nn
from rumus.distributed.fsdp import CPUOffload, MixedPrecision, ShardingStrategy, StateDictType
from rumus.distributed.fsdp import FullyShardedDataParallel as FSDP
from rumus.distributed.fsdp import fully_sharded_data_parallel as fsdp_impl
from rumus.distributed.fsdp.wrap import ModuleWrapPolicy

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
B, STEPS = 4, 5  # samples per rank, AdamW steps
S = ShardingStrategy


def make_model():
    rumus.manual_seed(3)
    return nn.Sequential(
        nn.Linear(5, 16),
        nn.LayerNorm(16),
        nn.Tanh(),
        nn.Linear(16, 16),
        nn.Tanh(),
        nn.Linear(16, 3),
    )


rng = np.random.default_rng(1)
X = rng.standard_normal((STEPS, 3, n * B, 5)).astype(np.float32)
Y = rng.standard_normal((STEPS, 3, n * B, 3)).astype(np.float32)
mine = slice(rank * B, (rank + 1) * B)


def reference(micro=1):
    """One process: AdamW on the whole batch (``micro`` micro-batches of every rank)."""
    ref = make_model()
    opt = rumus.optim.AdamW(ref.parameters(), lr=0.01)
    for step in range(STEPS):
        opt.zero_grad()
        for m in range(micro):
            x, y = rumus.from_numpy(X[step, m]), rumus.from_numpy(Y[step, m])
            (nn.functional.mse_loss(ref(x), y) / micro).backward()
        opt.step()
    return ref


def wrap(**kw):
    return FSDP(make_model(), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}), **kw)


def train(model, micro=1, dtype=None):
    opt = rumus.optim.AdamW(model.parameters(), lr=0.01)
    for step in range(STEPS):
        opt.zero_grad()
        for m in range(micro):
            x, y = rumus.from_numpy(X[step, m, mine]), rumus.from_numpy(Y[step, m, mine])
            out = model(x)
            assert out.dtype == (dtype or rumus.float32)
            loss = nn.functional.mse_loss(out.float(), y) / micro
            if m < micro - 1:
                with model.no_sync():
                    loss.backward()
                assert all(p.grad is None for p in model.parameters())
            else:
                loss.backward()
        opt.step()
    return opt


def full_state(model):
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
        return model.state_dict()


def compare(model, ref, atol):
    got = full_state(model)
    for k, v in ref.state_dict().items():
        assert_allclose(got[k].float().numpy(), v.numpy(), atol=atol, err_msg=k)


ref = reference()
model_bytes = sum(p.numel() * 4 for p in ref.parameters())

# 1. each sharding strategy equals one process after several AdamW steps
for strategy in (S.FULL_SHARD, S.SHARD_GRAD_OP, S.NO_SHARD):
    before = fsdp_impl._param_bytes["current"]
    model = wrap(sharding_strategy=strategy)
    assert all(u.sharding_strategy is strategy for u in FSDP.fsdp_modules(model))
    shard_bytes = sum(p.numel() * 4 for p in model.parameters())
    if strategy is S.NO_SHARD:
        assert shard_bytes == model_bytes
    else:
        assert shard_bytes <= model_bytes / n + 4 * 4 * n
    # after forward, FULL_SHARD holds no gathered parameters; SHARD_GRAD_OP keeps them until
    # backward; NO_SHARD never gathers
    out = model(rumus.from_numpy(X[0, 0, mine]))
    held = fsdp_impl._param_bytes["current"] - before - shard_bytes
    if strategy is S.SHARD_GRAD_OP:
        assert held >= model_bytes, (held, model_bytes)
    else:
        assert held == 0, (strategy, held)
    out.sum().backward()
    assert fsdp_impl._param_bytes["current"] - before == shard_bytes
    model.zero_grad()
    train(model)
    compare(model, ref, 1e-5)
    # the clipped norm is the norm of the whole gradient, whatever the strategy
    norm = model.clip_grad_norm_(1e9)
    want = np.sqrt(sum(float((p.grad**2).sum()) for p in ref.parameters()))
    assert abs(float(norm) - want) < 1e-4 * max(want, 1.0), (strategy, float(norm), want)

try:
    FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT).__enter__()
except NotImplementedError as e:
    assert "NO_SHARD" in str(e)
else:
    raise AssertionError("a sharded state dict of a NO_SHARD model must raise")

# the hybrid strategies: shard within a group, replicate across the groups (by default the
# ranks of one machine shard: here all of them)
alone = [dist.new_group([r]) for r in range(n)][rank]
world = dist.GroupMember.WORLD
for strategy, groups in [
    (S.HYBRID_SHARD, None),
    (S.HYBRID_SHARD, (alone, world)),
    (S._HYBRID_SHARD_ZERO2, (alone, world)),
    (S._HYBRID_SHARD_ZERO2, (world, alone)),
]:
    model = wrap(sharding_strategy=strategy, process_group=groups)
    shard_bytes = sum(p.numel() * 4 for p in model.parameters())
    if groups is not None and groups[0] is alone:
        assert shard_bytes == model_bytes  # each rank its own shard group: replicas
    else:
        assert shard_bytes <= model_bytes / n + 4 * 4 * n
    train(model)
    compare(model, ref, 1e-5)

# 2. no_sync: two accumulated micro-batches and a synchronized one equal the large batch
ref3 = reference(micro=3)
for strategy in (S.FULL_SHARD, S.SHARD_GRAD_OP, S.NO_SHARD):
    model = wrap(sharding_strategy=strategy)
    train(model, micro=3)
    compare(model, ref3, 1e-5)

# 3. CPU offload: on CPU tensors it changes nothing
model = wrap(cpu_offload=CPUOffload(offload_params=True))
train(model)
compare(model, ref, 1e-5)
assert all(p.device.type == "cpu" for p in model.parameters())

# 4. mixed precision: bfloat16 compute (and reduction), float32 shards and optimizer
for strategy, reduce_dtype in [(S.FULL_SHARD, rumus.float32), (S.SHARD_GRAD_OP, None)]:
    mp = MixedPrecision(param_dtype=rumus.bfloat16, reduce_dtype=reduce_dtype)
    model = wrap(sharding_strategy=strategy, mixed_precision=mp)
    train(model, dtype=rumus.bfloat16)
    assert all(
        p.dtype == rumus.float32 and p.grad.dtype == rumus.float32 for p in model.parameters()
    )
    # Adam turns bfloat16 rounding of small gradients into full lr-sized steps of either
    # sign: a few elements move by up to ~steps * lr, the bulk stays close
    got, want = full_state(model), ref.state_dict()
    diff = np.concatenate([(got[k].float() - v).abs().numpy().ravel() for k, v in want.items()])
    assert diff.max() < STEPS * 0.01 and diff.mean() < 1e-3, (diff.max(), diff.mean())
bn = FSDP(
    nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4)),
    mixed_precision=MixedPrecision(buffer_dtype=rumus.float64),
)
assert bn.module[1].running_mean.dtype == rumus.float64

# 5. GPU compute with the shards offloaded to the host
if rumus.gpu.is_available():
    model = wrap(cpu_offload=CPUOffload(offload_params=True), device_id="gpu")
    assert all(p.device.type == "cpu" for p in model.parameters())
    out = model(rumus.from_numpy(X[0, 0, mine]).to("gpu"))
    assert out.device.type == "gpu"
    nn.functional.mse_loss(out, rumus.from_numpy(Y[0, 0, mine]).to("gpu")).backward()
    assert all(p.grad.device.type == "cpu" for p in model.parameters())
    plain = make_model()
    nn.functional.mse_loss(plain(rumus.from_numpy(X[0, 0])), rumus.from_numpy(Y[0, 0])).backward()
    with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        piece = model.state_dict()["0.weight"]
    got = model.module[0]._flat_param.grad.numpy()[: piece.local_tensor().numel()]
    g = plain[0].weight.grad.numpy().ravel()
    assert_allclose(got, g[piece.offset : piece.offset + got.size], atol=1e-5)

# 5. bad options
for kw, error in [
    (dict(sharding_strategy=S.HYBRID_SHARD, process_group=world), ValueError),
    (dict(sharding_strategy=S.FULL_SHARD, process_group=(world, world)), ValueError),
    (dict(sharding_strategy="FULL_SHARD"), TypeError),
    (dict(mixed_precision=rumus.bfloat16), TypeError),
    (dict(cpu_offload=True), TypeError),
    (dict(mixed_precision=MixedPrecision(keep_low_precision_grads=True)), NotImplementedError),
]:
    try:
        FSDP(nn.Linear(2, 2), **kw)
    except error:
        pass
    else:
        raise AssertionError(f"{kw} must raise {error.__name__}")

dist.destroy_process_group()
print(f"rank {rank}: fsdp_options OK")
