"""Leagues side by side on one tracking store: start them at once, and check what they left.

Shared by `tests/test_lease.py` (one round) and `benchmarks/side_by_side.py` (many rounds, and the
failures an older tree shows). A league's result does not depend on its name (the training key
leaves it out), so a league run alone under one name is the reference for every league of the
same seed.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from mlflow.entities import ViewType
from mlflow.tracking import MlflowClient

from c4core.config import PROFILES
from c4core.tracking.champion import champion_history
from c4core.tracking.reports import open_league
from c4core.tracking.store import CHAMPION_ALIAS, MODEL_NAME, Tracking
from c4core.tracking.versions import current_champion

REPO = Path(__file__).resolve().parents[1]
GATING_SCORE = PROFILES["smoke"].gating_score  # the leagues here are smoke leagues


def league_command(uri: str, name: str, seed: int, generations: int = 2) -> list[str]:
    """`c4 league`: a smoke league, one torch thread, no suite, its ladder as JSON."""
    return [
        sys.executable, "-m", "c4core.cli", "league", "--profile", "smoke", "--name", name,
        "--seed", str(seed), "--generations", str(generations), "--tracking-uri", uri,
        "--no-suite", "--json",
    ]  # fmt: skip


def start(command: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = os.environ | {"MLFLOW_CONFIGURE_LOGGING": "false", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish_all(procs: Sequence[subprocess.Popen[str]], timeout: float = 600) -> list[tuple[int, str, str]]:
    """Each process's exit code, stdout and stderr (killing any still running at `timeout`)."""
    out = []
    for p in procs:
        try:
            stdout, stderr = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, stderr = p.communicate()
        out.append((p.returncode, stdout, stderr))
    return out


def league_state(tracking: Tracking, name: str) -> dict[str, Any]:
    """What a league produced, independent of timing: each snapshot's tensors (a digest), each
    match record (less its seconds), and the last Elo ladder."""
    store = open_league(tracking, name)
    snapshots = {}
    for g in range(1, store.config.generations + 1):
        ckpt = store.snapshot(g)
        assert ckpt is not None, f"league {name} has no gen{g}"
        digest = hashlib.sha256()
        for key, tensor in sorted(ckpt.model.items()):
            digest.update(
                key.encode() + tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes()
            )
        snapshots[f"gen{g}"] = digest.hexdigest()
    records = sorted(
        json.dumps({k: v for k, v in r.to_record().items() if k != "seconds"}, sort_keys=True)
        for r in store.results()
    )
    last = store.config.generations  # the ladder is logged at step = generation
    ladder = {
        k: m.value
        for k in store.client.get_run(store.league_run_id).data.metrics
        if k.startswith("elo/")
        for m in store.client.get_metric_history(store.league_run_id, k)
        if m.step == last
    }
    return {"snapshots": snapshots, "matches": records, "ladder": ladder}


def title_problems(tracking: Tracking) -> list[str]:
    """What is wrong with how the registry-wide title moved, across every league in the store:
    - each title change, taken from a holder of another league, needs a recorded gating match of
      the challenger against exactly that holder, with a winning score;
    - the changes form one chain from no holder to today's: two taken from one holder means two
      leagues took it from the same holder, one of them no longer the holder;
    - no history row is lost: every version that held the title (tag ``champion_since``) and
      every gating match has its row."""
    client: MlflowClient = tracking.client()
    exp = client.get_experiment_by_name(tracking.experiment)
    if exp is None:
        return ["no experiment"]
    runs = client.search_runs([exp.experiment_id], "tags.`c4.kind` = 'league'", ViewType.ACTIVE_ONLY)
    rows = []
    for run in runs:
        store = open_league(tracking, run.data.tags["league"], run.data.tags["config_hash"])
        rows += [r | {"league": store.config.name} for r in champion_history(store)]
    versions = {int(v.version): v for v in client.search_model_versions(f"name = '{MODEL_NAME}'")}
    gatings = client.search_runs([exp.experiment_id], "tags.`c4.kind` = 'gating'", ViewType.ACTIVE_ONLY)
    recorded = {
        (int(g.data.tags["challenger_version"]), int(g.data.tags["champion_version"])): g.data.metrics[
            "score"
        ]
        for g in gatings
        if g.data.tags.get("c4.complete") == "true"
    }
    problems = []
    taken: dict[int | None, dict[str, Any]] = {}
    for row in (r for r in rows if r["title"]):
        prev = row["previous_version"]
        if prev in taken:
            problems.append(
                f"v{row['version']} and v{taken[prev]['version']} both took the title from v{prev}"
            )
        taken[prev] = row
        if prev is not None and versions[prev].tags["league"] != row["league"]:
            score = recorded.get((row["version"], prev))
            if score is None or score < GATING_SCORE:
                problems.append(f"v{row['version']} took the title from v{prev} with gating score {score}")
    chain, holder = 0, None
    while holder in taken and chain <= len(taken):
        holder, chain = taken[holder]["version"], chain + 1
    if chain != len(taken):
        problems.append(f"the title changes are not one chain: {chain} of {len(taken)} follow on")
    champ = current_champion(client, MODEL_NAME)
    if (champ and int(champ.version)) != holder:
        problems.append(
            f"alias {CHAMPION_ALIAS!r} is on v{champ and champ.version}, the history ends at v{holder}"
        )
    for v, mv in versions.items():
        if "champion_since" in mv.tags and not any(r["title"] and r["version"] == v for r in rows):
            problems.append(f"v{v} held the title with no history row")
    for challenger, holder_v in recorded:
        if not any(r["version"] == challenger and r["previous_version"] == holder_v for r in rows):
            problems.append(f"gating v{challenger} vs v{holder_v} has no history row")
    return problems
