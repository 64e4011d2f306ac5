"""Matches (`c4core.evaluation.match`): argument checks, bookkeeping, seeding, the two engines, openings.

Scripted bots play in compiled kernels and anything else steps a `Boards` batch; the same bots
forced onto the batch path (``kernel = None``) must score the same within sampling error. The
random openings are what keep two greedy networks from replaying one game per colour.
"""

from __future__ import annotations

import json
import math
import time

import pytest
import torch

from c4core.config import NetConfig
from c4core.evaluation.match import WDL, MatchResult, play_match
from c4core.games.connect4.batch import Boards
from c4core.games.connect4.bots import TacticalBot
from c4core.games.players import Player, RandomBot
from c4core.learners.net import NetPlayer, PolicyValueNet

SEED = 2024
TINY = NetConfig(blocks=1, channels=8, value_hidden=8)


class TorchTactical(TacticalBot):
    """The tactical bot forced onto the batched torch path."""

    kernel = None


class TorchRandom(RandomBot):
    kernel = None


class Recorder(Player):
    """Wraps a player and records every live position it is asked about, by ply."""

    def __init__(self, inner: Player, name: str):
        self.inner = inner
        self.name = name
        self.seen: dict[int, set[tuple[int, int]]] = {}

    def act(self, boards: Boards, generator: torch.Generator | None = None) -> torch.Tensor:
        for i in range(len(boards)):
            if not bool(boards.done[i]):
                ply = int(boards.ply[i])
                self.seen.setdefault(ply, set()).add((int(boards.current[i]), int(boards.mask[i])))
        return self.inner.act(boards, generator)


@pytest.fixture(scope="module")
def greedy_nets() -> tuple[NetPlayer, NetPlayer]:
    torch.manual_seed(SEED)
    return NetPlayer(PolicyValueNet(TINY), "netA"), NetPlayer(PolicyValueNet(TINY), "netB")


@pytest.mark.parametrize("games", [0, 1, 3, 401, -2, 2.0, "4", True, None])
def test_games_must_be_even_and_at_least_two(games) -> None:
    with pytest.raises(ValueError, match="even number of at least 2"):
        play_match(RandomBot(), RandomBot(), games)


@pytest.mark.parametrize("plies", [-1, 42, 100])
def test_opening_plies_must_fit_the_board(plies: int) -> None:
    with pytest.raises(ValueError, match="opening_plies"):
        play_match(RandomBot(), RandomBot(), 2, opening_plies=plies)


@pytest.mark.parametrize(
    "a, b", [(TacticalBot, RandomBot), (TorchTactical, RandomBot), (RandomBot, TorchRandom)]
)
@pytest.mark.parametrize("games", [2, 10, 200])
def test_totals_add_up(a, b, games: int) -> None:
    start = time.perf_counter()
    r = play_match(a(), b(), games, seed=SEED)
    elapsed = time.perf_counter() - start
    t = r.total
    assert t.win + t.draw + t.loss == games == r.games
    assert r.a_first + r.b_first == t
    assert r.a_first.games == r.b_first.games == games // 2
    assert (r.a, r.b, r.seed, r.opening_plies) == (a.name, b.name, SEED, 4)
    assert 0 < r.seconds <= elapsed  # the match's own time, within the call's


def test_torch_path_in_several_chunks_adds_up() -> None:
    r = play_match(TorchTactical(), RandomBot(), 30, seed=SEED, batch_pairs=4)
    assert r.games == 30 and r.a_first.games == r.b_first.games == 15


@pytest.mark.parametrize("a, b", [(TacticalBot, RandomBot), (TorchTactical, RandomBot)])
def test_same_seed_same_result_other_seeds_differ(a, b) -> None:
    first = play_match(a(), b(), 200, seed=SEED)
    assert play_match(a(), b(), 200, seed=SEED) == first
    others = {(r.a_first, r.b_first) for r in (play_match(a(), b(), 200, seed=s) for s in range(5))}
    assert len(others) > 1


def test_kernel_and_torch_paths_agree_statistically() -> None:
    games = 4000
    kernel = play_match(TacticalBot(), RandomBot(), games, seed=SEED).total.score
    torch_path = play_match(TorchTactical(), RandomBot(), games, seed=SEED).total.score
    # two independent estimates of the same score: allow five standard errors of the difference
    p = (kernel + torch_path) / 2
    se = math.sqrt(2 * p * (1 - p) / games)
    assert abs(kernel - torch_path) < 5 * se + 1e-3, (kernel, torch_path)
    assert kernel > 0.9 and torch_path > 0.9


def test_mixed_paths_agree_statistically() -> None:
    """One scripted bot on each path (the batch engine drives the kernel-capable bot too)."""
    games = 4000
    kernel = play_match(TacticalBot(), TacticalBot(), games, seed=SEED)
    mixed = play_match(TorchTactical(), TacticalBot(), games, seed=SEED)
    se = math.sqrt(2 * 0.25 / games)
    assert abs(kernel.total.score - 0.5) < 5 * se
    assert abs(mixed.total.score - 0.5) < 5 * se
    # first-move advantage shows on both paths
    assert kernel.a_first.score > kernel.b_first.score
    assert mixed.a_first.score > mixed.b_first.score


@pytest.mark.parametrize("a", [RandomBot, TorchRandom])
def test_random_versus_random_scores_about_half(a) -> None:
    r = play_match(a(), RandomBot(), 4000, seed=SEED)
    assert abs(r.total.score - 0.5) < 0.04
    assert r.a_first.score > 0.5 > r.b_first.score  # the first player has the edge


def test_openings_make_greedy_games_differ(greedy_nets) -> None:
    def distinct_per_ply(plies: int) -> dict[int, int]:
        a, b = (Recorder(p, p.name) for p in greedy_nets)
        play_match(a, b, 60, seed=SEED, opening_plies=plies)
        merged: dict[int, set] = {}
        for rec in (a, b):
            for ply, positions in rec.seen.items():
                merged.setdefault(ply, set()).update(positions)
        return {ply: len(s) for ply, s in merged.items()}

    none = distinct_per_ply(0)
    # greedy vs greedy with no opening: one game per colour, so at most 2 positions at any ply
    assert none and max(none.values()) <= 2
    assert none[0] == 1  # both games start from the empty board
    four = distinct_per_ply(4)
    assert min(four) == 4  # the players first act after the 4 random plies
    assert four[4] > 10 and max(four.values()) > 10


def test_wdl_arithmetic() -> None:
    w = WDL(3, 2, 1)
    assert w.games == 6 and w.score == pytest.approx(4 / 6)
    assert w + WDL(1, 0, 0) == WDL(4, 2, 1)
    assert WDL().score == 0.0 and WDL().games == 0


def test_record_round_trip() -> None:
    r = play_match(TacticalBot(), RandomBot(), 20, seed=SEED, opening_plies=2)
    rec = r.to_record()
    for key in (
        "a",
        "b",
        "games",
        "seed",
        "opening_plies",
        "win",
        "draw",
        "loss",
        "a_first",
        "b_first",
        "seconds",
    ):
        assert key in rec
    assert (rec["win"], rec["draw"], rec["loss"]) == (r.total.win, r.total.draw, r.total.loss)
    back = MatchResult.from_record(json.loads(json.dumps(rec)))
    assert back == r
    assert back.seconds == pytest.approx(r.seconds, abs=1e-4)
    assert back.to_record() == rec
