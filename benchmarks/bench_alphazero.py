"""AlphaZero-style learner variants: suite strength over wall time, from a given checkpoint.

Continues a network (usually a PPO league's champion) with the AlphaZero-style learner for
`--minutes`, and after every `--every` iterations scores it on the solver-labelled suite, raw
(greedy) and with 256 simulations of search. The replay window lives for the whole run. Run
variants side by side, one torch thread each, so they share the machine equally:

    python benchmarks/bench_alphazero.py runs/cpu/gen6.pt '{"games": 256}' &
    python benchmarks/bench_alphazero.py runs/cpu/gen6.pt '{"games": 1024}' &

The JSON overrides `AlphaZeroConfig` fields, the search's in a nested object such as
`{"search": {"simulations": 32}}` (`iterations` is ignored: the run is timed).
`--grow 4x64` first grows the net to 4 blocks of 64 channels without changing what it computes
(`c4core.learners.net.grown`). `--bots tactical,lookahead` also plays `--bot-games` greedy games against
each named bot at every report (4 random opening plies, colours alternated, seed 1, as `c4 match
... --seed 1`). Each line: iterations, seconds, the value error on suite positions of plies 4-10
and 11-20 (mean squared difference between the network's value and the exact result +1/0/-1, all
positions counted), raw keeps-the-result, searched keeps-the-result, each bot's score (wins,
draws half), losses.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import torch

from c4core.config import AlphaZeroConfig, overridden
from c4core.evaluation.match import play_match
from c4core.games import ConnectFour
from c4core.games.connect4.batch import Boards
from c4core.games.connect4.suite import default_suite_path, evaluate_suite, load_suite, outcome
from c4core.learners.alphazero import train
from c4core.learners.net import Checkpoint, NetPlayer, grown
from c4core.learners.search import SearchPlayer


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", help="the network to continue (a .pt snapshot)")
    p.add_argument("overrides", nargs="?", default="{}", help="JSON of AlphaZeroConfig overrides")
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--every", type=int, default=5)
    p.add_argument("--suite", default=None, help="solver-labelled suite (default: the shared dev suite)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--grow", default=None, help="grow the net first, e.g. 4x64 (blocks x channels)")
    p.add_argument("--bots", default="", help="comma-separated bots to play at every report, e.g. tactical")
    p.add_argument("--bot-games", type=int, default=4000, help="greedy games against each bot (even)")
    args = p.parse_args()
    bots = [b for b in args.bots.split(",") if b]
    BOTS = ConnectFour().bots()  # noqa: N806 - the standard board's scripted players
    if unknown := set(bots) - set(BOTS):
        p.error(f"unknown bot(s) {', '.join(sorted(unknown))}: choose from {', '.join(BOTS)}")
    torch.set_num_threads(args.threads)
    path = args.suite or default_suite_path()
    if path is None:
        p.error("no suite: pass --suite FILE")
    suite = load_suite(path)
    net = Checkpoint.load(args.checkpoint).build()
    if args.grow:
        blocks, _, channels = args.grow.partition("x")
        net = grown(net, int(blocks), int(channels), torch.Generator().manual_seed(args.seed))
    boards = Boards.from_positions([q.position for q in suite])
    exact = torch.tensor([float(outcome(q.best)) for q in suite])
    plies = torch.tensor([q.ply for q in suite])
    early, middle = plies <= 10, (plies >= 11) & (plies <= 20)
    config = replace(overridden(AlphaZeroConfig(), json.loads(args.overrides)), iterations=1_000_000)
    scoring = [0.0]  # seconds spent on the suite, left out of the training time

    def score() -> str:
        t = time.perf_counter()
        _, values = net.evaluate(boards)
        error = (values - exact) ** 2
        value_error = f"{float(error[early].mean()):8.3f}  {float(error[middle].mean()):8.3f}"
        player = NetPlayer(net, "net")
        raw = evaluate_suite(player, suite).total.keeps_rate
        searched = evaluate_suite(SearchPlayer(net, 256), suite).total.keeps_rate
        against = [play_match(player, BOTS[b](), args.bot_games, seed=1).total.score for b in bots]
        scoring[0] += time.perf_counter() - t
        return f"{value_error}  {raw:9.3f}  {searched:13.3f}" + "".join(f"  {s:.4f}" for s in against)

    print(f"# {args.checkpoint} {args.overrides}")
    header = "iteration  seconds  verr_4_10  verr_11_20  raw_keeps  mcts256_keeps"
    print(header + "".join(f"  vs_{b}" for b in bots) + "  policy_loss  value_loss")
    print(f"{0:9d}  {0:7.0f}  {score()}", flush=True)
    start = time.perf_counter()
    scoring[0] = 0.0

    def on_iteration(i: int, m: dict[str, float]) -> None:
        if (i + 1) % args.every == 0:
            elapsed = time.perf_counter() - start - scoring[0]
            losses = f"{m['losses/policy']:11.3f}  {m['losses/value']:10.3f}"
            print(f"{i + 1:9d}  {elapsed:7.0f}  {score()}  {losses}", flush=True)
            if elapsed > args.minutes * 60:
                raise _Timeout

    try:
        train(net, config, args.seed, on_iteration=on_iteration)
    except _Timeout:
        pass


class _Timeout(Exception):
    """Raised from the iteration callback to end a timed run."""


if __name__ == "__main__":
    main()
