"""The pieces of FullyShardedDataParallel outside the class: the parameter-memory counter,
the all-gather of the flat buffer as an autograd function, the reduction of its gradient, and
the process groups of the hybrid strategies."""

from ... import _rumus
from ...autograd.function import Function
from .. import distributed_c10d as c10d
from .api import ShardingStrategy

# Bytes held by flat shards and gathered full buffers of every unit: ``current`` and the
# high-water mark ``peak`` (what the memory test measures).
_param_bytes = {"current": 0, "peak": 0}


def _account(nbytes):
    _param_bytes["current"] += nbytes
    _param_bytes["peak"] = max(_param_bytes["peak"], _param_bytes["current"])


def reset_peak_param_bytes():
    """Sets the peak of the FSDP parameter-memory counter to its current value."""
    _param_bytes["peak"] = _param_bytes["current"]


class _GatherFlat(Function):
    """shard -> full flat buffer (all-gather); backward reduce-scatters the gradient."""

    @staticmethod
    def forward(ctx, shard, unit, release_in_backward):
        ctx.unit, ctx.release = unit, release_in_backward
        return unit._all_gather(shard)

    @staticmethod
    def backward(ctx, grad):
        unit = ctx.unit
        if ctx.release:
            # The graph, and with it the gathered buffer, goes when this returns.
            _account(-unit._full_bytes)
        return reduce_grad(unit, grad), None, None


def reduce_grad(unit, grad):
    """The gradient of ``unit``'s shard on this rank from that of the full buffer, averaged over the
    ranks (reduce-scatter; all-reduce under NO_SHARD) in the reduce dtype, on the shard's
    device. Inside ``no_sync()`` it is accumulated instead (None: no shard gradient yet)
    and added to the next synchronized backward's."""
    grad = grad.detach()
    if not unit._sync:
        unit._grad_accum = grad.clone() if unit._grad_accum is None else unit._grad_accum + grad
        return None
    if unit._grad_accum is not None:
        grad, unit._grad_accum = grad + unit._grad_accum, None
    mp = unit.mixed_precision
    rd = mp and (mp.reduce_dtype or mp.param_dtype)
    low = rd in (_rumus.bfloat16, _rumus.float16)
    if rd is not None and rd != grad.dtype:
        # MPI cannot add 16-bit floats: round to them, add in the gradient's dtype.
        comm = grad.to(rd).to(grad.dtype) if low else grad.to(rd)
    else:
        comm = grad.contiguous()
    if unit.sharding_strategy is ShardingStrategy.NO_SHARD:
        out = comm.clone() if comm is grad else comm
        c10d.all_reduce(out, op=c10d.ReduceOp.AVG, group=unit.process_group)
    else:
        out = _rumus.empty(unit._shard_numel, dtype=comm.dtype, device=comm.device)
        c10d.reduce_scatter_tensor(out, comm, op=c10d.ReduceOp.AVG, group=unit.process_group)
    if unit._replicate_group is not None:
        # the hybrid strategies: average the shard's gradient over its replicas too
        c10d.all_reduce(out, op=c10d.ReduceOp.AVG, group=unit._replicate_group)
    if low:
        out = out.to(rd)
    return out.to(unit._flat_param.device, unit._flat_param.dtype)


def _cast_inputs(values, dtype):
    """The floating-point tensors among ``values`` cast to ``dtype`` (a tuple)."""
    return tuple(
        v.to(dtype) if isinstance(v, _rumus.Tensor) and v.is_floating_point() else v for v in values
    )


def _hybrid_groups():
    """This rank's (shard group, replicate group) for the hybrid strategies: the ranks of one
    machine (same MPI processor name) shard, the machines replicate. Every rank calls it (it
    creates groups); every machine must run the same number of ranks."""
    world = c10d._group(None)
    names = [None] * world.size()
    c10d.all_gather_object(names, c10d._mpi().Get_processor_name())
    nodes = {}
    for r, name in enumerate(names):
        nodes.setdefault(name, []).append(r)
    nodes = list(nodes.values())
    if len({len(ranks) for ranks in nodes}) > 1:
        sizes = {name: names.count(name) for name in dict.fromkeys(names)}
        raise ValueError(
            f"FullyShardedDataParallel: HYBRID sharding needs the same number of ranks on every "
            f"machine, but got {sizes}"
        )
    me = world.rank()
    intra = inter = None
    for ranks in nodes:
        group = c10d.new_group(ranks)
        intra = group if me in ranks else intra
    for i in range(len(nodes[0])):
        ranks = [node[i] for node in nodes]
        group = c10d.new_group(ranks)
        inter = group if me in ranks else inter
    return intra, inter
