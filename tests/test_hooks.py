"""Autograd hooks: tensor hooks, post-accumulate-grad hooks, graph-node hooks and metadata,
saved-tensor hooks (saved_tensors_hooks, save_on_cpu), and module hooks (forward, full
backward, global, state dict), against PyTorch's documented semantics."""

import gc
import pickle
from collections import OrderedDict

import numpy as np
import pytest
import rumus
import rumus.nn as nn
from rumus.autograd.graph import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks
from rumus.nn.modules import module as module_mod
from rumus.utils.hooks import RemovableHandle


def leaf(values, device="cpu", dtype=rumus.float32):
    return rumus.tensor(values, dtype=dtype, device=device, requires_grad=True)


def close(t, expected):
    np.testing.assert_allclose(t.detach().cpu().numpy(), expected, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ tensor hooks


def test_leaf_hook_runs_before_accumulation_and_replaces(device):
    x = leaf([1.0, 2.0, 3.0], device)
    seen = []

    def hook(g):
        seen.append((g.cpu().numpy().copy(), x.grad))
        return g * 10

    h = x.register_hook(hook)
    assert isinstance(h, RemovableHandle)
    (x * 2).sum().backward()
    np.testing.assert_allclose(seen[0][0], [2, 2, 2])
    assert seen[0][1] is None  # .grad not yet written when the hook runs
    close(x.grad, [20, 20, 20])


def test_leaf_hook_sees_summed_gradient_once(device):
    x = leaf([1.0, 2.0], device)
    calls = []
    x.register_hook(lambda g: calls.append(g.cpu().numpy().copy()))
    (x * 2 + x * x).sum().backward()
    assert len(calls) == 1  # PyTorch's AccumulateGrad sums all contributions first
    np.testing.assert_allclose(calls[0], [4, 6])


def test_hooks_run_in_registration_order_and_chain(device):
    x = leaf([1.0], device)
    order = []

    def first(g):
        order.append("first")
        return g + 1

    def second(g):
        order.append(("second", g.item()))
        return g * 3

    x.register_hook(first)
    x.register_hook(second)
    (x * 2).sum().backward()
    assert order == ["first", ("second", 3.0)]
    close(x.grad, [9.0])


def test_removed_hook_does_not_run(device):
    x = leaf([1.0, 1.0], device)
    calls = []
    h = x.register_hook(lambda g: calls.append(1))
    h.remove()
    h.remove()  # twice is harmless
    x.sum().backward()
    assert calls == []
    with x.register_hook(lambda g: calls.append(2)):
        x.sum().backward()
    x.sum().backward()
    assert calls == [2]


def test_nonleaf_hook_replaces_gradient_flowing_on(device):
    x = leaf([1.0, 2.0], device)
    y = x * 3
    y.register_hook(lambda g: g * 0 + 5)
    (y * y).sum().backward()
    # dL/dy replaced by 5: dL/dx = 5 * 3
    close(x.grad, [15, 15])


def test_nonleaf_hook_runs_before_retain_grad(device):
    x = leaf([1.0, 2.0], device)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 2)
    y.sum().backward()
    close(y.grad, [2, 2])
    close(x.grad, [4, 4])


def test_backward_inputs_non_leaf_gets_hooked_grad(device):
    x = leaf([1.0, 2.0], device)
    y = x * 2
    y.register_hook(lambda g: g * 10)
    (y * y).sum().backward(inputs=[y])
    close(y.grad, [40, 80])  # 2y, through the hook
    assert x.grad is None


def test_hook_replacement_is_differentiated_under_create_graph():
    x = leaf([1.0, 2.0], dtype=rumus.float64)
    y = x**3
    y.register_hook(lambda g: g * x)  # the replacement depends on x
    (g,) = rumus.autograd.grad(y.sum(), x, create_graph=True)
    close(g, [3.0, 24.0])  # 3x^2 * x
    (gg,) = rumus.autograd.grad(g.sum(), x)
    close(gg, [9.0, 36.0])


