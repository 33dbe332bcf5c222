"""FullyShardedDataParallel: each rank stores 1/world of every wrapped unit's parameters.

A unit (the module given to FSDP, and every descendant the ``auto_wrap_policy`` wraps in
its own FSDP) flattens the parameters it owns (those not inside a nested unit) into one
buffer, padded to a multiple of the world size; each rank keeps its 1/world slice as the
unit's only parameter (``_flat_param``), which is what ``fsdp_model.parameters()`` yields and
what the optimizer updates. The original parameters are removed from their modules.

Forward of a unit: all-gather the shards into the full buffer, set each original parameter
on its module as a view of that buffer, run the module, then drop the views, so the full
buffer is freed once the unit's forward returns. The unit runs under
``rumus.utils.checkpoint`` (with the random-number state preserved): its activations and
its gathered parameters are not kept for backward. When backward reaches the unit, it
all-gathers the parameters again, recomputes the unit's forward and backpropagates through
it; the gradient of the full buffer is reduce-scattered (averaged over ranks) into the
gradient of this rank's shard, and the gathered buffer is freed when the unit's backward
returns. So at any time a rank holds its shards plus the full parameters of the units whose
forward or backward is running (the unit and the units that enclose it), and the gradient and
optimizer state of its shards only. The price is recomputing each unit's forward in
backward (activation checkpointing per unit).

That is ``ShardingStrategy.FULL_SHARD``. ``SHARD_GRAD_OP`` gathers once per step: the gathered
buffer stays in the autograd graph from the unit's forward until its backward, which
reduce-scatters as above (no recomputation). ``NO_SHARD`` keeps the whole buffer on every rank
(the "gather" is the buffer itself) and all-reduces its gradient. ``HYBRID_SHARD`` and
``_HYBRID_SHARD_ZERO2`` run FULL_SHARD and SHARD_GRAD_OP within ``process_group`` (a machine)
and all-reduce the shards' gradients over the replicate group. ``MixedPrecision`` casts
the gathered buffer (differentiably) to ``param_dtype``; ``CPUOffload`` keeps the shards on
the host and moves the gathered buffer to the compute device; inside ``no_sync()`` the full
gradient is accumulated per unit and reduced with the next synchronized backward's.

Limits: a unit's forward must return a Tensor or a tuple of Tensors, and its tensor inputs
that need gradients must be positional; every parameter of a unit must have one dtype and the
same ``requires_grad``; a parameter shared between two units is not supported.
"""

import contextlib
from collections import OrderedDict

from ... import _rumus
from ...autograd.grad_mode import no_grad
from ...nn import Module
from ...utils.checkpoint import checkpoint
from .. import distributed_c10d as c10d
from .._shard import ShardedTensor
from . import _optim_state
from ._flat import (  # noqa: F401 (_param_bytes, reset_peak_param_bytes: for tests)
    _account,
    _cast_inputs,
    _GatherFlat,
    _hybrid_groups,
    _param_bytes,
    reset_peak_param_bytes,
)
from .api import (
    CPUOffload,
    FullStateDictConfig,
    MixedPrecision,
    ShardedStateDictConfig,
    ShardingStrategy,
    StateDictConfig,
    StateDictType,
)
from .wrap import _as_callable, _recursive_wrap

__all__ = ["FullyShardedDataParallel"]

# The hybrid strategies shard as their base strategy within a group of ranks (a machine) and
# replicate across the groups.
_HYBRID = {
    ShardingStrategy.HYBRID_SHARD: ShardingStrategy.FULL_SHARD,
    ShardingStrategy._HYBRID_SHARD_ZERO2: ShardingStrategy.SHARD_GRAD_OP,
}


class _ParamInfo:
    """One original parameter: its place in the flat buffer and the (module, name) slots
    that held it (several when it is shared inside the unit)."""

    def __init__(self, fqn, shape, numel, offset, requires_grad):
        self.fqn, self.shape, self.numel, self.offset = fqn, shape, numel, offset
        self.requires_grad = requires_grad
        self.slots = []


