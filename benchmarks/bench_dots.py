"""Dots and Boxes' costs: the engine, the bots' matches, and the exact solver's table.

    python benchmarks/bench_dots.py [--repeats 3]

Prints one JSON object of medians over `--repeats` runs, on one torch thread:

- ``random_games_per_s/<R>x<C>``: 4,096 random games stepped together through the batched engine;
- ``match_games_per_s/<bot>-vs-random/<R>x<C>``: a 400-game match of a bot against `random`
  (100 games for `mcts1000`);
- ``solver_build_s/<R>x<C>``: building the retrograde table in memory (numba compiled beforehand);
- ``solver_load_s/3x3``: reading the 3x3 table back from its file on disk;
- ``solver_table_bytes/3x3``: that table's size;
- ``endgame_s/4x4/<K>-left/<policy>``: the endgame search's value of a 4x4 position with K lines
  left, a fresh solver each (median and ``.../max`` over 6 positions), the positions from
  uniformly random play or from the probes' mixed policy (`probes.mixed_move`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import c4core.games.dots_and_boxes.solver as dots_solver
from c4core.evaluation.match import play_match
from c4core.games import load
from c4core.games.dots_and_boxes.bots import DefensiveBot, GreedyBot, HeuristicBot, MctsBot
from c4core.games.dots_and_boxes.endgame import EndgameSolver
from c4core.games.dots_and_boxes.probes import mixed_move
from c4core.games.dots_and_boxes.rules import Boxes, DotsState
from c4core.games.dots_and_boxes.solver import DotsPerfectBot, DotsSolver
from c4core.games.players import RandomBot


def timed(fn, *args, **kwargs) -> float:
    start = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - start


def random_games(rows: int, cols: int) -> None:
    game = load("dots_and_boxes", rows=rows, cols=cols)
    boards, gen, bot = game.new_batch(4096), torch.Generator().manual_seed(0), RandomBot()
    while not bool(boards.done.all()):
        boards.play(bot.act(boards, gen))


def build(rows: int, cols: int, cache: Path | None = None) -> None:
    dots_solver._table.cache_clear()
    DotsSolver(Boxes(rows, cols), cache)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    build(1, 1)  # compile the retrograde solve once
    samples: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        samples.setdefault(name, []).append(value)

    with tempfile.TemporaryDirectory() as tmp:
        build(3, 3, Path(tmp))  # the file the load timings read
        for _ in range(args.repeats):
            for rows, cols in ((3, 3), (4, 4)):
                add(f"random_games_per_s/{rows}x{cols}", 4096 / timed(random_games, rows, cols))
                game = load("dots_and_boxes", rows=rows, cols=cols)
                bots = [GreedyBot(), DefensiveBot(), HeuristicBot(), MctsBot(1000)]
                bots += [DotsPerfectBot(Boxes(rows, cols))] if rows * cols <= 9 else []
                for bot in bots:
                    games = 100 if isinstance(bot, MctsBot) else 400
                    seconds = timed(play_match, bot, RandomBot(), games, seed=1, game=game)
                    add(f"match_games_per_s/{bot.name}-vs-random/{rows}x{cols}", games / seconds)
            for rows, cols in ((2, 3), (3, 3)):
                add(f"solver_build_s/{rows}x{cols}", timed(build, rows, cols))
            add("solver_load_s/3x3", timed(build, 3, 3, Path(tmp)))
        samples["solver_table_bytes/3x3"] = [float(DotsSolver(Boxes(3, 3)).table.nbytes)]
    four, rng = Boxes(4, 4), np.random.default_rng(0)
    EndgameSolver(four, table_bits=10).value_of(four.all_lines ^ 7)  # compile
    for left in (16, 20, 24, 26, 28):
        for policy in ("random", "mixed"):
            for _ in range(6):
                state = DotsState(four)
                for _ in range(four.lines - left):
                    move = (
                        mixed_move(state, rng)
                        if policy == "mixed"
                        else int(rng.choice(state.legal_actions()))
                    )
                    state = state.apply(move)
                add(f"endgame_s/4x4/{left}-left/{policy}", timed(EndgameSolver(four).value, state))
            samples[f"endgame_s/4x4/{left}-left/{policy}/max"] = [
                max(samples[f"endgame_s/4x4/{left}-left/{policy}"])
            ]
    print(json.dumps({k: round(statistics.median(v), 3) for k, v in samples.items()}))


if __name__ == "__main__":
    main()
