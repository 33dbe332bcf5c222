"""The type stubs (python/rumus/_rumus.pyi, python/rumus/__init__.pyi) against the
run-time names, in both directions, so that they cannot drift apart:

- every public name of rumus._rumus, of the rumus namespace and of the native classes
  (Tensor, dtype, device, Generator, Node) is in the stubs, Tensor's operators and other
  dunder methods included;
- every name the stubs declare exists at run time;
- every argument a stub lets a caller pass by keyword is an argument of the run-time
  function (a misspelt name would let the type checker pass a call that fails), and every
  named argument of the run-time function is in the stub (a missing one would make the type
  checker refuse a call that works).

A failure names what to add or remove; CONTRIBUTING.md ("Type stubs") has the steps.
"""

import ast
import inspect
import pathlib
import types

import pytest
import rumus
from rumus import _rumus

PACKAGE = pathlib.Path(rumus.__file__).parent
CLASSES = ["Tensor", "dtype", "device", "Generator", "Node"]

# Declared in the stubs although the run time lacks the attribute, each for a reason.
STUB_ONLY = {
    # Tensor iterates through __getitem__ (the sequence protocol); type checkers only
    # treat a class with __iter__ as iterable.
    ("Tensor", "__iter__"),
}
# Class attributes every Python class has: not required in a stub, where object's own
# declarations cover them (constructors that take arguments are declared all the same).
CLASS_MACHINERY = {"__doc__", "__module__", "__dict__", "__weakref__", "__init__", "__new__"}
CLASS_MACHINERY |= {"__repr__", "__str__"}


def _parse(name):
    return ast.parse((PACKAGE / name).read_text(), filename=name)


def _defined(body):
    """Names a stub body defines: functions, classes, (annotated) assignments and
    re-exports written ``from m import x as x``."""
    out = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.setdefault(node.target.id, []).append(node)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, []).append(node)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.asname == alias.name:
                    out.setdefault(alias.name, []).append(node)
    return out


def _public(names):
    return {n for n in names if not n.startswith("_")}


def _class_api(cls):
    own = set(vars(cls))
    dunders = {n for n in own if n.startswith("__") and n.endswith("__")}
    return _public(own) | (dunders - CLASS_MACHINERY)


def _missing_message(what, names, stub):
    return (
        f"{what} has names its stub python/rumus/{stub} lacks: {sorted(names)}. Declare them "
        "(with their types) in the stub: see CONTRIBUTING.md, 'Type stubs'."
    )


NATIVE = _defined(_parse("_rumus.pyi").body)
PACKAGE_NS = _defined(_parse("__init__.pyi").body)


def test_native_module_names_are_in_the_stub():
    runtime = {n for n in dir(_rumus) if not n.startswith("__")}
    missing = _public(runtime) - set(NATIVE)
    assert not missing, _missing_message("rumus._rumus", missing, "_rumus.pyi")
    extra = set(NATIVE) - runtime
    assert not extra, f"_rumus.pyi declares names rumus._rumus lacks: {sorted(extra)}"


@pytest.mark.parametrize("name", CLASSES)
def test_class_names_are_in_the_stub(name):
    cls = getattr(_rumus, name)
    (node,) = NATIVE[name]
    stub = set(_defined(node.body))
    missing = _class_api(cls) - stub
    assert not missing, _missing_message(f"rumus.{name}", missing, "_rumus.pyi")
    extra = {n for n in stub if not hasattr(cls, n) and (name, n) not in STUB_ONLY}
    assert not extra, f"_rumus.pyi declares {name} attributes it lacks: {sorted(extra)}"


def test_stub_only_exceptions_are_still_needed():
    for cls, attr in STUB_ONLY:
        assert not hasattr(getattr(_rumus, cls), attr), f"{cls}.{attr} exists now: unlist it"