def test_leaf_hook_with_checkpoint():
    from rumus.utils.checkpoint import checkpoint

    x = leaf([1.0, 2.0])
    calls = []
    x.register_hook(lambda g: calls.append(g.tolist()) or g * 2)
    checkpoint(lambda t: t**3, x, use_reentrant=False).sum().backward()
    assert calls == [[3.0, 12.0]]
    close(x.grad, [6.0, 24.0])


def test_hook_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        rumus.ones(2).register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        rumus.ones(2).register_post_accumulate_grad_hook(lambda t: None)


def test_hooks_apply_to_autograd_grad(device):
    x = leaf([1.0, 2.0], device)
    y = x * x
    y.register_hook(lambda g: g * 2)
    x.register_hook(lambda g: g + 1)
    (gx,) = rumus.autograd.grad(y.sum(), x)
    close(gx, [5, 9])  # 2 * 2x, then + 1
    assert x.grad is None


def test_hook_bad_return_raises(device):
    x = leaf([1.0, 2.0], device)
    x.register_hook(lambda g: rumus.ones(3, device=device))
    with pytest.raises(RuntimeError, match="hook has changed the size"):
        x.sum().backward()
    y = leaf([1.0], device)
    y.register_hook(lambda g: "nope")
    with pytest.raises(TypeError, match="Tensor or None"):
        y.sum().backward()


class HookError(Exception):
    pass


def test_exception_in_hook_propagates_unchanged(device):
    x = leaf([1.0, 2.0], device)
    boom = HookError("from the hook")

    def hook(g):
        raise boom

    (x * x).register_hook(hook)
    y = x * x
    y.register_hook(hook)
    with pytest.raises(HookError) as info:
        y.sum().backward()
    assert info.value is boom
    x2 = leaf([1.0], device)
    x2.register_post_accumulate_grad_hook(lambda t: (_ for _ in ()).throw(HookError("post")))
    with pytest.raises(HookError, match="post"):
        (x2 * 2).sum().backward()


def test_hook_runs_with_gil_on_large_tensor():
    # backward releases the GIL; hooks take it back (and can call any Python).
    x = leaf(np.ones(1 << 17, dtype=np.float32))
    seen = []
    x.register_hook(lambda g: seen.append(float(g.sum().item())))
    (x * 2).sum().backward()
    assert seen == [2.0 * (1 << 17)]


# ------------------------------------------------------------------ post-accumulate hooks


def test_post_accumulate_runs_after_accumulation_in_readiness_order(device):
    a = leaf([1.0], device)
    b = leaf([2.0], device)
    order = []
    a.register_post_accumulate_grad_hook(lambda t: order.append(("a", t is a, t.grad.item())))
    b.register_post_accumulate_grad_hook(lambda t: order.append(("b", t is b, t.grad.item())))
    # a is used first in forward, so its gradient is ready last (as for DDP's buckets).
    h = a * 3
    out = (h * b).sum()
    out.backward()
    assert order == [("b", True, 3.0), ("a", True, 6.0)]
    a.grad = None
    b.grad = None
    order.clear()
    x = leaf([1.0], device)
    x.register_post_accumulate_grad_hook(lambda t: order.append(t.grad.item()))
    x.grad = rumus.ones(1, device=device)
    (x * 4).sum().backward()
    assert order == [5.0]  # accumulated into the existing grad first


def test_post_accumulate_rejects_non_leaf_and_removal(device):
    x = leaf([1.0], device)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    calls = []
    h = x.register_post_accumulate_grad_hook(lambda t: calls.append(1))
    h.remove()
    x.sum().backward()
    assert calls == []


def test_post_accumulate_hook_on_parameter_gets_the_parameter():
    lin = nn.Linear(2, 1)
    got = []
    for p in lin.parameters():
        p.register_post_accumulate_grad_hook(got.append)
    lin(rumus.ones(1, 2)).sum().backward()
    assert {id(p) for p in got} == {id(p) for p in lin.parameters()}
    assert all(isinstance(p, nn.Parameter) for p in got)


