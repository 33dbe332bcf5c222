"""What the stubs say the Tensor API returns, checked twice: statically by mypy --strict
(``assert_type``, tests/test_typing.py) and at run time by running this file (the same
test), so an overload that names the wrong return type fails one way or the other."""

from typing import Any, Union

import numpy as np
import numpy.typing as npt
import rumus
from rumus import Size, Tensor, nn
from rumus._size import Histogram, ValuesIndices
from typing_extensions import assert_type


def check_reductions(t: Tensor) -> None:
    assert isinstance(assert_type(t.max(), Tensor), Tensor)
    m = assert_type(t.max(1), ValuesIndices)
    assert isinstance(m, ValuesIndices)
    assert isinstance(assert_type(m.values, Tensor), Tensor)
    assert isinstance(assert_type(m.indices, Tensor), Tensor)
    assert isinstance(assert_type(t.max(dim=0, keepdim=True), ValuesIndices), ValuesIndices)
    assert isinstance(assert_type(t.max(t), Tensor), Tensor)
    assert isinstance(assert_type(t.min(), Tensor), Tensor)
    assert isinstance(assert_type(t.min(0), ValuesIndices), ValuesIndices)
    assert isinstance(assert_type(t.median(), Tensor), Tensor)
    assert isinstance(assert_type(t.median(dim=1), ValuesIndices), ValuesIndices)
    assert isinstance(assert_type(t.nanmedian(), Tensor), Tensor)
    assert isinstance(assert_type(t.mode(), ValuesIndices), ValuesIndices)
    assert isinstance(assert_type(t.sort(descending=True), ValuesIndices), ValuesIndices)
    assert isinstance(assert_type(t.topk(2), ValuesIndices), ValuesIndices)
    assert isinstance(assert_type(t.kthvalue(1, dim=0), ValuesIndices), ValuesIndices)
    assert isinstance(assert_type(t.cummax(0), ValuesIndices), ValuesIndices)
    assert isinstance(assert_type(t.std(), Tensor), Tensor)
    assert isinstance(assert_type(t.var((0, 1), keepdim=True), Tensor), Tensor)
    assert isinstance(assert_type(t.std(1, correction=0), Tensor), Tensor)
    assert isinstance(assert_type(t.sum(dim=(0, 1)), Tensor), Tensor)
    assert isinstance(assert_type(t.histogram(4), Histogram), Histogram)
    lo, hi = t.aminmax()
    assert isinstance(assert_type(lo, Tensor), Tensor) and isinstance(hi, Tensor)
    assert isinstance(assert_type(t.aminmax(dim=0).max, Tensor), Tensor)
    assert isinstance(assert_type(t.unique(), Tensor), Tensor)
    both = assert_type(t.unique(return_counts=True), tuple[Tensor, ...])
    assert isinstance(both, tuple) and len(both) == 2
    assert isinstance(assert_type(t.nonzero(), Tensor), Tensor)
    assert isinstance(assert_type(t.nonzero(as_tuple=True), tuple[Tensor, ...]), tuple)


def check_shapes_and_conversions(t: Tensor) -> None:
    assert isinstance(assert_type(t.size(), Size), Size)
    assert isinstance(assert_type(t.size(0), int), int)
    assert isinstance(assert_type(t.shape, Size), Size)
    assert isinstance(assert_type(t.stride(), tuple[int, ...]), tuple)
    assert isinstance(assert_type(t.stride(1), int), int)
    assert isinstance(assert_type(t.reshape(-1), Tensor), Tensor)
    assert isinstance(assert_type(t.reshape((3, 4)), Tensor), Tensor)
    assert isinstance(assert_type(t.view(4, 3), Tensor), Tensor)
    assert isinstance(assert_type(t.permute(1, 0), Tensor), Tensor)
    assert isinstance(assert_type(t.to(rumus.float64), Tensor), Tensor)
    assert isinstance(assert_type(t.to("cpu"), Tensor), Tensor)
    assert isinstance(assert_type(t.to("cpu", rumus.float16), Tensor), Tensor)
    assert isinstance(assert_type(t.to(device="cpu", dtype=rumus.int64), Tensor), Tensor)
    assert isinstance(assert_type(t.to(t), Tensor), Tensor)
    assert isinstance(assert_type(t.type(), str), str)
    assert isinstance(assert_type(t.type(rumus.float64), Tensor), Tensor)
    assert isinstance(assert_type(t.split(2), tuple[Tensor, ...]), tuple)
    value = assert_type(t.sum().item(), Union[int, float, bool])
    assert isinstance(value, float)
    assert isinstance(assert_type(t.numpy(), npt.NDArray[Any]), np.ndarray)
    assert isinstance(assert_type(t.dtype, rumus.dtype), rumus.dtype)
    assert isinstance(assert_type(t.device, rumus.device), rumus.device)
    assert assert_type(t.grad, Union[Tensor, None]) is None


