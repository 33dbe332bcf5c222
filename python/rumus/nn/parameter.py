"""Parameter: a Tensor that a Module registers as one of its parameters."""

from typing import Optional

from .. import _rumus

__all__ = ["Parameter"]


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class Parameter(_rumus.Tensor):
    """A leaf Tensor that, assigned as a Module attribute, is registered as a parameter.

    ``Parameter(data)`` is a new leaf sharing ``data``'s storage (``data`` is not changed);
    ``Parameter()`` holds an empty float32 tensor. Results of ops on a Parameter are plain Tensors.

    Args:
        data (Tensor, optional): the tensor to wrap (an empty one when None).
        requires_grad (bool): whether autograd records operations on it.
    """

    def __new__(
        cls, data: Optional[_rumus.Tensor] = None, requires_grad: bool = True
    ) -> "Parameter":
        if data is None:
            data = _rumus.empty(0)
        elif not isinstance(data, _rumus.Tensor):
            raise TypeError(
                f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}"
            )
        return super().__new__(cls, data, requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        out = memo.get(id(self))
        if out is None:
            out = memo[id(self)] = type(self)(self.detach().clone(), self.requires_grad)
        return out

    def __reduce_ex__(self, protocol):
        # The data pickles as a plain Tensor; rebuilding wraps it again so the type survives.
        return (_rebuild_parameter, (self.detach(), self.requires_grad))

    __str__ = __repr__
