#!/usr/bin/env bash
# Serve the league champion over HTTP with `mlflow models serve` (offline: --env-manager local).
#
# Environment (all optional):
#   MODEL_URI            models:/connect4@champion (default), models:/connect4/Production, models:/connect4/7
#   MLFLOW_TRACKING_URI  where the registry lives (default: the embedded store, <repo>/mlruns/mlflow.db)
#   HOST / PORT          bind address (default 127.0.0.1) and port (default 5001; 5000 is the tracking server's)
#   WORKERS              uvicorn workers (default 1)
#   MLFLOW               the mlflow executable (default: the repo's .venv/bin/mlflow, else PATH)
#
# Then:  curl -s http://127.0.0.1:5001/invocations -H 'Content-Type: application/json' \
#            -d '{"dataframe_records": [{"moves": "4453"}]}'
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${MLFLOW:-}" ]]; then
    if [[ -x "$repo/.venv/bin/mlflow" ]]; then MLFLOW="$repo/.venv/bin/mlflow"; else MLFLOW=mlflow; fi
fi
# mlflow starts uvicorn/gunicorn by name: put its own bin folder first on PATH
[[ "$MLFLOW" == */* ]] && export PATH="$(dirname "$MLFLOW"):$PATH"
export MLFLOW_TRACKING_URI="${MLFLOW_TRACKING_URI:-sqlite:///$repo/mlruns/mlflow.db}"
MODEL_URI="${MODEL_URI:-models:/connect4@champion}"
echo "serving $MODEL_URI from $MLFLOW_TRACKING_URI on http://${HOST:-127.0.0.1}:${PORT:-5001}" >&2
exec "$MLFLOW" models serve \
    -m "$MODEL_URI" \
    --env-manager local \
    --host "${HOST:-127.0.0.1}" \
    --port "${PORT:-5001}" \
    --workers "${WORKERS:-1}"
