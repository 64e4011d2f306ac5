"""Q-learning and SARSA by self-play on Dots and Boxes 2x2, with the exact NashConv of the greedy
table every `--every` games (the `TabularConfig` defaults otherwise: C3RL's ε schedule, α 0.1,
γ 0.99, 64 games at once).

    python benchmarks/tabular_dots.py [--games 300000] [--every 50000] [--seed 0]

Prints one line per checkpoint: learner, games, NashConv (best response first, second), seconds.
"""

from __future__ import annotations

import argparse
import time

import torch

from c4core.config import TabularConfig
from c4core.evaluation.exploitability import nash_conv, policy_of
from c4core.games import load
from c4core.learners.tabular import QTable, TablePlayer, train_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=300_000)
    parser.add_argument("--every", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    game = load("dots_and_boxes", rows=2, cols=2)
    for method in ("q-learning", "sarsa"):
        table = QTable(game)
        config = TabularConfig(iterations=1, games=args.every)
        start = time.perf_counter()
        for k in range(args.games // args.every):
            train_table(table, config, method, seed=args.seed + k, first_game=k * args.every)
            result = nash_conv(game, policy_of(TablePlayer(table, greedy=True), game))
            seconds = time.perf_counter() - start
            print(f"{method} {(k + 1) * args.every} {result.value:.3f} "
                  f"({result.as_first:.3f}, {result.as_second:.3f}) {seconds:.1f}s", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
