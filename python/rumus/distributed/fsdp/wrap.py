"""Auto-wrap policies for FullyShardedDataParallel (PyTorch's ``torch.distributed.fsdp.wrap``).

A policy is called as ``policy(module=m, recurse=..., nonwrapped_numel=n)``: with
``recurse=True`` it answers whether to look inside ``m`` for modules to wrap, with
``recurse=False`` whether to wrap ``m`` itself (``n`` counts the parameters of ``m`` not
already in a wrapped descendant).
"""

from ... import nn

__all__ = [
    "ModuleWrapPolicy",
    "always_wrap_policy",
    "lambda_auto_wrap_policy",
    "size_based_auto_wrap_policy",
    "transformer_auto_wrap_policy",
]


def always_wrap_policy(module, recurse, nonwrapped_numel=0, **kwargs):
    """Wraps every module.

    Args:
        module (Module): the module asked about.
        recurse (bool): the question (descend, or wrap).
        nonwrapped_numel (int): parameters not yet wrapped.
        **kwargs: ignored.
    """
    return True


def size_based_auto_wrap_policy(
    module,
    recurse,
    nonwrapped_numel,
    min_num_params=int(1e8),
    force_leaf_modules=None,
    exclude_wrap_modules=None,
):
    """Wraps a module once its not-yet-wrapped parameters reach ``min_num_params``; use it
    through ``functools.partial(size_based_auto_wrap_policy, min_num_params=...)``.

    Args:
        module (Module): the module asked about.
        recurse (bool): True: whether to descend into ``module``; False: whether to wrap it.
        nonwrapped_numel (int): the parameters of ``module`` not in a wrapped descendant.
        min_num_params (int): the size at which a module is wrapped.
        force_leaf_modules (set[type], optional): never descended into (default:
            ``nn.MultiheadAttention``).
        exclude_wrap_modules (set[type], optional): never wrapped (default:
            ``nn.ModuleList``, ``nn.ModuleDict``).
    """
    if force_leaf_modules is None:
        force_leaf_modules = size_based_auto_wrap_policy.FORCE_LEAF_MODULES
    if exclude_wrap_modules is None:
        exclude_wrap_modules = size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES
    if recurse:
        return not isinstance(module, tuple(force_leaf_modules))
    return nonwrapped_numel >= min_num_params and not isinstance(
        module, tuple(exclude_wrap_modules)
    )


size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES = {nn.ModuleList, nn.ModuleDict}
size_based_auto_wrap_policy.FORCE_LEAF_MODULES = {nn.MultiheadAttention}


def lambda_auto_wrap_policy(module, recurse, nonwrapped_numel, lambda_fn):
    """Wraps the modules for which ``lambda_fn(module)`` is true.

    Args:
        module (Module): the module asked about.
        recurse (bool): True: whether to descend; False: whether to wrap.
        nonwrapped_numel (int): unused.
        lambda_fn (callable): ``Module -> bool``.
    """
    return True if recurse else bool(lambda_fn(module))


def transformer_auto_wrap_policy(module, recurse, nonwrapped_numel, transformer_layer_cls):
    """Wraps the instances of the given layer classes.

    Args:
        module (Module): the module asked about.
        recurse (bool): True: whether to descend; False: whether to wrap.
        nonwrapped_numel (int): unused.
        transformer_layer_cls (set[type]): the classes to wrap.
    """
    return True if recurse else isinstance(module, tuple(transformer_layer_cls))


class ModuleWrapPolicy:
    """Wraps every instance of the given module classes.

    Args:
        module_classes (iterable[type]): the classes to wrap.
    """

    def __init__(self, module_classes):
        self._module_classes = tuple(module_classes)

    def __call__(self, module, recurse, *args, **kwargs):
        """The policy as a callable.

        Args:
            module (Module): the module asked about.
            recurse (bool): True: whether to descend; False: whether to wrap.
            *args: ignored.
            **kwargs: ignored.
        """
        return True if recurse else isinstance(module, self._module_classes)

    def __repr__(self):
        names = ", ".join(c.__name__ for c in self._module_classes)
        return f"ModuleWrapPolicy({{{names}}})"


def _as_callable(policy):
    if policy is None or callable(policy):
        return policy
    raise TypeError(f"auto_wrap_policy must be callable or a ModuleWrapPolicy, got {policy!r}")


def _recursive_wrap(module, policy, wrap, ignored, only_wrap_children=False):
    """Wraps the descendants of ``module`` the policy selects, bottom-up (PyTorch's
    algorithm); returns (module or its wrapper, number of parameters wrapped)."""
    from .fully_sharded_data_parallel import FullyShardedDataParallel

    if isinstance(module, FullyShardedDataParallel):
        return module, 0
    numel = sum(p.numel() for p in _unwrapped_params(module, FullyShardedDataParallel, ignored))
    if not policy(module=module, recurse=True, nonwrapped_numel=numel):
        return module, 0
    wrapped = 0
    for name, child in list(module.named_children()):
        if child is None or id(child) in ignored:
            continue
        new, n = _recursive_wrap(child, policy, wrap, ignored)
        if new is not child:
            module._modules[name] = new
        wrapped += n
    if not only_wrap_children and policy(
        module=module, recurse=False, nonwrapped_numel=numel - wrapped
    ):
        return wrap(module), numel
    return module, wrapped


def _unwrapped_params(module, fsdp_cls, ignored):
    seen = set()
    stack = [module]
    while stack:
        m = stack.pop()
        if isinstance(m, fsdp_cls) or id(m) in ignored:
            continue
        for p in m._parameters.values():
            if p is not None and id(p) not in seen:
                seen.add(id(p))
                yield p
        stack.extend(c for c in m._modules.values() if c is not None)
