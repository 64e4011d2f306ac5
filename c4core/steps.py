"""The league's steps as one orchestrator task each: the single entry point of both launchers.

The Airflow DAG (``dags/connect4_league.py``) runs a generation as five tasks, and each task is
one function here::

    pick(spec, g)              -> {"spec", "generation", "opponents", "requests", "pairs", ...}
    train(request)             -> {"generation", "member", "role", "run_id", ...}  (one role)
    train_all(requests)        -> [train's result for each role], trained in parallel processes
    match(spec, member, other) -> the match record (W/D/L from `member`'s side)
    fit(spec, g)               -> {"ratings", "ci95", "champion", "ladder"}
    register(spec, g, ...)     -> {"version", "champion", "champion_version", ...}

In-process, a task calls the function directly: one task trains every role of the generation
at once (`train_all`). On Kubernetes, one trainer pod per role runs `train` through this
module's command line, and the result becomes the task's XCom::

    python -m c4core.steps train --request '{"spec": ..., "generation": 3, "role": "main",
        "opponents": [...]}' --xcom /airflow/xcom/return.json

A ``spec`` is the DAG's params, resolved: league name, profile, generations, iterations, games,
match games (`resolve`). Every step keeps its state in MLflow through `c4core.tracking.store.MLflowStore`,
whose keys make each step idempotent: a retried or rerun task reuses what the store already holds.
Nothing here imports Airflow, and torch and mlflow are imported only inside the steps, so the DAG
file can import this module while it parses. ``MLFLOW_CONFIGURE_LOGGING=false`` is set before
mlflow is imported, so MLflow leaves the host's (Airflow's) logging alone.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from c4core.config import generation_of, league_config, role_of, snapshot_name
from c4core.entry import (
    closing_summary,
    iteration_line,
    match_line,
    native_bfloat16,
    parse_tags,
    quiet_mlflow,
    registry_line,
    tracking_uri,
)
from c4core.games import ConnectFour, Game

if TYPE_CHECKING:
    from c4core.config import LeagueConfig

SPEC_KEYS = (
    "league",
    "profile",
    "generations",
    "iterations",
    "games",
    "match_games",
    "roles",
    "precision",
    "game",
    "learner",
    "value_target",
    "recipe",
)
"""The keys of a resolved spec: the DAG's params, less the executor."""
_NUMBERS = ("generations", "iterations", "games", "match_games")
XCOM_RETURN = "/airflow/xcom/return.json"
"""Where a KubernetesPodOperator's sidecar reads the task's return value: the one place the path is
written (the DAG's trainer pod passes it as ``--xcom``; a test checks it against the provider's)."""


def suite_path(game: Game = ConnectFour()) -> str | None:
    """The suite every registered snapshot is scored on: $C4_SUITE (set but empty: none), else
    ``../shared/suite/dev.jsonl`` next to the repo when it exists, as `c4 league`. Only a league
    of Connect Four on the standard board has one: the suites hold its positions, so one Airflow
    whose $C4_SUITE is set also runs leagues of other games, unscored."""
    if game != ConnectFour():
        return None
    if "C4_SUITE" in os.environ:
        return os.environ["C4_SUITE"] or None
    from c4core.games.connect4.suite import default_suite_path

    path = default_suite_path(game)
    return str(path) if path is not None else None


def resolve(params: Mapping[str, Any]) -> dict[str, Any]:
    """The DAG's params as a spec: profile defaults filled in, and checked by building the config
    (a ValueError names the bad value). Touches no store."""
    unknown = set(params) - set(SPEC_KEYS) - {"executor"}
    if unknown:
        raise ValueError(f"unknown league settings: {', '.join(sorted(unknown))}")
    spec = {k: params.get(k) for k in SPEC_KEYS}
    spec["league"] = spec["league"] or "default"
    spec["profile"] = spec["profile"] or "cpu"
    recipe = spec["recipe"] or {}
    if not isinstance(recipe, Mapping):
        example = '{"alphazero.solve_from": 1}'
        raise ValueError(
            f"recipe must be an object of field paths and values, like {example}, got {recipe!r}"
        )
    spec["recipe"] = dict(recipe)
    config = _config(spec, "cpu")
    spec["game"] = config.variant
    spec["learner"] = config.main_learner
    spec["value_target"] = config.net.value_target
    spec["generations"] = config.generations
    spec["roles"] = list(config.roles)
    # "auto" is resolved once, here, so that every task of the generation, and its pods, train
    # and play in the same precision whatever CPU they land on
    spec["precision"] = _config(spec).net.precision
    return spec


