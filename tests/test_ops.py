"""Generic tests of every entry of the op registry (tests/op_db.py).

- forward values against the entry's reference (NumPy; PyTorch too when importable), every
  sample, every accepted dtype, every variant (function, method, in place...), on the CPU;
- GPU parity: float32 / float16 / int64 results on the GPU equal the CPU's (gradients: see
  tests/test_gpu_gradcheck.py); an entry without a GPU kernel says why, must still raise
  there, and is skipped with its reason;
- bad input: unaccepted dtypes, in-place writes the input cannot hold, a string for a tensor,
  mismatched shapes and out-of-range dims raise one of the exception types PyTorch uses for
  user mistakes, never a Rust panic;
- coverage: every public function and Tensor method has an entry or is a listed exception.

An entry's known rumus bugs (op_db.Bug) turn the test they break into a strict xfail.
Gradients (gradcheck, gradgradcheck, non-contiguous inputs) run in tests/test_gradcheck.py.
"""

import inspect
import warnings

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F
from conftest import NOT_ON_GPU, assert_close, dtype_name, need_gpu, to_np
from op_db import (
    ALL,
    ALLOWED,
    FLOATS,
    GPU_DTYPES,
    OP_DB,
    Arg,
    Maker,
    Sample,
    applicable,
    build,
    call,
    can_cast,
    cast_values,
    is_inplace,
    variant_label,
)

try:
    import torch
except ImportError:  # the NumPy references are complete without it
    torch = None


def _params(ops_dtypes):
    return [pytest.param(op, d, id=f"{op.name}-{d}") for op, d in ops_dtypes]


def _compare(got, exp, names, op, what):
    if isinstance(exp, (tuple, list)):
        assert isinstance(got, (tuple, list)), f"{what}: expected a sequence, got {type(got)}"
        assert len(got) == len(exp), f"{what}: {len(got)} results, expected {len(exp)}"
        if not isinstance(names, (tuple, list)):
            names = [names] * len(exp)
        for i, (g, e, n) in enumerate(zip(got, exp, names)):
            _compare(g, e, n, op, f"{what} [{i}]")
        return
    rtol, atol = op.tols(names)
    try:
        assert_close(got, np.asarray(exp), rtol=rtol, atol=atol, dtype=names)
    except AssertionError as e:
        raise AssertionError(f"{what}: {e}") from None


def _inplace_target(args, exp, names):
    """The dtype name an in-place variant writes into, or None when it must raise instead
    (the result does not have the first argument's shape, or cannot be cast to its dtype)."""
    if not args or not isinstance(args[0], rumus.Tensor) or isinstance(exp, (tuple, list)):
        return None
    self_dt = dtype_name(args[0])
    if tuple(args[0].shape) != np.shape(exp) or not can_cast(names, self_dt):
        return None
    return self_dt


def _torch_fn(op):
    """PyTorch's spelling of ``op``: its torch_ref, else the twin of its first named variant
    (rumus.X as torch.X, or torch.nn.functional.X where torch has no X; an in-place
    Tensor.X_ on a clone); None for entries spelled only by callables (x[i])."""
    if op.torch_ref is not None:
        return op.torch_ref
    v = next((v for v in op.variants if isinstance(v, str)), None)
    if v is None:
        return None
    where, name = v.split(":")[0].split(".", 1)
    if where == "Tensor":
        if is_inplace(v):
            return lambda torch, x, *a, **k: getattr(x.clone(), name)(*a, **k)
        return lambda torch, x, *a, **k: getattr(x, name)(*a, **k)
    if where == "linalg":
        return lambda torch, *a, **k: getattr(torch.linalg, name)(*a, **k)
    if where == "rumus" and hasattr(torch, name):
        return lambda torch, *a, **k: getattr(torch, name)(*a, **k)
    return lambda torch, *a, **k: getattr(torch.nn.functional, name)(*a, **k)


