"""DistributedDataParallel: data-parallel training over the processes of a
``rumus.distributed`` process group (MPI).

Each rank runs the whole model on its share of the batch. At construction rank 0's
parameters and buffers are broadcast to every rank. During backward, a post-accumulate-grad
hook on each parameter counts the gradients that are ready; the parameters are grouped into
buckets of about ``bucket_cap_mb`` (in reverse registration order, roughly the order backward
produces their gradients), and a bucket is all-reduced asynchronously (MPI ``Iallreduce``) as
soon as all its gradients are ready, so communication overlaps with the rest of backward (a
helper thread polls the requests meanwhile: Open MPI advances a nonblocking collective only
inside MPI calls, see ``rumus.distributed._progress``).
Buckets are launched in the same order on every rank (MPI requires it). The engine has no
end-of-backward callback: the hook that launches the last bucket waits for all of them, then
gives each parameter the averaged gradient (sum / world size). The averaged gradients are
views of the bucket's memory (as with PyTorch's ``gradient_as_bucket_view=True``; the flag is
accepted either way). GPU gradients are staged through host memory.
"""

import contextlib

import numpy as np

from ... import _rumus
from ... import distributed as dist
from ...autograd.grad_mode import no_grad
from ...distributed import distributed_c10d as c10d
from ...distributed._progress import Progress
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class _Bucket:
    def __init__(self, indices, dtype):
        self.indices = indices
        self.dtype = dtype
        self.pending = 0
        self.buffer = None
        self.request = None


