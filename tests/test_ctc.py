"""ctc_loss / CTCLoss: values against a brute-force sum over every alignment (tiny T)
and a NumPy alpha recursion, padded and concatenated targets, unbatched input,
reductions, zero_infinity, exact gradients (gradcheck on unnormalized log_probs and
through log_softmax), the GPU (host round trip) and bad input."""

import itertools

import numpy as np
import pytest
import rumus
import rumus.nn as nn
import rumus.nn.functional as F
from conftest import dt, to_np
from rumus.autograd import gradcheck


def collapse(path, blank):
    out = []
    prev = None
    for k in path:
        if k != prev and k != blank:
            out.append(k)
        prev = k
    return out


def brute_nll(lp, target, blank=0):
    """-log sum over every path of length T that collapses to target: C^T paths."""
    t_len, c = lp.shape
    total = 0.0
    for path in itertools.product(range(c), repeat=t_len):
        if collapse(path, blank) == list(target):
            total += np.exp(sum(lp[t, k] for t, k in enumerate(path)))
    return -np.log(total) if total > 0 else np.inf


def alpha_nll(lp, target, blank=0):
    """The textbook alpha recursion in probability space (float64, tiny sizes)."""
    t_len = lp.shape[0]
    ext = [blank]
    for k in target:
        ext += [k, blank]
    ls = len(ext)
    p = np.exp(lp)
    if t_len == 0:
        return 0.0 if not target else np.inf
    a = np.zeros(ls)
    a[0] = p[0, blank]
    if ls > 1:
        a[1] = p[0, ext[1]]
    for t in range(1, t_len):
        b = np.zeros(ls)
        for s in range(ls):
            v = a[s] + (a[s - 1] if s >= 1 else 0.0)
            if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                v += a[s - 2]
            b[s] = v * p[t, ext[s]]
        a = b
    tot = a[-1] + (a[-2] if ls > 1 else 0.0)
    return -np.log(tot) if tot > 0 else np.inf


