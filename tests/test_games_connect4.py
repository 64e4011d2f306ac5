"""Connect Four behind the game interface (`c4core.games.connect4`), checked against a peer's
rules: OpenSpiel's `connect_four` (a test-only dependency) plays the same random games as ours
and must agree move by move, on any board size; and exhaustive minimax through our interface
finds the known value of Connect-3 on 4x4 (a first-player win)."""

from __future__ import annotations

import pytest
from exact import agree_with_openspiel, first_player_value

from c4core.games import ConnectFour, load

pyspiel = pytest.importorskip("pyspiel")


@pytest.mark.parametrize("rows,cols,connect", [(6, 7, 4), (4, 4, 3), (5, 4, 4), (3, 5, 3)])
def test_random_games_agree_with_openspiel_move_by_move(rows: int, cols: int, connect: int) -> None:
    ours = load("connect4", rows=rows, cols=cols, connect=connect)
    theirs = pyspiel.load_game(f"connect_four(rows={rows},columns={cols},x_in_row={connect})")
    seen = agree_with_openspiel(ours, theirs, 750, seed=rows * 100 + cols * 10 + connect)
    results = {s.returns() for s in seen if s.is_terminal}
    assert results == {(1.0, -1.0), (-1.0, 1.0), (0.0, 0.0)} or (rows, cols) == (6, 7)


def test_connect3_on_4x4_is_a_first_player_win() -> None:
    assert first_player_value(load("connect4", rows=4, cols=4, connect=3).new_state()) == 1.0
    # and Connect-3 on 3x3 is a draw: neither side can make three in a row against a defender
    assert first_player_value(load("connect4", rows=3, cols=3, connect=3).new_state()) == 0.0


def test_variants_name_the_board_except_the_standard_one() -> None:
    assert ConnectFour().variant == "connect4"
    assert load("connect4", rows=4, cols=4, connect=3).variant == "connect3-4x4"
    assert load("connect4", rows=5, cols=4).variant == "connect4-5x4"
    assert ConnectFour().params == {"rows": 6, "cols": 7, "connect": 4}
