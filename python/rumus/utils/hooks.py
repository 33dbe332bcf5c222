"""Hook handles (PyTorch's ``torch.utils.hooks``)."""

import weakref

__all__ = ["RemovableHandle"]


class RemovableHandle:
    """Returned by every ``register_*hook`` method; ``remove()`` (or leaving a ``with`` block)
    unregisters the hook. Holds the hook dicts (keyed by handle id) weakly so it never keeps a
    module or a graph alive."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if extra_dict is None:
            extra_dict = []
        extras = extra_dict if isinstance(extra_dict, (list, tuple)) else [extra_dict]
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self):
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __getstate__(self):
        if self.extra_dict_ref:
            return (self.hooks_dict_ref(), self.id, tuple(r() for r in self.extra_dict_ref))
        return (self.hooks_dict_ref(), self.id)

    def __setstate__(self, state):
        self.hooks_dict_ref = weakref.ref(state[0]) if state[0] is not None else (lambda: None)
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        extras = state[2] if len(state) > 2 else ()
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras if d is not None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
