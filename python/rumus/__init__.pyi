"""Types of the rumus package namespace (rumus/__init__.py builds much of it at import
time, which type checkers cannot follow). tests/test_stubs.py keeps this file and the
run-time namespace in step: CONTRIBUTING.md ("Type stubs") says how to add a name.
"""

# ruff: noqa: I001 (isort would split each `x as x` re-export into its own statement)

from collections.abc import Sequence
from os import PathLike
from typing import IO, Any, Literal, overload

from _typeshed import SupportsWrite

from rumus import (
    accelerator as accelerator,
    amp as amp,
    ao as ao,
    autograd as autograd,
    compat as compat,
    distributed as distributed,
    distributions as distributions,
    fft as fft,
    func as func,
    gpu as gpu,
    linalg as linalg,
    nn as nn,
    onnx as onnx,
    optim as optim,
    quantization as quantization,
    serialization as serialization,
    utils as utils,
)
from rumus.quantization._tensors import (
    per_channel_affine as per_channel_affine,
    per_channel_symmetric as per_channel_symmetric,
    per_tensor_affine as per_tensor_affine,
    per_tensor_symmetric as per_tensor_symmetric,
    q8 as q8,
    qint8 as qint8,
)
from rumus._rumus import (
    Generator as Generator,
    Tensor as Tensor,
    arange as arange,
    as_tensor as as_tensor,
    bfloat16 as bfloat16,
    bool as bool,
    broadcast_shapes as broadcast_shapes,
    bucketize as bucketize,
    cat as cat,
    complex as complex,
    complex64 as complex64,
    complex128 as complex128,
    device as device,
    dtype as dtype,
    einsum as einsum,
    empty as empty,
    empty_cache as empty_cache,
    empty_like as empty_like,
    eye as eye,
    float16 as float16,
    float32 as float32,
    float64 as float64,
    from_numpy as from_numpy,
    full as full,
    full_like as full_like,
    get_default_device as get_default_device,
    get_num_threads as get_num_threads,
    get_default_dtype as get_default_dtype,
    set_default_dtype as set_default_dtype,
    set_num_threads as set_num_threads,
    get_rng_state as get_rng_state,
    initial_seed as initial_seed,
    int32 as int32,
    int64 as int64,
    is_tensor as is_tensor,
    linspace as linspace,
    manual_seed as manual_seed,
    meshgrid as meshgrid,
    one_hot as one_hot,
    ones as ones,
    ones_like as ones_like,
    promote_types as promote_types,
    rand as rand,
    rand_like as rand_like,
    randint as randint,
    randn as randn,
    randn_like as randn_like,
    poisson as poisson,
    polar as polar,
    binomial as binomial,
    randperm as randperm,
    result_type as result_type,
    searchsorted as searchsorted,
    set_default_device as set_default_device,
    set_rng_state as set_rng_state,
    stack as stack,
    tensor as tensor,
    tensordot as tensordot,
    uint8 as uint8,
    view_as_complex as view_as_complex,
    view_as_real as view_as_real,
    where as where,
    xlogy as xlogy,
    zeros as zeros,
    zeros_like as zeros_like,
)
from rumus.nn.functional import (
    conv1d as conv1d,
    conv2d as conv2d,
    conv3d as conv3d,
    conv_transpose1d as conv_transpose1d,
    conv_transpose2d as conv_transpose2d,
    conv_transpose3d as conv_transpose3d,
    avg_pool1d as avg_pool1d,
    adaptive_avg_pool1d as adaptive_avg_pool1d,
    bilinear as bilinear,
    prelu as prelu,
    pixel_shuffle as pixel_shuffle,
    pixel_unshuffle as pixel_unshuffle,
    channel_shuffle as channel_shuffle,
    hardshrink as hardshrink,
    rms_norm as rms_norm,
    relu_ as relu_,
    selu_ as selu_,
    celu_ as celu_,
    threshold_ as threshold_,
)
from rumus._complex import imag as imag, real as real
from rumus._size import Size as Size
from rumus._typing import DType, Number, _bool, _float, _int
from rumus._mathops import FrexpResult
from rumus.linalg import SlogdetResult
from rumus.amp.autocast_mode import (
    autocast as autocast,
    clear_autocast_cache as clear_autocast_cache,
    get_autocast_dtype as get_autocast_dtype,
    is_autocast_cache_enabled as is_autocast_cache_enabled,
    is_autocast_enabled as is_autocast_enabled,
    set_autocast_cache_enabled as set_autocast_cache_enabled,
    set_autocast_dtype as set_autocast_dtype,
    set_autocast_enabled as set_autocast_enabled,
)
from rumus.autograd import (
    enable_grad as enable_grad,
    inference_mode as inference_mode,
    is_grad_enabled as is_grad_enabled,
    no_grad as no_grad,
    set_grad_enabled as set_grad_enabled,
)

