"""Per-sample gradients of a small MLP (in -> hidden -> classes, tanh, cross-entropy) over a
batch: ``vmap(grad(loss), in_dims=(None, 0, 0))`` against a Python loop of ``grad`` calls
(the "loop" column), and torch.func's vmap when PyTorch is importable. Each in its own
process (see harness.py).

    python benches/bench_func.py [--rounds 3] [--batch 64] [--hidden 32]
"""

import argparse

from harness import compare, have

SETUP = """
import {lib} as t
import {lib}.nn as nn
import {lib}.nn.functional as F
from {lib}.func import functional_call, grad, vmap
t.manual_seed(0)
model = nn.Sequential(nn.Linear(16, {hidden}), nn.Tanh(), nn.Linear({hidden}, 10))
params = {{k: v.detach() for k, v in model.named_parameters()}}
x, y = t.randn({batch}, 16), t.randint(0, 10, ({batch},))

def loss(p, xi, yi):
    return F.cross_entropy(functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

per_sample = vmap(grad(loss), in_dims=(None, 0, 0))
g = grad(loss)

def looped():
    return [g(params, x[i], y[i]) for i in range({batch})]
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=32)
    a = ap.parse_args()
    fmt = dict(batch=a.batch, hidden=a.hidden)
    jobs = {
        "rumus": (SETUP.format(lib="rumus", **fmt), "per_sample(params, x, y)"),
        "loop": (SETUP.format(lib="rumus", **fmt), "looped()"),
    }
    if have("torch"):
        jobs["torch"] = (SETUP.format(lib="torch", **fmt), "per_sample(params, x, y)")
    compare([(f"per-sample grads, batch {a.batch}", jobs)], rounds=a.rounds, min_time=0.2)


if __name__ == "__main__":
    main()
