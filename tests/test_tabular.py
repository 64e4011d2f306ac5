"""Tables over every position of a small game (`c4core.learners.tabular`): the table, its player,
and Q-learning and SARSA checked against values computed here by brute force."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
import torch

from c4core.config import TabularConfig
from c4core.evaluation.exploitability import game_values
from c4core.evaluation.positions import position_index
from c4core.games import load
from c4core.games.base import Game, State
from c4core.learners.tabular import QTable, TablePlayer, epsilon_at, train_table

CONNECT3 = load("connect3-4x4")
ONE_BOX = load("dots_and_boxes", rows=1, cols=1)
TWO_BOXES = load("dots_and_boxes", rows=1, cols=2)


def test_a_table_of_the_wrong_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="has shape"):
        QTable(TWO_BOXES, np.zeros((3, 3)))


def test_the_player_takes_the_best_legal_action_and_never_an_illegal_one(rng: np.random.Generator) -> None:
    table = QTable(CONNECT3, rng.normal(size=(23_930, 4)).astype(np.float32))
    states = [position_index(CONNECT3).states[i] for i in rng.choice(23_930, 300, replace=False)]
    batch = CONNECT3.batch_of(states)
    legal = batch.legal().numpy()
    rows = table.index.rows(batch.keys())
    best = np.where(legal, table.q[rows], -np.inf).argmax(1)
    assert TablePlayer(table).act(batch).tolist() == best.tolist()
    explorer = TablePlayer(table, greedy=False, epsilon=1.0)
    for _ in range(5):
        actions = explorer.act(batch, torch.Generator().manual_seed(int(rng.integers(1 << 30))))
        assert legal[np.arange(len(states)), actions.numpy()].all()
    probs, values = table.evaluate(batch)
    assert np.allclose(probs.sum(1).numpy(), 1.0) and not (probs.numpy()[~legal]).any()
    assert np.allclose(values.numpy(), np.where(legal, table.q[rows], -np.inf).max(1))


def test_the_exploration_schedule_is_c3rls() -> None:
    config = TabularConfig(epsilon_start=0.3, epsilon_min=0.02, schedule_games=100_000)
    eps = epsilon_at(config, np.array([0, 50_000, 99_000, 200_000]))
    assert np.allclose(eps, [0.3, 0.15, 0.02, 0.02])


def _index_values(game: Game, table: QTable) -> tuple[np.ndarray, np.ndarray]:
    batch = game.batch_of(position_index(game).states)
    return np.where(batch.legal().numpy(), table.q, np.nan), batch.legal().numpy()


@pytest.mark.parametrize("method", ["q-learning", "sarsa"])
def test_updates_on_one_box_match_values_worked_out_by_hand(method: str) -> None:
    """One box, four lines: nobody completes it before the fourth line, so the players alternate
    and whoever draws the fourth wins. With α = 1 the values are their targets exactly: the last
    line is worth +1 to its mover; before it every line is worth -γ times the next mover's value,
    so -0.9, then +0.81, then -0.729 at the start; lines already drawn are never written."""
    table = QTable(ONE_BOX)
    config = TabularConfig(iterations=1, games=400, alpha=1.0, gamma=0.9, epsilon_start=1.0, epsilon_min=1.0)
    train_table(table, config, method, seed=4, first_game=0)
    for state, q in zip(position_index(ONE_BOX).states, table.q, strict=True):
        drawn = bin(state.lines).count("1")
        legal = state.legal_actions()
        expected = {0: -0.729, 1: 0.81, 2: -0.9, 3: 1.0}[drawn]
        assert np.allclose(q[legal], expected, atol=1e-6), (state.lines, q)
        assert not q[[a for a in range(4) if a not in legal]].any()  # masked: never written


def test_q_learning_finds_the_exact_values_where_a_box_moves_its_maker_again() -> None:
    """Off-policy from uniformly random play, Q-learning's greedy values converge to minimax
    (`game_values`) on every position of Dots and Boxes on 1x2, where completing a box moves
    its maker again: a bootstrap signed by alternation would be wrong there."""
    table = QTable(TWO_BOXES)
    config = TabularConfig(iterations=1, games=6000, alpha=0.5, gamma=1.0, epsilon_start=1.0, epsilon_min=1.0)
    train_table(table, config, "q-learning", seed=1, first_game=0)
    q, _ = _index_values(TWO_BOXES, table)
    assert np.abs(np.nanmax(q, 1) - game_values(TWO_BOXES)).max() < 0.01


def _random_play_value(state: State) -> float:
    """The mover's expected result when both sides play uniformly at random, by brute force."""

    @cache
    def value(s: State) -> float:
        total = 0.0
        for a in s.legal_actions():
            nxt = s.apply(a)
            if nxt.is_terminal:
                total += nxt.returns()[s.current_player()]
            else:
                sign = 1.0 if nxt.current_player() == s.current_player() else -1.0
                total += sign * value(nxt)
        return total / len(s.legal_actions())

    return value(state)


def test_sarsa_learns_the_value_of_the_policy_it_follows() -> None:
    """On-policy: following uniformly random play, SARSA's action values average to that play's
    value (by brute force) in the positions every game passes near, on Dots and Boxes 1x2."""
    table = QTable(TWO_BOXES)
    config = TabularConfig(
        iterations=1, games=60_000, alpha=0.2, gamma=1.0, epsilon_start=1.0, epsilon_min=1.0, parallel=256
    )
    train_table(table, config, "sarsa", seed=2, first_game=0)
    q, _ = _index_values(TWO_BOXES, table)
    states = position_index(TWO_BOXES).states
    near = [i for i, s in enumerate(states) if bin(s.lines).count("1") <= 1]  # the start and one line on
    learned = np.nanmean(q[near], 1)
    exact = np.array([_random_play_value(states[i]) for i in near])
    assert len(near) == 8 and exact.std() > 0.05  # the values differ: they test something
    assert np.abs(learned - exact).max() < 0.05


@pytest.mark.parametrize("method", ["q-learning", "sarsa"])
def test_self_play_lowers_nash_conv_and_records_each_iteration(method: str) -> None:
    from c4core.evaluation.exploitability import nash_conv, policy_of

    game = load("connect4", rows=3, cols=3, connect=3)
    table, seen = QTable(game), []
    before = nash_conv(game, policy_of(TablePlayer(table), game)).value
    config = TabularConfig(iterations=3, games=2000, schedule_games=6000)
    train_table(table, config, method, seed=3, first_game=0, record=lambda i, m: seen.append((i, m)))
    after = nash_conv(game, policy_of(TablePlayer(table), game)).value
    assert after < before
    assert [i for i, _ in seen] == [0, 1, 2]
    assert seen[-1][1]["games"] == 2000 and seen[-1][1]["epsilon"] < seen[0][1]["epsilon"]
    assert 0 < seen[0][1]["visited"] < seen[-1][1]["visited"] <= 1


def test_an_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown tabular learner 'td-lambda'"):
        train_table(QTable(ONE_BOX), TabularConfig(), "td-lambda", 0, 0)
