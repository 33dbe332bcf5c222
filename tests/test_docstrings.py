"""Every public callable of rumus has a docstring (the API reference in docs/ is built
from them, and help() shows them).

The walk covers the public names of the modules below (their ``__all__``), the members of
the classes they define (methods, properties, class and static methods) and Tensor's
methods. A method that overrides a documented base-class method inherits its docstring,
as inspect.getdoc (and help()) show it.

Python-defined objects carry their docstrings in place, with an ``Args:`` section when
they take arguments. Objects of the native module (pyo3 functions, Tensor's methods and
properties) take theirs from ``///`` doc comments in rust/py/*.rs (CONTRIBUTING.md,
"Docstrings and the docs site").
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
    missing = [q for q, obj, native in walk() if native and _doc(obj, True) is None]
    assert not missing, (
        f"native objects without a docstring: {missing}. Add a /// doc comment in rust/py/ "
        "(see CONTRIBUTING.md)."
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
