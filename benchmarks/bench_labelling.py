"""Labelling random positions with the exact solver (`alphazero.solver_samples`), from the
solver's own batch of move values against solving move by move (issue #27); or, with
`--against-outcome`, move values by margin against by outcome on the same positions.

`AlphaZeroConfig.solver_positions` labels this many positions every iteration, and
`table_supervised.py` labels its every round. Both ask `c4core.games.move_values`, which takes
the solver's batch (`DotsSolver.move_values`, a table look-up of every line of every position at
once) when it has one and solves each move of each position through the game interface
otherwise. This times both ways on the same draws, alternating, and checks they label alike.

    python benchmarks/bench_labelling.py --game dots-and-boxes-3x3 --positions 4096 8192 --repeats 5

On a game with margins, `solver_samples` asks for margins whatever the net's value target
(`alphazero.policy_by_margin`); `--against-outcome` prices that on the positions it would label:

    python benchmarks/bench_labelling.py --game dots-and-boxes-4x4 --positions 1024 --against-outcome
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from exact import OneByOne  # noqa: E402  (the tests' own oracle)

from c4core.games import (  # noqa: E402
    VARIANTS,
    BatchState,
    ExactSolver,
    Game,
    exact_solver,
    held_out,
    move_values,
)
from c4core.learners.alphazero import solver_openings, solver_samples  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--game", default="dots-and-boxes-3x3", help="a named variant with an exact solver")
    p.add_argument("--positions", type=int, nargs="+", default=[4096, 8192])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--margin", action="store_true", help="label margin values (a game that has them)")
    p.add_argument(
        "--against-outcome", action="store_true", help="time move values by margin against by outcome"
    )
    args = p.parse_args()
    torch.set_num_threads(1)
    if args.game not in VARIANTS:
        p.error(f"--game must be one of {sorted(VARIANTS)}")
    game = VARIANTS[args.game]
    solver = exact_solver(game)
    holds = held_out(game, 0)
    if args.against_outcome:
        return margin_against_outcome(game, solver, holds, args.positions, args.repeats)
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


def margin_against_outcome(
    game: Game,
    solver: ExactSolver,
    holds: Callable[[BatchState], torch.Tensor] | None,
    sizes: list[int],
    repeats: int,
) -> None:
    """Move values by margin and by outcome on the positions `solver_samples` would label
    (`solver_openings`), alternating which goes first; the outcomes must agree with the margins'
    signs."""
    print(f"{game.title}, move values by margin against by outcome, medians of {repeats}")
    for n in sizes:
        times: dict[bool, list[float]] = {True: [], False: []}
        for r in range(repeats):
            boards, _ = solver_openings(game, n, torch.Generator().manual_seed(r), holds)
            values = {}
            for margin in (True, False) if r % 2 == 0 else (False, True):
                start = time.perf_counter()
                values[margin] = move_values(solver, boards, margin)
                times[margin].append(time.perf_counter() - start)
            both = values[True].isfinite() & values[False].isfinite()  # legal moves both settle
            assert torch.equal(values[True][both].sign(), values[False][both]), (
                "margins and outcomes disagree"
            )
        by_margin, by_outcome = (statistics.median(times[m]) for m in (True, False))
        print(
            f"{n:6d} drawn, {len(boards):6d} kept: by margin {by_margin:.3f} s, "
            f"by outcome {by_outcome:.3f} s, {by_margin / by_outcome:.2f}x"
        )


if __name__ == "__main__":
    main()
