#!/usr/bin/env python
"""Distributed training speed: the transformer step of bench_nn under DDP at 1 and 2
processes, the bytes it all-reduces per step, how much of that all-reduce time backward
hides, and an all-reduce bandwidth curve against mpi4py on plain NumPy arrays.

    .venv/bin/python benches/bench_distributed.py [--quick]     # runs -n 1 and -n 2 itself
    .venv/bin/python benches/bench_distributed.py --bandwidth   # only the all-reduce figures
    mpirun -n 2 .venv/bin/python benches/bench_distributed.py    # one world size

Transformer step: bench_nn's case (``TransformerEncoderLayer(128, 4, 512)``, a batch of
32 x 64 x 128, mean-square loss, AdamW) in DistributedDataParallel; the global batch stays 32,
split over the ranks. Overlap: DDP launches each gradient bucket's all-reduce as soon as the
bucket is ready during backward; the time backward's end still waits for them (exposed) is
compared with the time the same buckets take to all-reduce one after another, blocking:
hidden = 1 - exposed / blocking (0 when nothing overlaps, 1 when all of it does).

Bandwidth: for each size (4 KB to 64 MB of float32) loops of ``dist.all_reduce(tensor)`` and
of ``comm.Allreduce(IN_PLACE, array)`` (1 MB per loop, at least one call) are timed in turns,
each after a barrier, over 30 rounds; the best rounds (the cost when the scheduler lets both
ranks run) and the medians are compared. The target is rumus >= 0.9x mpi4py. Small sizes
measure the per-call overhead (also printed on its own, in CPU time, by the world of one).
On a machine with more runnable processes than cores the large sizes are bimodal: a call
takes ~1 ms per 8 MB when both ranks happen to run at once and 10-40x longer when one waits
for a core. Transparent huge pages make the fast case far more common: NumPy advises the
kernel to back arrays of 4 MB and more with them, and so does rumus for buffers of 2 MB and
more. The last column compares the medians against mpi4py on a NumPy array without huge
pages (``_set_madvise_hugepage(False)``).
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


def _small_pages_array(n):
    """A NumPy float32 array without NumPy's transparent-huge-page advice (which NumPy gives
    arrays of 4 MB and more; rumus's allocator does not), or None on NumPy versions without
    the switch."""
    core = getattr(np, "_core", None) or getattr(np, "core", None)
    switch = getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)
    if switch is None:
        return None
    previous = switch(False)
    try:
        return np.ones(n, np.float32)
    finally:
        switch(previous)


def bandwidth(dist, comm, MPI, rank, world, repeats, top):
    import rumus

    if rank == 0:
        print(
            f"\nall_reduce, {world} ranks, {repeats} rounds: bytes, rumus MB/s, mpi4py MB/s "
            "(best rounds), rumus/mpi4py (best, median), and the medians' ratio against "
            "mpi4py on an array without huge pages"
        )
    for shift in range(12, top + 1, 2):
        n = (1 << shift) // 4
        arrays = {"numpy": np.ones(n, np.float32), "small pages": _small_pages_array(n)}
        tensor = rumus.ones(n)
        # back-to-back calls per timing (1 MB in all): one call of a small size is shorter
        # than the clock's noise; a short loop is often spared by the scheduler
        calls = max(1, (1 << 20) >> shift)

        def numpy_loop(array):
            def loop():
                for _ in range(calls):
                    comm.Allreduce(MPI.IN_PLACE, array)

            return loop

        def rumus_loop():
            for _ in range(calls):
                dist.all_reduce(tensor)

        loops = {k: numpy_loop(a) for k, a in arrays.items() if a is not None}
        loops["rumus"] = rumus_loop
        times = {k: [] for k in loops}
        for fn in loops.values():
            fn()
        order = list(loops)
        for i in range(repeats):
            # alternately, in turns, so that load changes hit all alike
            for k in order[i % len(order) :] + order[: i % len(order)]:
                times[k].append(best(loops[k], 1, comm.Barrier) / calls)
        if rank == 0:
            mb = (1 << shift) / 2**20
            ru, nu = min(times["rumus"]), min(times["numpy"])
            med = {k: float(np.median(v)) for k, v in times.items()}
            small = med.get("small pages")
            tail = f"  {small / med['rumus']:5.2f}x" if small is not None else ""
            print(
                f"{1 << shift:>10}  {mb / ru:9.1f}  {mb / nu:9.1f}  {nu / ru:5.2f}x  "
                f"{med['numpy'] / med['rumus']:5.2f}x{tail}"
            )


def overhead(dist, comm, MPI):
    """CPU time per blocking all-reduce of 4 KB in a world of one (no peer to wait for):
    what rumus's Python path costs on top of mpi4py's own call."""
    import rumus

    tensor, array = rumus.ones(1024), np.ones(1024, np.float32)
    calls, times = 5000, {"rumus": [], "mpi4py": []}
    for _ in range(15):
        t0 = time.thread_time()
        for _ in range(calls):
            dist.all_reduce(tensor)
        times["rumus"].append((time.thread_time() - t0) / calls)
        t0 = time.thread_time()
        for _ in range(calls):
            comm.Allreduce(MPI.IN_PLACE, array)
        times["mpi4py"].append((time.thread_time() - t0) / calls)
    ru, nu = (float(np.median(times[k])) * 1e6 for k in ("rumus", "mpi4py"))
    print(
        f"\nall_reduce of 4 KB, world of 1, CPU time per call (median): rumus {ru:.2f} us, "
        f"mpi4py {nu:.2f} us, rumus's overhead {ru - nu:.2f} us"
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
        for n in (1, 2):
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
    if world == 1:
        overhead(dist, comm, MPI)
    else:
        bandwidth(dist, comm, MPI, rank, world, rounds, 20 if args.quick else 26)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