__version__: str

# PyTorch's dtype aliases.
float = float32
double = float64
half = float16
long = int64
int = int32
cfloat = complex64
cdouble = complex128

concat = cat
concatenate = cat

# Functions that are Tensor methods at run time (`rumus.exp is Tensor.exp`): the same
# signatures, with the tensor first.
neg = Tensor.neg
negative = Tensor.negative
abs = Tensor.abs
absolute = Tensor.absolute
sign = Tensor.sign
square = Tensor.square
relu = Tensor.relu
floor = Tensor.floor
ceil = Tensor.ceil
trunc = Tensor.trunc
exp = Tensor.exp
exp2 = Tensor.exp2
log = Tensor.log
log2 = Tensor.log2
log10 = Tensor.log10
log1p = Tensor.log1p
expm1 = Tensor.expm1
sqrt = Tensor.sqrt
rsqrt = Tensor.rsqrt
reciprocal = Tensor.reciprocal
sin = Tensor.sin
cos = Tensor.cos
tan = Tensor.tan
asin = Tensor.asin
acos = Tensor.acos
acosh = Tensor.acosh
asinh = Tensor.asinh
atanh = Tensor.atanh
arccosh = Tensor.arccosh
arcsinh = Tensor.arcsinh
arctanh = Tensor.arctanh
atan = Tensor.atan
sinh = Tensor.sinh
cosh = Tensor.cosh
tanh = Tensor.tanh
sigmoid = Tensor.sigmoid
erf = Tensor.erf
erfc = Tensor.erfc
erfinv = Tensor.erfinv
lgamma = Tensor.lgamma
digamma = Tensor.digamma
i0 = Tensor.i0

def polygamma(n: _int, input: Tensor) -> Tensor: ...
def mvlgamma(self: Tensor, p: _int) -> Tensor: ...
def sinc(self: Tensor) -> Tensor: ...
def from_dlpack(ext_tensor: Any, *, device: Any = None, copy: _bool | None = None) -> Tensor: ...
def compile(
    model: Any = None,
    *,
    fullgraph: _bool = False,
    dynamic: _bool | None = None,
    backend: Any = "inductor",
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    disable: _bool = False,
) -> Any: ...

