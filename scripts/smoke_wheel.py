"""Smoke test of an installed rumus (a wheel, not the source tree): imports it,
prints the environment report, fits a linear regression with SGD and checks the
loss fell. Used by tests/test_wheel.py and .github/workflows/wheels.yml.

    python scripts/smoke_wheel.py [--version X.Y.Z] [--no-rust]

--version: the version rumus (and the installed metadata) must report.
--no-rust: also check that no Rust toolchain (cargo, rustc) is on PATH.
"""

import argparse
import importlib.metadata
import shutil
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--version")
    p.add_argument("--no-rust", action="store_true")
    args = p.parse_args()
    if args.no_rust:
        found = [t for t in ("cargo", "rustc") if shutil.which(t)]
        assert not found, f"a Rust toolchain is on PATH: {found}"

    import rumus
    from rumus.__main__ import main as report

    assert "site-packages" in rumus.__file__, f"imported {rumus.__file__}, not an installed wheel"
    assert not rumus._rumus._gpu_initialized(), "import created the GPU context"
    report()
    installed = importlib.metadata.version("rumus")
    print(f"version {rumus.__version__} {installed}")
    if args.version:
        assert rumus.__version__ == installed == args.version, (rumus.__version__, installed)

    rumus.manual_seed(0)
    x = rumus.randn(256, 4)
    y = x @ rumus.tensor([[1.5], [-2.0], [0.5], [3.0]]) + 0.25
    model = rumus.nn.Linear(4, 1)
    opt = rumus.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = rumus.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print(f"loss {losses[0]:.6g} {losses[-1]:.6g}")
    # Noise-free targets: 60 SGD steps take the loss from ~15 to nearly 0.
    assert losses[0] > 1.0 and losses[-1] < 0.01 * losses[0], losses
    print("smoke test passed", file=sys.stderr)


if __name__ == "__main__":
    main()