# ------------------------------------------------------------------ graph nodes


def test_node_name_next_functions_metadata():
    x = leaf([1.0, 2.0])
    y = (x * 2).sum()
    node = y.grad_fn
    assert node.name() == "SumBackward0"
    ((mul, _),) = node.next_functions
    assert mul.name() == "MulBackward0"
    acc = mul.next_functions[0][0]
    assert acc.name() == "AccumulateGrad" and acc.variable is not None
    node.metadata["k"] = 1
    assert y.grad_fn.metadata == {"k": 1}  # the same dict on every access
    assert isinstance(node, rumus.autograd.graph.Node)


def test_node_prehook_and_hook(device):
    x = leaf([1.0, 2.0], device)
    y = x * 3
    calls = []

    def pre(grad_outputs):
        calls.append(("pre", grad_outputs[0].cpu().numpy().tolist()))
        return (grad_outputs[0] * 2,)

    def post(grad_inputs, grad_outputs):
        calls.append(("post", grad_inputs[0].cpu().numpy().tolist(), len(grad_outputs)))
        return (grad_inputs[0] + 1,)

    h1 = y.grad_fn.register_prehook(pre)
    y.grad_fn.register_hook(post)
    y.sum().backward(retain_graph=True)
    assert calls == [("pre", [1.0, 1.0]), ("post", [6.0, 6.0], 1)]
    close(x.grad, [7, 7])
    h1.remove()
    x.grad = None
    calls.clear()
    y.sum().backward()
    assert [c[0] for c in calls] == ["post"]
    close(x.grad, [4, 4])