silu = Tensor.silu
mish = Tensor.mish
logical_not = Tensor.logical_not
bitwise_not = Tensor.bitwise_not
add = Tensor.add
sub = Tensor.sub
mul = Tensor.mul
multiply = Tensor.multiply
div = Tensor.div
divide = Tensor.divide
true_divide = Tensor.true_divide
floor_divide = Tensor.floor_divide
remainder = Tensor.remainder
fmod = Tensor.fmod
pow = Tensor.pow
atan2 = Tensor.atan2
round = Tensor.round
gelu = Tensor.gelu
leaky_relu = Tensor.leaky_relu
elu = Tensor.elu
softplus = Tensor.softplus
maximum = Tensor.maximum
minimum = Tensor.minimum
eq = Tensor.eq
ne = Tensor.ne
lt = Tensor.lt
le = Tensor.le
gt = Tensor.gt
ge = Tensor.ge
logical_and = Tensor.logical_and
logical_or = Tensor.logical_or
logical_xor = Tensor.logical_xor
bitwise_and = Tensor.bitwise_and
bitwise_or = Tensor.bitwise_or
bitwise_xor = Tensor.bitwise_xor
isnan = Tensor.isnan
isinf = Tensor.isinf
isfinite = Tensor.isfinite
clamp = Tensor.clamp
clip = Tensor.clip
masked_fill = Tensor.masked_fill
sum = Tensor.sum
mean = Tensor.mean
prod = Tensor.prod
amax = Tensor.amax
amin = Tensor.amin
max = Tensor.max
min = Tensor.min
argmax = Tensor.argmax
argmin = Tensor.argmin
var = Tensor.var
std = Tensor.std
logsumexp = Tensor.logsumexp
all = Tensor.all
any = Tensor.any
cumsum = Tensor.cumsum
cumprod = Tensor.cumprod
matmul = Tensor.matmul
mm = Tensor.mm
bmm = Tensor.bmm
mv = Tensor.mv
dot = Tensor.dot
outer = Tensor.outer
reshape = Tensor.reshape
permute = Tensor.permute
transpose = Tensor.transpose
swapaxes = Tensor.swapaxes
t = Tensor.t
flatten = Tensor.flatten
unflatten = Tensor.unflatten
unsqueeze = Tensor.unsqueeze
squeeze = Tensor.squeeze
narrow = Tensor.narrow
select = Tensor.select
unbind = Tensor.unbind
movedim = Tensor.movedim
moveaxis = Tensor.moveaxis
split = Tensor.split
chunk = Tensor.chunk
flip = Tensor.flip
roll = Tensor.roll
tril = Tensor.tril
triu = Tensor.triu
diagonal = Tensor.diagonal
trace = Tensor.trace
gather = Tensor.gather
scatter = Tensor.scatter
scatter_add = Tensor.scatter_add
index_select = Tensor.index_select
nonzero = Tensor.nonzero
clone = Tensor.clone
numel = Tensor.numel
sort = Tensor.sort
argsort = Tensor.argsort
msort = Tensor.msort
topk = Tensor.topk
kthvalue = Tensor.kthvalue
median = Tensor.median
nanmedian = Tensor.nanmedian
mode = Tensor.mode
unique = Tensor.unique
unique_consecutive = Tensor.unique_consecutive
bincount = Tensor.bincount
histc = Tensor.histc
histogram = Tensor.histogram
addmm = Tensor.addmm
addmv = Tensor.addmv
addr = Tensor.addr
addbmm = Tensor.addbmm
baddbmm = Tensor.baddbmm
addcmul = Tensor.addcmul
addcdiv = Tensor.addcdiv
lerp = Tensor.lerp
hypot = Tensor.hypot
logaddexp = Tensor.logaddexp
logaddexp2 = Tensor.logaddexp2
logit = Tensor.logit
nan_to_num = Tensor.nan_to_num
isclose = Tensor.isclose
allclose = Tensor.allclose
equal = Tensor.equal
clamp_min = Tensor.clamp_min
clamp_max = Tensor.clamp_max
diff = Tensor.diff
cross = Tensor.cross
kron = Tensor.kron
tile = Tensor.tile
repeat_interleave = Tensor.repeat_interleave
conj = Tensor.conj
conj_physical = Tensor.conj_physical
resolve_conj = Tensor.resolve_conj
angle = Tensor.angle
sgn = Tensor.sgn
is_complex = Tensor.is_complex
aminmax = Tensor.aminmax
nansum = Tensor.nansum
nanmean = Tensor.nanmean
count_nonzero = Tensor.count_nonzero
cummax = Tensor.cummax
cummin = Tensor.cummin
logcumsumexp = Tensor.logcumsumexp
index_add = Tensor.index_add
multinomial = Tensor.multinomial
index_copy = Tensor.index_copy
index_fill = Tensor.index_fill
index_put = Tensor.index_put
masked_scatter = Tensor.masked_scatter
masked_select = Tensor.masked_select
scatter_reduce = Tensor.scatter_reduce

