#!/usr/bin/env bash
# The whole test suite: Rust unit tests, then pytest against the built module.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --release --lib -q
.venv/bin/python -m pytest -q "$@"
