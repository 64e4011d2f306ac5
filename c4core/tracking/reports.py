"""The league report in MLflow. `c4core.report` draws a report from league data and knows nothing
of MLflow; this module reads a league back from MLflow into that data (`open_league` finds a
league by name, `read_league` reads it) and logs the report it draws (`log_report`, or
`log_league_report`, which only warns if drawing fails).
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

from mlflow.entities.model_registry import ModelVersion

from c4core.config import (
    MAIN,
    LeagueConfig,
    snapshot_name,
)
from c4core.report import LeagueData, ReportFiles, build_report
from c4core.tracking.scores import NASH_CONV, _run_metrics
from c4core.tracking.store import (
    COMPLETE,
    REPORT_DIR,
    REPORT_TAG,
    VERSION_TAG,
    MLflowStore,
    Tracking,
    download_checkpoint,
    run_member,
    search_runs,
)


def open_league(tracking: Tracking, league: str, config_hash: str | None = None) -> MLflowStore:
    """The store of a league in MLflow, found by name alone (the newest config, unless one is given).

    The config comes from a finished snapshot's checkpoint, so nothing but MLflow is needed.
    Raises `ValueError` when there is no such league or it has no finished generation yet.
    """
    for what, value in (("league", league), ("config hash", config_hash or "x")):
        if not value or not all(ch.isalnum() or ch in "-_." for ch in value):
            raise ValueError(f"{what} {value!r} must be letters, digits, '-', '_' or '.'")
    client = tracking.client()
    exp = client.get_experiment_by_name(tracking.experiment)
    if exp is None:
        raise ValueError(f"no experiment {tracking.experiment!r} at {tracking.tracking_uri}")
    key = {"league": league} | ({"config_hash": config_hash} if config_hash else {})
    runs = search_runs(client, exp.experiment_id, "league", key)
    if not runs:
        raise ValueError(f"no league {league!r} in {tracking.tracking_uri}")
    chash = runs[-1].data.tags["config_hash"]  # oldest first: the last is the newest
    key = {"league": league, "config_hash": chash, COMPLETE: "true"}
    gens = search_runs(client, exp.experiment_id, "generation", key)
    if not gens:
        raise ValueError(f"league {league!r} has no finished generation yet")
    ckpt = download_checkpoint(client, gens[0], run_member(gens[0]))
    config = LeagueConfig.from_dict(ckpt.train_config)
    if config.training_hash() != chash:
        raise ValueError(f"league {league!r}: the snapshot's config does not hash to {chash}")
    return MLflowStore(tracking, config)


def read_league(store: MLflowStore) -> LeagueData:
    """A league kept in MLflow, as the report's data: match records from the match runs, the
    training metrics and ``suite/*`` scores from the generation runs, the store for snapshots."""
    metrics: dict[int, list[dict[str, float]]] = {}
    suite: dict[int, dict[str, float]] = {}
    exact: dict[int, float] = {}
    g = 1
    while (run := store.generation_run(g)) is not None:  # generations run in order
        metrics[g] = _run_metrics(store, run)
        logged = store.client.get_run(run.info.run_id).data.metrics  # fresh: suite and NashConv come late
        found = {k: v for k, v in logged.items() if k.startswith("suite/")}
        if found:
            suite[g] = found
        if NASH_CONV in logged:
            exact[g] = logged[NASH_CONV]
        g += 1
    role_metrics = {
        snapshot_name(h, role): _run_metrics(store, store.generation_run(h, role))
        for h in range(2, g + 1)  # an exploiter may finish before its generation's main agent
        for role in store.config.roles_at(h)
        if role != MAIN and store.generation_run(h, role) is not None
    }
    source = f"{store.tracking.tracking_uri}, experiment {store.tracking.experiment}"
    return LeagueData(
        store.config.name,
        store.config,
        store.results(),
        metrics,
        suite,
        source,
        store,
        role_metrics=role_metrics,
        nash_conv=exact,
    )


def log_report(store: MLflowStore, version: ModelVersion | None = None, seed: int = 0) -> ReportFiles:
    """Draw the league's report and log it to the league run's ``report/`` artifacts (overwriting
    the last one, so the run always shows the latest). With `version` (the champion's), also log
    it to that version's source run and link it from the version's tag ``report`` and its
    description. The returned paths live in a temporary folder that is gone once this returns."""
    client = store.client
    with tempfile.TemporaryDirectory() as tmp:
        files = build_report(read_league(store), Path(tmp) / REPORT_DIR, seed=seed)
        client.log_artifacts(store.league_run_id, str(files.folder), REPORT_DIR)
        client.set_tag(store.league_run_id, REPORT_TAG, f"{REPORT_DIR}/report.html")
        if version is not None and version.run_id:
            client.log_artifacts(version.run_id, str(files.folder), REPORT_DIR)
            uri = f"{client.get_run(version.run_id).info.artifact_uri}/{REPORT_DIR}/report.html"
            client.set_model_version_tag(version.name, version.version, VERSION_TAG, uri)
            # a link into the MLflow UI (it resolves against the page showing the description, so
            # it opens on any tracking server; the query picks the model-training view), and the
            # artifact URI for tools
            run_page = f"#/experiments/{store.experiment_id}/runs/{version.run_id}"
            page = f"{run_page}/artifacts/{REPORT_DIR}/report.html?workflowType=machine_learning"
            line = f"League report: [report.html]({page}) (`{uri}`)"
            desc = version.description or ""
            if line not in desc:
                kept = [ln for ln in desc.splitlines() if not ln.startswith("League report: ")]
                while kept and not kept[-1].strip():
                    kept.pop()
                client.update_model_version(
                    version.name, version.version, "\n".join([*kept, "", line]).strip()
                )
    return files


def log_league_report(store: MLflowStore, champion: ModelVersion | None = None) -> None:
    """`log_report` onto the league run, and onto `champion`'s version when given. The report is
    a view of the records: if it fails to draw, this warns and the league goes on."""
    try:
        log_report(store, champion)
    except Exception as e:
        warnings.warn(f"the league report was not logged: {type(e).__name__}: {e}", stacklevel=2)
