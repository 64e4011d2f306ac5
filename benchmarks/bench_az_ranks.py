"""What a second rank gives the AlphaZero-style learner: seconds per iteration on one rank and on
two (`AlphaZeroConfig.ranks`).

    python benchmarks/bench_az_ranks.py /tmp/abl/base [--iterations 4] [--games 1024]
    python benchmarks/bench_az_ranks.py --game dots-and-boxes-3x3 --worlds 2 2 [--iterations 4]

The learner continues gen6 of a finished `cpu`-recipe league folder (a `LocalStore`, e.g. the
ablation's base) with the `cpu-az` profile's AlphaZero recipe as it trains generation 7
(`--games` an iteration, the profile's by default, at 64 simulations a move, rescored by the
solver from ply 16, a quarter of the games against gen4-gen6 sampling their raw policy). Each
setting runs twice, interleaved, every rank a spawned process with one torch thread; each row
gives rank 0's median seconds per iteration (self-play and fit; the first iteration left out,
it also compiles the solver), the
decisions an iteration produced, and the CPU-seconds all ranks spent training per wall-second
of rank 0's training (`time.process_time` of each rank's process).

With `--game`, the learner starts from a fresh net of the `cpu` profile's shape on that game and
plays no league games: a Dots and Boxes game always lasts every line, so an iteration's work
does not depend on how well the net plays. `fit_s` is the rest of an iteration after self-play:
rank 0's fit and the other ranks' wait for it. Run it with another checkout's c4core first on
PYTHONPATH to time that tree.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import time
from contextlib import nullcontext
from dataclasses import replace
from typing import Any

import torch


def _rank(
    rank: int,
    world: int,
    port: int,
    base: str | None,
    game: str | None,
    iterations: int,
    games: int | None,
    out: Any,
) -> None:
    from c4core.config import PROFILES, league_config
    from c4core.league.store import LocalStore
    from c4core.learners.alphazero import train
    from c4core.learners.net import PolicyValueNet
    from c4core.learners.ranks import ALONE, joined

    torch.set_num_threads(1)
    # the profile as a league on `game` runs it (a board without a solver rescores nothing)
    profile = PROFILES["cpu-az"] if game is None else league_config("cpu-az", game=game, precision="bfloat16")
    config = replace(
        profile.alphazero, iterations=iterations, ranks=world, games=games or profile.alphazero.games
    )
    board = profile.board
    if game is not None:
        torch.manual_seed(0)
        net, members = PolicyValueNet(profile.net, board), []
    else:
        store = LocalStore(str(base))
        net = store.snapshot(6).build("cpu")
        members = [(f"gen{g}", store.snapshot(g).build("cpu")) for g in (4, 5, 6)]
    seen: list[dict[str, float]] = []
    with joined(port, rank, world) if world > 1 else nullcontext(ALONE) as ranks:
        wall, cpu = time.perf_counter(), time.process_time()
        train(net, config, 0, board, None, lambda i, m: seen.append(m), members, ranks)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    out.put((rank, (seen, wall, cpu)))


def run(
    world: int, base: str | None, iterations: int, games: int | None = None, game: str | None = None
) -> dict[str, Any]:
    from c4core.learners.ranks import rendezvous

    meeting = rendezvous(world)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_rank, args=(r, world, meeting.port, base, game, iterations, games, out))
        for r in range(world)
    ]
    for p in procs:
        p.start()
    got = dict(out.get() for _ in procs)
    for p in procs:
        p.join()
    later = got[0][0][1:]
    return {
        "ranks": world,
        "seconds": round(statistics.median(m["charts/seconds"] for m in later), 2),
        "selfplay_s": round(statistics.median(m["charts/selfplay_seconds"] for m in later), 2),
        "fit_s": round(
            statistics.median(m["charts/seconds"] - m["charts/selfplay_seconds"] for m in later), 2
        ),
        "decisions": round(statistics.median(m["charts/decisions"] for m in later)),
        "cpu_per_wall": round(sum(cpu for _, _, cpu in got.values()) / got[0][1], 2),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("base", nargs="?", help="a LocalStore folder holding gen4-gen6 of a cpu-recipe league")
    p.add_argument("--game", help="a fresh net on this game instead of a base (a variant's name)")
    p.add_argument("--iterations", type=int, default=4)
    p.add_argument("--games", type=int, default=None, help="games an iteration (default: the profile's)")
    p.add_argument("--worlds", type=int, nargs="+", default=[1, 2, 1, 2], help="ranks of each run, in order")
    args = p.parse_args()
    if (args.base is None) == (args.game is None):
        p.error("give a base folder or --game, not both")
    rows = [run(w, args.base, args.iterations, args.games, args.game) for w in args.worlds]
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
