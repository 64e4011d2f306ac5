"""Dots and Boxes' exact solver (`c4core.games.dots_and_boxes.solver`): its values against exhaustive minimax
through the game interface, Wilson's published values of the empty boards, each line's value,
the table kept on disk, and the `perfect` bot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from exact import first_player_value

import c4core.games.dots_and_boxes.solver as dots_solver
from c4core.evaluation.match import play_match
from c4core.games import load
from c4core.games.dots_and_boxes.bots import GreedyBot
from c4core.games.dots_and_boxes.rules import Boxes, DotsState
from c4core.games.dots_and_boxes.solver import DotsPerfectBot, DotsSolver
from c4core.games.players import RandomBot
from c4core.players import make_player


def random_states(boxes: Boxes, n: int, seed: int) -> list[DotsState]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        state = DotsState(boxes)
        for _ in range(rng.integers(0, boxes.lines)):
            state = state.apply(int(rng.choice(state.legal_actions())))
        out.append(state)
    return out


@pytest.mark.parametrize("rows,cols", [(1, 1), (1, 2), (2, 2)])
def test_values_agree_with_exhaustive_minimax(rows: int, cols: int) -> None:
    """For positions reached by random play, the mover's lead plus the solver's value is the
    final margin that minimax over the game interface finds (for the first player, flipped)."""
    boxes = Boxes(rows, cols)
    solver = DotsSolver(boxes)
    for state in random_states(boxes, 40, seed=rows * 10 + cols):
        first = first_player_value(state, lambda s: float(s.margin()))
        mover = solver.lead(state) + solver.value(state)
        assert mover == (first if state.current_player() == 0 else -first)
        assert solver.outcome(state) == np.sign(mover)
        assert solver.margin_value(state) == pytest.approx(mover / boxes.boxes)


@pytest.mark.parametrize("rows,cols,margin", [(1, 1, -1), (1, 2, 0), (2, 2, 2), (2, 3, -2), (3, 3, -3)])
def test_the_empty_boards_have_wilsons_values(rows: int, cols: int, margin: int) -> None:
    boxes = Boxes(rows, cols)
    assert DotsSolver(boxes).value(DotsState(boxes)) == margin
    assert DotsSolver(boxes).margin_value(DotsState(boxes)) == pytest.approx(margin / boxes.boxes)


def test_each_lines_value_is_what_follows_it_and_the_best_is_the_positions() -> None:
    boxes = Boxes(3, 3)
    solver = DotsSolver(boxes)
    states = [s for s in random_states(boxes, 60, seed=5) if not s.is_terminal]
    values = solver.action_values(np.array([s.lines for s in states]))
    for state, row in zip(states, values, strict=True):
        assert row.max() == solver.value(state)
        for a in range(boxes.lines):
            if a not in state.legal_actions():
                assert row[a] < -boxes.boxes
                continue
            after = state.apply(a)
            again = after.current_player() == state.current_player() and not after.is_terminal
            # the lead it adds now, plus what follows for whoever moves next
            now = solver.lead(after) - solver.lead(state) if again or after.is_terminal else None
            if now is None:  # the turn passed: the mover's gain is minus the opponent's
                assert row[a] == -solver.value(after)
            else:
                assert row[a] == now + solver.value(after)


def test_the_table_is_kept_on_disk_and_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    boxes = Boxes(2, 2)
    built = DotsSolver(boxes, tmp_path).table
    assert (tmp_path / "dots-and-boxes-2x2.npy").is_file() and not list(tmp_path.glob("*.tmp"))
    dots_solver._table.cache_clear()

    def refuse(*args: object) -> None:
        raise AssertionError("the table was built again")

    monkeypatch.setattr(dots_solver, "_retrograde", refuse)
    assert np.array_equal(DotsSolver(boxes, tmp_path).table, built)


def test_boards_over_24_lines_are_refused() -> None:
    with pytest.raises(ValueError, match="at most 24 lines"):
        DotsSolver(Boxes(4, 4))
    with pytest.raises(ValueError, match="at most 24 lines"):
        make_player("perfect", load("dots-and-boxes-4x4"))


def test_perfect_keeps_the_value_against_any_opponent() -> None:
    """On 2x2 the first player is 2 boxes up with perfect play: `perfect` moving first never
    loses, against anyone; on 3x3 (second player +3) it wins every game as the second player."""
    two = load("dots_and_boxes", rows=2, cols=2)
    perfect = make_player("perfect", two)
    assert isinstance(perfect, DotsPerfectBot)
    for rival in (RandomBot(), GreedyBot(), DotsPerfectBot(Boxes(2, 2))):
        result = play_match(perfect, rival, 40, seed=1, opening_plies=0, game=two)
        assert result.a_first.loss == 0 and result.a_first.win == result.a_first.games
    three = load("dots-and-boxes-3x3")
    result = play_match(GreedyBot(), DotsPerfectBot(Boxes(3, 3)), 40, seed=2, opening_plies=0, game=three)
    assert result.a_first.loss == result.a_first.games  # greedy first, perfect second: perfect wins all
    # three sides of a box drawn early: its fourth is the one best line, and perfect draws it
    state = three.state_from_moves("h0,0 h1,0 v0,0")
    values = DotsSolver(Boxes(3, 3)).action_values(np.array([state.lines]))[0]
    assert np.flatnonzero(values == values.max()).tolist() == [three.parse_action("v0,1")]
    actions = DotsPerfectBot(Boxes(3, 3)).act(three.batch_of([three.new_state(), state]))
    assert int(actions[1]) == three.parse_action("v0,1")
