"""Rank 1 raises while the others wait in a collective: the job must end (not hang) with an
error naming rank 1 (run by tests/test_distributed.py under mpirun)."""

import rumus
import rumus.distributed as dist

dist.init_process_group("mpi")
if dist.get_rank() == 1:
    raise RuntimeError("rank 1 gives up")
dist.all_reduce(rumus.ones(3))
print("unreachable: the collective cannot complete")
