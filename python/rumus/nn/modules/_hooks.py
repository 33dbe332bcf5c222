"""Module hooks (PyTorch's semantics): forward pre-hooks and hooks, full backward pre-hooks and
hooks, state-dict hooks, and the process-wide versions exported by ``nn.modules.module``.

Full backward hooks work as in PyTorch: the module's tensor inputs and outputs pass through an
identity autograd function whose graph nodes carry pre-hooks. The output node's pre-hook sees
``grad_output`` (and runs the backward pre-hooks); the input node's pre-hook sees
``grad_input`` and runs the backward hooks, whose return value replaces it."""

import warnings
from collections import OrderedDict
from typing import Any

from ... import _rumus
from ...autograd.function import Function
from ...utils.hooks import RemovableHandle

_Tensor = _rumus.Tensor

_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_forward_hooks_with_kwargs = OrderedDict()
_global_forward_hooks_always_called = OrderedDict()
_global_backward_pre_hooks = OrderedDict()
_global_backward_hooks = OrderedDict()

_HOOK_DICTS = (
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_backward_pre_hooks",
    "_backward_hooks",
    "_state_dict_pre_hooks",
    "_state_dict_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)


def register_module_forward_pre_hook(hook):
    """``hook(module, args)`` runs before the forward of every module (before the module's own
    pre-hooks); a non-None return replaces the args."""
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with
    ``with_kwargs``) runs after the forward of every module, before its own hooks."""
    handle = RemovableHandle(
        _global_forward_hooks,
        extra_dict=[_global_forward_hooks_with_kwargs, _global_forward_hooks_always_called],
    )
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_full_backward_pre_hook(hook):
    """``hook(module, grad_output)`` for every module, before its own backward pre-hooks."""
    handle = RemovableHandle(_global_backward_pre_hooks)
    _global_backward_pre_hooks[handle.id] = hook
    return handle


def register_module_full_backward_hook(hook):
    """``hook(module, grad_input, grad_output)`` for every module, before its own backward
    hooks."""
    handle = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    return handle


class _BackwardHookFunction(Function):
    """Identity on the module's tensors: its node is where the module's gradients are seen."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _pack_with_none(indices, values, size):
    res = [None] * size
    for i, v in zip(indices, values):
        res[i] = v
    return tuple(res)


def _unpack_none(indices, values):
    return tuple(values[i] for i in indices)


