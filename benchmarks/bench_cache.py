"""The speed levers of the search (issue #30, item 5): one AlphaZero-style self-play iteration
of the `cpu` profile's recipe, with PUCT's root at 64 simulations, plain, with
`AlphaZeroConfig.evaluation_cache`, with `AlphaZeroConfig.reuse_tree`, and with both, side by
side.

    python benchmarks/bench_cache.py [--rounds 3] [--games 256] [--checkpoint PT]

Each round plays the same seeded iteration in every arm (the order rotating between rounds),
one torch thread; prints each arm's median seconds and its ratio to the plain arm, the
positions the network evaluated (counted at its forward), the share of evaluations the cache
answered, and the root visits reuse kept, a decision's mean. The net is the checkpoint's, else a fresh
`cpu`-size net (whose near-random play repeats fewer positions than a trained one's). Reuse
changes the games (its searches see more visits), so its count is of other positions.
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
    evaluated = [0]
    net.register_forward_pre_hook(lambda _, inputs: evaluated.__setitem__(0, evaluated[0] + len(inputs[0])))
    # PUCT at 64 simulations, the recipe's search before Gumbel's root (reuse needs PUCT)
    puct = replace(cpu.alphazero.search, root="puct", simulations=64)
    base = replace(cpu.alphazero, search=puct, games=args.games, ranks=1, solve_from=0, league_share=0.0)
    arms = {
        "plain": base,
        "cache": replace(base, evaluation_cache=CAPACITY),
        "reuse": replace(base, reuse_tree=True),
        "both": replace(base, evaluation_cache=CAPACITY, reuse_tree=True),
    }
    names = list(arms)
    seconds: dict[str, list[float]] = {arm: [] for arm in arms}
    forwards: dict[str, list[int]] = {arm: [] for arm in arms}
    stat: dict[str, list[float]] = {"cache_hits": [], "kept_visits": []}
    for r in range(args.rounds):
        for arm in names[r % len(names) :] + names[: r % len(names)]:
            evaluated[0] = 0
            start = time.perf_counter()
            _, stats = self_play(net, arms[arm], torch.Generator().manual_seed(r), game)
            seconds[arm].append(time.perf_counter() - start)
            forwards[arm].append(evaluated[0])
            if arm == "cache":
                stat["cache_hits"].append(stats["selfplay/cache_hits"])
            if arm == "reuse":
                stat["kept_visits"].append(stats["selfplay/kept_visits"])
    plain = statistics.median(seconds["plain"])
    print(
        json.dumps(
            {
                "median_s": {arm: round(statistics.median(s), 2) for arm, s in seconds.items()},
                "over_plain": {arm: round(statistics.median(s) / plain, 3) for arm, s in seconds.items()},
                "evaluated": {arm: int(statistics.median(n)) for arm, n in forwards.items()},
                **{k: round(statistics.median(v), 3) for k, v in stat.items()},
                "rounds": seconds,
            }
        )
    )


if __name__ == "__main__":
    main()
