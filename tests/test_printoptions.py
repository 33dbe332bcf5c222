"""rumus.set_printoptions as torch.set_printoptions: precision, threshold,
edgeitems, linewidth, the three profiles and sci_mode; and the dtype suffix
following the default dtype."""

import pytest
import rumus


@pytest.fixture(autouse=True)
def _restore():
    yield
    rumus.set_printoptions(profile="default")


def test_precision_and_sci_mode():
    x = rumus.tensor([1.12345, 2.0])
    assert repr(x) == "tensor([1.1235, 2.0000])"
    rumus.set_printoptions(precision=2)
    assert repr(x) == "tensor([1.12, 2.00])"
    rumus.set_printoptions(precision=2, sci_mode=True)
    assert repr(x) == "tensor([1.12e+00, 2.00e+00])"
    # every call without sci_mode sets it back to automatic, as in PyTorch
    rumus.set_printoptions(profile="default")
    assert repr(x) == "tensor([1.1235, 2.0000])"


def test_threshold_edgeitems_and_profiles():
    rumus.set_printoptions(threshold=5)
    assert repr(rumus.arange(10)) == "tensor([0, 1, 2,  ..., 7, 8, 9])"
    rumus.set_printoptions(threshold=5, edgeitems=1)
    assert repr(rumus.arange(10)) == "tensor([0,  ..., 9])"
    rumus.set_printoptions(profile="short")
    assert repr(rumus.tensor([1.12345])) == "tensor([1.12])"
    rumus.set_printoptions(profile="full")
    assert "..." not in repr(rumus.arange(2000))
    rumus.set_printoptions(profile="no such profile")  # ignored, as in PyTorch
    assert "..." not in repr(rumus.arange(2000))
    rumus.set_printoptions(profile="default")
    assert "..." in repr(rumus.arange(2000))


def test_linewidth_wraps_rows():
    x = rumus.arange(30)
    assert repr(x).count("\n") == 1
    rumus.set_printoptions(linewidth=40)
    assert repr(x).count("\n") > 2
    assert max(len(line) for line in repr(x).splitlines()) <= 40


def test_matches_torch_when_installed():
    torch = pytest.importorskip("torch")
    try:
        for kw in (dict(precision=2), dict(sci_mode=True), dict(threshold=4, edgeitems=2)):
            rumus.set_printoptions(**kw)
            torch.set_printoptions(**kw)
            data = [[1.5, -2.25, 3.125], [1e-3, 4.0, 5.5]]
            assert repr(rumus.tensor(data)) == repr(torch.tensor(data)).replace("torch.", "rumus.")
    finally:
        torch.set_printoptions(profile="default")