def _torch_values(fn, np_args, np_kwargs):
    """``fn`` run by PyTorch on the sample's values, as NumPy arrays."""

    def conv(v):
        if isinstance(v, np.ndarray):
            return torch.from_numpy(np.array(v, order="C"))  # ascontiguousarray makes 0-d 1-d
        if isinstance(v, rumus.dtype):
            return getattr(torch, str(v).split(".")[-1])
        if isinstance(v, (list, tuple)) and any(isinstance(x, np.ndarray) for x in v):
            return type(v)(conv(x) for x in v)
        return v

    out = fn(torch, *[conv(a) for a in np_args], **{k: conv(v) for k, v in np_kwargs.items()})

    def back(t):
        if t is None:
            return None
        if isinstance(t, (tuple, list)):
            return [back(x) for x in t]
        return t.detach().float().numpy() if t.dtype == torch.bfloat16 else t.detach().numpy()

    return back(out)


FORWARD = _params((op, d) for op in OP_DB for d in op.dtypes)


@pytest.mark.parametrize("op,dtype", FORWARD)
def test_forward(op, dtype):
    rumus.manual_seed(0)  # the random ops' property checks see the same numbers every run
    for sample in op.samples(dtype):
        args, kwargs, np_args, np_kwargs = build(sample, dtype)
        names = (sample.out or op.out)(dtype)
        exp = None
        if op.ref is not None:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # empty means, nan stds
                exp = op.ref(*np_args, **np_kwargs)
        for v in applicable(op, sample):
            what = f"{op.name} {variant_label(v)} {dtype} {sample}"
            if is_inplace(v):
                target = _inplace_target(args, exp, names)
                if target is None:
                    continue  # tests/test_ops.py::test_bad_input checks that it raises
                got = call(v, args, kwargs)
                _compare(got, exp, target, op, what)
                continue
            got = call(v, args, kwargs)
            if op.check is not None:
                op.check(got, sample, dtype, np_args, np_kwargs)
            else:
                _compare(got, exp, names, op, what)
        # the inputs are left as they were
        for t, a in zip(args, np_args):
            if isinstance(t, rumus.Tensor):
                np.testing.assert_array_equal(to_np(t).astype(a.dtype), a)
        # PyTorch on the float samples (computed in float64): a second opinion on the reference
        if torch is not None and op.ref is not None and op.torch_ref is not False:
            if dtype in FLOATS and _torch_fn(op) is not None:
                _compare_torch(op, sample, dtype, np_args, np_kwargs, exp, names)


def _compare_torch(op, sample, dtype, np_args, np_kwargs, exp, names):
    try:
        ref = _torch_values(_torch_fn(op), np_args, np_kwargs)
    except (TypeError, RuntimeError, NotImplementedError):
        return  # PyTorch refuses this spelling (a Python scalar for a tensor...): NumPy's stands
    if ref is None:
        return  # the entry's torch_ref has no opinion on this sample

    def cmp(e, r, name):
        if isinstance(e, (tuple, list)):
            for i, (a, b) in enumerate(zip(e, r)):
                cmp(a, b, name[i] if isinstance(name, (tuple, list)) else name)
            return
        # float64 inputs, but a float16/bfloat16 result (dtype=, .to) is rounded by PyTorch
        rtol, atol = op.tols(name if name in ("float16", "bfloat16") else "float64")
        np.testing.assert_allclose(
            np.asarray(e, np.float64),
            np.asarray(r, np.float64),
            rtol=max(rtol, 1e-7),
            atol=max(atol, 1e-9),
            equal_nan=True,
            err_msg=f"{op.name} {dtype} {sample}: NumPy reference vs PyTorch",
        )

    cmp(exp, ref, names)


# ------------------------------------------------------------------ GPU parity

GPU_PARAMS = _params((op, d) for op in OP_DB for d in GPU_DTYPES if d in op.dtypes)


