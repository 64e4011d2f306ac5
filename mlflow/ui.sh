#!/usr/bin/env bash
# The MLflow UI on the embedded store (<repo>/mlruns), bound to 127.0.0.1 (`make ui`).
#   PORT (default 5000), MLFLOW (default: the repo's .venv/bin/mlflow, else PATH)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${MLFLOW:-}" ]]; then
    if [[ -x "$repo/.venv/bin/mlflow" ]]; then MLFLOW="$repo/.venv/bin/mlflow"; else MLFLOW=mlflow; fi
fi
# mlflow starts uvicorn/gunicorn by name: put its own bin folder first on PATH
[[ "$MLFLOW" == */* ]] && export PATH="$(dirname "$MLFLOW"):$PATH"
mkdir -p "$repo/mlruns/artifacts"
echo "MLflow UI on http://127.0.0.1:${PORT:-5000} (store $repo/mlruns)" >&2
exec "$MLFLOW" ui \
    --backend-store-uri "sqlite:///$repo/mlruns/mlflow.db" \
    --default-artifact-root "$repo/mlruns/artifacts" \
    --host 127.0.0.1 \
    --port "${PORT:-5000}" \
    --workers "${WORKERS:-1}"
