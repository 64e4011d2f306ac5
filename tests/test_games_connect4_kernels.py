"""Tests for c4core.games.connect4.kernels: compiled bot-vs-bot matches and the compiled bitboard rules.

The match kernel must be a pure function of its seed (not of the thread count), fair to both
colours, agree with the torch match path within sampling error, and its `has_won` /
`winning_cells` must agree with the pure-Python rules of `c4core.games.connect4.rules`.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from c4core.evaluation.match import play_match as torch_or_kernel_match
from c4core.games.connect4 import kernels
from c4core.games.connect4.bots import TacticalBot
from c4core.games.connect4.kernels import RANDOM, TACTICAL
from c4core.games.connect4.rules import STANDARD, Geometry, Position, has_won, winning_cells
from c4core.games.players import RandomBot

SIGMAS = 4.5
"""Tolerance, in standard errors, of the statistical checks (all seeds are fixed)."""


def match(kind_a, kind_b, pairs, seed=1, opening=2, g=STANDARD):
    return kernels.play_match(kind_a, kind_b, pairs, seed, opening, g.rows, g.cols, g.connect)


def score(outcomes: np.ndarray) -> float:
    return float((outcomes.astype(np.float64) + 1).mean() / 2)


def pair_se(outcomes: np.ndarray) -> float:
    """Standard error of the score, from pair means (both games of a pair share an opening)."""
    pairs = (outcomes.astype(np.float64) + 1).reshape(-1, 2).mean(1) / 2
    return float(pairs.std(ddof=1) / math.sqrt(len(pairs)))


def test_output_shape_and_values():
    out = match(TACTICAL, RANDOM, 300)
    assert out.dtype == np.int8 and out.shape == (600,)
    assert set(np.unique(out)) <= {-1, 0, 1}


def test_deterministic_in_the_seed():
    a = match(RANDOM, TACTICAL, 2_000, seed=7)
    assert np.array_equal(a, match(RANDOM, TACTICAL, 2_000, seed=7))
    assert not np.array_equal(a, match(RANDOM, TACTICAL, 2_000, seed=8))
    # a longer match extends a shorter one: game i depends on (seed, i) only
    assert np.array_equal(match(RANDOM, TACTICAL, 500, seed=7), a[:1_000])


def test_independent_of_thread_count():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has a single thread here")
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = match(TACTICAL, RANDOM, 3_000, seed=11)
        numba.set_num_threads(2)
        two = match(TACTICAL, RANDOM, 3_000, seed=11)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(one, two)


@pytest.mark.parametrize("g", [STANDARD, Geometry(4, 4, 3), Geometry(5, 6, 4)], ids=str)
def test_random_vs_random_is_fair(g):
    out = match(RANDOM, RANDOM, 20_000, seed=3, g=g)
    assert abs(score(out) - 0.5) < SIGMAS * pair_se(out)
    # but the first mover does have an edge, so the colour split is what makes it fair
    assert score(out[0::2]) > 0.5 > score(out[1::2])


def test_tactical_beats_random():
    out = match(TACTICAL, RANDOM, 5_000, seed=5)
    assert (out == 1).mean() > 0.9
    swapped = match(RANDOM, TACTICAL, 5_000, seed=5)
    assert (swapped == -1).mean() > 0.9


def test_openings_are_shared_within_a_pair():
    # with the whole game as the opening, both games of a pair are the same random game;
    # A moves first in the even game, so A's results in a pair are opposite (or both draws)
    g = Geometry(4, 4, 3)
    out = match(TACTICAL, RANDOM, 2_000, seed=9, opening=g.cells, g=g)
    assert np.array_equal(out[0::2], -out[1::2])
    assert (out != 0).any()


def test_kernel_rules_agree_with_python(rng, random_move_string):
    # includes boards where (connect - 1) * (rows + 2) >= 64, the widest shifts a kernel makes
    for g in (STANDARD, Geometry(4, 4, 3), Geometry(5, 6, 4), Geometry(8, 7, 8), Geometry(6, 9, 9)):
        h, k, board = np.int64(g.height), np.int64(g.connect), np.int64(g.board_mask)
        for _ in range(150):
            moves = random_move_string(rng, g, length=int(rng.integers(0, g.cells + 1)))
            pos = Position.from_moves(moves, g)
            for stones in (pos.current, pos.opponent):
                assert kernels.has_won(np.int64(stones), h, k) == has_won(stones, g), (g, moves)
                got = kernels.winning_cells(np.int64(stones), np.int64(pos.mask), h, k, board)
                assert int(got) == winning_cells(stones, pos.mask, g), (g, moves)


def test_kernel_agrees_with_torch_path():
    class TorchTactical(TacticalBot):
        kernel = None  # forces c4core.evaluation.match onto the torch engine

    torch_res = torch_or_kernel_match(TorchTactical(), RandomBot(), 2_000, seed=4)
    kernel_res = torch_or_kernel_match(TacticalBot(), RandomBot(), 20_000, seed=4)
    assert kernel_res.games == 20_000 and torch_res.games == 2_000
    p_torch, p_kernel = torch_res.total.score, kernel_res.total.score
    pooled = (p_torch * 2_000 + p_kernel * 20_000) / 22_000
    se = math.sqrt(max(pooled * (1 - pooled), 1e-4) * (1 / 2_000 + 1 / 20_000))
    assert abs(p_torch - p_kernel) < SIGMAS * se
    assert p_torch > 0.9 and p_kernel > 0.9
