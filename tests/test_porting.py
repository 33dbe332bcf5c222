"""Porting helpers: rumus.compile, rumus.cuda, and 'cuda' device strings."""

import pytest
import rumus
from rumus import nn


def test_compile_returns_its_argument():
    model = nn.Linear(2, 2)
    assert rumus.compile(model) is model
    assert rumus.compile(model, mode="max-autotune", fullgraph=True, dynamic=False) is model

    def f(x):
        return x * 2

    assert rumus.compile(f) is f
    assert "unchanged" in rumus.compile.__doc__


def test_compile_as_decorator():
    @rumus.compile
    def f(x):
        return x + 1

    @rumus.compile(backend="inductor", mode="reduce-overhead")
    def g(x):
        return x - 1

    assert f(rumus.tensor(1.0)).item() == 2.0
    assert g(rumus.tensor(1.0)).item() == 0.0
    assert g.__name__ == "g"
    with pytest.raises(RuntimeError):
        rumus.compile(3)


def test_cuda_module():
    assert rumus.cuda.is_available() is False
    assert rumus.cuda.device_count() == 0
    assert rumus.cuda.is_initialized() is False
    assert rumus.cuda.is_bf16_supported() is False
    assert rumus.cuda.memory_allocated() == 0
    assert rumus.cuda.max_memory_allocated() == 0
    # No-ops, as in PyTorch without CUDA; they leave rumus's generator alone.
    rumus.manual_seed(5)
    a = rumus.rand(3).numpy()
    rumus.manual_seed(5)
    assert rumus.cuda.manual_seed(1) is None
    assert rumus.cuda.manual_seed_all(1) is None
    rumus.cuda.synchronize()
    rumus.cuda.empty_cache()
    assert (rumus.rand(3).numpy() == a).all()
    for fn in (rumus.cuda.current_device, rumus.cuda.get_device_name):
        with pytest.raises(RuntimeError, match="'gpu'"):
            fn()


@pytest.mark.parametrize(
    "thunk",
    [
        lambda: rumus.device("cuda"),
        lambda: rumus.device("cuda:0"),
        lambda: rumus.device("cuda", 0),
        lambda: rumus.zeros(2).to("cuda"),
        lambda: rumus.zeros(2, device="cuda"),
        lambda: rumus.tensor([1.0], device="cuda:0"),
        lambda: rumus.zeros(2).cuda(),
        lambda: nn.Linear(2, 2).cuda(),
        lambda: nn.Linear(2, 2).to("cuda"),
    ],
)
def test_cuda_device_raises_pointing_to_gpu(thunk):
    with pytest.raises(RuntimeError, match="'gpu'"):
        thunk()


def test_other_bad_device_strings_still_raise():
    with pytest.raises(RuntimeError, match="Expected one of cpu, gpu"):
        rumus.device("tpu")


def test_backends():
    assert rumus.backends.cudnn.is_available() is False
    assert rumus.backends.mps.is_available() is False
    assert rumus.backends.mps.is_built() is False
    rumus.backends.cudnn.benchmark = True
    rumus.backends.cudnn.deterministic = True
    import rumus.backends.cudnn as cudnn

    assert cudnn.benchmark is True
    cudnn.benchmark = cudnn.deterministic = False
