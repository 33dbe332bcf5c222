"""MultiheadAttention and the Transformer encoder/decoder stacks."""

import copy
import math

import rumus

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear, NonDynamicallyQuantizableLinear
from .module import Module
from .normalization import LayerNorm

__all__ = [
    "MultiheadAttention",
    "TransformerEncoderLayer",
    "TransformerEncoder",
    "TransformerDecoderLayer",
    "TransformerDecoder",
    "Transformer",
]


def _additive_mask(mask, name, dtype):
    """Bool masks (True = may not attend) become 0 / -inf in `dtype`; float masks are added as
    they are."""
    if mask.dtype == rumus.bool:
        return rumus.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(
            mask, float("-inf")
        )
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


class MultiheadAttention(Module):
    """Multi-head attention (PyTorch's parameters, masks and layouts).

    Inputs are (L, N, E) or, with batch_first=True, (N, L, E); unbatched inputs are (L, E).
    Bool masks mark positions that may NOT be attended; float masks are added to the scores.
    With need_weights=False the heads go through one F.scaled_dot_product_attention call.

    Args:
        embed_dim (int): the model dimension.
        num_heads (int): the number of heads (divides embed_dim).
        dropout (float): the dropout probability.
        bias (bool): learn input and output projection biases.
        add_bias_kv (bool): add learnt biases to the key and value sequences.
        add_zero_attn (bool): add a batch of zeros to the key and value sequences.
        kdim (int, optional): the key dimension (embed_dim when None).
        vdim (int, optional): the value dimension (embed_dim when None).
        batch_first (bool): inputs are ``(batch, seq, feature)`` instead of ``(seq, batch,
            feature)``.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
    """

    def __init__(
        self,
        embed_dim,
        num_heads,
        dropout=0.0,
        bias=True,
        add_bias_kv=False,
        add_zero_attn=False,
        kdim=None,
        vdim=None,
        batch_first=False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} "
                f"and num_heads={num_heads} instead"
            )
        fk = {"device": device, "dtype": dtype}
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(rumus.empty((3 * embed_dim, embed_dim), **fk))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(rumus.empty((embed_dim, embed_dim), **fk))
            self.k_proj_weight = Parameter(rumus.empty((embed_dim, self.kdim), **fk))
            self.v_proj_weight = Parameter(rumus.empty((embed_dim, self.vdim), **fk))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(rumus.empty(3 * embed_dim, **fk))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **fk)
        if add_bias_kv:
            self.bias_k = Parameter(rumus.empty((1, 1, embed_dim), **fk))
            self.bias_v = Parameter(rumus.empty((1, 1, embed_dim), **fk))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def _check_inputs(self, query, key, value, key_padding_mask, attn_mask):
        nd = query.dim()
        if nd not in (2, 3):
            raise AssertionError(
                f"query should be unbatched 2D or batched 3D tensor but received {nd}-D "
                "query tensor"
            )
        kind = "batched (3-D)" if nd == 3 else "unbatched (2-D)"
        if key.dim() != nd or value.dim() != nd:
            raise AssertionError(
                f"For {kind} `query`, expected `key` and `value` to be {nd}-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != nd - 1:
            raise AssertionError(
                f"For {kind} `query`, expected `key_padding_mask` to be `None` or {nd - 1}-D "
                f"but found {key_padding_mask.dim()}-D tensor instead"
            )
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(
                f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                f"but found {attn_mask.dim()}-D tensor instead"
            )
        if query.shape[-1] != self.embed_dim:
            raise AssertionError(
                f"was expecting embedding dimension of {self.embed_dim}, but got {query.shape[-1]}"
            )
        if key.shape[-1] != self.kdim or value.shape[-1] != self.vdim:
            raise AssertionError(
                f"expected key and value of embedding dimensions {self.kdim} and {self.vdim}, "
                f"but got {key.shape[-1]} and {value.shape[-1]}"
            )
        if tuple(key.shape[:-1]) != tuple(value.shape[:-1]):
            raise AssertionError(
                f"key's sequence and batch dims {tuple(key.shape[:-1])} do not match value's "
                f"{tuple(value.shape[:-1])}"
            )

    def _split_heads(self, x, batch_first, parts=1):
        """(N, L, parts*E) or (L, N, parts*E) -> `parts` tensors of shape (N, H, L, head_dim)."""
        x = x.unflatten(-1, (parts, self.num_heads, self.head_dim))
        x = x.permute(2, 0, 3, 1, 4) if batch_first else x.permute(2, 1, 3, 0, 4)
        return x.unbind(0)

    def _project(self, query, key, value, batch_first):
        """q, k, v in (N, H, L, head_dim); one packed F.linear when query, key and value are one
        tensor."""
        E = self.embed_dim
        b = self.in_proj_bias
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            if query is key and key is value:
                return self._split_heads(F.linear(query, w, b), batch_first, 3)
            b_q, b_kv = (None, None) if b is None else (b[:E], b[E:])
            (q,) = self._split_heads(F.linear(query, w[:E], b_q), batch_first)
            if key is value:
                k, v = self._split_heads(F.linear(key, w[E:], b_kv), batch_first, 2)
                return q, k, v
            weights = (w[E : 2 * E], w[2 * E :])
        else:
            b_q = None if b is None else b[:E]
            (q,) = self._split_heads(F.linear(query, self.q_proj_weight, b_q), batch_first)
            weights = (self.k_proj_weight, self.v_proj_weight)
        b_k, b_v = (None, None) if b is None else (b[E : 2 * E], b[2 * E :])
        (k,) = self._split_heads(F.linear(key, weights[0], b_k), batch_first)
        (v,) = self._split_heads(F.linear(value, weights[1], b_v), batch_first)
        return q, k, v

    def forward(
        self,
        query,
        key,
        value,
        key_padding_mask=None,
        need_weights=True,
        attn_mask=None,
        average_attn_weights=True,
        is_causal=False,
    ):
        """Returns (output, weights): weights are (N, L, S) averaged over heads, (N, H, L, S) with
        average_attn_weights=False, or None when need_weights=False.

        Args:
            query (Tensor): ``(L, N, E)`` or ``(N, L, E)`` with batch_first.
            key (Tensor): ``(S, N, kdim)`` or batch first.
            value (Tensor): ``(S, N, vdim)`` or batch first.
            key_padding_mask (Tensor, optional): ``(N, S)``; True (or -inf) masks a key.
            need_weights (bool): also return the attention weights.
            attn_mask (Tensor, optional): ``(L, S)`` or ``(N * heads, L, S)``; True (or -inf) masks.
            average_attn_weights (bool): average the weights over the heads.
            is_causal (bool): a hint that ``attn_mask`` is the causal mask.

        Returns:
            tuple[Tensor, Tensor or None]: the output and the attention weights.
        """
        self._check_inputs(query, key, value, key_padding_mask, attn_mask)
        batched = query.dim() == 3
        if not batched:
            # A batch of one, batch first; keep `is` identities for the packed projection.
            same_kv = key is value
            same_qk = query is key
            query = query.unsqueeze(0)
            key = query if same_qk else key.unsqueeze(0)
            value = key if same_kv else value.unsqueeze(0)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        batch_first = self.batch_first or not batched
        bdim, sdim = (0, 1) if batch_first else (1, 0)
        N, L, S = query.shape[bdim], query.shape[sdim], key.shape[sdim]
        if key.shape[bdim] != N:
            raise RuntimeError(
                f"key batch size {key.shape[bdim]} does not match query batch size {N}"
            )
        H = self.num_heads

        if is_causal and attn_mask is None:
            raise RuntimeError(
                "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                "module method `generate_square_subsequent_mask` to create this mask."
            )
        # is_causal promises that attn_mask is the causal mask: the kernel's own causal masking
        # replaces it when no other mask has to be merged and no weights are returned.
        causal_kernel = is_causal and key_padding_mask is None and not need_weights
        mask = None
        if attn_mask is not None and not causal_kernel:
            if attn_mask.dim() == 2 and tuple(attn_mask.shape) != (L, S):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be {(L, S)}."
                )
            if attn_mask.dim() == 3 and tuple(attn_mask.shape) != (N * H, L, S):
                raise RuntimeError(
                    f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                    f"{(N * H, L, S)}."
                )
            mask = _additive_mask(attn_mask, "attn_mask", query.dtype)
            if mask.dim() == 3:
                mask = mask.reshape(N, H, L, S)
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (N, S):
                raise AssertionError(
                    f"expecting key_padding_mask shape of {(N, S)}, but got "
                    f"{key_padding_mask.shape}"
                )
            kpm = _additive_mask(key_padding_mask, "key_padding_mask", query.dtype).reshape(
                N, 1, 1, S
            )
            mask = kpm if mask is None else mask + kpm

        q, k, v = self._project(query, key, value, batch_first)
        extra = []
        if self.bias_k is not None:
            k = rumus.cat(
                [k, self.bias_k.reshape(1, H, 1, self.head_dim).expand(N, H, 1, self.head_dim)], 2
            )
            v = rumus.cat(
                [v, self.bias_v.reshape(1, H, 1, self.head_dim).expand(N, H, 1, self.head_dim)], 2
            )
            extra.append(1)
        if self.add_zero_attn:
            zeros = rumus.zeros((N, H, 1, self.head_dim), dtype=k.dtype, device=k.device)
            k, v = rumus.cat([k, zeros], 2), rumus.cat([v, zeros], 2)
            extra.append(1)
        if extra and mask is not None:
            # The appended key positions can always be attended.
            mask = F.pad(mask, (0, len(extra)))

        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            scores = (q * (1.0 / math.sqrt(self.head_dim))) @ k.transpose(-2, -1)
            if mask is not None:
                scores = scores + mask
            weights = F.softmax(scores, -1)
            if dropout_p > 0.0:
                weights = F.dropout(weights, p=dropout_p)
            out = weights @ v
        else:
            weights = None
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=causal_kernel
            )
        if batch_first:
            out = out.transpose(1, 2).reshape(N, L, self.embed_dim)
        else:
            out = out.permute(2, 0, 1, 3).reshape(L, N, self.embed_dim)
        out = F.linear(out, self.out_proj.weight, self.out_proj.bias)
        if weights is not None and average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            out = out.squeeze(0)
            weights = None if weights is None else weights.squeeze(0)
        return out, weights


