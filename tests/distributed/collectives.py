"""Every collective on N ranks against NumPy (run by tests/test_distributed.py under mpirun)."""

import threading
import time
from datetime import timedelta

import numpy as np
import rumus
import rumus.distributed as dist
from numpy.testing import assert_allclose, assert_array_equal
from rumus.distributed import distributed_c10d as c10d

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
R = dist.ReduceOp


def data(r, dtype=np.float32, shape=(2, 3)):
    return (np.arange(np.prod(shape)).reshape(shape) + 10 * r + 1).astype(dtype)


every = np.stack([data(r) for r in range(n)])

# all_reduce: every op, in place in the tensor's own memory
for op, ref in [
    (R.SUM, every.sum(0)),
    (R.AVG, every.mean(0)),
    (R.PRODUCT, every.prod(0)),
    (R.MIN, every.min(0)),
    (R.MAX, every.max(0)),
]:
    t = rumus.from_numpy(data(rank))
    ptr = t.data_ptr()
    dist.all_reduce(t, op=op)
    assert t.data_ptr() == ptr
    assert_allclose(t.numpy(), ref, rtol=1e-6)
ints = rumus.from_numpy(data(rank, np.int64))
dist.all_reduce(ints, op=R.BXOR)
assert_array_equal(
    ints.numpy(), np.bitwise_xor.reduce(np.stack([data(r, np.int64) for r in range(n)]))
)
# the fast path's per-tensor cache goes with its tensor; short-lived tensors (whose ids
# are reused) of changing sizes and dtypes stay right
t = rumus.ones(5)
dist.all_reduce(t)
key = id(t)
assert key in c10d._fast
del t
assert key not in c10d._fast
for i in range(40):
    dtype = [rumus.float32, rumus.float64, rumus.int64, rumus.bool][i % 4]
    x = rumus.full((1 + i % 5,), rank + i, dtype=dtype)
    dist.all_reduce(x)
    want = any(r + i for r in range(n)) if dtype == rumus.bool else sum(r + i for r in range(n))
    assert x.tolist() == [want] * (1 + i % 5), (i, dtype, x.tolist(), want)
# a non-contiguous tensor goes through a staging copy and is written back
t = rumus.from_numpy(data(rank)).t()
dist.all_reduce(t)
assert_allclose(t.numpy(), every.sum(0).T)
# async
t = rumus.from_numpy(data(rank))
work = dist.all_reduce(t, async_op=True)
work.wait()
assert work.is_completed()
assert_allclose(t.numpy(), every.sum(0))
# GPU tensors are staged through the host
if rumus.gpu.is_available():
    t = rumus.from_numpy(data(rank)).to("gpu")
    dist.all_reduce(t)
    assert t.device.type == "gpu"
    assert_allclose(t.cpu().numpy(), every.sum(0))

# async variants of the other collectives (the nonblocking MPI calls)
t = rumus.from_numpy(data(rank))
work = dist.broadcast(t, src=0, async_op=True)
outs = [rumus.zeros(2, 3) for _ in range(n)]
work2 = dist.all_gather(outs, rumus.from_numpy(data(rank)), async_op=True)
flat = rumus.zeros(n * 2, 3)
work3 = dist.all_gather_into_tensor(flat, rumus.from_numpy(data(rank)), async_op=True)
for w in (work, work2, work3, dist.barrier(async_op=True)):
    w.wait()
assert_allclose(t.numpy(), data(0))
assert_allclose(np.stack([o.numpy() for o in outs]), every)
assert_allclose(flat.numpy(), every.reshape(n * 2, 3))

# an async all_reduce (and isend/irecv) started before a compute phase completes during it:
# the helper thread drives it (this Open MPI has no asynchronous progress of its own, so
# without the thread nothing moves until wait()). ``_entry.done`` is set only by the
# thread here: the loop does not call is_completed.
big = rumus.full((1 << 20,), float(rank + 1))  # 4 MB: MPI's rendezvous protocol, many rounds
work = dist.all_reduce(big, async_op=True)
box = rumus.zeros(1 << 18)
ring = [
    dist.isend(rumus.full((1 << 18,), float(rank)), dst=(rank + 1) % n),
    dist.irecv(box, src=(rank - 1) % n),
]
a = rumus.randn(96, 96)
start = time.monotonic()
while not (work._entry.done and all(w._entry.done for w in ring)):
    a = (a @ a).tanh()  # the compute phase
    assert time.monotonic() - start < 20, "the async operations made no progress"
