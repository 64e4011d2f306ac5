"""Ablations at equal wall time, every arm continuing from one `cpu`-profile league: the roles
ablation (AlphaZero-style generations as they are, with the league share, with a main exploiter,
and with both) and the sample-efficiency levers (the `cpu-az` recipe as it is, arm `share`, then
with one lever each, with all of them, and with the three whose suite scores rose alone,
`together`: `AlphaZeroConfig.merge_duplicates`, `learning_rate_final`, `average_iterations` and a
`q_weight` towards the search's value), Gumbel's root search (`SearchConfig.root`) at the
recipe's 64 simulations and at 16, the speed levers together, `evaluation_cache` and
`reuse_tree`, and KataGo's levers: the reply head (`NetConfig.reply_head`), a first-play
reduction (`SearchConfig.fpu_reduction`), and forced playouts with policy target pruning
(`SearchConfig.forced_playouts`, with PUCT's root at 64 simulations, as before Gumbel's, against
`puct64`, the same without them); and flatter priors (`SearchConfig.prior_temperature`).

Three steps, each a subcommand::

    # 1. the base: a finished cpu-profile league, copied from MLflow into a folder
    python benchmarks/ablation.py base --tracking-uri sqlite:///$PWD/mlruns/mlflow.db \\
        --league default --out /tmp/ablation/base
    #    or its six PPO generations run straight into a folder (the arms need no more)
    c4 league --profile cpu --generations 6 --name base --dir /tmp/ablation --no-suite
    # 2. one arm: the cpu-az recipe's AlphaZero generations from that base, for --minutes of
    #    wall time (the generation running when time is up is cut off and not counted)
    python benchmarks/ablation.py arm plain --base /tmp/ablation/base --out /tmp/ablation --minutes 30
    #    an arm goes on from where it stopped, for --minutes more (leagues resume)
    python benchmarks/ablation.py arm plain --resume --out /tmp/ablation --minutes 60
    #    two arms side by side, one core each (pass the same --ranks when resuming)
    python benchmarks/ablation.py arm share --ranks 1 --base /tmp/ablation/base --out /tmp/one --minutes 30 &
    python benchmarks/ablation.py arm reply --ranks 1 --base /tmp/ablation/base --out /tmp/one --minutes 30
    #    the same arms' generations on another seed, from the same base
    python benchmarks/ablation.py arm share --ranks 1 --seed 1 --base /tmp/ablation/base --out /tmp/s1 \\
        --minutes 30
    # 3. every arm's AlphaZero generations and the base's last PPO snapshot on the dev suite (raw
    #    and with 256 simulations, all counted positions and plies 4-10; --jobs processes), the
    #    final champions and the newest snapshots head to head (400 games each), and each
    #    exploiter arm's exploitability
    python benchmarks/ablation.py evaluate --out /tmp/ablation plain exploiters both
    python benchmarks/ablation.py evaluate --out /tmp/ablation share merge anneal average q75 levers
    python benchmarks/ablation.py evaluate --out /tmp/ablation/rerun share together
    python benchmarks/ablation.py evaluate --out /tmp/ablation/gumbel share gumbel gumbel16 speed
    python benchmarks/ablation.py evaluate --out /tmp/one share reply fpu prior forced puct64

The arms (`ARMS`) differ only in `roles` and their overrides of the AlphaZero recipe (and, for
the reply head, of the net); the seed, the PPO recipe and the rest of the AlphaZero recipe (the
`cpu-az` profile's) are the same. A main-agent-only arm
gets the base's main snapshots and their records only, so it is the league as it was before
roles. Run the arms one after another on an otherwise idle machine: each is timed by the wall
clock, and an exploiter arm's learners use both cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

MAIN, WITH_EXPLOITER = ("main",), ("main", "main-exploiter")
LEVERS: dict[str, Any] = {
    "merge_duplicates": True,
    "learning_rate_final": 2e-4,  # a fifth of the recipe's 1e-3 by each generation's end
    "average_iterations": 5,  # the last half of the recipe's 10 iterations
    "q_weight": 0.75,  # value targets three quarters the search's (Oracle's best, towards c4a0's 1.0)
}
ARMS: dict[str, dict[str, Any]] = {
    "plain": {"roles": MAIN, "alphazero": {"league_share": 0.0}},
    "share": {"roles": MAIN, "alphazero": {"league_share": 0.25}},  # the recipe as it is
    "exploiters": {"roles": WITH_EXPLOITER, "alphazero": {"league_share": 0.0}},
    "both": {"roles": WITH_EXPLOITER, "alphazero": {"league_share": 0.25}},
    "merge": {"roles": MAIN, "alphazero": {"merge_duplicates": LEVERS["merge_duplicates"]}},
    "anneal": {"roles": MAIN, "alphazero": {"learning_rate_final": LEVERS["learning_rate_final"]}},
    "average": {"roles": MAIN, "alphazero": {"average_iterations": LEVERS["average_iterations"]}},
    "q75": {"roles": MAIN, "alphazero": {"q_weight": LEVERS["q_weight"]}},
    "levers": {"roles": MAIN, "alphazero": LEVERS},
    # the levers whose suite scores rose alone (annealing's fell), together
    "together": {
        "roles": MAIN,
        "alphazero": {k: v for k, v in LEVERS.items() if k != "learning_rate_final"},
    },
    # Gumbel's root at the recipe's 64 simulations, and at 16, where the paper says it still
    # learns and the visit counts say little; a generation's self-play then takes less time
    "gumbel": {"roles": MAIN, "alphazero": {"search": {"root": "gumbel"}}},
    "gumbel16": {"roles": MAIN, "alphazero": {"search": {"root": "gumbel", "simulations": 16}}},
    # the speed levers: the evaluation cache and tree reuse, which change what a second buys
    "speed": {"roles": MAIN, "alphazero": {"evaluation_cache": 500_000, "reuse_tree": True}},
    # KataGo's (Wu 2019): the opponent's reply as an auxiliary target, its first-play
    # reduction, and forced playouts with policy target pruning, which need PUCT's root
    "reply": {"roles": MAIN, "net": {"reply_head": True}, "alphazero": {}},
    "fpu": {"roles": MAIN, "alphazero": {"search": {"fpu_reduction": 0.2}}},
    "forced": {
        "roles": MAIN,
        "alphazero": {"search": {"root": "puct", "simulations": 64, "forced_playouts": 2.0}},
    },
    # forced playouts' own control, the PUCT recipe before Gumbel's root
    "puct64": {"roles": MAIN, "alphazero": {"search": {"root": "puct", "simulations": 64}}},
    # priors flattened at every node (AlphaZero.jl's prior temperature), Gumbel's root included
    "prior": {"roles": MAIN, "alphazero": {"search": {"prior_temperature": 1.5}}},
}
"""Each arm's roles and overrides of the `cpu-az` AlphaZero recipe."""