# rumus/_composite.py
def var_mean(
    input: Tensor,
    dim: _int | Sequence[_int] | None = None,
    unbiased: _bool | None = None,
    keepdim: _bool = False,
    *,
    correction: Number | None = None,
) -> tuple[Tensor, Tensor]: ...
def std_mean(
    input: Tensor,
    dim: _int | Sequence[_int] | None = None,
    unbiased: _bool | None = None,
    keepdim: _bool = False,
    *,
    correction: Number | None = None,
) -> tuple[Tensor, Tensor]: ...
def cdist(
    x1: Tensor,
    x2: Tensor,
    p: _float = 2.0,
    compute_mode: Literal[
        "use_mm_for_euclid_dist_if_necessary",
        "use_mm_for_euclid_dist",
        "donot_use_mm_for_euclid_dist",
    ] = "use_mm_for_euclid_dist_if_necessary",
) -> Tensor: ...
def pdist(input: Tensor, p: _float = 2) -> Tensor: ...
def randint_like(
    input: Tensor,
    low: _int = 0,
    high: _int | None = None,
    *,
    dtype: dtype | None = None,
    device: device | str | None = None,
    requires_grad: _bool = False,
    generator: Generator | None = None,
) -> Tensor: ...

# rumus.nn.functional
def cosine_similarity(x1: Tensor, x2: Tensor, dim: _int = 1, eps: _float = 1e-8) -> Tensor: ...
def pairwise_distance(
    x1: Tensor, x2: Tensor, p: _float = 2.0, eps: _float = 1e-6, keepdim: _bool = False
) -> Tensor: ...

# rumus/_toplevel.py: torch's top-level spellings of nn.functional ops, with torch's signatures
broadcast_to = Tensor.broadcast_to
abs_ = Tensor.abs_
acos_ = Tensor.acos_
acosh_ = Tensor.acosh_
asinh_ = Tensor.asinh_
atanh_ = Tensor.atanh_
arccosh_ = Tensor.arccosh_
arcsinh_ = Tensor.arcsinh_
arctanh_ = Tensor.arctanh_
addmv_ = Tensor.addmv_
asin_ = Tensor.asin_
atan_ = Tensor.atan_
ceil_ = Tensor.ceil_
clamp_ = Tensor.clamp_
clamp_max_ = Tensor.clamp_max_
clamp_min_ = Tensor.clamp_min_
cos_ = Tensor.cos_
cosh_ = Tensor.cosh_
erf_ = Tensor.erf_
erfc_ = Tensor.erfc_
exp2_ = Tensor.exp2_
exp_ = Tensor.exp_
expm1_ = Tensor.expm1_
fill_ = Tensor.fill_
floor_ = Tensor.floor_
i0_ = Tensor.i0_
log10_ = Tensor.log10_
log1p_ = Tensor.log1p_
log2_ = Tensor.log2_
log_ = Tensor.log_
logit_ = Tensor.logit_
nan_to_num_ = Tensor.nan_to_num_
neg_ = Tensor.neg_
negative_ = Tensor.negative_
reciprocal_ = Tensor.reciprocal_
round_ = Tensor.round_
rsqrt_ = Tensor.rsqrt_
sigmoid_ = Tensor.sigmoid_
sin_ = Tensor.sin_
sinh_ = Tensor.sinh_
sqrt_ = Tensor.sqrt_
square_ = Tensor.square_
tan_ = Tensor.tan_
tanh_ = Tensor.tanh_
trunc_ = Tensor.trunc_
xlogy_ = Tensor.xlogy_
zero_ = Tensor.zero_
detach = Tensor.detach
detach_ = Tensor.detach_
is_conj = Tensor.is_conj
is_floating_point = Tensor.is_floating_point
arccos = Tensor.acos
arcsin = Tensor.asin
arctan = Tensor.atan
arctan2 = Tensor.atan2
arccos_ = Tensor.acos_
arcsin_ = Tensor.asin_
arctan_ = Tensor.atan_
greater = Tensor.gt
greater_equal = Tensor.ge
less = Tensor.lt
less_equal = Tensor.le
not_equal = Tensor.ne
subtract = Tensor.sub
swapdims = Tensor.transpose
fix = Tensor.trunc
fix_ = Tensor.trunc_
clip_ = Tensor.clamp_

