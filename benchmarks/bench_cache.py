"""The evaluation cache's saving (issue #30, item 5): one AlphaZero-style self-play iteration of
the `cpu` profile's recipe with and without `AlphaZeroConfig.evaluation_cache`, side by side.

    python benchmarks/bench_cache.py [--rounds 3] [--games 256] [--checkpoint PT]

Each round plays the same seeded iteration without the cache, then with it (the order
alternating between rounds), one torch thread; prints the median seconds of each, their ratio,
and the share of evaluations the cache answered. The net is the checkpoint's, else a fresh
`cpu`-size net (whose near-random play repeats fewer positions than a trained one's).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace

import torch

from c4core.config import PROFILES
from c4core.games import ConnectFour
from c4core.learners.alphazero import self_play
from c4core.learners.net import Checkpoint, PolicyValueNet

CAPACITY = 500_000
"""Positions the cache holds: more than one iteration of 256 games evaluates."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--games", type=int, default=256)
    parser.add_argument("--checkpoint")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cpu = PROFILES["cpu"]
    game = ConnectFour()
    if args.checkpoint:
        net = Checkpoint.load(args.checkpoint).build()
    else:
        torch.manual_seed(0)
        net = PolicyValueNet(cpu.net, game)
    net.eval()
    base = replace(cpu.alphazero, games=args.games, ranks=1, solve_from=0, league_share=0.0)
    arms = {"off": base, "on": replace(base, evaluation_cache=CAPACITY)}
    seconds: dict[str, list[float]] = {"off": [], "on": []}
    hits = []
    for r in range(args.rounds):
        for arm in ("off", "on") if r % 2 == 0 else ("on", "off"):
            start = time.perf_counter()
            _, stats = self_play(net, arms[arm], torch.Generator().manual_seed(r), game)
            seconds[arm].append(time.perf_counter() - start)
            if arm == "on":
                hits.append(stats["selfplay/cache_hits"])
    off, on = statistics.median(seconds["off"]), statistics.median(seconds["on"])
    print(
        json.dumps(
            {"off_s": round(off, 2), "on_s": round(on, 2), "on_over_off": round(on / off, 3),
             "cache_hits": round(statistics.median(hits), 3), "rounds": seconds}
        )
    )  # fmt: skip


if __name__ == "__main__":
    main()
