"""The game interface's conformance test (`c4core.games`): every registered game must pass it.

For each game, on a few boards: random playouts step a batch and the scalar states side by
side and agree move by move (legal actions, the player to move, the end, returns and
observations); returns are zero-sum and zero before the end, and so are the margin returns of
a game that has them, graded returns of the same sign; the legal set is never empty
before the end and always empty after it; move notation round-trips and bad moves are refused
with a clear `ValueError`; and every symmetry maps legal actions to legal actions, observations
to the permuted observation, and results to equal results. A game's exact solver, where its board
has one, agrees with exhaustive minimax near the end, and so do its moves' values (`move_values`).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from exact import OneByOne, first_player_value

from c4core.games import (
    GAMES,
    VARIANTS,
    BatchState,
    DotsAndBoxes,
    Game,
    State,
    exact_from,
    exact_solver,
    has_margin,
    load,
    move_values,
    returns_of,
    solvable,
)
from c4core.games.dots_and_boxes.endgame import EndgameSolver
from c4core.games.dots_and_boxes.rules import ENDGAME_LINES

BOARDS: list[tuple[str, dict[str, int]]] = [
    ("connect4", {}),
    ("connect4", {"rows": 4, "cols": 4, "connect": 3}),
    ("connect4", {"rows": 3, "cols": 3, "connect": 3}),
    ("dots_and_boxes", {"rows": 1, "cols": 2}),
    ("dots_and_boxes", {"rows": 2, "cols": 3}),
    ("dots_and_boxes", {"rows": 3, "cols": 3}),
]
"""The boards each game is checked on: the default and smaller ones, squares and rectangles."""

GAMES_ON_BOARDS = [load(name, **params) for name, params in BOARDS]
PLAYOUTS = 200


def ids(game: Game) -> str:
    return game.variant


def test_every_registered_game_is_checked() -> None:
    assert {name for name, _ in BOARDS} == set(GAMES)


def random_playouts(game: Game, n: int, seed: int) -> tuple[list[list[int]], list[list[State]]]:
    """`n` random games through the scalar states: each game's actions and its states."""
    rng = np.random.default_rng(seed)
    all_actions, all_states = [], []
    for _ in range(n):
        state, actions, states = game.new_state(), [], [game.new_state()]
        while not state.is_terminal:
            action = int(rng.choice(state.legal_actions()))
            state = state.apply(action)
            actions.append(action)
            states.append(state)
        all_actions.append(actions)
        all_states.append(states)
    return all_actions, all_states


@pytest.mark.parametrize("game", GAMES_ON_BOARDS, ids=ids)
def test_the_game_and_its_states_follow_the_protocols(game: Game) -> None:
    assert isinstance(game, Game)
    assert isinstance(game.new_state(), State)
    assert isinstance(game.new_batch(2), BatchState)
    assert load(game.name, **game.params) == game
    assert game.symmetries[0].name == "identity"
    assert game.new_state().observation().shape == game.observation_shape


