"""rumus: a deep-learning framework with a Rust engine and PyTorch's Python API."""

import math as _math

from . import _rumus
from ._rumus import (
    Generator,
    Tensor,
    arange,
    as_tensor,
    bfloat16,
    binomial,
    bool,
    broadcast_shapes,
    bucketize,
    cat,
    complex,
    complex64,
    complex128,
    device,
    dtype,
    einsum,
    empty,
    empty_cache,
    empty_like,
    eye,
    float16,
    float32,
    float64,
    from_numpy,
    full,
    full_like,
    get_default_device,
    get_default_dtype,
    get_num_threads,
    get_rng_state,
    initial_seed,
    int32,
    int64,
    is_tensor,
    linspace,
    manual_seed,
    meshgrid,
    one_hot,
    ones,
    ones_like,
    poisson,
    polar,
    promote_types,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    result_type,
    searchsorted,
    set_default_device,
    set_default_dtype,
    set_num_threads,
    set_rng_state,
    stack,
    tensor,
    tensordot,
    uint8,
    view_as_complex,
    view_as_real,
    where,
    xlogy,
    zeros,
    zeros_like,
)
from ._size import Size
from ._tensor_str import set_printoptions
from ._tensor_str import tensor_repr as _tensor_repr

# Cargo.toml's version, compiled into the extension: always that of the binary in use.
__version__ = _rumus.__version__

# PyTorch's dtype aliases.
float = float32
double = float64
half = float16
long = int64
int = int32
cfloat = complex64
cdouble = complex128

concat = concatenate = cat

Tensor.__repr__ = _tensor_repr
Tensor.__str__ = _tensor_repr
Tensor.__module__ = "rumus"


def _method_function(name):
    """`rumus.exp(t)` is `Tensor.exp(t)`: the Rust method itself, no wrapper."""
    return getattr(Tensor, name)


# Functions that take a tensor first and are Tensor methods in Rust: the
# unary table's methods (rust/ops/elementwise/unary.rs), and these.
for _name in [
    *_rumus._unary_functions,
    *(
        "add sub mul multiply div divide true_divide floor_divide remainder fmod pow atan2 "
        "round gelu leaky_relu elu softplus maximum minimum eq ne lt le gt ge "
        "logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor "
        "isnan isinf isfinite clamp clip masked_fill "
        "sum mean prod amax amin max min argmax argmin var std logsumexp all any cumsum cumprod "
        "matmul mm bmm mv dot outer reshape permute transpose swapaxes t "
        "flatten unflatten unsqueeze squeeze "
        "narrow select unbind movedim moveaxis split chunk flip roll tril triu diagonal trace "
        "gather scatter scatter_add index_select nonzero clone numel "
        "sort argsort msort topk kthvalue median nanmedian mode unique unique_consecutive "
        "bincount histc histogram "
        "addmm addmv addbmm baddbmm addr addcmul addcdiv lerp hypot logaddexp logaddexp2 logit "
        "nan_to_num isclose allclose equal clamp_min clamp_max diff cross kron "
        "tile repeat_interleave conj conj_physical resolve_conj angle sgn is_complex"
    ).split(),
]:
    globals()[_name] = _method_function(_name)
del _name


def _rebuild_tensor(array, dtype_name, requires_grad, device_name="cpu"):
    t = from_numpy(array).to(globals()[dtype_name]).to(device_name)
    return t.requires_grad_() if requires_grad else t


def _reduce_ex(self, protocol):
    """Pickles a tensor as its data (a NumPy array), dtype, requires_grad and
    device; no history. Unpickling puts it back on its device, as PyTorch does."""
    name = str(self.dtype).removeprefix("rumus.")
    data = self.detach().cpu()
    array = (data.float() if self.dtype == bfloat16 else data).numpy().copy()
    return (_rebuild_tensor, (array, name, self.requires_grad, str(self.device)))


def _deepcopy(self, memo):
    if not self.is_leaf:
        raise RuntimeError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
            "protocol at the moment."
        )
    out = memo.get(id(self))
    if out is None:
        out = memo[id(self)] = (
            type(self)(self.detach().clone(), self.requires_grad)
            if type(self) is not Tensor
            else self.detach().clone().requires_grad_(self.requires_grad)
        )
    return out


