"""FSDP's optimizer state under the original parameters' names (the bodies of
``FullyShardedDataParallel.optim_state_dict`` and ``optim_state_dict_to_load``)."""

from ... import _rumus
from ...autograd.grad_mode import no_grad
from .._shard import ShardedTensor
from ._flat import _account
from .api import StateDictType


def _layout(model, optim):
    """For every optimizer parameter (a flat shard): its unit and the original keys of
    the parameters it holds, with their infos."""
    keys = {(id(e[2]), id(e[3])): e[0] for e in model._entries() if e[1] == "param"}
    by_flat = {id(u._flat_param): u for u in model.fsdp_modules(model) if u._flat_param is not None}
    layout = []
    for g in optim.param_groups:
        for p in g["params"]:
            unit = by_flat.get(id(p))
            if unit is None:
                raise ValueError(
                    "optim_state_dict: the optimizer holds a parameter that is not a shard "
                    "of this FSDP model (build it on fsdp_model.parameters())"
                )
            layout.append((p, unit, [(keys[(id(unit), id(i))], i) for i in unit._infos]))
    return layout


def optim_state_dict(model, optim, optim_state_dict=None, group=None):
    osd = optim.state_dict() if optim_state_dict is None else optim_state_dict
    full = model._state_dict_type is StateDictType.FULL_STATE_DICT
    layout = _layout(model, optim)
    state = {}
    with no_grad():
        for index, (p, unit, named) in enumerate(layout):
            st = osd["state"].get(index)
            if st is None:
                continue
            gathered = {k: unit._all_gather(v) for k, v in st.items() if full and _shard_like(v, p)}
            for _ in gathered:
                _account(-unit._full_bytes)
            for key, info in named:
                entry = {}
                for k, v in st.items():
                    if not _shard_like(v, p):
                        entry[k] = v.clone() if isinstance(v, _rumus.Tensor) else v
                    elif full:
                        flat = gathered[k]
                        entry[k] = (
                            flat[info.offset : info.offset + info.numel].view(info.shape).clone()
                        )
                    else:
                        entry[k] = unit._sharded(info, v)
                state[key] = entry
    groups = []
    for g in osd["param_groups"]:
        names = [key for i in g["params"] for key, _ in layout[i][2]]
        groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": names})
    return {"state": state, "param_groups": groups}


def optim_state_dict_to_load(
    model, optim, optim_state_dict, is_named_optimizer=False, load_directly=False, group=None
):
    layout = _layout(model, optim)
    saved = optim_state_dict["state"]
    state = {}
    with no_grad():
        for index, (p, unit, named) in enumerate(layout):
            present = [(key, info) for key, info in named if key in saved]
            if not present:
                continue
            first = saved[present[0][0]]
            lo = unit._shard_offset
            entry = {}
            for k, v in first.items():
                if not isinstance(v, (ShardedTensor, _rumus.Tensor)) or (
                    isinstance(v, _rumus.Tensor) and tuple(v.shape) != present[0][1].shape
                ):
                    entry[k] = v
                    continue
                shard = _rumus.zeros(unit._shard_numel, dtype=p.dtype, device=p.device)
                for key, info in present:
                    value = saved[key][k]
                    a = min(max(info.offset, lo), lo + unit._shard_numel)
                    b = min(max(info.offset + info.numel, lo), lo + unit._shard_numel)
                    if b <= a:
                        continue
                    if isinstance(value, ShardedTensor):
                        piece = value.local_tensor()
                    else:
                        piece = value.reshape(-1)[a - info.offset : b - info.offset]
                    shard[a - lo : b - lo].copy_(piece.to(p.device, p.dtype))
                entry[k] = shard
            state[index] = entry
    position = {key: i for i, (_, _, named) in enumerate(layout) for key, _ in named}
    groups = []
    for g in optim_state_dict["param_groups"]:
        params = list(dict.fromkeys(position[name] for name in g["params"]))
        groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": params})
    result = {"state": state, "param_groups": groups}
    if load_directly:
        optim.load_state_dict(result)
    return result


def _shard_like(value, shard):
    """Optimizer state shaped like the flat shard (moments), not a scalar (the step)."""
    return isinstance(value, _rumus.Tensor) and tuple(value.shape) == tuple(shard.shape)