def arm_config(arm: str, ranks: int | None = None, seed: int = 0) -> Any:
    """The arm's league config; `ranks` replaces the AlphaZero learner's (the recipe's two, one
    a core) to run two arms side by side, and `seed` the league's, which seeds the arm's
    generations (the base's snapshots are taken as they are, whatever their seed)."""
    from c4core.config import PROFILES, overridden

    base = PROFILES["cpu-az"]
    settings = ARMS[arm]
    alphazero = overridden(base.alphazero, settings["alphazero"])
    return replace(
        base,
        name=f"ablation-{arm}",
        seed=seed,
        generations=200,  # more than fit: the wall clock ends the arm
        roles=settings["roles"],
        net=overridden(base.net, settings.get("net", {})),
        alphazero=alphazero if ranks is None else replace(alphazero, ranks=ranks),
    )


def cmd_base(args: argparse.Namespace) -> int:
    """Copy a finished league from MLflow into a `LocalStore` folder."""
    from c4core.league.store import LocalStore
    from c4core.tracking.reports import open_league
    from c4core.tracking.store import Tracking

    store = open_league(Tracking.for_uri(args.tracking_uri), args.league)
    out = LocalStore(args.out)
    copied = 0
    for g in range(1, store.config.generations + 1):
        for role in store.config.roles_at(g):
            ckpt = store.snapshot(g, role)
            if ckpt is not None:
                out.save_snapshot(ckpt, [])
                copied += 1
    for r in store.results():
        out.record_match(r)
    print(json.dumps({"league": args.league, "snapshots": copied, "matches": len(store.results())}))
    return 0


def _seed_arm(base: Path, folder: Path, roles: tuple[str, ...]) -> None:
    """The base's snapshots of `roles`, and the records among them and the bots, into `folder`."""
    from c4core.config import BOT_NAMES, role_of
    from c4core.league.store import LocalStore

    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    kept = set(BOT_NAMES)
    for path in sorted(base.glob("gen*.pt")):
        if role_of(path.stem) in roles:
            shutil.copy(path, folder / path.name)
            kept.add(path.stem)
    store = LocalStore(folder)
    for r in LocalStore(base).results():
        if {r.a, r.b} <= kept:
            store.record_match(r)


