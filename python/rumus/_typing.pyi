"""Type aliases shared by rumus's stubs. Stub-only: there is no rumus/_typing.py, so
nothing here exists at run time; import it only in stubs or under
``typing.TYPE_CHECKING``."""

import builtins
from collections.abc import Sequence
from types import EllipsisType
from typing import Any, SupportsIndex

import numpy as np
import numpy.typing as npt
from typing_extensions import TypeAlias

from rumus._rumus import Tensor, device, dtype

# `float`, `int` and `bool` are also dtypes and Tensor methods in rumus: the stubs use
# these aliases wherever they mean the Python types.
_int: TypeAlias = builtins.int
_float: TypeAlias = builtins.float
_bool: TypeAlias = builtins.bool

# A Python (or NumPy) scalar: what arithmetic, fill values and clamp bounds accept.
Number: TypeAlias = _int | _float | _bool | np.number[Any] | np.bool_
# A tensor, or a scalar that broadcasts like a 0-d tensor.
TensorOrScalar: TypeAlias = Tensor | Number
# A shape, as a sequence (tuple, list, rumus.Size) of ints.
ShapeLike: TypeAlias = Sequence[SupportsIndex]
# One dimension, several (reductions take both), or all of them.
Dims: TypeAlias = _int | Sequence[_int] | None
# Where a tensor lives: rumus.device("cpu"), or its name "cpu", "gpu", "gpu:0".
DeviceLike: TypeAlias = device | str
# Data rumus.tensor() accepts: scalars, tensors, NumPy arrays, nested sequences of them.
ArrayLike: TypeAlias = Number | Tensor | npt.NDArray[Any] | Sequence[Any]

# Tensor has properties named `dtype` and `device`: its methods' annotations use these.
DType: TypeAlias = dtype
Device: TypeAlias = device

# One entry of a subscript: t[0], t[1:3], t[None], t[...], t[mask], t[[0, 2]].
IndexEntry: TypeAlias = (
    SupportsIndex | slice | None | EllipsisType | Tensor | Sequence[Any] | npt.NDArray[Any]
)
Index: TypeAlias = IndexEntry | tuple[IndexEntry, ...]
