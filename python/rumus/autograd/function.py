"""``rumus.autograd.Function``: user-defined ops with a Python backward. The
node is a ``BackwardOp::Custom`` in the Rust graph; saved tensors are
version-checked like those of built-in ops."""

from .. import _rumus
from .._rumus import Tensor
from .grad_mode import no_grad


class FunctionCtx:
    """The ``ctx`` passed to ``forward`` and ``backward``."""

    def __init__(self):
        self.to_save = ()
        self.needs_input_grad = ()
        self._non_differentiable = set()
        self._saved = None
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        """Saves tensors for ``backward`` (read back through :attr:`saved_tensors`).

        Call it at most once, in ``forward``. Saved tensors are version-checked: modifying
        one in place before ``backward`` raises there.

        Args:
            *tensors (Tensor or None): the tensors to save.
        """
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    "save_for_backward can only save tensors, but argument was of type "
                    f"{type(t).__name__}"
                )
        self.to_save = tensors

    @property
    def saved_tensors(self):
        """The tuple of tensors given to :meth:`save_for_backward`, readable in ``backward``."""
        if self._saved is None:
            raise RuntimeError(
                "saved_tensors can only be read in backward (after save_for_backward in forward)"
            )
        return self._saved

    def mark_non_differentiable(self, *tensors):
        """Marks outputs that have no gradient (their gradients in ``backward`` are zeros).

        Args:
            *tensors (Tensor): outputs of ``forward``.
        """
        self._non_differentiable.update(id(t) for t in tensors)

    def set_materialize_grads(self, value):
        # rumus always passes zeros for the gradients of unused outputs.
        """Sets whether gradients of unused outputs are passed as zeros (rumus always does).

        Args:
            value (bool): the setting (kept for compatibility).
        """
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors):
        """Not supported: raises NotImplementedError (in-place forwards are not supported).

        Args:
            *tensors (Tensor): the inputs modified in place.
        """
        raise NotImplementedError(
            "rumus.autograd.Function does not support in-place forwards (mark_dirty)"
        )


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``;
    call ``MyFunction.apply(*args)``. ``backward`` returns one gradient (or None)
    per argument of ``forward``.

    Args:
        *args: not allowed.
        **kwargs: not allowed.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "autograd.Function is used through its classmethod apply(), not instantiated"
        )

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """Computes the outputs; override it as a ``@staticmethod``.

        Args:
            ctx (FunctionCtx): stores what ``backward`` needs.
            *args: the arguments given to :meth:`apply`.
            **kwargs: the keyword arguments given to :meth:`apply`.

        Returns:
            A tensor or a tuple of tensors.
        """
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Computes the gradients of the inputs; override it as a ``@staticmethod``.

        Args:
            ctx (FunctionCtx): the context ``forward`` filled.
            *grad_outputs (Tensor): one gradient per output of ``forward``.

        Returns:
            One gradient (or None) per argument of ``forward``.
        """
        raise NotImplementedError(
            "You must implement the backward function for custom autograd.Function."
        )

    @classmethod
    def apply(cls, *args, **kwargs):
        """Runs ``forward`` without recording and adds one node to the graph whose backward
        calls ``backward``.

        Args:
            *args: passed to ``forward`` after ``ctx``.
            **kwargs: passed to ``forward``.

        Returns:
            The outputs of ``forward``.
        """
        ctx = FunctionCtx()
        recording = _rumus.is_grad_enabled()
        ctx.needs_input_grad = tuple(
            recording and isinstance(a, Tensor) and a.requires_grad for a in args
        )
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        if not any(ctx.needs_input_grad):
            return out
        is_tuple = isinstance(out, tuple)
        outs = out if is_tuple else (out,)
        diff = [
            isinstance(o, Tensor)
            and (o.is_floating_point() or o.is_complex())
            and id(o) not in ctx._non_differentiable
            for o in outs
        ]
        tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        saved = [t for t in ctx.to_save if t is not None]
        none_at = [i for i, t in enumerate(ctx.to_save) if t is None]
        nargs = len(args)
        name = cls.__name__ + "Backward"

        def backward(saved_tensors, grads):
            values = list(saved_tensors)
            for i in none_at:
                values.insert(i, None)
            ctx._saved = tuple(values)
            it = iter(grads)
            full = [next(it) if d else None for d in diff]
            result = cls.backward(ctx, *full)
            if not isinstance(result, tuple):
                result = (result,)
            # Extra trailing gradients are allowed when they are None (as in PyTorch).
            if len(result) > nargs and all(r is None for r in result[nargs:]):
                result = result[:nargs]
            if len(result) != nargs:
                raise RuntimeError(
                    f"function {name} returned an incorrect number of gradients (expected {nargs}, "
                    f"got {len(result)})"
                )
            return [result[i] for i in tensor_pos]

        inputs = [args[i] for i in tensor_pos]
        attached = _rumus._attach_custom(
            name, backward, inputs, [o for o, d in zip(outs, diff) if d], saved
        )
        ctx.to_save = ()
        it = iter(attached)
        outs = tuple(next(it) if d else o for o, d in zip(outs, diff))
        return outs if is_tuple else outs[0]
