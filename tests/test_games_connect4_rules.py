"""Tests for c4core.games.connect4.rules: the scalar rules against a slow 2D-array reference, and validation.

The reference below knows nothing about bitboards: it keeps a ``[games, rows, cols]`` array
(row 0 on top, like `Position.board`), drops stones by gravity, and finds runs by scanning every
row, column and diagonal line of `connect` cells. It steps many games at once, but each game is
an independent plain-array game.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from c4core.games.connect4.rules import (
    NUM_PLANES,
    STANDARD,
    Geometry,
    Position,
    has_won,
    parse_column,
    winning_cells,
)

PROPERTY = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


# ---- the reference ----------------------------------------------------------------------------
def ref_lines(g: Geometry) -> list[list[tuple[int, int]]]:
    """Every line of `g.connect` cells on the board: rows, columns and both diagonals."""
    lines = []
    for r in range(g.rows):
        for c in range(g.cols):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                cells = [(r + i * dr, c + i * dc) for i in range(g.connect)]
                if all(0 <= rr < g.rows and 0 <= cc < g.cols for rr, cc in cells):
                    lines.append(cells)
    return lines


def ref_has_won(grid: np.ndarray, player: int, lines) -> np.ndarray:
    """[games] bool: whether `player` fills some whole line."""
    won = np.zeros(len(grid), dtype=bool)
    for line in lines:
        full = np.ones(len(grid), dtype=bool)
        for r, c in line:
            full &= grid[:, r, c] == player
        won |= full
    return won


def ref_threats(grid: np.ndarray, player: int, lines) -> np.ndarray:
    """[games, rows, cols] bool: empty cells where a stone of `player` would complete a line.

    Reachable or not: gravity is ignored here, exactly as `winning_cells` documents.
    """
    out = np.zeros(grid.shape, dtype=bool)
    for line in lines:
        for r, c in line:
            others = grid[:, r, c] == 0
            for rr, cc in line:
                if (rr, cc) != (r, c):
                    others &= grid[:, rr, cc] == player
            out[:, r, c] |= others
    return out


def ref_drop(grid: np.ndarray, games: np.ndarray, cols: np.ndarray, player: int) -> None:
    """Gravity: each stone lands on the lowest empty cell of its column."""
    for i, c in zip(games, cols, strict=True):
        r = grid.shape[1] - 1
        while grid[i, r, c] != 0:
            r -= 1
        grid[i, r, c] = player


def bits_to_cells(bitboards: list[int], g: Geometry) -> np.ndarray:
    """[n, rows, cols] bool from bitboards, in the board-array cell order."""
    arr = np.array(bitboards, dtype=np.int64)[:, None]
    return ((arr >> np.array(g.cell_bits, dtype=np.int64)) & 1).astype(bool).reshape(-1, g.rows, g.cols)


def random_legal_columns(rng: np.random.Generator, legal: np.ndarray) -> np.ndarray:
    """A uniformly random legal column per row of `legal` [n, cols] (rows need one legal)."""
    keys = rng.random(legal.shape)
    keys[~legal] = -1.0
    return keys.argmax(1)


# ---- rules against the reference ----------------------------------------------------------------
@pytest.mark.parametrize(
    "geometry, games",
    [
        pytest.param(STANDARD, 10_000, marks=pytest.mark.slow),  # about 20 s
        (Geometry(4, 4, 3), 2_000),
        pytest.param(Geometry(5, 6, 4), 2_000, marks=pytest.mark.slow),
    ],
    ids=["6x7c4", "4x4c3", "5x6c4"],
)
def test_rules_agree_with_reference(geometry, games, rng):
    g = geometry
    lines = ref_lines(g)
    grid = np.zeros((games, g.rows, g.cols), dtype=np.int8)
    positions = [Position(geometry=g)] * games
    moves = [""] * games
    done = np.zeros(games, dtype=bool)
    outcomes = {"won": 0, "draw": 0}

    def fail(i: int, what: str) -> str:
        return f"{what} differs after moves {moves[i]!r} on {g}"

    for ply in range(g.cells):
        idx = np.flatnonzero(~done)
        if len(idx) == 0:
            break
        mover, other = (1, 2) if ply % 2 == 0 else (2, 1)
        ref_legal = grid[idx, 0, :] == 0
        cols = random_legal_columns(rng, ref_legal)
        ref_drop(grid, idx, cols, mover)
        for i, c in zip(idx, cols, strict=True):
            positions[i] = positions[i].play(int(c))
            moves[i] += str(c + 1)
        sub = grid[idx]
        pos = [positions[i] for i in idx]

        # same board array
        boards = np.array([p.board() for p in pos], dtype=np.int8)
        bad = np.flatnonzero((boards != sub).any((1, 2)))
        assert len(bad) == 0, fail(idx[bad[0]], "board()")

        # same win / draw detection; the player who did not just move can never have a line
        ref_won = ref_has_won(sub, mover, lines)
        assert not ref_has_won(sub, other, lines).any()
        won = np.array([p.won for p in pos])
        bad = np.flatnonzero(won != ref_won)
        assert len(bad) == 0, fail(idx[bad[0]], "win detection")
        ref_full = (sub != 0).all((1, 2))
        draw = np.array([p.is_full and not p.won for p in pos])
        assert np.array_equal(draw, ref_full & ~ref_won)
        assert np.array_equal(np.array([p.is_terminal for p in pos]), ref_won | ref_full)

        # same legal moves: none after a win, else every column with an empty top cell
        ref_legal = (sub[:, 0, :] == 0) & ~ref_won[:, None]
        legal = np.zeros_like(ref_legal)
        for j, p in enumerate(pos):
            legal[j, p.legal_moves()] = True
        bad = np.flatnonzero((legal != ref_legal).any(1))
        assert len(bad) == 0, fail(idx[bad[0]], "legal_moves()")

        # same winning cells for the side to move (`other` now) and for the one who just moved
        mine, theirs = zip(*(p.threats() for p in pos), strict=True)
        for got, who in ((mine, other), (theirs, mover)):
            bad = np.flatnonzero((bits_to_cells(list(got), g) != ref_threats(sub, who, lines)).any((1, 2)))
            assert len(bad) == 0, fail(idx[bad[0]], f"threats() of player {who}")

        assert all(p.ply == ply + 1 and p.to_move == other for p in pos)
        done[idx] = ref_won | ref_full
        outcomes["won"] += int(ref_won.sum())
        outcomes["draw"] += int((ref_full & ~ref_won).sum())

    assert done.all()
    assert outcomes["won"] + outcomes["draw"] == games
    assert outcomes["won"] > 0


def test_is_winning_move_matches_play(rng, random_move_string):
    wins = 0
    for _ in range(300):
        pos = Position.from_moves(random_move_string(rng, unfinished=True))
        for c in pos.legal_moves():
            assert pos.is_winning_move(c) == pos.play(c).won
            wins += pos.is_winning_move(c)
    assert wins > 0


def test_docstring_worked_example():
    pos = Position.from_moves("4453")
    first = 1 << 21 | 1 << 28
    assert pos.current == first
    assert pos.mask == first | 1 << 22 | 1 << 14
    assert pos.ply == 4 and pos.to_move == 1 and not pos.won


def test_bit_layout_helpers():
    g = STANDARD
    assert g.height == 7 and g.cells == 42
    assert [g.bottom(c).bit_length() - 1 for c in range(g.cols)] == [0, 7, 14, 21, 28, 35, 42]
    assert g.top(0) == 1 << 5 and g.top(6) == 1 << 47
    assert g.board_mask == sum(g.column(c) for c in range(g.cols))
    assert g.board_mask & (g.bottom_mask << g.rows) == 0  # the sentinel row stays clear
    assert sorted(g.cell_bits) == [b for b in range(g.height * g.cols) if (g.board_mask >> b) & 1]
    assert g.centre_weights == (1, 2, 3, 4, 3, 2, 1)
    assert Geometry(4, 4, 3).centre_weights == (1, 2, 2, 1)


def test_has_won_and_winning_cells_basics():
    g = STANDARD
    row = sum(g.bottom(c) for c in range(3))  # three in the bottom row, columns 1-3
    assert not has_won(row, g)
    assert has_won(row | g.bottom(3), g)
    # the bottom cell of column 4 completes the run; the one of column 5 does not
    assert winning_cells(row, row, g) == g.bottom(3)
    # no wrap-around through the sentinel: the top three of column 1 plus the bottom of column 2
    wrap = g.column(0) & ~(g.bottom(0) | g.bottom(0) << 1 | g.bottom(0) << 2) | g.bottom(1)
    assert bin(wrap).count("1") == 4 and not has_won(wrap, g)


# ---- property tests ----------------------------------------------------------------------------
GEOMETRIES = st.sampled_from([STANDARD, Geometry(4, 4, 3), Geometry(5, 6, 4)])


@PROPERTY
@given(data=st.data(), g=GEOMETRIES)
def test_board_round_trip(data, g, move_strategy):
    moves = data.draw(move_strategy(g))
    pos = Position.from_moves(moves, g)
    if pos.won:  # from_board refuses boards with a winner
        with pytest.raises(ValueError, match="already won"):
            Position.from_board(pos.board(), g)
        return
    back = Position.from_board(pos.board(), g)
    assert (back.current, back.mask) == (pos.current, pos.mask)
    assert back == pos
    assert Position.from_board(np.array(pos.board()), g) == pos
    assert Position.from_board(tuple(map(tuple, pos.board())), g) == pos


@PROPERTY
@given(data=st.data(), g=GEOMETRIES)
def test_mirror(data, g, move_strategy):
    moves = data.draw(move_strategy(g))
    pos = Position.from_moves(moves, g)
    mirrored = "".join(str(g.cols + 1 - int(ch)) for ch in moves)
    assert pos.mirror().mirror() == pos
    assert pos.mirror() == Position.from_moves(mirrored, g)
    assert [row[::-1] for row in pos.board()] == pos.mirror().board()
    np.testing.assert_array_equal(pos.mirror().planes(), pos.planes()[..., ::-1])


@PROPERTY
@given(data=st.data(), g=GEOMETRIES)
def test_planes_views(data, g, move_strategy):
    pos = Position.from_moves(data.draw(move_strategy(g)), g)
    planes = pos.planes()
    assert planes.shape == (NUM_PLANES, g.rows, g.cols) and planes.dtype == np.float32
    board = np.array(pos.board())
    mover = pos.to_move
    np.testing.assert_array_equal(planes[0], board == mover)
    np.testing.assert_array_equal(planes[1], (board != 0) & (board != mover))
    # the landing cell of every column with room (the lowest empty cell)
    landing = np.zeros_like(board, dtype=bool)
    for c in range(g.cols):
        empty = np.flatnonzero(board[:, c] == 0)
        if len(empty):
            landing[empty[-1], c] = True
    np.testing.assert_array_equal(planes[2], landing)
    mine, theirs = pos.threats()
    np.testing.assert_array_equal(planes[3], bits_to_cells([mine], g)[0])
    np.testing.assert_array_equal(planes[4], bits_to_cells([theirs], g)[0])
    assert (planes[5] == 1).all()


@PROPERTY
@given(data=st.data())
def test_key_is_unique(data, move_strategy):
    a = Position.from_moves(data.draw(move_strategy(STANDARD, max_size=12)))
    b = Position.from_moves(data.draw(move_strategy(STANDARD, max_size=12)))
    assert (a.key() == b.key()) == ((a.current, a.mask) == (b.current, b.mask))


# ---- validation ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "moves, match",
    [
        ("44a4", r"bad move 'a' at position 3 .*column digit 1-7"),
        ("4 4", r"bad move ' ' at position 2"),
        ("40", r"bad move '0' at position 2 .*1-7"),
        ("48", r"bad move '8' at position 2 .*1-7"),
        ("-1", r"bad move '-'"),
        ("4444444", r"move 7 of '4444444' is illegal: column 4 is full"),
        ("12121213", r"move 8 of '12121213' comes after the game was already won"),
        ("121212177", r"move 8 of .* after the game was already won"),
        ("4\u0663", r"bad move '\u0663' at position 2"),
        ("4\u00b2", r"bad move '\u00b2' at position 2"),
    ],
)
def test_from_moves_rejects(moves, match):
    with pytest.raises(ValueError, match=match):
        Position.from_moves(moves)


def test_a_long_move_string_is_cut_short_in_its_error():
    with pytest.raises(ValueError) as e:
        Position.from_moves("12" * 2500)
    won = "comes after the game was already won"
    assert str(e.value) == f"move 8 of {'12' * 20!r}... (5,000 characters) {won}"


@pytest.mark.parametrize("moves", [4453, None, ["4", "4"], b"44"])
def test_from_moves_rejects_non_strings(moves):
    with pytest.raises(ValueError, match=r"moves must be a string"):
        Position.from_moves(moves)


def test_from_moves_respects_geometry():
    g = Geometry(4, 4, 3)
    with pytest.raises(ValueError, match=r"bad move '5' .*1-4"):
        Position.from_moves("125", g)
    assert Position.from_moves("  4453  ") == Position.from_moves("4453")
    assert Position.from_moves("") == Position()


def test_from_moves_full_board_message():
    # on 2x3 connect-3 "123123" fills the board without a line: X O X under O X O
    g = Geometry(2, 3, 3)
    pos = Position.from_moves("123123", g)
    assert pos.is_full and not pos.won and pos.legal_moves() == []
    with pytest.raises(ValueError, match=r"move 7 of '1231231' is illegal: the board is full"):
        Position.from_moves("1231231", g)


EMPTY = [[0] * 7 for _ in range(6)]


def board_with(*cells: tuple[int, int, int]) -> list[list[int]]:
    """A 6x7 board with (row, col, value) cells set; rows count from the top like `board()`."""
    out = [row[:] for row in EMPTY]
    for r, c, v in cells:
        out[r][c] = v
    return out


@pytest.mark.parametrize(
    "board, match",
    [
        (EMPTY[:5], r"6 rows, got 5"),
        ([*EMPTY, [0] * 7], r"6 rows, got 7"),
        ("not a board", r"6 rows, got str"),
        (None, r"6 rows, got NoneType"),
        ([[0] * 7] * 5 + [[0] * 6], r"row 6 must have 7 cells, got 6"),
        ([[0] * 8] + [[0] * 7] * 5, r"row 1 must have 7 cells, got 8"),
        ([[0] * 7] * 5 + ["0000000"], r"row 6 must have 7 cells, got str"),
        (board_with((5, 0, 3)), r"row 6, column 1 is 3; use 0, 1 or 2"),
        (board_with((5, 2, -1)), r"row 6, column 3 is -1"),
        (board_with((5, 3, 1.5)), r"row 6, column 4 is 1.5"),
        (board_with((5, 3, 1.0)), r"row 6, column 4 is 1.0"),
        (board_with((5, 4, "1")), r"row 6, column 5 is '1'"),
        (board_with((5, 5, True)), r"row 6, column 6 is True"),
        (board_with((5, 6, None)), r"row 6, column 7 is None"),
        (board_with((4, 1, 1)), r"column 2 has a floating stone"),
        (board_with((5, 3, 1), (3, 3, 2)), r"column 4 has a floating stone"),
        (board_with((5, 0, 1), (5, 1, 1)), r"impossible stone counts: 2 of player 1 and 0 of player 2"),
        (board_with((5, 0, 2)), r"impossible stone counts: 0 of player 1 and 1 of player 2"),
        (
            board_with(*[(5, c, 1) for c in range(4)], *[(4, c, 2) for c in range(3)]),
            r"player 1 has already won",
        ),
        (
            board_with(*[(5, c, 1) for c in (0, 1, 3, 4)], *[(r, 6, 2) for r in (5, 4, 3, 2)]),
            r"player 2 has already won",
        ),
    ],
)
def test_from_board_rejects(board, match):
    with pytest.raises(ValueError, match=match):
        Position.from_board(board)


def test_from_board_accepts_numpy_and_respects_geometry():
    g = Geometry(4, 4, 3)
    board = np.zeros((4, 4), dtype=np.int64)
    board[3, 1], board[3, 2] = 1, 2
    pos = Position.from_board(board, g)
    assert pos == Position.from_moves("23", g)
    with pytest.raises(ValueError, match=r"4 rows, got 6"):
        Position.from_board(EMPTY, g)


def test_play_rejects():
    pos = Position.from_moves("444444")
    with pytest.raises(ValueError, match=r"column 4 is full"):
        pos.play(3)
    for col, shown in ((7, 8), (-1, 0), (100, 101)):
        with pytest.raises(ValueError, match=rf"column {shown} is off the board \(1-7\)"):
            pos.play(col)
    won = Position.from_moves("1212121")
    assert won.won and won.is_terminal and won.legal_moves() == []
    with pytest.raises(ValueError, match=r"already won"):
        won.play(2)
    # play returns a new position and leaves the old one alone
    before = Position.from_moves("44")
    after = before.play(0)
    assert before == Position.from_moves("44") and after == Position.from_moves("441")


@pytest.mark.parametrize("text, col", [("1", 0), ("4", 3), (" 7\n", 6)])
def test_parse_column(text, col):
    assert parse_column(text) == col


@pytest.mark.parametrize("text", ["", " ", "0", "8", "-1", "+3", "3.0", "abc", "4 4", "44", "²", "\u0663"])
def test_parse_column_rejects_junk(text):
    with pytest.raises(ValueError, match=r"expected a column number 1-7"):
        parse_column(text)


def test_parse_column_respects_geometry():
    assert parse_column("9", Geometry(6, 9, 4)) == 8
    with pytest.raises(ValueError, match=r"1-4, got '5'"):
        parse_column("5", Geometry(4, 4, 3))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(rows=1), r"at least 2 rows"),
        (dict(cols=1), r"2-9 columns"),
        (dict(cols=10), r"2-9 columns"),
        (dict(rows=9, cols=7), r"9x7 does not fit a 63-bit bitboard"),
        (dict(rows=8, cols=8), r"does not fit"),
        (dict(connect=1), r"connect=1 cannot fit"),
        (dict(connect=8), r"connect=8 cannot fit on a 6x7 board"),
    ],
)
def test_geometry_rejects(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Geometry(**kwargs)


def test_geometry_extremes_are_accepted():
    for g in (Geometry(2, 2, 2), Geometry(8, 7, 8), Geometry(6, 9, 9), Geometry(2, 9, 9)):
        assert (g.rows + 1) * g.cols <= 63
        assert Position(geometry=g).legal_moves() == list(range(g.cols))