def _config(spec: Mapping[str, Any], device: str | None = None) -> LeagueConfig:
    """The `LeagueConfig` of a spec, on `device` (None: the profile's device)."""
    settings: dict[str, Any] = {k: int(spec[k]) for k in _NUMBERS if spec.get(k) is not None}
    roles = spec.get("roles")
    if roles:
        if isinstance(roles, str) or not all(isinstance(r, str) for r in roles):
            raise ValueError(f"roles must be a list of role names, got {roles!r}")
        settings["roles"] = tuple(roles)
    return league_config(
        spec["profile"],
        spec["league"],
        device=device,
        precision=spec.get("precision"),
        native_bfloat16=native_bfloat16(),
        game=spec.get("game") or None,
        learner=spec.get("learner") or None,
        value_target=spec.get("value_target") or None,
        recipe=spec.get("recipe") or None,
        **settings,
    )


def _device(spec: Mapping[str, Any], training: bool) -> str:
    """Where a step runs: CUDA when the profile asks for it and there is one. A gpu-profile
    training step with no CUDA is an error; matches fall back to the CPU."""
    import torch

    wanted = _config(spec).device
    if not wanted.startswith("cuda"):
        return "cpu"
    if torch.cuda.is_available():
        return wanted
    if training:
        raise ValueError(
            f"profile {spec['profile']!r} trains on CUDA and this machine has none: choose profile "
            "cpu or smoke, or run the DAG with C4_EXECUTOR=kubernetes to train on a GPU pod"
        )
    return "cpu"


def progress(line: str) -> None:
    """One progress line: to stdout, which Airflow keeps as the task's log (the UI shows it),
    and to the file descriptor $C4_PROGRESS_FD names when set: `make league` points it at the
    terminal while Airflow's own log lines go to a file."""
    print(line, flush=True)
    fd = os.environ.get("C4_PROGRESS_FD")
    if fd:
        os.write(int(fd), (line + "\n").encode())


def _torch_threads() -> None:
    """$C4_TORCH_THREADS (default 1), for the steps that compute with torch (training and
    matches): small forwards scale badly across threads, and the learners of a generation
    train in processes of their own (the trainer pod sets its CPU count)."""
    import torch

    torch.set_num_threads(int(os.environ.get("C4_TORCH_THREADS") or 1))


STEP_LEASE_TTL = 1200.0
"""Seconds a DAG run's lease on its league lasts without a heartbeat ($C4_LEASE_TTL overrides).
Only a task's own process heartbeats, so this spans the gaps between tasks, the start of a
trainer pod included (`startup_timeout_seconds`, 900 s): a second run of the league waits this
long after the first run failed."""


def run_owner(tags: Mapping[str, str] | None) -> str | None:
    """Who writes a league from a task: its DAG run (``airflow <dag_id> <run_id>``), the one
    owner of every task and trainer pod of that run; None outside Airflow."""
    if not tags or "airflow.run_id" not in tags:
        return None
    return f"airflow {tags.get('airflow.dag_id', '?')} {tags['airflow.run_id']}"


@contextmanager
def _store(
    spec: Mapping[str, Any], device: str, tags: Mapping[str, str] | None
) -> Iterator[tuple[Any, LeagueConfig]]:
    """The league's store, holding the DAG run's lease on it (`run_owner`; adopted when an
    earlier task of the run took it) while the step runs."""
    quiet_mlflow()
    from c4core.tracking.store import MLflowStore, Tracking

    config = _config(spec, device)
    ttl = float(os.environ.get("C4_LEASE_TTL") or STEP_LEASE_TTL)
    store = MLflowStore(Tracking.for_uri(tracking_uri()), config, tags, run_owner(tags), ttl)
    try:
        yield store, config
    finally:
        store.close()  # the run's later tasks go on under the same lease


def _results_upto(store: Any, generation: int) -> list[Any]:
    """Match records among the bots and snapshots up to `generation`: a generation's fit stays
    the same when its tasks are rerun after later generations have played."""
    from c4core.league.members import results_upto

    return results_upto(store.results(), generation)


# ---- the steps -----------------------------------------------------------------------------------
def pick(
    spec: Mapping[str, Any],
    generation: int,
    tags: Mapping[str, str] | None = None,
    train_here: bool = True,
) -> dict[str, Any]:
    """Each role's opponents in `generation` (``opponents``: the main agent's), one trainer
    request per role (``requests``, JSON), and the pairings the new snapshots will play
    (``pairs``).

    `train_here`: training runs on this machine, so a profile that needs CUDA must find it
    (checked before the store is touched)."""
    from c4core.league.generation import plan_generation
    from c4core.league.members import new_pairs

    spec = resolve(spec)
    _device(spec, training=train_here)
    with _store(spec, "cpu", tags) as (store, config):
        plan = plan_generation(store, config, generation)
        requests = [
            json.dumps(
                {"spec": spec, "generation": generation, "role": role, "opponents": opp}, sort_keys=True
            )
            for role, opp in plan.items()
        ]
        return {
            "spec": spec,
            "generation": generation,
            "opponents": plan["main"],
            "requests": requests,
            "pairs": [list(pair) for pair in new_pairs(store, config, generation)],
        }