def check_operators(t: Tensor) -> None:
    for out in (t + 1, 1 + t, t - t, 2.0 * t, t / 3, t // 2, t % 2, t**2, 2**t, -t, abs(t)):
        assert isinstance(assert_type(out, Tensor), Tensor)
    assert isinstance(assert_type(t @ t.T, Tensor), Tensor)
    assert isinstance(assert_type(t == 1, Tensor), Tensor)
    assert isinstance(assert_type(t < t, Tensor), Tensor)
    mask = t > 0
    assert isinstance(assert_type(mask & ~mask, Tensor), Tensor)
    assert isinstance(assert_type(t[0], Tensor), Tensor)
    assert isinstance(assert_type(t[:, 1:3], Tensor), Tensor)
    assert isinstance(assert_type(t[None, ..., 0], Tensor), Tensor)
    assert isinstance(assert_type(t[mask], Tensor), Tensor)
    assert isinstance(assert_type(t[[0, 2]], Tensor), Tensor)
    for row in t:
        assert isinstance(assert_type(row, Tensor), Tensor)
    t[0, 0] = 5.0
    assert isinstance(assert_type(float(t[0, 0]), float), float)
    assert isinstance(assert_type(len(t), int), int)
    assert isinstance(assert_type(round(t), Tensor), Tensor)
    assert isinstance(assert_type(f"{t.sum():.3f}", str), str)


def check_linalg() -> None:
    m = rumus.eye(3, dtype=rumus.float64) * 2.0
    assert isinstance(assert_type(m.slogdet().logabsdet, Tensor), Tensor)
    sign, _ = rumus.slogdet(m)
    assert float(assert_type(sign, Tensor)) == 1.0
    assert isinstance(assert_type(rumus.linalg.inv(m), Tensor), Tensor)
    assert isinstance(assert_type(rumus.linalg.qr(m).Q, Tensor), Tensor)
    assert isinstance(assert_type(rumus.linalg.svd(m).S, Tensor), Tensor)
    assert isinstance(assert_type(rumus.linalg.eigh(m).eigenvalues, Tensor), Tensor)
    assert isinstance(assert_type(rumus.linalg.norm(m, dim=(0, 1)), Tensor), Tensor)
    assert isinstance(assert_type(rumus.linalg.solve(m, m[:, 0]), Tensor), Tensor)
    assert isinstance(assert_type(rumus.linalg.lstsq(m, m).solution, Tensor), Tensor)


def check_functional() -> None:
    import rumus.nn.functional as F

    x = rumus.randn(2, 3, 4, 4)
    for out in (
        F.pad(x, (1, 1)),
        F.interpolate(x, scale_factor=2.0, mode="bilinear"),
        F.scaled_dot_product_attention(x, x, x, is_causal=True),
        F.normalize(x, dim=1),
        F.gelu(x),
        F.softmax(x, dim=-1),
        F.leaky_relu(x, 0.1),
        F.rms_norm(x, [4]),
        F.group_norm(x, 3),
        F.dropout2d(x, 0.2),
        F.embedding(rumus.tensor([0, 2]), rumus.randn(4, 3)),
    ):
        assert isinstance(assert_type(out, Tensor), Tensor)


def check_layers() -> None:
    """The annotated constructors take their usual arguments."""
    layers: list[nn.Module] = [
        nn.Linear(4, 3, bias=False),
        nn.Conv1d(2, 4, 3, padding=1),
        nn.Conv2d(1, 8, (3, 3), stride=2, padding=1),
        nn.BatchNorm1d(4, momentum=None),
        nn.BatchNorm2d(8),
        nn.InstanceNorm2d(8, affine=True),
        nn.LayerNorm([4], eps=1e-6),
        nn.GroupNorm(2, 8),
        nn.RMSNorm(4),
        nn.Embedding(10, 4, padding_idx=0),
        nn.MaxPool2d(2),
        nn.MaxPool1d(3, stride=1, padding=1),
        nn.Dropout(0.1),
        nn.Dropout2d(),
        nn.Flatten(0),
        nn.ReLU(inplace=True),
        nn.LeakyReLU(0.2),
        nn.GELU("tanh"),
        nn.ELU(),
        nn.SiLU(),
        nn.Softplus(beta=2.0),
        nn.Softmax(dim=-1),
        nn.LogSoftmax(1),
        nn.PReLU(),
        nn.Identity(),
    ]
    seq = nn.Sequential(*layers[:2])
    stack = nn.ModuleList(layers)
    named = nn.ModuleDict({"fc": layers[0]})
    assert len(list(stack.children())) == len(layers) and len(list(named.modules())) == 2
    assert isinstance(assert_type(seq.train(False), nn.Sequential), nn.Sequential)
    params = assert_type(list(seq.parameters()), list[nn.Parameter])
    assert all(isinstance(p, nn.Parameter) for p in params)
    assert isinstance(assert_type(nn.init.kaiming_uniform_(rumus.empty(3, 4)), Tensor), Tensor)


def check_schedulers() -> None:
    """The annotated scheduler constructors take their usual arguments."""
    from rumus.optim import SGD, Adam
    from rumus.optim import lr_scheduler as sched

    opt = SGD(nn.Linear(2, 2).parameters(), lr=0.1, momentum=0.9)
    made: list[sched.LRScheduler] = [
        sched.LambdaLR(opt, lambda epoch: 0.95**epoch),
        sched.MultiplicativeLR(opt, lambda epoch: 0.99),
        sched.StepLR(opt, step_size=2),
        sched.MultiStepLR(opt, milestones=[2, 4], gamma=0.5),
        sched.ConstantLR(opt, factor=0.5, total_iters=2),
        sched.LinearLR(opt, start_factor=0.1),
        sched.ExponentialLR(opt, gamma=0.9),
        sched.PolynomialLR(opt, total_iters=4, power=2.0),
        sched.CosineAnnealingLR(opt, T_max=10),
        sched.CosineAnnealingWarmRestarts(opt, T_0=3),
        sched.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=4),
        sched.OneCycleLR(opt, max_lr=0.1, total_steps=10),
    ]
    opt.step()  # no gradients: no update, but schedulers step after the optimizer
    for s in made:
        s.step()
        assert isinstance(assert_type(s.get_last_lr(), list[float]), list)
    plateau = sched.ReduceLROnPlateau(Adam(nn.Linear(2, 2).parameters()), patience=1)
    plateau.step(1.0)
    first = sched.StepLR(opt, 1)
    sched.SequentialLR(opt, [first, sched.ExponentialLR(opt, 0.5)], milestones=[2]).step()
    sched.ChainedScheduler([sched.StepLR(opt, 1)]).step()


