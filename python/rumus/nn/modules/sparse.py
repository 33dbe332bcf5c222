"""Embedding: a lookup table of num_embeddings vectors of size embedding_dim; EmbeddingBag:
sums, means or maxima of bags of its rows."""

from typing import Any, Optional

import rumus

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Embedding", "EmbeddingBag"]


class Embedding(Module):
    """Rows of `weight` picked by integer indices. The padding_idx row starts at zero and gets no
    gradient. rumus has no sparse tensors, so sparse=True raises NotImplementedError.

    Args:
        num_embeddings (int): the size of the table.
        embedding_dim (int): the size of each vector.
        padding_idx (int, optional): this row starts at zero and gets no gradient.
        max_norm (float, optional): renormalize looked-up rows to at most this norm.
        norm_type (float): the p of that norm.
        scale_grad_by_freq (bool): scale gradients by the inverse frequency of the indices in the
            batch.
        sparse (bool): accepted for compatibility; gradients are dense.
        _weight (Tensor, optional): an initial weight.
        _freeze (bool): do not train the weight.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: Optional[int] = None,
        max_norm: Optional[float] = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Optional[rumus.Tensor] = None,
        _freeze: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            if padding_idx < 0:
                padding_idx += num_embeddings
        if sparse:
            raise NotImplementedError(
                "Embedding(sparse=True): rumus has no sparse gradients; use sparse=False"
            )
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(
                rumus.empty((num_embeddings, embedding_dim), device=device, dtype=dtype),
                requires_grad=not _freeze,
            )
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError(
                    "Shape of weight does not match num_embeddings and embedding_dim"
                )
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self):
        """Re-initializes the parameters as the constructor does (PyTorch's defaults)."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with rumus.no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input):
        return F.embedding(
            input,
            self.weight,
            self.padding_idx,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.sparse,
        )

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += ", scale_grad_by_freq=True"
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(
        cls,
        embeddings,
        freeze=True,
        padding_idx=None,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        sparse=False,
    ):
        """Embedding whose weight shares `embeddings`' storage (2-D); frozen unless freeze=False.

        Args:
            embeddings (Tensor): the 2-d weight.
            freeze (bool): do not train the weight.
            padding_idx (int, optional): this row gets no gradient.
            max_norm (float, optional): renormalize looked-up rows to at most this norm.
            norm_type (float): the p of that norm.
            scale_grad_by_freq (bool): scale gradients by the inverse frequency of the indices in
                the batch.
            sparse (bool): accepted for compatibility.

        Returns:
            Embedding: the module.
        """
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(
            num_embeddings=rows,
            embedding_dim=cols,
            _weight=embeddings,
            _freeze=freeze,
            padding_idx=padding_idx,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            sparse=sparse,
        )


class EmbeddingBag(Module):
    """Sum, mean or max of bags of embedding rows, without materializing them as a padded batch.

    Bags are the rows of a 2-D input, or slices of a 1-D input starting at ``offsets``;
    empty bags give zeros. padding_idx entries are skipped (they count toward no mean);
    per_sample_weights scale the rows in mode 'sum'.

    Args:
        num_embeddings (int): the number of rows of the table.
        embedding_dim (int): the size of each row.
        max_norm (float, optional): rows looked up with a larger norm are renormalized to it.
        norm_type (float): the p of the p-norm for max_norm.
        scale_grad_by_freq (bool): scale gradients by the inverse frequency of the indices.
        mode (str): ``'sum'``, ``'mean'`` or ``'max'``.
        sparse (bool): must be False (rumus has no sparse gradients).
        _weight (Tensor, optional): an initial (num_embeddings, embedding_dim) weight.
        include_last_offset (bool): offsets ends with the end of the last bag.
        padding_idx (int, optional): an index whose row is zero and left out of the bags.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
    """

    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        mode="mean",
        sparse=False,
        _weight=None,
        include_last_offset=False,
        padding_idx=None,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("padding_idx must be within num_embeddings")
            if padding_idx < 0:
                padding_idx += num_embeddings
        if sparse:
            raise NotImplementedError(
                "EmbeddingBag(sparse=True): rumus has no sparse gradients; use sparse=False"
            )
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(
                rumus.empty((num_embeddings, embedding_dim), device=device, dtype=dtype)
            )
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError(
                    "Shape of weight does not match num_embeddings and embedding_dim"
                )
            self.weight = Parameter(_weight)

    def reset_parameters(self):
        """Re-initializes the weight from N(0, 1), zeroing the padding_idx row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with rumus.no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += ", scale_grad_by_freq=True"
        s += f", mode={self.mode}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(
        cls,
        embeddings,
        freeze=True,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        mode="mean",
        sparse=False,
        include_last_offset=False,
        padding_idx=None,
    ):
        """An EmbeddingBag whose weight shares ``embeddings``' storage.

        Args:
            embeddings (Tensor): the 2-D weight (num_embeddings, embedding_dim).
            freeze (bool): keep the weight out of training (requires_grad=False).
            max_norm (float, optional): rows looked up with a larger norm are renormalized to it.
            norm_type (float): the p of the p-norm for max_norm.
            scale_grad_by_freq (bool): scale gradients by the inverse frequency of the indices.
            mode (str): ``'sum'``, ``'mean'`` or ``'max'``.
            sparse (bool): must be False (rumus has no sparse gradients).
            include_last_offset (bool): offsets ends with the end of the last bag.
            padding_idx (int, optional): an index whose row is left out of the bags.

        Returns:
            The new EmbeddingBag.
        """
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(
            num_embeddings=rows,
            embedding_dim=cols,
            _weight=embeddings,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            mode=mode,
            sparse=sparse,
            include_last_offset=include_last_offset,
            padding_idx=padding_idx,
        )
        bag.weight.requires_grad = not freeze
        return bag
