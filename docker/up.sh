#!/usr/bin/env bash
# `make up`: the league's services as local processes, without Docker (compose.yaml is the
# containerised version). All on 127.0.0.1:
#   Airflow: api-server (and UI), scheduler, dag-processor                        :AIRFLOW_PORT (8080)
#   the MLflow UI on the embedded store (<repo>/mlruns/mlflow.db, or
#   $MLFLOW_TRACKING_URI when that is another sqlite:/// file)                  :MLFLOW_PORT  (5000)
#   the play page, `c4 serve-app`, when this checkout has it                    :APP_PORT     (8000)
# Airflow's metadata DB lives in AIRFLOW_HOME (default <repo>/.airflow), apart from MLflow's.
# Ctrl-C stops all three, and so does `docker/up.sh down` (`make down`) from another terminal: the
# running stack's process ids are in $AIRFLOW_HOME/up.pids. Airflow's own log servers (8793, 8794)
# listen on every interface: Airflow 3.3 hard-codes that, and they serve only requests signed with
# this instance's secret.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${VENV:-$repo/.venv}"
export PATH="$venv/bin:$PATH"
export AIRFLOW_HOME="${AIRFLOW_HOME:-$repo/.airflow}"
export AIRFLOW__CORE__DAGS_FOLDER="$repo/dags"
export AIRFLOW__CORE__PLUGINS_FOLDER="$repo/plugins"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__API__HOST=127.0.0.1
export AIRFLOW__API__PORT="${AIRFLOW_PORT:-8080}"
export AIRFLOW__API__BASE_URL="http://127.0.0.1:$AIRFLOW__API__PORT"
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="http://127.0.0.1:$AIRFLOW__API__PORT/execution/"
export AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL="${AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL:-30}"
# LocalExecutor forks [core] parallelism workers at once (Airflow's default 32, about 130 MB each):
# one per core, unless AIRFLOW__CORE__PARALLELISM is set (the variable wins over airflow.cfg, so
# change the count through it). The tasks are CPU-bound: more workers than cores only contend.
export AIRFLOW__CORE__PARALLELISM="${AIRFLOW__CORE__PARALLELISM:-$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}"
export MLFLOW_TRACKING_URI="${MLFLOW_TRACKING_URI:-sqlite:///$repo/mlruns/mlflow.db}"
export MLFLOW_CONFIGURE_LOGGING=false MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR=false
if [[ "$MLFLOW_TRACKING_URI" == sqlite:///* ]]; then
    export C4_MLFLOW_UI_URL="http://127.0.0.1:${MLFLOW_PORT:-5000}"  # started below
else
    export C4_MLFLOW_UI_URL="$MLFLOW_TRACKING_URI"  # a tracking server is its own UI
fi
pidfile="$AIRFLOW_HOME/up.pids"  # this script's pid, then one process group per service
logs="$AIRFLOW_HOME/up-logs"

gone() {  # gone SECONDS PID...: wait until none of the process groups is left; 1 if one still is
    local seconds="$1" pid
    shift
    for _ in $(seq "$((seconds * 5))"); do
        local alive=0
        for pid in "$@"; do kill -0 -- "-$pid" 2>/dev/null && alive=1; done
        ((alive)) || return 0
        sleep 0.2
    done
    return 1
}

stop_groups() {  # TERM each process group given once, KILL what is left after 20 s, and wait for it
    local pid
    for pid in "$@"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    gone 20 "$@" && return 0
    for pid in "$@"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
    gone 10 "$@" || true
}

running() {  # the process ids in $pidfile, if any of them is still alive
    [[ -s "$pidfile" ]] || return 1
    local pid
    for pid in $(cat "$pidfile"); do kill -0 "$pid" 2>/dev/null && return 0; done
    return 1
}

if [[ "${1:-}" == down ]]; then
    if ! running; then
        echo "nothing to stop: no stack of this AIRFLOW_HOME ($AIRFLOW_HOME) is running"
        rm -f "$pidfile"
        exit 0
    fi
    mapfile -t ids <"$pidfile"
    # the foreground script stops its services itself (a second TERM would make Airflow's
    # scheduler stop waiting for its tasks); if it is gone, or they outlive its 20 s, this does
    if kill -TERM "${ids[0]}" 2>/dev/null; then gone 35 "${ids[@]:1}" || true; fi
    stop_groups "${ids[@]:1}"
    rm -f "$pidfile"
    echo "stopped the stack of $AIRFLOW_HOME"
    exit 0
elif [[ -n "${1:-}" ]]; then
    echo "usage: docker/up.sh [down]" >&2
    exit 2
fi
if running; then
    echo "the stack of $AIRFLOW_HOME is already up (process ids in $pidfile): make down stops it" >&2
    exit 1
fi
mkdir -p "$AIRFLOW_HOME" "$repo/mlruns" "$logs"

pids=()
stop() {  # each service is its own process group
    trap - INT TERM EXIT
    stop_groups "${pids[@]}"
    rm -f "$pidfile"
}
trap stop INT TERM EXIT

# Airflow's components, each its own process group: what `airflow standalone` starts, less its
# triggerer (no task of this DAG defers) and its own parent process, about 300 MB between them
airflow db migrate >"$logs/airflow-migrate.log" 2>&1 \
    || { tail -30 "$logs/airflow-migrate.log" >&2; echo "airflow db migrate failed" >&2; exit 1; }
for component in api-server scheduler dag-processor; do
    setsid airflow "$component" >"$logs/airflow-$component.log" 2>&1 &
    pids+=($!)
done
if [[ "$MLFLOW_TRACKING_URI" == sqlite:///* ]]; then
    # the store made or migrated first, once, under the lock the leagues take (a fresh store's
    # migration by the UI once raced another and failed on a table that already existed)
    python -c 'import sys; from c4core.tracking.store import Tracking; Tracking.for_uri(sys.argv[1]).client()' \
        "$MLFLOW_TRACKING_URI" >"$logs/mlflow-migrate.log" 2>&1 \
        || { tail -30 "$logs/mlflow-migrate.log" >&2; echo "the MLflow store could not be migrated" >&2; exit 1; }
    # the UI on the same embedded store the DAG writes to, with only what this project uses
    mapfile -t mlflow_env < <(grep -Ev '^[[:space:]]*(#|$)' "$repo/docker/mlflow-ui.env")
    setsid env "${mlflow_env[@]}" mlflow ui --backend-store-uri "$MLFLOW_TRACKING_URI" --host 127.0.0.1 \
        --port "${MLFLOW_PORT:-5000}" --workers 1 >"$logs/mlflow.log" 2>&1 &
    pids+=($!)
fi
app=""
if c4 serve-app --help >/dev/null 2>&1; then
    setsid c4 serve-app --host 127.0.0.1 --port "${APP_PORT:-8000}" >"$logs/app.log" 2>&1 &
    pids+=($!)
    app="http://127.0.0.1:${APP_PORT:-8000}"
fi
printf '%s\n' "$$" "${pids[@]}" >"$pidfile"

# Airflow's execution API (the one tasks report to) builds its versioned routes on its first
# request and holds the api-server's event loop while it does, so every page and REST call waits
# too: seconds on an idle machine, and long enough on a loaded one that the UI timed out as the
# first tasks started. Asked once here, before a task or a user waits behind it.
python - "$AIRFLOW__API__BASE_URL/execution/health" "${pids[0]}" <<'PY' \
    || echo "warning: Airflow's execution API did not answer (see $logs/airflow-api-server.log)" >&2
import os, signal, sys, time, urllib.request

signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the trap above stops the stack, quietly
url, api_server = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 300
while time.monotonic() < deadline:
    try:
        urllib.request.urlopen(url, timeout=120).read()
        sys.exit(0)
    except OSError:
        try:
            os.kill(api_server, 0)
        except ProcessLookupError:
            sys.exit(1)  # the api-server exited: `wait -n` below reports it
        time.sleep(1)
sys.exit(1)
PY

passwords="$AIRFLOW_HOME/simple_auth_manager_passwords.json.generated"
for _ in $(seq 180); do [[ -s "$passwords" ]] && break; sleep 1; done
password="$(python -c 'import json,sys; print(json.load(open(sys.argv[1]))["admin"])' "$passwords" 2>/dev/null || echo "see $passwords")"
cat <<MSG

  Airflow   http://127.0.0.1:$AIRFLOW__API__PORT   user admin, password $password
            (the DAG connect4_league: Trigger, fill in the form; logs in $logs)
  MLflow    $C4_MLFLOW_UI_URL/#/experiments?workflowType=machine_learning   no login
            (the model-training view; store $MLFLOW_TRACKING_URI)
  Play      ${app:-not in this checkout (c4 serve-app is missing)}   no login

  Ctrl-C stops all three, or make down from another terminal.
MSG
wait -n "${pids[@]}"
echo "a service exited; stopping the others (logs in $logs)" >&2
