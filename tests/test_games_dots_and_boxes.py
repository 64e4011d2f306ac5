"""Dots and Boxes behind the game interface (`c4core.games.dots_and_boxes`): its rules checked
against OpenSpiel's `dots_and_boxes` (a test-only dependency) move by move, including the extra
move after a completed box, and its known values by exhaustive minimax (box margins for the
first player: -1 on 1x1, 0 on 1x2, +2 on 2x2), which OpenSpiel's own minimax confirms."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from exact import agree_with_openspiel, first_player_value

from c4core.games import DotsAndBoxes, load
from c4core.games.dots_and_boxes.rules import Boxes, DotsState

pyspiel = pytest.importorskip("pyspiel")


@pytest.mark.parametrize("rows,cols", [(1, 1), (1, 2), (2, 2), (2, 3), (3, 3), (4, 4)])
def test_random_games_agree_with_openspiel_move_by_move(rows: int, cols: int) -> None:
    ours = load("dots_and_boxes", rows=rows, cols=cols)

    def same_notation(state: DotsState, spiel: object, action: int) -> None:
        move = ours.format_action(action)  # h0,1 is OpenSpiel's P1(h,0,1)
        assert f"({move[0]},{move[1:]})" in spiel.action_to_string(spiel.current_player(), action)

    theirs = pyspiel.load_game(f"dots_and_boxes(num_rows={rows},num_cols={cols})")
    seen = agree_with_openspiel(ours, theirs, 600, seed=rows * 10 + cols, on_move=same_notation)
    # the games did include extra moves: a box taken before the end gave its taker another move
    again = sum(not s.is_terminal and s.margin() != 0 for s in seen)
    assert again > 0 or rows * cols == 1  # 1x1 ends with its only box


def margin(state: DotsState) -> float:
    return float(state.margin())


@pytest.mark.parametrize("rows,cols", [(2, 2), (3, 3)])
def test_margin_returns_are_openspiels_margin_utility_over_the_boxes(rows: int, cols: int) -> None:
    ours = load("dots_and_boxes", rows=rows, cols=cols)
    theirs = pyspiel.load_game(f"dots_and_boxes(num_rows={rows},num_cols={cols},utility_margin=true)")
    rng = np.random.default_rng(rows)
    finals = set()
    for _ in range(100):
        state, spiel = ours.new_state(), theirs.new_initial_state()
        while not state.is_terminal:
            action = int(rng.choice(state.legal_actions()))
            state, _ = state.apply(action), spiel.apply_action(action)
        assert spiel.is_terminal()
        assert [r * rows * cols for r in state.margin_returns()] == pytest.approx(spiel.returns())
        finals.add(state.margin_returns()[0])
    assert len(finals - {-1.0, 0.0, 1.0}) >= 2  # graded: random play wins by less than everything


@pytest.mark.parametrize("rows,cols,value", [(1, 1, -1), (1, 2, 0), (2, 2, 2)])
def test_known_values_by_minimax_ours_and_openspiels(rows: int, cols: int, value: int) -> None:
    from open_spiel.python.algorithms import minimax

    assert first_player_value(load("dots_and_boxes", rows=rows, cols=cols).new_state(), margin) == value
    spiel = pyspiel.load_game(f"dots_and_boxes(num_rows={rows},num_cols={cols},utility_margin=true)")
    assert minimax.alpha_beta_search(spiel)[0] == value


def test_a_completed_box_gives_another_move_in_both_views() -> None:
    game = DotsAndBoxes(Boxes(1, 2))
    # A draws the left box's top and left sides, B its bottom; A closes it with v0,1 and moves on
    state = game.state_from_moves("h0,0 h1,0 v0,0")
    assert state.current_player() == 1
    closed = state.apply(game.parse_action("v0,1"))
    assert closed.current_player() == 1 and closed.margin() == -1
    assert closed.observation()[2].sum() == 0 and closed.observation()[1].sum() == 1  # B's view
    batch = game.batch_of([state])
    batch.play(torch.tensor([game.parse_action("v0,1")]))
    assert batch.state(0) == closed and int(batch.to_move()[0]) == 1
    # one line that closes two boxes at once gives both to the mover
    two = game.state_from_moves("h0,0 h1,0 h0,1 h1,1 v0,0 v0,2")
    both = two.apply(game.parse_action("v0,1"))
    assert both.is_terminal and both.returns() == (-1.0, 1.0) or both.returns() == (1.0, -1.0)
    assert abs(both.margin()) == 2


def test_the_board_prints_lines_and_owners() -> None:
    state = load("dots_and_boxes", rows=1, cols=2).state_from_moves("h0,0 h1,0 v0,0 v0,1")
    assert str(state).splitlines() == ["+---+   +", "| B |", "+---+   +", "A 0 : B 1, B to move"]


def test_bad_moves_and_boards_are_refused_by_name() -> None:
    game = load("dots_and_boxes", rows=2, cols=2)
    with pytest.raises(ValueError, match="off the 2x2 board"):
        game.parse_action("h3,0")
    with pytest.raises(ValueError, match="expected a line such as h0,1"):
        game.parse_action("3")
    with pytest.raises(ValueError, match="move 2 .* h0,0 is already drawn"):
        game.state_from_moves("h0,0 h0,0")
    with pytest.raises(ValueError, match=r"got '(h){40}'\.\.\. \(5,000 characters\)$"):
        game.parse_action("h" * 5000)
    with pytest.raises(ValueError, match="more than an int64 holds"):
        Boxes(6, 6)


def test_captures_count_the_boxes_each_line_completes() -> None:
    """The batch's `captures` against the scalar state's box counts after each legal line."""
    game = load("dots_and_boxes", rows=3, cols=3)
    rng = torch.Generator().manual_seed(4)
    states = []
    for _ in range(200):
        state = game.new_state()
        for _ in range(int(torch.randint(0, game.num_actions + 1, (1,), generator=rng))):
            legal = state.legal_actions()
            state = state.apply(legal[int(torch.randint(len(legal), (1,), generator=rng))])
        states.append(state)
    captures = game.batch_of(states).captures()
    doubles = 0
    for state, row in zip(states, captures.tolist(), strict=True):
        legal = state.legal_actions()
        for a in range(game.num_actions):
            gained = abs(state.apply(a).margin() - state.margin()) if a in legal else 0
            assert row[a] == gained, (str(state), a)
            doubles += gained == 2
    assert doubles > 0  # a line closing two boxes at once was among them


def _chain_planes(game: DotsAndBoxes, moves: str) -> dict[str, object]:
    """The chain planes of one position, read back at the box and line cells."""
    obs = game.state_from_moves(moves).observation()
    box, line = game.boxes.box_cells, game.boxes.line_cells
    return {
        "short": [int(obs[5, y, x]) for y, x in box],
        "long": [int(obs[6, y, x]) for y, x in box],
        "loop": [int(obs[7, y, x]) for y, x in box],
        "safe": [int(obs[8, y, x]) for y, x in line],
        "long parity": {float(v) for v in obs[9].flat},
        "safe parity": {float(v) for v in obs[10].flat},
    }


def test_chain_planes_mark_short_and_long_chains_loops_and_safe_lines() -> None:
    """Hand-drawn 3x3 positions: a long chain along the top row, a closed 2x2 loop, and three
    separate boxes with three sides each (short chains of one)."""
    game = load("dots-and-boxes-3x3")
    assert game.observation_shape[0] == 11
    top = _chain_planes(game, "h0,0 h0,1 h0,2 h1,0 h1,1 h1,2")
    assert top["long"] == [1, 1, 1, 0, 0, 0, 0, 0, 0] and top["short"] == top["loop"] == [0] * 9
    assert top["long parity"] == {1.0}
    # every line of the top row's boxes is drawn or would give a box a third side
    unsafe = {game.parse_action(a) for a in ("v0,0", "v0,1", "v0,2", "v0,3", "h1,0", "h1,1", "h1,2")}
    drawn = {game.parse_action(a) for a in ("h0,0", "h0,1", "h0,2", "h1,0", "h1,1", "h1,2")}
    assert [a for a, s in enumerate(top["safe"]) if s] == sorted(set(range(24)) - unsafe - drawn)
    assert top["safe parity"] == {float(len(set(range(24)) - unsafe - drawn) % 2)}

    ring = _chain_planes(game, "h1,1 h1,2 h3,1 h3,2 v1,1 v2,1 v1,3 v2,3")
    assert ring["loop"] == [0, 0, 0, 0, 1, 1, 0, 1, 1] and ring["long"] == ring["short"] == [0] * 9
    assert ring["long parity"] == {0.0}
    # a line inside the loop opens it: its boxes stay one closed set, now with two to take
    opened = _chain_planes(game, "h1,1 h1,2 h3,1 h3,2 v1,1 v2,1 v1,3 v2,3 h2,1")
    assert opened["loop"] == ring["loop"]

    column = _chain_planes(game, "h0,0 h1,0 h2,0 h3,0 v0,0 v1,0 v2,0")
    assert column["short"] == [1, 0, 0, 1, 0, 0, 1, 0, 0] and column["long"] == column["loop"] == [0] * 9
    # the lines v*,1 take a box: not safe
    assert not any(column["safe"][game.parse_action(f"v{r},1")] for r in range(3))
