"""Connect Four behind the game interface (`c4core.games.connect4`), checked against a peer's
rules: OpenSpiel's `connect_four` (a test-only dependency) plays the same random games as ours
and must agree move by move, on any board size; and exhaustive minimax through our interface
finds the known value of Connect-3 on 4x4 (a first-player win). Its one symmetry besides the
identity, the mirror, maps network planes as mirrored positions make them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from exact import agree_with_openspiel, first_player_value
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from c4core.games import ConnectFour, load
from c4core.games.connect4.batch import Boards
from c4core.games.connect4.rules import STANDARD, Geometry, Position

pyspiel = pytest.importorskip("pyspiel")

PROPERTY = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


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


@PROPERTY
@given(data=st.data(), g=st.sampled_from([STANDARD, Geometry(4, 4, 3), Geometry(5, 6, 4)]))
def test_the_mirror_maps_planes_to_those_of_the_mirrored_positions(data, g, move_strategy) -> None:
    moves = data.draw(st.lists(move_strategy(g), min_size=1, max_size=8))
    positions = [Position.from_moves(m, g) for m in moves]
    mirror_planes = ConnectFour(g).symmetries[1].observation  # the one symmetry besides the identity
    planes = Boards.from_positions(positions).planes()
    mirrored = Boards.from_positions([p.mirror() for p in positions]).planes()
    assert torch.equal(mirror_planes(planes), mirrored)
    assert torch.equal(mirror_planes(mirror_planes(planes)), planes)
    np.testing.assert_array_equal(mirror_planes(planes).numpy(), planes.numpy()[..., ::-1])
