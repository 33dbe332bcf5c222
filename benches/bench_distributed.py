#!/usr/bin/env python
"""All-reduce bandwidth of rumus.distributed against mpi4py on plain NumPy arrays, and the
all-reduce overlap of DistributedDataParallel. Run it under mpirun (rank 0 prints):

    mpirun -n 2 .venv/bin/python benches/bench_distributed.py [--quick]

For each size (4 KB to 64 MB of float32) it times ``dist.all_reduce(tensor)`` and
``comm.Allreduce(IN_PLACE, array)`` alternately (best of several repeats) and prints the
bandwidth (size / time) of both and their ratio; the target is rumus >= 0.9x mpi4py, i.e. the
per-call overhead of rumus is small. Then it times a DDP training step of a small MLP and
reports the bytes all-reduced per step and the share of buckets launched before backward
ended (the communication that overlaps backward).
"""

import argparse
import time

import numpy as np
import rumus
import rumus.distributed as dist
from mpi4py import MPI
from rumus import nn
from rumus.nn.parallel import DistributedDataParallel as DDP


def best(fn, repeats):
    times = []
    for _ in range(repeats):
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    comm = MPI.COMM_WORLD
    repeats = 3 if args.quick else 10
    top = 20 if args.quick else 26  # 2**26 bytes = 64 MB
    if rank == 0:
        print(f"all_reduce, {world} ranks: size, rumus MB/s, mpi4py MB/s, rumus/mpi4py")
    for shift in range(12, top + 1, 2):
        n = (1 << shift) // 4
        array = np.ones(n, np.float32)
        tensor = rumus.ones(n)
        t_np = t_ru = float("inf")
        for _ in range(repeats):  # alternately, so that load changes hit both alike
            t_np = min(t_np, best(lambda: comm.Allreduce(MPI.IN_PLACE, array), 1))
            t_ru = min(t_ru, best(lambda: dist.all_reduce(tensor), 1))
        if rank == 0:
            mb = (1 << shift) / 2**20
            print(f"{1 << shift:>10} B  {mb / t_ru:9.1f}  {mb / t_np:9.1f}  {t_np / t_ru:5.2f}x")

    rumus.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU())
    model.append(nn.Linear(512, 10))
    ddp = DDP(model, bucket_cap_mb=0.5)
    opt = rumus.optim.SGD(ddp.parameters(), lr=0.01)
    x, y = rumus.randn(64, 256), rumus.randn(64, 10)
    launched = []
    launch = ddp._launch
    ddp._launch = lambda b: (launched.append(sum(ddp._ready) < len(ddp._params)), launch(b))

    def step():
        opt.zero_grad()
        nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()

    step()
    t = best(step, repeats)
    nbytes = sum(p.numel() * p.element_size() for p in ddp.parameters())
    if rank == 0:
        early = sum(launched) / len(launched)
        print(
            f"DDP MLP step ({world} ranks, {len(ddp._buckets)} buckets): {t * 1e3:.2f} ms, "
            f"{nbytes / 2**20:.2f} MB all-reduced per step, {early:.0%} of buckets launched "
            "while backward was still running"
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
