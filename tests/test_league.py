"""The league (`c4core.league`): a smoke league end to end, opponents and resuming.

The smoke profile runs once per module into a temporary `LocalStore`; the tests then read what
it left behind: snapshots, one record per pairing, a joint Elo fit anchored on `random`. Resume
tests rerun the league on a copy of that store with training and match play patched to fail,
so "nothing is redone" is checked, not assumed.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pytest
import torch

import c4core.league.generation as league
import c4core.league.matchmaking as matchmaking
import c4core.league.members as league_members
import c4core.league.processes as processes
import c4core.learners.plugins as learners
from c4core.config import (
    AlphaZeroConfig,
    LeagueConfig,
    NetConfig,
    SearchConfig,
    generation_of,
    league_config,
    profile,
    role_of,
)
from c4core.evaluation.elo import fit_elo
from c4core.evaluation.match import WDL, MatchResult
from c4core.games.connect4.bots import TacticalBot
from c4core.games.players import RandomBot
from c4core.league.generation import GenerationReport, run_league
from c4core.league.matchmaking import pick_opponents
from c4core.league.members import champion, load_member, members
from c4core.league.seeds import match_seed
from c4core.league.store import LocalStore
from c4core.learners.net import Checkpoint, NetPlayer, PolicyValueNet

SMOKE = profile("smoke", name="t")


@dataclass
class SmokeRun:
    root: Path
    final: GenerationReport
    reports: list[GenerationReport]
    iterations: list[tuple[str, int, dict[str, float]]] = field(default_factory=list)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> SmokeRun:
    root = tmp_path_factory.mktemp("league") / "t"
    reports: list[GenerationReport] = []
    iterations: list[tuple[str, int, dict[str, float]]] = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # module fixtures run before the per-test one
    try:
        final = run_league(
            LocalStore(root), SMOKE, reports.append, lambda g, i, m: iterations.append((g, i, m))
        )
    finally:
        torch.set_num_threads(threads)
    return SmokeRun(root, final, reports, iterations)


def copy_store(smoke: SmokeRun, tmp_path: Path) -> Path:
    dest = tmp_path / "copy"
    shutil.copytree(smoke.root, dest)
    return dest


def _pair(r: MatchResult) -> frozenset[str]:
    return frozenset((r.a, r.b))


# ---- the smoke league --------------------------------------------------------------------------
def test_smoke_league_writes_snapshots(smoke: SmokeRun) -> None:
    store = LocalStore(smoke.root)
    for g in (1, 2):
        assert (smoke.root / f"gen{g}.pt").is_file()
        ckpt = store.snapshot(g)
        assert ckpt is not None and ckpt.generation == g
        assert ckpt.net_config == SMOKE.net and ckpt.game == SMOKE.board
        assert ckpt.optimizer is not None  # so the next generation can continue training
        assert LeagueConfig.from_dict(ckpt.train_config) == SMOKE
        metrics = json.loads((smoke.root / f"gen{g}.metrics.json").read_text())
        assert len(metrics) == SMOKE.ppo.iterations
        assert all("losses/policy" in m for m in metrics)
    assert store.snapshot(3) is None
    assert members(store, SMOKE, 5) == ["random", "tactical", "gen1", "gen2"]
    assert not list(smoke.root.glob("*.tmp"))


def test_gen2_continued_from_gen1(smoke: SmokeRun) -> None:
    store = LocalStore(smoke.root)
    one, two = store.snapshot(1), store.snapshot(2)
    assert any(not torch.equal(one.model[k], two.model[k]) for k in one.model)
    # Adam's step count keeps growing across generations
    steps = [next(iter(c.optimizer["state"].values()))["step"] for c in (one, two)]
    assert float(steps[1]) > float(steps[0]) > 0


def test_every_pairing_recorded_exactly_once(smoke: SmokeRun) -> None:
    results = LocalStore(smoke.root).results()
    pairs = [_pair(r) for r in results]
    expected = {
        frozenset(p)
        for p in [
            ("gen1", "random"),
            ("gen1", "tactical"),
            ("gen2", "random"),
            ("gen2", "tactical"),
            ("gen2", "gen1"),
        ]
    }
    assert len(pairs) == len(set(pairs)) == len(expected)
    assert set(pairs) == expected
    for r in results:
        assert r.a.startswith("gen")  # the new snapshot is A
        assert r.games == SMOKE.match_games and r.opening_plies == SMOKE.opening_plies
        assert r.seed == match_seed(SMOKE, r.a, r.b) == match_seed(SMOKE, r.b, r.a)
    # each generation's report lists the matches it played, new snapshot first
    assert [[(m.a, m.b) for m in rep.matches] for rep in smoke.reports] == [
        [("gen1", "random"), ("gen1", "tactical")],
        [("gen2", "random"), ("gen2", "tactical"), ("gen2", "gen1")],
    ]


def test_ratings_anchor_and_champion(smoke: SmokeRun) -> None:
    fit = smoke.final.fit
    assert set(fit.ratings) == {"random", "tactical", "gen1", "gen2"}
    assert fit.ratings["random"] == 0.0
    assert smoke.final.champion in ("gen1", "gen2")
    assert smoke.final.champion == champion(fit)
    assert fit.ratings[smoke.final.champion] == max(fit.ratings["gen1"], fit.ratings["gen2"])
    # the league's fit is the joint fit of its records
    refit = fit_elo([r.to_record() for r in LocalStore(smoke.root).results()])
    assert refit.ratings == pytest.approx(fit.ratings)


def test_reports_and_callbacks(smoke: SmokeRun) -> None:
    assert [r.generation for r in smoke.reports] == [1, 2]
    assert smoke.reports[-1] is smoke.final
    assert smoke.reports[0].opponents == ["random", "tactical", "self"]
    assert smoke.reports[1].opponents == ["random", "tactical", "gen1", "self"]
    assert [(g, i) for g, i, _ in smoke.iterations] == [
        (f"gen{g}", i) for g in (1, 2) for i in range(SMOKE.ppo.iterations)
    ]
    g2 = [m for g, _, m in smoke.iterations if g == "gen2"]
    assert all("vs/gen1/win" in m and "vs/self/win" in m and "vs/tactical/win" in m for m in g2)


def test_load_member(smoke: SmokeRun) -> None:
    store = LocalStore(smoke.root)
    assert isinstance(load_member(store, "random", SMOKE), RandomBot)
    assert isinstance(load_member(store, "tactical", SMOKE), TacticalBot)
    gen1 = load_member(store, "gen1", SMOKE, greedy=False)
    assert isinstance(gen1, NetPlayer) and gen1.name == "gen1" and not gen1.greedy
    for bad in ("gen3", "gen", "genX", "perfect", "self"):
        with pytest.raises(ValueError, match="no member"):
            load_member(store, bad, SMOKE)


# ---- resuming ----------------------------------------------------------------------------------
def _forbid(*_args, **_kwargs):
    raise AssertionError("a resumed league must not redo finished work")


def test_resume_redoes_nothing(smoke: SmokeRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_store(smoke, tmp_path)
    before = {p.name: p.read_bytes() for p in root.iterdir()}
    monkeypatch.setattr(learners, "train_ppo", _forbid)
    monkeypatch.setattr(league, "play_match", _forbid)
    again = run_league(LocalStore(root), SMOKE)
    assert again.fit.ratings == smoke.final.fit.ratings
    assert again.champion == smoke.final.champion
    assert {p.name: p.read_bytes() for p in root.iterdir()} == before


def test_a_generation_reads_the_records_once_for_all_its_pairings(
    smoke: SmokeRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A league's records grow with the square of its members, and an MLflow store searches them
    all on every read: a generation (replayed here) reads them as often whatever its pairings."""
    store = LocalStore(copy_store(smoke, tmp_path))
    real, reads = LocalStore.results, []
    monkeypatch.setattr(LocalStore, "results", lambda self: reads.append(1) or real(self))
    monkeypatch.setattr(learners, "train_ppo", _forbid)
    monkeypatch.setattr(league, "play_match", _forbid)
    per_generation = []
    for g in (1, 2):
        reads.clear()
        league.run_generation(store, SMOKE, g)
        per_generation.append(len(reads))
    assert [len(league_members.new_pairs(store, SMOKE, g)) for g in (1, 2)] == [2, 3]
    assert per_generation[0] == per_generation[1]


