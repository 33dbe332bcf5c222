#!/usr/bin/env bash
# The whole test suite: lint gates, Rust unit tests, then pytest against the built module.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Lint gates: formatting and lints fail the run (allowed lints are listed in Cargo.toml).
cargo fmt --check
cargo clippy --release --all-targets -q -- -D warnings
.venv/bin/ruff format --check python tests benches examples
.venv/bin/ruff check python tests benches examples
# The docs site (docs/, mkdocs.yml): --strict fails on any warning, a broken link or reference
# (not with -q, which hides the warnings from the strict check).
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict -d target/docs-site
cargo test --release --lib -q
.venv/bin/python -m pytest -q --ignore=tests/shaders "$@"
# The shader tests load the driver a second time through wgpu-py: their own process.
.venv/bin/python -m pytest -q tests/shaders
