#!/usr/bin/env bash
# The project's main job: set up (.venv, an optimized build, the example's extra
# packages), then train a small CNN on scikit-learn's digits with rumus.
# Arguments go to examples/train_digits.py, e.g. `bash scripts/train.sh --epochs 15`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh scikit-learn tqdm matplotlib
.venv/bin/python examples/train_digits.py "$@"
