"""Training parity: a few steps of real training give the same numbers as a reference.

An MLP and a small CNN (conv, batch norm in training mode, pooling, dropout with
p=0) start from identical weights and see identical batches; 20 steps of SGD with
momentum and of AdamW must give the same losses (1e-5 relative) and final
parameters as

* a NumPy implementation written here for the MLP (forward, cross-entropy,
  manual backward, optimizer update, in float64): always runs;
* PyTorch (float32, weights copied from rumus through NumPy): when installed.
"""

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F
from rumus import nn

STEPS = 20
LOSS_RTOL = 1e-5
# Parameters after 20 float32 steps: differences of a few ulps per step add up.
PARAM_RTOL, PARAM_ATOL = 1e-4, 1e-6

# name -> (rumus.optim / torch.optim class name, hyperparameters)
OPTIMIZERS = {
    "sgd_momentum": ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=1e-3)),
    "adamw": ("AdamW", dict(lr=1e-2, betas=(0.9, 0.99), eps=1e-8, weight_decay=1e-2)),
}

MLP_IN, MLP_CLASSES = 12, 5
CNN_IN, CNN_CLASSES = (2, 8, 8), 5


def mlp(nn_mod):
    return nn_mod.Sequential(
        nn_mod.Linear(MLP_IN, 32),
        nn_mod.ReLU(),
        nn_mod.Linear(32, 16),
        nn_mod.ReLU(),
        nn_mod.Linear(16, MLP_CLASSES),
    )


def cnn(nn_mod):
    # (2, 8, 8) -> conv pad 1 -> (4, 8, 8) -> pool -> (4, 4, 4) -> conv -> (6, 2, 2) -> 24.
    # No bias before the batch norm: its gradient is rounding noise (the norm removes
    # it), which AdamW would scale up to full-size steps differing between libraries.
    return nn_mod.Sequential(
        nn_mod.Conv2d(2, 4, 3, padding=1, bias=False),
        nn_mod.BatchNorm2d(4),
        nn_mod.ReLU(),
        nn_mod.MaxPool2d(2),
        nn_mod.Conv2d(4, 6, 3),
        nn_mod.ReLU(),
        nn_mod.Flatten(),
        nn_mod.Dropout(p=0.0),
        nn_mod.Linear(24, CNN_CLASSES),
    )


ARCHS = {"mlp": (mlp, (MLP_IN,), MLP_CLASSES, 16), "cnn": (cnn, CNN_IN, CNN_CLASSES, 16)}


def make_batches(in_shape, n_classes, batch, seed=0):
    """STEPS batches of noisy class templates, so that the loss can fall in 20 steps."""
    rng = np.random.default_rng(seed)
    templates = rng.standard_normal((n_classes,) + in_shape)
    out = []
    for _ in range(STEPS):
        y = rng.integers(0, n_classes, batch)
        x = templates[y] + rng.standard_normal((batch,) + in_shape)
        out.append((x.astype(np.float32), y.astype(np.int64)))
    return out


def rumus_model(arch):
    rumus.manual_seed(0)
    model = ARCHS[arch][0](nn)
    model.train()
    return model


def state_numpy(model):
    """The model's state dict as NumPy copies (parameters and buffers)."""
    return {k: np.array(v.detach().numpy(), copy=True) for k, v in model.state_dict().items()}


def train_rumus(model, opt_name, batches):
    cls, hp = OPTIMIZERS[opt_name]
    opt = getattr(rumus.optim, cls)(model.parameters(), **hp)
    losses = []
    for x, y in batches:
        loss = F.cross_entropy(model(rumus.from_numpy(x)), rumus.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses), state_numpy(model)


def assert_same_training(losses, state, ref_losses, ref_state):
    np.testing.assert_allclose(
        losses, ref_losses, rtol=LOSS_RTOL, atol=0, err_msg="losses per step"
    )
    # The training must have done something, or the comparison proves little.
    assert ref_losses[-1] < ref_losses[0] - 0.05, ref_losses
    assert sorted(state) == sorted(ref_state)
    for k in ref_state:
        assert state[k].shape == ref_state[k].shape, k
        np.testing.assert_allclose(
            state[k], ref_state[k], rtol=PARAM_RTOL, atol=PARAM_ATOL, err_msg=f"final {k}"
        )


# ------------------------------------------------------------ NumPy reference (MLP)