assert work.is_completed() and all(w.is_completed() for w in ring)
assert_allclose(big.numpy()[[0, -1]], [n * (n + 1) / 2] * 2)
assert box.numpy()[0] == (rank - 1) % n
work.wait()
# several handles in flight, waited in reverse order, one of them from another thread
parts = [rumus.full((1000 * (i + 1),), float(rank + i)) for i in range(3)]
works = [dist.all_reduce(p, async_op=True) for p in parts]
waiter = threading.Thread(target=works[1].wait)
waiter.start()
works[2].wait()
works[0].wait()
waiter.join()
for i, p in enumerate(parts):
    assert works[i].is_completed()
    assert_allclose(p.numpy()[[0, -1]], [sum(r + i for r in range(n))] * 2)

# the GIL is released while a rank waits in a collective: another thread keeps running
if n > 1:
    ticks = []
    if rank == 0:
        time.sleep(0.5)  # the others wait in all_reduce meanwhile
        dist.all_reduce(rumus.ones(4))
    else:
        waiter = threading.Thread(target=dist.all_reduce, args=(rumus.ones(4),))
        waiter.start()
        while waiter.is_alive():
            ticks.append(1)
            time.sleep(0.001)
        assert len(ticks) > 20, len(ticks)

# broadcast / reduce
t = rumus.from_numpy(data(rank))
dist.broadcast(t, src=n - 1)
assert_allclose(t.numpy(), data(n - 1))
t = rumus.from_numpy(data(rank))
dist.reduce(t, dst=0, op=R.MAX)
assert_allclose(t.numpy(), every.max(0) if rank == 0 else data(rank))

# all_gather / all_gather_into_tensor (both output layouts)
out = [rumus.zeros(2, 3) for _ in range(n)]
dist.all_gather(out, rumus.from_numpy(data(rank)))
for r in range(n):
    assert_allclose(out[r].numpy(), data(r))
flat = rumus.zeros(n * 2, 3)
dist.all_gather_into_tensor(flat, rumus.from_numpy(data(rank)))
assert_allclose(flat.numpy(), every.reshape(n * 2, 3))
stacked = rumus.zeros(n, 2, 3)
dist.all_gather_into_tensor(stacked, rumus.from_numpy(data(rank)))
assert_allclose(stacked.numpy(), every)

# reduce_scatter / reduce_scatter_tensor: block r of the sum lands on rank r
big = np.stack([data(r, shape=(n, 4)) for r in range(n)])  # (ranks, n, 4)
out = rumus.zeros(4)
dist.reduce_scatter_tensor(out, rumus.from_numpy(data(rank, shape=(n, 4))))
assert_allclose(out.numpy(), big.sum(0)[rank])
out = rumus.zeros(4)
dist.reduce_scatter(out, [rumus.from_numpy(row.copy()) for row in data(rank, shape=(n, 4))])
assert_allclose(out.numpy(), big.sum(0)[rank])
out = rumus.zeros(4)
dist.reduce_scatter_tensor(out, rumus.from_numpy(data(rank, shape=(n, 4))), op=R.AVG)
assert_allclose(out.numpy(), big.mean(0)[rank], rtol=1e-6)

# gather / scatter
glist = [rumus.zeros(2, 3) for _ in range(n)] if rank == 1 % n else None
dist.gather(rumus.from_numpy(data(rank)), glist, dst=1 % n)
if rank == 1 % n:
    for r in range(n):
        assert_allclose(glist[r].numpy(), data(r))
t = rumus.zeros(2, 3)
slist = [rumus.from_numpy(data(r) * 2) for r in range(n)] if rank == 0 else None
dist.scatter(t, slist, src=0)
assert_allclose(t.numpy(), data(rank) * 2)