def cmd_arm(args: argparse.Namespace) -> int:
    """Run one arm for `--minutes` of wall time, in a child process killed when time is up;
    with `--resume`, go on from where the arm's folder stopped for `--minutes` more."""
    config = arm_config(args.arm, args.ranks, args.seed)
    folder = Path(args.out) / args.arm
    log = folder / "generations.jsonl"
    if args.resume:
        if not log.exists():
            raise SystemExit(f"--resume: {folder} holds no arm that finished a generation")
    else:
        _seed_arm(Path(args.base), folder, config.roles)
    # a resumed arm's log goes on counting seconds from the wall time it already spent
    spent = json.loads(log.read_text().splitlines()[-1])["seconds"] if args.resume else 0.0
    child = subprocess.Popen(
        [sys.executable, __file__, "_run", args.arm, str(folder), "--spent", str(spent)]
        + (["--ranks", str(args.ranks)] if args.ranks else [])
        + ["--seed", str(args.seed)],
        start_new_session=True,  # its learner processes go with it
    )
    deadline = time.monotonic() + args.minutes * 60
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(1.0)
    if child.poll() is None:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    done = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    print(json.dumps({"arm": args.arm, "minutes": args.minutes, "generations": done}, indent=1))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """The arm's league itself (the child of `arm`): every generation logged as it ends."""
    import torch

    from c4core.league.generation import run_league
    from c4core.league.store import LocalStore

    torch.set_num_threads(1)
    config = arm_config(args.arm, args.ranks, args.seed)
    folder = Path(args.folder)
    start = time.perf_counter() - args.spent
    log = folder / "generations.jsonl"
    lines = log.read_text().splitlines() if log.exists() else []
    logged = {json.loads(line)["generation"] for line in lines}

    def on_generation(r: Any) -> None:
        if r.generation <= config.alphazero_from - 1 or r.generation in logged:
            return  # the base's generations, or the ones a resumed arm finished before
        row = {
            "generation": r.generation,
            "seconds": round(time.perf_counter() - start, 1),
            "champion": r.champion,
            "elo": round(r.fit.ratings[r.champion], 1),
        }
        with log.open("a") as f:
            f.write(json.dumps(row) + "\n")

    run_league(LocalStore(folder), config, on_generation)
    return 0


def suite_row(folder: str, generation: int, suite_path: str, device: str = "cpu") -> dict[str, Any]:
    """One snapshot's dev-suite row, raw and with 256 simulations, on `device` (a worker of
    `evaluate`; `gpu_generation.py` scores its snapshot with it too)."""
    import torch

    from c4core.games.connect4.suite import evaluate_suite, load_suite
    from c4core.league.store import LocalStore
    from c4core.learners.net import NetPlayer
    from c4core.learners.search import SearchPlayer

    torch.set_num_threads(1)
    suite = load_suite(suite_path)
    net = LocalStore(Path(folder)).snapshot(generation).build(device)
    raw = evaluate_suite(NetPlayer(net, name=f"gen{generation}"), suite)
    searched = evaluate_suite(SearchPlayer.around(NetPlayer(net, name=f"gen{generation}"), 256), suite)
    return {
        "generation": generation,
        "raw": round(raw.total.keeps_rate, 4),
        "mcts256": round(searched.total.keeps_rate, 4),
        "raw_ply_4_10": round(raw.buckets["ply_4_10"].keeps_rate, 4),
        "mcts256_ply_4_10": round(searched.buckets["ply_4_10"].keeps_rate, 4),
    }


def _finished(folder: Path) -> int:
    """The arm's last generation finished within its time (its log's last line; the base's last
    when it finished none)."""
    log = folder / "generations.jsonl"
    done = [json.loads(line)["generation"] for line in log.read_text().splitlines()] if log.exists() else []
    return max(done, default=arm_config(folder.name).alphazero_from - 1)


