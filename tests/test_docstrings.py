"""Every public callable of rumus has a docstring (the API reference in docs/ is built
from them, and help() shows them).

The walk covers the public names of the modules below (their ``__all__``), the members of
the classes they define (methods, properties, class and static methods) and Tensor's
methods. A method that overrides a documented base-class method inherits its docstring,
as inspect.getdoc (and help()) show it.

Python-defined objects must all be documented. Objects of the native module (pyo3
functions, Tensor's methods and properties) take their docstrings from ``///`` doc
comments in rust/py/*.rs; those still missing are listed in RUST_TODO, which may only
shrink: a new undocumented native name fails, and so does a listed one that has gained
a docstring (remove it from the list).
"""

import importlib
import inspect
import types

import rumus
from rumus import _rumus

MODULES = [
    "rumus",
    "rumus.nn",
    "rumus.nn.functional",
    "rumus.nn.init",
    "rumus.nn.utils",
    "rumus.optim",
    "rumus.optim.lr_scheduler",
    "rumus.utils.data",
    "rumus.utils.checkpoint",
    "rumus.linalg",
    "rumus.distributions",
    "rumus.distributions.constraints",
    "rumus.distributions.transforms",
    "rumus.distributions.kl",
    "rumus.autograd",
    "rumus.gpu",
    "rumus.serialization",
    "rumus.accelerator",
    "rumus.compat",
]
if importlib.util.find_spec("rumus.special") is not None:
    MODULES.append("rumus.special")

NATIVE_KINDS = (
    types.BuiltinFunctionType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
    types.WrapperDescriptorType,
)

# Native names without a docstring yet, by namespace (rumus.Tensor's methods, rumus.*,
# ...). Add a ``///`` doc comment in rust/py/ (or a doc literal to a macro table row),
# rebuild, and delete the name here.
RUST_TODO = {
    "rumus": (
        "Generator Tensor as_tensor broadcast_shapes bucketize cat device dtype empty "
        "empty_like eye from_numpy full full_like get_default_device get_num_threads "
        "get_rng_state initial_seed is_grad_enabled is_tensor linspace manual_seed one_hot "
        "ones ones_like promote_types rand rand_like randn randn_like randperm result_type "
        "searchsorted set_default_device set_rng_state stack tensor zeros zeros_like"
    ),
    "rumus.Generator": "get_state initial_seed manual_seed set_state",
    "rumus.Tensor": (
        "T abs abs_ absolute absolute_ acos acos_ add add_ addbmm addbmm_ addcdiv addcdiv_ "
        "addcmul addcmul_ addmm addmm_ addmv addmv_ all allclose amax amin any argmax argmin "
        "argsort asin asin_ atan atan2 atan2_ atan_ backward baddbmm baddbmm_ bernoulli_ "
        "bfloat16 bincount bitwise_and bitwise_and_ bitwise_not bitwise_not_ bitwise_or "
        "bitwise_or_ bitwise_xor bitwise_xor_ bmm bool broadcast_to byte ceil ceil_ chunk "
        "clamp clamp_ clamp_max clamp_max_ clamp_min clamp_min_ clip clone contiguous copy_ "
        "cos cos_ cosh cosh_ cross cumprod cumsum data_ptr device diagonal diff dim div div_ "
        "divide dot double dtype element_size elu eq eq_ equal erf erf_ exp exp2 exp2_ exp_ "
        "expand expand_as expm1 expm1_ fill_ flatten float floor floor_ floor_divide "
        "floor_divide_ fmod fmod_ gather ge ge_ gelu grad grad_fn gt gt_ half histc histogram "
        "hypot hypot_ index_select int is_contiguous is_cpu is_floating_point is_gpu is_leaf "
        "isclose isfinite isinf isnan item itemsize kron kthvalue le le_ leaky_relu lerp "
        "lerp_ log log10 log10_ log1p log1p_ log2 log2_ log_ log_softmax logaddexp logaddexp2 "
        "logical_and logical_and_ logical_not logical_not_ logical_or logical_or_ logical_xor "
        "logical_xor_ logit logit_ logsumexp long lt lt_ mT masked_fill masked_fill_ matmul "
        "maximum mean min minimum mish mish_ mm mode moveaxis movedim msort mul mul_ multiply "
        "multiply_ mv nan_to_num nan_to_num_ nanmedian narrow nbytes ndim ndimension ne ne_ "
        "neg neg_ negative negative_ nelement nonzero normal_ numel outer permute pow pow_ "
        "prod reciprocal reciprocal_ relu relu_ remainder remainder_ repeat requires_grad "
        "requires_grad_ reshape reshape_as retain_grad retains_grad roll round round_ rsqrt "
        "rsqrt_ scatter scatter_ scatter_add scatter_add_ select shape sigmoid sigmoid_ sign "
        "sign_ silu silu_ sin sin_ sinh sinh_ size softmax softplus sort split sqrt sqrt_ "
        "square square_ squeeze std storage_offset stride sub sub_ sum swapaxes t tan tan_ "
        "tanh tanh_ tile to tolist topk trace transpose tril triu true_divide true_divide_ "
        "trunc trunc_ type type_as unbind unflatten uniform_ unique unique_consecutive "
        "unsqueeze var view view_as xlogy xlogy_ zero_"
    ),
    "rumus.autograd.Node": "name",
    "rumus.autograd": "is_anomaly_enabled",
    "rumus.device": "index type",
    "rumus.dtype": "is_floating_point is_signed itemsize",
    "rumus.nn.functional": (
        "adaptive_avg_pool1d adaptive_avg_pool2d adaptive_max_pool1d adaptive_max_pool2d "
        "avg_pool1d avg_pool2d conv1d conv2d conv_transpose1d conv_transpose2d fold "
        "layer_norm linear log_softmax max_pool1d max_pool2d softmax unfold"
    ),
}


