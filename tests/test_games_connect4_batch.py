"""Tests for c4core.games.connect4.batch: `Boards` stepped in lockstep with scalar `Position`s, and
its errors.

Every batched view must equal the scalar view of the same game: legal moves, done/result,
threats, network planes and `Boards.position(i)` itself. Finished games must ignore moves.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, settings

from c4core.games.connect4.batch import Boards
from c4core.games.connect4.rules import NUM_PLANES, STANDARD, Geometry, Position

PROPERTY = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def scalar_result(pos: Position) -> int:
    """+1 first player won, -1 second player won, 0 draw or unfinished (Boards.result's code)."""
    if not pos.won:
        return 0
    return 1 if pos.ply % 2 == 1 else -1


def assert_same(boards: Boards, positions: list[Position], idx: np.ndarray) -> None:
    """Every batched view of the games at `idx` equals the scalar view."""
    pos = [positions[i] for i in idx]
    g = boards.geometry
    sel = torch.as_tensor(idx)
    legal = np.zeros((len(idx), g.cols), dtype=bool)
    for j, p in enumerate(pos):
        legal[j, p.legal_moves()] = True
    np.testing.assert_array_equal(boards.legal()[sel].numpy(), legal)
    np.testing.assert_array_equal(boards.done[sel].numpy(), [p.is_terminal for p in pos])
    np.testing.assert_array_equal(boards.result[sel].numpy(), [scalar_result(p) for p in pos])
    np.testing.assert_array_equal(boards.ply[sel].numpy(), [p.ply for p in pos])
    sub = boards.select(sel)  # the views of a selection are the views of the whole, indexed
    mine, theirs = sub.threats()
    scalar = np.array([p.threats() for p in pos], dtype=np.int64).reshape(len(pos), 2)
    np.testing.assert_array_equal(mine.numpy(), scalar[:, 0])
    np.testing.assert_array_equal(theirs.numpy(), scalar[:, 1])
    planes = sub.planes()
    assert planes.shape == (len(idx), NUM_PLANES, g.rows, g.cols) and planes.dtype == torch.float32
    np.testing.assert_array_equal(planes.numpy(), np.stack([p.planes() for p in pos]))
    for j, i in enumerate(idx):
        assert boards.position(int(i)) == pos[j] == sub.position(j)


@pytest.mark.parametrize(
    "geometry, games",
    [
        pytest.param(STANDARD, 2_000, marks=pytest.mark.slow),
        (Geometry(4, 4, 3), 300),
        (Geometry(5, 6, 4), 300),
    ],
    ids=["6x7c4", "4x4c3", "5x6c4"],
)
def test_lockstep_with_scalar_positions(geometry, games, rng):
    g = geometry
    boards = Boards(games, g)
    positions = [Position(geometry=g)] * games
    assert_same(boards, positions, np.arange(games))
    for _ in range(g.cells):
        done = boards.done.numpy().copy()
        if done.all():
            break
        frozen = {k: getattr(boards, k).clone() for k in ("current", "mask", "ply", "done", "result")}
        # a random legal column for live games, any column at all (even off-board) for finished ones
        cols = rng.integers(-2, g.cols + 2, size=games)
        live = np.flatnonzero(~done)
        for i in live:
            cols[i] = rng.choice(positions[i].legal_moves())
            positions[i] = positions[i].play(int(cols[i]))
        boards.play(torch.as_tensor(cols))
        assert_same(boards, positions, live)
        # finished games ignored the move entirely
        fin = torch.as_tensor(done)
        for k, before in frozen.items():
            assert torch.equal(getattr(boards, k)[fin], before[fin]), k
    assert bool(boards.done.all())
    results = boards.result.numpy()
    assert (results == 1).any() and (results == -1).any()


def test_from_positions_round_trip(rng, random_move_string, geometries):
    for g in geometries:
        positions = [Position.from_moves(random_move_string(rng, g), g) for _ in range(200)]
        positions += [Position.from_moves(random_move_string(rng, g, unfinished=True), g) for _ in range(200)]
        boards = Boards.from_positions(positions)
        assert len(boards) == len(positions) and boards.geometry == g
        assert_same(boards, positions, np.arange(len(positions)))
        idx = torch.tensor([5, 0, 399, 5])
        part = boards.select(idx)
        assert [part.position(j) for j in range(len(idx))] == [positions[int(i)] for i in idx]
        # select copies: playing the selection leaves the original alone
        before = boards.mask.clone()
        cols = torch.tensor(
            [positions[int(i)].legal_moves()[0] if positions[int(i)].legal_moves() else 0 for i in idx]
        )
        part.play(cols)
        assert torch.equal(boards.mask, before)


def test_play_rejects_illegal_columns():
    games = [Position.from_moves("444444"), Position.from_moves("1212121"), Position()]
    boards = Boards.from_positions(games)
    assert boards.done.tolist() == [False, True, False]
    with pytest.raises(ValueError, match=r"illegal move: column 4 in game 0"):
        boards.play(torch.tensor([3, 0, 0]))
    with pytest.raises(ValueError, match=r"illegal move: column 8 in game 2"):
        boards.play(torch.tensor([0, 0, 7]))
    with pytest.raises(ValueError, match=r"illegal move: column 0 in game 0"):
        boards.play(torch.tensor([-1, 0, 0]))
    # nothing moved on a rejected call; the finished game accepts any column and ignores it
    assert boards.ply.tolist() == [6, 7, 0]
    boards.play(torch.tensor([0, 99, 3]))
    assert boards.ply.tolist() == [7, 7, 1]
    assert boards.position(1) == Position.from_moves("1212121")


def test_result_codes():
    first = Boards.from_positions([Position.from_moves("1212121")])
    second = Boards.from_positions([Position.from_moves("12121232")])
    assert first.result.tolist() == [1] and second.result.tolist() == [-1]
    b = Boards(2)
    for c in (0, 1, 0, 1, 0, 1):
        b.play(torch.tensor([c, c]))
    assert b.result.tolist() == [0, 0] and not bool(b.done.any())
    b.play(torch.tensor([0, 2]))
    assert b.result.tolist() == [1, 0] and b.done.tolist() == [True, False]
    assert b.first_player_to_move().tolist() == [False, False]