class BackwardHook:
    """Wires one call's full backward (pre-)hooks into the graph."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    @staticmethod
    def _apply_on_tensors(register, args):
        # Positions of the tensors that get a gradient (the identity node's outputs, in order).
        idx = [i for i, a in enumerate(args) if isinstance(a, _Tensor) and a.requires_grad]
        if not idx or not _rumus.is_grad_enabled():
            return args, None
        new = _BackwardHookFunction.apply(*[args[i] for i in idx])
        register(new[0].grad_fn)
        out = list(args)
        for i, t in zip(idx, new):
            out[i] = t
        return tuple(out), idx

    def setup_input_hook(self, args):
        def register(grad_fn):
            def hook(grad_input):
                if self.grad_outputs is None:
                    # The gradient reached the inputs without passing through the outputs.
                    return None
                res = _pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
                for user_hook in self.user_hooks:
                    out = user_hook(self.module, res, self.grad_outputs)
                    if out is None:
                        continue
                    if not isinstance(out, (tuple, list)):
                        out = (out,)
                    if len(out) != len(res):
                        raise RuntimeError(
                            "Backward hook returned an invalid number of grad_input, got "
                            f"{len(out)}, but expected {len(res)}"
                        )
                    res = tuple(out)
                self.grad_outputs = None
                return _unpack_none(self.input_tensors_index, res)

            grad_fn.register_prehook(hook)

        res, idx = self._apply_on_tensors(register, args)
        self.n_inputs = len(args)
        self.input_tensors_index = idx
        return res

    def setup_output_hook(self, result):
        def register(grad_fn):
            def hook(grad_output):
                self.grad_outputs = _pack_with_none(
                    self.output_tensors_index, grad_output, self.n_outputs
                )
                for user_pre_hook in self.user_pre_hooks:
                    out = user_pre_hook(self.module, self.grad_outputs)
                    if out is None:
                        continue
                    if not isinstance(out, (tuple, list)):
                        out = (out,)
                    if len(out) != len(self.grad_outputs):
                        raise RuntimeError(
                            "Backward pre hook returned an invalid number of grad_output, got "
                            f"{len(out)}, but expected {len(self.grad_outputs)}"
                        )
                    self.grad_outputs = tuple(out)
                if self.input_tensors_index is None:
                    # No input needs a gradient: the hooks run now, with grad_input all None.
                    grad_inputs = _pack_with_none([], [], self.n_inputs)
                    for user_hook in self.user_hooks:
                        res = user_hook(self.module, grad_inputs, self.grad_outputs)
                        if res is not None and not (
                            isinstance(res, tuple) and all(r is None for r in res)
                        ):
                            raise RuntimeError(
                                "Backward hook for Modules where no input requires gradient "
                                "should always return None or None for all gradients."
                            )
                    grad_outputs, self.grad_outputs = self.grad_outputs, None
                    return _unpack_none(self.output_tensors_index, grad_outputs)
                return _unpack_none(self.output_tensors_index, self.grad_outputs)

            grad_fn.register_prehook(hook)

        is_tuple = isinstance(result, tuple)
        args = result if is_tuple else (result,)
        res, idx = self._apply_on_tensors(register, args)
        self.n_outputs = len(args)
        self.output_tensors_index = idx
        return res if is_tuple else res[0]


class _ModuleHooks:
    """The hook half of ``Module``: registration methods and ``__call__``."""

    def _init_hooks(self):
        for name in _HOOK_DICTS:
            object.__setattr__(self, name, OrderedDict())

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` (or ``hook(module, args, kwargs)`` with ``with_kwargs``) runs
        before ``forward``; it may return new args (a non-tuple is wrapped in a tuple) or, with
        kwargs, a tuple ``(args, kwargs)``. ``prepend`` runs it before the hooks already
        registered."""
        handle = RemovableHandle(
            self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs
        )
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """``hook(module, args, output)`` (or ``hook(module, args, kwargs, output)``) runs after
        ``forward``; a non-None return replaces the output. ``always_call`` runs it even when
        ``forward`` raises."""
        handle = RemovableHandle(
            self._forward_hooks,
            extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called],
        )
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output) -> tuple or None`` runs when the gradients with respect to
        the module's outputs are computed; a returned tuple replaces ``grad_output``."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output) -> tuple or None`` runs when the gradients
        with respect to the module's (positional tensor) inputs are computed; a returned tuple
        replaces ``grad_input``. Entries are None for inputs that are not tensors requiring
        grad."""
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    # PyTorch's deprecated non-full hook; rumus gives it the full hook's (correct) semantics.
    register_backward_hook = register_full_backward_hook

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` runs before ``state_dict`` saves this module."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata) -> None`` runs after
        ``state_dict`` saved this module (and its children); it may edit ``state_dict`` in
        place."""
        try:
            hook._from_public_api = True
        except AttributeError:  # a bound method or builtin: mark a wrapper instead
            inner = hook

            def hook(*args):
                return inner(*args)

            hook._from_public_api = True
        return self._register_state_dict_hook(hook)

    def _register_state_dict_hook(self, hook):
        """Like ``register_state_dict_post_hook``, but a returned dict replaces the state dict
        (PyTorch's older private API)."""
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` runs before ``load_state_dict`` loads this module; it may
        edit ``state_dict`` in place."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        if with_module:
            module_hook = hook

            def hook(*args):
                return module_hook(self, *args)

        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys) -> None`` runs after ``load_state_dict`` loaded
        this module and its children; it may edit ``incompatible_keys.missing_keys`` /
        ``.unexpected_keys`` in place (before ``strict`` checks them)."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    def _run_forward_hooks(self, hooks, args, kwargs, result, only_always_called=False):
        for hook_id, hook, with_kwargs, always in hooks:
            if only_always_called and not always:
                continue
            out = hook(self, args, kwargs, result) if with_kwargs else hook(self, args, result)
            if out is not None:
                result = out
        return result

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not (
            self._forward_pre_hooks
            or self._forward_hooks
            or self._backward_pre_hooks
            or self._backward_hooks
            or _global_forward_pre_hooks
            or _global_forward_hooks
            or _global_backward_pre_hooks
            or _global_backward_hooks
        ):
            return self.forward(*args, **kwargs)
        pre = [(h, False) for h in _global_forward_pre_hooks.values()] + [
            (h, i in self._forward_pre_hooks_with_kwargs)
            for i, h in self._forward_pre_hooks.items()
        ]
        for hook, with_kwargs in pre:
            if with_kwargs:
                out = hook(self, args, kwargs)
                if out is not None:
                    if not (isinstance(out, tuple) and len(out) == 2):
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of "
                            f"(new_args, new_kwargs), but got {out}."
                        )
                    args, kwargs = out
            else:
                out = hook(self, args)
                if out is not None:
                    args = out if isinstance(out, tuple) else (out,)
        bw_hooks = [*_global_backward_hooks.values(), *self._backward_hooks.values()]
        bw_pre_hooks = [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]
        bw_hook = None
        if bw_hooks or bw_pre_hooks:
            bw_hook = BackwardHook(self, bw_hooks, bw_pre_hooks)
            args = bw_hook.setup_input_hook(args)
        hooks = [
            (i, h, i in _global_forward_hooks_with_kwargs, i in _global_forward_hooks_always_called)
            for i, h in _global_forward_hooks.items()
        ] + [
            (i, h, i in self._forward_hooks_with_kwargs, i in self._forward_hooks_always_called)
            for i, h in self._forward_hooks.items()
        ]
        try:
            result = self.forward(*args, **kwargs)
        except Exception:
            if any(h[3] for h in hooks):
                try:
                    self._run_forward_hooks(hooks, args, kwargs, None, only_always_called=True)
                except Exception as e:
                    warnings.warn(
                        "forward hook with ``always_call=True`` raised an exception that was "
                        f"silenced as another error was raised in forward: {e}"
                    )
            raise
        result = self._run_forward_hooks(hooks, args, kwargs, result)
        if bw_hook is not None:
            result = bw_hook.setup_output_hook(result)
        return result