def numpy_mlp_loss_grads(params, x, y):
    """Mean cross-entropy of the MLP (Linear-ReLU-...-Linear; `params` in layer order,
    float64) on one batch, and its gradient per parameter by hand."""
    names = list(params)
    layers = [(names[i], names[i + 1]) for i in range(0, len(names), 2)]
    acts = [x.astype(np.float64)]  # each layer's input
    for i, (w, b) in enumerate(layers):
        z = acts[-1] @ params[w].T + params[b]
        acts.append(np.maximum(z, 0) if i < len(layers) - 1 else z)
    logits = acts[-1]
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    n = len(y)
    loss = -logp[np.arange(n), y].mean()
    g = np.exp(logp)  # d loss / d logits = (softmax - one_hot) / n
    g[np.arange(n), y] -= 1
    g /= n
    grads = {}
    for i in reversed(range(len(layers))):
        w, b = layers[i]
        grads[w] = g.T @ acts[i]
        grads[b] = g.sum(axis=0)
        if i > 0:
            g = (g @ params[w]) * (acts[i] > 0)
    return loss, grads


def numpy_mlp_training(state, opt_name, batches):
    """Trains the MLP of `state` in float64 with PyTorch's update rules;
    returns (losses, final parameters)."""
    cls, hp = OPTIMIZERS[opt_name]
    params = {k: v.astype(np.float64) for k, v in state.items()}
    opt_state = {k: {} for k in params}
    losses = []
    for step, (x, y) in enumerate(batches, start=1):
        loss, grads = numpy_mlp_loss_grads(params, x, y)
        losses.append(loss)
        for k, p in params.items():
            g, st = grads[k], opt_state[k]
            if cls == "SGD":
                g = g + hp["weight_decay"] * p
                st["buf"] = g if step == 1 else hp["momentum"] * st["buf"] + g
                params[k] = p - hp["lr"] * st["buf"]
            else:  # AdamW: decoupled weight decay, bias-corrected moments
                b1, b2 = hp["betas"]
                p = p * (1 - hp["lr"] * hp["weight_decay"])
                st["m"] = b1 * st.get("m", 0.0) + (1 - b1) * g
                st["v"] = b2 * st.get("v", 0.0) + (1 - b2) * g * g
                m_hat = st["m"] / (1 - b1**step)
                v_hat = st["v"] / (1 - b2**step)
                params[k] = p - hp["lr"] * m_hat / (np.sqrt(v_hat) + hp["eps"])
    return np.array(losses), params


def test_numpy_reference_matches_autograd():
    """The hand-written backward agrees with rumus autograd on one batch, so a
    mistake shared by both sides cannot hide behind matching losses."""
    _, in_shape, n_classes, batch = ARCHS["mlp"]
    x, y = make_batches(in_shape, n_classes, batch)[0]
    model = rumus_model("mlp")
    ref_loss, ref_grads = numpy_mlp_loss_grads(state_numpy(model), x, y)
    loss = F.cross_entropy(model(rumus.from_numpy(x)), rumus.from_numpy(y))
    loss.backward()
    np.testing.assert_allclose(loss.item(), ref_loss, rtol=1e-6)
    for k, p in model.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), ref_grads[k], rtol=1e-5, atol=1e-7, err_msg=k)


@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
def test_mlp_matches_numpy(opt_name):
    _, in_shape, n_classes, batch = ARCHS["mlp"]
    batches = make_batches(in_shape, n_classes, batch)
    model = rumus_model("mlp")
    ref_losses, ref_state = numpy_mlp_training(state_numpy(model), opt_name, batches)
    losses, state = train_rumus(model, opt_name, batches)
    assert_same_training(losses, state, ref_losses, ref_state)


# ------------------------------------------------------------ PyTorch reference


def torch_training(torch, arch, state, opt_name, batches):
    torch.manual_seed(0)
    model = ARCHS[arch][0](torch.nn)
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in state.items()})
    model.train()
    cls, hp = OPTIMIZERS[opt_name]
    opt = getattr(torch.optim, cls)(model.parameters(), **hp)
    losses = []
    for x, y in batches:
        loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses), {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_matches_torch(arch, opt_name):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)  # deterministic reductions on the torch side
    _, in_shape, n_classes, batch = ARCHS[arch]
    batches = make_batches(in_shape, n_classes, batch)
    model = rumus_model(arch)
    ref_losses, ref_state = torch_training(torch, arch, state_numpy(model), opt_name, batches)
    losses, state = train_rumus(model, opt_name, batches)
    assert_same_training(losses, state, ref_losses, ref_state)
    if arch == "cnn":  # the batch-norm statistics were updated every step
        assert state["1.num_batches_tracked"] == STEPS
        assert not np.allclose(state["1.running_var"], 1.0)