def test_node_hook_wrong_count_raises(device):
    x = leaf([1.0], device)
    y = x * 3
    y.grad_fn.register_hook(lambda gi, go: (gi[0], gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="incorrect number of values"):
        y.sum().backward()


def test_accumulate_grad_node_hooks(device):
    x = leaf([1.0, 2.0], device)
    acc = (x * 1).grad_fn.next_functions[0][0]
    calls = []
    acc.register_prehook(lambda go: calls.append(("pre", len(go))))
    acc.register_hook(lambda gi, go: calls.append(("post", gi, x.grad is not None)))
    (x * 2).sum().backward()
    assert calls == [("pre", 1), ("post", (), True)]


# ------------------------------------------------------------------ saved tensor hooks


def test_saved_tensors_hooks_pack_unpack_counts(device):
    packed, unpacked = [], []

    def pack(t):
        packed.append(t.shape)
        return ("box", t)

    def unpack(box):
        unpacked.append(1)
        return box[1]

    x = leaf([1.0, 2.0, 3.0], device)
    w = leaf([0.5, 0.5, 0.5], device)
    with saved_tensors_hooks(pack, unpack):
        y = (x * w).exp().sum()  # mul saves x and w, exp saves its output, sum saves nothing
    assert len(packed) == 3
    z = (x * w).sum()  # outside the context: nothing packed
    assert len(packed) == 3
    y.backward()
    assert len(unpacked) == 3
    e = np.exp(np.array([1, 2, 3]) * 0.5)
    close(x.grad, e * 0.5)
    close(w.grad, e * np.array([1, 2, 3]))
    z.backward()
    assert len(unpacked) == 3


def test_saved_tensors_hooks_replacement_value_is_used():
    x = leaf([1.0, 2.0])
    with saved_tensors_hooks(lambda t: t.detach() * 0 + 7, lambda p: p):
        y = (x * x).sum()
    y.backward()
    close(x.grad, [14, 14])  # the backward read the packed (replaced) values


def test_saved_tensors_hooks_in_place_check_still_applies():
    x = leaf([1.0, 2.0])
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        a = x * 1
        y = (a * a).sum()
    with rumus.no_grad():
        a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_saved_tensors_hooks_custom_function_and_errors():
    class Square(rumus.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    n = []
    x = leaf([3.0])
    with saved_tensors_hooks(lambda t: n.append("p") or t, lambda t: n.append("u") or t):
        y = Square.apply(x)
    y.backward()
    assert n == ["p", "u"]
    close(x.grad, [6.0])

    def bad_pack(t):
        raise HookError("pack failed")

    with saved_tensors_hooks(bad_pack, lambda t: t):
        with pytest.raises(HookError, match="pack failed"):
            x * x
    with saved_tensors_hooks(lambda t: t, lambda t: 3):
        y = (x * x).sum()
    with pytest.raises(TypeError, match="unpack_hook"):
        y.backward()
    with disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass


def test_saved_tensors_hooks_double_backward_keeps_graph():
    x = leaf([1.0, 2.0], dtype=rumus.float64)
    with saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
        y = (x * x * x).sum()
    (g,) = rumus.autograd.grad(y, x, create_graph=True)
    close(g, [3, 12])
    (gg,) = rumus.autograd.grad(g.sum(), x)
    close(gg, [6, 12])


def test_save_on_cpu(device):
    x = leaf([1.0, 2.0], device)
    before = rumus.autograd.saved_tensor_bytes()
    with save_on_cpu(pin_memory=False):
        y = (x * x).sum()
    assert rumus.autograd.saved_tensor_bytes() == before  # held by the hook, not the graph
    y.backward()
    assert x.grad.device.type == device
    close(x.grad, [2, 4])


# ------------------------------------------------------------------ module hooks


def test_module_full_backward_hooks(device):
    lin = nn.Linear(3, 2).to(device)
    x = rumus.randn(4, 3, device=device, requires_grad=True)
    calls = []

    def pre(m, grad_output):
        calls.append(("pre", m is lin, len(grad_output)))
        return (grad_output[0] * 2,)

    def post(m, grad_input, grad_output):
        calls.append(("post", len(grad_input), grad_output[0].cpu().numpy()[0, 0]))
        return (grad_input[0] * 0,)

    lin.register_full_backward_pre_hook(pre)
    h = lin.register_full_backward_hook(post)
    lin(x).sum().backward()
    assert calls == [("pre", True, 1), ("post", 1, 2.0)]
    close(x.grad, np.zeros((4, 3)))
    w = lin.weight.detach().cpu().numpy()
    close(lin.weight.grad, np.full((2, 4), 2.0) @ x.detach().cpu().numpy())
    h.remove()
    x.grad = None
    lin(x).sum().backward()
    close(x.grad, np.full((4, 2), 2.0) @ w)


def test_module_backward_hook_without_input_grad():
    lin = nn.Linear(2, 2)
    seen = []
    lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go[0].shape)))
    lin(rumus.ones(1, 2)).sum().backward()
    assert seen == [((None,), (1, 2))]
    lin.register_full_backward_hook(lambda m, gi, go: (rumus.ones(1, 2),))
    with pytest.raises(RuntimeError, match="no input requires gradient"):
        lin(rumus.ones(1, 2)).sum().backward()


def test_global_module_hooks_run_first_and_remove():
    lin = nn.Linear(2, 2)
    order = []
    lin.register_forward_pre_hook(lambda m, a: order.append("pre"))
    lin.register_forward_hook(lambda m, a, o: order.append("fwd"))
    lin.register_full_backward_hook(lambda m, gi, go: order.append("bwd"))
    hs = [
        module_mod.register_module_forward_pre_hook(lambda m, a: order.append("gpre")),
        module_mod.register_module_forward_hook(lambda m, a, o: order.append("gfwd")),
        module_mod.register_module_full_backward_pre_hook(lambda m, go: order.append("gbpre")),
        module_mod.register_module_full_backward_hook(lambda m, gi, go: order.append("gbwd")),
    ]
    try:
        lin(rumus.ones(1, 2, requires_grad=True)).sum().backward()
        assert order == ["gpre", "pre", "gfwd", "fwd", "gbpre", "gbwd", "bwd"]
    finally:
        for h in hs:
            h.remove()
    order.clear()
    lin(rumus.ones(1, 2, requires_grad=True)).sum().backward()
    assert order == ["pre", "fwd", "bwd"]


