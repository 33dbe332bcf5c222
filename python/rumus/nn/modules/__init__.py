"""All nn layers, one file per family (as in PyTorch's torch.nn.modules)."""

from .module import Module
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .linear import Bilinear, Identity, Linear
from .flatten import Flatten, Unflatten
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d,
                      AvgPool2d, MaxPool1d, MaxPool2d)
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm, InstanceNorm1d, InstanceNorm2d, LayerNorm, RMSNorm
from .activation import (ELU, GELU, Hardtanh, LeakyReLU, LogSoftmax, Mish, PReLU, ReLU, ReLU6, SiLU, Sigmoid,
                         Softmax, Softplus, Tanh)
from .dropout import Dropout, Dropout2d
from .sparse import Embedding
from .padding import (CircularPad1d, CircularPad2d, ConstantPad1d, ConstantPad2d, ReflectionPad1d, ReflectionPad2d,
                      ReplicationPad1d, ReplicationPad2d, ZeroPad1d, ZeroPad2d)
from .pixelshuffle import PixelShuffle, PixelUnshuffle
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d
from .fold import Fold, Unfold
from .distance import CosineSimilarity, PairwiseDistance
from .loss import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss,
                   MarginRankingLoss, MSELoss, NLLLoss, SmoothL1Loss)
from .transformer import (MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,
                          TransformerEncoder, TransformerEncoderLayer)

__all__ = [
    "Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
    "Identity", "Linear", "Bilinear", "Flatten", "Unflatten",
    "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d",
    "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "BatchNorm1d", "BatchNorm2d", "InstanceNorm1d", "InstanceNorm2d", "LayerNorm", "GroupNorm", "RMSNorm",
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh", "Hardtanh", "Softplus",
    "Softmax", "LogSoftmax", "PReLU",
    "Dropout", "Dropout2d", "Embedding",
    "ConstantPad1d", "ConstantPad2d", "ZeroPad1d", "ZeroPad2d", "ReflectionPad1d", "ReflectionPad2d",
    "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d", "CircularPad2d",
    "PixelShuffle", "PixelUnshuffle", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d",
    "Fold", "Unfold", "CosineSimilarity", "PairwiseDistance",
    "L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "NLLLoss", "CrossEntropyLoss", "BCELoss",
    "BCEWithLogitsLoss", "KLDivLoss", "CosineEmbeddingLoss", "MarginRankingLoss",
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
    "TransformerDecoder", "Transformer",
]
