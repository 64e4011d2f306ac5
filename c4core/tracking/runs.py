"""A league run tracked in MLflow: `run_league_tracked` runs the league on an `MLflowStore` and,
after every generation, the registry's steps (`after_generation`: register, score, refit, promote,
mark it finalized).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mlflow.entities.model_registry import ModelVersion

from c4core.config import (
    LeagueConfig,
    snapshot_name,
)
from c4core.league.generation import GenerationReport, run_generation
from c4core.tracking.champion import league_champion, promote_champion
from c4core.tracking.reports import log_league_report
from c4core.tracking.scores import log_exploitability, log_nash_conv, try_log_suite
from c4core.tracking.store import FINALIZED, MLflowStore
from c4core.tracking.versions import member_versions, register_snapshot, update_ratings


def after_generation(
    store: MLflowStore, report: GenerationReport, suite: str | Path | None = None
) -> ModelVersion:
    """Everything MLflow needs once a generation has played: register its snapshot, score it on its
    game's suite (`try_log_suite`: the file `suite` where the game reads one, Connect Four's, or the
    suite a game makes from the league's seed, Dots and Boxes'), refit Elo into every version's
    tags, log the ladder, promote the champion, mark it finalized. A finalized generation is only
    scored on a `suite` given now if it has not been yet. Returns the league's champion version
    (`promote_champion`), which need not hold the registry-wide title."""
    g = report.generation
    run = store.generation_run(g)
    assert run is not None  # run_generation stored it
    if run.data.tags.get(FINALIZED) != "true":
        registered = member_versions(store)
        for earlier in range(1, g + 1):
            for role in store.config.roles_at(earlier):
                member = snapshot_name(earlier, role)
                if member not in registered and store.generation_run(earlier, role) is not None:
                    register_snapshot(store, earlier, report.fit, role)
        try_log_suite(store, g, suite)  # before the report below, so its curve has this point
        update_ratings(store, report.fit, g)
        log_exploitability(store, g)
        log_nash_conv(store, g)
        promote_champion(store, report.champion, report.fit, g)
        store.client.set_tag(run.info.run_id, FINALIZED, "true")
        run.data.tags[FINALIZED] = "true"  # the cached copy too
        log_league_report(store)  # live: redrawn once per newly finalized generation
    elif suite is not None:
        try_log_suite(store, g, suite)  # a league finalized before it had a suite: the final report shows it
    champ = league_champion(store)
    assert champ is not None  # promote_champion set it
    return champ


@dataclass(frozen=True)
class TrackedReport:
    """A generation's report plus the champion's registry version after it."""

    report: GenerationReport
    champion_version: ModelVersion = field(compare=False)


def run_generation_tracked(
    store: MLflowStore,
    config: LeagueConfig,
    generation: int,
    on_iteration: Callable[[str, int, dict[str, float]], None] | None = None,
    suite: str | Path | None = None,
) -> TrackedReport:
    """`c4core.league.generation.run_generation`, with metrics streamed to the generation's run and the
    registry steps after it (scoring the snapshot on `suite`, a suite file, when given). Safe to
    rerun: finished work is reused, never redone."""

    report = run_generation(store, config, generation, on_iteration)  # it logs each iteration
    return TrackedReport(report, after_generation(store, report, suite))


def run_league_tracked(
    store: MLflowStore,
    config: LeagueConfig,
    on_generation: Callable[[GenerationReport], None] | None = None,
    on_iteration: Callable[[str, int, dict[str, float]], None] | None = None,
    suite: str | Path | None = None,
) -> TrackedReport:
    """Every generation in order on MLflow, resuming whatever it already holds; each snapshot
    is scored on `suite` (a suite file) when one is given."""
    store.set_league_status("RUNNING")
    tracked = None
    for g in range(1, config.generations + 1):
        tracked = run_generation_tracked(store, config, g, on_iteration, suite)
        if on_generation is not None:
            on_generation(tracked.report)
    assert tracked is not None
    log_league_report(store, tracked.champion_version)  # the final report, on the champion too
    store.set_league_status("FINISHED")
    return tracked