class DistributedDataParallel(Module):
    """Wraps ``module`` for data-parallel training; the wrapped module is ``self.module`` and
    the state_dict keys carry the ``module.`` prefix, as in PyTorch."""

    def __init__(
        self,
        module,
        device_ids=None,
        output_device=None,
        dim=0,
        broadcast_buffers=True,
        process_group=None,
        bucket_cap_mb=None,
        find_unused_parameters=False,
        check_reduction=False,
        gradient_as_bucket_view=False,
        static_graph=False,
    ):
        super().__init__()
        if not dist.is_initialized():
            raise RuntimeError(
                "DistributedDataParallel needs the default process group: call "
                "rumus.distributed.init_process_group first"
            )
        if not isinstance(module, Module):
            raise TypeError(f"module should be an nn.Module, but got {type(module).__name__}")
        if bucket_cap_mb is None:
            bucket_cap_mb = 25
        if bucket_cap_mb <= 0:
            raise ValueError(f"bucket_cap_mb should be positive, but got {bucket_cap_mb}")
        self.module = module
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.process_group = process_group if process_group is not None else c10d._world()
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.bucket_bytes_cap = int(bucket_cap_mb * 1024 * 1024)

        params, seen = [], set()
        for p in module.parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                params.append(p)
        if not params:
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any parameter "
                "that requires a gradient."
            )
        self._params = params
        self._sync_module_states()
        self._buckets, self._bucket_of = self._make_buckets(params)
        self._hooks = [
            p.register_post_accumulate_grad_hook(self._hook(i)) for i, p in enumerate(params)
        ]
        self._active = False  # a forward with gradient sync is waiting for its backward
        self._started = False  # some gradient of that backward arrived
        self._used = None
        self._progress = Progress(c10d._mpi())

    # ---- setup ----------------------------------------------------------------------------

    def _sync_module_states(self):
        with no_grad():
            for t in [*self.module.parameters(), *self.module.buffers()]:
                dist.broadcast(t, src=self.process_group.ranks[0], group=self.process_group)

    def _make_buckets(self, params):
        """Reverse registration order, split when the byte cap is reached or the dtype or
        device changes (a bucket is one flat buffer of one dtype)."""
        buckets, current, size, key = [], [], 0, None
        for i in reversed(range(len(params))):
            p = params[i]
            k = (p.dtype, p.device.type)
            nbytes = p.numel() * p.element_size()
            if current and (k != key or size + nbytes > self.bucket_bytes_cap):
                buckets.append(current)
                current, size = [], 0
            current.append(i)
            size += nbytes
            key = k
        buckets.append(current)
        bucket_of = {}
        out = []
        for b, indices in enumerate(buckets):
            for i in indices:
                bucket_of[i] = b
            out.append(_Bucket(indices, params[indices[0]].dtype))
        return out, bucket_of

    # ---- forward ----------------------------------------------------------------------------

    def forward(self, *inputs, **kwargs):
        if self._active and self._started:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your module has parameters that were not "
                "used in producing loss. Pass find_unused_parameters=True to "
                "DistributedDataParallel, and make sure every rank's forward output takes part "
                "in the loss."
            )
        if self.broadcast_buffers and self.process_group.size() > 1:
            with no_grad():
                for b in self.module.buffers():
                    dist.broadcast(b, src=self.process_group.ranks[0], group=self.process_group)
        output = self.module(*inputs, **kwargs)
        if _rumus.is_grad_enabled() and self.require_backward_grad_sync:
            self._prepare(output)
        elif self._active:
            self._drain()
            self._active = False
        return output

    def _drain(self):
        """Completes what a forward without backward left in flight (the same on every rank)."""
        self._wait()

    def _prepare(self, output):
        if self._active:
            self._drain()
        self._active, self._started = True, False
        self._ready = [False] * len(self._params)
        self._next = 0
        for bucket in self._buckets:
            bucket.pending = len(bucket.indices)
            bucket.buffer = bucket.request = None
        self._used = None
        if self.find_unused_parameters:
            used = self._reachable(output)
            self._used = np.array([int(u) for u in used], np.int32)
            # Whether a parameter was used on any rank: launched now, the same on every rank.
            self._used_request = self.process_group.comm.Iallreduce(
                c10d._mpi().IN_PLACE, self._used, c10d._mpi().SUM
            )
            self._progress.add(self._used_request)
            for i, u in enumerate(used):
                if not u:
                    self._mark_ready(i)

    def _reachable(self, output):
        """Which parameters the autograd graph of ``output`` reaches."""
        by_ptr = {p.data_ptr(): i for i, p in enumerate(self._params)}
        used = [False] * len(self._params)
        stack = [t.grad_fn for t in _tensors(output) if t.grad_fn is not None]
        seen = set()  # nodes compare and hash by the engine's node, not the Python wrapper
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            if node.name() == "AccumulateGrad":
                i = by_ptr.get(node.variable.data_ptr())
                if i is not None:
                    used[i] = True
                continue
            stack.extend(fn for fn, _ in node.next_functions)
        for t in _tensors(output):
            i = by_ptr.get(t.data_ptr()) if t.grad_fn is None and t.requires_grad else None
            if i is not None:
                used[i] = True
        return used

    # ---- backward ---------------------------------------------------------------------------

    def _hook(self, index):
        def hook(param):
            if self._active and not self._ready[index]:
                self._started = True
                self._mark_ready(index)
                self._progress.poll()

        return hook

    def _mark_ready(self, index):
        self._ready[index] = True
        bucket = self._buckets[self._bucket_of[index]]
        bucket.pending -= 1
        # Launch in bucket order, so that every rank issues the same sequence of collectives.
        while self._next < len(self._buckets) and self._buckets[self._next].pending == 0:
            self._launch(self._buckets[self._next])
            self._next += 1
        if self._next == len(self._buckets):
            self._finish()

    def _launch(self, bucket):
        parts = []
        for i in bucket.indices:
            p = self._params[i]
            g = p.grad
            if g is None:
                parts.append(np.zeros(p.numel(), _np_dtype(p)))
            else:
                parts.append(g.detach().cpu().numpy().reshape(-1))
        bucket.buffer = np.concatenate(parts)
        bucket.request = self.process_group.comm.Iallreduce(
            c10d._mpi().IN_PLACE, bucket.buffer, c10d._mpi().SUM
        )
        self._progress.add(bucket.request)

    def _wait(self):
        """Waits for the launched all-reduces (and the used-parameter one)."""
        self._progress.close()
        requests = [b.request for b in self._buckets if b.request is not None]
        if self._used is not None:
            requests.append(self._used_request)
        c10d._mpi().Request.Waitall(requests)

    def _finish(self):
        self._wait()
        globally_used = self._used
        world = self.process_group.size()
        for bucket in self._buckets:
            bucket.buffer /= world
            offset = 0
            for i in bucket.indices:
                p = self._params[i]
                n = p.numel()
                if globally_used is None or globally_used[i]:
                    view = bucket.buffer[offset : offset + n].reshape(tuple(p.shape))
                    grad = _rumus.from_numpy(view)
                    p.grad = grad if p.device.type == "cpu" else grad.to(p.device)
                offset += n
            bucket.buffer = bucket.request = None
        self._active = False

    # ---- gradient accumulation --------------------------------------------------------------

    @contextlib.contextmanager
    def no_sync(self):
        """Within it, backward accumulates gradients locally without communication; the first
        backward after it all-reduces the accumulated gradients."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous


def _np_dtype(p):
    return np.dtype(str(p.dtype).replace("rumus.", ""))


def _tensors(obj):
    """The tensors in a forward's output (a tensor, or nested lists/tuples/dicts of them)."""
    if isinstance(obj, _rumus.Tensor):
        return [obj]
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, (list, tuple)):
        return [t for x in obj for t in _tensors(x)]
    return []