def log_softmax(x, axis=-1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def _lp(rng, t, n, c):
    return log_softmax(rng.normal(size=(t, n, c)))


@pytest.mark.parametrize(
    "target, t_len, blank",
    [([1], 1, 0), ([1, 2], 3, 0), ([1, 1], 4, 0), ([2, 1, 2], 5, 0), ([], 3, 0), ([0, 1], 4, 2)],
)
def test_ctc_matches_brute_force(target, t_len, blank):
    rng = np.random.default_rng(len(target) * 10 + t_len)
    lp = _lp(rng, t_len, 1, 3)
    got = F.ctc_loss(
        rumus.tensor(lp),
        rumus.tensor(np.array([target], np.int64).reshape(1, -1)),
        [t_len],
        [len(target)],
        blank=blank,
        reduction="none",
    )
    want = brute_nll(lp[:, 0], target, blank)
    np.testing.assert_allclose(to_np(got), [want], rtol=1e-12)
    np.testing.assert_allclose(alpha_nll(lp[:, 0], target, blank), want, rtol=1e-12)


def _batch(rng, n=4, t=7, c=5, s=4):
    il = rng.integers(3, t + 1, n)
    tl = np.minimum(rng.integers(0, s + 1, n), (il - 1) // 2 + 1)
    padded = rng.integers(1, c, (n, s))
    lp = _lp(rng, t, n, c)
    return lp, padded, il, tl


def test_ctc_batched_padded_and_concatenated_agree_with_numpy():
    rng = np.random.default_rng(0)
    lp, padded, il, tl = _batch(rng)
    want = np.array([alpha_nll(lp[: il[i], i], padded[i, : tl[i]]) for i in range(len(il))])
    x = rumus.tensor(lp)
    flat = np.concatenate([padded[i, : tl[i]] for i in range(len(il))]).astype(np.int64)
    for targets in (rumus.tensor(padded), rumus.tensor(flat)):
        for lengths in ((il.tolist(), tl.tolist()), (rumus.tensor(il), rumus.tensor(tl))):
            got = F.ctc_loss(x, targets, *lengths, reduction="none")
            np.testing.assert_allclose(to_np(got), want, rtol=1e-10)
    got = F.ctc_loss(x, rumus.tensor(padded), tuple(il), tuple(tl))
    np.testing.assert_allclose(got.item(), np.mean(want / np.maximum(tl, 1)), rtol=1e-10)
    got = F.ctc_loss(x, rumus.tensor(padded), il.tolist(), tl.tolist(), reduction="sum")
    np.testing.assert_allclose(got.item(), want.sum(), rtol=1e-10)
    # int32 targets and float32 log_probs
    got = F.ctc_loss(
        x.float(), rumus.tensor(padded.astype(np.int32)), il.tolist(), tl.tolist(), reduction="none"
    )
    assert got.dtype == rumus.float32
    np.testing.assert_allclose(to_np(got), want, rtol=1e-5)


def test_ctc_unbatched():
    rng = np.random.default_rng(1)
    lp = _lp(rng, 5, 1, 4)[:, 0]
    target = np.array([1, 3], np.int64)
    want = alpha_nll(lp, target)
    got = F.ctc_loss(rumus.tensor(lp), rumus.tensor(target), 5, 2, reduction="none")
    assert got.shape == ()
    np.testing.assert_allclose(got.item(), want, rtol=1e-12)
    got = F.ctc_loss(rumus.tensor(lp), rumus.tensor(target), rumus.tensor(5), rumus.tensor(2))
    np.testing.assert_allclose(got.item(), want / 2, rtol=1e-12)


def test_ctc_impossible_alignment_and_zero_infinity():
    rng = np.random.default_rng(2)
    lp = rumus.tensor(_lp(rng, 3, 2, 4), requires_grad=True)
    targets = rumus.tensor(np.array([[1, 1, 2], [1, 2, 0]], np.int64))
    # sample 0 needs 4 frames (a blank between the repeated 1s) but has 3: p = 0
    loss = F.ctc_loss(lp, targets, [3, 3], [3, 2], reduction="none")
    assert np.isinf(to_np(loss)[0]) and np.isfinite(to_np(loss)[1])
    loss = F.ctc_loss(lp, targets, [3, 3], [3, 2], reduction="none", zero_infinity=True)
    assert to_np(loss)[0] == 0.0
    loss.sum().backward()
    g = to_np(lp.grad)
    assert (g[:, 0] == 0).all() and np.abs(g[:, 1]).sum() > 0


def test_ctc_target_longer_than_its_input_raises():
    lp = rumus.tensor(_lp(np.random.default_rng(4), 3, 2, 4))
    targets = rumus.tensor(np.array([[1, 2, 3, 1], [1, 2, 0, 0]], np.int64))
    with pytest.raises(ValueError, match="target 0 has length 4, longer than its input length 3"):
        F.ctc_loss(lp, targets, [3, 3], [4, 2])
    loss = F.ctc_loss(lp, targets, [3, 3], [4, 2], reduction="none", zero_infinity=True)
    assert to_np(loss)[0] == 0.0 and np.isfinite(to_np(loss)[1])


def test_ctc_gradients_are_exact():
    rng = np.random.default_rng(3)
    t, n, c = 5, 3, 4
    targets = rumus.tensor(np.array([[1, 2], [3, 3], [2, 0]], np.int64))
    il, tl = [5, 4, 3], [2, 2, 1]
    # unnormalized log_probs: d nll / d log_probs itself, not only through log_softmax
    raw = rumus.tensor(rng.normal(size=(t, n, c)), requires_grad=True)
    for reduction in ("none", "sum", "mean"):
        assert gradcheck(lambda x, r=reduction: F.ctc_loss(x, targets, il, tl, reduction=r), (raw,))
    assert gradcheck(
        lambda x: F.ctc_loss(x.log_softmax(2), targets, il, tl, blank=0, reduction="mean"),
        (raw,),
    )
    flat = rumus.tensor(np.array([1, 2, 3, 3, 2], np.int64))
    assert gradcheck(lambda x: F.ctc_loss(x, flat, il, tl, blank=0, reduction="sum"), (raw,))
    # frames past an input length get no gradient
    loss = F.ctc_loss(raw, targets, il, tl, reduction="sum")
    (g,) = rumus.autograd.grad(loss, raw)
    assert (to_np(g)[4:, 1] == 0).all() and (to_np(g)[3:, 2] == 0).all()


def test_ctc_gradient_through_log_softmax_sums_to_zero_per_frame():
    # d loss / d logits = softmax - (posterior of each class): each frame sums to 0
    rng = np.random.default_rng(4)
    logits = rumus.tensor(rng.normal(size=(6, 2, 5)), requires_grad=True)
    targets = rumus.tensor(np.array([[1, 2, 3], [4, 4, 0]], np.int64))
    F.ctc_loss(logits.log_softmax(2), targets, [6, 6], [3, 2], reduction="sum").backward()
    np.testing.assert_allclose(to_np(logits.grad).sum(-1), 0.0, atol=1e-12)


def test_ctc_double_backward_raises():
    rng = np.random.default_rng(5)
    x = rumus.tensor(_lp(rng, 4, 1, 3), requires_grad=True)
    loss = F.ctc_loss(x, rumus.tensor([[1, 2]]), [4], [2])
    (g,) = rumus.autograd.grad(loss, x, create_graph=True)
    with pytest.raises(NotImplementedError, match="ctc_loss"):
        g.sum().backward()


def test_ctc_module():
    rng = np.random.default_rng(6)
    lp, padded, il, tl = _batch(rng, n=3)
    m = nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    assert isinstance(m, nn.modules.loss.CTCLoss)
    want = sum(alpha_nll(lp[: il[i], i], padded[i, : tl[i]]) for i in range(3))
    got = m(rumus.tensor(lp), rumus.tensor(padded), rumus.tensor(il), rumus.tensor(tl))
    np.testing.assert_allclose(got.item(), want, rtol=1e-10)
    assert m.blank == 0 and m.zero_infinity and m.reduction == "sum"


def test_ctc_gpu_matches_cpu(gpu):
    rng = np.random.default_rng(7)
    lp, padded, il, tl = _batch(rng, n=3, t=5, c=4, s=2)
    xc = rumus.tensor(lp.astype(np.float32), requires_grad=True)
    xg = dt(lp.astype(np.float32), device=gpu).requires_grad_()
    tg = rumus.tensor(padded)
    lc = F.ctc_loss(xc, tg, il.tolist(), tl.tolist())
    lg = F.ctc_loss(xg, tg.to(gpu), il.tolist(), tl.tolist())
    assert lg.device.type == "gpu"
    np.testing.assert_allclose(to_np(lg), to_np(lc), rtol=1e-5)
    lc.backward()
    lg.backward()
    assert xg.grad.device.type == "gpu"
    np.testing.assert_allclose(to_np(xg.grad), to_np(xc.grad), rtol=1e-4, atol=1e-6)


def test_ctc_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    lp, padded, il, tl = _batch(rng)
    for reduction in ("none", "mean", "sum"):
        x = rumus.tensor(lp, requires_grad=True)
        tx = torch.tensor(lp, requires_grad=True)
        got = F.ctc_loss(x, rumus.tensor(padded), il.tolist(), tl.tolist(), reduction=reduction)
        want = torch.nn.functional.ctc_loss(
            tx.log_softmax(2),
            torch.tensor(padded),
            torch.tensor(il),
            torch.tensor(tl),
            reduction=reduction,
        )
        np.testing.assert_allclose(to_np(got), want.detach().numpy(), rtol=1e-10)
        # gradients agree once they pass through log_softmax (see rust/ops/ctc.rs)
        F.ctc_loss(x.log_softmax(2), rumus.tensor(padded), il.tolist(), tl.tolist()).backward()
        want = torch.nn.functional.ctc_loss(
            tx.log_softmax(2), torch.tensor(padded), torch.tensor(il), torch.tensor(tl)
        )
        want.backward()
        np.testing.assert_allclose(to_np(x.grad), tx.grad.numpy(), rtol=1e-8, atol=1e-12)


def test_ctc_bad_input():
    lp = rumus.tensor(_lp(np.random.default_rng(9), 4, 2, 3))
    tg = rumus.tensor([[1, 2], [2, 1]])
    with pytest.raises(RuntimeError, match=r"at most 4.*\[4, 2, 3\].*5"):
        F.ctc_loss(lp, tg, [5, 4], [2, 2])
    with pytest.raises(RuntimeError, match=r"target_lengths\[1\] = 3 exceeds.*\[2, 2\]"):
        F.ctc_loss(lp, tg, [4, 4], [2, 3])
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size 2"):
        F.ctc_loss(lp, tg, [4], [2, 2])
    with pytest.raises(RuntimeError, match="non-negative"):
        F.ctc_loss(lp, tg, [4, -1], [2, 2])
    with pytest.raises(RuntimeError, match=r"\(T, N, C\).*\[4, 2, 3, 1\]"):
        F.ctc_loss(lp.unsqueeze(-1), tg, [4, 4], [2, 2])
    with pytest.raises(RuntimeError, match=r"rows.*\[3, 2\]"):
        F.ctc_loss(lp, rumus.tensor([[1, 2], [2, 1], [1, 1]]), [4, 4], [2, 2])
    with pytest.raises(RuntimeError, match="sum to 5"):
        F.ctc_loss(lp, rumus.tensor([1, 2, 1]), [4, 4], [2, 3])
    with pytest.raises(IndexError, match="target 3 is out of bounds for 3 classes"):
        F.ctc_loss(lp, rumus.tensor([[1, 3], [2, 1]]), [4, 4], [2, 2])
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(lp, tg, [4, 4], [2, 2], blank=3)
    with pytest.raises(RuntimeError, match="int64 or int32"):
        F.ctc_loss(lp, tg.float(), [4, 4], [2, 2])
    with pytest.raises(RuntimeError, match="floating point"):
        F.ctc_loss(tg, tg, [4, 4], [2, 2])
    with pytest.raises(TypeError):
        F.ctc_loss("lp", tg, [4, 4], [2, 2])
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.ctc_loss(lp, tg, [4, 4], [2, 2], reduction="avg")
