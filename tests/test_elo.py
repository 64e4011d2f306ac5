"""Tests for c4core.evaluation.elo: closed-form cases, invariances, recovery and validation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from c4core.evaluation.elo import ELO_SCALE, EloFit, expected_score, fit_elo, format_ladder

Z95 = 1.96
ELO_PER_LOGIT = ELO_SCALE / math.log(10.0)


def rec(a: str, b: str, win: int, draw: int = 0, loss: int = 0, **extra: object) -> dict:
    return {"a": a, "b": b, "win": win, "draw": draw, "loss": loss, **extra}


def elo_diff(score: float, games: float) -> float:
    """Rating gap at which the Bradley-Terry expected score equals score / games."""
    p = score / games
    return ELO_SCALE * math.log10(p / (1.0 - p))


def half_width(fit: EloFit, name: str) -> float:
    lo, hi = fit.ci95[name]
    return (hi - lo) / 2.0


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240601)


@pytest.fixture
def league(rng: np.random.Generator) -> tuple[list[dict], dict[str, float]]:
    """20 players with known ratings, every pair playing 200 binomially sampled games."""
    names = ["random"] + [f"p{k:02d}" for k in range(1, 20)]
    true = rng.normal(0.0, 150.0, size=len(names))
    true -= true[0]
    records = []
    for x in range(len(names)):
        for y in range(x + 1, len(names)):
            wins = int(rng.binomial(200, expected_score(true[x], true[y])))
            records.append(rec(names[x], names[y], wins, 0, 200 - wins))
    return records, dict(zip(names, true.tolist(), strict=True))


# --- hand-checkable cases -------------------------------------------------------------


def test_two_players_match_closed_form_with_virtual_draw() -> None:
    fit = fit_elo([rec("A", "B", 750, 0, 250)], anchor="B")
    # One virtual draw: half a win and half a loss on top of the 1000 real games.
    assert fit.ratings["A"] == pytest.approx(elo_diff(750.5, 1001), abs=1e-6)
    assert fit.ratings["B"] == 0.0


def test_draws_count_as_half_a_win() -> None:
    fit = fit_elo([rec("A", "B", 600, 200, 200)], anchor="B")
    assert fit.ratings["A"] == pytest.approx(elo_diff(700.5, 1001), abs=1e-6)


def test_virtual_draws_parameter_scales_the_prior() -> None:
    plain = fit_elo([rec("A", "B", 75, 0, 25)], anchor="B", virtual_draws=0)
    heavy = fit_elo([rec("A", "B", 75, 0, 25)], anchor="B", virtual_draws=10)
    assert plain.ratings["A"] == pytest.approx(elo_diff(75, 100), abs=1e-6)
    assert heavy.ratings["A"] == pytest.approx(elo_diff(80, 110), abs=1e-6)


def test_one_virtual_draw_per_pairing_however_many_records() -> None:
    split = [
        rec("A", "B", 300, 0, 100),
        rec("B", "A", 100, 0, 200),  # the same pair seen from B's side
        rec("A", "B", 250, 0, 50),
    ]
    fit = fit_elo(split, anchor="B")
    assert fit.ratings["A"] == pytest.approx(elo_diff(750.5, 1001), abs=1e-6)
    assert fit.games == {"A": 1000, "B": 1000}


def test_symmetric_results_give_equal_ratings() -> None:
    results = [rec("A", "B", 40, 20, 40), rec("B", "C", 30, 0, 30), rec("C", "A", 5, 90, 5)]
    fit = fit_elo(results, anchor="A")
    assert fit.ratings["B"] == pytest.approx(0.0, abs=1e-9)
    assert fit.ratings["C"] == pytest.approx(0.0, abs=1e-9)


def test_rock_paper_scissors_cycle_gives_equal_ratings() -> None:
    cycle = [rec("A", "B", 60, 0, 40), rec("B", "C", 60, 0, 40), rec("C", "A", 60, 0, 40)]
    fit = fit_elo(cycle, anchor="A")
    assert fit.ratings["B"] == pytest.approx(0.0, abs=1e-9)
    assert fit.ratings["C"] == pytest.approx(0.0, abs=1e-9)


def test_transitive_results_give_ordered_ratings() -> None:
    results = [rec("A", "B", 70, 0, 30), rec("B", "C", 70, 0, 30), rec("A", "C", 85, 0, 15)]
    fit = fit_elo(results, anchor="C")
    assert fit.ratings["A"] > fit.ratings["B"] > fit.ratings["C"] == 0.0
    assert [row[0] for row in fit.ladder()] == ["A", "B", "C"]


def test_perfect_record_gives_large_finite_rating() -> None:
    fit = fit_elo([rec("A", "random", 1000, 0, 0)])
    r = fit.ratings["A"]
    assert math.isfinite(r) and r > 400.0
    assert r == pytest.approx(elo_diff(1000.5, 1001), abs=1e-6)
    lo, hi = fit.ci95["A"]
    assert math.isfinite(lo) and math.isfinite(hi) and lo < r < hi


def test_perfect_record_without_virtual_draws_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"virtual_draws=0.*infinite"):
        fit_elo([rec("A", "B", 10, 0, 0)], virtual_draws=0)


def test_intervals_match_hand_computed_fisher_information() -> None:
    # Three equal players, 100 games per pair: each pair's information is w = 101/4
    # (101 games including the virtual draw, p = 1/2). Pinning C leaves the 2x2 block
    # w * [[2, -1], [-1, 2]], whose inverse has diagonal 2 / (3w).
    results = [rec("A", "B", 40, 20, 40), rec("A", "C", 50, 0, 50), rec("B", "C", 0, 100, 0)]
    w = 101 / 4
    anchored = fit_elo(results, anchor="C")
    assert half_width(anchored, "A") == pytest.approx(Z95 * ELO_PER_LOGIT * math.sqrt(2 / (3 * w)), rel=1e-9)
    # Mean pinned: pseudo-inverse of the Laplacian w * (3I - 11'), diagonal 2 / (9w).
    centred = fit_elo(results, anchor="nobody")
    for name in "ABC":
        assert half_width(centred, name) == pytest.approx(
            Z95 * ELO_PER_LOGIT * math.sqrt(2 / (9 * w)), rel=1e-9
        )


# --- anchoring ------------------------------------------------------------------------


def test_anchor_is_pinned_at_exactly_zero(league: tuple[list[dict], dict[str, float]]) -> None:
    records, _ = league
    fit = fit_elo(records)
    assert fit.anchor == "random"
    assert fit.ratings["random"] == 0.0
    assert fit.ci95["random"] == (0.0, 0.0)
    assert all(half_width(fit, name) > 0 for name in fit.ratings if name != "random")


def test_missing_anchor_pins_the_mean(league: tuple[list[dict], dict[str, float]]) -> None:
    records, _ = league
    anchored = fit_elo(records)
    centred = fit_elo(records, anchor="not-a-player")
    assert centred.anchor is None
    assert sum(centred.ratings.values()) == pytest.approx(0.0, abs=1e-9)
    # Only the reference point moves: all rating gaps are unchanged.
    shift = centred.ratings["random"] - anchored.ratings["random"]
    for name, r in anchored.ratings.items():
        assert centred.ratings[name] == pytest.approx(r + shift, abs=1e-6)
    # No player is special when the mean is pinned, so every interval has width.
    assert all(half_width(centred, name) > 0 for name in centred.ratings)


# --- invariances ----------------------------------------------------------------------

PLAYERS = ["random", "alpha", "beta", "gamma", "delta"]
counts = st.integers(min_value=0, max_value=30)
pair_indices = st.tuples(st.integers(0, len(PLAYERS) - 1), st.integers(0, len(PLAYERS) - 1)).filter(
    lambda ab: ab[0] != ab[1]
)
random_records = st.lists(
    st.builds(
        lambda ab, win, draw, loss: rec(PLAYERS[ab[0]], PLAYERS[ab[1]], win, draw, loss),
        pair_indices,
        counts,
        counts,
        counts,
    ),
    max_size=12,
)
# A chain through all players keeps the pairing graph connected.
CHAIN = [rec(PLAYERS[k], PLAYERS[k + 1], 3, 1, 2) for k in range(len(PLAYERS) - 1)]


def swapped(r: dict) -> dict:
    return rec(r["b"], r["a"], r["loss"], r["draw"], r["win"])


@settings(max_examples=60, deadline=None)
@given(extra=random_records, data=st.data())
def test_record_order_and_orientation_do_not_matter(extra: list[dict], data: st.DataObject) -> None:
    records = [*CHAIN, *extra]
    shuffled = data.draw(st.permutations(records))
    flips = data.draw(st.lists(st.booleans(), min_size=len(records), max_size=len(records)))
    reoriented = [swapped(r) if flip else r for r, flip in zip(shuffled, flips, strict=True)]
    for anchor in ("random", "nobody"):
        base = fit_elo(records, anchor=anchor)
        other = fit_elo(reoriented, anchor=anchor)
        # Bitwise: the fit only ever sees the canonical per-pair integer totals.
        assert other == base


def test_shuffled_records_are_bitwise_identical(rng: np.random.Generator) -> None:
    records = [*CHAIN, rec("alpha", "gamma", 9, 2, 4), rec("delta", "random", 1, 0, 7)]
    base = fit_elo(records)
    for _ in range(5):
        order = rng.permutation(len(records))
        other = fit_elo([swapped(records[k]) if k % 2 else records[k] for k in order])
        assert other.to_json() == base.to_json()


def test_zero_game_records_contribute_nothing() -> None:
    base = [rec("A", "B", 7, 1, 2)]
    fit = fit_elo(base, anchor="B")
    padded = fit_elo([*base, rec("B", "A", 0, 0, 0), rec("A", "C", 0, 0, 0)], anchor="B")
    assert padded.ratings == fit.ratings  # no extra virtual draw for the A-B pair
    assert "C" not in padded.ratings  # and no player from an unplayed pairing


def test_extra_keys_are_ignored() -> None:
    plain = fit_elo([rec("A", "B", 7, 1, 2)])
    extra = fit_elo([rec("A", "B", 7, 1, 2, seed=3, note="x")])
    assert extra.ratings == plain.ratings


def test_numpy_integer_counts_are_accepted() -> None:
    fit = fit_elo([rec("A", "B", np.int64(7), np.int32(1), np.uint8(2))], anchor="B")
    assert fit.ratings["A"] == pytest.approx(elo_diff(8, 11), abs=1e-6)


# --- statistical behaviour ------------------------------------------------------------


def test_recovers_known_ratings(league: tuple[list[dict], dict[str, float]]) -> None:
    records, true = league
    fit = fit_elo(records)
    covered = 0
    for name, r_true in true.items():
        if name == "random":
            continue
        sd = half_width(fit, name) / Z95
        assert abs(fit.ratings[name] - r_true) <= 3.0 * sd, name
        lo, hi = fit.ci95[name]
        covered += lo <= r_true <= hi
    assert covered >= 0.8 * (len(true) - 1)


def test_more_games_give_narrower_intervals() -> None:
    small = fit_elo([rec("A", "random", 30, 10, 20), rec("A", "B", 20, 0, 20)])
    large = fit_elo([rec("A", "random", 300, 100, 200), rec("A", "B", 200, 0, 200)])
    for name in ("A", "B"):
        assert half_width(large, name) < half_width(small, name)
    assert large.games["A"] == 10 * small.games["A"]


# --- validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"a": "A", "b": "B", "win": 1, "draw": 0}, r"results\[1\] .*missing key\(s\) loss"),
        ({"b": "B", "win": 1, "draw": 0, "loss": 0}, r"results\[1\] .*missing key\(s\) a"),
        (rec("A", "B", -1, 0, 0), r"results\[1\] .*'win' must be non-negative"),
        (rec("A", "B", 1, 0.5, 0), r"results\[1\] .*'draw' must be an int"),
        (rec("A", "B", 1, 0, 2.0), r"results\[1\] .*'loss' must be an int"),
        (rec("A", "B", True, 0, 0), r"results\[1\] .*'win' must be an int"),
        (rec("A", "A", 1, 0, 0), r"results\[1\] .*cannot play itself"),
        (rec("", "B", 1, 0, 0), r"results\[1\] .*'a' is an empty player name"),
        (rec("A", "  ", 1, 0, 0), r"results\[1\] .*'b' is an empty player name"),
        (rec("A", 7, 1, 0, 0), r"results\[1\] .*'b' is not a str but int"),
        (("A", "B", 1, 0, 0), r"results\[1\] .*expected a mapping"),
    ],
)
def test_invalid_records_are_rejected_with_helpful_message(bad: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fit_elo([rec("A", "B", 1, 0, 0), bad])


def test_disconnected_graph_names_the_components() -> None:
    results = [rec("A", "B", 1, 0, 1), rec("C", "D", 2, 0, 0), rec("E", "C", 0, 1, 0)]
    with pytest.raises(ValueError, match=r"2 disconnected components.*\[A, B\]; \[C, D, E\]"):
        fit_elo(results)


@pytest.mark.parametrize("virtual_draws", [-1.0, math.nan, math.inf, "1"])
def test_invalid_virtual_draws_are_rejected(virtual_draws: object) -> None:
    with pytest.raises(ValueError, match="virtual_draws must be a finite number"):
        fit_elo([rec("A", "B", 1, 0, 1)], virtual_draws=virtual_draws)


# --- small API surface ----------------------------------------------------------------


def test_empty_input_gives_empty_fit() -> None:
    fit = fit_elo([])
    assert fit == EloFit(ratings={}, ci95={}, anchor=None, games={})
    assert fit.ladder() == []


def test_ladder_sorts_by_rating_then_name() -> None:
    fit = fit_elo([rec("b", "random", 5, 0, 5), rec("a", "random", 5, 0, 5)])
    assert [row[0] for row in fit.ladder()] == ["a", "b", "random"]
    name, r, lo, hi = fit.ladder()[0]
    assert (r, (lo, hi)) == (fit.ratings[name], fit.ci95[name])


def test_to_json_round_trips_full_precision() -> None:
    fit = fit_elo([rec("A", "random", 7, 1, 2), rec("B", "A", 3, 3, 4)])
    data = json.loads(json.dumps(fit.to_json()))
    assert set(data) == {"ratings", "ci95"}
    assert data["ratings"] == fit.ratings
    assert data["ci95"] == {name: list(ci) for name, ci in fit.ci95.items()}


def test_format_ladder_lists_players_in_rank_order() -> None:
    fit = fit_elo([rec("strong", "random", 90, 0, 10), rec("weak", "random", 40, 0, 60)])
    lines = format_ladder(fit).splitlines()
    assert lines[0].split() == ["rank", "player", "Elo", "95%", "CI", "games"]
    body = [line.split()[:2] for line in lines[2:5]]
    assert body == [["1", "strong"], ["2", "random"], ["3", "weak"]]
    assert "[0.0, 0.0]" in lines[3] and lines[3].endswith("200")


def test_expected_score() -> None:
    assert expected_score(0.0, 0.0) == 0.5
    assert expected_score(400.0, 0.0) == pytest.approx(10 / 11)
    assert expected_score(123.0, 45.0) + expected_score(45.0, 123.0) == pytest.approx(1.0)
    assert expected_score(1e6, 0.0) == 1.0 and expected_score(0.0, 1e6) == 0.0
