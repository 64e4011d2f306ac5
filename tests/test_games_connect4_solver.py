"""Tests for c4core.games.connect4.solver: exact scores on 4x4 connect-3 and on the standard board, and the
`perfect` bot.

On 4x4 connect-3 scores are checked against a brute-force minimax written here (no memo, no
pruning, plain win/draw/loss values), so only their sign is compared; the Pons-style magnitudes
are checked relationally (a sooner win scores higher, the best move's score is the position's
score). On the standard board they are checked against Pascal Pons's own solver, through
positions of the shared dev suite copied in below.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from c4core.evaluation.match import play_match
from c4core.games import ConnectFour
from c4core.games.connect4.batch import Boards
from c4core.games.connect4.bots import TacticalBot
from c4core.games.connect4.rules import STANDARD, Geometry, Position
from c4core.games.connect4.solver import PerfectBot, Solver
from c4core.games.players import RandomBot

SMALL = Geometry(4, 4, 3)


@pytest.fixture(scope="module")
def solver() -> Solver:
    return Solver(SMALL)


def brute_force(pos: Position) -> int:
    """+1 the side to move wins, 0 draw, -1 it loses, with best play by both sides."""
    if pos.is_full:
        return 0
    best = -1
    for c in pos.legal_moves():
        child = pos.play(c)
        best = max(best, 1 if child.won else -brute_force(child))
    return best


def live_positions(rng, random_move_string, n, min_stones, max_stones=SMALL.cells - 1):
    out = []
    while len(out) < n:
        moves = random_move_string(rng, SMALL, int(rng.integers(min_stones, max_stones + 1)), unfinished=True)
        if len(moves) >= min_stones:
            out.append(Position.from_moves(moves, SMALL))
    return out


def test_score_sign_matches_brute_force(solver, rng, random_move_string):
    positions = live_positions(rng, random_move_string, 500, min_stones=6)
    signs = set()
    for pos in positions:
        expected = brute_force(pos)
        assert np.sign(solver.score(pos)) == expected, str(pos)
        signs.add(expected)
    assert signs == {-1, 0, 1}  # the sample exercises wins, draws and losses


def test_fresh_solver_agrees_with_warm_one(solver, rng, random_move_string):
    fresh = Solver(SMALL)
    for pos in live_positions(rng, random_move_string, 100, min_stones=0):
        assert fresh.score(pos) == solver.score(pos)


def test_empty_board_is_a_first_player_win(solver):
    assert solver.score(Position(geometry=SMALL)) > 0


def test_move_scores(solver, rng, random_move_string):
    for pos in live_positions(rng, random_move_string, 300, min_stones=0):
        scores = solver.move_scores(pos)
        assert len(scores) == SMALL.cols
        assert [s is None for s in scores] == [not pos.can_play(c) for c in range(SMALL.cols)]
        assert max(s for s in scores if s is not None) == solver.score(pos)
        mover_stones = pos.ply // 2
        for c, s in enumerate(scores):
            if s is None:
                continue
            child = pos.play(c)
            if child.won:  # winning with the mover's n-th stone scores (cells+1)//2 + 1 - n
                assert s == (SMALL.cells + 1) // 2 + 1 - (mover_stones + 1)
            elif child.is_full:
                assert s == 0
            else:
                assert s == -solver.score(child)


def test_sooner_wins_score_higher(solver):
    # X to move completes column 1 at once: with its 3rd stone here, its 5th stone there
    soon = Position.from_moves("1212", SMALL)
    assert soon.is_winning_move(0)
    later = Position.from_moves("12123434", SMALL)
    assert later.is_winning_move(0)
    assert solver.score(soon) > solver.score(later) > 0


def test_solver_rejects(solver):
    for g in (STANDARD, Geometry(4, 5, 3), Geometry(3, 6, 3)):
        with pytest.raises(ValueError, match=r"up to 16 cells"):
            PerfectBot(g)
    assert PerfectBot(Geometry(3, 5, 3)).solver.geometry.cells == 15
    assert PerfectBot(Geometry(4, 5, 3), max_cells=20).solver.geometry.cells == 20
    for bad in ({"table_size": 0}, {"max_nodes": 0}):
        with pytest.raises(ValueError, match="at least 1"):
            Solver(SMALL, **bad)
    with pytest.raises(ValueError, match=r"geometry does not match"):
        solver.score(Position.from_moves("11", Geometry(4, 4, 4)))
    with pytest.raises(ValueError, match=r"already won"):
        solver.score(Position.from_moves("12121", SMALL))


@pytest.mark.parametrize("opponent", [RandomBot, TacticalBot])
def test_perfect_bot_wins_every_game_as_first_player(opponent):
    res = play_match(PerfectBot(SMALL), opponent(), 40, seed=5, opening_plies=0, game=ConnectFour(SMALL))
    assert res.a_first.win == res.a_first.games == 20
    # moving second it is lost against perfect play, but its opponent must still find the win
    swapped = play_match(opponent(), PerfectBot(SMALL), 40, seed=5, opening_plies=0, game=ConnectFour(SMALL))
    assert swapped.b_first.loss == 20


@pytest.mark.parametrize("opponent", [RandomBot, TacticalBot])
def test_perfect_bot_never_gives_away_a_result(opponent, solver, rng, random_move_string, torch_gen):
    """From random openings, the perfect bot ends every game at least as well as the solver says."""
    bot, other = PerfectBot(SMALL), opponent()
    seen = set()
    for game in range(60):
        pos = Position.from_moves(
            random_move_string(rng, SMALL, int(rng.integers(0, 5)), unfinished=True), SMALL
        )
        perfect_side = pos.to_move if game % 2 == 0 else 3 - pos.to_move
        promised = None
        while not pos.is_terminal:
            if pos.to_move == perfect_side:
                value = int(np.sign(solver.score(pos)))
                # its own moves keep the value; the opponent's can only hand it something better
                assert promised is None or value >= promised
                if promised is None:
                    seen.add(value)
                promised = value
                pos = pos.play(bot.act_position(pos, torch_gen))
            else:
                pos = pos.play(other.act_position(pos, torch_gen))
        outcome = 0 if not pos.won else (1 if (pos.ply % 2 == 1) == (perfect_side == 1) else -1)
        assert promised is None or outcome >= promised
    assert {-1, 1} <= seen  # it started from lost and from won positions


def test_perfect_bot_picks_a_best_move(solver, rng, random_move_string, torch_gen):
    positions = live_positions(rng, random_move_string, 100, min_stones=0)
    cols = PerfectBot(SMALL).act(Boards.from_positions(positions), torch_gen)
    for pos, c in zip(positions, cols.tolist(), strict=True):
        scores = solver.move_scores(pos)
        assert scores[c] == max(s for s in scores if s is not None)
    # ties are broken at random: the empty board's best columns all get played
    empty = Boards.from_positions([Position(geometry=SMALL)] * 200)
    best = solver.move_scores(Position(geometry=SMALL))
    chosen = set(PerfectBot(SMALL).act(empty, torch_gen).tolist())
    assert chosen == {c for c, s in enumerate(best) if s == max(best)}
    assert isinstance(cols, torch.Tensor)


# Lines of ../shared/suite/dev.jsonl: Pascal Pons's solver's score of every column.
PONS = [
    ("642626146644553427741156371", [-7, -7, -7, None, -7, None, 8]),
    ("6336553326635235652462211724", [-7, None, None, 7, -7, None, -3]),
    ("42153773211344232212773774", [-8, None, -8, -8, -5, -8, None]),
    ("162252113762142554417", [10, 10, 11, 10, 10, 10, 10]),
    ("261266623445712124", [9, -11, -12, -11, 11, -11, 11]),
    ("14726564212627773", [-12, 0, -12, -12, 13, -12, -12]),
    ("57133377177155", [0, 2, 2, -3, 2, -2, 0]),
    ("4736346112574345657447", [0, 0, 0, None, 8, 8, 0]),
    ("113162641224612637", [0, 4, 2, 4, -2, 2, 2]),
    ("5156453212617456454", [-4, 0, 0, -4, -4, 0, -4]),
]


@pytest.fixture(scope="module")
def standard_solver() -> Solver:
    return Solver(STANDARD)


@pytest.mark.parametrize(("moves", "scores"), PONS, ids=[m for m, _ in PONS])
def test_standard_board_scores_match_pons(standard_solver, moves, scores):
    pos = Position.from_moves(moves)
    assert standard_solver.move_scores(pos) == scores
    assert standard_solver.move_scores(pos, weak=True) == [
        None if s is None else int(np.sign(s)) for s in scores
    ]
    assert standard_solver.score(pos) == max(s for s in scores if s is not None)


def test_weak_score_is_the_sign_of_the_score(solver, rng, random_move_string):
    for pos in live_positions(rng, random_move_string, 200, min_stones=0):
        assert Solver(SMALL).score(pos, weak=True) == np.sign(solver.score(pos))


def test_node_budget_gives_up_and_keeps_the_table_sound():
    """A solve that runs out of nodes answers None; what it stored is still sound, so the
    same solver then answers exactly as a fresh one."""
    moves, scores = PONS[6]  # ply 14: needs many nodes
    pos = Position.from_moves(moves)
    tight = Solver(STANDARD, max_nodes=500)
    assert tight.score(pos) is None and tight.move_scores(pos) is None
    assert tight.nodes > 500
    tight.max_nodes = None
    assert tight.move_scores(pos) == scores
    assert Solver(STANDARD, max_nodes=500).score(Position.from_moves(PONS[0][0])) == 8  # cheap: fits


def test_batch_scores_match_one_at_a_time(solver, rng, random_move_string):
    positions = [p for p in live_positions(rng, random_move_string, 120, min_stones=0) if not p.is_full]
    arrays = [np.array([getattr(p, k) for p in positions]) for k in ("current", "mask", "ply")]
    for weak in (True, False):
        got = Solver(SMALL).scores(*arrays, weak=weak)
        assert got.tolist() == [solver.score(p, weak) for p in positions]


def test_batch_scores_mark_budget_aborts_as_nan():
    cheap, costly = Position.from_moves(PONS[0][0]), Position.from_moves(PONS[6][0])
    arrays = [np.array([getattr(p, k) for p in (costly, cheap)]) for k in ("current", "mask", "ply")]
    tight = Solver(STANDARD)
    got = tight.scores(*arrays, weak=False, max_nodes=500)  # the budget applies to each position
    assert np.isnan(got[0]) and got[1] == 8
    assert tight.max_nodes is None  # the call's budget does not stick
