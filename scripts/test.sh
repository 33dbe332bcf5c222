#!/usr/bin/env bash
# The whole test suite: Rust unit tests, then pytest against the built module.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --release --lib -q
.venv/bin/python -m pytest -q --ignore=tests/shaders "$@"
# The shader tests load the driver a second time through wgpu-py: their own process.
.venv/bin/python -m pytest -q tests/shaders