def test_package_namespace_is_in_the_stub():
    # Submodules show up as attributes once anything imports them: compare the rest.
    runtime = {n for n in dir(rumus) if not isinstance(getattr(rumus, n), types.ModuleType)}
    missing = _public(runtime) - set(PACKAGE_NS)
    assert not missing, _missing_message("rumus", missing, "__init__.pyi")
    extra = {n for n in PACKAGE_NS if not hasattr(rumus, n)}
    assert not extra, f"__init__.pyi declares names rumus lacks: {sorted(extra)}"


def _keyword_names(fn):
    """Arguments a call may pass by keyword, under a stub's def (self/cls left out)."""
    args = fn.args
    names = [a.arg for a in args.args + args.kwonlyargs]
    return {n for n in names if n not in ("self", "cls")}


def _runtime_parameters(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None  # no signature to compare (slot wrappers, some builtins)
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return {n for n, p in sig.parameters.items() if p.kind is not p.POSITIONAL_ONLY}


def _keyword_mismatches(defs, owner):
    bad = []
    for name, nodes in defs.items():
        if name.startswith("__"):
            continue
        runtime = getattr(owner, name, None)
        fns = [n for n in nodes if isinstance(n, ast.FunctionDef)]
        if runtime is None or not fns or isinstance(runtime, property):
            continue
        if any(
            isinstance(d, ast.Name) and d.id == "property" for f in fns for d in f.decorator_list
        ):
            continue
        accepted = _runtime_parameters(runtime)
        if accepted is None:
            continue
        accepted.discard("self")
        for fn in fns:
            wrong = _keyword_names(fn) - accepted
            if wrong:
                bad.append(f"{name}: {sorted(wrong)} (run time takes {sorted(accepted)})")
    return bad


def _stub_names(fns):
    names, any_keyword = set(), False
    for fn in fns:
        a = fn.args
        names |= {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
        any_keyword |= a.kwarg is not None
    return names - {"self", "cls"}, any_keyword


def _missing_arguments(defs, owner, is_class):
    bad = []
    for name, nodes in defs.items():
        fns = [n for n in nodes if isinstance(n, ast.FunctionDef)]
        runtime = getattr(owner, name, None)
        if name.startswith("__") or runtime is None or not fns or isinstance(runtime, property):
            continue
        try:
            params = list(inspect.signature(runtime).parameters.values())
        except (TypeError, ValueError):
            continue
        if is_class and inspect.isfunction(runtime):
            params = params[1:]  # a Python function attached as a method: its first is self
        # *args forms are spelled out as overloads; **kwargs has no names to compare.
        named = {p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        stub, any_keyword = _stub_names(fns)
        missing = named - stub - {"self"}
        if missing and not any_keyword:
            bad.append(f"{name}: {sorted(missing)}")
    return bad


def test_run_time_arguments_are_in_the_stub():
    bad = _missing_arguments(NATIVE, _rumus, False)
    for name in CLASSES:
        (node,) = NATIVE[name]
        body = _defined(node.body)
        bad += [f"{name}.{b}" for b in _missing_arguments(body, getattr(_rumus, name), True)]
    bad += [f"rumus.{b}" for b in _missing_arguments(PACKAGE_NS, rumus, False)]
    assert not bad, "run-time arguments the stubs do not declare:\n" + "\n".join(bad)


def test_stub_keyword_names_exist_at_run_time():
    bad = _keyword_mismatches(NATIVE, _rumus)
    for name in CLASSES:
        (node,) = NATIVE[name]
        bad += [
            f"{name}.{b}" for b in _keyword_mismatches(_defined(node.body), getattr(_rumus, name))
        ]
    bad += [f"rumus.{b}" for b in _keyword_mismatches(PACKAGE_NS, rumus)]
    assert not bad, "stub arguments the run time does not accept by keyword:\n" + "\n".join(bad)


def test_typed_markers_ship_in_the_package():
    assert (PACKAGE / "py.typed").is_file()
    assert (PACKAGE / "_typing.pyi").is_file()