def test_resume_after_a_killed_generation(
    smoke: SmokeRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lose gen2 and its matches: the rerun retrains only gen2, replays only its matches, and
    (same seeds, same recipe) lands on the same snapshot and records."""
    root = copy_store(smoke, tmp_path)
    (root / "gen2.pt").unlink()
    lines = (root / "matches.jsonl").read_text().splitlines()
    (root / "matches.jsonl").write_text("\n".join(ln for ln in lines if "gen2" not in ln) + "\n")
    calls = {"train": 0, "play_match": 0}
    real_train, real_play = learners.train_ppo, league.play_match

    def counting_train(*a, **k):
        calls["train"] += 1
        return real_train(*a, **k)

    def counting_play(*a, **k):
        calls["play_match"] += 1
        return real_play(*a, **k)

    monkeypatch.setattr(learners, "train_ppo", counting_train)
    monkeypatch.setattr(league, "play_match", counting_play)
    again = run_league(LocalStore(root), SMOKE)
    assert calls == {"train": 1, "play_match": 3}
    original, redone = LocalStore(smoke.root).snapshot(2), LocalStore(root).snapshot(2)
    assert all(torch.equal(original.model[k], redone.model[k]) for k in original.model)
    assert sorted(LocalStore(root).results(), key=_pair_key) == sorted(
        LocalStore(smoke.root).results(), key=_pair_key
    )
    assert again.fit.ratings == pytest.approx(smoke.final.fit.ratings)


def _pair_key(r: MatchResult) -> tuple[str, str]:
    return (r.a, r.b)


def _result(a: str, b: str, win: int, loss: int, draw: int = 0) -> MatchResult:
    # split evenly by colour; the tests only need totals
    return MatchResult(
        a,
        b,
        0,
        4,
        WDL(win - win // 2, draw - draw // 2, loss - loss // 2),
        WDL(win // 2, draw // 2, loss // 2),
    )


def test_record_match_does_not_double_count(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    assert store.results() == []
    r = _result("gen1", "random", 7, 3)
    store.record_match(r)
    store.record_match(r)
    store.record_match(_result("random", "gen1", 1, 9))  # the same pairing, other way round
    assert store.results() == [r]
    store.record_match(_result("gen1", "tactical", 2, 8))
    assert [(x.a, x.b) for x in store.results()] == [("gen1", "random"), ("gen1", "tactical")]


# ---- opponents ---------------------------------------------------------------------------------
class MemoryStore:
    """An in-memory `LeagueStore`, to check the steps against the protocol alone."""

    def __init__(self) -> None:
        self.snaps: dict[tuple[int, str], Checkpoint] = {}
        self.records: list[MatchResult] = []

    def snapshot(self, generation: int, role: str = "main") -> Checkpoint | None:
        return self.snaps.get((generation, role))

    def save_snapshot(self, checkpoint: Checkpoint, metrics: list[dict[str, float]]) -> None:
        self.snaps[(checkpoint.generation, checkpoint.role)] = checkpoint

    def log_iteration(self, generation: int, iteration: int, metrics: dict, role: str = "main") -> None:
        pass

    def results(self) -> list[MatchResult]:
        return list(self.records)

    def record_match(self, result: MatchResult) -> None:
        if all({r.a, r.b} != {result.a, result.b} for r in self.records):
            self.records.append(result)


@pytest.fixture
def rated_store() -> MemoryStore:
    """Snapshots gen1..gen6 with gen4 > gen2 > gen3 > gen1 > gen5 by results; gen6 unrated."""
    torch.manual_seed(0)
    net = PolicyValueNet(NetConfig(blocks=0, channels=1, value_hidden=1))
    store = MemoryStore()
    for g in range(1, 7):
        store.save_snapshot(Checkpoint.of(net, generation=g), [])
    for g, wins in ((1, 10), (2, 16), (3, 13), (4, 19), (5, 4)):
        store.record_match(_result(f"gen{g}", "random", wins, 20 - wins))
    store.record_match(_result("tactical", "random", 18, 2))
    return store


def test_pick_opponents_takes_the_best_rated_snapshots(rated_store: MemoryStore) -> None:
    cfg = replace(SMOKE, top_snapshots=3)
    assert pick_opponents(rated_store, cfg, 6) == ["random", "tactical", "gen4", "gen2", "gen3", "self"]
    # only snapshots older than the generation being trained count
    assert pick_opponents(rated_store, cfg, 3) == ["random", "tactical", "gen2", "gen1", "self"]
    # an unrated snapshot ranks below every rated one
    assert pick_opponents(rated_store, replace(cfg, top_snapshots=10), 7)[-2:] == ["gen6", "self"]
    assert pick_opponents(rated_store, replace(cfg, top_snapshots=0), 6) == ["random", "tactical", "self"]
    assert pick_opponents(MemoryStore(), cfg, 1) == ["random", "tactical", "self"]


@pytest.mark.parametrize("top", [0, 1, 2, 3, 5])
def test_pick_opponents_shape(rated_store: MemoryStore, top: int) -> None:
    picked = pick_opponents(rated_store, replace(SMOKE, top_snapshots=top), 6)
    assert picked[:2] == list(SMOKE.bots) and picked[-1] == "self"
    snaps = picked[2:-1]
    assert len(snaps) == min(top, 5) and len(set(snaps)) == len(snaps)
    ratings = league_members.fit_ratings(rated_store.results()).ratings
    assert [ratings[s] for s in snaps] == sorted((ratings[s] for s in snaps), reverse=True)


# ---- prioritized fictitious self-play ------------------------------------------------------------
def test_pfsp_weighs_hard_members_most_and_beaten_ones_near_zero() -> None:
    scores = {"always beaten": 1.0, "never beaten": 0.0, "even": 0.5, "unplayed": None}
    w = matchmaking.pfsp_weights(scores, 0.3)
    assert w["always beaten"] == pytest.approx(0.0)
    assert w["never beaten"] == max(w.values())
    assert w["always beaten"] < w["even"] < w["never beaten"]
    assert w["unplayed"] == pytest.approx((1 - 0.3) ** 2)  # the prior stands in for a score


def test_weighted_sample_draws_distinct_names_in_proportion() -> None:
    weights = {"heavy": 1.0, "light": 0.05, "zero": 0.0}
    counts = {m: 0 for m in weights}
    for seed in range(400):
        (first,) = matchmaking.weighted_sample(weights, 1, np.random.default_rng(seed))
        counts[first] += 1
    assert counts["heavy"] > 10 * counts["light"] > 0 and counts["zero"] == 0
    both = matchmaking.weighted_sample(weights, 3, np.random.default_rng(0))
    assert sorted(both) == sorted(weights) and both[-1] == "zero"  # weight 0 comes last


def test_pfsp_opponents_are_drawn_from_the_records_and_favour_the_hard_ones(rated_store: MemoryStore) -> None:
    # gen5 (the learner of generation 6) lost every game to gen2 and won every game against gen3
    rated_store.record_match(_result("gen5", "gen2", 0, 20))
    rated_store.record_match(_result("gen5", "gen3", 20, 0))
    drawn = {f"gen{g}": 0 for g in range(1, 6)}
    for seed in range(60):
        cfg = replace(SMOKE, opponent_sampling="pfsp", top_snapshots=1, seed=seed)
        picked = pick_opponents(rated_store, cfg, 6)
        assert picked[:2] == list(SMOKE.bots) and picked[-1] == "self" and len(picked) == 4
        assert pick_opponents(rated_store, cfg, 6) == picked  # seeded: the same draw again
        drawn[picked[2]] += 1
    assert drawn["gen2"] > drawn["gen1"] > 0 and drawn["gen3"] == 0
    cfg = replace(SMOKE, opponent_sampling="pfsp", top_snapshots=10)
    assert sorted(pick_opponents(rated_store, cfg, 6)[2:-1]) == [f"gen{g}" for g in range(1, 6)]


def test_champion_needs_a_snapshot() -> None:
    fit = fit_elo([_result("tactical", "random", 15, 5).to_record()])
    with pytest.raises(ValueError, match="no main-agent snapshots"):
        champion(fit)


# ---- the AlphaZero-style learner in the league ---------------------------------------------------
MIXED = profile(
    "smoke",
    name="mixed",
    alphazero_from=2,
    alphazero={"iterations": 1, "games": 8, "search": {"simulations": 4}, "batch_size": 64, "epochs": 1.0},
)


def test_mixed_league_trains_gen2_by_alphazero_on_the_same_ladder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert [MIXED.learner(g) for g in (1, 2, 3)] == ["ppo", "alphazero", "alphazero"]
    assert MIXED.iterations(1) == MIXED.ppo.iterations and MIXED.iterations(2) == 1
    calls: list[str] = []
    real_ppo, real_az = learners.train_ppo, learners.train_alphazero
    monkeypatch.setattr(learners, "train_ppo", lambda *a, **k: calls.append("ppo") or real_ppo(*a, **k))
    monkeypatch.setattr(learners, "train_alphazero", lambda *a, **k: calls.append("az") or real_az(*a, **k))
    reports: list[GenerationReport] = []
    iterations: list[tuple[str, int, dict[str, float]]] = []
    final = run_league(
        LocalStore(tmp_path / "m"), MIXED, reports.append, lambda g, i, m: iterations.append((g, i, m))
    )
    assert calls == ["ppo", "az"]
    assert reports[1].opponents == ["self"]  # AlphaZero plays only itself
    assert {"random", "tactical", "gen1", "gen2"} == set(final.fit.ratings)  # one ladder
    az_metrics = [m for g, _, m in iterations if g == "gen2"]
    assert len(az_metrics) == 1 and "selfplay/proven_roots" in az_metrics[0]
    # gen2 continued from gen1's weights
    gen1, gen2 = LocalStore(tmp_path / "m").snapshot(1), LocalStore(tmp_path / "m").snapshot(2)
    assert gen2 is not None and gen2.train_config["alphazero_from"] == 2
    moved = [float((gen1.model[k] - gen2.model[k]).abs().max()) for k in gen1.model]
    assert 0 < max(moved) < 1  # trained a little from gen1, not from a fresh init


# ---- roles: the main exploiter and the league exploiter ------------------------------------------
EXPLOITING = replace(SMOKE, roles=("main", "main-exploiter", "league-exploiter"))


def _snapshots(store: MemoryStore, *members: str) -> MemoryStore:
    torch.manual_seed(0)
    net = PolicyValueNet(NetConfig(blocks=0, channels=1, value_hidden=1))
    for m in members:
        g, role = generation_of(m), role_of(m)
        store.save_snapshot(Checkpoint.of(net, generation=g, role=role), [])
    return store


@pytest.fixture
def role_store() -> MemoryStore:
    """Two generations with exploiters: gen2 beats gen1, so it is champion after generation 2;
    gen2-me, trained on gen1 (the champion after generation 1), beats it 16-4 and every
    main agent too, so it is rated above them all."""
    store = _snapshots(MemoryStore(), "gen1", "gen2", "gen2-me", "gen2-le")
    for a, b, w in (
        ("gen1", "random", 15),
        ("tactical", "random", 18),
        ("gen1", "tactical", 8),
        ("gen2", "gen1", 14),
        ("gen2", "random", 17),
        ("gen2", "tactical", 11),
        ("gen2-me", "gen1", 16),
        ("gen2-me", "gen2", 17),
        ("gen2-me", "random", 20),
        ("gen2-me", "tactical", 18),
        ("gen2-le", "gen1", 9),
        ("gen2-le", "random", 16),
        ("gen2-le", "tactical", 6),
        ("gen2-le", "gen2", 7),
        ("gen2-le", "gen2-me", 3),
    ):
        store.record_match(_result(a, b, w, 20 - w))
    return store


def test_a_main_exploiter_trains_only_against_the_champion(role_store: MemoryStore) -> None:
    assert pick_opponents(role_store, EXPLOITING, 2, "main-exploiter") == ["gen1"]
    assert pick_opponents(role_store, EXPLOITING, 3, "main-exploiter") == ["gen2"]
    with pytest.raises(ValueError, match="no champion"):
        pick_opponents(MemoryStore(), EXPLOITING, 1, "main-exploiter")


def test_an_exploiter_rated_above_every_main_agent_is_never_champion(role_store: MemoryStore) -> None:
    fit = league_members.fit_ratings(role_store.results())
    assert max(fit.ratings, key=fit.ratings.get) == "gen2-me"
    assert champion(fit) == "gen2" == league_members.champion_after(role_store.results(), 2)
    assert league_members.champion_after(role_store.results(), 1) == "gen1"  # what generation 2 trained on


def test_the_league_exploiter_draws_from_the_whole_league_by_pfsp(role_store: MemoryStore) -> None:
    cfg = replace(EXPLOITING, top_snapshots=3)
    picked = pick_opponents(role_store, cfg, 3, "league-exploiter")
    everyone = league_members.members(role_store, cfg, 2)
    assert len(picked) == 3 == len(set(picked)) and set(picked) <= set(everyone) and "self" not in picked
    assert picked == pick_opponents(role_store, cfg, 3, "league-exploiter")  # seeded
    # over seeds, the member gen2-le did worst against (gen2-me, 3-17) is drawn most
    counts: dict[str, int] = {}
    for seed in range(60):
        (m,) = pick_opponents(role_store, replace(cfg, top_snapshots=1, seed=seed), 3, "league-exploiter")
        counts[m] = counts.get(m, 0) + 1
    assert max(counts, key=counts.get) == "gen2-me"
    assert counts.get("random", 0) < counts["gen2-me"]


def test_the_main_agent_trains_against_exploiters_too(role_store: MemoryStore) -> None:
    picked = pick_opponents(role_store, replace(EXPLOITING, top_snapshots=3), 3)
    assert "gen2-me" in picked  # the best-rated snapshot: what the exploiter found, the main agent meets


def test_main_exploiter_starts_again_once_it_beats_its_champion(role_store: MemoryStore) -> None:
    results = role_store.results()
    strict = replace(EXPLOITING, exploiter_reset_score=0.7, exploiter_base="fresh")
    assert league_members.exploitability(results, 2) == pytest.approx(0.8)  # gen2-me vs gen1
    assert league_members.main_exploiter_start(results, strict, 3) == 3  # 0.8 >= 0.7: a fresh start
    assert league_members.starting_point(role_store, strict, 3, "main-exploiter") is None
    first = replace(strict, exploiter_base="first")
    assert league_members.starting_point(role_store, first, 3, "main-exploiter") == "gen1"
    lenient = replace(EXPLOITING, exploiter_reset_score=0.9, exploiter_reset_generations=2)
    assert league_members.main_exploiter_start(results, lenient, 3) == 2  # 0.8 < 0.9: it goes on
    assert league_members.starting_point(role_store, lenient, 3, "main-exploiter") == "gen2-me"
    assert league_members.main_exploiter_start(results, lenient, 4) == 4  # two generations old: restart
    # the league exploiter and the main agent always go on from their last snapshot
    assert league_members.starting_point(role_store, strict, 3, "league-exploiter") == "gen2-le"
    assert league_members.starting_point(role_store, strict, 3) == "gen2"
    assert league_members.exploitability(results, 3) is None  # no gen3-me yet


def test_iterations_to_beat_each_champion_count_across_generations(role_store: MemoryStore) -> None:
    results = role_store.results() + [_result("gen3", "gen2", 15, 5), _result("gen3", "random", 19, 1)]
    store = _snapshots(role_store, "gen3")
    for r in results[len(role_store.results()) :]:
        store.record_match(r)
    metrics = {
        2: [{"vs/gen1/win": 0.3}, {"vs/gen1/win": 0.5, "vs/gen1/draw": 0.1}, {"vs/gen1/win": 0.2}],
        3: [{"vs/gen2/win": 0.4}, {"vs/gen2/win": 0.5}],
        4: [{"vs/gen3/win": 0.1}],
    }
    rows = league_members.iterations_to_beat(store.results(), EXPLOITING, metrics, 4)
    assert [(r["champion"], r["from_generation"]) for r in rows] == [("gen1", 2), ("gen2", 3), ("gen3", 4)]
    assert [r["iterations"] for r in rows] == [2, None, None]  # 0.5 + 0.1 / 2 >= 0.55 on the 2nd
    assert [r["trained"] for r in rows] == [3, 2, 1]


@pytest.fixture(scope="module")
def exploited(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GenerationReport, list[str]]:
    """A smoke league of three generations with a main exploiter, trained in two processes."""
    root = tmp_path_factory.mktemp("exploited")
    cfg = replace(SMOKE, generations=3, roles=("main", "main-exploiter"))
    seen: list[str] = []
    final = run_league(LocalStore(root), cfg, on_iteration=lambda member, i, m: seen.append(member))
    return root, final, seen


@pytest.mark.slow
def test_a_league_with_a_main_exploiter_rates_every_snapshot_on_one_ladder(
    exploited: tuple[Path, GenerationReport, list[str]],
) -> None:
    root, final, seen = exploited
    cfg = replace(SMOKE, generations=3, roles=("main", "main-exploiter"))
    store = LocalStore(root)
    snaps = ["gen1", "gen2", "gen2-me", "gen3", "gen3-me"]
    assert league_members.members(store, cfg, 3) == list(SMOKE.bots) + snaps
    assert set(final.fit.ratings) == set(SMOKE.bots) | set(snaps)
    pairs = [frozenset((r.a, r.b)) for r in store.results()]
    assert len(pairs) == len(set(pairs))  # each pairing once
    everyone = list(SMOKE.bots) + snaps
    assert set(pairs) == {frozenset((a, b)) for a in everyone for b in everyone if a != b} - {
        frozenset(SMOKE.bots)
    }
    assert role_of(final.champion) == "main"
    assert final.exploiters == {"main-exploiter": [league_members.champion_after(store.results(), 2)]}
    gen3_me = store.snapshot(3, "main-exploiter")
    assert gen3_me is not None and gen3_me.role == "main-exploiter" and gen3_me.generation == 3
    # every learner's iterations reached this process's callback, from the learner processes too
    assert {m: seen.count(m) for m in set(seen)} == {m: SMOKE.ppo.iterations for m in snaps}


# ---- data-parallel learners --------------------------------------------------------------------
RANKED = replace(SMOKE, name="ranked", roles=("main", "main-exploiter"), ppo=replace(SMOKE.ppo, ranks=2))
"""Two PPO ranks per learner; from generation 2, the main agent's ranks train beside the exploiter's."""


@pytest.fixture(scope="module")
def ranked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GenerationReport, list[str]]:
    root = tmp_path_factory.mktemp("ranked")
    seen: list[str] = []
    final = run_league(LocalStore(root), RANKED, on_iteration=lambda member, i, m: seen.append(member))
    return root, final, seen


@pytest.mark.slow
def test_a_league_trains_each_learner_on_two_ranks_and_resumes(
    ranked: tuple[Path, GenerationReport, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, final, seen = ranked
    store = LocalStore(root)
    snaps = ["gen1", "gen2", "gen2-me"]
    assert set(final.fit.ratings) == set(SMOKE.bots) | set(snaps)
    assert role_of(final.champion) == "main"
    # only rank 0 records: each learner's iterations arrive once, whatever its ranks
    assert {m: seen.count(m) for m in set(seen)} == {m: RANKED.ppo.iterations for m in snaps}
    assert RANKED.training_hash() != replace(RANKED, ppo=SMOKE.ppo).training_hash()
    monkeypatch.setattr(learners, "train_ppo", _forbid)
    monkeypatch.setattr(league, "play_match", _forbid)
    assert run_league(store, RANKED).fit.ratings == final.fit.ratings


@pytest.mark.slow
def test_a_rank_that_dies_fails_its_learner_by_name_and_saves_nothing(tmp_path: Path) -> None:
    import multiprocessing
    import os
    import signal

    def kill_rank1(i: int, m: dict[str, float]) -> None:
        for child in multiprocessing.active_children():
            if child.name == "gen1-rank1":
                os.kill(child.pid, signal.SIGKILL)

    store = LocalStore(tmp_path / "s")
    config = replace(RANKED, roles=("main",), ppo=replace(RANKED.ppo, iterations=3))
    with pytest.raises(RuntimeError, match=r"learner gen1: rank 1 failed: its process died"):
        processes.train_generation(store, config, 1, ["random", "self"], kill_rank1)
    assert store.snapshot(1) is None
    # the rerun gets a rank of its own in place of the dead one
    assert processes.train_generation(store, config, 1, ["random", "self"]).generation == 1


@pytest.mark.slow
def test_a_rank_server_trains_one_learner_after_another_and_carries_nothing_over(tmp_path: Path) -> None:
    import psutil

    config = replace(RANKED, roles=("main",))
    first = processes.train_generation(LocalStore(tmp_path / "a"), config, 1, ["random", "tactical", "self"])
    servers = [s.process.pid for s in processes._SERVERS]
    second = processes.train_generation(LocalStore(tmp_path / "b"), config, 1, ["random", "tactical", "self"])
    assert len(servers) == 1 and [s.process.pid for s in processes._SERVERS] == servers
    assert first.model.keys() == second.model.keys()
    assert all(torch.equal(first.model[k], second.model[k]) for k in first.model)
    assert psutil.Process(servers[0]).name() == processes.IDLE_RANK  # waiting, and named so


AZ_RANKED = replace(
    SMOKE,
    name="az-ranked",
    alphazero_from=2,
    alphazero=AlphaZeroConfig(
        iterations=2, games=8, search=SearchConfig(simulations=8, root_noise=True), batch_size=64, ranks=2
    ),
)
"""PPO's generation 1 alone, then an AlphaZero-style generation on two ranks."""


@pytest.mark.slow
def test_an_alphazero_generation_trains_on_two_ranks_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    worlds: list[int] = []
    real = learners.train_alphazero

    def spy(*args, **kwargs):
        worlds.append(args[-1].world)  # this process is rank 0; its rank 1 is a rank server
        return real(*args, **kwargs)

    monkeypatch.setattr(learners, "train_alphazero", spy)
    store = LocalStore(tmp_path)
    seen: list[tuple[str, dict[str, float]]] = []
    final = run_league(store, AZ_RANKED, on_iteration=lambda member, i, m: seen.append((member, m)))
    assert worlds == [2]
    # rank 0 alone records, once an iteration, with the losses of the fit only it makes
    gen2 = [m for member, m in seen if member == "gen2"]
    assert len(gen2) == AZ_RANKED.alphazero.iterations and all("losses/policy" in m for m in gen2)
    assert set(final.fit.ratings) == set(SMOKE.bots) | {"gen1", "gen2"}
    assert (
        AZ_RANKED.training_hash()
        != replace(AZ_RANKED, alphazero=replace(AZ_RANKED.alphazero, ranks=1)).training_hash()
    )
    monkeypatch.setattr(learners, "train_alphazero", _forbid)
    monkeypatch.setattr(league, "play_match", _forbid)
    assert run_league(store, AZ_RANKED).fit.ratings == final.fit.ratings


def test_a_dots_and_boxes_4x4_league_trains_plays_its_bots_and_rates_them(tmp_path: Path) -> None:
    """The 4x4 variant in-process: a snapshot trained on the 40-line board, matched against
    `random` and `greedy`, and rated with them."""
    config = league_config("smoke", "d4", game="dots-and-boxes-4x4", generations=1, iterations=1, games=16)
    final = run_league(LocalStore(tmp_path / "d4"), config)
    ckpt = LocalStore(tmp_path / "d4").snapshot(1)
    assert ckpt is not None and ckpt.game.num_actions == 40 and config.bots == ("random", "greedy")
    assert {_pair(m) for m in final.matches} == {frozenset({"gen1", "random"}), frozenset({"gen1", "greedy"})}
    assert set(final.fit.ratings) == {"gen1", "random", "greedy"} and final.fit.ratings["random"] == 0.0
