#!/usr/bin/env python
"""Recurrent layers on the CPU: one training step (forward, backward, SGD step) of a
2-layer LSTM and GRU (input 256, hidden 512) on a batch of 32 sequences of 100 steps,
beside PyTorch when it is installed, each library timed in its own process
(benches/harness.py). With --gpu, also LSTM forward + backward on rumus' CPU and GPU
(the fused gate kernels of shaders/rnn.wgsl), beside PyTorch CPU (and CUDA if it has one):
columns `gpu` (rumus' GPU) and `cuda` (PyTorch's), so rumus/gpu is rumus' GPU speed-up.

    .venv/bin/python benches/bench_rnn.py [--rounds 3] [--min-time 0.5] [--gpu]

Target (issue 16): rumus at or below 1.0x PyTorch's CPU time. Nothing here asserts a
speed; benchmark a release build (`maturin develop --release`).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import compare, have  # noqa: E402

INPUT, HIDDEN, LAYERS, BATCH, STEPS = 256, 512, 2, 32, 100


def setup(lib, cls):
    mod = "rumus" if lib == "rumus" else "torch"
    return (
        f"import numpy as np, {mod} as lib\n"
        "lib.manual_seed(0)\n"
        f"m = lib.nn.{cls}({INPUT}, {HIDDEN}, num_layers={LAYERS})\n"
        "opt = lib.optim.SGD(m.parameters(), lr=0.01)\n"
        f"x = lib.from_numpy(np.random.default_rng(0).standard_normal(({STEPS}, {BATCH}, {INPUT}))"
        ".astype(np.float32))\n"
        "def step():\n"
        "    opt.zero_grad()\n"
        "    out, _ = m(x)\n"
        "    out.pow(2).mean().backward()\n"
        "    opt.step()\n"
    )


def setup_fb(mod, device, size):
    """LSTM forward + backward on `device`, synchronized so GPU work is counted."""
    inp, hid, layers, batch, steps = size
    sync = {"cpu": "pass", "gpu": "lib.gpu.synchronize()", "cuda": "lib.cuda.synchronize()"}
    return (
        f"import numpy as np, {mod} as lib\n"
        "lib.manual_seed(0)\n"
        f"m = lib.nn.LSTM({inp}, {hid}, num_layers={layers}).to('{device}')\n"
        f"x = lib.from_numpy(np.random.default_rng(0).standard_normal(({steps}, {batch}, {inp}))"
        f".astype(np.float32)).to('{device}')\n"
        "def step():\n"
        "    out, _ = m(x)\n"
        "    out.pow(2).mean().backward()\n"
        f"    {sync[device]}\n"
    )


def gpu_case(size, have_torch):
    """The LSTM forward + backward row: rumus CPU and GPU, torch CPU (and CUDA)."""
    import rumus

    jobs = {"rumus": (setup_fb("rumus", "cpu", size), "step()")}
    if rumus.gpu.is_available():
        jobs["gpu"] = (setup_fb("rumus", "gpu", size), "step()")
    else:
        print("(no GPU for rumus: CPU row only)")
    if have_torch:
        jobs["torch"] = (setup_fb("torch", "cpu", size), "step()")
        if have("torch; assert torch.cuda.is_available()"):
            jobs["cuda"] = (setup_fb("torch", "cuda", size), "step()")
    inp, hid, layers, batch, steps = size
    return (f"LSTM {layers}x{hid} b{batch} T{steps} fwd+bwd", jobs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument(
        "--gpu",
        action="store_true",
        help="add the LSTM forward + backward row on rumus' GPU (small sizes by default: "
        "software Vulkan is slow; --full uses the training-step sizes)",
    )
    ap.add_argument("--full", action="store_true")
    args = ap.parse_args()
    libs = ["rumus"] + (["torch"] if have("torch") else [])
    if "torch" not in libs:
        print("(PyTorch not installed: rumus times only)")
    cases = [
        (
            f"{cls} {LAYERS}x{HIDDEN} b{BATCH} T{STEPS} step",
            {lib: (setup(lib, cls), "step()") for lib in libs},
        )
        for cls in ("LSTM", "GRU")
    ]
    if args.gpu:
        size = (INPUT, HIDDEN, LAYERS, BATCH, STEPS) if args.full else (64, 128, 2, 8, 20)
        cases.append(gpu_case(size, "torch" in libs))
    compare(cases, rounds=args.rounds, min_time=args.min_time)


if __name__ == "__main__":
    main()
