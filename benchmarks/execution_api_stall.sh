#!/usr/bin/env bash
# What the first request to Airflow's execution API costs the api-server, which docker/up.sh now
# pays before it prints its addresses: a bare api-server on a fresh AIRFLOW_HOME (none of up.sh's
# warming), then a first /execution/health, a REST call sent 0.5 s after it (which waits behind
# it), and a second /execution/health. Repeats the whole thing REPEATS times.
#
#   bash benchmarks/execution_api_stall.sh [REPEATS] [PORT]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${VENV:-$repo/.venv}"
repeats="${1:-3}"
port="${2:-18090}"
url="http://127.0.0.1:$port"

one() {
    local home pid first
    home="$(mktemp -d)"
    export AIRFLOW_HOME="$home" AIRFLOW__CORE__LOAD_EXAMPLES=False AIRFLOW__CORE__DAGS_FOLDER="$home"
    export AIRFLOW__API__HOST=127.0.0.1 AIRFLOW__API__PORT="$port"
    "$venv/bin/airflow" db migrate >"$home/migrate.log" 2>&1
    setsid "$venv/bin/airflow" api-server >"$home/api.log" 2>&1 &
    pid=$!
    until curl -sf -o /dev/null "$url/api/v2/version"; do
        # a server that died (a port in use, a bad setting) would otherwise be waited for forever
        kill -0 "$pid" 2>/dev/null || { cat "$home/api.log" >&2; echo "the api-server exited" >&2; exit 1; }
        sleep 0.5
    done
    sleep 5 # past the server's own start
    curl -s -o /dev/null -w "REST call before: %{http_code} in %{time_total} s\n" "$url/api/v2/version"
    curl -s -o /dev/null -w "first /execution/health: %{http_code} in %{time_total} s\n" \
        "$url/execution/health" &
    first=$!
    sleep 0.5
    curl -s -o /dev/null -w "REST call sent 0.5 s after it: %{http_code} in %{time_total} s\n" \
        "$url/api/v2/version"
    wait "$first"
    curl -s -o /dev/null -w "second /execution/health: %{http_code} in %{time_total} s\n" \
        "$url/execution/health"
    kill -TERM -- "-$pid"
    while kill -0 -- "-$pid" 2>/dev/null; do sleep 0.2; done
    rm -rf "$home"
}

for i in $(seq "$repeats"); do
    echo "== run $i"
    one
done