def check_functions() -> None:
    t = assert_type(rumus.randn(3, 4), Tensor)
    assert isinstance(assert_type(rumus.zeros((2, 3), dtype=rumus.int64), Tensor), Tensor)
    assert isinstance(assert_type(rumus.exp(t), Tensor), Tensor)
    assert isinstance(assert_type(rumus.max(t), Tensor), Tensor)
    assert isinstance(assert_type(rumus.max(t, 1), ValuesIndices), ValuesIndices)
    assert isinstance(assert_type(rumus.sum(t, dim=0), Tensor), Tensor)
    assert isinstance(assert_type(rumus.cat([t, t]), Tensor), Tensor)
    assert isinstance(assert_type(rumus.where(t > 0, t, 0.0), Tensor), Tensor)
    assert isinstance(assert_type(rumus.where(t > 0), tuple[Tensor, ...]), tuple)
    assert isinstance(assert_type(rumus.einsum("ij->j", t), Tensor), Tensor)
    assert isinstance(assert_type(rumus.randint(0, 5, (3,)), Tensor), Tensor)
    assert isinstance(assert_type(rumus.randint(5, (3,)), Tensor), Tensor)
    assert isinstance(assert_type(rumus.float, rumus.dtype), rumus.dtype)
    assert isinstance(assert_type(rumus.std_mean(t, 1), tuple[Tensor, Tensor]), tuple)
    assert isinstance(assert_type(rumus.tensor([[1, 2], [3, 4]]), Tensor), Tensor)
    assert isinstance(assert_type(rumus.from_numpy(np.zeros(3)), Tensor), Tensor)
    with rumus.no_grad():
        assert not rumus.is_grad_enabled()
    check_reductions(t)
    check_shapes_and_conversions(t)
    check_operators(t)
    check_layers()
    check_functional()
    check_linalg()
    check_schedulers()


if __name__ == "__main__":
    check_functions()
    print("ok")
