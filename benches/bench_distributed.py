#!/usr/bin/env python
"""Distributed training speed: the transformer step of bench_nn under DDP at 1 and 2
processes, the bytes it all-reduces per step, how much of that all-reduce time backward
hides, and an all-reduce bandwidth curve against mpi4py on plain NumPy arrays.

    .venv/bin/python benches/bench_distributed.py [--quick]     # runs -n 1 and -n 2 itself
    .venv/bin/python benches/bench_distributed.py --bandwidth   # the all-reduce curve, -n 2
    mpirun -n 2 .venv/bin/python benches/bench_distributed.py    # one world size

Transformer step: bench_nn's case (``TransformerEncoderLayer(128, 4, 512)``, a batch of
32 x 64 x 128, mean-square loss, AdamW) in DistributedDataParallel; the global batch stays 32,
split over the ranks. Overlap: DDP launches each gradient bucket's all-reduce as soon as the
bucket is ready during backward; the time backward's end still waits for them (exposed) is
compared with the time the same buckets take to all-reduce one after another, blocking:
hidden = 1 - exposed / blocking (0 when nothing overlaps, 1 when all of it does).

Bandwidth: for each size (4 KB to 64 MB of float32) loops of ``dist.all_reduce(tensor)`` and
of ``comm.Allreduce(IN_PLACE, array)`` (1 MB per loop, at least one call) are timed
alternately, each after a barrier, over 30 rounds; the best rounds (the cost when the
scheduler lets both ranks run) and the medians are compared. The target is
rumus >= 0.9x mpi4py (rumus's overhead per call is small). On a machine with more
runnable processes than cores the large sizes are bimodal: a call takes ~1 ms per 8 MB when
both ranks happen to run at once and 10-40x longer when one waits for a core, whatever the
buffer (a NumPy array, a rumus tensor's memory, huge pages or not); a ratio far from 1 there
means one side never drew the fast case in its repeats, not that rumus is slower.
"""

import argparse
import os
import pathlib
import subprocess
import sys
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent


def best(fn, repeats, barrier):
    times = []
    for _ in range(repeats):
        barrier()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bandwidth(dist, comm, MPI, rank, world, repeats, top):
    import rumus

    if rank == 0:
        print(
            f"\nall_reduce, {world} ranks, {repeats} rounds: bytes, rumus MB/s, mpi4py MB/s "
            "(best rounds), rumus/mpi4py (best, median)"
        )
    for shift in range(12, top + 1, 2):
        n = (1 << shift) // 4
        array = np.ones(n, np.float32)
        tensor = rumus.ones(n)
        # back-to-back calls per timing (1 MB in all): one call of a small size is shorter
        # than the clock's noise; a short loop is often spared by the scheduler
        calls = max(1, (1 << 20) >> shift)

        def numpy_loop():
            for _ in range(calls):
                comm.Allreduce(MPI.IN_PLACE, array)

        def rumus_loop():
            for _ in range(calls):
                dist.all_reduce(tensor)

        rumus_loop()
        numpy_loop()
        t_np, t_ru = [], []
        for i in range(repeats):
            # alternately, each first every other time, so that load changes hit both alike
            for which in (0, 1) if i % 2 else (1, 0):
                if which:
                    t_np.append(best(numpy_loop, 1, comm.Barrier) / calls)
                else:
                    t_ru.append(best(rumus_loop, 1, comm.Barrier) / calls)
        if rank == 0:
            mb = (1 << shift) / 2**20
            ru, nu = min(t_ru), min(t_np)
            median = float(np.median(t_np)) / float(np.median(t_ru))
            print(
                f"{1 << shift:>10}  {mb / ru:9.1f}  {mb / nu:9.1f}  {nu / ru:5.2f}x  {median:5.2f}x"
            )


def transformer(dist, comm, MPI, rank, world, repeats):
    import rumus
    from rumus.nn.parallel import DistributedDataParallel as DDP

    sys.path.insert(0, str(HERE))
    from bench_nn import transformer_case

    rumus.manual_seed(0)
    ddp = DDP(transformer_case(rumus), bucket_cap_mb=0.25)
    opt = rumus.optim.AdamW(ddp.parameters(), lr=1e-3)
    per_rank = 32 // world
    x = rumus.randn(per_rank, 64, 128)
    ends, dones = [], []
    wait_all = ddp._wait

    def timed_wait():
        # perf_counter is CLOCK_MONOTONIC: one clock for all the processes of a machine
        ends.append(time.perf_counter())
        wait_all()
        dones.append(time.perf_counter())

    ddp._wait = timed_wait

    def step():
        ddp(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()

    step()
    step()
    ends.clear()
    dones.clear()
    n_steps = max(3, repeats)
    t_step = best(step, n_steps, comm.Barrier)
    # exposed: from the end of the last rank's backward to the all-reduces' completion (the
    # time a rank waits for a slower rank's backward is skew, not communication)
    all_ends = comm.allgather(ends)
    exposed = [max(0.0, d - max(e[s] for e in all_ends)) for s, d in enumerate(dones)]
    # best step, as for the blocking time (the median shows how much scheduling noise adds)
    wait = min(exposed) if exposed else 0.0
    wait_median = float(np.median(exposed)) if exposed else 0.0
    # the same buckets, all-reduced one after another (blocking)
    sizes = [sum(ddp._params[i].numel() for i in b.indices) for b in ddp._buckets]
    buffers = [np.ones(n, np.float32) for n in sizes]

    def blocking():
        for buf in buffers:
            comm.Allreduce(MPI.IN_PLACE, buf)

    t_comm = best(blocking, n_steps, comm.Barrier)
    nbytes = sum(p.numel() * p.element_size() for p in ddp.parameters())
    if rank == 0:
        hidden = 0.0 if world == 1 or t_comm == 0 else min(1.0, max(0.0, 1 - wait / t_comm))
        print(
            f"\ntransformer step, {world} process(es), batch {per_rank}/rank: "
            f"{t_step * 1e3:.1f} ms/step, {32 / t_step:.0f} samples/s; "
            f"{nbytes / 2**20:.2f} MB all-reduced per step in {len(ddp._buckets)} buckets; "
            f"all-reduce {t_comm * 1e3:.2f} ms blocking, {wait * 1e3:.2f} ms exposed after "
            f"backward (median {wait_median * 1e3:.2f} ms), {hidden:.0%} hidden"
        )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--bandwidth", action="store_true", help="only the all-reduce curve")
    args = parser.parse_args()
    if "OMPI_COMM_WORLD_SIZE" not in os.environ:
        # not under mpirun: run the measurements at 1 and 2 processes
        mpirun = pathlib.Path(sys.executable).parent / "mpirun"
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        for n in (2,) if args.bandwidth else (1, 2):
            cmd = [str(mpirun if mpirun.exists() else "mpirun"), "--oversubscribe", "-n", str(n)]
            cmd += [sys.executable, __file__, *sys.argv[1:]]
            subprocess.run(cmd, env=env, check=True)
        return
    import rumus.distributed as dist
    from mpi4py import MPI

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    comm = MPI.COMM_WORLD
    repeats = 3 if args.quick else 10
    rounds = 5 if args.quick else 30
    if not args.bandwidth:
        transformer(dist, comm, MPI, rank, world, repeats)
    if world > 1:
        bandwidth(dist, comm, MPI, rank, world, rounds, 20 if args.quick else 26)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
