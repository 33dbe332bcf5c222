"""Every public name rumus shares with PyTorch is reachable under PyTorch's
module path too (``torch.nn.modules.batchnorm.BatchNorm2d`` ->
``rumus.nn.modules.batchnorm.BatchNorm2d``), as the same object as its short
name, so scripts (and pickles) that spell the long path work."""

import functools
import importlib
import subprocess
import sys

import pytest
import rumus

# (PyTorch's module, names it defines there that rumus has, where rumus's short name lives).
# Written by hand from PyTorch's API.
TORCH_PATHS = [
    ("nn.modules.module", ["Module"], "nn"),
    ("nn.modules.linear", ["Identity", "Linear", "Bilinear"], "nn"),
    (
        "nn.modules.activation",
        [
            "ReLU",
            "ReLU6",
            "LeakyReLU",
            "ELU",
            "GELU",
            "SiLU",
            "Mish",
            "Sigmoid",
            "Tanh",
            "Hardtanh",
            "Softplus",
            "Softmax",
            "LogSoftmax",
            "PReLU",
            "MultiheadAttention",
        ],
        "nn",
    ),
    (
        "nn.modules.container",
        ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"],
        "nn",
    ),
    (
        "nn.modules.conv",
        ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"],
        "nn",
    ),
    (
        "nn.modules.pooling",
        [
            "MaxPool1d",
            "MaxPool2d",
            "MaxPool3d",
            "AvgPool1d",
            "AvgPool2d",
            "AvgPool3d",
            "AdaptiveAvgPool1d",
            "AdaptiveAvgPool2d",
            "AdaptiveAvgPool3d",
            "AdaptiveMaxPool1d",
            "AdaptiveMaxPool2d",
            "AdaptiveMaxPool3d",
            "MaxUnpool1d",
            "MaxUnpool2d",
            "MaxUnpool3d",
        ],
        "nn",
    ),
    ("nn.modules.batchnorm", ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"], "nn"),
    ("nn.modules.instancenorm", ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"], "nn"),
    ("nn.modules.normalization", ["LayerNorm", "GroupNorm", "RMSNorm"], "nn"),
    ("nn.modules.dropout", ["Dropout", "Dropout2d"], "nn"),
    ("nn.modules.sparse", ["Embedding"], "nn"),
    (
        "nn.modules.rnn",
        ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"],
        "nn",
    ),
    (
        "nn.modules.transformer",
        [
            "Transformer",
            "TransformerEncoder",
            "TransformerDecoder",
            "TransformerEncoderLayer",
            "TransformerDecoderLayer",
        ],
        "nn",
    ),
    (
        "nn.modules.loss",
        [
            "L1Loss",
            "MSELoss",
            "SmoothL1Loss",
            "HuberLoss",
            "NLLLoss",
            "CrossEntropyLoss",
            "BCELoss",
            "BCEWithLogitsLoss",
            "KLDivLoss",
            "CosineEmbeddingLoss",
            "MarginRankingLoss",
        ],
        "nn",
    ),
    (
        "nn.modules.padding",
        [
            "ConstantPad1d",
            "ConstantPad2d",
            "ZeroPad1d",
            "ZeroPad2d",
            "ReflectionPad1d",
            "ReflectionPad2d",
            "ReplicationPad1d",
            "ReplicationPad2d",
            "CircularPad1d",
            "CircularPad2d",
        ],
        "nn",
    ),
    ("nn.modules.flatten", ["Flatten", "Unflatten"], "nn"),
    ("nn.modules.pixelshuffle", ["PixelShuffle", "PixelUnshuffle"], "nn"),
    ("nn.modules.upsampling", ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"], "nn"),
    ("nn.modules.distance", ["CosineSimilarity", "PairwiseDistance"], "nn"),
    ("nn.modules.fold", ["Fold", "Unfold"], "nn"),
    ("nn.parameter", ["Parameter"], "nn"),
    ("nn.utils.clip_grad", ["clip_grad_norm_", "clip_grad_value_"], "nn.utils"),
    (
        "nn.utils.convert_parameters",
        ["parameters_to_vector", "vector_to_parameters"],
        "nn.utils",
    ),
    ("optim.optimizer", ["Optimizer"], "optim"),
    ("optim.sgd", ["SGD"], "optim"),
    ("optim.adam", ["Adam"], "optim"),
    ("optim.adamw", ["AdamW"], "optim"),
    ("optim.adamax", ["Adamax"], "optim"),
    ("optim.nadam", ["NAdam"], "optim"),
    ("optim.radam", ["RAdam"], "optim"),
    ("optim.rmsprop", ["RMSprop"], "optim"),
    ("optim.adagrad", ["Adagrad"], "optim"),
    (
        "optim.lr_scheduler",
        ["LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR"],
        "optim.lr_scheduler",
    ),
    (
        "utils.data.dataloader",
        ["DataLoader", "default_collate", "default_convert", "get_worker_info"],
        "utils.data",
    ),
    (
        "utils.data.dataset",
        [
            "Dataset",
            "IterableDataset",
            "TensorDataset",
            "ConcatDataset",
            "ChainDataset",
            "StackDataset",
            "Subset",
            "random_split",
        ],
        "utils.data",
    ),
    (
        "utils.data.sampler",
        [
            "Sampler",
            "SequentialSampler",
            "RandomSampler",
            "SubsetRandomSampler",
            "WeightedRandomSampler",
            "BatchSampler",
        ],
        "utils.data",
    ),
    ("utils.checkpoint", ["checkpoint"], "utils.checkpoint"),
    ("autograd.function", ["Function"], "autograd"),
    ("autograd.grad_mode", ["no_grad", "enable_grad", "set_grad_enabled"], "autograd"),
    ("serialization", ["save", "load"], ""),
    (
        "serialization",
        ["add_safe_globals", "safe_globals", "get_safe_globals", "clear_safe_globals"],
        "serialization",
    ),
    # issue 16: more activations, losses and layers
    (
        "nn.modules.activation",
        "RReLU CELU SELU GLU Hardswish Hardsigmoid Hardshrink Softshrink Tanhshrink LogSigmoid "
        "Softmin Softmax2d Threshold Softsign".split(),
        "nn",
    ),
    (
        "nn.modules.loss",
        "CTCLoss MultiMarginLoss MultiLabelMarginLoss MultiLabelSoftMarginLoss TripletMarginLoss "
        "TripletMarginWithDistanceLoss HingeEmbeddingLoss PoissonNLLLoss GaussianNLLLoss".split(),
        "nn",
    ),
    ("nn.modules.pooling", ["LPPool1d", "LPPool2d", "LPPool3d"], "nn"),
    ("nn.modules.normalization", ["LocalResponseNorm"], "nn"),
    ("nn.modules.sparse", ["EmbeddingBag"], "nn"),
    ("nn.modules.channelshuffle", ["ChannelShuffle"], "nn"),
]

CASES = [(mod, name, short) for mod, names, short in TORCH_PATHS for name in names]


def _attr_path(root, dotted):
    return functools.reduce(getattr, [p for p in dotted.split(".") if p], root)


@pytest.mark.parametrize("mod, name, short", CASES, ids=[f"{m}.{n}" for m, n, _ in CASES])
def test_torch_path_is_the_same_object(mod, name, short):
    # Reachable as attributes right after `import rumus` (as `torch.nn.modules...` is) ...
    long = getattr(_attr_path(rumus, mod), name)
    assert long is getattr(_attr_path(rumus, short), name)
    # ... and importable with `from rumus.<mod> import <name>`.
    assert getattr(importlib.import_module(f"rumus.{mod}"), name) is long


def test_non_dynamically_quantizable_linear():
    from rumus.nn.modules.linear import NonDynamicallyQuantizableLinear

    assert issubclass(NonDynamicallyQuantizableLinear, rumus.nn.Linear)
    mha = rumus.nn.MultiheadAttention(8, 2)
    assert type(mha.out_proj) is NonDynamicallyQuantizableLinear


def test_torch_alias_resolves_the_long_paths():
    code = (
        "import rumus.compat\n"
        "rumus.compat.install_torch_alias()\n"
        "import torch\n"
        "from torch.nn.modules.linear import NonDynamicallyQuantizableLinear\n"
        "from torch.nn.modules.batchnorm import BatchNorm2d\n"
        "from torch.optim.adamw import AdamW\n"
        "from torch.utils.data.dataloader import DataLoader\n"
        "from torch.autograd.function import Function\n"
        "from torch.serialization import safe_globals\n"
        "assert BatchNorm2d is torch.nn.BatchNorm2d and AdamW is torch.optim.AdamW\n"
        "assert torch.nn.modules.activation.MultiheadAttention is torch.nn.MultiheadAttention\n"
        "assert DataLoader is torch.utils.data.DataLoader and Function is torch.autograd.Function\n"
        "assert issubclass(NonDynamicallyQuantizableLinear, torch.nn.Linear)\n"
        "print('paths ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "paths ok" in out.stdout, out.stdout + out.stderr
