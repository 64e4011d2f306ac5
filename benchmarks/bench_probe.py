"""Search with exact solver probes at its leaves: suite strength and time, by probe setting.

Scores one network with `--simulations` of search on the solver-labelled suite, first plain and
then with each `--probe FROM:NODES` setting (`SearchConfig.probe_from` / `probe_nodes`), side by
side in one process on one torch thread. Each row: keeps-the-result overall and per ply bucket,
the batched scoring time (one `act` call over the whole suite, as `c4 eval-suite` does), and the
latency of single-position answers over every `--every`-th suite position (median, 90th
percentile and slowest; positions with a win on the board answer at once),
as the play page and serving see them. A probing row scores the suite with one solver and
times the single answers with another, fresh one, whose table then warms from answer to answer
as a served model's does.

Usage:
    python benchmarks/bench_probe.py models:/connect4@champion --tracking-uri URI \\
        [--simulations 256] [--probe 24:20000 20:20000 16:20000 12:20000 12:200000] [--misses]
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

import torch

from c4core.config import SearchConfig
from c4core.entry import registry_fetch, tracking_uri
from c4core.games.connect4.batch import Boards
from c4core.games.connect4.solver import Solver
from c4core.games.connect4.suite import SuitePosition, default_suite_path, evaluate_suite, load_suite, outcome
from c4core.learners.net import NetPlayer
from c4core.learners.search import SearchPlayer, search, search_position
from c4core.players import make_player


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("player", help="a network player spec (checkpoint .pt or registry URI)")
    p.add_argument("--tracking-uri", default=None)
    p.add_argument("--suite", default=None, help="solver-labelled suite (default: the shared dev suite)")
    p.add_argument("--simulations", type=int, default=256)
    p.add_argument(
        "--probe", nargs="*", default=["24:20000", "20:20000", "16:20000", "12:20000", "12:200000"]
    )
    p.add_argument("--every", type=int, default=6, help="latency over every N-th suite position")
    p.add_argument("--misses", action="store_true", help="list the counted positions each setting gets wrong")
    args = p.parse_args()
    torch.set_num_threads(1)
    path = args.suite or default_suite_path()
    if path is None:
        p.error("no suite: pass --suite FILE")
    net_player = make_player(args.player, registry=registry_fetch(tracking_uri(args.tracking_uri)))
    if not isinstance(net_player, NetPlayer):
        p.error(f"{args.player} is not a network player")
    suite = load_suite(path)
    settings = [(0, 0)] + [tuple(int(x) for x in s.split(":")) for s in args.probe]
    print(f"{net_player.name} + {args.simulations} simulations on {path}")
    print("probe_from  probe_nodes  keeps   4-10  11-20  21-36  scoring_s", end="")
    print("  move_ms_median  move_ms_p90  move_ms_max")
    for probe_from, nodes in settings:
        config = SearchConfig(simulations=args.simulations)
        if probe_from:
            config = replace(config, probe_from=probe_from, probe_nodes=nodes)
        player = SearchPlayer(net_player.net, None, config)
        report = evaluate_suite(player, suite)
        solver = Solver(suite[0].geometry) if probe_from else None  # fresh: not warmed by the suite
        latencies = []
        for q in suite[:: args.every]:
            start = time.perf_counter()
            search_position(player.net, q.position, config, solver=solver)
            latencies.append(time.perf_counter() - start)
        rates = [report.total.keeps_rate] + [t.keeps_rate for t in report.buckets.values()]
        cells = "  ".join(f"{100 * r:5.1f}" for r in rates)
        ms = sorted(1e3 * t for t in latencies)
        print(
            f"{probe_from or '-':>10}  {nodes or '-':>11}  {cells}  {report.seconds:9.1f}  "
            f"{statistics.median(ms):14.1f}  {ms[int(0.9 * (len(ms) - 1))]:11.1f}  {ms[-1]:11.1f}"
        )
        if args.misses:
            show_misses(player, [q for q in suite if q.counted])


def show_misses(player: SearchPlayer, counted: list[SuitePosition]) -> None:
    """Each counted position the player gets wrong: the best and the chosen move's outcome
    (+1 win, 0 draw, -1 loss), and the network's prior and the search's visits on the choice."""
    r = search(
        player.net, Boards.from_positions([q.position for q in counted]), player.config, solver=player.solver
    )
    for i, q in enumerate(counted):
        col = int(r.columns[i])
        if not q.keeps_result(col):
            print(
                f"    miss: ply {q.ply:2d} {q.moves:<14} best {outcome(q.best):+d} chose column {col + 1} "
                f"({outcome(q.scores[col]):+d}), prior {r.priors[i, col]:.2f}, visits {r.visits[i, col]}"
            )


if __name__ == "__main__":
    main()