def _request(request: Mapping[str, Any] | str) -> tuple[dict[str, Any], int, str, list[str]]:
    """A trainer request's spec, generation, role and opponents (a request from before roles
    trains the main agent). A ValueError names what is wrong."""
    if isinstance(request, str):
        request = json.loads(request)
    if not isinstance(request, Mapping) or not {"spec", "generation", "opponents"} <= request.keys():
        raise ValueError("a trainer request needs spec, generation and opponents")
    role = str(request.get("role", "main"))
    spec, g = resolve(request["spec"]), int(request["generation"])
    if role not in _config(spec, "cpu").roles_at(g):
        raise ValueError(f"role {role!r} does not train in generation {g} of this league")
    return spec, g, role, [str(o) for o in request["opponents"]]


def _announce(config: LeagueConfig, g: int, role: str, opponents: Sequence[str], reused: bool) -> None:
    member = snapshot_name(g, role)
    if reused:
        progress(f"{member}: trained already, reusing its snapshot")
    else:
        what = f"{config.learner(g, role)}, {config.iterations(g, role)} iterations"
        progress(f"{member} ({role}): {what} against {', '.join(opponents)}")


def _trained(store: Any, g: int, role: str, device: str, reused: bool, seconds: float) -> dict[str, Any]:
    run = store.generation_run(g, role)
    assert run is not None  # the snapshot was stored
    return {
        "generation": g,
        "role": role,
        "member": snapshot_name(g, role),
        "run_id": run.info.run_id,
        "experiment_id": store.experiment_id,
        "league_run_id": store.league_run_id,
        "device": device,
        "reused": reused,
        "seconds": round(seconds, 3),
    }


def _iteration_printer(config: LeagueConfig) -> Callable[[str, int, dict[str, float]], None]:
    def on_iteration(member: str, i: int, metrics: dict[str, float]) -> None:
        g, role = generation_of(member), role_of(member)
        assert g is not None and role is not None
        progress(iteration_line(member, i, config.iterations(g, role), metrics))

    return on_iteration


