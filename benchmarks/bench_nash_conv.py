"""How long the exact NashConv of one Connect-3 4x4 snapshot takes: the position graph built
once per process (enumeration and successors), then each snapshot's policy over every position
and the best-response sweep, for a table and for networks of the `smoke` and `cpu` sizes.

    python benchmarks/bench_nash_conv.py [--repeats 5]

One torch thread. Prints one line per case: the median and the spread in seconds.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from c4core.config import NetConfig
from c4core.evaluation.exploitability import _graph, nash_conv, policy_of
from c4core.evaluation.positions import position_index
from c4core.games import load
from c4core.learners.net import NetPlayer, PolicyValueNet
from c4core.learners.tabular import QTable, TablePlayer


def timed(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    game = load("connect3-4x4")
    start = time.perf_counter()
    position_index(game)
    _graph(game)
    print(f"enumerate and build the graph, once per process: {time.perf_counter() - start:.2f} s")
    table = QTable(game, np.random.default_rng(0).normal(size=(23_930, 4)))
    torch.manual_seed(0)
    players = {
        "table": TablePlayer(table),
        "net 1x8 (smoke)": NetPlayer(PolicyValueNet(NetConfig(blocks=1, channels=8), game)),
        "net 2x32 (cpu)": NetPlayer(PolicyValueNet(NetConfig(blocks=2, channels=32), game)),
    }
    for name, player in players.items():
        secs = timed(lambda p=player: nash_conv(game, policy_of(p, game)), args.repeats)
        spread = f"{min(secs):.2f}-{max(secs):.2f}"
        print(f"{name}: {statistics.median(secs):.2f} s median ({spread}), {args.repeats} runs")


if __name__ == "__main__":
    main()