def cmd_evaluate(args: argparse.Namespace) -> int:
    """The suite per AlphaZero generation, the champions head to head, the exploitability."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    import torch

    from c4core.config import generation_of
    from c4core.evaluation.match import play_match
    from c4core.games.connect4.suite import default_suite_path
    from c4core.league.members import champion, exploitability, fit_ratings
    from c4core.league.store import LocalStore
    from c4core.learners.net import NetPlayer

    torch.set_num_threads(1)
    suite_path = str(args.suite or default_suite_path())
    out: dict[str, Any] = {"arms": {}}
    champions: dict[str, NetPlayer] = {}
    newest: dict[str, NetPlayer] = {}
    # every snapshot's suite rows first, on --jobs processes: the searched suite is the slow part
    jobs = {}
    last_of = {arm: _finished(Path(args.out) / arm) for arm in args.arms}
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        start = arm_config(args.arms[0]).alphazero_from - 1  # the base's last PPO snapshot, in every arm
        jobs["start", start] = pool.submit(suite_row, str(Path(args.out) / args.arms[0]), start, suite_path)
        for arm in args.arms:
            folder = Path(args.out) / arm
            g = arm_config(arm).alphazero_from
            while g <= last_of[arm] and LocalStore(folder).snapshot(g) is not None:
                jobs[arm, g] = pool.submit(suite_row, str(folder), g, suite_path)
                g += 1
        rows_of = {key: job.result() for key, job in jobs.items()}
    out["start"] = rows_of.pop(("start", start))
    for arm in args.arms:
        config = arm_config(arm)
        store = LocalStore(Path(args.out) / arm)
        # the generation cut off by the wall clock may have left a snapshot and some matches
        results = [
            r for r in store.results() if all((generation_of(p) or 0) <= last_of[arm] for p in (r.a, r.b))
        ]
        rows = [row for (a, _), row in sorted(rows_of.items()) if a == arm]
        g = config.alphazero_from + len(rows)
        fit = fit_ratings(results)
        best = champion(fit)
        champions[arm] = NetPlayer(store.snapshot(generation_of(best)).build("cpu"), name=f"{arm}:{best}")
        curve = {h: exploitability(results, h) for h in range(2, g)}
        out["arms"][arm] = {
            "suite": rows,
            "champion": best,
            "exploitability": {h: round(v, 4) for h, v in curve.items() if v is not None},
        }
        newest[arm] = NetPlayer(store.snapshot(g - 1).build("cpu"), name=f"{arm}:gen{g - 1}")
    # the champions, and each arm's newest snapshot: an arm whose AlphaZero generations never
    # out-rate the base keeps the base's champion, which says nothing about those generations
    for key, players in (("head_to_head", champions), ("newest_head_to_head", newest)):
        names = list(players)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                r = play_match(players[a], players[b], 400, seed=0, opening_plies=4)
                out.setdefault(key, []).append(
                    {"a": players[a].name, "b": players[b].name, "win": r.total.win, "draw": r.total.draw,
                     "loss": r.total.loss}
                )  # fmt: skip
    text = json.dumps(out, indent=1)
    print(text)
    (Path(args.out) / "evaluation.json").write_text(text)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("base", help="copy a finished league from MLflow into a folder")
    b.add_argument("--tracking-uri", required=True)
    b.add_argument("--league", required=True)
    b.add_argument("--out", required=True)
    a = sub.add_parser("arm", help="run one arm for a fixed wall time")
    a.add_argument("arm", choices=list(ARMS))
    a.add_argument("--base", help="the base's folder (not needed with --resume)")
    a.add_argument("--out", required=True)
    a.add_argument("--minutes", type=float, default=30.0)
    a.add_argument("--resume", action="store_true", help="go on from where the arm in --out stopped")
    a.add_argument("--ranks", type=int, default=None, help="the AlphaZero learner's ranks (the recipe's: 2)")
    a.add_argument("--seed", type=int, default=0, help="the league's seed (pass the same when resuming)")
    r = sub.add_parser("_run", help=argparse.SUPPRESS)
    r.add_argument("arm", choices=list(ARMS))
    r.add_argument("folder")
    r.add_argument("--spent", type=float, default=0.0)
    r.add_argument("--ranks", type=int, default=None)
    r.add_argument("--seed", type=int, default=0)
    e = sub.add_parser("evaluate", help="score every arm")
    e.add_argument("--out", required=True)
    e.add_argument("--suite", default=None)
    e.add_argument("--jobs", type=int, default=2, help="processes scoring snapshots (default: 2)")
    e.add_argument("arms", nargs="+", choices=list(ARMS))
    args = p.parse_args()
    if args.cmd == "arm" and not (args.resume or args.base):
        p.error("arm: --base is required unless --resume")
    return {"base": cmd_base, "arm": cmd_arm, "_run": cmd_run, "evaluate": cmd_evaluate}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
