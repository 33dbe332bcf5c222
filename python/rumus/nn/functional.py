"""Functional forms of activations and helpers, bound to the Rust kernels."""

from .._rumus import Tensor, one_hot

relu = Tensor.relu
gelu = Tensor.gelu
silu = Tensor.silu
mish = Tensor.mish
elu = Tensor.elu
leaky_relu = Tensor.leaky_relu
softplus = Tensor.softplus
sigmoid = Tensor.sigmoid
tanh = Tensor.tanh

__all__ = ["one_hot", "relu", "gelu", "silu", "mish", "elu", "leaky_relu", "softplus", "sigmoid", "tanh"]
