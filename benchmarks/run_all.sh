#!/usr/bin/env bash
# Runs every benchmark in one go, side by side, and prints the machine it ran on.
# Usage: bash benchmarks/run_all.sh   (from the repo root, after `make venv`)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  cores: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
$PY benchmarks/bench_match.py
$PY benchmarks/reference_engine.py
$PY benchmarks/bench_elo.py
