"""The game interface's cost: one tree's timings of the hot paths that the interface touches.

Prints one JSON line of seconds (and random games a second) for the tree it is imported from,
so that a driver can interleave an old and a new checkout in one run, old, new, old, new, ...:

    for i in 1 2 3; do for t in OLD NEW; do PYTHONPATH=$t python benchmarks/bench_games.py; done; done

- ``random_games_per_s``: 4,096 random games stepped together through the tensor engine;
- ``search_256``: one searched self-play step, 256 positions at 64 simulations (a 2x32 net);
- ``ppo_iteration``: one PPO iteration of 256 games against `random` and itself (a 2x32 net);
- ``alphazero_iteration``: one AlphaZero-style iteration of 64 games at 32 simulations.

One torch thread, as the league's learners run.
"""

from __future__ import annotations

import json
import time

import torch

from c4core.config import AlphaZeroConfig, NetConfig, PPOConfig, SearchConfig
from c4core.games.connect4.batch import Boards
from c4core.games.players import RandomBot, play_opening
from c4core.learners.net import PolicyValueNet


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def net() -> PolicyValueNet:
    torch.manual_seed(0)
    return PolicyValueNet(NetConfig(blocks=2, channels=32)).eval()


def random_games() -> None:
    boards, gen, bot = Boards(4096), torch.Generator().manual_seed(0), RandomBot()
    while not bool(boards.done.all()):
        boards.play(bot.act(boards, gen))


def search_step() -> None:
    from c4core.learners.search import search

    boards, gen = Boards(256), torch.Generator().manual_seed(1)
    play_opening(boards, torch.randint(0, 12, (256,), generator=gen), gen)
    search(net(), boards, SearchConfig(simulations=64), torch.Generator().manual_seed(2))


def ppo_iteration() -> None:
    from c4core.learners.ppo import train

    train(net(), PPOConfig(iterations=1, games=256), [RandomBot(), None], seed=3)


def alphazero_iteration() -> None:
    from c4core.learners.alphazero import train

    config = AlphaZeroConfig(iterations=1, games=64, search=SearchConfig(simulations=32, root_noise=True))
    train(net(), config, seed=4)


def main() -> None:
    torch.set_num_threads(1)
    search_step()  # compile and warm up once
    out = {"random_games_per_s": 4096 / timed(random_games)}
    for name, fn in (
        ("search_256", search_step),
        ("ppo_iteration", ppo_iteration),
        ("alphazero_iteration", alphazero_iteration),
    ):
        out[name] = timed(fn)
    print(json.dumps({k: round(v, 3) for k, v in out.items()}))


if __name__ == "__main__":
    main()
