#!/usr/bin/env python
"""Quantized inference on the CPU: a 4096x4096 Linear at batch 1 and 64, float32 against
``quantize_dynamic`` (int8, VNNI/AVX2) and the Q8 block Linear, with PyTorch's
``quantize_dynamic`` side by side when torch is installed; then the model size (bytes
of the state_dict's tensors, and of the safetensors file).

    .venv/bin/python benches/bench_quant.py             # 3 rounds
    .venv/bin/python benches/bench_quant.py --rounds 5 --paths   # also force AVX2 and scalar

Every timing runs in a fresh interpreter (benches/harness.py); rounds alternate the
variants and the table prints medians and speedups over float32 of the same library
(above 1.0: the quantized layer is faster). Targets (issue 18): int8 >= 2.5x float32 at
batch 1, >= 1.5x at batch 64; size about 1/4. A script, not a test: shared machines are
noisy. Benchmark a release build (`maturin develop --release`).
"""

import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import have, time_once  # noqa: E402

N = 4096

RUMUS = """
import rumus, rumus.nn as nn
from rumus import _rumus
rumus.manual_seed(0)
lin = nn.Linear({n}, {n}).eval()
kind = {kind!r}
path = {path!r}
if path:
    _rumus._qgemm_path(path)
if kind == "qint8":
    layer = rumus.quantization.quantize_dynamic(nn.Sequential(lin))[0]
elif kind == "q8":
    layer = rumus.quantization.quantize_dynamic(nn.Sequential(lin), dtype=rumus.q8)[0]
else:
    layer = lin
x = rumus.randn({b}, {n})
rumus.set_grad_enabled(False)
layer(x)
"""

TORCH = """
import torch
torch.manual_seed(0)
lin = torch.nn.Linear({n}, {n}).eval()
if {kind!r} == "qint8":
    layer = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(lin), {{torch.nn.Linear}},
                                                   dtype=torch.qint8)[0]
else:
    layer = lin
x = torch.randn({b}, {n})
torch.set_grad_enabled(False)
layer(x)
"""


def bench(rounds, min_time, paths):
    variants = [("rumus", "f32", ""), ("rumus", "qint8", ""), ("rumus", "q8", "")]
    if paths:
        variants += [("rumus", "qint8", "avx2"), ("rumus", "qint8", "scalar")]
    if have("torch"):
        variants += [("torch", "f32", ""), ("torch", "qint8", "")]
    else:
        print("(torch not installed: PyTorch columns skipped)")
    print(f"\nLinear {N}x{N}, median ms per forward (speedup over the library's float32)")
    head = f"{'variant':<28}{'batch 1':>18}{'batch 64':>18}"
    print(head)
    print("-" * len(head))
    results = {}
    for b in (1, 64):
        for r in range(rounds):
            order = variants[r % len(variants) :] + variants[: r % len(variants)]
            for lib, kind, path in order:
                src = (RUMUS if lib == "rumus" else TORCH).format(n=N, b=b, kind=kind, path=path)
                t = time_once(src, "layer(x)", min_time=min_time)
                results.setdefault((lib, kind, path, b), []).append(t)
    for lib, kind, path in variants:
        row = f"{lib + ' ' + kind + (' [' + path + ']' if path else ''):<28}"
        for b in (1, 64):
            t = statistics.median(results[(lib, kind, path, b)])
            base = statistics.median(results[(lib, "f32", "", b)])
            row += f"{t * 1e3:>10.3f} ({base / t:4.2f}x)"
        print(row, flush=True)


def sizes():
    import rumus
    import rumus.nn as nn

    rumus.manual_seed(0)
    model = nn.Sequential(nn.Linear(N, N), nn.ReLU(), nn.Linear(N, N))
    print(f"\nModel size (two {N}x{N} Linear layers)")
    head = f"{'model':<14}{'tensor bytes':>16}{'file bytes':>16}{'ratio':>10}"
    print(head)
    print("-" * len(head))
    base = None
    for name, m in [
        ("float32", model),
        ("qint8", rumus.quantization.quantize_dynamic(model)),
        ("q8", rumus.quantization.quantize_dynamic(model, dtype=rumus.q8)),
    ]:
        sd = m.state_dict()
        nbytes = sum(t.nbytes for t in sd.values())
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.safetensors")
            rumus.save(sd, path)
            fbytes = os.path.getsize(path)
        base = base or nbytes
        print(f"{name:<14}{nbytes:>16,}{fbytes:>16,}{nbytes / base:>10.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.2)
    ap.add_argument("--paths", action="store_true", help="also time the AVX2 and scalar paths")
    args = ap.parse_args()
    bench(args.rounds, args.min_time, args.paths)
    sizes()


if __name__ == "__main__":
    main()
