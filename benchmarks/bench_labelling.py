"""Labelling random positions with the exact solver (`alphazero.solver_samples`), from the
solver's own batch of move values against solving move by move (issue #27).

`AlphaZeroConfig.solver_positions` labels this many positions every iteration, and
`table_supervised.py` labels its every round. Both ask `c4core.games.move_values`, which takes
the solver's batch (`DotsSolver.move_values`, a table look-up of every line of every position at
once) when it has one and solves each move of each position through the game interface
otherwise. This times both ways on the same draws, alternating, and checks they label alike.

    python benchmarks/bench_labelling.py --game dots-and-boxes-3x3 --positions 4096 8192 --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from exact import OneByOne  # noqa: E402  (the tests' own oracle)

from c4core.games import VARIANTS, exact_solver, held_out  # noqa: E402
from c4core.learners.alphazero import solver_samples  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--game", default="dots-and-boxes-3x3", help="a named variant with an exact solver")
    p.add_argument("--positions", type=int, nargs="+", default=[4096, 8192])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--margin", action="store_true", help="label margin values (a game that has them)")
    args = p.parse_args()
    torch.set_num_threads(1)
    if args.game not in VARIANTS:
        p.error(f"--game must be one of {sorted(VARIANTS)}")
    game = VARIANTS[args.game]
    solver = exact_solver(game)
    holds = held_out(game, 0)
    ways = {"batch": solver, "move by move": OneByOne(solver)}
    solver_samples(game, solver, 64, torch.Generator().manual_seed(0), args.margin, holds)  # warm
    print(f"{game.title}, {'margin' if args.margin else 'outcome'} values, medians of {args.repeats}")
    for n in args.positions:
        times: dict[str, list[float]] = {way: [] for way in ways}
        for r in range(args.repeats):
            labelled = {}
            for way, s in ways.items():
                start = time.perf_counter()
                draw = torch.Generator().manual_seed(r)
                labelled[way] = solver_samples(game, s, n, draw, args.margin, holds)
                times[way].append(time.perf_counter() - start)
            a, b = labelled.values()
            assert torch.equal(a.value, b.value) and torch.equal(a.policy, b.policy), "the two ways disagree"
        batch, one = (statistics.median(times[w]) for w in ways)
        print(
            f"{n:6d} drawn, {len(a):6d} labelled: batch {batch:.3f} s, move by move {one:.3f} s, "
            f"{one / batch:.1f}x"
        )


if __name__ == "__main__":
    main()
