#!/usr/bin/env bash
# The project's main job for now: build, then run the tensor demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python examples/demo.py
