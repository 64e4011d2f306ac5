#!/usr/bin/env bash
# The production-shaped tracking server: Postgres for runs and the registry, S3 for artifacts.
#
# Required:
#   BACKEND_STORE_URI      postgresql://user:pass@host:5432/mlflow (psycopg2-binary, in requirements.txt;
#                          server.sh runs a bare postgresql:// as postgresql+psycopg2://)
#   ARTIFACTS_DESTINATION  s3://bucket/prefix
#   AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
# Optional:
#   MLFLOW_S3_ENDPOINT_URL an S3-compatible endpoint (MinIO, Ceph, moto); unset means AWS itself
#   HOST / PORT / WORKERS  as in server.sh (HOST defaults to 127.0.0.1: set 0.0.0.0 in a container)
set -euo pipefail
missing=()
for var in BACKEND_STORE_URI ARTIFACTS_DESTINATION AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY; do
    [[ -n "${!var:-}" ]] || missing+=("$var")
done
if (( ${#missing[@]} )); then
    echo "server-postgres-s3.sh: set ${missing[*]} (see the comment at the top of this script)" >&2
    exit 2
fi
[[ "$BACKEND_STORE_URI" == postgres* ]] || { echo "BACKEND_STORE_URI must be postgresql://..." >&2; exit 2; }
[[ "$ARTIFACTS_DESTINATION" == s3://* ]] || { echo "ARTIFACTS_DESTINATION must be s3://bucket/prefix" >&2; exit 2; }
exec "$(dirname "${BASH_SOURCE[0]}")/server.sh"
