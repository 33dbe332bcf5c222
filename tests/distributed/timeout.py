"""Rank 1 hangs (never reaches the collective) while rank 0 waits in all_reduce: the
process-group timeout (2 s) must end the job, naming the collective that timed out (run by
tests/test_distributed.py under mpirun)."""

import time
from datetime import timedelta

import rumus
import rumus.distributed as dist

dist.init_process_group("mpi", timeout=timedelta(seconds=2))
dist.all_reduce(rumus.ones(3))  # collectives within the timeout are fine
if dist.get_rank() == 1:
    time.sleep(600)
dist.all_reduce(rumus.ones(3))
print("unreachable: the collective cannot complete")
