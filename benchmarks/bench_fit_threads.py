"""What a second torch thread gives the AlphaZero-style fit (`c4core.learners.alphazero.fit`):
seconds a gradient step on one thread and on two, per game.

    python benchmarks/bench_fit_threads.py [--games dots-and-boxes-3x3 dots-and-boxes-4x4 connect4]

A window of `--window` positions of each game (empty boards: a step's cost does not depend on
the position), the `cpu` profile's net in bfloat16, the learner's default batch of 512 and every
image under the game's symmetries, as a league fits. The thread counts alternate for
`--rounds` rounds of `--steps` steps, in one process; it prints each game's median seconds a
step by thread count.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from c4core.config import PROFILES, AlphaZeroConfig
from c4core.games import load
from c4core.learners.alphazero import Samples, fit
from c4core.learners.net import PolicyValueNet


def window(name: str, n: int) -> tuple[Samples, PolicyValueNet]:
    game = load(name)
    boards = game.new_batch(n)
    legal = boards.legal()
    zeros = torch.zeros(n, dtype=torch.long)
    samples = Samples(
        boards.observation(),
        legal,
        zeros,
        zeros,
        legal.float() / legal.float().sum(1, keepdim=True),
        torch.zeros(n),
        torch.zeros(n, dtype=torch.bool),
        torch.zeros_like(legal, dtype=torch.float32),
        torch.zeros(n, dtype=torch.bool),
    )
    torch.manual_seed(0)
    return samples, PolicyValueNet(PROFILES["cpu"].net, game)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games", nargs="+", default=["dots-and-boxes-3x3", "dots-and-boxes-4x4", "connect4"])
    p.add_argument("--window", type=int, default=20_000)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    config = AlphaZeroConfig()
    for name in args.games:
        samples, net = window(name, args.window)
        optimizer = torch.optim.Adam(net.parameters())
        generator = torch.Generator().manual_seed(0)
        fit(net, optimizer, samples, 3, config, generator, net.game)  # warm-up
        seconds: dict[int, list[float]] = {1: [], 2: []}
        for _ in range(args.rounds):
            for threads in seconds:
                torch.set_num_threads(threads)
                start = time.perf_counter()
                fit(net, optimizer, samples, args.steps, config, generator, net.game)
                seconds[threads].append((time.perf_counter() - start) / args.steps)
        medians = {t: round(statistics.median(s), 4) for t, s in seconds.items()}
        ratio = round(medians[1] / medians[2], 2)
        print(json.dumps({"game": name, "seconds_a_step": medians, "ratio": ratio}))


if __name__ == "__main__":
    main()