def test_backward_hooks_in_sequential_run_last_layer_first():
    first, second = nn.Linear(2, 2), nn.Linear(2, 1)
    seq = nn.Sequential(first, nn.ReLU(), second)
    seen = []
    for m in seq:
        m.register_full_backward_hook(lambda m, gi, go: seen.append(m))
    seq(rumus.ones(1, 2, requires_grad=True)).sum().backward()
    assert seen == [second, seq[1], first]


def test_backward_prehook_prepend_order():
    lin = nn.Linear(1, 1)
    order = []
    lin.register_full_backward_pre_hook(lambda m, g: order.append(1))
    lin.register_full_backward_pre_hook(lambda m, g: order.append(0), prepend=True)
    lin(rumus.ones(1, 1)).sum().backward()
    assert order == [0, 1]


def test_state_dict_hooks():
    lin = nn.Linear(2, 1)
    calls = []
    lin.register_state_dict_pre_hook(lambda m, prefix, keep_vars: calls.append(("pre", prefix)))

    def post(m, sd, prefix, meta):
        sd[prefix + "extra"] = rumus.zeros(1)

    lin.register_state_dict_post_hook(post)
    sd = lin.state_dict()
    assert calls == [("pre", "")] and "extra" in sd
    h = lin.register_state_dict_post_hook(lambda m, sd, p, meta: OrderedDict())
    with pytest.raises(RuntimeError, match="must return None"):
        lin.state_dict()
    h.remove()
    lin._register_state_dict_hook(lambda m, sd, p, meta: OrderedDict(only=rumus.ones(1)))
    assert list(lin.state_dict()) == ["only"]  # the private API may replace the dict


def test_load_state_dict_hooks():
    lin = nn.Linear(2, 1)
    sd = {k: v.clone() for k, v in lin.state_dict().items()}
    sd["renamed_weight"] = sd.pop("weight")
    calls = []

    def pre(m, state_dict, prefix, meta, strict, missing, unexpected, errors):
        calls.append(("pre", m is lin))
        state_dict[prefix + "weight"] = state_dict.pop(prefix + "renamed_weight")

    def post(m, incompatible):
        calls.append(("post", list(incompatible.missing_keys)))
        incompatible.unexpected_keys.clear()

    lin.register_load_state_dict_pre_hook(pre)
    lin.register_load_state_dict_post_hook(post)
    result = lin.load_state_dict(sd)
    assert calls == [("pre", True), ("post", [])]
    assert result.missing_keys == [] and result.unexpected_keys == []
    lin2 = nn.Linear(2, 1)
    lin2.register_load_state_dict_post_hook(lambda m, inc: inc.missing_keys.clear())
    lin2.load_state_dict({"bias": rumus.zeros(1)})  # post hook clears the missing key
    lin2.register_load_state_dict_post_hook(lambda m, inc: 1)
    with pytest.raises(RuntimeError, match="not expected to return new values"):
        lin2.load_state_dict(lin2.state_dict())


def test_module_hooks_survive_pickle_and_handles_are_removable():
    lin = nn.Linear(1, 1)
    lin.register_full_backward_hook(print)
    lin.register_state_dict_pre_hook(print)
    clone = pickle.loads(pickle.dumps(lin))
    assert len(clone._backward_hooks) == 1 and len(clone._state_dict_pre_hooks) == 1
    handle = RemovableHandle(OrderedDict())
    assert pickle.loads(pickle.dumps(handle)).id == handle.id
    gc.collect()
