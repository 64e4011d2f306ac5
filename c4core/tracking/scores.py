"""What each generation's snapshots are scored on, logged to MLflow: the solver-labelled suite,
exact NashConv where the game enumerates, and the main exploiter's score against the champion.

Suite scores. Given a suite file (`after_generation`'s, `run_generation_tracked`'s and
`run_league_tracked`'s ``suite`` argument; None, the default, logs nothing), each snapshot's raw
network (greedy, no search) is scored on it with `c4core.games.connect4.suite`: the ``suite/*``
metrics go on the generation run, where `c4core.report` draws them as a curve, and the headline
numbers become tags of the version (`log_suite`). A version that already has them is not scored
again; a suite that cannot be read, or does not fit the board, only warns.
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
from c4core.league.members import champion_after, exploitability, iterations_to_beat
from c4core.report import is_plotted
from c4core.tracking.store import MLflowStore
from c4core.tracking.versions import find_version

SUITE_TAGS = {
    "suite/keeps_result": "suite_keeps_result",
    "suite/best_move": "suite_best_move",
    "suite/counted": "suite_counted",
}
"""The suite metrics that also become version tags, and their tag keys."""


def log_suite(store: MLflowStore, generation: int, suite: str | Path) -> dict[str, float] | None:
    """Score snapshot `generation`'s raw network (greedy `NetPlayer`, no search) on the suite
    file `suite`, log the ``suite/*`` metrics on its generation run and the headline numbers as
    tags of its version (rates to 4 decimals, the count as a whole number, and ``suite_file``).

    Returns the metrics, or None when nothing was done: the version is not registered, or it
    already has the tags. The tags come last, so after a crash in between, a rerun scores again
    (greedy: the same numbers) and adds the tags without logging the metrics twice. A suite that
    does not fit the league's board is a `ValueError`."""
    import math

    from c4core.games.connect4.suite import evaluate_suite, load_suite

    version = find_version(store, generation)
    if version is None or all(t in version.tags for t in SUITE_TAGS.values()):
        return None
    run, ckpt = store.generation_run(generation), store.snapshot(generation)
    assert run is not None and ckpt is not None  # a registered version has a finished run
    positions = load_suite(suite, ckpt.geometry)
    player = ckpt.player(snapshot_name(generation))
    metrics = evaluate_suite(player, positions).metrics()
    logged = store.client.get_run(run.info.run_id).data.metrics  # fresh: the cached run predates it
    if "suite/keeps_result" not in logged and "suite/counted" not in logged:
        now = int(time.time() * 1000)
        batch = [Metric(k, v, now, 0) for k, v in metrics.items() if not math.isnan(v)]  # empty buckets
        store.client.log_batch(run.info.run_id, metrics=batch)
    tags = {
        "suite_keeps_result": f"{metrics['suite/keeps_result']:.4f}",
        "suite_best_move": f"{metrics['suite/best_move']:.4f}",
        "suite_file": Path(suite).name,
        "suite_counted": str(int(metrics["suite/counted"])),  # last: its presence marks the step done
    }
    for k, v in tags.items():
        store.client.set_model_version_tag(version.name, version.version, k, v)
    return metrics


DOTS_SUITE_TAGS = {
    "suite/keeps_value": "suite_keeps_value",
    "suite/keeps_outcome": "suite_keeps_outcome",
    "suite/counted": "suite_counted",
}
"""The Dots and Boxes suite metrics that also become version tags, and their tag keys."""


def log_dots_suite(store: MLflowStore, generation: int) -> dict[str, float] | None:
    """In a Dots and Boxes league on a board the exact solver takes
    (`c4core.games.dots_and_boxes.suite.DRAWN`), score the main agent's snapshot of `generation`
    (greedy, no search) on the league's suite, made from its seed, and log it as `log_suite` logs a
    Connect Four suite: the metrics on its generation run, then the tags (`DOTS_SUITE_TAGS`, the
    count last). None when nothing was done."""
    from c4core.games import DotsAndBoxes
    from c4core.games.dots_and_boxes.suite import DRAWN, make_suite, score_suite

    game = store.config.board
    if not isinstance(game, DotsAndBoxes) or (game.boxes.rows, game.boxes.cols) not in DRAWN:
        return None
    version = find_version(store, generation)
    if version is None or all(t in version.tags for t in DOTS_SUITE_TAGS.values()):
        return None
    run, ckpt = store.generation_run(generation), store.snapshot(generation)
    assert run is not None and ckpt is not None  # a registered version has a finished run
    items = make_suite(game, seed=store.config.seed)
    metrics = score_suite(ckpt.player(snapshot_name(generation)), game, items).metrics()
    logged = store.client.get_run(run.info.run_id).data.metrics  # fresh: the cached run predates it
    if "suite/keeps_value" not in logged:
        now = int(time.time() * 1000)
        store.client.log_batch(run.info.run_id, metrics=[Metric(k, v, now, 0) for k, v in metrics.items()])
    for key in ("suite/keeps_value", "suite/keeps_outcome", "suite/counted"):
        value = metrics[key]
        text = str(int(value)) if key == "suite/counted" else f"{value:.4f}"
        store.client.set_model_version_tag(version.name, version.version, DOTS_SUITE_TAGS[key], text)
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


def _try_log_suite(store: MLflowStore, generation: int, suite: str | Path) -> None:
    """`log_suite`, but a suite that cannot be read or does not fit the board only warns: the
    scores are a view of the snapshot, and registering and promoting it must go on without them."""
    try:
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
