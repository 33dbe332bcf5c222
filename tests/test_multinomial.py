"""rumus.multinomial / Tensor.multinomial: draws in proportion to the
weights (checked statistically with fixed seeds), without repeats when
replacement=False, the generator's reproducibility, the GPU, and PyTorch's errors."""

import numpy as np
import pytest
import rumus

W = [0.1, 0.0, 0.6, 0.3]


def _gen(seed):
    return rumus.Generator().manual_seed(seed)


def test_with_replacement_frequencies_follow_the_weights():
    s = rumus.multinomial(rumus.tensor(W), 40_000, True, generator=_gen(0))
    assert s.dtype == rumus.int64 and tuple(s.shape) == (40_000,)
    freq = np.bincount(s.numpy(), minlength=4) / 40_000
    np.testing.assert_allclose(freq, W, atol=0.01)
    assert freq[1] == 0  # a zero weight is never drawn


def test_without_replacement_draws_distinct_categories_in_proportion():
    w = rumus.tensor([1.0, 2.0, 3.0]).expand(20_000, 3)
    s = rumus.multinomial(w, 2, generator=_gen(1)).numpy()
    assert (s[:, 0] != s[:, 1]).all()
    # first draw ∝ w; second: P(0) = 2/6·1/4 + 3/6·1/3 = 1/4, P(1) = 1/6·2/5 + 3/6·2/3 = 2/5
    np.testing.assert_allclose(
        np.bincount(s[:, 0], minlength=3) / 20_000, [1 / 6, 2 / 6, 3 / 6], atol=0.015
    )
    np.testing.assert_allclose(
        np.bincount(s[:, 1], minlength=3) / 20_000, [0.25, 0.4, 0.35], atol=0.015
    )
    full = rumus.multinomial(rumus.ones(3, 7), 7, generator=_gen(2)).numpy()
    assert all(sorted(r) == list(range(7)) for r in full)


def test_rows_shapes_method_and_generator():
    x = rumus.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    assert x.multinomial(4, replacement=True).tolist() == [[2] * 4, [0] * 4]
    a = rumus.multinomial(rumus.tensor(W), 10, True, generator=_gen(5))
    b = rumus.tensor(W).multinomial(10, True, generator=_gen(5))
    assert a.tolist() == b.tolist()
    h = rumus.multinomial(rumus.tensor(W, dtype=rumus.float16), 3)
    assert sorted(h.tolist()) == [0, 2, 3]


@pytest.mark.parametrize(
    "args, match",
    [
        (([1.0, -1.0], 1), "element < 0"),
        (([1.0, float("nan")], 1), "nan"),
        (([1.0, float("inf")], 1), "inf"),
        (([0.0, 0.0], 1), "sum of probabilities"),
        (([1.0, 0.0], 2), "not enough non-negative category"),
        (([1.0, 1.0, 1.0], 4), "without replacement"),
        (([1.0, 1.0], 0), "n_sample <= 0"),
    ],
)
def test_bad_weights_raise_runtime_error(args, match):
    with pytest.raises(RuntimeError, match=match):
        rumus.multinomial(rumus.tensor(args[0]), args[1])


def test_bad_dtype_and_rank():
    with pytest.raises(RuntimeError, match="floating-point"):
        rumus.multinomial(rumus.tensor([1, 2]), 1)
    with pytest.raises(RuntimeError, match="1 or 2 dim"):
        rumus.multinomial(rumus.ones(2, 2, 2), 1)


@pytest.mark.skipif(not rumus.gpu.is_available(), reason="no GPU adapter")
def test_gpu_draws_stay_on_the_gpu():
    w = rumus.tensor(W, device="gpu")
    s = rumus.multinomial(w, 2000, True, generator=_gen(3))
    assert s.device.type == "gpu"
    assert np.bincount(s.cpu().numpy(), minlength=4)[1] == 0
    assert sorted(rumus.multinomial(w, 3).cpu().tolist()) == [0, 2, 3]
