"""Where a PPO iteration's time goes on one rank and on two: game collection against the update.

    python benchmarks/bench_ranks.py /tmp/abl/base [float32|bfloat16]

The learner starts from gen6 of a finished `cpu`-recipe league folder (a `LocalStore`, e.g. the
ablation's base) and trains against what a sixth generation meets: `random`, `tactical`, three
snapshots (gen4-gen6, sampling) and itself, 768 games an iteration (the `cpu` recipe, its trunk
in the precision given: float32, as when the ranks were first measured, by default). Each
setting runs twice, interleaved; each row gives rank 0's median seconds of collection and of
update over iterations 2-5.
"""

from __future__ import annotations

import json
import multiprocessing
import statistics
import sys
import time
from contextlib import nullcontext
from dataclasses import replace
from typing import Any

import torch


def _opponents(base: str) -> list[Any]:
    from c4core.games.connect4.bots import TacticalBot
    from c4core.games.players import RandomBot
    from c4core.league.store import LocalStore
    from c4core.learners.net import NetPlayer

    store = LocalStore(base)
    nets = [NetPlayer(store.snapshot(g).build("cpu"), name=f"gen{g}", greedy=False) for g in (4, 5, 6)]
    return [RandomBot(), TacticalBot(), *nets, None]


def _rank(rank: int, world: int, port: int, base: str, precision: str, out: Any) -> None:
    from c4core.learners.ranks import ALONE, joined

    torch.set_num_threads(1)
    with joined(port, rank, world) if world > 1 else nullcontext(ALONE) as ranks:
        out.put((rank, _iterations(base, ranks, precision)))


def _iterations(base: str, ranks: Any, precision: str) -> list[tuple[float, float]]:
    """Rank `ranks.rank`'s (collection, update) seconds of iterations 2-5, the net's trunk in
    `precision`."""
    from c4core.config import PROFILES
    from c4core.league.store import LocalStore
    from c4core.learners.net import PolicyValueNet
    from c4core.learners.ppo import collect, ppo_update

    config = replace(PROFILES["cpu"].ppo, ranks=ranks.world)
    net = PolicyValueNet(replace(PROFILES["cpu"].net, precision=precision))
    net.load_state_dict(LocalStore(base).snapshot(6).model)
    optimizer = torch.optim.Adam(net.parameters(), lr=config.learning_rate)
    gen = torch.Generator().manual_seed(ranks.rank)
    opponents, rows = _opponents(base), []
    for _ in range(5):
        t0 = time.perf_counter()
        games = config.games // ranks.world
        rollout, _ = collect(net, opponents, games, gen, opening_plies=config.opening_plies)
        t1 = time.perf_counter()
        ppo_update(net, optimizer, rollout, config, gen, ranks)
        rows.append((t1 - t0, time.perf_counter() - t1))
    return rows[1:]  # the first iteration also loads the bots' kernels


def run(world: int, base: str, precision: str) -> dict[str, Any]:
    from c4core.learners.ranks import rendezvous

    meeting = rendezvous(world)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_rank, args=(r, world, meeting.port, base, precision, out)) for r in range(world)
    ]
    for p in procs:
        p.start()
    got = dict(out.get() for _ in procs)
    for p in procs:
        p.join()
    return {
        "ranks": world,
        "precision": precision,
        "collect_s": round(statistics.median(c for c, _ in got[0]), 2),
        "update_s": round(statistics.median(u for _, u in got[0]), 2),
    }


if __name__ == "__main__":
    precision = sys.argv[2] if len(sys.argv) > 2 else "float32"
    print(json.dumps([run(w, sys.argv[1], precision) for w in (1, 2, 1, 2)], indent=1))