def _same(got, exp, op, what):
    """A GPU result equals the CPU one: same structure, dtypes, shapes and (within the
    dtype's tolerance, at least float32 kernel rounding) values."""
    if isinstance(exp, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(exp), what
        for i, (g, e) in enumerate(zip(got, exp)):
            _same(g, e, op, f"{what} [{i}]")
        return
    assert isinstance(got, rumus.Tensor), f"{what}: got {type(got)}"
    assert got.device.type == "gpu", f"{what}: result on {got.device}"
    name = dtype_name(exp)
    rtol, atol = op.tols(name)
    if name == "float32":
        rtol, atol = max(rtol, 1e-4), max(atol, 1e-5)
    try:
        assert_close(got, to_np(exp), rtol=rtol, atol=atol, dtype=name)
    except AssertionError as e:
        raise AssertionError(f"{what}: {e}") from None


def _gpu_sample(sample):
    """Whether a sample runs on the GPU: it names no float64 / bfloat16 (not on GPUs) and
    no "cpu" device."""

    def ok(v):
        if isinstance(v, str):
            return v != "cpu"
        if isinstance(v, Arg):
            return v.dtype not in NOT_ON_GPU
        if isinstance(v, rumus.dtype):
            return str(v).split(".")[-1] not in NOT_ON_GPU
        if isinstance(v, (list, tuple)):
            return all(ok(x) for x in v)
        return True

    return ok(list(sample.args)) and ok(list(sample.kwargs.values()))


def _gpu_run(op, dtype):
    rumus.manual_seed(0)
    for sample in filter(_gpu_sample, op.samples(dtype)):
        args, kwargs, np_args, np_kwargs = build(sample, dtype)
        gargs, gkwargs, _, _ = build(sample, dtype, device="gpu")
        if op.dtype_kw:
            gkwargs["device"] = "gpu"
        for v in applicable(op, sample):
            what = f"{op.name} {variant_label(v)} {dtype} {sample} on the GPU"
            if op.check is not None:  # random: the GPU draws its own numbers
                got = call(v, gargs, gkwargs)
                assert got.device.type == "gpu", f"{what}: result on {got.device}"
                op.check(got, sample, dtype, np_args, np_kwargs)
                continue
            try:
                exp = call(v, args, kwargs)
            except ALLOWED:  # then the GPU raises too (an index error at the next sync)

                def on_gpu(v=v):
                    out = call(v, gargs, gkwargs)
                    rumus.gpu.synchronize()
                    return out

                problem = _raises(what, on_gpu)
                assert problem is None, f"{problem} (the CPU raises)"
                continue
            _same(call(v, gargs, gkwargs), exp, op, what)


@pytest.mark.parametrize("op,dtype", GPU_PARAMS)
def test_gpu_parity(op, dtype):
    need_gpu()
    why = op.gpu_reason(dtype)
    if why:  # the entry says it has no GPU kernel: it must still raise, not run
        try:
            _gpu_run(op, dtype)
        except (NotImplementedError, TypeError):
            pytest.skip(why)
        pytest.fail(f"{op.name} runs on the GPU in {dtype}: remove its reason ({why})")
    bugs = [b for b in op.bugs if b.kind == "gpu"]
    try:
        _gpu_run(op, dtype)
    except AssertionError as e:
        known = [b.reason for b in bugs if b.match in str(e)]
        if not known:
            raise
        pytest.xfail("; ".join(known))
    assert not bugs, f"known GPU bugs no longer seen (remove them): {[b.reason for b in bugs]}"


# ------------------------------------------------------------------ coverage

# Public callables that are not ops, so have no entry: each group says why.
EXCEPTIONS = {
    # rumus.special's spellings of rumus ops that have entries (tests/test_special.py
    # checks each against the op it forwards to)
    *(
        f"special.{n}"
        for n in "erf exp2 expm1 log1p round logit softmax log_softmax logsumexp xlogy".split()
    ),
    # tensors from Python data / NumPy / files, and type tests (no computation to compare)
    "rumus.tensor",
    "rumus.as_tensor",
    "rumus.from_numpy",
    "rumus.from_dlpack",  # tests/test_dlpack.py
    "rumus.is_tensor",
    "rumus.save",
    "rumus.load",
    "Tensor.numpy",
    "Tensor.tolist",
    "Tensor.item",
    # dtype and shape arithmetic on Python values, not tensors
    "rumus.promote_types",
    "rumus.result_type",
    "rumus.broadcast_shapes",
    # devices, threads, the random generator's state, the GPU buffer cache, grad mode
    "rumus.set_default_device",
    "rumus.get_default_device",
    "rumus.get_num_threads",
    "rumus.set_num_threads",
    "rumus.get_default_dtype",
    "rumus.set_default_dtype",
    "rumus.set_printoptions",
    "rumus.manual_seed",
    "rumus.initial_seed",
    "rumus.get_rng_state",
    "rumus.set_rng_state",
    "rumus.empty_cache",
    "rumus.is_grad_enabled",
    # autocast state (tests/test_amp.py)
    *(
        f"rumus.{n}"
        for n in "is_autocast_enabled set_autocast_enabled get_autocast_dtype set_autocast_dtype "
        "is_autocast_cache_enabled set_autocast_cache_enabled clear_autocast_cache".split()
    ),
    "F.is_grad_enabled",
    "Tensor.cpu",
    "Tensor.gpu",
    # porting helpers (tests/test_porting.py): compile returns its argument, .cuda() raises
    "rumus.compile",
    "Tensor.cuda",
    # autograd bookkeeping (tested in test_autograd.py)
    "Tensor.backward",
    "Tensor.detach",
    "rumus.detach",
    "Tensor.detach_",
    "rumus.detach_",
    "Tensor.requires_grad_",
    "Tensor.retain_grad",
    # gradient hooks (tested in test_hooks.py)
    "Tensor.register_hook",
    "Tensor.register_post_accumulate_grad_hook",
    # metadata: sizes, strides, dtype and device queries, memory addresses
    "rumus.numel",
    "Tensor.numel",
    "Tensor.nelement",
    "Tensor.dim",
    "Tensor.ndimension",
    "Tensor.size",
    "Tensor.stride",
    "Tensor.storage_offset",
    "Tensor.element_size",
    "Tensor.data_ptr",
    "Tensor.is_contiguous",
    "Tensor.is_floating_point",
    "rumus.is_floating_point",
    "Tensor.is_complex",
    "rumus.is_complex",
    "Tensor.is_conj",
    "rumus.is_conj",
}
# Tensor attributes that are properties, not methods (shape, dtype, grad, T...) are skipped:
# T and mT, the two that compute, have entries.


def _public_callables():
    names = set()
    modules = (("rumus", rumus), ("F", F), ("linalg", rumus.linalg), ("special", rumus.special))
    for prefix, mod in modules:
        for n in dir(mod):
            obj = getattr(mod, n)
            if n.startswith("_") or inspect.isclass(obj) or inspect.ismodule(obj):
                continue
            if callable(obj):
                names.add(f"{prefix}.{n}")
    for n in dir(rumus.Tensor):
        if n.startswith("_"):
            continue
        raw = inspect.getattr_static(rumus.Tensor, n)
        if isinstance(raw, property) or type(raw).__name__ == "getset_descriptor":
            continue
        if callable(getattr(rumus.Tensor, n)):
            names.add(f"Tensor.{n}")
    return names


def test_entry_names_unique():
    names = [op.name for op in OP_DB]
    assert len(names) == len(set(names))


def test_every_public_op_has_an_entry():
    covered = set().union(*(op.names() for op in OP_DB))
    public = _public_callables()
    missing = sorted(public - covered - EXCEPTIONS)
    assert not missing, f"public callables with no op_db entry (add one, see op_db.py): {missing}"
    stale = sorted((covered | EXCEPTIONS) - public - {"Tensor.T", "Tensor.mT"})
    assert not stale, f"op_db / EXCEPTIONS name callables that do not exist: {stale}"


# ------------------------------------------------------------------ bad input


def _raises(desc, thunk):
    """None when ``thunk`` raises an allowed exception, else what went wrong."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. the losses' broadcast-target warning
            out = thunk()
    except ALLOWED:
        return None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - a Rust panic is a BaseException (PanicException)
        return f"{desc}: raised {type(e).__module__}.{type(e).__name__}: {e}"
    shown = f"{type(out).__name__} {tuple(out.shape)}" if hasattr(out, "shape") else repr(out)
    return f"{desc}: did not raise (returned {shown[:80]})"


def _tensor_args(sample):
    return [i for i, a in enumerate(sample.args) if isinstance(a, Arg)]


def _with_arg(sample, i, value):
    s = Sample(*sample.args[:i], value, *sample.args[i + 1 :], **sample.kwargs)
    s.out = sample.out
    return s


def _bad_calls(op):
    """(kind, description, thunk): calls of ``op`` that are user mistakes."""
    calls = []
    first = op.variants[0]

    def run(v, sample, dtype):
        def thunk():
            args, kwargs, _, _ = build(sample, dtype)
            return call(v, args, kwargs)

        return thunk

    # a dtype the entry does not accept (where the samples follow the dtype under test)
    for dtype in [d for d in ALL if d not in op.dtypes]:
        for s in op.samples(dtype):
            if any(a.dtype is None for a in s.args if isinstance(a, Arg)) or (
                op.dtype_kw and s.out is None
            ):
                for v in op.variants:
                    calls.append(("dtype", f"{variant_label(v)} {dtype} {s}", run(v, s, dtype)))
                break
    # in-place forms whose result cannot be written into their first argument
    inplace = [v for v in op.variants if is_inplace(v)]
    for dtype in op.dtypes if inplace else ():
        for s in op.samples(dtype):
            args, kwargs, np_args, np_kwargs = build(s, dtype)
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                exp = op.ref(*np_args, **np_kwargs) if op.ref is not None else None
            if exp is None or isinstance(exp, (tuple, list)):
                continue
            if _inplace_target(args, exp, (s.out or op.out)(dtype)) is None:
                for v in inplace:
                    desc = f"{variant_label(v)} into {dtype} {s}"
                    calls.append(("inplace", desc, run(v, s, dtype)))
    dtype = op.dtypes[0]
    samples = op.samples(dtype)
    # a string where the first tensor goes
    for s in samples[:1]:
        idx = _tensor_args(s)
        if idx and isinstance(first, str) and not first.startswith("Tensor."):
            bad = _with_arg(s, idx[0], "not a tensor")
            calls.append(("string", f"{first} with a string", run(first, bad, dtype)))
    # a dim out of range
    s = next((s for s in samples if isinstance(s.kwargs.get("dim"), int)), None)
    if s is not None:
        ndim = max([a.values.ndim for a in s.args if isinstance(a, Arg)] + [0])
        for dim in (ndim + 2, -ndim - 3):
            bad = Sample(*s.args, **dict(s.kwargs, dim=dim))
            for v in op.variants:
                if isinstance(v, str):
                    desc = f"{variant_label(v)} dim={dim} {s}"
                    calls.append(("dim", desc, run(v, bad, dtype)))
    # a second tensor of an unrelated shape
    s = next((s for s in samples if len(_tensor_args(s)) >= 2), None)
    if op.mismatch and s is not None:
        i = _tensor_args(s)[1]
        a = s.args[i]
        bad = _with_arg(s, i, Arg(cast_values(np.ones((5, 7)), a.dtype or dtype), a.dtype))
        for v in op.variants:
            desc = f"{variant_label(v)} with a (5, 7) operand {s}"
            calls.append(("shape", desc, run(v, bad, dtype)))
    if op.bad is not None:
        rng = np.random.default_rng(0)
        calls += [("extra", d, t) for d, t in op.bad(Maker(dtype, rng, op.domain))]
    return calls


@pytest.mark.parametrize("op", OP_DB, ids=str)
def test_bad_input(op):
    bugs = [b for b in op.bugs if b.kind != "gpu"]
    problems = [(k, p) for k, desc, thunk in _bad_calls(op) if (p := _raises(desc, thunk))]
    unknown = [p for k, p in problems if not any(b.covers(k, p) for b in bugs)]
    assert not unknown, "\n".join(unknown[:20])
    gone = [b.reason for b in bugs if not any(b.covers(k, p) for k, p in problems)]
    assert not gone, f"known bugs no longer seen (remove them from the entry): {gone}"
    if bugs:
        pytest.xfail("; ".join(b.reason for b in bugs))
