"""Dots and Boxes' endgame solver (`c4core.games.dots_and_boxes.endgame`): alpha-beta's values
against the retrograde table on 3x3 (its independent-capture rule and bounds included), against
exhaustive minimax on 4x4 endgames, Wilson's empty boards, and its node budget."""

from __future__ import annotations

import numpy as np
import pytest
from exact import first_player_value

from c4core.games import load
from c4core.games.dots_and_boxes.endgame import EndgameSolver, PastBudget
from c4core.games.dots_and_boxes.rules import Boxes, DotsState
from c4core.games.dots_and_boxes.solver import DotsSolver


def random_states(boxes: Boxes, n: int, seed: int, drawn: tuple[int, int]) -> list[DotsState]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        state = DotsState(boxes)
        for _ in range(rng.integers(*drawn)):
            state = state.apply(int(rng.choice(state.legal_actions())))
        out.append(state)
    return out


@pytest.fixture(scope="module")
def three() -> tuple[DotsSolver, EndgameSolver]:
    boxes = Boxes(3, 3)
    return DotsSolver(boxes), EndgameSolver(boxes, table_bits=18)


def test_values_and_line_values_agree_with_the_3x3_table(three) -> None:
    table, search = three
    states = random_states(table.boxes, 150, seed=1, drawn=(2, 24))
    assert [search.value(s) for s in states] == [table.value(s) for s in states]
    lines = np.array([s.lines for s in states[:40]])
    assert np.array_equal(search.action_values(lines), table.action_values(lines))
    assert [search.outcome(s) for s in states] == [table.outcome(s) for s in states]
    assert [search.margin_value(s) for s in states] == [table.margin_value(s) for s in states]
    # the independent captures were met: a line completing every box it borders
    assert any(max(table.action_values(np.array([s.lines]))[0]) > 0 for s in states)


@pytest.mark.parametrize("rows,cols,margin", [(1, 1, -1), (1, 2, 0), (2, 2, 2), (2, 3, -2), (3, 3, -3)])
def test_the_empty_boards_have_wilsons_values(rows: int, cols: int, margin: int) -> None:
    assert EndgameSolver(Boxes(rows, cols), table_bits=20).value_of(0) == margin


def test_4x4_endgames_agree_with_exhaustive_minimax() -> None:
    """Positions of 4x4 random play with 8 lines left: the mover's lead plus the solver's value
    is the final margin minimax finds through the game interface."""
    boxes = Boxes(4, 4)
    solver = EndgameSolver(boxes, table_bits=16)
    for state in random_states(boxes, 20, seed=4, drawn=(32, 33)):
        first = first_player_value(state, lambda s: float(s.margin()))
        mover = solver.lead(state) + solver.value(state)
        assert mover == (first if state.current_player() == 0 else -first)
        assert solver.outcome(state) == np.sign(mover)


def test_a_search_past_its_node_budget_says_so() -> None:
    game = load("dots_and_boxes", rows=4, cols=4)
    solver = EndgameSolver(game.boxes, table_bits=12)
    with pytest.raises(ValueError, match="ran past 1,000 nodes on a position with 40 lines left"):
        solver.value(game.new_state(), max_nodes=1000)
    near_end = game.state_from_moves(" ".join(game.format_action(a) for a in range(34)))
    assert solver.value(near_end, max_nodes=1000) == minimax_value(near_end)


def test_an_unsettled_position_has_no_outcome_and_no_margin() -> None:
    """As `ExactSolver` asks: past the budget (the solver's own, or the call's) the position is
    not settled, None, where the same budget settles a position near the end."""
    game = load("dots_and_boxes", rows=4, cols=4)
    solver = EndgameSolver(game.boxes, table_bits=12, max_nodes=1000)
    empty = game.new_state()
    near_end = game.state_from_moves(" ".join(game.format_action(a) for a in range(34)))
    assert solver.outcome(empty) is None and solver.margin_value(empty) is None
    assert solver.outcome(near_end) is not None and solver.margin_value(near_end) is not None
    with pytest.raises(PastBudget):
        solver.value(empty)
    roomy = EndgameSolver(game.boxes, table_bits=12)
    assert roomy.outcome(near_end, max_nodes=10) is None
    lead = roomy.lead(near_end) + minimax_value(near_end)
    assert roomy.margin_value(near_end) == lead / game.boxes.boxes
    assert roomy.outcome(near_end) == np.sign(lead)


def minimax_value(state: DotsState) -> int:
    """The mover's best margin still to come, by minimax (for a 4x4 position near its end)."""
    first = first_player_value(state, lambda s: float(s.margin())) - state.margin()
    return int(first if state.current_player() == 0 else -first)