def _is_native(obj):
    if isinstance(obj, NATIVE_KINDS):
        return True
    return inspect.isclass(obj) and getattr(_rumus, obj.__name__, None) is obj


def _doc(obj, native):
    if native:
        doc = obj.__doc__
    else:
        doc = inspect.getdoc(obj)
    return doc if isinstance(doc, str) and doc.strip() else None


def _public_names(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    return sorted(names)


def _members(cls):
    for name, value in sorted(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            yield name, value.__func__
        elif isinstance(value, property) or callable(value) or isinstance(value, NATIVE_KINDS):
            if inspect.isclass(value):
                continue  # nested classes are walked where they are exported
            yield name, value


def walk():
    """(qualified name, object, native) for every public callable, each object once:
    Tensor's members first, so that rumus.exp is reported as rumus.Tensor.exp."""
    seen = set()
    out = []

    def visit(qual, obj):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        out.append((qual, obj, _is_native(obj)))

    visit("rumus.Tensor", rumus.Tensor)
    for name, member in _members(rumus.Tensor):
        visit(f"rumus.Tensor.{name}", member)
    for modname in MODULES:
        module = importlib.import_module(modname)
        for name in _public_names(module):
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType) or not callable(obj):
                continue
            if not (inspect.isclass(obj) or inspect.isroutine(obj) or _is_native(obj)):
                continue  # instances (constraints such as constraints.real)
            visit(f"{modname}.{name}", obj)
            if inspect.isclass(obj) and obj.__module__.startswith("rumus"):
                for member_name, member in _members(obj):
                    visit(f"{modname}.{name}.{member_name}", member)
    return out


def _todo():
    return {f"{prefix}.{name}" for prefix, names in RUST_TODO.items() for name in names.split()}


def test_python_objects_have_docstrings():
    missing = [q for q, obj, native in walk() if not native and _doc(obj, False) is None]
    assert not missing, (
        f"{len(missing)} public Python objects have no docstring (one summary line, then "
        f"Args/Returns in Google style): {missing}"
    )


def test_python_callables_document_their_arguments():
    """A Python function or class that takes arguments lists them in an ``Args:`` section."""
    missing = []
    for q, obj, native in walk():
        if native or isinstance(obj, property):
            continue
        try:
            params = inspect.signature(obj).parameters
        except (TypeError, ValueError):
            continue
        if [p for p in params if p not in ("self", "cls")] and "Args:" not in _doc(obj, False):
            missing.append(q)
    assert not missing, f"docstrings without an Args: section: {missing}"


def test_native_objects_have_docstrings():
    missing = {q for q, obj, native in walk() if native and _doc(obj, True) is None}
    new = sorted(missing - _todo())
    assert not new, (
        f"native objects without a docstring: {new}. Add a /// doc comment in rust/py/ "
        "(see CONTRIBUTING.md)."
    )


def test_rust_todo_list_is_current():
    missing = {q for q, obj, native in walk() if native and _doc(obj, True) is None}
    stale = sorted(_todo() - missing)
    assert not stale, (
        f"these have docstrings now (or are gone): remove them from RUST_TODO: {stale}"
    )


def test_walk_covers_the_api():
    names = {q for q, _, _ in walk()}
    # A sample across the modules, so a broken walk cannot pass vacuously.
    for q in [
        "rumus.Tensor.sum",
        "rumus.tensor",
        "rumus.nn.Linear",
        "rumus.nn.Module.state_dict",
        "rumus.nn.functional.cross_entropy",
        "rumus.optim.AdamW",
        "rumus.optim.lr_scheduler.CosineAnnealingLR",
        "rumus.utils.data.DataLoader",
        "rumus.linalg.svd",
        "rumus.distributions.Normal.log_prob",
        "rumus.autograd.grad",
        "rumus.gpu.memory_allocated",
    ]:
        assert q in names, q
    assert len(names) > 1000