def _format(self, spec):
    """A one-element tensor formats as its value (f"{loss:.4f}"), others as
    their repr; a format spec on a larger tensor is a TypeError, as in PyTorch."""
    if self.numel() == 1:
        return format(self.item(), spec)
    if spec:
        raise TypeError(
            f"unsupported format string {spec!r} passed to rumus.Tensor.__format__: "
            f"only one-element tensors take a format spec (this one has shape {tuple(self.shape)})"
        )
    return _tensor_repr(self)


def _round(self, ndigits=None):
    """round(t) and round(t, n): a tensor, as torch.round(t, decimals=n)."""
    return self.round() if ndigits is None else self.round(decimals=ndigits)


_data = Tensor.__dict__["data"]


def _set_data(self, value):
    """``t.data = value``: writes value into t's memory, outside autograd (so
    ``p.data -= lr * p.grad`` works). PyTorch rebinds t to value's memory
    instead; rumus tensors cannot change memory, so shape, dtype and device
    must match."""
    if not isinstance(value, Tensor):
        raise TypeError(f"Tensor.data must be a Tensor, not {type(value).__name__}")
    same = value.shape == self.shape and value.stride() == self.stride()
    if same and value.device.type == self.device.type == "cpu":
        if value.data_ptr() == self.data_ptr():
            return  # `t.data op= x` already wrote in place (a GPU copy onto itself is harmless)
    if (value.shape, value.dtype, value.device) != (self.shape, self.dtype, self.device):
        raise RuntimeError(
            "Tensor.data = value: rumus copies value into the tensor's memory, so it needs "
            f"the same shape, dtype and device; got {tuple(value.shape)} {value.dtype} "
            f"{value.device} for a tensor of {tuple(self.shape)} {self.dtype} {self.device}"
        )
    _data.__get__(self).copy_(value)


Tensor.data = property(_data.__get__, _set_data, doc=_data.__doc__)
Tensor.__reduce_ex__ = _reduce_ex
Tensor.__deepcopy__ = _deepcopy
Tensor.__format__ = _format
Tensor.__round__ = _round

