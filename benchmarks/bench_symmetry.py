"""Symmetry augmentation measured before it becomes a default (issue #27): one learner of the
`cpu` profile trained twice side by side, with its images under the game's symmetries
(`mirror`, the square board's eight in Dots and Boxes) and without, from the same start and
seeds, one torch thread each.

    python benchmarks/bench_symmetry.py --game dots-and-boxes-3x3 --learner ppo --iterations 50 --every 10
    python benchmarks/bench_symmetry.py --game dots-and-boxes-3x3 --learner alphazero \\
        --start /tmp/sym/base/gen6.pt --iterations 10 --every 2

Every `--every` iterations each arm records its seconds so far, its raw scores on the game's
suite (`SeededSuite`, seed 0: keeps the value, keeps the outcome) and its score against a bot
(`--bot`, 200 games, 4 random opening plies). PPO trains against `random`, `greedy` and itself,
the `cpu` recipe's opponents less the league's snapshots; the AlphaZero-style learner self-plays
alone (no league share). `--start` is a checkpoint to continue (a fresh net of the profile's
shape otherwise). Prints one JSON line per checkpoint of each arm, then a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import replace
from typing import Any

ARMS = {"mirror": True, "none": False}
"""Each arm's `mirror` setting."""


def run_arm(args: argparse.Namespace) -> None:
    """One arm, in its own process: train, and print a JSON line at every checkpoint."""
    import torch

    from c4core.config import league_config
    from c4core.evaluation.match import play_match
    from c4core.games import load
    from c4core.games.dots_and_boxes.suite import SeededSuite
    from c4core.learners import alphazero, ppo
    from c4core.learners.net import Checkpoint, NetPlayer, PolicyValueNet
    from c4core.players import make_player

    torch.set_num_threads(1)
    game = load(args.game)
    config = league_config("cpu", game=args.game, ranks=1)
    suite = SeededSuite(game, 0)
    bot = make_player(args.bot, game)
    torch.manual_seed(args.seed)
    if args.start:
        net = Checkpoint.load(args.start).build("cpu")
        assert isinstance(net, PolicyValueNet)
        net.train()
    else:
        net = PolicyValueNet(config.net, game)
    start = time.perf_counter()
    scoring = 0.0  # seconds spent scoring, not training: left out of the arm's time

    def on_iteration(i: int, metrics: dict[str, float]) -> None:
        nonlocal scoring
        if (i + 1) % args.every:
            return
        seconds = time.perf_counter() - start - scoring
        net.eval()
        player = NetPlayer(net, name=args.arm)
        scores = suite.score(player)
        r = play_match(player, bot, 200, seed=123, opening_plies=4, game=game)
        net.train()
        scoring = time.perf_counter() - start - seconds
        row = {
            "arm": args.arm,
            "iteration": i + 1,
            "seconds": round(seconds, 1),
            "keeps_value": round(scores["suite/keeps_value"], 4),
            "keeps_outcome": round(scores["suite/keeps_outcome"], 4),
            f"vs_{args.bot}": round(r.total.score, 4),
        }
        print(json.dumps(row), flush=True)

    mirror = ARMS[args.arm]
    if args.learner == "ppo":
        recipe = replace(config.ppo, iterations=args.iterations, mirror=mirror)
        opponents = [make_player("random", game), make_player("greedy", game), None]
        ppo.train(net, recipe, opponents, args.seed, game, on_iteration=on_iteration)
    else:
        recipe = replace(config.alphazero, iterations=args.iterations, mirror=mirror, league_share=0.0)
        alphazero.train(net, recipe, args.seed, game, on_iteration=on_iteration)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # the suite is Dots and Boxes' (`SeededSuite`), made on the spot for the board
    boards = ("dots-and-boxes-3x3", "dots-and-boxes-4x4")
    p.add_argument("--game", choices=boards, default=boards[0])
    p.add_argument("--learner", choices=("ppo", "alphazero"), default="ppo")
    p.add_argument("--start", default=None, help="a checkpoint to continue (default: a fresh net)")
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--bot", default="heuristic")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--arm", choices=list(ARMS), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.arm:
        run_arm(args)
        return
    flags = [f"--{k}={v}" for k, v in vars(args).items() if k != "arm" and v is not None]
    children = {
        arm: subprocess.Popen(
            [sys.executable, __file__, *flags, f"--arm={arm}"], stdout=subprocess.PIPE, text=True
        )
        for arm in ARMS
    }
    rows: list[dict[str, Any]] = []
    for child in children.values():
        assert child.stdout is not None
        for line in child.stdout:
            print(line, end="", flush=True)
            rows.append(json.loads(line))
        if child.wait():
            sys.exit(f"an arm failed (exit {child.returncode})")
    columns = [k for k in rows[0] if k not in ("arm", "iteration")]
    print(f"\n| iteration | {' | '.join(f'{c} ({a})' for c in columns for a in ARMS)} |")
    print("| --- " * (1 + len(columns) * len(ARMS)) + "|")
    by = {(r["arm"], r["iteration"]): r for r in rows}
    for i in sorted({r["iteration"] for r in rows}):
        cells = [str(by.get((a, i), {}).get(c, "")) for c in columns for a in ARMS]
        print(f"| {i} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
