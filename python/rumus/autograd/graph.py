"""The autograd graph seen from Python (PyTorch's ``torch.autograd.graph``): graph nodes and
their hooks, tensor gradient hooks, and hooks on the tensors saved for backward.

Tensor and node hooks live in the Rust graph (rust/autograd/hooks.rs): backward takes the GIL
back to run them, and an exception raised in a hook reaches the caller of ``backward()`` or
``grad()`` unchanged.

Saved-tensor hooks apply to every tensor a built-in op or a custom ``autograd.Function`` saves
for backward: they all go through one ``SavedTensor`` type in the engine (rust/autograd/
version.rs): the inputs/outputs saved by elementwise ops, matmul/linear, reductions (prod, max,
var, logsumexp, cumprod...), softmax, layer norm, where/clamp, sort/topk indices, the linalg
decompositions and solvers, and ``ctx.save_for_backward``. Ops whose backward needs no saved
tensor (add, sum, views, ``clone``, casts, device moves, average pooling, convolution unfolds)
call no hook, as in PyTorch where they save nothing either. Indexing, gather/scatter and max
pooling keep the element offsets they computed in the forward (a list on the CPU, an int64
tensor on the GPU) outside the hooks: derived bookkeeping, not a saved input.
"""

import weakref

from .. import _rumus
from .._rumus import Node, Tensor
from ..utils.hooks import RemovableHandle

__all__ = [
    "Node",
    "disable_saved_tensors_hooks",
    "save_on_cpu",
    "saved_tensors_hooks",
]


# ---- tensor hooks ------------------------------------------------------------------------


def _register_hook(self, hook):
    """Registers ``hook(grad) -> Tensor or None``, called when this tensor's gradient is computed.

    For a leaf it runs before the gradient is accumulated into ``.grad``; for a non-leaf
    before it flows on (and before ``retain_grad`` stores it). A returned tensor replaces
    the gradient. Hooks run in registration order.

    Args:
        hook: the function to call with the gradient.

    Returns:
        A ``RemovableHandle``.
    """
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    hooks = _rumus._tensor_hooks(self)
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def _register_post_accumulate_grad_hook(self, hook):
    """Registers ``hook(tensor) -> None`` on a leaf, run right after its ``.grad`` is accumulated.

    Leaves become ready in reverse order of use, as in PyTorch.

    Args:
        hook: the function to call with this tensor.

    Returns:
        A ``RemovableHandle``.
    """
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    hooks = _rumus._post_accumulate_grad_hooks(self)
    # Weakly: the engine owns the hook, and the hook must not keep the tensor alive.
    ref = weakref.ref(self)

    def call(leaf):
        t = ref()
        result = hook(leaf if t is None else t)
        if result is not None:
            raise RuntimeError("post accumulate grad hooks must return None")

    handle = RemovableHandle(hooks)
    hooks[handle.id] = call
    return handle


Tensor.register_hook = _register_hook
Tensor.register_post_accumulate_grad_hook = _register_post_accumulate_grad_hook


# ---- node hooks --------------------------------------------------------------------------


def _node_register_hook(self, fn):
    """Registers ``fn(grad_inputs, grad_outputs) -> tuple or None``, run after this node.

    It is called once the node computed the gradients of its inputs; a returned tuple
    replaces ``grad_inputs``.

    Args:
        fn: the hook.

    Returns:
        A ``RemovableHandle``.
    """
    hooks = _rumus._node_hooks(self)[1]
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle


def _node_register_prehook(self, fn):
    """Registers ``fn(grad_outputs) -> tuple or None``, called before this node runs.

    A returned tuple replaces ``grad_outputs``.

    Args:
        fn: the hook.

    Returns:
        A ``RemovableHandle``.
    """
    hooks = _rumus._node_hooks(self)[0]
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle


def _node_metadata(self):
    """A dict kept with the node for the lifetime of the graph, for the user's own data."""
    return _rumus._node_hooks(self)[2]


def _node_hooks_of(self):
    return tuple(_rumus._node_hooks(self)[1].values())


def _node_pre_hooks_of(self):
    return tuple(_rumus._node_hooks(self)[0].values())


Node.register_hook = _node_register_hook
Node.register_prehook = _node_register_prehook
Node.metadata = property(_node_metadata)
Node._hooks = _node_hooks_of
Node._pre_hooks = _node_pre_hooks_of


# ---- saved tensor hooks ------------------------------------------------------------------


class saved_tensors_hooks:
    """Context manager: hooks that pack and unpack the tensors saved for backward.

    While active, every tensor an op saves for backward is passed to ``pack_hook(tensor)``
    (run without grad mode) and the engine keeps what it returns instead; backward calls
    ``unpack_hook(packed)`` each time it reads the tensor, which must return a tensor of the
    same shape and dtype. Contexts nest (the innermost applies) and are per thread.

    Args:
        pack_hook: called with each saved tensor; returns what to keep.
        unpack_hook: called with what pack_hook returned; returns the tensor.
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _rumus._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)
        return self

    def __exit__(self, *exc):
        _rumus._pop_saved_tensors_hooks()


class save_on_cpu(saved_tensors_hooks):
    """Context manager: saved GPU tensors wait for backward on the CPU.

    They are copied back when backward reads them (trading transfers for GPU memory).
    CPU tensors are kept as they are.

    Args:
        pin_memory: accepted for PyTorch compatibility (rumus has no pinned memory).
        device_type: accepted for PyTorch compatibility (every GPU tensor is moved).
    """

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(t):
            if t.device.type == "cpu":
                return (None, t)
            return (t.device, t.cpu())

        def unpack(packed):
            device, t = packed
            return t if device is None else t.to(device)

        super().__init__(pack, unpack)
        self.pin_memory = pin_memory


class disable_saved_tensors_hooks:
    """Context manager: within it, entering ``saved_tensors_hooks`` raises and no pack hook runs.

    Args:
        error_message: the message of the RuntimeError.
    """

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        _rumus._push_disabled_saved_tensors_hooks(self.error_message)
        return self

    def __exit__(self, *exc):
        _rumus._pop_saved_tensors_hooks()
