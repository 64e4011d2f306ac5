"""Learners as plug-ins (`c4core.learners.plugins`): every learner the config can name, and a tabular
main agent through the whole league, with nothing in the league naming it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from c4core.config import NET_LEARNERS, TABULAR_LEARNERS, league_config
from c4core.league.generation import run_league
from c4core.league.matchmaking import pick_opponents
from c4core.league.members import load_member
from c4core.league.store import LocalStore
from c4core.learners.net import Checkpoint
from c4core.learners.plugins import LEARNERS, TabularLearner, TrainingJob
from c4core.learners.ranks import ALONE
from c4core.learners.tabular import TablePlayer


def test_every_learner_a_config_can_name_is_known() -> None:
    assert set(LEARNERS) == {*NET_LEARNERS, *TABULAR_LEARNERS}


def tabular(method: str, generations: int = 2):
    return league_config(
        "smoke",
        f"tab-{method}",
        game="connect3-4x4",
        learner=method,
        generations=generations,
        iterations=2,
        games=300,
    )


@pytest.mark.parametrize("method", TABULAR_LEARNERS)
def test_a_tabular_main_agent_trains_plays_and_is_rated_like_any_member(method: str, tmp_path: Path) -> None:
    config = tabular(method)
    store = LocalStore(tmp_path)
    seen: list[tuple[str, int]] = []
    report = run_league(store, config, on_iteration=lambda m, i, _: seen.append((m, i)))
    assert seen == [("gen1", 0), ("gen1", 1), ("gen2", 0), ("gen2", 1)]
    assert pick_opponents(store, config, 3) == ["self"]  # it learns by self-play
    first, second = store.snapshot(1), store.snapshot(2)
    assert first.kind == second.kind == "table" and first.game == config.board
    # gen2 continued from gen1's table: what gen1 had visited, gen2 still has
    visited = (first.model["q"] != 0).any(1)
    assert bool(visited.any()) and bool(((second.model["q"] != 0).any(1) >= visited).all())
    assert isinstance(load_member(store, "gen2", config), TablePlayer)
    assert set(report.fit.ratings) == {"random", "tactical", "gen1", "gen2"}
    assert report.champion in ("gen1", "gen2")
    again = run_league(LocalStore(tmp_path), config)  # resumed: nothing to redo, the same result
    assert again.fit.ratings == report.fit.ratings


def test_a_league_mixes_a_tabular_main_agent_and_network_exploiters(tmp_path: Path) -> None:
    config = league_config(
        "smoke", "mixed", game="connect3-4x4", learner="q-learning", roles=("main", "main-exploiter"),
        generations=2, iterations=2, games=64,
    )  # fmt: skip
    store = LocalStore(tmp_path)
    report = run_league(store, config)
    assert store.snapshot(2).kind == "table" and store.snapshot(2, "main-exploiter").kind == "net"
    assert pick_opponents(store, config, 2, "main-exploiter") == ["gen1"]  # the table it trains on
    assert set(report.fit.ratings) == {"random", "tactical", "gen1", "gen2", "gen2-me"}
    assert report.champion in ("gen1", "gen2")  # an exploiter is never champion


def test_the_same_seed_fits_the_same_table(tmp_path: Path) -> None:
    config = tabular("q-learning", generations=1)
    a, b = LocalStore(tmp_path / "a"), LocalStore(tmp_path / "b")
    run_league(a, config)
    run_league(b, config)
    assert np.array_equal(a.snapshot(1).model["q"].numpy(), b.snapshot(1).model["q"].numpy())


def _job(config, start=None, opponents=("self",)) -> TrainingJob:
    return TrainingJob(config, 1, "main", start, list(opponents), lambda m: None, 0, 0, None, ALONE)


def test_a_learner_refuses_a_snapshot_of_the_other_kind(tmp_path: Path) -> None:
    config = tabular("sarsa", generations=1)
    net_config = league_config("smoke", "n", game="connect3-4x4")
    net_snapshot = LEARNERS["ppo"].train(_job(net_config, opponents=("random",)))
    assert net_snapshot.kind == "net"
    with pytest.raises(ValueError, match="sarsa trains a table, not a net"):
        TabularLearner("sarsa").train(_job(config, start=net_snapshot))
    table = TabularLearner("sarsa").train(_job(config))
    with pytest.raises(ValueError, match="ppo trains a network, not a table"):
        LEARNERS["ppo"].train(_job(net_config, start=table, opponents=("random",)))
    with pytest.raises(ValueError, match="self-play only"):
        TabularLearner("sarsa").train(_job(config, opponents=("random", "self")))
    assert isinstance(table, Checkpoint)


def test_a_learner_goes_on_from_a_snapshot_made_before_the_chain_planes() -> None:
    """A Dots and Boxes snapshot of five input planes, with its optimizer's moments for them:
    its learner loads it with zero weights on the chain planes and a fresh optimizer (Adam's
    old moments no longer fit the stem), and trains on."""
    config = league_config("smoke", "d", game="dots-and-boxes-3x3", iterations=1, games=8)
    snapshot = LEARNERS["ppo"].train(_job(config, opponents=("random",)))
    assert snapshot.optimizer and snapshot.model["stem.weight"].shape[1] == 11
    old_model = dict(snapshot.model, **{"stem.weight": snapshot.model["stem.weight"][:, :5].clone()})
    old_optimizer = {**snapshot.optimizer, "state": dict(snapshot.optimizer["state"])}
    old_optimizer["state"][0] = {
        k: v[:, :5].clone() if k.startswith("exp_avg") else v for k, v in old_optimizer["state"][0].items()
    }
    old = replace(snapshot, model=old_model, optimizer=old_optimizer)
    trained = LEARNERS["ppo"].train(_job(config, start=old, opponents=("random",)))
    assert trained.model["stem.weight"].shape[1] == 11
    assert not torch.equal(trained.model["stem.weight"][:, :5], old_model["stem.weight"])
