"""What each generation's snapshots are scored on, logged to MLflow: the solver-labelled suite,
exact NashConv where the game enumerates, and the main exploiter's score against the champion.

Suite scores. Each main-agent snapshot's raw network (greedy, no search) is scored on its
game's suite (`Game.suite`, a `c4core.games.Suite`): for Connect Four a suite file, when one is
given (`after_generation`'s, `run_generation_tracked`'s and `run_league_tracked`'s ``suite``
argument; None, the default, scores nothing), for Dots and Boxes the suite its exact solver
labels, made from the league's seed. The ``suite/*`` metrics go on the generation run, where
`c4core.report` draws them as a curve, and the headline numbers become tags of the version
(`log_suite`). A version that already has them is not scored again; a suite that cannot be
read, or does not fit the board, only warns.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

from mlflow.entities import Metric, Run

from c4core.config import (
    MAIN,
    TABULAR_MOVES,
    snapshot_name,
)
from c4core.games import Suite
from c4core.league.members import champion_after, exploitability, iterations_to_beat
from c4core.report import is_plotted
from c4core.tracking.store import MLflowStore
from c4core.tracking.versions import find_version


def log_suite(store: MLflowStore, generation: int, suite: Suite) -> dict[str, float] | None:
    """Score snapshot `generation`'s main agent as it plays its matches (greedy, no search) on
    its game's `suite`, log the ``suite/*`` metrics on its generation run and the headline ones
    as tags of its version (`Suite.tags`: rates to 4 decimals, the count as a whole number, last),
    with ``suite_file``, the suite's name.

    Returns the metrics, or None when nothing was done: the version is not registered, or it
    already has the tags. The tags come last, so after a crash in between, a rerun scores again
    (greedy: the same numbers) and adds the tags without logging the metrics twice."""
    import math

    version = find_version(store, generation)
    if version is None or all(t in version.tags for t in suite.tags.values()):
        return None
    run, ckpt = store.generation_run(generation), store.snapshot(generation)
    assert run is not None and ckpt is not None  # a registered version has a finished run
    metrics = suite.score(ckpt.player(snapshot_name(generation)))
    logged = store.client.get_run(run.info.run_id).data.metrics  # fresh: the cached run predates it
    if not any(key in logged for key in suite.tags):
        now = int(time.time() * 1000)
        batch = [Metric(k, v, now, 0) for k, v in metrics.items() if not math.isnan(v)]  # empty buckets
        store.client.log_batch(run.info.run_id, metrics=batch)
    *rates, count = suite.tags.items()
    tags = {tag: f"{metrics[key]:.4f}" for key, tag in rates} | {"suite_file": suite.name}
    tags[count[1]] = str(int(metrics[count[0]]))  # last: its presence marks the step done
    for k, v in tags.items():
        store.client.set_model_version_tag(version.name, version.version, k, v)
    return metrics


NASH_CONV = "nash_conv"
"""Version tag and generation-run metric: the snapshot's exact NashConv (`log_nash_conv`); on
the league run, a tag saying why none is computed, where the board is too large."""


NASH_CONV_SAMPLING = "nash_conv/sampling"
"""Generation-run metric: the snapshot's exact NashConv as it plays in training games, sampling
(a network at its temperature, a table ε-greedy), beside `NASH_CONV`, greedy as in its matches."""


LEAGUE_NASH_CONV = "league/nash_conv"
"""League-run metric (step = generation): the NashConv of that generation's main-agent snapshot."""