@pytest.mark.parametrize("game", GAMES_ON_BOARDS, ids=ids)
def test_batched_and_scalar_states_agree_move_by_move(game: Game) -> None:
    actions, states = random_playouts(game, PLAYOUTS, seed=1)
    batch = game.new_batch(PLAYOUTS)
    longest = max(len(a) for a in actions)
    for ply in range(longest + 1):
        now = [s[min(ply, len(s) - 1)] for s in states]
        legal = batch.legal()
        assert legal.shape == (PLAYOUTS, game.num_actions)
        for i, state in enumerate(now):
            assert legal[i].nonzero().flatten().tolist() == state.legal_actions()
            assert bool(batch.done[i]) == state.is_terminal
            assert tuple(batch.returns()[i].tolist()) == state.returns()
            if not state.is_terminal:
                assert int(batch.to_move()[i]) == state.current_player()
        assert batch.keys().tolist() == [s.key() for s in now]
        obs = batch.observation()
        assert obs.shape == (PLAYOUTS, *game.observation_shape) and obs.dtype == torch.float32
        live = [i for i, s in enumerate(now) if not s.is_terminal]
        expected = np.stack([now[i].observation() for i in live]) if live else np.zeros((0,))
        assert np.array_equal(obs[live].numpy(), expected.reshape(obs[live].shape))
        step = torch.tensor([a[ply] if ply < len(a) else 0 for a in actions])
        batch.play(step)
    assert bool(batch.done.all())
    # a batch built from the scalar states is the same batch
    rebuilt = game.batch_of([s[len(s) // 2] for s in states])
    assert [rebuilt.state(i) for i in range(PLAYOUTS)] == [s[len(s) // 2] for s in states]


@pytest.mark.parametrize("game", GAMES_ON_BOARDS, ids=ids)
def test_returns_are_zero_sum_and_legal_moves_last_exactly_until_the_end(game: Game) -> None:
    actions, states = random_playouts(game, PLAYOUTS, seed=2)
    seen = set()
    for playout in states:
        assert [state.ply for state in playout] == list(range(len(playout)))  # one move, one ply
        for state in playout[:-1]:
            assert state.legal_actions() and state.returns() == (0.0, 0.0)
            assert state.current_player() in (0, 1)
        end = playout[-1]
        assert end.legal_actions() == []
        assert sum(end.returns()) == 0 and end.returns()[0] in (-1.0, 0.0, 1.0)
        seen.add(end.returns())
        assert len(playout) - 1 <= game.max_game_length
    assert len(seen) >= 2  # random play reaches more than one kind of result
    with pytest.raises(ValueError):
        states[0][-1].apply(0)


@pytest.mark.parametrize("game", GAMES_ON_BOARDS, ids=ids)
def test_states_with_one_key_have_one_future(game: Game) -> None:
    _, states = random_playouts(game, PLAYOUTS, seed=3)
    by_key: dict[int, object] = {}
    for state in (s for playout in states for s in playout):
        assert 0 <= state.key() < 2**63
        other = by_key.setdefault(state.key(), state)
        assert other.legal_actions() == state.legal_actions()
        mover = other.current_player(), state.current_player()
        assert other.returns()[mover[0]] == state.returns()[mover[1]]
        for a in state.legal_actions()[:2]:  # one move on, the keys still agree
            assert other.apply(a).key() == state.apply(a).key()
    assert len(by_key) > 100  # the playouts met many positions


@pytest.mark.parametrize("game", GAMES_ON_BOARDS, ids=ids)
def test_illegal_actions_are_refused_by_both_views(game: Game) -> None:
    state = game.new_state().apply(0)
    if 0 not in state.legal_actions():
        with pytest.raises(ValueError):
            state.apply(0)
    for bad in (-1, game.num_actions):
        with pytest.raises(ValueError):
            state.apply(bad)
    batch = game.batch_of([state, game.new_state()])
    with pytest.raises(ValueError, match="illegal"):
        batch.play(torch.tensor([game.num_actions, 0]))
    assert batch.state(0) == state  # nothing was played
    # a finished game ignores what it is given
    _, states = random_playouts(game, 1, seed=3)
    done = game.batch_of([states[0][-1]])
    done.play(torch.tensor([0]))
    assert done.state(0) == states[0][-1]


@pytest.mark.parametrize("game", GAMES_ON_BOARDS, ids=ids)
def test_move_notation_round_trips_and_bad_moves_say_what_is_expected(game: Game) -> None:
    for action in range(game.num_actions):
        assert game.parse_action(game.format_action(action)) == action
    actions, states = random_playouts(game, 20, seed=4)
    for played, playout in zip(actions, states, strict=True):
        assert game.state_from_moves(game.moves_string(played)) == playout[-1]
        assert game.state_from_moves(game.moves_string(played[:3])) == playout[min(3, len(played))]
    for bad in ("", "x", "99", "h9,9", "-1", "1.5"):
        with pytest.raises(ValueError, match=r"\S"):
            game.parse_action(bad)
    with pytest.raises(ValueError):
        game.format_action(game.num_actions)
    twice = game.moves_string([0, 0])
    if 0 not in game.new_state().apply(0).legal_actions():
        with pytest.raises(ValueError, match="move 2"):
            game.state_from_moves(twice)


@pytest.mark.parametrize("game", GAMES_ON_BOARDS, ids=ids)
def test_symmetries_map_games_to_equal_games(game: Game) -> None:
    syms = game.symmetries
    assert len({s.actions for s in syms}) == len(syms)  # all distinct
    for s in syms:
        assert sorted(s.actions) == list(range(game.num_actions))
        assert sorted(s.cells) == list(range(game.observation_shape[1] * game.observation_shape[2]))
    actions, states = random_playouts(game, 30, seed=5)
    for played, playout in zip(actions, states, strict=True):
        for s in syms:
            image = game.new_state()
            for action, state in zip(played, playout, strict=False):
                assert sorted(s.actions[a] for a in state.legal_actions()) == image.legal_actions()
                assert image.current_player() == state.current_player()
                assert np.array_equal(image.observation(), s.observation(state.observation()))
                image = image.apply(s.actions[action])
            assert image.is_terminal and image.returns() == playout[-1].returns()
    # the policy map moves each action's value to its image
    for s in syms:
        values = torch.arange(game.num_actions, dtype=torch.float32)
        moved = s.policy(values)
        assert all(moved[s.actions[a]] == a for a in range(game.num_actions))
        assert s.action(torch.arange(game.num_actions)).tolist() == list(s.actions)
        none = torch.zeros((0, *game.observation_shape))  # an empty batch maps to one
        assert s.observation(none).shape == none.shape


def test_unknown_games_and_parameters_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown game 'chess'.*connect4"):
        load("chess")
    with pytest.raises(ValueError, match="connect4 has no parameter depth: it takes rows, cols, connect"):
        load("connect4", depth=3)
    with pytest.raises(ValueError, match="dots_and_boxes has no parameter connect: it takes rows, cols"):
        load("dots-and-boxes-3x3", connect=3)
    with pytest.raises(ValueError, match="at least one row"):
        load("dots_and_boxes", rows=0)


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_named_variant_is_the_game_on_its_board_and_names_itself(variant: str) -> None:
    game = VARIANTS[variant]
    assert load(variant) == load(game.name, **game.params) == game
    assert game.variant == variant
    titles = {load(v).title for v in VARIANTS}
    assert len(titles) == len(VARIANTS)  # a person can tell every variant apart by its title


def test_parameters_given_with_a_variant_replace_its_own() -> None:
    assert load("connect3-4x4", rows=5).variant == "connect3-5x4"
    assert load("connect4", rows=4, cols=4, connect=3).variant == "connect3-4x4"


MARGINS = [g for g in GAMES_ON_BOARDS if has_margin(g)]
"""The boards whose games grade their results by a margin too (`Game`'s ``has_margin``)."""


def test_margins_are_offered_where_the_game_has_them() -> None:
    assert [g.name for g in MARGINS] == ["dots_and_boxes"] * 3
    with pytest.raises(AttributeError):
        returns_of(load("connect4").new_state(), margin=True)


@pytest.mark.parametrize("game", MARGINS, ids=ids)
def test_margin_returns_grade_the_returns_alike_in_both_views(game: Game) -> None:
    """Zero before the end; at the end zero-sum, within -1..1 and of the returns' sign; batched
    as scalar."""
    actions, states = random_playouts(game, PLAYOUTS, seed=5)
    batch = game.new_batch(PLAYOUTS)
    for ply in range(max(len(a) for a in actions) + 1):
        now = [s[min(ply, len(s) - 1)] for s in states]
        margins = returns_of(batch, margin=True)
        assert margins.dtype == torch.float32
        for i, state in enumerate(now):
            first, second = returns_of(state, margin=True)
            assert margins[i].tolist() == pytest.approx([first, second])
            assert first == -second and -1 <= first <= 1
            assert np.sign(first) == state.returns()[0]
            assert state.is_terminal or first == 0
        batch.play(torch.tensor([a[ply] if ply < len(a) else 0 for a in actions]))


SMALL_SOLVED = [g for g in GAMES_ON_BOARDS if solvable(g) and g.max_game_length <= 24]
"""The boards with an exact solver small enough for exhaustive minimax from late positions (the
standard Connect Four solver is checked against published values in its own tests)."""


@pytest.mark.parametrize("game", SMALL_SOLVED, ids=ids)
def test_an_exact_solver_agrees_with_exhaustive_minimax_near_the_end(game: Game) -> None:
    solver = exact_solver(game)
    _, states = random_playouts(game, 40, seed=4)
    late = [s for p in states for s in p if not s.is_terminal and game.max_game_length - s.ply <= 8]
    assert len(late) >= 20
    for state in late:  # at most 8 moves from any end, where minimax is quick
        mover = 1 if state.current_player() == 0 else -1
        assert solver.outcome(state) == mover * first_player_value(state), str(state)


@pytest.mark.parametrize("game", [g for g in SMALL_SOLVED if has_margin(g)], ids=ids)
def test_an_exact_solvers_margin_value_agrees_with_minimax_of_the_margin(game: Game) -> None:
    solver = exact_solver(game)
    _, states = random_playouts(game, 40, seed=6)
    late = [s for p in states for s in p if not s.is_terminal and game.max_game_length - s.ply <= 8]
    assert len(late) >= 20
    for state in late:
        mover = 1 if state.current_player() == 0 else -1
        exact = mover * first_player_value(state, lambda s: returns_of(s, margin=True)[0])
        assert solver.margin_value(state) == pytest.approx(exact), str(state)
        assert np.sign(solver.margin_value(state)) == solver.outcome(state)


@pytest.mark.parametrize(
    ("game", "margin"),
    [(g, m) for g in SMALL_SOLVED for m in (False, True) if has_margin(g) or not m],
    ids=lambda x: ids(x) if isinstance(x, Game) else ("margin" if x else "outcome"),
)
def test_move_values_are_each_moves_minimax_value_for_its_mover(game: Game, margin: bool) -> None:
    """Each legal move's value is exhaustive minimax's for the mover after that move (the same
    player when a completed box gives another move), from the solver's own batch where it has
    one and move by move otherwise; illegal moves are -inf."""
    score = (lambda s: returns_of(s, margin=True)[0]) if margin else None
    _, playouts = random_playouts(game, 12, seed=9)
    late = [s for p in playouts for s in p if not s.is_terminal and game.max_game_length - s.ply <= 7]
    boards = game.batch_of(late)
    solver = exact_solver(game)
    values = move_values(solver, boards, margin)
    assert torch.equal(move_values(OneByOne(solver), boards, margin), values)
    for i, state in enumerate(late):
        mover = 1 if state.current_player() == 0 else -1
        expected = [-math.inf] * game.num_actions
        for a in state.legal_actions():
            expected[a] = mover * first_player_value(state.apply(a), score)
        assert values[i].tolist() == pytest.approx(expected), str(state)


@pytest.mark.parametrize("game", [g for g in SMALL_SOLVED if isinstance(g, DotsAndBoxes)], ids=ids)
def test_a_solvers_batch_of_move_values_agrees_with_solving_move_by_move_at_every_depth(game: Game) -> None:
    """Dots and Boxes' table answers a whole batch at once, on positions of every depth."""
    _, playouts = random_playouts(game, 30, seed=10)
    boards = game.batch_of([s for p in playouts for s in p])  # finished games too: no legal move
    solver = exact_solver(game)
    assert hasattr(solver, "move_values")
    for margin in (False, True):
        assert torch.equal(move_values(solver, boards, margin), move_values(OneByOne(solver), boards, margin))


def test_a_position_with_a_move_the_solver_does_not_settle_is_nan_on_its_legal_moves() -> None:
    game = load("connect4", rows=4, cols=4, connect=3)
    _, playouts = random_playouts(game, 10, seed=11)
    states = [s for p in playouts for s in p if not s.is_terminal]
    boards = game.batch_of(states)
    values = move_values(OneByOne(exact_solver(game), late=9), boards)
    unsettled = values.isnan().any(1)
    assert torch.equal(values.isnan(), boards.legal() & unsettled[:, None])  # never an illegal move
    for i, state in enumerate(states):
        needs = [state.apply(a) for a in state.legal_actions()]
        assert bool(unsettled[i]) == any(not s.is_terminal and s.ply < 9 for s in needs)
    assert 0 < int(unsettled.sum()) < len(states)


def test_a_board_beyond_its_games_solver_says_so() -> None:
    big = load("dots_and_boxes", rows=4, cols=5)
    assert not solvable(big) and solvable(load("dots_and_boxes", rows=3, cols=3))
    for refused in (lambda: exact_solver(big), big.exact_solver):
        with pytest.raises(ValueError, match="Dots and Boxes on 4x5 boxes has no exact solver"):
            refused()


def test_an_endgame_search_reaches_the_last_plies_and_a_table_every_ply() -> None:
    """3x3's table settles every ply; 4x4's endgame search only its last `ENDGAME_LINES` lines,
    within the budget it is given."""
    table, four = load("dots-and-boxes-3x3"), load("dots-and-boxes-4x4")
    assert (exact_from(table), exact_from(load("connect4")), exact_from(four)) == (0, 0, 40 - ENDGAME_LINES)
    assert solvable(four) and isinstance(exact_solver(four), EndgameSolver)
    solver = exact_solver(four, max_nodes=1_000)
    assert solver.outcome(four.new_state()) is None  # 40 lines left: far past 1,000 nodes
    late = four.state_from_moves(four.moves_string(range(40 - ENDGAME_LINES)))
    assert exact_solver(four).outcome(late) in (-1, 0, 1)