from . import (  # noqa: E402
    _composite,
    _mathops,
    accelerator,
    amp,
    autograd,
    backends,
    cuda,
    gpu,
    linalg,
    nn,
    onnx,
    optim,
    special,
    utils,
)
from ._complex import imag, real  # noqa: E402
from ._porting import compile  # noqa: E402
from ._shapeops import (  # noqa: E402
    bartlett_window,
    blackman_window,
    block_diag,
    cartesian_prod,
    combinations,
    corrcoef,
    cov,
    cumulative_trapezoid,
    diag,
    diag_embed,
    hamming_window,
    hann_window,
    isin,
    kaiser_window,
    nanquantile,
    quantile,
    rot90,
    take,
    take_along_dim,
    tensor_split,
    trapezoid,
    tril_indices,
    triu_indices,
    vander,
)
from ._toplevel import (  # noqa: E402
    abs_,
    acos_,
    acosh_,
    adaptive_avg_pool1d,
    adaptive_max_pool1d,
    addmv_,
    arccos,
    arccos_,
    arccosh_,
    arcsin,
    arcsin_,
    arcsinh_,
    arctan,
    arctan2,
    arctan_,
    arctanh_,
    asin_,
    asinh_,
    atan_,
    atanh_,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    avg_pool1d,
    batch_norm,
    bilinear,
    binary_cross_entropy_with_logits,
    broadcast_to,
    ceil_,
    celu,
    celu_,
    channel_shuffle,
    clamp_,
    clamp_max_,
    clamp_min_,
    clip_,
    column_stack,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    cos_,
    cosh_,
    cosine_embedding_loss,
    ctc_loss,
    detach,
    detach_,
    dropout,
    dstack,
    embedding,
    erf_,
    erfc_,
    exp2_,
    exp_,
    expm1_,
    fill_,
    fix,
    fix_,
    fliplr,
    flipud,
    floor_,
    greater,
    greater_equal,
    group_norm,
    hardshrink,
    hinge_embedding_loss,
    hstack,
    i0_,
    instance_norm,
    is_conj,
    is_floating_point,
    kl_div,
    layer_norm,
    less,
    less_equal,
    log1p_,
    log2_,
    log10_,
    log_,
    log_softmax,
    logit_,
    margin_ranking_loss,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool3d,
    nan_to_num_,
    neg_,
    negative_,
    not_equal,
    pixel_shuffle,
    pixel_unshuffle,
    poisson_nll_loss,
    prelu,
    ravel,
    reciprocal_,
    relu_,
    rms_norm,
    round_,
    row_stack,
    rrelu,
    rrelu_,
    rsqrt_,
    selu,
    selu_,
    sigmoid_,
    sin_,
    sinh_,
    softmax,
    sqrt_,
    square_,
    subtract,
    swapdims,
    tan_,
    tanh_,
    threshold,
    threshold_,
    triplet_margin_loss,
    trunc_,
    vstack,
    xlogy_,
    zero_,
)
from .amp.autocast_mode import (  # noqa: E402
    autocast,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from .autograd import (  # noqa: E402
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from .quantization._tensors import (  # noqa: E402
    per_channel_affine,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
    q8,
    qint8,
)
from .serialization import load, save  # noqa: E402
from .utils.dlpack import from_dlpack  # noqa: E402

_composite.install(globals())
_mathops.install(globals())
special._install(globals())
_standard_gamma = _rumus._standard_gamma
_standard_gamma_grad = _rumus._standard_gamma_grad
cosine_similarity = nn.functional.cosine_similarity
pairwise_distance = nn.functional.pairwise_distance


def det(input):
    """The determinant of square matrices (batched); see :func:`rumus.linalg.det`.

    Args:
        input (Tensor): of shape ``(*, n, n)``.

    Returns:
        Tensor: of shape ``(*)``.
    """
    return linalg.det(input)


def slogdet(input):
    """The sign and log of the absolute determinant; see :func:`rumus.linalg.slogdet`.

    Args:
        input (Tensor): of shape ``(*, n, n)``.

    Returns:
        tuple[Tensor, Tensor]: ``(sign, logabsdet)``, each of shape ``(*)``.
    """
    return linalg.slogdet(input)


def logdet(input):
    """log det(input): nan for a negative determinant, -inf for a singular matrix.

    Args:
        input (Tensor): of shape ``(*, n, n)``.

    Returns:
        Tensor: of shape ``(*)``.
    """
    sign, logabs = linalg.slogdet(input)
    return where(sign < 0, logabs.detach() * _math.nan, logabs)


def inverse(input):
    """The inverse of square matrices; see :func:`rumus.linalg.inv`.

    Args:
        input (Tensor): of shape ``(*, n, n)``.

    Returns:
        Tensor: of the input's shape.
    """
    return linalg.inv(input)


def cholesky(input, upper=False):
    """The Cholesky factor of positive-definite matrices; see :func:`rumus.linalg.cholesky`.

    Args:
        input (Tensor): of shape ``(*, n, n)``.
        upper (bool): return the upper factor ``U`` (``A = U^T U``) instead of ``L``.

    Returns:
        Tensor: the triangular factor.
    """
    return linalg.cholesky(input, upper=upper)


def matrix_power(input, n):
    """The ``n``-th power of square matrices; see :func:`rumus.linalg.matrix_power`.

    Args:
        input (Tensor): of shape ``(*, m, m)``.
        n (int): the exponent (negative powers invert).

    Returns:
        Tensor: of the input's shape.
    """
    return linalg.matrix_power(input, n)


def matrix_exp(input):
    """The matrix exponential; see :func:`rumus.linalg.matrix_exp`.

    Args:
        input (Tensor): of shape ``(*, n, n)``.

    Returns:
        Tensor: of the input's shape.
    """
    return linalg.matrix_exp(input)


def pinverse(input, rcond=1e-15):
    """The Moore-Penrose pseudo-inverse; see :func:`rumus.linalg.pinv`.

    Args:
        input (Tensor): of shape ``(*, m, n)``.
        rcond (float): singular values below ``rcond`` times the largest count as zero.

    Returns:
        Tensor: of shape ``(*, n, m)``.
    """
    return linalg.pinv(input, rtol=rcond)


for _name in "det slogdet logdet inverse cholesky matrix_power matrix_exp pinverse".split():
    setattr(Tensor, _name, globals()[_name])
del _name

# Submodules that most programs never touch load on first use (`rumus.distributions`
# or `import rumus.distributions`), which keeps `import rumus` fast.
_LAZY_SUBMODULES = (
    "ao",
    "compat",
    "distributed",
    "distributions",
    "fft",
    "func",
    "quantization",
)


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_LAZY_SUBMODULES})


__all__ = [n for n in dir() if not n.startswith("_")] + list(_LAZY_SUBMODULES)