def log_nash_conv(store: MLflowStore, generation: int) -> dict[str, dict[str, float]]:
    """On a game small enough to enumerate (`LeagueConfig.enumerable`), the exact NashConv
    of every role's snapshot of `generation` as it plays its league matches (greedy;
    `c4core.evaluation.exploitability`), and as it plays training games (`NASH_CONV_SAMPLING`): the
    ``nash_conv*`` metrics on its generation run, `NASH_CONV` on
    its version (to 4 decimals) and, for the main agent, `LEAGUE_NASH_CONV` on the league run.
    Returns what it computed, by member; a snapshot already tagged is skipped. The tag comes
    last, so a rerun after a crash in between computes again (the same numbers) without
    logging twice. On a larger game the league run's `NASH_CONV` tag says why there is none."""
    from c4core.evaluation.exploitability import nash_conv, policy_of

    config = store.config
    if not config.enumerable:
        reason = f"not computed: {config.board.title} lasts over {TABULAR_MOVES} moves, too many positions"
        store.client.set_tag(store.league_run_id, NASH_CONV, reason)
        return {}
    done = {}
    for role in config.roles_at(generation):
        version, run = find_version(store, generation, role), store.generation_run(generation, role)
        if version is None or run is None or NASH_CONV in version.tags:
            continue
        member = snapshot_name(generation, role)
        ckpt = store.snapshot(generation, role)
        assert ckpt is not None  # a finished run holds its snapshot
        result = nash_conv(config.board, policy_of(ckpt.player(member), config.board))
        # and as it plays in other members' training games: sampling, at its play temperature
        sampling = nash_conv(config.board, policy_of(ckpt.player(member, greedy=False), config.board))
        metrics = result.metrics() | {NASH_CONV_SAMPLING: sampling.value}
        now = int(time.time() * 1000)
        if not metrics.keys() & store.client.get_run(run.info.run_id).data.metrics.keys():
            store.client.log_batch(
                run.info.run_id, metrics=[Metric(k, v, now, 0) for k, v in metrics.items()]
            )
        if role == MAIN:
            logged = {m.step for m in store.client.get_metric_history(store.league_run_id, LEAGUE_NASH_CONV)}
            if generation not in logged:
                store.client.log_metric(store.league_run_id, LEAGUE_NASH_CONV, result.value, now, generation)
        store.client.set_model_version_tag(version.name, version.version, NASH_CONV, f"{result.value:.4f}")
        done[member] = metrics
    return done


def try_log_suite(store: MLflowStore, generation: int, path: str | Path | None) -> None:
    """`log_suite` on the league's game's suite (`Game.suite`: the file `path`, or one the game
    makes from the league's seed; nothing for a game with neither), but a suite that cannot be
    read or does not fit the board only warns: the scores are a view of the snapshot, and
    registering and promoting it must go on without them."""
    suite_of = getattr(store.config.board, "suite", None)
    try:
        suite = suite_of(path, store.config.seed) if suite_of is not None else None
        if suite is not None:
            log_suite(store, generation, suite)
    except ValueError as e:
        warnings.warn(f"{snapshot_name(generation)} was not scored on the suite: {e}", stacklevel=3)


EXPLOITABILITY = "league/exploitability"
"""League-run metric (step = generation): that generation's main exploiter's score against the
champion it trained on (`c4core.league.members.exploitability`)."""


TO_BEAT = "league/exploiter_iterations_to_55"
"""League-run metric (step = the generation a champion first faced the main exploiter): the
training iterations the main exploiter needed to beat that champion in at least 55% of its
training games (`c4core.league.members.iterations_to_beat`); logged once it has."""


def log_exploitability(store: MLflowStore, generation: int) -> None:
    """Log `EXPLOITABILITY` for `generation` and any `TO_BEAT` that its exploiter's training
    settled, each once per step (a rerun adds nothing)."""
    if "main-exploiter" not in store.config.roles_at(generation):
        return
    results = store.results()
    points: dict[str, dict[int, float]] = {}
    score = exploitability(results, generation)
    if score is not None:
        points[EXPLOITABILITY] = {generation: score}
    # only the current champion's count can change now (earlier ones were logged by earlier
    # generations), so only the generations since it was first trained on are fetched
    target = champion_after(results, generation - 1)
    first = generation
    while first > 2 and champion_after(results, first - 2) == target:
        first -= 1
    metrics = {
        g: _run_metrics(store, store.generation_run(g, "main-exploiter"))
        for g in range(first, generation + 1)
    }
    current = iterations_to_beat(results, store.config, metrics, generation)[-1:]
    points[TO_BEAT] = {
        row["from_generation"]: row["iterations"] for row in current if row["iterations"] is not None
    }
    now = int(time.time() * 1000)
    batch = []
    for key, by_step in points.items():
        logged = {m.step for m in store.client.get_metric_history(store.league_run_id, key)}
        batch += [Metric(key, float(v), now, step) for step, v in by_step.items() if step not in logged]
    if batch:
        store.client.log_batch(store.league_run_id, metrics=batch)


def _run_metrics(store: MLflowStore, run: Run | None) -> list[dict[str, float]]:
    """A generation run's per-iteration metrics that `c4core.report` plots or the league reads
    (``vs/*``), one dict per step."""
    if run is None:
        return []
    steps: dict[int, dict[str, float]] = {}
    for key in sorted(k for k in run.data.metrics if is_plotted(k) or k.startswith("vs/")):
        for m in store.client.get_metric_history(run.info.run_id, key):
            steps.setdefault(m.step, {})[key] = m.value
    return [steps[s] for s in sorted(steps)]
