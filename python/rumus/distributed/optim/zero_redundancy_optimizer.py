"""ZeroRedundancyOptimizer (ZeRO stage 1): the optimizer state is sharded across ranks.

Every rank holds all parameters and computes all gradients (typically under
DistributedDataParallel), but keeps optimizer state only for the parameters it owns. The
parameters are assigned greedily, as in PyTorch: within each parameter group, largest first,
each to the rank that owns the fewest elements so far (ties go to the lowest rank). A step
updates the owned parameters with a local instance of ``optimizer_class``, then each owner
broadcasts its updated parameters to the other ranks.
"""

from typing import Any, Callable, Optional

import numpy as np

from ... import _rumus
from ...autograd.grad_mode import no_grad
from ...optim.optimizer import Optimizer
from .. import _watchdog
from .. import distributed_c10d as c10d

__all__ = ["ZeroRedundancyOptimizer"]

# Options that are not hyperparameters and are not synced between the wrapper and the local
# optimizer.
_NOT_SYNCED = ("params",)


class ZeroRedundancyOptimizer(Optimizer):
    """Wraps ``optimizer_class`` so that each rank keeps the state of its shard of the
    parameters only (ZeRO stage 1), as ``torch.distributed.optim.ZeroRedundancyOptimizer``.

    ``param_groups`` holds every parameter (so learning-rate schedulers work as usual); the
    local optimizer (``optim``) holds this rank's shard. ``state_dict()`` needs a preceding
    ``consolidate_state_dict(to)`` on every rank and is then available on rank ``to``; it has
    the layout of a plain ``optimizer_class`` state dict over all parameters, so it loads into
    a ZeroRedundancyOptimizer of any world size (or, on one process, a plain optimizer).

    Args:
        params (iterable): tensors or dicts defining parameter groups, the same on every rank.
        optimizer_class (type): the local optimizer's class, e.g. ``rumus.optim.Adam``.
        process_group (ProcessGroup, optional): the ranks sharing the state (default: all).
        parameters_as_bucket_view (bool): each owner packs its parameters into one contiguous
            buffer and broadcasts that (one call per rank instead of one per parameter).
        overlap_with_ddp (bool): not supported (must be False).
        **defaults: keyword arguments of ``optimizer_class`` (``lr`` ...).
    """

    def __init__(
        self,
        params,
        optimizer_class: type,
        process_group=None,
        parameters_as_bucket_view: bool = False,
        overlap_with_ddp: bool = False,
        **defaults: Any,
    ) -> None:
        if overlap_with_ddp:
            raise NotImplementedError("ZeroRedundancyOptimizer: overlap_with_ddp is not supported")
        if not (isinstance(optimizer_class, type) and issubclass(optimizer_class, Optimizer)):
            raise TypeError(
                "ZeroRedundancyOptimizer: optimizer_class must be an Optimizer subclass, but got "
                f"{optimizer_class!r}"
            )
        self._initialized = False
        self.process_group = c10d._group(process_group)
        self.world_size = self.process_group.size()
        self.rank = self.process_group.rank()
        self.global_rank = self.process_group.ranks[self.rank]
        self._optim_defaults = defaults
        self._optim_constructor = optimizer_class
        self.parameters_as_bucket_view = parameters_as_bucket_view
        super().__init__(params, defaults)
        self._partition = None
        self.optim = optimizer_class(self._local_groups(), **defaults)
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        self._all_state_dicts = None
        self._initialized = True

    # ---- partition --------------------------------------------------------------------

    def _partition_parameters(self):
        """For each rank, one list of parameters per parameter group."""
        if self._partition is None:
            sizes = [0] * self.world_size
            per_rank = [[] for _ in range(self.world_size)]
            for group in self.param_groups:
                mine = [[] for _ in range(self.world_size)]
                for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
                    r = sizes.index(min(sizes))
                    mine[r].append(p)
                    sizes[r] += p.numel()
                for r in range(self.world_size):
                    per_rank[r].append(mine[r])
            self._partition = per_rank
        return self._partition

    def _local_groups(self):
        mine = self._partition_parameters()[self.rank]
        return [
            {**{k: v for k, v in g.items() if k != "params"}, "params": ps}
            for g, ps in zip(self.param_groups, mine)
        ]

    def _owner(self):
        """Owning group rank of every parameter, keyed by id."""
        return {
            id(p): r
            for r, groups in enumerate(self._partition_parameters())
            for ps in groups
            for p in ps
        }

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Adds a parameter group (on every rank) and partitions its parameters.

        Args:
            param_group (dict): ``"params"`` and the group's options.
        """
        super().add_param_group(param_group)
        if self._initialized:
            # Sizes carry over between groups, so the earlier groups keep their partition.
            self._partition = None
            self.optim.add_param_group(self._local_groups()[-1])

    @staticmethod
    def _sync_param_groups(src, dst):
        for s, d in zip(src, dst):
            for k, v in s.items():
                if k not in _NOT_SYNCED:
                    d[k] = v

    # ---- step -------------------------------------------------------------------------

    @no_grad()
    def step(self, closure: Optional[Callable[[], Any]] = None, **kwargs: Any) -> Any:
        """Steps this rank's shard with the local optimizer, then broadcasts every shard's
        updated parameters from its owner.

        Args:
            closure (callable, optional): re-evaluates the model and returns the loss.
            **kwargs: passed to the local optimizer's ``step``.

        Returns:
            The closure's loss, or None.
        """
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        if closure is not None:
            loss = self.optim.step(closure=closure, **kwargs)
        else:
            loss = self.optim.step(**kwargs)
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        self._sync_parameters()
        return loss

    def _sync_parameters(self):
        if self.world_size == 1:
            return
        ranks = self.process_group.ranks
        if self.parameters_as_bucket_view:
            for r, groups in enumerate(self._partition_parameters()):
                owned = [p for ps in groups for p in ps]
                if owned:
                    self._broadcast_bucket(owned, ranks[r])
            return
        owner = self._owner()
        work = [
            c10d.broadcast(p, ranks[owner[id(p)]], group=self.process_group, async_op=True)
            for g in self.param_groups
            for p in g["params"]
        ]
        for w in work:
            w.wait()

    def _broadcast_bucket(self, owned, src):
        # One contiguous buffer per (owner, dtype): one broadcast each, then unpacked.
        by_dtype = {}
        for p in owned:
            by_dtype.setdefault(p.dtype, []).append(p)
        for ps in by_dtype.values():
            if src == self.global_rank:
                bucket = _rumus.cat([p.detach().reshape(-1).cpu() for p in ps])
            else:
                bucket = _rumus.zeros(sum(p.numel() for p in ps), dtype=ps[0].dtype)
            c10d.broadcast(bucket, src, group=self.process_group)
            if src != self.global_rank:
                offset = 0
                for p in ps:
                    n = p.numel()
                    p.copy_(bucket[offset : offset + n].reshape(p.shape).to(p.device))
                    offset += n

    # ---- state dicts ------------------------------------------------------------------

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Collects every rank's shard of the optimizer state on rank ``to`` (call it on every
        rank); ``state_dict()`` is then available there.

        Args:
            to (int): the global rank that receives the state.
        """
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        root = self.process_group._group_rank(to, "to")
        local = _to_numpy(self.optim.state_dict())
        with _watchdog.watch("consolidate_state_dict"):
            gathered = self.process_group.comm.gather(local, root=root)
        self._all_state_dicts = gathered if self.rank == root else None

    def state_dict(self) -> dict[str, Any]:
        """The full optimizer state, in the layout of a plain optimizer over all parameters.
        Only on the rank given to the last ``consolidate_state_dict``.

        Returns:
            dict: ``{"state": ..., "param_groups": ...}``.
        """
        if self._all_state_dicts is None:
            raise RuntimeError(
                "Optimizer state has not been consolidated on this rank. Please call "
                "`consolidate_state_dict(to=...)` on all ranks beforehand if you meant to "
                "save the global state."
            )
        index = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            for p in g["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in g["params"]]
            groups.append(packed)
        state = {}
        for r, local in enumerate(self._all_state_dicts):
            # The local optimizer numbered its parameters in its own group order.
            local_params = [p for ps in self._partition_parameters()[r] for p in ps]
            for k, v in local["state"].items():
                state[index[id(local_params[k])]] = _from_numpy(v)
        return {"state": dict(sorted(state.items())), "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads a full state (from ``state_dict()``); each rank keeps its shard's part.

        Args:
            state_dict (dict): the full optimizer state.
        """
        saved = state_dict["param_groups"]
        if len(saved) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups, saved)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group"
            )
        index = {}
        for s, g in zip(saved, self.param_groups):
            for k, p in zip(s["params"], g["params"]):
                index[id(p)] = k
        for g, s in zip(self.param_groups, saved):
            g.update({k: v for k, v in s.items() if k != "params"})
        mine = self._partition_parameters()[self.rank]
        local_state, local_groups, n = {}, [], 0
        for g, ps in zip(self.param_groups, mine):
            local_groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": []})
            for p in ps:
                if index[id(p)] in state_dict["state"]:
                    local_state[n] = _from_numpy(state_dict["state"][index[id(p)]])
                local_groups[-1]["params"].append(n)
                n += 1
        self.optim.load_state_dict({"state": local_state, "param_groups": local_groups})
        self._sync_param_groups(self.optim.param_groups, self.param_groups)


def _to_numpy(obj):
    """State tensors as NumPy arrays (with their dtype name), to pickle them between ranks."""
    if isinstance(obj, _rumus.Tensor):
        return ("__tensor__", obj.detach().cpu().numpy().copy(), obj.device.type)
    if isinstance(obj, dict):
        return {k: _to_numpy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_numpy(v) for v in obj)
    return obj


def _from_numpy(obj):
    if isinstance(obj, tuple) and len(obj) == 3 and obj[0] == "__tensor__":
        t = _rumus.from_numpy(np.ascontiguousarray(obj[1]))
        return t if obj[2] == "cpu" else t.to(obj[2])
    if isinstance(obj, dict):
        return {k: _from_numpy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_from_numpy(v) for v in obj)
    return obj
