"""One generation of a league, step by step (`plan_generation`, the learners, `play_league_match`),
and the whole league run (`run_league`): the single source of truth that the CLI calls whole and
the DAG calls one task a step."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from c4core.config import MAIN, LeagueConfig
from c4core.evaluation.elo import EloFit
from c4core.evaluation.match import MatchResult, play_match
from c4core.league.matchmaking import pick_opponents
from c4core.league.members import champion, fit_ratings, load_member, new_pairs
from c4core.league.processes import train_learners
from c4core.league.seeds import match_seed
from c4core.league.store import LeagueStore


def play_league_match(
    store: LeagueStore, config: LeagueConfig, a: str, b: str, recorded: Sequence[MatchResult] | None = None
) -> MatchResult:
    """Play (or reuse) the match between two members and record it. `recorded`: the store's
    records, when the caller has read them already (a generation reads them once for all its
    pairings, not once a pairing: a league's records grow with the square of its members)."""
    for r in store.results() if recorded is None else recorded:
        if {r.a, r.b} == {a, b}:
            return r
    result = play_match(
        load_member(store, a, config),
        load_member(store, b, config),
        config.match_games,
        seed=match_seed(config, a, b),
        opening_plies=config.opening_plies,
        game=config.board,
        device=config.device,
    )
    store.record_match(result)
    return result


@dataclass(frozen=True)
class GenerationReport:
    """What one generation produced."""

    generation: int
    opponents: list[str]
    """The main agent's opponents."""
    matches: list[MatchResult]
    fit: EloFit
    champion: str
    seconds: float
    exploiters: dict[str, list[str]] = field(default_factory=dict)
    """Each exploiter role that trained, and its opponents."""


def plan_generation(store: LeagueStore, config: LeagueConfig, generation: int) -> dict[str, list[str]]:
    """Each role training in `generation`, with its opponents (`pick_opponents`)."""
    return {role: pick_opponents(store, config, generation, role) for role in config.roles_at(generation)}


def run_generation(
    store: LeagueStore,
    config: LeagueConfig,
    generation: int,
    on_iteration: Callable[[str, int, dict[str, float]], None] | None = None,
) -> GenerationReport:
    """One generation: pick opponents, train every role at once, play every new pairing, refit.
    The single source of truth that the CLI and the DAG both call (the DAG calls the same steps
    one task each). `on_iteration(member, i, metrics)` follows every learner."""
    start = time.perf_counter()
    plan = plan_generation(store, config, generation)
    train_learners(store, config, generation, plan, on_iteration)
    recorded = store.results()
    matches = [
        play_league_match(store, config, a, b, recorded) for a, b in new_pairs(store, config, generation)
    ]
    fit = fit_ratings(store.results())
    assert fit is not None  # the new snapshot has just played
    exploiters = {role: opp for role, opp in plan.items() if role != MAIN}
    return GenerationReport(
        generation, plan[MAIN], matches, fit, champion(fit), time.perf_counter() - start, exploiters
    )


def run_league(
    store: LeagueStore,
    config: LeagueConfig,
    on_generation: Callable[[GenerationReport], None] | None = None,
    on_iteration: Callable[[str, int, dict[str, float]], None] | None = None,
) -> GenerationReport:
    """Run every generation in order (resuming whatever the store already holds);
    `on_iteration(member, i, metrics)` follows every learner."""
    report = None
    for g in range(1, config.generations + 1):
        report = run_generation(store, config, g, on_iteration)
        if on_generation is not None:
            on_generation(report)
    assert report is not None
    return report
