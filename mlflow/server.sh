#!/usr/bin/env bash
# Start an MLflow tracking server (UI + REST + registry + proxied artifacts) for the league.
#
# Environment (all optional):
#   MLFLOW_HOME            folder for the default SQLite file and artifacts (default: <repo>/mlruns/server)
#   BACKEND_STORE_URI      sqlite:///... (default) or postgresql://user:pass@host:5432/db (psycopg2-binary,
#                          in requirements.txt; a bare postgresql:// is run as postgresql+psycopg2://)
#   ARTIFACTS_DESTINATION  a folder (default: $MLFLOW_HOME/artifacts) or s3://bucket/prefix; for S3 set
#                          MLFLOW_S3_ENDPOINT_URL (MinIO, moto, ...) and AWS_ACCESS_KEY_ID /
#                          AWS_SECRET_ACCESS_KEY here, on the server: clients need no S3 credentials
#   HOST / PORT / WORKERS  bind address (default 127.0.0.1), port (5000), worker processes (1)
#   MLFLOW                 the mlflow executable (default: the repo's .venv/bin/mlflow, else PATH)
#
# Clients then use MLFLOW_TRACKING_URI=http://$HOST:$PORT (or `c4 league --tracking-uri ...`).
# Beyond localhost (a Kubernetes service name, say) also set MLFLOW_SERVER_ALLOWED_HOSTS.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${MLFLOW:-}" ]]; then
    if [[ -x "$repo/.venv/bin/mlflow" ]]; then MLFLOW="$repo/.venv/bin/mlflow"; else MLFLOW=mlflow; fi
fi
# mlflow starts uvicorn/gunicorn by name: put its own bin folder first on PATH
[[ "$MLFLOW" == */* ]] && export PATH="$(dirname "$MLFLOW"):$PATH"
MLFLOW_HOME="${MLFLOW_HOME:-$repo/mlruns/server}"
mkdir -p "$MLFLOW_HOME"
BACKEND_STORE_URI="${BACKEND_STORE_URI:-sqlite:///$MLFLOW_HOME/mlflow.db}"
ARTIFACTS_DESTINATION="${ARTIFACTS_DESTINATION:-$MLFLOW_HOME/artifacts}"
# SQLAlchemy 2.1 maps a bare postgresql:// to psycopg 3, which is not installed: the pinned driver
# is psycopg2 (psycopg2-binary). Name it, unless the URI already names a driver.
case "$BACKEND_STORE_URI" in
    postgresql://*) BACKEND_STORE_URI="postgresql+psycopg2://${BACKEND_STORE_URI#postgresql://}" ;;
    postgres://*) BACKEND_STORE_URI="postgresql+psycopg2://${BACKEND_STORE_URI#postgres://}" ;;
esac
# never echo a database password
shown_backend="$(sed -E 's#^([^:]+://[^:/@]+):[^@/]*@#\1:***@#' <<<"$BACKEND_STORE_URI")"
echo "mlflow server: backend $shown_backend, artifacts $ARTIFACTS_DESTINATION," \
    "http://${HOST:-127.0.0.1}:${PORT:-5000}" >&2
exec "$MLFLOW" server \
    --backend-store-uri "$BACKEND_STORE_URI" \
    --artifacts-destination "$ARTIFACTS_DESTINATION" \
    --host "${HOST:-127.0.0.1}" \
    --port "${PORT:-5000}" \
    --workers "${WORKERS:-1}"
