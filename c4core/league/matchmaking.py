"""Matchmaking: whom each role's learner trains against in a generation (`pick_opponents`), the
best-rated snapshots or prioritized fictitious self-play (`pfsp_weights`, after AlphaStar).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from c4core.config import MAIN, LeagueConfig, snapshot_name
from c4core.evaluation.match import MatchResult, head_to_head
from c4core.league.members import champion_after, fit_ratings, members, results_upto
from c4core.league.seeds import seed_for
from c4core.league.store import LeagueStore
from c4core.learners.plugins import LEARNERS


def pick_opponents(store: LeagueStore, config: LeagueConfig, generation: int, role: str = MAIN) -> list[str]:
    """`role`'s opponents in `generation`.

    - The main agent by PPO: the game's bots (`LeagueConfig.bots`), `top_snapshots` snapshots
      so far (the best-rated, or drawn by PFSP: `opponent_sampling`), and itself. By
      AlphaZero: itself, and with a `league_share`, `top_snapshots` snapshots drawn by PFSP.
    - The main exploiter: the champion, only.
    - The league exploiter: `top_snapshots` members of the whole league drawn by PFSP.
    """
    results = results_upto(store.results(), generation - 1)
    league = members(store, config, generation - 1)
    snaps = [m for m in league if m not in config.bots]
    if role == "main-exploiter":
        target = champion_after(results, generation - 1)
        if target is None:
            raise ValueError(f"generation {generation}: no champion yet for a main exploiter to train on")
        return [target]
    if role == "league-exploiter":
        return _pfsp_pick(results, config, generation, role, league)
    if LEARNERS[config.learner(generation)].self_play:
        return ["self"]
    if config.learner(generation) == "alphazero":
        share = config.alphazero.league_share
        return ["self"] + (_pfsp_pick(results, config, generation, role, snaps) if share else [])
    if config.opponent_sampling == "pfsp":
        picked = _pfsp_pick(results, config, generation, role, snaps)
    else:
        fit = fit_ratings(results)
        ratings = fit.ratings if fit else {}
        picked = sorted(snaps, key=lambda m: (-ratings.get(m, float("-inf")), m))[: config.top_snapshots]
    return list(config.bots) + picked + ["self"]


def _pfsp_pick(
    results: list[MatchResult], config: LeagueConfig, generation: int, role: str, candidates: list[str]
) -> list[str]:
    """`top_snapshots` of `candidates` drawn by PFSP for `role`'s learner, scored from the
    records of the snapshot it starts from (its previous one)."""
    learner = snapshot_name(generation - 1, role)
    scores = {}
    for m in candidates:
        wdl = head_to_head(results, learner, m) if m != learner else None
        scores[m] = wdl.score if wdl is not None and wdl.games else None
    rng = np.random.default_rng(seed_for(config, generation, "pfsp" if role == MAIN else f"pfsp:{role}"))
    return weighted_sample(pfsp_weights(scores, config.pfsp_prior), config.top_snapshots, rng)


def pfsp_weights(scores: Mapping[str, float | None], prior: float) -> dict[str, float]:
    """Prioritized fictitious self-play's weighting (Vinyals et al. 2019, AlphaStar): a member
    the learner scores p against (wins, draws half) weighs f(p) = (1 - p)^2, so the members it
    does worst against are drawn most, and one it always beats almost never. A member with no
    record (None) is taken at `prior`."""
    return {m: (1.0 - (prior if p is None else p)) ** 2 for m, p in scores.items()}


def weighted_sample(weights: Mapping[str, float], k: int, rng: np.random.Generator) -> list[str]:
    """`k` distinct names drawn in proportion to `weights`, without replacement (Efraimidis and
    Spirakis 2006: the k largest keys u ** (1 / w)); names of weight 0 come last, in name order."""
    names = sorted(weights)
    u = rng.random(len(names))
    keys = [float(x ** (1.0 / weights[m])) if weights[m] > 0 else 0.0 for x, m in zip(u, names, strict=True)]
    ranked = sorted(zip(keys, names, strict=True), key=lambda kn: (-kn[0], kn[1]))
    return [m for _, m in ranked[:k]]