def softmax(input: Tensor, dim: _int, dtype: dtype | None = None) -> Tensor: ...
def log_softmax(input: Tensor, dim: _int, dtype: dtype | None = None) -> Tensor: ...
def dropout(input: Tensor, p: _float, train: _bool) -> Tensor: ...
def layer_norm(
    input: Tensor,
    normalized_shape: _int | Sequence[_int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: _float = 1e-05,
    cudnn_enable: _bool = True,
) -> Tensor: ...
def group_norm(
    input: Tensor,
    num_groups: _int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: _float = 1e-05,
    cudnn_enabled: _bool = True,
) -> Tensor: ...
def batch_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: _bool,
    momentum: _float,
    eps: _float,
    cudnn_enabled: _bool,
) -> Tensor: ...
def instance_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    use_input_stats: _bool,
    momentum: _float,
    eps: _float,
    cudnn_enabled: _bool,
) -> Tensor: ...
def max_pool1d(
    input: Tensor,
    kernel_size: _int | Sequence[_int],
    stride: _int | Sequence[_int] = (),
    padding: _int | Sequence[_int] = 0,
    dilation: _int | Sequence[_int] = 1,
    ceil_mode: _bool = False,
) -> Tensor: ...
def max_pool1d_with_indices(
    input: Tensor,
    kernel_size: _int | Sequence[_int],
    stride: _int | Sequence[_int] = (),
    padding: _int | Sequence[_int] = 0,
    dilation: _int | Sequence[_int] = 1,
    ceil_mode: _bool = False,
) -> tuple[Tensor, Tensor]: ...
def max_pool2d(
    input: Tensor,
    kernel_size: _int | Sequence[_int],
    stride: _int | Sequence[_int] = (),
    padding: _int | Sequence[_int] = 0,
    dilation: _int | Sequence[_int] = 1,
    ceil_mode: _bool = False,
) -> Tensor: ...
def max_pool3d(
    input: Tensor,
    kernel_size: _int | Sequence[_int],
    stride: _int | Sequence[_int] = (),
    padding: _int | Sequence[_int] = 0,
    dilation: _int | Sequence[_int] = 1,
    ceil_mode: _bool = False,
) -> Tensor: ...
def adaptive_max_pool1d(
    input: Tensor, output_size: _int | Sequence[_int]
) -> tuple[Tensor, Tensor]: ...
def embedding(
    weight: Tensor,
    indices: Tensor,
    padding_idx: _int = -1,
    scale_grad_by_freq: _bool = False,
    sparse: _bool = False,
) -> Tensor: ...
def celu(input: Tensor, alpha: _float = 1.0) -> Tensor: ...
def selu(input: Tensor) -> Tensor: ...
def threshold(input: Tensor, threshold: _float, value: _float) -> Tensor: ...
def rrelu(
    input: Tensor,
    lower: _float = 0.125,
    upper: _float = 1.0 / 3.0,
    training: _bool = False,
    generator: Generator | None = None,
) -> Tensor: ...
def rrelu_(
    input: Tensor,
    lower: _float = 0.125,
    upper: _float = 1.0 / 3.0,
    training: _bool = False,
    generator: Generator | None = None,
) -> Tensor: ...
def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    pos_weight: Tensor | None = None,
    reduction: _int = 0,
) -> Tensor: ...
def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: _float = 0.0, reduction: _int = 0
) -> Tensor: ...
def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: _float = 1.0, reduction: _int = 0
) -> Tensor: ...
def kl_div(
    input: Tensor, target: Tensor, reduction: _int = 0, *, log_target: _bool = False
) -> Tensor: ...
def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: _float = 0.0, reduction: _int = 0
) -> Tensor: ...
def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: _bool,
    full: _bool,
    eps: _float,
    reduction: _int,
) -> Tensor: ...
def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: _float = 1.0,
    p: _float = 2.0,
    eps: _float = 1e-06,
    swap: _bool = False,
    reduction: _int = 0,
) -> Tensor: ...
def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor | Sequence[_int],
    target_lengths: Tensor | Sequence[_int],
    blank: _int = 0,
    reduction: _int = 0,
    zero_infinity: _bool = False,
) -> Tensor: ...
@overload
def atleast_1d(tensor: Tensor, /) -> Tensor: ...
@overload
def atleast_1d(*tensors: Tensor | Sequence[Tensor]) -> tuple[Tensor, ...]: ...
@overload
def atleast_2d(tensor: Tensor, /) -> Tensor: ...
@overload
def atleast_2d(*tensors: Tensor | Sequence[Tensor]) -> tuple[Tensor, ...]: ...
@overload
def atleast_3d(tensor: Tensor, /) -> Tensor: ...
@overload
def atleast_3d(*tensors: Tensor | Sequence[Tensor]) -> tuple[Tensor, ...]: ...
def hstack(tensors: Sequence[Tensor]) -> Tensor: ...
def vstack(tensors: Sequence[Tensor]) -> Tensor: ...
def row_stack(tensors: Sequence[Tensor]) -> Tensor: ...
def dstack(tensors: Sequence[Tensor]) -> Tensor: ...
def column_stack(tensors: Sequence[Tensor]) -> Tensor: ...
def fliplr(input: Tensor) -> Tensor: ...
def flipud(input: Tensor) -> Tensor: ...
def ravel(input: Tensor) -> Tensor: ...

