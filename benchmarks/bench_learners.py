"""What a second core gives a PPO learner: iterations of the `cpu` recipe by one learner alone,
two learners at once (one torch thread each), one learner on two threads, and one learner on two
data-parallel ranks (`PPOConfig.ranks`, one thread each).

    python benchmarks/bench_learners.py --iterations 6 --rounds 2 [--load]

Each learner trains a fresh `cpu`-profile net against `random`, `tactical` and itself (768 games
an iteration). Reports the median seconds per iteration in each setting and the throughput
relative to one learner alone (iterations per wall-second, every learner counted; the median of
its rounds). `--load` runs everything beside a busy core, the issue's one-core background load.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import queue
import statistics
import subprocess
import sys
import time
from dataclasses import replace


def learner(iterations: int, threads: int, seed: int, out: multiprocessing.Queue) -> None:
    import torch

    from c4core.config import PROFILES
    from c4core.games.connect4.bots import TacticalBot
    from c4core.games.players import RandomBot
    from c4core.learners.net import PolicyValueNet
    from c4core.learners.ppo import train

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    config = PROFILES["cpu"]
    net = PolicyValueNet(config.net, config.board)
    times: list[float] = []
    ppo = replace(config.ppo, iterations=iterations, ranks=1)  # alone, whatever the profile's ranks
    train(net, ppo, [RandomBot(), TacticalBot(), None], seed, config.board, None,
          lambda i, m: times.append(m["charts/seconds"]))  # fmt: skip
    out.put(times[1:])  # the first iteration also compiles the bots' kernels


def _result(out: multiprocessing.Queue, procs: list) -> list[float]:
    """The next learner's times; a learner that died fails the benchmark rather than hanging it."""
    while True:
        try:
            return out.get(timeout=1.0)
        except queue.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead:
                raise SystemExit(f"a learner process died (exit code {dead[0]})") from None


def run(processes: int, threads: int, iterations: int) -> dict[str, float]:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start = time.perf_counter()
    procs = [ctx.Process(target=learner, args=(iterations, threads, s, out)) for s in range(processes)]
    for p in procs:
        p.start()
    times = [t for _ in procs for t in _result(out, procs)]
    for p in procs:
        p.join()
    wall = time.perf_counter() - start
    median = statistics.median(times)
    return {
        "processes": processes,
        "threads": threads,
        "median_iteration_s": round(median, 2),
        "iterations_per_s": round(processes / median, 3),
        "wall_s": round(wall, 1),
    }


def ranked(iterations: int, ranks: int) -> dict[str, float]:
    """One learner on `ranks` data-parallel processes, trained as the league trains it."""
    import tempfile

    import torch

    from c4core.config import PROFILES
    from c4core.league.processes import train_generation
    from c4core.league.store import LocalStore

    torch.set_num_threads(1)
    base = PROFILES["cpu"]
    config = replace(base, roles=("main",), ppo=replace(base.ppo, iterations=iterations, ranks=ranks))
    times: list[float] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        train_generation(LocalStore(folder), config, 1, ["random", "tactical", "self"],
                         lambda i, m: times.append(m["charts/seconds"]))  # fmt: skip
    median = statistics.median(times[1:])
    return {
        "processes": ranks,
        "threads": 1,
        "ranks": ranks,
        "median_iteration_s": round(median, 2),
        "iterations_per_s": round(1 / median, 3),
        "wall_s": round(time.perf_counter() - start, 1),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=6)
    p.add_argument("--rounds", type=int, default=1, help="run every setting this many times, interleaved")
    p.add_argument("--load", action="store_true", help='beside `python -c "while True: pass"`')
    args = p.parse_args()
    n = args.iterations
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.load else None
    try:
        settings = {
            "one learner": lambda: run(1, 1, n),
            "two learners": lambda: run(2, 1, n),
            "two threads": lambda: run(1, 2, n),
            "two ranks": lambda: ranked(n, 2),
        }
        rows = [
            {"setting": name, "round": k} | measure()
            for k in range(args.rounds)
            for name, measure in settings.items()
        ]
    finally:
        if burner is not None:
            burner.kill()
    base = statistics.median(r["iterations_per_s"] for r in rows if r["setting"] == "one learner")
    for r in rows:
        r["throughput_vs_one"] = round(r["iterations_per_s"] / base, 2)
    print(json.dumps({"load": args.load, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
