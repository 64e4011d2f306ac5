"""Can the league's net hold Dots and Boxes' exact values at all? (issue #27)

The 3x3 leagues miss the suite's targets in the opening (3-7 lines drawn), where self-play
learns slowly. This separates the net's capacity from self-play's sample efficiency: a fresh
net of the given shape is fitted, with the AlphaZero-style learner's own `fit` (its loss,
Adam, the square's eight images), on positions the exact solver labels, drawn as the suite
draws them (uniformly random lines, a uniform count of them), and never one of the suite's
positions or strategy probes or their images (`Suite.holds`). Targets are the solver's
(`alphazero.solver_samples`, which the league's `solver_positions` add to its replay): the
mover's final box margin over the 9 boxes, and a uniform policy over the lines of best value.
Until the twelfth session this script labelled positions with a vectorised copy of its own and
held out the suite's positions alone, not its probes; since the thirteenth, `solver_samples`
takes the table's batch of move values (`DotsSolver.move_values`), about as fast again. Every
`--every` seconds of fitting the raw net is scored on the suite; at the end, the net with 256
simulations of search (`margin_target.score_player`: the suite, keeps-value by lines drawn, and
games against `perfect`).

    python benchmarks/table_supervised.py --blocks 2 --channels 32 --minutes 10 --out /tmp/sup/2x32
    python benchmarks/table_supervised.py --value-bins 19 --minutes 10 --out /tmp/sup/bins19
    python benchmarks/table_supervised.py --blocks 4 --channels 64 --minutes 80 --anneal --out /tmp/sup/4x64

With `--game dots-and-boxes-4x4` the positions are those the endgame search settles (from
`exact_from`, 20 lines left, on), the suite is the 1,200 endgame probes and their strategy
probes, and the end scores the raw net alone (the searched scoring and `perfect` are 3x3's).
`--weights` starts from a snapshot instead of a fresh net, keeping its shape and value target:

    python benchmarks/table_supervised.py --game dots-and-boxes-4x4 --weights W --precision float32 \
        --random-image --positions 2048 --minutes 25 --every 300 --out /tmp/sup4/gen8

Writes `log.jsonl` (one raw row per scoring), `final.json` and `net.pt` to `--out`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from margin_target import GAME, score_player

from c4core.config import AlphaZeroConfig, NetConfig
from c4core.games import held_out, load
from c4core.games.dots_and_boxes import DotsAndBoxes
from c4core.learners.alphazero import fit, solver_samples
from c4core.learners.net import Checkpoint, NetPlayer, PolicyValueNet


def raw_scores(net: PolicyValueNet, game: DotsAndBoxes) -> dict[str, float]:
    suite = game.suite(seed=0)
    assert suite is not None
    return suite.score(NetPlayer(net))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default=GAME, choices=("dots-and-boxes-3x3", "dots-and-boxes-4x4"))
    parser.add_argument("--weights", type=Path, help="start from this snapshot's weights.pt, not a fresh net")
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--precision", default="bfloat16")
    parser.add_argument("--value-bins", type=int, default=0, help="NetConfig.value_bins: 0 for a scalar head")
    parser.add_argument("--minutes", type=float, default=10.0, help="fitting time, scoring excluded")
    parser.add_argument("--every", type=float, default=120.0, help="seconds of fitting between raw scorings")
    parser.add_argument("--positions", type=int, default=8192, help="fresh positions a round")
    parser.add_argument("--steps", type=int, default=16, help="gradient steps a round")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument(
        "--anneal", action="store_true", help="lower the step size linearly to 0 over the fitting time"
    )
    parser.add_argument(
        "--random-image", action="store_true", help="AlphaZeroConfig.random_image: one image a sample"
    )
    parser.add_argument("--simulations", type=int, default=256)
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    game = load(args.game)
    assert isinstance(game, DotsAndBoxes)
    solver = game.exact_solver()
    excluded = held_out(game, 0)
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    config = AlphaZeroConfig(
        learning_rate=args.learning_rate, mirror=args.random_image, random_image=args.random_image
    )
    if args.weights:
        snapshot = Checkpoint.load(args.weights)
        if snapshot.game != game:
            raise SystemExit(f"{args.weights} plays {snapshot.game.title}, not {game.title}")
        net = snapshot.build()
        net_config = net.config
    else:
        net_config = NetConfig(
            blocks=args.blocks,
            channels=args.channels,
            precision=args.precision,
            value_target="margin",
            value_bins=args.value_bins,
        )
        net = PolicyValueNet(net_config, game)
    margin = net_config.value_target == "margin"
    optimizer = torch.optim.Adam(net.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
    fitting, seen, next_score = 0.0, 0, args.every
    log = (args.out / "log.jsonl").open("w")
    while fitting < args.minutes * 60:
        start = time.perf_counter()
        if args.anneal:
            for group in optimizer.param_groups:
                group["lr"] = config.learning_rate * (1 - fitting / (args.minutes * 60))
        window = solver_samples(game, solver, args.positions, generator, margin, excluded)
        losses = fit(net, optimizer, window, args.steps, config, generator, game)
        fitting += time.perf_counter() - start
        seen += args.steps * config.batch_size
        if fitting >= next_score or fitting >= args.minutes * 60:
            next_score += args.every
            row = {"seconds": round(fitting, 1), "samples": seen, **losses, **raw_scores(net, game)}
            print(json.dumps(row), flush=True)
            log.write(json.dumps(row) + "\n")
            log.flush()
    Checkpoint.of(net, game=game).save(args.out / "net.pt")
    start = time.perf_counter()
    final = {
        "game": args.game,
        "weights": str(args.weights or ""),
        "blocks": net_config.blocks,
        "channels": net_config.channels,
        "value_target": net_config.value_target,
        "value_bins": net_config.value_bins,
        "anneal": args.anneal,
        "fitting_seconds": round(fitting, 1),
        "samples": seen,
        "raw": raw_scores(net, game),
    }
    if args.game == GAME:
        final["searched"] = score_player(NetPlayer(net), args.simulations, args.games)
    final["scoring_seconds"] = round(time.perf_counter() - start, 1)
    (args.out / "final.json").write_text(json.dumps(final, indent=1))
    print(json.dumps(final), flush=True)


if __name__ == "__main__":
    main()
