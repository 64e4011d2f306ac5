"""Latency of the play page's answer: ``POST /api/move`` against a real `c4 serve-app` process.

    .venv/bin/python benchmarks/bench_app.py [--url http://127.0.0.1:8000] [--n 200]

Without --url it publishes a net of the cpu profile's shape (2x32, untrained: latency does not
depend on the weights) into a temporary MLflow store, starts ``c4 serve-app`` on a free port and
times requests over real HTTP from this process, positions drawn from random games. It prints
p50/p90/p99 per strength (0 = the raw network, else search simulations).
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def publish(root: Path) -> str:
    import torch

    from c4core.config import profile
    from c4core.evaluation.elo import EloFit
    from c4core.learners.net import Checkpoint, PolicyValueNet
    from c4core.tracking.champion import promote_champion
    from c4core.tracking.store import MLflowStore, Tracking
    from c4core.tracking.versions import register_snapshot

    tracking = Tracking.embedded(root)
    config = profile("cpu", name="bench-app")
    torch.manual_seed(0)
    store = MLflowStore(tracking, config)
    store.save_snapshot(Checkpoint.of(PolicyValueNet(config.net, config.board), generation=1), [])
    fit = EloFit({"gen1": 0.0}, {"gen1": (0.0, 0.0)}, None, {"gen1": 1})
    register_snapshot(store, 1, fit)
    promote_champion(store, "gen1", fit, 1)
    return tracking.tracking_uri


def positions(n: int, seed: int = 0) -> list[str]:
    from c4core.games.connect4.rules import Position

    rng = random.Random(seed)
    out = []
    while len(out) < n:
        pos, moves = Position(), ""
        for _ in range(rng.randrange(0, 30)):
            legal = pos.legal_moves()
            col = rng.choice(legal)
            nxt = pos.play(col)
            if nxt.is_terminal:
                break
            pos, moves = nxt, moves + str(col + 1)
        out.append(moves)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", help="a running play app (default: start one)")
    ap.add_argument("--n", type=int, default=200, help="requests per strength for the raw network")
    args = ap.parse_args()
    proc = None
    url = args.url
    if url is None:
        root = Path(tempfile.mkdtemp(prefix="bench-app-"))
        uri = publish(root)
        port = free_port()
        c4 = Path(sys.executable).with_name("c4")
        proc = subprocess.Popen(
            [str(c4), "serve-app", "--port", str(port), "--tracking-uri", uri],
            env=os.environ | {"OMP_NUM_THREADS": "1"},
        )
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                if requests.get(f"{url}/api/health", timeout=1).json()["champion"]:
                    break
            except requests.RequestException:
                pass
            time.sleep(0.2)
    try:
        session = requests.Session()
        for sims, n in ((0, args.n), (64, 30), (256, 15), (1024, 6)):
            games = positions(n, seed=sims)
            session.post(f"{url}/api/move", json={"moves": games[0], "simulations": sims}).raise_for_status()
            wall, server = [], []
            for moves in games:
                t = time.perf_counter()
                r = session.post(f"{url}/api/move", json={"moves": moves, "simulations": sims})
                wall.append((time.perf_counter() - t) * 1000)
                r.raise_for_status()
                server.append(r.json()["ms"])
            q = statistics.quantiles(wall, n=100)
            print(
                f"simulations {sims:>4}: {n:>3} requests, HTTP p50 {q[49]:7.1f} ms  p90 {q[89]:7.1f} ms  "
                f"p99 {q[98]:7.1f} ms  (server p50 {statistics.median(server):.1f} ms)"
            )
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(15)


if __name__ == "__main__":
    main()
