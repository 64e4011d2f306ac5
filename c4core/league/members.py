"""A league's members and what their records say: the bots and every role's snapshots, the
pairings a generation adds, the joint Elo fit, the champion after each generation, where each
role's learner starts, and how far the main exploiter beat the champion it trained on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from c4core.config import MAIN, LeagueConfig, generation_of, role_of, snapshot_name
from c4core.evaluation.elo import EloFit, fit_elo
from c4core.evaluation.match import WDL, MatchResult, head_to_head
from c4core.games.players import Player
from c4core.league.store import LeagueStore
from c4core.learners.net import Checkpoint
from c4core.learners.plugins import LEARNERS


def members(store: LeagueStore, config: LeagueConfig, generations: int) -> list[str]:
    """Bots first, then every role's snapshot that exists up to `generations`, by generation."""
    snaps = [
        snapshot_name(g, role)
        for g in range(1, generations + 1)
        for role in config.roles_at(g)
        if store.snapshot(g, role) is not None
    ]
    return list(config.bots) + snaps


def new_pairs(store: LeagueStore, config: LeagueConfig, generation: int) -> list[tuple[str, str]]:
    """The matches `generation` adds: each of its new snapshots against every earlier member,
    then the new snapshots against each other."""
    new = [snapshot_name(generation, role) for role in config.roles_at(generation)]
    old = members(store, config, generation - 1)
    return [(a, b) for a in new for b in old] + [(a, b) for i, a in enumerate(new) for b in new[i + 1 :]]


def fit_ratings(results: Iterable[MatchResult]) -> EloFit | None:
    records = [r.to_record() for r in results]
    return fit_elo(records) if records else None


def results_upto(results: Iterable[MatchResult], generation: int) -> list[MatchResult]:
    """The records among the bots and snapshots up to `generation`: what the league knew when
    that generation ended, whatever later generations have played since."""

    def known(name: str) -> bool:
        g = generation_of(name)
        return g is None or g <= generation  # a bot, or a snapshot by then

    return [r for r in results if known(r.a) and known(r.b)]


def champion_after(results: Iterable[MatchResult], generation: int) -> str | None:
    """The champion once `generation` had played: the best-rated main-agent snapshot then."""
    fit = fit_ratings(results_upto(results, generation))
    mains = [m for m in fit.ratings if role_of(m) == MAIN] if fit else []
    return champion(fit) if fit and mains else None


def main_exploiter_start(results: Iterable[MatchResult], config: LeagueConfig, generation: int) -> int:
    """The generation in which the main exploiter training in `generation` last started from
    `exploiter_base`. It starts in generation 2 and again in any generation h after its last
    snapshot (h - 1's) scored at least `exploiter_reset_score` against the champion it trained
    on, or once `exploiter_reset_generations` generations have passed since it started."""
    results = list(results)
    start = 2
    for h in range(3, generation + 1):
        wdl = _exploiter_record(results, h - 1)
        beaten = wdl is not None and wdl.games > 0 and wdl.score >= config.exploiter_reset_score
        if beaten or h - start >= config.exploiter_reset_generations:
            start = h
    return start


def _exploiter_record(results: list[MatchResult], generation: int) -> WDL | None:
    """The W/D/L of `generation`'s main exploiter against the champion it trained on."""
    target = champion_after(results, generation - 1)
    if target is None:
        return None
    return head_to_head(results, snapshot_name(generation, "main-exploiter"), target)


def exploitability(results: Iterable[MatchResult], generation: int) -> float | None:
    """How far `generation`'s main exploiter beat the champion it trained on: its score against
    it in their league match (a draw counts half); None before the match."""
    wdl = _exploiter_record(list(results), generation)
    return wdl.score if wdl is not None and wdl.games else None


BEAT_SCORE = 0.55
"""The training score against a champion at which the main exploiter counts as beating it
(`iterations_to_beat`), the bar AlphaZero's gate set for a new network."""


def iterations_to_beat(
    results: Iterable[MatchResult],
    config: LeagueConfig,
    metrics: Mapping[int, list[dict[str, float]]],
    upto: int,
    threshold: float = BEAT_SCORE,
) -> list[dict[str, Any]]:
    """For each champion in turn that the main exploiter trained on up to generation `upto`: the
    generation it first did (``from_generation``), the iterations it trained on it
    (``trained``), and after how many of them its score in the training games against it (wins,
    draws half) first reached `threshold` (``iterations``; None: not yet). `metrics` holds the
    main exploiter's per-iteration metrics by generation."""
    results = list(results)
    rows: list[dict[str, Any]] = []
    for g in range(2, upto + 1):
        if "main-exploiter" not in config.roles_at(g):
            continue
        target = champion_after(results, g - 1)
        if not rows or rows[-1]["champion"] != target:
            rows.append({"champion": target, "from_generation": g, "trained": 0, "iterations": None})
        row = rows[-1]
        for m in metrics.get(g, []):
            row["trained"] += 1
            score = m.get(f"vs/{target}/win", 0.0) + m.get(f"vs/{target}/draw", 0.0) / 2
            if row["iterations"] is None and score >= threshold:
                row["iterations"] = row["trained"]
    return rows


def load_member(store: LeagueStore, name: str, config: LeagueConfig, greedy: bool = True) -> Player:
    if name in config.bots:
        return config.board.bots()[name]()
    generation, role = generation_of(name), role_of(name)
    if generation is not None and role is not None:
        ckpt = store.snapshot(generation, role)
        if ckpt is not None:
            return ckpt.player(name, greedy, config.device)
    raise ValueError(f"league {config.name!r} has no member {name!r}")


def starting_point(store: LeagueStore, config: LeagueConfig, generation: int, role: str = MAIN) -> str | None:
    """The snapshot `role`'s learner starts `generation` from (None: a fresh network). The main
    agent and the league exploiter continue from their previous snapshot; the main exploiter
    too, unless it starts again (`main_exploiter_start`) from `exploiter_base` (a fresh network
    where the main agent is a table)."""
    if role == MAIN:
        return snapshot_name(generation - 1) if generation > 1 else None
    restart = generation == 2 or (
        role == "main-exploiter" and main_exploiter_start(store.results(), config, generation) == generation
    )
    if not restart:
        return snapshot_name(generation - 1, role)
    # an exploiter learns by PPO, so it can only start from a network
    first = config.exploiter_base == "first" and LEARNERS[config.learner(1)].kind == "net"
    return snapshot_name(1) if first else None


def load_snapshot(store: LeagueStore, member: str) -> Checkpoint:
    """The checkpoint of snapshot `member`; a ValueError if the store has none."""
    generation, role = generation_of(member), role_of(member)
    ckpt = store.snapshot(generation, role) if generation is not None and role is not None else None
    if ckpt is None:
        raise ValueError(f"the league has no snapshot {member!r}")
    return ckpt


def champion(fit: EloFit) -> str:
    """The best-rated main-agent snapshot (an exploiter, however rated, is never champion)."""
    mains = [m for m in fit.ratings if role_of(m) == MAIN]
    if not mains:
        raise ValueError("the league has no main-agent snapshots yet")
    return max(mains, key=lambda m: (fit.ratings[m], m))
