"""nn.init: PyTorch's full public set, the deprecated aliases and generator=."""

import warnings

import numpy as np
import pytest
import rumus
from rumus.nn import init

TORCH_NAMES = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "trunc_normal_",
    "constant_",
    "ones_",
    "zeros_",
    "eye_",
    "dirac_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
    "sparse_",
]
DEPRECATED = {
    "uniform": ("uniform_", ()),
    "normal": ("normal_", ()),
    "constant": ("constant_", (0.5,)),
    "xavier_uniform": ("xavier_uniform_", ()),
    "xavier_normal": ("xavier_normal_", ()),
    "kaiming_uniform": ("kaiming_uniform_", ()),
    "kaiming_normal": ("kaiming_normal_", ()),
    "orthogonal": ("orthogonal_", ()),
    "sparse": ("sparse_", (0.5,)),
}
RANDOM = {
    "uniform_": (),
    "normal_": (),
    "trunc_normal_": (),
    "xavier_uniform_": (),
    "xavier_normal_": (),
    "kaiming_uniform_": (),
    "kaiming_normal_": (),
    "orthogonal_": (),
    "sparse_": (0.5,),
}


def test_public_names():
    for name in TORCH_NAMES:
        assert callable(getattr(init, name)), name
        assert name in init.__all__


@pytest.mark.parametrize("old", sorted(DEPRECATED))
def test_deprecated_alias_warns_and_matches(old):
    new, args = DEPRECATED[old]
    a, b = rumus.empty(4, 6), rumus.empty(4, 6)
    rumus.manual_seed(3)
    with pytest.warns(FutureWarning, match=f"nn.init.{old}` is now deprecated"):
        out = getattr(init, old)(a, *args)
    assert out is a
    rumus.manual_seed(3)
    getattr(init, new)(b, *args)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert getattr(init, old).__name__ == old


@pytest.mark.parametrize("name", sorted(RANDOM))
def test_generator_keyword(name):
    args = RANDOM[name]
    fn = getattr(init, name)
    outs = []
    for _ in range(2):
        g = rumus.Generator().manual_seed(7)
        t = rumus.empty(5, 4)
        fn(t, *args, generator=g)
        outs.append(t.numpy().copy())
    np.testing.assert_array_equal(outs[0], outs[1])
    # The global generator is not consumed.
    rumus.manual_seed(1)
    x = rumus.rand(3).numpy()
    rumus.manual_seed(1)
    fn(rumus.empty(5, 4), *args, generator=rumus.Generator().manual_seed(7))
    np.testing.assert_array_equal(rumus.rand(3).numpy(), x)


def test_no_warning_for_underscore_names():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        init.uniform_(rumus.empty(3))
        init.constant_(rumus.empty(3), 1.0)