# all_to_all_single: equal splits, then uneven ones (rank r sends r + 1 rows to each rank)
inp = rumus.from_numpy(data(rank, shape=(n, 2)))
out = rumus.zeros(n, 2)
dist.all_to_all_single(out, inp)
assert_allclose(out.numpy(), np.stack([data(r, shape=(n, 2))[rank] for r in range(n)]))
inp = rumus.from_numpy(np.full((n * (rank + 1), 2), rank, np.float32))
out = rumus.zeros(sum(r + 1 for r in range(n)), 2)
dist.all_to_all_single(out, inp, [r + 1 for r in range(n)], [rank + 1] * n)
assert_allclose(out.numpy()[:, 0], np.concatenate([[r] * (r + 1) for r in range(n)]))
outs = [rumus.zeros(3) for _ in range(n)]
dist.all_to_all(outs, [rumus.full((3,), 10.0 * rank + r) for r in range(n)])
for r in range(n):
    assert_allclose(outs[r].numpy(), np.full(3, 10.0 * r + rank))

# point to point around a ring
t = rumus.from_numpy(data(rank))
got = rumus.zeros(2, 3)
send = dist.isend(t, dst=(rank + 1) % n)
recv = dist.irecv(got, src=(rank - 1) % n)
send.wait()
recv.wait()
assert_allclose(got.numpy(), data((rank - 1) % n))
if n > 1:
    if rank == 0:
        dist.send(rumus.tensor([7.0, 8.0]), dst=1)
    elif rank == 1:
        buf = rumus.zeros(2)
        assert dist.recv(buf) == 0
        assert_allclose(buf.numpy(), [7.0, 8.0])

# objects
objs = [None] * n
dist.all_gather_object(objs, {"rank": rank})
assert objs == [{"rank": r} for r in range(n)]
lst = [rank, "x"] if rank == 0 else [None, None]
dist.broadcast_object_list(lst, src=0)
assert lst == [0, "x"]

# groups: ranks {0, n-1} (src/dst are global ranks)
g = dist.new_group(sorted({0, n - 1}))
if rank in (0, n - 1):
    t = rumus.from_numpy(data(rank))
    dist.all_reduce(t, group=g)
    assert_allclose(t.numpy(), data(0) + (data(n - 1) if n > 1 else 0))
    assert dist.get_world_size(g) == (2 if n > 1 else 1)
    t = rumus.zeros(2, 3)
    if rank == n - 1:
        t = rumus.from_numpy(data(rank))
    dist.broadcast(t, src=n - 1, group=g)
    assert_allclose(t.numpy(), data(n - 1))
else:
    assert g is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(g) == -1

# local mistakes raise clearly
for call, exc in [
    (lambda: dist.all_gather_into_tensor(rumus.zeros(5), rumus.zeros(3)), ValueError),
    (lambda: dist.all_gather([rumus.zeros(3)] * (n + 1), rumus.zeros(3)), ValueError),
    (lambda: dist.all_reduce(rumus.ones(2, dtype=rumus.int64), op=R.AVG), ValueError),
    (lambda: dist.broadcast(rumus.ones(2), src=n), ValueError),
    (lambda: dist.all_reduce([1.0]), TypeError),
    (lambda: dist.all_reduce(rumus.ones(2, dtype=rumus.bfloat16)), TypeError),
]:
    try:
        call()
    except exc:
        pass
    else:
        raise AssertionError(f"no {exc.__name__}")

# with the debug flag, ranks passing different shapes raise on every rank
dist.set_debug_level(dist.DebugLevel.DETAIL)
try:
    dist.all_reduce(rumus.zeros(2 + (rank == 0)))
except RuntimeError as e:
    assert n > 1 and "different shapes" in str(e), e
else:
    assert n == 1
dist.set_debug_level(dist.DebugLevel.OFF)

# Work.wait(timeout): raises while the peer has not sent yet, completes once it has
if n > 1 and rank < 2:
    box = rumus.zeros(2)
    if rank == 0:
        work = dist.irecv(box, src=1, tag=9)
        try:
            work.wait(timeout=timedelta(milliseconds=50))
        except RuntimeError as e:
            assert "did not complete" in str(e)
        else:
            raise AssertionError("wait(timeout) must raise before the send")
        dist.send(rumus.zeros(1), dst=1, tag=8)  # now rank 1 may send
        assert work.wait(timeout=30) and box.tolist() == [5.0, 6.0]
    else:
        dist.recv(rumus.zeros(1), src=0, tag=8)
        dist.send(rumus.tensor([5.0, 6.0]), dst=0, tag=9)

dist.barrier()
dist.destroy_process_group()
print(f"rank {rank}: collectives OK")
