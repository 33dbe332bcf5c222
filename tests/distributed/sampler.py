"""DistributedSampler across N ranks (run by tests/test_distributed.py under mpirun): the
ranks' shares of an epoch are disjoint and cover the dataset exactly once."""

import os

import rumus
import rumus.distributed as dist
from rumus.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
size = 6 * n  # divisible: no padding, every index exactly once
data = TensorDataset(rumus.arange(size))
sampler = DistributedSampler(data, shuffle=True, seed=5)
assert (sampler.num_replicas, sampler.rank) == (n, rank)
orders = []
for epoch in range(2):
    sampler.set_epoch(epoch)
    mine = [int(x) for (batch,) in DataLoader(data, batch_size=4, sampler=sampler) for x in batch]
    assert len(mine) == len(sampler) == 6
    every = [None] * n
    dist.all_gather_object(every, mine)
    assert sorted(i for part in every for i in part) == list(range(size)), every
    orders.append(every)
assert orders[0] != orders[1]  # set_epoch reshuffles

# each rank drives gpu:<local rank> (modulo the adapters: lavapipe has one)
count = rumus.gpu.device_count()
if count:
    local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
    assert rumus.gpu.current_device() == local % count
dist.destroy_process_group()
print(f"rank {rank}: sampler OK")
