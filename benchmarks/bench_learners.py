"""What a second learner process costs and gives: PPO iterations of the `cpu` recipe, one
learner alone against two at once, one torch thread each, and one learner on two threads.

    python benchmarks/bench_learners.py --iterations 6

Each learner trains a fresh `cpu`-profile net against `random`, `tactical` and itself (768 games
an iteration). Reports the median seconds per iteration in each setting and the throughput of
two processes relative to one (iterations per wall-second, both learners counted).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import time


def learner(iterations: int, threads: int, seed: int, out: multiprocessing.Queue) -> None:
    import torch

    from c4core.bots import RandomBot, TacticalBot
    from c4core.config import PROFILES
    from c4core.net import PolicyValueNet
    from c4core.ppo import train

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    config = PROFILES["cpu"]
    net = PolicyValueNet(config.net)
    times: list[float] = []
    ppo = type(config.ppo)(**{**config.ppo.__dict__, "iterations": iterations})
    train(net, ppo, [RandomBot(), TacticalBot(), None], seed, config.geometry, None,
          lambda i, m: times.append(m["charts/seconds"]))  # fmt: skip
    out.put(times[1:])  # the first iteration also compiles the bots' kernels


def run(processes: int, threads: int, iterations: int) -> dict[str, float]:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start = time.perf_counter()
    procs = [ctx.Process(target=learner, args=(iterations, threads, s, out)) for s in range(processes)]
    for p in procs:
        p.start()
    times = [t for _ in procs for t in out.get()]
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=6)
    args = p.parse_args()
    rows = [run(1, 1, args.iterations), run(2, 1, args.iterations), run(1, 2, args.iterations)]
    base = rows[0]["iterations_per_s"]
    for r in rows:
        r["throughput_vs_one"] = round(r["iterations_per_s"] / base, 2)
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
