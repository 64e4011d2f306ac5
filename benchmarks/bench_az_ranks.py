"""What a second rank gives the AlphaZero-style learner: seconds per iteration on one rank and on
two (`AlphaZeroConfig.ranks`).

    python benchmarks/bench_az_ranks.py /tmp/abl/base [--iterations 4] [--games 1024]

The learner continues gen6 of a finished `cpu`-recipe league folder (a `LocalStore`, e.g. the
ablation's base) with the `cpu-az` profile's AlphaZero recipe as it trains generation 7
(`--games` an iteration, the profile's by default, at 64 simulations a move, rescored by the
solver from ply 16, a quarter of the games against gen4-gen6 sampling their raw policy). Each
setting runs twice, interleaved, every rank a spawned process with one torch thread; each row
gives rank 0's median seconds per iteration (self-play and fit; the first iteration left out,
it also compiles the solver), the
decisions an iteration produced, and the CPU-seconds all ranks spent training per wall-second
of rank 0's training (`time.process_time` of each rank's process).
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


def _rank(rank: int, world: int, port: int, base: str, iterations: int, games: int | None, out: Any) -> None:
    from c4core.config import PROFILES
    from c4core.league.store import LocalStore
    from c4core.learners.alphazero import train
    from c4core.learners.ranks import ALONE, joined

    torch.set_num_threads(1)
    profile = PROFILES["cpu-az"]
    config = replace(
        profile.alphazero, iterations=iterations, ranks=world, games=games or profile.alphazero.games
    )
    store = LocalStore(base)
    net = store.snapshot(6).build("cpu")
    members = [(f"gen{g}", store.snapshot(g).build("cpu")) for g in (4, 5, 6)]
    seen: list[dict[str, float]] = []
    with joined(port, rank, world) if world > 1 else nullcontext(ALONE) as ranks:
        wall, cpu = time.perf_counter(), time.process_time()
        train(net, config, 0, profile.board, None, lambda i, m: seen.append(m), members, ranks)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    out.put((rank, (seen, wall, cpu)))


def run(world: int, base: str, iterations: int, games: int | None = None) -> dict[str, Any]:
    from c4core.learners.ranks import rendezvous

    meeting = rendezvous(world)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_rank, args=(r, world, meeting.port, base, iterations, games, out))
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
        "decisions": round(statistics.median(m["charts/decisions"] for m in later)),
        "cpu_per_wall": round(sum(cpu for _, _, cpu in got.values()) / got[0][1], 2),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("base", help="a LocalStore folder holding gen4-gen6 of a cpu-recipe league")
    p.add_argument("--iterations", type=int, default=4)
    p.add_argument("--games", type=int, default=None, help="games an iteration (default: the profile's)")
    args = p.parse_args()
    rows = [run(w, args.base, args.iterations, args.games) for w in (1, 2, 1, 2)]
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
