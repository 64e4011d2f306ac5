"""Benchmark `mlflow models serve` on the champion: single-position latency, then concurrent load.

By default it builds a throwaway store: a one-generation league whose net has the ``cpu``
profile's shape (2x32, so the forward pass costs what the real champion's does), registered and
promoted as usual; then it starts ``mlflow/serve-champion.sh`` on a free port. ``--url`` measures
a server that is already running instead.

Phase 1 sends single-position requests one at a time (raw network, no search) and reports the
latency percentiles. Phase 2 runs `--clients` concurrent clients for `--seconds` seconds, each a
thread with its own HTTP session, and reports throughput and errors (any non-200 answer, or a
column that is not legal, counts as one).

    .venv/bin/python benchmarks/bench_serving.py [--url http://127.0.0.1:5001] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_store(root: Path) -> str:
    """A one-generation league with a cpu-sized net in a fresh SQLite store; its tracking URI."""
    import torch

    from c4core.config import profile
    from c4core.tracking.runs import run_league_tracked
    from c4core.tracking.store import MLflowStore, Tracking

    torch.set_num_threads(1)
    uri = f"sqlite:///{root / 'mlflow.db'}"
    config = profile(
        "smoke", name="bench", generations=1, net={"blocks": 2, "channels": 32, "value_hidden": 64}
    )
    run_league_tracked(MLflowStore(Tracking.for_uri(uri), config), config)
    return uri


def start_server(uri: str, workers: int, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = os.environ | {
        "MLFLOW_TRACKING_URI": uri,
        "PORT": str(port),
        "WORKERS": str(workers),
        "MLFLOW": str(Path(sys.executable).parent / "mlflow"),
    }
    out = log.open("w")
    script = REPO / "mlflow" / "serve-champion.sh"
    proc = subprocess.Popen(["bash", str(script)], env=env, stdout=out, stderr=out, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 240
    while True:
        try:
            if requests.get(f"{url}/ping", timeout=2).ok:
                return proc, url
        except requests.ConnectionError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the server did not start:\n{log.read_text()[-2000:]}")
        time.sleep(0.5)


def positions(n: int, seed: int = 0) -> list[str]:
    """Random live positions as move strings (0-20 plies)."""
    from c4core.games.connect4.rules import Position

    rng = random.Random(seed)
    out = []
    while len(out) < n:
        pos, moves = Position(), ""
        for _ in range(rng.randint(0, 20)):
            nxt = [c for c in pos.legal_moves() if not pos.play(c).is_terminal]
            if not nxt:
                break
            c = rng.choice(nxt)
            pos, moves = pos.play(c), moves + str(c + 1)
        out.append(moves)
    return out


def latency(url: str, moves: list[str], warmup: int = 30) -> dict[str, float]:
    session = requests.Session()
    times = []
    for i, m in enumerate(moves[:warmup] + moves):
        body = {"dataframe_records": [{"moves": m}]}
        start = time.perf_counter()
        r = session.post(f"{url}/invocations", json=body, timeout=30)
        elapsed = time.perf_counter() - start
        r.raise_for_status()
        if i >= warmup:
            times.append(elapsed * 1000)
    q = statistics.quantiles(times, n=100)
    return {
        "requests": len(times),
        "p50_ms": q[49],
        "p95_ms": q[94],
        "p99_ms": q[98],
        "mean_ms": statistics.fmean(times),
    }


def load(url: str, moves: list[str], clients: int, seconds: float) -> dict[str, float]:
    from c4core.games.connect4.rules import Position

    legal = {m: set(Position.from_moves(m).legal_moves()) for m in moves}
    ok = [0] * clients
    errors = [0] * clients
    stop = time.monotonic() + seconds

    def client(k: int) -> None:
        session = requests.Session()
        rng = random.Random(k)
        while time.monotonic() < stop:
            m = rng.choice(moves)
            try:
                r = session.post(f"{url}/invocations", json={"dataframe_records": [{"moves": m}]}, timeout=30)
                good = r.status_code == 200 and r.json()["predictions"][0]["column"] in legal[m]
            except (requests.RequestException, ValueError, KeyError):
                good = False
            if good:
                ok[k] += 1
            else:
                errors[k] += 1

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    return {
        "clients": clients,
        "seconds": round(elapsed, 1),
        "requests": sum(ok) + sum(errors),
        "errors": sum(errors),
        "throughput_rps": sum(ok) / elapsed,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", help="measure this running server instead of starting one")
    p.add_argument("--workers", type=int, default=1, help="uvicorn workers of the started server (default 1)")
    p.add_argument("--requests", type=int, default=500, help="sequential requests for the latency phase")
    p.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32)")
    p.add_argument("--seconds", type=float, default=30.0, help="length of the load phase (default 30)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

    proc = None
    with tempfile.TemporaryDirectory() as tmp:
        try:
            url = args.url
            if url is None:
                uri = build_store(Path(tmp))
                proc, url = start_server(uri, args.workers, Path(tmp) / "serve.log")
            moves = positions(max(args.requests, 200))
            lat = latency(url, moves[: args.requests])
            conc = load(url, moves, args.clients, args.seconds)
        finally:
            if proc is not None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(30)
    result = {"url": url, "workers": args.workers if args.url is None else None, "latency": lat, "load": conc}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"/invocations, one position per request, raw network ({url})")
        print(
            f"  latency over {lat['requests']} sequential requests: p50 {lat['p50_ms']:.1f} ms, "
            f"p95 {lat['p95_ms']:.1f} ms, p99 {lat['p99_ms']:.1f} ms, mean {lat['mean_ms']:.1f} ms"
        )
        print(
            f"  {conc['clients']} concurrent clients for {conc['seconds']} s: {conc['requests']} requests, "
            f"{conc['errors']} errors, {conc['throughput_rps']:.0f} requests/s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