# rumus/_shapeops.py: torch's diagonal, gathering, splitting and rotating compositions
def diag(input: Tensor, diagonal: int = 0) -> Tensor: ...
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor: ...
def block_diag(*tensors: Tensor) -> Tensor: ...
def take(input: Tensor, index: Tensor) -> Tensor: ...
def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor: ...
def isin(
    elements: Tensor | complex,
    test_elements: Tensor | complex,
    *,
    assume_unique: bool = False,
    invert: bool = False,
) -> Tensor: ...
def tensor_split(
    input: Tensor, indices_or_sections: int | Sequence[int] | Tensor, dim: int = 0
) -> tuple[Tensor, ...]: ...
def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor: ...
def tril_indices(
    row: int,
    col: int,
    offset: int = 0,
    *,
    dtype: dtype = ...,
    device: str | device | None = None,
    layout: Any = None,
) -> Tensor: ...
def triu_indices(
    row: int,
    col: int,
    offset: int = 0,
    *,
    dtype: dtype = ...,
    device: str | device | None = None,
    layout: Any = None,
) -> Tensor: ...
def cartesian_prod(*tensors: Tensor) -> Tensor: ...
def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor: ...
def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor: ...
def trapezoid(
    y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1
) -> Tensor: ...
def cumulative_trapezoid(
    y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1
) -> Tensor: ...
def cov(
    input: Tensor,
    *,
    correction: int = 1,
    fweights: Tensor | None = None,
    aweights: Tensor | None = None,
) -> Tensor: ...
def corrcoef(input: Tensor) -> Tensor: ...
def hann_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: dtype | None = None,
    layout: Any = None,
    device: str | device | None = None,
    requires_grad: bool = False,
) -> Tensor: ...
def hamming_window(
    window_length: int,
    periodic: bool = True,
    alpha: float = 0.54,
    beta: float = 0.46,
    *,
    dtype: dtype | None = None,
    layout: Any = None,
    device: str | device | None = None,
    requires_grad: bool = False,
) -> Tensor: ...
def blackman_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: dtype | None = None,
    layout: Any = None,
    device: str | device | None = None,
    requires_grad: bool = False,
) -> Tensor: ...
def bartlett_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: dtype | None = None,
    layout: Any = None,
    device: str | device | None = None,
    requires_grad: bool = False,
) -> Tensor: ...
def kaiser_window(
    window_length: int,
    periodic: bool = True,
    beta: float = 12.0,
    *,
    dtype: dtype | None = None,
    layout: Any = None,
    device: str | device | None = None,
    requires_grad: bool = False,
) -> Tensor: ...
def quantile(
    input: Tensor,
    q: float | Tensor,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor: ...
def nanquantile(
    input: Tensor,
    q: float | Tensor,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor: ...

# rumus.linalg under PyTorch's older names
def det(input: Tensor) -> Tensor: ...
def slogdet(input: Tensor) -> SlogdetResult: ...
def logdet(input: Tensor) -> Tensor: ...
def inverse(input: Tensor) -> Tensor: ...
def cholesky(input: Tensor, upper: _bool = False) -> Tensor: ...
def matrix_power(input: Tensor, n: _int) -> Tensor: ...
def matrix_exp(input: Tensor) -> Tensor: ...
def pinverse(input: Tensor, rcond: _float = 1e-15) -> Tensor: ...

# PyTorch's remaining elementwise math and legacy norms (rumus/_mathops.py)
def deg2rad(input: Tensor) -> Tensor: ...
def deg2rad_(input: Tensor) -> Tensor: ...
def rad2deg(input: Tensor) -> Tensor: ...
def rad2deg_(input: Tensor) -> Tensor: ...
def copysign(input: Tensor, other: Tensor | Number) -> Tensor: ...
def fmax(input: Tensor, other: Tensor) -> Tensor: ...
def fmin(input: Tensor, other: Tensor) -> Tensor: ...
def heaviside(input: Tensor, values: Tensor) -> Tensor: ...
def gcd(input: Tensor, other: Tensor) -> Tensor: ...
def gcd_(input: Tensor, other: Tensor) -> Tensor: ...
def lcm(input: Tensor, other: Tensor) -> Tensor: ...
def lcm_(input: Tensor, other: Tensor) -> Tensor: ...
def float_power(input: Tensor | Number, exponent: Tensor | Number) -> Tensor: ...
def signbit(input: Tensor) -> Tensor: ...
def ldexp(input: Tensor, other: Tensor) -> Tensor: ...
def ldexp_(input: Tensor, other: Tensor) -> Tensor: ...
def frexp(input: Tensor) -> FrexpResult: ...
def norm(
    input: Tensor,
    p: _float | str | None = "fro",
    dim: _int | Sequence[_int] | None = None,
    keepdim: _bool = False,
    dtype: DType | None = None,
) -> Tensor: ...
def dist(input: Tensor, other: Tensor, p: _float = 2) -> Tensor: ...
def renorm(input: Tensor, p: _float, dim: _int, maxnorm: _float) -> Tensor: ...

# rumus.serialization
def save(
    obj: object,
    f: str | PathLike[str] | SupportsWrite[bytes],
    pickle_module: Any = None,
    pickle_protocol: _int = 4,
    **kwargs: Any,
) -> None: ...
def load(
    f: str | PathLike[str] | IO[bytes],
    map_location: str | device | dict[str, str] | Any = None,
    pickle_module: Any = None,
    *,
    weights_only: _bool | None = None,
    mmap: _bool | None = None,
    **pickle_kw: Any,
) -> Any: ...
def set_printoptions(
    precision: _int | None = None,
    threshold: _float | None = None,
    edgeitems: _int | None = None,
    linewidth: _int | None = None,
    profile: str | None = None,
    sci_mode: _bool | None = None,
) -> None: ...