def _fused_act(layer):
    """The epilogue activation of the GPU feed-forward, or None where the plain modules run:
    other activations, and autocast regions (whose policy casts F.linear's operands)."""
    if rumus.is_autocast_enabled("gpu"):
        return None
    return "relu" if layer.activation is F.relu else "gelu" if layer.activation is F.gelu else None


def _feed_forward(layer, x, residual=None):
    """linear2(dropout(activation(linear1(x)))) (+ residual); on the GPU, linear1's bias and a
    relu or gelu activation run in its matmul's epilogue (one dispatch), and so do linear2's
    bias and the residual when one is given."""
    act = _fused_act(layer) if x.is_gpu else None
    if act is not None:
        h = rumus._rumus._linear_act(x, layer.linear1.weight, layer.linear1.bias, act)
    else:
        h = layer.activation(layer.linear1(x))
    h = layer.dropout(h)
    if residual is None:
        return layer.linear2(h)
    w, b = layer.linear2.weight, layer.linear2.bias
    return rumus._rumus._linear_act(h, w, b, "none", residual)


def _get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _seq_len(src, batch_first):
    if src.dim() == 2:
        return src.shape[0]
    return src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask, is_causal, size):
    """is_causal=None means: find out by comparing `mask` with the causal mask of that size."""
    if is_causal is not None or mask is None:
        return bool(is_causal)
    if tuple(mask.shape) != (size, size):
        return False
    causal = Transformer.generate_square_subsequent_mask(size, device=mask.device)
    if mask.dtype == rumus.bool:
        causal = causal != 0
    else:
        causal = causal.to(mask.dtype)
    return bool((mask == causal).all())


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with a residual connection and LayerNorm
    (post-norm by default, pre-norm with norm_first=True).

    Args:
        d_model (int): the model dimension.
        nhead (int): the number of attention heads.
        dim_feedforward (int): the hidden size of the feed-forward block.
        dropout (float): the dropout probability.
        activation (str or callable): ``'relu'``, ``'gelu'`` or a function.
        layer_norm_eps (float): the layer norms' eps.
        batch_first (bool): inputs are ``(batch, seq, feature)`` instead of ``(seq, batch,
            feature)``.
        norm_first (bool): apply the layer norms before (pre-norm) instead of after each block.
        bias (bool): learn an additive bias.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
    """

    def __init__(
        self,
        d_model,
        nhead,
        dim_feedforward=2048,
        dropout=0.1,
        activation=F.relu,
        layer_norm_eps=1e-5,
        batch_first=False,
        norm_first=False,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **fk
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **fk)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **fk)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        self.activation = activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = self._ff_residual(self.norm2(x), x)
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(self._ff_residual(x, x))
        return x

    def _ff_residual(self, h, x):
        """x + _ff_block(h), the residual added in linear2's GPU epilogue where dropout2 is the
        identity."""
        fused = _fused_act(self) is not None and h.is_gpu and x.is_gpu
        if fused and (not self.training or self.dropout2.p == 0):
            return _feed_forward(self, h, residual=x)
        return x + self._ff_block(h)

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(
            x,
            x,
            x,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(_feed_forward(self, x))


class TransformerDecoderLayer(Module):
    """Self-attention, attention over `memory` and a feed-forward block, each with a residual
    connection and LayerNorm.

    Args:
        d_model (int): the model dimension.
        nhead (int): the number of attention heads.
        dim_feedforward (int): the hidden size of the feed-forward block.
        dropout (float): the dropout probability.
        activation (str or callable): ``'relu'``, ``'gelu'`` or a function.
        layer_norm_eps (float): the layer norms' eps.
        batch_first (bool): inputs are ``(batch, seq, feature)`` instead of ``(seq, batch,
            feature)``.
        norm_first (bool): apply the layer norms before (pre-norm) instead of after each block.
        bias (bool): learn an additive bias.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
    """

    def __init__(
        self,
        d_model,
        nhead,
        dim_feedforward=2048,
        dropout=0.1,
        activation=F.relu,
        layer_norm_eps=1e-5,
        batch_first=False,
        norm_first=False,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **fk
        )
        self.multihead_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **fk
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **fk)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **fk)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        self.activation = activation

    def forward(
        self,
        tgt,
        memory,
        tgt_mask=None,
        memory_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        tgt_is_causal=False,
        memory_is_causal=False,
    ):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(
                self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal
            )
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(
                x
                + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            )
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(
            x,
            x,
            x,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            is_causal=is_causal,
            need_weights=False,
        )[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(
            x,
            mem,
            mem,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            is_causal=is_causal,
            need_weights=False,
        )[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(_feed_forward(self, x))


class TransformerEncoder(Module):
    """num_layers deep copies of `encoder_layer`, then an optional norm.

    rumus has no nested tensors: enable_nested_tensor is accepted and ignored, so padded positions
    are always computed (PyTorch's inference fast path returns zeros there).

    Args:
        encoder_layer (TransformerEncoderLayer): the layer to copy.
        num_layers (int): the number of copies.
        norm (Module, optional): a final normalization.
        enable_nested_tensor (bool): accepted for compatibility.
        mask_check (bool): accepted for compatibility.
    """

    def __init__(
        self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True
    ):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        batch_first = self.layers[0].self_attn.batch_first if len(self.layers) else False
        is_causal = _detect_is_causal_mask(mask, is_causal, _seq_len(src, batch_first))
        output = src
        for layer in self.layers:
            output = layer(
                output,
                src_mask=mask,
                is_causal=is_causal,
                src_key_padding_mask=src_key_padding_mask,
            )
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Module):
    """num_layers deep copies of `decoder_layer`, then an optional norm.

    Args:
        decoder_layer (TransformerDecoderLayer): the layer to copy.
        num_layers (int): the number of copies.
        norm (Module, optional): a final normalization.
    """

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt,
        memory,
        tgt_mask=None,
        memory_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        tgt_is_causal=None,
        memory_is_causal=False,
    ):
        batch_first = self.layers[0].self_attn.batch_first if len(self.layers) else False
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, _seq_len(tgt, batch_first))
        output = tgt
        for layer in self.layers:
            output = layer(
                output,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=tgt_is_causal,
                memory_is_causal=memory_is_causal,
            )
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """Encoder-decoder Transformer; all weight matrices re-initialised with xavier_uniform_.

    Args:
        d_model (int): the model dimension.
        nhead (int): the number of attention heads.
        num_encoder_layers (int): the number of encoder layers.
        num_decoder_layers (int): the number of decoder layers.
        dim_feedforward (int): the hidden size of the feed-forward block.
        dropout (float): the dropout probability.
        activation (str or callable): ``'relu'``, ``'gelu'`` or a function.
        custom_encoder (Module, optional): an encoder to use instead.
        custom_decoder (Module, optional): a decoder to use instead.
        layer_norm_eps (float): the layer norms' eps.
        batch_first (bool): inputs are ``(batch, seq, feature)`` instead of ``(seq, batch,
            feature)``.
        norm_first (bool): apply the layer norms before (pre-norm) instead of after each block.
        bias (bool): learn an additive bias.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
    """

    def __init__(
        self,
        d_model=512,
        nhead=8,
        num_encoder_layers=6,
        num_decoder_layers=6,
        dim_feedforward=2048,
        dropout=0.1,
        activation=F.relu,
        custom_encoder=None,
        custom_decoder=None,
        layer_norm_eps=1e-5,
        batch_first=False,
        norm_first=False,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(
                d_model,
                nhead,
                dim_feedforward,
                dropout,
                activation,
                layer_norm_eps,
                batch_first,
                norm_first,
                bias,
                **fk,
            )
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(
                d_model,
                nhead,
                dim_feedforward,
                dropout,
                activation,
                layer_norm_eps,
                batch_first,
                norm_first,
                bias,
                **fk,
            )
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(
        self,
        src,
        tgt,
        src_mask=None,
        tgt_mask=None,
        memory_mask=None,
        src_key_padding_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        src_is_causal=None,
        tgt_is_causal=None,
        memory_is_causal=False,
    ):
        bdim = 0 if self.batch_first else 1
        if src.dim() == 3 and src.shape[bdim] != tgt.shape[bdim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """Float mask with -inf above the diagonal and 0 elsewhere (position i sees positions
        <= i).

        Args:
            sz (int): the sequence length.
            device (str or device, optional): where to create the mask.
            dtype (dtype, optional): the mask's dtype (the default dtype if omitted).

        Returns:
            Tensor: of shape ``(sz, sz)``.
        """
        return rumus.full((sz, sz), float("-inf"), device=device, dtype=dtype).triu(1)

    def _reset_parameters(self):
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
