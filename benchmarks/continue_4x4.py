"""Continue a 4x4 Dots and Boxes snapshot with the AlphaZero-style learner, and score it (#27).

Loads a snapshot's weights (a registered version's ``weights.pt``), trains it for `--iterations`
iterations of the `cpu` profile's 4x4 AlphaZero-style config on one rank (its games and fit per
iteration, `solve_from` at the game's `exact_from`), with a JSON of `AlphaZeroConfig` overrides
applied last, and prints, before and after, the raw network's scores on the 4x4 suite (the
endgame probes' keeps-value and keeps-outcome, and each strategy probe). The suite is held out
of any solver-labelled positions. Run the variants side by side, one torch thread each, from the
same snapshot and seed, so that only the overrides differ (`--save` keeps the trained snapshot,
for `c4 match` and `c4 eval-suite`):

    python benchmarks/continue_4x4.py WEIGHTS '{}' --iterations 8 &
    python benchmarks/continue_4x4.py WEIGHTS '{"solver_policy": true}' --iterations 8 &
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from c4core.config import league_config, overridden
from c4core.learners.alphazero import train
from c4core.learners.net import Checkpoint, NetPlayer


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("weights", help="a 4x4 snapshot's weights.pt")
    p.add_argument("overrides", nargs="?", default="{}", help="JSON of AlphaZeroConfig overrides")
    p.add_argument("--iterations", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--score-every", type=int, default=0, help="also score after every N iterations")
    p.add_argument("--save", type=Path, help="write the trained snapshot here (a .pt for c4 match)")
    args = p.parse_args()
    torch.set_num_threads(1)
    league = league_config("cpu", "continue", game="dots-and-boxes-4x4")
    game = league.board
    config = overridden(
        replace(league.alphazero, ranks=1, iterations=args.iterations), json.loads(args.overrides)
    )
    snapshot = Checkpoint.load(args.weights)
    if snapshot.game != game:
        raise SystemExit(f"{args.weights} plays {snapshot.game.title}, not {game.title}")
    net = snapshot.build()
    suite = game.suite()

    def report(what: str, seconds: float) -> None:
        scores = suite.score(NetPlayer(net, "net"))
        print(
            json.dumps(
                {"at": what, "seconds": round(seconds, 1), **{k: round(v, 4) for k, v in scores.items()}}
            )
        )

    report("start", 0.0)
    start = time.perf_counter()

    def each(i: int, metrics: dict[str, float]) -> None:
        keys = (
            "charts/seconds",
            "charts/selfplay_seconds",
            "charts/solve_seconds",
            "charts/fit_seconds",
            "charts/solver_positions",
            "charts/label_seconds",
            "selfplay/solved",
        )
        print(
            json.dumps({"iteration": i} | {k: round(metrics[k], 3) for k in keys if k in metrics}), flush=True
        )
        done = i + 1
        if args.score_every and done % args.score_every == 0 and done < args.iterations:
            report(f"after {done} iterations", time.perf_counter() - start)

    train(net, config, args.seed, game, on_iteration=each, held_out=suite.holds)
    report(f"after {args.iterations} iterations", time.perf_counter() - start)
    if args.save:
        Checkpoint.of(net, game, snapshot.generation, train_config=asdict(config)).save(args.save)


if __name__ == "__main__":
    main()
