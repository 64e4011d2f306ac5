"""What rescoring 4x4 Dots and Boxes games with the endgame search would cost (#27).

The AlphaZero-style learner rescores each self-play decision at or past `solve_from` that the
exact solver settles within `solve_nodes` (`AlphaZeroConfig`), latest plies first so that the
search's transposition table, kept by one solver, serves the earlier ones. 4x4 has no table,
only the endgame search (`c4core.games.dots_and_boxes.endgame`). This plays `--games` games of
the strategy probes' mixed policy (`probes.mixed_move`, whose games keep boxes in play), and for
each count of lines left L solves, in that order and with one fresh solver, every decision with
at most L lines left, twice: the second batch of games meets the table the first left, as a
league's next iteration would. It prints, per L, the decisions, the share settled within the
node budget, and the seconds of each batch.

With `--policy` it also prices `AlphaZeroConfig.solver_policy` on the same games, with another
fresh solver: every move of each of those decisions is solved (`c4core.games.move_values`, as
self-play asks it, a ply's decisions at a time from the earliest), and a decision counts as
settled when all its moves are. The endgame search has no batched `move_values`, so each move is
one solve.

Usage: python benchmarks/bench_endgame_rescoring.py [--games 256] [--left 12,16,20,22,24,26,28]
       [--max-nodes 200000] [--seed 0] [--policy]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from c4core.config import AlphaZeroConfig
from c4core.games import load, move_values
from c4core.games.dots_and_boxes.endgame import EndgameSolver, PastBudget
from c4core.games.dots_and_boxes.probes import mixed_move
from c4core.games.dots_and_boxes.rules import DotsState


def play(games: int, rng: np.random.Generator) -> list[list[DotsState]]:
    """Each game's decisions, from the empty board to its last move."""
    game = load("dots-and-boxes-4x4")
    out = []
    for _ in range(games):
        state, decisions = game.new_state(), []
        while not state.is_terminal:
            decisions.append(state)
            state = state.apply(mixed_move(state, rng))
        out.append(decisions)
    return out


def rescore(
    solver: EndgameSolver, games: list[list[DotsState]], left: int, max_nodes: int
) -> tuple[int, int, float]:
    """Decisions with at most `left` lines left, how many settle, and the seconds taken."""
    lines = solver.boxes.lines
    late = [s for decisions in games for s in decisions if lines - s.ply <= left]
    late.sort(key=lambda s: -s.ply)  # latest first, as the learner's `_rescore`
    settled, start = 0, time.perf_counter()
    for state in late:
        try:
            solver.value(state, max_nodes)
            settled += 1
        except PastBudget:  # past the node budget: the decision keeps the search's target
            pass
    return len(late), settled, time.perf_counter() - start


def rescore_moves(
    solver: EndgameSolver, games: list[list[DotsState]], left: int, max_nodes: int
) -> tuple[int, int, float]:
    """As `rescore`, for `solver_policy`: every move of each decision with at most `left` lines
    left, a ply at a time from the earliest (as self-play meets them); settled when all are."""
    game = load("dots-and-boxes-4x4")
    lines = solver.boxes.lines
    by_ply: dict[int, list[DotsState]] = {}
    for decisions in games:
        for s in decisions:
            if lines - s.ply <= left:
                by_ply.setdefault(s.ply, []).append(s)
    n = settled = 0
    start = time.perf_counter()
    for ply in sorted(by_ply):
        values = move_values(solver, game.batch_of(by_ply[ply]), max_nodes=max_nodes)
        n += len(values)
        settled += int((~values.isnan().any(1)).sum())
    return n, settled, time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=256, help="games of each batch")
    p.add_argument("--left", default="12,16,20,22,24,26,28", help="counts of lines left to rescore from")
    p.add_argument(
        "--max-nodes", type=int, default=AlphaZeroConfig.solve_nodes, help="node budget a position"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--policy", action="store_true", help="also solve every move (solver_policy)")
    args = p.parse_args()
    rng = np.random.default_rng(args.seed)
    batches = play(args.games, rng), play(args.games, rng)
    boxes = load("dots-and-boxes-4x4").boxes
    warm = EndgameSolver(boxes, table_bits=10)  # compile, and make the first batch, before timing
    warm.value_of(boxes.all_lines)
    rescore_moves(warm, batches[0][:1], 4, args.max_nodes)
    print(f"{args.games} games a batch of the mixed policy, node budget {args.max_nodes:,} a position")
    print("lines_left  solves  decisions  settled  batch1_s  batch2_s  ms_per_decision")
    kinds = {"values": rescore} | ({"moves": rescore_moves} if args.policy else {})
    for left in (int(x) for x in args.left.split(",")):
        for kind, solve in kinds.items():
            solver = EndgameSolver(boxes)
            results = [solve(solver, games, left, args.max_nodes) for games in batches]
            n = sum(r[0] for r in results)
            share = sum(r[1] for r in results) / max(n, 1)
            ms = 1e3 * sum(r[2] for r in results) / max(n, 1)
            print(
                f"{left:10d}  {kind:>6}  {n:9d}  {share:7.3f}  {results[0][2]:8.2f}  {results[1][2]:8.2f}"
                f"  {ms:15.3f}"
            )


if __name__ == "__main__":
    main()