def train(request: Mapping[str, Any] | str, tags: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Train (or reuse) one role's snapshot of a generation, streaming metrics to its MLflow
    run: the trainer pod's step."""
    from c4core.league.processes import train_generation

    spec, g, role, opponents = _request(request)
    device = _device(spec, training=True)
    _torch_threads()
    with _store(spec, device, tags) as (store, config):
        start = time.perf_counter()
        reused = store.generation_run(g, role) is not None
        _announce(config, g, role, opponents, reused)
        printer = _iteration_printer(config)
        member = snapshot_name(g, role)
        train_generation(store, config, g, opponents, lambda i, m: printer(member, i, m), role)
        return _trained(store, g, role, device, reused, time.perf_counter() - start)


def train_all(
    requests: Sequence[Mapping[str, Any] | str], tags: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """Train (or reuse) every role's snapshot of one generation at once, each learner in a
    process of its own (`c4core.league.processes.train_learners`): the in-process DAG's step."""
    from c4core.league.processes import train_learners

    parsed = [_request(r) for r in requests]
    if not parsed or len({(json.dumps(spec, sort_keys=True), g) for spec, g, _, _ in parsed}) != 1:
        raise ValueError("train_all takes the requests of one generation of one league")
    spec, g = parsed[0][0], parsed[0][1]
    device = _device(spec, training=True)
    _torch_threads()
    with _store(spec, device, tags) as (store, config):
        start = time.perf_counter()
        reused = {role: store.generation_run(g, role) is not None for _, _, role, _ in parsed}
        for _, _, role, opponents in parsed:
            _announce(config, g, role, opponents, reused[role])
        plan = {role: opponents for _, _, role, opponents in parsed}
        train_learners(store, config, g, plan, _iteration_printer(config))
        seconds = time.perf_counter() - start
        return [_trained(store, g, role, device, reused[role], seconds) for role in plan]


def match(
    spec: Mapping[str, Any], member: str, opponent: str, tags: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Play (or reuse) the match of snapshot `member` against `opponent`; its record."""
    from c4core.league.generation import play_league_match

    spec = resolve(spec)
    _torch_threads()
    with _store(spec, _device(spec, training=False), tags) as (store, config):
        result = play_league_match(store, config, member, opponent)
        progress(match_line(result))
        return result.to_record()


def fit(spec: Mapping[str, Any], generation: int) -> dict[str, Any]:
    """The joint Elo fit over every match among members up to `generation`."""
    from c4core.evaluation.elo import format_ladder
    from c4core.league.members import champion, fit_ratings

    spec = resolve(spec)
    with _store(spec, "cpu", None) as (store, _):
        elo = fit_ratings(_results_upto(store, generation))
        if elo is None:
            raise ValueError(f"league {spec['league']!r} has no match records up to generation {generation}")
        return elo.to_json() | {
            "generation": generation,
            "champion": champion(elo),
            "ladder": format_ladder(elo),
        }


def register(
    spec: Mapping[str, Any],
    generation: int,
    opponents: Sequence[str] = (),
    seconds: float = 0.0,
    tags: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Register the snapshot, score it on the suite (`suite_path`), write Elo into every version,
    promote the champion, and mark the generation finalized (`c4core.tracking.runs.after_generation`;
    a no-op once finalized). After the league's last generation, also draw the final report onto
    the champion, finish the run, and release the DAG run's lease on the league."""
    from c4core.league.generation import GenerationReport
    from c4core.league.members import champion, fit_ratings
    from c4core.tracking.reports import log_league_report
    from c4core.tracking.runs import after_generation
    from c4core.tracking.versions import find_version, member_versions

    spec = resolve(spec)
    with _store(spec, "cpu", tags) as (store, config):
        results = _results_upto(store, generation)
        elo = fit_ratings(results)
        if elo is None or store.generation_run(generation) is None:
            raise ValueError(f"generation {generation} of league {spec['league']!r} has not been played")
        member = snapshot_name(generation)
        new = {snapshot_name(generation, role) for role in config.roles_at(generation)}
        report = GenerationReport(
            generation=generation,
            opponents=list(opponents),
            matches=[r for r in results if new & {r.a, r.b}],
            fit=elo,
            champion=champion(elo),
            seconds=float(seconds),
        )
        champ = after_generation(store, report, suite_path(config.board))
        if generation >= spec["generations"]:  # the last one: end as `registry.run_league_tracked` does
            log_league_report(store, champ)
            store.set_league_status("FINISHED")
        version = find_version(store, generation)
        assert version is not None  # after_generation registered it
        run = store.generation_run(generation)
        versions = {m: int(v.version) for m, v in member_versions(store).items() if m in new}
        if generation >= spec["generations"]:
            store.release()  # the league is done: another run of it may start
        return {
            "versions": versions,
            "generation": generation,
            "member": member,
            "model_name": version.name,
            "version": int(version.version),
            "run_id": run.info.run_id if run is not None else None,
            "experiment_id": store.experiment_id,
            "league_run_id": store.league_run_id,
            "elo": round(elo.ratings[member], 1),
            "champion": report.champion,
            "champion_version": int(champ.version),
        }


def summary(spec: Mapping[str, Any]) -> str:
    """The final ladder, the champion, its score against the game's baseline bot (`tactical` in
    Connect Four) and its registry version."""
    from c4core.league.members import champion, fit_ratings

    spec = resolve(spec)
    with _store(spec, "cpu", None) as (store, config):
        results = _results_upto(store, config.generations)
        elo = fit_ratings(results)
        if elo is None:
            raise ValueError(f"league {spec['league']!r} has no match records yet")
        best = champion(elo)
        return closing_summary(elo, best, results, registry_line(store, best), config.bots[-1])


# ---- command line (the trainer pod's entry point) ------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m c4core.steps", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="step", required=True)
    tr = sub.add_parser("train", help="train one generation (the trainer pod runs this)")
    tr.add_argument("--request", required=True, help="JSON: spec, generation, opponents")
    mt = sub.add_parser("match", help="play a new snapshot against one member")
    mt.add_argument("--spec", required=True, help="JSON spec (the DAG's params)")
    mt.add_argument("--member", required=True, help="the new snapshot, e.g. gen3 or gen3-me")
    mt.add_argument("--opponent", required=True)
    sm = sub.add_parser("summary", help="print the final ladder and the champion")
    sm.add_argument("--spec", required=True, help="JSON spec (the DAG's params)")
    for s in (tr, mt):
        s.add_argument("--tag", action="append", default=[], metavar="KEY=VALUE", help="tag MLflow runs")
        s.add_argument("--xcom", metavar="PATH", help=f"also write the result here (pods: {XCOM_RETURN})")
    args = p.parse_args(argv)
    try:
        if args.step == "summary":
            print(summary(json.loads(args.spec)))
            return 0
        if args.step == "train":
            out = train(args.request, parse_tags(args.tag))
        else:
            out = match(json.loads(args.spec), args.member, args.opponent, parse_tags(args.tag))
    except ValueError as e:  # json.JSONDecodeError included
        print(f"c4core.steps {args.step}: error: {e}", file=sys.stderr)
        return 2
    text = json.dumps(out, sort_keys=True)
    if args.xcom:
        from c4core.league.store import atomic_write

        path = Path(args.xcom)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text)  # the sidecar never reads half a file
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