class FullyShardedDataParallel(Module):
    """Shards ``module``'s parameters across the ranks of ``process_group`` (see the module
    docstring for the schedule of gathers and frees). Build the optimizer on
    ``fsdp_model.parameters()``, the shards, after wrapping.

    Args:
        module (Module): the module to shard.
        process_group (ProcessGroup or tuple, optional): the ranks sharing it (default:
            all); for the HYBRID strategies a pair (shard group, replicate group) (default:
            the ranks of each machine shard, the machines replicate).
        sharding_strategy (ShardingStrategy, optional): ``FULL_SHARD`` (the default),
            ``SHARD_GRAD_OP``, ``NO_SHARD``, ``HYBRID_SHARD`` or ``_HYBRID_SHARD_ZERO2`` (see
            ``ShardingStrategy``).
        cpu_offload (CPUOffload, optional): keep the shards in host memory.
        auto_wrap_policy (callable, optional): selects the descendants wrapped in their own
            FSDP unit (see ``rumus.distributed.fsdp.wrap``).
        backward_prefetch (BackwardPrefetch, optional): accepted, no effect.
        mixed_precision (MixedPrecision, optional): compute and reduce in lower precision.
        ignored_modules (iterable[Module], optional): modules whose parameters stay
            unsharded (and are not synchronized).
        param_init_fn: not supported (must be None).
        device_id (int, str or device, optional): moves ``module`` there first.
        sync_module_states (bool): broadcast rank 0's parameters and buffers first.
        forward_prefetch (bool): accepted, no effect.
        limit_all_gathers (bool): accepted, no effect.
        use_orig_params (bool): accepted; the original parameters are never exposed.
        ignored_states (iterable, optional): more modules to ignore.
        device_mesh: not supported (must be None).
    """

    def __init__(
        self,
        module,
        process_group=None,
        sharding_strategy=None,
        cpu_offload=None,
        auto_wrap_policy=None,
        backward_prefetch=None,
        mixed_precision=None,
        ignored_modules=None,
        param_init_fn=None,
        device_id=None,
        sync_module_states=False,
        forward_prefetch=False,
        limit_all_gathers=True,
        use_orig_params=False,
        ignored_states=None,
        device_mesh=None,
    ):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"module should be an nn.Module, but got {type(module).__name__}")
        if not c10d.is_initialized():
            raise RuntimeError(
                "FullyShardedDataParallel needs the default process group: call "
                "rumus.distributed.init_process_group first"
            )
        strategy = sharding_strategy or ShardingStrategy.FULL_SHARD
        if not isinstance(strategy, ShardingStrategy):
            raise TypeError(f"sharding_strategy should be a ShardingStrategy, got {strategy!r}")
        hybrid = strategy in _HYBRID
        pair = isinstance(process_group, tuple) and len(process_group) == 2
        if (hybrid and not (pair or process_group is None)) or (
            not hybrid and isinstance(process_group, tuple)
        ):
            wanted = (
                "None or a tuple (shard group, replicate group)"
                if hybrid
                else "None or a ProcessGroup (a tuple is for the HYBRID strategies)"
            )
            raise ValueError(
                f"FullyShardedDataParallel: with {strategy}, process_group must be {wanted}"
            )
        for name, value, kind in [
            ("cpu_offload", cpu_offload, CPUOffload),
            ("mixed_precision", mixed_precision, MixedPrecision),
        ]:
            if value is not None and not isinstance(value, kind):
                raise TypeError(f"{name} should be a {kind.__name__}, got {value!r}")
        if mixed_precision is not None and mixed_precision.keep_low_precision_grads:
            raise NotImplementedError(
                "FullyShardedDataParallel: MixedPrecision(keep_low_precision_grads=True) is not "
                "supported (the shards' gradients keep the shards' dtype)"
            )
        for name, value in [
            ("param_init_fn", param_init_fn),
            ("device_mesh", device_mesh),
        ]:
            if value is not None:
                raise NotImplementedError(f"FullyShardedDataParallel: {name} is not supported")
        self._replicate_group = None  # the hybrid strategies' replicas of this rank's shard
        if strategy in _HYBRID:
            intra, inter = process_group if process_group is not None else _hybrid_groups()
            self.process_group, inter = c10d._group(intra), c10d._group(inter)
            if inter.size() > 1:
                self._replicate_group = inter
            self._root_group = c10d._group(None)  # every rank holding a part of the model
        else:
            self.process_group = c10d._group(process_group)
            self._root_group = self.process_group
        self.world_size = self.process_group.size()
        self.rank = self.process_group.rank()
        self.sharding_strategy = strategy
        self._mode = _HYBRID.get(strategy, strategy)  # how a unit shards within its group
        self.mixed_precision = mixed_precision
        self.cpu_offload = cpu_offload or CPUOffload()
        self._sync = True  # False inside no_sync()
        self._grad_accum = None  # the full gradient accumulated under no_sync()
        self._is_root = None  # decided by the first forward
        self._state_dict_type = StateDictType.FULL_STATE_DICT
        self._state_dict_config = FullStateDictConfig()
        ignored = {
            id(m)
            for root in [*(ignored_modules or ()), *(ignored_states or ())]
            if isinstance(root, Module)
            for m in root.modules()
        }
        self._ignored = ignored
        if device_id is not None:
            module = module.to(device_id if not isinstance(device_id, int) else f"gpu:{device_id}")
        if sync_module_states:
            with no_grad():
                src = self._root_group.ranks[0]
                for t in [*module.parameters(), *module.buffers()]:
                    c10d.broadcast(t, src=src, group=self._root_group)
        policy = _as_callable(auto_wrap_policy)
        if policy is not None:
            kwargs = dict(
                process_group=(self.process_group, inter)
                if strategy in _HYBRID
                else self.process_group,
                sharding_strategy=strategy,
                cpu_offload=cpu_offload,
                mixed_precision=mixed_precision,
                ignored_modules=[m for m in module.modules() if id(m) in ignored],
            )
            module, _ = _recursive_wrap(
                module,
                policy,
                lambda m: FullyShardedDataParallel(m, **kwargs),
                ignored,
                only_wrap_children=True,
            )
        self._fsdp_wrapped_module = module
        self._flatten(module)
        if mixed_precision is not None and mixed_precision.buffer_dtype is not None:
            for m in module.modules():
                if id(m) in ignored:
                    continue
                for name, b in m._buffers.items():
                    if b is not None and b.is_floating_point():
                        m._buffers[name] = b.to(mixed_precision.buffer_dtype)

    # ---- construction ---------------------------------------------------------------------

    def _own_modules(self, module, prefix=""):
        """(prefix, module) of ``module`` and its descendants outside nested units."""
        if id(module) in self._ignored:
            return
        yield prefix, module
        for name, child in module._modules.items():
            if child is None or isinstance(child, FullyShardedDataParallel):
                continue
            yield from self._own_modules(child, prefix + name + ".")

    def _flatten(self, module):
        infos, by_id, names = [], {}, {}
        offset = 0
        for prefix, m in self._own_modules(module):
            names.setdefault(id(m), list(m._parameters))
            for name, p in list(m._parameters.items()):
                if p is None:
                    continue
                if id(p) not in by_id:
                    info = _ParamInfo(
                        prefix + name, tuple(p.shape), p.numel(), offset, p.requires_grad
                    )
                    info.param = p
                    by_id[id(p)] = info
                    infos.append(info)
                    offset += p.numel()
                slot = (m, name)
                if all(s[0] is not m or s[1] != name for s in by_id[id(p)].slots):
                    by_id[id(p)].slots.append(slot)
        self._infos = infos
        # Each module's original parameter names, in registration order (for state dicts).
        self._orig_param_names = names
        if not infos:
            self._flat_param = None
            return
        dtypes = {i.param.dtype for i in infos}
        if len(dtypes) > 1:
            raise ValueError(
                "FullyShardedDataParallel: the parameters of one unit must share a dtype, but "
                f"got {sorted(str(d) for d in dtypes)} (wrap them in different units)"
            )
        if len({i.requires_grad for i in infos}) > 1:
            raise ValueError(
                "FullyShardedDataParallel: the parameters of one unit must all require grad or "
                "all not (wrap frozen modules in their own unit)"
            )
        first = infos[0].param
        self._dtype, self._device = first.dtype, first.device
        self._numel = offset
        if self.sharding_strategy is ShardingStrategy.NO_SHARD:
            # Every rank keeps the whole buffer; "gathering" it allocates nothing.
            self._shard_numel, padded, start, self._full_bytes = offset, offset, 0, 0
        else:
            self._shard_numel = -(-offset // self.world_size)
            padded = self._shard_numel * self.world_size
            self._full_bytes = padded * first.element_size()
            start = self.rank * self._shard_numel
        self._shard_offset = start
        with no_grad():
            flat = _rumus.cat([i.param.detach().reshape(-1) for i in infos])
            if padded > offset:
                pad = _rumus.zeros(padded - offset, dtype=self._dtype, device=self._device)
                flat = _rumus.cat([flat, pad])
            shard = flat[start : start + self._shard_numel].clone()
            if self.cpu_offload.offload_params:
                shard = shard.cpu()
        from ...nn import Parameter

        self._flat_param = Parameter(shard, requires_grad=infos[0].requires_grad)
        _account(self._shard_numel * first.element_size())
        self._freed = _rumus.empty(0, dtype=self._dtype, device=self._device)
        for info in infos:
            for m, name in info.slots:
                del m._parameters[name]
            del info.param
        self._drop_views()

    # ---- gather / free --------------------------------------------------------------------

    def _all_gather(self, shard):
        if self.sharding_strategy is ShardingStrategy.NO_SHARD:
            full = shard.detach()
        else:
            full = _rumus.empty(
                self._shard_numel * self.world_size, dtype=shard.dtype, device=shard.device
            )
            c10d.all_gather_into_tensor(full, shard.detach(), group=self.process_group)
        _account(self._full_bytes)
        if self.cpu_offload.offload_params and full.device != self._device:
            full = full.to(self._device)
        return full

    def _compute(self, full):
        """The gathered buffer in the dtype of the computation (MixedPrecision's
        ``param_dtype``), differentiably."""
        mp = self.mixed_precision
        if mp is not None and mp.param_dtype is not None and mp.param_dtype != full.dtype:
            return full.to(mp.param_dtype)
        return full

    def _set_views(self, full):
        for info in self._infos:
            view = full[info.offset : info.offset + info.numel].view(info.shape)
            for m, name in info.slots:
                m.__dict__[name] = view

    def _drop_views(self):
        # Outside the unit's forward an original parameter is a tensor with no elements (as
        # PyTorch's freed parameters), so code reading ``module.weight`` still finds one.
        for info in self._infos:
            for m, name in info.slots:
                m.__dict__[name] = self._freed

    def forward(self, *args, **kwargs):
        """Gathers this unit's parameters, runs the wrapped module and frees them (see the
        module docstring); nested units do the same inside.

        Args:
            *args: the wrapped module's positional arguments.
            **kwargs: its keyword arguments (not differentiated).

        Returns:
            The wrapped module's output.
        """
        if self._is_root is None:
            for u in self.fsdp_modules(self):
                u._is_root = u is self
        mp = self.mixed_precision
        if mp is not None and mp.param_dtype is not None:
            if mp.cast_forward_inputs or (self._is_root and mp.cast_root_forward_inputs):
                args = _cast_inputs(args, mp.param_dtype)
                kwargs = dict(zip(kwargs, _cast_inputs(kwargs.values(), mp.param_dtype)))
        if self._flat_param is None:
            return self._fsdp_wrapped_module(*args, **kwargs)
        grad = _rumus.is_grad_enabled() and self._flat_param.requires_grad
        # FULL_SHARD frees the gathered buffer after forward and recomputes in backward;
        # the other strategies keep it (in the graph) until backward.
        recomputed = grad and self._mode is ShardingStrategy.FULL_SHARD
        calls = [0]

        def run(*inputs):
            recompute = calls[0] > 0
            calls[0] += 1
            if grad:
                release = recompute or not recomputed
                full = _GatherFlat.apply(self._flat_param, self, release)
            else:
                full = self._all_gather(self._flat_param)
                release = False
            self._set_views(self._compute(full))
            try:
                return self._fsdp_wrapped_module(*inputs, **kwargs)
            finally:
                self._drop_views()
                if not release:
                    _account(-self._full_bytes)

        if recomputed:
            return checkpoint(run, *args, use_reentrant=False)
        return run(*args)

    @contextlib.contextmanager
    def no_sync(self):
        """Inside the block, backward accumulates each unit's full (unsharded) gradient
        locally, with no communication; the first backward after the block adds it to its
        own and reduces the sum (gradient accumulation: the shards' ``.grad`` then equals a
        synchronized backward of all the micro-batches). Costs one full gradient buffer per
        unit meanwhile. Use it on the root."""
        units = self.fsdp_modules(self)
        previous = [u._sync for u in units]
        for u in units:
            u._sync = False
        try:
            yield
        finally:
            for u, sync in zip(units, previous):
                u._sync = sync

    # ---- access ---------------------------------------------------------------------------

    @property
    def module(self):
        """The wrapped module."""
        return self._fsdp_wrapped_module

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "_fsdp_wrapped_module":
                raise
            return getattr(self._fsdp_wrapped_module, name)

    def __getitem__(self, key):
        return self._fsdp_wrapped_module.__getitem__(key)

    @staticmethod
    def fsdp_modules(module, root_only=False):
        """The FSDP units in ``module`` (itself included), outermost first.

        Args:
            module (Module): the module to search.
            root_only (bool): only the outermost units.
        """
        units = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        if root_only:
            inner = {id(m) for u in units for m in u._fsdp_wrapped_module.modules() if m is not u}
            units = [u for u in units if id(u) not in inner]
        return units

    @staticmethod
    @contextlib.contextmanager
    def summon_full_params(
        module,
        recurse=True,
        writeback=True,
        rank0_only=False,
        offload_to_cpu=False,
        with_grads=False,
    ):
        """Inside the block, the units' original parameters are full tensors on their modules
        (gathered on every rank); with ``writeback`` changes to them are copied back into the
        shards on exit.

        Args:
            module (Module): an FSDP model (or a module containing FSDP units).
            recurse (bool): include nested units (else only ``module``'s own).
            writeback (bool): copy the full parameters back into the shards on exit.
            rank0_only (bool): accepted; every rank gets the full parameters.
            offload_to_cpu (bool): accepted; the parameters stay on their device.
            with_grads (bool): not supported (must be False).
        """
        if with_grads:
            raise NotImplementedError("summon_full_params: with_grads is not supported")
        units = FullyShardedDataParallel.fsdp_modules(module) if recurse else [module]
        units = [u for u in units if u._flat_param is not None]
        fulls = []
        try:
            with no_grad():
                for u in units:
                    full = u._all_gather(u._flat_param)
                    u._set_views(full)
                    fulls.append(full)
            yield
            if writeback:
                with no_grad():
                    for u, full in zip(units, fulls):
                        start = u._shard_offset
                        u._flat_param.copy_(full[start : start + u._shard_numel])
        finally:
            for u in units[: len(fulls)]:
                u._drop_views()
                _account(-u._full_bytes)

    # ---- state dicts ----------------------------------------------------------------------

    @staticmethod
    def set_state_dict_type(
        module, state_dict_type, state_dict_config=None, optim_state_dict_config=None
    ):
        """Sets what ``state_dict()`` returns on every unit in ``module``; returns the
        previous (type, config).

        Args:
            module (Module): the FSDP model.
            state_dict_type (StateDictType): the kind of state dict.
            state_dict_config (StateDictConfig, optional): its options.
            optim_state_dict_config (optional): accepted, unused.
        """
        if not isinstance(state_dict_type, StateDictType):
            raise TypeError(f"state_dict_type must be a StateDictType, got {state_dict_type!r}")
        if state_dict_config is None:
            state_dict_config = {
                StateDictType.FULL_STATE_DICT: FullStateDictConfig,
                StateDictType.SHARDED_STATE_DICT: ShardedStateDictConfig,
            }.get(state_dict_type, StateDictConfig)()
        units = FullyShardedDataParallel.fsdp_modules(module)
        if not units:
            raise ValueError("set_state_dict_type: the module contains no FSDP unit")
        if state_dict_type is StateDictType.SHARDED_STATE_DICT and any(
            u.sharding_strategy is ShardingStrategy.NO_SHARD or u._replicate_group is not None
            for u in units
        ):
            raise NotImplementedError(
                "SHARDED_STATE_DICT of a NO_SHARD or replicated HYBRID model is not supported "
                "(several ranks hold the same piece): use FULL_STATE_DICT, or LOCAL_STATE_DICT"
            )
        previous = (units[0]._state_dict_type, units[0]._state_dict_config)
        for u in units:
            u._state_dict_type, u._state_dict_config = state_dict_type, state_dict_config
        return previous

    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(
        module, state_dict_type, state_dict_config=None, optim_state_dict_config=None
    ):
        """Context manager: ``state_dict()``/``load_state_dict()`` of the units in ``module``
        use ``state_dict_type`` inside the block.

        Args:
            module (Module): the FSDP model.
            state_dict_type (StateDictType): the kind of state dict.
            state_dict_config (StateDictConfig, optional): its options.
            optim_state_dict_config (optional): accepted, unused.
        """
        previous = FullyShardedDataParallel.set_state_dict_type(
            module, state_dict_type, state_dict_config
        )
        try:
            yield
        finally:
            FullyShardedDataParallel.set_state_dict_type(module, *previous)

    def _entries(self):
        """(key, unit, info) for parameters and (key, module, name) for persistent buffers, in
        the order of the original module's state_dict, with the original keys."""
        out = []

        def walk(m, prefix, unit):
            if isinstance(m, FullyShardedDataParallel):
                unit = m
                m = m._fsdp_wrapped_module
            by_slot = {(id(mod), name): info for info in unit._infos for mod, name in info.slots}
            for name in unit._orig_param_names.get(id(m), list(m._parameters)):
                info = by_slot.get((id(m), name))
                if info is not None:
                    out.append((prefix + name, "param", unit, info))
                elif m._parameters.get(name) is not None:
                    out.append((prefix + name, "plain", m, name))
            for name, b in m._buffers.items():
                if b is not None and name not in m._non_persistent_buffers_set:
                    out.append((prefix + name, "buffer", m, name))
            for name, child in m._modules.items():
                if child is not None:
                    walk(child, prefix + name + ".", unit)

        walk(self, "", self)
        return out

    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        """The state dict of the kind set by :meth:`state_dict_type` (default
        ``FULL_STATE_DICT``: every parameter gathered, under the original module's keys).

        Args:
            destination (dict, optional): the dict to fill.
            prefix (str): prepended to every key.
            keep_vars (bool): for ``LOCAL_STATE_DICT``: keep the shards attached to autograd.

        Returns:
            dict: an OrderedDict (empty on ranks other than 0 with ``rank0_only``).
        """
        kind, config = self._state_dict_type, self._state_dict_config
        if kind is StateDictType.LOCAL_STATE_DICT:
            return super().state_dict(destination=destination, prefix=prefix, keep_vars=keep_vars)
        out = OrderedDict() if destination is None else destination
        full = kind is StateDictType.FULL_STATE_DICT
        keep = not (full and getattr(config, "rank0_only", False)) or self._root_group.rank() == 0
        cpu = config.offload_to_cpu
        gathered = {}
        with no_grad():
            for key, what, owner, info in self._entries():
                if what == "param":
                    unit = owner
                    if full:
                        if id(unit) not in gathered:
                            gathered.clear()  # one unit's full buffer at a time
                            gathered[id(unit)] = unit._all_gather(unit._flat_param)
                            _account(-unit._full_bytes)
                        flat = gathered[id(unit)]
                        value = (
                            flat[info.offset : info.offset + info.numel].view(info.shape).clone()
                        )
                    else:
                        value = unit._sharded(info)
                else:
                    value = getattr(owner, info).detach()
                if keep:
                    out[prefix + key] = (
                        value.cpu() if cpu and not isinstance(value, ShardedTensor) else value
                    )
        return out

    def _sharded(self, info, flat=None):
        """``info``'s piece on this rank of the shard (or of ``flat``, shaped like the shard),
        as a ShardedTensor sharing its memory."""
        lo = self._shard_offset
        a = min(max(info.offset, lo), lo + self._shard_numel)
        b = min(max(info.offset + info.numel, lo), lo + self._shard_numel)
        local = (self._flat_param if flat is None else flat).detach()[a - lo : b - lo]
        return ShardedTensor(local, info.shape, max(a - info.offset, 0) if b > a else 0)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Loads a state dict of the kind set by :meth:`state_dict_type`: full tensors under
        the original keys (each rank keeps its slice; with ``rank0_only`` rank 0's dict is
        broadcast), ShardedTensors holding this rank's pieces, or the local flat shards.

        Args:
            state_dict (dict): the state.
            strict (bool): missing or unexpected keys raise RuntimeError.
            assign (bool): not supported for sharded parameters (must be False).

        Returns:
            NamedTuple: ``missing_keys`` and ``unexpected_keys``.
        """
        kind, config = self._state_dict_type, self._state_dict_config
        if kind is StateDictType.LOCAL_STATE_DICT:
            return super().load_state_dict(state_dict, strict=strict, assign=assign)
        from ...nn.modules.module import _IncompatibleKeys

        entries = self._entries()
        full = kind is StateDictType.FULL_STATE_DICT
        if full and getattr(config, "rank0_only", False):
            box = [dict(state_dict) if self._root_group.rank() == 0 else None]
            c10d.broadcast_object_list(box, src=self._root_group.ranks[0], group=self._root_group)
            state_dict = box[0]
        keys = {e[0] for e in entries}
        missing = [e[0] for e in entries if e[0] not in state_dict]
        unexpected = [k for k in state_dict if k not in keys]
        if strict and (missing or unexpected):
            raise RuntimeError(
                "Error(s) in loading state_dict for FullyShardedDataParallel: "
                f"missing keys {missing}, unexpected keys {unexpected}"
            )
        with no_grad():
            for key, what, owner, info in entries:
                if key not in state_dict:
                    continue
                value = state_dict[key]
                if what == "param":
                    owner._load_param(info, value, key)
                else:
                    target = getattr(owner, info)
                    if tuple(value.shape) != tuple(target.shape):
                        raise RuntimeError(
                            f"size mismatch for {key}: copying a param with shape "
                            f"{tuple(value.shape)}, the shape in the current model is "
                            f"{tuple(target.shape)}"
                        )
                    target.copy_(value.to(target.device, target.dtype))
        return _IncompatibleKeys(missing, unexpected)

    def _load_param(self, info, value, key):
        lo = self._shard_offset
        a = min(max(info.offset, lo), lo + self._shard_numel)
        b = min(max(info.offset + info.numel, lo), lo + self._shard_numel)
        if isinstance(value, ShardedTensor):
            if value.size() != info.shape:
                raise RuntimeError(
                    f"size mismatch for {key}: the sharded value has shape {value.size()}, the "
                    f"parameter {info.shape}"
                )
            piece = value.local_tensor()
            if piece.numel() != b - a or (b > a and value.offset != a - info.offset):
                raise RuntimeError(
                    f"{key}: the ShardedTensor holds elements {value.offset}.."
                    f"{value.offset + piece.numel()}, but this rank's shard holds "
                    f"{a - info.offset}..{b - info.offset} (load it with "
                    "rumus.distributed.checkpoint.load into this model's sharded state dict)"
                )
        else:
            if tuple(value.shape) != info.shape:
                raise RuntimeError(
                    f"size mismatch for {key}: copying a param with shape {tuple(value.shape)}, "
                    f"the shape in the current model is {info.shape}"
                )
            piece = value.reshape(-1)[a - info.offset : b - info.offset]
        if b > a:
            self._flat_param.detach()[a - lo : b - lo].copy_(
                piece.to(self._flat_param.device, self._flat_param.dtype)
            )

    # ---- optimizer state ------------------------------------------------------------------

    @staticmethod
    def optim_state_dict(model, optim, optim_state_dict=None, group=None):
        """The optimizer's state keyed by the original parameters' names: full tensors
        (gathered) under ``FULL_STATE_DICT``, ``ShardedTensor`` pieces under
        ``SHARDED_STATE_DICT`` (what ``rumus.distributed.checkpoint.save`` takes). Call it on
        every rank.

        Args:
            model (FullyShardedDataParallel): the root FSDP model.
            optim (Optimizer): the optimizer built on ``model.parameters()``.
            optim_state_dict (dict, optional): ``optim.state_dict()`` (taken when None).
            group (ProcessGroup, optional): unused (the model's group is used).

        Returns:
            dict: ``{"state": {name: {...}}, "param_groups": [...]}``.
        """
        return _optim_state.optim_state_dict(model, optim, optim_state_dict, group)

    @staticmethod
    def optim_state_dict_to_load(
        model, optim, optim_state_dict, is_named_optimizer=False, load_directly=False, group=None
    ):
        """Turns what :meth:`optim_state_dict` returned (full tensors, or ShardedTensor pieces
        filled by ``rumus.distributed.checkpoint.load``) into this rank's
        ``optim.load_state_dict`` input.

        Args:
            model (FullyShardedDataParallel): the root FSDP model.
            optim (Optimizer): the optimizer built on ``model.parameters()``.
            optim_state_dict (dict): the state keyed by parameter names.
            is_named_optimizer (bool): must be False.
            load_directly (bool): also call ``optim.load_state_dict``.
            group (ProcessGroup, optional): unused.

        Returns:
            dict: the optimizer state dict of this rank's shards.
        """
        return _optim_state.optim_state_dict_to_load(
            model, optim, optim_state_dict, is_named_optimizer, load_directly, group
        )

    # ---- utilities ------------------------------------------------------------------------

    def clip_grad_norm_(self, max_norm, norm_type=2.0):
        """Clips the gradients of all shards by their total norm across ranks (call it on the
        root, on every rank).

        Args:
            max_norm (float): the largest allowed norm.
            norm_type (float): the p of the p-norm (``inf`` for the max norm).

        Returns:
            Tensor: the total norm before clipping.
        """
        norm_type = float(norm_type)
        grads = [p.grad for p in self.parameters() if p.grad is not None]
        if grads:
            flat = _rumus.cat([g.detach().reshape(-1).cpu().double() for g in grads])
        else:
            flat = _rumus.zeros(0, dtype=_rumus.float64)
        if norm_type == float("inf"):
            local = flat.abs().max() if flat.numel() else _rumus.tensor(0.0, dtype=_rumus.float64)
            total = local.reshape(1).clone()
            c10d.all_reduce(total, op=c10d.ReduceOp.MAX, group=self.process_group)
            total = total[0]
        else:
            total = (flat.abs() ** norm_type).sum().reshape(1).clone()
            if self.sharding_strategy is not ShardingStrategy.NO_SHARD:
                c10d.all_reduce(total, group=self.process_group)
            total = total[0] ** (1.0 / norm_type)
        coef = float(max_norm) / (float(total) + 1e-6)
        if coef < 1.0:
            with no_grad():
                for g in grads:
                    g.mul_(coef)
        return total.float()
