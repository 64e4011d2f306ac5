"""MLflow as the system of record (`c4core.tracking`): runs, versions, matches, champion, resume.

A smoke league runs once per module into an embedded SQLite store; most tests read what it left
behind. Resume tests rerun it with training and match play patched to fail, so "nothing is
redone" is checked, not assumed. The crash test SIGKILLs a real `c4 league` process in the
middle of generation 2, reruns it, and compares the store with an uninterrupted run's. The
server tests start a real `mlflow server` (through ``mlflow/server.sh``) whose artifacts go to
S3, served by moto on 127.0.0.1, and run a league against it.

New stores are copies of one freshly migrated SQLite file: MLflow's migrations take seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import torch
from mlflow.entities import ViewType
from mlflow.tracking import MlflowClient
from servers import Server, check_smoke_league_on_server, runs_of, tracking_server

import c4core.evaluation.match
import c4core.league.generation as league
import c4core.learners.plugins as learners
from c4core.config import LeagueConfig, NetConfig, league_config, profile, snapshot_name
from c4core.entry import registry_fetch, registry_line
from c4core.evaluation.elo import fit_elo
from c4core.evaluation.match import WDL, MatchResult, play_match
from c4core.games.connect4.rules import STANDARD
from c4core.league.members import iterations_to_beat
from c4core.learners.net import NetPlayer, PolicyValueNet
from c4core.players import make_player
from c4core.tracking.champion import champion_history, league_alias, same_version
from c4core.tracking.lease import Lease, LeaseHeld
from c4core.tracking.reports import open_league
from c4core.tracking.runs import TrackedReport, run_generation_tracked, run_league_tracked
from c4core.tracking.scores import EXPLOITABILITY, TO_BEAT, _run_metrics
from c4core.tracking.store import (
    CHAMPION_ALIAS,
    MODEL_NAME,
    MLflowStore,
    Tracking,
    league_lease,
    model_name_for,
    pair_key,
)
from c4core.tracking.uris import resolve_version
from c4core.tracking.versions import find_version, league_versions, register_snapshot

REPO = Path(__file__).resolve().parents[1]
SMOKE = profile("smoke", name="t")
AIRFLOW_TAGS = {"airflow.dag_id": "connect4_league", "airflow.run_id": "manual__1", "airflow.task_id": "gen"}


def fresh_tracking(blank_db: Path, folder: Path) -> Tracking:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(blank_db, folder / "mlflow.db")
    return Tracking.for_uri(f"sqlite:///{folder / 'mlflow.db'}")


@dataclass
class Tracked:
    tracking: Tracking
    store: MLflowStore
    final: TrackedReport
    reports: list[league.GenerationReport]

    @property
    def client(self) -> MlflowClient:
        return self.tracking.client()


@pytest.fixture(scope="module")
def tracked(blank_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Tracked:
    tracking = fresh_tracking(blank_db, tmp_path_factory.mktemp("store"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        store = MLflowStore(tracking, SMOKE, AIRFLOW_TAGS)
        reports: list[league.GenerationReport] = []
        final = run_league_tracked(store, SMOKE, reports.append)
    finally:
        torch.set_num_threads(threads)
    return Tracked(tracking, store, final, reports)


# ---- runs ----------------------------------------------------------------------------------------
def test_each_generation_is_a_nested_run_with_params_metrics_and_checkpoint(tracked: Tracked) -> None:
    client = tracked.client
    (league_run,) = runs_of(client, "league", "t")
    gens = runs_of(client, "generation", "t")
    assert sorted(r.data.tags["generation"] for r in gens) == ["1", "2"]
    for run in gens:
        g = int(run.data.tags["generation"])
        assert run.info.status == "FINISHED"
        assert run.data.tags["mlflow.parentRunId"] == league_run.info.run_id
        assert run.data.tags["c4.complete"] == "true" and run.data.tags["c4.finalized"] == "true"
        assert run.data.tags["config_hash"] == SMOKE.training_hash()
        assert AIRFLOW_TAGS.items() <= run.data.tags.items()
        # the whole config, flattened
        assert run.data.params["ppo.learning_rate"] == str(SMOKE.ppo.learning_rate)
        assert run.data.params["net.channels"] == str(SMOKE.net.channels)
        assert run.data.params["match_games"] == str(SMOKE.match_games)
        for key in ("losses/policy", "losses/value", "losses/entropy", "losses/approx_kl", "vs/tactical/win"):
            history = client.get_metric_history(run.info.run_id, key)
            assert [m.step for m in history] == list(range(SMOKE.ppo.iterations)), key
        for opponent in ("random", "tactical", "self"):
            assert {f"vs/{opponent}/{k}" for k in ("win", "draw", "loss")} <= run.data.metrics.keys()
        files = {f.path for f in client.list_artifacts(run.info.run_id, "checkpoint")}
        assert files == {f"checkpoint/{snapshot_name(g)}.pt"}


def test_the_store_gives_back_what_training_saved(tracked: Tracked) -> None:
    fresh = MLflowStore(tracked.tracking, SMOKE)
    for g in (1, 2):
        saved, loaded = tracked.store.snapshot(g), fresh.snapshot(g)
        assert saved is not None and loaded is not None
        assert loaded.generation == g and loaded.net_config == SMOKE.net
        assert all(torch.equal(saved.model[k], loaded.model[k]) for k in saved.model)
    assert fresh.snapshot(3) is None


# ---- registry ------------------------------------------------------------------------------------
def test_every_snapshot_is_a_version_with_tags_card_signature_and_example(tracked: Tracked) -> None:
    import mlflow.models

    versions = league_versions(tracked.store)
    assert sorted(versions) == [1, 2]
    fit = tracked.final.report.fit
    for g, v in versions.items():
        member = snapshot_name(g)
        assert v.tags["league"] == "t" and v.tags["generation"] == str(g)
        assert float(v.tags["elo"]) == pytest.approx(fit.ratings[member], abs=0.06)
        lo, hi = json.loads(v.tags["elo_ci95"])
        assert lo <= float(v.tags["elo"]) <= hi
        (vs_tac,) = [r for r in tracked.store.results() if {r.a, r.b} == {member, "tactical"}]
        won = vs_tac.total.win if vs_tac.a == member else vs_tac.total.loss  # from the member's side
        assert float(v.tags["win_vs_tactical"]) == pytest.approx(won / vs_tac.games, abs=5e-5)
        assert member in v.description and "Elo" in v.description
        assert f"{g} PPO generation(s)" in v.description  # the card counts its own generations
        assert "(float32 convolutions)" in v.description  # the smoke net's precision
        code = {f.path for f in tracked.client.list_artifacts(v.run_id, "model/code")}
        assert code == {"model/code/c4core"}  # exactly the package, shipped with the model
    client = tracked.client
    source = client.get_model_version_download_uri(MODEL_NAME, versions[1].version)
    import mlflow.artifacts

    local = mlflow.artifacts.download_artifacts(
        artifact_uri=f"{source}/MLmodel", tracking_uri=tracked.tracking.tracking_uri
    )
    model = mlflow.models.Model.load(local)
    assert model.signature is not None
    assert {c.name for c in model.signature.inputs.inputs} == {"moves", "board"}
    assert model.saved_input_example_info is not None


def test_registering_again_reuses_the_version(tracked: Tracked) -> None:
    before = {v.version for v in tracked.client.search_model_versions(f"name = '{MODEL_NAME}'")}
    again = register_snapshot(tracked.store, 1)
    assert again.version == find_version(tracked.store, 1).version
    after = {v.version for v in tracked.client.search_model_versions(f"name = '{MODEL_NAME}'")}
    assert after == before


# ---- matches and Elo -----------------------------------------------------------------------------
def test_match_records_are_enough_to_refit_elo_from_scratch(tracked: Tracked) -> None:
    client = tracked.client
    runs = runs_of(client, "match", "t")
    records = [json.loads(r.data.tags["c4.record"]) for r in runs]
    # one record per pairing: gen1 met the two bots, gen2 met them and gen1
    assert sorted(pair_key(r["a"], r["b"]) for r in records) == sorted(
        ["gen1|random", "gen1|tactical", "gen2|random", "gen2|tactical", "gen1|gen2"]
    )
    for r, run in zip(records, runs, strict=True):
        assert r["games"] == SMOKE.match_games == r["win"] + r["draw"] + r["loss"]
        first = WDL(**r["a_first"]) + WDL(**r["b_first"])
        assert (first.win, first.draw, first.loss) == (r["win"], r["draw"], r["loss"])
        assert run.data.metrics["win"] == r["win"] and run.data.params["seed"] == str(r["seed"])
    refit = fit_elo(records)
    for v in league_versions(tracked.store).values():
        assert float(v.tags["elo"]) == pytest.approx(refit.ratings[v.tags["member"]], abs=0.06)


def test_recording_a_match_twice_never_double_counts(blank_db: Path, tmp_path: Path) -> None:
    store = MLflowStore(fresh_tracking(blank_db, tmp_path), profile("smoke", name="dup"))
    result = MatchResult("gen1", "random", 7, 4, WDL(3, 0, 2), WDL(4, 1, 0))
    store.record_match(result)
    store.record_match(result)
    store.record_match(MatchResult("random", "gen1", 7, 4, WDL(2, 0, 3), WDL(0, 1, 4)))
    assert store.results() == [result]
    assert len(runs_of(store.client, "match", "dup")) == 1


def test_the_ladder_is_a_metric_per_generation(tracked: Tracked) -> None:
    client = tracked.client
    (league_run,) = runs_of(client, "league", "t")
    for member, steps in {"gen1": [1, 2], "gen2": [2], "random": [1, 2], "tactical": [1, 2]}.items():
        history = client.get_metric_history(league_run.info.run_id, f"elo/{member}")
        assert sorted(m.step for m in history) == steps
    last = {m: league_run.data.metrics[f"elo/{m}"] for m in tracked.final.report.fit.ratings}
    assert last == pytest.approx(tracked.final.report.fit.ratings, abs=0.05)  # one decimal
    assert last["random"] == 0.0


# ---- champion ------------------------------------------------------------------------------------
def test_the_best_snapshot_is_production_and_champion(tracked: Tracked) -> None:
    client = tracked.client
    report = tracked.final.report
    best = max(
        (m for m in report.fit.ratings if m.startswith("gen")), key=lambda m: (report.fit.ratings[m], m)
    )
    assert report.champion == best
    champ = client.get_model_version_by_alias(MODEL_NAME, CHAMPION_ALIAS)
    assert champ.tags["member"] == best and champ.current_stage == "Production"
    stages = {v.version: v.current_stage for v in client.search_model_versions(f"name = '{MODEL_NAME}'")}
    assert [v for v, s in stages.items() if s == "Production"] == [champ.version]
    assert tracked.final.champion_version.version == champ.version
    # the audit trail: every change of title, the holder's version, the generation it happened after
    history = champion_history(tracked.store)
    assert history and history[-1]["version"] == int(champ.version) and history[-1]["member"] == best
    assert [h["after_generation"] for h in history] == sorted(h["after_generation"] for h in history)
    assert "champion_since" in champ.tags
    for h in history[:-1]:
        assert "champion_until" in client.get_model_version(MODEL_NAME, str(h["version"])).tags


def test_a_league_on_another_board_registers_into_its_own_model(blank_db: Path, tmp_path: Path) -> None:
    """Champions and gating never mix boards: a Connect-3 league on 4x4 registers into
    ``connect3-4x4``, whose champion it becomes, and leaves ``connect4`` alone."""
    small = profile("smoke", name="small", generations=1, rows=4, cols=4, connect=3)
    tracking = fresh_tracking(blank_db, tmp_path)
    store = MLflowStore(tracking, small)
    assert store.tracking.model_name == "connect3-4x4"
    final = run_league_tracked(store, small, lambda report: None)
    client = tracking.client()
    champ = client.get_model_version_by_alias("connect3-4x4", CHAMPION_ALIAS)
    assert champ.version == final.champion_version.version and champ.tags["member"] == final.report.champion
    assert client.search_registered_models(f"name = '{MODEL_NAME}'") == []
    card = client.get_model_version("connect3-4x4", champ.version).description
    assert "board 4x4, connect 3" in card and "`column` (0-3)" in card and "6x7" not in card
    # a tracking that names its own model keeps it; standard Connect Four keeps `connect4`
    assert model_name_for(replace(tracking, model_name="mine"), small) == "mine"
    assert model_name_for(tracking, SMOKE) == MODEL_NAME


def test_a_dots_and_boxes_league_registers_served_snapshots_each_with_its_nash_conv(
    blank_db: Path, tmp_path: Path
) -> None:
    """A league of another game end to end: Dots and Boxes on 2x2 boxes rates its snapshots
    against `random` and `greedy`, registers them into ``dots-and-boxes-2x2`` with a card in
    its own notation and an exact NashConv each (a 12-line game enumerates), and a registered
    version answers a line for a move string and refuses a drawn one."""
    import mlflow.pyfunc
    import pandas as pd
    from mlflow.exceptions import MlflowException

    dots = league_config("smoke", "dots", game="dots_and_boxes", rows=2, cols=2)
    tracking = fresh_tracking(blank_db, tmp_path)
    store = MLflowStore(tracking, dots)
    assert store.tracking.model_name == "dots-and-boxes-2x2"
    final = run_league_tracked(store, dots, lambda report: None)
    assert set(final.report.fit.ratings) == {"random", "greedy", "gen1", "gen2"}
    client = tracking.client()
    versions = client.search_model_versions("name = 'dots-and-boxes-2x2'")
    assert len(versions) == 2
    for v in versions:
        assert 0.0 <= float(v.tags["nash_conv"]) <= 2.0
        assert "h<row>,<col>" in v.description and "board 2x2 boxes" in v.description
        # scored on the solver-labelled suite made from the league's seed
        assert 0.0 <= float(v.tags["suite_keeps_value"]) <= float(v.tags["suite_keeps_outcome"]) <= 1.0
        metrics = client.get_run(v.run_id).data.metrics
        assert int(v.tags["suite_counted"]) == metrics["suite/counted"] > 500
        assert metrics["suite/keeps_value"] == pytest.approx(float(v.tags["suite_keeps_value"]), abs=5e-5)
    source = client.get_model_version_download_uri("dots-and-boxes-2x2", final.champion_version.version)
    model = mlflow.pyfunc.load_model(source)
    (answer,) = model.predict(pd.DataFrame({"moves": ["h0,0 v0,0"]}))
    state = dots.board.state_from_moves("h0,0 v0,0")
    assert answer["action"] in state.legal_actions()
    assert answer["move"] == dots.board.format_action(answer["action"])
    with pytest.raises(MlflowException, match="h0,0 is already drawn"):
        model.predict(pd.DataFrame({"moves": ["h0,0 h0,0"]}))


def test_the_ui_opens_the_experiment_for_model_training_and_shows_each_league_duration(
    tracked: Tracked,
) -> None:
    client = tracked.client
    exp = client.get_experiment(tracked.store.experiment_id)
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    (league_run,) = runs_of(client, "league", "t")
    assert league_run.info.status == "FINISHED"
    assert league_run.info.end_time is not None and league_run.info.end_time >= league_run.info.start_time


def test_registry_uris_name_players(tracked: Tracked) -> None:
    uri = tracked.tracking.tracking_uri
    champ = tracked.final.champion_version
    fetch = registry_fetch(uri)
    by_alias = make_player(f"models:/{MODEL_NAME}@champion", registry=fetch)
    by_number = make_player(f"models:/{MODEL_NAME}/{champ.version}", registry=fetch)
    by_stage = make_player(f"models:/{MODEL_NAME}/Production", registry=fetch)
    assert isinstance(by_alias, NetPlayer) and by_alias.name == by_number.name == by_stage.name
    a, b = by_alias.net.state_dict(), by_number.net.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    client = tracked.client
    for bad in ("models:/nope@champion", f"models:/{MODEL_NAME}/99", f"models:/{MODEL_NAME}", "runs:/x"):
        with pytest.raises(ValueError):
            resolve_version(client, bad)
    with pytest.raises(ValueError, match="tracking URI"):
        make_player(f"models:/{MODEL_NAME}@champion")


# ---- champion and challenger across leagues -------------------------------------------------------
RIGGED_NET = {"blocks": 0, "channels": 8, "value_hidden": 16}


def tactical_net() -> PolicyValueNet:
    """A hand-set net that plays like the tactical bot: a winning move if it has one, else a
    block, else the most central column (the input planes already hold both sides' threats)."""
    net = PolicyValueNet(NetConfig(**RIGGED_NET))
    g = STANDARD
    with torch.no_grad():
        for p in net.parameters():
            p.zero_()
        # stem (planes: mine, theirs, landing cells, my threats, their threats, ones), centre taps
        net.stem.weight[0, 2, 1, 1] = net.stem.weight[0, 3, 1, 1] = 1.0  # I win by landing here
        net.stem.weight[1, 2, 1, 1] = net.stem.weight[1, 4, 1, 1] = 1.0  # they would: block
        net.stem.bias[:2] = -1.0
        net.stem.weight[2, 2, 1, 1] = 1.0  # a stone can land here
        net.policy_conv.weight[0, :3, 0, 0] = torch.tensor([100.0, 10.0, 1.0])
        for col in range(g.cols):  # each column's logit sums its cells
            for row in range(g.rows):
                net.policy_fc.weight[col, row * g.cols + col] = 1.0
        net.policy_fc.bias[:] = torch.tensor([-abs(c - g.cols // 2) * 0.1 for c in range(g.cols)])
    return net


def test_the_rigged_net_beats_a_fresh_one() -> None:
    """The premise of the gating tests below, checked: the rig is stronger."""
    torch.manual_seed(0)
    fresh = PolicyValueNet(NetConfig(**RIGGED_NET))
    r = play_match(NetPlayer(tactical_net(), name="rig"), NetPlayer(fresh, name="fresh"), 20, seed=1)
    assert r.total.score >= 0.8


def rigged_league(
    tracking: Tracking, name: str, strong: bool, monkeypatch: pytest.MonkeyPatch
) -> TrackedReport:
    """A one-generation smoke league whose training leaves a fresh net, or puts in the rig."""
    rig = tactical_net()
    monkeypatch.setattr(
        learners, "train_ppo", lambda net, *a, **k: net.load_state_dict(rig.state_dict()) if strong else None
    )
    config = rigged_config(name)
    return run_league_tracked(MLflowStore(tracking, config), config)


def rigged_config(name: str) -> LeagueConfig:
    return profile("smoke", name=name, generations=1, net=RIGGED_NET)


@pytest.mark.slow
def test_a_weaker_league_does_not_take_the_title_and_a_stronger_one_does(
    blank_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tracking = fresh_tracking(blank_db, tmp_path)
    client = tracking.client()

    def holder() -> str:
        return str(client.get_model_version_by_alias(MODEL_NAME, CHAMPION_ALIAS).version)

    first = rigged_league(tracking, "weak1", strong=False, monkeypatch=monkeypatch)
    assert holder() == str(first.champion_version.version)  # no champion yet: no match
    strong = rigged_league(tracking, "strong", strong=True, monkeypatch=monkeypatch)
    assert holder() == str(strong.champion_version.version)  # won its gating match
    weak = rigged_league(tracking, "weak2", strong=False, monkeypatch=monkeypatch)
    assert holder() == str(strong.champion_version.version)  # lost its gating match
    # each league's own champion is servable by its alias, whoever holds the title
    for name, run in (("weak1", first), ("strong", strong), ("weak2", weak)):
        own = client.get_model_version_by_alias(MODEL_NAME, league_alias(name))
        assert same_version(own, run.champion_version) and own.tags["league"] == name
    stages = {str(v.version): v.current_stage for v in client.search_model_versions(f"name = '{MODEL_NAME}'")}
    assert [v for v, s in stages.items() if s == "Production"] == [str(strong.champion_version.version)]
    # both gating matches recorded: a run each, the result on the versions, a history row each
    gatings = runs_of(client, "gating", "strong") + runs_of(client, "gating", "weak2")
    assert len(gatings) == 2 and all(r.data.tags["c4.complete"] == "true" for r in gatings)
    won = client.get_model_version(MODEL_NAME, strong.champion_version.version).tags
    lost = client.get_model_version(MODEL_NAME, weak.champion_version.version).tags
    assert won["gating_won"] == "true" and float(won["gating_score"]) >= SMOKE.gating_score
    assert lost["gating_won"] == "false" and float(lost["gating_score"]) < SMOKE.gating_score
    assert won["gating_opponent"] == str(first.champion_version.version)
    assert lost["gating_opponent"] == str(strong.champion_version.version)
    (won_row,) = champion_history(MLflowStore(tracking, rigged_config("strong")))
    weak_store = MLflowStore(tracking, rigged_config("weak2"))
    (lost_row,) = champion_history(weak_store)
    assert won_row["title"] is True and won_row["gating_score"] >= SMOKE.gating_score
    assert lost_row["title"] is False and lost_row["gating_score"] < SMOKE.gating_score
    # the summary names the league's own champion, and who holds the title
    line = registry_line(weak_store, weak.report.champion)
    assert line is not None
    assert line.startswith(f"registry: models:/{MODEL_NAME}@champion-weak2 = models:/{MODEL_NAME}/")
    assert f"title stays with models:/{MODEL_NAME}/{strong.champion_version.version}" in line
    # a rerun plays no gating match again and writes no second row
    monkeypatch.setattr(c4core.evaluation.match, "play_match", _forbid_play)  # where gating_match finds it
    rigged_league(tracking, "weak2", strong=False, monkeypatch=monkeypatch)
    assert len(runs_of(client, "gating", "weak2")) == 1 and len(champion_history(weak_store)) == 1
    # the registered model's description leads with the holder, rewritten as the title moved
    description = client.get_registered_model(MODEL_NAME).description
    held = client.get_model_version(MODEL_NAME, strong.champion_version.version)
    assert description.startswith(
        f"**Champion: version {held.version}**, snapshot `{held.tags['member']}` of league `strong`, "
        f"Elo {held.tags['elo']} ([its page](#/models/{MODEL_NAME}/versions/{held.version}?"
    ), description
    assert "Alias `champion`" in description


def _forbid_play(*args, **kwargs):
    raise AssertionError("a recorded gating match must not be played again")


# ---- resume --------------------------------------------------------------------------------------
def test_a_rerun_of_a_finished_league_trains_nothing_and_plays_nothing(
    tracked: Tracked, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*args, **kwargs):
        raise AssertionError("a finished league must not train or play")

    monkeypatch.setattr(learners, "train_ppo", fail)
    monkeypatch.setattr(league, "play_match", fail)
    client = tracked.client
    count = {k: len(runs_of(client, k, "t", ViewType.ALL)) for k in ("league", "generation", "match")}
    versions = len(client.search_model_versions(f"name = '{MODEL_NAME}'"))
    (league_run,) = runs_of(client, "league", "t")
    points = len(client.get_metric_history(league_run.info.run_id, "elo/gen1"))
    history = champion_history(tracked.store)

    again = run_league_tracked(MLflowStore(tracked.tracking, SMOKE), SMOKE)
    assert again.report.champion == tracked.final.report.champion
    assert again.champion_version.version == tracked.final.champion_version.version
    assert again.report.fit.ratings == pytest.approx(tracked.final.report.fit.ratings)
    assert {k: len(runs_of(client, k, "t", ViewType.ALL)) for k in count} == count
    assert len(client.search_model_versions(f"name = '{MODEL_NAME}'")) == versions
    assert len(client.get_metric_history(league_run.info.run_id, "elo/gen1")) == points
    assert champion_history(tracked.store) == history


@pytest.mark.slow
def test_an_unfinished_generation_run_is_abandoned_and_redone(blank_db: Path, tmp_path: Path) -> None:
    config = profile("smoke", name="half", generations=1)
    tracking = fresh_tracking(blank_db, tmp_path)
    killed = MLflowStore(tracking, config)
    killed.start_generation(1)
    killed.log_iteration(1, 0, {"losses/policy": 0.5})  # then the driver "dies"

    store = MLflowStore(tracking, config)
    assert store.snapshot(1) is None
    run_generation_tracked(store, config, 1)
    client = tracking.client()
    active = runs_of(client, "generation", "half")
    assert len(active) == 1 and active[0].data.tags["c4.complete"] == "true"
    deleted = runs_of(client, "generation", "half", ViewType.DELETED_ONLY)
    assert len(deleted) == 1 and deleted[0].info.status == "FAILED"
    assert len(client.get_metric_history(active[0].info.run_id, "losses/policy")) == config.ppo.iterations


# ---- a real crash --------------------------------------------------------------------------------
CRASH_DRIVER = """
import json, sys, torch
torch.set_num_threads(1)  # a busy 2-core machine: one thread is fastest for a tiny net
from c4core.config import profile
from c4core.tracking.lease import process_owner
from c4core.tracking.store import MLflowStore, Tracking
from c4core.tracking.runs import run_league_tracked
uri, name, roles, ttl, wait = sys.argv[1:6]
# 20 iterations: long enough that a watcher on a loaded machine still sees two learners mid-training
config = profile("smoke", name=name, generations=2, ppo={"iterations": 20}, roles=tuple(roles.split(",")))
owner = process_owner("driver")
store = MLflowStore(Tracking.for_uri(uri), config, owner=owner, ttl=float(ttl), wait=float(wait))
final = run_league_tracked(store, config)
store.release()
print(json.dumps({"champion": final.report.champion, "version": final.champion_version.version}))
"""


LEASE_TTL = 20.0
"""The killed driver's lease: long enough to outlive the test's checks, short enough to wait out."""


def league_command(
    uri: str, name: str, roles: tuple[str, ...] = ("main",), ttl: float = 120, wait: float = 0
) -> list[str]:
    """A small driver (one torch thread) that runs a 2-generation smoke league on MLflow,
    holding the league's lease with `ttl`, and waiting up to `wait` seconds for it."""
    return [sys.executable, "-c", CRASH_DRIVER, uri, name, ",".join(roles), str(ttl), str(wait)]


def contents(tracking: Tracking, name: str) -> dict[str, list]:
    """What a league left in MLflow, as sorted lists (so a duplicate would show)."""
    client = tracking.client()
    gens = [r for r in runs_of(client, "generation", name) if r.data.tags.get("c4.complete") == "true"]
    matches = [r for r in runs_of(client, "match", name) if r.data.tags.get("c4.complete") == "true"]
    records = []
    for r in matches:
        rec = json.loads(r.data.tags["c4.record"])
        rec.pop("seconds")
        records.append(json.dumps(rec, sort_keys=True))
    versions = client.search_model_versions(f"name = '{MODEL_NAME}' and tags.league = '{name}'")
    champ = client.get_model_version_by_alias(MODEL_NAME, CHAMPION_ALIAS)
    (league_run,) = runs_of(client, "league", name)
    return {
        "league metrics": sorted(
            (key, m.step, m.value)
            for key in (EXPLOITABILITY, TO_BEAT)
            for m in client.get_metric_history(league_run.info.run_id, key)
        ),
        "generations": sorted(r.data.tags.get("member", "gen" + r.data.tags["generation"]) for r in gens),
        "versions": sorted((v.tags["member"], v.tags.get("role"), v.current_stage) for v in versions),
        "matches": sorted(records),
        "champion": [champ.version, champ.tags["member"]],
    }


def learner_processes(pid: int) -> list[int]:
    """The learner processes (multiprocessing's spawned children) of process `pid`."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        for child in (task / "children").read_text().split():
            try:
                if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                    found.append(int(child))
            except OSError:  # it ended meanwhile
                pass
    return found


@pytest.mark.slow
@pytest.mark.parametrize("roles", [("main",), ("main", "main-exploiter")], ids=["main", "two-learners"])
def test_a_league_killed_mid_generation_resumes_to_the_same_store(
    blank_db: Path, tmp_path: Path, roles: tuple[str, ...]
) -> None:
    env = os.environ | {"MLFLOW_CONFIGURE_LOGGING": "false", "PYTHONUNBUFFERED": "1"}
    crash = fresh_tracking(blank_db, tmp_path / "crash")
    whole = fresh_tracking(blank_db, tmp_path / "whole")
    uninterrupted = subprocess.Popen(
        league_command(whole.tracking_uri, "c", roles), env=env, cwd=REPO,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    victim = subprocess.Popen(
        league_command(crash.tracking_uri, "c", roles, ttl=LEASE_TTL), env=env, cwd=REPO,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    client = crash.client()
    learners: list[int] = []
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and victim.poll() is None:
            exp = client.get_experiment_by_name("connect4-league")
            if exp is not None:
                gen2 = client.search_runs(
                    [exp.experiment_id], "tags.`c4.kind` = 'generation' and tags.generation = '2'"
                )
                training = [r for r in gen2 if "c4.complete" not in r.data.tags and r.data.metrics]
                if len(training) == len(roles):
                    # generation 2 is training: every learner's run exists, with metrics, unfinished
                    learners = learner_processes(victim.pid)
                    break
            time.sleep(0.05)
        assert victim.poll() is None, "the league finished before it could be killed mid-generation"
        victim.send_signal(signal.SIGKILL)
        victim.wait(30)
    finally:
        if victim.poll() is None:
            victim.kill()
    assert victim.returncode == -signal.SIGKILL
    assert len(learners) == (len(roles) if len(roles) > 1 else 0)  # one process per learner
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{p}").exists() for p in learners) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(Path(f"/proc/{p}").exists() for p in learners)  # they died with the league
    assert contents_so_far(crash, "c") == ["1"]  # killed inside generation 2

    # the dead driver's lease holds the league until it expires; the rerun waits for that
    config = open_league(crash, "c").config
    lease = Lease(client, league_lease(crash, config), "someone else")
    dead = lease.holder()
    assert dead is not None and dead.owner.startswith("driver on ") and not dead.expired(time.time())
    with pytest.raises(LeaseHeld, match="held by driver on "):
        lease.acquire()
    rerun = subprocess.run(
        league_command(crash.tracking_uri, "c", roles, ttl=LEASE_TTL, wait=60),
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    out, _ = uninterrupted.communicate(timeout=600)
    assert uninterrupted.returncode == 0

    got, want = contents(crash, "c"), contents(whole, "c")
    snaps = sorted(snapshot_name(g, r) for g in (1, 2) for r in (roles if g > 1 else ("main",)))
    assert got["generations"] == want["generations"] == snaps
    assert got["versions"] == want["versions"]
    assert [m for m, _, _ in got["versions"]] == snaps
    members = 2 + len(snaps)
    assert len(got["matches"]) == len(set(got["matches"])) == members * (members - 1) // 2 - 1
    assert got["matches"] == want["matches"]
    assert got["champion"] == want["champion"]
    assert got["league metrics"] == want["league metrics"]
    if "main-exploiter" in roles:
        # what each generation logged of the exploiter's iterations-to-55% is what all of its
        # training metrics give at the end
        store = open_league(crash, "c")
        every = {2: _run_metrics(store, store.generation_run(2, "main-exploiter"))}
        rows = iterations_to_beat(store.results(), store.config, every, 2)
        assert [(TO_BEAT, r["from_generation"], r["iterations"]) for r in rows if r["iterations"]] == [
            m for m in got["league metrics"] if m[0] == TO_BEAT
        ]
        assert [m[1] for m in got["league metrics"] if m[0] == EXPLOITABILITY] == [2]
    assert json.loads(rerun.stdout) == json.loads(out)
    after = lease.holder()  # the rerun took the lease over, then let go of it
    assert after is not None and (after.epoch, after.deleted) == (dead.epoch + 1, True)
    # the killed attempts at generation 2 are kept only as failed, deleted runs
    dead = runs_of(client, "generation", "c", ViewType.DELETED_ONLY)
    assert sorted((r.data.tags["generation"], r.data.tags["role"], r.info.status) for r in dead) == [
        ("2", role, "FAILED") for role in sorted(roles)
    ]


def contents_so_far(tracking: Tracking, name: str) -> list[str]:
    client = tracking.client()
    gens = runs_of(client, "generation", name)
    return sorted(r.data.tags["generation"] for r in gens if r.data.tags.get("c4.complete") == "true")


# ---- a real tracking server with S3 artifacts ----------------------------------------------------
@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`mlflow server` (mlflow/server.sh) on 127.0.0.1 with SQLite, artifacts in moto's S3."""
    with tracking_server("server.sh", tmp_path_factory.mktemp("server"), "league") as server:
        yield server


@pytest.mark.slow
def test_a_league_against_a_tracking_server_with_s3_artifacts(mlflow_server: Server) -> None:
    tracking = Tracking.for_uri(mlflow_server.url)
    config = profile("smoke", name="srv")
    store = MLflowStore(tracking, config, AIRFLOW_TAGS)
    final = run_league_tracked(store, config)
    client = tracking.client()

    check_smoke_league_on_server(store, client, final, "srv")
    champ = client.get_model_version_by_alias(MODEL_NAME, CHAMPION_ALIAS)

    # the bytes are in S3, uploaded by the server (the client holds no S3 credentials)
    keys = [o["Key"] for o in mlflow_server.s3.list_objects_v2(Bucket=mlflow_server.bucket)["Contents"]]
    assert sum(k.endswith("checkpoint/gen1.pt") for k in keys) == 1
    assert sum(k.endswith("model/MLmodel") for k in keys) == 2
    assert any(k.endswith("champion_history.json") for k in keys)
    player = make_player(f"models:/{MODEL_NAME}@champion", registry=registry_fetch(mlflow_server.url))
    assert player.name == f"{MODEL_NAME}/{champ.version}"

    # and a rerun against the server reuses everything
    again = run_league_tracked(MLflowStore(tracking, config), config)
    assert again.champion_version.version == champ.version
    assert len(runs_of(client, "match", "srv", ViewType.ALL)) == 5
