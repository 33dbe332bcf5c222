"""Point-to-point communication and the pickle-based object collectives of
``rumus.distributed`` (re-exported by ``distributed_c10d``)."""

import pickle

from . import _watchdog
from .distributed_c10d import Work, _Buf, _member, _mpi

# ---- point to point -----------------------------------------------------------------------


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Sends ``tensor`` to rank ``dst``; returns a Work handle."""
    pg = _member(group)
    if pg is None:
        return None
    peer = group_dst if group_dst is not None else pg._group_rank(dst, "dst")
    buf = _Buf(tensor)
    return Work([pg.comm.Isend(buf.flat(), dest=peer, tag=tag)])


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receives into ``tensor`` from rank ``src`` (any rank when None); returns a Work."""
    pg = _member(group)
    if pg is None:
        return None
    MPI = _mpi()
    if group_src is not None:
        peer = group_src
    else:
        peer = MPI.ANY_SOURCE if src is None else pg._group_rank(src, "src")
    buf = _Buf(tensor)
    return Work([pg.comm.Irecv(buf.flat(), source=peer, tag=tag)], [buf.finish])


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    isend(tensor, dst, group, tag, group_dst).wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receives into ``tensor``; returns the global rank of the sender."""
    pg = _member(group)
    if pg is None:
        return -1
    MPI = _mpi()
    peer = pg._group_rank(src, "src") if src is not None else group_src
    buf = _Buf(tensor)
    status = MPI.Status()
    with _watchdog.watch("recv"):
        pg.comm.Recv(
            buf.flat(), source=MPI.ANY_SOURCE if peer is None else peer, tag=tag, status=status
        )
    buf.finish()
    return pg.ranks[status.Get_source()]


# ---- Python objects (pickle: trusted peers only) -----------------------------------------


def all_gather_object(object_list, obj, group=None):
    """Fills ``object_list[r]`` with rank r's ``obj``. Objects are pickled: unpickling runs
    arbitrary code, so use this only between trusted peers."""
    pg = _member(group)
    if pg is None:
        return None
    if len(object_list) != pg.size():
        raise ValueError(
            f"all_gather_object: object_list must have world_size ({pg.size()}) entries"
        )
    with _watchdog.watch("all_gather_object"):
        gathered = pg.comm.allgather(pickle.dumps(obj))
    for i, data in enumerate(gathered):
        object_list[i] = pickle.loads(data)


def broadcast_object_list(object_list, src=0, group=None, device=None, group_src=None):
    """Replaces ``object_list``'s entries with rank ``src``'s. Objects are pickled: use this
    only between trusted peers."""
    pg = _member(group)
    if pg is None:
        return None
    root = group_src if group_src is not None else pg._group_rank(src, "src")
    with _watchdog.watch("broadcast_object_list"):
        data = pg.comm.bcast(pickle.dumps(list(object_list)) if pg.rank() == root else None, root)
    items = pickle.loads(data)
    if len(items) != len(object_list):
        raise ValueError(
            f"broadcast_object_list: rank {src} sent {len(items)} objects, but object_list "
            f"has {len(object_list)} entries"
        )
    object_list[:] = items
