"""Oracles that tests check our games, search and learners against: exhaustive minimax over the
game interface, for boards small enough to enumerate, a peer's rules (OpenSpiel's), and an exact
solver asked one move at a time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from c4core.games import Game, State


def first_player_value(state: State, outcome: Callable[[State], float] | None = None) -> float:
    """The value of `state` for the first player under perfect play by both sides, by a
    memoised minimax that asks each state who moves (so a player may move twice in a row).
    `outcome` scores a finished game for the first player (default: its return)."""
    score = outcome or (lambda s: s.returns()[0])
    memo: dict[State, float] = {}

    def value(s: State) -> float:
        if s in memo:
            return memo[s]
        if s.is_terminal:
            v = score(s)
        else:
            children = [value(s.apply(a)) for a in s.legal_actions()]
            v = max(children) if s.current_player() == 0 else min(children)
        memo[s] = v
        return v

    return value(state)


def agree_with_openspiel(
    ours: Game, theirs: Any, games: int, seed: int, on_move: Callable[[State, Any, int], None] | None = None
) -> list[State]:
    """Play `games` random games through our `ours` and OpenSpiel's `theirs` (a `pyspiel.Game`)
    at once, asserting move by move that both agree on the end, the returns, the legal actions
    and the player to move; `on_move(state, spiel_state, action)` checks more before each move.
    Returns every state our side passed through."""
    assert theirs.num_distinct_actions() == ours.num_actions
    rng = np.random.default_rng(seed)
    seen = []
    for _ in range(games):
        state, spiel = ours.new_state(), theirs.new_initial_state()
        while True:
            seen.append(state)
            assert state.is_terminal == spiel.is_terminal()
            assert state.returns() == tuple(spiel.returns())
            if state.is_terminal:
                break
            assert state.legal_actions() == spiel.legal_actions()
            assert state.current_player() == spiel.current_player()
            action = int(rng.choice(state.legal_actions()))
            if on_move is not None:
                on_move(state, spiel, action)
            state, _ = state.apply(action), spiel.apply_action(action)
    return seen


def dots_movers_and_results(
    observations: Any, games: int, margin: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Who moved at each decision of `games` Dots and Boxes games played side by side from the
    empty board, and each decision's result for its mover (+1, 0, -1; with `margin` its margin
    return, the final box difference over the boxes), read back from the
    observations alone: decision ``t * games + i`` is game i's t-th move (every game draws every
    line, so each step holds one decision of every game). An observation shows the mover's boxes
    (plane 1) and the opponent's (plane 2); a move that takes no box passes the turn, and the last
    line always completes the boxes left, for its mover."""
    obs = np.asarray(observations)
    steps = len(obs) // games
    mine = obs[:, 1].reshape(steps, games, -1).sum(2)
    theirs = obs[:, 2].reshape(steps, games, -1).sum(2)
    total = mine + theirs
    movers = np.zeros((steps, games), np.int64)
    for t in range(1, steps):
        kept = total[t] > total[t - 1]  # the previous move took a box: its mover goes again
        movers[t] = np.where(kept, movers[t - 1], 1 - movers[t - 1])
    boxes = obs.shape[-1] // 2 * (obs.shape[-2] // 2)  # the grid is 2R+1 by 2C+1
    last = mine[-1] + (boxes - total[-1]) - theirs[-1]  # the last mover's final margin
    first = np.where(movers[-1] == 0, last, -last)  # the first player's margin
    first = first / boxes if margin else np.sign(first)
    results = np.where(movers == 0, first, -first)
    return movers.reshape(-1), results.reshape(-1)


class OneByOne:
    """An exact solver's scalar answers alone, without its batch of move values, so that
    `c4core.games.move_values` solves each move in turn; with `late`, only positions of at least
    that ply are settled."""

    def __init__(self, solver: Any, late: int = 0):
        self.solver, self.late = solver, late

    def outcome(self, state: State, max_nodes: int | None = None) -> int | None:
        return self.solver.outcome(state, max_nodes) if state.ply >= self.late else None

    def margin_value(self, state: State, max_nodes: int | None = None) -> float | None:
        return self.solver.margin_value(state, max_nodes) if state.ply >= self.late else None
